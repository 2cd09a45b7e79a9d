// Running the CUDA toolkit's command-line tools (nvcc and its demangler, Nsight Compute) with a time limit and an
// abort, and finding them on disk.

import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import * as path from 'node:path';
import { AbortError, KernelTimeoutError } from './errors';

export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function findExecutable(name: string, dirs: readonly string[]): Promise<string | null> {
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return null;
}

export function pathDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.PATH ?? '').split(path.delimiter).filter((d) => d !== '');
}

export interface ToolRun {
  cwd: string;
  timeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** How the tool and the request are named in a timeout or an abort ("nvcc", "compile"). */
  tool: string;
  method: string;
  /** What to do when it runs out of time, for the KernelTimeoutError's explanation. */
  timeoutAdvice: string;
}

export interface RunResult {
  code: number | null;
  /** stdout and stderr as they came. */
  output: string;
}

/** Runs a tool in its own process group, so that a timeout or an abort also ends the processes it started. */
export function runTool(file: string, args: readonly string[], run: ToolRun): Promise<RunResult> {
  const abortError = (): AbortError =>
    new AbortError(`${run.method} was aborted`, { code: 'ABORTED', call: run.tool, explanation: `The caller aborted the ${run.method}; ${run.tool} was killed.` });
  return new Promise((resolve, reject) => {
    if (run.signal?.aborted) return reject(abortError());
    const child = spawn(file, args, { cwd: run.cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...(run.env && { env: run.env }) });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let failure: Error | null = null;
    const timer = setTimeout(() => {
      failure = new KernelTimeoutError(`${run.tool} did not finish within ${run.timeoutMs} ms`, {
        code: 'TIMEOUT',
        method: run.method,
        timeoutMs: run.timeoutMs,
        call: run.tool,
        explanation: run.timeoutAdvice,
      });
      killGroup();
    }, run.timeoutMs);
    const onAbort = (): void => {
      failure = abortError();
      killGroup();
    };
    run.signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (e) => {
      failure ??= e;
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      run.signal?.removeEventListener('abort', onAbort);
      if (failure) reject(failure);
      else resolve({ code, output });
    });
  });
}
