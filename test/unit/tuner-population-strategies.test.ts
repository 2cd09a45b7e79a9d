// The population and model-based strategies beyond what every strategy's table checks (tuner-strategies.test.ts):
// each algorithm's own rules, options and parallelism.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { replay } from '../../src/tuner/cache/replay';
import { Random } from '../../src/tuner/space/random';
import { SearchSpace } from '../../src/tuner/space/search-space';
import { bayesOpt, diffEvo, firefly, genetic, pso, randomSample, surrogateGa, type Evaluate, type Strategy } from '../../src/tuner/strategies';
import { BAYES_OPT_METHODS } from '../../src/tuner/strategies/bayes-opt';
import { DIFF_EVO_METHODS } from '../../src/tuner/strategies/diff-evo';
import { crossovers } from '../../src/tuner/strategies/genetic';
import type { Config } from '../../src/tuner/types';
import { syntheticMatmulSpace } from '../fixtures/caches/synthetic-matmul';

const cache = CacheFile.load(join(__dirname, '../fixtures/caches/synthetic-matmul.json'));
const matmul = syntheticMatmulSpace();
const fastest = Math.min(...cache.results().flatMap((r) => (r.status === 'ok' ? [r.timeMs!] : [])));

/** A space and an evaluator of a smooth bowl (minimum at x=12, y=7, z=3), recording what it is asked for. */
function bowl(restrictions: string[] = []) {
  const space = new SearchSpace({ x: [...Array(20).keys()], y: [...Array(15).keys()], z: [...Array(6).keys()] }, restrictions);
  const calls: Config[] = [];
  const evaluate: Evaluate = async (config) => {
    calls.push(config);
    const [x, y, z] = [Number(config['x']), Number(config['y']), Number(config['z'])];
    return { config, key: space.key(config), status: 'ok', timeMs: 1 + (x - 12) ** 2 / 40 + (y - 7) ** 2 / 20 + (z - 3) ** 2 / 10 };
  };
  return { space, calls, evaluate };
}

describe("genetic_algorithm's crossovers", () => {
  const a = Int32Array.from([0, 1, 2, 3, 4, 5, 6]);
  const b = Int32Array.from([10, 11, 12, 13, 14, 15, 16]);
  const fromA = (child: Int32Array) => Array.from(child, (g, p) => g === a[p]);

  it('single_point swaps the tails after one cut', () => {
    const rng = new Random(1);
    for (let k = 0; k < 20; k++) {
      const [c1, c2] = crossovers.single_point(a, b, rng);
      const cut = fromA(c1).indexOf(false) === -1 ? 7 : fromA(c1).indexOf(false);
      expect(fromA(c1)).toEqual(Array.from({ length: 7 }, (_, p) => p < cut));
      expect(Array.from(c2, (g, p) => g === b[p])).toEqual(Array.from({ length: 7 }, (_, p) => p < cut));
    }
  });

  it('two_point swaps one inner segment and keeps the outer genes of longer parents', () => {
    const rng = new Random(2);
    for (let k = 0; k < 20; k++) {
      const [c1, c2] = crossovers.two_point(a, b, rng);
      const mask = fromA(c1);
      expect(mask[0]).toBe(true);
      expect(mask[6]).toBe(true);
      const switches = mask.filter((m, p) => p > 0 && m !== mask[p - 1]).length;
      expect(switches).toBe(2);
      expect(Array.from(c2, (g, p) => g === b[p])).toEqual(mask);
    }
  });

  it('uniform gives each child one of the two genes at every position, the other child the other', () => {
    const [c1, c2] = crossovers.uniform(a, b, new Random(3));
    c1.forEach((g, p) => expect([a[p], b[p]]).toContain(g));
    c2.forEach((g, p) => expect(g).toBe(c1[p] === a[p] ? b[p] : a[p]));
  });

  it('disruptive_uniform swaps half the differing genes (rounded up), so both children differ from both parents', () => {
    const [c1, c2] = crossovers.disruptive_uniform(a, b, new Random(4));
    expect(fromA(c1).filter((m) => !m)).toHaveLength(4);
    c2.forEach((g, p) => expect(g).toBe(c1[p] === a[p] ? b[p] : a[p]));
    const same = Int32Array.from([0, 1, 2, 13, 4, 5, 6]);
    expect(crossovers.disruptive_uniform(a, same, new Random(5))[0]).toEqual(same);
  });
});

