// What every search strategy shares: the budget (maxFevals, timeLimitMs, an AbortSignal), a memo so that revisiting a
// configuration costs nothing and does not count as an evaluation, the seeded random source, the workers (one per GPU)
// that evaluations run on, and the bookkeeping that turns the evaluations into a TuneResult. A strategy only decides
// which configurations to evaluate, one at a time (evaluate) or as a batch (evaluateAll: spread over the workers).

import { freshSeed, Random } from '../space/random';
import type { ExcludedConfig, SearchSpace } from '../space/search-space';
import { objectiveOf, pythonStr, type Config, type ConfigResult, type Objective, type StopReason, type StrategyChoice, type TuneResult } from '../types';
import type { CommonOptionValues } from './options';

/**
 * Evaluates one configuration (compile, verify, time; or replay from a cache) on a worker (0 ≤ worker < workers: the GPU
 * it runs on). Failures are results, not exceptions. At most one evaluation runs on a worker at a time.
 */
export type Evaluate = (config: Config, worker: number) => Promise<ConfigResult>;

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

/** A deterministic share of a search space (see SearchSpace.shard): configuration k belongs to shard k mod count. */
export interface Shard {
  /** 0 ≤ index < count, as Slurm numbers the tasks of an array job. */
  index: number;
  count: number;
}

export interface StrategyOptions {
  /** What the search minimises (or maximises) through objectiveOf; default time. */
  objective?: Objective;
  /** At most this many distinct configurations are evaluated. */
  maxFevals?: number;
  /** No new evaluation starts after this many milliseconds (measured with `clock`). */
  timeLimitMs?: number;
  /** Seed of every random choice; the same seed, space and results give the same sequence of evaluations (with one worker). */
  seed?: number;
  /** Aborting stops the search: no evaluation starts, and the result so far is returned with stopReason 'aborted'. */
  signal?: AbortSignal;
  clock?: Clock;
  /** Called with every new result, in the order they finish (device-limit exclusions first). */
  onResult?: (result: ConfigResult, progress: SearchProgress) => void;
  /**
   * Called when an evaluation starts, with the configurations the strategy will evaluate after it, in order (at most
   * `lookahead`, none evaluated or started yet): a hint for compiling ahead while the GPUs time the current ones. Not all
   * of them need be evaluated: the budget may end first, or a local search may move elsewhere.
   */
  onUpcoming?: (configs: readonly Config[]) => void;
  /** How many upcoming configurations onUpcoming is told about; default 8. */
  lookahead?: number;
  /**
   * Evaluations that may run at once, each on its own worker (one per GPU); default 1. With more than one the order of
   * the results depends on how long each evaluation takes, so a seed repeats a search exactly only with one worker.
   */
  workers?: number;
  /** Evaluate only this share of the space (strategies that can be split: brute force). */
  shard?: Shard;
}

export interface Strategy {
  readonly name: string;
  /** How the strategy uses several workers (GPUs), in a sentence for logs and reports. */
  readonly parallelism: string;
  /** Whether a search can be split into shards evaluated independently (on several hosts) and merged. */
  readonly shardable: boolean;
  /** Its options under Kernel Tuner's names, defaults filled in (max_fevals, time_limit and x0 among them when given). */
  readonly options: Readonly<CommonOptionValues & Record<string, unknown>>;
  /**
   * The evaluation budget the strategy falls back on when neither the run nor its options set max_fevals, as Kernel
   * Tuner's strategies do (greedy_mls 100, simulated_annealing its schedule's length, ...); none: until it ends itself.
   */
  defaultMaxFevals?(spaceSize: number): number;
  /**
   * Explores the space through ctx.evaluate / ctx.evaluateAll until it has nothing left to try or ends by its own rule
   * (then it may return that rule in words, e.g. "the annealing schedule ended"); the context stops it when the budget
   * is spent.
   */
  search(ctx: SearchContext): Promise<void | string>;
  /** Runs this strategy: runStrategy(this, ...). */
  run(space: SearchSpace, evaluate: Evaluate, options?: StrategyOptions): Promise<TuneResult>;
}

/** Thrown by SearchContext.evaluate when the budget is spent; runStrategy catches it. */
class StopSearch extends Error {
  constructor(readonly reason: StopReason) {
    super(`search stopped: ${reason}`);
  }
}

/** Positions to evaluate: an array, or a lazily computed sequence (brute force over millions of configurations). */
export interface Positions {
  readonly length: number;
  at(i: number): number | undefined;
}

