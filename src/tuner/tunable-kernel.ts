// TunableKernel (and KernelTest, from kernel-test.ts): the seed library's API (llm_kernel_tuner.TunableKernel /
// KernelTest) over our tuner.
// test() checks one configuration; tune() searches the space with a strategy, verifying every configuration against
// the oracle (the original kernel) on two input sets and timing it with CUDA events, with an optional Kernel Tuner cache.
import { readFileSync } from 'node:fs';
import { basename, isAbsolute, resolve as resolvePath } from 'node:path';
import { ENERGY_WINDOW_MS, MIN_ENERGY_WINDOW_MS } from '../gpu/energy';
import { CompileError, KernelFaultError, KernelTimeoutError, LaunchError } from '../gpu/errors';
import { median } from '../gpu/stats';
import { findCudaToolkit, type CudaToolkit } from '../gpu/toolkit';
import { compileExplained, type BuiltKernel, type CompiledKernel, type DeviceDescription, type KernelProgram, type Launch, type PreparedTest, type SanitizeRunOptions, type TestData, type Tolerance, type TuningBackend } from './run/backend';
import { CacheFile, throughCache } from './cache/cache-file';
import { ResultMetrics, type MetricOptions } from './run/metrics';
import { describeCheckFailure, Evaluator } from './run/evaluator';
import { resolveLaunchCount, type AdaptiveLaunches } from './run/launch-count';
import { TIMING_MODES, type TimingMode } from './run/measurement';
import { compileLookahead, defaultCompileConcurrency } from './run/compile-concurrency';
import { defines, Geometry, type GridDivisor } from './space/geometry';
import { backendsOf } from './run/gpu-backend';
import { checkOneModel, type GpuSelection } from './run/gpu-selection';
import { buildWithFallback, candidatePrograms, compileSources, type CompileSources } from './compile/compile-sources';
import { checkConstantMemory, type TestSpecInput } from './spec/input-spec';
import { KernelTest } from './kernel-test';
import { constantSymbols, type ConstantSymbol } from './source/constant-symbols';
import { parseKernels } from './source/kernel-parser';
import { findKernel, nameExpression, type KernelSignature, type TemplateArguments } from './source/kernel-signature';
import { SearchSpace } from './space/search-space';
import { typeAliasesOf } from './source/type-aliases';
import { kernelOfSpace, openOptions, SignatureVariesError, spaceOptions, type SourceContext } from './source/space-view';
import { preprocess, type Preprocessed } from './source/preprocessor';
import { DEFAULT_STRATEGY, resolveStrategy, type SearchProgress, type Shard, type Strategy } from './strategies';
import type { Config, ConfigResult, ParamValue, ProblemSizeSpec, TuneParams, TuneResult } from './types';
import { markPhase } from '../phases';
import { SANITIZER_TOOLS, type SanitizerFinding, type SanitizerTool } from '../gpu/sanitizer/report';
import type { SanitizerRun } from '../gpu/sanitizer/sanitize';
import { describeReduction, locateFindings, type SanitizedLaunch, type SanitizerVerdict } from './run/sanitizer';
import { smallerProblem } from './run/small-problem';

/**
 * A configuration produced wrong outputs (the message says which, how many, how wrong and where), or its timed launches
 * disagreed as launches that skip their work do (the message says how).
 */
export class FailedTestsError extends Error {
  override readonly name = 'FailedTestsError';
  constructor(
    message: string,
    readonly result: ConfigResult,
  ) {
    super(message);
  }
}

export interface TunableKernelInfo {
  /** Which __global__ function of the source (required when it has several). */
  kernelName?: string;
  /**
   * Template arguments of a templated kernel ("float", 16 ...), for its name expression. A tunable parameter's name
   * is an argument too (`["float", "block_size_x"]`): the compiler expands it to the configuration's value.
   */
  templateArgs?: TemplateArguments;
  fileName?: string;
  /** The file's absolute path when it is on disk: its directory is searched for quoted #includes; logs name it. */
  filePath?: string;
  /** More directories searched for #include, like -I (a spec's includePaths, compile_commands.json, a setting). */
  includePaths?: readonly string[];
  /** Reads a header; default the file system (an editor passes its unsaved buffers). */
  readFile?: (absolutePath: string) => string | undefined;
  /**
   * The space it will be tuned over, when known: the file is read as its configurations compile it (the parameters'
   * values, the compile's -D options; see space-view.ts), and the kernel must keep its signature in all of them.
   * Without it the parameters are unknown; tune() reads the file again for its own space.
   */
  space?: KernelSpace;
}

/** A tuning space as reading the kernel file needs it. */
export interface KernelSpace {
  tuneParams: TuneParams;
  blockSizeNames?: readonly string[];
  compilerOptions?: readonly string[];
}

export interface LaunchOptions {
  /** Kernel Tuner's grid divisors; default: the block size parameter of each dimension. */
  gridDivX?: GridDivisor;
  gridDivY?: GridDivisor;
  gridDivZ?: GridDivisor;
  /** Names of the block dimensions' parameters; default block_size_x, block_size_y, block_size_z. */
  blockSizeNames?: readonly string[];
  /**
   * Dynamic shared memory per block (`extern __shared__`): bytes, or an expression over the tunable parameters and the
   * scalar arguments, e.g. "block_size_x * 4". Above 48 KiB the kernel opts in; over the device's limit a configuration
   * is skipped as exceeding it.
   */
  sharedMemBytes?: number | string;
}

