// Searching with several workers (one per GPU): how the strategies spread their evaluations, keep the budget, stop, and
// split into shards. The evaluator here answers after a delay per configuration, so evaluations really overlap.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { replay } from '../../src/tuner/cache/replay';
import { SearchSpace } from '../../src/tuner/space/search-space';
import { bruteForce, genetic, greedyMls, mls, randomSample, type Evaluate, type Strategy } from '../../src/tuner/strategies';
import type { Config } from '../../src/tuner/types';
import { syntheticMatmulSpace } from '../fixtures/caches/synthetic-matmul';

const cache = CacheFile.load(join(__dirname, '../fixtures/caches/synthetic-matmul.json'));
const space = syntheticMatmulSpace();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Replays the cache after a short delay (1-3 ms by configuration) and records which worker ran what, and when. */
function timedReplay() {
  const sim = replay(cache, { space });
  const calls: { key: string; worker: number }[] = [];
  const running = new Set<number>();
  let maxRunning = 0;
  let overlappingOnOneWorker = 0;
  const evaluate: Evaluate = async (config, worker) => {
    if (running.has(worker)) overlappingOnOneWorker++;
    running.add(worker);
    maxRunning = Math.max(maxRunning, running.size);
    calls.push({ key: space.key(config), worker });
    try {
      await sleep(1 + (calls.length % 3));
      return await sim.evaluate(config);
    } finally {
      running.delete(worker);
    }
  };
  return { evaluate, calls, stats: () => ({ maxRunning, overlappingOnOneWorker }) };
}

const ALL: [string, () => Strategy][] = [
  ['brute_force', () => bruteForce()],
  ['random_sample', () => randomSample({ fraction: 1 })],
  ['greedy_mls', () => greedyMls()],
  ['mls (best improvement)', () => mls()],
  ['genetic_algorithm', () => genetic()],
];

