// The GPU API the rest of the program uses (in the spirit of cuda.core): Gpu.open → compile → loadModule → getKernel,
// alloc → DeviceBuffer, launch, benchmark. Every call goes to the worker process (gpu-worker.ts); nothing here touches
// CUDA, so no kernel can take this process down.
//
// Handles (Module, Kernel, DeviceBuffer) belong to this process and outlive the worker. Each remembers how it was made:
// a module its cubin, a kernel its module and name, a buffer its size and its last host-side contents (the uploads,
// fills and random fills since it was last overwritten as a whole). When a handle made on an older worker is used after
// a restart (timeout, fault, crash), it is re-created on the new worker first, transparently. Contents a kernel wrote
// are NOT restored: a re-created buffer holds its last host-side recipe again, not the kernel's output.

import { checkBoolean, checkNonNegativeInteger, checkPositiveInteger, checkString } from './check';
import {
  checkDType,
  checkScalarValue,
  dtypeBytes,
  isKernelScalar,
  isTypedArrayOf,
  nativeScalar,
  scalarBitPattern,
  viewBytesAs,
  type AnyTypedArray,
  type DType,
  type KernelScalar,
  type ScalarValueOf,
  type TypedArrayOf,
} from './dtype';
import { ENERGY_WINDOW_MS, MIN_ENERGY_WINDOW_MS, type EnergyResult } from './energy';
import { ArgumentError, argumentError } from './errors';
import { markPhase } from '../phases';
import { GpuWorker, isStaleGeneration, type CallOptions, type GpuWorkerOptions, type RequestOptions } from './gpu-worker';
import { kernelMetrics, type KernelMetrics } from './kernel-metrics';
import { LaunchConfig, type Dim3Init, type LaunchConfigInit } from './launch-config';
import type { NativeStatus } from './native-types';
import { Program, archForComputeCapability, type ProgramInit } from './program';
import type { HandleId, WireArg, WireCheck, WireLaunch, WireReset } from './protocol';
import { checkRandomSpec, type NormalizedRandomSpec, type RandomSpec } from './random';
import { computeStats, type TimingStats } from './stats';
import type { Occupancy } from './occupancy';
import type { CompiledProgram, CompileOptions, DeviceInfo, KernelAttributes, MemInfo, NvmlReadings, RuntimeInfo } from './types';

export * from './errors';
export * from './dtype';
export * from './types';
export { LaunchConfig, type Dim3Init, type LaunchConfigInit } from './launch-config';
export { Program, archForComputeCapability, type ProgramInit } from './program';
export { computeStats, median, type TimingStats } from './stats';
export { type RandomSpec, type RandomDistribution } from './random';
export { GpuWorker, type GpuWorkerOptions, type RequestOptions } from './gpu-worker';
export { type WorkerReady } from './worker-process';
export { parseDiagnostics } from './diagnostics';
export { ENERGY_WINDOW_MS, MIN_ENERGY_WINDOW_MS, summarizeEnergyRun, type EnergyResult, type NvmlMetrics } from './energy';
export { occupancyDeviceFor, theoreticalOccupancy, type Occupancy, type OccupancyDevice, type OccupancyLimit } from './occupancy';
export { calculatedKernelMetrics, kernelMetrics, usageOfResources, type KernelMetrics, type KernelUsage } from './kernel-metrics';

/** Internal: the worker-side id of a handle on a given worker generation (re-creating it there if needed). */
const BIND = Symbol('bind');

export type KernelArg = DeviceBuffer | KernelScalar;

