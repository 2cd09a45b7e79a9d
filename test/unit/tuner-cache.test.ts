import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { computeStats } from '../../src/gpu/stats';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { CacheFormatError, CacheMismatchError, type CacheIdentity } from '../../src/tuner/cache/format';
import { replay, SimulationMissError } from '../../src/tuner/cache/replay';
import { SearchSpace } from '../../src/tuner/space/search-space';
import { bruteForce } from '../../src/tuner/strategies';
import type { Config, ConfigResult, TuneParams } from '../../src/tuner/types';
import { SYNTHETIC_MATMUL, syntheticMatmulSpace, writeSyntheticMatmulCache } from '../fixtures/caches/synthetic-matmul';

const FIXTURE = join(__dirname, '../fixtures/caches/synthetic-matmul.json');
const TUNE_PARAMS: TuneParams = { block_size_x: [32, 64, 128], tile: [1, 2] };
const IDENTITY: CacheIdentity = { deviceName: 'NVIDIA H200', kernelName: 'vector_add', problemSize: [1 << 20], tuneParams: TUNE_PARAMS };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lkt-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const key = (c: Config) => `${c['block_size_x']},${c['tile']}`;

/** One result of every kind, with every optional field used somewhere. */
function sampleResults(): ConfigResult[] {
  const ok: ConfigResult = {
    config: { block_size_x: 32, tile: 1 },
    key: '32,1',
    status: 'ok',
    timeMs: 4,
    stats: computeStats([4.5, 4, 3.5, 4]),
    driver: {
      num_regs: 32,
      local_mem_bytes: 0,
      static_shared_mem_bytes: 4096,
      dynamic_shared_mem_bytes: 128,
      max_threads_per_block: 1024,
      active_blocks_per_sm: 32,
      active_warps_per_sm: 32,
      occupancy: 0.5,
      occupancy_source: 'driver',
    },
    energy: { nvml_energy: 0.00125, nvml_power: 312.5, core_freq: 1980, mem_freq: 2619, temperature: 41.5 },
    metrics: { edp: 0.000005, 'GFLOP/s': 268.4 },
    geometry: { grid: [32768, 1, 1], block: [32, 1, 1] },
    timings: { compileMs: 812.25, loadMs: 1.5, verifyMs: 3.25, benchmarkMs: 17, strategyMs: 0.5, frameworkMs: 2 },
    reproduce: {
      sourceHash: 'sha256:abc',
      defines: { grid_size_x: '32768', block_size_x: '32', tile: '1', kernel_tuner: '1' },
      compilerOptions: ['--gpu-architecture=sm_90', '-O3'],
      deviceName: 'NVIDIA H200',
      driverVersion: 13000,
      nvrtcVersion: '13.0',
      statistic: 'median',
    },
    timestamp: '2025-03-04T05:06:07.891Z',
  };
  const failure = (config: Config, status: ConfigResult['status'], extra: Partial<ConfigResult> = {}): ConfigResult => ({
    config,
    key: key(config),
    status,
    timestamp: '2025-03-04T05:06:08.000Z',
    ...extra,
  });
  return [
    ok,
    failure({ block_size_x: 32, tile: 2 }, 'compile_error', {
      error: { message: 'NVRTC_ERROR_COMPILATION', log: 'kernel.cu(3): error: identifier "x" is undefined\n' },
      timings: { compileMs: 700, loadMs: 0, verifyMs: 0, benchmarkMs: 0 },
    }),
    failure({ block_size_x: 64, tile: 1 }, 'stopped_early', {
      timeMs: 12.3,
      stats: computeStats([12.3]),
      note: 'stopped after 1 of 32 launches: 12.3 ms is 4.1x the best so far',
      energyUnavailable: 'NVML is not loaded: libnvidia-ml.so.1: cannot open shared object file',
      timings: { compileMs: 650, loadMs: 1, verifyMs: 2, benchmarkMs: 12.3 },
    }),
    failure({ block_size_x: 64, tile: 2 }, 'wrong_result', { error: { message: '12 of 1048576 elements differ' } }),
    failure({ block_size_x: 128, tile: 1 }, 'fault', { error: { message: 'CUDA_ERROR_ILLEGAL_ADDRESS' } }),
    failure({ block_size_x: 128, tile: 2 }, 'exceeds_device_limits', { error: { message: 'block 128x1x1 ...' } }),
  ];
}

