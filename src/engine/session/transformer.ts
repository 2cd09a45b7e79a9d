/**
 * The seed's LLMKernelTransformer in TypeScript: give it a kernel and a chat model, and it analyses the kernel,
 * generates tests, measures the baseline and lets a tuning strategy rewrite the kernel with tunable parameters, tuning
 * every candidate on the GPU. `stream()` is the session as typed events (the UI and the CLI consume only that);
 * `makeKernelTunable()` runs it to the end and returns the seed's result.
 *
 * Sessions are resumable: every step is checkpointed (`checkpointer`, e.g. a FileCheckpointSaver, under `threadId`), so a
 * new transformer on the same checkpoint directory and thread continues a session that crashed, was cancelled, or
 * waits for plan approval (`stream({ approval })`).
 */
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Command, MemorySaver, type BaseCheckpointSaver, type LangGraphRunnableConfig, type RetryPolicy as NodeRetryPolicy } from '@langchain/langgraph';
import { type DeviceDescription, type TuningBackend } from '../../tuner/run/backend';
import { backendsOf } from '../../tuner/run/gpu-backend';
import { checkOneModel, type GpuSelection } from '../../tuner/run/gpu-selection';
import { TunableKernel, type KernelTest } from '../../tuner/tunable-kernel';
import { ResultMetrics } from '../../tuner/run/metrics';
import { resolveLaunchCount, type AdaptiveLaunches, type LaunchCount } from '../../tuner/run/launch-count';
import type { Config, Objective } from '../../tuner/types';
import { EngineContext, type GraphOptions } from '../context';
import { ModelCalls, type Prices, type SessionBudget } from '../resources/model-calls';
import { describeEvent, makeEvent, type EventLevel, type EventOf, type TuningEvent } from '../progress/events';
import { defaultRetryPolicy, type Attempt } from '../candidate/feedback';
import { isAbortError } from '../llm/errors';
import { compileThinkingPattern, DEFAULT_THINKING_PATTERN, withThinkingStripped } from '../llm/thinking';
import type { StructuredOutputType } from '../llm/structured';
import type { RetryPolicy } from '../llm/retry';
import type { BranchOptions } from './session-settings';
import { copyLineage, EditedKernelError, findBranchPoint, measureEditedKernel } from './branch';
import { endedBy, eventsWhile, limitsEvent, streamSession, type SessionEnd } from './session';
import { createSessionGraph } from './graph';
import { sessionSoFar } from './stopped-early';
import { finishedEvent } from './graph/nodes/finish';
import type { TestRef, TuningStateUpdate, TuningStateValue } from '../state';
import { AutonomousTuningStrategy } from '../strategies/autonomous';
import type { PlanApproval } from '../strategies/approval';
import type { TuningGraph } from '../strategies/base';
import type { TestingGraph } from '../testing/base';
import { NaiveLLMTester } from '../testing/naive';
import { PerformanceTracker } from '../candidate/tracker';

export type Verbosity = 'none' | 'debug' | 'info' | 'warning' | 'all';