export interface BenchmarkOptions extends RequestOptions {
  /** Untimed launches first; default 3. */
  warmup?: number;
  /** Timed launches, each between its own pair of CUDA events; default 20. */
  iterations?: number;
  /** Overwrite a buffer larger than L2 before each timed launch (outside the events), so every launch starts cold. */
  flushL2?: boolean;
  /**
   * Also measure energy and power with NVML (read only): after the timed launches the kernel runs back to back for
   * `windowMs` (default 1000, at least 100: NVML's energy counter moves every 20-100 ms) while NVML is read. The
   * timings come from the timed launches alone.
   */
  energy?: boolean | { windowMs?: number };
  /**
   * Buffers reset before each timed launch, outside its events: filled with a value (a dtype's scalar, as `fill`) or
   * copied from another buffer of the same dtype and length. What a timed launch leaves in them is then its own work.
   */
  resetBeforeEach?: readonly BufferReset[];
  /**
   * Start each timed launch from an idle GPU, as Kernel Tuner times (the host waits for the device before the start
   * event, so the time includes the launch's way from the host); default false: launches follow each other on the stream.
   */
  idleBeforeEach?: boolean;
  /** Run these checks after the timed launches, in the same request (see runChecks); their results in `checks`. */
  checksAfter?: readonly CheckRun[];
}

/** Timing statistics and, when asked for, the energy measured around them (or why there is none) and the checks' results. */
export interface BenchmarkResult extends TimingStats {
  energy?: EnergyResult;
  checks?: bigint[][];
}

/**
 * A launch that answers in a few uint64 words: `result` is set to `init` before it and read back after it. How the
 * tuner compares outputs and fingerprints inputs on the device, several in one request.
 */
export interface CheckRun {
  kernel: Kernel;
  config: LaunchConfig | LaunchConfigInit;
  args: readonly KernelArg[];
  result: DeviceBuffer<'uint64'>;
  init: readonly bigint[];
}

/** The block and dynamic shared memory a kernel is launched with: what its occupancy depends on. */
export interface BlockShape {
  block: Dim3Init;
  sharedMemBytes?: number;
}

export type BufferReset = { buffer: DeviceBuffer; fill: number | bigint } | { buffer: DeviceBuffer; copyFrom: DeviceBuffer };

abstract class RemoteHandle {
  private bound: { generation: number; id: HandleId } | null = null;
  private binding: { generation: number; promise: Promise<HandleId> } | null = null;
  protected released = false;

  constructor(
    readonly gpu: Gpu,
    generation: number,
    id: HandleId,
  ) {
    this.bound = { generation, id };
  }

  /** Re-creates the handle on a fresh worker of `generation` (its requests go before any waiting one). */
  protected abstract recreate(generation: number): Promise<HandleId>;
  protected abstract describe(): string;

  protected assertUsable(): void {
    if (this.released) throw new ArgumentError(`${this.describe()} was released and can no longer be used`, {
      code: 'HANDLE_RELEASED',
      explanation: 'Free, unload or dispose only after the last use of a handle.',
    });
  }

  [BIND](generation: number): HandleId | Promise<HandleId> {
    this.assertUsable();
    if (this.bound?.generation === generation) return this.bound.id;
    if (this.binding?.generation === generation) return this.binding.promise;
    const promise: Promise<HandleId> = this.recreate(generation).then(
      (id) => {
        this.bound = { generation, id };
        return id;
      },
      (e: unknown) => {
        if (this.binding?.promise === promise) this.binding = null;
        throw e;
      },
    );
    this.binding = { generation, promise };
    return promise;
  }

  /**
   * Releases the worker-side object if it still exists; the handle is unusable afterwards. An object made on a worker
   * that has since been replaced died with it: nothing to send (and its id would mean something else on the new one).
   */
  protected async release(releaseRemote: (id: HandleId, generation: number) => Promise<void>): Promise<void> {
    if (this.released) return;
    this.released = true;
    // A re-creation under way (for a request already being prepared) ends with an object that must be freed too.
    await this.binding?.promise.catch(() => undefined);
    const bound = this.bound;
    this.bound = null;
    this.binding = null;
    if (!bound || !this.gpu.worker.isCurrent(bound.generation)) return;
    try {
      await releaseRemote(bound.id, bound.generation);
    } catch (e) {
      if (!isStaleGeneration(e)) throw e;
    }
  }
}

/** Replayable step of a buffer's host-side contents. */
type ContentStep =
  | { op: 'upload'; data: AnyTypedArray; byteOffset: number }
  | { op: 'fill'; pattern: bigint }
  | { op: 'random'; spec: NormalizedRandomSpec };

