/**
 * What every node of a session needs besides the graph state: the GPU boundary, the user's tests, the settings of the
 * run. It travels in LangGraph's run context (`config.context.engine`), so it reaches subgraphs and Send tasks without
 * being checkpointed: the state holds only plain data, and a resumed session gets a fresh context (a new backend).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LangGraphRunnableConfig, RetryPolicy as NodeRetryPolicy } from '@langchain/langgraph';
import type { DeviceDescription, TuningBackend } from '../tuner/run/backend';
import type { LaunchCount } from '../tuner/run/launch-count';
import type { DeviceSpeedLimits } from '../tuner/run/speed-of-light';
import type { KernelTest } from '../tuner/tunable-kernel';
import type { Objective } from '../tuner/types';
import type { StructuredOutputType } from './llm/structured';
import { GpuPool, type GpuShare } from './resources/gpu-pool';
import { ModelCalls, type ModelUsage, type Prices, type SessionBudget } from './resources/model-calls';

export interface EngineSettings {
  structuredOutputType: StructuredOutputType;
  compilerOptions: readonly string[];
  /** Seconds; the budget of one configuration (see tuningTimeoutMs). */
  timePerTestS: number;
  /** Seconds one launch may take; undefined: scaled to the reference kernel's time, at least 1 s (the tuner's default). */
  launchTimeoutS?: number;
  /** Percent of improvement in the objective a candidate needs to be accepted. */
  performanceThreshold: number;
  /** What every tuning run optimises and every step must improve (Kernel Tuner's objective); time unless chosen. */
  objective: Objective;
  /** Kernel Tuner's metrics, computed for every configuration (the objective may be one of them). */
  metrics?: Readonly<Record<string, string>>;
  /** Measure energy and power with NVML in every tuning run (read only); implied by an objective that needs them. */
  energy: boolean;
  /** Interrupt after planning, until the plan is approved (resumed with a Command). */
  approvePlan: boolean;
  /** Timed launches per configuration of every candidate's tuning: a fixed count, or an adaptive series. */
  iterations: LaunchCount;
  /** Requests to the model at once (where the provider allows several). Default 1. */
  llmConcurrency?: number;
  /** Limits of what the session may spend (model calls, tokens, cost, wall time); none by default. */
  budget?: SessionBudget;
  /** The model's prices, USD per million input and output tokens: the cost of every call and of the session. */
  prices?: Prices;
  /** What the session spent before this run, when it is resumed (so that its budgets hold across runs). */
  spent?: { usage: ModelUsage; wallS: number };
  /**
   * Run the best configuration of every candidate that would be accepted once under compute-sanitizer before it is
   * (a hazard rejects it and is told to the model); default on.
   */
  sanitize: boolean;
  /**
   * The session's own cancellation. Work that outlives one run of a node (an evolutionary session's children in
   * flight across a checkpoint) follows it: the signal LangGraph gives a node stops following it once the node ends.
   */
  signal?: AbortSignal;
}

export class EngineContext {
  private readonly gpus: GpuPool<TuningBackend>;
  private readonly gpuPriority = new AsyncLocalStorage<number>();
  /** Every request of the session to its model: slots, budgets, usage (llm-call.ts goes through it). */
  readonly modelCalls: ModelCalls;
  /** The device's bandwidth and FP32 limits, once measured for this run (null where they could not be). */
  speedLimits: DeviceSpeedLimits | null = null;

  constructor(
    /** One backend per GPU (all of one model): every tuning run spreads its configurations over them. */
    readonly backends: readonly TuningBackend[],
    readonly device: DeviceDescription,
    /** Tests the user gave (addTest / options.tests); the state refers to them by index. */
    readonly userTests: readonly KernelTest[],
    readonly settings: EngineSettings,
  ) {
    this.gpus = new GpuPool(backends);
    this.modelCalls = new ModelCalls({
      ...(settings.llmConcurrency !== undefined && { inFlight: settings.llmConcurrency }),
      ...(settings.budget && { budget: settings.budget }),
      ...(settings.prices && { prices: settings.prices }),
      ...(settings.spent && { spent: settings.spent }),
    });
  }

  /**
   * Runs GPU work alone on the GPUs of the share: candidates are generated side by side, but timings taken while another
   * candidate runs on the same GPU would be worthless. 'all': one run on every GPU (its configurations spread over
   * them); 'one': any single GPU, so that several runs go side by side on a machine with several.
   */
  onGpus<T>(share: GpuShare, work: (backends: readonly TuningBackend[]) => Promise<T>): Promise<T> {
    return this.gpus.run(share, work, this.gpuPriority.getStore());
  }

  /** Runs `work` with its GPU work served before that of a later priority (a lower number) or none: GpuPool. */
  withGpuPriority<T>(priority: number, work: () => Promise<T>): Promise<T> {
    return this.gpuPriority.run(priority, work);
  }

  /** GPU-seconds this run's tuning held the GPUs (compiles, checks, timings, profiles of the candidates). */
  get gpuBusyS(): number {
    return this.gpus.busyS;
  }

  /** GPU-seconds the work of this priority held the GPUs (see withGpuPriority). */
  gpuBusySOf(priority: number): number {
    return this.gpus.busySOf(priority);
  }

  /** GPU work on every GPU of the session (see onGpus). */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.onGpus('all', () => work());
  }
}

export function engineContext(config: LangGraphRunnableConfig | undefined): EngineContext {
  const engine = (config?.context as { engine?: unknown } | undefined)?.engine;
  if (!(engine instanceof EngineContext)) {
    throw new TypeError('this graph runs inside a tuning session: pass { context: { engine } } (LLMKernelTransformer does)');
  }
  return engine;
}

/** How a subgraph's nodes that call the model are built. */
export interface GraphOptions {
  /** LangGraph's node retry for transient transport failures (429, 5xx, broken connections); default transportRetryPolicy. */
  transportRetryPolicy?: NodeRetryPolicy;
}