describe('searching with several workers', () => {
  it('brute force spreads every configuration over the workers, one at a time per worker, and finds the same best', async () => {
    const one = await bruteForce().run(space, replay(cache, { space }).evaluate);
    const { evaluate, calls, stats } = timedReplay();
    const three = await bruteForce().run(space, evaluate, { workers: 3 });
    expect(three.evaluations).toBe(space.size);
    expect(new Set(calls.map((c) => c.key)).size).toBe(space.size);
    expect(stats()).toEqual({ maxRunning: 3, overlappingOnOneWorker: 0 });
    for (const w of [0, 1, 2]) expect(calls.filter((c) => c.worker === w).length).toBeGreaterThan(space.size / 6);
    // Each free worker takes the next configuration: they start in space order.
    expect(calls.map((c) => c.key)).toEqual([...space.configs()].map((c) => space.key(c)));
    expect(three.best).toEqual(one.best);
    expect(three.stopReason).toBe('completed');
  });

  it.each(ALL)('%s with 4 workers evaluates in parallel, never a configuration twice, within maxFevals', async (_, make) => {
    const { evaluate, calls, stats } = timedReplay();
    const result = await make().run(space, evaluate, { workers: 4, maxFevals: 60, seed: 3 });
    expect(result.evaluations).toBe(60);
    expect(calls).toHaveLength(60);
    expect(new Set(calls.map((c) => c.key)).size).toBe(60);
    expect(result.results.map((r) => r.key).sort()).toEqual(calls.map((c) => c.key).sort());
    expect(result.stopReason).toBe('max_fevals');
    expect(stats().overlappingOnOneWorker).toBe(0);
    expect(stats().maxRunning).toBeGreaterThan(1);
    expect(stats().maxRunning).toBeLessThanOrEqual(4);
  });

  it.each(ALL)('%s with 3 workers and no budget evaluates every configuration at most once, and all of them unless it ends by its own rule', async (name, make) => {
    const small = new SearchSpace({ x: [1, 2, 3, 4, 5], y: [1, 2, 3, 4], z: [0, 1] }, ['x * y <= 12']);
    const calls: string[] = [];
    const evaluate: Evaluate = async (config) => {
      calls.push(small.key(config));
      await sleep(1);
      const x = Number(config['x']);
      const y = Number(config['y']);
      return { config, key: small.key(config), status: 'ok', timeMs: (x - 3) ** 2 + (y - 2) ** 2 + Number(config['z']) + 1 };
    };
    const result = await make().run(small, evaluate, { seed: 3, workers: 3 });
    expect(result.stopReason).toBe('completed');
    expect(new Set(calls).size).toBe(calls.length);
    // Kernel Tuner's genetic algorithm ends after maxiter generations, its population converged before it saw them all.
    if (name === 'genetic_algorithm') return;
    expect(calls.length).toBe(small.size);
    expect(result.best?.key).toBe('3,2,0');
  });

  it('a genetic generation is evaluated as one batch; a first-improvement climb one neighbour at a time', async () => {
    expect(genetic().parallelism).toMatch(/each generation is one batch/);
    expect(greedyMls().parallelism).toMatch(/one climb per GPU.*one at a time/);
    expect(mls().parallelism).toMatch(/each neighbourhood evaluated as one batch/);
    // With as many workers as the population, the first generation runs all at once.
    const { evaluate, stats } = timedReplay();
    await genetic({ popsize: 6 }).run(space, evaluate, { workers: 6, maxFevals: 6, seed: 1 });
    expect(stats().maxRunning).toBe(6);
  });

  it('announces upcoming configurations that are neither evaluated nor running', async () => {
    const { evaluate } = timedReplay();
    const running = new Set<string>();
    const done = new Set<string>();
    let stale = 0;
    await bruteForce().run(
      space,
      async (config, worker) => {
        running.add(space.key(config));
        const r = await evaluate(config, worker);
        running.delete(space.key(config));
        done.add(r.key);
        return r;
      },
      {
        workers: 3,
        maxFevals: 40,
        onUpcoming: (configs: readonly Config[]) => {
          for (const c of configs) if (running.has(space.key(c)) || done.has(space.key(c))) stale++;
        },
      },
    );
    expect(stale).toBe(0);
  });

  it('stops all workers when aborted: nothing starts afterwards, and the evaluations under way are recorded', async () => {
    const controller = new AbortController();
    const { evaluate, calls } = timedReplay();
    const result = await bruteForce().run(space, evaluate, {
      workers: 3,
      signal: controller.signal,
      onResult: (_, p) => p.evaluations === 10 && controller.abort(),
    });
    expect(result.stopReason).toBe('aborted');
    // The two others were running when the tenth finished; no evaluation started after the abort.
    expect(calls.length).toBeLessThanOrEqual(12);
    expect(result.evaluations).toBe(calls.length);
  });

  it('an evaluator error stops the other workers and is passed on once they have finished', async () => {
    let finishedAfterError = 0;
    let failed = false;
    const evaluate: Evaluate = async (config, worker) => {
      if (worker === 1 && !failed) {
        failed = true;
        throw new Error('GPU worker 1 could not be started');
      }
      await sleep(5);
      if (failed) finishedAfterError++;
      return replay(cache, { space }).evaluate(config);
    };
    await expect(bruteForce().run(space, evaluate, { workers: 3 })).rejects.toThrow('GPU worker 1 could not be started');
    // Workers 0 and 2 were busy when it failed: they finished (and were waited for), and nothing else started.
    expect(finishedAfterError).toBe(2);
  });

  it('with one worker every strategy repeats its sequence exactly for a seed', async () => {
    for (const [, make] of ALL) {
      const a = timedReplay();
      const b = timedReplay();
      await make().run(space, a.evaluate, { maxFevals: 30, seed: 8, workers: 1 });
      await make().run(space, b.evaluate, { maxFevals: 30, seed: 8 });
      expect(a.calls).toEqual(b.calls);
    }
  });

  it('rejects a worker count that is not a positive integer', async () => {
    await expect(bruteForce().run(space, timedReplay().evaluate, { workers: 0 })).rejects.toThrow(/positive integer for workers/);
  });
});

