// The worker protocol with real child processes: dist/gpu-worker.js hosting the scripted test double
// test/support/fake-addon.cjs (no CUDA). Covers ids under concurrency, the watchdog, faults, crashes, aborts,
// transparent restarts with handle replay, and clean disposal.
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortError,
  ArgumentError,
  CompileError,
  CudaUnavailableError,
  Gpu,
  GpuWorker,
  KernelFaultError,
  KernelTimeoutError,
  LaunchError,
  NvccCompiler,
  Program,
  WorkerCrashedError,
  float32,
  int32,
  selectCompiler,
  type BufferReset,
  type GpuOptions,
  type Kernel,
} from '../../src/gpu';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const KERNELS = ['vector_add', 'spin_forever', 'fault', 'exit', 'sleep'];

const opened: Gpu[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((g) => g.dispose()));
});

async function openFake(env: Record<string, string> = {}, options: GpuOptions = {}): Promise<Gpu> {
  const gpu = await Gpu.open({ ...options, env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, ...env } });
  opened.push(gpu);
  return gpu;
}

async function kernels(gpu: Gpu): Promise<Record<string, Kernel>> {
  const module = await gpu.loadModule(await gpu.compile({ source: '// fake kernels', nameExpressions: KERNELS }));
  const out: Record<string, Kernel> = {};
  for (const name of KERNELS) out[name] = await module.getKernel(name);
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
  return !alive(pid);
}