export class SearchContext {
  readonly rng: Random;
  readonly results: ConfigResult[] = [];
  /** Evaluations that may run at once (one per worker). */
  readonly workers: number;
  private readonly memo = new Map<number, number>();
  /** Evaluations asked for and not finished (waiting for a worker or running): a second request shares the first. */
  private readonly pending = new Map<number, Promise<number>>();
  /** Evaluations past the budget check and not finished: they count against maxFevals. */
  private started = 0;
  private readonly freeWorkers: number[];
  private readonly waitingForWorker: ((worker: number) => void)[] = [];
  /** An evaluator error (not a failed configuration): no evaluation starts after it; runStrategy rethrows it. */
  private failure: { error: unknown } | undefined;
  private readonly origin: number;
  private bestResult: ConfigResult | undefined;
  private unvisitedOrder: Int32Array | undefined;
  private unvisitedCursor = 0;
  private x0Used = false;
  private chosen: StrategyChoice | undefined;
  /** This run's share of the space: a shard's walks the whole space, so it is computed once, not per result. */
  private readonly share: { positions: Positions; excluded: readonly ExcludedConfig[] };

  constructor(
    readonly space: SearchSpace,
    private readonly evaluateConfig: Evaluate,
    private readonly options: StrategyOptions & { seed: number; clock: Clock; x0?: number },
  ) {
    this.rng = new Random(options.seed);
    this.origin = options.clock.now();
    this.workers = options.workers ?? 1;
    this.freeWorkers = Array.from({ length: this.workers }, (_, w) => w);
    const { shard } = options;
    if (shard) this.share = space.shard(shard.index, shard.count);
    else {
      const length = space.size;
      this.share = { positions: { length, at: (i) => (i >= 0 && i < length ? i : undefined) }, excluded: space.excluded };
    }
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
    return this.options.clock.now() - this.origin;
  }

  /**
   * The most distinct configurations this run may evaluate: its max_fevals (the run's, the strategy option's, or the
   * strategy's own default), never more than its share of the space. Strategies that pace themselves by the budget
   * (simulated annealing's schedule, dual annealing's maxfun) read it.
   */
  get maxFevals(): number {
    return Math.min(this.share.positions.length, this.options.maxFevals ?? Infinity);
  }

  /** The run's max_fevals as given (by the run, the options or the strategy's default); undefined when none. */
  get maxFevalsGiven(): number | undefined {
    return this.options.maxFevals;
  }

  /** Whether this run evaluates a shard of the space (a search split over hosts). */
  get sharded(): boolean {
    return this.options.shard !== undefined;
  }

  /** Records which strategy runs and why (auto's choice); the result reports it. */
  choose(choice: StrategyChoice): void {
    this.chosen = choice;
  }

  get choice(): StrategyChoice | undefined {
    return this.chosen;
  }

  /** The time limit in ms (of the run's clock), if any. */
  get timeLimitMs(): number | undefined {
    return this.options.timeLimitMs;
  }

  /** How much of the budget is spent, 0 to 1: the larger of the evaluations' and the time's share (Kernel Tuner's get_fraction_consumed). */
  get budgetSpent(): number {
    const fevals = Number.isFinite(this.maxFevals) ? this.evaluations / this.maxFevals : 0;
    const time = this.options.timeLimitMs !== undefined ? this.elapsedMs / this.options.timeLimitMs : 0;
    return Math.min(1, Math.max(fevals, time));
  }

  /**
   * Where a strategy starts: the configuration of the x0 option the first time it is asked (Kernel Tuner's
   * get_start_pos), else a random configuration not yet evaluated (undefined when none is left).
   */
  start(): number | undefined {
    const x0 = this.options.x0;
    if (x0 !== undefined && !this.x0Used) {
      this.x0Used = true;
      return x0;
    }
    return this.randomUnvisited();
  }

  /**
   * The objective of the configuration at some value indices, evaluated on first use. A combination that is not a
   * valid configuration (a restriction or the device's limits rule it out) costs nothing and counts no evaluation: it
   * is +Infinity, as Kernel Tuner's CostFunc answers an InvalidConfig with the largest float.
   */
  evaluateIndices(valueIndices: ArrayLike<number>): Promise<number> {
    const index = this.space.indexOfIndices(valueIndices);
    if (index === undefined) {
      try {
        this.checkBudget(false);
      } catch (e) {
        return Promise.reject(e);
      }
      return Promise.resolve(Infinity);
    }
    return this.evaluate(index);
  }

