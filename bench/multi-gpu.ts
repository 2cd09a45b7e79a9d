// Issue 11's benchmark: brute force on one GPU and on every GPU of the host (of the first GPU's model), in the same call,
// on two spaces:
//  1. examples/matmul_tiled: 4096², Kernel Tuner's 44-configuration matmul space (GPU-bound: ~4 ms a launch);
//  2. examples/stencil_2d widened to 592 configurations on a 16384² grid (block 16..1024 x 1..32, 1..8 rows per
//     thread, shared memory or not): compiles and timings weigh about the same.
// For each space it reports the wall time of TunableKernel.tune on 1 GPU and on all, the speed-up, how many
// configurations each GPU timed, and whether both runs found the same best configuration (or one within 1% of it in
// the other run: a tie in the noise). With several GPUs a third run times 1 GPU with as many compiles running ahead as
// the all-GPU run had, to tell the GPUs' share of the speed-up from the compilers'. On a host with one GPU it runs
// 1 against 1: the figures then show that the single-GPU path has not changed.
//   node dist/bench/multi-gpu.js        (JSON also to $OUT/bench-multi-gpu.json when OUT is set)
// Before anything is timed, every GPU's worker is started and tunes a few configurations of the first space (its CUDA
// context, NVRTC and this process's JIT are warm for every measured run).
import * as path from 'node:path';
import { loadSpec, type LoadedSpec } from '../examples/load';
import type { TuningBackend } from '../src/tuner/run/backend';
import type { GpuBackend } from '../src/tuner/run/gpu-backend';
import { defaultCompileConcurrency } from '../src/tuner/run/compile-concurrency';
import type { TuneOptions } from '../src/tuner/tunable-kernel';
import { loadTuningSpec, tuningJob } from '../src/tuner/spec/tuning-spec';
import type { Config, ConfigResult, TuneResult } from '../src/tuner/types';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import { openGpusOfFirstModel } from '../test/support/gpus';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const examplesDir = path.join(root, 'examples');
/** A best configuration found by one run counts as the same when the other run timed it within this of its own best. */
const TIE = 0.01;

interface RunReport {
  label: string;
  gpus: number[];
  compileConcurrency: number;
  wallMs: number;
  searchMs: number;
  /** Summed over the configurations: compiles run ahead overlap the timing, so these exceed the search time. */
  compileMs: number;
  benchmarkMs: number;
  statuses: Record<string, number>;
  /** Configurations each GPU verified and timed, by ordinal. */
  perGpu: Record<string, number>;
  best: { config: Config; timeMs: number } | undefined;
}

interface SpaceReport {
  name: string;
  configurations: number;
  device: string;
  one: RunReport;
  all: RunReport;
  /** 1 GPU with the all-GPU run's compile concurrency (only with several GPUs). */
  oneSameCompiles?: RunReport;
  speedup: number;
  bestSame: 'same' | 'tie within 1%' | 'different';
}

/** Two configurations per GPU, unmeasured: every worker's CUDA context and NVRTC, and this process, warm up. */
async function warmUp(job: LoadedSpec, gpus: readonly GpuBackend[]): Promise<void> {
  await job.kernel.tune(job.test, job.tuneParams, job.restrictions, { ...job.options, strategy: 'brute_force', backend: gpus, maxFevals: 2 * gpus.length });
}

async function tuneOn(job: LoadedSpec, label: string, backends: readonly TuningBackend[], extra: Partial<TuneOptions> = {}): Promise<{ report: RunReport; result: TuneResult }> {
  const started = performance.now();
  const result = await job.kernel.tune(job.test, job.tuneParams, job.restrictions, { ...job.options, strategy: 'brute_force', backend: backends, ...extra });
  const wallMs = performance.now() - started;
  const sum = (f: (t: NonNullable<ConfigResult['timings']>) => number) => result.results.reduce((s, r) => s + (r.timings ? f(r.timings) : 0), 0);
  const statuses: Record<string, number> = {};
  const perGpu: Record<string, number> = {};
  for (const r of result.results) {
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if (r.gpu && r.stats) perGpu[r.gpu.ordinal] = (perGpu[r.gpu.ordinal] ?? 0) + 1;
  }
  return {
    result,
    report: {
      label,
      gpus: (result.gpus ?? []).map((g) => g.ordinal),
      compileConcurrency: extra.compileConcurrency ?? defaultCompileConcurrency(backends.length),
      wallMs,
      searchMs: result.elapsedMs,
      compileMs: sum((t) => t.compileMs),
      benchmarkMs: sum((t) => t.benchmarkMs),
      statuses,
      perGpu,
      best: result.best && { config: result.best.config, timeMs: result.best.timeMs! },
    },
  };
}