export class DeviceBuffer<D extends DType = DType> extends RemoteHandle {
  readonly dtype: D;
  readonly length: number;
  readonly byteLength: number;
  private steps: readonly ContentStep[] = [];

  /** @internal Use Gpu.alloc. */
  constructor(gpu: Gpu, dtype: D, length: number, generation: number, id: HandleId) {
    super(gpu, generation, id);
    this.dtype = dtype;
    this.length = length;
    this.byteLength = length * dtypeBytes(dtype);
  }

  protected describe(): string {
    return `DeviceBuffer<${this.dtype}>[${this.length}]`;
  }

  get freed(): boolean {
    return this.released;
  }

  protected async recreate(generation: number): Promise<HandleId> {
    const at = { front: true, generation };
    const { buffer } = await this.gpu.worker.request('memAlloc', { bytes: this.byteLength }, at);
    for (const step of this.steps) await this.sendStep(step, async () => buffer, at);
    return buffer;
  }

  private sendStep(step: ContentStep, buffer: (generation: number) => Promise<HandleId>, options: CallOptions): Promise<void> {
    const w = this.gpu.worker;
    switch (step.op) {
      case 'upload':
        return w.request('memUpload', async (g) => ({ buffer: await buffer(g), data: step.data, byteOffset: step.byteOffset }), options);
      case 'fill':
        return w.request(
          'memFill',
          async (g) => ({ buffer: await buffer(g), elementBytes: dtypeBytes(this.dtype), pattern: step.pattern, count: this.length }),
          options,
        );
      case 'random':
        return w.request('fillRandom', async (g) => ({ buffer: await buffer(g), dtype: this.dtype, count: this.length, spec: step.spec }), options);
    }
  }

  /** Runs one content step and records it when it is sent, so that a replay sees exactly the steps that preceded it. */
  private async write(step: ContentStep, whole: boolean, options: RequestOptions): Promise<void> {
    this.assertUsable();
    await this.sendStep(
      step,
      async (generation) => {
        const buffer = await this[BIND](generation);
        this.steps = whole ? [step] : [...this.steps, step];
        return buffer;
      },
      options,
    );
  }

  /**
   * Host → device. `data` must be the typed array of this buffer's dtype (Float32Array for float32, HalfArray for
   * float16 ...). A copy is kept as the buffer's recipe (see the file comment), so later changes to `data` do not
   * affect the buffer.
   */
  async upload(data: TypedArrayOf<D>, options: RequestOptions & { offset?: number } = {}): Promise<void> {
    if (!isTypedArrayOf(this.dtype, data)) throw argumentError('data', `a typed array of ${this.dtype}`, data);
    const offset = options.offset === undefined ? 0 : checkNonNegativeInteger('offset', options.offset);
    if (offset + data.length > this.length)
      throw argumentError('data', `at most ${this.length - offset} elements (buffer of ${this.length}, offset ${offset})`, data);
    const copy = data.slice() as AnyTypedArray;
    const whole = offset === 0 && data.length === this.length;
    await this.write({ op: 'upload', data: copy, byteOffset: offset * dtypeBytes(this.dtype) }, whole, options);
  }

  /** Device → host, as a typed array of this buffer's dtype. */
  async download(options: RequestOptions = {}): Promise<TypedArrayOf<D>> {
    this.assertUsable();
    const bytes = await this.gpu.worker.request(
      'memDownload',
      async (generation: number) => ({ buffer: await this[BIND](generation), byteOffset: 0, bytes: this.byteLength }),
      options,
    );
    return viewBytesAs(this.dtype, bytes);
  }

  /** Sets every element to `value` (checked against the dtype's range; NaN and ±Infinity allowed for floats). */
  async fill(value: ScalarValueOf<D>, options: RequestOptions = {}): Promise<void> {
    const pattern = scalarBitPattern(this.dtype, checkScalarValue(this.dtype, value, 'value'));
    await this.write({ op: 'fill', pattern }, true, options);
  }