describe('GpuWorker protocol (real child process, fake addon)', () => {
  it('resolves the default worker path to the built bundle', () => {
    expect(new GpuWorker().workerPath).toBe(path.resolve(__dirname, '../../dist/gpu-worker.js'));
  });

  it('matches responses to requests under concurrency, with compiles finishing out of order', async () => {
    const gpu = await openFake();
    const delays = [120, 10, 80, 0, 60, 20, 100, 40];
    const finished: number[] = [];
    const compiles = delays.map((d, i) =>
      gpu
        .compile({ source: `// fake-delay-ms: ${d}\n// program ${i}`, nameExpressions: [`k${i}`], defines: { ID: i } })
        .then((c) => {
          finished.push(i);
          return c;
        }),
    );
    const buffers = await Promise.all(delays.map(() => gpu.alloc('int32', 16)));
    const roundTrips = buffers.map(async (b, i) => {
      await b.upload(Int32Array.from({ length: 16 }, (_, j) => i * 100 + j));
      return b.download();
    });
    const infos = Array.from({ length: 8 }, () => gpu.memInfo());

    const [compiled, downloaded, mem] = await Promise.all([Promise.all(compiles), Promise.all(roundTrips), Promise.all(infos)]);
    compiled.forEach((c, i) => {
      const cubin = JSON.parse(c.cubin.toString('utf8')) as { kernels: string[]; options: string[]; source: string };
      expect(cubin.source).toContain(`// program ${i}`);
      expect(cubin.kernels).toEqual([`k${i}`]);
      expect(cubin.options).toEqual(['--gpu-architecture=sm_90', `-DID=${i}`]);
      expect(c.loweredNames).toEqual({ [`k${i}`]: `k${i}` });
      expect(c.backend).toBe('nvrtc');
    });
    downloaded.forEach((d, i) => expect(Array.from(d)).toEqual(Array.from({ length: 16 }, (_, j) => i * 100 + j)));
    for (const m of mem) expect(m.totalBytes).toBe(80 * 2 ** 30);
    expect(finished).not.toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(gpu.worker.generation).toBe(1);
  });

  it('passes launch geometry and typed arguments to the kernel', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const [a, b, c] = await Promise.all([gpu.alloc('float32', 8), gpu.alloc('float32', 8), gpu.alloc('float32', 8)]);
    await a.upload(Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]));
    await b.fill(10);
    await c.fill(-1);
    // 2 blocks of 3 threads cover 6 of the 7 requested elements.
    await gpu.launch(k.vector_add!, { grid: 2, block: 3 }, [a, b, c, int32(7)]);
    expect(Array.from(await c.download())).toEqual([11, 12, 13, 14, 15, 16, -1, -1]);
  });

  it('copies a buffer into a module\'s __constant__ symbol, which the next launch reads; an unknown or too small symbol is refused', async () => {
    const gpu = await openFake();
    const module = await gpu.loadModule(await gpu.compile({ source: '__constant__ float d_filter[2*3];\n// fake kernels', nameExpressions: ['read_constant'] }));
    const read = await module.getKernel('read_constant');
    const [filter, out, tooBig] = await Promise.all([gpu.alloc('float32', 6), gpu.alloc('float32', 6), gpu.alloc('float32', 7)]);
    await filter.upload(Float32Array.from([1, 2, 3, 4, 5, 6]));
    expect(await module.copyToSymbol('d_filter', filter)).toBe(24);
    await gpu.launch(read, { grid: 1, block: 1 }, [out]);
    expect(Array.from(await out.download())).toEqual([1, 2, 3, 4, 5, 6]);
    // The test double holds every launch to a fresh copy, as the tuner must give one before each run.
    await expect(gpu.launch(read, { grid: 1, block: 1 }, [out])).rejects.toThrow(/__constant__ d_filter not copied before this launch/);
    await expect(module.copyToSymbol('d_filters', filter)).rejects.toThrow(/CUDA_ERROR_NOT_FOUND/);
    await expect(module.copyToSymbol('d_filter', tooBig)).rejects.toThrow('28 bytes do not fit the symbol d_filter of 24 bytes');
    await expect(module.copyToSymbol('', filter)).rejects.toThrow(ArgumentError);
  });

  it('times the driver\'s device-to-device copy of whole buffers (benchmarkCopy), checking both buffers first', async () => {
    const gpu = await openFake();
    const [source, destination, shorter] = await Promise.all([gpu.alloc('uint32', 64), gpu.alloc('uint32', 64), gpu.alloc('uint32', 32)]);
    await source.fillRandom({ distribution: 'integers', min: 0, max: 1000, seed: 3 });
    const stats = await gpu.benchmarkCopy(destination, source, { warmup: 1, iterations: 4 });
    expect(stats.samplesMs).toHaveLength(4);
    expect(Array.from(await destination.download())).toEqual(Array.from(await source.download()));
    await expect(gpu.benchmarkCopy(destination, destination)).rejects.toThrow(/another DeviceBuffer of 256 bytes/);
    await expect(gpu.benchmarkCopy(shorter, source)).rejects.toThrow(ArgumentError);
    await expect(gpu.benchmarkCopy(destination, source, { iterations: 1001 })).rejects.toThrow(/at most 1000/);
    await shorter.free();
    await expect(gpu.benchmarkCopy(shorter, source)).rejects.toThrow(/not freed/);
  });

  it('kills a request past its time limit (KernelTimeoutError), restarts, and replays handles made before', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const [a, b, c] = await Promise.all([gpu.alloc('float32', 4), gpu.alloc('float32', 4), gpu.alloc('float32', 4)]);
    await a.upload(Float32Array.from([1, 2, 3, 4]));
    await b.fillRandom({ distribution: 'integers', min: 0, max: 9, seed: 5 });
    const randomB = await b.download();
    const copyOfA = await gpu.alloc('float32', 4);
    await copyOfA.copyFrom(a);
    await a.upload(Float32Array.from([2, 2]), { offset: 2 });
    const firstPid = gpu.worker.pid!;

    const error = await gpu.launch(k.spin_forever!, { grid: 1, block: 1 }, [], { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KernelTimeoutError);
    expect(error).toMatchObject({ method: 'launch', timeoutMs: 300 });
    expect((error as Error).message).toMatch(/launch did not finish within 300 ms/);
    expect(await waitGone(firstPid)).toBe(true);

    // The handles from the first worker work on the second: buffers re-created from their recipes, kernel re-fetched.
    expect(Array.from(await a.download())).toEqual([1, 2, 2, 2]);
    expect(Array.from(await copyOfA.download())).toEqual([1, 2, 3, 4]);
    expect(gpu.worker.pid).not.toBe(firstPid);
    expect(gpu.worker.generation).toBe(2);
    expect(Array.from(await b.download())).toEqual(Array.from(randomB));
    await gpu.launch(k.vector_add!, { grid: 1, block: 4 }, [a, b, c, int32(4)]);
    expect(Array.from(await c.download())).toEqual([0, 1, 2, 3].map((i) => [1, 2, 2, 2][i]! + randomB[i]!));
  });

  it('reports a fault as KernelFaultError and runs the next requests, in order, on a fresh worker', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const [a, b, c] = await Promise.all([gpu.alloc('float32', 3), gpu.alloc('float32', 3), gpu.alloc('float32', 3)]);
    await a.upload(Float32Array.from([1, 2, 3]));
    await b.upload(Float32Array.from([10, 20, 30]));
    const firstPid = gpu.worker.pid!;

    const fault = gpu.launch(k.fault!, { grid: 1, block: 1 }, []);
    // Queued behind the fault, not awaited: they must run after it, in this order, on the next worker.
    const launch = gpu.launch(k.vector_add!, { grid: 1, block: 3 }, [a, b, c, int32(3)]);
    const result = c.download();
    await expect(fault).rejects.toBeInstanceOf(KernelFaultError);
    await expect(fault).rejects.toMatchObject({ code: 'CUDA_ERROR_ILLEGAL_ADDRESS' });
    await launch;
    expect(Array.from(await result)).toEqual([11, 22, 33]);
    expect(gpu.worker.pid).not.toBe(firstPid);
    expect(await waitGone(firstPid)).toBe(true);
  });

  it('gives WorkerCrashedError when the worker dies mid-request, and works again after', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const error = await gpu.launch(k.exit!, { grid: 1, block: 1 }, []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkerCrashedError);
    expect(error).toMatchObject({ exitCode: 3, call: 'launch' });
    expect((await gpu.memInfo()).totalBytes).toBe(80 * 2 ** 30);
    expect(gpu.worker.generation).toBe(2);
  });

  it('resends compiles in flight when another request kills the worker', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const slow = gpu.compile({ source: '// fake-delay-ms: 700\n// survivor', nameExpressions: ['survivor'] });
    await expect(gpu.launch(k.spin_forever!, { grid: 1, block: 1 }, [], { timeoutMs: 200 })).rejects.toBeInstanceOf(KernelTimeoutError);
    const compiled = await slow;
    expect(JSON.parse(compiled.cubin.toString('utf8')).source).toContain('// survivor');
    expect(gpu.worker.generation).toBe(2);
  });

  it('retries a compile that crashes the worker a bounded number of times, then fails', async () => {
    const gpu = await openFake();
    await expect(gpu.compile({ source: '// fake-crash', nameExpressions: ['k'] })).rejects.toBeInstanceOf(WorkerCrashedError);
    expect(gpu.worker.generation).toBe(3);
    expect((await gpu.memInfo()).totalBytes).toBe(80 * 2 ** 30);
  });

  it('aborts a running request by killing the worker, and a waiting one without', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);

    const sleeping = gpu.launch(k.sleep!, { grid: 1, block: 1 }, [int32(300)]);
    const waiting = new AbortController();
    const info = gpu.memInfo({ signal: waiting.signal });
    waiting.abort();
    await expect(info).rejects.toBeInstanceOf(AbortError);
    await sleeping;
    expect(gpu.worker.generation).toBe(1);

    const running = new AbortController();
    const pid = gpu.worker.pid!;
    const spin = gpu.launch(k.spin_forever!, { grid: 1, block: 1 }, [], { signal: running.signal });
    setTimeout(() => running.abort(), 150);
    const error = await spin.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).name).toBe('AbortError');
    expect(await waitGone(pid)).toBe(true);

    await expect(gpu.memInfo({ signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    expect((await gpu.memInfo()).totalBytes).toBe(80 * 2 ** 30);
  });

  it('rejects a configuration the device cannot run with LaunchError before launching, and raises shared memory on demand', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const pid = gpu.worker.pid;
    await expect(gpu.launch(k.vector_add!, { grid: 1, block: 2048 }, [])).rejects.toMatchObject({
      name: 'LaunchError',
      code: 'LAUNCH_BLOCK_TOO_LARGE',
    });
    await expect(gpu.launch(k.vector_add!, { grid: 1, block: [1, 1, 65] }, [])).rejects.toBeInstanceOf(LaunchError);
    await expect(gpu.launch(k.sleep!, { grid: 1, block: 1, sharedMemBytes: 300 * 1024 }, [int32(0)])).rejects.toMatchObject({
      code: 'LAUNCH_SHARED_MEMORY_TOO_LARGE',
    });
    // 96 KiB is above the default 48 KiB: the worker opts the function in (the fake rejects the launch otherwise).
    await gpu.launch(k.sleep!, { grid: 1, block: 1, sharedMemBytes: 96 * 1024 }, [int32(0)]);
    expect(gpu.worker.pid).toBe(pid);
    expect(gpu.worker.generation).toBe(1);
  });

  it('rebuilds compile errors from the worker as CompileError with parsed diagnostics', async () => {
    const gpu = await openFake();
    const error = await gpu
      .compile({ source: '// ok\n// ok\n#error BLOCK must be 128\n', fileName: 'tiled.cu', nameExpressions: ['k'] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    const e = error as CompileError;
    expect(e.diagnostics).toEqual([{ file: 'tiled.cu', line: 3, severity: 'error', message: '#error directive: BLOCK must be 128' }]);
    expect(e.log).toContain('1 error detected');
    expect(e.stack).toContain('gpu-worker.test.ts'); // the stack is the caller's, not the worker's
  });

  it('checks arguments before sending anything', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const buf = await gpu.alloc('float32', 4);
    await expect(buf.upload(new Int32Array(4) as unknown as Float32Array)).rejects.toThrow(
      'Expected a typed array of float32 for data but received Int32Array(4)',
    );
    await expect(buf.upload(new Float32Array(5))).rejects.toBeInstanceOf(ArgumentError);
    await expect(buf.fill(1e39)).rejects.toThrow(/float32 range/);
    await expect(gpu.launch(k.vector_add!, { grid: 1, block: 1 }, [buf, 3 as never])).rejects.toThrow(
      'Expected a DeviceBuffer or a typed scalar such as int32(n) or float32(x) for args[1] but received 3',
    );
    await buf.free();
    await expect(buf.download()).rejects.toMatchObject({ code: 'HANDLE_RELEASED' });
    await expect(gpu.launch(k.vector_add!, { grid: 1, block: 1 }, [float32(1), buf])).rejects.toThrow(/args\[1\]/);
    expect(gpu.worker.generation).toBe(1);
  });

  it('frees device memory and unloads modules for real', async () => {
    const gpu = await openFake();
    const before = (await gpu.memInfo()).freeBytes;
    const buf = await gpu.alloc('float64', 1024);
    expect((await gpu.memInfo()).freeBytes).toBe(before - 8192);
    await buf.free();
    expect((await gpu.memInfo()).freeBytes).toBe(before);
    const module = await gpu.loadModule(await gpu.compile({ source: '//', nameExpressions: ['vector_add'] }));
    const kernel = await module.getKernel('vector_add');
    await expect(module.getKernel('nope')).rejects.toThrow(/one of the program's name expressions \(vector_add\)/);
    await module.unload();
    await expect(gpu.launch(kernel, { grid: 1, block: 1 }, [])).rejects.toMatchObject({ code: 'HANDLE_RELEASED' });
    await expect(module.getKernel('vector_add')).rejects.toMatchObject({ code: 'HANDLE_RELEASED' });
  });

  it('dispose leaves no child process, even with a kernel spinning, and later requests reject', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const pid = gpu.worker.pid!;
    const spin = gpu.launch(k.spin_forever!, { grid: 1, block: 1 }, []).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    await gpu.dispose();
    expect(alive(pid)).toBe(false);
    expect(await spin).toMatchObject({ code: 'WORKER_DISPOSED' });
    await expect(gpu.memInfo()).rejects.toMatchObject({ code: 'WORKER_DISPOSED' });

    const idle = await openFake();
    const idlePid = idle.worker.pid!;
    await idle.dispose();
    expect(alive(idlePid)).toBe(false);

    // Right after a timeout the killed worker may not be reaped yet: dispose waits for it too.
    const timedOut = await openFake();
    const killedPid = timedOut.worker.pid!;
    const spinner = (await kernels(timedOut)).spin_forever!;
    await expect(timedOut.launch(spinner, { grid: 1, block: 1 }, [], { timeoutMs: 100 })).rejects.toBeInstanceOf(KernelTimeoutError);
    await timedOut.dispose();
    expect(alive(killedPid)).toBe(false);
  });

  it('fails to open with CudaUnavailableError when the addon or the device is missing, leaving no child', async () => {
    const missing = await Gpu.open({ env: { LKT_GPU_ADDON_MODULE: path.join(__dirname, 'no-such-addon.cjs') } }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(CudaUnavailableError);
    expect(missing).toMatchObject({ code: 'ADDON_NOT_LOADED' });
    const noDevice = await Gpu.open({ env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, LKT_FAKE_DEVICE_COUNT: '0' } }).catch((e: unknown) => e);
    expect(noDevice).toBeInstanceOf(CudaUnavailableError);
    expect((noDevice as Error).message).toMatch(/No CUDA device was found/);
  });

  it('selects NVRTC when the worker loaded it, else nvcc', async () => {
    const withNvrtc = await openFake();
    expect((await selectCompiler({ gpu: withNvrtc })).backend).toBe('nvrtc');
    const withoutNvrtc = await openFake({ LKT_FAKE_NO_NVRTC: '1' });
    expect(withoutNvrtc.nvrtcAvailable).toBe(false);
    if (await NvccCompiler.available()) expect((await selectCompiler({ gpu: withoutNvrtc })).backend).toBe('nvcc');
    else await expect(selectCompiler({ gpu: withoutNvrtc })).rejects.toBeInstanceOf(CudaUnavailableError);
    await expect(selectCompiler({ gpu: withoutNvrtc, nvcc: { nvccPath: '/nonexistent/nvcc' } })).rejects.toThrow(
      /NVRTC .* and nvcc was not found/,
    );
  });

  it('benchmarks through the worker and summarizes in TypeScript', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const stats = await gpu.benchmark(k.sleep!, { grid: 1, block: 1 }, [int32(0)], { warmup: 1, iterations: 8, flushL2: true });
    expect(stats.samplesMs).toEqual([1, 1.01, 1.02, 1.03, 1, 1.01, 1.02, 1.03]);
    expect(stats.medianMs).toBeCloseTo(1.015, 10);
    expect(stats.minMs).toBe(1);
    expect(stats.maxMs).toBe(1.03);
  });

  it('starts each timed launch from an idle GPU when asked, and refuses anything but a boolean for it', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const idle = await gpu.benchmark(k.sleep!, { grid: 1, block: 1 }, [int32(0)], { warmup: 0, iterations: 4, idleBeforeEach: true });
    // The fake addon's launches from an idle GPU take 0.005 ms more: the launch's way from the host, timed too.
    expect(idle.samplesMs.map((t) => Number(t.toFixed(3)))).toEqual([1.005, 1.015, 1.025, 1.035]);
    await expect(gpu.benchmark(k.sleep!, { grid: 1, block: 1 }, [int32(0)], { idleBeforeEach: 'yes' as never })).rejects.toThrow(ArgumentError);
  });

  it('runs checks (a launch answering in a uint64 buffer) in one request, after a benchmark or on their own', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const [a, b, c] = await Promise.all([gpu.alloc('float32', 4), gpu.alloc('float32', 4), gpu.alloc('float32', 4)]);
    await a.upload(new Float32Array([1, 2, 3, 4]));
    await b.upload(new Float32Array([10, 20, 30, 40]));
    const words = await gpu.alloc('uint64', 2);
    // A check whose kernel writes its answer (the fake vector_add's sums, into the 16 bytes of the result buffer) ...
    const sums = { kernel: k.vector_add!, config: { grid: 1, block: 4 }, args: [a, b, words, int32(4)], result: words, init: [7n, 9n] };
    // ... and one whose kernel leaves it as it was set.
    const untouched = { kernel: k.sleep!, config: { grid: 1, block: 1 }, args: [int32(0)], result: words, init: [5n] };
    const expected = [...new BigUint64Array(new Float32Array([11, 22, 33, 44]).buffer)];
    expect(await gpu.runChecks([sums, untouched])).toEqual([expected, [5n]]);
    const stats = await gpu.benchmark(k.vector_add!, { grid: 1, block: 4 }, [a, b, c, int32(4)], { warmup: 0, iterations: 2, checksAfter: [untouched, sums] });
    expect(stats.samplesMs).toHaveLength(2);
    expect(stats.checks).toEqual([[5n], expected]);
    expect([...(await c.download())]).toEqual([11, 22, 33, 44]);
    await expect(gpu.runChecks([{ ...sums, result: c as never }])).rejects.toThrow(/checks\[0\]\.result/);
    await expect(gpu.runChecks([{ ...sums, init: [] }])).rejects.toThrow(/1 to 2 uint64 words/);
    await expect(gpu.runChecks([{ ...sums, init: [1n, 2n, 3n] }])).rejects.toThrow(/1 to 2 uint64 words/);
  });

  it('resets buffers before the timed launches of a benchmark (fills and copies), checked in this process first', async () => {
    const gpu = await openFake();
    const k = await kernels(gpu);
    const output = await gpu.alloc('float32', 4);
    await output.upload(new Float32Array([1, 2, 3, 4]));
    const inOut = await gpu.alloc('int32', 3);
    const initial = await gpu.alloc('int32', 3);
    await initial.upload(Int32Array.from([7, 8, 9]));
    const resetBeforeEach = [{ buffer: output, fill: NaN }, { buffer: inOut, copyFrom: initial }];
    await gpu.benchmark(k.sleep!, { grid: 1, block: 1 }, [int32(0)], { warmup: 0, iterations: 2, resetBeforeEach });
    expect([...(await output.download())].every(Number.isNaN)).toBe(true);
    expect([...(await inOut.download())]).toEqual([7, 8, 9]);
    const bench = (resets: BufferReset[]) => gpu.benchmark(k.sleep!, { grid: 1, block: 1 }, [int32(0)], { resetBeforeEach: resets });
    await expect(bench([{ buffer: inOut, copyFrom: output as never }])).rejects.toThrow(/another DeviceBuffer<int32>\[3\] for resetBeforeEach\[0\]\.copyFrom/);
    await expect(bench([{ buffer: output, fill: 1n }])).rejects.toThrow(ArgumentError);
    await initial.free();
    await expect(bench([{ buffer: inOut, copyFrom: initial }])).rejects.toThrow(/not freed/);
  });

  it('keeps program options intact on their way to the compiler', () => {
    const p = new Program({ source: 'x', nameExpressions: ['k'], defines: { A: 1, B: 'x y' }, includePaths: ['/inc'], options: ['-lineinfo'] });
    expect(p.toNativeRequest('sm_80').options).toEqual(['--gpu-architecture=sm_80', '-DA=1', '-DB=x y', '--include-path=/inc', '-lineinfo']);
  });
});
