// The tuner's backend on a real GPU, through the worker (src/gpu). Test data is generated, compared and fingerprinted
// on the device by the helper kernels, so verification costs microseconds per configuration, not a host round trip
// (the tolerances, the poison and each input set's contents: test-data.ts).
//
// Device memory of a prepared test, per input set s (two sets: the second catches cached or constant results):
//   inputs[s]    every buffer argument: inputs filled from their spec, pure outputs poisoned before each run,
//                in/out buffers (outputs with an initial content) copied from initial[s] before each run;
//   expected[s]  the oracle's outputs.
// A worker restart (after a fault or a timeout) loses everything kernels wrote; each call checks the worker generation
// and rebuilds the test data on a fresh worker before it goes on.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { availableCompilers, noCompilerError, type Compiler } from '../../gpu/compiler';
import { CompilePool, type CompilePoolOptions } from '../../gpu/compile-pool';
import {
  CompileError,
  Gpu,
  dtypeBytes,
  isFloatDType,
  kernelMetrics,
  scalar,
  scalarBitPattern,
  type BufferReset,
  type CheckRun,
  type CompiledProgram,
  type DeviceBuffer,
  type DType,
  type EnergyResult,
  type GpuOptions,
  type Kernel,
  type KernelArg,
  type Module,
} from '../../gpu/client';
import { measureBandwidth } from '../../gpu/bandwidth';
import { markPhase } from '../../phases';
import { profileKernel } from '../../gpu/ncu/profile';
import { sanitizeKernel, type SanitizerRun } from '../../gpu/sanitizer/sanitize';
import { fp32PeakFlops, type DeviceSpeedLimits } from './speed-of-light';
import { driverMetrics, type ProfiledLaunch } from './profile';
import {
  backendList,
  programOf,
  type BuildRequest,
  type BuiltKernel,
  type CompiledKernel,
  type DeviceRunOptions,
  type EnergyOptions,
  type DeviceDescription,
  type Launch,
  type OutputComparison,
  type OutputMismatch,
  type PreparedTest,
  type SanitizeRunOptions,
  type TestData,
  type TimedLaunches,
  type TimedLaunchOptions,
  type Tolerance,
  type TuningBackend,
} from './backend';
import {
  COMPARE_SLOTS,
  COUNT_PATTERN_KERNEL_NAME,
  FINGERPRINT_KERNEL_NAME,
  HELPER_KERNELS_SOURCE,
  SCALE_SLOTS,
  compareKernelName,
  fillKernelName,
  helperNameExpressions,
  scaleKernelName,
} from './helper-kernels';
import { resolveGpuSelection, singleGpu, type GpuSelection } from './gpu-selection';
import type { BufferInit } from '../spec/input-spec';
import type { DriverMetrics } from '../types';
import {
  DEFAULT_TOLERANCE,
  InvalidTestDataError,
  POISON,
  SMALLEST_SUBNORMAL,
  initOf,
  mixSeed,
  launchInputs,
  summarizeMismatch,
  type BufferSlot,
  type InputSet,
  type NumericArray,
} from './test-data';

const HELPER_BLOCK = 256;

/** A cubin and the kernel to take from it: loads on any GPU of the arch it was compiled for. */
class GpuCompiledKernel implements CompiledKernel {
  constructor(
    readonly compiled: CompiledProgram,
    readonly nameExpression: string,
    readonly compileMs: number,
    /** Filled from the test's constant memory before every run of the kernel. */
    readonly constantSymbols: readonly string[],
  ) {}

  get log(): string {
    return this.compiled.log;
  }
}

export class GpuBuiltKernel implements BuiltKernel {
  constructor(
    readonly module: Module,
    readonly kernel: Kernel,
    readonly loadMs: number,
    readonly constantSymbols: readonly string[],
  ) {}

  async metrics(launch: Launch, options: { signal?: AbortSignal } = {}): Promise<DriverMetrics> {
    const metrics = await this.kernel.metrics({ block: launch.block, sharedMemBytes: launch.sharedMemBytes }, options);
    return { ...metrics, max_threads_per_block: this.kernel.attributes.maxThreadsPerBlock };
  }

  release(): Promise<void> {
    return this.module.unload();
  }
}

export class GpuPreparedTest implements PreparedTest {
  sets: InputSet[] = [];
  generation = -1;
  constructor(
    readonly data: TestData,
    readonly oracle: { kernel: GpuBuiltKernel; launch: Launch },
    readonly tolerance: Partial<Tolerance> | undefined,
    readonly timeoutMs: number,
  ) {}

  get inputSets(): number {
    return 2;
  }

  get scalars(): Record<string, number> {
    if (this.data.kind === 'spec') return this.data.test.scalars;
    const out: Record<string, number> = {};
    for (const a of this.data.arguments) if (a.kind === 'scalar') out[a.name] = Number(a.value);
    return out;
  }