  /** Seeded random contents, generated in the worker (xoshiro128**, see random.ts) and uploaded. */
  async fillRandom(spec: RandomSpec, options: RequestOptions = {}): Promise<void> {
    await this.write({ op: 'random', spec: checkRandomSpec(this.dtype, spec) }, true, options);
  }

  /** Device → device copy of a buffer of the same dtype and length. Its recipe becomes the source's. */
  async copyFrom(source: DeviceBuffer<D>, options: RequestOptions = {}): Promise<void> {
    if (!(source instanceof DeviceBuffer) || source.gpu !== this.gpu) throw argumentError('source', 'a DeviceBuffer of the same Gpu', source);
    if (source.dtype !== this.dtype || source.length !== this.length)
      throw argumentError('source', `a DeviceBuffer<${this.dtype}>[${this.length}]`, `DeviceBuffer<${source.dtype}>[${source.length}]`);
    this.assertUsable();
    await this.gpu.worker.request('memCopy', async (generation: number) => {
      const src = await source[BIND](generation);
      const dst = await this[BIND](generation);
      this.steps = source.steps;
      return { dst, src, bytes: this.byteLength };
    }, options);
  }

  /** Frees the device memory. Using the buffer afterwards is an ArgumentError. */
  free(): Promise<void> {
    this.steps = [];
    return this.release((buffer, generation) => this.gpu.worker.request('memFree', { buffer }, { generation }));
  }
}

export class Module extends RemoteHandle {
  readonly compiled: CompiledProgram;

  /** @internal Use Gpu.loadModule. */
  constructor(gpu: Gpu, compiled: CompiledProgram, generation: number, id: HandleId) {
    super(gpu, generation, id);
    this.compiled = compiled;
  }

  protected describe(): string {
    return `Module(${Object.keys(this.compiled.loweredNames).join(', ')})`;
  }

  get unloaded(): boolean {
    return this.released;
  }

  protected async recreate(generation: number): Promise<HandleId> {
    const { module } = await this.gpu.worker.request('moduleLoad', { cubin: this.compiled.cubin }, { front: true, generation });
    return module;
  }

  /**
   * Copies a device buffer, whole, into the module's global symbol (`__constant__ float d_filter[33*33]`: Kernel
   * Tuner's cmem_args); returns the symbol's size in bytes. Its kernels read the data from their next launch. A module
   * reloaded on a fresh worker starts without it: copy again before each run that needs it.
   */
  async copyToSymbol(symbol: string, source: DeviceBuffer, options: RequestOptions = {}): Promise<number> {
    checkString('symbol', symbol);
    if (!(source instanceof DeviceBuffer) || source.gpu !== this.gpu) throw argumentError('source', 'a DeviceBuffer of the same Gpu', source);
    this.assertUsable();
    const { symbolBytes } = await this.gpu.worker.request(
      'copyToSymbol',
      async (generation: number) => ({ module: await this[BIND](generation), symbol, src: await source[BIND](generation), bytes: source.byteLength }),
      options,
    );
    return symbolBytes;
  }



  /** The kernel for one of the program's name expressions (e.g. "matmul<float, 16>"), with its attributes. */
  async getKernel(nameExpression: string, options: RequestOptions = {}): Promise<Kernel> {
    checkString('nameExpression', nameExpression);
    this.assertUsable();
    const loweredName = this.compiled.loweredNames[nameExpression];
    if (loweredName === undefined)
      throw argumentError('nameExpression', `one of the program's name expressions (${Object.keys(this.compiled.loweredNames).join(', ')})`, nameExpression);
    const { result, generation } = await this.gpu.worker.call(
      'getKernel',
      async (g: number) => ({ module: await this[BIND](g), loweredName }),
      options,
    );
    return new Kernel(this, nameExpression, loweredName, result.attributes, generation, result.kernel);
  }

  /** Unloads the module; its kernels can no longer be launched. */
  unload(): Promise<void> {
    return this.release((module, generation) => this.gpu.worker.request('moduleUnload', { module }, { generation }));
  }
}

