// The measurement protocol of one configuration: which launches run on which loaded module, which are timed, which
// are verified, in what order, and when timed launches that disagree flag the result. It runs above the device
// operations of backend.ts (load, reset outputs, timed launches with or without resets and comparisons, compare
// outputs), so the GPU backend and the test double run this very code.
//
//  1. Checks: on one loaded module, every input set gets reset outputs, one launch and a comparison. A second set
//     catches a result that does not depend on the input (a constant, a cache).
//  2. The timed series runs on a module loaded afresh: nothing a check launch left in module memory (a launch counter,
//     a cached result, an input address or checksum, a one-time flag) carries into the timing.
//  3. The series on input set 0: warm-up launches, then the timed launches, each after its outputs were reset (pure
//     outputs poisoned, in/out ones restored) outside its events, so an output holds only what the launch just before
//     wrote. The series runs from checkpoint to checkpoint (verificationPlan, from a seed of the OS's cryptographic
//     source, recorded with the result): after each, in the same request, the outputs are compared with the
//     reference; then the series may end (seriesEnd): at its last launch (a fixed count, or the maximum), once its
//     median is known to the precision (an adaptive series, from its minimum on), or, from the early-stop probe on,
//     once its median shows it cannot be the best. A fixed count has RANDOM_VERIFIED_LAUNCHES random checkpoints and
//     its last; an adaptive series one every 1 to MAX_CHECKPOINT_GAP launches, so that wherever it stops, its last
//     launch is verified and about every other launch before it. What precedes a launch (a reset, and a pause where
//     the launch before it was a checkpoint) does not depend on whether it will be verified or be the last, so a
//     kernel cannot tell that it is being checked, nor when the series will stop: a kernel that idles after K launches
//     of its module is rejected whenever one of its timed launches idles (the last one does), for every K up to the
//     maximum; one that idles only later never behaves differently while it is measured.
//  4. The samples must agree (timingDisagreement): a fastest launch under half the median, or a median under half
//     that of the verified launches, is what launches that skip their work look like; such a result is flagged
//     'inconsistent_timing' and is never a best configuration. Timing samples also disagree for reasons outside the
//     kernel (another process on the GPU, a clock change during the series): a series that disagrees is timed once more
//     on a fresh module, and only a second disagreement flags the configuration (a kernel that skips work disagrees on
//     every fresh module).
//
// The checks of step 1 are timed launches too (each on reset outputs, between events): a configuration whose checks
// both took longer than the early-stop bar gets no timed series (the evaluator stops it there).
//
// Timed as Kernel Tuner times ('kernel_tuner', for comparisons with its figures): the series' outputs are reset once,
// then each launch starts from an idle GPU (the host waits for the device, records the start event, launches, records
// the stop event) with no reset in between, and the outputs are compared after the last launch only. What that cannot
// check is named in every such result (KERNEL_TUNER_TIMING_UNCHECKED).
import { randomBytes } from 'node:crypto';
import { median } from '../../gpu/stats';
import { Random } from '../space/random';
import type { BuiltKernel, CheckFailure, CompiledKernel, DeviceRunOptions, Launch, OutputComparison, PreparedTest, TimedLaunchOptions, TuningBackend } from './backend';
import { medianKnown, mostLaunches, type LaunchCount } from './launch-count';

/** Timed launches of the probe that decides an early stop. */
export const PROBE_LAUNCHES = 3;
/** Timed launches verified besides the last one (and the probe's last) in a series of a fixed count, chosen at random. */
export const RANDOM_VERIFIED_LAUNCHES = 3;
/** In an adaptive series, launches from one checkpoint to the next: drawn uniformly from 1 to this. */
export const MAX_CHECKPOINT_GAP = 3;
/** Timed series of a configuration at most: a second one when the first disagrees (see the top of this file). */
export const TIMED_SERIES_ATTEMPTS = 2;
/** Timed launches disagree when the fastest, or the median against the verified launches, is under this fraction. */
export const DISAGREEMENT_RATIO = 0.5;

/** How the timed launches run: verified (the default), or as Kernel Tuner times them (see the top of this file). */
export type TimingMode = 'verified' | 'kernel_tuner';
export const TIMING_MODES: readonly TimingMode[] = ['verified', 'kernel_tuner'];

