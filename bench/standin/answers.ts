/**
 * What the model stand-in answers (TEST DOUBLE for benchmarks): each request is answered from the pool, by what it
 * asks and a seeded draw, never by the speed or the label of a variant.
 *
 * - analysis and test design: the pool's analysis, and its test at the server's size;
 * - plan and replan: a walk down the tree from the kernel shown, through variants that have children, naming their
 *   ideas (2 to 4, drawn); validate: every step device-only; breakdown: keep the step whole;
 * - a rewrite (a step, a mutate, a crossover): the kernel shown is matched to its variant, and the answer is one of its
 *   children: those of the idea the step names, or those of the judge's instruction a mutate applies, or for a
 *   crossover those recorded for both parents (else the children of either); a retry answers the failed variant's
 *   fix where the pool has one and it was not answered yet, else another child;
 * - judge: one of the variant's recorded judge answers, its diagnosis citing the profile in the request;
 * - restrictions: the recorded restrictions of the variant shown.
 */
import { extractJson } from '../../src/engine/llm/json';
import { PROFILE_HEADING } from '../../src/engine/prompts';
import type { Random } from '../../src/tuner/space/random';
import { childrenOf, matchVariant, UnknownKernelError, type Pool, type Variant } from './pool';
import { answerCode, kernelAfter, lineAfter, UnclassifiedRequestError, type RequestKind, type StandinRequest } from './requests';

/** What the stand-in answers, before its form (think block, fences, prose, tool call) is chosen. */
export type Reply =
  | { kind: 'text'; text: string }
  /** A rewrite: the child's file, prose and json block. */
  | { kind: 'rewrite'; variant: Variant }
  /** A structured answer, and the sentence that leads it when it is written in prose. */
  | { kind: 'object'; value: unknown; lead: string };

export interface Decision {
  /** The variants the request showed (the parent or parents; the kernel planned for or restricted). */
  shown: Variant[];
  /** The variant answered, for a rewrite. */
  child: Variant | null;
  reply: Reply;
}

const object = (value: unknown, lead: string): Reply => ({ kind: 'object', value, lead });
const byIds = (pool: Pool, ids: readonly string[]) => ids.map((id) => pool.byId.get(id)!);

/** A model's own order of preference for what to do with a kernel: fixed by the server's seed and what it is asked of. */
export type Ranking = (key: string) => Random;

