// The tuner on the real device (node --test after bundling: dist/gpu-tests/tuner.test.js; no vitest, no node_modules
// there). Every test is skipped, with the reason, where the driver or a device is missing.
//  - every example spec tunes to a correct best configuration;
//  - wrong kernels (test/fixtures/gpu/wrong_*.cu) are rejected with the right status, and the search goes on;
//  - results are stable between two runs; a hopelessly slow configuration stops early; a cache replays a run.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXAMPLE_NAMES, loadExample, loadSpec, type LoadedSpec } from '../../examples/load';
import { PROBE_LAUNCHES } from '../../src/tuner/run/measurement';
import { gpuSkipReason } from '../support/gpu-available';
import type { BuildRequest, BuiltKernel, CompiledKernel, DeviceDescription, DeviceRunOptions, Launch, OutputComparison, PreparedTest, TestData, TimedLaunches, TimedLaunchOptions, Tolerance, TuningBackend } from '../../src/tuner/run/backend';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { FailedTestsError, KernelTest, TunableKernel, type TuneOptions } from '../../src/tuner/tunable-kernel';
import { int32 } from '../../src/gpu/dtype';
import type { Config, ConfigResult, ConfigStatus, TuneResult } from '../../src/tuner/types';

// The bundle runs from dist/gpu-tests/; the repository root is two levels up.
const root = path.resolve(__dirname, '..', '..');
const examplesDir = path.join(root, 'examples');
const fixturesDir = path.join(root, 'test', 'fixtures', 'gpu');


const skip = gpuSkipReason();
if (skip) console.log(`# tuner GPU tests skipped: ${skip}`);
/** Every test carries the skip reason, so that the runner counts each one as skipped (not a single skipped suite). */
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 600_000 }, fn);
};

/** One line per result, for assertion messages. */
function summary(result: TuneResult): string {
  return result.results.map((r) => `  ${r.key}: ${r.status}${r.timeMs !== undefined ? ` ${r.timeMs.toFixed(4)} ms` : ''}${r.error ? ` (${r.error.message.slice(0, 300)})` : ''}`).join('\n');
}

/** Forwards to another backend and counts the calls that do GPU work, to show what a tuning run really did. */
class CountingBackend implements TuningBackend {
  readonly calls = { compile: 0, load: 0, prepare: 0, check: 0, timedLaunches: 0 };
  constructor(private readonly inner: TuningBackend) {}
  describe(): Promise<DeviceDescription> {
    return this.inner.describe();
  }
  compile(request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel> {
    this.calls.compile++;
    return this.inner.compile(request, signal);
  }
  load(kernel: CompiledKernel): Promise<BuiltKernel> {
    this.calls.load++;
    return this.inner.load(kernel);
  }
  prepare(data: TestData, oracle: { kernel: BuiltKernel; launch: Launch }, options: { tolerance?: Partial<Tolerance>; timeoutMs: number }): Promise<PreparedTest> {
    this.calls.prepare++;
    return this.inner.prepare(data, oracle, options);
  }
  resetOutputs(prepared: PreparedTest, inputSet: number): Promise<void> {
    return this.inner.resetOutputs(prepared, inputSet);
  }
  check(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: DeviceRunOptions): Promise<{ timeMs: number; comparison: OutputComparison }> {
    this.calls.check++;
    return this.inner.check(kernel, launch, prepared, inputSet, options);
  }
  timedLaunches(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: TimedLaunchOptions): Promise<TimedLaunches> {
    this.calls.timedLaunches++;
    return this.inner.timedLaunches(kernel, launch, prepared, inputSet, options);
  }
  compareOutputs(prepared: PreparedTest, inputSet: number): Promise<OutputComparison> {
    return this.inner.compareOutputs(prepared, inputSet);
  }
  dispose(): Promise<void> {
    return Promise.resolve(); // the wrapped backend belongs to the caller
  }
}

describe('tuner on the device', () => {
  let gpu: GpuBackend;
  before(async () => {
    if (!skip) gpu = await GpuBackend.open();
  });
  after(async () => {
    await gpu?.dispose();
  });

  const tune = (loaded: LoadedSpec, options: TuneOptions = {}): Promise<TuneResult> =>
    loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend: gpu, ...options });

  /** Medians of the configurations that ran, by key. */
  const medians = (result: TuneResult): Map<string, number> =>
    new Map(result.results.filter((r) => r.status === 'ok').map((r) => [r.key, r.timeMs!]));

  // ---- the examples ----

