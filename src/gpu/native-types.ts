// The contract between native/ (the C++ Node-API addon) and src/gpu/ (the worker that hosts it).
// Everything here is what the addon's exports look like from JavaScript. Only the worker process loads the
// addon; the rest of the program talks to the worker through the typed protocol in protocol.ts.

/**
 * Element types the addon knows, for kernel scalar arguments. The 16-bit floats of dtype.ts are not among them: their
 * scalars travel as 'uint16' with the bit pattern (see nativeScalar), which is all a 2-byte kernel parameter is.
 */
export type NativeDType =
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'float32'
  | 'float64';

/** One kernel launch argument as the addon receives it. */
export type NativeArg =
  | { kind: 'buffer'; ptr: bigint } // a device pointer from memAlloc
  | { kind: 'scalar'; dtype: NativeDType; value: number | bigint };

/** Which dynamically loaded library a failure is about. */
export type NativeLibrary = 'libcuda' | 'libnvrtc' | 'libnvidia-ml';

export interface NativeLibraryStatus {
  loaded: boolean;
  /** The file that was opened, e.g. "libnvrtc.so.13". */
  path?: string;
  /** Where the loader found it (absolute, as mapped into the worker), when known: its toolkit's headers lie beside it. */
  file?: string;
  /** dlopen's own message when nothing could be opened. */
  error?: string;
}

export interface NativeStatus {
  cuda: NativeLibraryStatus;
  nvrtc: NativeLibraryStatus;
  /** NVML (libnvidia-ml.so.1): energy, power, clocks and temperature, read only. */
  nvml: NativeLibraryStatus;
}

export interface NativeDeviceInfo {
  ordinal: number;
  name: string;
  computeCapability: [number, number];
  multiprocessors: number;
  globalMemoryBytes: number;
  l2CacheBytes: number;
  maxThreadsPerBlock: number;
  maxBlockDim: [number, number, number];
  maxGridDim: [number, number, number];
  maxSharedMemoryPerBlock: number;
  maxSharedMemoryPerBlockOptin: number;
  maxRegistersPerBlock: number;
  maxThreadsPerMultiprocessor: number;
  maxBlocksPerMultiprocessor: number;
  maxRegistersPerMultiprocessor: number;
  maxSharedMemoryPerMultiprocessor: number;
  /** Shared memory the driver reserves for every block (1 KiB from compute capability 8.0). */
  reservedSharedMemoryPerBlock: number;
  warpSize: number;
  clockRateKHz: number;
  memoryClockRateKHz: number;
  memoryBusWidthBits: number;
  pciBusId: string;
}

export interface NativeCompileRequest {
  source: string;
  /** File name shown in the compiler log, e.g. "vector_add.cu". */
  fileName: string;
  /**
   * C++ name expressions to register (nvrtcAddNameExpression) and resolve to lowered (mangled) names,
   * e.g. "vector_add" or "matmul<float, 16>". Required for templated kernels; harmless for extern "C" ones.
   */
  nameExpressions: string[];
  /** Full option strings passed to NVRTC as they are, e.g. "--gpu-architecture=sm_90", "-DBLOCK=128", "-I/path". */
  options: string[];
  /** Also return PTX text. */
  wantPtx: boolean;
}

export interface NativeCompileResult {
  /** The cubin (SASS for the named sm_XY target). */
  cubin: Buffer;
  ptx?: string;
  /** NVRTC's program log (warnings); may be empty. */
  log: string;
  /** name expression → lowered name, for every entry of nameExpressions. */
  loweredNames: Record<string, string>;
}

export interface NativeFunctionAttributes {
  numRegs: number;
  sharedSizeBytes: number;
  constSizeBytes: number;
  localSizeBytes: number;
  maxThreadsPerBlock: number;
  maxDynamicSharedSizeBytes: number;
  ptxVersion: number;
  binaryVersion: number;
}

export interface NativeLaunch {
  fn: bigint; // CUfunction handle
  grid: [number, number, number];
  block: [number, number, number];
  sharedMemBytes: number;
  args: NativeArg[];
}

/** One reading of the energy sampler; a field is absent when the device does not report it. */
export interface NativeNvmlSample {
  /** Milliseconds since the sampler started. */
  tMs: number;
  powerMw?: number;
  smClockMhz?: number;
  memClockMhz?: number;
  temperatureC?: number;
}

export interface NativeEnergyOptions {
  batch: number;
  windowMs: number;
  maxWindowMs: number;
  minUpdates: number;
  pciBusId: string;
  pollMs: number;
  sampleEvery: number;
}

