// Issue 26's benchmark: what the adaptive series saves and whether it ranks configurations as 32 launches do, and our
// times beside Kernel Tuner's where the kernels are the same. Kernel Tuner's side is bench/kernel_tuner/measure.py
// (--cases matmul,same_configs), run before in the same call; its JSON, given as the argument, is printed beside ours.
//  1. The tiled matmul space (examples/matmul_tiled: 44 configurations, 4 over the device's limits): cold, the command
//     line in a new process (`cli.js tune ... --json --no-report`); then on one GPU worker in this process the spec's
//     adaptive series twice ("warm": the second) and today's fixed 32 launches (the ranking's reference). For each: the
//     wall time, the summed benchmark time, the timed launches per configuration (mean, max; a configuration stopped
//     at its checks has none), the best configuration; the order of the 10 fastest and Kendall's tau over every
//     configuration both timed, adaptive against 32 launches.
//  2. Medians of the same configurations (bench/support/timing-cases.ts), each tuned ROUNDS times: as the tuner times
//     by default (verified, adaptive) and as Kernel Tuner times (`timing: kernel_tuner`, 32 launches); and on one loaded
//     module the worker's raw timing four ways, RAW_ROUNDS rounds in turn: back to back or each launch from an idle
//     GPU, with or without the outputs reset before each launch. Where the reset costs a kernel something, and
//     whether an idle GPU before each launch (Kernel Tuner's way) is what sets its figures apart.
//   node dist/bench/adaptive-timing.js [kernel-tuner.json]     (JSON also to $OUT/bench-adaptive-timing.json)
// The helper kernels' disk cache is left as it is: clear it (tmpdir/llm-kernel-tuner) before a cold run that should
// compile them.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadExample, type LoadedSpec } from '../examples/load';
import { median } from '../src/gpu/stats';
import type { TuningBackend } from '../src/tuner/run/backend';
import { GpuBackend, GpuBuiltKernel, GpuPreparedTest, outputResets } from '../src/tuner/run/gpu-backend';
import type { TuneOptions } from '../src/tuner/tunable-kernel';
import type { Config, ConfigResult, TuneResult } from '../src/tuner/types';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import { timingCases, type TimingCase } from './support/timing-cases';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const examplesDir = path.join(root, 'examples');
const cli = path.resolve(__dirname, '..', 'cli.js');
const ROUNDS = 3;
const RAW_ROUNDS = 5;
const RAW_LAUNCHES = 32;
const TOP = 10;

// ---------------------------------------------------------------- 1. the tiled matmul space

interface SpaceRun {
  label: string;
  wallMs: number;
  /** Summed over the configurations: timed series, checks, and compiles (which run ahead, side by side). */
  benchmarkMs: number;
  verifyMs: number;
  compileMs: number;
  statuses: Record<string, number>;
  /** Timed launches of the configurations that had a series; those stopped at their checks had none. */
  launches: { mean: number; max: number; series: number; stoppedAtChecks: number };
  best: { config: Config; timeMs: number } | undefined;
  /** Median time by configuration key, for every configuration with a time. */
  times: Record<string, number>;
}

function summarize(label: string, wallMs: number, results: readonly ConfigResult[], best: ConfigResult | undefined): SpaceRun {
  const statuses: Record<string, number> = {};
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const series = results.filter((r) => r.stats && (r.verified?.of ?? 0) > 0).map((r) => r.stats!.samplesMs.length);
  return {
    label,
    wallMs,
    benchmarkMs: results.reduce((s, r) => s + (r.timings?.benchmarkMs ?? 0), 0),
    verifyMs: results.reduce((s, r) => s + (r.timings?.verifyMs ?? 0), 0),
    compileMs: results.reduce((s, r) => s + (r.timings?.compileMs ?? 0), 0),
    statuses,
    launches: {
      mean: series.reduce((a, b) => a + b, 0) / Math.max(1, series.length),
      max: Math.max(0, ...series),
      series: series.length,
      stoppedAtChecks: results.filter((r) => r.status === 'stopped_early' && r.verified?.of === 0).length,
    },
    best: best?.timeMs === undefined ? undefined : { config: best.config, timeMs: best.timeMs },
    times: Object.fromEntries(results.filter((r) => r.timeMs !== undefined).map((r) => [r.key, r.timeMs!])),
  };
}

