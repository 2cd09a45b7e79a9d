// Issue 15 item 8's benchmark: a search whose compiles dominate. The benchmark hub's convolution kernel
// (test/fixtures/benchmark-hub/kernels/convolution_milo.cu: 15 x 15 filter loops unrolled, over a second of NVRTC a
// configuration), tuned over the hub's space and restrictions with random_sample (30 configurations by default), every
// configuration checked against the file's convolution_naive. The filter reaches convolution_kernel as its `filter`
// argument instead of `__constant__ d_filter` (the only change to the file, made in a copy), so that both tuners run the
// same source without constant memory.
//   node dist/bench/compile-throughput.js [--configs N] [--seed S] [--alone M|all] [--kt [--python PYTHON] [--kt-vendor DIR]]
//   node dist/bench/compile-throughput.js --compile-only [--levels 1,2,4,8,16] [--configs N]      (no GPU needed)
// With a GPU it reports the host's cores, the compile concurrency, the mean compile time of one configuration compiled
// alone (every evaluated configuration, or the first M, one after another in one compile process after the search), the
// slowest of those alone plus its GPU time (no schedule ends sooner), the GPU time (load, checks and timed launches of
// every configuration), the bound configurations x mean compile / cores + GPU time, and the
// wall time of the whole tune (a fresh GPU worker and compile pool, as a new process has them) with its ratio to the
// bound. With --kt, Kernel Tuner (bench/kernel_tuner/measure.py, its own process, cupy's compile cache emptied) tunes
// the very configurations ours evaluated, in the same call.
// --compile-only compiles N sampled configurations at each concurrency of --levels and reports the speed-up over one
// at a time: NVRTC in compile processes (one compile each: the compile pool) and in one process's threads (where the
// addon loads NVRTC), else nvcc processes. JSON also to $OUT/bench-compile-throughput.json when OUT is set.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { loadSpec, type LoadedSpec } from '../examples/load';
import { CompilePool, compileInWorker, GpuWorker, NvccCompiler, type ProgramInit } from '../src/gpu';
import { defaultCompileConcurrency } from '../src/tuner/run/compile-concurrency';
import { GpuBackend } from '../src/tuner/run/gpu-backend';
import { singleGpu } from '../src/tuner/run/gpu-selection';
import { defines, Geometry } from '../src/tuner/space/geometry';
import { Random } from '../src/tuner/space/random';
import { SearchSpace } from '../src/tuner/space/search-space';
import type { Config, ConfigResult } from '../src/tuner/types';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const HUB_KERNEL = path.join(root, 'test', 'fixtures', 'benchmark-hub', 'kernels', 'convolution_milo.cu');
const FILTER = 15;
const IMAGE = 4096;

/** The hub's space and restrictions (kernels/convolution_milo.py, the T1 file's parameters). */
const TUNE_PARAMS = {
  block_size_x: Array.from({ length: 16 }, (_, i) => 16 * (i + 1)),
  block_size_y: [1, 2, 4, 8, 16],
  tile_size_x: [1, 2, 3, 4],
  tile_size_y: [1, 2, 3, 4],
  read_only: [0, 1],
  use_padding: [0, 1],
  use_shmem: [0, 1],
  use_cmem: [1],
  filter_height: [FILTER],
  filter_width: [FILTER],
};
const RESTRICTIONS = [
  'use_padding==0 or block_size_x % 32 != 0',
  'block_size_x*block_size_y<=1024',
  'use_padding==0 or use_shmem != 0',
  'use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024',
];

/** The hub's file with the filter read from the kernel's `filter` argument instead of its constant memory copy. */
function kernelWithFilterArgument(): string {
  const hub = readFileSync(HUB_KERNEL, 'utf8');
  const out = hub.replace(/^__constant__ float d_filter\[[^\]]*\];.*$/m, '').replace('d_filter[i*filter_width+j]', 'filter[i*filter_width+j]');
  if (out.includes('d_filter')) throw new Error(`${HUB_KERNEL} changed: it still reads d_filter after the rewrite`);
  return out;
}