  async release(): Promise<void> {
    const buffers = this.sets.flatMap((s) => [...s.buffers.flatMap((b) => [b.buffer, b.initial, b.expected]), ...s.ownConstants]);
    this.sets = [];
    await Promise.all(buffers.map((b) => b?.free()));
  }
}

export interface GpuBackendOptions extends GpuOptions {
  /** Where compiled helper kernels are kept between sessions; default <tmp>/llm-kernel-tuner. */
  cacheDir?: string;
  /**
   * The compile processes NVRTC compiles run in (shared by the GPUs of a run: openAll gives them one); default a pool
   * of its own, as many processes as the host has cores. The backend shares it and lets go of it when disposed.
   */
  compilePool?: CompilePool;
}

export class GpuBackend implements TuningBackend {
  private helpers: { module: Module; kernels: Map<string, Kernel>; dtypes: Set<DType> } | undefined;
  private scratch: DeviceBuffer<'uint64'> | undefined;
  private limits: Promise<DeviceSpeedLimits> | undefined;

  private constructor(
    readonly gpu: Gpu,
    private readonly compilers: { nvrtc: Compiler | null; nvcc: Compiler | null },
    private readonly cacheDir: string,
    /** Where its NVRTC compiles run (the one pool of every GPU of the run). */
    readonly compilePool: CompilePool,
  ) {}

  /**
   * Starts the GPU worker; rejects with CudaUnavailableError (saying what to install) without a driver or device, or
   * when neither NVRTC nor nvcc is there to compile with. NVRTC compiles run in the compile pool's processes.
   */
  static async open(options: GpuBackendOptions = {}): Promise<GpuBackend> {
    const { compilePool, cacheDir, ...gpuOptions } = options;
    const pool = compilePool?.share() ?? new CompilePool(compilePoolOptions(gpuOptions));
    // A compile process starts (and loads NVRTC: the same bundle in the same environment as the GPU worker) beside the
    // GPU worker, ready for the first compile; where NVRTC is missing it idles until the backend is disposed.
    pool.warm();
    try {
      const gpu = await Gpu.open(gpuOptions);
      try {
        // The CUDA context is created on the worker's first request that needs one: now, while the caller reads its
        // spec and builds the oracle, rather than when the oracle loads. Its failure is the first real request's.
        gpu.memInfo().then(() => markPhase('CUDA context created'), () => undefined);
        const { nvrtc, nvcc } = await availableCompilers(gpu);
        if (!nvrtc && !nvcc) throw noCompilerError(gpu);
        return new GpuBackend(gpu, { nvrtc: nvrtc && pool.compilerFor(gpu.arch), nvcc }, cacheDir ?? join(tmpdir(), 'llm-kernel-tuner'), pool);
      } catch (e) {
        await gpu.dispose();
        throw e;
      }
    } catch (e) {
      await pool.dispose();
      throw e;
    }
  }

  /**
   * Opens one GpuBackend (one worker process) per selected GPU, all compiling in one compile pool. The first is opened
   * on its own and lists the host's GPUs (a single GPU needs no listing); the others start in parallel. Either all
   * open, or none is left running.
   */
  static async openAll(selection: GpuSelection, options: Omit<GpuBackendOptions, 'device'> = {}): Promise<GpuBackend[]> {
    const pool = options.compilePool?.share() ?? new CompilePool(compilePoolOptions(options));
    const shared = { ...options, compilePool: pool };
    const first = selection.kind === 'list' ? selection.ordinals[0]! : 0;
    try {
      const opened = [await GpuBackend.open({ ...shared, device: first })];
      try {
        if (selection.kind === 'list' && selection.ordinals.length === 1) return opened;
        const ordinals = resolveGpuSelection(selection, await opened[0]!.gpu.devices());
        const others = await Promise.allSettled(ordinals.slice(1).map((device) => GpuBackend.open({ ...shared, device })));
        for (const o of others) if (o.status === 'fulfilled') opened.push(o.value);
        const failed = others.find((o): o is PromiseRejectedResult => o.status === 'rejected');
        if (failed) throw failed.reason;
        return opened;
      } catch (e) {
        await Promise.allSettled(opened.map((b) => b.dispose()));
        throw e;
      }
    } finally {
      await pool.dispose(); // openAll's own hold: the backends hold it from here on
    }
  }

  /** The preferred compiler: NVRTC when loaded (in-process, fast), else nvcc. */
  private get defaultCompiler() {
    return (this.compilers.nvrtc ?? this.compilers.nvcc)!;
  }

