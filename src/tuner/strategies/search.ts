// What every search strategy shares: the budget (maxFevals, timeLimitMs, an AbortSignal), a memo so that revisiting a
// configuration costs nothing and does not count as an evaluation, the seeded random source, and the bookkeeping that
// turns the evaluations into a TuneResult. A strategy only decides which configuration to evaluate next.

import { freshSeed, Random } from '../random';
import type { SearchSpace } from '../search-space';
import { objectiveOf, type Config, type ConfigResult, type StopReason, type TuneResult } from '../types';

/** Evaluates one configuration (compile, verify, time; or replay from a cache). Failures are results, not exceptions. */
export type Evaluate = (config: Config) => Promise<ConfigResult>;

/** Milliseconds from an arbitrary origin; replaceable so a replayed run can count simulated time. */
export interface Clock {
  now(): number;
}

export const wallClock: Clock = { now: () => performance.now() };

const DEFAULT_LOOKAHEAD = 8;

export interface SearchProgress {
  evaluations: number;
  best: ConfigResult | undefined;
  elapsedMs: number;
  /**
   * The results the run will have reported when it completes: the configurations over the device's limits and the
   * evaluations the budget allows (a time limit or a strategy that converges may end it sooner).
   */
  total: number;
}

export interface StrategyOptions {
  /** At most this many distinct configurations are evaluated. */
  maxFevals?: number;
  /** No new evaluation starts after this many milliseconds (measured with `clock`). */
  timeLimitMs?: number;
  /** Seed of every random choice; the same seed, space and results give the same sequence of evaluations. */
  seed?: number;
  /** Aborting stops the search after the evaluation in flight; the result so far is returned with stopReason 'aborted'. */
  signal?: AbortSignal;
  clock?: Clock;
  /** Called with every new result, in order (device-limit exclusions first). */
  onResult?: (result: ConfigResult, progress: SearchProgress) => void;
  /**
   * Called before an evaluation with the configurations the strategy will evaluate after it, in order (at most
   * `lookahead`, none evaluated yet): a hint for compiling ahead while the GPU times the current one. Not all of them need
   * be evaluated: the budget may end first, or a local search may move elsewhere.
   */
  onUpcoming?: (configs: readonly Config[]) => void;
  /** How many upcoming configurations onUpcoming is told about; default 8. */
  lookahead?: number;
}

export interface Strategy {
  readonly name: string;
  /** Explores the space through ctx.evaluate until it has nothing left to try; the context stops it when the budget is spent. */
  search(ctx: SearchContext): Promise<void>;
  /** Runs this strategy: runStrategy(this, ...). */
  run(space: SearchSpace, evaluate: Evaluate, options?: StrategyOptions): Promise<TuneResult>;
}

/** Thrown by SearchContext.evaluate when the budget is spent; runStrategy catches it. */
class StopSearch extends Error {
  constructor(readonly reason: StopReason) {
    super(`search stopped: ${reason}`);
  }
}

export class SearchContext {
  readonly rng: Random;
  readonly results: ConfigResult[] = [];
  private readonly memo = new Map<number, number>();
  private readonly start: number;
  private bestResult: ConfigResult | undefined;
  private unvisitedOrder: Int32Array | undefined;
  private unvisitedCursor = 0;

  constructor(
    readonly space: SearchSpace,
    private readonly evaluateConfig: Evaluate,
    private readonly options: StrategyOptions & { seed: number; clock: Clock },
  ) {
    this.rng = new Random(options.seed);
    this.start = options.clock.now();
  }

  /** Distinct configurations evaluated so far. */
  get evaluations(): number {
    return this.memo.size;
  }

  /** True when every configuration of the space has been evaluated. */
  get exhausted(): boolean {
    return this.memo.size >= this.space.size;
  }

  get best(): ConfigResult | undefined {
    return this.bestResult;
  }

  get elapsedMs(): number {
    return this.options.clock.now() - this.start;
  }

  /** The objective of an evaluated configuration, or undefined when it has not been evaluated. */
  known(index: number): number | undefined {
    return this.memo.get(index);
  }

  /** Records a result that did not come from evaluate (device-limit exclusions). */
  report(result: ConfigResult): void {
    this.results.push(result);
    this.options.onResult?.(result, this.progress());
  }

  private progress(): SearchProgress {
    const evaluations = Math.min(this.space.size, this.options.maxFevals ?? Infinity);
    return { evaluations: this.evaluations, best: this.bestResult, elapsedMs: this.elapsedMs, total: this.space.excluded.length + evaluations };
  }

  /** Tells onUpcoming which configurations follow the next evaluation (those not evaluated yet, up to the lookahead). */
  announce(next: Iterable<number>): void {
    const { onUpcoming, lookahead = DEFAULT_LOOKAHEAD, maxFevals = Infinity } = this.options;
    // Nothing beyond what the budget still allows after the next evaluation: compiling those would be wasted.
    const limit = Math.min(lookahead, maxFevals - this.evaluations - 1);
    if (!onUpcoming || limit <= 0) return;
    const configs: Config[] = [];
    for (const i of next) {
      if (configs.length >= limit) break;
      if (!this.memo.has(i)) configs.push(this.space.config(i));
    }
    if (configs.length > 0) onUpcoming(configs);
  }