export interface NativeEnergyRun {
  launches: number;
  /** Wall time from the first launch to the end of the last (host clock). */
  elapsedMs: number;
  /** Why the device's energy counter could not be read (NVML's words); absent when it could. */
  energyError?: string;
  /** Each change of the energy counter seen while polling, with when it was first seen. */
  updates: { tMs: number; energyMj: number }[];
  samples: NativeNvmlSample[];
}

/** NVML's readings of a device now; `unsupported` names what it cannot report, with NVML's error code. */
export interface NativeNvmlSnapshot {
  name?: string;
  energyMj?: number;
  powerMw?: number;
  powerLimitMw?: number;
  smClockMhz?: number;
  memClockMhz?: number;
  temperatureC?: number;
  unsupported: Record<string, string>;
}

export interface NativeBenchmarkOptions {
  /** Untimed launches first. */
  warmup: number;
  /** Timed launches, each bracketed by its own pair of CUDA events. */
  iterations: number;
  /** Device pointer + byte size of a scratch buffer larger than L2, written (cuMemsetD8Async) before each timed launch, outside the events. 0n = no flush. */
  flushPtr: bigint;
  flushBytes: number;
  /** Enqueued before each timed launch, outside its events (before the L2 flush): the outputs reset to their start. */
  resets?: NativeReset[];
  /**
   * Start each timed launch from an idle GPU, as Kernel Tuner does: the host waits for the stream (after the resets and
   * the flush) before it records the start event and launches. Default false: launches follow each other on the stream.
   */
  idleBeforeEach?: boolean;
}

/** A reset of a timed launch's output: filled with a bit pattern (as memFill), or copied from its initial content. */
export type NativeReset =
  | { kind: 'fill'; ptr: bigint; elementBytes: 1 | 2 | 4 | 8; pattern: bigint; count: number }
  | { kind: 'copy'; dst: bigint; src: bigint; bytes: number };

/**
 * Errors thrown by the addon are JavaScript Errors with these extra properties.
 * `code` is the CUDA/NVRTC enum name, e.g. "CUDA_ERROR_ILLEGAL_ADDRESS", "NVRTC_ERROR_COMPILATION",
 * or "LIBRARY_NOT_FOUND" (with `library`) when libcuda/libnvrtc could not be opened,
 * or "INVALID_ARGUMENT" (a TypeError, or a RangeError for a byte range outside its allocation) when an argument fails
 * the addon's checks, made before any CUDA call: "memAlloc: expected bytes to be a non-negative integer, received -1".
 * Handles (modules, functions, pointers) the addon did not hand out, or that were freed, are INVALID_ARGUMENT too.
 */
export interface NativeErrorFields {
  code: string;
  /** The numeric CUresult / nvrtcResult, when there is one. */
  status?: number;
  /** Plain-language explanation (what it usually means, what to do). */
  explanation: string;
  /** The CUDA/NVRTC call that failed, e.g. "cuLaunchKernel". */
  call?: string;
  library?: NativeLibrary;
  /** For compiles: the full NVRTC log. */
  log?: string;
}

/** The addon's exports. All CUDA calls act on the calling thread's current context (see contextCreate). */
export interface NativeAddon {
  /** Tries dlopen once (cached) and reports what was found; never throws. */
  status(): NativeStatus;
  /** cuDriverGetVersion, e.g. 13000. Throws LIBRARY_NOT_FOUND without libcuda. */
  driverVersion(): number;
  /** nvrtcVersion as [major, minor]. Throws LIBRARY_NOT_FOUND without libnvrtc. */
  nvrtcVersion(): [number, number];
  /** cuInit(0) + cuDeviceGetCount; 0 when the driver reports CUDA_ERROR_NO_DEVICE. */
  deviceCount(): number;
  deviceInfo(ordinal: number): NativeDeviceInfo;

  /**
   * Runs on the libuv thread pool (Napi::AsyncWorker); several may be in flight. Rejects with NativeErrorFields (log set);
   * never throws synchronously, argument errors included. Needs a real architecture (--gpu-architecture=sm_XY): with
   * compute_XY NVRTC makes no cubin and this rejects (call "nvrtcGetCUBINSize").
   */
  compile(request: NativeCompileRequest): Promise<NativeCompileResult>;

