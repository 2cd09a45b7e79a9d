// What the tuner needs from a GPU, as one interface: the real implementation drives the GPU worker (gpu-backend.ts);
// CI and the LLM layer's tests use a scripted test double that implements the same interface. Everything the tuner
// decides (which configurations, what is correct, what is faster) lives above this line, so it is the same code on both.
import { withDefineClashHint } from '../../gpu/define-clash';
import type { EnergyResult } from '../../gpu/energy';
import { CompileError, DeviceLimitError } from '../../gpu/errors';
import type { ProgramInit } from '../../gpu/program';
import { withLoopUnrollFactors } from '../compile/unroll-factors';
import type { CompilerBackend } from '../../gpu/types';
import type { Dim3 } from '../types';
import type { DeviceLimits } from '../space/geometry';
import type { ResolvedTest } from '../spec/input-spec';
import type { DriverMetrics } from '../types';
import type { DeviceSpeedLimits } from './speed-of-light';
import type { ProfiledLaunch } from './profile';
import type { SanitizerTool } from '../../gpu/sanitizer/report';
import type { SanitizerRun } from '../../gpu/sanitizer/sanitize';

export interface DeviceDescription extends DeviceLimits {
  name: string;
  /** The CUDA ordinal of the device in this process (as CUDA_VISIBLE_DEVICES leaves them). */
  ordinal: number;
  /** Its PCI address, e.g. "0000:1b:00.0", when the backend knows it: tells GPUs apart across processes and hosts. */
  pciBusId?: string;
  computeCapability: [number, number];
  multiprocessors: number;
  /** Per multiprocessor: what bounds how many blocks run on one at once (the occupancy). */
  maxThreadsPerMultiprocessor: number;
  maxRegistersPerMultiprocessor: number;
  maxSharedMemoryPerMultiprocessor: number;
  maxRegistersPerBlock: number;
  globalMemoryBytes: number;
  l2CacheBytes: number;
  /** cuDriverGetVersion, e.g. 13000. */
  driverVersion: number;
  /** "13.0", or null when NVRTC is not available. */
  nvrtcVersion: string | null;
  /** The compile target, e.g. "sm_90". */
  arch: string;
  /** The compilers this backend can build with, preferred first. */
  compilers: CompilerBackend[];
  /** The NVRTC library in use (absolute path), when known: the CUDA toolkit beside it has the matching headers. */
  nvrtcLibrary?: string;
}

/** A kernel's program and the compiler that takes it (see compile-sources.ts). */
export interface KernelProgram {
  compiler: CompilerBackend;
  source: string;
  fileName: string;
  /** In-memory headers (include spelling → text) and directories searched for the others. */
  headers?: Readonly<Record<string, string>>;
  includePaths?: readonly string[];
  /** `__constant__` symbols of the program that the test's constant memory fills before every run (cmem_args). */
  constantSymbols?: readonly string[];
}

/** One variant of a kernel to compile: its program with the configuration's defines. */
export interface BuildRequest extends KernelProgram {
  /** The C++ name expression of the kernel ("vector_add", "matmul<float, 16>"). */
  nameExpression: string;
  defines: Record<string, string>;
  compilerOptions: readonly string[];
}

/**
 * The compiler's program for a build request: its source, headers and include paths, with the defines (loop unroll
 * factors as constexpr, unroll-factors.ts) and options.
 */
export function programOf(request: BuildRequest): ProgramInit {
  const { source, defines } = withLoopUnrollFactors(request.source, request.defines);
  return {
    source,
    fileName: request.fileName,
    nameExpressions: [request.nameExpression],
    defines,
    options: [...request.compilerOptions],
    ...(request.headers && { headers: request.headers }),
    ...(request.includePaths && { includePaths: request.includePaths }),
  };
}

/**
 * Compiles a variant on a backend. A CompileError comes back with a hint naming the tunable parameters that clash with
 * a header, only where compiling again with them renamed makes the errors go away (gpu/define-clash.ts); a static
 * shared memory over the device's limit (DeviceLimitError) and every other error as they are.
 */