  /**
   * The objectives of a batch (a generation, a neighbourhood), evaluated in parallel over the workers in order; the
   * same position twice is evaluated once. Rejects as evaluate does when the budget ends first.
   */
  async evaluateMany(positions: readonly number[]): Promise<number[]> {
    await this.evaluateAll(positions);
    return positions.map((i) => this.memo.get(i)!);
  }

  /** The positions of this run's share of the space, in order (every position without a shard). */
  get positions(): Positions {
    return this.share.positions;
  }

  /** The configurations of this run's share that are over the device's limits, in order. */
  get excluded(): readonly ExcludedConfig[] {
    return this.share.excluded;
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
    const evaluations = Math.min(this.share.positions.length, this.options.maxFevals ?? Infinity);
    return { evaluations: this.evaluations, best: this.bestResult, elapsedMs: this.elapsedMs, total: this.share.excluded.length + evaluations };
  }

  /** Tells onUpcoming which configurations follow the one starting now (those neither evaluated nor started, up to the lookahead). */
  private announce(next: Iterable<number> | undefined): void {
    const { onUpcoming, lookahead = DEFAULT_LOOKAHEAD, maxFevals = Infinity } = this.options;
    // Nothing beyond what the budget still allows after this evaluation: compiling those would be wasted.
    const limit = Math.min(lookahead, maxFevals - this.memo.size - this.started);
    if (!onUpcoming || !next || limit <= 0) return;
    const configs: Config[] = [];
    for (const i of next) {
      if (configs.length >= limit) break;
      if (!this.memo.has(i) && !this.pending.has(i)) configs.push(this.space.config(i));
    }
    if (configs.length > 0) onUpcoming(configs);
  }

  /** Throws StopSearch when the search must not start another evaluation (or the evaluator failure that stopped it). */
  private checkBudget(newEvaluation: boolean): void {
    if (this.failure) throw this.failure.error;
    if (this.options.signal?.aborted) throw new StopSearch('aborted');
    if (this.options.timeLimitMs !== undefined && this.elapsedMs >= this.options.timeLimitMs) throw new StopSearch('time_limit');
    if (newEvaluation && this.options.maxFevals !== undefined && this.memo.size + this.started >= this.options.maxFevals) throw new StopSearch('max_fevals');
  }

  /**
   * The objective (time in ms, +Infinity for a failure) of the configuration at a position, evaluating it on first use
   * on a free worker. `upcoming`: what the strategy will evaluate after it, for compiling ahead.
   */
  evaluate(index: number, upcoming?: Iterable<number>): Promise<number> {
    const cached = this.memo.get(index);
    if (cached !== undefined) {
      try {
        this.checkBudget(false);
      } catch (e) {
        return Promise.reject(e);
      }
      return Promise.resolve(cached);
    }
    const pending = this.pending.get(index);
    if (pending) return pending;
    const evaluation = this.evaluateOnWorker(index, upcoming).finally(() => this.pending.delete(index));
    this.pending.set(index, evaluation);
    return evaluation;
  }

  private async evaluateOnWorker(index: number, upcoming: Iterable<number> | undefined): Promise<number> {
    const worker = await this.acquireWorker();
    try {
      this.checkBudget(true);
      this.started++;
      this.announce(upcoming);
      const config = this.space.config(index);
      let result: ConfigResult;
      try {
        result = await this.evaluateConfig(config, worker);
        const key = this.space.key(config);
        if (result.key !== key) throw new Error(`the evaluator returned the result of "${result.key}" for configuration "${key}"`);
      } catch (e) {
        if (this.options.signal?.aborted) throw new StopSearch('aborted');
        this.failure ??= { error: e };
        throw e;
      } finally {
        this.started--;
      }
      const objective = objectiveOf(result, this.options.objective);
      this.memo.set(index, objective);
      if (result.status === 'ok' && objective < (this.bestResult ? objectiveOf(this.bestResult, this.options.objective) : Infinity)) this.bestResult = result;
      this.report(result);
      return objective;
    } finally {
      this.releaseWorker(worker);
    }
  }

