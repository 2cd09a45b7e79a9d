// Evaluating one configuration: geometry → compile → load → check every input set (timed: a configuration whose checks
// are both clearly slower than the best so far stops there) → the timed series, verified, on a module loaded afresh,
// as long as its launch count says (the protocol: measurement.ts) → energy, when asked for, on another fresh module →
// result.
// Every failure becomes a result with its kind (compile error, launch error, fault, timeout, wrong result,
// inconsistent timing) and the search goes on. Compiles of configurations announced through prefetch() run ahead, up
// to compileConcurrency at once (NVRTC in the compile pool's processes, or nvcc's), while the GPUs time the current
// ones: whenever one finishes, the next announced configuration starts compiling, as long as the free memory allows
// (compile-concurrency.ts).
//
// Evaluations wait for the setup (the oracle built, the test data prepared on every GPU, and with it the program the
// file compiles with, NVRTC's or nvcc's), but compiles do not: they start with the likely program (the first candidate)
// while the oracle is built, and a compile made with a program the setup did not choose is never used.
//
// With several GPUs (all of one model) the evaluator has one device per GPU, each with the test data prepared on it:
// the same inputs from the same seeds, and the oracle's outputs computed there by the oracle itself, so a configuration
// is always compared with the oracle on the GPU that ran it. Compiles are shared: a kernel compiled through any GPU's
// worker loads on every GPU of the model, so whichever GPU takes a configuration finds it compiled ahead.
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { CompileError, DeviceLimitError, KernelFaultError, KernelTimeoutError, LaunchError, WorkerCrashedError } from '../../gpu/errors';
import { availableMemoryBytes, memoryAllowsCompile } from './compile-concurrency';
import { computeStats } from '../../gpu/stats';
import { compileExplained, type BuildRequest, type BuiltKernel, type CheckFailure, type CompiledKernel, type DeviceDescription, type DeviceRunOptions, type KernelProgram, type Launch, type OutputMismatch, type PreparedTest, type TuningBackend } from './backend';
import type { LaunchCount } from './launch-count';
import { checkInputSets, KERNEL_TUNER_TIMING_UNCHECKED, newSeed, TIMED_SERIES_ATTEMPTS, timeSeries, timingDisagreement, type TimedSeries, type TimingMode } from './measurement';
import { configProfile, type ConfigProfile } from './profile';
import { defines, exceedsDeviceLimits, GeometryError, type Geometry, type LaunchGeometry } from '../space/geometry';
import { configKey, type Config, type ConfigResult, type EnergyReadings, type FailureKind, type GpuId, type Reproduction } from '../types';

/** The launch errors (src/gpu/launch-config.ts, the driver's) that say a configuration does not fit the device. */
const DEVICE_LIMIT_LAUNCH_ERRORS: ReadonlySet<string> = new Set(['CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES', 'LAUNCH_BLOCK_TOO_LARGE', 'LAUNCH_SHARED_MEMORY_TOO_LARGE']);

export interface EvaluatorOptions {
  /**
   * The program compiles start with before the setup says which one the file compiles with (the first candidate);
   * without one, nothing compiles before the setup is done.
   */
  likelyProgram?: KernelProgram;
  /** The scalar arguments, for problem sizes that name them. */
  scalars: Record<string, number>;
  nameExpression: string;
  compilerOptions: readonly string[];
  geometry: Geometry;
  paramNames: readonly string[];
  /** Timed launches per configuration: a fixed count, or an adaptive series; after `warmup` untimed ones. */
  launches: LaunchCount;
  warmup: number;
  /** How the timed launches run (measurement.ts): verified, or as Kernel Tuner times them. */
  timing: TimingMode;
  flushL2: boolean;
  /**
   * A configuration whose checks both, or whose first few timed launches, take longer than this factor times the best
   * median so far (on any GPU) is not timed further.
   */
  earlyStopFactor: number | undefined;
  /**
   * Time limit of one launch of the kernel under test (ms); a whole benchmark gets this per launch. Asked for when the
   * first configuration runs (it may time the reference kernel first; a run answered from a cache never asks).
   */
  launchTimeoutMs: () => Promise<number>;
  /** Compiles running ahead at most (over all GPUs). */
  compileConcurrency: number;
  /** Memory free for another compile (bytes); default the system's, within the cgroup's limit (compile-concurrency.ts). */
  freeMemoryBytes?: () => number;
  /**
   * Measure energy after a configuration's timed series (when it was timed in full): the kernel runs back to back for
   * `windowMs` on a fresh module while NVML is read (TuningBackend.energy).
   */
  energy?: { windowMs: number };
}

