import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { replay } from '../../src/tuner/cache/replay';
import { SearchSpace } from '../../src/tuner/space/search-space';
import {
  bruteForce,
  genetic,
  localSearch,
  randomSample,
  resolveStrategy,
  strategies,
  type Evaluate,
  type Strategy,
} from '../../src/tuner/strategies';
import type { Config, ConfigResult, TuneResult } from '../../src/tuner/types';
import { syntheticMatmulSpace } from '../fixtures/caches/synthetic-matmul';

const cache = CacheFile.load(join(__dirname, '../fixtures/caches/synthetic-matmul.json'));
const space = syntheticMatmulSpace();
const fastest = cache.results().filter((r) => r.status === 'ok').sort((a, b) => a.timeMs! - b.timeMs!)[0]!;

/** A replay evaluator that also records every configuration it was asked for. */
function recorded(): { evaluate: (config: Config) => Promise<ConfigResult>; calls: string[]; clock: { now(): number } } {
  const sim = replay(cache, { space });
  const calls: string[] = [];
  return {
    calls,
    clock: sim.clock,
    evaluate: (config) => {
      calls.push(space.key(config));
      return sim.evaluate(config);
    },
  };
}

const ALL: [string, () => Strategy][] = [
  ['brute_force', () => bruteForce()],
  ['random_sample', () => randomSample()],
  ['greedy_mls', () => localSearch()],
  ['greedy_mls (Hamming, best improvement)', () => localSearch({ neighbourhood: 'Hamming', improvement: 'best' })],
  ['genetic_algorithm', () => genetic()],
];

