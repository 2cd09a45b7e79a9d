// The cache file of one run: opened (created, resumed or checked against the run's identity), read by configuration,
// appended to as each result comes, and closed the way Kernel Tuner closes it (the format: format.ts).
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readFileSync, readSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import type { Evaluate } from '../strategies/search';
import { constants as zlibConstants, gunzipSync } from 'node:zlib';
import { configKey, type Config, type ConfigResult } from '../types';
import {
  CacheFormatError,
  CacheMismatchError,
  fromEntry,
  openCacheText,
  parseCacheText,
  pyJson,
  sameProblemSize,
  shardText,
  toEntry,
  type CacheHeader,
  type CacheIdentity,
  type Entry,
} from './format';

// ---------------------------------------------------------------- the cache file

/** A cache file's text; a gzipped one is unpacked (a gzip cut short gives what it holds, as a cut-off cache does). */
function readCacheText(path: string): string {
  const bytes = readFileSync(path);
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes.toString('utf8');
  return gunzipSync(bytes, { finishFlush: zlibConstants.Z_SYNC_FLUSH }).toString('utf8');
}

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

  /** Reads a cache without preparing it for writing (for replay and inspection); gzipped as the benchmark hub ships them, too. */
  static load(path: string): CacheFile {
    if (!existsSync(path)) throw new CacheFormatError(path, 'the file does not exist');
    const parsed = parseCacheText(path, readCacheText(path));
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
        objective: identity.objective ?? 'time',
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

/**
 * An evaluation answered from the cache where it holds the configuration, else evaluated and appended to it (a run
 * without a cache evaluates everything). `complete` adds what is derived from a result (its metrics) either way, before
 * it is written, so that the cache holds them as Kernel Tuner's does.
 */
export function throughCache(cache: CacheFile | undefined, evaluate: Evaluate, complete: (result: ConfigResult, cached: boolean) => ConfigResult): Evaluate {
  return async (config, worker) => {
    const cached = cache?.get(configKey(config, cache.header.tune_params_keys));
    if (cached) return complete(cached, true);
    const result = complete(await evaluate(config, worker), false);
    cache?.append(result);
    return result;
  };
}
