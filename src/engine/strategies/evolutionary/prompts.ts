/**
 * The requests of the evolutionary strategy. Each starts with its operator's line ("Operator: mutate ..."), names the
 * parent variants by id, shows their code, what the tuner measured of them (the GPU, the profile: measured parts, so
 * that a recorded session replays on another GPU) and the results of the variants so far, then the tuner's rules and
 * the form of the answer (a rewrite as every strategy asks for it; the judge answers JSON).
 */
import { z } from 'zod';
import { formatTuneParams, kernelBlock, measuredBlock, RESULTS_HEADING, SECOND_PROFILE_HEADING, TUNER_RULES, type KernelView, type Measured } from '../../prompts';
import { describeRejection } from '../../progress/events';
import { profileSourceText } from '../../../tuner/run/profile';
import { answerFormLines } from '../prompts';
import { ancestry, type RejectedChild, type Variant } from './population';

export const OPERATOR_LINE = {
  mutate: 'Operator: mutate (one parent, one idea)',
  crossover: 'Operator: crossover (two parents, one kernel)',
  judge: 'Operator: judge (read the profile, name the next change)',
} as const;

/** Lines of results a request shows at most: the parents' ancestors first, then the latest failures. */
const MAX_RESULT_LINES = 14;
const MAX_FAILURES = 5;

const ms = (v: number) => `${Number(v.toPrecision(4))} ms`;

function origin(v: Variant): string {
  if (v.operator === 'original') return 'the original kernel';
  if (v.operator === 'edit') return 'the kernel this branch of the session started from';
  const how = v.operator === 'crossover' ? `crossover of ${v.parents.join(' and ')}` : `${v.operator} of ${v.parents[0]}`;
  return `${how}${v.instruction ? `: ${v.instruction}` : ''}`;
}

function rejectedOrigin(r: RejectedChild): string {
  const how = r.operator === 'crossover' ? `crossover of ${r.parents.join(' and ')}` : `${r.operator} of ${r.parents[0]}`;
  return `child ${r.child} (${how}${r.instruction ? `: ${r.instruction}` : ''})`;
}

/**
 * What the variants so far measured, as a measured part (heading, then `- ` lines): the parents, their ancestors and
 * the children already made of them, with their times and speed-ups, and the latest children that failed, with why.
 * What helped, what did not, and what was already applied to these parents.
 */
export function resultsBlock(variants: readonly Variant[], rejected: readonly RejectedChild[], parents: readonly string[]): string {
  const original = variants.find((v) => v.operator === 'original');
  const related = ancestry(variants, parents);
  for (const v of variants) if (v.parents.some((p) => parents.includes(p))) related.add(v.id);
  const speedup = (v: Variant) => (original ? ` (${(original.timeMs / v.timeMs).toFixed(2)}x the original)` : '');
  const kept = variants
    .filter((v) => related.has(v.id))
    .map((v) => `- ${v.id}, ${origin(v)}: ${ms(v.timeMs)}${speedup(v)}`);
  const failed = rejected.slice(-MAX_FAILURES).map((r) => `- ${rejectedOrigin(r)} failed: ${describeRejection(r.reason).split('\n', 1)[0]}`);
  const lines = [...kept.slice(-(MAX_RESULT_LINES - failed.length)), ...failed];
  return [`${RESULTS_HEADING}:`, ...lines].join('\n');
}

export interface ParentView {
  variant: Variant;
  /** The parent's code as the model sees it (its device unit). */
  code: string | KernelView;
  /** The GPU and the parent's measurements (its time and profile as the current kernel's). */
  measured: Measured;
}

function parentBlock(label: string, p: ParentView): string[] {
  return [`${label}: variant ${p.variant.id}, ${origin(p.variant)}.`, kernelBlock(p.code), 'Its tunable parameters (values tried):', formatTuneParams(p.variant.tuneParams)];
}

/** A parent's code and parameters, then what the tuner measured of it and the results so far: what mutate and judge show. */
function parentWithResults(label: string, parent: ParentView, variants: readonly Variant[], rejected: readonly RejectedChild[]): string[] {
  return [...parentBlock(label, parent), '', measuredBlock(parent.measured), '', resultsBlock(variants, rejected, [parent.variant.id]), ''];
}

/** How a rewrite is answered: the tuner's rules, the code and its json block with the idea and the restrictions. */
function rewriteTail(): string[] {
  return [TUNER_RULES, '', ...answerFormLines(true), IDEA_LINE];
}