export async function compileExplained(backend: TuningBackend, request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel> {
  try {
    return await backend.compile(request, signal);
  } catch (e) {
    if (!(e instanceof CompileError) || e instanceof DeviceLimitError) throw e;
    throw await withDefineClashHint(e, programOf(request), (renamed) =>
      backend.compile(
        {
          ...request,
          source: renamed.source,
          nameExpression: renamed.nameExpressions[0] ?? request.nameExpression,
          defines: Object.fromEntries(Object.entries(renamed.defines ?? {}).map(([k, v]) => [k, String(v)])),
          ...(renamed.headers && { headers: renamed.headers }),
        },
        signal,
      ),
    );
  }
}

/**
 * A compiled kernel variant, not yet on any device: it loads on every backend of the same device model (the same
 * compute capability, so the same binary), which is how several GPUs share the compiles run ahead of them.
 */
export interface CompiledKernel {
  readonly compileMs: number;
  /** The compiler's warnings (empty when clean). */
  readonly log: string;
}

/** A kernel loaded on a device, ready to launch. */
export interface BuiltKernel {
  readonly loadMs: number;
  /** Its registers, local and shared memory, and its theoretical occupancy launched with `launch` (asked of the driver where there is one). */
  metrics(launch: Launch, options?: { signal?: AbortSignal }): Promise<DriverMetrics>;
  release(): Promise<void>;
}

export interface Launch {
  grid: Dim3;
  block: Dim3;
  sharedMemBytes: number;
}

/** Host-side data of a test given by value (KernelTest): typed arrays and scalars, in argument order. */
export type HostArgument =
  | { kind: 'scalar'; name: string; dtype: ResolvedTest['arguments'][number]['dtype']; value: number | bigint }
  | {
      kind: 'buffer';
      name: string;
      dtype: ResolvedTest['arguments'][number]['dtype'];
      data: ArrayBufferView & { length: number };
      output: boolean;
      /** An output the kernel also reads: `data` is its initial content before every run (else it is poisoned). */
      inOut?: boolean;
      /** The expected content after the run, when the user gave it; otherwise the oracle produces it. */
      expected?: (ArrayBufferView & { length: number }) | null;
    };

/** Where a test's inputs come from: generated on the device from a spec, or uploaded from the host. */
export type TestData = { kind: 'spec'; test: ResolvedTest } | { kind: 'host'; arguments: HostArgument[] };

/** Absolute and relative tolerance of a float comparison: |out - ref| <= atol + rtol * |ref|. */
export interface Tolerance {
  rtol: number;
  /** Absolute term; when undefined it is `atolScale` times the largest |ref| of that output. */
  atol?: number;
  atolScale: number;
}

export interface OutputMismatch {
  name: string;
  elements: number;
  /** How many elements differ (including unwritten and NaN/Inf ones). */
  mismatches: number;
  /** Elements that still hold the poison pattern: the kernel never wrote them. */
  unwritten: number;
  /** NaN or Inf where the reference has a finite number. */
  nonFinite: number;
  maxAbsError: number;
  maxRelError: number;
  /** The first few differing elements. */
  firstBad: { index: number; got: number | bigint; expected: number | bigint }[];
  tolerance: { rtol: number; atol: number } | 'exact';
}

/** An input set's outputs compared with the expected ones, and its inputs with their fingerprints: right when both are empty. */
export interface OutputComparison {
  mismatches: OutputMismatch[];
  /** Inputs the kernel overwrote (restored since). */
  modifiedInputs: string[];
}

/** Where a configuration's outputs were found wrong: the check of an input set, or a verified timed launch. */
export interface CheckFailure extends OutputComparison {
  inputSet: number;
  /**
   * The verified timed launch (1-based) whose outputs were wrong, and how many timed launches the series had (at most,
   * for an adaptive series).
   */
  timedLaunch?: { index: number; of: number; adaptive: boolean };
}

/** A test's data on the device: input sets, expected outputs, working buffers. */
export interface PreparedTest {
  /** Number of independent input sets (2: the second catches cached or constant results). */
  readonly inputSets: number;
  /** Scalar argument values, for problem-size expressions. */
  readonly scalars: Record<string, number>;
  release(): Promise<void>;
}

/** Aborting stops what the device is running (a GPU worker is killed: a kernel cannot be stopped otherwise). */
export interface DeviceRunOptions {
  /** The time limit of one launch (a request of several launches gets it for each). */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface SanitizeRunOptions extends DeviceRunOptions {
  /** The tools to run, in order. */
  tools: readonly SanitizerTool[];
}

export interface EnergyOptions extends DeviceRunOptions {
  /** How long the kernel runs back to back while NVML is read (ms). */
  windowMs: number;
  /** The configuration's time (its median timed launch): nvml_energy is the mean power times it. */
  timeMs: number;
}

export interface TimedLaunchOptions extends DeviceRunOptions {
  /** Untimed launches first. */
  warmup: number;
  /** Timed launches, each between its own pair of events. */
  count: number;
  /** Overwrite L2 before each timed launch (outside its events). */
  flushL2: boolean;
  /** Reset the outputs before each timed launch (outside its events), as resetOutputs does. */
  resetBeforeEach: boolean;
  /** Start each timed launch from an idle GPU: the host waits for the device before its start event (Kernel Tuner's way). */
  idleBeforeEach: boolean;
  /** Compare the outputs after the last launch, as compareOutputs does, in the same request. */
  compare: boolean;
}

/** Each timed launch's milliseconds, in order; the comparison after the last when it was asked for. */
export interface TimedLaunches {
  samplesMs: number[];
  comparison?: OutputComparison;
}

/**
 * One device: a tuning run on several GPUs has one backend per GPU, all of the same model. Besides compiling and
 * preparing test data, a backend offers the few device operations the measurement protocol (measurement.ts) is made
 * of: it decides which launches run on which loaded module, which are timed and which are verified, so that the real
 * backend and the test double run the same protocol.
 */
export interface TuningBackend {
  describe(): Promise<DeviceDescription>;
  /** Compiles a variant (for this device model); rejects with CompileError (log and diagnostics) when it does not compile. */
  compile(request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel>;
  /**
   * Loads a kernel compiled by this backend or another of the same device model. Every load is a module of its own:
   * its `__device__` variables start as the binary initialises them, whatever launches of other loads left in theirs.
   */
  load(kernel: CompiledKernel): Promise<BuiltKernel>;
  /** Puts a test's inputs on the device and runs the oracle on every input set to produce the expected outputs. */
  prepare(data: TestData, oracle: { kernel: BuiltKernel; launch: Launch }, options: { tolerance?: Partial<Tolerance>; timeoutMs: number }): Promise<PreparedTest>;
  /** Resets an input set's outputs: pure outputs poisoned (NaN, 0xA5 bytes), in/out outputs copied from their initial content. */
  resetOutputs(test: PreparedTest, inputSet: number): Promise<void>;
  /**
   * A check of an input set: its outputs reset, one launch between events, the outputs compared (as compareOutputs
   * does), in one request; the launch's time and the comparison.
   */
  check(kernel: BuiltKernel, launch: Launch, test: PreparedTest, inputSet: number, options: DeviceRunOptions): Promise<{ timeMs: number; comparison: OutputComparison }>;
  /**
   * `warmup` untimed launches on an input set, then `count` timed ones, each (with resetBeforeEach) after its outputs
   * were reset as resetOutputs does, outside its events: what a timed launch leaves in the outputs is then its own
   * work. With `compare`, the outputs compared after the last, as compareOutputs does.
   */
  timedLaunches(kernel: BuiltKernel, launch: Launch, test: PreparedTest, inputSet: number, options: TimedLaunchOptions): Promise<TimedLaunches>;
  /** Compares an input set's outputs with the expected ones and its inputs with their fingerprints (restoring any changed). */
  compareOutputs(test: PreparedTest, inputSet: number): Promise<OutputComparison>;
  /**
   * Energy and power while the kernel runs back to back on an input set for `windowMs`, read with NVML (read only:
   * nothing on the GPU is ever set), and the energy of one launch of `timeMs` (the mean power times it, as Kernel
   * Tuner's NVMLObserver computes nvml_energy); or why there are none. A backend without it measures no energy.
   */
  energy?(kernel: BuiltKernel, launch: Launch, test: PreparedTest, inputSet: number, options: EnergyOptions): Promise<EnergyResult>;
  /** The device's bandwidth and FP32 limits, measured on it (speed-of-light.ts); absent where nothing can be measured. */
  speedLimits?(): Promise<DeviceSpeedLimits>;
  /**
   * Profiles one launch of a compiled kernel on the test's data, after its timings (never during them): the driver's
   * metrics, and Nsight Compute's profile where it is installed and the driver lets it read the counters (else why
   * not). Within `timeoutMs`; absent where nothing can be profiled.
   */
  profile?(kernel: CompiledKernel, launch: Launch, test: PreparedTest, options: DeviceRunOptions): Promise<ProfiledLaunch>;
  /**
   * Runs one launch of a compiled kernel under compute-sanitizer's tools, in a process of its own, on inputs made as the
   * test's are but with pure outputs never written (gpu/sanitizer/sanitize.ts). Within `timeoutMs` for all the tools;
   * absent where no kernel runs (a replay).
   */
  sanitize?(kernel: CompiledKernel, launch: Launch, data: TestData, options: SanitizeRunOptions): Promise<SanitizerRun>;
  dispose(): Promise<void>;
}

/** A backend or one per GPU, as a list (RangeError for an empty one). */
export function backendList(backend: TuningBackend | readonly TuningBackend[]): readonly TuningBackend[] {
  const list: readonly TuningBackend[] = Array.isArray(backend) ? backend : [backend as TuningBackend];
  if (list.length === 0) throw new RangeError('the list of backends is empty: give at least one (one per GPU)');
  return list;
}