export interface LLMKernelTransformerOptions {
  /** Any LangChain chat model (see createChatModel for one from plain config). */
  llm: BaseChatModel;
  /** The kernel to tune; required when the source has several. */
  kernelName?: string;
  /** Shown in diffs and compiler messages; default the base name of filePath, else "<kernel>.cu". */
  fileName?: string;
  /**
   * The file's absolute path, when it is on disk: its directory is searched for its quoted #includes, and compiler
   * logs name it. The file may hold its host program; the model sees the kernel's device unit only.
   */
  filePath?: string;
  /** More directories searched for #include, like -I. */
  includePaths?: string[];
  tuningStrategy?: { createGraph(llm: BaseChatModel, options?: GraphOptions): TuningGraph };
  tests?: KernelTest[];
  /** Default [new NaiveLLMTester()]; [] to use only the given tests. */
  testingStrategies?: { createGraph(llm: BaseChatModel, options?: GraphOptions): TestingGraph }[];
  /** Content retries of the kernel analysis; default defaultRetryPolicy(). */
  retryPolicy?: RetryPolicy<Attempt>;
  /** LangGraph's retry of nodes that call the model, for transient transport failures; default transportRetryPolicy. */
  transportRetryPolicy?: NodeRetryPolicy;
  /** CUDA device of the default backend. Default 0. */
  device?: number;
  /** The GPUs of the default backends (one worker each, all of one model): all, a list, or the first N. Default: `device`. */
  gpus?: GpuSelection;
  /** Where kernels run: a backend, or one per GPU; default a GpuBackend per GPU of `gpus`, closed at the end of each run. */
  backend?: TuningBackend | readonly TuningBackend[];
  /** Options for every compile (the seed's clang_args), e.g. ["-use_fast_math"]. */
  compilerOptions?: string[];
  /** Expected compile target ("sm_90"); kernels are compiled for the device they run on, so a mismatch is an error. */
  gpuArch?: string;
  /** Seconds per configuration; tuning time limits scale with the number of configurations. Default 15. */
  timePerTest?: number;
  /**
   * Timed launches per configuration (the median is compared): a fixed count, or an adaptive series (`min`, `max`,
   * `precision`, each defaulted). Default: adaptive, 7 to 32 launches until the median is known within ±1 %.
   */
  iterations?: number | Partial<AdaptiveLaunches>;
  /** Seconds one launch may take. Default: 100x the original kernel's measured time, at least 1 s. */
  launchTimeout?: number;
  stripThinkingOutput?: boolean;
  /** Default <think>...</think>. */
  thinkingPattern?: string | RegExp;
  structuredOutputType?: StructuredOutputType;
  /** Percent a candidate must improve on the best so far (in the objective) to be accepted. Default 1.0. */
  performanceThreshold?: number;
  /**
   * What every tuning run optimises and every step must improve (Kernel Tuner's objective): time (default), energy,
   * edp, or a metric of `metrics`.
   */
  objective?: string;
  /** Kernel Tuner's objective_higher_is_better: true for a metric such as GFLOP/s. */
  objectiveHigherIsBetter?: boolean;
  /** Kernel Tuner's metrics, computed for every configuration: name → expression, in order. */
  metrics?: Record<string, string>;
  /** Measure energy and power with NVML (read only) in every tuning run; implied by an objective that needs them. */
  energy?: boolean;
  /**
   * A finished evolutionary session, continued (`threadId`), goes on evolving its population within the budget given
   * now, instead of only reporting its result again.
   */
  evolveFurther?: boolean;
  /** Requests to the model at once, where the provider allows several. Default 4. */
  llmConcurrency?: number;
  /** What the session may spend: model calls, tokens, cost (with `prices`), wall time; the first one reached stops it, and says which. */
  budget?: SessionBudget;
  /** The model's prices, USD per million input and output tokens: the cost of every call and of the session. */
  prices?: Prices;
  /**
   * Run the best configuration of every candidate that would be accepted once under compute-sanitizer (racecheck,
   * memcheck, synccheck, initcheck) before it is; a hazard rejects the candidate and is told to the model. Default true.
   */
  sanitize?: boolean;
  /** Which events makeKernelTunable logs. Default 'info'. */
  verbosity?: Verbosity;
  /** Where makeKernelTunable's log lines go; default stderr. */
  log?: (line: string, level: EventLevel) => void;
  signal?: AbortSignal;
  /** Default an in-memory saver (the session can be resumed by this transformer only). */
  checkpointer?: BaseCheckpointSaver;
  /** The session's id in the checkpointer; default a new UUID. */
  threadId?: string;
  /** Pause after planning until the plan is approved: stream({ approval }). */
  approvePlan?: boolean;
  /**
   * Start this session (`threadId`, new) as a branch of another one in the same checkpointer: from the point where its
   * step `fromStepId` started, with the kernel as it was there or, given `code` (the whole file), as the user edited
   * it. Both sessions keep their results. Ignored once the branch has started (then `stream()` resumes it).
   */
  branch?: BranchOptions;
}

export interface TunableResult {
  /** The tuned kernel, tunable: its parameters are preprocessor names. */
  kernel: TunableKernel;
  bestParams: Config;
  tracker: PerformanceTracker;
  /** The kernel with the best values defined and its launch geometry. */
  final: EventOf<'session.finished'>;
}

export interface StreamOptions {
  /** Resume a session waiting for plan approval with this plan. */
  approval?: PlanApproval;
}

const LEVELS: Record<Verbosity, readonly EventLevel[]> = {
  none: [],
  warning: ['warning', 'error'],
  info: ['info', 'warning', 'error'],
  debug: ['debug', 'info', 'warning', 'error'],
  all: ['debug', 'info', 'warning', 'error'],
};

