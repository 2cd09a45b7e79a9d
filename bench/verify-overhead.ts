// Issue 14's benchmark: what verifying the timed launches (run/measurement.ts) does to the times of honest kernels.
//  1. Old against new, in one run, on the same loaded module and the same device buffers: the old timing (the outputs
//     poisoned once, then one benchmark request of 1 warm-up and 32 timed launches back to back, what GpuBackend.time
//     did before) against the new series (every output reset before each timed launch outside its events, the series
//     split after the verified launches for their comparison). Target: the same median within 2%. The two alternate
//     in order, round by round; the new series also costs wall time outside its events (resets, comparisons, round
//     trips), reported as its benchmark phase against the old request's wall time.
//  2. The flag on real samples: every example and real-file spec tuned by brute force with the new protocol; for every
//     configuration that ran, its fastest launch over its median and its median over its verified launches' median
//     (DISAGREEMENT_RATIO flags either under 0.5): honest kernels must not come near it.
//   node dist/bench/verify-overhead.js        (JSON also to $OUT/bench-verify-overhead.json when OUT is set)
import * as path from 'node:path';
import { EXAMPLE_NAMES, REAL_EXAMPLE_SPECS, loadExample, loadSpec, type LoadedSpec } from '../examples/load';
import { median } from '../src/gpu/stats';
import type { BuiltKernel, Launch, PreparedTest, TimedLaunchOptions, TuningBackend } from '../src/tuner/run/backend';
import { GpuBackend, GpuBuiltKernel, GpuPreparedTest } from '../src/tuner/run/gpu-backend';
import { DISAGREEMENT_RATIO } from '../src/tuner/run/measurement';
import type { Config, ConfigResult } from '../src/tuner/types';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import { timingCases, type TimingCase } from './support/timing-cases';

const root = path.resolve(__dirname, '..', '..'); // the bundle runs from dist/bench/
const examplesDir = path.join(root, 'examples');
const ROUNDS = 7;
const ITERATIONS = 32;
const WARMUP = 1;

interface Round {
  order: 'old first' | 'new first';
  oldMedianMs: number;
  newMedianMs: number;
  /** Wall time of the old benchmark request, and of the new series (its benchmark phase). */
  oldWallMs: number;
  newWallMs: number;
}

interface CaseReport {
  name: string;
  config: Config;
  rounds: Round[];
  oldMedianMs: number;
  newMedianMs: number;
  /** new / old of the medians over the rounds. */
  ratio: number;
  within2pct: boolean;
  oldWallMs: number;
  newWallMs: number;
}

/**
 * The backend with its timedLaunches watched: around the first (or after the last) request of a configuration's timed
 * series, the old timing runs on the same module and buffers.
 */
function withOldTiming(backend: GpuBackend, oldFirst: boolean, record: (oldSamples: number[], oldWallMs: number) => void): TuningBackend {
  let done = 0;
  const old = async (kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, options: TimedLaunchOptions): Promise<void> => {
    if (!(kernel instanceof GpuBuiltKernel) || !(prepared instanceof GpuPreparedTest)) throw new TypeError('the bench runs on a GpuBackend');
    await backend.resetOutputs(prepared, 0);
    const t = performance.now();
    const stats = await backend.gpu.benchmark(kernel.kernel, launch, prepared.sets[0]!.args, { warmup: WARMUP, iterations: ITERATIONS, flushL2: options.flushL2 });
    record(stats.samplesMs, performance.now() - t);
  };
  // With a launch time limit given, the reference kernel is not timed: every request is the configuration's series.
  const timedLaunches: TuningBackend['timedLaunches'] = async (kernel, launch, prepared, inputSet, options) => {
    if (oldFirst && done === 0) await old(kernel, launch, prepared, options);
    const timed = await backend.timedLaunches(kernel, launch, prepared, inputSet, options);
    done += timed.samplesMs.length;
    if (!oldFirst && done === ITERATIONS) await old(kernel, launch, prepared, options);
    return timed;
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
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const oldFirst = i % 2 === 0;
    let old: { samples: number[]; wallMs: number } | undefined;
    const backend = withOldTiming(gpu, oldFirst, (samples, wallMs) => (old = { samples, wallMs }));
    const tuneParams = Object.fromEntries(Object.entries(c.config).map(([k, v]) => [k, [v]]));
    const result = await c.loaded.kernel.tune(c.test ?? c.loaded.test, tuneParams, [], { ...c.loaded.options, backend, iterations: ITERATIONS, warmup: WARMUP, earlyStop: false, launchTimeoutMs: 10_000 });
    const r = result.results[0]!;
    if (r.status !== 'ok' || !old) throw new Error(`${c.name} ${JSON.stringify(c.config)}: ${r.status} ${r.error?.message ?? ''}`);
    rounds.push({ order: oldFirst ? 'old first' : 'new first', oldMedianMs: median(old.samples), newMedianMs: r.timeMs!, oldWallMs: old.wallMs, newWallMs: r.timings!.benchmarkMs });
  }
  const oldMedianMs = median(rounds.map((r) => r.oldMedianMs));
  const newMedianMs = median(rounds.map((r) => r.newMedianMs));
  const ratio = newMedianMs / oldMedianMs;
  return {
    name: c.name,
    config: c.config,
    rounds,
    oldMedianMs,
    newMedianMs,
    ratio,
    within2pct: Math.abs(ratio - 1) <= 0.02,
    oldWallMs: median(rounds.map((r) => r.oldWallMs)),
    newWallMs: median(rounds.map((r) => r.newWallMs)),
  };
}