const IDEA_LINE = [
  'In the ```json block, also name the idea you applied in one short line, and list the restrictions a configuration',
  'must satisfy for the kernel to be correct and launchable (expressions over the parameter names; [] when none):',
  '{"idea": "...", "tunableParameters": {...}, "restrictions": ["block_size_x * block_size_y <= 1024"]}',
].join('\n');

/**
 * When several children of the same request are written at once, the one ranked `rank` (from 1): asked for the
 * idea the model ranks that, since the same request sent twice often brings the same kernel back twice.
 */
function rankLine(rank: number, what: string): string[] {
  if (rank <= 1) return [];
  const others = rank - 1;
  return [`${others} other answer${others > 1 ? 's' : ''} to this same request ${others > 1 ? 'are' : 'is'} being written at the same time. So that they try different things, ${what} you rank number ${rank} among the promising ones, not your first choice.`];
}

/** One idea applied to one parent: the judge's instruction, or the one the model finds most promising (or ranks `rank`). */
export function mutatePrompt(options: { parent: ParentView; instruction?: string; rank?: number; variants: readonly Variant[]; rejected: readonly RejectedChild[] }): string {
  const { parent, instruction } = options;
  return [
    OPERATOR_LINE.mutate,
    instruction
      ? `Make this CUDA kernel faster by applying this change: ${instruction}`
      : 'Make this CUDA kernel faster by applying one idea: the one that its profile and the results below make most promising, that no child of it below has applied already, and that the failed children below did not try.',
    ...(instruction ? [] : rankLine(options.rank ?? 1, 'apply the idea')),
    'Change what the idea needs and keep the rest as it is, so that the measurement says whether the idea helped; the fastest and most different variants are kept, and later ideas build on them.',
    '',
    ...parentWithResults('The current kernel', parent, options.variants, options.rejected),
    ...rewriteTail(),
  ].join('\n');
}

/** What made two parents fast, combined in one kernel. */
export function crossoverPrompt(options: { first: ParentView; second: ParentView; rank?: number; variants: readonly Variant[]; rejected: readonly RejectedChild[] }): string {
  const { first, second } = options;
  const profile = second.variant.profile;
  return [
    OPERATOR_LINE.crossover,
    `Two variants of the same CUDA kernel follow, each fast for its own reasons: ${first.variant.id} (${origin(first.variant)}) and ${second.variant.id} (${origin(second.variant)}).`,
    `Write one kernel that combines what makes each of them fast: start from ${first.variant.id} and bring in what ${second.variant.id} does better, as their profiles and results below show.`,
    ...rankLine(options.rank ?? 1, 'write the combination'),
    '',
    ...parentBlock('The first parent', first),
    '',
    ...parentBlock('The second parent', second),
    '',
    measuredBlock(first.measured),
    ...(profile ? ['', `${SECOND_PROFILE_HEADING} ${JSON.stringify(profile.config)} (${profileSourceText(profile)}):`, ...profile.summary.map((l) => `- ${l}`)] : []),
    '',
    resultsBlock(options.variants, options.rejected, [first.variant.id, second.variant.id]),
    '',
    ...rewriteTail(),
  ].join('\n');
}

export const JudgeAnswer = z.object({
  diagnosis: z.string().min(1).describe('what limits the kernel now, citing the numbers of its profile'),
  instruction: z.string().min(1).describe('the one change to make next, concrete enough to implement'),
});
export type JudgeAnswerValue = z.infer<typeof JudgeAnswer>;

/** CudaForge's judge: the variant's profile and the latest failures in, the next change to make out. */
export function judgePrompt(options: { parent: ParentView; rank?: number; variants: readonly Variant[]; rejected: readonly RejectedChild[] }): string {
  const { parent } = options;
  return [
    OPERATOR_LINE.judge,
    `You review variant ${parent.variant.id} of a CUDA kernel with the profile the tuner measured at its best configuration and the results of the variants so far: what helped, and what failed and why.`,
    'Decide what limits this kernel now, and name the one change a CUDA programmer should make next to make it faster. Do not propose a change that a child of it below has applied already, or that the results show already failed, unless you say what to do differently.',
    ...rankLine(options.rank ?? 1, 'name the change'),
    '',
    ...parentWithResults('The kernel', parent, options.variants, options.rejected),
    'The change must keep the kernel a device-only rewrite: same name and parameter list, no host code, no compiler flags, no libraries.',
    'Answer with JSON only: {"diagnosis": "what limits the kernel now, citing the profile\'s numbers", "instruction": "the one change to make next, concrete enough to implement, in one to three sentences"}',
  ].join('\n');
}
