// Kernel Tuner's JSON cache file, written and read the way Kernel Tuner does, so that either tool can resume, replay or
// analyse the other's runs:
//  - the header is json.dumps(header, indent="") with "cache": {} last, written without its final "}\n}";
//  - each finished configuration is appended as one line `\n"key": {...},` (one write call);
//  - closing replaces the trailing "," by "}\n}". A file cut off mid-run is still readable: the missing closing braces
//    are implied, and an incomplete last line (a write cut short) is dropped.
// Entry fields are Kernel Tuner's (the parameters, time, times, compile_time, verification_time, benchmark_time,
// strategy_time, framework_time, then the observers' and the metrics' fields at top level as Kernel Tuner writes them:
// num_regs and the other driver metrics, nvml_energy, nvml_power, core_freq, mem_freq, temperature, each metric by its
// name, listed in lkt_metrics; timestamp last); what Kernel Tuner has no field for is stored under lkt_* names, so our
// results round-trip without loss and Kernel Tuner ignores the extras. "time" holds our statistic, the median (recorded
// in lkt_reproduce.statistic), "times" every timed launch (as many as the series took: an adaptive series stops when
// lkt_median_interval, the 95 % interval of the median, is narrow enough); a failure holds the ErrorConfig string
// Kernel Tuner uses.
// A shard of a search (tune --shard I/N) writes its own cache with "lkt_shard" in the header; mergeCaches (merge.ts)
// combines the shards' caches into one with the layout of a single run's.
import { computeStats } from '../../gpu/stats';
import type { Shard } from '../strategies/search';
import {
  pythonFloatRepr,
  type Config,
  type ConfigResult,
  type ConfigStatus,
  type Dim3,
  type DriverMetrics,
  type EnergyReadings,
  type FailureKind,
  type ProblemSizeSpec,
  type Reproduction,
  type TuneParams,
} from '../types';


/** Kernel Tuner's ErrorConfig strings. */
export type KernelTunerError = 'InvalidConfig' | 'CompilationFailedConfig' | 'RuntimeFailedConfig';

/** The string Kernel Tuner writes into `time` for each kind of failure ('stopped_early' is not one: it has a time). */
export const KT_ERROR_OF: Record<Exclude<FailureKind, 'stopped_early'>, KernelTunerError> = {
  restricted: 'InvalidConfig',
  exceeds_device_limits: 'InvalidConfig',
  compile_error: 'CompilationFailedConfig',
  launch_error: 'RuntimeFailedConfig',
  fault: 'RuntimeFailedConfig',
  timeout: 'RuntimeFailedConfig',
  wrong_result: 'RuntimeFailedConfig',
  inconsistent_timing: 'RuntimeFailedConfig',
};

// For entries Kernel Tuner wrote (no lkt_status): what its strings mean there. It writes InvalidConfig only for a block
// with too many threads, and RuntimeFailedConfig for "too many resources requested for launch".
const STATUS_OF_KT_ERROR: Record<KernelTunerError, FailureKind> = {
  InvalidConfig: 'exceeds_device_limits',
  CompilationFailedConfig: 'compile_error',
  RuntimeFailedConfig: 'launch_error',
};

const STATUSES: readonly ConfigStatus[] = [
  'ok', 'compile_error', 'launch_error', 'fault', 'timeout', 'wrong_result', 'restricted', 'exceeds_device_limits', 'stopped_early', 'inconsistent_timing',
];

export interface CacheHeader {
  device_name: string;
  kernel_name: string;
  problem_size: ProblemSizeSpec;
  tune_params_keys: string[];
  tune_params: TuneParams;
  objective: string;
  /** Written by a shard of a search: which share of the space this cache holds (merged caches have none). */
  lkt_shard?: Shard;
}

/** What a cache is for: results are only reused for the same device, kernel, problem size and parameter names. */
export interface CacheIdentity {
  deviceName: string;
  kernelName: string;
  problemSize: ProblemSizeSpec;
  tuneParams: TuneParams;
  /** The share of the space this run evaluates, when it is a shard of a search. */
  shard?: Shard;
  /** What the run optimises, for the header of a new cache (Kernel Tuner's objective); default time. Results of a cache are reused whatever it was. */
  objective?: string;
}