describe('strategies on the simulated tiled matmul cache', () => {
  it('brute force evaluates every configuration in order and finds the true best', async () => {
    const { evaluate, calls } = recorded();
    const result = await bruteForce().run(space, evaluate);
    expect(calls).toEqual([...space.configs()].map((c) => space.key(c)));
    expect(result.best).toEqual(fastest);
    expect(result.evaluations).toBe(space.size);
    expect(result.stopReason).toBe('completed');
    expect(result.strategy).toBe('brute_force');
  });

  it.each(ALL)('%s honours maxFevals and never evaluates a configuration twice', async (_, make) => {
    const { evaluate, calls } = recorded();
    const result = await make().run(space, evaluate, { maxFevals: 37, seed: 11 });
    expect(result.evaluations).toBe(37);
    expect(calls).toHaveLength(37);
    expect(new Set(calls).size).toBe(37);
    expect(result.results.map((r) => r.key)).toEqual(calls);
    expect(result.stopReason).toBe('max_fevals');
    const bestSeen = Math.min(...result.results.filter((r) => r.status === 'ok').map((r) => r.timeMs!));
    expect(result.best?.timeMs).toBe(bestSeen);
  });

  it.each(ALL)('%s honours timeLimitMs (in simulated time): no evaluation starts after the limit', async (_, make) => {
    const { evaluate, clock } = recorded();
    const limit = 60_000;
    const result = await make().run(space, evaluate, { timeLimitMs: limit, clock, seed: 5 });
    expect(result.stopReason).toBe('time_limit');
    const spent = result.results.map((r) => r.timings!.compileMs + r.timings!.loadMs + r.timings!.verifyMs + r.timings!.benchmarkMs);
    const total = spent.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(limit);
    expect(total - spent.at(-1)!).toBeLessThan(limit);
    expect(result.elapsedMs).toBeCloseTo(total, 6);
  });

  it.each(ALL.slice(1))('%s repeats itself exactly with the same seed and differs with another', async (_, make) => {
    const a = recorded();
    const b = recorded();
    const c = recorded();
    const ra = await make().run(space, a.evaluate, { maxFevals: 60, seed: 42 });
    await make().run(space, b.evaluate, { maxFevals: 60, seed: 42 });
    await make().run(space, c.evaluate, { maxFevals: 60, seed: 43 });
    expect(b.calls).toEqual(a.calls);
    expect(c.calls).not.toEqual(a.calls);
    expect(ra.seed).toBe(42);
  });

  it.each(ALL)('%s, unlimited, evaluates every configuration exactly once and stops', async (_, make) => {
    const small = new SearchSpace({ x: [1, 2, 3, 4, 5], y: [1, 2, 3, 4], z: [0, 1] }, ['x * y <= 12']);
    const calls: string[] = [];
    const evaluate: Evaluate = async (config) => {
      calls.push(small.key(config));
      const x = Number(config['x']);
      const y = Number(config['y']);
      return x === 5 && y === 1
        ? { config, key: small.key(config), status: 'compile_error' }
        : { config, key: small.key(config), status: 'ok', timeMs: (x - 3) ** 2 + (y - 2) ** 2 + Number(config['z']) + 1 };
    };
    const result = await make().run(small, evaluate, { seed: 3 });
    expect(result.stopReason).toBe('completed');
    expect(calls.length).toBe(small.size);
    expect(new Set(calls).size).toBe(small.size);
    expect(result.best?.key).toBe('3,2,0');
  });

  it.each(ALL)('%s announces what it will evaluate next, so compiles can run ahead', async (_, make) => {
    const { evaluate, calls } = recorded();
    const announcedBefore = new Set<string>();
    const sizes: number[] = [];
    let stale = 0;
    let announcedFirst = 0;
    await make().run(
      space,
      (config) => {
        if (announcedBefore.has(space.key(config))) announcedFirst++;
        return evaluate(config);
      },
      {
        maxFevals: 60,
        seed: 4,
        lookahead: 5,
        onUpcoming: (configs) => {
          sizes.push(configs.length);
          for (const c of configs) {
            if (calls.includes(space.key(c))) stale++;
            announcedBefore.add(space.key(c));
          }
        },
      },
    );
    expect(stale).toBe(0); // never a configuration already evaluated
    expect(sizes.every((n) => n >= 1 && n <= 5)).toBe(true);
    // Nearly every evaluation was announced before it started (not the first, nor a local search's restarts).
    expect(announcedFirst / calls.length).toBeGreaterThan(0.8);
  });

  it('brute force announces the configurations that follow, in order', async () => {
    const announced: string[][] = [];
    const onUpcoming = (c: readonly Config[]) => announced.push(c.map((x) => space.key(x)));
    await bruteForce().run(space, recorded().evaluate, { maxFevals: 4, lookahead: 2, onUpcoming });
    const keys = [...space.configs()].map((c) => space.key(c));
    // Within the budget only: after the third evaluation one more is allowed, and after the fourth none.
    expect(announced).toEqual([keys.slice(1, 3), keys.slice(2, 4), keys.slice(3, 4)]);
  });

  it('reports configurations over the device limits first, without evaluating them', async () => {
    const limited = new SearchSpace({ block_size_x: [256, 512, 1024], block_size_y: [1, 2] }, [], {
      deviceLimits: { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] },
    });
    const calls: string[] = [];
    const evaluate: Evaluate = async (config) => {
      calls.push(limited.key(config));
      return { config, key: limited.key(config), status: 'ok', timeMs: 1000 / Number(config['block_size_x']) };
    };
    const seen: ConfigResult[] = [];
    const result = await bruteForce().run(limited, evaluate, { onResult: (r) => seen.push(r) });
    expect(result.results.map((r) => [r.key, r.status])).toEqual([
      ['1024,2', 'exceeds_device_limits'],
      ['256,1', 'ok'],
      ['256,2', 'ok'],
      ['512,1', 'ok'],
      ['512,2', 'ok'],
      ['1024,1', 'ok'],
    ]);
    expect(result.results[0]!.error?.message).toMatch(/2048 threads/);
    expect(calls).not.toContain('1024,2');
    expect(result.evaluations).toBe(5);
    expect(seen).toEqual(result.results);
    expect(result.best?.key).toBe('1024,1');
  });

  it('stops when aborted, returning what it has', async () => {
    const controller = new AbortController();
    const { evaluate } = recorded();
    const result = await localSearch().run(space, evaluate, {
      seed: 1,
      signal: controller.signal,
      onResult: (_, progress) => progress.evaluations === 5 && controller.abort(),
    });
    expect(result.stopReason).toBe('aborted');
    expect(result.evaluations).toBe(5);
    const before = await genetic().run(space, evaluate, { signal: AbortSignal.abort() });
    expect(before).toMatchObject({ stopReason: 'aborted', evaluations: 0, best: undefined });
  });

  it('stops when the evaluator fails because the run was aborted', async () => {
    const controller = new AbortController();
    const evaluate: Evaluate = async () => {
      controller.abort();
      throw new Error('worker killed');
    };
    const result = await bruteForce().run(space, evaluate, { signal: controller.signal });
    expect(result.stopReason).toBe('aborted');
  });

  it('passes on an evaluator error that is not an abort', async () => {
    const evaluate: Evaluate = async () => {
      throw new Error('GPU worker crashed');
    };
    await expect(randomSample().run(space, evaluate, { seed: 1 })).rejects.toThrow('GPU worker crashed');
  });

  it('serves local search revisits from memory: only new configurations reach the evaluator', async () => {
    const { evaluate, calls } = recorded();
    const result = await localSearch().run(space, evaluate, { maxFevals: 200, seed: 9 });
    expect(calls).toHaveLength(200);
    expect(new Set(calls).size).toBe(200);
    expect(result.evaluations).toBe(200);
  });

  it('random_sample takes a fraction or a count of the space', async () => {
    expect((await randomSample({ fraction: 0.1 }).run(space, recorded().evaluate, { seed: 2 })).evaluations).toBe(Math.ceil(0.1 * space.size));
    const r = await randomSample({ count: 25 }).run(space, recorded().evaluate, { seed: 2 });
    expect(r).toMatchObject({ evaluations: 25, stopReason: 'completed' });
  });

  it('checks the budget options', async () => {
    await expect(bruteForce().run(space, recorded().evaluate, { maxFevals: 0 })).rejects.toThrow(/positive integer for maxFevals/);
    await expect(bruteForce().run(space, recorded().evaluate, { timeLimitMs: -1 })).rejects.toThrow(/positive number for timeLimitMs/);
  });
});

