/**
 * TEST DOUBLE: a TuningBackend without a GPU, for the tests of the tuner and the LLM layer (CI has no GPU). Everything
 * above the backend (search space, geometry, restrictions, strategies, the measurement protocol of run/measurement.ts,
 * the engine) is the real code; only what a GPU would do is simulated, by the rules below.
 *
 * Contract:
 * - `compile()` compiles with the real nvcc when `compile: 'nvcc'` (so a compile error is nvcc's CompileError with its
 *   real log and diagnostics, and a kernel's registers and shared memory are ptxas's) and otherwise accepts any source
 *   (a kernel of 32 registers and no shared memory). A kernel's metrics are the occupancy calculator's for them
 *   (calculatedKernelMetrics, the GPU layer's formula for a device without a driver). Compiles are cached per source +
 *   defines for the whole test file, so repeated sessions do not pay for nvcc again. `load()` takes a kernel compiled by any FakeBackend (as
 *   GPUs of one model share compiled kernels).
 * - Every `load()` is a module of its own, with a memory that starts empty (its `__device__` variables) and a count of
 *   its launches. Outputs hold, per input set, what the last launch left: a reset (resetOutputs, and before every timed
 *   launch that asks for one) poisons them; a launch that does its work writes the result of its input set, right unless
 *   `model.correct(variant)` gives a reason (then wrong with that reason, as a wrong output the real backend reports);
 *   a launch that skips its work leaves them as they were. `compareOutputs()` (and `timedLaunches()` asked to
 *   compare) reports what is not the right result. Starting a launch from an idle GPU changes nothing here.
 * - What a launch does is the variant's behaviour, `model.behaviour?.(variant)`: given the launch (its number in its
 *   module, the module's memory, the input set's address and checksum, what the outputs hold before it), whether it
 *   works and how long it takes. Without one (and always for the oracle, which is never judged: it defines the
 *   expected outputs) every launch works and takes `model.timeMs(variant)`.
 * - `profile()` answers with the occupancy calculator's metrics for the fake's 32 registers per thread, and with
 *   `model.profile(variant)` as Nsight Compute's answer (default: not installed, as on a machine without it).
 * - With `sanitize: true`, `sanitize()` runs the real GPU layer's sanitizeKernel with compute-sanitizer's test double
 *   (test/support/fake-compute-sanitizer.mjs) over the fake addon: the real worker's launch-once process, the real
 *   report reading; the tool reports the hazards the variant's source marks (`fake-sanitizer: LABEL`) at the lines
 *   the compiler numbered. Without it the fake device has no sanitize(), as a backend that runs no kernel.
 * - `energy()` reads the model's power for the variant as NVML would (`model.powerW`, the energy of a launch its power
 *   times the configuration's time); without `powerW` the fake device has no NVML and says so.
 * - `timeDelayMs` makes each `timedLaunches()` take that long (for cancelling mid-step); aborting its signal ends it at
 *   once with the GPU layer's AbortError, as a killed worker does. `log` records every compile, every `check()` and
 *   every `timedLaunches()` (its launches, warm-up, per-launch time limit and module); `maxConcurrentTimings` is the most
 *   `timedLaunches()` calls that were ever in flight at once on this backend (its GPU runs one at a time).
 */
