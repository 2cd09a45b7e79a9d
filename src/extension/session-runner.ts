/**
 * The engine runtime: the entry of dist/engine-runtime.js, loaded by the extension on the first "Tune this kernel".
 * The ONLY module of the extension that depends on the engine's transformer and streaming API
 * (src/engine/session/transformer.ts, session.ts), so a change there touches this file alone. It builds the transformer
 * from the session's stored settings (engine/session/session-options.ts), asks the configured model or, for a replay,
 * answers from the recording, runs the session as the typed event stream, continues it through plan approval, and words
 * failures as EngineFailure objects (plain data: this bundle's classes are not the extension bundle's). A session of the
 * tuner alone ("Tune parameters") is the same stream from engine/session/tuner-session.ts.
 */
import { FileCheckpointSaver } from '../engine/store/checkpointer';
import { makeEvent, type PlanStepView, type TuningEvent } from '../engine/progress/events';
import { LlmAuthError, LlmConfigError, LlmError, LlmModelNotFoundError } from '../engine/llm/errors';
import { checkReachable, createChatModel } from '../engine/llm/providers';
import { ReplayChatModel } from '../engine/llm/replay';
import type { SessionEnd } from '../engine/session/session';
import { transformerOptionsFrom } from '../engine/session/session-options';
import type { PlanApproval } from '../engine/strategies/approval';
import { LLMKernelTransformer } from '../engine/session/transformer';
import { tunerSession } from '../engine/session/tuner-session';
import { CudaUnavailableError } from '../gpu/errors';
import type { TuningBackend } from '../tuner/run/backend';
import { GpuBackend } from '../tuner/run/gpu-backend';
import { checkOneModel, type GpuSelection } from '../tuner/run/gpu-selection';
import { isEngineFailure, type BackendLease, type EngineFailure, type EngineRuntime, type SessionRequest, type SessionRun, type TuningRequest } from './engine-api';
import type { EditedPlanStep } from './protocol';

/**
 * The module named by the extension's test hook must export this (see extension.ts, KERNEL_TUNER_TEST_BACKEND). To
 * stand for a machine without a usable GPU it throws an EngineFailure (plain data), as this runtime words the GPU
 * layer's errors.
 */
export interface TestBackendModule {
  createTuningBackend(options: { device: number }): Promise<TuningBackend>;
}

function failure(kind: EngineFailure['kind'], message: string): EngineFailure {
  return { kind, message };
}

function toFailure(error: unknown): EngineFailure {
  // Already worded (the test backend module stands for a machine without a GPU so: its classes are not ours).
  if (isEngineFailure(error)) return error;
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

/** The user's plan for the engine: proposed steps keep their ids, steps the user added get new ones from the engine. */
function toApproval(steps: readonly EditedPlanStep[], proposed: readonly PlanStepView[]): PlanApproval {
  const known = new Set(proposed.map((s) => s.id));
  return { steps: steps.map((s) => ({ ...(known.has(s.id) && { id: s.id }), title: s.title, details: s.details })) };
}

function startSession(request: SessionRequest, lease: BackendLease): SessionRun {
  let approve: ((steps: EditedPlanStep[]) => void) | undefined;
  const pendingApprovals: EditedPlanStep[][] = [];
  const replay = request.replay && new ReplayChatModel(request.replay.exchanges);
  const recordedApprovals = [...(request.replay?.approvals ?? [])];

  /** The user's answer to a plan waiting for approval (a replay's: the recorded one); undefined: stop. */
  async function approval(end: Extract<SessionEnd, { status: 'awaiting_approval' }>): Promise<PlanApproval | undefined> {
    if (request.replay) return recordedApprovals.shift();
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
    return steps && toApproval(steps, end.steps);
  }

  async function* events(): AsyncGenerator<TuningEvent> {
    let transformer: LLMKernelTransformer;
    let warnings: string[];
    try {
      const built = transformerOptionsFrom(request.settings, {
        llm: replay ?? createChatModel(request.config.llm),
        backend: (lease as Lease).backends,
        checkpointer: new FileCheckpointSaver(request.checkpointDir),
        threadId: request.threadId,
        signal: request.signal,
        ...(request.branch && { branch: request.branch }),
        ...(request.evolveFurther && { evolveFurther: true }),
      });
      warnings = built.warnings;
      transformer = new LLMKernelTransformer(request.code, built.options);
    } catch (error) {
      yield makeEvent({ type: 'session.failed', error: { name: error instanceof Error ? error.name : 'Error', message: toFailure(error).message } });
      return;
    }
    for (const message of warnings) yield makeEvent({ type: 'warning', message });
    let answer: PlanApproval | undefined;
    for (;;) {
      const run = transformer.stream(answer === undefined ? {} : { approval: answer });
      let next = await run.next();
      for (; !next.done; next = await run.next()) yield next.value;
      const end: SessionEnd = next.value;
      if (end.status !== 'awaiting_approval') return;
      answer = await approval(end);
      if (!answer) {
        yield request.replay
          ? makeEvent({ type: 'session.failed', error: { name: 'ReplayDivergenceError', message: 'the session waits for a plan approval that the recording does not hold' } })
          : makeEvent({ type: 'session.cancelled' });
        return;
      }
    }
  }

  return {
    events: events(),
    approvePlan(steps) {
      if (approve) approve(steps);
      else pendingApprovals.push(steps);
    },
    unusedExchanges: () => replay?.unused().length ?? 0,
  };
}

function startTuning(request: TuningRequest, on: BackendLease | { replay: string }): SessionRun {
  const measure = 'replay' in on ? { replay: on.replay } : { backend: (on as Lease).backends };
  return {
    events: tunerSession({ threadId: request.threadId, code: request.code, filePath: request.filePath, specPath: request.specPath, measure, sanitize: request.sanitize, signal: request.signal }),
    approvePlan() {
      // A session of the tuner alone has no plan to approve.
    },
    unusedExchanges: () => 0,
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
  startTuning,
};