describe('optimisers beat random sampling at equal evaluations', () => {
  const SEEDS = 50;
  const BUDGET = 40;

  /** Per seed: how far the best found is above the true optimum (0 = found it). */
  async function excess(make: () => Strategy): Promise<number[]> {
    const out: number[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const result: TuneResult = await make().run(space, replay(cache, { space }).evaluate, { maxFevals: BUDGET, seed });
      out.push(result.best!.timeMs! / fastest.timeMs! - 1);
    }
    return out;
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  it.each<[string, () => Strategy]>([
    ['greedy_mls', () => localSearch()],
    ['genetic_algorithm', () => genetic()],
  ])('%s: lower mean excess over the optimum and more wins than losses, over 50 seeds', async (_, make) => {
    const random = await excess(() => randomSample());
    const optimiser = await excess(make);
    const wins = optimiser.filter((x, i) => x < random[i]!).length;
    const losses = optimiser.filter((x, i) => x > random[i]!).length;
    // Measured (seeds 1–50): random 5.6 % above the optimum after 40 evaluations, greedy_mls 3.0 % (wins/losses 32/13),
    // genetic_algorithm 3.4 % (29/13).
    expect(mean(optimiser)).toBeLessThan(0.7 * mean(random));
    expect(wins).toBeGreaterThanOrEqual(2 * losses);
  });
});

describe('strategy registry', () => {
  it('resolves Kernel Tuner names and plain aliases', () => {
    expect(Object.keys(strategies)).toEqual(['brute_force', 'random_sample', 'greedy_mls', 'genetic_algorithm']);
    expect(resolveStrategy('brute_force')().name).toBe('brute_force');
    expect(resolveStrategy('random-sample')({ fraction: 0.5 }).name).toBe('random_sample');
    expect(resolveStrategy('local_search')().name).toBe('greedy_mls');
    expect(resolveStrategy('Genetic')({ populationSize: 4 }).name).toBe('genetic_algorithm');
  });

  it('names the choices for an unknown strategy, and rejects unknown or invalid options', () => {
    expect(() => resolveStrategy('annealing')).toThrow(/Unknown strategy 'annealing'; choose one of brute_force, random_sample, greedy_mls, genetic_algorithm/);
    expect(() => resolveStrategy('genetic')({ popSize: 4 })).toThrow(/Unknown option 'popSize' for strategy genetic_algorithm; it accepts populationSize/);
    expect(() => resolveStrategy('brute_force')({ seed: 1 })).toThrow(/it accepts none/);
    expect(() => localSearch({ neighbourhood: 'adjacent' as never })).toThrow(/'Hamming' or 'strictly-adjacent'/);
    expect(() => randomSample({ fraction: 1.5 })).toThrow(/fraction in \(0, 1\]/);
    expect(() => randomSample({ fraction: 0.5, count: 3 })).toThrow(/not both/);
    expect(() => genetic({ mutationRate: 2 })).toThrow(/probability in \[0, 1\] for mutationRate/);
    expect(() => genetic({ populationSize: 1 })).toThrow(/integer ≥ 2 for populationSize/);
  });
});