import { join } from 'node:path';
import type { DeviceSpeedLimits } from '../../src/tuner/run/speed-of-light';
import type { ComputeSanitizer } from '../../src/gpu/sanitizer/find';
import { sanitizeKernel, type SanitizerRun } from '../../src/gpu/sanitizer/sanitize';
import { launchInputs } from '../../src/tuner/run/test-data';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortError, CompileError } from '../../src/gpu/errors';
import { calculatedKernelMetrics } from '../../src/gpu/kernel-metrics';
import type { KernelProfile } from '../../src/gpu/ncu/profile';
import { occupancyDeviceFor, theoreticalOccupancy } from '../../src/gpu/occupancy';
import { driverMetrics, type ProfiledLaunch } from '../../src/tuner/run/profile';
import { NvccCompiler } from '../../src/gpu/nvcc';
import type { EnergyResult } from '../../src/gpu/energy';
import type { KernelResources } from '../../src/gpu/types';
import type { DriverMetrics } from '../../src/tuner/types';
import {
  programOf,
  type BuildRequest,
  type BuiltKernel,
  type CompiledKernel,
  type DeviceRunOptions,
  type DeviceDescription,
  type EnergyOptions,
  type Launch,
  type OutputComparison,
  type PreparedTest,
  type SanitizeRunOptions,
  type TestData,
  type TimedLaunches,
  type TimedLaunchOptions,
  type TuningBackend,
} from '../../src/tuner/run/backend';

export const WRONG_MARKER = 'FAKE_WRONG_RESULT';

export interface FakeVariant {
  source: string;
  defines: Record<string, string>;
  launch: Launch;
  test: TestData;
}

/** What an input set's outputs hold: reset (poisoned, or in/out content restored), or a launch's result for a set. */
export type FakeOutputs = { kind: 'reset' } | { kind: 'result'; inputSet: number; wrong?: string };

/** One launch of a fake kernel, as its behaviour sees it. */
export interface FakeLaunch {
  /** Launches of this loaded module so far, this one included (1 for the first). */
  launchOfModule: number;
  /** The module's memory (its `__device__` variables): empty at every load, kept between its launches. */
  memory: Map<string, unknown>;
  inputSet: number;
  /** The device address of the input set's buffers and a checksum of their contents: each set has its own. */
  inputAddress: number;
  inputChecksum: string;
  /** What the outputs hold before this launch. */
  outputs: FakeOutputs;
}

/** Whether a launch writes its outputs, and its time. */
export type FakeBehaviour = (launch: FakeLaunch) => { works: boolean; timeMs: number };

export interface FakeModel {
  /** Milliseconds of one launch of this variant that does its work. */
  timeMs(variant: FakeVariant): number;
  /** True when the variant's outputs are right, else why they are wrong. */
  correct?(variant: FakeVariant): true | string;
  /** How each launch of this variant behaves (default: it works, in timeMs). */
  behaviour?(variant: FakeVariant): FakeBehaviour | undefined;
  /** What Nsight Compute says of a launch of the variant; default that it is not installed. */
  profile?(variant: FakeVariant): KernelProfile;
  /**
   * The power (W) the device draws while this variant runs back to back: what its NVML reads. Without it the fake
   * device has no NVML, and `energy()` says so as the real backend says why it has none.
   */
  powerW?(variant: FakeVariant): number;
}

export const FAKE_NCU_MISSING: KernelProfile = { available: false, reason: 'ncu-not-found', message: 'Nsight Compute (ncu) is not installed: the fake GPU has none (test double)' };

export interface FakeBackendOptions {
  model: FakeModel;
  compile?: 'nvcc' | 'none';
  /**
   * The compilers the fake device offers (default nvcc only: its builds are real nvcc compiles). With 'nvrtc' listed,
   * a build of NVRTC's program succeeds unless `nvrtcRejects` matches its source (then it is NVRTC's CompileError).
   */
  compilers?: ('nvrtc' | 'nvcc')[];
  nvrtcRejects?: RegExp;
  timeDelayMs?: number;
  device?: Partial<DeviceDescription>;
  /** The device limits the fake states (as if measured); without them it has none, like a backend that cannot measure. */
  limits?: DeviceSpeedLimits;
  /** Offer sanitize() through compute-sanitizer's test double (processes: about a second per check). */
  sanitize?: boolean;
}

const FAKE_ADDON = join(__dirname, 'fake-addon.cjs');
const FAKE_COMPUTE_SANITIZER: ComputeSanitizer = { path: join(__dirname, 'fake-compute-sanitizer.mjs'), foundBy: 'test double' };

