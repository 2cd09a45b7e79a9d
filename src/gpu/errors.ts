// Typed errors of the GPU layer. Every error the rest of the program sees from src/gpu/ is a GpuError subclass, so
// callers can decide by class: a CompileError or LaunchError marks one configuration as failed, a KernelFaultError or
// KernelTimeoutError too (the worker is restarted underneath), a CudaUnavailableError stops everything.
// Errors cross the worker boundary as plain objects (serializeError) and are rebuilt as the same class in the parent.

import { parseDiagnostics, summarizeLog, type CompileDiagnostic } from './diagnostics';
import type { NativeLibrary } from './native-types';

export type { CompileDiagnostic } from './diagnostics';

export interface GpuErrorInit {
  /** CUDA/NVRTC enum name (e.g. "CUDA_ERROR_ILLEGAL_ADDRESS") or one of ours (e.g. "INVALID_ARGUMENT"). */
  code: string;
  /** Plain-language explanation: what it usually means and what to do. */
  explanation: string;
  /** The CUDA/NVRTC call or worker method that failed. */
  call?: string;
  details?: Record<string, unknown>;
}

export class GpuError extends Error {
  override readonly name: string = 'GpuError';
  readonly code: string;
  readonly explanation: string;
  readonly call?: string;
  readonly details?: Record<string, unknown>;

  constructor(message: string, init: GpuErrorInit) {
    super(message);
    this.code = init.code;
    this.explanation = init.explanation;
    if (init.call !== undefined) this.call = init.call;
    if (init.details !== undefined) this.details = init.details;
  }
}

/** The driver, NVRTC, the addon or the device is missing. The message names the library and what to install. */
export class CudaUnavailableError extends GpuError {
  override readonly name: string = 'CudaUnavailableError';
  readonly library?: NativeLibrary;
  constructor(message: string, init: GpuErrorInit & { library?: NativeLibrary }) {
    super(message, init);
    if (init.library !== undefined) this.library = init.library;
  }
}

export interface CompileErrorInit extends GpuErrorInit {
  log: string;
  diagnostics?: CompileDiagnostic[];
}

/** The program did not compile (NVRTC or nvcc). `diagnostics` are parsed from `log`, which is kept whole. */
export class CompileError extends GpuError {
  override readonly name: string = 'CompileError';
  readonly log: string;
  readonly diagnostics: CompileDiagnostic[];
  constructor(message: string, init: CompileErrorInit) {
    super(message, init);
    this.log = init.log;
    this.diagnostics = init.diagnostics ?? parseDiagnostics(init.log);
  }
}

/** What a program asks of the device beyond its limits, as the compiler found it. */
export interface DeviceLimitExceeded {
  resource: 'static shared memory';
  /** The entry function (lowered name) that asks too much. */
  kernel: string;
  usedBytes: number;
  limitBytes: number;
}

/**
 * The program is valid but a kernel asks more of the device than it has: static shared memory over the per-block
 * limit (ptxas "uses too much shared data"). A limit of the device, as a block of 2048 threads is, not a mistake in the
 * code: the configuration exceeds the device's limits. A CompileError still, for callers that only know compile errors;
 * the numbers are in `limit` (and in `details`, which is what crosses the worker boundary).
 */
export class DeviceLimitError extends CompileError {
  override readonly name: string = 'DeviceLimitError';
  readonly limit: DeviceLimitExceeded;
  constructor(message: string, init: CompileErrorInit & { limit: DeviceLimitExceeded }) {
    super(message, { ...init, details: { ...init.details, limit: init.limit } });
    this.limit = init.limit;
  }
}

// ptxas: "Entry function 'k' uses too much shared data (0xcb20 bytes, 0xc000 max)", older toolkits
// "(0x4010 bytes + 0x10 bytes system, 0x4000 max)".
const TOO_MUCH_SHARED = /Entry function '([^']+)' uses too much shared data \((0x[0-9a-fA-F]+) bytes(?: \+ (0x[0-9a-fA-F]+) bytes system)?, (0x[0-9a-fA-F]+) max\)/;

/** The first kernel of a compile log whose static shared memory exceeds the device's per-block limit, if any. */
export function sharedMemoryOverLimit(log: string): DeviceLimitExceeded | undefined {
  const m = TOO_MUCH_SHARED.exec(log);
  if (!m) return undefined;
  return { resource: 'static shared memory', kernel: m[1]!, usedBytes: Number(m[2]) + (m[3] ? Number(m[3]) : 0), limitBytes: Number(m[4]) };
}