export const MISMATCH_WHAT = {
  device_name: 'another device',
  kernel_name: 'another kernel',
  problem_size: 'another problem size',
  tune_params_keys: 'other tunable parameters',
  tune_params: 'other values of the tunable parameters',
  lkt_shard: 'another share of the search',
} as const;

export class CacheMismatchError extends Error {
  override name = 'CacheMismatchError';
  constructor(
    readonly path: string,
    readonly field: keyof typeof MISMATCH_WHAT,
    readonly cached: unknown,
    readonly requested: unknown,
    detail = '',
  ) {
    super(
      `Cache ${path} holds results for ${MISMATCH_WHAT[field]} (${field}): ` +
        `the cache has ${JSON.stringify(cached)}, this run has ${JSON.stringify(requested)}${detail}. ` +
        'Use another cache file, or delete this one to start over.',
    );
  }
}

export class CacheFormatError extends Error {
  override name = 'CacheFormatError';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`Cache ${path} is not a readable Kernel Tuner cache: ${reason}`);
  }
}

// ---------------------------------------------------------------- Python-compatible JSON

/** A number Python wrote (and Kernel Tuner reads) as a float: 4.0, never 4, so isinstance(x, float) holds. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** Python's json.dumps(value) with its default separators (", " and ": "), on one line. */
export function pyJson(v: unknown): string {
  if (v instanceof PyFloat) return pythonFloatRepr(v.value);
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pythonFloatRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (v !== null && typeof v === 'object') {
    const items = Object.entries(v).filter(([, x]) => x !== undefined);
    return `{${items.map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(', ')}}`;
  }
  return JSON.stringify(v);
}

/** Python's json.dumps(value, indent=""): every nested item on its own line, no indentation. */
function pyJsonIndentEmpty(v: unknown): string {
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `[\n${v.map(pyJsonIndentEmpty).join(',\n')}\n]`;
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) {
    const items = Object.entries(v);
    return items.length === 0 ? '{}' : `{\n${items.map(([k, x]) => `${JSON.stringify(k)}: ${pyJsonIndentEmpty(x)}`).join(',\n')}\n}`;
  }
  return pyJson(v);
}

/** "2024-05-01 12:34:56.123000+00:00", Python's str(datetime.now(timezone.utc)), from an ISO timestamp. */
function pythonTimestamp(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) throw new RangeError(`invalid timestamp ${iso}`);
  return `${d.toISOString().replace('T', ' ').replace('Z', '')}000+00:00`;
}