export class LLMKernelTransformer {
  readonly threadId: string;
  /** What the session optimises. */
  readonly objective: Objective;
  /** Timed launches per configuration of every tuning run. */
  private readonly launches: LaunchCount;
  private readonly llm: BaseChatModel;
  private readonly tests: KernelTest[];
  private readonly checkpointer: BaseCheckpointSaver;
  private graph: ReturnType<typeof createSessionGraph> | undefined;

  constructor(
    readonly kernelCode: string,
    private readonly options: LLMKernelTransformerOptions,
  ) {
    const threshold = options.performanceThreshold ?? 1.0;
    if (!Number.isFinite(threshold) || threshold < 0) throw new RangeError(`performanceThreshold must be a number >= 0 (percent), got ${threshold}`);
    this.launches = resolveLaunchCount(options.iterations);
    if (options.launchTimeout !== undefined && !(Number.isFinite(options.launchTimeout) && options.launchTimeout > 0)) {
      throw new RangeError(`launchTimeout must be a positive number of seconds, got ${options.launchTimeout}`);
    }
    // Budgets, prices and the requests in flight are checked now, before any GPU or model is asked for anything.
    new ModelCalls({ ...(options.llmConcurrency !== undefined && { inFlight: options.llmConcurrency }), ...(options.budget && { budget: options.budget }), ...(options.prices && { prices: options.prices }) });
    // The objective and the metrics are checked now, with flops and bytes taken as known (the tests will say how many).
    this.objective = ResultMetrics.create(
      { ...(options.metrics && { metrics: options.metrics }), ...(options.objective !== undefined && { objective: options.objective }), objectiveHigherIsBetter: options.objectiveHigherIsBetter ?? false, work: { flops: 1, bytes: 1 } },
      [],
    ).objective;
    const timePerTest = options.timePerTest ?? 15;
    if (!Number.isFinite(timePerTest) || timePerTest <= 0) throw new RangeError(`timePerTest must be a positive number of seconds, got ${timePerTest}`);
    this.llm = options.stripThinkingOutput
      ? withThinkingStripped(options.llm, options.thinkingPattern === undefined ? DEFAULT_THINKING_PATTERN : compileThinkingPattern(options.thinkingPattern))
      : options.llm;
    this.tests = [...(options.tests ?? [])];
    this.checkpointer = options.checkpointer ?? new MemorySaver();
    this.threadId = options.threadId ?? randomUUID();
  }

  /** A test used to check every candidate (before the session starts). */
  addTest(test: KernelTest): void {
    this.tests.push(test);
  }

