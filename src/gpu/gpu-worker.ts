// GpuWorker: the parent side of the worker process. It starts dist/gpu-worker.js (see worker-process.ts), matches
// responses to requests by id, and keeps the caller safe from whatever the GPU does:
//
// - Synchronous requests (everything but compile) are sent one at a time, in call order. So the parent always knows
//   which request the worker is running, a time limit counts the request's own run time only, and when the worker
//   dies the blame falls on the right request.
// - Watchdog: a synchronous request that runs past its time limit gets the worker SIGKILLed and rejects with
//   KernelTimeoutError. There is no other way: a kernel that never returns cannot be stopped, and the worker's thread
//   is blocked waiting for it. A compile past its limit only rejects: NVRTC runs on a pool thread and blocks nothing.
// - A KernelFaultError answer means the worker's CUDA context is poisoned: the worker is killed at once.
// - An unexpected exit rejects the running request with WorkerCrashedError.
// - Compiles in flight when the worker is killed because of another request are sent again to the next worker: they
//   have no handles and no effects, and the tuner compiles ahead while timing, so a neighbour's fault must not fail them.
// - Requests not yet sent simply go to the next worker, which is started on demand. Their parameters are built when
//   they are sent (`params` may be a function of the worker generation), which is how the client re-creates buffers,
//   modules and kernels on a fresh worker before the request that needs them.

import { existsSync } from 'node:fs';
import {
  AbortError,
  GpuError,
  KernelTimeoutError,
  WorkerCrashedError,
  deserializeError,
  fromNativeError,
  poisonsContext,
} from './errors';
import { checkNonNegativeInteger, checkPositiveInteger } from './check';
import {
  METHOD_TRAITS,
  type LogLevel,
  type MethodName,
  type MethodTraits,
  type ParamsOf,
  type ResultOf,
  type WorkerMessage,
} from './protocol';
import { defaultWorkerPath, spawnWorker, type Live, type WorkerReady } from './worker-process';

export interface GpuWorkerOptions {
  /** The worker bundle; default: gpu-worker.js beside this bundle or in its parent directory, else <repo>/dist/gpu-worker.js. */
  workerPath?: string;
  /** Device ordinal the worker creates its context on; default 0. */
  device?: number;
  /**
   * A compile process (see compile-pool.ts): it answers compiles only, with no CUDA context and no device, so it costs
   * no GPU memory; any other request is refused.
   */
  compileOnly?: boolean;
  /** Extra environment for the worker process, over process.env. */
  env?: Record<string, string | undefined>;
  /** Default time limit of a request in ms (its run time in the worker); default 30 000. */
  timeoutMs?: number;
  /** Default time limit of a compile in ms; default 120 000. */
  compileTimeoutMs?: number;
  /** How long the worker may take to start and load the addon; default 15 000 ms. */
  startTimeoutMs?: number;
  /** Log lines from the worker (its own messages and anything it prints). */
  onLog?: (level: LogLevel, message: string) => void;
}

export interface RequestOptions {
  /** Time limit of this request (ms), instead of the worker's default. */
  timeoutMs?: number;
  /** Aborting a request that is running on the GPU kills the worker (a kernel cannot be stopped); a request still
   * waiting its turn is just dropped. Either way it rejects with AbortError. */
  signal?: AbortSignal;
}

/** Internal to src/gpu: how the client re-creates handles on a fresh worker. */
export interface CallOptions extends RequestOptions {
  /** Send before every request still waiting (the replay of a handle another request needs). */
  front?: boolean;
  /** Only valid on this worker generation; on another it rejects with code STALE_GENERATION. */
  generation?: number;
}

/** Methods that run off the worker's main thread; their parameters are plain values (they name no handles). */
type AsyncMethod = 'compile';

/** Parameters, or (synchronous methods) a function building them for the worker generation they are sent to. */
export type ParamsInput<M extends MethodName> = M extends AsyncMethod
  ? ParamsOf<M>
  : ParamsOf<M> | ((generation: number) => ParamsOf<M> | Promise<ParamsOf<M>>);

const MAX_RESENDS = 2;
const SHUTDOWN_GRACE_MS = 2000;

