// The tuner's shared vocabulary: what a configuration is, what evaluating one produces, and what a tuning run returns.
// Names and value conventions follow Kernel Tuner, so that its users recognise them and its cache files interoperate.

import type { TimingStats } from '../gpu/stats';
import type { Dim3 } from '../gpu/types';
import type { Verification } from './run/measurement';

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

export interface ResourceUsage {
  registers: number;
  sharedBytes: number;
  localBytes: number;
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
  resources?: ResourceUsage;
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

export interface TuneResult {
  /** The fastest configuration with status 'ok'; undefined when none succeeded. */
  best: ConfigResult | undefined;
  /** Every result in the order it was obtained: configurations skipped for exceeding device limits first, then each evaluation. */
  results: ConfigResult[];
  strategy: string;
  /** Distinct configurations evaluated (revisits served from memory do not count). */
  evaluations: number;
  elapsedMs: number;
  stopReason: StopReason;
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
 * The objective a strategy minimises: the time of a configuration that ran, +Infinity for one that failed. A configuration
 * stopped early keeps the time of the launches it ran: far slower than the best, which is exactly what a search should learn.
 */
export function objectiveOf(result: ConfigResult): number {
  return (result.status === 'ok' || result.status === 'stopped_early') && result.timeMs !== undefined ? result.timeMs : Infinity;
}