export interface RunOptions extends LaunchOptions {
  /**
   * Where to run: a backend, or one per GPU (all of one model; a search spreads its configurations over them). Default:
   * a GpuBackend per GPU of `gpus`, else on `device` (opened and closed by this call).
   */
  backend?: TuningBackend | readonly TuningBackend[];
  device?: number;
  /** The GPUs to open when no backend is given: all, a list of ordinals, or the first N (see gpu-selection.ts). */
  gpus?: GpuSelection;
  compilerOptions?: readonly string[];
  /**
   * The reference implementation whose outputs are the truth, launched with its own geometry (`launch`, default Kernel
   * Tuner's defaults for `config`); default this kernel with `referenceConfig` and the tuning's geometry.
   */
  oracle?: { code: string; filePath?: string; config?: Config; launch?: LaunchOptions; kernelName?: string };
  /** Configuration of this kernel used as the oracle when none is given; default the first valid configuration. */
  referenceConfig?: Config;
  tolerance?: Partial<Tolerance>;
  /**
   * Time limit of one launch in ms. Default: scaled to the reference kernel's measured time (100x, at least 1 s; see
   * scaledLaunchTimeoutMs), so a configuration that hangs costs about a second.
   */
  launchTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface TuneOptions extends RunOptions, MetricOptions {
  strategy?: string | Strategy;
  strategyOptions?: Record<string, unknown>;
  maxFevals?: number;
  timeLimitMs?: number;
  seed?: number;
  /**
   * Timed launches per configuration: a fixed count (Kernel Tuner's iterations), or an adaptive series that stops once
   * the 95 % interval of its median lies within ±precision of it, after `min` and at most `max` launches (each field
   * defaulted); default the adaptive DEFAULT_LAUNCHES (7 to 32, ±1 %).
   */
  iterations?: number | Partial<AdaptiveLaunches>;
  /**
   * How the timed launches run: 'verified' (default: every launch on reset outputs, the outputs compared along the
   * series) or 'kernel_tuner' (as Kernel Tuner times, for comparisons with its figures; what it leaves unchecked is
   * named in every result: KERNEL_TUNER_TIMING_UNCHECKED).
   */
  timing?: TimingMode;
  /** Untimed launches before them; default 1 (the two checked runs before timing have warmed the kernel up already). */
  warmup?: number;
  /** Overwrite L2 before every timed launch; default false. */
  flushL2?: boolean;
  /**
   * Stop timing a configuration whose first few timed launches are this many times slower than the best so far (it
   * cannot win; its time is their median and its status 'stopped_early'); default 1.5, false: time every one fully.
   * Only with the time objective: a slower configuration may still use less energy.
   */
  earlyStop?: number | false;
  /**
   * Also measure energy and power with NVML, read only, after each configuration's timed launches (Kernel Tuner's
   * NVMLObserver): the kernel runs back to back for `windowMs` (default 1000) while NVML is read. Implied by an
   * objective or a metric that reads energy or power. Nothing on the GPU is ever set.
   */
  energy?: boolean | { windowMs?: number };
  /**
   * Compiles running ahead of the GPUs (NVRTC in the compile pool's processes, or nvcc's); default one per CPU core
   * less one per GPU, no more than the free memory holds (defaultCompileConcurrency). The strategy announces twice as
   * many configurations ahead.
   */
  compileConcurrency?: number;
  /** Evaluate only this share of the space (brute force), for a search split over hosts and merged afterwards. */
  shard?: Shard;
  /** A Kernel Tuner cache file: results are appended as they come, and a rerun resumes from it. */
  cache?: string;
  /**
   * After the search, profile the best configuration within `timeoutMs`: Nsight Compute where it is installed, else the
   * driver's metrics (TuneResult.profile). It runs after every timing, so it never changes one. Default: no profile.
   */
  profile?: { timeoutMs: number };
  /**
   * After the search (and the profile), run the best configuration once under compute-sanitizer within `timeoutMs`
   * (default DEFAULT_SANITIZE_TIMEOUT_MS), on the smallest of `tests` (default the tuned test) made small (see
   * sanitize()): TuneResult.sanitizer. Default: not.
   */
  sanitize?: { timeoutMs?: number; tests?: readonly KernelTest[] };
  onResult?: (result: ConfigResult, progress: SearchProgress) => void;
}

export interface SanitizeOptions extends RunOptions {
  /** Time limit of the whole check: the compiles, every tool, and confirming what a reduced problem reported. Default 120 000 ms. */
  timeoutMs?: number;
  /** The tools, in order; default memcheck, racecheck, synccheck, initcheck. */
  tools?: readonly SanitizerTool[];
}

export const DEFAULT_SANITIZE_TIMEOUT_MS = 120_000;

export class TunableKernel {
  private constructor(
    readonly code: string,
    readonly signature: KernelSignature,
    readonly info: TunableKernelInfo,
  ) {}

  /**
   * Parses the source and selects the kernel (ParseError points at the line when the source cannot be parsed;
   * SignatureVariesError says which configuration of `info.space` would compile another signature).
   */
  static async create(code: string, info: TunableKernelInfo = {}): Promise<TunableKernel> {
    const fileName = info.fileName ?? 'kernel.cu';
    const context = sourceContext(info, info.space);
    const inSpace = info.space && (await kernelOfSpace(code, fileName, info.kernelName, info.space.tuneParams, context));
    const kernels = inSpace ? inSpace.kernels : await parseKernels(code, fileName, { preprocess: openOptions(context) });
    const source = info.fileName ?? 'the source';
    if (kernels.length === 0) {
      throw new Error(`${source} has no __global__ kernel, so there is nothing to tune: a kernel is a function declared \`__global__ void name(...)\``);
    }
    let kernel: KernelSignature | null;
    if (info.kernelName !== undefined) {
      kernel = findKernel(kernels, info.kernelName);
      if (!kernel) throw new Error(`no __global__ kernel named '${info.kernelName}' in ${source}; found: ${kernels.map((k) => k.name).join(', ')}`);
    } else {
      if (kernels.length > 1) throw new Error(`${source} has ${kernels.length} __global__ kernels (${kernels.map((k) => k.name).join(', ')}): name the one to tune`);
      kernel = kernels[0]!;
    }
    const views = inSpace && inSpace.kernel === kernel ? inSpace.views : [preprocess(code, fileName, spaceOptions({}, context))];
    const tunable = new TunableKernel(code, await withTypeAliases(kernel, views), info);
    if (info.space) tunable.spaces.set(spaceKey(info.space), { signature: tunable.signature, symbols: constantSymbols(views[0]!) });
    return tunable;
  }

  /** The file as each space's configurations compile it, by spaceKey. */
  private readonly spaces = new Map<string, SpaceReading>();

