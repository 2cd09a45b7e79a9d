// Where Nsight Compute's command line (ncu) is on this machine, found as on a user's: on PATH, beside the CUDA toolkit
// (its bin/ncu, or its nsight-compute-<version>/ncu) and in the standalone installs under
// /opt/nvidia/nsight-compute/<version>/ncu, the newest first.

import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileOnPath, findCudaToolkit, isFile, type FindToolkitOptions } from '../toolkit';

export interface NsightCompute {
  /** The ncu executable. */
  path: string;
  /** The version in the install's directory name (e.g. "2025.3.1"), when it has one. */
  version?: string;
  /** How it was found, for messages: "PATH", "beside the CUDA toolkit at /usr/local/cuda", "/opt/nvidia/nsight-compute". */
  foundBy: string;
}

export interface FindNcuOptions extends FindToolkitOptions {
  /** Where standalone installs are (default /opt/nvidia/nsight-compute); for tests. */
  standaloneRoot?: string;
}

export const NCU_SEARCH_DESCRIPTION = 'PATH, the CUDA toolkit (bin/ncu, nsight-compute-<version>/ncu) and /opt/nvidia/nsight-compute/<version>/ncu';

function compareVersionsDescending(a: string, b: string): number {
  const [va, vb] = [a.split(/[.-]/).map(Number), b.split(/[.-]/).map(Number)];
  for (let i = 0; i < Math.max(va.length, vb.length); i++) {
    const d = (vb[i] ?? 0) - (va[i] ?? 0);
    if (d !== 0 && !Number.isNaN(d)) return d;
  }
  return 0;
}

/** `<dir>/<prefix><version>/ncu` for every version directory, newest first. */
function versioned(dir: string, prefix: string): { path: string; version: string }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+(\.\d+)*$/.test(n.slice(prefix.length)))
    .map((n) => ({ path: path.join(dir, n, 'ncu'), version: n.slice(prefix.length) }))
    .filter((c) => isFile(c.path))
    .sort((a, b) => compareVersionsDescending(a.version, b.version));
}

/** The ncu a user would run, or null when Nsight Compute is not installed. */
export function findNsightCompute(options: FindNcuOptions = {}): NsightCompute | null {
  const env = options.env ?? process.env;
  const onPath = fileOnPath('ncu', env);
  if (onPath) return { path: onPath, foundBy: 'PATH' };
  const toolkit = findCudaToolkit(options);
  if (toolkit?.root) {
    const foundBy = `beside the CUDA toolkit at ${toolkit.root}`;
    const newest = versioned(toolkit.root, 'nsight-compute-')[0];
    if (newest) return { ...newest, foundBy };
    const bin = path.join(toolkit.root, 'bin', 'ncu');
    if (isFile(bin)) return { path: bin, foundBy };
  }
  const standaloneRoot = options.standaloneRoot ?? '/opt/nvidia/nsight-compute';
  if (existsSync(standaloneRoot)) {
    const newest = versioned(standaloneRoot, '')[0];
    if (newest) return { ...newest, foundBy: standaloneRoot };
  }
  return null;
}