export const FAKE_DEVICE: DeviceDescription = {
  name: 'Fake GPU (test double)',
  ordinal: 0,
  computeCapability: [9, 0],
  multiprocessors: 132,
  maxThreadsPerMultiprocessor: 2048,
  maxRegistersPerMultiprocessor: 65536,
  maxSharedMemoryPerMultiprocessor: 228 * 1024,
  maxRegistersPerBlock: 65536,
  globalMemoryBytes: 80 * 1024 ** 3,
  l2CacheBytes: 50 * 1024 ** 2,
  maxThreadsPerBlock: 1024,
  maxBlockDim: [1024, 1024, 64],
  maxGridDim: [2147483647, 65535, 65535],
  maxSharedMemoryPerBlock: 48 * 1024,
  maxSharedMemoryPerBlockOptin: 227 * 1024,
  driverVersion: 13000,
  nvrtcVersion: null,
  arch: 'sm_90',
  compilers: ['nvcc'],
};

const compiles = new Map<string, Promise<{ log: string; resources?: KernelResources }>>();
const nvcc = new NvccCompiler({ defaultArch: 'sm_90' });
/** What a kernel the fake does not compile uses. */
const UNCOMPILED_RESOURCES: KernelResources = { registers: 32, sharedBytes: 0, localBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0, constantBytes: 0, barriers: 1 };

class FakeCompiled implements CompiledKernel {
  readonly compileMs = 1;
  constructor(
    readonly request: BuildRequest,
    readonly log: string,
    readonly resources: KernelResources = UNCOMPILED_RESOURCES,
  ) {}
}

const FAKE_RESOURCES = { registers: 32, sharedBytes: 0, localBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0, constantBytes: 0, barriers: 1 };
let modulesLoaded = 0;

class FakeKernel implements BuiltKernel {
  readonly loadMs = 0;
  /** Which load this is, for the log. */
  readonly module = ++modulesLoaded;
  readonly memory = new Map<string, unknown>();
  launches = 0;
  constructor(readonly compiled: FakeCompiled) {}
  get request(): BuildRequest {
    return this.compiled.request;
  }
  async metrics(launch: Launch): Promise<DriverMetrics> {
    const threadsPerBlock = launch.block[0] * launch.block[1] * launch.block[2];
    return { ...calculatedKernelMetrics(this.compiled.resources, FAKE_DEVICE.computeCapability, { threadsPerBlock, dynamicSharedBytes: launch.sharedMemBytes }), max_threads_per_block: 1024 };
  }
  async release(): Promise<void> {}
}

class FakePrepared implements PreparedTest {
  readonly inputSets = 2;
  readonly outputs: FakeOutputs[] = [{ kind: 'reset' }, { kind: 'reset' }];
  constructor(
    readonly data: TestData,
    readonly oracle: BuiltKernel,
  ) {}
  get scalars(): Record<string, number> {
    if (this.data.kind === 'spec') return this.data.test.scalars;
    return Object.fromEntries(this.data.arguments.filter((a) => a.kind === 'scalar').map((a) => [a.name, Number(a.value)]));
  }
  /** The first output: its name and element count, for mismatch reports. */
  get output(): { name: string; elements: number } {
    const args = this.data.kind === 'spec' ? this.data.test.arguments : this.data.arguments;
    const output = args.find((a) => a.kind === 'buffer' && a.output);
    const elements = output && 'length' in output ? output.length : output && 'data' in output ? output.data.length : 1;
    return { name: output?.name ?? 'output', elements };
  }
  async release(): Promise<void> {}
}

export interface FakeLogEntry {
  kind: 'compile' | 'check' | 'time' | 'profile' | 'energy';
  source: string;
  compiler?: 'nvrtc' | 'nvcc';
  defines: Record<string, string>;
  /**
   * check(): the limit of its launch and the module; timedLaunches(): the time of a launch that does its work, the timed and warm-up launches, the limit of one launch,
   * the module, how it ran them; energy(): the configuration's time, the window and the limit of one launch, the module.
   */
  timeMs?: number;
  windowMs?: number;
  iterations?: number;
  warmup?: number;
  timeoutMs?: number;
  module?: number;
  /** timedLaunches(): whether it reset the outputs before each launch, started each from an idle GPU, compared after. */
  resetBeforeEach?: boolean;
  idleBeforeEach?: boolean;
  compared?: boolean;
}