/** One GPU of an evaluation: its backend and what it is. */
export interface EvaluationDevice {
  backend: TuningBackend;
  device: DeviceDescription;
}

/** What evaluations wait for: the program the file compiles with, and the test data prepared on each GPU (by worker) with its own oracle outputs. */
export interface EvaluationSetup {
  program: KernelProgram;
  tests: readonly PreparedTest[];
}

/** A configuration failed: what kind of failure, and the message (with the compiler log for compile errors). */
class EvaluationFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly log?: string,
  ) {
    super(message);
  }
}

/** Compiled kernels kept for later when a strategy announced them and then went elsewhere: a few, the newest. */
const KEPT_COMPILES_PER_SLOT = 4;

export class Evaluator {
  /** Compiles run ahead (running, or finished and not taken yet), by build key, oldest first. */
  private readonly compiles = new Map<string, { promise: Promise<CompiledKernel>; settled: boolean }>();
  private compilesRunning = 0;
  /** The strategy's latest announcement, not compiling yet: started in order as compiles finish. */
  private upcoming: Config[] = [];
  /** The latest announcement less what was taken since: compiled again when the setup chose another program. */
  private announced: Config[] = [];
  private nextCompiler = 0;
  /** The likely program until the setup is ready, then the setup's. */
  private program: KernelProgram | undefined;
  private readonly gpus: GpuId[];
  private bestMs = Infinity;
  private readonly sourceHashes = new Map<KernelProgram, string>();

  constructor(
    private readonly devices: readonly EvaluationDevice[],
    private readonly setup: Promise<EvaluationSetup>,
    private readonly options: EvaluatorOptions,
  ) {
    if (devices.length === 0) throw new RangeError('an evaluator needs at least one device');
    this.program = options.likelyProgram;
    const host = hostname();
    this.gpus = devices.map((d) => ({ host, ordinal: d.device.ordinal, ...(d.device.pciBusId && { pciBusId: d.device.pciBusId }) }));
    setup.then(
      ({ program }) => {
        if (program.compiler !== this.program?.compiler) this.upcoming = [...this.announced]; // their compiles are another program's
        this.program = program;
        this.compileAhead();
      },
      () => undefined, // every evaluation rejects with the setup's error
    );
  }

  /** The GPUs configurations are evaluated on, by worker number. */
  get gpuIds(): readonly GpuId[] {
    return this.gpus;
  }

  /**
   * The configurations the strategy will evaluate next, in order: they compile in the background, up to
   * compileConcurrency at once, each next one as soon as another finishes. A new announcement replaces the last one.
   */
  prefetch(configs: readonly Config[]): void {
    this.upcoming = [...configs];
    this.announced = [...configs];
    this.compileAhead();
  }

  /** Drops the compiles run ahead and never evaluated (they hold no device memory). */
  async dispose(): Promise<void> {
    this.upcoming = [];
    this.announced = [];
    const pending = [...this.compiles.values()].map((c) => c.promise);
    this.compiles.clear();
    await Promise.allSettled(pending);
  }