/** What timing as Kernel Tuner does leaves unchecked, named in every result timed so. */
export const KERNEL_TUNER_TIMING_UNCHECKED =
  "timed as Kernel Tuner times (each launch from an idle GPU, the outputs not reset between launches), so only the outputs after the last timed launch were compared: a timed launch that skips its work leaves an earlier launch's right outputs and is caught by the timing checks alone";

/** Which launches of a configuration had their outputs compared with the reference, all of them right. */
export interface Verification {
  /** Input sets checked, one launch each. */
  inputSets: number;
  /** The verified timed launches, 1-based, ascending; the last is the last timed launch. None: no timed series ran. */
  timedLaunches: number[];
  /** How many timed launches ran. */
  of: number;
  /** The seed of the series' checkpoints (verificationPlan(seed, ...) gives them again); absent without a series. */
  seed?: number;
  /** Timed as Kernel Tuner times: only the outputs after the series were compared (KERNEL_TUNER_TIMING_UNCHECKED). */
  mode?: 'kernel_tuner';
}

export interface SeriesOptions {
  warmup: number;
  launches: LaunchCount;
  flushL2: boolean;
  /** From the probe's launches on, stop when their median is over this (the configuration cannot win). */
  stopAboveMs?: number;
  /** Seed of the checkpoints; newSeed() for each series. */
  seed: number;
  mode: TimingMode;
}

/**
 * Why a series ended: its fixed count ran, its median was known to the precision, it reached the maximum without that,
 * or it was clearly slower than the best ('early').
 */
export type SeriesEnd = 'count' | 'precision' | 'maximum' | 'early';

/** A series: how it ended, or the verified launch whose outputs were wrong (it ended there). */
export type TimedSeries = {
  /** Every timed launch's milliseconds, in order. */
  samplesMs: number[];
  /** The timed launches whose outputs were compared and right, 1-based, ascending. */
  verifiedLaunches: number[];
  /** Loading the fresh module for the series. */
  loadMs: number;
} & ({ end: SeriesEnd } | { failure: CheckFailure });

/** A seed for the checkpoints that no kernel can predict: 32 bits of the OS's cryptographic source. */
export function newSeed(): number {
  return randomBytes(4).readUInt32LE(0);
}

/**
 * The checkpoints of a series (1-based, ascending; the last is its last possible launch), drawn from `seed`: for a
 * fixed count, RANDOM_VERIFIED_LAUNCHES of launches 1 .. count-1; for an adaptive series, one every 1 to
 * MAX_CHECKPOINT_GAP launches up to the maximum; the probe's last launch when the series probes first.
 */
export function verificationPlan(seed: number, count: LaunchCount, probe: boolean): number[] {
  const random = new Random(seed);
  const last = mostLaunches(count);
  const drawn: number[] = [];
  if (typeof count === 'number') drawn.push(...random.shuffle(Array.from({ length: last - 1 }, (_, i) => i + 1)).slice(0, RANDOM_VERIFIED_LAUNCHES));
  else for (let at = random.int(MAX_CHECKPOINT_GAP) + 1; at < last; at += random.int(MAX_CHECKPOINT_GAP) + 1) drawn.push(at);
  const plan = new Set([...drawn, ...(probe ? [PROBE_LAUNCHES] : []), last]);
  return [...plan].sort((a, b) => a - b);
}

/** Whether the early-stop probe runs: a bar to stop above, and more launches than the probe has. */
function probes(options: Pick<SeriesOptions, 'launches' | 'stopAboveMs'>): boolean {
  return options.stopAboveMs !== undefined && mostLaunches(options.launches) > PROBE_LAUNCHES;
}

/**
 * Why a series ends at a checkpoint after these samples, or undefined when it goes on: from the probe on, a median over
 * `stopAboveMs` while launches are left to save ('early'); an adaptive series' median known to its precision from its
 * minimum on; its last launch.
 */
export function seriesEnd(samplesMs: readonly number[], count: LaunchCount, stopAboveMs: number | undefined): SeriesEnd | undefined {
  const n = samplesMs.length;
  const last = mostLaunches(count);
  if (n < last && stopAboveMs !== undefined && n >= PROBE_LAUNCHES && median(samplesMs) > stopAboveMs) return 'early';
  if (typeof count !== 'number' && n >= count.min && medianKnown(samplesMs, count.precision)) return 'precision';
  if (n >= last) return typeof count === 'number' ? 'count' : 'maximum';
  return undefined;
}