  /** This kernel's signature in every configuration of a space, and the file's __constant__ symbols (read once per space). */
  private async readIn(space: KernelSpace): Promise<SpaceReading> {
    const key = spaceKey(space);
    let reading = this.spaces.get(key);
    if (!reading) {
      const context = sourceContext(this.info, space);
      const { kernel, views } = await kernelOfSpace(this.code, this.info.fileName ?? 'kernel.cu', this.signature.qualifiedName, space.tuneParams, context);
      if (!kernel) throw new SignatureVariesError(`kernel '${this.signature.qualifiedName}' is not compiled in the configurations of this space (a preprocessor condition on a parameter leaves it out)`);
      reading = { signature: await withTypeAliases(kernel, views), symbols: constantSymbols(views[0]!) };
      this.spaces.set(key, reading);
    }
    return reading;
  }

  get name(): string {
    return this.signature.name;
  }

  get nameExpression(): string {
    return nameExpression(this.signature, this.info.templateArgs);
  }

  /** Zero-based position of a parameter, or undefined. */
  getArgPosition(name: string): number | undefined {
    const i = this.signature.parameters.findIndex((p) => p.name === name);
    return i < 0 ? undefined : i;
  }

  copy(): TunableKernel {
    return new TunableKernel(this.code, structuredClone(this.signature), { ...this.info });
  }