/** A failed compile's error: a DeviceLimitError where the log says a kernel asks too much of the device. */
export function compileFailure(message: string, init: CompileErrorInit): CompileError {
  const limit = sharedMemoryOverLimit(init.log);
  if (!limit) return new CompileError(message, init);
  return new DeviceLimitError(
    `Kernel ${limit.kernel} uses ${limit.usedBytes} bytes of static shared memory, more than the device's limit of ` +
      `${limit.limitBytes} bytes per block (ptxas: "uses too much shared data")`,
    {
      ...init,
      limit,
      explanation:
        'Static shared memory (__shared__ arrays) is limited per block; this configuration exceeds the limit of the device, ' +
        'as a block with too many threads does. Use smaller tiles, or dynamic shared memory (extern __shared__) up to the ' +
        "device's opt-in limit.",
    },
  );
}

/** The launch configuration cannot run: block too large, too many resources, too much shared memory. The context is fine. */
export class LaunchError extends GpuError {
  override readonly name: string = 'LaunchError';
}

/** The kernel faulted (illegal address, misaligned access, illegal instruction, assert, hardware exception). The CUDA
 * context is poisoned for good; the worker that ran it is restarted. */
export class KernelFaultError extends GpuError {
  override readonly name: string = 'KernelFaultError';
}

/** A request ran past its time limit; the worker was killed (a kernel cannot be stopped any other way). */
export class KernelTimeoutError extends GpuError {
  override readonly name: string = 'KernelTimeoutError';
  readonly method?: string;
  readonly timeoutMs?: number;
  constructor(message: string, init: GpuErrorInit & { method?: string; timeoutMs?: number }) {
    super(message, init);
    if (init.method !== undefined) this.method = init.method;
    if (init.timeoutMs !== undefined) this.timeoutMs = init.timeoutMs;
  }
}

/** The worker process died for a reason other than a reported fault (a signal, an exit, a failed start). */
export class WorkerCrashedError extends GpuError {
  override readonly name: string = 'WorkerCrashedError';
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  constructor(message: string, init: GpuErrorInit & { exitCode?: number | null; signal?: string | null }) {
    super(message, init);
    if (init.exitCode !== undefined) this.exitCode = init.exitCode;
    if (init.signal !== undefined) this.signal = init.signal;
  }
}

/** A caller's argument is invalid: "Expected a positive integer for block[0] but received -1". */
export class ArgumentError extends GpuError {
  override readonly name: string = 'ArgumentError';
}

/** The caller aborted the request (AbortSignal). Named "AbortError" like the platform's, so generic checks work. */
export class AbortError extends GpuError {
  override readonly name: string = 'AbortError';
}

export function argumentError(name: string, expected: string, received: unknown): ArgumentError {
  return new ArgumentError(`Expected ${expected} for ${name} but received ${describeValue(received)}`, {
    code: 'INVALID_ARGUMENT',
    explanation: `The argument ${name} is invalid; nothing was sent to the GPU.`,
    details: { argument: name },
  });
}

/** Short, unambiguous rendering of a received value for argument errors. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    const n = 'length' in value ? (value as unknown as { length: number }).length : value.byteLength;
    return `${value.constructor.name}(${n})`;
  }
  const ctor = (value as object).constructor;
  return ctor && ctor !== Object ? `an instance of ${ctor.name}` : 'an object';
}

// ---------------------------------------------------------------------------------------------------------------------
// Native error mapping

/** Errors after which the CUDA context is unusable (every later call returns them again). */
const STICKY_CODES = new Set([
  'CUDA_ERROR_ILLEGAL_ADDRESS',
  'CUDA_ERROR_MISALIGNED_ADDRESS',
  'CUDA_ERROR_ILLEGAL_INSTRUCTION',
  'CUDA_ERROR_INVALID_ADDRESS_SPACE',
  'CUDA_ERROR_INVALID_PC',
  'CUDA_ERROR_ASSERT',
  'CUDA_ERROR_HARDWARE_STACK_ERROR',
  'CUDA_ERROR_LAUNCH_FAILED',
  'CUDA_ERROR_ECC_UNCORRECTABLE',
  'CUDA_ERROR_CONTEXT_IS_DESTROYED',
]);

const UNAVAILABLE_CODES = new Set([
  'LIBRARY_NOT_FOUND',
  'ADDON_NOT_LOADED',
  'CUDA_ERROR_NO_DEVICE',
  'CUDA_ERROR_INVALID_DEVICE',
  'CUDA_ERROR_NOT_INITIALIZED',
  'CUDA_ERROR_DEINITIALIZED',
  'CUDA_ERROR_STUB_LIBRARY',
  'CUDA_ERROR_DEVICE_UNAVAILABLE',
  'CUDA_ERROR_SYSTEM_NOT_READY',
  'CUDA_ERROR_SYSTEM_DRIVER_MISMATCH',
  'CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE',
]);

const LAUNCH_CODES = new Set([
  'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
  'CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE',
  'CUDA_ERROR_INVALID_CLUSTER_SIZE',
]);
const LAUNCH_CALLS = new Set(['cuLaunchKernel', 'cuLaunchKernelEx', 'cuFuncSetAttribute']);

