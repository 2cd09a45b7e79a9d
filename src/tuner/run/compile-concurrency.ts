// How many compiles a tuning run keeps going at once: one per core (NVRTC in the compile pool's processes, or nvcc's
// own), no more than the free memory holds, and how far ahead the strategies announce configurations to keep them busy.
import { readFileSync } from 'node:fs';
import { availableParallelism, freemem } from 'node:os';
import * as path from 'node:path';

/**
 * What one compile may take at its peak. nvcc 13.0's ptxas peaks at 170 MB on the benchmark hub's convolution kernel
 * (4 x 4 tiles, the 15 x 15 filter loops unrolled), NVRTC does the same work in its process, and a compile process adds
 * Node's own 50 MB: 512 MiB leaves room for larger kernels.
 */
export const COMPILE_MEMORY_BYTES = 512 * 2 ** 20;

/**
 * Compiles run ahead of the GPUs by default: one per core, less one per GPU (a core for the compile a GPU waits for,
 * which is not run ahead, and for its worker), and no more than the free memory holds.
 */
export function defaultCompileConcurrency(gpus: number, cores = availableParallelism(), freeBytes = availableMemoryBytes()): number {
  return Math.max(1, Math.min(cores - gpus, Math.floor(freeBytes / COMPILE_MEMORY_BYTES)));
}

/**
 * How many upcoming configurations a strategy announces: twice the compiles at once, so that when a compile finishes
 * the next configuration is already known and starts at once.
 */
export function compileLookahead(compileConcurrency: number): number {
  return 2 * compileConcurrency;
}

/**
 * Whether memory allows one more compile beside `running` others, assuming each of those may still grow to
 * COMPILE_MEMORY_BYTES (a compile that just started holds little yet). One compile is always allowed.
 */
export function memoryAllowsCompile(running: number, freeBytes: number): boolean {
  return running === 0 || freeBytes - running * COMPILE_MEMORY_BYTES >= COMPILE_MEMORY_BYTES;
}

/** Memory free for new work: the system's available memory, within the cgroup's limit where one applies (a container, a Slurm job). */
export function availableMemoryBytes(): number {
  const cgroup = cgroupHeadroomBytes();
  return cgroup === undefined ? freemem() : Math.min(freemem(), cgroup);
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/** The least headroom (memory.max - memory.current) of this process's cgroup v2 and its parents; undefined when none is limited. */
function cgroupHeadroomBytes(): number | undefined {
  let own: string | undefined;
  try {
    own = /^0::(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
  } catch {
    return undefined; // not Linux, or no cgroup v2
  }
  if (own === undefined) return undefined;
  let least: number | undefined;
  for (let dir = path.join(CGROUP_ROOT, own); dir.startsWith(CGROUP_ROOT); dir = path.dirname(dir)) {
    const headroom = readHeadroom(dir);
    if (headroom !== undefined) least = Math.min(least ?? Infinity, headroom);
    if (dir === CGROUP_ROOT) break;
  }
  return least;
}

function readHeadroom(dir: string): number | undefined {
  try {
    const max = readFileSync(path.join(dir, 'memory.max'), 'utf8').trim();
    if (max === 'max') return undefined;
    return Math.max(0, Number(max) - Number(readFileSync(path.join(dir, 'memory.current'), 'utf8').trim()));
  } catch {
    return undefined; // no memory controller at this level
  }
}
