// The tuner's shared vocabulary: what a configuration is, what evaluating one produces, and what a tuning run returns.
// Names and value conventions follow Kernel Tuner, so that its users recognise them and its cache files interoperate.

import type { TimingStats } from '../gpu/stats';
import type { Dim3 } from '../gpu/types';
import type { ConfigProfile } from './run/profile';
import type { Verification } from './run/measurement';
import type { SanitizerVerdict } from './run/sanitizer';

/** A tunable parameter's value. Numbers mostly; strings and booleans are allowed as Kernel Tuner allows them. */
export type ParamValue = number | string | boolean;

/** Tunable parameters: name → the values to try, in the order given (that order defines the search space's order). */
export type TuneParams = Record<string, readonly ParamValue[]>;

/** One configuration: a value for every tunable parameter. */
export type Config = Record<string, ParamValue>;

/** A resolved problem size: up to three dimensions. */
export type ProblemSize = number | [number] | [number, number] | [number, number, number];

/**
 * A problem size as the user writes it: numbers, or expression strings over scalar kernel arguments and tunable parameters
 * ("n", "n*m", "rows // 4"), evaluated per configuration by geometry.ts.
 */
export type ProblemSizeSpec = number | string | readonly (number | string)[];

export type { Dim3 };

/** Why a configuration has no valid time. */
export type FailureKind =
  | 'compile_error'
  | 'launch_error'
  | 'fault'
  | 'timeout'
  | 'wrong_result'
  | 'restricted'
  | 'exceeds_device_limits'
  | 'stopped_early'
  /** Its timed launches disagree (some far faster than the others, as launches that skip their work are): never best. */
  | 'inconsistent_timing';

export type ConfigStatus = 'ok' | FailureKind;

/**
 * How a configuration ended, as progress counts it: a configuration stopped early ran and was correct (only too slow
 * to finish timing), so it is no failure; one over the device's limits (or restricted, in a cache from elsewhere) was
 * never compiled nor run.
 */
export type Outcome = 'ok' | 'stoppedEarly' | 'failed' | 'skipped';

export function outcomeOf(status: ConfigStatus): Outcome {
  switch (status) {
    case 'ok':
      return 'ok';
    case 'stopped_early':
      return 'stoppedEarly';
    case 'exceeds_device_limits':
    case 'restricted':
      return 'skipped';
    default:
      return 'failed';
  }
}

/** Timing statistics, computed by the GPU layer's computeStats (median, mean, min, max, sample standard deviation). */
export type SampleStats = TimingStats;

/**
 * What the driver says about a configuration's kernel, free with every load (cuFuncGetAttribute and
 * cuOccupancyMaxActiveBlocksPerMultiprocessor), under the GPU layer's names: Kernel Tuner's num_regs, the same snake_case
 * for the rest. The optional ones are absent only from caches recorded before they were.
 */
export interface DriverMetrics {
  /** Registers per thread (Kernel Tuner's RegisterObserver name). */
  num_regs: number;
  /** Local memory per thread (bytes): local arrays and register spills. */
  local_mem_bytes: number;
  static_shared_mem_bytes: number;
  dynamic_shared_mem_bytes?: number;
  /** The most threads a block of this kernel can have (its registers may allow fewer than the device's 1024). */
  max_threads_per_block?: number;
  active_blocks_per_sm?: number;
  active_warps_per_sm?: number;
  /** Theoretical occupancy: active warps / max warps per multiprocessor, 0..1. */
  occupancy?: number;
  /** The driver's answer for a kernel loaded on the device, or the occupancy calculator's where no driver answered. */
  occupancy_source?: 'driver' | 'calculator';
}

/**
 * NVML's readings while a configuration ran (read only), with Kernel Tuner's NVMLObserver names: energy of one launch
 * (J), mean power (W), SM and memory clocks (MHz), temperature (°C).
 */
export interface EnergyReadings {
  nvml_energy: number;
  nvml_power: number;
  core_freq?: number;
  mem_freq?: number;
  temperature?: number;
}

/** Where the time of one evaluation went (milliseconds of wall-clock time, 0 for a phase that did not run). */
export interface EvaluationTimings {
  compileMs: number;
  loadMs: number;
  verifyMs: number;
  benchmarkMs: number;
  /** Time the search strategy spent choosing this configuration (Kernel Tuner's strategy_time). */
  strategyMs?: number;
  /** Everything else spent on this configuration (Kernel Tuner's framework_time). */
  frameworkMs?: number;
}

/** What reproduces a measurement, recorded with every result that got as far as compiling. */
export interface Reproduction {
  /** Hash of the kernel source before the defines were prepended. */
  sourceHash: string;
  /** The defines injected, in injection order (see geometry.ts `defines`). */
  defines: Record<string, string>;
  compilerOptions: string[];
  deviceName: string;
  /** cuDriverGetVersion, e.g. 13000. */
  driverVersion: number;
  /** The compiler and its version, e.g. "12.4" for NVRTC. */
  nvrtcVersion: string;
  /** Which statistic of the samples `timeMs` is. */
  statistic: 'median' | 'mean';
}

