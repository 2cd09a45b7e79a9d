// Issue 3's benchmark: TunableKernel.tune end to end, with verification, against Kernel Tuner 1.4.0's figures (H200):
//  1. examples/vector_add: 2^26 floats, block sizes 64..1024, 32 timed launches each (Kernel Tuner: 5.55 s; target 0.35 s);
//  2. examples/matmul_tiled: 4096², the 44 configurations of Kernel Tuner's matmul example (4 over the device's limits), 32 timed launches each
//     (Kernel Tuner: 13.97 s, best 3.87 ms = 35.5 TFLOP/s; target: 0.6 of its time, a best as fast).
//   node dist/bench/tuner.js        (JSON also to $OUT/bench-tuner.json when OUT is set)
// Each benchmark opens a fresh GPU worker, then tunes twice: "first" (cold: a new worker's CUDA context, its first NVRTC
// compiles, the helper kernels loaded from the disk cache or compiled) and "second" (warm). The breakdown comes from a
// backend wrapper that times the preparation (oracle compile, test data generation and oracle runs) and from the
// per-configuration timings of the results (compile, load, verify, benchmark, framework).
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadExample, type LoadedSpec } from '../examples/load';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import type { BuildRequest, BuiltKernel, CompiledKernel, DeviceDescription, DeviceRunOptions, Launch, OutputComparison, PreparedTest, TestData, TimedLaunches, TimedLaunchOptions, Tolerance, TuningBackend } from '../src/tuner/run/backend';
import { GpuBackend } from '../src/tuner/run/gpu-backend';
import { describeLaunchCount, resolveLaunchCount } from '../src/tuner/run/launch-count';
import type { ConfigResult, TuneResult } from '../src/tuner/types';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const examplesDir = path.join(root, 'examples');
/** Where GpuBackend keeps compiled helper kernels between sessions (its default). */
const HELPER_CACHE_DIR = path.join(tmpdir(), 'llm-kernel-tuner');


/** Forwards to the GpuBackend and times what a tune() does before its search: the oracle's compile and load, and prepare(). */
class TimedBackend implements TuningBackend {
  times = { describeMs: 0, oracleBuildMs: 0, prepareMs: 0 };
  private prepared = false;
  constructor(private readonly inner: GpuBackend) {}

