// Kernel Tuner's pso (particle swarm optimisation) in its scaled space (SearchSpace.scale: every step along a value
// list the same distance): particles start at random valid configurations (particle 0 at x0) with random velocities in
// [-1, 1]; each iteration evaluates every particle's configuration as one batch (the position snapped to the nearest
// values, and with constraint_aware repaired to the nearest valid neighbour when the restrictions rule it out), then
// moves each particle: v = w v + c1 r1 (its best - x) + c2 r2 (the swarm's best - x), x += v, clipped to the bounds.
// It ends after maxiter iterations. An iteration's positions depend only on the previous results, so they are
// evaluated spread over all workers.

import { z } from 'zod';
import { commonOptions, parseStrategyOptions } from './options';
import { swarmPosition } from './population';
import { defineStrategy, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** Particles (at most half the space). */
  popsize: z.number().int().positive().default(50),
  /** Iterations. */
  maxiter: z.number().int().positive().default(190),
  /** Inertia weight. */
  w: z.number().default(0.5),
  /** Cognitive constant: the pull towards a particle's own best. */
  c1: z.number().default(3.5),
  /** Social constant: the pull towards the swarm's best. */
  c2: z.number().default(1.0),
  /** Positions that fail the restrictions are repaired; with false they cost nothing and score as a failure. */
  constraint_aware: z.boolean().default(true),
};

interface Particle {
  x: Float64Array;
  velocity: Float64Array;
  best: Float64Array;
  bestScore: number;
}

export function pso(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('pso', OPTIONS, raw);
  const { maxiter, w, c1, c2, constraint_aware: constraintAware } = options;
  return defineStrategy('pso', { parallelism: "each iteration's particles are one batch, evaluated in parallel", options }, async (ctx) => {
    const { space, rng } = ctx;
    if (space.size === 0) return 'the space is empty';
    const upper = space.scaledBounds;
    const d = upper.length;
    const n = Math.max(1, Math.min(Math.round(space.size / 2), options.popsize));
    const first = ctx.start()!;
    const swarm: Particle[] = [first, ...space.sample(n, rng).filter((i) => i !== first)].slice(0, n).map((i) => {
      const x = space.scale(space.indicesAt(i));
      return { x, velocity: Float64Array.from({ length: d }, () => rng.uniform(-1, 1)), best: x, bestScore: Infinity };
    });
    let globalBest = swarm[0]!.x;
    let globalScore = Infinity;

    for (let iteration = 0; iteration < maxiter; iteration++) {
      const positions = swarm.map((p) => swarmPosition(space, p.x, constraintAware));
      await ctx.evaluateAll(positions.filter((i): i is number => i !== undefined));
      if (ctx.exhausted) return; // the context says every configuration was evaluated
      swarm.forEach((p, k) => {
        const score = positions[k] === undefined ? Infinity : ctx.known(positions[k])!;
        if (score < p.bestScore) {
          p.best = p.x;
          p.bestScore = score;
        }
        if (score <= globalScore) {
          globalBest = p.x;
          globalScore = score;
        }
      });
      for (const p of swarm) {
        const r1 = rng.next();
        const r2 = rng.next();
        const x = new Float64Array(d); // a new array: the bests keep the positions they were found at
        for (let q = 0; q < d; q++) {
          p.velocity[q] = w * p.velocity[q]! + c1 * r1 * (p.best[q]! - p.x[q]!) + c2 * r2 * (globalBest[q]! - p.x[q]!);
          x[q] = Math.min(upper[q]!, Math.max(0, p.x[q]! + p.velocity[q]!));
        }
        p.x = x;
      }
    }
    return `${maxiter} iterations (maxiter) ended`;
  });
}