/** The checks of every input set: each launch's time, and the first wrong set (then the checks stop there). */
export interface InputSetChecks {
  timesMs: number[];
  failure?: CheckFailure;
}

/** Runs the kernel once on every input set, each on reset outputs and timed, and compares, all in one request per set. */
export async function checkInputSets(backend: TuningBackend, kernel: BuiltKernel, launch: Launch, test: PreparedTest, run: DeviceRunOptions): Promise<InputSetChecks> {
  const timesMs: number[] = [];
  for (let s = 0; s < test.inputSets; s++) {
    const { timeMs, comparison } = await backend.check(kernel, launch, test, s, run);
    timesMs.push(timeMs);
    if (!isRight(comparison)) return { timesMs, failure: { ...comparison, inputSet: s } };
  }
  return { timesMs };
}

/** The timed series on a freshly loaded module (see the top of this file); the module is unloaded afterwards. */
export async function timeSeries(backend: TuningBackend, compiled: CompiledKernel, launch: Launch, test: PreparedTest, options: SeriesOptions, run: DeviceRunOptions): Promise<TimedSeries> {
  const kernel = await backend.load(compiled);
  try {
    const samplesMs: number[] = [];
    const verifiedLaunches: number[] = [];
    const verified = options.mode === 'verified';
    const wrong = (comparison: OutputComparison, index: number): TimedSeries | undefined =>
      isRight(comparison) ? undefined : { samplesMs, verifiedLaunches, loadMs: kernel.loadMs, failure: { ...comparison, inputSet: 0, timedLaunch: { index, of: mostLaunches(options.launches), adaptive: typeof options.launches !== 'number' } } };
    // As Kernel Tuner times: what the checks left in the outputs must not pass for the series' work.
    if (!verified) await backend.resetOutputs(test, 0);
    for (const checkpoint of verificationPlan(options.seed, options.launches, probes(options))) {
      const request: TimedLaunchOptions = { ...run, warmup: samplesMs.length === 0 ? options.warmup : 0, count: checkpoint - samplesMs.length, flushL2: options.flushL2, resetBeforeEach: verified, idleBeforeEach: !verified, compare: verified };
      const timed = await backend.timedLaunches(kernel, launch, test, 0, request);
      samplesMs.push(...timed.samplesMs);
      const end = seriesEnd(samplesMs, options.launches, options.stopAboveMs);
      const comparison = verified ? timed.comparison! : end && (await backend.compareOutputs(test, 0));
      if (comparison) {
        const failure = wrong(comparison, checkpoint);
        if (failure) return failure;
        verifiedLaunches.push(checkpoint);
      }
      if (end) return { samplesMs, verifiedLaunches, end, loadMs: kernel.loadMs };
    }
    throw new Error('internal: a series plan ends at its last launch, where every series ends');
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

/**
 * "input sets 1–2, timed launches 2, 4–5, 7 and the last of 9" (the last timed launch is always verified); timed as
 * Kernel Tuner times, what that leaves unchecked.
 */
export function describeVerification(v: Verification): string {
  const sets = v.inputSets === 1 ? 'input set 1' : `input sets 1–${v.inputSets}`;
  if (v.of === 0) return sets;
  if (v.mode === 'kernel_tuner') return `${sets}, the outputs after the last of ${v.of} timed launches: ${KERNEL_TUNER_TIMING_UNCHECKED}`;
  const before = v.timedLaunches.filter((i) => i !== v.of);
  const last = v.of === 1 ? 'the one timed launch' : `the last of ${v.of}`;
  if (before.length === 0) return `${sets}, ${last}`;
  return `${sets}, timed launch${before.length > 1 ? 'es' : ''} ${ranges(before)} and ${last}`;
}

/** Ascending integers as runs: [2, 4, 5, 6, 9] → "2, 4–6, 9". */
function ranges(values: readonly number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < values.length; ) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j]! + 1) j++;
    runs.push(j === i ? String(values[i]) : `${values[i]}–${values[j]}`);
    i = j + 1;
  }
  return runs.join(', ');
}

function isRight(c: OutputComparison): boolean {
  return c.mismatches.length === 0 && c.modifiedInputs.length === 0;
}
