/**
 * TEST DOUBLE: a TuningBackend without a GPU, for the LLM layer's tests (CI has no GPU). Everything above the backend
 * (search space, geometry, restrictions, strategies, the engine) is the real code; only what a GPU would answer is
 * scripted.
 *
 * Contract:
 * - `compile()` compiles with the real nvcc when `compile: 'nvcc'` (so a compile error is nvcc's CompileError with its
 *   real log and diagnostics, and a kernel's registers and shared memory are ptxas's) and otherwise accepts any source
 *   (a kernel of 32 registers and no shared memory). A kernel's metrics are the occupancy calculator's for them
 *   (calculatedKernelMetrics, the GPU layer's formula for a device without a driver). Compiles are cached per source + defines for the whole
 *   test file, so repeated sessions do not pay for nvcc again. `load()` takes a kernel compiled by any FakeBackend (as
 *   GPUs of one model share compiled kernels).
 * - `check()` and `time()` ask the test's model about the variant being run (its source without the injected defines,
 *   the defines, the launch, the test data): `model.correct(variant)` is true or a reason; a reason becomes a wrong
 *   result on the first output, as the real backend reports one. `model.timeMs(variant)` is the time of every timed
 *   launch. Default correctness: right unless the source contains WRONG_MARKER (a scripted answer puts it there).
 * - The oracle (the kernel passed to `prepare`) is never judged: it defines the expected outputs.
 * - `timeDelayMs` makes each `time()` take that long (for cancelling mid-step); aborting its signal ends it at once
 *   with the GPU layer's AbortError, as a killed worker does. `log` records every compile and timing;
 *   `maxConcurrentTimings` is the most `time()` calls that were ever in flight at once on this backend (its GPU runs one
 *   at a time).
 */
import type { DeviceSpeedLimits } from '../../src/tuner/run/speed-of-light';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortError, CompileError } from '../../src/gpu/errors';
import { computeStats } from '../../src/gpu/stats';
import { calculatedKernelMetrics } from '../../src/gpu/kernel-metrics';
import { NvccCompiler } from '../../src/gpu/nvcc';
import type { KernelResources } from '../../src/gpu/types';
import type { DriverMetrics } from '../../src/tuner/types';
import {
  programOf,
  type BuildRequest,
  type BuiltKernel,
  type CheckOutcome,
  type CompiledKernel,
  type DeviceDescription,
  type Launch,
  type PreparedTest,
  type TestData,
  type TimingOptions,
  type TimingOutcome,
  type TuningBackend,
} from '../../src/tuner/run/backend';

export const WRONG_MARKER = 'FAKE_WRONG_RESULT';

export interface FakeVariant {
  source: string;
  defines: Record<string, string>;
  launch: Launch;
  test: TestData;
}

export interface FakeModel {
  /** Milliseconds of one launch of this variant. */
  timeMs(variant: FakeVariant): number;
  /** True when the variant's outputs are right, else why they are wrong. */
  correct?(variant: FakeVariant): true | string;
}

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
}

export const FAKE_DEVICE: DeviceDescription = {
  name: 'Fake GPU (test double)',
  ordinal: 0,
  computeCapability: [9, 0],
  multiprocessors: 132,
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

class FakeKernel implements BuiltKernel {
  readonly loadMs = 0;
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
  constructor(readonly data: TestData) {}
  get scalars(): Record<string, number> {
    if (this.data.kind === 'spec') return this.data.test.scalars;
    return Object.fromEntries(this.data.arguments.filter((a) => a.kind === 'scalar').map((a) => [a.name, Number(a.value)]));
  }
  async release(): Promise<void> {}
}

export interface FakeLogEntry {
  kind: 'compile' | 'time';
  source: string;
  compiler?: 'nvrtc' | 'nvcc';
  defines: Record<string, string>;
  timeMs?: number;
  /** time(): the timed launches asked for, and the time limit of the whole request. */
  iterations?: number;
  timeoutMs?: number;
}

export class FakeBackend implements TuningBackend {
  readonly log: FakeLogEntry[] = [];
  disposed = false;
  maxConcurrentTimings = 0;
  private timingsInFlight = 0;

  readonly speedLimits?: () => Promise<DeviceSpeedLimits>;

  constructor(private readonly options: FakeBackendOptions) {
    const { limits } = options;
    if (limits) this.speedLimits = async () => limits;
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

  async prepare(data: TestData): Promise<PreparedTest> {
    return new FakePrepared(data);
  }

  async check(kernel: BuiltKernel, launch: Launch, test: PreparedTest, inputSet: number): Promise<CheckOutcome> {
    const verdict = this.verdict(kernel as FakeKernel, launch, test as FakePrepared);
    if (verdict === true) return { ok: true };
    const data = (test as FakePrepared).data;
    const output =
      data.kind === 'spec'
        ? data.test.arguments.find((a) => a.kind === 'buffer' && a.output)
        : data.arguments.find((a) => a.kind === 'buffer' && a.output);
    const elements = output && 'length' in output ? output.length : output && 'data' in output ? output.data.length : 1;
    return {
      ok: false,
      inputSet,
      afterTiming: false,
      modifiedInputs: [],
      mismatches: [
        {
          name: `${output?.name ?? 'output'} (${verdict})`,
          elements,
          mismatches: Math.max(1, Math.floor(elements / 2)),
          unwritten: 0,
          nonFinite: 0,
          maxAbsError: 1,
          maxRelError: 0.5,
          firstBad: [{ index: 0, got: 1, expected: 2 }],
          tolerance: { rtol: 1e-4, atol: 1e-5 },
        },
      ],
    };
  }

  async time(kernel: BuiltKernel, launch: Launch, test: PreparedTest, options: TimingOptions): Promise<TimingOutcome> {
    const k = kernel as FakeKernel;
    this.maxConcurrentTimings = Math.max(this.maxConcurrentTimings, ++this.timingsInFlight);
    try {
      if (this.options.timeDelayMs) await delay(this.options.timeDelayMs, options.signal);
    } finally {
      this.timingsInFlight--;
    }
    const timeMs = this.options.model.timeMs(this.variant(k, launch, test as FakePrepared));
    this.log.push({ kind: 'time', source: k.request.source, defines: k.request.defines, timeMs, iterations: options.iterations, timeoutMs: options.timeoutMs });
    return { stats: computeStats([timeMs, timeMs, timeMs]), recheck: { ok: true }, stoppedEarly: false };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  private variant(kernel: FakeKernel, launch: Launch, test: FakePrepared): FakeVariant {
    return { source: kernel.request.source, defines: kernel.request.defines, launch, test: test.data };
  }

  private verdict(kernel: FakeKernel, launch: Launch, test: FakePrepared): true | string {
    const variant = this.variant(kernel, launch, test);
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
