/**
 * Time travel: a new session that starts where an earlier step of another session started, as it was or with the
 * kernel edited by the user. Built on LangGraph's checkpoint history:
 *
 * - `findBranchPoint` reads the parent's history (`getStateHistory`): the top graph's checkpoint before `tune`, and in
 *   the tuning strategy's own history the checkpoint from which the step was started (the step's id is in the
 *   session's `startedSteps` from the next checkpoint on).
 * - `copyLineage` writes those two checkpoints and their ancestors, without their pending writes, under the branch's
 *   thread: to LangGraph the branch is a session interrupted just before the step, so resuming it runs the step again,
 *   and everything after it, in the branch's thread only (the parent's checkpoints are never touched).
 * - with an edited kernel, `measureEditedKernel` checks and tunes it like a candidate (same interface, correct against
 *   the original, timed), and `updateState` puts it at the branch point, so the step starts from it.
 */
import { basename } from 'node:path';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { BaseCheckpointSaver, CheckpointTuple, LangGraphRunnableConfig, StateSnapshot } from '@langchain/langgraph';
import { checkInterface, mergeTuneParams, restrictionsStillValid } from '../candidate/code';
import { unifiedDiff } from '../candidate/diff';
import { engineContext } from '../context';
import { emit } from '../progress/events';
import { unitOf } from '../candidate/kernel-view';
import { originalKernel, runCandidate } from '../candidate/run-tests';
import { editStepId, editStepTitle, TUNE_NODE } from './session-log';
import type { TuningStateUpdate, TuningStateValue } from '../state';
import { improvementPct, objectiveChange, PerformanceTracker } from '../candidate/tracker';


/** What a session graph offers for time travel (a compiled graph with a checkpointer). */
export interface HistoryGraph {
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

export interface BranchPoint {
  /** The strategy's checkpoint namespace (`tune:<task id>`). */
  tuneNamespace: string;
  /** The top graph's checkpoint whose next task is `tune`. */
  rootCheckpointId: string;
  /** The strategy's checkpoint the step was started from. */
  checkpointId: string;
  /** The session as it was there: the kernel the step starts from, its time, its parameters. */
  state: TuningStateValue;
}

/** A session's history has no such step, or the session never reached it; the message says which steps there are. */
export class BranchPointError extends Error {
  override name = 'BranchPointError';
}

const idOf = (config: RunnableConfig | undefined) => config?.configurable?.checkpoint_id as string | undefined;

async function history(graph: HistoryGraph, config: RunnableConfig): Promise<StateSnapshot[]> {
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory(config)) snapshots.push(snapshot);
  return snapshots;
}

const startedIn = (snapshot: StateSnapshot) => ((snapshot.values as Partial<TuningStateValue>).startedSteps ?? []) as string[];

/** Where step `stepId` of session `threadId` was started from. */
export async function findBranchPoint(graph: HistoryGraph, threadId: string, stepId: string): Promise<BranchPoint> {
  const root = await history(graph, { configurable: { thread_id: threadId } });
  if (root.length === 0) throw new BranchPointError(`there is no session ${threadId} in the checkpoints`);
  const beforeTune = root.find((s) => s.next.includes(TUNE_NODE));
  const tuneTask = beforeTune?.tasks.find((t) => t.name === TUNE_NODE);
  const tuneNamespace = (tuneTask?.state as RunnableConfig | undefined)?.configurable?.checkpoint_ns as string | undefined;
  if (!beforeTune || !tuneNamespace) throw new BranchPointError(`session ${threadId} has not started tuning: it has no step to branch from`);
  // Newest first, as LangGraph lists them.
  const steps = await history(graph, { configurable: { thread_id: threadId, checkpoint_ns: tuneNamespace } });
  const started = steps.length > 0 ? startedIn(steps[0]!) : [];
  const firstWith = steps.findLast((s) => startedIn(s).includes(stepId));
  const from = firstWith && steps.find((s) => idOf(s.config) === idOf(firstWith.parentConfig));
  if (!from) {
    throw new BranchPointError(
      started.length > 0
        ? `step ${stepId} never started in session ${threadId}: branch from one of the steps that did (${started.join(', ')})`
        : `session ${threadId} records no step that started: none has yet, or it was stored by a version that did not record them, or its strategy does not (BaseTuningStrategy.startStep records a step)`,
    );
  }
  return { tuneNamespace, rootCheckpointId: idOf(beforeTune.config)!, checkpointId: idOf(from.config)!, state: from.values as TuningStateValue };
}

