/**
 * A late failure keeps what was won. Once tuning has begun (the baseline is measured), a model that misbehaves for
 * good (its answers to a replan, a validation, a breakdown, a step stay unusable after the retries, or it cannot be
 * asked any more) does not throw the session away: the session finishes with the best kernel so far, as any finished
 * session does (the final kernel, the proposal, the reports), and a `tuning.stopped` warning says what failed and why.
 * The checkpoints are left where the strategy stopped, so resuming the session asks the model again from there.
 *
 * Which failures are the model's (isModelFailure), and so end a session this way:
 * - RetriesExhaustedError: the content retries ran out; every attempt failed with an error the retry policy judged the
 *   model's to fix (no code, a cut-off answer, unusable JSON, wrong step ids, bad restrictions, ...).
 * - An error of a class the default policy corrects (CORRECTABLE_ERRORS), thrown without retries (a strategy or a
 *   retry policy of the user's that does not handle it).
 * - LlmError after LangGraph's transport retries: the endpoint kept failing (429, 5xx, resets, timeouts), went away,
 *   refused the key, or refused the request (a prompt over the context window). Not LlmConfigError (nothing was sent:
 *   the settings are wrong) and not ReplayDivergenceError (a replay that departs from its recording must say so).
 * - BudgetExhaustedError: a budget the user set (model calls, tokens, cost, wall time) refused the next request; not a
 *   misbehaviour, but the same ending: the session keeps what it won, and says which budget stopped it.
 * Everything else still fails the session: a cancel is a cancel, and a GPU, tuner or internal error (a bug) is not
 * the model's and must not be swallowed. Before the baseline nothing was won, so analysis and test failures fail too.
 */
import type { LangGraphRunnableConfig, StateSnapshot } from '@langchain/langgraph';
import { CORRECTABLE_ERRORS } from '../candidate/feedback';
import { PerformanceTracker } from '../candidate/tracker';
import { failedCallOf, LlmConfigError, LlmError } from '../llm/errors';
import { ReplayDivergenceError } from '../llm/replay';
import { RetriesExhaustedError } from '../llm/retry';
import { BudgetExhaustedError } from '../resources/model-calls';
import { makeEvent, type TuningEvent } from '../progress/events';
import { TuningState, type TuningStateValue } from '../state';
import { TUNE_NODE } from './session-log';
import { finishedEvent } from './graph/nodes/finish';

/** Whether an error is the model's misbehaviour rather than a cancel, a GPU or tuner failure, or a bug (see above). */
export function isModelFailure(error: unknown): boolean {
  if (error instanceof RetriesExhaustedError || error instanceof BudgetExhaustedError) return true;
  if (error instanceof LlmError) return !(error instanceof LlmConfigError || error instanceof ReplayDivergenceError);
  return CORRECTABLE_ERRORS.some((c) => error instanceof c);
}

/** What a session graph offers for reading where a run stopped. */
export interface SnapshotGraph {
  getState(config: LangGraphRunnableConfig): Promise<StateSnapshot>;
}

const SESSION_KEYS = Object.keys(TuningState.spec);

/**
 * The session's state as far as the last checkpoints: inside the tuning strategy's run, the strategy's own checkpoint
 * (`tune:<task id>`) holds the steps accepted so far (a strategy that is not a compiled graph keeps none: then the
 * state it started from). `tuning`: the run stopped inside the strategy.
 */
export async function sessionSoFar(graph: SnapshotGraph, config: LangGraphRunnableConfig): Promise<{ state: TuningStateValue; tuning: boolean }> {
  const snapshot = await graph.getState(config);
  const tune = snapshot.tasks.find((t) => t.name === TUNE_NODE);
  if (!tune) return { state: snapshot.values as TuningStateValue, tuning: false };
  const strategy = await graph.getState({ configurable: { thread_id: config.configurable?.thread_id, checkpoint_ns: `${TUNE_NODE}:${tune.id}` } });
  const session = Object.fromEntries(Object.entries(strategy.values as Record<string, unknown>).filter(([key]) => SESSION_KEYS.includes(key)));
  return { state: { ...(snapshot.values as TuningStateValue), ...session }, tuning: true };
}

/** Why the model failed, in one line: the last attempt's error when the retries ran out. */
function reasonOf(error: Error): string {
  const firstLine = (e: Error) => `${e.name}: ${e.message.split('\n', 1)[0]}`;
  if (error instanceof RetriesExhaustedError) return `gave up after ${error.attempts.length} attempts (the last: ${firstLine(error.attempts.at(-1)!)})`;
  return firstLine(error);
}

/**
 * The end of a session whose model failed once tuning had begun: `tuning.stopped`, the final kernel's warnings and
 * `session.finished` for the best kernel so far. Undefined when the failure is not the model's, or came before tuning
 * (the caller fails the session then).
 */
export async function finishedAfterModelFailure(graph: SnapshotGraph, config: LangGraphRunnableConfig, error: unknown): Promise<TuningEvent[] | undefined> {
  if (!isModelFailure(error)) return undefined;
  const { state, tuning } = await sessionSoFar(graph, config);
  if (!tuning || state.bestTimeMs === null) return undefined;
  const failure = error as Error;
  const { event, warnings } = await finishedEvent(state);
  return [
    makeEvent({
      type: 'tuning.stopped',
      during: failedCallOf(failure) ?? 'the tuning strategy',
      reason: reasonOf(failure),
      error: { name: failure.name, message: failure.message },
      acceptedSteps: PerformanceTracker.fromJSON(state.tracker).steps.length,
    }),
    ...warnings.map((message) => makeEvent({ type: 'warning', message })),
    makeEvent(event),
  ];
}
