// Where the CUDA toolkit is on this machine, found as a CUDA developer's own tools find it: $CUDA_HOME, $CUDA_PATH,
// the nvcc on PATH, the usual install locations, and the headers that ship beside the NVRTC library that was loaded.
// NVRTC has no default include path at all (`#include <cuda_fp16.h>` fails with "no directories in search list"), so
// the tuner hands it the toolkit's include directories; nvcc is the second compiler and is found the same way.

import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';

export interface CudaToolkit {
  /** The install root, e.g. /usr/local/cuda-13.0; null when only headers were found (beside NVRTC). */
  root: string | null;
  /** `include` and, where the toolkit has it (CUDA 13), `include/cccl` (libcu++, CUB, Thrust). */
  includeDirs: string[];
  /** bin/nvcc when present. */
  nvcc: string | null;
  /** How it was found, for messages: "$CUDA_HOME", "nvcc on PATH", "/usr/local/cuda", "beside libnvrtc" ... */
  foundBy: string;
}

export interface FindToolkitOptions {
  env?: NodeJS.ProcessEnv;
  /** The NVRTC library the GPU worker loaded (absolute path): its toolkit's headers are the ones that match it. */
  nvrtcLibrary?: string;
  /** Install roots to look at after the environment (default: the usual Linux ones, then /usr/include); for tests. */
  locations?: readonly string[];
}

const USUAL_LOCATIONS = ['/usr/local/cuda', '/opt/cuda', '/usr/lib/cuda', '/usr/lib/nvidia-cuda-toolkit'];

export function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** A directory holds the toolkit's headers when it has the runtime's or the half type's header. */
function isCudaInclude(dir: string): boolean {
  return isFile(path.join(dir, 'cuda_runtime.h')) || isFile(path.join(dir, 'cuda_fp16.h'));
}

function includeDirsOf(include: string): string[] {
  const cccl = path.join(include, 'cccl');
  return existsSync(path.join(cccl, 'cuda', 'std')) ? [include, cccl] : [include];
}

function fromRoot(root: string, foundBy: string): CudaToolkit | null {
  const include = path.join(root, 'include');
  if (!isCudaInclude(include)) return null;
  const nvcc = path.join(root, 'bin', 'nvcc');
  return { root, includeDirs: includeDirsOf(include), nvcc: isFile(nvcc) ? nvcc : null, foundBy };
}

/** /usr/local/cuda-13.0, /usr/local/cuda-12.8, ... newest first (what a versioned install without a symlink leaves). */
function versionedInstalls(): string[] {
  let names: string[];
  try {
    names = readdirSync('/usr/local').filter((n) => /^cuda-\d+(\.\d+)*$/.test(n));
  } catch {
    return [];
  }
  const version = (n: string) => n.slice(5).split('.').map(Number);
  names.sort((a, b) => {
    const [va, vb] = [version(a), version(b)];
    for (let i = 0; i < Math.max(va.length, vb.length); i++) if ((va[i] ?? 0) !== (vb[i] ?? 0)) return (vb[i] ?? 0) - (va[i] ?? 0);
    return 0;
  });
  return names.map((n) => path.join('/usr/local', n));
}

/** nvcc: the toolkit's, else any on PATH. */
export function findNvcc(env: NodeJS.ProcessEnv = process.env): string | null {
  return findCudaToolkit({ env })?.nvcc ?? fileOnPath('nvcc', env);
}

/** The first file of this name in a directory of PATH, or null. */
export function fileOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (isFile(candidate)) return candidate;
  }
  return null;
}

/**
 * Headers that came with the NVRTC library itself: a toolkit's lib64/libnvrtc.so.13 has ../include, and the pip wheels
 * (nvidia/cuda_nvrtc/lib) keep the runtime's headers in the sibling nvidia/cuda_runtime/include.
 */
function besideNvrtc(library: string): CudaToolkit | null {
  const libDir = path.dirname(library);
  const root = path.dirname(libDir);
  const asToolkit = fromRoot(root, `beside ${library}`);
  if (asToolkit) return asToolkit;
  const wheelInclude = path.join(path.dirname(root), 'cuda_runtime', 'include');
  if (isCudaInclude(wheelInclude)) return { root: null, includeDirs: includeDirsOf(wheelInclude), nvcc: null, foundBy: `beside ${library}` };
  return null;
}

/**
 * The CUDA toolkit to compile with, or null when none is installed. Order: $CUDA_HOME, $CUDA_PATH, the nvcc on PATH,
 * the toolkit of the loaded NVRTC library, then /usr/local/cuda, versioned /usr/local/cuda-X.Y (newest first) and
 * other usual locations; Debian's packages put the headers in /usr/include, which is tried last.
 */
export function findCudaToolkit(options: FindToolkitOptions = {}): CudaToolkit | null {
  const env = options.env ?? process.env;
  for (const name of ['CUDA_HOME', 'CUDA_PATH', 'CUDA_ROOT'] as const) {
    const root = env[name];
    if (root) {
      const found = fromRoot(root, `$${name}`);
      if (found) return found;
    }
  }
  const nvcc = fileOnPath('nvcc', env);
  if (nvcc) {
    let real = nvcc;
    try {
      real = realpathSync(nvcc);
    } catch {
      // a dangling link: keep the name
    }
    const found = fromRoot(path.dirname(path.dirname(real)), 'the nvcc on PATH');
    if (found) return found;
  }
  if (options.nvrtcLibrary) {
    const found = besideNvrtc(options.nvrtcLibrary);
    if (found) return found;
  }
  const [usual, ...others] = USUAL_LOCATIONS;
  for (const root of options.locations ?? [usual!, ...versionedInstalls(), ...others]) {
    const found = fromRoot(root, root);
    if (found) return found;
  }
  if (!options.locations && isCudaInclude('/usr/include')) {
    return { root: '/usr', includeDirs: ['/usr/include'], nvcc: isFile('/usr/bin/nvcc') ? '/usr/bin/nvcc' : null, foundBy: '/usr/include' };
  }
  return null;
}

/** Where findCudaToolkit looks, for a message when it finds nothing. */
export const TOOLKIT_SEARCH_DESCRIPTION =
  '$CUDA_HOME, $CUDA_PATH, the nvcc on PATH, the directory of the loaded libnvrtc, /usr/local/cuda, /usr/local/cuda-X.Y, /opt/cuda and /usr/include';