  /** Throws StopSearch when the search must not start another evaluation. */
  private checkBudget(newEvaluation: boolean): void {
    if (this.options.signal?.aborted) throw new StopSearch('aborted');
    if (this.options.timeLimitMs !== undefined && this.elapsedMs >= this.options.timeLimitMs) throw new StopSearch('time_limit');
    if (newEvaluation && this.options.maxFevals !== undefined && this.evaluations >= this.options.maxFevals) throw new StopSearch('max_fevals');
  }

  /** The objective (time in ms, +Infinity for a failure) of the configuration at a position, evaluating it on first use. */
  async evaluate(index: number): Promise<number> {
    const cached = this.memo.get(index);
    this.checkBudget(cached === undefined);
    if (cached !== undefined) return cached;
    const config = this.space.config(index);
    let result: ConfigResult;
    try {
      result = await this.evaluateConfig(config);
    } catch (e) {
      if (this.options.signal?.aborted) throw new StopSearch('aborted');
      throw e;
    }
    const key = this.space.key(config);
    if (result.key !== key) throw new Error(`the evaluator returned the result of "${result.key}" for configuration "${key}"`);
    const objective = objectiveOf(result);
    this.memo.set(index, objective);
    if (result.status === 'ok' && objective < (this.bestResult ? objectiveOf(this.bestResult) : Infinity)) this.bestResult = result;
    this.report(result);
    return objective;
  }

  /** A configuration not evaluated yet, uniformly at random; undefined when all have been. */
  randomUnvisited(): number | undefined {
    // One seeded permutation, walked once: no retry loops however few configurations remain.
    this.unvisitedOrder ??= this.rng.shuffle(Int32Array.from({ length: this.space.size }, (_, i) => i));
    while (this.unvisitedCursor < this.unvisitedOrder.length) {
      const candidate = this.unvisitedOrder[this.unvisitedCursor++]!;
      if (!this.memo.has(candidate)) return candidate;
    }
    return undefined;
  }
}

/** Runs a strategy on a space with an evaluator and returns every result, the best, and why it stopped. */
export async function runStrategy(
  strategy: Strategy,
  space: SearchSpace,
  evaluate: Evaluate,
  options: StrategyOptions = {},
): Promise<TuneResult> {
  const { maxFevals, timeLimitMs } = options;
  if (maxFevals !== undefined && !(Number.isInteger(maxFevals) && maxFevals >= 1)) {
    throw new RangeError(`Expected a positive integer for maxFevals but received ${maxFevals}`);
  }
  if (timeLimitMs !== undefined && !(timeLimitMs > 0)) throw new RangeError(`Expected a positive number for timeLimitMs but received ${timeLimitMs}`);
  const { lookahead } = options;
  if (lookahead !== undefined && !(Number.isInteger(lookahead) && lookahead >= 0)) {
    throw new RangeError(`Expected a non-negative integer for lookahead but received ${lookahead}`);
  }
  const seed = options.seed ?? freshSeed();
  const ctx = new SearchContext(space, evaluate, { ...options, seed, clock: options.clock ?? wallClock });
  for (const e of space.excluded) {
    ctx.report({ config: e.config, key: e.key, status: 'exceeds_device_limits', error: { message: e.reason } });
  }
  let stopReason: StopReason = 'completed';
  try {
    if (options.signal?.aborted) throw new StopSearch('aborted');
    await strategy.search(ctx);
  } catch (e) {
    if (!(e instanceof StopSearch)) throw e;
    stopReason = e.reason;
  }
  return {
    best: ctx.best,
    results: ctx.results,
    strategy: strategy.name,
    evaluations: ctx.evaluations,
    elapsedMs: ctx.elapsedMs,
    stopReason,
    seed,
  };
}

/** The integers from start (inclusive) to end (exclusive), lazily: strategies announce long sequences this way. */
export function* range(start: number, end: number): IterableIterator<number> {
  for (let i = start; i < end; i++) yield i;
}

/** The items of a list from a position on, lazily (announce reads only the first few). */
export function* following(items: readonly number[], start: number): IterableIterator<number> {
  for (let i = start; i < items.length; i++) yield items[i]!;
}

/** Builds a Strategy from its search procedure. */
export function defineStrategy(name: string, search: (ctx: SearchContext) => Promise<void>): Strategy {
  const strategy: Strategy = {
    name,
    search,
    run: (space, evaluate, options) => runStrategy(strategy, space, evaluate, options),
  };
  return strategy;
}

/** Rejects option names a strategy does not know (a typo would otherwise silently fall back to a default). */
export function checkOptionNames(strategy: string, options: object, allowed: readonly string[]): void {
  const unknown = Object.keys(options).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    const names = unknown.map((k) => `'${k}'`).join(', ');
    throw new RangeError(`Unknown option${unknown.length > 1 ? 's' : ''} ${names} for strategy ${strategy}; it accepts ${allowed.join(', ') || 'none'}`);
  }
}
