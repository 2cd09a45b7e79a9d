// Tuning on several GPUs at once, without GPUs: first with one fake backend per "GPU" (test/support/fake-backend.ts),
// then with the real GpuBackend and real worker processes over the fake addon (test/support/fake-addon.cjs) with two
// devices, where a configuration can fault or hang its worker.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { GpuSelectionError, MixedGpuModelsError, parseGpuSelection, resolveGpuSelection } from '../../src/tuner/run/gpu-selection';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';
import type { ConfigResult } from '../../src/tuner/types';
import { FakeBackend, type FakeVariant } from '../support/fake-backend';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
/** Values of the fake addon's scripted tunable parameter fake_behaviour. */
const OK = 0;
const FAULT = 1;
const HANG = 2;
const SLOW = 3;
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-multi-gpu-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COPY = `
extern "C" __global__ void scripted(float *out, const float *in, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
`;
const test = () =>
  KernelTest.fromSpec({
    problemSize: 'n',
    arguments: {
      out: { dtype: 'float32', length: 'n', output: true },
      in: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
      n: { dtype: 'int32', value: 4096 },
    },
  });
const BLOCKS = [32, 64, 96, 128, 192, 256, 384, 512, 768, 1024];

/** 256 threads is fastest; a configuration's time does not depend on the GPU that takes it. */
const blockTime = (v: FakeVariant) => 1 + Math.abs(Math.log2(Number(v.defines.block_size_x) / 256));

function fakeGpus(count: number, options: { timeDelayMs?: number; names?: string[] } = {}): FakeBackend[] {
  return Array.from(
    { length: count },
    (_, ordinal) =>
      new FakeBackend({
        model: { timeMs: blockTime },
        ...(options.timeDelayMs !== undefined && { timeDelayMs: options.timeDelayMs }),
        device: { ordinal, pciBusId: `0000:1${ordinal}:00.0`, ...(options.names && { name: options.names[ordinal]! }) },
      }),
  );
}

/** Which fake GPU timed a configuration, from the backends' own logs. */
function timedBy(gpus: FakeBackend[], r: ConfigResult): number[] {
  return gpus.flatMap((g, ordinal) => (g.log.some((e) => e.kind === 'time' && e.defines.block_size_x === String(r.config.block_size_x)) ? [ordinal] : []));
}

describe('tuning on several GPUs (one fake backend each)', () => {
  it('spreads brute force over the GPUs, records which GPU timed each configuration, and finds the best of one GPU', async () => {
    const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
    const one = await kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: fakeGpus(1), earlyStop: false });
    const gpus = fakeGpus(3, { timeDelayMs: 5 });
    const three = await kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: gpus, earlyStop: false });
    expect(three.results.map((r) => r.status)).toEqual(BLOCKS.map(() => 'ok'));
    expect(three.best?.config).toEqual({ block_size_x: 256 });
    expect(three.best?.config).toEqual(one.best?.config);
    expect(three.gpus?.map((g) => [g.ordinal, g.pciBusId])).toEqual([
      [0, '0000:10:00.0'],
      [1, '0000:11:00.0'],
      [2, '0000:12:00.0'],
    ]);
    for (const r of three.results) expect(timedBy(gpus, r)).toEqual([r.gpu!.ordinal]);
    // Every GPU took a share, one configuration at a time.
    for (const g of gpus) {
      expect(g.log.filter((e) => e.kind === 'time').length).toBeGreaterThanOrEqual(2);
      expect(g.maxConcurrentTimings).toBe(1);
    }
  });

  it('refuses GPUs of different models, naming them', async () => {
    const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
    const mixed = fakeGpus(3, { names: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3', 'NVIDIA A100-SXM4-80GB'] });
    const error = await kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: mixed }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MixedGpuModelsError);
    expect((error as Error).message).toBe(
      'GPUs 0, 1 are NVIDIA H100 80GB HBM3; GPU 2 is NVIDIA A100-SXM4-80GB: one search runs on GPUs of one model, because timings compare only on ' +
        'the same model. Choose GPUs of one model: 0,1 (NVIDIA H100 80GB HBM3) or 2 (NVIDIA A100-SXM4-80GB).',
    );
  });

  it('cancelling stops every GPU at once, not after the timings under way', async () => {
    const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
    const gpus = fakeGpus(2, { timeDelayMs: 2000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const started = performance.now();
    const result = await kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: gpus, signal: controller.signal, launchTimeoutMs: 5000 });
    expect(performance.now() - started).toBeLessThan(1500);
    expect(result.stopReason).toBe('aborted');
    expect(result.evaluations).toBe(0);
  });

  it('writes which GPU timed each configuration into the cache, and reads it back', async () => {
    const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
    const file = path.join(scratch, 'two-gpus.json');
    const result = await kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: fakeGpus(2, { timeDelayMs: 2 }), cache: file });
    const cached = CacheFile.load(file);
    for (const r of result.results) expect(cached.get(r.key)?.gpu).toEqual(r.gpu);
    expect(new Set(result.results.map((r) => r.gpu!.ordinal))).toEqual(new Set([0, 1]));
  });
});