describe('cache: Kernel Tuner layout', () => {
  it('writes the header as json.dumps(indent="") and one entry per line, closed with }\\n}', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    expect(readFileSync(path, 'utf8')).toBe(
      '{\n"device_name": "NVIDIA H200",\n"kernel_name": "vector_add",\n"problem_size": [\n1048576\n],\n"tune_params_keys": [\n"block_size_x",\n"tile"\n],\n' +
        '"tune_params": {\n"block_size_x": [\n32,\n64,\n128\n],\n"tile": [\n1,\n2\n]\n},\n"objective": "time",\n"cache": {',
    );
    for (const r of sampleResults().slice(0, 2)) cache.append(r);
    cache.close();
    const text = readFileSync(path, 'utf8');
    const lines = text.split('\n');
    expect(lines.at(-1)).toBe('}');
    const entryLines = lines.filter((l) => l.startsWith('"32,'));
    expect(entryLines).toHaveLength(2);
    // An integral time is still a Python float (Kernel Tuner ignores non-float times when picking the best).
    expect(entryLines[0]).toMatch(/^"32,1": \{"block_size_x": 32, "tile": 1, "time": 4\.0, "times": \[4\.5, 4\.0, 3\.5, 4\.0\], "compile_time": 812\.25, /);
    expect(entryLines[0]).toMatch(/"timestamp": "2025-03-04 05:06:07\.891000\+00:00"\},$/);
    expect(entryLines[1]).toMatch(/"time": "CompilationFailedConfig"/);
    const data = JSON.parse(text);
    expect(Object.keys(data)).toEqual(['device_name', 'kernel_name', 'problem_size', 'tune_params_keys', 'tune_params', 'objective', 'cache']);
    // Observers' and metrics' fields at top level, under Kernel Tuner's names (num_regs, nvml_*), before our own.
    expect(Object.keys(data.cache['32,1']).slice(0, 28)).toEqual([
      'block_size_x', 'tile', 'time', 'times', 'compile_time', 'verification_time', 'benchmark_time', 'strategy_time', 'framework_time',
      'num_regs', 'local_mem_bytes', 'static_shared_mem_bytes', 'dynamic_shared_mem_bytes', 'max_threads_per_block', 'active_blocks_per_sm', 'active_warps_per_sm', 'occupancy', 'occupancy_source',
      'nvml_energy', 'nvml_power', 'core_freq', 'mem_freq', 'temperature', 'edp', 'GFLOP/s',
      'lkt_status', 'lkt_metrics', 'lkt_load_time',
    ]);
    expect(entryLines[0]).toMatch(/"num_regs": 32, .*"occupancy": 0\.5, "occupancy_source": "driver", "nvml_energy": 0\.00125, "nvml_power": 312\.5, "core_freq": 1980\.0, /);
    expect(data.cache['32,1']['GFLOP/s']).toBe(268.4);
    expect(data.cache['32,1'].lkt_reproduce).toEqual({
      source_hash: 'sha256:abc',
      defines: { grid_size_x: '32768', block_size_x: '32', tile: '1', kernel_tuner: '1' },
      compiler_options: ['--gpu-architecture=sm_90', '-O3'],
      grid: [32768, 1, 1],
      block: [32, 1, 1],
      device_name: 'NVIDIA H200',
      driver_version: 13000,
      nvrtc_version: '13.0',
      statistic: 'median',
    });
  });

  it('maps every failure to the ErrorConfig string Kernel Tuner uses', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    for (const r of sampleResults()) cache.append(r);
    cache.close();
    const times = Object.values(JSON.parse(readFileSync(path, 'utf8')).cache as Record<string, { time: unknown }>).map((e) => e.time);
    expect(times).toEqual([4, 'CompilationFailedConfig', 12.3, 'RuntimeFailedConfig', 'RuntimeFailedConfig', 'InvalidConfig']);
  });

  it('round-trips every result without loss', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    const results = sampleResults();
    for (const r of results) cache.append(r);
    expect(cache.get('32,1')).toEqual(results[0]); // before closing, from memory
    cache.close();
    const loaded = CacheFile.load(path);
    expect(loaded.results()).toEqual(results);
    expect(loaded.header.tune_params).toEqual(TUNE_PARAMS);
    expect(loaded.repaired).toBeUndefined();
  });

  it('round-trips the verified launches and a result whose timed launches disagree (a failure to Kernel Tuner)', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    const verified = { inputSets: 2, timedLaunches: [7, 19, 28, 32], of: 32, seed: 3735928559 };
    const ok: ConfigResult = { ...sampleResults()[0]!, verified };
    const flagged: ConfigResult = {
      config: { block_size_x: 64, tile: 1 },
      key: '64,1',
      status: 'inconsistent_timing',
      stats: computeStats([0.047, 0.002, 0.047, 0.002]),
      error: { message: 'its timed launches disagree: launch 2 took 0.002 ms, under half the median 0.0245 ms' },
      verified: { ...verified, timedLaunches: [2, 4], of: 4 },
      timestamp: '2025-03-04T05:06:09.000Z',
    };
    cache.append(ok);
    cache.append(flagged);
    cache.close();
    const entries = JSON.parse(readFileSync(path, 'utf8')).cache;
    expect(entries['32,1'].lkt_verified).toEqual({ input_sets: 2, timed_launches: [7, 19, 28, 32], of: 32, seed: 3735928559 });
    expect(entries['64,1'].time).toBe('RuntimeFailedConfig');
    expect(entries['64,1'].times).toEqual([0.047, 0.002, 0.047, 0.002]);
    expect(CacheFile.load(path).results()).toEqual([ok, flagged]);
  });

  it('closes a cache with no entries as valid JSON', () => {
    const path = join(dir, 'c.json');
    CacheFile.open(path, IDENTITY).close();
    expect(JSON.parse(readFileSync(path, 'utf8')).cache).toEqual({});
    const again = CacheFile.open(path, IDENTITY);
    again.append(sampleResults()[0]!);
    again.close();
    expect(Object.keys(JSON.parse(readFileSync(path, 'utf8')).cache)).toEqual(['32,1']);
  });

  it('refuses a duplicate key and a key that does not match its configuration', () => {
    const cache = CacheFile.open(join(dir, 'c.json'), IDENTITY);
    const [first] = sampleResults();
    cache.append(first!);
    expect(() => cache.append(first!)).toThrow(/already holds configuration "32,1"/);
    expect(() => cache.append({ ...first!, key: '64,1' })).toThrow(/result key "64,1" does not match its configuration, whose key is "32,1"/);
    cache.close();
    expect(() => cache.append(sampleResults()[1]!)).toThrow(/not open for writing/);
  });
});