type PendingState = 'queued' | 'building' | 'ready' | 'sent' | 'done';

interface Pending {
  id: number;
  method: MethodName;
  traits: MethodTraits;
  input: ParamsInput<MethodName>;
  params?: unknown;
  builtFor?: number;
  state: PendingState;
  expectedGeneration?: number;
  generation: number;
  timeoutMs: number;
  attempts: number;
  timer?: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
  callSite: { stack?: string };
  resolve: (value: { result: unknown; generation: number }) => void;
  reject: (error: GpuError) => void;
}

export function isStaleGeneration(error: unknown): boolean {
  return error instanceof GpuError && error.code === 'STALE_GENERATION';
}

function staleGeneration(method: string): GpuError {
  return new GpuError(`${method} was prepared for a GPU worker that has since been replaced`, {
    code: 'STALE_GENERATION',
    explanation: 'Internal: the request is prepared again for the current worker.',
  });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function removeFrom<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

/** Gives an error from the worker (or the watchdog) the stack of the caller's request, where the user can act on it. */
function atCallSite(error: GpuError, site: { stack?: string }): GpuError {
  const frames = site.stack?.split('\n').slice(1).join('\n');
  if (frames) error.stack = `${error.name}: ${error.message}\n${frames}`;
  return error;
}

export class GpuWorker {
  readonly workerPath: string;
  readonly device: number;
  private readonly options: GpuWorkerOptions;
  private readonly defaultTimeoutMs: number;
  private readonly compileTimeoutMs: number;
  private readonly startTimeoutMs: number;

  private live: Live | null = null;
  private starting: Promise<Live> | null = null;
  private generationCounter = 0;
  private nextId = 1;
  /** Synchronous requests not yet sent, in order. */
  private readonly queue: Pending[] = [];
  /** Async requests (compiles) waiting for a live worker. */
  private readonly asyncQueue: Pending[] = [];
  /** Sent and unanswered, by id. */
  private readonly inflight = new Map<number, Pending>();
  /** The synchronous request the worker is running. */
  private running: Pending | null = null;
  /** Workers killed but not yet reaped: dispose() waits for them too, so it leaves no process behind. */
  private readonly dying = new Set<Live>();
  private disposed = false;
  private disposing: Promise<void> | null = null;

  /** The worker's extra environment: a process that launches for it (a profile, a sanitizer run) gets the same. */
  get env(): Readonly<Record<string, string | undefined>> | undefined {
    return this.options.env;
  }

  constructor(options: GpuWorkerOptions = {}) {
    this.options = options;
    this.workerPath = options.workerPath ?? defaultWorkerPath();
    this.device = options.device === undefined ? 0 : checkNonNegativeInteger('device', options.device);
    this.defaultTimeoutMs = options.timeoutMs === undefined ? 30_000 : checkPositiveInteger('timeoutMs', options.timeoutMs);
    this.compileTimeoutMs =
      options.compileTimeoutMs === undefined ? 120_000 : checkPositiveInteger('compileTimeoutMs', options.compileTimeoutMs);
    this.startTimeoutMs =
      options.startTimeoutMs === undefined ? 15_000 : checkPositiveInteger('startTimeoutMs', options.startTimeoutMs);
  }

  /** The generation of the latest worker process started (1 for the first, +1 per restart); 0 before the first. */
  get generation(): number {
    return this.generationCounter;
  }

  /** Whether the worker of `generation` is the one running now (objects made on it still exist). */
  isCurrent(generation: number): boolean {
    return this.live !== null && this.live.generation === generation;
  }

  /** The pid of the current worker process, if one is running. */
  get pid(): number | undefined {
    return this.live?.ready.pid;
  }

  /** Starts the worker if none is running and returns what it reported when ready. */
  async start(): Promise<WorkerReady> {
    if (this.disposed) throw this.disposedError();
    return (await this.ensureLive()).ready;
  }

  request<M extends MethodName>(method: M, params: ParamsInput<M>, options: CallOptions = {}): Promise<ResultOf<M>> {
    return this.call(method, params, options).then((r) => r.result);
  }

  /** request() that also says which worker generation answered (handles created by it belong to that generation). */
  call<M extends MethodName>(
    method: M,
    params: ParamsInput<M>,
    options: CallOptions = {},
  ): Promise<{ result: ResultOf<M>; generation: number }> {
    const callSite: { stack?: string } = {};
    Error.captureStackTrace(callSite, this.call);
    return new Promise((resolve, reject) => {
      if (this.disposed) return reject(this.disposedError());
      if (options.signal?.aborted) return reject(atCallSite(this.abortError(method), callSite));
      const traits = METHOD_TRAITS[method];
      const timeoutMs =
        options.timeoutMs === undefined
          ? traits.async
            ? this.compileTimeoutMs
            : this.defaultTimeoutMs
          : checkPositiveInteger('timeoutMs', options.timeoutMs);
      const p: Pending = {
        id: this.nextId++,
        method,
        traits,
        input: params as ParamsInput<MethodName>,
        state: 'queued',
        generation: 0,
        timeoutMs,
        attempts: 0,
        callSite,
        resolve: resolve as Pending['resolve'],
        reject,
      };
      if (options.generation !== undefined) p.expectedGeneration = options.generation;
      if (options.signal) {
        const signal = options.signal;
        p.signal = signal;
        p.onAbort = () => this.abort(p);
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      if (traits.async) this.asyncQueue.push(p);
      else if (options.front) this.queue.unshift(p);
      else this.queue.push(p);
      this.pump();
      this.updateRef();
    });
  }

  /** Kills the worker and rejects everything pending. Shuts the worker down cleanly when it is idle. */
  dispose(): Promise<void> {
    if (this.disposing) return this.disposing;
    this.disposed = true;
    const wasRunning = this.running !== null;
    const error = this.disposedError();
    for (const p of [...this.queue, ...this.asyncQueue, ...this.inflight.values()]) this.fail(p, error);
    this.queue.length = 0;
    this.asyncQueue.length = 0;
    this.disposing = (async () => {
      const starting = this.starting;
      if (starting) await starting.catch(() => undefined);
      const live = this.live;
      this.live = null;
      const dying = [...this.dying].map((d) => d.exited);
      if (live) {
        live.retired = true;
        // A running request may be a kernel that never returns: only SIGKILL ends it.
        if (wasRunning) live.child.kill('SIGKILL');
        else live.child.send({ type: 'shutdown' }, () => undefined);
        const grace = setTimeout(() => live.child.kill('SIGKILL'), SHUTDOWN_GRACE_MS);
        await live.exited;
        clearTimeout(grace);
      }
      await Promise.all(dying);
    })();
    return this.disposing;
  }

  // -------------------------------------------------------------------------------------------------------------------

  private disposedError(): GpuError {
    return new GpuError('The GPU worker has been disposed', {
      code: 'WORKER_DISPOSED',
      explanation: 'The Gpu (or GpuWorker) was disposed; open a new one.',
    });
  }

  private abortError(method: string): AbortError {
    return new AbortError(`${method} was aborted`, {
      code: 'ABORTED',
      explanation:
        'The caller aborted the request. One still waiting is simply dropped; one already running on the GPU cannot ' +
        'be stopped, so its worker is killed and the next request starts a fresh one.',
      call: method,
    });
  }

  private ensureLive(): Promise<Live> {
    if (this.live) return Promise.resolve(this.live);
    this.starting ??= this.spawn().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private spawn(): Promise<Live> {
    if (!existsSync(this.workerPath))
      return Promise.reject(
        new GpuError(`The GPU worker bundle was not found at ${this.workerPath}`, {
          code: 'WORKER_NOT_FOUND',
          explanation: 'Build the bundles (`node scripts/build.mjs`), or pass workerPath.',
        }),
      );
    const settings = { workerPath: this.workerPath, device: this.device, compileOnly: this.options.compileOnly ?? false, env: this.options.env, startTimeoutMs: this.startTimeoutMs, onLog: this.options.onLog };
    return spawnWorker(settings, ++this.generationCounter, {
      onReady: (live) => {
        // Even when disposed meanwhile: dispose() awaits this start and then shuts this worker down.
        this.live = live;
        this.updateRef();
      },
      onMessage: (live, message) => this.onMessage(live, message),
      onExit: (live, code, signal) => {
        this.dying.delete(live);
        this.onExit(live, code, signal);
      },
    });
  }

  /** Sends what can be sent: every waiting compile, and the next synchronous request when none is running. */
  private pump(): void {
    if (this.disposed) return;
    if (this.queue.length === 0 && this.asyncQueue.length === 0) return;
    const live = this.live;
    if (!live) {
      this.ensureLive().then(
        () => this.pump(),
        (e: unknown) => this.failWaiting(fromNativeError(e)),
      );
      return;
    }
    for (const p of this.asyncQueue.splice(0)) this.send(p, live, p.input); // plain params (see ParamsInput)
    while (!this.running) {
      const head = this.queue[0];
      if (!head || head.state === 'building') return;
      if (head.expectedGeneration !== undefined && head.expectedGeneration !== live.generation) {
        this.queue.shift();
        this.fail(head, staleGeneration(head.method));
        continue;
      }
      if (head.state === 'ready' && head.builtFor !== live.generation) head.state = 'queued';
      if (head.state === 'queued') {
        this.build(head, live.generation);
        if ((head.state as PendingState) !== 'ready') return; // still building (re-creating handles)
      }
      this.queue.shift();
      this.send(head, live, head.params);
    }
  }

  /** Builds a request's parameters for a worker generation (re-creating the handles it names there, if needed). */
  private build(p: Pending, generation: number): void {
    const done = (params: unknown): void => {
      p.params = params;
      p.builtFor = generation;
      p.state = 'ready';
    };
    const failed = (e: unknown): void => {
      if (p.state !== 'building') return;
      const error = fromNativeError(e);
      // The worker was replaced while the handles were re-created: prepare the request again for the new one.
      if (isStaleGeneration(error) && p.attempts < MAX_RESENDS) {
        p.attempts++;
        p.state = 'queued';
      } else {
        removeFrom(this.queue, p);
        this.fail(p, error);
      }
      this.pump();
    };
    if (typeof p.input !== 'function') return done(p.input);
    p.state = 'building';
    let out: unknown;
    try {
      out = p.input(generation);
    } catch (e) {
      return failed(e);
    }
    if (!isPromiseLike(out)) return done(out);
    out.then((params) => {
      if (p.state !== 'building') return;
      done(params);
      this.pump();
    }, failed);
  }

  private send(p: Pending, live: Live, params: unknown): void {
    p.state = 'sent';
    p.generation = live.generation;
    this.inflight.set(p.id, p);
    if (!p.traits.async) this.running = p;
    p.timer = setTimeout(() => this.onTimeout(p), p.timeoutMs);
    // A send error means the channel is closed: the exit handler settles this request.
    live.child.send({ type: 'request', id: p.id, method: p.method, params }, () => undefined);
  }

  private onMessage(live: Live, msg: WorkerMessage): void {
    if (msg.type === 'log') return this.options.onLog?.(msg.level, msg.message);
    if (msg.type !== 'response' || live.retired) return;
    const p = this.inflight.get(msg.id);
    if (!p || p.generation !== live.generation) return;
    this.settle(p);
    if (msg.ok) {
      p.resolve({ result: msg.result, generation: live.generation });
    } else {
      const error = atCallSite(deserializeError(msg.error), p.callSite);
      p.reject(error);
      if (poisonsContext(error)) this.retire(live, `${p.method} #${p.id} faulted (${error.code})`);
    }
    this.pump();
    this.updateRef();
  }

  private onTimeout(p: Pending): void {
    if (p.state !== 'sent') return;
    const live = this.live && this.live.generation === p.generation ? this.live : null;
    this.settle(p);
    p.reject(
      atCallSite(
        new KernelTimeoutError(
          `${p.method} did not finish within ${p.timeoutMs} ms` +
            (p.traits.async ? '' : '; the GPU worker was killed and the next request starts a fresh one'),
          {
            code: 'TIMEOUT',
            method: p.method,
            timeoutMs: p.timeoutMs,
            call: p.method,
            explanation: p.traits.async
              ? 'The compiler took longer than the time limit; its answer is dropped when it comes.'
              : 'A kernel that never returns (an infinite loop, a barrier not every thread reaches) cannot be stopped ' +
                'on the GPU, so the worker process that owns the CUDA context is killed.',
          },
        ),
        p.callSite,
      ),
    );
    if (!p.traits.async && live) this.retire(live, `${p.method} #${p.id} exceeded its ${p.timeoutMs} ms time limit`);
    this.pump();
    this.updateRef();
  }

  private abort(p: Pending): void {
    if (p.state === 'done') return;
    const error = atCallSite(this.abortError(p.method), p.callSite);
    if (p.state !== 'sent') {
      removeFrom(p.traits.async ? this.asyncQueue : this.queue, p);
      this.fail(p, error);
    } else {
      const live = this.live && this.live.generation === p.generation ? this.live : null;
      this.settle(p);
      p.reject(error);
      if (!p.traits.async && live) this.retire(live, `${p.method} #${p.id} was aborted while running`);
    }
    this.pump();
    this.updateRef();
  }

  private onExit(live: Live, code: number | null, signal: NodeJS.Signals | null): void {
    if (live.retired) return;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const running = this.running && this.running.generation === live.generation ? this.running : null;
    if (running) {
      this.settle(running);
      running.reject(
        atCallSite(
          new WorkerCrashedError(
            `The GPU worker ${how} while running ${running.method}` + (live.stderrTail ? `:\n${live.stderrTail.trim()}` : ''),
            {
              code: 'WORKER_CRASHED',
              call: running.method,
              exitCode: code,
              signal,
              explanation: 'The worker process died during this request (not a reported CUDA fault); a fresh one starts on the next request.',
            },
          ),
          running.callSite,
        ),
      );
    }
    this.retire(live, `the worker ${how}`);
    this.updateRef();
  }

  /** Takes a worker out of service: kills it, resends idempotent requests it held, rejects the others. */
  private retire(live: Live, reason: string): void {
    if (live.retired) return;
    live.retired = true;
    if (this.live === live) this.live = null;
    if (live.child.exitCode === null && live.child.signalCode === null) {
      this.dying.add(live);
      live.child.kill('SIGKILL');
    }
    for (const p of [...this.inflight.values()]) {
      if (p.generation !== live.generation) continue;
      this.settle(p);
      if (p.traits.idempotent && p.attempts < MAX_RESENDS) {
        p.attempts++;
        p.state = 'queued';
        this.asyncQueue.push(p);
        if (p.signal) p.signal.addEventListener('abort', p.onAbort!, { once: true });
        p.timer = undefined;
      } else {
        p.reject(
          atCallSite(
            new WorkerCrashedError(`${p.method} was lost: the GPU worker was replaced because ${reason}`, {
              code: 'WORKER_REPLACED',
              call: p.method,
              explanation: 'Another request ended the worker this one was running on; it can be retried.',
            }),
            p.callSite,
          ),
        );
      }
    }
    this.pump();
  }

  /** Detaches a sent request from the bookkeeping (timer, abort listener, in-flight map). */
  private settle(p: Pending): void {
    p.state = 'done';
    clearTimeout(p.timer);
    if (p.signal && p.onAbort) p.signal.removeEventListener('abort', p.onAbort);
    this.inflight.delete(p.id);
    if (this.running === p) this.running = null;
  }

  private fail(p: Pending, error: GpuError): void {
    if (p.state === 'done') return;
    this.settle(p);
    p.reject(atCallSite(error, p.callSite));
  }

  /** The worker could not be started: everything waiting for it fails with that reason. */
  private failWaiting(error: GpuError): void {
    for (const p of this.queue.splice(0)) this.fail(p, error);
    for (const p of this.asyncQueue.splice(0)) this.fail(p, error);
    this.updateRef();
  }

  /** Keeps the parent process alive only while requests are pending, so an idle worker never holds up exit. */
  private updateRef(): void {
    const live = this.live;
    if (!live) return;
    const busy = this.queue.length > 0 || this.asyncQueue.length > 0 || this.inflight.size > 0;
    if (busy) {
      live.child.ref();
      live.child.channel?.ref();
    } else {
      live.child.unref();
      live.child.channel?.unref();
    }
  }
}
