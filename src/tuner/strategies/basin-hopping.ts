// Kernel Tuner's basinhopping (strategies/basinhopping.py: scipy.optimize.basinhopping on the scaled space): from x0 a
// local minimisation (`method`, at most 100 iterations, finite-difference step eps), then 100 hops: a uniform random
// displacement of at most `stepsize` per coordinate (first eps; every 50 hops it grows by 1/0.9 when more than half
// were accepted, else shrinks by 0.9), a local minimisation from there, and the Metropolis test at temperature T
// (accept when exp(-(f_new - f_old) / T) >= a uniform draw). A point stands for the configuration nearest it; one that
// fails the restrictions costs nothing and scores the largest float, as in Kernel Tuner. Sequential: every step
// depends on the last.

import { z } from 'zod';
import { LOCAL_METHODS, minimize } from './local-minimizers';
import { commonOptions, parseStrategyOptions } from './options';
import { defineStrategy, type SearchContext, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** The local minimiser (scipy.optimize.minimize's method). */
  method: z.enum(LOCAL_METHODS).default('L-BFGS-B'),
  /** The temperature of the Metropolis test. */
  T: z.number().nonnegative().default(1.0),
};

const HOPS = 100;
const LOCAL_MAXITER = 100;
const STEP_INTERVAL = 50;
const STEP_FACTOR = 0.9;
const TARGET_ACCEPT_RATE = 0.5;

/** The cost of a scaled point: its configuration's objective, `invalid` for one outside the space or failed. */
export function scaledObjective(ctx: SearchContext, invalid: number): (x: Float64Array) => Promise<number> {
  return async (x) => {
    const value = await ctx.evaluateIndices(ctx.space.snapScaled(x));
    return value === Infinity ? invalid : value;
  };
}

export function basinhopping(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('basinhopping', OPTIONS, raw);
  return defineStrategy('basinhopping', { parallelism: 'one chain of hops and local minimisations: configurations are evaluated one at a time', options }, async (ctx) => {
    const { space, rng } = ctx;
    const start = ctx.start();
    if (start === undefined) return 'the space is empty';
    const eps = space.eps;
    const f = scaledObjective(ctx, Number.MAX_VALUE);
    const upper = space.scaledBounds;
    // Kernel Tuner passes the bounds to the minimisers that take them (L-BFGS-B), not to Nelder-Mead or COBYLA.
    const bounds = options.method === 'L-BFGS-B' ? { lower: upper.map(() => 0), upper } : undefined;
    const local = (x: ArrayLike<number>) => minimize(options.method, f, x, { maxiter: LOCAL_MAXITER, eps, rhobeg: eps, ...(bounds && { bounds }) });
    let current = await local(space.scale(space.indicesAt(start)));
    let stepsize = eps;
    let accepted = 0;
    for (let hop = 1; hop <= HOPS; hop++) {
      if (hop % STEP_INTERVAL === 0) stepsize = accepted / hop > TARGET_ACCEPT_RATE ? stepsize / STEP_FACTOR : stepsize * STEP_FACTOR;
      const x = Float64Array.from(current.x, (v) => v + rng.uniform(-stepsize, stepsize));
      const next = await local(x);
      const w = Math.exp(Math.min(0, options.T === 0 ? (next.fun < current.fun ? 0 : -Infinity) : -(next.fun - current.fun) / options.T));
      if (w >= rng.next()) {
        current = next;
        accepted++;
      }
    }
    return `${HOPS} hops (scipy's niter) ended`;
  });
}