  reset(): void {
    this.times = { describeMs: 0, oracleBuildMs: 0, prepareMs: 0 };
    this.prepared = false;
  }
  async describe(): Promise<DeviceDescription> {
    const t = performance.now();
    const d = await this.inner.describe();
    this.times.describeMs += performance.now() - t;
    return d;
  }
  compile(request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel> {
    return this.timedUntilPrepared(() => this.inner.compile(request, signal));
  }
  load(kernel: CompiledKernel): Promise<BuiltKernel> {
    return this.timedUntilPrepared(() => this.inner.load(kernel));
  }
  /** Before prepare() a compile or load is the oracle's; afterwards the configurations' (timed by the evaluator). */
  private async timedUntilPrepared<T>(step: () => Promise<T>): Promise<T> {
    if (this.prepared) return step();
    const t = performance.now();
    const out = await step();
    this.times.oracleBuildMs += performance.now() - t;
    return out;
  }
  async prepare(data: TestData, oracle: { kernel: BuiltKernel; launch: Launch }, options: { tolerance?: Partial<Tolerance>; timeoutMs: number }): Promise<PreparedTest> {
    const t = performance.now();
    const p = await this.inner.prepare(data, oracle, options);
    this.times.prepareMs += performance.now() - t;
    this.prepared = true;
    return p;
  }
  resetOutputs(prepared: PreparedTest, inputSet: number): Promise<void> {
    return this.inner.resetOutputs(prepared, inputSet);
  }
  check(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: DeviceRunOptions): Promise<{ timeMs: number; comparison: OutputComparison }> {
    return this.inner.check(kernel, launch, prepared, inputSet, options);
  }
  timedLaunches(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: TimedLaunchOptions): Promise<TimedLaunches> {
    return this.inner.timedLaunches(kernel, launch, prepared, inputSet, options);
  }
  compareOutputs(prepared: PreparedTest, inputSet: number): Promise<OutputComparison> {
    return this.inner.compareOutputs(prepared, inputSet);
  }
  dispose(): Promise<void> {
    return Promise.resolve(); // the benchmark disposes the GpuBackend itself
  }
}

interface RunReport {
  label: string;
  wallMs: number;
  breakdown: {
    parseMs: number;
    describeMs: number;
    oracleBuildMs: number;
    /** Test data generation on the device and the oracle's runs on both input sets (and, cold, the helper kernels). */
    prepareMs: number;
    /** The search loop (TuneResult.elapsedMs); the five sums below are its parts (compiles overlap it when run ahead). */
    searchMs: number;
    compileMs: number;
    loadMs: number;
    verifyMs: number;
    benchmarkMs: number;
    frameworkMs: number;
    /** Search space, cache, evaluator set-up and clean-up: the wall time not accounted for above. */
    otherMs: number;
  };
  statuses: Record<string, number>;
  best: { config: ConfigResult['config']; timeMs: number } | undefined;
}

async function tuneOnce(backend: TimedBackend, name: string, label: string): Promise<{ report: RunReport; loaded: LoadedSpec }> {
  backend.reset();
  const start = performance.now();
  const loaded = await loadExample(examplesDir, name);
  const parsed = performance.now();
  const result: TuneResult = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend });
  const wallMs = performance.now() - start;
  const sum = (f: (t: NonNullable<ConfigResult['timings']>) => number | undefined): number =>
    result.results.reduce((s, r) => s + (r.timings ? (f(r.timings) ?? 0) : 0), 0);
  const parseMs = parsed - start;
  const { describeMs, oracleBuildMs, prepareMs } = backend.times;
  const statuses: Record<string, number> = {};
  for (const r of result.results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  return {
    loaded,
    report: {
      label,
      wallMs,
      breakdown: {
        parseMs,
        describeMs,
        oracleBuildMs,
        prepareMs,
        searchMs: result.elapsedMs,
        compileMs: sum((t) => t.compileMs),
        loadMs: sum((t) => t.loadMs),
        verifyMs: sum((t) => t.verifyMs),
        benchmarkMs: sum((t) => t.benchmarkMs),
        frameworkMs: sum((t) => t.frameworkMs),
        otherMs: wallMs - parseMs - describeMs - oracleBuildMs - prepareMs - result.elapsedMs,
      },
      statuses,
      best: result.best && { config: result.best.config, timeMs: result.best.timeMs! },
    },
  };
}

interface BenchmarkReport {
  name: string;
  example: string;
  device: string;
  configurations: number;
  /** Timed launches per configuration, in words. */
  launches: string;
  helperKernelsCachedOnDisk: boolean;
  workerStartMs: number;
  runs: [RunReport, RunReport];
  /** Best time in the warm run, and its throughput (GB/s for vector add, TFLOP/s for matmul). */
  best: { config: ConfigResult['config']; timeMs: number; throughput: number; unit: string } | undefined;
  reference: Record<string, number>;
}

function helperKernelsCached(): boolean {
  return existsSync(HELPER_CACHE_DIR) && readdirSync(HELPER_CACHE_DIR).some((f) => /^helpers-.*\.json$/.test(f));
}

async function benchmark(
  name: string,
  example: string,
  reference: Record<string, number>,
  throughput: (loaded: LoadedSpec, timeMs: number) => { value: number; unit: string },
): Promise<BenchmarkReport> {
  const helperKernelsCachedOnDisk = helperKernelsCached();
  const t = performance.now();
  const gpu = await GpuBackend.open();
  const workerStartMs = performance.now() - t;
  try {
    const backend = new TimedBackend(gpu);
    const first = await tuneOnce(backend, example, 'first (cold: fresh worker)');
    const second = await tuneOnce(backend, example, 'second (warm)');
    const best = second.report.best;
    const tp = best && throughput(second.loaded, best.timeMs);
    return {
      name,
      example,
      device: (await gpu.describe()).name,
      configurations: Object.values(second.report.statuses).reduce((a, b) => a + b, 0),
      launches: describeLaunchCount(resolveLaunchCount(second.loaded.options.iterations)),
      helperKernelsCachedOnDisk,
      workerStartMs,
      runs: [first.report, second.report],
      best: best && tp && { ...best, throughput: tp.value, unit: tp.unit },
      reference,
    };
  } finally {
    await gpu.dispose();
  }
}