  /** Evaluates a configuration on the GPU of `worker` (0 when there is one); aborting stops what that GPU runs. */
  async evaluate(config: Config, worker = 0, signal?: AbortSignal): Promise<ConfigResult> {
    const target = this.devices[worker];
    if (!target) throw new RangeError(`worker ${worker} does not exist: this evaluator has ${this.devices.length} GPU${this.devices.length > 1 ? 's' : ''}`);
    const key = configKey(config, this.options.paramNames);
    const timings = { compileMs: 0, loadMs: 0, verifyMs: 0, benchmarkMs: 0 };
    const result: ConfigResult = { config, key, status: 'ok' };
    const notTaken = (c: Config) => configKey(c, this.options.paramNames) !== key; // taken: never compiled ahead again
    this.upcoming = this.upcoming.filter(notTaken);
    this.announced = this.announced.filter(notTaken);
    // Its compile starts now, before the setup is ready (with the likely program: the one the setup chooses, mostly).
    const launchable = this.tryRequest(config);
    if (launchable && !this.compiles.has(buildKey(launchable))) this.startCompile(launchable, target.backend, { ahead: false, signal });
    const setup = await this.setup;
    const on = { ...target, test: setup.tests[worker]! };
    const started = performance.now();
    let kernel: BuiltKernel | undefined;
    try {
      const launch = this.launchOf(config);
      result.geometry = { grid: launch.grid, block: launch.block };
      const request = this.request(config, launch, setup.program);
      result.reproduce = this.reproduction(request, setup.program, on.device);
      const compiled = await this.compiled(request, on.backend, signal);
      timings.compileMs = compiled.compileMs;
      result.gpu = this.gpus[worker]!;
      kernel = await this.run(() => on.backend.load(compiled));
      timings.loadMs = kernel.loadMs;
      result.driver = await this.run(() => kernel!.metrics(launch, signal ? { signal } : {}));

      const run = { timeoutMs: await this.options.launchTimeoutMs(), ...(signal && { signal }) };
      const verifyStart = performance.now();
      const checks = await this.run(() => checkInputSets(on.backend, kernel!, launch, on.test, run));
      timings.verifyMs = performance.now() - verifyStart;
      if (checks.failure) throw new EvaluationFailure('wrong_result', describeCheckFailure(checks.failure));
      await kernel.release().catch(() => undefined);
      kernel = undefined;

      const stopAboveMs = this.options.earlyStopFactor !== undefined && Number.isFinite(this.bestMs) ? this.bestMs * this.options.earlyStopFactor : undefined;
      const fastestCheckMs = Math.min(...checks.timesMs);
      if (stopAboveMs !== undefined && fastestCheckMs > stopAboveMs) {
        // Its checks were timed launches too: even the faster of them cannot win, so no series is timed.
        result.status = 'stopped_early';
        result.stats = computeStats(checks.timesMs);
        result.timeMs = result.stats.medianMs;
        result.verified = { inputSets: on.test.inputSets, timedLaunches: [], of: 0 };
        result.note = `stopped after its checks: the faster took ${fastestCheckMs.toPrecision(4)} ms, more than ${this.options.earlyStopFactor}x the best so far (${this.bestMs.toPrecision(4)} ms)`;
        return this.finished(result, timings, started);
      }

      const benchStart = performance.now();
      // A series whose launches disagree is timed once more: another process on the GPU or a clock change during the
      // series disagrees once, a kernel that skips work does so on every fresh module.
      let series: TimedSeries;
      let seed: number;
      let disagreement: string | undefined;
      const disagreedBefore: string[] = [];
      let seriesLoadMs = 0;
      for (;;) {
        const thisSeed = (seed = newSeed());
        series = await this.run(() =>
          timeSeries(on.backend, compiled, launch, on.test, { warmup: this.options.warmup, launches: this.options.launches, flushL2: this.options.flushL2, seed: thisSeed, mode: this.options.timing, ...(stopAboveMs !== undefined && { stopAboveMs }) }, run),
        );
        seriesLoadMs += series.loadMs;
        if ('failure' in series) break;
        disagreement = timingDisagreement(series.samplesMs, series.verifiedLaunches);
        if (!disagreement || disagreedBefore.length + 1 >= TIMED_SERIES_ATTEMPTS) break;
        disagreedBefore.push(disagreement);
      }
      timings.loadMs += seriesLoadMs;
      timings.benchmarkMs = performance.now() - benchStart - seriesLoadMs;
      if ('failure' in series) throw new EvaluationFailure('wrong_result', describeCheckFailure(series.failure));
      result.verified = { inputSets: on.test.inputSets, timedLaunches: series.verifiedLaunches, of: series.samplesMs.length, seed, ...(this.options.timing === 'kernel_tuner' && { mode: 'kernel_tuner' as const }) };
      result.stats = computeStats(series.samplesMs);
      if (disagreement) throw new EvaluationFailure('inconsistent_timing', `${disagreement}, in ${TIMED_SERIES_ATTEMPTS} timed series each on a fresh module; not eligible as best (median ${result.stats.medianMs.toPrecision(4)} ms)`);
      const notes: string[] = [];
      if (disagreedBefore.length > 0) notes.push(`timed again: in the first series ${disagreedBefore[0]!.replace(/^its /, 'the ')}; the second agreed (another process on the GPU, or a clock change, can do this once)`);
      if (this.options.timing === 'kernel_tuner') notes.push(KERNEL_TUNER_TIMING_UNCHECKED);
      result.timeMs = result.stats.medianMs;
      if (series.end === 'early') {
        result.status = 'stopped_early';
        notes.push(`stopped after ${series.samplesMs.length} timed launches: their median ${result.timeMs.toPrecision(4)} ms is more than ${this.options.earlyStopFactor}x the best so far (${this.bestMs.toPrecision(4)} ms)`);
      } else {
        this.bestMs = Math.min(this.bestMs, result.timeMs);
        if (this.options.energy) {
          const energyStart = performance.now();
          Object.assign(result, await this.energyOf(on, compiled, launch, result.timeMs, this.options.energy.windowMs, run));
          timings.benchmarkMs += performance.now() - energyStart;
        }
      }
      if (notes.length > 0) result.note = notes.join('; ');
    } catch (e) {
      if (!(e instanceof EvaluationFailure)) throw e;
      result.status = e.kind;
      result.error = { message: e.message, ...(e.log ? { log: e.log } : {}) };
    } finally {
      await kernel?.release().catch(() => undefined);
    }
    return this.finished(result, timings, started);
  }