/** True when the error leaves the CUDA context unusable, so the worker holding it must be replaced. */
export function poisonsContext(error: GpuError): boolean {
  return error instanceof KernelFaultError || error.code === 'CUDA_ERROR_LAUNCH_TIMEOUT';
}

interface NativeFields {
  message: string;
  code: string;
  status?: number;
  explanation: string;
  call?: string;
  library?: NativeLibrary;
  log?: string;
}

function readNativeFields(e: unknown): NativeFields | null {
  if (typeof e !== 'object' || e === null) return null;
  const o = e as Record<string, unknown>;
  if (typeof o.code !== 'string' || o.code === '') return null;
  const f: NativeFields = {
    message: typeof o.message === 'string' ? o.message : '',
    code: o.code,
    explanation: typeof o.explanation === 'string' ? o.explanation : '',
  };
  if (typeof o.status === 'number') f.status = o.status;
  if (typeof o.call === 'string') f.call = o.call;
  if (o.library === 'libcuda' || o.library === 'libnvrtc' || o.library === 'libnvidia-ml') f.library = o.library;
  if (typeof o.log === 'string') f.log = o.log;
  return f;
}

const INSTALL_HINT: Record<NativeLibrary, string> = {
  libcuda:
    'libcuda.so.1 (the NVIDIA driver library) could not be loaded. Install the NVIDIA driver for your GPU (it provides ' +
    'libcuda.so.1) and check that `nvidia-smi` works; in a container, run it with the GPU passed through (--gpus all).',
  libnvrtc:
    'libnvrtc (libnvrtc.so.13, .so.12 or libnvrtc.so) could not be loaded. Install the CUDA toolkit\'s NVRTC (e.g. the ' +
    'cuda-nvrtc-13-0 package) and put its lib64 directory on LD_LIBRARY_PATH, or install nvcc to compile through it.',
  'libnvidia-ml':
    'libnvidia-ml.so.1 (NVML) could not be loaded: it comes with the NVIDIA driver. Without it energy, power, clocks ' +
    'and temperature are not measured; timings are unaffected.',
};

function unavailableMessage(f: NativeFields): string {
  if (f.code === 'LIBRARY_NOT_FOUND' && f.library === 'libnvidia-ml') return `NVML is not available: ${INSTALL_HINT[f.library]}`;
  if (f.code === 'LIBRARY_NOT_FOUND' && f.library) return `CUDA is not available: ${INSTALL_HINT[f.library]}`;
  if (f.code === 'CUDA_ERROR_NO_DEVICE')
    return 'No CUDA device was found (CUDA_ERROR_NO_DEVICE): the NVIDIA driver is installed but sees no GPU. Check ' +
      '`nvidia-smi`, CUDA_VISIBLE_DEVICES, and that the GPU is passed through to this container or VM.';
  return `CUDA is not available (${f.code}${f.call ? ` from ${f.call}` : ''}): ${f.explanation || f.message}`;
}

function nativeMessage(f: NativeFields): string {
  if (f.message) return f.message;
  return `${f.call ? `${f.call} failed: ` : ''}${f.code}${f.explanation ? ` (${f.explanation})` : ''}`;
}

/**
 * Maps an error thrown by the addon (an Error with NativeErrorFields) or by the addon loader to its GpuError class.
 * Anything else becomes a GpuError with code "INTERNAL" carrying the original message.
 */
export function fromNativeError(e: unknown): GpuError {
  if (e instanceof GpuError) return e;
  const f = readNativeFields(e);
  if (!f) {
    const message = e instanceof Error ? e.message : String(e);
    return new GpuError(message, {
      code: 'INTERNAL',
      explanation: 'An unexpected error inside the GPU layer; this is a bug, please report it with the message.',
      details: e instanceof Error && e.stack ? { stack: e.stack } : {},
    });
  }
  const init: GpuErrorInit = { code: f.code, explanation: f.explanation };
  if (f.call !== undefined) init.call = f.call;
  if (f.status !== undefined) init.details = { status: f.status };

  if (f.code.startsWith('NVRTC_ERROR_')) {
    const log = f.log ?? '';
    const diagnostics = parseDiagnostics(log);
    return compileFailure(`Compilation failed (NVRTC, ${f.code}): ${summarizeLog(log || nativeMessage(f), diagnostics)}`, {
      ...init,
      explanation: f.explanation || 'The CUDA source did not compile; see the log and diagnostics.',
      log,
      diagnostics,
      details: { ...init.details, backend: 'nvrtc' },
    });
  }
  if (f.code === 'INVALID_ARGUMENT') return new ArgumentError(nativeMessage(f), init);
  if (UNAVAILABLE_CODES.has(f.code)) {
    const u: GpuErrorInit & { library?: NativeLibrary } = { ...init };
    if (f.library) u.library = f.library;
    else if (f.code.startsWith('CUDA_ERROR_')) u.library = 'libcuda';
    if (f.code === 'LIBRARY_NOT_FOUND' && f.library) u.explanation = INSTALL_HINT[f.library];
    return new CudaUnavailableError(unavailableMessage(f), u);
  }
  if (STICKY_CODES.has(f.code)) {
    return new KernelFaultError(
      `${nativeMessage(f)}. The kernel faulted and the CUDA context is unusable; the GPU worker is restarted and the ` +
        'next request runs on a fresh one.',
      init,
    );
  }
  if (f.code === 'CUDA_ERROR_LAUNCH_TIMEOUT') {
    return new KernelTimeoutError(`${nativeMessage(f)}. The display watchdog stopped the kernel; the GPU worker is restarted.`, {
      ...init,
      method: 'launch',
    });
  }
  if (LAUNCH_CODES.has(f.code) || (f.code === 'CUDA_ERROR_INVALID_VALUE' && f.call !== undefined && LAUNCH_CALLS.has(f.call))) {
    return new LaunchError(nativeMessage(f), init);
  }
  return new GpuError(nativeMessage(f), init);
}