interface FlagReport {
  spec: string;
  configurations: number;
  flagged: { key: string; message: string }[];
  /** The smallest fastest/median and median/verified-median over the configurations that ran (0.5 would flag). */
  worstMinOverMedian: { value: number; key: string } | undefined;
  worstMedianOverVerified: { value: number; key: string } | undefined;
}

function flagStatistics(spec: string, results: readonly ConfigResult[]): FlagReport {
  const report: FlagReport = { spec, configurations: 0, flagged: [], worstMinOverMedian: undefined, worstMedianOverVerified: undefined };
  for (const r of results) {
    if (r.status === 'inconsistent_timing') report.flagged.push({ key: r.key, message: r.error?.message ?? '' });
    if (!r.stats || !r.verified) continue;
    report.configurations++;
    const samples = r.stats.samplesMs;
    const minOverMedian = r.stats.minMs / r.stats.medianMs;
    const overVerified = r.stats.medianMs / median(r.verified.timedLaunches.map((i) => samples[i - 1]!));
    if (!report.worstMinOverMedian || minOverMedian < report.worstMinOverMedian.value) report.worstMinOverMedian = { value: minOverMedian, key: r.key };
    if (!report.worstMedianOverVerified || overVerified < report.worstMedianOverVerified.value) report.worstMedianOverVerified = { value: overVerified, key: r.key };
  }
  return report;
}

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const gpu = await GpuBackend.open();
  try {
    const device = (await gpu.describe()).name;
    const cases = await timingCases(examplesDir);
    const timing: CaseReport[] = [];
    for (const c of cases) timing.push(await timeCase(gpu, c));

    console.log(`\n== old timing against the verified series on ${device}: ${ROUNDS} rounds, ${WARMUP} warm-up + ${ITERATIONS} timed launches, medians of the rounds' medians`);
    console.log('case                 config                                    old ms     new ms     new/old   within 2%   old wall ms  new wall ms');
    for (const t of timing) {
      console.log(
        `${t.name.padEnd(20)} ${JSON.stringify(t.config).padEnd(41)} ${t.oldMedianMs.toFixed(5).padStart(9)}  ${t.newMedianMs.toFixed(5).padStart(9)}  ${t.ratio.toFixed(4).padStart(8)}   ${(t.within2pct ? 'yes' : 'NO').padEnd(9)}  ${t.oldWallMs.toFixed(2).padStart(11)}  ${t.newWallMs.toFixed(2).padStart(11)}`,
      );
    }

    const specs: [string, () => Promise<LoadedSpec>][] = [
      ...EXAMPLE_NAMES.map((name): [string, () => Promise<LoadedSpec>] => [name, () => loadExample(examplesDir, name)]),
      ...REAL_EXAMPLE_SPECS.map((spec): [string, () => Promise<LoadedSpec>] => [spec, () => loadSpec(path.join(examplesDir, spec))]),
    ];
    const flags: FlagReport[] = [];
    for (const [name, load] of specs) {
      const loaded = await load();
      const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend: gpu, strategy: 'brute_force' });
      flags.push(flagStatistics(name, result.results));
    }
    console.log(`\n== the flag (a ratio under ${DISAGREEMENT_RATIO} flags) on honest kernels: every example and real-file spec, brute force`);
    console.log('spec                                        configs  flagged  worst min/median  worst median/verified median');
    const fmt = (w: { value: number; key: string } | undefined) => (w ? `${w.value.toFixed(3)} (${w.key})` : '-');
    for (const f of flags) {
      console.log(`${f.spec.padEnd(43)} ${String(f.configurations).padStart(7)}  ${String(f.flagged.length).padStart(7)}  ${fmt(f.worstMinOverMedian).padEnd(16)}  ${fmt(f.worstMedianOverVerified)}`);
      for (const x of f.flagged) console.log(`    flagged ${x.key}: ${x.message}`);
    }
    const all = flags.flatMap((f) => [f.worstMinOverMedian?.value, f.worstMedianOverVerified?.value]).filter((x): x is number => x !== undefined);
    const flaggedCount = flags.reduce((n, f) => n + f.flagged.length, 0);
    console.log(`\nconfigurations that ran: ${flags.reduce((n, f) => n + f.configurations, 0)}; flagged: ${flaggedCount}; the smallest ratio of all: ${Math.min(...all).toFixed(3)}`);
    console.log(`timing within 2%: ${timing.every((t) => t.within2pct) ? 'yes, every case' : `NO: ${timing.filter((t) => !t.within2pct).map((t) => t.name).join(', ')}`}`);

    const file = writeBenchJson('verify-overhead', { benchmark: 'verify-overhead', device, rounds: ROUNDS, iterations: ITERATIONS, warmup: WARMUP, timing, flags });
    if (file) console.log(`\nwrote ${file}`);
  } finally {
    await gpu.dispose();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