/** The case as a spec file, as a user would write it (the hub's spec of the formats work, without constant memory). */
function writeCase(dir: string): { specPath: string; kernelPath: string } {
  const kernelPath = path.join(dir, 'convolution_filter_argument.cu');
  writeFileSync(kernelPath, kernelWithFilterArgument());
  const spec = {
    file: path.basename(kernelPath),
    kernel: 'convolution_kernel',
    arguments: {
      output: { dtype: 'float32', length: `${IMAGE}*${IMAGE}`, output: true },
      input: { dtype: 'float32', length: `(${IMAGE} + ${FILTER} - 1) * (${IMAGE} + ${FILTER} - 1)`, random: { kind: 'normal', mean: 0, std: 1 } },
      filter: { dtype: 'float32', length: `${FILTER}*${FILTER}`, random: { kind: 'normal', mean: 0, std: 1 } },
    },
    problemSize: [IMAGE, IMAGE],
    tuneParams: TUNE_PARAMS,
    restrictions: RESTRICTIONS,
    gridDivX: ['block_size_x', 'tile_size_x'],
    gridDivY: ['block_size_y', 'tile_size_y'],
    reference: { file: path.basename(kernelPath), kernel: 'convolution_naive' },
    referenceConfig: { block_size_x: 16, block_size_y: 16, tile_size_x: 1, tile_size_y: 1, read_only: 0, use_padding: 0, use_shmem: 0, use_cmem: 1, filter_height: FILTER, filter_width: FILTER },
  };
  const specPath = path.join(dir, 'convolution_filter_argument.json');
  writeFileSync(specPath, JSON.stringify(spec, null, 2));
  return { specPath, kernelPath };
}

/** The program the tuner gives NVRTC for a configuration: the file (no host code, no includes) with its defines. */
function programOf(source: string, geometry: Geometry, config: Config): ProgramInit {
  const launch = geometry.launch(config, {});
  return { source, fileName: 'convolution_filter_argument.cu', nameExpressions: ['convolution_kernel'], defines: defines(config, launch) };
}

function sample(count: number, seed: number): Config[] {
  const space = new SearchSpace(TUNE_PARAMS, RESTRICTIONS);
  return space.sample(Math.min(count, space.size), new Random(seed)).map((i) => space.config(i));
}

const caseGeometry = () => new Geometry({ problemSize: [IMAGE, IMAGE], gridDivX: ['block_size_x', 'tile_size_x'], gridDivY: ['block_size_y', 'tile_size_y'] }, { paramNames: Object.keys(TUNE_PARAMS) });

/** Runs `work` on every item, at most `limit` at once: the wall time in ms, and the failures (a failed compile costs its time too). */
async function timedAtMost<T>(items: readonly T[], limit: number, work: (item: T) => Promise<unknown>): Promise<{ ms: number; failures: string[] }> {
  const started = performance.now();
  const failures: string[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!).catch((e: unknown) => failures.push(e instanceof Error ? e.message.split('\n')[0]! : String(e)));
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return { ms: performance.now() - started, failures };
}

interface ScalingRow {
  compiler: string;
  concurrency: number;
  wallMs: number;
  speedUp: number;
  /** Compiles that failed (a fast failure makes a level look faster than it is: the row says so). */
  failed: number;
}

