// The typed protocol between the parent (client.ts / gpu-worker.ts) and the worker process (worker-main.ts).
//
// Transport: child_process.fork with serialization 'advanced' (the V8 serializer), so Buffers, typed arrays and
// BigInt (device pointers, 64-bit scalars) cross intact. Handles (buffers, modules, kernels) are small integers that
// the worker assigns and resolves; a raw device pointer never leaves the worker, so a stale or forged handle is an
// ArgumentError there instead of memory corruption.

import type { SerializedError } from './errors';
import type { DType } from './dtype';
import type { NativeCompileRequest, NativeCompileResult, NativeDType, NativeStatus } from './native-types';
import type { NormalizedRandomSpec } from './random';
import type { EnergyResult } from './energy';
import type { Occupancy } from './occupancy';
import type { DeviceInfo, Dim3, KernelAttributes, MemInfo, NvmlReadings, RuntimeInfo } from './types';

export type HandleId = number;

/** The worker's flag for a compile process: compiles only, no CUDA context (see compile-pool.ts). */
export const COMPILE_ONLY_FLAG = '--compile-only';

export type WireArg =
  | { kind: 'buffer'; buffer: HandleId }
  | { kind: 'scalar'; dtype: NativeDType; value: number | bigint };

/** What is reset before each timed launch of a benchmark, outside its events (see NativeReset). */
export type WireReset =
  | { kind: 'fill'; buffer: HandleId; elementBytes: 1 | 2 | 4 | 8; pattern: bigint; count: number }
  | { kind: 'copy'; dst: HandleId; src: HandleId; bytes: number };

export interface WireLaunch {
  kernel: HandleId;
  grid: Dim3;
  block: Dim3;
  sharedMemBytes: number;
  args: WireArg[];
}

/** A launch that answers in a small uint64 buffer: `result` is set to `init` first and read back after (see CheckRun). */
export interface WireCheck {
  launch: WireLaunch;
  result: HandleId;
  init: bigint[];
}

type None = Record<string, never>;

/** method → [params, result]. */
export interface WorkerMethods {
  runtime: [None, RuntimeInfo];
  devices: [None, DeviceInfo[]];
  deviceInfo: [{ ordinal: number }, DeviceInfo];
  memInfo: [None, MemInfo];
  compile: [NativeCompileRequest, NativeCompileResult & { durationMs: number }];
  moduleLoad: [{ cubin: Uint8Array }, { module: HandleId }];
  moduleUnload: [{ module: HandleId }, void];
  getKernel: [{ module: HandleId; loweredName: string }, { kernel: HandleId; attributes: KernelAttributes }];
  occupancy: [{ kernel: HandleId; threadsPerBlock: number; dynamicSharedBytes: number }, Occupancy];
  nvml: [None, NvmlReadings];
  memAlloc: [{ bytes: number }, { buffer: HandleId }];
  memFree: [{ buffer: HandleId }, void];
  memUpload: [{ buffer: HandleId; data: ArrayBufferView; byteOffset: number }, void];
  memDownload: [{ buffer: HandleId; byteOffset: number; bytes: number }, Uint8Array];
  memFill: [{ buffer: HandleId; elementBytes: 1 | 2 | 4 | 8; pattern: bigint; count: number }, void];
  fillRandom: [{ buffer: HandleId; dtype: DType; count: number; spec: NormalizedRandomSpec }, void];
  memCopy: [{ dst: HandleId; src: HandleId; bytes: number }, void];
  copyToSymbol: [{ module: HandleId; symbol: string; src: HandleId; bytes: number }, { symbolBytes: number }];
  memCopyBenchmark: [{ dst: HandleId; src: HandleId; bytes: number; warmup: number; iterations: number }, { samplesMs: number[] }];
  launch: [WireLaunch, void];
  /** The checks one after another, each result buffer read back after its launch. */
  checks: [{ checks: WireCheck[] }, { results: bigint[][] }];
  /**
   * `resets`: buffers reset before each timed launch, outside its events; `idleBeforeEach`: each timed launch starts
   * from an idle GPU. With `energy`, the kernel then runs back to back for `windowMs` while NVML is read (see
   * energy.ts); `checks` run after the timed launches (and the energy window), their results in `checks`.
   */
  benchmark: [
    WireLaunch & { warmup: number; iterations: number; flushL2: boolean; idleBeforeEach?: boolean; resets?: WireReset[]; energy?: { windowMs: number }; checks?: WireCheck[] },
    { samplesMs: number[]; energy?: EnergyResult; checks?: bigint[][] },
  ];
}

export type MethodName = keyof WorkerMethods;
export type ParamsOf<M extends MethodName> = WorkerMethods[M][0];
export type ResultOf<M extends MethodName> = WorkerMethods[M][1];

export interface MethodTraits {
  /** Runs off the worker's main thread (NVRTC on the libuv pool): several may be in flight at once. */
  async: boolean;
  /** Safe to send again to a fresh worker when the worker died because of another request (no handles, no effects). */
  idempotent: boolean;
}

const SYNC: MethodTraits = { async: false, idempotent: false };

export const METHOD_TRAITS: Record<MethodName, MethodTraits> = {
  runtime: SYNC,
  devices: SYNC,
  deviceInfo: SYNC,
  memInfo: SYNC,
  compile: { async: true, idempotent: true },
  moduleLoad: SYNC,
  moduleUnload: SYNC,
  getKernel: SYNC,
  occupancy: SYNC,
  nvml: SYNC,
  memAlloc: SYNC,
  memFree: SYNC,
  memUpload: SYNC,
  memDownload: SYNC,
  memFill: SYNC,
  fillRandom: SYNC,
  memCopy: SYNC,
  copyToSymbol: SYNC,
  memCopyBenchmark: SYNC,
  launch: SYNC,
  checks: SYNC,
  benchmark: SYNC,
};

export function isMethodName(value: unknown): value is MethodName {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(METHOD_TRAITS, value);
}

// ---------------------------------------------------------------------------------------------------------------------
// Messages

export interface RequestMessage<M extends MethodName = MethodName> {
  type: 'request';
  id: number;
  method: M;
  params: ParamsOf<M>;
}

/** Parent → worker: a request, or a clean shutdown (release the context, then exit). */
export type ParentMessage = RequestMessage | { type: 'shutdown' };

export type ResponseMessage =
  | { type: 'response'; id: number; ok: true; result: unknown }
  | { type: 'response'; id: number; ok: false; error: SerializedError };

export interface ReadyMessage {
  type: 'ready';
  pid: number;
  /** What the addon found (libcuda, libnvrtc); all false when the addon itself could not be loaded. */
  status: NativeStatus;
  /** Why the addon could not be loaded; every request then fails with this error. */
  addonError?: SerializedError;
}

export type LogLevel = 'debug' | 'info' | 'warn';
export interface LogMessage {
  type: 'log';
  level: LogLevel;
  message: string;
}

/** Worker → parent. */
export type WorkerMessage = ResponseMessage | ReadyMessage | LogMessage;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  if (!isRecord(value)) return false;
  if (value.type === 'response') return typeof value.id === 'number' && typeof value.ok === 'boolean';
  if (value.type === 'ready') return typeof value.pid === 'number' && isRecord(value.status);
  if (value.type === 'log') return typeof value.message === 'string';
  return false;
}

export function isParentMessage(value: unknown): value is ParentMessage {
  if (!isRecord(value)) return false;
  if (value.type === 'shutdown') return true;
  return value.type === 'request' && typeof value.id === 'number' && isMethodName(value.method) && isRecord(value.params);
}