  /**
   * Runs one configuration on the test and returns its result; throws FailedTestsError when the outputs are wrong or
   * its timed launches disagree, CompileError / LaunchError / KernelFaultError / KernelTimeoutError for the other failures.
   */
  async test(test: KernelTest, params: Config = {}, options: RunOptions = {}): Promise<ConfigResult> {
    if (!test.hasExpectedOutputs && !options.oracle && !options.referenceConfig) {
      // The default oracle would be this very configuration: it would only catch unwritten outputs and cached results.
      throw new TypeError(
        'test() needs the right answers, and this KernelTest has no expected outputs: pass options.referenceConfig (this kernel at a configuration known to be right, e.g. its default) or options.oracle (a reference kernel)',
      );
    }
    const tuneParams = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, [v]]));
    const result = await this.run(test, tuneParams, [], { ...options, iterations: 7, earlyStop: false, strategy: 'brute_force' });
    const r = result.results.at(-1)!;
    throwForFailure(r);
    return r;
  }

  /** Searches the configurations of tuneParams that satisfy the restrictions; every failure is a result, not an exception. */
  tune(test: KernelTest, tuneParams: TuneParams, restrictions: readonly string[] = [], options: TuneOptions = {}): Promise<TuneResult> {
    return this.run(test, tuneParams, restrictions, options);
  }

  private async run(test: KernelTest, tuneParams: TuneParams, restrictions: readonly string[], options: TuneOptions): Promise<TuneResult> {
    const reading = await this.readIn({ tuneParams, ...(options.blockSizeNames && { blockSizeNames: options.blockSizeNames }), ...(options.compilerOptions && { compilerOptions: options.compilerOptions }) });
    const { data, problemSize } = test.resolve(reading.signature);
    const constants = data.kind === 'spec' ? data.test.constants : [];
    checkConstantMemory(constants, reading.symbols, this.info.fileName ?? 'the kernel file');
    // Checked before any GPU work: a metric or an objective with a typo fails here.
    const metrics = ResultMetrics.create(options, Object.keys(tuneParams));
    const { objective } = metrics;
    const launches = resolveLaunchCount(options.iterations);
    if (options.timing !== undefined && !TIMING_MODES.includes(options.timing)) throw new RangeError(`timing must be one of ${TIMING_MODES.join(', ')}, got ${JSON.stringify(options.timing)}`);
    const energy = options.energy || metrics.usesEnergy ? energyWindow(options.energy) : undefined;
    const cleanups: (() => Promise<unknown> | void)[] = [];
    let setupRunning: Promise<unknown> | undefined;
    try {
      const backends = await backendsFor(options, cleanups);
      const descriptions = await Promise.all(backends.map((b) => b.describe()));
      checkOneModel(descriptions);
      const device = descriptions[0]!;
      const space = new SearchSpace(tuneParams, restrictions, { deviceLimits: device, ...(options.blockSizeNames && { blockSizeNames: options.blockSizeNames }) });
      const scalars = scalarsOf(data);
      const paramNames = Object.keys(tuneParams);
      const geometry = new Geometry({ problemSize, ...launchSpec(options) }, { paramNames, scalarNames: Object.keys(scalars) });
      const compilerOptions = options.compilerOptions ?? [];
      const initialTimeoutMs = options.launchTimeoutMs ?? UNMEASURED_LAUNCH_TIMEOUT_MS;

      const toolkit = findCudaToolkit(device.nvrtcLibrary ? { nvrtcLibrary: device.nvrtcLibrary } : {});
      const sources = await this.compileSources(paramNames, toolkit);
      const constantSymbols = constants.map((c) => c.symbol);
      const candidates = withConstantSymbols(candidatePrograms(sources, this.info.fileName ?? `${this.name}.cu`, device.compilers), constantSymbols);
      // The setup: the oracle built, then on every GPU loaded, the same inputs generated from the same seeds and the
      // oracle run on them there (each configuration is compared with the oracle's outputs on the GPU that ran it). The
      // search starts meanwhile: its first configurations compile while the setup runs, and evaluate once it is done.
      const setup = this.buildOracle(backends[0]!, device, space, problemSize, scalars, options, compilerOptions, constantSymbols, { sources, candidates, toolkit }).then(async (oracle) => {
        markPhase('oracle compiled');
        const devices = await Promise.all(
          backends.map(async (backend) => {
            const kernel = await backend.load(oracle.compiled);
            cleanups.push(() => kernel.release());
            const test = await backend.prepare(data, { kernel, launch: oracle.launch }, { ...(options.tolerance && { tolerance: options.tolerance }), timeoutMs: initialTimeoutMs });
            cleanups.push(() => test.release());
            return { backend, test, oracle: kernel };
          }),
        );
        markPhase('setup done (test data and oracle outputs on every GPU)');
        return { oracle, devices };
      });
      setupRunning = setup.catch(() => undefined); // also observes a failure before anything awaits the setup
      // The launch time limit scales with the reference kernel, timed (on the first GPU) when the first configuration needs the limit.
      let referenceMs: number | undefined;
      let launchLimit: Promise<number> | undefined;
      const launchTimeoutMs = () =>
        (launchLimit ??=
          options.launchTimeoutMs !== undefined
            ? Promise.resolve(options.launchTimeoutMs)
            : setup.then(({ oracle, devices }) => this.timeReference(devices[0]!, oracle.launch, initialTimeoutMs)).then((ms) => scaledLaunchTimeoutMs((referenceMs = ms))));

      const compileConcurrency = options.compileConcurrency ?? defaultCompileConcurrency(backends.length);
      const evaluationSetup = setup.then(({ oracle, devices }) => ({ program: oracle.candidateProgram, tests: devices.map((d) => d.test) }));
      const evaluator = new Evaluator(backends.map((backend, i) => ({ backend, device: descriptions[i]! })), evaluationSetup, {
        ...(candidates.programs[0] && { likelyProgram: candidates.programs[0] }),
        scalars,
        nameExpression: this.nameExpression,
        compilerOptions,
        geometry,
        paramNames,
        launches,
        warmup: options.warmup ?? 1,
        timing: options.timing ?? 'verified',
        flushL2: options.flushL2 ?? false,
        earlyStopFactor: options.earlyStop === false || objective.name !== 'time' ? undefined : (options.earlyStop ?? 1.5),
        launchTimeoutMs,
        compileConcurrency,
        ...(energy && { energy }),
      });
      cleanups.push(() => evaluator.dispose());

      const cache = options.cache
        ? CacheFile.open(options.cache, { deviceName: device.name, kernelName: this.name, problemSize, tuneParams, objective: objective.name, ...(options.shard && { shard: options.shard }) })
        : undefined;
      if (cache) cleanups.push(() => cache.close());

      // Results reported before the setup is done (the configurations over the device's limits) wait for it: a run
      // whose oracle fails reports nothing, as before the search.
      const reportResult = (r: ConfigResult, p: SearchProgress): void => {
        // Kernel Tuner records configurations over the device's limits too (InvalidConfig), so a replay finds them.
        if (cache && r.status === 'exceeds_device_limits' && !cache.has(r.key)) cache.append(r);
        options.onResult?.(r, p);
      };
      let setupDone = false;
      const earlyResults: [ConfigResult, SearchProgress][] = [];
      setup.then(
        () => {
          setupDone = true;
          for (const [r, p] of earlyResults.splice(0)) reportResult(r, p);
        },
        () => undefined,
      );
      const strategy = typeof options.strategy === 'object' ? options.strategy : resolveStrategy(options.strategy ?? DEFAULT_STRATEGY)(options.strategyOptions);
      const evaluate = throughCache(cache, (config, worker) => evaluator.evaluate(config, worker, options.signal), (r) => metrics.apply(r));
      const result = await strategy.run(
        space,
        evaluate,
        {
          objective,
          ...(options.maxFevals !== undefined && { maxFevals: options.maxFevals }),
          ...(options.timeLimitMs !== undefined && { timeLimitMs: options.timeLimitMs }),
          ...(options.seed !== undefined && { seed: options.seed }),
          ...(options.signal && { signal: options.signal }),
          ...(options.shard && { shard: options.shard }),
          workers: backends.length,
          lookahead: compileLookahead(compileConcurrency),
          onUpcoming: (configs: readonly Config[]) => evaluator.prefetch(configs.filter((c) => !cache?.has(space.key(c)))),
          onResult: (r: ConfigResult, p: SearchProgress) => (setupDone ? reportResult(r, p) : earlyResults.push([r, p])),
        },
      );
      const { oracle } = await setup; // a search that evaluated nothing still fails with the oracle's error
      const profiled = options.profile && result.best ? await profileOf(evaluator, result.best.config, options.profile.timeoutMs, options.signal) : {};
      const sanitized =
        options.sanitize && result.best
          ? { sanitizer: await this.sanitize(options.sanitize.tests ?? [test], result.best.config, { ...options, backend: backends[0]!, ...(options.sanitize.timeoutMs !== undefined && { timeoutMs: options.sanitize.timeoutMs }) }) }
          : {};
      return {
        ...result,
        ...profiled,
        ...sanitized,
        objective,
        compiler: { backend: oracle.candidateProgram.compiler, ...(oracle.compilerNote && { note: oracle.compilerNote }) },
        reference: { config: oracle.config, ...(referenceMs !== undefined && { timeMs: referenceMs }) },
        gpus: [...evaluator.gpuIds],
      };
    } finally {
      await setupRunning; // what the setup made is in the clean-ups before they run
      for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
    }
  }

  /**
   * The oracle (the given reference code, or this kernel at its reference configuration: the file's own values of
   * the tunable parameters it #defines, else the first valid configuration), compiled once for every GPU, and the
   * program every configuration of this kernel compiles: NVRTC's device unit, or the whole file with nvcc where NVRTC
   * cannot take it (the first of `program.candidates` that compiles this kernel at its reference configuration).
   */
  private async buildOracle(
    backend: TuningBackend,
    device: DeviceDescription,
    space: SearchSpace,
    problemSize: ProblemSizeSpec,
    scalars: Record<string, number>,
    options: RunOptions,
    compilerOptions: readonly string[],
    constantSymbols: readonly string[],
    program: { sources: CompileSources; candidates: { programs: KernelProgram[]; skipped?: string }; toolkit: CudaToolkit | null },
  ): Promise<CompiledOracle> {
    const { sources, candidates, toolkit } = program;
    const reference = options.oracle;
    const firstValid = space.size > 0 ? space.config(0) : undefined;
    // The kernel under test is built at its reference configuration; a separate reference at its own configuration.
    const ownConfig = options.referenceConfig ?? (firstValid && withFileValues(firstValid, sources.fileValues));
    if (!ownConfig) throw new Error('no configuration satisfies the restrictions and the device limits, so there is nothing to run');
    const buildAt = (kernel: TunableKernel, config: Config, launchOptions: LaunchOptions) => {
      // A separate reference has its own launch geometry (default: Kernel Tuner's, from its own configuration); the
      // candidate's grid divisors may name parameters the reference does not have.
      const geometry = new Geometry({ problemSize, ...launchSpec(launchOptions) }, { paramNames: Object.keys(config), scalarNames: Object.keys(scalars) });
      const g = geometry.launch(config, scalars);
      const launch: Launch = { grid: g.grid, block: g.block, sharedMemBytes: g.sharedMemBytes };
      const request = { nameExpression: kernel.nameExpression, defines: defines(config, g, geometry.blockSizeNames), compilerOptions };
      const compile = (program: KernelProgram) => compileExplained(backend, { ...program, ...request });
      return { launch, compile };
    };
    const own = buildAt(this, ownConfig, options);
    const choosing = buildWithFallback(candidates, own.compile);
    if (!reference) {
      const chosen = await choosing;
      return { compiled: chosen.built, launch: own.launch, config: ownConfig, candidateProgram: chosen.program, ...(chosen.note && { compilerNote: chosen.note }) };
    }
    // A separate reference implementation, compiled on its own while the candidate's program is chosen.
    const config = reference.config ?? ownConfig;
    const referenceBuild = (async () => {
      const oracleKernel = await TunableKernel.create(reference.code, {
        kernelName: reference.kernelName ?? this.name,
        fileName: reference.filePath ? basename(reference.filePath) : `${reference.kernelName ?? this.name}.reference.cu`,
        ...(reference.filePath && { filePath: reference.filePath }),
        ...(this.info.includePaths && { includePaths: this.info.includePaths }),
      });
      const referenceSources = await oracleKernel.compileSources(Object.keys(config), toolkit);
      const at = buildAt(oracleKernel, config, reference.launch ?? {});
      // The reference gets the constant memory its own file declares (convolution_naive takes its filter as an argument).
      const { symbols } = await oracleKernel.readIn({ tuneParams: Object.fromEntries(Object.entries(config).map(([k, v]) => [k, [v]])), compilerOptions });
      const referenceConstants = constantSymbols.filter((symbol) => symbols.has(symbol));
      try {
        return { built: await buildWithFallback(withConstantSymbols(candidatePrograms(referenceSources, oracleKernel.info.fileName!, device.compilers), referenceConstants), at.compile), launch: at.launch };
      } catch (e) {
        if (e instanceof CompileError) throw new CompileError(`the reference kernel does not compile: ${e.message}`, { code: e.code, explanation: e.explanation, log: e.log, diagnostics: e.diagnostics });
        throw e;
      }
    })();
    referenceBuild.catch(() => undefined); // the candidate's own failure is the one reported when both fail
    const chosen = await choosing;
    const { built, launch } = await referenceBuild;
    return { compiled: built.built, launch, config, candidateProgram: chosen.program, ...(chosen.note && { compilerNote: chosen.note }) };
  }

  /**
   * Runs `config` once under compute-sanitizer (memcheck, racecheck, synccheck, initcheck), compiled with line
   * information so that a finding names the file's lines, on the smallest of `tests` made small where its problem size
   * allows without changing a block's shape (run/small-problem.ts). A reduced problem may break what the kernel assumes
   * of its scalars, so what it reports is confirmed before it stands: by the reference kernel (`options.oracle`)
   * running clean on the same problem, else by the same finding on the test's own problem. Never rejects for a missing,
   * failing or slow compute-sanitizer, nor for a configuration that does not build: the verdict says so. An abort
   * rejects.
   */
  async sanitize(tests: KernelTest | readonly KernelTest[], config: Config, options: SanitizeOptions = {}): Promise<SanitizerVerdict> {
    const started = performance.now();
    const limitMs = options.timeoutMs ?? DEFAULT_SANITIZE_TIMEOUT_MS;
    const elapsedMs = () => Math.round(performance.now() - started);
    const leftMs = () => Math.max(1, limitMs - elapsedMs());
    const tools = options.tools ?? SANITIZER_TOOLS;
    const all: readonly KernelTest[] = Array.isArray(tests) ? tests : [tests as KernelTest];
    const tuneParams = Object.fromEntries(Object.entries(config).map(([k, v]) => [k, [v]]));
    const reading = await this.readIn({ tuneParams, ...(options.blockSizeNames && { blockSizeNames: options.blockSizeNames }), ...(options.compilerOptions && { compilerOptions: options.compilerOptions }) });
    const smallest = all.map((t) => ({ test: t, ...t.resolve(reading.signature) })).sort((a, b) => testBytes(a.data) - testBytes(b.data))[0];
    if (!smallest) throw new RangeError('sanitize() needs a test to take its inputs from');
    const cleanups: (() => Promise<unknown> | void)[] = [];
    try {
      const backend = (await backendsFor(options, cleanups))[0]!;
      if (!canSanitize(backend)) return { status: 'unavailable', config, reason: 'no-backend', message: 'this backend runs no kernel under compute-sanitizer (it replays recorded results, or stands in for a GPU): nothing was checked', elapsedMs: elapsedMs() };
      const device = await backend.describe();
      const toolkit = findCudaToolkit(device.nvrtcLibrary ? { nvrtcLibrary: device.nvrtcLibrary } : {});
      const own = await this.sanitizeSubject(config, options, device, toolkit);
      const full: SanitizeInput = { data: smallest.data, problemSize: smallest.problemSize, reduced: {} };
      const small = smallest.data.kind === 'spec' ? smallerInput(smallest.test, reading.signature, full, own, config) : undefined;
      const run = (subject: SanitizeSubject, input: SanitizeInput, which: readonly SanitizerTool[]) =>
        checkLaunch(backend, subject, input, { tools: which, timeoutMs: leftMs(), ...(options.signal && { signal: options.signal }) });
      const first = await run(own, small ?? full, tools);
      const verdict = (checked: CheckedLaunch, more: VerdictExtras = {}) => verdictOf(checked, { config, textOf: own.textOf, elapsedMs: elapsedMs(), limitMs }, more);
      if (first.run.status !== 'hazards' || !small) return verdict(first);
      const flagged = [...new Set(first.run.findings.map((f) => f.tool))];
      const reduction = describeReduction(first.launch);
      if (options.oracle) {
        const reference = await run(await this.referenceSubject(options.oracle, config, options, device, toolkit), small, flagged);
        if (reference.run.status === 'clean') return verdict(first, { note: `found on a reduced problem (${reduction}), on which the reference kernel runs clean` });
      }
      const confirmed = await run(own, full, flagged);
      const toolMs = sumToolMs(first.run, confirmed.run);
      switch (confirmed.run.status) {
        case 'hazards':
          return verdict(confirmed, { toolMs, note: `reported on a reduced problem (${reduction}) and confirmed on the test's own` });
        case 'clean':
          return verdict(confirmed, { toolMs, tools: [...tools], note: `a reduced problem (${reduction}) reported ${first.run.findings.length} finding(s) that the test's own problem does not have: the reduction does not fit the kernel` });
        case 'timed_out':
          return verdict(confirmed, { toolMs, unconfirmed: first.run.findings });
        default:
          return verdict(confirmed);
      }
    } catch (e) {
      if (options.signal?.aborted) throw e;
      return { status: 'unavailable', config, reason: 'failed', message: e instanceof Error ? e.message : String(e), elapsedMs: elapsedMs() };
    } finally {
      for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
    }
  }

  /** What a sanitizer run of this kernel needs: its programs (line information added), its geometry, its files' text. */
  private async sanitizeSubject(config: Config, launchOptions: LaunchOptions & { compilerOptions?: readonly string[] }, device: DeviceDescription, toolkit: CudaToolkit | null): Promise<SanitizeSubject> {
    const sources = await this.compileSources(Object.keys(config), toolkit);
    // The name every program of the file gives it in its `#line 1`, which compute-sanitizer's frames repeat.
    const main = this.info.filePath !== undefined ? resolvePath(this.info.filePath) : (this.info.fileName ?? `${this.name}.cu`);
    const read = this.info.readFile ?? readFromDisk;
    return {
      nameExpression: this.nameExpression,
      programs: candidatePrograms(sources, this.info.fileName ?? `${this.name}.cu`, device.compilers),
      config,
      launchOptions,
      compilerOptions: [...(launchOptions.compilerOptions ?? []), '-lineinfo'],
      textOf: (file) => {
        if (sameFile(file, main)) return this.code;
        const header = sources.localHeaders.find((h) => sameFile(file, h));
        return header === undefined ? undefined : read(header);
      },
    };
  }

  /** The reference kernel of `oracle` as a sanitizer run compiles it, at its own configuration (default `config`). */
  private async referenceSubject(oracle: NonNullable<RunOptions['oracle']>, config: Config, options: RunOptions, device: DeviceDescription, toolkit: CudaToolkit | null): Promise<SanitizeSubject> {
    const reference = await TunableKernel.create(oracle.code, {
      kernelName: oracle.kernelName ?? this.name,
      fileName: oracle.filePath ? basename(oracle.filePath) : `${oracle.kernelName ?? this.name}.reference.cu`,
      ...(oracle.filePath && { filePath: oracle.filePath }),
      ...(this.info.includePaths && { includePaths: this.info.includePaths }),
    });
    return reference.sanitizeSubject(oracle.config ?? config, { ...oracle.launch, ...(options.compilerOptions && { compilerOptions: options.compilerOptions }) }, device, toolkit);
  }

  /**
   * The configuration tune() takes as this kernel's own (its reference and the baseline), found without a GPU, for a
   * search replayed from a cache: `referenceConfig`, else the first configuration of the space (no device limits known)
   * with the values the file itself gives the parameters. Undefined when no configuration satisfies the restrictions.
   */
  async ownConfiguration(tuneParams: TuneParams, restrictions: readonly string[], options: Pick<TuneOptions, 'referenceConfig' | 'blockSizeNames'> = {}): Promise<Config | undefined> {
    if (options.referenceConfig) return options.referenceConfig;
    const space = new SearchSpace(tuneParams, restrictions, options.blockSizeNames ? { blockSizeNames: options.blockSizeNames } : {});
    if (space.size === 0) return undefined;
    const sources = await this.compileSources(Object.keys(tuneParams), null);
    return withFileValues(space.config(0), sources.fileValues);
  }

  private compileSources(tunableNames: readonly string[], toolkit: CudaToolkit | null): Promise<CompileSources> {
    return compileSources(this.code, {
      ...(this.info.filePath !== undefined && { filePath: this.info.filePath }),
      fileName: this.info.fileName ?? `${this.name}.cu`,
      ...(this.info.includePaths && { includePaths: this.info.includePaths }),
      ...(this.info.readFile && { readFile: this.info.readFile }),
      tunableNames,
      toolkit,
    });
  }

  /** The reference kernel's median time on the test (a few launches) on one GPU: what the launch time limit scales with. */
  private async timeReference(on: { backend: TuningBackend; test: PreparedTest; oracle: BuiltKernel }, launch: Launch, timeoutMs: number): Promise<number> {
    const { samplesMs } = await on.backend.timedLaunches(on.oracle, launch, on.test, 0, { warmup: 1, count: REFERENCE_LAUNCHES, flushL2: false, resetBeforeEach: true, idleBeforeEach: false, compare: false, timeoutMs });
    return median(samplesMs);
  }
}