  async describe(): Promise<DeviceDescription> {
    const runtime = await this.gpu.runtime();
    const d = runtime.device;
    return {
      name: d.name,
      ordinal: d.ordinal,
      pciBusId: d.pciBusId,
      computeCapability: d.computeCapability,
      multiprocessors: d.multiprocessors,
      maxThreadsPerMultiprocessor: d.maxThreadsPerMultiprocessor,
      maxRegistersPerMultiprocessor: d.maxRegistersPerMultiprocessor,
      maxSharedMemoryPerMultiprocessor: d.maxSharedMemoryPerMultiprocessor,
      maxRegistersPerBlock: d.maxRegistersPerBlock,
      globalMemoryBytes: d.globalMemoryBytes,
      l2CacheBytes: d.l2CacheBytes,
      maxThreadsPerBlock: d.maxThreadsPerBlock,
      maxBlockDim: d.maxBlockDim,
      maxGridDim: d.maxGridDim,
      maxSharedMemoryPerBlock: d.maxSharedMemoryPerBlock,
      maxSharedMemoryPerBlockOptin: d.maxSharedMemoryPerBlockOptin,
      driverVersion: runtime.driverVersion,
      nvrtcVersion: this.compilers.nvrtc && runtime.nvrtcVersion ? runtime.nvrtcVersion.join('.') : null,
      arch: this.gpu.arch,
      compilers: [...(this.compilers.nvrtc ? ['nvrtc' as const] : []), ...(this.compilers.nvcc ? ['nvcc' as const] : [])],
      ...(this.gpu.nativeStatus.nvrtc.file && { nvrtcLibrary: this.gpu.nativeStatus.nvrtc.file }),
    };
  }

  /**
   * The device's limits for speed-of-light figures: the bandwidth measured by the copy kernel (gpu/bandwidth.ts), the
   * FP32 peak by the formula of speed-of-light.ts. Measured once per GPU (about a second) and kept on disk for a week:
   * a later run on the same GPU (host, PCI bus, driver) reuses them, and says when they were measured.
   */
  speedLimits(): Promise<DeviceSpeedLimits> {
    return (this.limits ??= this.keptLimits());
  }

  private async keptLimits(): Promise<DeviceSpeedLimits> {
    const { driverVersion, device } = await this.gpu.runtime();
    const key = createHash('sha256').update(JSON.stringify([hostname(), device.name, device.pciBusId, driverVersion])).digest('hex').slice(0, 24);
    const file = join(this.cacheDir, `speed-limits-${key}.json`);
    const kept = readKept<{ measuredAt: string; limits: DeviceSpeedLimits }>(file);
    if (kept && Date.now() - Date.parse(kept.measuredAt) < SPEED_LIMITS_KEPT_MS) {
      return { ...kept.limits, bandwidthMethod: `${kept.limits.bandwidthMethod} (measured on this GPU at ${kept.measuredAt})` };
    }
    const limits = await this.measureLimits();
    keep(file, JSON.stringify({ measuredAt: new Date().toISOString(), limits }));
    return limits;
  }

  private async measureLimits(): Promise<DeviceSpeedLimits> {
    const m = await measureBandwidth(this.gpu, { compiler: this.defaultCompiler });
    const peak = fp32PeakFlops(this.gpu.device);
    const gb = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
    return {
      bandwidthGBps: m.kernel.GBps,
      bandwidthMethod: `copy kernel (uint4, ${m.kernel.unroll} in flight per thread, block ${m.kernel.block}, grid ${m.kernel.grid}) over ${gb(m.bufferBytes)}: ${m.kernel.GBps.toFixed(0)} GB/s read + write, ${(100 * m.ratio).toFixed(1)}% of cuMemcpyDtoD's ${m.memcpy.GBps.toFixed(0)} GB/s`,
      memcpyGBps: m.memcpy.GBps,
      fp32GFlops: peak ? peak.flops / 1e9 : null,
      fp32Formula: peak?.formula ?? `unknown: the driver reports no clock rate for ${this.gpu.device.name}`,
    };
  }

  async compile(request: BuildRequest, signal?: AbortSignal): Promise<GpuCompiledKernel> {
    const compiler = this.compilers[request.compiler];
    if (!compiler) throw new Error(`internal: a build asked for ${request.compiler}, which this backend does not have`);
    const t0 = performance.now();
    const compiled = await compiler.compile(programOf(request), signal ? { signal } : {});
    return new GpuCompiledKernel(compiled, request.nameExpression, performance.now() - t0, request.constantSymbols ?? []);
  }

  async load(kernel: CompiledKernel): Promise<GpuBuiltKernel> {
    if (!(kernel instanceof GpuCompiledKernel)) throw new TypeError('a kernel compiled by another kind of backend was passed to GpuBackend');
    const { compiled, nameExpression } = kernel;
    if (compiled.arch !== this.gpu.arch) {
      throw new TypeError(`internal: a kernel compiled for ${compiled.arch} cannot load on GPU ${this.gpu.device.ordinal} (${this.gpu.device.name}, ${this.gpu.arch})`);
    }
    const t0 = performance.now();
    const module = await this.gpu.loadModule(compiled);
    try {
      const loaded = await module.getKernel(nameExpression);
      return new GpuBuiltKernel(module, loaded, performance.now() - t0, kernel.constantSymbols);
    } catch (e) {
      await module.unload();
      throw e;
    }
  }

