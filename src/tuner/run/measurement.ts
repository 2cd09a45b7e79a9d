// The measurement protocol of one configuration: which launches run on which loaded module, which are timed, which
// are verified, in what order, and when timed launches that disagree flag the result. It runs above the device
// operations of backend.ts (load, reset outputs, launch, timed launches, compare outputs), so the GPU backend and the
// test double run this very code.
//
//  1. Checks: on one loaded module, every input set gets reset outputs, one launch and a comparison. A second set
//     catches a result that does not depend on the input (a constant, a cache).
//  2. The timed series runs on a module loaded afresh: nothing a check launch left in module memory (a launch counter,
//     a cached result, an input address or checksum, a one-time flag) carries into the timing.
//  3. The series on input set 0: warm-up launches, then `iterations` timed launches, each after its outputs were reset
//     (pure outputs poisoned, in/out ones restored) outside its events, so an output holds only what the launch just
//     before wrote. The outputs are compared after the last timed launch, after RANDOM_VERIFIED_LAUNCHES others drawn
//     from a seed of the OS's cryptographic source (recorded with the result: verificationPlan reproduces them), and
//     after the early-stop probe. A comparison splits the series there, after the verified launch: what precedes a
//     launch (a reset, and a pause where the launch before it was verified) does not depend on whether it will be
//     verified, so a kernel cannot tell that it is being checked.
//  4. The samples must agree (timingDisagreement): a fastest launch under half the median, or a median under half
//     that of the verified launches, is what launches that skip their work look like; such a result is flagged
//     'inconsistent_timing' and is never a best configuration. Timing samples also disagree for reasons outside the
//     kernel (another process on the GPU, a clock change during the series): a series that disagrees is timed once more
//     on a fresh module, and only a second disagreement flags the configuration (a kernel that skips work disagrees on
//     every fresh module).
import { randomBytes } from 'node:crypto';
import { median } from '../../gpu/stats';
import { Random } from '../space/random';
import type { BuiltKernel, CheckFailure, CompiledKernel, DeviceRunOptions, Launch, OutputComparison, PreparedTest, TuningBackend } from './backend';

/** Timed launches of the probe that decides an early stop. */
export const PROBE_LAUNCHES = 3;
/** Timed launches verified besides the last one (and the probe's last), chosen at random for every configuration. */
export const RANDOM_VERIFIED_LAUNCHES = 3;
/** Timed series of a configuration at most: a second one when the first disagrees (see the top of this file). */
export const TIMED_SERIES_ATTEMPTS = 2;
/** Timed launches disagree when the fastest, or the median against the verified launches, is under this fraction. */
export const DISAGREEMENT_RATIO = 0.5;

/** Which launches of a configuration had their outputs compared with the reference, all of them right. */
export interface Verification {
  /** Input sets checked, one launch each. */
  inputSets: number;
  /** The verified timed launches, 1-based, ascending; the last is the last timed launch. */
  timedLaunches: number[];
  /** How many timed launches ran. */
  of: number;
  /** The seed the random ones came from (verificationPlan(seed, ...) gives them again). */
  seed: number;
}

export interface SeriesOptions {
  warmup: number;
  iterations: number;
  flushL2: boolean;
  /** Time the probe's launches first and stop there when their median is over this (the configuration cannot win). */
  stopAboveMs?: number;
  /** Seed of the random choice of verified launches; newSeed() for each configuration. */
  seed: number;
}

export interface TimedSeries {
  /** Every timed launch's milliseconds, in order. */
  samplesMs: number[];
  /** The timed launches whose outputs were compared and right, 1-based, ascending. */
  verifiedLaunches: number[];
  /** Only the probe's launches were timed (see SeriesOptions.stopAboveMs). */
  stoppedEarly: boolean;
  /** The verified launch whose outputs were wrong; the series ended there. */
  failure?: CheckFailure;
  /** Loading the fresh module for the series. */
  loadMs: number;
}

/** A seed for the choice of verified launches that no kernel can predict: 32 bits of the OS's cryptographic source. */
export function newSeed(): number {
  return randomBytes(4).readUInt32LE(0);
}

/**
 * The timed launches a series verifies, 1-based and ascending: RANDOM_VERIFIED_LAUNCHES of launches 1 .. iterations-1
 * drawn from `seed`, the probe's last launch when the series probes first, and the last launch.
 */
