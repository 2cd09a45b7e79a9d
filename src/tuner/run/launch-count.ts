// How many timed launches a configuration gets: a fixed count (Kernel Tuner's `iterations`), or as many as its median
// needs: at least `min`, at most `max`, and no more once the 95 % confidence interval of the median (order statistics:
// no assumption about the distribution of the times) lies within ±precision of it. The stopping rule, and the checks of
// the settings that the spec, the command line, VS Code and the API share.
import { median, medianInterval, MIN_SAMPLES_FOR_INTERVAL } from '../../gpu/stats';

/** A series that stops when its median is known to `precision` (a fraction of it), after `min` and at most `max` launches. */
export interface AdaptiveLaunches {
  min: number;
  max: number;
  precision: number;
}

/** A fixed number of timed launches, or an adaptive series. */
export type LaunchCount = number | AdaptiveLaunches;

/** Kernel Tuner's default count (7) at least, today's fixed 32 at most, the median known within ±1 %. */
export const DEFAULT_LAUNCHES: AdaptiveLaunches = { min: 7, max: 32, precision: 0.01 };
/** The most timed launches of one configuration. */
export const MAX_LAUNCHES = 1000;
/** Precisions that make sense: finer than 0.1 % no GPU timer resolves for short kernels; coarser than 10 % says little. */
export const PRECISION_RANGE = { min: 0.001, max: 0.1 } as const;

/** The settings as a user writes them: `iterations` fixes the count; the other three make it adapt. */
export interface LaunchCountSettings {
  iterations?: number;
  minIterations?: number;
  maxIterations?: number;
  precision?: number;
}
export type LaunchCountField = keyof LaunchCountSettings;

export interface LaunchCountProblem {
  field: LaunchCountField;
  /** Reads after the setting's name: "must be ...". */
  message: string;
}

const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const shown = (v: unknown): string => (typeof v === 'number' ? String(v) : JSON.stringify(v));

/**
 * What is wrong with the settings, each problem under the setting it is about (none: launchCountOf accepts them). They
 * may come from anywhere (a settings file, a flag's text): any value is checked.
 */
export function launchCountProblems(s: { [F in LaunchCountField]?: unknown }): LaunchCountProblem[] {
  const problems: LaunchCountProblem[] = [];
  const adaptive = s.minIterations !== undefined || s.maxIterations !== undefined || s.precision !== undefined;
  if (s.iterations !== undefined) {
    if (!isInteger(s.iterations) || s.iterations < 1 || s.iterations > MAX_LAUNCHES) problems.push({ field: 'iterations', message: `must be an integer from 1 to ${MAX_LAUNCHES} (is ${shown(s.iterations)})` });
    if (adaptive) problems.push({ field: 'iterations', message: 'fixes the number of timed launches, while a minimum, a maximum or a precision makes it adapt to the kernel: give one or the other' });
    return problems;
  }
  const min = s.minIterations ?? DEFAULT_LAUNCHES.min;
  if (!isInteger(min) || min < MIN_SAMPLES_FOR_INTERVAL || min > MAX_LAUNCHES) {
    problems.push({ field: 'minIterations', message: `must be an integer from ${MIN_SAMPLES_FOR_INTERVAL} to ${MAX_LAUNCHES} (is ${shown(min)}): the 95 % interval of a median needs at least ${MIN_SAMPLES_FOR_INTERVAL} launches` });
  }
  const max = s.maxIterations ?? Math.max(DEFAULT_LAUNCHES.max, isInteger(min) ? min : 0);
  if (!isInteger(max) || max > MAX_LAUNCHES) problems.push({ field: 'maxIterations', message: `must be an integer of at most ${MAX_LAUNCHES} (is ${shown(max)})` });
  else if (isInteger(min) && max < min) problems.push({ field: 'maxIterations', message: `must be at least minIterations, ${min} (is ${max})` });
  const precision = s.precision ?? DEFAULT_LAUNCHES.precision;
  if (typeof precision !== 'number' || !(precision >= PRECISION_RANGE.min && precision <= PRECISION_RANGE.max)) {
    const percent = typeof precision === 'number' && precision > PRECISION_RANGE.max && precision <= 100 ? ` (a fraction of the median: ${precision} % is ${precision / 100})` : '';
    problems.push({
      field: 'precision',
      message: `must be a fraction of the median from ${PRECISION_RANGE.min} (0.1 %) to ${PRECISION_RANGE.max} (10 %), is ${shown(precision)}${percent}: the series stops once the 95 % interval of its median lies within ±precision of it`,
    });
  }
  return problems;
}

/** The launch count the settings stand for (defaults: DEFAULT_LAUNCHES); a RangeError naming every problem. */
export function launchCountOf(s: LaunchCountSettings, name: (field: LaunchCountField) => string = (f) => f): LaunchCount {
  const problems = launchCountProblems(s);
  if (problems.length > 0) throw new RangeError(problems.map((p) => `${name(p.field)} ${p.message}`).join('; '));
  if (s.iterations !== undefined) return s.iterations;
  const min = s.minIterations ?? DEFAULT_LAUNCHES.min;
  return { min, max: s.maxIterations ?? Math.max(DEFAULT_LAUNCHES.max, min), precision: s.precision ?? DEFAULT_LAUNCHES.precision };
}

/** The API's form (a count, or the adaptive series' fields, each defaulted), checked as the settings are. */
export function resolveLaunchCount(given: number | Partial<AdaptiveLaunches> | undefined): LaunchCount {
  if (typeof given === 'number' || given === undefined) return launchCountOf({ iterations: given }, () => 'iterations');
  const names: Record<LaunchCountField, string> = { iterations: 'iterations', minIterations: 'iterations.min', maxIterations: 'iterations.max', precision: 'iterations.precision' };
  return launchCountOf({ ...(given.min !== undefined && { minIterations: given.min }), ...(given.max !== undefined && { maxIterations: given.max }), ...(given.precision !== undefined && { precision: given.precision }) }, (f) => names[f]);
}

/** The settings a launch count is written as (the inverse of launchCountOf). */
export function launchCountSettings(count: LaunchCount): LaunchCountSettings {
  return typeof count === 'number' ? { iterations: count } : { minIterations: count.min, maxIterations: count.max, precision: count.precision };
}

/** The most launches a series of this count runs. */
export function mostLaunches(count: LaunchCount): number {
  return typeof count === 'number' ? count : count.max;
}

/** Whether the samples' median is known to `precision`: its 95 % interval lies within ±precision × median of it. */
export function medianKnown(samples: readonly number[], precision: number): boolean {
  const interval = medianInterval(samples);
  if (!interval) return false;
  const mid = median(samples);
  return interval[0] >= mid * (1 - precision) && interval[1] <= mid * (1 + precision);
}

/** "the median of 32 timed launches", "the median of 7 to 32 timed launches, until its 95 % interval is within ±1 %". */
export function describeLaunchCount(count: LaunchCount): string {
  if (typeof count === 'number') return `the median of ${count} timed launch${count === 1 ? '' : 'es'}`;
  return `the median of ${count.min} to ${count.max} timed launches, as many as put its 95 % interval within ±${Number((100 * count.precision).toPrecision(3))} % of it`;
}