  async prepare(data: TestData, oracle: { kernel: BuiltKernel; launch: Launch }, options: { tolerance?: Partial<Tolerance>; timeoutMs: number }): Promise<GpuPreparedTest> {
    const test = new GpuPreparedTest(data, { kernel: this.own(oracle.kernel), launch: oracle.launch }, options.tolerance, options.timeoutMs);
    await this.materialize(test);
    return test;
  }

  async resetOutputs(prepared: PreparedTest, inputSet: number): Promise<void> {
    const test = await this.current(prepared);
    await this.reset(test.sets[inputSet]!);
  }

  async energy(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: EnergyOptions): Promise<EnergyResult> {
    const test = await this.current(prepared);
    // The GPU layer runs the energy window after a benchmark's timed launches: one here, its time is not used.
    const { energy } = await this.gpu.benchmark(this.own(kernel).kernel, launch, test.sets[inputSet]!.args, {
      warmup: 0,
      iterations: 1,
      energy: { windowMs: options.windowMs },
      // The window, then a launch that may end after it and the timed one.
      timeoutMs: options.windowMs + 2 * options.timeoutMs,
      ...(options.signal && { signal: options.signal }),
    });
    if (!energy) throw new Error('internal: a benchmark with energy asked for came back without it');
    return energy.available ? { ...energy, nvml_energy: (energy.nvml_power * options.timeMs) / 1000 } : energy;
  }

  async check(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: DeviceRunOptions): Promise<{ timeMs: number; comparison: OutputComparison }> {
    const { samplesMs, comparison } = await this.timedLaunches(kernel, launch, prepared, inputSet, { ...options, warmup: 0, count: 1, flushL2: false, resetBeforeEach: true, idleBeforeEach: false, compare: true });
    return { timeMs: samplesMs[0]!, comparison: comparison! };
  }

  async timedLaunches(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: TimedLaunchOptions): Promise<TimedLaunches> {
    const test = await this.current(prepared);
    const set = test.sets[inputSet]!;
    const resetBeforeEach = options.resetBeforeEach ? outputResets(set) : [];
    // The series gets its constant memory as every checked launch does (a kernel cannot change it in between).
    await this.fillConstants(this.own(kernel), set);
    const checks = options.compare ? await this.comparisonChecks(set) : undefined;
    const result = await this.gpu.benchmark(this.own(kernel).kernel, launch, set.args, {
      warmup: options.warmup,
      iterations: options.count,
      flushL2: options.flushL2,
      resetBeforeEach,
      idleBeforeEach: options.idleBeforeEach,
      ...(checks && { checksAfter: checks.runs }),
      // The time limit covers the checks' launches too.
      ...requestOptions(options, options.warmup + options.count + 1 + (checks?.runs.length ?? 0)),
    });
    return { samplesMs: result.samplesMs, ...(checks && { comparison: await this.comparisonOf(test, inputSet, checks.slots, result.checks!) }) };
  }

  async compareOutputs(prepared: PreparedTest, inputSet: number): Promise<OutputComparison> {
    const test = await this.current(prepared);
    const { runs, slots } = await this.comparisonChecks(test.sets[inputSet]!);
    return this.comparisonOf(test, inputSet, slots, await this.gpu.runChecks(runs));
  }

  /**
   * The driver's metrics of the kernel loaded here, and Nsight Compute's profile of one launch in a process of its own
   * (the worker bundle's --profile entry) on the test's inputs, drawn from the same distributions (gpu/ncu/profile.ts).
   */
  async profile(kernel: CompiledKernel, launch: Launch, prepared: PreparedTest, options: DeviceRunOptions): Promise<ProfiledLaunch> {
    if (!(kernel instanceof GpuCompiledKernel)) throw new TypeError('a kernel compiled by another kind of backend was passed to GpuBackend');
    const test = await this.current(prepared);
    const built = await this.load(kernel);
    let driver;
    try {
      const occupancy = await built.kernel.occupancy({ block: launch.block, sharedMemBytes: launch.sharedMemBytes });
      driver = driverMetrics(kernelMetrics(built.kernel.attributes, launch.sharedMemBytes, occupancy), occupancy);
    } finally {
      await built.release();
    }
    const ncu = await profileKernel(
      { compiled: kernel.compiled, nameExpression: kernel.nameExpression, launch, ...launchInputs(test.data, 'zeroed'), device: this.gpu.device.ordinal },
      { timeoutMs: options.timeoutMs, workerPath: this.gpu.worker.workerPath, ...(this.gpu.worker.env && { env: this.gpu.worker.env }), ...(options.signal && { signal: options.signal }) },
    );
    return { driver, ncu };
  }