/** Which GPU ran a configuration: the host, its CUDA ordinal there, and its PCI address when known. */
export interface GpuId {
  host: string;
  ordinal: number;
  pciBusId?: string;
}

export interface ConfigResult {
  config: Config;
  /** Kernel Tuner's cache key: the values in tune_params_keys order, formatted as Python's str() would, joined by ",". */
  key: string;
  status: ConfigStatus;
  /** The objective: the median of the timed launches (for a Kernel Tuner cache entry without our fields: its mean). */
  timeMs?: number;
  stats?: SampleStats;
  error?: { message: string; log?: string };
  /** Registers, local and shared memory, occupancy: for every configuration that was loaded on a device. */
  driver?: DriverMetrics;
  /** NVML's energy and power, when energy was asked for and the device reports it. */
  energy?: EnergyReadings;
  /** Why a configuration timed with energy asked for has none (no NVML, a device without power readings). */
  energyUnavailable?: string;
  /**
   * Quantities derived from the measurements, in order: edp (J·s) and GFLOPS/W where energy (and the flop count) is
   * known, then the run's own metrics (Kernel Tuner's `metrics`). Only for configurations that ran.
   */
  metrics?: Record<string, number>;
  geometry?: { grid: Dim3; block: Dim3 };
  timings?: EvaluationTimings;
  reproduce?: Reproduction;
  /** The GPU that loaded, verified and timed it (absent for results that never reached one). */
  gpu?: GpuId;
  /** Which launches had their outputs compared with the reference, all right (run/measurement.ts); absent for failures. */
  verified?: Verification;
  /** Anything the reader should know about how this result came about, e.g. why it stopped early. */
  note?: string;
  /** When the evaluation finished, ISO 8601 UTC. */
  timestamp?: string;
}

export type StopReason = 'completed' | 'max_fevals' | 'time_limit' | 'aborted';

/** The strategy `auto` chose and why, with the numbers behind the choice. */
export interface StrategyChoice {
  strategy: string;
  reason: string;
}

/** How a search went, in the few fields the panel, the reports and the CLI show: which strategy, why, why it stopped. */
export interface SearchSummary {
  strategy: string;
  /** Why this strategy ran, when `auto` chose it. */
  reason?: string;
  stopReason: StopReason;
  stopDetail?: string;
  evaluations: number;
}

export function searchSummaryOf(result: TuneResult): SearchSummary {
  return {
    strategy: result.strategy,
    ...(result.strategyChoice && { reason: result.strategyChoice.reason }),
    stopReason: result.stopReason,
    ...(result.stopDetail && { stopDetail: result.stopDetail }),
    evaluations: result.evaluations,
  };
}

/** How well a median is known: "±0.31 %", the wider side of its 95 % interval against it. */
export function formatMedianInterval(medianMs: number, interval: readonly [number, number]): string {
  const spread = Math.max(medianMs - interval[0], interval[1] - medianMs) / medianMs;
  return `±${Number((100 * spread).toPrecision(2))} %`;
}

/** "genetic_algorithm, chosen by auto: <why>. Stopped after 100 evaluations: 100 evaluations, its max_fevals." */
export function describeSearch(s: SearchSummary): string {
  const how = s.reason ? `${s.strategy}, chosen by auto: ${s.reason}` : s.strategy;
  return `${how}. Stopped after ${s.evaluations} evaluation${s.evaluations === 1 ? '' : 's'} (${s.stopReason}${s.stopDetail ? `: ${s.stopDetail}` : ''}).`;
}

export interface TuneResult {
  /** The best configuration with status 'ok' by the objective; undefined when none succeeded. */
  best: ConfigResult | undefined;
  /** What the search optimised; absent means time (results made before objectives could be chosen). */
  objective?: Objective;
  /** Every result in the order it was obtained: configurations skipped for exceeding device limits first, then each evaluation. */
  results: ConfigResult[];
  strategy: string;
  /** Distinct configurations evaluated (revisits served from memory do not count). */
  evaluations: number;
  elapsedMs: number;
  stopReason: StopReason;
  /** Why it stopped, in words: which budget and how much of it was spent, or the rule by which the strategy ended. */
  stopDetail?: string;
  /** Why this strategy ran, when `auto` chose it (from the space's size and the budget). */
  strategyChoice?: StrategyChoice;
  /** The seed the strategy's random choices came from: pass it again to repeat the search. */
  seed: number;
  /** The compiler every configuration was built with, and why it is not NVRTC when NVRTC was there to try. */
  compiler?: { backend: 'nvrtc' | 'nvcc'; note?: string };
  /**
   * The oracle's configuration, and its median time on the test when it was timed (the launch time limit scales with
   * it unless a limit was given; a run answered wholly from a cache times nothing).
   */
  reference?: { config: Config; timeMs?: number };
  /** The GPUs the search ran on (one worker each), when it ran on GPUs; each result names its own. */
  gpus?: GpuId[];
  /** The best configuration's profile, when one was asked for (TuneOptions.profile) and the backend can profile. */
  profile?: ConfigProfile;
  /** Why profiling the best configuration failed, when it did. */
  profileError?: string;
  /** What compute-sanitizer said of the best configuration, when it was asked for (TuneOptions.sanitize). */
  sanitizer?: SanitizerVerdict;
}

