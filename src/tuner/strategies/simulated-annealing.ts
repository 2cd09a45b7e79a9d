// Kernel Tuner's simulated_annealing (strategies/simulated_annealing.py): a random walk over the configurations that
// always accepts a better one, never a failed one (unless it stands on one), and a worse one with probability
// exp(((old - new) / |old|) / T). A move: each parameter with probability 0.2 to a random Hamming neighbour, then one
// random adjacent neighbour (constraint_aware, the default: every move lands on a valid configuration), or without
// constraint_aware each parameter to a random value (0.2) or one step along its list, restricted combinations costing
// nothing. `maxiter` moves per temperature; the temperature T * alpha^(n * steps / max_fevals) falls with the distinct
// evaluations n, so the schedule of ceil(ln(T_min) / ln(alpha)) steps is stretched over the budget, and the search
// ends when it falls below T_min. After 100 temperatures without a new evaluation it jumps to a random configuration.
// One chain: each move depends on the last, so evaluations run one at a time.

import { z } from 'zod';
import { commonOptions, parseStrategyOptions } from './options';
import { defineStrategy, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** Starting temperature. */
  T: z.number().positive().default(0.1),
  /** End temperature. */
  T_min: z.number().positive().default(0.0001),
  /** Cooling factor per step of the schedule, in (0, 1). */
  alpha: z.number().gt(0).lt(1).default(0.9975),
  /** Moves per temperature. */
  maxiter: z.number().int().positive().default(1),
  constraint_aware: z.boolean().default(true),
};

/** Temperatures without a new evaluation after which the walk jumps to a random configuration (Kernel Tuner's). */
const STUCK_LIMIT = 100;

export function simulatedAnnealing(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('simulated_annealing', OPTIONS, raw);
  const { T: startT, T_min: minT, alpha, maxiter, constraint_aware: constraintAware } = options;
  if (!(minT < startT)) throw new RangeError(`simulated_annealing needs T_min (${minT}) below T (${startT})`);
  const scheduleSteps = Math.ceil(Math.log(minT) / Math.log(alpha));
  return defineStrategy(
    'simulated_annealing',
    { parallelism: 'one annealing chain: each move depends on the last, so configurations are evaluated one at a time', options, defaultMaxFevals: () => scheduleSteps },
    async (ctx) => {
      const { space, rng } = ctx;
      const counts = space.valueCounts;
      const randomNeighbour = (indices: Int32Array, method: 'Hamming' | 'adjacent'): Int32Array => {
        const neighbours = space.neighboursOf(indices, method);
        return neighbours.length > 0 ? Int32Array.from(space.indicesAt(rng.pick(neighbours))) : indices;
      };
      const move = (indices: Int32Array): Int32Array => {
        if (constraintAware) {
          let next: Int32Array = indices;
          for (let p = 0; p < counts.length; p++) if (rng.next() < 0.2) next = randomNeighbour(next, 'Hamming');
          return randomNeighbour(next, 'adjacent');
        }
        return Int32Array.from(indices, (i, p) => {
          if (rng.next() < 0.2) return rng.int(counts[p]!);
          return Math.min(Math.max(rng.next() > 0.5 ? i + 1 : i - 1, 0), counts[p]! - 1);
        });
      };
      const randomStart = (): Int32Array | undefined => {
        const fresh = ctx.randomUnvisited();
        return fresh === undefined ? undefined : Int32Array.from(space.indicesAt(fresh));
      };
      const start = ctx.start();
      if (start === undefined) return 'the space is empty';
      let position: Int32Array = Int32Array.from(space.indicesAt(start));
      let cost = await ctx.evaluateIndices(position);
      let T = startT;
      let stuck = 0;
      let seen = ctx.evaluations;
      while (T > minT) {
        for (let k = 0; k < maxiter; k++) {
          const candidate = move(position);
          const candidateCost = await ctx.evaluateIndices(candidate);
          if (acceptance(cost, candidateCost, T) > rng.next()) {
            position = candidate;
            cost = candidateCost;
          }
        }
        T = startT * alpha ** ((scheduleSteps / ctx.maxFevals) * ctx.evaluations);
        stuck = ctx.evaluations === seen ? stuck + 1 : 0;
        seen = ctx.evaluations;
        if (stuck > STUCK_LIMIT) {
          const jump = randomStart();
          if (jump === undefined) return 'every configuration was evaluated';
          position = jump;
          stuck = 0;
        }
      }
      return `the annealing schedule ended (T fell below T_min = ${minT})`;
    },
  );
}

/** Kernel Tuner's acceptance_prob, with failures (and restricted configurations) as +Infinity. */
function acceptance(old: number, next: number, T: number): number {
  if (old === Infinity) return 1;
  if (next === Infinity) return 0;
  if (next < old) return 1;
  return Math.exp((old - next) / (old !== 0 ? Math.abs(old) : 1e-20) / T);
}