/** The value of a scalar argument of the spec (the problem size of these examples). */
function scalarValue(loaded: LoadedSpec, name: string): number {
  const arg = loaded.spec.arguments[name];
  if (!arg || !('value' in arg) || typeof arg.value !== 'number') throw new Error(`the spec has no numeric scalar '${name}'`);
  return arg.value;
}

const s = (msValue: number): string => (msValue / 1000).toFixed(3);
const msText = (x: number): string => x.toFixed(1);

function print(b: BenchmarkReport): void {
  const [first, second] = b.runs;
  console.log(`\n== ${b.name} on ${b.device}: examples/${b.example}, ${b.configurations} configurations, each ${b.launches}`);
  console.log(`worker start ${msText(b.workerStartMs)} ms (not in the runs); helper kernels cached on disk before the first run: ${b.helperKernelsCachedOnDisk ? 'yes' : 'no'}`);
  console.log(`statuses: ${Object.entries(second.statuses).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log('  phase (ms)                    first     second');
  for (const key of Object.keys(first.breakdown) as (keyof RunReport['breakdown'])[]) {
    const indent = ['compileMs', 'loadMs', 'verifyMs', 'benchmarkMs', 'frameworkMs'].includes(key) ? '    ' : '  ';
    const label = `${indent}${key.replace(/Ms$/, '')}`;
    console.log(`${label.padEnd(28)} ${msText(first.breakdown[key]).padStart(9)}  ${msText(second.breakdown[key]).padStart(9)}`);
  }
  console.log(`  ${'wall'.padEnd(26)} ${msText(first.wallMs).padStart(9)}  ${msText(second.wallMs).padStart(9)}`);
  if (b.best) console.log(`best (second run): ${JSON.stringify(b.best.config)}: ${b.best.timeMs.toFixed(4)} ms = ${b.best.throughput.toFixed(1)} ${b.best.unit}`);
}

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const vectorAdd = await benchmark('vector add', 'vector_add', { kernelTunerS: 5.55, targetS: 0.35 }, (loaded, t) => ({
    value: (12 * scalarValue(loaded, 'n')) / (t * 1e-3) / 1e9,
    unit: 'GB/s',
  }));
  const matmul = await benchmark('tiled matmul', 'matmul_tiled', { kernelTunerS: 13.97, kernelTunerBestMs: 3.87, kernelTunerTflops: 35.5, targetS: 0.6 * 13.97 }, (loaded, t) => ({
    value: (2 * scalarValue(loaded, 'n') ** 3) / (t * 1e-3) / 1e12,
    unit: 'TFLOP/s',
  }));
  const reports = [vectorAdd, matmul];
  for (const b of reports) print(b);

  console.log('\nbenchmark        first (cold)  second (warm)  Kernel Tuner 1.4.0  target     best             KT best');
  for (const b of reports) {
    const best = b.best ? `${b.best.timeMs.toFixed(3)} ms ${b.best.throughput.toFixed(1)} ${b.best.unit}` : 'none';
    const ktBest = b.reference.kernelTunerBestMs !== undefined ? `${b.reference.kernelTunerBestMs} ms ${b.reference.kernelTunerTflops} TFLOP/s` : '-';
    console.log(
      `${b.name.padEnd(16)} ${`${s(b.runs[0].wallMs)} s`.padStart(12)}  ${`${s(b.runs[1].wallMs)} s`.padStart(13)}  ${`${b.reference.kernelTunerS} s`.padStart(18)}  ${`<= ${b.reference.targetS!.toFixed(2)} s`.padEnd(9)}  ${best.padEnd(15)}  ${ktBest}`,
    );
  }

  const file = writeBenchJson('tuner', { benchmark: 'tuner', benchmarks: reports });
  if (file) console.log(`\nwrote ${file}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