export function verificationPlan(seed: number, iterations: number, probe: boolean): number[] {
  const earlier = new Random(seed).shuffle(Array.from({ length: iterations - 1 }, (_, i) => i + 1)).slice(0, RANDOM_VERIFIED_LAUNCHES);
  const plan = new Set([...earlier, ...(probe ? [PROBE_LAUNCHES] : []), iterations]);
  return [...plan].sort((a, b) => a - b);
}

/** Whether the early-stop probe runs first: a bar to stop above, and more launches than the probe has. */
function probes(options: Pick<SeriesOptions, 'iterations' | 'stopAboveMs'>): boolean {
  return options.stopAboveMs !== undefined && options.iterations > PROBE_LAUNCHES;
}

/** Runs the kernel once on every input set, each on reset outputs, and compares: the first wrong set, or undefined. */
export async function checkInputSets(backend: TuningBackend, kernel: BuiltKernel, launch: Launch, test: PreparedTest, run: DeviceRunOptions): Promise<CheckFailure | undefined> {
  for (let s = 0; s < test.inputSets; s++) {
    await backend.resetOutputs(test, s);
    await backend.launch(kernel, launch, test, s, run);
    const comparison = await backend.compareOutputs(test, s);
    if (!isRight(comparison)) return { ...comparison, inputSet: s };
  }
  return undefined;
}

/** The timed series on a freshly loaded module (see the top of this file); the module is unloaded afterwards. */
export async function timeSeries(backend: TuningBackend, compiled: CompiledKernel, launch: Launch, test: PreparedTest, options: SeriesOptions, run: DeviceRunOptions): Promise<TimedSeries> {
  const kernel = await backend.load(compiled);
  try {
    const series: TimedSeries = { samplesMs: [], verifiedLaunches: [], stoppedEarly: false, loadMs: kernel.loadMs };
    const probing = probes(options);
    for (const verified of verificationPlan(options.seed, options.iterations, probing)) {
      const done = series.samplesMs.length;
      const samples = await backend.timedLaunches(kernel, launch, test, 0, { ...run, warmup: done === 0 ? options.warmup : 0, count: verified - done, flushL2: options.flushL2 });
      series.samplesMs.push(...samples);
      const comparison = await backend.compareOutputs(test, 0);
      if (!isRight(comparison)) return { ...series, failure: { ...comparison, inputSet: 0, timedLaunch: { index: verified, of: options.iterations } } };
      series.verifiedLaunches.push(verified);
      if (probing && verified === PROBE_LAUNCHES && median(series.samplesMs) > options.stopAboveMs!) return { ...series, stoppedEarly: true };
    }
    return series;
  } finally {
    await kernel.release().catch(() => undefined);
  }
}

/**
 * Why a series' timed launches disagree, or undefined when they agree. Launches that skip their work are far faster
 * than the others: when they are fewer than half, the fastest is far under the median; when they are half or more,
 * the median is far under the verified launches, which did the work (their outputs were right on poisoned buffers).
 */
export function timingDisagreement(samplesMs: readonly number[], verifiedLaunches: readonly number[]): string | undefined {
  const mid = median(samplesMs);
  const fastest = Math.min(...samplesMs);
  const ms = (x: number) => `${Number(x.toPrecision(4))} ms`;
  if (fastest < DISAGREEMENT_RATIO * mid) {
    const launch = samplesMs.indexOf(fastest) + 1;
    return `its timed launches disagree: launch ${launch} took ${ms(fastest)}, under half the median ${ms(mid)} (launches that skip their work look like this)`;
  }
  const verified = median(verifiedLaunches.map((i) => samplesMs[i - 1]!));
  if (mid < DISAGREEMENT_RATIO * verified) {
    return `its timed launches disagree: their median ${ms(mid)} is under half the ${ms(verified)} of the launches whose outputs were verified (${verifiedLaunches.join(', ')}), as when the others skip work`;
  }
  return undefined;
}

/** "input sets 1–2, timed launches 7, 19, 28 and the last of 32" (the last timed launch is always verified). */
export function describeVerification(v: Verification): string {
  const sets = v.inputSets === 1 ? 'input set 1' : `input sets 1–${v.inputSets}`;
  const before = v.timedLaunches.filter((i) => i !== v.of);
  const last = v.of === 1 ? 'the one timed launch' : `the last of ${v.of}`;
  return `${sets}, ${before.length === 0 ? last : `timed launch${before.length > 1 ? 'es' : ''} ${before.join(', ')} and ${last}`}`;
}

function isRight(c: OutputComparison): boolean {
  return c.mismatches.length === 0 && c.modifiedInputs.length === 0;
}