describe('genetic_algorithm', () => {
  it('evaluates popsize configurations per generation and ends after maxiter generations', async () => {
    const { space, evaluate } = bowl();
    const sizes: number[] = [];
    const result = await genetic({ popsize: 6, maxiter: 4 }).run(space, evaluate, { seed: 2, onResult: (_, p) => sizes.push(p.evaluations) });
    expect(result.stopReason).toBe('completed');
    expect(result.stopDetail).toBe('4 generations (maxiter) ended');
    expect(result.evaluations).toBeLessThanOrEqual(24);
    expect(sizes.slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('without constraint_aware never evaluates what the restrictions rule out', async () => {
    const { space, calls, evaluate } = bowl(['x + y < 20']);
    await genetic({ constraint_aware: false, popsize: 10, maxiter: 20 }).run(space, evaluate, { seed: 1 });
    expect(calls.length).toBeGreaterThan(10);
    for (const c of calls) expect(Number(c['x']) + Number(c['y'])).toBeLessThan(20);
  });
});

describe('diff_evo', () => {
  it('starts from a Latin hypercube of popsize × the tunable parameters, every value of every parameter in it', async () => {
    const { space, calls, evaluate } = bowl();
    await diffEvo().run(space, evaluate, { seed: 3, maxFevals: 48 });
    // 16 × 3 parameters; a uniform sample of 48 would miss some of the 20 values of x about half the time.
    for (const [name, n] of [['x', 20], ['y', 15], ['z', 6]] as const) {
      const counts = new Map<number, number>();
      for (const c of calls) counts.set(Number(c[name]), (counts.get(Number(c[name])) ?? 0) + 1);
      expect(counts.size).toBe(n);
      // Strata of 48/n each, give or take member 0 (a random start, as Kernel Tuner's) and replaced duplicates.
      expect(Math.max(...counts.values()) - Math.min(...counts.values())).toBeLessThanOrEqual(3);
    }
  });

  it.each(DIFF_EVO_METHODS)('%s finds the bowl’s minimum', async (method) => {
    const { space, evaluate } = bowl(['x + y < 30']);
    const result = await diffEvo({ method, popsize: 4 }).run(space, evaluate, { seed: 5, maxFevals: 400 });
    expect(result.best?.key).toBe('12,7,3');
  });
});

describe('pso and firefly_algorithm', () => {
  it('pso evaluates its particles as one batch per iteration and ends after maxiter iterations', async () => {
    const { space, evaluate } = bowl();
    const result = await pso({ popsize: 7, maxiter: 1 }).run(space, evaluate, { seed: 1 });
    expect(result).toMatchObject({ evaluations: 7, stopReason: 'completed', stopDetail: '1 iterations (maxiter) ended' });
  });

  it.each([
    ['pso', (o: Record<string, unknown>) => pso(o)],
    ['firefly_algorithm', (o: Record<string, unknown>) => firefly(o)],
  ])('%s without constraint_aware skips, free, the points the restrictions rule out', async (_, make) => {
    const { space, calls, evaluate } = bowl(['x + y < 20']);
    await make({ constraint_aware: false, maxiter: 5 }).run(space, evaluate, { seed: 2 });
    expect(calls.length).toBeGreaterThan(5);
    for (const c of calls) expect(Number(c['x']) + Number(c['y'])).toBeLessThan(20);
  });

  it('firefly_algorithm moves towards brighter fireflies: it finds the bowl’s minimum', async () => {
    const { space, evaluate } = bowl();
    const result = await firefly().run(space, evaluate, { seed: 4, maxFevals: 300 });
    // Within 0.1 of the minimum 1: 13 of the 1,800 configurations (the best 0.7 %).
    expect(result.best!.timeMs!).toBeLessThanOrEqual(1.1);
  });
});

describe('bayes_opt', () => {
  it("evaluates Kernel Tuner's default of 100 configurations when no max_fevals is set", async () => {
    const result = await bayesOpt().run(matmul, replay(cache, { space: matmul }).evaluate, { seed: 1 });
    expect(result).toMatchObject({ evaluations: 100, stopReason: 'max_fevals' });
    expect(result.stopDetail).toMatch(/the strategy's default/);
  });

  it.each(BAYES_OPT_METHODS)('%s comes within 10 %% of the bowl’s minimum in 60 evaluations, repeating itself for a seed', async (method) => {
    const run = async () => {
      const { space, calls, evaluate } = bowl();
      // A clock that stands still: multi-ultrafast refits by the time its rounds take, which the machine's load would vary.
      const result = await bayesOpt({ method }).run(space, evaluate, { seed: 6, maxFevals: 60, clock: { now: () => 0 } });
      return { result, keys: calls.map((c) => space.key(c)) };
    };
    const first = await run();
    // Within 10 %: one of the 9 configurations of the 1,800 nearest the minimum, which 60 random draws find 1 time in 4.
    expect(first.result.best!.timeMs!).toBeLessThan(1.1);
    expect(new Set(first.keys).size).toBe(first.keys.length);
    expect((await run()).keys).toEqual(first.keys);
  });

  it('refuses x0 and options outside their range, as Kernel Tuner does', () => {
    expect(() => bayesOpt({ x0: [1, 1, 1] })).toThrow(/unknown option of bayes_opt "x0"/);
    expect(() => bayesOpt({ covariancekernel: 'matern72' })).toThrow(/option covariancekernel of bayes_opt/);
    expect(() => bayesOpt({ methodparams: { explorationfactor: 'high' } })).toThrow(/option methodparams.explorationfactor of bayes_opt/);
    expect(() => bayesOpt({ multi_af_names: [] })).toThrow(/option multi_af_names of bayes_opt/);
  });
});

describe('surrogate_ga', () => {
  /** Per seed, the best found after `budget` evaluations as a fraction above the optimum. */
  async function excess(make: () => Strategy, budget: number, seeds = 30): Promise<number[]> {
    const out: number[] = [];
    for (let seed = 1; seed <= seeds; seed++) {
      const result = await make().run(matmul, replay(cache, { space: matmul }).evaluate, { maxFevals: budget, seed });
      out.push(result.best!.timeMs! / fastest - 1);
    }
    return out;
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  it('finds better configurations than random sampling and the genetic algorithm at 40 evaluations', async () => {
    const ours = await excess(() => surrogateGa(), 40);
    const random = await excess(() => randomSample(), 40);
    const ga = await excess(() => genetic({ popsize: 10 }), 40);
    expect(mean(ours)).toBeLessThan(0.5 * mean(random));
    expect(mean(ours)).toBeLessThan(mean(ga));
  });

  it('keeps every worker busy with a different child, never one running elsewhere', async () => {
    const running = new Set<string>();
    let most = 0;
    const sim = replay(cache, { space: matmul });
    const evaluate: Evaluate = async (config, worker) => {
      const key = matmul.key(config);
      expect(running.has(key)).toBe(false);
      running.add(key);
      most = Math.max(most, running.size);
      await new Promise((r) => setTimeout(r, 1 + worker));
      running.delete(key);
      return sim.evaluate(config);
    };
    const result = await surrogateGa().run(matmul, evaluate, { seed: 2, workers: 4, maxFevals: 40 });
    expect(result.evaluations).toBe(40);
    expect(most).toBe(4);
  });

  it('keeps choosing with what its model learnt once max_model observations are in', async () => {
    const { space, calls, evaluate } = bowl();
    const result = await surrogateGa({ max_model: 15 }).run(space, evaluate, { seed: 3, maxFevals: 120 });
    expect(new Set(calls.map((c) => space.key(c))).size).toBe(120);
    // Within 0.1 of the minimum 1: 13 of the 1,800 configurations (the best 0.7 %).
    expect(result.best!.timeMs!).toBeLessThanOrEqual(1.1);
  });

  it('with clip_quantile, is not thrown off by a few configurations far slower than the rest', async () => {
    // The bowl, with one configuration in eight (a fixed scatter) 1000 times slower: fitted as they are, their
    // log-times dominate the model's variance; fitted as the clip quantile, the model keeps its shape of the bowl.
    const { space } = bowl();
    const evaluate: Evaluate = async (config) => {
      const [x, y, z] = [Number(config['x']), Number(config['y']), Number(config['z'])];
      const slow = (x * 7 + y * 13 + z * 5) % 8 === 0 ? 1000 : 1;
      return { config, key: space.key(config), status: 'ok', timeMs: slow * (1 + (x - 12) ** 2 / 40 + (y - 7) ** 2 / 20 + (z - 3) ** 2 / 10) };
    };
    const excessAt = async (options: Record<string, unknown>) => {
      let total = 0;
      for (let seed = 1; seed <= 20; seed++) total += (await surrogateGa(options).run(space, evaluate, { seed, maxFevals: 30 })).best!.timeMs! - 1;
      return total / 20;
    };
    // Measured: 0.14 clipped, 0.24 as they are (mean excess over the optimum at 30 evaluations, 20 seeds).
    expect(await excessAt({ clip_quantile: 0.5 })).toBeLessThan(0.75 * (await excessAt({ clip_quantile: 1 })));
    expect(() => surrogateGa({ clip_quantile: 1.5 })).toThrow(/clip_quantile/);
  });

  it('steers away from failing configurations', async () => {
    // A third of the space fails to compile (z of 4 or 5); the model learns where.
    const { space } = bowl();
    let failures = 0;
    const evaluate: Evaluate = async (config) => {
      const key = space.key(config);
      if (Number(config['z']) >= 4) {
        failures++;
        return { config, key, status: 'compile_error' };
      }
      return { config, key, status: 'ok', timeMs: 1 + (Number(config['x']) - 12) ** 2 / 40 + (Number(config['y']) - 7) ** 2 / 20 };
    };
    await surrogateGa().run(space, evaluate, { seed: 4, maxFevals: 100 });
    expect(failures).toBeLessThan(100 / 6);
  });
});