/** What reading the file for a space gives: the kernel's signature and the __constant__ symbols the file declares. */
interface SpaceReading {
  signature: KernelSignature;
  symbols: ReadonlyMap<string, ConstantSymbol>;
}

/** The programs, each to have these __constant__ symbols filled before every run. */
function withConstantSymbols<T extends { programs: KernelProgram[] }>(candidates: T, symbols: readonly string[]): T {
  return symbols.length === 0 ? candidates : { ...candidates, programs: candidates.programs.map((p) => ({ ...p, constantSymbols: symbols })) };
}

interface CompiledOracle {
  compiled: CompiledKernel;
  launch: Launch;
  config: Config;
  /** The program the configurations of the kernel under test compile. */
  candidateProgram: KernelProgram;
  compilerNote?: string;
}

/** A kernel as a sanitizer run compiles and launches it (TunableKernel.sanitize). */
interface SanitizeSubject {
  nameExpression: string;
  programs: { programs: KernelProgram[]; skipped?: string };
  config: Config;
  launchOptions: LaunchOptions;
  compilerOptions: readonly string[];
  /** The text of a file the kernel was compiled from, by the name its `#line` gives it; undefined for any other file. */
  textOf: (file: string) => string | undefined;
}

/** The data a sanitizer run launches on, and the scalars made smaller than the test's. */
interface SanitizeInput {
  data: TestData;
  problemSize: ProblemSizeSpec;
  reduced: SanitizedLaunch['reduced'];
}