describe('GPU selections (--gpus, kernelTuner.gpus)', () => {
  const host = [
    { ordinal: 0, name: 'NVIDIA H100 80GB HBM3' },
    { ordinal: 1, name: 'NVIDIA H100 80GB HBM3' },
    { ordinal: 2, name: 'NVIDIA H100 80GB HBM3' },
  ];

  it('parses all, a list of ordinals, or a count (the first N)', () => {
    expect(parseGpuSelection('all')).toEqual({ kind: 'all' });
    expect(parseGpuSelection('0,2')).toEqual({ kind: 'list', ordinals: [0, 2] });
    expect(parseGpuSelection(' 2 , 1 ')).toEqual({ kind: 'list', ordinals: [2, 1] });
    expect(parseGpuSelection('2')).toEqual({ kind: 'count', count: 2 });
    expect(resolveGpuSelection({ kind: 'all' }, host)).toEqual([0, 1, 2]);
    expect(resolveGpuSelection({ kind: 'count', count: 2 }, host)).toEqual([0, 1]);
    expect(resolveGpuSelection({ kind: 'list', ordinals: [2, 0] }, host)).toEqual([2, 0]);
  });

  it('says what is wrong with a bad selection', () => {
    expect(() => parseGpuSelection('0')).toThrow(/at least one GPU/);
    expect(() => parseGpuSelection('gpu0')).toThrow("--gpus takes all, a list of GPU ordinals such as 0,2, or a number N of GPUs (the first N); received 'gpu0'");
    expect(() => parseGpuSelection('1,1', 'kernelTuner.gpus')).toThrow('kernelTuner.gpus lists GPU 1 twice: one worker per GPU');
    expect(() => resolveGpuSelection({ kind: 'count', count: 4 }, host)).toThrow('4 GPUs were asked for, but this host has 3 GPUs (ordinals 0, 1, 2)');
    expect(() => resolveGpuSelection({ kind: 'list', ordinals: [1, 5] }, host)).toThrow('there is no GPU 5: this host has 3 GPUs (ordinals 0, 1, 2)');
    expect(() => resolveGpuSelection({ kind: 'all' }, [...host, { ordinal: 3, name: 'NVIDIA A100-SXM4-80GB' }])).toThrow(MixedGpuModelsError);
    expect(() => resolveGpuSelection({ kind: 'list', ordinals: [0] }, [])).toThrow(GpuSelectionError);
  });
});