/**
 * Python's repr() of a float: the shortest round-trip digits, positional for exponents in [-4, 16), scientific otherwise
 * ("1e-05", "1.5e+16"), and always a fraction or exponent ("2.0"). Kernel Tuner's keys and JSON use this form.
 */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, expText] = x.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (exp < -4 || exp >= 16) {
    const frac = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${frac}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const fracPart = digits.slice(exp + 1);
  return `${sign}${intPart}.${fracPart === '' ? '0' : fracPart}`;
}

/**
 * Python's str() of a parameter value as Kernel Tuner writes it into keys: integers plainly, other numbers as Python floats,
 * booleans as True/False, strings as they are. JavaScript cannot tell 1.0 from 1, so an integral float is written "1"
 * where Kernel Tuner would write "1.0"; cache-file.ts indexes entries by recomputed keys so lookups agree either way.
 */
export function pythonStr(value: ParamValue): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'string') return value;
  return Number.isInteger(value) && Math.abs(value) < 1e16 ? String(value) : pythonFloatRepr(value);
}

/** Kernel Tuner's cache key of a configuration: its values in parameter order, joined by ",". */
export function configKey(config: Config, paramNames: readonly string[]): string {
  return paramNames
    .map((name) => {
      const v = config[name];
      if (v === undefined) throw new RangeError(`configuration has no value for tunable parameter '${name}'`);
      return pythonStr(v);
    })
    .join(',');
}

/**
 * What a search optimises (Kernel Tuner's objective and objective_higher_is_better): "time" (ms), "energy" (J per launch,
 * NVML's nvml_energy), "edp" (energy × time, J·s), or any other measured quantity by name (see measuredValues): a metric
 * of the run, "GFLOPS/W", a driver metric, an NVML reading.
 */
export interface Objective {
  name: string;
  higherIsBetter: boolean;
}

export const TIME_OBJECTIVE: Objective = { name: 'time', higherIsBetter: false };

/** What the objective is read from: a result, or its summary as the panel and the report hold it. */
export type Measured = Pick<ConfigResult, 'status' | 'timeMs' | 'driver' | 'energy' | 'metrics'>;

/**
 * Every number measured or derived for a configuration that ran, by the names metrics and objectives use: time (ms),
 * the driver's metrics, NVML's readings under Kernel Tuner's names with energy and power as short names for nvml_energy
 * and nvml_power, and the derived metrics.
 */
export function measuredValues(result: Measured): Record<string, number> {
  const values: Record<string, number> = {};
  if (result.timeMs !== undefined) values['time'] = result.timeMs;
  for (const [name, v] of Object.entries(result.driver ?? {})) if (typeof v === 'number') values[name] = v;
  if (result.energy) Object.assign(values, result.energy, { energy: result.energy.nvml_energy, power: result.energy.nvml_power });
  Object.assign(values, result.metrics);
  return values;
}

const UNITS: Record<string, string> = {
  time: 'ms',
  energy: 'J',
  nvml_energy: 'J',
  power: 'W',
  nvml_power: 'W',
  edp: 'J·s',
  core_freq: 'MHz',
  mem_freq: 'MHz',
  temperature: '°C',
  local_mem_bytes: 'B',
  static_shared_mem_bytes: 'B',
  dynamic_shared_mem_bytes: 'B',
};

/** A measured quantity with 4 significant digits and its unit where it has one ("1.612 J", "5.604 ms", "268.4 GFLOP/s"). */
export function formatMeasured(name: string, value: number): string {
  const unit = UNITS[name];
  return `${Number(value.toPrecision(4))}${unit ? ` ${unit}` : ''}`;
}

/** The objective's value for a configuration that ran (in its own units), undefined for one that did not or lacks it. */
export function objectiveValue(result: Measured, objective: Objective = TIME_OBJECTIVE): number | undefined {
  if (result.status !== 'ok' && result.status !== 'stopped_early') return undefined;
  const value = objective.name === 'time' ? result.timeMs : measuredValues(result)[objective.name];
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/**
 * The number every strategy minimises, the one place the objective's direction is applied: the objective's value, negated
 * when higher is better (as Kernel Tuner's cost function does), +Infinity for a configuration that failed or lacks it. A
 * configuration stopped early keeps the time of the launches it ran: far slower than the best, which is exactly what a
 * search should learn.
 */
export function objectiveOf(result: Measured, objective: Objective = TIME_OBJECTIVE): number {
  const value = objectiveValue(result, objective);
  if (value === undefined) return Infinity;
  return objective.higherIsBetter ? -value : value;
}

/** The best of some results by the objective: the first of the lowest objectiveOf among those with status 'ok'. */
export function bestOf<T extends Measured>(results: Iterable<T>, objective: Objective = TIME_OBJECTIVE): T | undefined {
  let best: T | undefined;
  let bestScore = Infinity;
  for (const r of results) {
    const score = objectiveOf(r, objective);
    if (r.status === 'ok' && score < bestScore) {
      best = r;
      bestScore = score;
    }
  }
  return best;
}