  /** The result with its timings (the framework's share: what the phases leave of the time since `started`) and when. */
  private finished(result: ConfigResult, timings: Omit<NonNullable<ConfigResult['timings']>, 'frameworkMs'>, started: number): ConfigResult {
    result.timings = { ...timings, frameworkMs: Math.max(0, performance.now() - started - timings.compileMs - timings.loadMs - timings.verifyMs - timings.benchmarkMs) };
    result.timestamp = new Date().toISOString();
    return result;
  }

  /**
   * Profiles a configuration evaluated before (its timings are done), on the first GPU: compiled again, or taken from
   * the compiles run ahead. Undefined where the backend cannot profile.
   */
  async profile(config: Config, options: DeviceRunOptions): Promise<ConfigProfile | undefined> {
    const setup = await this.setup;
    const on = { ...this.devices[0]!, test: setup.tests[0]! };
    if (!on.backend.profile) return undefined;
    const launch = this.launchOf(config);
    const compiled = await this.compiled(this.request(config, launch, setup.program), on.backend, options.signal);
    return configProfile(config, this.options.nameExpression, launch, await on.backend.profile(compiled, launch, on.test, options));
  }

  /** NVML's readings of a configuration timed in full, or why there are none (energy.ts's reason, or a backend without energy). */
  private async energyOf(on: EvaluationDevice & { test: PreparedTest }, compiled: CompiledKernel, launch: Launch, timeMs: number, windowMs: number, run: DeviceRunOptions): Promise<Pick<ConfigResult, 'energy' | 'energyUnavailable'>> {
    const measure = on.backend.energy?.bind(on.backend);
    if (!measure) return { energyUnavailable: 'this backend does not measure energy' };
    const kernel = await this.run(() => on.backend.load(compiled));
    try {
      const e = await this.run(() => measure(kernel, launch, on.test, 0, { ...run, windowMs, timeMs }));
      if (!e.available) return { energyUnavailable: e.reason };
      const readings: EnergyReadings = { nvml_energy: e.nvml_energy, nvml_power: e.nvml_power };
      for (const name of ['core_freq', 'mem_freq', 'temperature'] as const) if (e[name] !== undefined) readings[name] = e[name];
      return { energy: readings };
    } finally {
      await kernel.release().catch(() => undefined);
    }
  }

