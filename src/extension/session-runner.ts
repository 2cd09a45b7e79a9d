/**
 * The engine runtime: the entry of dist/engine-runtime.js, loaded by the extension on the first "Tune this kernel".
 * The ONLY module of the extension that depends on the engine's transformer and streaming API (src/engine/transformer.ts,
 * session.ts), so a change there touches this file alone. It turns the extension's EngineConfig into the transformer's
 * options, runs a session as the typed event stream, continues it through plan approval, and words failures as
 * EngineFailure objects (plain data: this bundle's classes are not the extension bundle's).
 */
import { FileCheckpointSaver } from '../engine/checkpointer';
import { makeEvent, type PlanStepView, type TuningEvent } from '../engine/events';
import { defaultRetryPolicy } from '../engine/feedback';
import { LlmAuthError, LlmConfigError, LlmError, LlmModelNotFoundError } from '../engine/llm/errors';
import { checkReachable, createChatModel } from '../engine/llm/providers';
import type { SessionEnd } from '../engine/session';
import { AutonomousTuningStrategy } from '../engine/strategies/autonomous';
import { defaultTuningSteps, ExplicitTuningStrategy, type TuningStep } from '../engine/strategies/explicit';
import type { PlanApproval } from '../engine/strategies/approval';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../engine/transformer';
import { CudaUnavailableError } from '../gpu/errors';
import type { TuningBackend } from '../tuner/backend';
import { GpuBackend } from '../tuner/gpu-backend';
import { checkOneModel, type GpuSelection } from '../tuner/gpu-selection';
import type { EngineConfig } from './config';
import type { BackendLease, EngineFailure, EngineRuntime, SessionRequest, SessionRun } from './engine-api';
import type { EditedPlanStep } from './protocol';

/** The module named by the extension's test hook must export this (see extension.ts, KERNEL_TUNER_TEST_BACKEND). */
export interface TestBackendModule {
  createTuningBackend(options: { device: number }): Promise<TuningBackend>;
}

function failure(kind: EngineFailure['kind'], message: string): EngineFailure {
  return { kind, message };
}

function toFailure(error: unknown): EngineFailure {
  if (error instanceof CudaUnavailableError) return failure('gpu-unavailable', error.message);
  if (error instanceof LlmAuthError) return failure('llm-auth', error.message);
  if (error instanceof LlmModelNotFoundError) return failure('llm-model-missing', error.message);
  if (error instanceof LlmConfigError) return failure('llm-config', error.message);
  if (error instanceof LlmError) return failure('llm-unreachable', error.message);
  return failure('other', error instanceof Error ? error.message : String(error));
}

class Lease implements BackendLease {
  private disposed = false;

  constructor(
    /** One backend per GPU, all of one model. */
    readonly backends: readonly TuningBackend[],
    readonly device: BackendLease['device'],
  ) {}

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await Promise.all(this.backends.map((b) => b.dispose()));
  }
}

async function openBackend(options: { gpus: GpuSelection; testBackendModule?: string }): Promise<BackendLease> {
  let backends: readonly TuningBackend[];
  try {
    if (options.testBackendModule) {
      const mod = require(options.testBackendModule) as Partial<TestBackendModule>;
      if (typeof mod.createTuningBackend !== 'function') throw new Error(`${options.testBackendModule} exports no createTuningBackend()`);
      backends = [await mod.createTuningBackend({ device: options.gpus.kind === 'list' ? options.gpus.ordinals[0]! : 0 })];
    } else {
      backends = await GpuBackend.openAll(options.gpus);
    }
  } catch (error) {
    throw toFailure(error);
  }
  try {
    const devices = await Promise.all(backends.map((b) => b.describe()));
    checkOneModel(devices);
    const d = devices[0]!;
    return new Lease(backends, { name: d.name, arch: d.arch, computeCapability: d.computeCapability, ...(backends.length > 1 && { gpus: backends.length }) });
  } catch (error) {
    await Promise.all(backends.map((b) => b.dispose().catch(() => undefined)));
    throw toFailure(error);
  }
}

/**
 * The explicit strategy's default steps that the user selected, in their dependency order. A step whose dependency
 * was left out could never run, so it is left out too, and named.
 */
export function selectExplicitSteps(selected: readonly string[]): { steps: TuningStep[]; dropped: string[] } {
  const wanted = new Set(selected);
  const steps: TuningStep[] = [];
  const dropped: string[] = [];
  for (const step of defaultTuningSteps()) {
    if (!wanted.has(step.id)) continue;
    if (step.dependsOn.every((d) => steps.some((s) => s.id === d))) steps.push(step);
    else dropped.push(`${step.id} (needs ${step.dependsOn.join(', ')})`);
  }
  return { steps, dropped };
}

