// Kernel Tuner's JSON cache file, written and read the way Kernel Tuner does, so that either tool can resume, replay or
// analyse the other's runs:
//  - the header is json.dumps(header, indent="") with "cache": {} last, written without its final "}\n}";
//  - each finished configuration is appended as one line `\n"key": {...},` (one write call);
//  - closing replaces the trailing "," by "}\n}". A file cut off mid-run is still readable: the missing closing braces
//    are implied, and an incomplete last line (a write cut short) is dropped.
// Entry fields are Kernel Tuner's (the parameters, time, times, compile_time, verification_time, benchmark_time,
// strategy_time, framework_time, timestamp last); what Kernel Tuner has no field for is stored under lkt_* names, so our
// results round-trip without loss and Kernel Tuner ignores the extras. "time" holds our statistic, the median (recorded
// in lkt_reproduce.statistic); a failure holds the ErrorConfig string Kernel Tuner uses.
// A shard of a search (tune --shard I/N) writes its own cache with "lkt_shard" in the header; mergeCaches combines the
// shards' caches into one with the layout of a single run's.

import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readFileSync, readSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { computeStats } from '../../gpu/stats';
import type { SearchSpace } from '../space/search-space';
import type { Clock, Shard } from '../strategies/search';
import {
  configKey,
  pythonFloatRepr,
  type Config,
  type ConfigResult,
  type ConfigStatus,
  type Dim3,
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
};

// For entries Kernel Tuner wrote (no lkt_status): what its strings mean there. It writes InvalidConfig only for a block
// with too many threads, and RuntimeFailedConfig for "too many resources requested for launch".
const STATUS_OF_KT_ERROR: Record<KernelTunerError, FailureKind> = {
  InvalidConfig: 'exceeds_device_limits',
  CompilationFailedConfig: 'compile_error',
  RuntimeFailedConfig: 'launch_error',
};

const STATUSES: readonly ConfigStatus[] = [
  'ok', 'compile_error', 'launch_error', 'fault', 'timeout', 'wrong_result', 'restricted', 'exceeds_device_limits', 'stopped_early',
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
}