  /**
   * The session as events. Starts it, or continues it when the checkpointer holds an unfinished session under
   * `threadId` (after a crash, a cancel, or with `approval` when it waits for one). The returned generator's value is
   * how the run ended.
   */
  async *stream(streamOptions: StreamOptions = {}): AsyncGenerator<TuningEvent, SessionEnd> {
    const o = this.options;
    let backends: readonly TuningBackend[];
    try {
      ({ backends } = await backendsOf(o));
    } catch (e) {
      return yield* endedBy(e, o.signal);
    }
    try {
      const kernel = await TunableKernel.create(this.kernelCode, {
        ...(o.kernelName !== undefined && { kernelName: o.kernelName }),
        fileName: this.fileName,
        ...(o.filePath !== undefined && { filePath: o.filePath }),
        ...(o.includePaths && { includePaths: o.includePaths }),
      });
      const devices = await Promise.all(backends.map((b) => b.describe()));
      checkOneModel(devices);
      const device = devices[0]!;
      if (o.gpuArch !== undefined && o.gpuArch !== device.arch) {
        throw new RangeError(`gpuArch is ${o.gpuArch}, but ${device.name} is ${device.arch}: kernels are compiled for the device they run on; leave gpuArch out or pick that device`);
      }
      const engine = new EngineContext(backends, device, this.tests, {
        structuredOutputType: o.structuredOutputType ?? 'default',
        compilerOptions: o.compilerOptions ?? [],
        timePerTestS: o.timePerTest ?? 15,
        ...(o.launchTimeout !== undefined && { launchTimeoutS: o.launchTimeout }),
        performanceThreshold: o.performanceThreshold ?? 1.0,
        objective: this.objective,
        ...(o.metrics && { metrics: o.metrics }),
        energy: o.energy ?? false,
        approvePlan: o.approvePlan ?? false,
        iterations: this.launches,
        llmConcurrency: o.llmConcurrency ?? 4,
        ...(o.budget && { budget: o.budget }),
        ...(o.prices && { prices: o.prices }),
        sanitize: o.sanitize ?? true,
        ...(o.signal && { signal: o.signal }),
      });
      const graph = (this.graph ??= this.createGraph());
      const config = { configurable: { thread_id: this.threadId }, context: { engine }, ...(o.signal && { signal: o.signal }), recursionLimit: 10_000, durability: 'sync' as const };
      const snapshot = await graph.getState(config);
      const started = snapshot.values && Object.keys(snapshot.values).length > 0;
      const finished = started && snapshot.next.length === 0;
      const interrupted = snapshot.tasks.some((t) => t.interrupts.length > 0);
      yield this.startedEvent(kernel, device, backends.length, started);
      yield makeEvent({ type: 'graph.described', graphs: await graph.describe() });
      // The device's limits, for the speed of light of every configuration (not for a session that only reports).
      const first = backends[0]!;
      if (first.speedLimits && !finished) {
        const limits = await limitsEvent(first.speedLimits.bind(first));
        if (limits.type === 'device.limits') engine.speedLimits = limits.limits;
        yield limits;
      }
      if (!started && o.branch) {
        yield* this.startBranch(graph, config, o.branch);
        return yield* streamSession(graph, null, config);
      }
      if (streamOptions.approval !== undefined) {
        if (!interrupted) throw new Error(`session ${this.threadId} is not waiting for plan approval`);
        return yield* streamSession(graph, new Command({ resume: streamOptions.approval }), config);
      }
      const population = (snapshot.values as Partial<TuningStateValue>).population;
      if (o.evolveFurther && !started) {
        throw new Error(`session ${this.threadId} has no checkpoint here to evolve further from (an imported session keeps its results, not its population's checkpoints): start a new evolutionary session from its kernel instead`);
      }
      if (o.evolveFurther && finished && !population) throw new Error(`session ${this.threadId} is not an evolutionary session: only a population evolves further`);
      if (finished && o.evolveFurther && population) {
        // As if the baseline had just been measured: the strategy runs again over the population it left.
        await graph.updateState(config, { population: { ...population, stopped: null } }, 'baseline');
        return yield* streamSession(graph, null, config);
      }
      if (finished) {
        yield makeEvent((await finishedEvent(snapshot.values as TuningStateValue)).event);
        return { status: 'finished' };
      }
      return yield* streamSession(graph, started ? null : this.initialState(kernel), config);
    } catch (e) {
      return yield* endedBy(e, o.signal);
    } finally {
      if (!o.backend) await Promise.all(backends.map((b) => b.dispose().catch(() => undefined)));
    }
  }

  /** Runs the session to its end and returns the seed's result; logs events by `verbosity`. */
  async makeKernelTunable(): Promise<TunableResult> {
    const levels = LEVELS[this.options.verbosity ?? 'info'];
    const log = this.options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    let finished: EventOf<'session.finished'> | undefined;
    const events = this.stream();
    let next = await events.next();
    for (; !next.done; next = await events.next()) {
      const event = next.value;
      if (event.type === 'session.finished') finished = event;
      const { level, text } = describeEvent(event);
      if (levels.includes(level)) log(text, level);
    }
    const end = next.value;
    if (end.status === 'failed') throw end.error;
    if (end.status === 'cancelled') throw this.options.signal?.reason ?? new DOMException('the session was cancelled', 'AbortError');
    if (end.status === 'awaiting_approval') {
      throw new Error(`session ${this.threadId} waits for plan approval: drive it with stream() and resume with stream({ approval })`);
    }
    if (!finished) throw new Error('internal: the session ended without a result');
    const kernel = await TunableKernel.create(finished.tunableCode, {
      ...(this.options.kernelName !== undefined && { kernelName: this.options.kernelName }),
      ...(this.fileName !== undefined && { fileName: this.fileName }),
      ...(this.options.filePath !== undefined && { filePath: this.options.filePath }),
      ...(this.options.includePaths && { includePaths: this.options.includePaths }),
    });
    // Where tuning stopped early the strategy's own checkpoint holds the accepted steps.
    const tracker = PerformanceTracker.fromJSON((await sessionSoFar(this.graph!, { configurable: { thread_id: this.threadId } })).state.tracker);
    return { kernel, bestParams: finished.bestParams, tracker, final: finished };
  }