export class FakeBackend implements TuningBackend {
  readonly log: FakeLogEntry[] = [];
  disposed = false;
  maxConcurrentTimings = 0;
  private timingsInFlight = 0;

  readonly speedLimits?: () => Promise<DeviceSpeedLimits>;
  readonly sanitize?: (kernel: CompiledKernel, launch: Launch, data: TestData, options: SanitizeRunOptions) => Promise<SanitizerRun>;

  constructor(private readonly options: FakeBackendOptions) {
    const { limits } = options;
    if (limits) this.speedLimits = async () => limits;
    if (options.sanitize) this.sanitize = (kernel, launch, data, run) => this.sanitizeWithTestDouble(kernel as FakeCompiled, launch, data, run);
  }

  /** The variant as the fake addon loads it (its "cubin" carries the source and options the fake tool reads), sanitized. */
  private sanitizeWithTestDouble(kernel: FakeCompiled, launch: Launch, data: TestData, run: SanitizeRunOptions): Promise<SanitizerRun> {
    const program = programOf(kernel.request);
    const name = kernel.request.nameExpression;
    const cubin = Buffer.from(JSON.stringify({ kernels: [name], options: program.options, source: program.source }));
    return sanitizeKernel(
      { compiled: { cubin, log: '', loweredNames: { [name]: name }, backend: 'nvcc', arch: 'sm_90', durationMs: 1 }, nameExpression: name, launch, ...launchInputs(data, 'uninitialized') },
      { sanitizer: FAKE_COMPUTE_SANITIZER, env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON }, timeoutMs: run.timeoutMs, tools: run.tools, ...(run.signal && { signal: run.signal }) },
    );
  }

  async describe(): Promise<DeviceDescription> {
    return { ...FAKE_DEVICE, ...(this.options.compilers && { compilers: this.options.compilers }), ...this.options.device };
  }

  async compile(request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel> {
    this.log.push({ kind: 'compile', source: request.source, defines: request.defines, compiler: request.compiler });
    if (request.compiler === 'nvrtc') {
      if (this.options.nvrtcRejects?.test(request.source)) {
        const log = `${request.fileName}(1): error: the fake NVRTC rejects this program\n`;
        throw new CompileError('NVRTC compilation failed (fake)', { code: 'NVRTC_ERROR_COMPILATION', explanation: 'fake', log });
      }
      return new FakeCompiled(request, '');
    }
    if (this.options.compile !== 'nvcc') return new FakeCompiled(request, '');
    const key = JSON.stringify([request.source, request.headers, request.includePaths, request.defines, request.nameExpression, request.compilerOptions]);
    let compiled = compiles.get(key);
    if (!compiled) {
      compiled = nvcc
        .compile(programOf(request), signal ? { signal } : {})
        .then((p) => ({ log: p.log, ...(p.resources?.[request.nameExpression] && { resources: p.resources[request.nameExpression] }) }));
      compiles.set(key, compiled);
      // A failed compile is cached too (the same source fails the same way), but not an aborted one.
      compiled.catch((e: unknown) => {
        if (!(e instanceof CompileError)) compiles.delete(key);
      });
    }
    const { log, resources } = await compiled;
    return new FakeCompiled(request, log, resources);
  }

  async load(kernel: CompiledKernel): Promise<BuiltKernel> {
    if (!(kernel instanceof FakeCompiled)) throw new TypeError('a kernel compiled by another kind of backend was passed to FakeBackend');
    return new FakeKernel(kernel);
  }

  async prepare(data: TestData, oracle: { kernel: BuiltKernel }): Promise<PreparedTest> {
    return new FakePrepared(data, oracle.kernel);
  }

  async resetOutputs(test: PreparedTest, inputSet: number): Promise<void> {
    (test as FakePrepared).outputs[inputSet] = { kind: 'reset' };
  }

  async check(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: DeviceRunOptions): Promise<{ timeMs: number; comparison: OutputComparison }> {
    const k = kernel as FakeKernel;
    const test = prepared as FakePrepared;
    this.log.push({ kind: 'check', source: k.request.source, defines: k.request.defines, timeoutMs: options.timeoutMs, module: k.module });
    test.outputs[inputSet] = { kind: 'reset' };
    const timeMs = this.run(k, launch, test, inputSet);
    return { timeMs, comparison: await this.compareOutputs(test, inputSet) };
  }

  async timedLaunches(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, inputSet: number, options: TimedLaunchOptions): Promise<TimedLaunches> {
    const k = kernel as FakeKernel;
    const test = prepared as FakePrepared;
    this.maxConcurrentTimings = Math.max(this.maxConcurrentTimings, ++this.timingsInFlight);
    try {
      if (this.options.timeDelayMs) await delay(this.options.timeDelayMs, options.signal);
    } finally {
      this.timingsInFlight--;
    }
    const timeMs = this.options.model.timeMs(this.variant(k, launch, test));
    this.log.push({ kind: 'time', source: k.request.source, defines: k.request.defines, timeMs, iterations: options.count, warmup: options.warmup, timeoutMs: options.timeoutMs, module: k.module, resetBeforeEach: options.resetBeforeEach, idleBeforeEach: options.idleBeforeEach, compared: options.compare });
    for (let i = 0; i < options.warmup; i++) this.run(k, launch, test, inputSet);
    const samplesMs = Array.from({ length: options.count }, () => {
      if (options.resetBeforeEach) test.outputs[inputSet] = { kind: 'reset' };
      return this.run(k, launch, test, inputSet);
    });
    return { samplesMs, ...(options.compare && { comparison: await this.compareOutputs(test, inputSet) }) };
  }

  async energy(kernel: BuiltKernel, launch: Launch, prepared: PreparedTest, _inputSet: number, options: EnergyOptions): Promise<EnergyResult> {
    const k = kernel as FakeKernel;
    const test = prepared as FakePrepared;
    this.log.push({ kind: 'energy', source: k.request.source, defines: k.request.defines, timeMs: options.timeMs, windowMs: options.windowMs, timeoutMs: options.timeoutMs, module: k.module });
    const variant = this.variant(k, launch, test);
    const powerW = this.options.model.powerW?.(variant);
    if (powerW === undefined) return { available: false, reason: 'the test double has no NVML (its model gives no power)' };
    return {
      available: true,
      nvml_power: powerW,
      nvml_energy: (powerW * options.timeMs) / 1000,
      core_freq: 1980,
      mem_freq: 2619,
      temperature: 40 + powerW / 20,
      powerSource: 'energy counter',
      windowMs: options.windowMs,
      launches: Math.max(1, Math.ceil(options.windowMs / options.timeMs)),
    };
  }

  async compareOutputs(prepared: PreparedTest, inputSet: number): Promise<OutputComparison> {
    const test = prepared as FakePrepared;
    const held = test.outputs[inputSet]!;
    if (held.kind === 'result' && held.inputSet === inputSet && held.wrong === undefined) return { mismatches: [], modifiedInputs: [] };
    const { name, elements } = test.output;
    const unwritten = held.kind === 'reset';
    const why = unwritten ? 'never written' : held.wrong ?? `the result of input set ${held.inputSet + 1}`;
    return {
      modifiedInputs: [],
      mismatches: [
        {
          name: `${name} (${why})`,
          elements,
          mismatches: unwritten ? elements : Math.max(1, Math.floor(elements / 2)),
          unwritten: unwritten ? elements : 0,
          nonFinite: 0,
          maxAbsError: unwritten ? 0 : 1,
          maxRelError: unwritten ? 0 : 0.5,
          firstBad: [{ index: 0, got: unwritten ? Number.NaN : 1, expected: 2 }],
          tolerance: { rtol: 1e-4, atol: 1e-5 },
        },
      ],
    };
  }

  async profile(kernel: CompiledKernel, launch: Launch, test: PreparedTest): Promise<ProfiledLaunch> {
    const { request } = kernel as FakeCompiled;
    this.log.push({ kind: 'profile', source: request.source, defines: request.defines });
    const cc = (await this.describe()).computeCapability;
    const shape = { threadsPerBlock: launch.block[0] * launch.block[1] * launch.block[2], dynamicSharedBytes: launch.sharedMemBytes };
    const occupancy = theoreticalOccupancy(occupancyDeviceFor(cc), { registers: FAKE_RESOURCES.registers, staticSharedBytes: 0 }, shape);
    const variant: FakeVariant = { source: request.source, defines: request.defines, launch, test: (test as FakePrepared).data };
    return { driver: driverMetrics(calculatedKernelMetrics(FAKE_RESOURCES, cc, shape), occupancy), ncu: this.options.model.profile?.(variant) ?? FAKE_NCU_MISSING };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  /** The timed launches of each loaded module that was timed, in order: a configuration's series, or the reference's timing. */
  timedSeries(): { module: number; defines: Record<string, string>; iterations: number }[] {
    const series = new Map<number, { module: number; defines: Record<string, string>; iterations: number }>();
    for (const e of this.log) {
      if (e.kind !== 'time') continue;
      const s = series.get(e.module!) ?? series.set(e.module!, { module: e.module!, defines: e.defines, iterations: 0 }).get(e.module!)!;
      s.iterations += e.iterations!;
    }
    return [...series.values()];
  }

  /** One launch: what the variant's behaviour does with the outputs, and its time. */
  private run(kernel: FakeKernel, launch: Launch, test: FakePrepared, inputSet: number): number {
    const variant = this.variant(kernel, launch, test);
    kernel.launches++;
    const behaviour = kernel === test.oracle ? undefined : this.options.model.behaviour?.(variant);
    const { works, timeMs } = behaviour
      ? behaviour({
          launchOfModule: kernel.launches,
          memory: kernel.memory,
          inputSet,
          inputAddress: 0x7f0000000000 + inputSet * 0x10000000,
          inputChecksum: `${inputSet}:${JSON.stringify(test.data.kind === 'spec' ? test.data.test.seed : 'host')}`,
          outputs: test.outputs[inputSet]!,
        })
      : { works: true, timeMs: this.options.model.timeMs(variant) };
    if (works) {
      const verdict = kernel === test.oracle ? true : this.verdict(variant);
      test.outputs[inputSet] = { kind: 'result', inputSet, ...(verdict !== true && { wrong: verdict }) };
    }
    return timeMs;
  }

  private variant(kernel: FakeKernel, launch: Launch, test: FakePrepared): FakeVariant {
    return { source: kernel.request.source, defines: kernel.request.defines, launch, test: test.data };
  }

  private verdict(variant: FakeVariant): true | string {
    if (this.options.model.correct) return this.options.model.correct(variant);
    return variant.source.includes(WRONG_MARKER) ? `the source contains ${WRONG_MARKER}` : true;
  }
}

/** Waits `ms`; an abort ends the wait at once with the GPU layer's AbortError (what a killed worker answers). */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return sleep(ms, undefined, signal && { signal }).catch(() => {
    throw new AbortError('time was aborted', { code: 'ABORTED', explanation: 'The caller aborted the request (fake backend).' });
  });
}

/** Elements of the largest buffer of a test: a problem-size measure for time models. */
export function largestBuffer(test: TestData): number {
  const lengths = test.kind === 'spec' ? test.test.arguments.map((a) => (a.kind === 'buffer' ? a.length : 0)) : test.arguments.map((a) => (a.kind === 'buffer' ? a.data.length : 0));
  return Math.max(0, ...lengths);
}