  private launchOf(config: Config): Launch {
    let g: LaunchGeometry;
    try {
      g = this.options.geometry.launch(config, this.options.scalars);
    } catch (e) {
      if (e instanceof GeometryError) throw new EvaluationFailure('launch_error', e.message);
      throw e;
    }
    // Over the device's limits (the grid, the dynamic shared memory): skipped before anything is compiled.
    const tooLarge = exceedsDeviceLimits(this.devices[0]!.device, { block: g.block, grid: g.grid, sharedBytes: g.sharedMemBytes });
    if (tooLarge) throw new EvaluationFailure('exceeds_device_limits', tooLarge);
    return { grid: g.grid, block: g.block, sharedMemBytes: g.sharedMemBytes };
  }

  private request(config: Config, launch: Launch, program: KernelProgram): BuildRequest {
    return {
      ...program,
      nameExpression: this.options.nameExpression,
      defines: defines(config, launch, this.options.geometry.blockSizeNames),
      compilerOptions: this.options.compilerOptions,
    };
  }

  /** The request of a configuration with the program known now (none before the setup without a likely program). */
  private tryRequest(config: Config): BuildRequest | undefined {
    if (!this.program) return undefined;
    try {
      return this.request(config, this.launchOf(config), this.program);
    } catch {
      return undefined; // its evaluation reports the problem
    }
  }

  /** Starts the next announced compiles while fewer than compileConcurrency run and memory allows another. */
  private compileAhead(): void {
    const freeBytes = this.options.freeMemoryBytes ?? availableMemoryBytes;
    while (this.upcoming.length > 0 && this.compilesRunning < this.options.compileConcurrency) {
      if (!memoryAllowsCompile(this.compilesRunning, freeBytes())) return; // the next one to finish tries again
      const request = this.tryRequest(this.upcoming.shift()!);
      if (request && !this.compiles.has(buildKey(request))) this.startCompile(request, this.devices[this.nextCompiler++ % this.devices.length]!.backend, { ahead: true });
    }
  }

  /**
   * Starts a compile kept for the evaluation that takes it: run ahead (counted against compileConcurrency; through the
   * GPUs' backends in turn: a run's GPUs share one compile pool, nvcc runs anywhere), or the one an evaluation waits for.
   */
  private startCompile(request: BuildRequest, backend: TuningBackend, { ahead, signal }: { ahead: boolean; signal?: AbortSignal }): void {
    const entry = { promise: compileExplained(backend, request, signal), settled: false };
    if (ahead) this.compilesRunning++;
    entry.promise
      .catch(() => undefined) // observed when evaluated; a compile run ahead may never be
      .finally(() => {
        if (ahead) this.compilesRunning--;
        entry.settled = true;
        this.forgetOldCompiles();
        this.compileAhead();
      });
    this.compiles.set(buildKey(request), entry);
  }

  /** Keeps the newest few finished compiles nobody took (a local search announced them, then moved elsewhere). */
  private forgetOldCompiles(): void {
    const finished = [...this.compiles].filter(([, c]) => c.settled);
    const excess = finished.length - KEPT_COMPILES_PER_SLOT * this.options.compileConcurrency;
    for (const [key] of finished.slice(0, Math.max(0, excess))) this.compiles.delete(key);
  }

  /** The compiled kernel of a request: run ahead, or compiled now by the GPU that needs it. */
  private async compiled(request: BuildRequest, backend: TuningBackend, signal?: AbortSignal): Promise<CompiledKernel> {
    const key = buildKey(request);
    const promise = this.compiles.get(key)?.promise ?? compileExplained(backend, request, signal);
    this.compiles.delete(key);
    try {
      return await promise;
    } catch (e) {
      // A static shared memory over the device's limit is the device's limit, as a block of 2048 threads is.
      if (e instanceof DeviceLimitError) throw new EvaluationFailure('exceeds_device_limits', e.message, e.log);
      if (e instanceof CompileError) throw new EvaluationFailure('compile_error', e.message, e.log);
      // A compile process that died on every attempt (GpuWorker sends a compile to a fresh one twice) dies on this program.
      if (e instanceof WorkerCrashedError && e.code === 'WORKER_REPLACED') throw new EvaluationFailure('compile_error', `the compiler crashed on this configuration: ${e.message}`);
      throw e;
    }
  }

