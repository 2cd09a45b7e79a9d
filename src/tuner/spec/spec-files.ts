// The tuning specs beside a kernel file, found by convention (how the editor's "Tune parameters" knows a kernel's spec
// without asking): a YAML or JSON spec in the file's folder whose `file:` is that file, naming the kernel (`kernel:`)
// or none (then it is the file's only kernel). Read cheaply, for code lenses: a file is parsed only when it has
// `tuneParams`, and what it says is kept until it changes; the spec is validated in full when it runs.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

export interface SpecBeside {
  /** The spec file (absolute). */
  path: string;
  /** The kernel it tunes; undefined where it names none (a file of one kernel). */
  kernel?: string;
  /** Its tunable parameters. */
  parameters: string[];
}

const SPEC_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** Larger files are caches or data, not specs. */
const MAX_SPEC_BYTES = 256 * 1024;

const read = new Map<string, { mtimeMs: number; size: number; spec: { file: string; kernel?: string; parameters: string[] } | null }>();

/** What a spec file says about its kernel, or null when it is no spec that names a kernel file. */
function readSpec(path: string): { file: string; kernel?: string; parameters: string[] } | null {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return null;
  }
  if (!stat.isFile() || stat.size > MAX_SPEC_BYTES) return null;
  const known = read.get(path);
  if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known.spec;
  let spec: { file: string; kernel?: string; parameters: string[] } | null = null;
  try {
    const text = readFileSync(path, 'utf8');
    if (text.includes('tuneParams')) {
      const raw = parseYaml(text) as { file?: unknown; kernel?: unknown; tuneParams?: unknown } | null;
      if (raw && typeof raw === 'object' && typeof raw.file === 'string' && raw.tuneParams && typeof raw.tuneParams === 'object') {
        spec = { file: resolve(dirname(path), raw.file), ...(typeof raw.kernel === 'string' && { kernel: raw.kernel }), parameters: Object.keys(raw.tuneParams) };
      }
    }
  } catch {
    spec = null; // not YAML or JSON: not a spec
  }
  read.set(path, { mtimeMs: stat.mtimeMs, size: stat.size, spec });
  return spec;
}

/** The specs in the kernel file's folder that name it, by file name. */
export function specsBeside(kernelFile: string): SpecBeside[] {
  const file = resolve(kernelFile);
  const dir = dirname(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => SPEC_EXTENSIONS.has(extname(n).toLowerCase()))
    .sort()
    .flatMap((n) => {
      const path = join(dir, n);
      const spec = readSpec(path);
      return spec && spec.file === file && spec.parameters.length > 0 ? [{ path, ...(spec.kernel !== undefined && { kernel: spec.kernel }), parameters: spec.parameters }] : [];
    });
}

/**
 * The specs of one kernel of the file, named by its plain or qualified name (`kernels`: how many the file has; a spec
 * that names none is the only kernel's).
 */
export function specsForKernel(specs: readonly SpecBeside[], kernel: { name: string; qualifiedName: string }, kernels: number): SpecBeside[] {
  return specs.filter((s) => (s.kernel === undefined ? kernels === 1 : s.kernel === kernel.name || s.kernel === kernel.qualifiedName));
}

/** Larger JSON files beside a spec are data, not the cache of one search. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * The Kernel Tuner caches in the spec's folder that a replay of its search can use (as `tune --simulate` replays one):
 * of the same kernel, over the same tunable parameters in the same order, by file name. Only their headers are read.
 */
export function cachesBeside(specPath: string, kernelName: string, parameters: readonly string[]): string[] {
  const dir = dirname(resolve(specPath));
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => extname(n).toLowerCase() === '.json')
    .sort()
    .map((n) => join(dir, n))
    .filter((path) => {
      try {
        if (statSync(path).size > MAX_CACHE_BYTES) return false;
        const raw = JSON.parse(readFileSync(path, 'utf8')) as { kernel_name?: unknown; tune_params_keys?: unknown; cache?: unknown } | null;
        const keys = raw?.tune_params_keys;
        return raw?.kernel_name === kernelName && Array.isArray(keys) && keys.join('\u0000') === parameters.join('\u0000') && typeof raw.cache === 'object' && raw.cache !== null;
      } catch {
        return false; // not JSON, or unreadable: not a cache
      }
    });
}
