/**
 * A run of a session graph as the typed event stream: the events nodes emit (LangGraph's `custom` stream mode), a plan
 * interrupt as `plan.awaiting_approval`, and exactly one way of ending: `session.finished` (emitted by the graph),
 * `session.failed`, `session.cancelled`, or the pause for approval. Node names never reach the consumer.
 */
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import type { DeviceSpeedLimits } from '../../tuner/run/speed-of-light';
import { isTuningEvent, makeEvent, type PlanStepView, type TuningEvent } from '../progress/events';
import { nodeEventOf } from '../progress/graph-view';
import { isAbortError } from '../llm/errors';
import { isPlanInterrupt } from '../strategies/approval';
import { finishedAfterModelFailure, type SnapshotGraph } from './stopped-early';

export type SessionEnd =
  | { status: 'finished' }
  | { status: 'awaiting_approval'; steps: PlanStepView[] }
  | { status: 'failed'; error: Error }
  | { status: 'cancelled' };

/** What streamSession needs of a compiled graph: its run, and where a run stopped. */
export interface StreamableGraph extends SnapshotGraph {
  stream(input: unknown, options: LangGraphRunnableConfig & { streamMode: ('custom' | 'updates' | 'tasks')[]; subgraphs: true }): Promise<AsyncIterable<unknown>>;
}

/**
 * Runs the graph and yields its events; returns how the run ended. Errors never escape: a failure is the
 * `session.failed` event (and `error` in the returned end), an abort is `session.cancelled`; a model that fails once
 * tuning has begun finishes the session with the best kernel so far (stopped-early.ts).
 */
export async function* streamSession(graph: StreamableGraph, input: unknown, config: LangGraphRunnableConfig): AsyncGenerator<TuningEvent, SessionEnd> {
  let end: SessionEnd = { status: 'finished' };
  // The session's result is its last event, after the finishing node has reported its end.
  let finished: TuningEvent | undefined;
  try {
    // Subgraphs too, for the runs of their nodes (`tasks`): the graph view lights the node that runs.
    const stream = await graph.stream(input, { ...config, streamMode: ['custom', 'updates', 'tasks'], subgraphs: true });
    for await (const chunk of stream) {
      const [namespace, mode, payload] = chunk as [string[], string, unknown];
      if (mode === 'custom' && isTuningEvent(payload)) {
        if (payload.type === 'session.finished') finished = payload;
        else yield payload;
      }
      if (mode === 'tasks') {
        const node = nodeEventOf(namespace, payload);
        if (node) yield makeEvent(node);
      }
      // An interrupt reaches every graph up to the session graph: it is reported once, from there.
      if (mode !== 'updates' || namespace.length > 0 || typeof payload !== 'object' || payload === null || !('__interrupt__' in payload)) continue;
      const interrupts = (payload as { __interrupt__: { value: unknown }[] }).__interrupt__;
      const plan = interrupts.map((i) => i.value).find(isPlanInterrupt);
      if (plan) end = { status: 'awaiting_approval', steps: plan.steps };
    }
    // The pause is the run's last word, after the interrupted nodes have reported.
    if (end.status === 'awaiting_approval') yield makeEvent({ type: 'plan.awaiting_approval', steps: end.steps });
    if (finished) yield finished;
  } catch (thrown) {
    if (isAbortError(thrown, config.signal)) return yield* endedBy(thrown, config.signal);
    let kept: TuningEvent[] | undefined;
    try {
      kept = await finishedAfterModelFailure(graph, config, thrown);
    } catch (error) {
      // The session fails with the model's error; what kept it from finishing is said, not swallowed.
      yield makeEvent({ type: 'warning', message: `the best kernel so far could not be kept: ${error instanceof Error ? error.message : String(error)}` });
    }
    if (!kept) return yield* endedBy(thrown, config.signal);
    yield* kept;
    return { status: 'finished' };
  }
  return end;
}

/** How a session that threw ends: `session.cancelled` when `signal` aborted it, else `session.failed` with the error. */
export async function* endedBy(thrown: unknown, signal: AbortSignal | undefined): AsyncGenerator<TuningEvent, SessionEnd> {
  if (isAbortError(thrown, signal)) {
    yield makeEvent({ type: 'session.cancelled' });
    return { status: 'cancelled' };
  }
  const error = thrown instanceof Error ? thrown : new Error(String(thrown));
  yield makeEvent({ type: 'session.failed', error: { name: error.name, message: error.message } });
  return { status: 'failed', error };
}

/**
 * Runs `work` with a writer for events (as LangGraph's `config.writer`) and yields the events while it runs; returns
 * its result, or throws its error once the events before it are out.
 */
export async function* eventsWhile<T>(work: (writer: (chunk: unknown) => void) => Promise<T>): AsyncGenerator<TuningEvent, T> {
  const queue: TuningEvent[] = [];
  let wake: (() => void) | undefined;
  let outcome: { value: T } | { error: unknown } | undefined;
  void work((chunk) => {
    if (!isTuningEvent(chunk)) return;
    queue.push(chunk);
    wake?.();
  }).then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  ).finally(() => wake?.());
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (outcome) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/** The device.limits event, or a warning when they could not be measured (the session goes on without them). */
export async function limitsEvent(measure: () => Promise<DeviceSpeedLimits>): Promise<TuningEvent> {
  try {
    return makeEvent({ type: 'device.limits', limits: await measure() });
  } catch (e) {
    return makeEvent({ type: 'warning', message: `the device's bandwidth and FLOP/s limits could not be measured, so no speed-of-light figures: ${(e as Error).message.split('\n', 1)[0]}` });
  }
}
