/**
 * The contract between the extension (dist/extension.js, loaded at activation) and the engine runtime
 * (dist/engine-runtime.js, built from session-runner.ts and loaded on first use, because LangChain, LangGraph and the
 * GPU client are too heavy for activation). Types only: the two bundles share no classes, so failures cross as plain
 * data (`EngineFailure`), never as instances to test with `instanceof`.
 */
import type { TuningEvent } from '../engine/progress/events';
import type { LlmExchange } from '../engine/llm/exchange';
import type { SessionSettings } from '../engine/session/session-settings';
import type { PlanApproval } from '../engine/strategies/approval';
import type { BranchOptions } from '../engine/session/session-settings';
import type { GpuSelection } from '../tuner/run/gpu-selection';
import type { EngineConfig } from './config';
import type { EditedPlanStep } from './protocol';

export type EngineFailureKind =
  /** No driver, no device, no NVRTC/nvcc, or the addon did not load: the message says what to install. */
  | 'gpu-unavailable'
  | 'llm-unreachable'
  | 'llm-auth'
  | 'llm-model-missing'
  | 'llm-config'
  | 'other';

export interface EngineFailure {
  kind: EngineFailureKind;
  message: string;
}

export interface DeviceInfo {
  name: string;
  arch: string;
  computeCapability: [number, number];
  /** How many GPUs of this model the session tunes on, when more than one. */
  gpus?: number;
}

/** The GPU backends opened for one session (a worker process per GPU, or a test double). */
export interface BackendLease {
  readonly device: DeviceInfo;
  dispose(): Promise<void>;
}

export interface SessionRequest {
  /** The LangGraph thread: a new one, or the one of an interrupted session to resume. */
  threadId: string;
  /** The whole source file as the session started from it; the engine tunes `settings.kernelName` in it. */
  code: string;
  /** How the session's graph is built (stored with the session: a resume or a replay builds the same one). */
  settings: SessionSettings;
  /** The model to ask (its API key included); not used by a replay. */
  config: EngineConfig;
  /** Start the session as a branch of another one; ignored once the session has started. */
  branch?: BranchOptions;
  /** The session (`threadId`) is a finished evolutionary one: it goes on evolving its population within `settings.budget`. */
  evolveFurther?: boolean;
  /** Answer from this recording instead of asking the model, plan approvals included. */
  replay?: { exchanges: LlmExchange[]; approvals: PlanApproval[] };
  /** Where the file checkpointer keeps this window's sessions. */
  checkpointDir: string;
  signal: AbortSignal;
}

/** A session of the tuner alone ("Tune parameters"): the kernel file and its spec, no model. */
export interface TuningRequest {
  threadId: string;
  /** The whole source file as the editor holds it. */
  code: string;
  /** The kernel file on disk (its folder is searched for its #includes; the spec names it). */
  filePath: string;
  /** The tuning spec: inputs, tunable parameters, restrictions, geometry, measurement. */
  specPath: string;
  /** Run the best configuration under compute-sanitizer before proposing it (kernelTuner.sanitize). */
  sanitize: boolean;
  signal: AbortSignal;
}

export interface SessionRun {
  /** Ends after `session.finished`, `session.failed` or `session.cancelled`; never throws. */
  readonly events: AsyncIterable<TuningEvent>;
  /** For a replay: the recorded exchanges no request asked for (after the events ended). */
  unusedExchanges(): number;
  /** Continues a session waiting at `plan.awaiting_approval` with the user's (possibly edited) plan. */
  approvePlan(steps: EditedPlanStep[]): void;
}

export interface EngineRuntime {
  /** Throws an EngineFailure (plain object) when the LLM endpoint cannot be used. */
  checkLlm(config: EngineConfig, signal?: AbortSignal): Promise<void>;
  /**
   * Opens the GPUs (a worker process each) of `gpus`, or, only when `testBackendModule` is set, the test double that
   * module exports (one, on the first GPU chosen). Throws an EngineFailure.
   */
  openBackend(options: { gpus: GpuSelection; testBackendModule?: string }): Promise<BackendLease>;
  startSession(request: SessionRequest, backend: BackendLease): SessionRun;
  /**
   * Runs the tuner alone over a spec, as a session of one step with no model (src/engine/session/tuner-session.ts), on
   * the GPUs leased, or with no GPU, replaying a Kernel Tuner cache of a recorded run of the same spec.
   */
  startTuning(request: TuningRequest, on: BackendLease | { replay: string }): SessionRun;
}

export function isEngineFailure(value: unknown): value is EngineFailure {
  const v = value as EngineFailure | null;
  return typeof v === 'object' && v !== null && typeof v.kind === 'string' && typeof v.message === 'string';
}
