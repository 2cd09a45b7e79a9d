// One GPU worker process: where its bundle is, how it is forked, and its start-up handshake (the 'ready' message with
// what the addon found). GpuWorker (gpu-worker.ts) owns the processes made here and schedules the requests they run.

import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { availableParallelism } from 'node:os';
import { WorkerCrashedError, deserializeError, type GpuError } from './errors';
import type { NativeStatus } from './native-types';
import { COMPILE_ONLY_FLAG, isWorkerMessage, type LogLevel, type WorkerMessage } from './protocol';

export interface WorkerReady {
  pid: number;
  generation: number;
  status: NativeStatus;
  /** Set when the addon could not be loaded: every request fails with this error. */
  addonError?: GpuError;
}

/** A started worker process that has reported ready. */
export interface Live {
  child: ChildProcess;
  generation: number;
  ready: WorkerReady;
  retired: boolean;
  exited: Promise<void>;
  stderrTail: string;
}

export interface SpawnSettings {
  workerPath: string;
  device: number;
  /** Started with --compile-only: it answers compiles only and never creates a CUDA context. */
  compileOnly: boolean;
  env: Record<string, string | undefined> | undefined;
  startTimeoutMs: number;
  onLog: ((level: LogLevel, message: string) => void) | undefined;
}

/** What the owner of a worker process hears from it once it is ready. */
export interface WorkerEvents {
  /** Called when the handshake completes, before the promise of spawnWorker resolves. */
  onReady(live: Live): void;
  onMessage(live: Live, message: WorkerMessage): void;
  onExit(live: Live, code: number | null, signal: NodeJS.Signals | null): void;
}

const STDERR_TAIL = 4096;

/** Locates dist/gpu-worker.js: beside this file (the bundles in dist/), its parent (dist/gpu-tests/), or <repo>/dist. */
export function defaultWorkerPath(): string {
  const here = typeof __dirname === 'string' ? __dirname : process.cwd();
  const candidates = [path.join(here, 'gpu-worker.js'), path.join(here, '..', 'gpu-worker.js')];
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) {
      candidates.push(path.join(dir, 'dist', 'gpu-worker.js'));
      break;
    }
    if (path.dirname(dir) === dir) break;
  }
  return candidates.find((c) => existsSync(c)) ?? candidates[candidates.length - 1]!;
}

/** Forks the worker bundle and waits for its 'ready' message; rejects with WorkerCrashedError when it cannot start. */
export function spawnWorker(settings: SpawnSettings, generation: number, events: WorkerEvents): Promise<Live> {
  const child = fork(settings.workerPath, [`--device=${settings.device}`, ...(settings.compileOnly ? [COMPILE_ONLY_FLAG] : [])], {
    serialization: 'advanced',
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    // NVRTC compiles run on libuv's pool (4 threads by default): room for compiling ahead while other work waits.
    env: { UV_THREADPOOL_SIZE: String(Math.min(16, Math.max(4, availableParallelism()))), ...process.env, ...settings.env },
    execArgv: [],
  });
  let stderrTail = '';
  let live: Live | null = null;
  // Output pipes never keep the parent alive; the IPC channel does while requests are pending (updateRef).
  for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    for (const line of text.split('\n')) if (line.trim()) settings.onLog?.('info', line);
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderrTail = (stderrTail + text).slice(-STDERR_TAIL);
    if (live) live.stderrTail = stderrTail;
    for (const line of text.split('\n')) if (line.trim()) settings.onLog?.('warn', line);
  });
  let resolveExit: () => void = () => undefined;
  const exited = new Promise<void>((r) => (resolveExit = r));

  return new Promise<Live>((resolve, reject) => {
    const startFailed = (message: string, init: { exitCode?: number | null; signal?: string | null } = {}): void => {
      clearTimeout(timer);
      reject(
        new WorkerCrashedError(`${message}${stderrTail ? `\n${stderrTail.trim()}` : ''}`, {
          code: 'WORKER_START_FAILED',
          explanation: `The GPU worker (${settings.workerPath}) could not start; its output is in the message.`,
          ...init,
        }),
      );
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      startFailed(`The GPU worker did not become ready within ${settings.startTimeoutMs} ms`);
    }, settings.startTimeoutMs);

    child.on('message', (raw: unknown) => {
      if (!isWorkerMessage(raw)) return;
      if (live) return events.onMessage(live, raw);
      if (raw.type !== 'ready') return;
      clearTimeout(timer);
      const ready: WorkerReady = { pid: raw.pid, generation, status: raw.status };
      if (raw.addonError) ready.addonError = deserializeError(raw.addonError);
      live = { child, generation, ready, retired: false, exited, stderrTail };
      events.onReady(live);
      resolve(live);
    });
    child.once('error', (e) => {
      if (!live) startFailed(`The GPU worker could not be started: ${e.message}`);
    });
    child.once('exit', (code, signal) => {
      resolveExit();
      if (live) events.onExit(live, code, signal);
      else startFailed(`The GPU worker exited before it was ready (exit code ${code}, signal ${signal})`, { exitCode: code, signal });
    });
  });
}