describe('cache: resume and cut-off files', () => {
  it('reads a file cut off after complete entries (no closing braces), as Kernel Tuner does', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    for (const r of sampleResults().slice(0, 3)) cache.append(r);
    // no close(): the process died here
    const text = readFileSync(path, 'utf8');
    expect(text.endsWith(',')).toBe(true);
    const loaded = CacheFile.load(path);
    expect(loaded.size).toBe(3);
    expect(loaded.repaired).toBeUndefined();
  });

  it('drops an incomplete last line and keeps everything before it', () => {
    const path = join(dir, 'c.json');
    const cache = CacheFile.open(path, IDENTITY);
    const results = sampleResults();
    for (const r of results.slice(0, 3)) cache.append(r);
    const size = readFileSync(path).length;
    truncateSync(path, size - 40); // a write cut short in the middle of the third entry
    const loaded = CacheFile.load(path);
    expect(loaded.results()).toEqual(results.slice(0, 2));
    expect(loaded.repaired).toMatch(/dropped an incomplete last entry/);

    // Resuming repairs the file and goes on appending; the result is valid JSON with everything.
    const resumed = CacheFile.open(path, IDENTITY);
    expect(resumed.has('64,1')).toBe(false);
    resumed.append(results[2]!);
    resumed.append(results[3]!);
    resumed.close();
    expect(CacheFile.load(path).results()).toEqual(results.slice(0, 4));
    expect(() => JSON.parse(readFileSync(path, 'utf8'))).not.toThrow();
  });

  it('reads a file cut right after the header', () => {
    const path = join(dir, 'c.json');
    CacheFile.open(path, IDENTITY); // header written, never closed
    expect(CacheFile.load(path).size).toBe(0);
  });

  it('starts afresh from an empty file (a crash before the header was written)', () => {
    const path = join(dir, 'c.json');
    writeFileSync(path, '');
    const cache = CacheFile.open(path, IDENTITY);
    cache.append(sampleResults()[0]!);
    cache.close();
    expect(CacheFile.load(path).size).toBe(1);
  });

  it('reopens a closed file for appending', () => {
    const path = join(dir, 'c.json');
    const results = sampleResults();
    const first = CacheFile.open(path, IDENTITY);
    first.append(results[0]!);
    first.close();
    const second = CacheFile.open(path, IDENTITY);
    expect(second.has('32,1')).toBe(true);
    second.append(results[1]!);
    second.close();
    expect(CacheFile.load(path).results()).toEqual(results.slice(0, 2));
  });

  it('resumes a run: configurations already in the cache are not evaluated again', async () => {
    const path = join(dir, 'c.json');
    const space = new SearchSpace(TUNE_PARAMS);
    const measured: string[] = [];
    const measure = async (config: Config): Promise<ConfigResult> => {
      measured.push(space.key(config));
      return { config, key: space.key(config), status: 'ok', timeMs: Number(config['block_size_x']) / Number(config['tile']) };
    };
    // How TunableKernel.tune uses the cache: serve known configurations, append new ones.
    const cachedEvaluate = (cache: CacheFile) => async (config: Config) => {
      const known = cache.get(space.key(config));
      if (known) return known;
      const result = await measure(config);
      cache.append(result);
      return result;
    };
    const first = CacheFile.open(path, IDENTITY);
    const partial = await bruteForce().run(space, cachedEvaluate(first), { maxFevals: 4 });
    expect(partial.stopReason).toBe('max_fevals');
    // Killed without close(); the next run picks up from the file.
    const second = CacheFile.open(path, IDENTITY);
    expect(second.size).toBe(4);
    const full = await bruteForce().run(space, cachedEvaluate(second));
    second.close();
    expect(measured).toEqual(['32,1', '32,2', '64,1', '64,2', '128,1', '128,2']);
    expect(full.results.map((r) => r.key)).toEqual(['32,1', '32,2', '64,1', '64,2', '128,1', '128,2']);
    expect(full.best?.key).toBe('32,2');
  });

  it('refuses a file that is not a cache, saying why', () => {
    const path = join(dir, 'c.json');
    writeFileSync(path, 'hello');
    expect(() => CacheFile.load(path)).toThrow(CacheFormatError);
    writeFileSync(path, '{"device_name": "x", "kernel_name": "k", "tune_params": {}, "cache": {}}');
    expect(() => CacheFile.load(path)).toThrow(/header field "tune_params_keys" is missing or malformed/);
    expect(() => CacheFile.load(join(dir, 'missing.json'))).toThrow(/does not exist/);
    // Readable, but nothing could be appended after a field that follows "cache".
    writeFileSync(path, '{"device_name": "NVIDIA H200", "kernel_name": "vector_add", "tune_params_keys": ["block_size_x", "tile"], "tune_params": {}, "cache": {}, "extra": 1}');
    expect(CacheFile.load(path).size).toBe(0);
    expect(() => CacheFile.open(path, IDENTITY)).toThrow(/"cache" object is not the last field/);
  });
});