async function compileScaling(configs: Config[], levels: number[], arch: string): Promise<ScalingRow[]> {
  const source = kernelWithFilterArgument();
  const geometry = caseGeometry();
  const programs = configs.map((c) => programOf(source, geometry, c));
  const probe = new GpuWorker({ compileOnly: true });
  const nvrtc = await probe.start().then(
    (ready) => ready.status.nvrtc.loaded,
    () => false,
  );
  await probe.dispose();
  const rows: ScalingRow[] = [];
  const add = (compiler: string, concurrency: number, { ms: wallMs, failures }: { ms: number; failures: string[] }) => {
    const one = rows.find((r) => r.compiler === compiler && r.concurrency === 1)?.wallMs ?? wallMs;
    rows.push({ compiler, concurrency, wallMs, speedUp: one / wallMs, failed: failures.length });
    const failed = failures.length > 0 ? `; ${failures.length} of ${configs.length} failed, first: ${failures[0]}` : '';
    console.log(`  ${compiler.padEnd(34)} ${String(concurrency).padStart(3)} at once: ${(wallMs / 1000).toFixed(2).padStart(7)} s  (${(one / wallMs).toFixed(2)}x)${failed}`);
  };
  for (const level of levels) {
    if (nvrtc) {
      const pool = new CompilePool({ size: level });
      // Started (and NVRTC loaded) before the clock starts: a run's pool is warm after its first compiles.
      await Promise.all(Array.from({ length: level }, () => pool.compile({ source: '__global__ void warm() {}', nameExpressions: ['warm'] }, arch)));
      add('NVRTC, processes (compile pool)', level, await timedAtMost(programs, level, (p) => pool.compile(p, arch)));
      await pool.dispose();
      const threads = new GpuWorker({ compileOnly: true, env: { UV_THREADPOOL_SIZE: String(level) } });
      await compileInWorker(threads, { source: '__global__ void warm() {}', nameExpressions: ['warm'] }, arch);
      add('NVRTC, threads of one process', level, await timedAtMost(programs, level, (p) => compileInWorker(threads, p, arch)));
      await threads.dispose();
    } else {
      const nvcc = new NvccCompiler({ defaultArch: arch });
      add('nvcc processes', level, await timedAtMost(programs, level, (p) => nvcc.compile(p)));
    }
  }
  return rows;
}

interface KernelTunerFigures {
  wall_s: number;
  configurations: number;
  timed: number;
  mean_compile_ms: number;
  best: Config;
  best_ms: number;
  device: string;
  kernel_tuner: string;
}

/** Kernel Tuner over the same configurations, in its own process (bench/kernel_tuner/measure.py's convolution case). */
function kernelTuner(python: string, vendor: string | undefined, kernelPath: string, configs: Config[], dir: string): KernelTunerFigures | { error: string } {
  const configsPath = path.join(dir, 'configurations.json');
  writeFileSync(configsPath, JSON.stringify({ kernel_file: kernelPath, tune_params: TUNE_PARAMS, configurations: configs }));
  const out = path.join(dir, 'kernel-tuner.json');
  const child = spawnSync(python, [path.join(root, 'bench', 'kernel_tuner', 'measure.py'), '--cases', 'convolution', '--configs', configsPath, '--out', out, ...(vendor ? ['--vendor', vendor] : [])], { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] });
  if (child.status !== 0) return { error: (child.stderr || child.error?.message || `exit ${child.status}`).trim() };
  return (JSON.parse(readFileSync(out, 'utf8')) as { convolution: KernelTunerFigures }).convolution;
}

/** Compiles `configs` one after another in a compile process of their own: what each compile costs with the host idle (ms). */
async function compileTimesAlone(configs: Config[], arch: string): Promise<number[]> {
  const source = kernelWithFilterArgument();
  const geometry = caseGeometry();
  const pool = new CompilePool({ size: 1 });
  try {
    await pool.compile({ source: '__global__ void warm() {}', nameExpressions: ['warm'] }, arch);
    const times: number[] = [];
    for (const c of configs) {
      const started = performance.now();
      // A failure here would make the bound meaningless (a failed compile returns at once): it stops the benchmark.
      await pool.compile(programOf(source, geometry, c), arch);
      times.push(performance.now() - started);
    }
    return times;
  } finally {
    await pool.dispose();
  }
}

/** When the compiles ran: first start, last end, the mean number in flight, and in flight per second of the run. */
function describeTimeline(spans: readonly { start: number; end: number }[], wallMs: number): string {
  if (spans.length === 0) return 'no compile';
  const seconds = Math.ceil(wallMs / 1000);
  const perSecond = Array.from({ length: seconds }, (_, i) => spans.reduce((n, s) => n + Math.max(0, Math.min(s.end, (i + 1) * 1000) - Math.max(s.start, i * 1000)), 0) / 1000);
  const busy = spans.reduce((n, s) => n + (Math.min(s.end, wallMs) - s.start), 0);
  const longest = spans.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a));
  return `${spans.length} compiles, the longest ${((longest.end - longest.start) / 1000).toFixed(2)} s (from ${(longest.start / 1000).toFixed(2)} s), first started at ${(spans[0]!.start / 1000).toFixed(2)} s, last ended at ${(Math.max(...spans.map((s) => s.end)) / 1000).toFixed(2)} s, ${(busy / wallMs).toFixed(1)} in flight on average; per second: ${perSecond.map((n) => n.toFixed(1)).join(' ')}`;
}

