// Reading a file the user named (a kernel, a spec, a reference): what is wrong is said in words with the path, never
// as a bare ENOENT.
import { readFileSync } from 'node:fs';

export class UserFileError extends Error {
  override readonly name = 'UserFileError';
}

/** The file's text; `what` names it in the message ("the kernel file"). */
export function readUserFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'there is no such file' : code === 'EISDIR' ? 'it is a folder, not a file' : code === 'EACCES' ? 'permission denied' : (e as Error).message;
    throw new UserFileError(`cannot read ${what} ${path}: ${reason}`);
  }
}