// ---------------------------------------------------------------------------------------------------------------------
// Serialization across the worker boundary

/** A GpuError as a plain object: what crosses process.send and is rebuilt by deserializeError. */
export interface SerializedError {
  name: string;
  message: string;
  code: string;
  explanation: string;
  call?: string;
  details?: Record<string, unknown>;
  library?: NativeLibrary;
  log?: string;
  diagnostics?: CompileDiagnostic[];
  method?: string;
  timeoutMs?: number;
  exitCode?: number | null;
  signal?: string | null;
}

export function serializeError(e: unknown): SerializedError {
  const g = fromNativeError(e);
  const s: SerializedError = { name: g.name, message: g.message, code: g.code, explanation: g.explanation };
  if (g.call !== undefined) s.call = g.call;
  if (g.details !== undefined) s.details = g.details;
  if (g instanceof CudaUnavailableError && g.library !== undefined) s.library = g.library;
  if (g instanceof CompileError) {
    s.log = g.log;
    s.diagnostics = g.diagnostics;
  }
  if (g instanceof KernelTimeoutError) {
    if (g.method !== undefined) s.method = g.method;
    if (g.timeoutMs !== undefined) s.timeoutMs = g.timeoutMs;
  }
  if (g instanceof WorkerCrashedError) {
    if (g.exitCode !== undefined) s.exitCode = g.exitCode;
    if (g.signal !== undefined) s.signal = g.signal;
  }
  return s;
}

function initOf(s: SerializedError): GpuErrorInit {
  const init: GpuErrorInit = { code: s.code, explanation: s.explanation };
  if (s.call !== undefined) init.call = s.call;
  if (s.details !== undefined) init.details = s.details;
  return init;
}

const REBUILD: Record<string, (s: SerializedError) => GpuError> = {
  GpuError: (s) => new GpuError(s.message, initOf(s)),
  CudaUnavailableError: (s) =>
    new CudaUnavailableError(s.message, s.library !== undefined ? { ...initOf(s), library: s.library } : initOf(s)),
  CompileError: (s) => new CompileError(s.message, { ...initOf(s), log: s.log ?? '', diagnostics: s.diagnostics ?? [] }),
  DeviceLimitError: (s) =>
    new DeviceLimitError(s.message, { ...initOf(s), log: s.log ?? '', diagnostics: s.diagnostics ?? [], limit: s.details!.limit as DeviceLimitExceeded }),
  LaunchError: (s) => new LaunchError(s.message, initOf(s)),
  KernelFaultError: (s) => new KernelFaultError(s.message, initOf(s)),
  KernelTimeoutError: (s) => {
    const init: GpuErrorInit & { method?: string; timeoutMs?: number } = initOf(s);
    if (s.method !== undefined) init.method = s.method;
    if (s.timeoutMs !== undefined) init.timeoutMs = s.timeoutMs;
    return new KernelTimeoutError(s.message, init);
  },
  WorkerCrashedError: (s) => {
    const init: GpuErrorInit & { exitCode?: number | null; signal?: string | null } = initOf(s);
    if (s.exitCode !== undefined) init.exitCode = s.exitCode;
    if (s.signal !== undefined) init.signal = s.signal;
    return new WorkerCrashedError(s.message, init);
  },
  ArgumentError: (s) => new ArgumentError(s.message, initOf(s)),
  AbortError: (s) => new AbortError(s.message, initOf(s)),
};

/** Rebuilds the error's class in this process; an unknown name becomes a plain GpuError with the same fields. */
export function deserializeError(s: SerializedError): GpuError {
  return (REBUILD[s.name] ?? REBUILD.GpuError!)(s);
}
