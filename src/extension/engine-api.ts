/**
 * The contract between the extension (dist/extension.js, loaded at activation) and the engine runtime
 * (dist/engine-runtime.js, built from session-runner.ts and loaded on first use, because LangChain, LangGraph and the
 * GPU client are too heavy for activation). Types only: the two bundles share no classes, so failures cross as plain
 * data (`EngineFailure`), never as instances to test with `instanceof`.
 */
import type { TuningEvent } from '../engine/events';
import type { GpuSelection } from '../tuner/gpu-selection';
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
  resume: boolean;
  /** The whole source file; the engine tunes `kernelName` in it and keeps the rest. */
  code: string;
  fileName: string;
  /** The file on disk (file: documents): its directory is searched for its quoted #includes. */
  filePath?: string;
  /** Directories searched for #include: the kernelTuner.includePaths setting and the project's compile_commands.json. */
  includePaths: string[];
  /** Defines and language options from the project's compile_commands.json, before kernelTuner.compilerOptions. */
  buildOptions: string[];
  kernelName: string;
  config: EngineConfig;
  /** Where the file checkpointer keeps this window's sessions. */
  checkpointDir: string;
  signal: AbortSignal;
}

export interface SessionRun {
  /** Ends after `session.finished`, `session.failed` or `session.cancelled`; never throws. */
  readonly events: AsyncIterable<TuningEvent>;
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
}

export function isEngineFailure(value: unknown): value is EngineFailure {
  const v = value as EngineFailure | null;
  return typeof v === 'object' && v !== null && typeof v.kind === 'string' && typeof v.message === 'string';
}
