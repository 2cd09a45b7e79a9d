// Kernel Tuner's hill climbers (strategies/hillclimbers.py and the strategies built on it): greedy_mls, mls,
// ordered_greedy_mls and greedy_ils. A climb takes the parameters in a random order (or `order`, or declaration order
// without `randomize`), and for each the values it takes among the configuration's neighbours (Hamming, adjacent or
// strictly-adjacent), shuffled; a child changes that one parameter. With `restart` (first improvement) it moves to the
// first better child and scans again from there; without it (best improvement, mls) it evaluates all children as one
// batch and moves to the best. At a local optimum greedy_mls restarts from a random configuration, greedy_ils perturbs
// the optimum by random Hamming moves (a random restart after `no_improvement` climbs that did not improve the best).
// A child that fails the restrictions costs nothing (Kernel Tuner's InvalidConfig). Like Kernel Tuner's, they stop at
// 100 evaluations unless max_fevals or a time limit says otherwise.
// Departures from Kernel Tuner 1.4.0, where its code does not do what its options say: its base_hillclimb returns
// after the first improving move (so greedy_mls jumps to a random configuration after every improvement), builds each
// child on the previous child rather than on the current configuration, and greedy_ils never updates the score it
// compares climbs with; here a climb goes on to a local optimum, children differ from it in one parameter, and
// no_improvement counts climbs that did not beat the best so far.
// With several workers (GPUs) as many climbs run at once, each from its own start; within a climb best improvement
// evaluates a neighbourhood as one parallel batch, first improvement one child after another.

import { z } from 'zod';
import { NEIGHBOUR_METHODS } from '../space/search-space';
import { commonOptions, parseStrategyOptions, StrategyOptionError, type ParsedOptions } from './options';
import { defineStrategy, following, type SearchContext, type Strategy } from './search';

/** Kernel Tuner's default max_fevals of its local searches. */
const LOCAL_SEARCH_MAX_FEVALS = 100;

const climbOptions = (restart: boolean, randomize: boolean) => ({
  ...commonOptions,
  /** Which configurations are neighbours (Kernel Tuner's neighbor). */
  neighbor: z.enum(NEIGHBOUR_METHODS).default('Hamming'),
  /** First improvement (true) or best improvement (false). */
  restart: z.boolean().default(restart),
  /** The order of the parameters in a climb, as indices into the tunable parameters; default their order. */
  order: z.array(z.number().int().nonnegative()).nullable().default(null),
  /** Take the parameters in a random order (each climb anew). */
  randomize: z.boolean().default(randomize),
});

const ILS_OPTIONS = {
  ...commonOptions,
  neighbor: z.enum(NEIGHBOUR_METHODS).default('Hamming'),
  restart: z.boolean().default(true),
  /** Climbs without a better best after which the walk restarts from a random configuration. */
  no_improvement: z.number().int().positive().default(50),
  /** The share of the parameters a perturbation moves (at least one), by random Hamming steps. */
  random_walk: z.number().min(0).max(1).default(0.3),
};

type ClimbOptions = ParsedOptions<ReturnType<typeof climbOptions>>;

interface Climb {
  neighbor: ClimbOptions['neighbor'];
  restart: boolean;
  order: number[] | null;
  randomize: boolean;
}

function checkOrder(strategy: string, climb: Climb): void {
  if (climb.order && climb.randomize) {
    throw new StrategyOptionError(`${strategy} takes order or randomize, not both: set randomize=false with an order (as Kernel Tuner requires)`);
  }
}

function parallelismOf(restart: boolean): string {
  return restart
    ? 'one climb per GPU from its own start; within a climb children are tried one at a time (first improvement stops at the first better one)'
    : 'one climb per GPU from its own start, and each neighbourhood evaluated as one batch';
}

/**
 * Climbs from a configuration to a local optimum (or, with a budget, until it ends) and returns where it ended and
 * its objective. The start is evaluated first (served from the memo when known).
 */
async function climb(ctx: SearchContext, start: number, c: Climb): Promise<{ position: number; value: number }> {
  let position = start;
  let value: number | undefined;
  for (;;) {
    const children = childrenOf(ctx, position, c);
    // The start is evaluated first (served from the memo when known), its children announced to compile ahead.
    value ??= await ctx.evaluate(position, children);
    let next: number | undefined;
    let nextValue = value;
    if (!c.restart) await ctx.evaluateAll(children);
    for (let k = 0; k < children.length; k++) {
      const v = await ctx.evaluate(children[k]!, following(children, k + 1));
      if (v < nextValue) {
        next = children[k];
        nextValue = v;
        if (c.restart) break;
      }
    }
    if (next === undefined) return { position, value };
    position = next;
    value = nextValue;
  }
}

