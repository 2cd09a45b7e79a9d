/**
 * What a stored session's event log says: its model exchanges (`llm.exchange`), the user's plan approvals, where its
 * steps started and from which kernel, and the report both the CLI and the extension store it in. Pure functions over
 * plain data (the webview uses them too).
 */
import type { EventOf, TuningEvent } from '../progress/events';
import type { LlmExchange } from '../llm/exchange';
import type { HistoryEntry } from '../store/history-store';
import type { PlanApproval } from '../strategies/approval';
import type { BranchOptions } from './session-settings';

/** The id of the pseudo-step that stands for the user's edit of the kernel step `stepId` starts from (branch.ts). */
export function editStepId(stepId: string): string {
  return `edit:${stepId}`;
}

export function editStepTitle(stepId: string): string {
  return `Kernel edited by the user before step ${stepId}`;
}

/** Whether a step id is such a pseudo-step (not one of the strategy's steps: no branch starts from it). */
export function isEditStep(stepId: string): boolean {
  return stepId.startsWith('edit:');
}

/** The `report` of a history entry, as both the CLI and the extension write it: the session's event log and its title. */
export const SESSION_REPORT_FORMAT = 'llm-kernel-tuner-session/1';

export interface StoredSessionHeader {
  sessionId: string;
  kernelName: string;
  /** Workspace-relative path (or base name) of the source file. */
  fileName: string;
  startedAt: string;
  /** The model that answered; for a session of the tuner alone, what ran instead ("the tuner alone: brute_force"). */
  model: string;
  /** The tuning strategy; 'tuner': the tuner alone over a spec's parameters, one step and no model ("Tune parameters"). */
  strategy: 'autonomous' | 'explicit' | 'evolutionary' | 'tuner';
}

export interface StoredSessionReport<H extends StoredSessionHeader = StoredSessionHeader> {
  format: typeof SESSION_REPORT_FORMAT;
  header: H;
  events: TuningEvent[];
}

export function isStoredSessionReport(value: unknown): value is StoredSessionReport {
  const r = value as StoredSessionReport | null;
  return typeof r === 'object' && r !== null && r.format === SESSION_REPORT_FORMAT && Array.isArray(r.events) && typeof r.header?.sessionId === 'string';
}

/** The model's exchanges in an event log, in order. */
export function exchangesOf(events: readonly TuningEvent[]): LlmExchange[] {
  return events.flatMap((e) => (e.type === 'llm.exchange' ? [e.exchange] : []));
}

/** The plans the user approved, in order, as the resume values that reproduce them. */
export function approvalsOf(events: readonly TuningEvent[]): PlanApproval[] {
  return events.flatMap((e) =>
    e.type === 'plan' && e.reason === 'approved' ? [{ steps: e.steps.filter((s) => s.status === 'pending').map((s) => ({ id: s.id, title: s.title, details: s.details })) }] : [],
  );
}

const ENDINGS: readonly TuningEvent['type'][] = ['session.finished', 'session.failed', 'session.cancelled', 'llm.exchange'];

/** The node of the session graph that runs the tuning strategy: its graph's events name it, its checkpoints live under `tune:<task>`. */
export const TUNE_NODE = 'tune';

/**
 * What a branch that starts again at step `stepId` inherits of its parent's log: everything before the step started
 * (analysis, tests, baseline, plan, earlier steps), without the parent's model exchanges and endings. The branch starts
 * from the checkpoint before the run of the strategy's node that started the step (branch.ts), so the log is cut where
 * that run started: what it did before the step (an evolutionary run's earlier children) the branch does anew.
 */
export function eventsBeforeStep(events: readonly TuningEvent[], stepId: string): TuningEvent[] {
  const start = events.findIndex((e) => e.type === 'step.started' && e.stepId === stepId);
  if (start === -1) return events.filter((e) => !ENDINGS.includes(e.type));
  const run = events.slice(0, start).findLastIndex((e) => e.type === 'graph.node' && e.graph === TUNE_NODE && e.phase === 'started');
  return events.slice(0, run === -1 ? start : run).filter((e) => !ENDINGS.includes(e.type));
}

/**
 * What a branch's log inherited of its parent's (eventsBeforeStep when it was made): the events before the run that
 * branched (its session.started comes before its session.branched). Empty for a log that is no branch's.
 */
export function inheritedEvents(events: readonly TuningEvent[]): TuningEvent[] {
  const branched = events.findIndex((e) => e.type === 'session.branched');
  if (branched === -1) return [];
  const started = events.slice(0, branched).findLastIndex((e) => e.type === 'session.started');
  return events.slice(0, started === -1 ? branched : started);
}

/**
 * The kernel (the whole file) step `stepId` started from, as the log tells it: the code of the last step accepted before
 * it (its accepted candidate's), else the original. What a branch from that step shows the user to edit.
 */
export function codeBeforeStep(events: readonly TuningEvent[], stepId: string, originalCode: string): string {
  // The code of each candidate's latest attempt so far, by step and candidate number.
  const candidates = new Map<string, string>();
  const key = (e: { stepId: string; candidate: number }) => JSON.stringify([e.stepId, e.candidate]);
  let code = originalCode;
  for (const e of eventsBeforeStep(events, stepId)) {
    if (e.type === 'candidate') candidates.set(key(e), e.code);
    else if (e.type === 'step.accepted') code = candidates.get(key(e)) ?? code;
  }
  return code;
}

/** The strategy's steps that started, in order (the points a branch can start from); pseudo-steps (edit:…) excluded. */
export function startedStepsOf(events: readonly TuningEvent[]): { stepId: string; title: string }[] {
  const started = new Map<string, string>();
  for (const e of events) if (e.type === 'step.started' && !isEditStep(e.stepId) && !started.has(e.stepId)) started.set(e.stepId, e.title);
  return [...started].map(([stepId, title]) => ({ stepId, title }));
}

/** Where a stored branch starts again (its parent's thread, the step, the user's edit), or undefined for a session that is no branch. */
export function branchOptionsOf(entry: HistoryEntry): BranchOptions | undefined {
  const parent = entry.parent;
  return parent && { parentThreadId: parent.threadId, fromStepId: parent.stepId, ...(parent.editedCode !== undefined && { code: parent.editedCode }) };
}

/** The events of the last run in a session's log: a resumed session's log holds each of its runs, from its session.started. */
export function lastRunOf(events: readonly TuningEvent[]): TuningEvent[] {
  return events.slice(Math.max(0, events.findLastIndex((e) => e.type === 'session.started')));
}

/**
 * Where the last run of a logged session stopped tuning early because the model failed (it finished with the best
 * kernel so far): resuming the session asks the model again from there. Undefined when it did not.
 */
export function stoppedEarly(events: readonly TuningEvent[]): EventOf<'tuning.stopped'> | undefined {
  return lastRunOf(events).find((e): e is EventOf<'tuning.stopped'> => e.type === 'tuning.stopped');
}