type SanitizingBackend = TuningBackend & Required<Pick<TuningBackend, 'sanitize'>>;

function canSanitize(backend: TuningBackend): backend is SanitizingBackend {
  return backend.sanitize !== undefined;
}

interface CheckedLaunch {
  run: SanitizerRun;
  launch: SanitizedLaunch;
}

function readFromDisk(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Whether a file a report names is one the tuner compiled under `name` (its `#line`): as named, or as the tool wrote it
 * relative to a directory of its own (a name without a directory, under the directory it ran in).
 */
function sameFile(reported: string, name: string): boolean {
  return reported === name || resolvePath(reported) === resolvePath(name) || (!isAbsolute(name) && reported.endsWith(`/${name}`));
}

/** Bytes of a test's buffers: how its size is compared with other tests'. */
function testBytes(data: TestData): number {
  return data.kind === 'spec' ? data.test.totalBytes : data.arguments.reduce((n, a) => n + (a.kind === 'buffer' ? a.data.byteLength : 0), 0);
}

function geometryOf(problemSize: ProblemSizeSpec, subject: Pick<SanitizeSubject, 'config' | 'launchOptions'>, scalars: Record<string, number>): Geometry {
  return new Geometry({ problemSize, ...launchSpec(subject.launchOptions) }, { paramNames: Object.keys(subject.config), scalarNames: Object.keys(scalars) });
}

/** The test made small for the subject's configuration (run/small-problem.ts), resolved; undefined when it cannot shrink. */
function smallerInput(test: KernelTest, signature: KernelSignature, full: SanitizeInput, subject: SanitizeSubject, config: Config): SanitizeInput | undefined {
  if (full.data.kind !== 'spec' || test.data.kind !== 'spec') return undefined;
  // The spec resolved into full.data, so it is a valid one.
  const smaller = smallerProblem(test.data.spec as TestSpecInput, full.data.test, geometryOf(full.problemSize, subject, full.data.test.scalars), config);
  if (!smaller) return undefined;
  const { data, problemSize } = KernelTest.fromSpec(smaller.spec).resolve(signature);
  return { data, problemSize, reduced: smaller.reduced };
}

/** Builds the subject for the input's launch (line information on) and runs it under the tools. */
async function checkLaunch(backend: SanitizingBackend, subject: SanitizeSubject, input: SanitizeInput, options: SanitizeRunOptions): Promise<CheckedLaunch> {
  const scalars = scalarsOf(input.data);
  const geometry = geometryOf(input.problemSize, subject, scalars);
  const g = geometry.launch(subject.config, scalars);
  const request = { nameExpression: subject.nameExpression, defines: defines(subject.config, g, geometry.blockSizeNames), compilerOptions: subject.compilerOptions };
  const { built } = await buildWithFallback(subject.programs, (program) => compileExplained(backend, { ...program, ...request }, options.signal));
  const launch: Launch = { grid: g.grid, block: g.block, sharedMemBytes: g.sharedMemBytes };
  const run = await backend.sanitize(built, launch, input.data, options);
  return { run, launch: { grid: g.grid, block: g.block, reduced: input.reduced } };
}

function sumToolMs(...runs: SanitizerRun[]): Partial<Record<SanitizerTool, number>> {
  const sum: Partial<Record<SanitizerTool, number>> = {};
  for (const run of runs) if (run.status !== 'unavailable') for (const [tool, ms] of Object.entries(run.toolMs) as [SanitizerTool, number][]) sum[tool] = (sum[tool] ?? 0) + ms;
  return sum;
}

/** What a verdict says beyond its run: a note, the tools' times of all its runs, the tools it covers, findings not confirmed. */
interface VerdictExtras {
  note?: string;
  toolMs?: Partial<Record<SanitizerTool, number>>;
  tools?: SanitizerTool[];
  unconfirmed?: readonly SanitizerFinding[];
}

/**
 * A sanitizer run as the verdict on a configuration, its findings located in the subject's files; `limitMs` is the
 * whole check's time limit (a run gets what is left of it).
 */
function verdictOf(
  checked: CheckedLaunch,
  { config, textOf, elapsedMs, limitMs }: { config: Config; textOf: SanitizeSubject['textOf']; elapsedMs: number; limitMs: number },
  more: VerdictExtras,
): SanitizerVerdict {
  const { run, launch } = checked;
  if (run.status === 'unavailable') return { status: 'unavailable', config, reason: run.reason, message: run.message, elapsedMs };
  const ran = { config, launch, sanitizer: run.sanitizer, toolMs: more.toolMs ?? run.toolMs, elapsedMs, ...(more.note && { note: more.note }) };
  switch (run.status) {
    case 'clean':
      return { status: 'clean', tools: more.tools ?? run.tools, ...ran };
    case 'hazards':
      return { status: 'hazards', findings: locateFindings(run.findings, textOf), tools: run.tools, ...ran };
    case 'timed_out':
      return { status: 'timed_out', tool: run.tool, limitMs, clean: run.clean, ...ran, ...(more.unconfirmed && { unconfirmed: locateFindings(more.unconfirmed, textOf) }) };
  }
}

/** The profile of the best configuration, or why it failed (the search's results stand either way); an abort is thrown. */
async function profileOf(evaluator: Evaluator, config: Config, timeoutMs: number, signal: AbortSignal | undefined): Promise<Pick<TuneResult, 'profile' | 'profileError'>> {
  try {
    const profile = await evaluator.profile(config, { timeoutMs, ...(signal && { signal }) });
    return profile ? { profile } : {};
  } catch (e) {
    if (signal?.aborted) throw e;
    return { profileError: e instanceof Error ? e.message : String(e) };
  }
}

/** The backends a run uses (see backendsOf); those it opened are closed by the run's clean-up. */
async function backendsFor(options: RunOptions, cleanups: (() => Promise<unknown> | void)[]): Promise<readonly TuningBackend[]> {
  const { backends, opened } = await backendsOf(options);
  if (opened) cleanups.push(() => Promise.all(backends.map((b) => b.dispose())));
  return backends;
}

/** Limit of one launch before the reference kernel has been timed (the reference itself, on the test data). */
const UNMEASURED_LAUNCH_TIMEOUT_MS = 10_000;
/** Timed launches of the reference kernel. */
const REFERENCE_LAUNCHES = 5;
/**
 * The time limit of one launch of a configuration: a hundred times the reference kernel's time, and at least a second
 * (a configuration much slower than that has lost anyway; one that hangs costs about a second, not ten).
 */
export function scaledLaunchTimeoutMs(referenceMs: number): number {
  return Math.max(1000, Math.ceil(100 * referenceMs));
}

/** The energy window of TuneOptions.energy: the GPU layer's default (a second, as Kernel Tuner's), at least its minimum. */
function energyWindow(energy: TuneOptions['energy']): { windowMs: number } {
  const windowMs = typeof energy === 'object' ? (energy.windowMs ?? ENERGY_WINDOW_MS) : ENERGY_WINDOW_MS;
  if (!(Number.isInteger(windowMs) && windowMs >= MIN_ENERGY_WINDOW_MS)) {
    throw new RangeError(`energy.windowMs must be an integer of at least ${MIN_ENERGY_WINDOW_MS} ms (NVML's energy counter moves every 20-100 ms), got ${windowMs}`);
  }
  return { windowMs };
}

/** The first valid configuration with the values the file itself gives the tunable parameters (`#define BLOCK 256`). */
function withFileValues(config: Config, fileValues: Record<string, string>): Config {
  const out: Config = { ...config };
  for (const [name, text] of Object.entries(fileValues)) out[name] = parseDefineValue(text);
  return out;
}

/** `256`, `256u`, `(16)`, `1.5f` as numbers; anything else as the text it is (injected again as it was written). */
export function parseDefineValue(text: string): ParamValue {
  const t = text.trim().replace(/^\((.*)\)$/, '$1').trim();
  if (/^[+-]?\d+[uUlL]*$/.test(t)) return Number(t.replace(/[uUlL]+$/, ''));
  if (/^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?[fFlL]?$/.test(t)) return Number(t.replace(/[fFlL]$/, ''));
  if (t === 'true' || t === 'false') return t === 'true';
  return text.trim();
}

/** The kernel with what its parameters' typedef'd types stand for (`floatX` → `__nv_bfloat16`), for test specs. */
async function withTypeAliases(kernel: KernelSignature, views: readonly Preprocessed[]): Promise<KernelSignature> {
  const aliases = await typeAliasesOf(views);
  if (aliases.size === 0) return kernel;
  const parameters = kernel.parameters.map((p) => {
    const aliasOf = aliases.get(p.baseType.replace(/^(std::|::)/, ''));
    return aliasOf ? { ...p, aliasOf: [...aliasOf] } : p;
  });
  return { ...kernel, parameters };
}

/** Where the file's headers are and what the compile defines, for reading it (space-view.ts). */
function sourceContext(info: TunableKernelInfo, space: KernelSpace | undefined): SourceContext {
  return {
    ...(info.filePath !== undefined && { filePath: info.filePath }),
    ...(info.includePaths && { includePaths: info.includePaths }),
    ...(info.readFile && { readFile: info.readFile }),
    ...(space?.blockSizeNames && { blockSizeNames: space.blockSizeNames }),
    defines: definesOf(space?.compilerOptions ?? []),
  };
}

/** The macros of -DNAME and -DNAME=VALUE (also `-D NAME`) among compiler options. */
export function definesOf(options: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  options.forEach((o, i) => {
    const text = o === '-D' ? options[i + 1] : o.startsWith('-D') ? o.slice(2) : undefined;
    const m = text === undefined ? null : /^([A-Za-z_]\w*)(?:=(.*))?$/s.exec(text);
    if (m) out[m[1]!] = m[2] ?? '1';
  });
  return out;
}

function spaceKey(space: KernelSpace): string {
  return JSON.stringify([space.tuneParams, space.blockSizeNames ?? null, space.compilerOptions ?? []]);
}

function launchSpec(o: LaunchOptions) {
  return {
    ...(o.sharedMemBytes !== undefined && { sharedMemBytes: o.sharedMemBytes }),
    ...(o.gridDivX !== undefined && { gridDivX: o.gridDivX }),
    ...(o.gridDivY !== undefined && { gridDivY: o.gridDivY }),
    ...(o.gridDivZ !== undefined && { gridDivZ: o.gridDivZ }),
    ...(o.blockSizeNames && { blockSizeNames: o.blockSizeNames }),
  };
}

function scalarsOf(data: TestData): Record<string, number> {
  if (data.kind === 'spec') return data.test.scalars;
  return Object.fromEntries(data.arguments.filter((a) => a.kind === 'scalar').map((a) => [a.name, Number(a.value)]));
}

/** test(): a failed configuration as the typed error of its kind. */
function throwForFailure(r: ConfigResult): void {
  const message = r.error?.message ?? r.status;
  switch (r.status) {
    case 'ok':
      return;
    case 'wrong_result':
    case 'inconsistent_timing':
      throw new FailedTestsError(message, r);
    case 'compile_error':
      throw new CompileError(message, { code: 'NVRTC_ERROR_COMPILATION', explanation: 'The kernel does not compile with these parameters.', log: r.error?.log ?? '' });
    case 'timeout':
      throw new KernelTimeoutError(message, { code: 'KERNEL_TIMEOUT', explanation: 'The kernel did not finish within the time limit.' });
    case 'fault':
      throw new KernelFaultError(message, { code: 'KERNEL_FAULT', explanation: 'The kernel faulted (illegal address or similar).' });
    default:
      throw new LaunchError(message, { code: 'LAUNCH_FAILED', explanation: 'The configuration cannot be launched on this device.' });
  }
}


export { describeCheckFailure };
export { KernelTest };
