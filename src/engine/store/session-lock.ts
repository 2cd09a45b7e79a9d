/**
 * One process at a time runs a stored session. Two processes resuming the same session would interleave their
 * checkpoints and history writes, so whoever runs it holds a lock file (`locks/SESSION.lock` beside `history/` and
 * `checkpoints/`) that names the holder: its process id, host, start time and command. A lock whose process is gone
 * (same host, no such process: a crash or `kill -9`) is stale and taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface LockHolder {
  pid: number;
  host: string;
  /** ISO time the holder took the lock. */
  since: string;
  /** What the holder runs, in words ("llm-kernel-tuner auto --resume ...", "VS Code"). */
  command: string;
}

export class SessionLockedError extends Error {
  constructor(
    readonly sessionId: string,
    readonly holder: LockHolder | undefined,
    readonly path: string,
  ) {
    const who = holder ? `process ${holder.pid} on ${holder.host} (${holder.command}) since ${holder.since}` : `another process (its lock file ${path} cannot be read)`;
    super(
      `session ${sessionId} is already running: ${who}. Wait for it to finish or stop it; if that process no longer runs, delete ${path}.`,
    );
    this.name = 'SessionLockedError';
  }
}

export interface SessionLock {
  readonly path: string;
  /** Gives the lock up (idempotent). */
  release(): void;
}

/** Takes the lock of `sessionId` under the sessions directory `dir`, or throws SessionLockedError naming the holder. */
export function lockSession(dir: string, sessionId: string, command: string): SessionLock {
  const locks = join(dir, 'locks');
  mkdirSync(locks, { recursive: true });
  const path = join(locks, `${sessionId}.lock`);
  const me: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString(), command };
  // Two tries: the second after removing a stale lock (another process may take it between the two; then it is held).
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(path);
      if (attempt === 0 && holder && isStale(holder)) {
        rmSync(path, { force: true });
        continue;
      }
      throw new SessionLockedError(sessionId, holder, path);
    }
    writeSync(fd, JSON.stringify(me));
    closeSync(fd);
    let held = true;
    return {
      path,
      release() {
        if (!held) return;
        held = false;
        // Only our own lock: a stale-lock takeover by another process must not be undone by us.
        if (readHolder(path)?.pid === me.pid && readHolder(path)?.host === me.host) rmSync(path, { force: true });
      },
    };
  }
  throw new SessionLockedError(sessionId, readHolder(path), path);
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined;
    return { pid: value.pid, host: value.host, since: String(value.since ?? 'an unknown time'), command: String(value.command ?? 'unknown command') };
  } catch {
    return undefined;
  }
}

/** A holder on this host whose process is gone. One on another host cannot be checked from here: never stale. */
function isStale(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