export function decide(pool: Pool, request: StandinRequest, rng: Random, testSize: number, ranking: Ranking): Decision {
  const { prompt } = request;
  const shown = (...variants: Variant[]) => ({ shown: variants, child: null });
  switch (request.kind) {
    case 'describe':
      return { ...shown(), reply: { kind: 'text', text: pool.analysis.description } };
    case 'problem-size': {
      const { problemSize, flops, bytes } = pool.analysis;
      return { ...shown(), reply: object({ problemSize, ...(flops && { flops }), ...(bytes && { bytes }) }, 'The problem size, one thread per element, and the work of one launch') };
    }
    case 'outputs':
      return { ...shown(), reply: object({ outputs: pool.analysis.outputs }, 'The kernel writes') };
    case 'test': {
      const args = pool.test.arguments.map((a) => (a.name === pool.test.sizeArgument ? { ...a, value: testSize } : a));
      return { ...shown(), reply: object({ arguments: args }, `A test at ${pool.test.sizeArgument} = ${testSize}`) };
    }
    case 'plan': {
      const current = matchVariant(pool, kernelAfter(prompt));
      return { ...shown(current), reply: object({ steps: plannedSteps(pool, current, new Set(), rng) }, 'The plan, most promising first') };
    }
    case 'validate': {
      const ids = [...prompt.matchAll(/^- id "([^"]+)":/gm)].map((m) => m[1]!);
      const steps = ids.map((id) => ({ id, deviceOnly: true, reason: 'It changes the kernel body only: shared memory and registers are declared in the kernel, and the launch keeps its shape.' }));
      return { ...shown(), reply: object({ steps }, 'Every step changes device code only') };
    }
    case 'breakdown':
      return { ...shown(), reply: object({ breakDown: false, steps: [] }, 'The step is small enough to apply and verify in one rewrite') };
    case 'replan': {
      const current = matchVariant(pool, kernelAfter(prompt));
      const tried = new Set(Object.entries(pool.ideas).filter(([, idea]) => prompt.includes(`\n- ${idea.title}: `)).map(([id]) => id));
      const steps = plannedSteps(pool, current, tried, rng);
      return { ...shown(current), reply: object(steps.length > 0 ? { done: false, steps } : { done: true, steps: [] }, steps.length > 0 ? 'Steps worth trying next' : 'Nothing promising is left') };
    }
    case 'step': {
      const parent = matchVariant(pool, kernelAfter(prompt));
      const title = lineAfter(prompt, 'Apply this optimization step to the CUDA kernel: ')?.replace(/\.$/, '');
      const children = childrenOf(pool.variants, parent.id);
      const ofIdea = children.filter((c) => c.idea !== null && pool.ideas[c.idea]!.title === title);
      return rewrite(pool, request, [parent], ofIdea.length > 0 ? ofIdea : children, rng);
    }
    case 'mutate': {
      const parent = matchVariant(pool, kernelAfter(prompt, 'The current kernel:'));
      const instruction = lineAfter(prompt, 'Make this CUDA kernel faster by applying this change: ')?.trim();
      const judged = parent.judge.find((j) => j.instruction === instruction);
      if (judged) return rewrite(pool, request, [parent], byIds(pool, judged.children), rng);
      // Its own idea: its favourite (or the one it ranks as asked) among those not yet applied to this kernel.
      const applied = appliedIdeas(pool, parent, prompt, 'The current kernel: variant ');
      const children = childrenOf(pool.variants, parent.id);
      const fresh = children.filter((c) => c.idea === null || !applied.has(c.idea));
      const ranked = rankedChildren(fresh.length > 0 ? fresh : children, ranking(`mutate ${parent.id}`));
      return rewrite(pool, request, [parent], children, rng, ranked[(rankAsked(prompt) - 1) % ranked.length]);
    }
    case 'crossover': {
      const first = matchVariant(pool, kernelAfter(prompt, 'The first parent:'));
      const second = matchVariant(pool, kernelAfter(prompt, 'The second parent:'));
      const ofBoth = pool.variants.filter((v) => v.parents.includes(first.id) && v.parents.includes(second.id));
      const ofEither = [...new Set([...childrenOf(pool.variants, first.id), ...childrenOf(pool.variants, second.id)])];
      return rewrite(pool, request, [first, second], ofBoth.length > 0 ? ofBoth : ofEither, rng);
    }
    case 'judge': {
      const parent = matchVariant(pool, kernelAfter(prompt, 'The kernel:'));
      // Its reading of the kernel: the change it ranks first (or as asked) among those not applied or failed yet.
      const said = resultLinesAbout(prompt, 'The kernel: variant ', true).join('\n');
      const fresh = parent.judge.filter((j) => !said.includes(j.instruction));
      const records = ranking(`judge ${parent.id}`).shuffle([...(fresh.length > 0 ? fresh : parent.judge)]);
      const record = records[(rankAsked(prompt) - 1) % records.length]!;
      const facts = profileFacts(prompt);
      const diagnosis = facts.length > 0 ? `${record.diagnosis} The profile: ${facts.join('; ')}.` : record.diagnosis;
      return { ...shown(parent), reply: object({ diagnosis, instruction: record.instruction }, 'What limits the kernel, and what to change next') };
    }
    case 'restrictions': {
      const variant = matchVariant(pool, kernelAfter(prompt));
      return { ...shown(variant), reply: object({ restrictions: variant.restrictions }, 'The restrictions this kernel needs') };
    }
    case 'jsonify': {
      const answer = /\nAnswer to convert:\n"""\n([\s\S]*)\n"""$/.exec(prompt)?.[1];
      const found = answer === undefined ? undefined : extractJson(answer);
      if (!found?.ok) throw new UnclassifiedRequestError(`the request asks to convert an answer to JSON, but ${answer === undefined ? 'quotes no answer' : `its answer holds none (${found!.detail})`}`);
      return { ...shown(), reply: object(found.value, 'The answer as JSON') };
    }
  }
}