/** Whether a process is gone within a second (signal 0 checks that it exists without sending anything). */
async function exits(pid: number): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describe('tuning on two GPU worker processes (the fake addon with two devices)', () => {
  const env = { LKT_GPU_ADDON_MODULE: FAKE_ADDON, LKT_FAKE_DEVICE_COUNT: '2' };
  const open = (selection = parseGpuSelection('all'), extraEnv: Record<string, string> = {}) =>
    GpuBackend.openAll(selection, { env: { ...env, ...extraEnv }, cacheDir: path.join(scratch, 'helpers') });
  const withGpus = async (work: (gpus: GpuBackend[]) => Promise<void>, selection?: ReturnType<typeof parseGpuSelection>) => {
    const gpus = await open(selection);
    try {
      await work(gpus);
    } finally {
      await Promise.all(gpus.map((g) => g.dispose()));
    }
  };

  it('opens one worker per GPU; a mixed host is refused before any worker but the first starts', async () => {
    await withGpus(async (gpus) => {
      expect(gpus.map((g) => g.gpu.worker.device)).toEqual([0, 1]);
      expect(new Set(gpus.map((g) => g.gpu.worker.pid)).size).toBe(2);
    });
    await expect(open(parseGpuSelection('all'), { LKT_FAKE_DEVICE_NAMES: 'Fake H100,Fake A100' })).rejects.toThrow(
      'GPU 0 is Fake H100; GPU 1 is Fake A100: one search runs on GPUs of one model',
    );
    await expect(open(parseGpuSelection('3'))).rejects.toThrow('3 GPUs were asked for, but this host has 2 GPUs (ordinals 0, 1)');
  });

  it('compiles in one pool of compile processes shared by the GPUs, never in a GPU worker; the pool goes with the last GPU', async () => {
    const gpus = await open();
    const request = { compiler: 'nvrtc' as const, source: COPY, fileName: 'scripted.cu', nameExpression: 'scripted', defines: { block_size_x: '64' }, compilerOptions: [] };
    const compilerPid = async (gpu: GpuBackend) => (JSON.parse((await gpu.compile(request)).compiled.cubin.toString('utf8')) as { pid: number }).pid;
    const pids = await Promise.all(gpus.map(compilerPid));
    expect(gpus[0]!.compilePool).toBe(gpus[1]!.compilePool);
    for (const pid of pids) expect(gpus.map((g) => g.gpu.worker.pid)).not.toContain(pid);
    await gpus[0]!.dispose();
    expect(await compilerPid(gpus[1]!)).toBe(pids[0]);
    await gpus[1]!.dispose();
    for (const pid of new Set(pids)) expect(await exits(pid)).toBe(true);
  });

  it('a configuration that faults restarts its own worker only; the other GPU goes on, and every other configuration succeeds', async () => {
    await withGpus(async (gpus) => {
      const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
      const pids = gpus.map((g) => g.gpu.worker.pid);
      const result = await kernel.tune(test(), { block_size_x: [32, 64, 128, 256, 512], fake_behaviour: [OK, FAULT] }, [`fake_behaviour == ${OK} or block_size_x == 32`], {
        backend: gpus,
        referenceConfig: { block_size_x: 256, fake_behaviour: OK },
        launchTimeoutMs: 2000,
        iterations: 5,
      });
      const faulted = result.results.filter((r) => r.status === 'fault');
      expect(faulted.map((r) => r.key)).toEqual([`32,${FAULT}`]);
      expect(faulted[0]!.error?.message).toMatch(/CUDA_ERROR_ILLEGAL_ADDRESS/);
      expect(result.results.filter((r) => r.status === 'ok').map((r) => Number(r.config.block_size_x)).sort((a, b) => a - b)).toEqual([32, 64, 128, 256, 512]);
      // Exactly the GPU that ran the faulting configuration lost its worker process; the other kept its own.
      const faultedOn = faulted[0]!.gpu!.ordinal;
      expect(await exits(pids[faultedOn]!)).toBe(true);
      expect(gpus[1 - faultedOn]!.gpu.worker.generation).toBe(1);
      expect(gpus[1 - faultedOn]!.gpu.worker.pid).toBe(pids[1 - faultedOn]);
      expect(new Set(result.results.filter((r) => r.status === 'ok').map((r) => r.gpu!.ordinal))).toEqual(new Set([0, 1]));
    });
  });

  it('a configuration that hangs is stopped by its worker\'s watchdog while the other GPU keeps tuning', async () => {
    await withGpus(async (gpus) => {
      const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
      const pids = gpus.map((g) => g.gpu.worker.pid);
      const result = await kernel.tune(test(), { block_size_x: [32, 64, 128, 256, 512, 1024], fake_behaviour: [HANG, OK] }, [`fake_behaviour == ${OK} or block_size_x == 32`], {
        backend: gpus,
        referenceConfig: { block_size_x: 256, fake_behaviour: OK },
        launchTimeoutMs: 1500,
        iterations: 5,
      });
      const hung = result.results.find((r) => r.key === `32,${HANG}`)!;
      expect(hung.status).toBe('timeout');
      const other = 1 - hung.gpu!.ordinal;
      // The first configuration hung one GPU for its time limit; the other GPU tuned the rest meanwhile.
      const onOther = result.results.filter((r) => r.status === 'ok' && r.gpu!.ordinal === other);
      expect(onOther.length).toBeGreaterThanOrEqual(4);
      expect(result.results.filter((r) => r.status === 'ok')).toHaveLength(6);
      expect(await exits(pids[hung.gpu!.ordinal]!)).toBe(true);
      expect(gpus[other]!.gpu.worker.pid).toBe(pids[other]);
    });
  });

  it('cancelling kills the launches running on every GPU and returns at once', async () => {
    await withGpus(async (gpus) => {
      const kernel = await TunableKernel.create(COPY, { fileName: 'scripted.cu' });
      const pids = gpus.map((g) => g.gpu.worker.pid!);
      const controller = new AbortController();
      // Both GPUs are inside a 3-second launch when the run is cancelled.
      setTimeout(() => controller.abort(), 700);
      const started = performance.now();
      const result = await kernel.tune(test(), { block_size_x: [32, 64, 128, 256], fake_behaviour: [SLOW] }, [], {
        backend: gpus,
        referenceConfig: { block_size_x: 256, fake_behaviour: OK },
        launchTimeoutMs: 10_000,
        signal: controller.signal,
      });
      expect(result.stopReason).toBe('aborted');
      expect(performance.now() - started).toBeLessThan(2500);
      // Both workers were killed (a launch cannot be stopped otherwise).
      expect(await Promise.all(pids.map(exits))).toEqual([true, true]);
    });
  });
});
