/**
 * The population of an evolutionary session: verified, tuned variants of the kernel, each with where it came from,
 * and the archive that keeps it diverse. Plain data and pure functions (no GPU, no model): the controller asks here
 * which operator runs next and on which parents, and what enters the archive.
 *
 * The archive is a MAP-Elites grid: a variant's niche is what bounds it (Nsight Compute's speed-of-light verdict: DRAM,
 * the caches, compute, or latency) and how full it keeps the SMs (occupancy band). Each niche keeps its best few
 * variants ("elites"); only elites are parents. So a variant bound by another limit than the fastest one keeps its
 * place and can still be improved or combined, and one early winner does not end the search.
 */
import type { RejectionReason } from '../../progress/events';
import type { ConfigProfile } from '../../../tuner/run/profile';
import type { Config } from '../../../tuner/types';
import type { Random } from '../../../tuner/space/random';
import type { TuneParamLists } from '../../candidate/code';
import type { GridDivisors } from '../../candidate/finalize';

export const OPERATORS = ['mutate', 'crossover', 'judge'] as const;
/** mutate: one idea on one parent; crossover: what made two parents fast, in one kernel; judge: a mutate led by a judge that read the profile. */
export type Operator = (typeof OPERATORS)[number];

export type Bound = 'dram' | 'cache' | 'compute' | 'latency' | 'unprofiled';
export type OccupancyBand = 'low' | 'mid' | 'high' | 'unknown';

/** A verified, tuned kernel of the population. */
export interface Variant {
  /** "v0" is the original kernel; "v1", "v2" ... in the order they entered. */
  id: string;
  /** The child that made it (its request's number); null for the original. */
  child: number | null;
  parents: string[];
  /** 'edit': the kernel a branch of the session started from (the user's, or another variant), checked and timed. */
  operator: Operator | 'original' | 'edit';
  /** The idea it applied, in words ('' for the original). */
  instruction: string;
  /** The whole file. */
  code: string;
  tuneParams: TuneParamLists;
  restrictions: string[];
  gridDivisors: GridDivisors;
  sharedMemBytes: number | string | null;
  bestParams: Config;
  timeMs: number;
  /** The session's objective at bestParams (its time, unless another objective was chosen). */
  objectiveValue: number;
  profile: ConfigProfile | null;
  bound: Bound;
  occupancy: OccupancyBand;
  /** Unified diff from its first parent (empty for the original). */
  diff: string;
  /** In the archive: a parent for the next children. Retired variants stay in the lineage. */
  elite: boolean;
}

/** A child that did not enter the population, and why: the prompts tell the model what failed. */
export interface RejectedChild {
  child: number;
  parents: string[];
  operator: Operator;
  instruction: string;
  reason: RejectionReason;
}

/** Tries and wins of each operator: a win is a child that entered the archive faster than its parents. */
export type OperatorStats = Record<Operator, { tries: number; wins: number }>;

export const NO_OPERATOR_STATS: OperatorStats = { mutate: { tries: 0, wins: 0 }, crossover: { tries: 0, wins: 0 }, judge: { tries: 0, wins: 0 } };

export interface ArchiveOptions {
  /** Elites per niche. */
  perNiche: number;
  /** Elites in all. */
  capacity: number;
  higherIsBetter: boolean;
}

export const nicheOf = (v: Pick<Variant, 'bound' | 'occupancy'>): string => `${v.bound}/${v.occupancy}`;

const BAND_LIMITS: [number, OccupancyBand][] = [
  [25, 'low'],
  [50, 'mid'],
];

/** What bounds a kernel and how full it keeps the SMs, from its profile: the two axes of the archive. */
export function classify(profile: ConfigProfile | null): { bound: Bound; occupancy: OccupancyBand } {
  const numbers = profile?.ncu?.numbers;
  let bound: Bound = 'unprofiled';
  if (numbers?.bound === 'memory') bound = numbers.busiestMemory === 'DRAM' || numbers.busiestMemory === undefined ? 'dram' : 'cache';
  else if (numbers?.bound === 'compute' || numbers?.bound === 'latency') bound = numbers.bound;
  const pct = numbers?.achievedOccupancyPct ?? (profile?.driver.occupancy !== undefined ? 100 * profile.driver.occupancy : undefined);
  const occupancy: OccupancyBand = pct === undefined ? 'unknown' : (BAND_LIMITS.find(([limit]) => pct < limit)?.[1] ?? 'high');
  return { bound, occupancy };
}

/** -1 when a is better than b by the objective, 1 when worse; ties broken by entry order (the older first). */
function better(a: Variant, b: Variant, higherIsBetter: boolean): number {
  const d = higherIsBetter ? b.objectiveValue - a.objectiveValue : a.objectiveValue - b.objectiveValue;
  return d !== 0 ? d : variantNumber(a) - variantNumber(b);
}

const variantNumber = (v: Pick<Variant, 'id'>): number => Number(v.id.slice(1));