export class Kernel extends RemoteHandle {
  readonly module: Module;
  readonly nameExpression: string;
  readonly loweredName: string;
  /** Registers, static shared memory, local (spill) bytes, max threads per block, as the driver reports them. */
  readonly attributes: KernelAttributes;

  /** @internal Use Module.getKernel. */
  constructor(module: Module, nameExpression: string, loweredName: string, attributes: KernelAttributes, generation: number, id: HandleId) {
    super(module.gpu, generation, id);
    this.module = module;
    this.nameExpression = nameExpression;
    this.loweredName = loweredName;
    this.attributes = Object.freeze({ ...attributes });
  }

  protected describe(): string {
    return `Kernel(${this.nameExpression})${this.module.unloaded ? ' of an unloaded module' : ''}`;
  }

  protected override assertUsable(): void {
    if (this.module.unloaded) this.released = true;
    super.assertUsable();
  }

  /**
   * The driver's theoretical occupancy (cuOccupancyMaxActiveBlocksPerMultiprocessor) of this kernel launched with
   * `shape`, with the limits reached where the occupancy calculator agrees. A block this kernel cannot run is a
   * LaunchError, as for a launch.
   */
  async occupancy(shape: BlockShape, options: RequestOptions = {}): Promise<Occupancy> {
    const cfg = LaunchConfig.from({ grid: 1, ...shape }).validate(this.gpu.device, this.attributes);
    return this.gpu.worker.request(
      'occupancy',
      async (generation: number) => ({ kernel: await this[BIND](generation), threadsPerBlock: cfg.threadsPerBlock, dynamicSharedBytes: cfg.sharedMemBytes }),
      options,
    );
  }

  /** The configuration's free metrics: registers, local memory, shared memory and the driver's occupancy. */
  async metrics(shape: BlockShape, options: RequestOptions = {}): Promise<KernelMetrics> {
    const occupancy = await this.occupancy(shape, options);
    return kernelMetrics(this.attributes, shape.sharedMemBytes ?? 0, occupancy);
  }

  protected async recreate(generation: number): Promise<HandleId> {
    const module = await this.module[BIND](generation);
    const { kernel } = await this.gpu.worker.request('getKernel', { module, loweredName: this.loweredName }, { front: true, generation });
    return kernel;
  }
}

export interface GpuOptions extends GpuWorkerOptions {}

export class Gpu {
  readonly worker: GpuWorker;
  /** The device this Gpu works on. */
  readonly device: DeviceInfo;
  /** Its own compile target, e.g. "sm_90": the default arch of programs. */
  readonly arch: string;
  /** What the worker's addon found (libcuda, libnvrtc). */
  readonly nativeStatus: NativeStatus;

  private constructor(worker: GpuWorker, device: DeviceInfo, status: NativeStatus) {
    this.worker = worker;
    this.device = device;
    this.arch = archForComputeCapability(device.computeCapability);
    this.nativeStatus = status;
  }

  /**
   * Starts a worker for `options.device` (default 0) and reads the device. Rejects with CudaUnavailableError when the
   * addon, the driver or the device is missing (the message says what to install).
   */
  static async open(options: GpuOptions = {}): Promise<Gpu> {
    const worker = new GpuWorker(options);
    try {
      const ready = await worker.start();
      if (ready.addonError) throw ready.addonError;
      markPhase('GPU worker ready (process, addon, driver and NVRTC loaded)');
      const device = await worker.request('deviceInfo', { ordinal: worker.device });
      return new Gpu(worker, device, ready.status);
    } catch (e) {
      await worker.dispose();
      throw e;
    }
  }

  /** Whether the worker loaded NVRTC (else compile through NvccCompiler; compiler.ts chooses). */
  get nvrtcAvailable(): boolean {
    return this.nativeStatus.nvrtc.loaded;
  }

  devices(options: RequestOptions = {}): Promise<DeviceInfo[]> {
    return this.worker.request('devices', {}, options);
  }

  runtime(options: RequestOptions = {}): Promise<RuntimeInfo> {
    return this.worker.request('runtime', {}, options);
  }