  /** One launch under compute-sanitizer's tools in a process of its own, on this GPU, with the worker's environment. */
  async sanitize(kernel: CompiledKernel, launch: Launch, data: TestData, options: SanitizeRunOptions): Promise<SanitizerRun> {
    if (!(kernel instanceof GpuCompiledKernel)) throw new TypeError('a kernel compiled by another kind of backend was passed to GpuBackend');
    return sanitizeKernel(
      { compiled: kernel.compiled, nameExpression: kernel.nameExpression, launch, ...launchInputs(data, 'uninitialized'), device: this.gpu.device.ordinal },
      { timeoutMs: options.timeoutMs, tools: options.tools, workerPath: this.gpu.worker.workerPath, ...(this.gpu.worker.env && { env: this.gpu.worker.env }), ...(options.signal && { signal: options.signal }) },
    );
  }

  async dispose(): Promise<void> {
    this.helpers = undefined;
    this.scratch = undefined;
    await Promise.all([this.gpu.dispose(), this.compilePool.dispose()]);
  }

  private own(kernel: BuiltKernel): GpuBuiltKernel {
    if (!(kernel instanceof GpuBuiltKernel)) throw new TypeError('a kernel built by another backend was passed to GpuBackend');
    return kernel;
  }

  /** The prepared test, rebuilt first when the worker restarted since (its device data died with the old worker). */
  private async current(prepared: PreparedTest): Promise<GpuPreparedTest> {
    if (!(prepared instanceof GpuPreparedTest)) throw new TypeError('a test prepared by another backend was passed to GpuBackend');
    // After a fault or a timeout the worker is gone (or already replaced): whatever kernels wrote died with it.
    if (!this.gpu.worker.isCurrent(prepared.generation)) await this.materialize(prepared);
    return prepared;
  }

  // ---- test data ----

  private async materialize(test: GpuPreparedTest): Promise<void> {
    await test.release();
    const dtypes = new Set<DType>(test.data.kind === 'spec' ? test.data.test.arguments.map((a) => a.dtype) : test.data.arguments.map((a) => a.dtype));
    await this.ensureHelpers(dtypes);
    for (let s = 0; s < test.inputSets; s++) test.sets.push(await this.makeInputSet(test, s));
    for (let s = 0; s < test.inputSets; s++) await this.runOracle(test, s);
    test.generation = this.gpu.worker.generation;
  }

  private async makeInputSet(test: GpuPreparedTest, s: number): Promise<InputSet> {
    const args: KernelArg[] = [];
    const buffers: BufferSlot[] = [];
    const entries = test.data.kind === 'spec' ? test.data.test.arguments : test.data.arguments;
    const baseSeed = test.data.kind === 'spec' ? test.data.test.seed : 1;
    for (const [index, arg] of entries.entries()) {
      if (arg.kind === 'scalar') {
        args.push(scalar(arg.dtype, arg.value as never));
        continue;
      }
      const length = 'length' in arg ? arg.length : arg.data.length;
      const buffer = await this.gpu.alloc(arg.dtype, length);
      const slot: BufferSlot = { name: arg.name, dtype: arg.dtype, length, output: arg.output, buffer };
      const seed = mixSeed(baseSeed + s, index);
      const init = initOf(arg, s, seed);
      if (init) {
        const target = arg.output ? (slot.initial = await this.gpu.alloc(arg.dtype, length)) : buffer;
        await this.initialize(target, init);
        if (!arg.output) slot.fingerprint = await this.fingerprint(buffer);
      }
      if (arg.output) {
        slot.expected = await this.gpu.alloc(arg.dtype, length);
        const given = s === 0 && arg.kind === 'buffer' && 'data' in arg ? arg.expected : undefined;
        if (given) await slot.expected.upload(given as never);
      }
      buffers.push(slot);
      args.push(buffer);
    }
    const constants = new Map<string, DeviceBuffer>();
    const ownConstants: DeviceBuffer[] = [];
    for (const [index, c] of (test.data.kind === 'spec' ? test.data.test.constants : []).entries()) {
      if (c.source.kind === 'argument') {
        const name = c.source.name;
        constants.set(c.symbol, buffers.find((b) => b.name === name)!.buffer);
        continue;
      }
      const buffer = await this.gpu.alloc(c.dtype, c.length);
      ownConstants.push(buffer);
      const source = c.source.init;
      const init: BufferInit & { seed?: number } = source.kind === 'random' ? { ...source, seed: mixSeed(baseSeed + s, entries.length + index) } : source;
      await this.initialize(buffer, init);
      constants.set(c.symbol, buffer);
    }
    return { args, buffers, constants, ownConstants };
  }