const MISMATCH_WHAT = {
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

export class SimulationMissError extends Error {
  override name = 'SimulationMissError';
  constructor(
    readonly path: string,
    readonly key: string,
    readonly config: Config,
  ) {
    super(
      `Configuration "${key}" (${Object.entries(config).map(([k, v]) => `${k}=${String(v)}`).join(', ')}) was never measured in ${path}; ` +
        'simulation replays measured configurations only. Tune it on a GPU with this cache file to add it.',
    );
  }
}

// ---------------------------------------------------------------- Python-compatible JSON

/** A number Python wrote (and Kernel Tuner reads) as a float: 4.0, never 4, so isinstance(x, float) holds. */
class PyFloat {
  constructor(readonly value: number) {}
}

/** Python's json.dumps(value) with its default separators (", " and ": "), on one line. */
function pyJson(v: unknown): string {
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
function openCacheText(header: CacheHeader): string {
  return pyJsonIndentEmpty({ ...header, cache: {} }).slice(0, -3);
}

// ---------------------------------------------------------------- entries ↔ results

type Entry = Record<string, unknown>;

const isNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const isDim3 = (x: unknown): x is Dim3 => Array.isArray(x) && x.length === 3 && x.every(isNumber);

/** The cache entry of a result; fields in Kernel Tuner's order, timestamp last as Kernel Tuner writes it. */
function toEntry(result: ConfigResult, paramNames: readonly string[]): Entry {
  const entry: Entry = {};
  for (const name of paramNames) entry[name] = result.config[name];
  const ran = result.status === 'ok' || result.status === 'stopped_early';
  if (ran && result.timeMs === undefined) throw new RangeError(`result "${result.key}" has status ${result.status} but no timeMs`);
  entry['time'] = ran ? new PyFloat(result.timeMs!) : KT_ERROR_OF[result.status as keyof typeof KT_ERROR_OF];
  if (result.stats) entry['times'] = result.stats.samplesMs.map((x) => new PyFloat(x));
  // Kernel Tuner's simulation mode needs these three on every entry (0 for a phase that did not run, as it writes).
  const t = result.timings;
  entry['compile_time'] = new PyFloat(t?.compileMs ?? 0);
  entry['verification_time'] = new PyFloat(t?.verifyMs ?? 0);
  entry['benchmark_time'] = new PyFloat(t?.benchmarkMs ?? 0);
  if (t?.strategyMs !== undefined) entry['strategy_time'] = new PyFloat(t.strategyMs);
  if (t?.frameworkMs !== undefined) entry['framework_time'] = new PyFloat(t.frameworkMs);
  entry['lkt_status'] = result.status;
  if (t) entry['lkt_load_time'] = t.loadMs;
  if (result.gpu) entry['lkt_gpu'] = { host: result.gpu.host, ordinal: result.gpu.ordinal, pci_bus_id: result.gpu.pciBusId };
  if (result.error) entry['lkt_error'] = result.error;
  if (result.note !== undefined) entry['lkt_note'] = result.note;
  if (result.resources) {
    const r = result.resources;
    entry['lkt_resources'] = { registers: r.registers, shared_bytes: r.sharedBytes, local_bytes: r.localBytes };
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

function fromEntry(entry: Entry, config: Config, key: string): ConfigResult {
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
  const res = entry['lkt_resources'] as Record<string, number> | undefined;
  if (res) result.resources = { registers: res['registers']!, sharedBytes: res['shared_bytes']!, localBytes: res['local_bytes']! };
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
function parseCacheText(path: string, text: string): ParsedCache {
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

function sameProblemSize(a: unknown, b: unknown): boolean {
  const x = problemSizeList(a);
  const y = problemSizeList(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

// ---------------------------------------------------------------- the cache file

export class CacheFile {
  private readonly byKey = new Map<string, { entry: Entry; config: Config }>();
  private fd: number | undefined;

  private constructor(
    readonly path: string,
    readonly header: CacheHeader,
    entries: [string, Entry][],
    /** What was repaired when the file was read (an incomplete last entry dropped), if anything. */
    readonly repaired: string | undefined,
  ) {
    for (const [rawKey, entry] of entries) {
      const config: Config = {};
      for (const name of header.tune_params_keys) {
        const v = entry[name];
        if (typeof v !== 'number' && typeof v !== 'string' && typeof v !== 'boolean') {
          throw new CacheFormatError(path, `entry "${rawKey}" has no value for parameter "${name}"`);
        }
        config[name] = v;
      }
      // Indexed by our key of its values: a float Kernel Tuner wrote as "1.0" in the key is found as 1 here.
      this.byKey.set(configKey(config, header.tune_params_keys), { entry, config });
    }
  }

  /** Reads a cache without preparing it for writing (for replay and inspection). */
  static load(path: string): CacheFile {
    if (!existsSync(path)) throw new CacheFormatError(path, 'the file does not exist');
    const parsed = parseCacheText(path, readFileSync(path, 'utf8'));
    return new CacheFile(path, parsed.header, parsed.entries, parsed.repaired);
  }

  /**
   * Creates the cache, or resumes an existing one made for the same device, kernel, problem size and parameter names
   * (CacheMismatchError otherwise, naming the field). The file is left open for appending until close().
   */
  static open(path: string, identity: CacheIdentity): CacheFile {
    const keys = Object.keys(identity.tuneParams);
    const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
    // An empty file is what a crash between creating and writing the header leaves: start afresh.
    if (text.trim() === '') {
      const header: CacheHeader = {
        device_name: identity.deviceName,
        kernel_name: identity.kernelName,
        problem_size: identity.problemSize,
        tune_params_keys: keys,
        tune_params: identity.tuneParams,
        objective: 'time',
        ...(identity.shard && { lkt_shard: { index: identity.shard.index, count: identity.shard.count } }),
      };
      writeFileSync(path, openCacheText(header));
      return new CacheFile(path, header, [], undefined).openForAppend();
    }
    const parsed = parseCacheText(path, text);
    if (!parsed.cacheIsLast) throw new CacheFormatError(path, 'its "cache" object is not the last field, so entries cannot be appended to it');
    const h = parsed.header;
    if (h.device_name !== identity.deviceName) throw new CacheMismatchError(path, 'device_name', h.device_name, identity.deviceName);
    if (h.kernel_name !== identity.kernelName) throw new CacheMismatchError(path, 'kernel_name', h.kernel_name, identity.kernelName);
    if ('problem_size' in h && !sameProblemSize(h.problem_size, identity.problemSize)) {
      throw new CacheMismatchError(path, 'problem_size', h.problem_size, identity.problemSize);
    }
    if (h.tune_params_keys.join('\u0000') !== keys.join('\u0000')) {
      const sameSet = h.tune_params_keys.length === keys.length && keys.every((k) => h.tune_params_keys.includes(k));
      const detail = sameSet ? ' (the same names in another order; the order defines the keys)' : '';
      throw new CacheMismatchError(path, 'tune_params_keys', h.tune_params_keys, keys, detail);
    }
    if (shardText(h.lkt_shard) !== shardText(identity.shard)) throw new CacheMismatchError(path, 'lkt_shard', shardText(h.lkt_shard), shardText(identity.shard));
    if (parsed.openText !== text) {
      // Written aside and renamed, so a crash here cannot lose the results already in the file.
      writeFileSync(`${path}.tmp`, parsed.openText);
      renameSync(`${path}.tmp`, path);
    }
    return new CacheFile(path, h, parsed.entries, parsed.repaired).openForAppend();
  }

  private openForAppend(): this {
    // Append mode (every write lands at the end) with read access for close() to look at the last byte.
    this.fd = openSync(this.path, 'a+');
    return this;
  }

  get size(): number {
    return this.byKey.size;
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  get(key: string): ConfigResult | undefined {
    const e = this.byKey.get(key);
    return e && fromEntry(e.entry, { ...e.config }, key);
  }

  /** Every entry as the file holds it, by our key of its values, in file order. */
  rawEntries(): IterableIterator<[string, { entry: Entry; config: Config }]> {
    return this.byKey.entries();
  }

  /** Every cached result, in file order. */
  results(): ConfigResult[] {
    return [...this.byKey].map(([key, e]) => fromEntry(e.entry, { ...e.config }, key));
  }

  /** Appends a result for a configuration not in the cache yet (one write; no fsync). */
  append(result: ConfigResult): void {
    if (this.fd === undefined) throw new Error(`Cache ${this.path} is not open for writing (it was loaded read-only, or closed)`);
    const keys = this.header.tune_params_keys;
    const key = configKey(result.config, keys);
    if (key !== result.key) throw new RangeError(`result key "${result.key}" does not match its configuration, whose key is "${key}"`);
    if (this.byKey.has(key)) {
      throw new RangeError(`Cache ${this.path} already holds configuration "${key}"; the first result for a key is kept, as Kernel Tuner does`);
    }
    const line = pyJson(toEntry(result, keys));
    writeSync(this.fd, `\n${JSON.stringify(key)}: ${line},`);
    // Kept as parsed from the line written, so that get() returns exactly what a later load() will return.
    this.byKey.set(key, { entry: JSON.parse(line) as Entry, config: { ...result.config } });
  }

  /** Completes the JSON (the trailing "," becomes "}\n}") and closes the file. */
  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      const size = fstatSync(fd).size;
      const last = Buffer.alloc(1);
      // The file ends with "," after entries and with "{" after a bare header.
      if (size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last.toString() === ',') ftruncateSync(fd, size - 1);
      writeSync(fd, '}\n}');
    } finally {
      closeSync(fd);
    }
  }
}

// ---------------------------------------------------------------- simulation

export interface Replay {
  /** Returns the cached result of a configuration (on any worker); SimulationMissError when it was never measured. */
  evaluate: (config: Config) => Promise<ConfigResult>;
  /** Simulated time: advances by each replayed result's compile, load, verification and benchmark time. */
  clock: Clock;
}

/**
 * Replays a cache as an evaluator, so any strategy runs with no GPU (Kernel Tuner's simulation mode). With a search
 * space, a configuration outside it comes back as 'restricted' with the reason, as Kernel Tuner reports InvalidConfig.
 */
export function replay(cache: CacheFile, options: { space?: SearchSpace } = {}): Replay {
  const { space } = options;
  const keys = cache.header.tune_params_keys;
  if (space && space.paramNames.join('\u0000') !== keys.join('\u0000')) {
    throw new CacheMismatchError(cache.path, 'tune_params_keys', keys, space.paramNames);
  }
  let simulatedMs = 0;
  return {
    clock: { now: () => simulatedMs },
    evaluate: async (config) => {
      const key = configKey(config, keys);
      const result = cache.get(key);
      if (result) {
        const t = result.timings;
        if (t) simulatedMs += t.compileMs + t.loadMs + t.verifyMs + t.benchmarkMs;
        return result;
      }
      const reason = space?.explain(config);
      if (reason !== undefined) return { config, key, status: 'restricted', error: { message: `not in the search space: ${reason}` } };
      throw new SimulationMissError(cache.path, key, config);
    },
  };
}


// ---------------------------------------------------------------- merging shards

/** Caches that cannot be merged: the reason names the files and the values that differ. */
export class CacheMergeError extends Error {
  override name = 'CacheMergeError';
}

/** "2/4" for shard 2 of 4, "the whole space" for a cache that is no shard. */
function shardText(shard: Shard | undefined): string {
  return shard ? `${shard.index}/${shard.count}` : 'the whole space';
}

/** Entry fields Kernel Tuner writes as floats (Python's json writes 4.0, never 4): kept so when a merge rewrites them. */
const FLOAT_FIELDS = ['time', 'compile_time', 'verification_time', 'benchmark_time', 'strategy_time', 'framework_time'];

function pyEntry(entry: Entry): Entry {
  const out: Entry = { ...entry };
  for (const f of FLOAT_FIELDS) if (isNumber(out[f])) out[f] = new PyFloat(out[f]);
  if (Array.isArray(out['times']) && out['times'].every(isNumber)) out['times'] = out['times'].map((x) => new PyFloat(x));
  return out;
}

export interface MergeSummary {
  /** Configurations in the merged cache. */
  entries: number;
  /** Configurations found in more than one input (the first input's entry is kept, as Kernel Tuner keeps the first). */
  duplicates: number;
  /** The shards merged ("0/4", ...), empty when the inputs are no shards. */
  shards: string[];
}

/**
 * Combines caches of one search (the shards of `tune --shard`, or any caches of the same kernel, device, problem size
 * and parameters) into `out`, in the layout of a single run's cache with its entries in search-space order. Refuses
 * (CacheMergeError, with the reason) caches of another device, kernel, problem size or parameters, shards of different
 * splits, and a missing shard unless `partial`. `out` is written whole and renamed into place; it may be one of the
 * inputs, but no other existing file is overwritten.
 */
export function mergeCaches(inputs: readonly string[], out: string, options: { partial?: boolean } = {}): MergeSummary {
  if (inputs.length === 0) throw new CacheMergeError('no cache files to merge');
  if (existsSync(out) && !inputs.some((p) => resolve(p) === resolve(out))) {
    throw new CacheMergeError(`${out} exists and is not one of the caches merged: choose another output file, or delete it first`);
  }
  const caches = inputs.map((p) => CacheFile.load(p));
  const [first, ...others] = caches as [CacheFile, ...CacheFile[]];
  const h0 = first.header;
  const same: [keyof typeof MISMATCH_WHAT, (h: CacheHeader) => unknown, (a: unknown, b: unknown) => boolean][] = [
    ['device_name', (h) => h.device_name, (a, b) => a === b],
    ['kernel_name', (h) => h.kernel_name, (a, b) => a === b],
    ['problem_size', (h) => h.problem_size, sameProblemSize],
    ['tune_params_keys', (h) => h.tune_params_keys, (a, b) => JSON.stringify(a) === JSON.stringify(b)],
    ['tune_params', (h) => h.tune_params, (a, b) => JSON.stringify(a) === JSON.stringify(b)],
  ];
  for (const c of others) {
    for (const [field, get, equal] of same) {
      if (!equal(get(h0), get(c.header))) {
        throw new CacheMergeError(
          `${c.path} holds results for ${MISMATCH_WHAT[field]} than ${first.path} (${field}: ${JSON.stringify(get(c.header))} against ${JSON.stringify(get(h0))}): ` +
            'only caches of one search merge',
        );
      }
    }
  }
  const shards = checkShards(caches, options.partial ?? false);

  const paramNames = h0.tune_params_keys;
  const merged = new Map<string, Entry>();
  let duplicates = 0;
  for (const c of caches) {
    for (const [key, { entry }] of c.rawEntries()) {
      if (merged.has(key)) duplicates++;
      else merged.set(key, entry);
    }
  }
  // Search-space order: the parameters' values in the order the header lists them, the last parameter fastest.
  const rank = (entry: Entry) => paramNames.map((name) => h0.tune_params[name]?.findIndex((v) => v === entry[name]) ?? -1);
  const ordered = [...merged]
    .map(([key, entry]) => ({ key, entry, rank: rank(entry) }))
    .sort((a, b) => {
      for (let i = 0; i < a.rank.length; i++) if (a.rank[i] !== b.rank[i]) return a.rank[i]! - b.rank[i]!;
      return 0;
    });
  const { lkt_shard: _shard, ...header } = h0;
  const lines = ordered.map(({ key, entry }) => `\n${JSON.stringify(key)}: ${pyJson(pyEntry(entry))}`);
  const text = `${openCacheText(header)}${lines.join(',')}}\n}`;
  writeFileSync(`${out}.tmp`, text);
  renameSync(`${out}.tmp`, out);
  return { entries: ordered.length, duplicates, shards };
}

/** Shards must all be shards of one split, each once; all of them unless a partial merge is asked for. */
function checkShards(caches: readonly CacheFile[], partial: boolean): string[] {
  const sharded = caches.filter((c) => c.header.lkt_shard);
  if (sharded.length === 0) return [];
  if (sharded.length !== caches.length) {
    const whole = caches.find((c) => !c.header.lkt_shard)!;
    throw new CacheMergeError(`${whole.path} is no shard, but ${sharded[0]!.path} is shard ${shardText(sharded[0]!.header.lkt_shard)}: merge the shards of one search`);
  }
  const count = sharded[0]!.header.lkt_shard!.count;
  const other = sharded.find((c) => c.header.lkt_shard!.count !== count);
  if (other) throw new CacheMergeError(`${other.path} is shard ${shardText(other.header.lkt_shard)} but ${sharded[0]!.path} is shard ${shardText(sharded[0]!.header.lkt_shard)}: the shards of one search have one count`);
  const seen = new Map<number, string>();
  for (const c of sharded) {
    const index = c.header.lkt_shard!.index;
    if (seen.has(index)) throw new CacheMergeError(`${c.path} and ${seen.get(index)} are both shard ${index}/${count}`);
    seen.set(index, c.path);
  }
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  if (missing.length > 0 && !partial) {
    throw new CacheMergeError(
      `shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${count}`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} missing ` +
        `(given: ${[...seen.keys()].sort((a, b) => a - b).map((i) => `${i}/${count}`).join(', ')}): run ${missing.length > 1 ? 'them' : 'it'}, or merge what is there with --partial`,
    );
  }
  return [...seen.keys()].sort((a, b) => a - b).map((i) => `${i}/${count}`);
}