  memInfo(options: RequestOptions = {}): Promise<MemInfo> {
    return this.worker.request('memInfo', {}, options);
  }

  /** NVML's readings of this device now (power, enforced power limit, clocks, temperature), read only. Rejects with
   * CudaUnavailableError (library 'libnvidia-ml') without NVML. */
  nvml(options: RequestOptions = {}): Promise<NvmlReadings> {
    return this.worker.request('nvml', {}, options);
  }

  /** Compiles with NVRTC in the worker (on its thread pool: several compiles may run at once). */
  compile(program: Program | ProgramInit, options: CompileOptions = {}): Promise<CompiledProgram> {
    return compileInWorker(this.worker, program, this.arch, options);
  }

  async loadModule(compiled: CompiledProgram, options: RequestOptions = {}): Promise<Module> {
    if (typeof compiled !== 'object' || compiled === null || !(compiled.cubin instanceof Uint8Array) || compiled.cubin.byteLength === 0)
      throw argumentError('compiled', 'a CompiledProgram with a non-empty cubin', compiled);
    const { result, generation } = await this.worker.call('moduleLoad', { cubin: compiled.cubin }, options);
    return new Module(this, compiled, generation, result.module);
  }

  async alloc<D extends DType>(dtype: D, length: number, options: RequestOptions = {}): Promise<DeviceBuffer<D>> {
    checkDType('dtype', dtype);
    checkPositiveInteger('length', length);
    const bytes = length * dtypeBytes(dtype);
    if (!Number.isSafeInteger(bytes)) throw argumentError('length', 'a buffer size below 2^53 bytes', length);
    const { result, generation } = await this.worker.call('memAlloc', { bytes }, options);
    return new DeviceBuffer(this, dtype, length, generation, result.buffer);
  }

  /** One launch, waited for. Checked against the device and the kernel first (LaunchError before anything runs). */
  async launch(kernel: Kernel, config: LaunchConfig | LaunchConfigInit, args: readonly KernelArg[], options: RequestOptions = {}): Promise<void> {
    const build = this.prepareLaunch(kernel, config, args);
    await this.worker.request('launch', build, options);
  }

  /** Warm-up launches, then `iterations` timed ones (CUDA events around each); statistics computed here. With
   * `energy`, NVML's energy and power measured after them (see BenchmarkOptions.energy). */
  async benchmark(
    kernel: Kernel,
    config: LaunchConfig | LaunchConfigInit,
    args: readonly KernelArg[],
    options: BenchmarkOptions = {},
  ): Promise<BenchmarkResult> {
    const warmup = options.warmup === undefined ? 3 : checkNonNegativeInteger('warmup', options.warmup);
    const iterations = options.iterations === undefined ? 20 : checkPositiveInteger('iterations', options.iterations);
    const flushL2 = options.flushL2 === undefined ? false : checkBoolean('flushL2', options.flushL2);
    const idleBeforeEach = options.idleBeforeEach === undefined ? false : checkBoolean('idleBeforeEach', options.idleBeforeEach);
    const energy = energyWindow(options.energy);
    const build = this.prepareLaunch(kernel, config, args);
    const resets = this.prepareResets(options.resetBeforeEach ?? []);
    const checks = options.checksAfter && this.prepareChecks(options.checksAfter, 'checksAfter');
    const result = await this.worker.request(
      'benchmark',
      async (generation: number) => ({
        ...(await build(generation)),
        warmup,
        iterations,
        flushL2,
        resets: await resets(generation),
        ...(idleBeforeEach && { idleBeforeEach }),
        ...(energy && { energy }),
        ...(checks && { checks: await checks(generation) }),
      }),
      options,
    );
    const stats: BenchmarkResult = computeStats(result.samplesMs);
    if (result.energy) stats.energy = result.energy;
    if (result.checks) stats.checks = result.checks;
    return stats;
  }