/** The command line in a new process: Node's start, the worker's, the CUDA context, every compile. */
function coldCommandLine(spec: string): SpaceRun {
  const started = performance.now();
  const child = spawnSync(process.execPath, [cli, 'tune', spec, '--json', '--no-report', '--quiet'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  const wallMs = performance.now() - started;
  if (child.status !== 0) throw new Error(`the cold command line failed (${child.status}):\n${child.stderr}`);
  const out = JSON.parse(child.stdout) as TuneResult;
  return summarize('cold: the command line, a new process', wallMs, out.results, out.best);
}

async function tuneSpace(backend: TuningBackend, loaded: LoadedSpec, label: string, options: TuneOptions = {}): Promise<SpaceRun> {
  const started = performance.now();
  const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend, ...options });
  return summarize(label, performance.now() - started, result.results, result.best);
}

/** Kendall's tau-a of two timings over the configurations both have: +1 the same order, -1 reversed. */
function kendallTau(a: Record<string, number>, b: Record<string, number>): { tau: number; configurations: number } {
  const keys = Object.keys(a).filter((k) => k in b);
  let concordant = 0;
  let discordant = 0;
  for (let i = 0; i < keys.length; i++) {
    for (let j = i + 1; j < keys.length; j++) {
      const s = (a[keys[i]!]! - a[keys[j]!]!) * (b[keys[i]!]! - b[keys[j]!]!);
      if (s > 0) concordant++;
      else if (s < 0) discordant++;
    }
  }
  const pairs = (keys.length * (keys.length - 1)) / 2;
  return { tau: pairs === 0 ? 1 : (concordant - discordant) / pairs, configurations: keys.length };
}

const fastest = (times: Record<string, number>, n: number): string[] =>
  Object.entries(times)
    .sort((x, y) => x[1] - y[1])
    .slice(0, n)
    .map(([k]) => k);

// ---------------------------------------------------------------- 2. the same configurations

/** The worker's raw timing of one loaded module, four ways: launches back to back or from an idle GPU, outputs reset or not. */
const RAW_VARIANTS = [
  { name: 'back to back', resets: false, idle: false },
  { name: 'back to back, reset before each (verified)', resets: true, idle: false },
  { name: 'idle GPU before each (Kernel Tuner)', resets: false, idle: true },
  { name: 'idle GPU before each, reset before each', resets: true, idle: true },
] as const;

interface CaseReport {
  name: string;
  config: Config;
  /** Median of the rounds' medians, and the timed launches of each round. */
  verified: { medianMs: number; launches: number[] };
  kernelTunerMode: { medianMs: number };
  /** Medians of the raw rounds' medians, by RAW_VARIANTS name. */
  raw: Record<string, number>;
}

/**
 * The backend with its first timedLaunches watched: before it, on the configuration's fresh module and the test's
 * device buffers, the raw timing runs RAW_ROUNDS rounds of every variant, in turn.
 */