describe('shards of a search', () => {
  const limited = new SearchSpace({ block_size_x: [32, 64, 128, 256, 512, 1024], block_size_y: [1, 2, 4], tile: [1, 2, 3] }, [], {
    deviceLimits: { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] },
  });
  const evaluate: Evaluate = async (config) => ({ config, key: limited.key(config), status: 'ok', timeMs: Number(config['tile']) + 1 / Number(config['block_size_x']) });
  const keysOf = (r: { results: { key: string }[] }) => r.results.map((x) => x.key);

  it('split the space into disjoint shares whose union is every configuration, the ones over the limits included', async () => {
    const single = await bruteForce().run(limited, evaluate);
    for (const count of [1, 2, 3, 5, 7, 40]) {
      const shards = await Promise.all(Array.from({ length: count }, (_, index) => bruteForce().run(limited, evaluate, { shard: { index, count } })));
      const all = shards.flatMap(keysOf);
      expect(new Set(all).size).toBe(all.length); // disjoint
      expect([...all].sort()).toEqual([...keysOf(single)].sort()); // covering
      // Balanced: shares differ by at most one configuration (and one over the limits).
      const sizes = shards.map((s) => s.results.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(2);
    }
    expect(limited.excluded.length).toBeGreaterThan(2);
  });

  it('are deterministic: the same shard evaluates the same configurations in the same order, whatever the seed or workers', async () => {
    const a = await bruteForce().run(limited, evaluate, { shard: { index: 1, count: 3 }, seed: 1 });
    const b = await bruteForce().run(limited, evaluate, { shard: { index: 1, count: 3 }, seed: 99 });
    const c = await bruteForce().run(limited, async (config, w) => (await sleep(1), evaluate(config, w)), { shard: { index: 1, count: 3 }, workers: 2 });
    expect(keysOf(a)).toEqual(keysOf(b));
    expect([...keysOf(c)].sort()).toEqual([...keysOf(a)].sort());
  });

  it('do not depend on the device limits: a shard is the same share on a GPU and in a replay (which knows no limits)', async () => {
    const unlimited = new SearchSpace(limited.tuneParams, []);
    const all = [...unlimited.configs()].map((c) => unlimited.key(c));
    for (const index of [0, 1, 2]) {
      const onGpu = await bruteForce().run(limited, evaluate, { shard: { index, count: 3 } });
      const replayed = await bruteForce().run(unlimited, evaluate, { shard: { index, count: 3 } });
      expect([...keysOf(onGpu)].sort()).toEqual([...keysOf(replayed)].sort());
      // Shard I of 3 takes configurations I, I + 3, I + 6, ... of the space in Kernel Tuner's order.
      expect(keysOf(replayed)).toEqual(all.filter((_, k) => k % 3 === index));
    }
  });

  it('walk the space for their share once per run, not once per result', async () => {
    const shard = vi.spyOn(limited, 'shard');
    try {
      const totals: number[] = [];
      const result = await bruteForce().run(limited, evaluate, { shard: { index: 0, count: 2 }, onResult: (_, p) => totals.push(p.total) });
      expect(shard).toHaveBeenCalledTimes(1);
      expect(new Set(totals)).toEqual(new Set([result.results.length]));
    } finally {
      shard.mockRestore();
    }
  });

  it('are refused for strategies that learn from earlier results, and for a malformed shard', async () => {
    for (const s of [randomSample(), greedyMls(), genetic()]) {
      expect(s.shardable).toBe(false);
      await expect(s.run(limited, evaluate, { shard: { index: 0, count: 2 } })).rejects.toThrow(/cannot be split into shards.*Shard brute_force/);
    }
    await expect(bruteForce().run(limited, evaluate, { shard: { index: 2, count: 2 } })).rejects.toThrow(/0 <= index < count but received 2\/2/);
  });
});
