/**
 * Crash-safe file replacement shared by the history store and the file checkpointer.
 *
 * A file is written to a temporary sibling (same directory, so the rename never crosses a file system), flushed with
 * fsync, then renamed over the target; the directory is fsynced afterwards so the rename itself survives a power loss.
 * A reader therefore sees either the old or the new content, never a prefix. Temporary names start with a dot and end
 * in `.tmp`, so directory scans skip them and leftovers of a crash are recognisable.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const TEMP_SUFFIX = '.tmp';

/** True for names produced by {@link writeFileAtomic} for its temporary files. */
function isTempFileName(name: string): boolean {
  return name.startsWith('.') && name.endsWith(TEMP_SUFFIX);
}

/** Codes with which Windows refuses a rename while another process (an indexer, an antivirus) holds the target. */
const TRANSIENT_RENAME_CODES = new Set(['EPERM', 'EACCES', 'EBUSY']);

async function renameWithRetry(from: string, to: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.rename(from, to);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (process.platform !== 'win32' || !TRANSIENT_RENAME_CODES.has(code) || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 20 * (attempt + 1)));
    }
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  // Windows cannot open a directory for fsync; NTFS journals the rename itself.
  if (process.platform === 'win32') return;
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Atomically replaces `path` with `data`, creating parent directories as needed, and returns the stat of the file it
 * wrote (taken before the rename, which keeps inode, size and mtime: it identifies this content even if another process
 * replaces the file right after). On failure the target is unchanged and the temporary file is removed.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<Stats> {
  const dir = dirname(path);
  await fs.mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
  let handle: fs.FileHandle | undefined;
  let stat: Stats;
  try {
    handle = await fs.open(temp, 'wx', 0o644);
    await handle.writeFile(data);
    await handle.sync();
    stat = await handle.stat();
    await handle.close();
    handle = undefined;
    await renameWithRetry(temp, path);
  } catch (err) {
    if (handle) await handle.close().catch(() => undefined);
    await fs.rm(temp, { force: true });
    throw err;
  }
  await fsyncDirectory(dir);
  return stat;
}

/**
 * Removes temporary files left in `dir` by a process that crashed mid-write. Only files older than `olderThanMs` are
 * touched, so a write in flight in another process (a second VS Code window) is left alone. Returns how many were removed.
 */
export async function removeStaleTempFiles(dir: string, olderThanMs: number): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const cutoff = Date.now() - olderThanMs;
  let removed = 0;
  for (const name of names) {
    if (!isTempFileName(name)) continue;
    const path = join(dir, name);
    const stat = await fs.stat(path).catch(() => undefined);
    if (stat?.isFile() && stat.mtimeMs < cutoff) {
      await fs.rm(path, { force: true });
      removed++;
    }
  }
  return removed;
}