  /**
   * Evaluates every position of a batch, spread over the workers: each free worker takes the next position in order.
   * Resolves when all are done; when the budget ends first, rejects (as evaluate does) once those started have finished.
   */
  async evaluateAll(positions: Positions): Promise<void> {
    let cursor = 0;
    const rest = function* (from: number): IterableIterator<number> {
      for (let i = from; i < positions.length; i++) yield positions.at(i)!;
    };
    const lane = async (): Promise<void> => {
      while (cursor < positions.length) {
        const k = cursor++;
        await this.evaluate(positions.at(k)!, rest(k + 1));
      }
    };
    const lanes = Array.from({ length: Math.min(this.workers, positions.length) }, lane);
    const settled = await Promise.allSettled(lanes);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Waits until no evaluation is running (after the search stopped, so every started one is in the results). */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending.values()]);
  }

  /** The evaluator error that stopped the search, if one did. */
  get evaluatorFailure(): { error: unknown } | undefined {
    return this.failure;
  }

  private acquireWorker(): Promise<number> {
    const free = this.freeWorkers.shift();
    if (free !== undefined) return Promise.resolve(free);
    return new Promise((resolve) => this.waitingForWorker.push(resolve));
  }

  private releaseWorker(worker: number): void {
    const next = this.waitingForWorker.shift();
    if (next) next(worker);
    else this.freeWorkers.push(worker);
  }

  /** A configuration neither evaluated nor being evaluated, uniformly at random; undefined when none is left. */
  randomUnvisited(): number | undefined {
    // One seeded permutation, walked once: no retry loops however few configurations remain.
    this.unvisitedOrder ??= this.rng.shuffle(Int32Array.from({ length: this.space.size }, (_, i) => i));
    while (this.unvisitedCursor < this.unvisitedOrder.length) {
      const candidate = this.unvisitedOrder[this.unvisitedCursor++]!;
      if (!this.memo.has(candidate) && !this.pending.has(candidate)) return candidate;
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
  const budget = budgetOf(strategy, space, options);
  const { maxFevals, timeLimitMs } = budget;
  if (maxFevals !== undefined && !(Number.isInteger(maxFevals) && maxFevals >= 1)) {
    throw new RangeError(`Expected a positive integer for maxFevals but received ${maxFevals}`);
  }
  if (timeLimitMs !== undefined && !(timeLimitMs > 0)) throw new RangeError(`Expected a positive number for timeLimitMs but received ${timeLimitMs}`);
  const { lookahead } = options;
  if (lookahead !== undefined && !(Number.isInteger(lookahead) && lookahead >= 0)) {
    throw new RangeError(`Expected a non-negative integer for lookahead but received ${lookahead}`);
  }
  const { workers, shard } = options;
  if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1)) throw new RangeError(`Expected a positive integer for workers but received ${workers}`);
  if (shard !== undefined) checkShard(strategy, shard);
  const x0 = startOf(strategy, space);
  const seed = options.seed ?? freshSeed();
  const ctx = new SearchContext(space, evaluate, {
    ...options,
    ...(maxFevals !== undefined && { maxFevals }),
    ...(timeLimitMs !== undefined && { timeLimitMs }),
    seed,
    clock: options.clock ?? wallClock,
    ...(x0 !== undefined && { x0 }),
  });
  // Configurations over the device limits are shared out like the others, so that the shards' caches hold each once.
  for (const e of ctx.excluded) {
    ctx.report({ config: e.config, key: e.key, status: 'exceeds_device_limits', error: { message: e.reason } });
  }
  let stopReason: StopReason = 'completed';
  let ended: void | string = undefined;
  try {
    if (options.signal?.aborted) throw new StopSearch('aborted');
    ended = await strategy.search(ctx);
    // A strategy that paces itself by the budget (an annealing schedule) ends as it is spent: the budget stopped it.
    if (ctx.evaluations >= ctx.maxFevals && !ctx.exhausted) stopReason = 'max_fevals';
  } catch (e) {
    // Evaluations still running on other workers finish and are recorded before the result is returned.
    await ctx.drain();
    const failure = ctx.evaluatorFailure;
    if (failure) throw failure.error;
    if (!(e instanceof StopSearch)) throw e;
    stopReason = e.reason;
  }
  return {
    best: ctx.best,
    results: ctx.results,
    strategy: ctx.choice?.strategy ?? strategy.name,
    ...(ctx.choice && { strategyChoice: ctx.choice }),
    evaluations: ctx.evaluations,
    elapsedMs: ctx.elapsedMs,
    stopReason,
    stopDetail: stopDetail(stopReason, ctx, budget, ended),
    seed,
  };
}