describe('cache: refusing a cache made for something else', () => {
  it.each<[CacheMismatchError['field'], Partial<CacheIdentity>, RegExp]>([
    ['device_name', { deviceName: 'NVIDIA H100' }, /another device \(device_name\): the cache has "NVIDIA H200", this run has "NVIDIA H100"/],
    ['kernel_name', { kernelName: 'matmul' }, /another kernel \(kernel_name\): the cache has "vector_add", this run has "matmul"/],
    ['problem_size', { problemSize: [2048, 2048] }, /another problem size \(problem_size\): the cache has \[1048576\], this run has \[2048,2048\]/],
    ['tune_params_keys', { tuneParams: { block_size_x: [32], unroll: [1] } }, /other tunable parameters \(tune_params_keys\): the cache has \["block_size_x","tile"\], this run has \["block_size_x","unroll"\]/],
    ['tune_params_keys', { tuneParams: { tile: [1], block_size_x: [32] } }, /the same names in another order/],
  ])('%s', (field, change, message) => {
    const path = join(dir, 'c.json');
    CacheFile.open(path, IDENTITY).close();
    try {
      CacheFile.open(path, { ...IDENTITY, ...change });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(CacheMismatchError);
      expect((e as CacheMismatchError).field).toBe(field);
      expect((e as Error).message).toMatch(message);
    }
  });

  it('treats a scalar problem size and its one-element list as the same, as Kernel Tuner does', () => {
    const path = join(dir, 'c.json');
    CacheFile.open(path, IDENTITY).close();
    expect(() => CacheFile.open(path, { ...IDENTITY, problemSize: 1 << 20 }).close()).not.toThrow();
  });

  it('accepts other tune_params values for the same names (the keys still identify configurations)', () => {
    const path = join(dir, 'c.json');
    CacheFile.open(path, IDENTITY).close();
    expect(() => CacheFile.open(path, { ...IDENTITY, tuneParams: { block_size_x: [32, 256], tile: [1, 2, 4] } }).close()).not.toThrow();
  });
});

