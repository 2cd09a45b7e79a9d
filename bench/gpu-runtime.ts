// Issue 2's benchmark: the GPU layer alone (no tuner). Compile + load + verify + time 5 block sizes (64..1024) of the
// vector add of examples/vector_add over 2^26 floats, 32 timed launches each, and report the per-phase breakdown, the
// total wall time, and the best configuration's bandwidth against the device's measured copy bandwidth (the copy
// kernel of src/gpu/bandwidth.ts, and the driver's cuMemcpyDtoD beside it).
//   node dist/bench/gpu-runtime.js        (JSON also to $OUT/bench-gpu-runtime.json when OUT is set)
// The measured part runs twice in the same worker: "first" (a fresh worker: NVRTC's first compiles, first module loads)
// and "second" (warm). Setup (worker start, buffers, random inputs) is reported apart and is not in the totals.
// Verification is element-wise on the GPU: a checker kernel, compiled with the variants, counts the elements where c is
// not exactly a + b (exact: both sides are one correctly rounded float add); c is filled with NaN before each checked
// launch, so an element a variant never writes counts too.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { measureBandwidth } from '../src/gpu/bandwidth';
import { Gpu, int32, type CompiledProgram, type Kernel, type Module, type TimingStats } from '../src/gpu/client';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const N = 1 << 26;
const BLOCK_SIZES = [64, 128, 256, 512, 1024];
const WARMUP = 3;
const ITERATIONS = 32;
/** Issue 2's figures on an H200: Kernel Tuner 1.4.0 (cupy backend), a bare driver+NVRTC probe, and the target. */
const REFERENCE = { kernelTunerS: 5.55, bareProbeS: 0.27, targetS: 0.35 };
/** NVRTC compiles run on the worker's libuv pool: one thread per compile, so that all of them run at once. */
const COMPILE_THREADS = String(BLOCK_SIZES.length + 1);

const HELPERS = String.raw`
// Counts the elements where c is not exactly a + b (NaN, the poison of unwritten elements, never compares equal).
extern "C" __global__ void count_mismatches(const float *c, const float *a, const float *b, int n, unsigned long long *bad) {
    unsigned long long local = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (!(c[i] == a[i] + b[i])) local++;
    }
    if (local) atomicAdd(bad, local);
}
`;


interface Variant {
  blockSize: number;
  nvrtcMs: number;
  loadMs: number;
  verifyMs: number;
  timeMs: number;
  stats: TimingStats;
}

interface Run {
  label: string;
  phases: { compileMs: number; loadMs: number; verifyMs: number; timeMs: number };
  totalMs: number;
  variants: Variant[];
}

