// The benchmark hub's search spaces as our tuner sees them (the TypeScript twin of kernel_tuner/hub.py): a problem is
// one brute-forced cache, cachefiles/<kernel>/<GPU>.json.gz, replayed over the space its T1 file kernels/<kernel>.json
// describes (the same parameter lists and restriction strings as kernels/<kernel>.py), built by our SearchSpace from
// those restriction strings as they are. A cache is used only where its tune_params equal the T1 file's.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { SearchSpace } from '../../src/tuner/space/search-space';
import type { ConfigResult, ParamValue, TuneParams } from '../../src/tuner/types';
import { SpaceStatistics } from './methodology';

export interface Problem {
  /** "<kernel>/<GPU>" */
  name: string;
  kernel: string;
  space: SearchSpace;
  cache: CacheFile;
  /** The recorded result of every configuration of the space, by position. */
  results: ConfigResult[];
  /** The methodology's statistics of the space, each configuration's time as our replay (and Kernel Tuner's) charges it. */
  stats: SpaceStatistics;
}

interface T1 {
  ConfigurationSpace: { TuningParameters: { Name: string; Type: string; Values: string }[]; Conditions: { Expression: string }[] };
}

/** A T1 parameter's Values: a Python list literal of numbers (the hub's files with caches use no other form). */
function t1Values(name: string, values: string): ParamValue[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(values);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'number')) {
    throw new RangeError(`T1 parameter ${name}: Values ${values} is not a list of numbers (expressions such as range() are not read here)`);
  }
  return parsed;
}

export function t1Space(path: string): { tuneParams: TuneParams; restrictions: string[] } {
  const t1 = JSON.parse(readFileSync(path, 'utf8')) as T1;
  const tuneParams: TuneParams = {};
  for (const p of t1.ConfigurationSpace.TuningParameters) tuneParams[p.Name] = t1Values(p.Name, p.Values);
  return { tuneParams, restrictions: t1.ConfigurationSpace.Conditions.map((c) => c.Expression) };
}

const sameParams = (a: TuneParams, b: TuneParams) => JSON.stringify(a) === JSON.stringify(b);

/** The usable caches ("<kernel>/<GPU>") and the skipped ones with the reason, as hub.py lists them. */
export function listCaches(hubDir: string): { usable: string[]; skipped: [string, string][] } {
  const usable: string[] = [];
  const skipped: [string, string][] = [];
  const root = join(hubDir, 'cachefiles');
  for (const kernel of readdirSync(root).sort()) {
    const t1Path = join(hubDir, 'kernels', `${kernel}.json`);
    for (const file of readdirSync(join(root, kernel)).sort()) {
      if (!file.endsWith('.json.gz') || file.endsWith('_T4.json.gz')) continue;
      const name = `${kernel}/${file.slice(0, -'.json.gz'.length)}`;
      if (!existsSync(t1Path)) {
        skipped.push([name, `no T1 file kernels/${kernel}.json`]);
        continue;
      }
      const header = CacheFile.load(join(root, kernel, file)).header;
      if (!sameParams(header.tune_params, t1Space(t1Path).tuneParams)) skipped.push([name, `its tune_params differ from kernels/${kernel}.json (another space)`]);
      else usable.push(name);
    }
  }
  return { usable, skipped };
}

/** What a replay charges for a configuration's first evaluation: compile, load, verification and benchmark time. */
export function chargedMs(result: ConfigResult): number {
  const t = result.timings;
  return t ? t.compileMs + t.loadMs + t.verifyMs + t.benchmarkMs : 0;
}

/** Loads one problem and checks that our space is the cache's: every configuration the restrictions allow, and no other. */
export function loadProblem(hubDir: string, name: string): Problem {
  const [kernel, gpu] = name.split('/') as [string, string];
  const { tuneParams, restrictions } = t1Space(join(hubDir, 'kernels', `${kernel}.json`));
  const cache = CacheFile.load(join(hubDir, 'cachefiles', kernel, `${gpu}.json.gz`));
  const space = new SearchSpace(tuneParams, restrictions);
  const entries = cache.results();
  if (space.size !== entries.length) {
    throw new RangeError(`${name}: our space of kernels/${kernel}.json has ${space.size} configurations, the cache ${entries.length} (valid and failed)`);
  }
  const results = [...space.configs()].map((config) => {
    const r = cache.get(space.key(config));
    if (!r) throw new RangeError(`${name}: configuration ${space.key(config)} of the space is not in the cache`);
    return r;
  });
  const stats = new SpaceStatistics(
    results.map((r) => (r.status === 'ok' ? r.timeMs! : null)),
    results.map((r) => chargedMs(r) / 1000),
  );
  return { name, kernel, space, cache, results, stats };
}