  /** The failures an example's space holds by construction (everything else must run and be correct). */
  function expectedFailure(name: string, config: Config): ConfigStatus | undefined {
    if (name !== 'matmul_tiled') return undefined;
    const [bx, by, tx, ty] = [config.block_size_x, config.block_size_y, config.tile_size_x, config.tile_size_y].map(Number) as [number, number, number, number];
    if (bx * by > 1024) return 'exceeds_device_limits';
    // Static shared memory over 48 KiB: a limit of the device (ptxas "uses too much shared data"), as a block of 2048 threads is.
    if (4 * (by * ty * bx + bx * bx * tx) > 48 * 1024) return 'exceeds_device_limits';
    return undefined;
  }

  for (const name of EXAMPLE_NAMES) {
    test(`example ${name} tunes by brute force to a correct best configuration`, async () => {
      const ex = await loadExample(examplesDir, name);
      const result = await tune(ex, { iterations: 7, strategy: 'brute_force' });
      const report = `${name}:\n${summary(result)}`;
      assert.equal(result.stopReason, 'completed', report);
      assert.ok(result.best, `no configuration succeeded\n${report}`);
      assert.equal(result.best.status, 'ok');

      for (const r of result.results) {
        const expected = expectedFailure(name, r.config);
        if (expected) {
          assert.equal(r.status, expected, `${r.key}\n${report}`);
          continue;
        }
        // Verified on both input sets (and after timing) or it would be wrong_result; stopped_early ran its checks too.
        assert.ok(r.status === 'ok' || r.status === 'stopped_early', `${r.key}: ${r.status}\n${report}`);
        assert.ok(r.timings!.verifyMs > 0, `${r.key} was not verified`);
        // Stopped early at its checks (two timed launches, no series), or at a checkpoint from the probe's 3 launches on.
        const launches = r.stats!.samplesMs.length;
        if (r.status === 'ok') assert.equal(launches, 7, r.key);
        else if (r.verified!.of === 0) assert.equal(launches, 2, r.key);
        else assert.ok(launches >= PROBE_LAUNCHES && launches < 7, `${r.key}: ${launches} launches`);
        assert.equal(r.timeMs, r.stats!.medianMs, r.key);
        assert.ok(r.timeMs! >= result.best.timeMs!, `${r.key} (${r.timeMs} ms) is faster than the best (${result.best.timeMs} ms)`);
      }
      if (name === 'matmul_tiled') {
        assert.equal(result.results.filter((r) => r.status === 'exceeds_device_limits').length, 8, report);
        assert.equal(result.results.filter((r) => r.status === 'compile_error').length, 0, report);
        // The four over the shared memory limit say by how much, with ptxas's words.
        const overShared = result.results.filter((r) => /uses too much shared data/.test(r.error?.message ?? ''));
        assert.equal(overShared.length, 4, report);
        for (const r of overShared) assert.match(r.error!.message, /uses \d+ bytes of static shared memory, more than the device's limit of 49152/);
      }

      // An independent check of the best: against the spec's reference kernel where it has one, else against another
      // configuration that ran (test() alone would take the configuration under test as its own oracle).
      const other = result.results.find((r) => r.status === 'ok' && r.key !== result.best!.key);
      assert.ok(ex.options.oracle || other, `${name} needs a second correct configuration to cross-check the best`);
      const checked = await ex.kernel.test(ex.test, result.best.config, {
        ...ex.options,
        backend: gpu,
        ...(!ex.options.oracle && { referenceConfig: other!.config }),
      });
      assert.equal(checked.status, 'ok');
    });
  }

  // ---- wrong kernels ----

  const WRONG_KERNELS: { file: string; status: ConfigStatus; message?: RegExp }[] = [
    { file: 'wrong_writes_nothing.cu', status: 'wrong_result', message: /c: 1048576 of 1048576 elements differ.*1048576 never written/ },
    { file: 'wrong_writes_zeros.cu', status: 'wrong_result', message: /c: \d+ of 1048576 elements differ/ },
    { file: 'wrong_writes_half.cu', status: 'wrong_result', message: /c: 524288 of 1048576 elements differ.*524288 never written/ },
    { file: 'wrong_cached_result.cu', status: 'wrong_result', message: /^wrong result on input set 2 / },
    { file: 'wrong_race.cu', status: 'wrong_result' },
    { file: 'wrong_overwrites_input.cu', status: 'wrong_result', message: /it overwrote input a, which must stay unchanged/ },
    { file: 'wrong_slightly_off.cu', status: 'wrong_result', message: /max rel error/ },
    { file: 'wrong_fault.cu', status: 'fault' },
    { file: 'wrong_infinite_loop.cu', status: 'timeout' },
  ];

  for (const { file, status, message } of WRONG_KERNELS) {
    test(`${file} is rejected as '${status}', and the next (correct) configuration is 'ok'`, async () => {
      const loaded = await loadSpec(path.join(fixturesDir, 'wrong_kernels.yaml'), { file: path.join(fixturesDir, file) });
      assert.ok(loaded.options.oracle, 'the correct vector add is the oracle');
      const started = performance.now();
      const result = await tune(loaded, { launchTimeoutMs: 2000 });
      const report = `${file}:\n${summary(result)}`;
      assert.deepEqual(
        result.results.map((r) => r.config.broken),
        [1, 0],
        report,
      );
      const [wrong, fixed] = result.results as [ConfigResult, ConfigResult];
      assert.equal(wrong.status, status, report);
      if (message) assert.match(wrong.error?.message ?? '', message, report);
      assert.equal(wrong.timeMs, undefined, 'a rejected configuration has no time');
      assert.equal(fixed.status, 'ok', report);
      assert.equal(result.best?.key, fixed.key);
      if (status === 'timeout') assert.ok(performance.now() - started >= 2000, 'the watchdog waited for the time limit');
    });
  }

  // ---- stability, early stop, cache ----

  test('vector_add gives stable results over two runs', async () => {
    const ex = await loadExample(examplesDir, 'vector_add');
    const first = await tune(ex);
    const second = await tune(ex);
    const [t1, t2] = [medians(first), medians(second)];
    const report = `first:\n${summary(first)}\nsecond:\n${summary(second)}`;
    assert.equal(t1.size, 5, report);
    assert.equal(t2.size, 5, report);
    const [best1, best2] = [first.best!, second.best!];
    // 1. The best configuration's median reproduces within ±10%.
    assert.ok(Math.abs(t2.get(best1.key)! / best1.timeMs! - 1) <= 0.1, `best ${best1.key}: ${best1.timeMs} ms, then ${t2.get(best1.key)} ms\n${report}`);
    // 2. Each run's best is near-best in the other run: the block sizes of a memory-bound kernel are often within a few
    //    percent of each other, so which one wins is noise, but both runs must agree on which ones are near the top.
    assert.ok(t2.get(best1.key)! <= 1.1 * best2.timeMs!, report);
    assert.ok(t1.get(best2.key)! <= 1.1 * best1.timeMs!, report);
    // 3. Every pair the first run separates by more than 10% is ordered the same way in the second.
    for (const [a, ta] of t1) {
      for (const [b, tb] of t1) {
        if (ta * 1.1 < tb) assert.ok(t2.get(a)! < t2.get(b)!, `${a} (${ta} ms) beat ${b} (${tb} ms) by over 10%, but not in the second run\n${report}`);
      }
    }
  });

  test('a configuration 10x slower than the best so far stops after its checks, timed, with no series', async () => {
    const loaded = await loadSpec(path.join(fixturesDir, 'slow_vector_add.yaml'));
    const result = await tune(loaded);
    const report = summary(result);
    const [plain, slow] = result.results as [ConfigResult, ConfigResult];
    assert.equal(plain.config.extra_fma, 0);
    assert.equal(plain.status, 'ok', report);
    assert.equal(slow.status, 'stopped_early', report);
    assert.match(slow.note ?? '', /^stopped after its checks: the faster took .* ms, more than 4x the best so far/);
    assert.equal(slow.stats!.samplesMs.length, 2);
    assert.deepEqual(slow.verified, { inputSets: 2, timedLaunches: [], of: 0 });
    assert.ok(slow.timeMs! > 4 * plain.timeMs!, report);
    assert.equal(result.best?.key, plain.key);
  });

  test('a Kernel Tuner cache replays a finished run without evaluating anything again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lkt-cache-test-'));
    try {
      const cache = path.join(dir, 'vector_add.json');
      const ex = await loadExample(examplesDir, 'vector_add');
      const first = await tune(ex, { iterations: 7, cache });
      assert.equal(first.results.filter((r) => r.status === 'ok').length, 5, summary(first));

      const file = CacheFile.load(cache);
      assert.equal(file.size, 5);
      assert.equal(file.header.device_name, (await gpu.describe()).name);
      assert.equal(file.header.kernel_name, 'vector_add');

      const counting = new CountingBackend(gpu);
      const replayed: ConfigResult[] = [];
      const second = await tune(ex, { iterations: 7, cache, backend: counting, onResult: (r) => replayed.push(r) });
      // The oracle is compiled and the test data prepared (the run could need them), but no configuration is compiled,
      // checked or timed again.
      assert.deepEqual(counting.calls, { compile: 1, load: 1, prepare: 1, check: 0, timedLaunches: 0 });
      assert.equal(replayed.length, 5);
      const project = (r: ConfigResult) => ({ key: r.key, status: r.status, timeMs: r.timeMs, samples: r.stats?.samplesMs, timestamp: r.timestamp });
      assert.deepEqual(replayed.map(project), first.results.map(project));
      assert.equal(second.best?.key, first.best?.key);
      assert.equal(second.best?.timeMs, first.best?.timeMs);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('KernelTest given by value: test() passes the right kernel and throws FailedTestsError for a wrong one', async () => {
    const n = 1 << 20;
    const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
    const b = Float32Array.from({ length: n }, (_, i) => Math.cos(i) * 2);
    const expected = a.map((x, i) => x + b[i]!);
    const source = (op: string) => `
      extern "C" __global__ void add(float *c, const float *a, const float *b, int n) {
        int i = blockIdx.x * block_size_x + threadIdx.x;
        if (i < n) c[i] = ${op};
      }`;
    // The output array's own content is irrelevant: a pure output is poisoned before each run.
    const kernelTest = new KernelTest([new Float32Array(n), a, b, int32(n)], [expected, null, null, null], n);
    const right = await TunableKernel.create(source('a[i] + b[i]'));
    const ok = await right.test(kernelTest, { block_size_x: 128 }, { backend: gpu });
    assert.equal(ok.status, 'ok');

    const wrong = await TunableKernel.create(source('i < n / 2 ? a[i] + b[i] : a[i] - b[i]'));
    await assert.rejects(wrong.test(kernelTest, { block_size_x: 128 }, { backend: gpu }), (e: unknown) => {
      assert.ok(e instanceof FailedTestsError, String(e));
      assert.match(e.message, /c: 52\d{4} of 1048576 elements differ/);
      assert.match(e.message, /first: \[524288\]/);
      return true;
    });

    // Without expected outputs there is nothing to compare with but the kernel itself: refused, not silently weak.
    const unanswered = new KernelTest([new Float32Array(n), a, b, int32(n)], null, n, { outputs: [0] });
    await assert.rejects(right.test(unanswered, { block_size_x: 128 }, { backend: gpu }), /test\(\) needs the right answers/);
  });

  // ---- 16-bit floats ----

  // A scale kernel as a user writes it, with the CUDA headers; `broken` copies the odd elements unscaled. The bfloat16
  // one takes its factor as a bfloat16 scalar too (it travels to the kernel as its bit pattern).
  const HALF_KERNELS = [
    { dtype: 'float16', header: 'cuda_fp16.h', type: '__half', factor: 'float a', scaled: '__float2half(a * __half2float(in[i]))', a: { dtype: 'float32', value: 2.5 } },
    {
      dtype: 'bfloat16',
      header: 'cuda_bf16.h',
      type: '__nv_bfloat16',
      factor: '__nv_bfloat16 a',
      scaled: '__float2bfloat16(__bfloat162float(a) * __bfloat162float(in[i]))',
      a: { dtype: 'bfloat16', value: 2.5 },
    },
  ];

  for (const h of HALF_KERNELS) {
    test(`a ${h.dtype} kernel tunes from a spec with random inputs, and a variant that skips the scaling is wrong_result`, async () => {
      const source = `#include <${h.header}>
extern "C" __global__ void scale(${h.type}* out, const ${h.type}* in, ${h.factor}, int n) {
  const int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = broken && i % 2 == 1 ? in[i] : ${h.scaled};
}`;
      const kernel = await TunableKernel.create(source, { kernelName: 'scale', fileName: `scale_${h.dtype}.cu` });
      const n = 1 << 20;
      const kernelTest = KernelTest.fromSpec({
        problemSize: 'n',
        arguments: {
          out: { dtype: h.dtype, length: 'n', output: true },
          in: { dtype: h.dtype, length: 'n', random: { kind: 'uniform', min: -4, max: 4 } },
          a: h.a,
          n: { dtype: 'int32', value: n },
        },
      });
      const result = await kernel.tune(kernelTest, { block_size_x: [128, 256], broken: [0, 1] }, [], {
        backend: gpu,
        iterations: 7,
        referenceConfig: { block_size_x: 128, broken: 0 },
      });
      const report = `${h.dtype}:\n${summary(result)}`;
      assert.equal(result.results.length, 4, report);
      for (const r of result.results) {
        if (r.config.broken === 0) assert.equal(r.status, 'ok', report);
        else {
          assert.equal(r.status, 'wrong_result', report);
          // Every odd element differs (but for any input that is zero), reported as the numbers the bits stand for.
          const message = r.error?.message ?? '';
          assert.match(message, /out: 52\d{4} of 1048576 elements differ/, report);
          const [, got, expected] = /first: \[1\] (\S+) \(expected (\S+)\)/.exec(message) ?? [];
          assert.ok(Math.abs(2.5 * Number(got) - Number(expected)) <= 1e-2 * Math.abs(Number(expected)), `${message}\n${report}`);
        }
      }
      assert.equal(result.best?.status, 'ok', report);
      assert.equal(result.best.config.broken, 0, report);
    });
  }
});