function withRawTimings(backend: GpuBackend, record: (medians: Record<string, number[]>) => void): TuningBackend {
  let measured = false;
  const timedLaunches: TuningBackend['timedLaunches'] = async (kernel, launch, prepared, inputSet, options) => {
    if (!measured) {
      measured = true;
      if (!(kernel instanceof GpuBuiltKernel) || !(prepared instanceof GpuPreparedTest)) throw new TypeError('the bench runs on a GpuBackend');
      const set = prepared.sets[0]!;
      const medians: Record<string, number[]> = Object.fromEntries(RAW_VARIANTS.map((v) => [v.name, []]));
      for (let round = 0; round < RAW_ROUNDS; round++) {
        for (let i = 0; i < RAW_VARIANTS.length; i++) {
          const v = RAW_VARIANTS[(i + round) % RAW_VARIANTS.length]!;
          const stats = await backend.gpu.benchmark(kernel.kernel, launch, set.args, { warmup: 1, iterations: RAW_LAUNCHES, resetBeforeEach: v.resets ? outputResets(set) : [], idleBeforeEach: v.idle });
          medians[v.name]!.push(stats.medianMs);
        }
      }
      record(medians);
    }
    return backend.timedLaunches(kernel, launch, prepared, inputSet, options);
  };
  return new Proxy(backend, {
    get(target, property, receiver) {
      if (property === 'timedLaunches') return timedLaunches;
      if (property === 'dispose') return async () => undefined; // the bench disposes the GpuBackend itself
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function timeCase(gpu: GpuBackend, c: TimingCase): Promise<CaseReport> {
  const tuneParams = Object.fromEntries(Object.entries(c.config).map(([k, v]) => [k, [v]]));
  // A launch time limit given: the reference kernel is not timed, every timed request is the configuration's.
  const once = async (backend: TuningBackend, options: TuneOptions): Promise<ConfigResult> => {
    const r = (await c.loaded.kernel.tune(c.test ?? c.loaded.test, tuneParams, [], { ...c.loaded.options, backend, earlyStop: false, launchTimeoutMs: 10_000, ...options })).results[0]!;
    if (r.status !== 'ok') throw new Error(`${c.name} ${JSON.stringify(c.config)}: ${r.status} ${r.error?.message ?? ''}`);
    return r;
  };
  const verified: ConfigResult[] = [];
  const kernelTuner: ConfigResult[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    verified.push(await once(gpu, {}));
    kernelTuner.push(await once(gpu, { timing: 'kernel_tuner', iterations: RAW_LAUNCHES }));
  }
  let raw: Record<string, number[]> = {};
  await once(withRawTimings(gpu, (m) => (raw = m)), {});
  return {
    name: c.name,
    config: c.config,
    verified: { medianMs: median(verified.map((r) => r.timeMs!)), launches: verified.map((r) => r.stats!.samplesMs.length) },
    kernelTunerMode: { medianMs: median(kernelTuner.map((r) => r.timeMs!)) },
    raw: Object.fromEntries(Object.entries(raw).map(([name, medians]) => [name, median(medians)])),
  };
}

// ---------------------------------------------------------------- Kernel Tuner's figures (measure.py's JSON)

interface KernelTunerFigures {
  matmul?: { first: { wall_s: number; best: Config; best_ms: number }; second: { wall_s: number; best: Config; best_ms: number } };
  same_configs?: Record<string, { median_ms: number; rounds: number[] }>;
}

/** Kernel Tuner's figures, or none (said) where measure.py wrote none: ours are measured either way. */
function kernelTunerFigures(file: string | undefined): KernelTunerFigures {
  if (file === undefined) return {};
  if (!existsSync(file)) {
    console.log(`no Kernel Tuner figures at ${file}: bench/kernel_tuner/measure.py --out ${file} did not write them (see its output); ours only`);
    return {};
  }
  return JSON.parse(readFileSync(file, 'utf8')) as KernelTunerFigures;
}

const sameConfig = (a: Config | undefined, b: Config | undefined): boolean => a !== undefined && b !== undefined && Object.keys(a).every((k) => String(a[k]) === String(b[k]));
const s = (ms: number): string => (ms / 1000).toFixed(3);

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const kt = kernelTunerFigures(process.argv[2]);
  const spec = path.join(examplesDir, 'matmul_tiled', 'tune.yaml');
  const cold = coldCommandLine(spec);
  const gpu = await GpuBackend.open();
  try {
    const device = (await gpu.describe()).name;
    const loaded = await loadExample(examplesDir, 'matmul_tiled');
    const first = await tuneSpace(gpu, loaded, 'in process, first');
    const warm = await tuneSpace(gpu, loaded, 'warm: in process, second');
    const fixed = await tuneSpace(gpu, loaded, 'warm: 32 launches (today)', { iterations: 32 });
    const tau = kendallTau(warm.times, fixed.times);
    const top = { adaptive: fastest(warm.times, TOP), fixed: fastest(fixed.times, TOP) };
    const ranking = {
      sameTop10Order: top.adaptive.join(' ') === top.fixed.join(' '),
      top,
      kendallTau: tau.tau,
      configurations: tau.configurations,
      sameBest: { fixed: sameConfig(warm.best?.config, fixed.best?.config), cold: sameConfig(warm.best?.config, cold.best?.config), kernelTuner: kt.matmul ? sameConfig(warm.best?.config, kt.matmul.second.best) : undefined },
    };

    console.log(`\n== the tiled matmul space on ${device}: examples/matmul_tiled, adaptive series (7 to 32 launches, ±1 %) against 32 launches`);
    console.log('run                                      wall s  benchmark s  verify s  compile s  launches mean/max  series  at checks  best');
    for (const r of [cold, first, warm, fixed]) {
      const best = r.best ? `${Object.values(r.best.config).join(',')} ${r.best.timeMs.toFixed(4)} ms` : 'none';
      console.log(
        `${r.label.padEnd(40)} ${s(r.wallMs).padStart(6)}  ${s(r.benchmarkMs).padStart(11)}  ${s(r.verifyMs).padStart(8)}  ${s(r.compileMs).padStart(9)}  ${`${r.launches.mean.toFixed(1)}/${r.launches.max}`.padStart(17)}  ${String(r.launches.series).padStart(6)}  ${String(r.launches.stoppedAtChecks).padStart(9)}  ${best}`,
      );
    }
    console.log(`statuses (warm): ${Object.entries(warm.statuses).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`benchmark time saved (warm, adaptive against 32 launches): ${s(fixed.benchmarkMs - warm.benchmarkMs)} s of ${s(fixed.benchmarkMs)} s`);
    console.log(`the 10 fastest in the same order as with 32 launches: ${ranking.sameTop10Order ? 'yes' : 'NO'}\n  adaptive: ${top.adaptive.join(' | ')}\n  32:       ${top.fixed.join(' | ')}`);
    console.log(`Kendall's tau, adaptive against 32 launches, over the ${tau.configurations} configurations both timed: ${tau.tau.toFixed(3)}`);
    console.log(`the same best: as 32 launches ${ranking.sameBest.fixed ? 'yes' : 'NO'}, as the cold run ${ranking.sameBest.cold ? 'yes' : 'NO'}${ranking.sameBest.kernelTuner === undefined ? '' : `, as Kernel Tuner ${ranking.sameBest.kernelTuner ? 'yes' : 'NO'}`}`);
    if (kt.matmul) {
      const { first: ktFirst, second: ktSecond } = kt.matmul;
      console.log(`Kernel Tuner: ${ktFirst.wall_s.toFixed(3)} s first (cold), ${ktSecond.wall_s.toFixed(3)} s second (warm); best ${Object.values(ktSecond.best).join(',')} ${ktSecond.best_ms.toFixed(4)} ms`);
      console.log(`ours against Kernel Tuner: cold ${(cold.wallMs / 1000 / ktFirst.wall_s).toFixed(3)}x (target <= 0.3), warm ${(warm.wallMs / 1000 / ktSecond.wall_s).toFixed(3)}x (target <= 0.2)`);
    }

    const cases: CaseReport[] = [];
    for (const c of await timingCases(examplesDir)) cases.push(await timeCase(gpu, c));
    console.log(`\n== medians of the same configurations: ours (${ROUNDS} tunes each, the median of their medians) and Kernel Tuner's (measure.py same_configs)`);
    console.log('case                 ours verified ms  launches   ours as KT times ms   Kernel Tuner ms   verified/KT   as-KT/KT');
    for (const c of cases) {
      const k = kt.same_configs?.[c.name]?.median_ms;
      const ratio = (x: number) => (k === undefined ? '-' : (x / k).toFixed(4));
      console.log(
        `${c.name.padEnd(20)} ${c.verified.medianMs.toFixed(5).padStart(16)}  ${c.verified.launches.join(',').padStart(8)}   ${c.kernelTunerMode.medianMs.toFixed(5).padStart(19)}   ${k === undefined ? '-'.padStart(15) : k.toFixed(5).padStart(15)}   ${ratio(c.verified.medianMs).padStart(11)}   ${ratio(c.kernelTunerMode.medianMs).padStart(8)}`,
      );
    }
    console.log(`\n== the worker's raw timing on one module, ${RAW_ROUNDS} rounds of ${RAW_LAUNCHES} launches, the median of the rounds' medians (ms)`);
    console.log(`case                 ${RAW_VARIANTS.map((v) => v.name.padStart(22).slice(-22)).join('  ')}`);
    for (const c of cases) console.log(`${c.name.padEnd(20)} ${RAW_VARIANTS.map((v) => c.raw[v.name]!.toFixed(5).padStart(22)).join('  ')}`);

    const file = writeBenchJson('adaptive-timing', { benchmark: 'adaptive-timing', device, matmul: { cold, first, warm, fixed, ranking }, cases, kernelTuner: kt });
    if (file) console.log(`\nwrote ${file}`);
  } finally {
    await gpu.dispose();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
