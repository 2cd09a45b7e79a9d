// The lock that keeps two processes from running one stored session at once: who holds it is named, a lock left by a
// process that is gone is taken over, and one held on another host is never judged stale from here.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockSession, SessionLockedError } from '../../src/engine/store/session-lock';

const dir = mkdtempSync(join(tmpdir(), 'lkt-session-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited (a child that ran and was reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('session lock', () => {
  it('names the holder to a second taker, and is free again once released', () => {
    const lock = lockSession(dir, 's1', 'llm-kernel-tuner auto --resume s1');
    expect(JSON.parse(readFileSync(lock.path, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname(), command: 'llm-kernel-tuner auto --resume s1' });
    let error: unknown;
    try {
      lockSession(dir, 's1', 'VS Code');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SessionLockedError);
    expect((error as SessionLockedError).holder?.pid).toBe(process.pid);
    expect((error as Error).message).toMatch(new RegExp(`^session s1 is already running: process ${process.pid} on ${hostname()} \\(llm-kernel-tuner auto --resume s1\\) since `));
    lock.release();
    expect(existsSync(lock.path)).toBe(false);
    const again = lockSession(dir, 's1', 'VS Code');
    again.release();
    again.release();
  });

  it('takes over a lock whose process on this host is gone', () => {
    const path = join(dir, 'locks', 's2.lock');
    lockSession(dir, 's2', 'x').release();
    writeFileSync(path, JSON.stringify({ pid: deadPid(), host: hostname(), since: '2026-01-01T00:00:00Z', command: 'crashed run' }));
    const lock = lockSession(dir, 's2', 'new run');
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('never takes a lock held on another host, nor one it cannot read', () => {
    const path = join(dir, 'locks', 's3.lock');
    lockSession(dir, 's3', 'x').release();
    writeFileSync(path, JSON.stringify({ pid: deadPid(), host: `not-${hostname()}`, since: '2026-01-01T00:00:00Z', command: 'auto on the cluster' }));
    expect(() => lockSession(dir, 's3', 'new run')).toThrow(`on not-${hostname()} (auto on the cluster)`);
    writeFileSync(path, 'garbage');
    expect(() => lockSession(dir, 's3', 'new run')).toThrow(`another process (its lock file ${path} cannot be read)`);
  });
});
