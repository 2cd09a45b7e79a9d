// Merging the caches of a search's shards (tune --shard I/N) into one with the layout of a single run's.
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CacheFile } from './cache-file';
import { isNumber, MISMATCH_WHAT, openCacheText, PyFloat, pyJson, sameProblemSize, shardText, type CacheHeader, type Entry } from './format';

// ---------------------------------------------------------------- merging shards

/** Caches that cannot be merged: the reason names the files and the values that differ. */
export class CacheMergeError extends Error {
  override name = 'CacheMergeError';
}

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