function isoTimestamp(python: unknown): string | undefined {
  if (typeof python !== 'string') return undefined;
  // Python writes microseconds; Date keeps milliseconds.
  const d = new Date(python.replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** The start of a cache, up to its open "cache" object: Kernel Tuner writes json.dumps(header + "cache": {}, indent="")
 *  without its last 3 characters, "}\n}", and then appends the entries. */
export function openCacheText(header: CacheHeader): string {
  return pyJsonIndentEmpty({ ...header, cache: {} }).slice(0, -3);
}

// ---------------------------------------------------------------- entries ↔ results

export type Entry = Record<string, unknown>;

export const isNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const isDim3 = (x: unknown): x is Dim3 => Array.isArray(x) && x.length === 3 && x.every(isNumber);

/** The cache entry of a result; fields in Kernel Tuner's order, timestamp last as Kernel Tuner writes it. */
export function toEntry(result: ConfigResult, paramNames: readonly string[]): Entry {
  const entry: Entry = {};
  for (const name of paramNames) entry[name] = result.config[name];
  const ran = result.status === 'ok' || result.status === 'stopped_early';
  if (ran && result.timeMs === undefined) throw new RangeError(`result "${result.key}" has status ${result.status} but no timeMs`);
  entry['time'] = ran ? new PyFloat(result.timeMs!) : KT_ERROR_OF[result.status as keyof typeof KT_ERROR_OF];
  if (result.stats) entry['times'] = result.stats.samplesMs.map((x) => new PyFloat(x));
  // How well the time is known: the 95 % interval of the median (its launches are the length of times).
  if (result.stats?.medianIntervalMs) entry['lkt_median_interval'] = result.stats.medianIntervalMs.map((x) => new PyFloat(x));
  // Kernel Tuner's simulation mode needs these three on every entry (0 for a phase that did not run, as it writes).
  const t = result.timings;
  entry['compile_time'] = new PyFloat(t?.compileMs ?? 0);
  entry['verification_time'] = new PyFloat(t?.verifyMs ?? 0);
  entry['benchmark_time'] = new PyFloat(t?.benchmarkMs ?? 0);
  if (t?.strategyMs !== undefined) entry['strategy_time'] = new PyFloat(t.strategyMs);
  if (t?.frameworkMs !== undefined) entry['framework_time'] = new PyFloat(t.frameworkMs);
  for (const [name, value] of Object.entries(result.driver ?? {})) entry[name] = name === 'occupancy' ? new PyFloat(value as number) : value;
  for (const [name, value] of Object.entries(result.energy ?? {})) entry[name] = new PyFloat(value);
  for (const [name, value] of Object.entries(result.metrics ?? {})) entry[name] = new PyFloat(value);
  entry['lkt_status'] = result.status;
  if (result.metrics) entry['lkt_metrics'] = Object.keys(result.metrics);
  if (t) entry['lkt_load_time'] = t.loadMs;
  if (result.gpu) entry['lkt_gpu'] = { host: result.gpu.host, ordinal: result.gpu.ordinal, pci_bus_id: result.gpu.pciBusId };
  if (result.error) entry['lkt_error'] = result.error;
  if (result.note !== undefined) entry['lkt_note'] = result.note;
  if (result.energyUnavailable !== undefined) entry['lkt_energy_unavailable'] = result.energyUnavailable;
  if (result.verified) {
    const v = result.verified;
    entry['lkt_verified'] = { input_sets: v.inputSets, timed_launches: v.timedLaunches, of: v.of, seed: v.seed, mode: v.mode };
  }
  if (result.geometry || result.reproduce) {
    const r = result.reproduce;
    entry['lkt_reproduce'] = {
      source_hash: r?.sourceHash,
      defines: r?.defines,
      compiler_options: r?.compilerOptions,
      grid: result.geometry?.grid,
      block: result.geometry?.block,
      device_name: r?.deviceName,
      driver_version: r?.driverVersion,
      nvrtc_version: r?.nvrtcVersion,
      statistic: r?.statistic,
    };
  }
  entry['timestamp'] = pythonTimestamp(result.timestamp ?? new Date().toISOString());
  return entry;
}

export function fromEntry(entry: Entry, config: Config, key: string): ConfigResult {
  const time = entry['time'];
  const lktStatus = entry['lkt_status'];
  let status: ConfigStatus;
  let error: ConfigResult['error'];
  if (typeof lktStatus === 'string' && (STATUSES as readonly string[]).includes(lktStatus)) status = lktStatus as ConfigStatus;
  else if (isNumber(time)) status = 'ok';
  else if (typeof time === 'string' && time in STATUS_OF_KT_ERROR) status = STATUS_OF_KT_ERROR[time as KernelTunerError];
  else {
    status = 'launch_error';
    error = { message: `Kernel Tuner recorded ${JSON.stringify(time)} for this configuration` };
  }
  const result: ConfigResult = { config, key, status };
  if (isNumber(time)) result.timeMs = time;
  const times = entry['times'];
  if (Array.isArray(times) && times.length > 0 && times.every(isNumber)) result.stats = computeStats(times);
  const lktError = entry['lkt_error'] as ConfigResult['error'] | undefined;
  if (lktError && typeof lktError.message === 'string') result.error = lktError;
  else if (error) result.error = error;
  // Our entries carry lkt_load_time exactly when the result had timings; Kernel Tuner's entries always have timings.
  const hasTimings = 'lkt_load_time' in entry || (lktStatus === undefined && 'compile_time' in entry);
  if (hasTimings) {
    result.timings = {
      compileMs: Number(entry['compile_time'] ?? 0),
      loadMs: Number(entry['lkt_load_time'] ?? 0),
      verifyMs: Number(entry['verification_time'] ?? 0),
      benchmarkMs: Number(entry['benchmark_time'] ?? 0),
    };
    if (isNumber(entry['strategy_time'])) result.timings.strategyMs = entry['strategy_time'];
    if (isNumber(entry['framework_time'])) result.timings.frameworkMs = entry['framework_time'];
  }
  const gpu = entry['lkt_gpu'] as Record<string, unknown> | undefined;
  if (gpu && typeof gpu['host'] === 'string' && isNumber(gpu['ordinal'])) {
    result.gpu = { host: gpu['host'], ordinal: gpu['ordinal'], ...(typeof gpu['pci_bus_id'] === 'string' && { pciBusId: gpu['pci_bus_id'] }) };
  }
  if (typeof entry['lkt_note'] === 'string') result.note = entry['lkt_note'];
  const driver = driverMetricsOf(entry);
  if (driver) result.driver = driver;
  if (isNumber(entry['nvml_energy']) && isNumber(entry['nvml_power'])) {
    const energy: EnergyReadings = { nvml_energy: entry['nvml_energy'], nvml_power: entry['nvml_power'] };
    for (const name of ['core_freq', 'mem_freq', 'temperature'] as const) if (isNumber(entry[name])) energy[name] = entry[name];
    result.energy = energy;
  }
  if (typeof entry['lkt_energy_unavailable'] === 'string') result.energyUnavailable = entry['lkt_energy_unavailable'];
  const metricNames = entry['lkt_metrics'];
  if (Array.isArray(metricNames)) {
    const metrics = Object.fromEntries(metricNames.flatMap((name) => (typeof name === 'string' && isNumber(entry[name]) ? [[name, entry[name]]] : [])));
    if (Object.keys(metrics).length > 0) result.metrics = metrics;
  }
  const verified = entry['lkt_verified'] as Record<string, unknown> | undefined;
  if (verified && isNumber(verified['input_sets']) && isNumber(verified['of']) && Array.isArray(verified['timed_launches']) && verified['timed_launches'].every(isNumber)) {
    result.verified = {
      inputSets: verified['input_sets'],
      timedLaunches: verified['timed_launches'],
      of: verified['of'],
      ...(isNumber(verified['seed']) && { seed: verified['seed'] }),
      ...(verified['mode'] === 'kernel_tuner' && { mode: 'kernel_tuner' as const }),
    };
  }
  const rep = entry['lkt_reproduce'] as Record<string, unknown> | undefined;
  if (rep) {
    if (isDim3(rep['grid']) && isDim3(rep['block'])) result.geometry = { grid: rep['grid'], block: rep['block'] };
    if (typeof rep['source_hash'] === 'string') {
      result.reproduce = {
        sourceHash: rep['source_hash'],
        defines: rep['defines'] as Record<string, string>,
        compilerOptions: rep['compiler_options'] as string[],
        deviceName: rep['device_name'] as string,
        driverVersion: rep['driver_version'] as number,
        nvrtcVersion: rep['nvrtc_version'] as string,
        statistic: rep['statistic'] as Reproduction['statistic'],
      };
    }
  }
  const timestamp = isoTimestamp(entry['timestamp']);
  if (timestamp !== undefined) result.timestamp = timestamp;
  return result;
}

const OPTIONAL_DRIVER_METRICS = ['dynamic_shared_mem_bytes', 'max_threads_per_block', 'active_blocks_per_sm', 'active_warps_per_sm', 'occupancy'] as const;

/** The driver's metrics of an entry: top-level fields (Kernel Tuner's num_regs), or an older cache's lkt_resources. */
function driverMetricsOf(entry: Entry): DriverMetrics | undefined {
  if (isNumber(entry['num_regs'])) {
    const driver: DriverMetrics = {
      num_regs: entry['num_regs'],
      local_mem_bytes: Number(entry['local_mem_bytes'] ?? 0),
      static_shared_mem_bytes: Number(entry['static_shared_mem_bytes'] ?? 0),
    };
    for (const name of OPTIONAL_DRIVER_METRICS) if (isNumber(entry[name])) driver[name] = entry[name];
    const source = entry['occupancy_source'];
    if (source === 'driver' || source === 'calculator') driver.occupancy_source = source;
    return driver;
  }
  const legacy = entry['lkt_resources'] as Record<string, unknown> | undefined;
  if (legacy && isNumber(legacy['registers'])) {
    return { num_regs: legacy['registers'], local_mem_bytes: Number(legacy['local_bytes'] ?? 0), static_shared_mem_bytes: Number(legacy['shared_bytes'] ?? 0) };
  }
  return undefined;
}

// ---------------------------------------------------------------- reading

interface ParsedCache {
  header: CacheHeader;
  entries: [string, Entry][];
  /** The file's text made ready for appending (closing braces removed, incomplete last line dropped, "," at the end). */
  openText: string;
  /** What had to be repaired, if anything. */
  repaired?: string;
  /** Entries are appended at the end of the file, which must therefore be the end of the "cache" object. */
  cacheIsLast: boolean;
}

function tryParse(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the two closing braces of a complete file, whatever its formatting. */
function stripClosing(text: string): string {
  let t = text.trimEnd();
  for (let i = 0; i < 2; i++) t = t.slice(0, -1).trimEnd();
  return t;
}

/** Reads a complete or cut-off cache file text, as Kernel Tuner's correct_open_cache does, and more forgivingly. */
export function parseCacheText(path: string, text: string): ParsedCache {
  const trimmed = text.trimEnd();
  let data = tryParse(trimmed);
  let body = data ? stripClosing(trimmed) : '';
  let repaired: string | undefined;
  if (!data) {
    // An open file: restore the closing braces Kernel Tuner leaves off; failing that, drop a last line cut short.
    const lastLine = trimmed.lastIndexOf('\n');
    const candidates: { body: string; repaired?: string }[] = [{ body: trimmed.replace(/,$/, '') }];
    if (lastLine > 0) {
      candidates.push({
        body: trimmed.slice(0, lastLine).trimEnd().replace(/,$/, ''),
        repaired: `dropped an incomplete last entry (${trimmed.length - lastLine - 1} characters)`,
      });
    }
    for (const c of candidates) {
      data = tryParse(`${c.body}}\n}`);
      if (data) {
        body = c.body;
        repaired = c.repaired;
        break;
      }
    }
  }
  if (!data) throw new CacheFormatError(path, 'it is not JSON, even with its closing braces restored and an incomplete last line dropped');

  const cache = data['cache'];
  if (cache === null || typeof cache !== 'object' || Array.isArray(cache)) throw new CacheFormatError(path, 'it has no "cache" object');
  for (const [field, ok] of [
    ['device_name', typeof data['device_name'] === 'string'],
    ['kernel_name', typeof data['kernel_name'] === 'string'],
    ['tune_params_keys', Array.isArray(data['tune_params_keys']) && (data['tune_params_keys'] as unknown[]).every((k) => typeof k === 'string')],
    ['tune_params', data['tune_params'] !== null && typeof data['tune_params'] === 'object'],
  ] as const) {
    if (!ok) throw new CacheFormatError(path, `its header field "${field}" is missing or malformed`);
  }
  const entries = Object.entries(cache as Record<string, Entry>);
  const { cache: _cache, ...header } = data;
  const openText = body.endsWith('{') || body.endsWith(',') ? body : `${body},`;
  const cacheIsLast = Object.keys(data).at(-1) === 'cache';
  return { header: header as unknown as CacheHeader, entries, openText, cacheIsLast, ...(repaired ? { repaired } : {}) };
}

function problemSizeList(p: unknown): unknown[] {
  return Array.isArray(p) ? p : [p];
}

export function sameProblemSize(a: unknown, b: unknown): boolean {
  const x = problemSizeList(a);
  const y = problemSizeList(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** "2/4" for shard 2 of 4, "the whole space" for a cache that is no shard. */
export function shardText(shard: Shard | undefined): string {
  return shard ? `${shard.index}/${shard.count}` : 'the whole space';
}