/** The place a request asks its answer to take among the model's choices (1 unless it says: prompts.ts' rankLine). */
function rankAsked(prompt: string): number {
  return Number(/ you rank number (\d+) among the promising ones/.exec(prompt)?.[1] ?? 1);
}

/**
 * The lines of a request's results about the children of the variant it shows (`- v3, mutate of v0: ...`), and with
 * `failed` those of its children that failed (`- child 4 (judge of v0: ...) failed: ...`).
 */
function resultLinesAbout(prompt: string, shownAs: string, failed: boolean): string[] {
  const id = lineAfter(prompt, shownAs)?.split(',', 1)[0];
  if (!id) return [];
  const of = new RegExp(`^- (v\\d+, |child \\d+ \\()(mutate|judge|crossover) of (.* and )?${id}\\b`);
  return prompt.split('\n').filter((line) => of.test(line) && (failed || !line.startsWith('- child ')));
}

/** The ideas the request's results show applied to the variant shown: by their title, or by a judge's instruction that leads to them. */
function appliedIdeas(pool: Pool, parent: Variant, prompt: string, shownAs: string): Set<string> {
  const said = resultLinesAbout(prompt, shownAs, false).join('\n');
  const ideas = Object.entries(pool.ideas).filter(([, idea]) => said.includes(`: ${idea.title}:`)).map(([id]) => id);
  for (const judged of parent.judge.filter((j) => said.includes(j.instruction))) ideas.push(...byIds(pool, judged.children).flatMap((c) => (c.idea === null ? [] : [c.idea])));
  return new Set(ideas);
}

/** Children in a model's order of preference: its ideas in a drawn order, each idea's first take, then their second takes, ... */
function rankedChildren(children: readonly Variant[], rng: Random): Variant[] {
  const byIdea = new Map<string, Variant[]>();
  for (const c of children) byIdea.set(c.idea ?? c.id, [...(byIdea.get(c.idea ?? c.id) ?? []), c]);
  const takes = rng.shuffle([...byIdea.values()]).map((group) => rng.shuffle([...group]));
  const ranked: Variant[] = [];
  for (let round = 0; ranked.length < children.length; round++) for (const group of takes) if (group[round]) ranked.push(group[round]!);
  return ranked;
}

/**
 * `preferred` if given, or one of `candidates`; a retry answers the fix of the variant that failed, else one of
 * `candidates` not answered before.
 */
function rewrite(pool: Pool, request: StandinRequest, parents: Variant[], candidates: readonly Variant[], rng: Random, preferred?: Variant): Decision {
  const answered = request.previousAnswers.flatMap((answer) => {
    const code = answerCode(answer);
    if (code === null) return [];
    try {
      return [matchVariant(pool, code)];
    } catch (error) {
      if (error instanceof UnknownKernelError) return [];
      throw error;
    }
  });
  const failed = answered.at(-1);
  const fix = failed?.fix === undefined ? undefined : pool.byId.get(failed.fix)!;
  const fresh = candidates.filter((c) => !answered.includes(c));
  const child = answered.length === 0 && preferred ? preferred : fix && !answered.includes(fix) ? fix : rng.pick(fresh.length > 0 ? fresh : candidates);
  return { shown: parents, child, reply: { kind: 'rewrite', variant: child } };
}

/**
 * 2 to 4 steps from `start` down the tree: a walk through children that have children of their own (ideas the pool
 * builds on), naming each idea it meets that is new and none of `tried`.
 */
function plannedSteps(pool: Pool, start: Variant, tried: ReadonlySet<string>, rng: Random): { title: string; details: string }[] {
  const length = 2 + rng.int(3);
  const ideas: string[] = [];
  const visited = new Set([start.id]);
  for (let at = start; ideas.length < length; ) {
    const next = childrenOf(pool.variants, at.id).filter((c) => !visited.has(c.id) && childrenOf(pool.variants, c.id).length > 0);
    if (next.length === 0) break;
    at = rng.pick(next);
    visited.add(at.id);
    if (at.idea !== null && !tried.has(at.idea) && !ideas.includes(at.idea)) ideas.push(at.idea);
  }
  return ideas.map((id) => ({ title: pool.ideas[id]!.title, details: pool.ideas[id]!.details }));
}

