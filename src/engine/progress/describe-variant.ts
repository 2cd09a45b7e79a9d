// A variant of an evolutionary session in words, for the step titles, the panel's lineage tree and the reports: how it
// was made and its niche in the archive. Pure and free of Node imports: the webview bundles it.
import type { RejectionReason, VariantView } from './events';

/** How a variant was made: "crossover of v1 and v2", "judge-led mutation of v4", "the original kernel". */
export function madeBy(operator: VariantView['operator'], parents: readonly string[]): string {
  switch (operator) {
    case 'original':
      return 'the original kernel';
    case 'edit':
      return `the kernel a branch of the session started from${parents[0] ? ` (the fastest was ${parents[0]})` : ''}`;
    case 'crossover':
      return `crossover of ${parents.join(' and ')}`;
    case 'judge':
      return `judge-led mutation of ${parents[0]}`;
    case 'mutate':
      return `mutation of ${parents[0]}`;
  }
}

const BOUND_WORDS: Record<string, string> = { dram: 'DRAM-bound', cache: 'cache-bound', compute: 'compute-bound', latency: 'latency-bound', unprofiled: 'not profiled' };
const OCCUPANCY_WORDS: Record<string, string> = { low: 'low occupancy (under 25%)', mid: 'mid occupancy (25–50%)', high: 'high occupancy (50% or more)', unknown: 'occupancy unknown' };

/** What bounds the variant and how full it keeps the SMs: its niche in the archive. */
export function nicheText(v: Pick<VariantView, 'bound' | 'occupancy'>): string {
  return `${BOUND_WORDS[v.bound] ?? v.bound}, ${OCCUPANCY_WORDS[v.occupancy] ?? v.occupancy}`;
}

const TWIN_ERROR = 'DuplicateVariant';

/** Why a child whose kernel is a variant's already (but for whitespace) is rejected: evaluating it would measure what is known. */
export function twinRejection(twin: string, attempts: number): RejectionReason {
  return { kind: 'failed', error: TWIN_ERROR, message: `the rewrite is ${twin}'s code again`, attempts };
}

/** The variant a rejected child was a twin of, if that was why. */
export function twinOf(reason: RejectionReason): string | undefined {
  return reason.kind === 'failed' && reason.error === TWIN_ERROR ? /^the rewrite is (\S+)'s code again$/.exec(reason.message)?.[1] : undefined;
}