describe('cache: files written by Kernel Tuner', () => {
  const KT_FILE =
    '{\n"device_name": "NVIDIA RTX A4000",\n"kernel_name": "vector_add",\n"problem_size": 100,\n"tune_params_keys": [\n"block_size_x",\n"scale"\n],\n' +
    '"tune_params": {\n"block_size_x": [\n128,\n2048,\n4096\n],\n"scale": [\n1.0\n]\n},\n"objective": "time",\n"cache": {\n' +
    '"128,1.0": {"block_size_x": 128, "scale": 1.0, "time": 0.04073600071881499, "times": [0.12688, 0.031072, 0.027296], "compile_time": 440.95, "verification_time": 0, "benchmark_time": 1.09, "strategy_time": 0, "framework_time": 0.85, "timestamp": "2023-12-22 09:54:05.502007+00:00"},\n' +
    '"2048,1.0": {"block_size_x": 2048, "scale": 1.0, "time": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0.1, "timestamp": "2023-12-22 09:54:06.000000+00:00"},\n' +
    '"4096,1.0": {"block_size_x": 4096, "scale": 1.0, "time": "RuntimeFailedConfig", "compile_time": 300, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0.1, "timestamp": "2023-12-22 09:54:07.000000+00:00"}}\n}';

  it('reads its entries, statuses and timings', () => {
    const path = join(dir, 'kt.json');
    writeFileSync(path, KT_FILE);
    const cache = CacheFile.load(path);
    // JavaScript reads 1.0 as 1, so the entry is found under the key our side computes.
    expect(cache.has('128,1')).toBe(true);
    const ok = cache.get('128,1')!;
    expect(ok.status).toBe('ok');
    expect(ok.timeMs).toBe(0.04073600071881499);
    expect(ok.stats?.samplesMs).toEqual([0.12688, 0.031072, 0.027296]);
    expect(ok.timings).toEqual({ compileMs: 440.95, loadMs: 0, verifyMs: 0, benchmarkMs: 1.09, strategyMs: 0, frameworkMs: 0.85 });
    expect(ok.timestamp).toBe('2023-12-22T09:54:05.502Z');
    expect(ok.reproduce).toBeUndefined();
    expect(cache.get('2048,1')!.status).toBe('exceeds_device_limits');
    expect(cache.get('4096,1')!.status).toBe('launch_error');
  });

  it('resumes it, keeping its bytes, and appends in its format', () => {
    const path = join(dir, 'kt.json');
    writeFileSync(path, KT_FILE);
    const cache = CacheFile.open(path, { deviceName: 'NVIDIA RTX A4000', kernelName: 'vector_add', problemSize: 100, tuneParams: { block_size_x: [128, 2048, 4096, 256], scale: [1] } });
    cache.append({ config: { block_size_x: 256, scale: 1 }, key: '256,1', status: 'ok', timeMs: 0.0390625, timestamp: '2024-01-01T00:00:00.000Z' });
    cache.close();
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith(KT_FILE.slice(0, -3))).toBe(true);
    expect(text.endsWith(
      ',\n"256,1": {"block_size_x": 256, "scale": 1, "time": 0.0390625, "compile_time": 0.0, "verification_time": 0.0, "benchmark_time": 0.0, "lkt_status": "ok", "timestamp": "2024-01-01 00:00:00.000000+00:00"}}\n}',
    )).toBe(true);
    expect(Object.keys(JSON.parse(text).cache)).toEqual(['128,1.0', '2048,1.0', '4096,1.0', '256,1']);
  });
});