/** The first lines of the profile the request shows, for the judge to cite. */
function profileFacts(prompt: string): string[] {
  const lines = prompt.split('\n');
  const heading = lines.findIndex((l) => l.startsWith(PROFILE_HEADING));
  if (heading < 0) return [];
  const facts: string[] = [];
  for (let i = heading + 1; i < lines.length && lines[i]!.startsWith('- ') && facts.length < 2; i++) facts.push(lines[i]!.slice(2));
  return facts;
}

/** What a reasoning model thinks before it answers (no braces: the JSON after it must be the only JSON). */
const THOUGHTS: Record<RequestKind, string> = {
  describe: 'Each thread computes one element of C from a row of A and a column of B; I will describe the mapping and the memory traffic.',
  'problem-size': 'One thread per element of the n by n output, so the grid covers n in x and n in y.',
  outputs: 'Only C is written; A and B are const inputs.',
  test: 'A square problem large enough to time reliably, inputs uniform in -1 to 1.',
  plan: 'The kernel reads every operand from global memory; reuse through shared memory and registers comes first, then wider accesses and latency hiding.',
  validate: 'None of these steps touches the host code or needs a library.',
  breakdown: 'This step is one coherent rewrite of the kernel body.',
  replan: 'Looking at what was tried and what the profile says now.',
  step: 'I will apply the step to the current kernel and expose its choices as tunable parameters.',
  restrictions: 'The kernel needs these relations between its parameters to stay correct and launchable.',
  mutate: 'The profile and the results point at one change; I will apply it and keep the rest as it is.',
  crossover: 'Each parent is fast for its own reason; I will keep the first and bring in what the second does better.',
  judge: 'The profile shows where the time goes; one change should address the largest limiter.',
  jsonify: 'Only the JSON of that answer is asked for.',
};

export interface AnswerForm {
  /** The chance of a <think> block before the answer. */
  thinkRate: number;
  /** The request asks for JSON only (a response_format): the object is answered bare. */
  jsonOnly: boolean;
  /** The request forces a tool call of this name: the object is its arguments. */
  toolName: string | undefined;
  /** The request asks for a rewrite's restrictions in its json block (the evolutionary strategy's form), not in a request of their own. */
  restrictionsInline: boolean;
}

/** How a request that wants a rewrite's restrictions in its json block says so (src/engine/strategies/evolutionary/prompts.ts). */
export const INLINE_RESTRICTIONS_ASKED = '"restrictions": [';

export type Rendered = { content: string } | { toolCall: { name: string; text: string; object: unknown } };

/** The reply as a model writes it: sometimes thinking first, code sometimes in ```cpp, JSON in prose unless asked bare. */
export function render(pool: Pool, kind: RequestKind, reply: Reply, form: AnswerForm, rng: Random): Rendered {
  if (reply.kind === 'object' && form.toolName !== undefined) return { toolCall: { name: form.toolName, text: JSON.stringify(reply.value), object: reply.value } };
  const think = rng.next() < form.thinkRate ? `<think>\n${THOUGHTS[kind]}\n</think>\n\n` : '';
  if (reply.kind === 'text') return { content: `${think}${reply.text}` };
  if (reply.kind === 'object') {
    const json = JSON.stringify(reply.value);
    if (form.jsonOnly) return { content: `${think}${json}` };
    return { content: rng.next() < 0.5 ? `${think}${reply.lead}:\n\n\`\`\`json\n${JSON.stringify(reply.value, null, 2)}\n\`\`\`` : `${think}${reply.lead}: ${json}` };
  }
  const v = reply.variant;
  const fence = rng.next() < 0.3 ? 'cpp' : 'cuda';
  const json = {
    ...(v.idea !== null && { idea: pool.ideas[v.idea]!.title }),
    tunableParameters: v.tunableParameters,
    gridDivisors: v.gridDivisors,
    ...(form.restrictionsInline && { restrictions: v.restrictions }),
  };
  return { content: `${think}${v.prose}\n\n\`\`\`${fence}\n${v.code.trimEnd()}\n\`\`\`\n\nThe parameters to tune, and the grid divisors:\n\n\`\`\`json\n${JSON.stringify(json)}\n\`\`\`\n` };
}