function tuningStrategy(c: EngineConfig): { strategy: NonNullable<LLMKernelTransformerOptions['tuningStrategy']>; warnings: string[] } {
  const retryPolicy = defaultRetryPolicy(c.retries);
  if (c.strategy.kind === 'explicit') {
    const { steps, dropped } = selectExplicitSteps(c.strategy.steps);
    const warnings = dropped.length > 0 ? [`explicit steps left out because a step they depend on is not selected in kernelTuner.explicit.steps: ${dropped.join('; ')}`] : [];
    return { strategy: new ExplicitTuningStrategy(steps, { retryPolicy }), warnings };
  }
  return {
    strategy: new AutonomousTuningStrategy({
      retryPolicy,
      breakdownSteps: c.strategy.breakdownSteps,
      maxBreakdowns: c.strategy.maxBreakdowns,
      withReplanning: c.strategy.withReplanning,
      maxReplanning: c.strategy.maxReplanning,
      candidatesPerStep: c.candidatesPerStep,
    }),
    warnings: [],
  };
}

function transformerOptions(request: SessionRequest, backend: readonly TuningBackend[], strategy: NonNullable<LLMKernelTransformerOptions['tuningStrategy']>): LLMKernelTransformerOptions {
  const c: EngineConfig = request.config;
  return {
    llm: createChatModel(c.llm),
    kernelName: request.kernelName,
    fileName: request.fileName,
    ...(request.filePath !== undefined && { filePath: request.filePath }),
    includePaths: request.includePaths,
    retryPolicy: defaultRetryPolicy(c.retries),
    tuningStrategy: strategy,
    backend,
    compilerOptions: [...request.buildOptions, ...c.compilerOptions],
    timePerTest: c.timePerTestS,
    ...(c.launchTimeoutS > 0 && { launchTimeout: c.launchTimeoutS }),
    iterations: c.iterations,
    stripThinkingOutput: c.stripThinkingOutput,
    structuredOutputType: c.structuredOutputType,
    performanceThreshold: c.performanceThreshold,
    approvePlan: c.approvePlan,
    checkpointer: new FileCheckpointSaver(request.checkpointDir),
    threadId: request.threadId,
    signal: request.signal,
  };
}

/** The user's plan for the engine: proposed steps keep their ids, steps the user added get new ones from the engine. */
function toApproval(steps: readonly EditedPlanStep[], proposed: readonly PlanStepView[]): PlanApproval {
  const known = new Set(proposed.map((s) => s.id));
  return { steps: steps.map((s) => ({ ...(known.has(s.id) && { id: s.id }), title: s.title, details: s.details })) };
}

function startSession(request: SessionRequest, lease: BackendLease): SessionRun {
  let approve: ((steps: EditedPlanStep[]) => void) | undefined;
  const pendingApprovals: EditedPlanStep[][] = [];

  async function* events(): AsyncGenerator<TuningEvent> {
    let transformer: LLMKernelTransformer;
    let warnings: string[];
    try {
      const chosen = tuningStrategy(request.config);
      warnings = chosen.warnings;
      transformer = new LLMKernelTransformer(request.code, transformerOptions(request, (lease as Lease).backends, chosen.strategy));
    } catch (error) {
      yield makeEvent({ type: 'session.failed', error: { name: error instanceof Error ? error.name : 'Error', message: toFailure(error).message } });
      return;
    }
    for (const message of warnings) yield makeEvent({ type: 'warning', message });
    let approval: PlanApproval | undefined;
    for (;;) {
      const run = transformer.stream(approval === undefined ? {} : { approval });
      let next = await run.next();
      for (; !next.done; next = await run.next()) yield next.value;
      const end: SessionEnd = next.value;
      if (end.status !== 'awaiting_approval') return;
      const steps = await new Promise<EditedPlanStep[] | undefined>((resolve) => {
        const queued = pendingApprovals.shift();
        if (queued) return resolve(queued);
        if (request.signal.aborted) return resolve(undefined);
        const onAbort = () => resolve(undefined);
        request.signal.addEventListener('abort', onAbort, { once: true });
        approve = (s) => {
          request.signal.removeEventListener('abort', onAbort);
          resolve(s);
        };
      });
      approve = undefined;
      if (!steps) {
        yield makeEvent({ type: 'session.cancelled' });
        return;
      }
      approval = toApproval(steps, end.steps);
    }
  }

  return {
    events: events(),
    approvePlan(steps) {
      if (approve) approve(steps);
      else pendingApprovals.push(steps);
    },
  };
}

export const runtime: EngineRuntime = {
  async checkLlm(config, signal) {
    try {
      await checkReachable(config.llm, signal);
    } catch (error) {
      throw toFailure(error);
    }
  },
  openBackend,
  startSession,
};