  /** Retains the device's primary context, makes it current, and creates the non-blocking stream all work goes on. Idempotent. */
  contextCreate(ordinal: number): void;
  /** Frees every module, buffer, event and the stream, releases the primary context. Best effort (a poisoned context
   *  is released too): throws only LIBRARY_NOT_FOUND; a no-op without a context. */
  contextDestroy(): void;
  /** cuCtxSynchronize; surfaces sticky errors (e.g. an illegal address from an earlier launch). */
  synchronize(): void;
  /** cuMemGetInfo: [free, total] in bytes. */
  memInfo(): [number, number];

  moduleLoad(cubin: Buffer): bigint; // CUmodule; also accepts PTX text (JIT-compiled by the driver)
  moduleUnload(module: bigint): void;
  moduleGetFunction(module: bigint, loweredName: string): bigint; // CUfunction
  functionAttributes(fn: bigint): NativeFunctionAttributes;
  /** cuOccupancyMaxActiveBlocksPerMultiprocessor: how many blocks of `blockSize` threads with `dynamicSharedBytes` of
   *  dynamic shared memory can be resident on one multiprocessor (0: the launch cannot run). */
  functionOccupancy(fn: bigint, blockSize: number, dynamicSharedBytes: number): number;
  /** cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES): raise the opt-in limit of dynamic shared memory for a function. */
  functionSetMaxDynamicShared(fn: bigint, bytes: number): void;

  memAlloc(bytes: number): bigint; // CUdeviceptr; bytes >= 1
  memFree(ptr: bigint): void;
  /** Host → device, synchronous with respect to the stream. `data` may be any ArrayBufferView. */
  memUpload(ptr: bigint, data: ArrayBufferView, byteOffset: number): void;
  /** Device → host into a fresh Buffer of `bytes` bytes. */
  memDownload(ptr: bigint, bytes: number, byteOffset: number): Buffer;
  /** Fill `count` elements of `elementBytes` (1, 2, 4 or 8) with the bit pattern `pattern` (a bigint of that width;
   *  a negative one is taken as two's complement, e.g. -1n). */
  memFill(ptr: bigint, elementBytes: 1 | 2 | 4 | 8, pattern: bigint, count: number): void;
  /** Device → device copy. */
  memCopy(dst: bigint, src: bigint, bytes: number): void;
  /**
   * Copies `bytes` from the device pointer `src` into the module's global symbol `name` (a `__constant__` array: Kernel
   * Tuner's cmem_args), synchronously; returns the symbol's size. CUDA_ERROR_NOT_FOUND when the module has no such
   * symbol, a RangeError (INVALID_ARGUMENT) when `bytes` exceed its size.
   */
  moduleCopyToGlobal(module: bigint, name: string, src: bigint, bytes: number): number;
  /** Warm-up copies, then `iterations` (1..1000) device → device copies of `bytes`, each timed between CUDA events; returns
   *  each timed copy's milliseconds. The ranges must not overlap. */
  memCopyBenchmark(dst: bigint, src: bigint, bytes: number, options: { warmup: number; iterations: number }): number[];

  /**
   * Launch once on the stream and wait for it (cuStreamSynchronize). Throws with the CUDA error of the launch or of the kernel.
   * Checked first: buffer args point into live allocations, and where the driver describes the kernel's parameters
   * (cuFuncGetParamInfo, CUDA 12.4+) the number of args and each one's size match them.
   */
  launch(launch: NativeLaunch): void;
  /** Warm-up + timed launches; returns each timed launch's milliseconds (cuEventElapsedTime), in order.
   *  warmup 0..1e6, iterations 1..1e6; flushPtr/flushBytes and every reset's ranges must lie in live allocations. */
  benchmark(launch: NativeLaunch, options: NativeBenchmarkOptions): number[];
  /**
   * Back-to-back launches (no events, no flush) in batches of `batch`, each waited for, until the GPU has run them for
   * `windowMs` and the energy counter has changed `minUpdates` times, or for `maxWindowMs` (each 1..600000), while a
   * thread polls NVML every `pollMs` (1..100) for the energy counter and, every `sampleEvery` polls, power, clocks and
   * temperature of the device at `pciBusId`. Throws LIBRARY_NOT_FOUND (library 'libnvidia-ml') or an NVML_ERROR_*
   * when NVML cannot watch the device.
   */
  energyBenchmark(launch: NativeLaunch, options: NativeEnergyOptions): NativeEnergyRun;
  /** NVML's readings of the device at `pciBusId` (cuDeviceGetPCIBusId's spelling). Read only, like every NVML call. */
  nvmlSnapshot(pciBusId: string): NativeNvmlSnapshot;
}