  /** Runs the checks one after another in one request (each launch waited for); each one's result words, in order. */
  async runChecks(checks: readonly CheckRun[], options: RequestOptions = {}): Promise<bigint[][]> {
    const prepared = this.prepareChecks(checks, 'checks');
    const { results } = await this.worker.request('checks', async (generation: number) => ({ checks: await prepared(generation) }), options);
    return results;
  }

  /**
   * The driver's own device → device copy (cuMemcpyDtoD) of all of `source` into `destination` (two buffers of the
   * same byte length), timed like `benchmark`: the yardstick of the device's memory bandwidth.
   */
  async benchmarkCopy(destination: DeviceBuffer, source: DeviceBuffer, options: { warmup?: number; iterations?: number } & RequestOptions = {}): Promise<TimingStats> {
    for (const [name, b] of [['destination', destination], ['source', source]] as const) this.usableBuffer(b, name);
    if (destination === source || destination.byteLength !== source.byteLength) throw argumentError('source', `another DeviceBuffer of ${destination.byteLength} bytes`, source);
    const warmup = options.warmup === undefined ? 3 : checkNonNegativeInteger('warmup', options.warmup);
    const iterations = options.iterations === undefined ? 20 : checkPositiveInteger('iterations', options.iterations);
    if (iterations > 1000) throw argumentError('iterations', 'at most 1000', iterations);
    const { samplesMs } = await this.worker.request(
      'memCopyBenchmark',
      async (generation: number) => ({ dst: await destination[BIND](generation), src: await source[BIND](generation), bytes: source.byteLength, warmup, iterations }),
      options,
    );
    return computeStats(samplesMs);
  }

  /** Stops the worker. Handles of this Gpu cannot be used afterwards. */
  dispose(): Promise<void> {
    return this.worker.dispose();
  }

  private usableBuffer(b: unknown, name: string): DeviceBuffer {
    if (!(b instanceof DeviceBuffer) || b.gpu !== this || b.freed) throw argumentError(name, 'a DeviceBuffer of this Gpu that is not freed', b);
    return b;
  }

  private prepareChecks(checks: readonly CheckRun[], name: string): (generation: number) => Promise<WireCheck[]> {
    if (!Array.isArray(checks)) throw argumentError(name, 'an array of { kernel, config, args, result, init }', checks);
    const prepared = checks.map((c, i) => {
      const result = this.usableBuffer(c?.result, `${name}[${i}].result`);
      if (result.dtype !== 'uint64') throw argumentError(`${name}[${i}].result`, 'a DeviceBuffer<uint64>', `DeviceBuffer<${result.dtype}>`);
      if (!Array.isArray(c.init) || c.init.length === 0 || c.init.length > result.length || c.init.some((w: unknown) => typeof w !== 'bigint' || w < 0n || w >= 1n << 64n))
        throw argumentError(`${name}[${i}].init`, `1 to ${result.length} uint64 words (bigints)`, c.init);
      return { launch: this.prepareLaunch(c.kernel, c.config, c.args), result, init: [...c.init] };
    });
    return (generation) => Promise.all(prepared.map(async (c): Promise<WireCheck> => ({ launch: await c.launch(generation), result: await c.result[BIND](generation), init: c.init })));
  }

  private prepareResets(resets: readonly BufferReset[]): (generation: number) => Promise<WireReset[]> {
    if (!Array.isArray(resets)) throw argumentError('resetBeforeEach', 'an array of { buffer, fill } and { buffer, copyFrom }', resets);
    const checked = resets.map((r, i) => {
      const buffer = this.usableBuffer(r?.buffer, `resetBeforeEach[${i}].buffer`);
      if ('copyFrom' in r) {
        const source = this.usableBuffer(r.copyFrom, `resetBeforeEach[${i}].copyFrom`);
        if (source === buffer || source.dtype !== buffer.dtype || source.length !== buffer.length)
          throw argumentError(`resetBeforeEach[${i}].copyFrom`, `another DeviceBuffer<${buffer.dtype}>[${buffer.length}]`, `DeviceBuffer<${source.dtype}>[${source.length}]`);
        return { kind: 'copy' as const, buffer, source };
      }
      const pattern = scalarBitPattern(buffer.dtype, checkScalarValue(buffer.dtype, r.fill as never, `resetBeforeEach[${i}].fill`));
      return { kind: 'fill' as const, buffer, pattern };
    });
    return (generation) =>
      Promise.all(
        checked.map(async (r): Promise<WireReset> =>
          r.kind === 'copy'
            ? { kind: 'copy', dst: await r.buffer[BIND](generation), src: await r.source[BIND](generation), bytes: r.buffer.byteLength }
            : { kind: 'fill', buffer: await r.buffer[BIND](generation), elementBytes: dtypeBytes(r.buffer.dtype) as 1 | 2 | 4 | 8, pattern: r.pattern, count: r.buffer.length },
        ),
      );
  }