const ms = (x: number): string => x.toFixed(1);
const gbps = (bytes: number, timeMs: number): number => bytes / (timeMs * 1e-3) / 1e9;

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const source = readFileSync(path.join(root, 'examples', 'vector_add', 'vector_add.cu'), 'utf8');

  const setupStart = performance.now();
  const gpu = await Gpu.open({ env: { UV_THREADPOOL_SIZE: COMPILE_THREADS } });
  try {
    const openMs = performance.now() - setupStart;
    const runtime = await gpu.runtime();
    const [a, b, c] = await Promise.all([gpu.alloc('float32', N), gpu.alloc('float32', N), gpu.alloc('float32', N)]);
    const bad = await gpu.alloc('uint64', 1);
    await a.fillRandom({ distribution: 'uniform', min: -1, max: 1, seed: 1 });
    await b.fillRandom({ distribution: 'uniform', min: -1, max: 1, seed: 2 });
    const setupMs = performance.now() - setupStart;
    const checkLaunch = { grid: gpu.device.multiprocessors * 8, block: 256 };
    /** The helper module of the latest run. */
    let helperModule: Module | undefined;

    const measure = async (label: string): Promise<Run> => {
      const modules: Module[] = [];
      const start = performance.now();
      // Compile: the five variants and the checker at once.
      const compiles = BLOCK_SIZES.map((bs) =>
        gpu.compile({ source, fileName: 'vector_add.cu', nameExpressions: ['vector_add'], defines: { block_size_x: bs } }),
      );
      const [helpers, ...variants]: CompiledProgram[] = await Promise.all([
        gpu.compile({ source: HELPERS, fileName: 'bench_helpers.cu', nameExpressions: ['count_mismatches'] }),
        ...compiles,
      ]);
      const compiled = performance.now();

      const helperRun = await gpu.loadModule(helpers!);
      const check = await helperRun.getKernel('count_mismatches');
      const kernels: Kernel[] = [];
      const loadMs: number[] = [];
      for (const program of variants) {
        const t = performance.now();
        const module = await gpu.loadModule(program);
        modules.push(module);
        kernels.push(await module.getKernel('vector_add'));
        loadMs.push(performance.now() - t);
      }
      const loaded = performance.now();

      const verifyMs: number[] = [];
      for (const [i, kernel] of kernels.entries()) {
        const t = performance.now();
        await c.fill(Number.NaN);
        await gpu.launch(kernel, { grid: Math.ceil(N / BLOCK_SIZES[i]!), block: BLOCK_SIZES[i]! }, [c, a, b, int32(N)]);
        await bad.fill(0);
        await gpu.launch(check, checkLaunch, [c, a, b, int32(N), bad]);
        const mismatches = (await bad.download())[0]!;
        if (mismatches !== 0n) throw new Error(`block_size_x=${BLOCK_SIZES[i]}: ${mismatches} of ${N} elements are not a + b`);
        verifyMs.push(performance.now() - t);
      }
      const verified = performance.now();

      const stats: TimingStats[] = [];
      const timeMs: number[] = [];
      for (const [i, kernel] of kernels.entries()) {
        const t = performance.now();
        stats.push(await gpu.benchmark(kernel, { grid: Math.ceil(N / BLOCK_SIZES[i]!), block: BLOCK_SIZES[i]! }, [c, a, b, int32(N)], { warmup: WARMUP, iterations: ITERATIONS }));
        timeMs.push(performance.now() - t);
      }
      const end = performance.now();
      await Promise.all([...modules, ...(helperModule ? [helperModule] : [])].map((m) => m.unload()));
      helperModule = helperRun;
      return {
        label,
        phases: { compileMs: compiled - start, loadMs: loaded - compiled, verifyMs: verified - loaded, timeMs: end - verified },
        totalMs: end - start,
        variants: BLOCK_SIZES.map((blockSize, i) => ({
          blockSize,
          nvrtcMs: variants[i]!.durationMs,
          loadMs: loadMs[i]!,
          verifyMs: verifyMs[i]!,
          timeMs: timeMs[i]!,
          stats: stats[i]!,
        })),
      };
    };

    const first = await measure('first (fresh worker: first NVRTC compiles and module loads)');
    const second = await measure('second (warm)');

    // The device's copy bandwidth: the reports' copy kernel (best launch shape) against cuMemcpyDtoD, on buffers of
    // their own (the vector add's are freed first, so that the probe's fit beside nothing else).
    await Promise.all([a.free(), b.free(), c.free()]);
    const copy = await measureBandwidth(gpu, { iterations: ITERATIONS });
    const copyGBps = copy.kernel.GBps;
    const best = second.variants.reduce((x, y) => (y.stats.medianMs < x.stats.medianMs ? y : x));
    const bestGBps = gbps(12 * N, best.stats.medianMs);

    console.log(`device: ${gpu.device.name} (${gpu.arch}), driver ${runtime.driverVersion}, NVRTC ${runtime.nvrtcVersion?.join('.') ?? 'not loaded'}`);
    console.log(`setup (not in the totals): worker start ${ms(openMs)} ms, CUDA context + buffers + random inputs ${ms(setupMs - openMs)} ms`);
    console.log(`vector add over 2^26 floats, block sizes ${BLOCK_SIZES.join(', ')}, ${ITERATIONS} timed launches each (after ${WARMUP} warm-up)`);
    for (const run of [first, second]) {
      console.log(`\n${run.label}`);
      console.log('  block  nvrtc ms  load ms  verify ms  time ms  median ms  min ms   GB/s');
      for (const v of run.variants) {
        console.log(
          `  ${String(v.blockSize).padStart(5)}  ${ms(v.nvrtcMs).padStart(8)}  ${v.loadMs.toFixed(2).padStart(7)}  ${v.verifyMs.toFixed(2).padStart(9)}  ${ms(v.timeMs).padStart(7)}  ${v.stats.medianMs.toFixed(4).padStart(9)}  ${v.stats.minMs.toFixed(4).padStart(6)}  ${gbps(12 * N, v.stats.medianMs).toFixed(0).padStart(5)}`,
        );
      }
    }
    console.log('');
    console.log(`reference (H200): Kernel Tuner 1.4.0 ${REFERENCE.kernelTunerS} s, bare driver+NVRTC probe ${REFERENCE.bareProbeS} s, target <= ${REFERENCE.targetS} s`);
    console.log(`best: block_size_x=${best.blockSize}, median ${best.stats.medianMs.toFixed(4)} ms = ${bestGBps.toFixed(0)} GB/s (3 x 4 bytes x n)`);
    console.log(
      `copy kernel: unroll ${copy.kernel.unroll}, block ${copy.kernel.block}, grid ${copy.kernel.grid} over 2 x ${(copy.bufferBytes / 2 ** 20).toFixed(0)} MiB: ${copyGBps.toFixed(0)} GB/s (read + write), ${(100 * copy.ratio).toFixed(1)}% of cuMemcpyDtoD's ${copy.memcpy.GBps.toFixed(0)} GB/s; vector add reaches ${((100 * bestGBps) / copyGBps).toFixed(1)}% of the copy kernel`,
    );

    console.log('\nphase (wall ms)         first    second');
    for (const key of ['compileMs', 'loadMs', 'verifyMs', 'timeMs'] as const) {
      console.log(`  ${key.replace('Ms', '').padEnd(20)} ${ms(first.phases[key]).padStart(7)}  ${ms(second.phases[key]).padStart(7)}`);
    }
    console.log(`  ${'total'.padEnd(20)} ${ms(first.totalMs).padStart(7)}  ${ms(second.totalMs).padStart(7)}`);
    const file = writeBenchJson('gpu-runtime', {
      benchmark: 'gpu-runtime',
      device: gpu.device.name,
      arch: gpu.arch,
      driverVersion: runtime.driverVersion,
      nvrtcVersion: runtime.nvrtcVersion,
      n: N,
      blockSizes: BLOCK_SIZES,
      warmup: WARMUP,
      iterations: ITERATIONS,
      verification: 'on the GPU: count of elements where c != a + b exactly, c poisoned with NaN first',
      setup: { workerStartMs: openMs, buffersAndInputsMs: setupMs - openMs },
      runs: [first, second],
      best: { blockSize: best.blockSize, medianMs: best.stats.medianMs, GBps: bestGBps },
      copy: { kernel: copy.kernel, memcpy: copy.memcpy, ratio: copy.ratio, bufferBytes: copy.bufferBytes },
      bestOfCopy: bestGBps / copyGBps,
      reference: REFERENCE,
    });
    if (file) console.log(`\nwrote ${file}`);
  } finally {
    await gpu.dispose();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