  /** Copies the set's constant memory into the symbols the kernel's module has (before each run: cmem_args). */
  private async fillConstants(kernel: GpuBuiltKernel, set: InputSet): Promise<void> {
    for (const symbol of kernel.constantSymbols) {
      const data = set.constants.get(symbol);
      if (!data) throw new Error(`internal: the test has no constant memory for __constant__ ${symbol}`);
      await kernel.module.copyToSymbol(symbol, data);
    }
  }

  private async initialize(buffer: DeviceBuffer, init: BufferInit | { kind: 'upload'; data: ArrayBufferView }): Promise<void> {
    if (init.kind === 'upload') return buffer.upload(init.data as never);
    if (init.kind === 'fill') return buffer.fill(init.value as never);
    const d = init.distribution;
    const n = scalar('uint64', BigInt(buffer.length));
    const seed = scalar('uint64', BigInt((init as { seed?: number }).seed ?? 0));
    const kernel = this.helper(fillKernelName(d.kind, buffer.dtype));
    const args: KernelArg[] =
      d.kind === 'uniform'
        ? [buffer, n, scalar('float64', d.min), scalar('float64', d.max), seed]
        : d.kind === 'normal'
          ? [buffer, n, scalar('float64', d.mean), scalar('float64', d.std), seed]
          : [buffer, n, scalar('int64', BigInt(d.min)), scalar('uint64', BigInt(d.max) - BigInt(d.min) + 1n), seed];
    await this.gpu.launch(kernel, this.helperLaunch(buffer.length), args);
  }

  private async runOracle(test: GpuPreparedTest, s: number): Promise<void> {
    const set = test.sets[s]!;
    const givenExpected = s === 0 && test.data.kind === 'host' && test.data.arguments.some((a) => a.kind === 'buffer' && a.output && a.expected);
    await this.reset(set);
    await this.fillConstants(test.oracle.kernel, set);
    await this.gpu.launch(test.oracle.kernel.kernel, test.oracle.launch, set.args, { timeoutMs: test.timeoutMs });
    for (const slot of set.buffers) {
      if (!slot.output) {
        if (slot.fingerprint !== undefined && (await this.fingerprint(slot.buffer)) !== slot.fingerprint) {
          throw new InvalidTestDataError(`the reference kernel changes its input '${slot.name}', which is not marked as an output: mark it "output": true`);
        }
        continue;
      }
      if (!slot.initial) await this.checkWritten(slot);
      if (!givenExpected) await slot.expected!.copyFrom(slot.buffer);
      slot.tolerance = await this.toleranceFor(slot, test.tolerance);
    }
  }

  /**
   * The reference kernel must write every element of a pure output: one it leaves poisoned would be "expected" to be
   * poison, and every configuration that writes nothing there would pass. (A kernel that writes only part of a buffer
   * by design gets a `fill`, which makes the buffer in/out.)
   */
  private async checkWritten(slot: BufferSlot): Promise<void> {
    const bytes = dtypeBytes(slot.dtype);
    const pattern = scalarBitPattern(slot.dtype, POISON[slot.dtype] as never);
    const args = (r: DeviceBuffer<'uint64'>): KernelArg[] => [slot.buffer, scalar('uint64', BigInt(slot.length)), scalar('uint32', bytes), scalar('uint64', pattern), r];
    const [unwritten] = await this.runHelper(COUNT_PATTERN_KERNEL_NAME, slot.length, args, [0n, 0n]);
    if (unwritten! > 0n) {
      throw new InvalidTestDataError(
        `the reference kernel leaves ${unwritten} of ${slot.length} elements of '${slot.name}' unwritten: the problem size, grid divisors or ` +
          'block size do not cover this output (check them against how the host code launches the kernel), or the kernel writes only ' +
          `part of it by design (then give '${slot.name}' a "fill" value, which makes it an in/out buffer)`,
      );
    }
  }

  private async toleranceFor(slot: BufferSlot, override: Partial<Tolerance> | undefined): Promise<{ rtol: number; atol: number } | 'exact'> {
    if (!isFloatDType(slot.dtype)) return 'exact';
    const dtype = slot.dtype as keyof typeof DEFAULT_TOLERANCE;
    const base = DEFAULT_TOLERANCE[dtype];
    const rtol = override?.rtol ?? base.rtol;
    if (override?.atol !== undefined) return { rtol, atol: override.atol };
    const result = await this.runHelper(scaleKernelName(slot.dtype), slot.length, (r) => [slot.expected!, scalar('uint64', BigInt(slot.length)), r], [0n, 0n]);
    const maxAbs = new Float64Array(BigUint64Array.of(result[SCALE_SLOTS.maxAbsBits]!).buffer)[0]!;
    return { rtol, atol: Math.max((override?.atolScale ?? base.atolScale) * maxAbs, SMALLEST_SUBNORMAL[dtype]) };
  }

