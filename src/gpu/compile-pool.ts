// CompilePool: NVRTC compiles in processes of their own, the worker bundle started with --compile-only (the addon and
// NVRTC loaded, no CUDA context, no GPU memory). Each process runs one compile at a time: compiles that share a process
// serialise on NVRTC's shared state (reported for CUDA 11.8 and 12.3), so processes, not threads, are what scale with
// the host's cores. A cubin compiled here loads on every GPU of the arch it was compiled for, so one pool serves all
// the GPUs of a run. Processes start on demand, up to `size`, and stay for the pool's life. A compile that passes its
// time limit or is aborted takes its process down (NVRTC cannot be interrupted, and it would go on eating a core); a
// process that dies mid-compile is replaced and the compile sent again (GpuWorker does that).

import { availableParallelism } from 'node:os';
import { checkPositiveInteger } from './check';
import { compileInWorker } from './client';
import { AbortError, GpuError } from './errors';
import { markPhase } from '../phases';
import { GpuWorker, type GpuWorkerOptions } from './gpu-worker';
import type { Program, ProgramInit } from './program';
import type { CompiledProgram, CompileOptions, Compiler } from './types';

export interface CompilePoolOptions extends Pick<GpuWorkerOptions, 'workerPath' | 'env' | 'compileTimeoutMs' | 'startTimeoutMs' | 'onLog'> {
  /** Compile processes at most, so compiles at once; default the host's cores (os.availableParallelism()). */
  size?: number;
}

interface CompileProcess {
  worker: GpuWorker;
  busy: boolean;
}

interface Waiting {
  take: (slot: CompileProcess) => void;
  fail: (error: GpuError) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class CompilePool {
  readonly size: number;
  private readonly processes: CompileProcess[] = [];
  private readonly waiting: Waiting[] = [];
  private owners = 1;
  private disposing: Promise<void> | undefined;

  constructor(private readonly options: CompilePoolOptions = {}) {
    this.size = options.size === undefined ? availableParallelism() : checkPositiveInteger('size', options.size);
  }

  /** Another owner (each GPU's backend of a run): the pool shuts down when every owner has disposed it. */
  share(): this {
    if (this.disposing) throw disposedError();
    this.owners++;
    return this;
  }

  /** Processes started so far (at most `size`). */
  get started(): number {
    return this.processes.length;
  }

  /** Starts the first process now, so that the first compile does not wait for it to start. */
  warm(): void {
    if (this.processes.length > 0 || this.disposing) return;
    this.add(false).worker.start().then(() => markPhase('compile process ready'), () => undefined); // a start that fails is reported by the first compile
  }

  /** Compiles in the first free process (starting one while fewer than `size` run); waits for one otherwise. */
  async compile(program: Program | ProgramInit, defaultArch: string, options: CompileOptions = {}): Promise<CompiledProgram> {
    const slot = await this.acquire(options.signal);
    try {
      return await compileInWorker(slot.worker, program, defaultArch, options);
    } catch (e) {
      if (e instanceof GpuError && (e.code === 'TIMEOUT' || e.code === 'ABORTED')) this.replace(slot);
      throw e;
    } finally {
      this.release(slot);
    }
  }

  /** The pool as a Compiler for one target (the device's own). */
  compilerFor(arch: string): Compiler {
    return { backend: 'nvrtc', compile: (program, options) => this.compile(program, arch, options) };
  }

  /** Drops one owner's hold; the last one's shuts every process down and fails the compiles still waiting. */
  dispose(): Promise<void> {
    if (this.disposing) return this.disposing;
    if (--this.owners > 0) return Promise.resolve();
    for (const w of this.waiting.splice(0)) {
      w.signal?.removeEventListener('abort', w.onAbort);
      w.fail(disposedError());
    }
    this.disposing = Promise.all(this.processes.map((p) => p.worker.dispose())).then(() => undefined);
    return this.disposing;
  }

  private acquire(signal: AbortSignal | undefined): Promise<CompileProcess> {
    if (this.disposing) return Promise.reject(disposedError());
    if (signal?.aborted) return Promise.reject(abortError());
    const idle = this.processes.find((p) => !p.busy) ?? (this.processes.length < this.size ? this.add(true) : undefined);
    if (idle) {
      idle.busy = true;
      return Promise.resolve(idle);
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting = {
        take: resolve,
        fail: reject,
        signal,
        onAbort: () => {
          this.waiting.splice(this.waiting.indexOf(waiting), 1);
          reject(abortError());
        },
      };
      signal?.addEventListener('abort', waiting.onAbort, { once: true });
      this.waiting.push(waiting);
    });
  }

  /** Hands a process that finished its compile to the longest waiting compile, or marks it free. */
  private release(slot: CompileProcess): void {
    const next = this.waiting.shift();
    if (!next) {
      slot.busy = false;
      return;
    }
    next.signal?.removeEventListener('abort', next.onAbort);
    next.take(slot);
  }

  private add(busy: boolean): CompileProcess {
    const slot = { worker: this.newWorker(), busy };
    this.processes.push(slot);
    return slot;
  }

  /** Kills a process whose compile was given up on; a fresh one takes its place (started by its first compile). */
  private replace(slot: CompileProcess): void {
    void slot.worker.dispose();
    slot.worker = this.newWorker();
  }

  private newWorker(): GpuWorker {
    const { size: _size, ...workerOptions } = this.options;
    return new GpuWorker({ ...workerOptions, compileOnly: true });
  }
}

function disposedError(): GpuError {
  return new GpuError('The compile pool has been disposed', { code: 'WORKER_DISPOSED', explanation: 'Every owner of the CompilePool disposed it; open a new one.' });
}

function abortError(): AbortError {
  return new AbortError('compile was aborted', { code: 'ABORTED', call: 'compile', explanation: 'The caller aborted the compile while it waited for a free compile process.' });
}