const sum = (results: ConfigResult[], f: (t: NonNullable<ConfigResult['timings']>) => number) => results.reduce((s, r) => s + (r.timings ? f(r.timings) : 0), 0);
/** A configuration's time on the GPU: module load, checks and timed launches. */
const gpuTime = (t: NonNullable<ConfigResult['timings']>) => t.loadMs + t.verifyMs + t.benchmarkMs;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      configs: { type: 'string', default: '30' },
      seed: { type: 'string', default: '1' },
      alone: { type: 'string', default: 'all' },
      kt: { type: 'boolean', default: false },
      python: { type: 'string', default: 'python3' },
      /** Kernel Tuner's sources (measure.py --vendor), where the Python has no kernel_tuner installed. */
      'kt-vendor': { type: 'string' },
      /** The compiles run ahead (the tuner's compileConcurrency) and the compile processes, where not the defaults. */
      ahead: { type: 'string' },
      pool: { type: 'string' },
      'compile-only': { type: 'boolean', default: false },
      levels: { type: 'string' },
      arch: { type: 'string', default: 'sm_90' },
    },
  });
  const count = Number(values.configs);
  const seed = Number(values.seed);
  const cores = availableParallelism();
  if (values['compile-only']) {
    const levels = (values.levels ?? [1, 2, 4, 8, 16].filter((l) => l <= cores).join(',')).split(',').map(Number);
    console.log(`compile throughput: ${count} configurations of the hub's convolution kernel (${values.arch}), ${cores} cores`);
    const rows = await compileScaling(sample(count, seed), levels, values.arch);
    writeBenchJson('compile-throughput', { mode: 'compile-only', cores, configurations: count, arch: values.arch, rows });
    return;
  }
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip}); --compile-only measures the compilers alone`);
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'lkt-compile-throughput-'));
  try {
    const { specPath, kernelPath } = writeCase(dir);
    const job: LoadedSpec = await loadSpec(specPath);
    const compileConcurrency = values.ahead === undefined ? defaultCompileConcurrency(1) : Number(values.ahead);
    const poolSize = values.pool === undefined ? cores : Number(values.pool);

    const started = performance.now();
    const compilePool = new CompilePool({ size: poolSize });
    const [backend] = await GpuBackend.openAll(singleGpu(0), { compilePool });
    // Each compile's start and end (ms since the run started): how full the pipeline kept the compile processes.
    const spans: { start: number; end: number }[] = [];
    const compile = backend!.compile.bind(backend!);
    backend!.compile = async (request, signal) => {
      const span = { start: performance.now() - started, end: Infinity };
      spans.push(span);
      try {
        return await compile(request, signal);
      } finally {
        span.end = performance.now() - started;
      }
    };
    const resultTimes: number[] = [];
    let result;
    let arch: string;
    try {
      arch = backend!.gpu.arch;
      result = await job.kernel.tune(job.test, job.tuneParams, job.restrictions, { ...job.options, backend: backend!, compileConcurrency, strategy: 'random_sample', maxFevals: count, seed, onResult: () => resultTimes.push(performance.now() - started) });
    } finally {
      await backend!.dispose();
      await compilePool.dispose();
    }
    const wallMs = performance.now() - started;
    const device = (result.gpus ?? [])[0];
    // Every configuration that was compiled costs its compile, also those the device then cannot launch (too many
    // registers for their block); those over the limits before compiling (threads, shared memory) cost none.
    const evaluated = result.results.filter((r) => (r.timings?.compileMs ?? 0) > 0);
    const aloneCount = values.alone === 'all' ? evaluated.length : Number(values.alone);
    const aloneTimes = await compileTimesAlone(evaluated.slice(0, aloneCount).map((r) => r.config), arch);
    const aloneMs = aloneTimes.reduce((a, b) => a + b, 0) / aloneTimes.length;
    const slowestAlone = aloneTimes.indexOf(Math.max(...aloneTimes));
    const gpuMs = sum(evaluated, gpuTime);
    const boundMs = (evaluated.length * aloneMs) / cores + gpuMs;
    // No schedule ends before the slowest configuration has compiled (alone, at best) and then run on the GPU.
    const criticalPathMs = aloneTimes[slowestAlone]! + gpuTime(evaluated[slowestAlone]!.timings!);
    const statuses: Record<string, number> = {};
    for (const r of result.results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    const ours = {
      cores,
      compileConcurrency,
      poolSize,
      configurations: evaluated.length,
      meanCompileAloneMs: aloneMs,
      compileAloneMs: aloneTimes,
      slowestCompileAlone: { config: evaluated[slowestAlone]!.config, ms: aloneTimes[slowestAlone]!, inSearchMs: evaluated[slowestAlone]!.timings!.compileMs },
      criticalPathMs,
      meanCompileInSearchMs: sum(evaluated, (t) => t.compileMs) / evaluated.length,
      gpuMs,
      boundMs,
      wallMs,
      searchMs: result.elapsedMs,
      ratioToBound: wallMs / boundMs,
      statuses,
      best: result.best && { config: result.best.config, timeMs: result.best.timeMs },
    };
    console.log(`compile-bound search: the hub's convolution kernel, ${evaluated.length} random configurations (seed ${seed}) on ${device ? `GPU ${device.ordinal}` : 'the GPU'}`);
    console.log(`  cores ${cores}, compile concurrency ${compileConcurrency} ahead (+1 for the configuration the GPU waits for), pool of ${poolSize} processes`);
    console.log(`  mean compile alone ${(aloneMs / 1000).toFixed(3)} s (${aloneTimes.length} compiled one after another); in the search ${(ours.meanCompileInSearchMs / 1000).toFixed(3)} s`);
    console.log(`  compiles alone (s): ${aloneTimes.map((t) => (t / 1000).toFixed(2)).join(' ')}; in the search (s): ${evaluated.slice(0, aloneTimes.length).map((r) => (r.timings!.compileMs / 1000).toFixed(2)).join(' ')}`);
    console.log(`  slowest alone ${(aloneTimes[slowestAlone]! / 1000).toFixed(2)} s (${JSON.stringify(evaluated[slowestAlone]!.config)}): no schedule ends before ${(criticalPathMs / 1000).toFixed(2)} s (it, then its GPU time)`);
    console.log(`  GPU time ${(gpuMs / 1000).toFixed(2)} s; bound ${evaluated.length} x ${(aloneMs / 1000).toFixed(3)} s / ${cores} + GPU = ${(boundMs / 1000).toFixed(2)} s`);
    console.log(`  ours: ${(wallMs / 1000).toFixed(2)} s wall (search ${(result.elapsedMs / 1000).toFixed(2)} s) = ${ours.ratioToBound.toFixed(2)}x the bound (goal <= 1.5); ${Object.entries(statuses).map(([k, v]) => `${v} ${k}`).join(', ')}`);
    console.log(`  compile timeline: ${describeTimeline(spans, wallMs)}`);
    console.log(`  results at (s): ${resultTimes.map((t) => (t / 1000).toFixed(1)).join(' ')}`);
    let kt: KernelTunerFigures | { error: string } | undefined;
    if (values.kt) {
      kt = kernelTuner(values.python, values['kt-vendor'], kernelPath, evaluated.map((r) => r.config), dir);
      if ('error' in kt) console.log(`  Kernel Tuner did not run: ${kt.error}`);
      else console.log(`  Kernel Tuner ${kt.kernel_tuner}: ${kt.wall_s.toFixed(2)} s wall, mean compile ${(kt.mean_compile_ms / 1000).toFixed(3)} s, ${kt.timed} of ${kt.configurations} timed: ours is ${(kt.wall_s / (wallMs / 1000)).toFixed(1)}x faster (goal >= 8)`);
    }
    const file = writeBenchJson('compile-throughput', { mode: 'search', seed, ours, ...(kt && { kernelTuner: kt }) });
    if (file) console.log(`wrote ${file}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