/** Whether two runs agree on the best configuration, or each one's best is within 1% of the other's in its own run. */
function sameBest(a: TuneResult, b: TuneResult): SpaceReport['bestSame'] {
  if (!a.best || !b.best) return 'different';
  if (a.best.key === b.best.key) return 'same';
  const timeIn = (r: TuneResult, key: string) => r.results.find((x) => x.key === key && x.status === 'ok')?.timeMs;
  const bInA = timeIn(a, b.best.key);
  const aInB = timeIn(b, a.best.key);
  const tie = bInA !== undefined && aInB !== undefined && bInA <= a.best.timeMs! * (1 + TIE) && aInB <= b.best.timeMs! * (1 + TIE);
  return tie ? 'tie within 1%' : 'different';
}

async function benchmarkSpace(name: string, job: LoadedSpec, gpus: readonly GpuBackend[]): Promise<SpaceReport> {
  const one = await tuneOn(job, '1 GPU', gpus.slice(0, 1));
  const all = await tuneOn(job, `${gpus.length} GPU${gpus.length > 1 ? 's' : ''}`, gpus);
  const oneSameCompiles =
    gpus.length > 1 ? (await tuneOn(job, `1 GPU, ${all.report.compileConcurrency} compiles ahead`, gpus.slice(0, 1), { compileConcurrency: all.report.compileConcurrency })).report : undefined;
  return {
    name,
    configurations: one.result.results.length,
    device: (await gpus[0]!.describe()).name,
    one: one.report,
    all: all.report,
    ...(oneSameCompiles && { oneSameCompiles }),
    speedup: one.report.wallMs / all.report.wallMs,
    bestSame: sameBest(one.result, all.result),
  };
}

/** examples/stencil_2d on a 16384² grid over 592 configurations. */
async function largeStencil(): Promise<LoadedSpec> {
  const spec = loadTuningSpec(path.join(examplesDir, 'stencil_2d', 'tune.yaml'));
  const n = { dtype: 'int32' as const, value: 16384 };
  return tuningJob({
    ...spec,
    arguments: { ...spec.arguments, nx: n, ny: n },
    tuneParams: {
      block_size_x: [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024],
      block_size_y: [1, 2, 4, 8, 16, 32],
      tile_size_y: [1, 2, 3, 4, 5, 6, 7, 8],
      use_shared: [0, 1],
    },
    // The staged tile with its halo must fit the 48 KiB of static shared memory.
    restrictions: ['block_size_x*block_size_y>=64', 'block_size_x*block_size_y<=1024', 'use_shared==0 or (block_size_y*tile_size_y+2)*(block_size_x+2)*4<=49152'],
  });
}

const s = (msValue: number): string => `${(msValue / 1000).toFixed(2)} s`;

function print(r: SpaceReport): void {
  console.log(`\n== ${r.name} on ${r.device}: ${r.configurations} configurations, brute force`);
  console.log('  run                           wall      search    compile (sum)  benchmark (sum)  configurations per GPU        best');
  for (const run of [r.one, r.all, ...(r.oneSameCompiles ? [r.oneSameCompiles] : [])]) {
    const per = Object.entries(run.perGpu).map(([g, n]) => `${g}: ${n}`).join(', ');
    const best = run.best ? `${JSON.stringify(run.best.config)} ${run.best.timeMs.toFixed(4)} ms` : 'none';
    console.log(`  ${run.label.padEnd(28)} ${s(run.wallMs).padStart(8)}  ${s(run.searchMs).padStart(8)}  ${s(run.compileMs).padStart(13)}  ${s(run.benchmarkMs).padStart(15)}  ${per.padEnd(28)}  ${best}`);
  }
  console.log(`  speed-up ${r.all.label} over 1 GPU: ${r.speedup.toFixed(2)}x; best configuration: ${r.bestSame}`);
}

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const gpus = await openGpusOfFirstModel();
  try {
    const matmul = await loadSpec(path.join(examplesDir, 'matmul_tiled', 'tune.yaml'));
    await warmUp(matmul, gpus);
    console.log(`GPUs: ${gpus.map((g) => `${g.gpu.device.ordinal} (${g.gpu.device.name})`).join(', ')}`);
    const reports = [
      await benchmarkSpace('tiled matmul (examples/matmul_tiled)', matmul, gpus),
      await benchmarkSpace('stencil 16384² (examples/stencil_2d, widened)', await largeStencil(), gpus),
    ];
    for (const r of reports) print(r);
    const file = writeBenchJson('multi-gpu', { benchmark: 'multi-gpu', gpus: gpus.map((g) => ({ ordinal: g.gpu.device.ordinal, name: g.gpu.device.name })), spaces: reports });
    if (file) console.log(`\nwrote ${file}`);
  } finally {
    await Promise.all(gpus.map((g) => g.dispose()));
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