/** The valid configurations that differ from one in one parameter, in the climb's order (see the file's comment). */
function childrenOf(ctx: SearchContext, position: number, c: Climb): number[] {
  const { space, rng } = ctx;
  const base = space.indicesAt(position);
  const params = c.order ? [...c.order] : Array.from(base, (_, p) => p);
  if (c.randomize) rng.shuffle(params);
  const neighbours = space.neighbours(position, c.neighbor);
  const children: number[] = [];
  for (const p of params) {
    const values = new Set<number>();
    for (const n of neighbours) {
      const v = space.indicesAt(n)[p]!;
      if (v !== base[p]) values.add(v);
    }
    const ordered = [...values].sort((a, b) => a - b);
    if (c.randomize) rng.shuffle(ordered);
    for (const v of ordered) {
      const child = Int32Array.from(base);
      child[p] = v;
      const index = space.indexOfIndices(child);
      if (index !== undefined) children.push(index); // an invalid child costs nothing: skipped
    }
  }
  return children;
}

function multiStart(strategy: string, defaults: { restart: boolean; randomize: boolean }, raw: Record<string, unknown>): Strategy {
  const options = parseStrategyOptions(strategy, climbOptions(defaults.restart, defaults.randomize), raw);
  checkOrder(strategy, options);
  return defineStrategy(strategy, { parallelism: parallelismOf(options.restart), options, defaultMaxFevals: () => LOCAL_SEARCH_MAX_FEVALS }, async (ctx) => {
    if (options.order) checkParamIndices(strategy, options.order, ctx.space.paramNames.length);
    const climbs = async (): Promise<void> => {
      for (let start = ctx.start(); start !== undefined; start = ctx.randomUnvisited()) await climb(ctx, start, options);
    };
    await Promise.all(Array.from({ length: ctx.workers }, climbs));
    return `every configuration was evaluated`;
  });
}

function checkParamIndices(strategy: string, order: readonly number[], count: number): void {
  const bad = order.filter((p) => p >= count);
  if (bad.length > 0 || new Set(order).size !== order.length) {
    throw new StrategyOptionError(`order of ${strategy} must list distinct parameter indices below ${count} (the tunable parameters in order), received [${order.join(', ')}]`);
  }
}

/** Kernel Tuner's greedy_mls: first-improvement climbs from random starts. */
export function greedyMls(raw: Record<string, unknown> = {}): Strategy {
  return multiStart('greedy_mls', { restart: true, randomize: true }, raw);
}

/** Kernel Tuner's mls: best-improvement climbs (each neighbourhood one batch) from random starts. */
export function mls(raw: Record<string, unknown> = {}): Strategy {
  return multiStart('mls', { restart: false, randomize: true }, raw);
}

/** Kernel Tuner's ordered_greedy_mls: first-improvement climbs taking the parameters in their declared order. */
export function orderedGreedyMls(raw: Record<string, unknown> = {}): Strategy {
  return multiStart('ordered_greedy_mls', { restart: true, randomize: false }, raw);
}

/** Kernel Tuner's greedy_ils: climb, perturb the optimum by random Hamming moves, climb again; restart when stuck. */
export function greedyIls(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('greedy_ils', ILS_OPTIONS, raw);
  const c: Climb = { neighbor: options.neighbor, restart: options.restart, order: null, randomize: true };
  return defineStrategy('greedy_ils', { parallelism: parallelismOf(options.restart), options, defaultMaxFevals: () => LOCAL_SEARCH_MAX_FEVALS }, async (ctx) => {
    const { space, rng } = ctx;
    const moves = Math.max(1, Math.floor(options.random_walk * space.paramNames.length));
    let best = Infinity;
    const walk = async (): Promise<void> => {
      let candidate = ctx.start();
      let climbsWithoutImprovement = 0;
      while (candidate !== undefined && !ctx.exhausted) {
        const { position, value } = await climb(ctx, candidate, c);
        if (value < best) {
          best = value;
          climbsWithoutImprovement = 0;
        } else climbsWithoutImprovement++;
        if (climbsWithoutImprovement >= options.no_improvement) {
          candidate = ctx.randomUnvisited();
          climbsWithoutImprovement = 0;
          continue;
        }
        candidate = position;
        for (let k = 0; k < moves; k++) {
          const neighbours = space.neighbours(candidate, 'Hamming');
          if (neighbours.length > 0) candidate = rng.pick(neighbours);
        }
      }
    };
    await Promise.all(Array.from({ length: ctx.workers }, walk));
    return 'every configuration was evaluated';
  });
}