  private async reset(set: InputSet): Promise<void> {
    for (const slot of set.buffers) {
      if (!slot.output) continue;
      if (slot.initial) await slot.buffer.copyFrom(slot.initial);
      else await slot.buffer.fill(POISON[slot.dtype] as never);
    }
  }

  // ---- verification ----

  /**
   * What compares an input set's outputs with the expected ones (the compare helper, its mismatch count) and checks
   * its inputs (their fingerprints), as checks of one request; `slots[i]` is what `runs[i]` looks at.
   */
  private async comparisonChecks(set: InputSet): Promise<{ runs: CheckRun[]; slots: BufferSlot[] }> {
    this.scratch ??= await this.gpu.alloc('uint64', 2);
    const result = this.scratch;
    const runs: CheckRun[] = [];
    const slots: BufferSlot[] = [];
    for (const slot of set.buffers) {
      if (slot.output) {
        const tol = slot.tolerance!;
        const [atol, rtol] = tol === 'exact' ? [0, 0] : [tol.atol, tol.rtol];
        runs.push(this.helperCheck(compareKernelName(slot.dtype), slot.length, [slot.buffer, slot.expected!, scalar('uint64', BigInt(slot.length)), scalar('float64', atol), scalar('float64', rtol), result], [0n, 0xffffffffffffffffn]));
      } else if (slot.fingerprint !== undefined) {
        runs.push(this.fingerprintCheck(slot.buffer));
      } else continue;
      slots.push(slot);
    }
    return { runs, slots };
  }

  /** The comparison the checks' results stand for; an overwritten input is restored (the rare failing paths ask more). */
  private async comparisonOf(test: GpuPreparedTest, s: number, slots: readonly BufferSlot[], results: readonly bigint[][]): Promise<OutputComparison> {
    const mismatches: OutputMismatch[] = [];
    const modifiedInputs: string[] = [];
    for (const [i, slot] of slots.entries()) {
      const r = results[i]!;
      if (slot.output) {
        if (r[COMPARE_SLOTS.mismatches]! > 0n) mismatches.push(await this.describeMismatch(slot, Number(r[COMPARE_SLOTS.mismatches])));
      } else if (r[0] !== slot.fingerprint) {
        modifiedInputs.push(slot.name);
        await this.restoreInput(test, s, slot);
      }
    }
    return { mismatches, modifiedInputs };
  }

  /** The rare failing path: download both and describe the difference precisely on the host. */
  private async describeMismatch(slot: BufferSlot, mismatches: number): Promise<OutputMismatch> {
    const got = (await slot.buffer.download()) as unknown as NumericArray;
    const want = (await slot.expected!.download()) as unknown as NumericArray;
    return summarizeMismatch(slot.name, slot.dtype, got, want, slot.tolerance!, mismatches);
  }

  private async restoreInput(test: GpuPreparedTest, s: number, slot: BufferSlot): Promise<void> {
    const entries = test.data.kind === 'spec' ? test.data.test.arguments : test.data.arguments;
    const index = entries.findIndex((a) => a.name === slot.name);
    const baseSeed = test.data.kind === 'spec' ? test.data.test.seed : 1;
    const init = initOf(entries[index]!, s, mixSeed(baseSeed + s, index));
    if (init) await this.initialize(slot.buffer, init);
  }

  private async fingerprint(buffer: DeviceBuffer): Promise<bigint> {
    this.scratch ??= await this.gpu.alloc('uint64', 2);
    const [result] = await this.gpu.runChecks([this.fingerprintCheck(buffer)]);
    return result![0]!;
  }

  private fingerprintCheck(buffer: DeviceBuffer): CheckRun {
    return this.helperCheck(FINGERPRINT_KERNEL_NAME, Math.ceil(buffer.byteLength / 4), [buffer, scalar('uint64', BigInt(buffer.byteLength)), this.scratch!], [0n, 0n]);
  }

  // ---- helper kernels ----

  private helper(name: string): Kernel {
    const k = this.helpers?.kernels.get(name);
    if (!k) throw new Error(`internal: helper kernel ${name} is not loaded`);
    return k;
  }

  private helperLaunch(elements: number): Launch {
    const blocks = Math.max(1, Math.min(Math.ceil(elements / HELPER_BLOCK), this.gpu.device.multiprocessors * 16));
    return { grid: [blocks, 1, 1], block: [HELPER_BLOCK, 1, 1], sharedMemBytes: 0 };
  }

  /** A helper that accumulates into the 2-slot uint64 scratch buffer (the last argument), set to `init` first. */
  private helperCheck(name: string, elements: number, args: KernelArg[], init: [bigint, bigint]): CheckRun {
    return { kernel: this.helper(name), config: this.helperLaunch(elements), args, result: this.scratch!, init };
  }