/** The run's budget: the run's own (--max-fevals, --time-limit), else the strategy's options, else the strategy's default. */
function budgetOf(strategy: Strategy, space: SearchSpace, options: StrategyOptions): Budget {
  const fromOptions = {
    maxFevals: strategy.options.max_fevals,
    timeLimitMs: strategy.options.time_limit === undefined ? undefined : strategy.options.time_limit * 1000,
  };
  for (const [key, option] of [['maxFevals', 'max_fevals'], ['timeLimitMs', 'time_limit']] as const) {
    const run = options[key];
    const own = fromOptions[key];
    if (run !== undefined && own !== undefined && run !== own) {
      throw new RangeError(`${strategy.name} is given two budgets: ${option}=${strategy.options[option]} as a strategy option and ${key}=${run} for the run; give it once`);
    }
  }
  const maxFevals = options.maxFevals ?? fromOptions.maxFevals;
  const timeLimitMs = options.timeLimitMs ?? fromOptions.timeLimitMs;
  if (maxFevals !== undefined) return { maxFevals, timeLimitMs, source: 'given' };
  const fallback = strategy.defaultMaxFevals?.(space.size);
  return fallback === undefined ? { timeLimitMs, source: 'given' } : { maxFevals: fallback, timeLimitMs, source: 'default' };
}

interface Budget {
  maxFevals?: number | undefined;
  timeLimitMs?: number | undefined;
  /** Whether maxFevals was given (run or option) or is the strategy's default. */
  source: 'given' | 'default';
}

/** The position of the x0 option (Kernel Tuner's start configuration), checked against the space. */
function startOf(strategy: Strategy, space: SearchSpace): number | undefined {
  const x0 = strategy.options.x0;
  if (x0 === undefined) return undefined;
  const names = space.paramNames;
  if (x0.length !== names.length) {
    throw new RangeError(`x0 of ${strategy.name} has ${x0.length} values, but the space has ${names.length} parameters (${names.join(', ')}): give one value per parameter, in that order`);
  }
  const config = Object.fromEntries(names.map((n, p) => [n, x0[p]!]));
  const index = space.indexOf(config);
  if (index === undefined) {
    throw new RangeError(`x0 of ${strategy.name} (${x0.map(pythonStr).join(', ')}) is not a configuration of the space: ${space.explain(config) ?? 'it is not in the space'}`);
  }
  return index;
}

/** Why the search stopped, in words: which budget and how much was spent, or how the strategy ended. */
function stopDetail(reason: StopReason, ctx: SearchContext, budget: Budget, ended: void | string): string {
  switch (reason) {
    case 'max_fevals':
      return `${ctx.evaluations} evaluations, its max_fevals${budget.source === 'default' ? ` (the strategy's default, as Kernel Tuner's)` : ''}`;
    case 'time_limit':
      return `${(ctx.elapsedMs / 1000).toFixed(1)} s spent of its time_limit of ${(budget.timeLimitMs! / 1000).toFixed(1)} s`;
    case 'aborted':
      return `cancelled after ${ctx.evaluations} evaluations`;
    case 'completed':
      if (ended) return ended;
      return ctx.exhausted ? `every one of the ${ctx.space.size} configurations was evaluated` : `the strategy had nothing left to try after ${ctx.evaluations} evaluations`;
  }
}

/** The items of a list from a position on, lazily (the announcement of what comes next reads only the first few). */
export function* following(items: readonly number[], start: number): IterableIterator<number> {
  for (let i = start; i < items.length; i++) yield items[i]!;
}

function checkShard(strategy: Strategy, shard: Shard): void {
  const { index, count } = shard;
  if (!(Number.isInteger(count) && count >= 1 && Number.isInteger(index) && index >= 0 && index < count)) {
    throw new RangeError(`Expected a shard index/count with 0 <= index < count but received ${index}/${count}`);
  }
  if (!strategy.shardable) {
    throw new RangeError(
      `${strategy.name} cannot be split into shards: it chooses each configuration from the results before it, so shards run apart would ` +
        'each search on their own. Shard brute_force, or run this strategy on one host with several GPUs.',
    );
  }
}

/** Builds a Strategy from its search procedure, its parsed options and how it uses several workers. */
export function defineStrategy(
  name: string,
  traits: {
    parallelism: string;
    shardable?: boolean;
    options?: CommonOptionValues & Record<string, unknown>;
    defaultMaxFevals?: (spaceSize: number) => number;
  },
  search: (ctx: SearchContext) => Promise<void | string>,
): Strategy {
  const strategy: Strategy = {
    name,
    parallelism: traits.parallelism,
    shardable: traits.shardable ?? false,
    options: Object.freeze({ ...traits.options }),
    ...(traits.defaultMaxFevals && { defaultMaxFevals: traits.defaultMaxFevals }),
    search,
    run: (space, evaluate, options) => runStrategy(strategy, space, evaluate, options),
  };
  return strategy;
}