describe('cache: simulation replay', () => {
  const space = syntheticMatmulSpace();
  const cache = CacheFile.load(FIXTURE);

  it('replays every configuration of the fixture, and brute force finds the fastest cached one', async () => {
    const result = await bruteForce().run(space, replay(cache, { space }).evaluate);
    expect(result.evaluations).toBe(space.size);
    const fastest = cache.results().filter((r) => r.status === 'ok').sort((a, b) => a.timeMs! - b.timeMs!)[0]!;
    expect(result.best).toEqual(fastest);
    expect(result.results.filter((r) => r.status === 'compile_error').length).toBeGreaterThan(0);
    expect(result.results.filter((r) => r.status === 'launch_error').length).toBeGreaterThan(0);
  });

  it('advances a simulated clock by each result\'s compile, load, verification and benchmark time', async () => {
    const sim = replay(cache, { space });
    expect(sim.clock.now()).toBe(0);
    const r = await sim.evaluate(space.config(0));
    const t = r.timings!;
    expect(sim.clock.now()).toBeCloseTo(t.compileMs + t.loadMs + t.verifyMs + t.benchmarkMs, 9);
  });

  it('says which configuration was never measured, and reports one outside the space as restricted', async () => {
    const partialPath = join(dir, 'partial.json');
    const partial = CacheFile.open(partialPath, {
      deviceName: SYNTHETIC_MATMUL.deviceName,
      kernelName: SYNTHETIC_MATMUL.kernelName,
      problemSize: SYNTHETIC_MATMUL.problemSize,
      tuneParams: SYNTHETIC_MATMUL.tuneParams,
    });
    partial.append(cache.get(space.key(space.config(0)))!);
    partial.close();
    const sim = replay(CacheFile.load(partialPath), { space });
    await expect(sim.evaluate(space.config(1))).rejects.toThrow(SimulationMissError);
    await expect(sim.evaluate(space.config(1))).rejects.toThrow(/Configuration "16,4,1,1,1" \(block_size_x=16, block_size_y=4, tile_size_x=1, tile_size_y=1, use_shared_mem=1\) was never measured/);
    const outside = await sim.evaluate({ block_size_x: 16, block_size_y: 1, tile_size_x: 1, tile_size_y: 1, use_shared_mem: 0 });
    expect(outside.status).toBe('restricted');
    expect(outside.error?.message).toMatch(/violates the restriction "block_size_x\*block_size_y>=64"/);
  });

  it('refuses a space with other parameter names', () => {
    expect(() => replay(cache, { space: new SearchSpace({ block_size_x: [16] }) })).toThrow(CacheMismatchError);
  });

  it('the fixture is exactly what the model generates', () => {
    const path = join(dir, 'regenerated.json');
    writeSyntheticMatmulCache(path);
    expect(readFileSync(path, 'utf8')).toBe(readFileSync(FIXTURE, 'utf8'));
  });
});