  private prepareLaunch(
    kernel: Kernel,
    config: LaunchConfig | LaunchConfigInit,
    args: readonly KernelArg[],
  ): (generation: number) => Promise<WireLaunch> {
    if (!(kernel instanceof Kernel) || kernel.gpu !== this) throw argumentError('kernel', 'a Kernel of this Gpu', kernel);
    const cfg = LaunchConfig.from(config).validate(this.device, kernel.attributes);
    if (!Array.isArray(args)) throw argumentError('args', 'an array of DeviceBuffers and typed scalars', args);
    const checked = args.map((a, i): DeviceBuffer | KernelScalar => {
      if (a instanceof DeviceBuffer) {
        if (a.gpu !== this) throw argumentError(`args[${i}]`, 'a DeviceBuffer of this Gpu', a);
        if (a.freed) throw argumentError(`args[${i}]`, 'a DeviceBuffer that is not freed', a);
        return a;
      }
      if (isKernelScalar(a)) return { kind: 'scalar', dtype: a.dtype, value: checkScalarValue(a.dtype, a.value, `args[${i}]`) };
      throw argumentError(`args[${i}]`, 'a DeviceBuffer or a typed scalar such as int32(n) or float32(x)', a);
    });
    return async (generation: number) => ({
      kernel: await kernel[BIND](generation),
      grid: cfg.grid,
      block: cfg.block,
      sharedMemBytes: cfg.sharedMemBytes,
      args: await Promise.all(
        checked.map(async (a): Promise<WireArg> =>
          a instanceof DeviceBuffer ? { kind: 'buffer', buffer: await a[BIND](generation) } : { kind: 'scalar', ...nativeScalar(a.dtype, a.value) },
        ),
      ),
    });
  }
}


function energyWindow(option: BenchmarkOptions['energy']): { windowMs: number } | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return { windowMs: ENERGY_WINDOW_MS };
  if (typeof option !== 'object' || option === null) throw argumentError('energy', 'a boolean or { windowMs }', option);
  const windowMs = option.windowMs === undefined ? ENERGY_WINDOW_MS : checkPositiveInteger('energy.windowMs', option.windowMs);
  if (windowMs < MIN_ENERGY_WINDOW_MS)
    throw argumentError('energy.windowMs', `at least ${MIN_ENERGY_WINDOW_MS} ms (NVML's energy counter moves every 20-100 ms)`, windowMs);
  return { windowMs };
}

/** An NVRTC compile in a worker process (a GPU worker, or a compile process of a CompilePool), for `defaultArch` unless the program names its own target. */
export async function compileInWorker(worker: GpuWorker, program: Program | ProgramInit, defaultArch: string, options: CompileOptions = {}): Promise<CompiledProgram> {
  const p = Program.from(program);
  const arch = p.arch ?? defaultArch;
  const r = await worker.request('compile', p.toNativeRequest(arch), options);
  const compiled: CompiledProgram = {
    cubin: Buffer.isBuffer(r.cubin) ? r.cubin : Buffer.from(r.cubin),
    log: r.log,
    loweredNames: r.loweredNames,
    backend: 'nvrtc',
    arch,
    durationMs: r.durationMs,
  };
  if (r.ptx !== undefined) compiled.ptx = r.ptx;
  return compiled;
}
