// Kernel Tuner's dual_annealing (strategies/dual_annealing.py: scipy.optimize.dual_annealing on the scaled space, with
// scipy's defaults: initial_temp 5230, visit 2.62, accept -5, restart_temp_ratio 2e-5, maxiter 1000, and maxfun =
// max_fevals or the size of the space). Generalised simulated annealing: each step visits 2n points drawn from the
// Tsallis visiting distribution at the temperature (the first n move every coordinate, the next n one coordinate
// each, wrapped into the bounds), always accepts a better one and a worse one with the generalised Metropolis
// probability; whenever the best improved, a local minimisation (`method`) starts from the best. The temperature falls
// as T0 (2^(qv-1) - 1) / ((k+1)^(qv-1) - 1) and restarts from a random point once below T0 x restart_temp_ratio.
// maxfun counts calls of the cost function, repeats and restricted points included, as scipy counts them; a point
// stands for the configuration nearest it, one outside the space is +Infinity at no cost.

import { z } from 'zod';
import { scaledObjective } from './basin-hopping';
import { LOCAL_METHODS, minimize } from './local-minimizers';
import { commonOptions, parseStrategyOptions } from './options';
import { defineStrategy, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** The local minimiser (scipy.optimize.minimize's method). */
  method: z.enum(LOCAL_METHODS).default('COBYLA'),
};

const INITIAL_TEMP = 5230;
const VISIT = 2.62;
const ACCEPT = -5;
const RESTART_TEMP_RATIO = 2e-5;
const MAXITER = 1000;
const TAIL_LIMIT = 1e8;
const MIN_VISIT_BOUND = 1e-10;
const MAX_REINIT = 1000;
/** scipy's local search runs with its own defaults when Kernel Tuner gives a method: maxiter 1000 (COBYLA's). */
const LOCAL_MAXITER = 1000;

/** Ends the annealing once maxfun calls are spent. */
class CallsSpent extends Error {}

/** Ends it when no random point of a restart is a valid, working configuration (scipy raises there). */
class NoFinitePoint extends Error {}

export function dualAnnealing(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('dual_annealing', OPTIONS, raw);
  return defineStrategy('dual_annealing', { parallelism: 'one annealing chain with local searches: configurations are evaluated one at a time', options }, async (ctx) => {
    const { space, rng } = ctx;
    const start = ctx.start();
    if (start === undefined) return 'the space is empty';
    const n = space.paramNames.length;
    const upper = space.scaledBounds;
    // Kernel Tuner passes max_fevals (default the space's size) to scipy as maxfun.
    const maxfun = Number.isFinite(ctx.maxFevals) ? ctx.maxFevals : space.size;
    const cost = scaledObjective(ctx, Infinity);
    let calls = 0;
    const f = async (x: Float64Array): Promise<number> => {
      if (calls >= maxfun) throw new CallsSpent();
      calls++;
      return cost(x);
    };
    const visiting = visitingDistribution(rng);
    const randomPoint = () => Float64Array.from(upper, (u) => rng.uniform(0, u));
    const wrap = (v: number, p: number) => {
      const range = upper[p]!;
      let w = ((((v % range) + range) % range) + range) % range;
      if (Math.abs(w) < MIN_VISIT_BOUND) w += MIN_VISIT_BOUND;
      return w;
    };
    try {
      let location = space.scale(space.indicesAt(start));
      let energy = await f(location);
      const reset = async (): Promise<void> => {
        for (let tries = 0; ; tries++) {
          location = randomPoint();
          energy = await f(location);
          if (Number.isFinite(energy)) return;
          if (tries >= MAX_REINIT) throw new NoFinitePoint();
        }
      };
      if (!Number.isFinite(energy)) await reset();
      let best = { x: location, e: energy };
      let xmin = location;
      let emin = energy;
      let notImprovedIdx = 0;
      let notImprovedMax = 1000;
      const t1 = Math.exp((VISIT - 1) * Math.log(2)) - 1;
      const localSearch = async (x: Float64Array, e: number): Promise<{ x: Float64Array; e: number }> => {
        const result = await minimize(options.method, f, x, { maxiter: LOCAL_MAXITER });
        const inBounds = result.x.every((v, p) => v >= 0 && v <= upper[p]!);
        return inBounds && Number.isFinite(result.fun) && result.fun < e ? { x: result.x, e: result.fun } : { x, e };
      };
      for (let iteration = 0; iteration < MAXITER; ) {
        for (let i = 0; i < MAXITER && iteration < MAXITER; i++, iteration++) {
          const temperature = (INITIAL_TEMP * t1) / (Math.exp((VISIT - 1) * Math.log(i + 2)) - 1);
          if (temperature < INITIAL_TEMP * RESTART_TEMP_RATIO) {
            await reset();
            break;
          }
          // One strategy chain (scipy's StrategyChain.run).
          const temperatureStep = temperature / (i + 1);
          notImprovedIdx++;
          let improved = i === 0;
          for (let j = 0; j < 2 * n; j++) {
            const x = Float64Array.from(location);
            if (j < n) {
              const visits = visiting(temperature, n);
              const [upperSample, lowerSample] = [rng.next(), rng.next()];
              for (let p = 0; p < n; p++) {
                const v = visits[p]! > TAIL_LIMIT ? TAIL_LIMIT * upperSample : visits[p]! < -TAIL_LIMIT ? -TAIL_LIMIT * lowerSample : visits[p]!;
                x[p] = wrap(v + location[p]!, p);
              }
            } else {
              let v = visiting(temperature, 1)[0]!;
              if (Math.abs(v) > TAIL_LIMIT) v = Math.sign(v) * TAIL_LIMIT * rng.next();
              x[j - n] = wrap(v + location[j - n]!, j - n);
            }
            const e = await f(x);
            if (e < energy) {
              [location, energy] = [x, e];
              if (e < best.e) {
                best = { x, e };
                improved = true;
                notImprovedIdx = 0;
              }
            } else {
              const pqvTemp = 1 - ((1 - ACCEPT) * (e - energy)) / temperatureStep;
              const pqv = pqvTemp <= 0 ? 0 : Math.exp(Math.log(pqvTemp) / (1 - ACCEPT));
              if (rng.next() <= pqv) {
                [location, energy] = [x, e];
                xmin = location;
              }
              if (notImprovedIdx >= notImprovedMax && (j === 0 || energy < emin)) [emin, xmin] = [energy, location];
            }
          }
          // The local search (scipy's StrategyChain.local_search).
          if (improved) {
            const found = await localSearch(best.x, best.e);
            if (found.e < best.e) {
              notImprovedIdx = 0;
              best = found;
              [location, energy] = [found.x, found.e];
            }
          }
          if (notImprovedIdx >= notImprovedMax) {
            const found = await localSearch(xmin, emin);
            [xmin, emin] = [found.x, found.e];
            notImprovedIdx = 0;
            notImprovedMax = n;
            if (found.e < best.e) {
              best = found;
              [location, energy] = [found.x, found.e];
            }
          }
        }
      }
      return `${MAXITER} annealing iterations (scipy's maxiter) ended`;
    } catch (e) {
      if (e instanceof CallsSpent) return `${calls} calls of the cost function, its maxfun (max_fevals, repeats included, as scipy counts them)`;
      if (e instanceof NoFinitePoint) return `none of ${MAX_REINIT} random points of a restart was a configuration that works (scipy stops there)`;
      throw e;
    }
  });
}

/** scipy's VisitingDistribution.visit_fn: Tsallis-distributed steps at a temperature. */
function visitingDistribution(rng: { normal(): number }): (temperature: number, dim: number) => Float64Array {
  const factor2 = Math.exp((4 - VISIT) * Math.log(VISIT - 1));
  const factor3 = Math.exp(((2 - VISIT) * Math.log(2)) / (VISIT - 1));
  const factor4p = (Math.sqrt(Math.PI) * factor2) / (factor3 * (3 - VISIT));
  const factor5 = 1 / (VISIT - 1) - 0.5;
  const d1 = 2 - factor5;
  const factor6 = (Math.PI * (1 - factor5)) / Math.sin(Math.PI * (1 - factor5)) / Math.exp(logGamma(d1));
  return (temperature, dim) => {
    const factor1 = Math.exp(Math.log(temperature) / (VISIT - 1));
    const factor4 = factor4p * factor1;
    const sigma = Math.exp((-(VISIT - 1) * Math.log(factor6 / factor4)) / (3 - VISIT));
    return Float64Array.from({ length: dim }, () => {
      const x = rng.normal() * sigma;
      const y = rng.normal();
      return x / Math.exp(((VISIT - 1) * Math.log(Math.abs(y))) / (3 - VISIT));
    });
  };
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7). */
function logGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}