export function bestVariant(variants: readonly Variant[], higherIsBetter: boolean): Variant {
  if (variants.length === 0) throw new RangeError('the population is empty');
  return variants.reduce((a, b) => (better(b, a, higherIsBetter) < 0 ? b : a));
}

/**
 * The population with `child` entered: it is an elite when its niche has room or it beats that niche's worst elite;
 * past the archive's capacity the worst elite of the most crowded niche retires (never the best variant overall).
 */
export function admit(variants: readonly Variant[], child: Variant, options: ArchiveOptions): Variant[] {
  const all = [...variants, { ...child, elite: true }];
  const niche = nicheOf(child);
  const inNiche = all.filter((v) => v.elite && nicheOf(v) === niche).sort((a, b) => better(a, b, options.higherIsBetter));
  const retire = new Set(inNiche.slice(options.perNiche).map((v) => v.id));
  let elites = all.filter((v) => v.elite && !retire.has(v.id));
  const overall = bestVariant(elites, options.higherIsBetter);
  while (elites.length > options.capacity) {
    const counts = new Map<string, Variant[]>();
    for (const v of elites) counts.set(nicheOf(v), [...(counts.get(nicheOf(v)) ?? []), v]);
    const crowded = [...counts.values()].sort((a, b) => b.length - a.length || nicheOf(a[0]!).localeCompare(nicheOf(b[0]!)))[0]!;
    const worst = crowded.filter((v) => v !== overall).sort((a, b) => better(b, a, options.higherIsBetter))[0];
    if (!worst) break;
    retire.add(worst.id);
    elites = elites.filter((v) => v !== worst);
  }
  return all.map((v) => (retire.has(v.id) ? { ...v, elite: false } : v));
}

/** The better of `size` elites drawn at random (with replacement): selection pressure that still lets slower ones parent. */
export function tournament(rng: Random, elites: readonly Variant[], size: number, higherIsBetter: boolean): Variant {
  let winner = rng.pick(elites);
  for (let i = 1; i < size; i++) {
    const other = rng.pick(elites);
    if (better(other, winner, higherIsBetter) < 0) winner = other;
  }
  return winner;
}

/** A draw from Beta(a, b) (a, b >= 1: sums of exponentials through the gamma variates of integer shape). */
function betaSample(rng: Random, a: number, b: number): number {
  const gamma = (k: number) => {
    let sum = 0;
    for (let i = 0; i < k; i++) sum -= Math.log(1 - rng.next());
    return sum;
  };
  const x = gamma(a);
  return x / (x + gamma(b));
}

/**
 * Which operator makes the next child: Thompson sampling over each operator's measured wins (a Beta(wins + 1,
 * losses + 1) draw each, the highest wins), among those that can run: crossover needs two elites.
 */
export function chooseOperator(rng: Random, stats: OperatorStats, elites: number): Operator {
  const allowed = OPERATORS.filter((op) => op !== 'crossover' || elites >= 2);
  let best: Operator = allowed[0]!;
  let bestDraw = -1;
  for (const op of allowed) {
    const { tries, wins } = stats[op];
    const draw = betaSample(rng, wins + 1, tries - wins + 1);
    if (draw > bestDraw) [best, bestDraw] = [op, draw];
  }
  return best;
}

/** The second parent of a crossover: from another niche where there is one (different strengths to combine), else any other elite. */
export function crossoverPartner(rng: Random, elites: readonly Variant[], first: Variant, size: number, higherIsBetter: boolean): Variant {
  const others = elites.filter((v) => v.id !== first.id);
  const elsewhere = others.filter((v) => nicheOf(v) !== nicheOf(first));
  return tournament(rng, elsewhere.length > 0 ? elsewhere : others, size, higherIsBetter);
}

/** The variant and its ancestors, the original first (first parents only: the line a diff is read along). */
export function lineage(variants: readonly Variant[], id: string): Variant[] {
  const byId = new Map(variants.map((v) => [v.id, v]));
  const line: Variant[] = [];
  for (let v = byId.get(id); v; v = v.parents[0] === undefined ? undefined : byId.get(v.parents[0])) {
    if (line.includes(v)) break;
    line.unshift(v);
  }
  return line;
}

/** Every ancestor of the variants (all parents), with them. */
export function ancestry(variants: readonly Variant[], ids: readonly string[]): Set<string> {
  const byId = new Map(variants.map((v) => [v.id, v]));
  const seen = new Set<string>();
  const stack = [...ids];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(byId.get(id)?.parents ?? []));
  }
  return seen;
}

/**
 * Children written at once: the window asked for, but no more than a tenth of a model-call budget. A child costs
 * one to three calls (a judge, retries), and children decided together are decided from the same results: under
 * about 40 calls the budget buys more speed one generation after another than side by side.
 */
export function windowFor(window: number, modelCallBudget: number | undefined): number {
  return modelCallBudget === undefined ? window : Math.max(1, Math.min(window, Math.floor(modelCallBudget / 10)));
}
