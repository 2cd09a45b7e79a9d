// Where NVIDIA's compute-sanitizer is on this machine, found as the CUDA toolkit is (it ships with it): on PATH, then
// beside the toolkit that findCudaToolkit finds (bin/compute-sanitizer, or compute-sanitizer/compute-sanitizer); and
// which version it is, as `compute-sanitizer --version` says ("Version 2025.3.1.0").

import * as path from 'node:path';
import { runTool } from '../run-tool';
import { fileOnPath, findCudaToolkit, isFile, type FindToolkitOptions } from '../toolkit';

export interface ComputeSanitizer {
  /** The compute-sanitizer executable. */
  path: string;
  /** How it was found, for messages: "PATH", "beside the CUDA toolkit at /usr/local/cuda". */
  foundBy: string;
}

export const SANITIZER_SEARCH_DESCRIPTION = 'PATH and the CUDA toolkit (bin/compute-sanitizer, compute-sanitizer/compute-sanitizer)';

/** The compute-sanitizer a user would run, or null when none is installed. */
export function findComputeSanitizer(options: FindToolkitOptions = {}): ComputeSanitizer | null {
  const onPath = fileOnPath('compute-sanitizer', options.env ?? process.env);
  if (onPath) return { path: onPath, foundBy: 'PATH' };
  const root = findCudaToolkit(options)?.root;
  if (!root) return null;
  for (const candidate of [path.join(root, 'bin', 'compute-sanitizer'), path.join(root, 'compute-sanitizer', 'compute-sanitizer')]) {
    if (isFile(candidate)) return { path: candidate, foundBy: `beside the CUDA toolkit at ${root}` };
  }
  return null;
}

const versions = new Map<string, Promise<string | undefined>>();

/** The version `--version` prints ("2025.3.1"), asked once per executable; undefined when it prints none. */
export function sanitizerVersion(sanitizer: ComputeSanitizer): Promise<string | undefined> {
  let version = versions.get(sanitizer.path);
  if (!version) {
    version = runTool(sanitizer.path, ['--version'], {
      cwd: path.dirname(sanitizer.path),
      timeoutMs: 30_000,
      tool: 'compute-sanitizer',
      method: 'version query',
      timeoutAdvice: 'compute-sanitizer --version should answer at once; the installation may be broken.',
    }).then(
      (run) => {
        const full = /Version (\d+(?:\.\d+)+)/.exec(run.output)?.[1];
        // "2025.3.1.0" is release 2025.3.1 (its fourth number is the build's).
        return full?.split('.').length === 4 ? full.replace(/\.0$/, '') : full;
      },
      () => undefined,
    );
    versions.set(sanitizer.path, version);
  }
  return version;
}