/**
 * Writes checkpoint `checkpointId` of `from` and all its ancestors under thread `toThreadId` (same ids, same namespace),
 * without pending writes: the copy stands where the original stood before its next tasks ran.
 */
export async function copyLineage(saver: BaseCheckpointSaver, from: { threadId: string; ns: string; checkpointId: string }, toThreadId: string): Promise<void> {
  const lineage: CheckpointTuple[] = [];
  let config: RunnableConfig | undefined = { configurable: { thread_id: from.threadId, checkpoint_ns: from.ns, checkpoint_id: from.checkpointId } };
  while (config) {
    const tuple = await saver.getTuple(config);
    if (!tuple) throw new BranchPointError(`checkpoint ${idOf(config)} of session ${from.threadId} is missing: its checkpoints are incomplete`);
    lineage.push(tuple);
    config = tuple.parentConfig;
  }
  let parentId: string | undefined;
  for (const tuple of lineage.reverse()) {
    if (!tuple.metadata) throw new BranchPointError(`checkpoint ${tuple.checkpoint.id} of session ${from.threadId} has no metadata: its checkpoints are incomplete`);
    await saver.put({ configurable: { thread_id: toThreadId, checkpoint_ns: from.ns, ...(parentId && { checkpoint_id: parentId }) } }, tuple.checkpoint, tuple.metadata, {});
    parentId = tuple.checkpoint.id;
  }
}

/** The user's kernel cannot continue the session (it does not compile, gives wrong results ...); `cause` says why. */
export class EditedKernelError extends Error {
  override name = 'EditedKernelError';
}

/**
 * Checks and tunes the user's kernel in place of the one step `stepId` starts from, as a candidate is: same kernel
 * interface, correct against the original on every test, timed over the current parameters (those it still uses).
 * Reports it as a pseudo-step (step.started, candidate, configs.evaluated, step.accepted) and returns the state update
 * that makes it the session's kernel. Throws the candidate's typed error (CompileError, FailedTestsError ...).
 */
export async function measureEditedKernel(state: TuningStateValue, code: string, stepId: string, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> {
  const id = editStepId(stepId);
  const title = editStepTitle(stepId);
  emit(config, { type: 'step.started', stepId: id, title });
  await checkInterface(code, (await originalKernel(state)).signature, state.fileName);
  const tuneParams = mergeTuneParams(state.tuneParams, {}, (await unitOf(state, code)).text);
  const restrictions = restrictionsStillValid(state.restrictions, tuneParams);
  emit(config, { type: 'candidate', stepId: id, candidate: 0, attempt: 1, code, diff: unifiedDiff(state.code, code, { fileName: basename(state.fileName) }), tuneParams, restrictions });
  const candidate = { code, tuneParams, restrictions, gridDivisors: state.gridDivisors, sharedMemBytes: state.sharedMemBytes ?? null };
  const run = await runCandidate(candidate, state, config, { stepId: id, candidate: 0 });
  const oldTimeMs = state.bestTimeMs;
  const tracker = PerformanceTracker.fromJSON(state.tracker);
  tracker.addStep({ description: title, code, oldTimeMs, newTimeMs: run.timeMs, tunableParams: tuneParams, restrictions, bestParams: run.bestParams });
  if (oldTimeMs !== null) {
    const { objective } = engineContext(config).settings;
    const change = objectiveChange(state, objective, run.objectiveValue);
    emit(config, {
      type: 'step.accepted',
      stepId: id,
      candidate: 0,
      oldTimeMs,
      newTimeMs: run.timeMs,
      improvementPct: improvementPct(change.oldValue, change.newValue, objective.higherIsBetter),
      bestParams: run.bestParams,
      ...(objective.name !== 'time' && { objective: change }),
    });
  }
  return { code, tuneParams, restrictions, bestParams: run.bestParams, bestTimeMs: run.timeMs, bestObjective: run.objectiveValue, tracker: tracker.toJSON(), profile: run.profile ?? null };
}