  /** Runs a GPU step, turning the GPU layer's typed errors into this configuration's failure. */
  private async run<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (e) {
      if (e instanceof KernelTimeoutError) throw new EvaluationFailure('timeout', e.message);
      if (e instanceof KernelFaultError) throw new EvaluationFailure('fault', e.message);
      // More threads than the kernel's registers allow (or shared memory over the limit) is a limit of the device for
      // this kernel, as Kernel Tuner counts "too many resources requested for launch": not a failure of the code.
      if (e instanceof LaunchError) throw new EvaluationFailure(DEVICE_LIMIT_LAUNCH_ERRORS.has(e.code) ? 'exceeds_device_limits' : 'launch_error', e.message);
      if (e instanceof WorkerCrashedError) throw new EvaluationFailure('fault', e.message);
      throw e;
    }
  }

  private sourceHashOf(program: KernelProgram): string {
    let hash = this.sourceHashes.get(program);
    if (hash === undefined) this.sourceHashes.set(program, (hash = createHash('sha256').update(program.source).digest('hex')));
    return hash;
  }

  private reproduction(request: BuildRequest, program: KernelProgram, device: DeviceDescription): Reproduction {
    return {
      sourceHash: this.sourceHashOf(program),
      defines: request.defines,
      compilerOptions: [...request.compilerOptions],
      deviceName: device.name,
      driverVersion: device.driverVersion,
      nvrtcVersion: request.compiler === 'nvcc' ? 'nvcc' : (device.nvrtcVersion ?? 'nvrtc'),
      statistic: 'median',
    };
  }
}

/** What a compile is kept under: a compile made with another program (another compiler) than a request's is not its. */
function buildKey(request: BuildRequest): string {
  return JSON.stringify([request.compiler, request.defines, request.nameExpression]);
}

/** One readable paragraph: where the outputs were wrong, which outputs differ, how, and where; which inputs the kernel overwrote. */
export function describeCheckFailure(failure: CheckFailure): string {
  const parts = failure.mismatches.map((m) => describeMismatch(m));
  if (failure.modifiedInputs.length > 0) parts.push(`it overwrote input${failure.modifiedInputs.length > 1 ? 's' : ''} ${failure.modifiedInputs.join(', ')}, which must stay unchanged`);
  const t = failure.timedLaunch;
  const when = t
    ? `wrong result on timed launch ${t.index} of ${t.adaptive ? 'at most ' : ''}${t.of} (right on every input set when checked: state kept between launches, such as a launch counter, a result cached by input address or checksum, a one-time flag, or a race)`
    : `wrong result on input set ${failure.inputSet + 1}${failure.inputSet > 0 ? ' (right on the first input set: a result that does not depend on the input)' : ''}`;
  return `${when}: ${parts.join('; ')}`;
}

export function describeMismatch(m: OutputMismatch): string {
  const pct = ((100 * m.mismatches) / m.elements).toPrecision(3);
  const details: string[] = [];
  if (m.unwritten > 0) details.push(`${m.unwritten} never written`);
  if (m.nonFinite > 0) details.push(`${m.nonFinite} NaN/Inf where the reference is finite`);
  if (m.maxAbsError > 0) details.push(`max abs error ${m.maxAbsError.toPrecision(4)}, max rel error ${m.maxRelError.toPrecision(4)}`);
  const tol = m.tolerance === 'exact' ? 'exact comparison' : `tolerance atol ${m.tolerance.atol.toPrecision(3)} + rtol ${m.tolerance.rtol}`;
  const first = m.firstBad.map((b) => `[${b.index}] ${String(b.got)} (expected ${String(b.expected)})`).join(', ');
  return `${m.name}: ${m.mismatches} of ${m.elements} elements differ (${pct}%; ${tol})${details.length ? `, ${details.join(', ')}` : ''}; first: ${first}`;
}