  /**
   * Makes this (new) thread a branch of `branch.parentThreadId` at the start of its step `fromStepId`: the user's kernel,
   * if given, is checked and timed first (nothing is written when it is not usable), then the checkpoints up to that
   * point are copied and the kernel put in place (see branch.ts).
   */
  private async *startBranch(graph: ReturnType<typeof createSessionGraph>, config: LangGraphRunnableConfig, branch: BranchOptions): AsyncGenerator<TuningEvent, void> {
    const point = await findBranchPoint(graph, branch.parentThreadId, branch.fromStepId);
    yield makeEvent({ type: 'session.branched', parentThreadId: branch.parentThreadId, stepId: branch.fromStepId, edited: branch.code !== undefined });
    let update: TuningStateUpdate | undefined;
    if (branch.code !== undefined) {
      const code = branch.code;
      update = yield* eventsWhile((writer) =>
        measureEditedKernel(point.state, code, branch.fromStepId, { ...config, writer }).catch((error: unknown) => {
          if (isAbortError(error, config.signal)) throw error;
          throw new EditedKernelError(`the edited kernel cannot continue the session: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }),
      );
    }
    try {
      await copyLineage(this.checkpointer, { threadId: branch.parentThreadId, ns: '', checkpointId: point.rootCheckpointId }, this.threadId);
      await copyLineage(this.checkpointer, { threadId: branch.parentThreadId, ns: point.tuneNamespace, checkpointId: point.checkpointId }, this.threadId);
      if (update) await graph.updateState({ configurable: { thread_id: this.threadId, checkpoint_ns: point.tuneNamespace, checkpoint_id: point.checkpointId } }, update);
    } catch (error) {
      await this.checkpointer.deleteThread(this.threadId).catch(() => undefined);
      throw error;
    }
  }

  private createGraph() {
    const o = this.options;
    const graphOptions: GraphOptions = o.transportRetryPolicy ? { transportRetryPolicy: o.transportRetryPolicy } : {};
    return createSessionGraph({
      llm: this.llm,
      analysisRetryPolicy: o.retryPolicy ?? defaultRetryPolicy(),
      testingStrategies: o.testingStrategies ?? [new NaiveLLMTester()],
      tuningStrategy: o.tuningStrategy ?? new AutonomousTuningStrategy(),
      graphOptions,
      checkpointer: this.checkpointer,
    });
  }

  private get fileName(): string | undefined {
    return this.options.fileName ?? (this.options.filePath ? basename(this.options.filePath) : undefined);
  }

  private startedEvent(kernel: TunableKernel, device: DeviceDescription, gpus: number, resumed: boolean): TuningEvent {
    return makeEvent({
      type: 'session.started',
      threadId: this.threadId,
      resumed,
      kernel: { name: kernel.name, signature: kernel.signature.signatureText },
      device: { name: device.name, arch: device.arch, computeCapability: device.computeCapability, ...(gpus > 1 && { gpus }) },
      ...(this.objective.name !== 'time' && { objective: this.objective }),
    });
  }

  private initialState(kernel: TunableKernel): TuningStateValue {
    const tests: TestRef[] = this.tests.map((test, i) => {
      const outputs = test.data.kind === 'values' ? [...test.data.outputs].map((index) => kernel.signature.parameters[index]?.name ?? `#${index}`) : [];
      return { id: `user-${i + 1}`, origin: 'user', userIndex: i, problemSize: test.problemSize, outputs, bytes: null, timeMs: null };
    });
    return {
      kernelName: kernel.name,
      fileName: this.options.fileName ?? (this.options.filePath ? basename(this.options.filePath) : `${kernel.name}.cu`),
      filePath: this.options.filePath ?? null,
      includePaths: this.options.includePaths ?? [],
      sharedMemBytes: null,
      originalCode: this.kernelCode,
      code: this.kernelCode,
      analysis: null,
      tests,
      baselineParams: {},
      tuneParams: {},
      restrictions: [],
      gridDivisors: {},
      bestParams: {},
      bestTimeMs: null,
      bestObjective: null,
      tracker: new PerformanceTracker().toJSON(),
      profile: null,
      startedSteps: [],
      population: null,
    };
  }
}