  /** Runs a helper that accumulates into a 2-slot uint64 result buffer (initialised to `init`) and returns the result. */
  private async runHelper(name: string, elements: number, args: (result: DeviceBuffer<'uint64'>) => KernelArg[], init: [bigint, bigint]): Promise<bigint[]> {
    this.scratch ??= await this.gpu.alloc('uint64', 2);
    const [result] = await this.gpu.runChecks([this.helperCheck(name, elements, args(this.scratch), init)]);
    return result!;
  }

  /** Compiles the helpers for these dtypes once (kept on disk per arch and compiler, so later sessions skip NVRTC). */
  private async ensureHelpers(dtypes: Set<DType>): Promise<void> {
    if (this.helpers && [...dtypes].every((d) => this.helpers!.dtypes.has(d))) return;
    const all = new Set<DType>([...(this.helpers?.dtypes ?? []), ...dtypes, 'uint32']);
    const names = helperNameExpressions([...all].sort());
    const program = { source: HELPER_KERNELS_SOURCE, fileName: 'lkt_helpers.cu', nameExpressions: names, options: ['-std=c++17'] };
    // The compiler's version is part of the key: a cubin from another toolkit may not load on this driver.
    const { nvrtcVersion, driverVersion } = await this.gpu.runtime();
    const key = createHash('sha256')
      .update(JSON.stringify([program, this.gpu.arch, this.defaultCompiler.backend, nvrtcVersion, driverVersion]))
      .digest('hex')
      .slice(0, 24);
    const cachePath = join(this.cacheDir, `helpers-${key}.json`);
    let compiled: CompiledProgram;
    const cached = readKept<CompiledProgram & { cubin: string }>(cachePath);
    if (cached) {
      compiled = { ...cached, cubin: Buffer.from(cached.cubin, 'base64') };
    } else {
      try {
        compiled = await this.defaultCompiler.compile(program);
      } catch (e) {
        if (e instanceof CompileError) throw new Error(`internal: the tuner's helper kernels do not compile on this toolkit:\n${e.message}`);
        throw e;
      }
      keep(cachePath, JSON.stringify({ ...compiled, cubin: compiled.cubin.toString('base64') }));
    }
    const previous = this.helpers;
    const module = await this.gpu.loadModule(compiled);
    const kernels = new Map<string, Kernel>();
    for (const name of names) kernels.set(name, await module.getKernel(name));
    this.helpers = { module, kernels, dtypes: all };
    await previous?.module.unload();
  }
}

/** What resets an input set's outputs before a timed launch: pure outputs poisoned, in/out outputs restored. */
export function outputResets(set: InputSet): BufferReset[] {
  return set.buffers.flatMap((slot): BufferReset[] => (!slot.output ? [] : slot.initial ? [{ buffer: slot.buffer, copyFrom: slot.initial }] : [{ buffer: slot.buffer, fill: POISON[slot.dtype] }]));
}

/** A compile pool's processes start as the GPU worker does (same bundle, environment and time limits). */
function compilePoolOptions(o: GpuOptions): CompilePoolOptions {
  return {
    ...(o.workerPath !== undefined && { workerPath: o.workerPath }),
    ...(o.env && { env: o.env }),
    ...(o.compileTimeoutMs !== undefined && { compileTimeoutMs: o.compileTimeoutMs }),
    ...(o.startTimeoutMs !== undefined && { startTimeoutMs: o.startTimeoutMs }),
    ...(o.onLog && { onLog: o.onLog }),
  };
}

/** The worker's options of a request of `launches` launches: the time limit of one launch, for each. */
function requestOptions(options: DeviceRunOptions, launches: number): { timeoutMs: number; signal?: AbortSignal } {
  return { timeoutMs: options.timeoutMs * launches, ...(options.signal && { signal: options.signal }) };
}

/**
 * The backends of a run (the tuner's and the engine's alike): the caller's own, or one GpuBackend per GPU of `gpus`,
 * else of `device` (default 0). `opened` says whether the run opened them, and so must close them.
 */
export async function backendsOf(o: { backend?: TuningBackend | readonly TuningBackend[]; gpus?: GpuSelection; device?: number }): Promise<{ backends: readonly TuningBackend[]; opened: boolean }> {
  if (o.backend) return { backends: backendList(o.backend), opened: false };
  if (o.gpus && o.device !== undefined) throw new RangeError('give device (one GPU) or gpus, not both');
  return { backends: await GpuBackend.openAll(o.gpus ?? singleGpu(o.device ?? 0)), opened: true };
}

/** How long measured speed limits are reused on the same GPU. */
const SPEED_LIMITS_KEPT_MS = 7 * 24 * 3600 * 1000;

/** What keep() wrote to `file`; undefined when it is not there (or unreadable: it is made again). */
function readKept<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Writes `file` whole or not at all (through a file of this process renamed over it): runs side by side never see half of one. */
function keep(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}
