// Kernel Tuner's firefly_algorithm in its scaled space (SearchSpace.scale): fireflies start at random valid
// configurations (firefly 0 at x0); in each iteration every firefly moves towards every brighter (faster) one, by
// B0 exp(-gamma r²) of the distance r plus a random step of alpha × uniform(-0.5, 0.5) per coordinate, clipped to the
// bounds, and is evaluated after each move (snapped to the nearest values, and with constraint_aware repaired to the
// nearest valid neighbour when the restrictions rule it out); then the swarm is sorted by speed. It ends after maxiter
// iterations. Each move depends on the result of the one before, so only the first swarm is evaluated spread over the
// workers; the moves run one at a time.

import { z } from 'zod';
import { commonOptions, parseStrategyOptions } from './options';
import { swarmPosition } from './population';
import { defineStrategy, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** Fireflies. */
  popsize: z.number().int().positive().default(20),
  /** Iterations. */
  maxiter: z.number().int().positive().default(100),
  /** Attractiveness at distance 0. */
  B0: z.number().default(1.0),
  /** Light absorption: how fast attractiveness falls with distance. */
  gamma: z.number().min(0).default(1.0),
  /** Size of the random step. */
  alpha: z.number().min(0).default(0.2),
  /** Positions that fail the restrictions are repaired; with false they cost nothing and score as a failure. */
  constraint_aware: z.boolean().default(true),
};

interface Firefly {
  x: Float64Array;
  /** The objective at x (+Infinity for a failure or an invalid position); brighter is lower. */
  score: number;
}

export function firefly(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('firefly_algorithm', OPTIONS, raw);
  const { maxiter, B0, gamma, alpha, constraint_aware: constraintAware } = options;
  const parallelism = 'the first swarm is one batch, evaluated in parallel; after that each move is evaluated before the next';
  return defineStrategy('firefly_algorithm', { parallelism, options }, async (ctx) => {
    const { space, rng } = ctx;
    if (space.size === 0) return 'the space is empty';
    const upper = space.scaledBounds;
    const n = Math.min(options.popsize, space.size);
    const first = ctx.start()!;
    const starts = [first, ...space.sample(n, rng).filter((i) => i !== first)].slice(0, n);
    await ctx.evaluateAll(starts);
    const swarm: Firefly[] = starts.map((i) => ({ x: space.scale(space.indicesAt(i)), score: ctx.known(i)! }));

    for (let iteration = 0; iteration < maxiter; iteration++) {
      for (const fly of swarm) {
        for (const other of swarm) {
          if (!(other.score < fly.score)) continue;
          let r2 = 0;
          for (let q = 0; q < fly.x.length; q++) r2 += (fly.x[q]! - other.x[q]!) ** 2;
          const beta = B0 * Math.exp(-gamma * r2);
          for (let q = 0; q < fly.x.length; q++) {
            fly.x[q] = Math.min(upper[q]!, Math.max(0, fly.x[q]! + beta * (other.x[q]! - fly.x[q]!) + alpha * rng.uniform(-0.5, 0.5)));
          }
          const position = swarmPosition(space, fly.x, constraintAware);
          fly.score = position === undefined ? Infinity : await ctx.evaluate(position);
          if (ctx.exhausted) return; // the context says every configuration was evaluated
        }
      }
      swarm.sort((a, b) => (a.score < b.score ? -1 : a.score > b.score ? 1 : 0));
    }
    return `${maxiter} iterations (maxiter) ended`;
  });
}
