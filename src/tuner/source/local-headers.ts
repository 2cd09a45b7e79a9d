// Where a kernel file's #include "..." or <...> is found among the user's files: beside the including file, then on the
// include paths; never in the CUDA toolkit. Shared by the preprocessor, the device unit and the compile sources.
import { statSync } from 'node:fs';
import * as path from 'node:path';

/** Whether a path names a regular file (false where it does not exist or cannot be read). */
export function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The user's header an #include names: "..." next to the including file, then on the include paths; <...> on the
 * include paths. A file of the CUDA toolkit is not the user's (undefined).
 */
export function findLocalHeader(
  include: { spelling: string; system: boolean },
  dir: string | undefined,
  includePaths: readonly string[],
  toolkitDirs: readonly string[] = [],
): string | undefined {
  const searched = [...(!include.system && dir ? [dir] : []), ...includePaths];
  const local = searched.map((d) => path.resolve(d, include.spelling)).find(isFile);
  return local && !toolkitDirs.some((t) => local.startsWith(path.resolve(t) + path.sep)) ? local : undefined;
}
