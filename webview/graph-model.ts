/**
 * The running graph as the panel draws it, derived from the session's events: the graphs as they describe themselves
 * (`graph.described`) and the runs of their nodes (`graph.node`). Node names are data here, never cases: a custom
 * strategy's graph is drawn like ours. Pure, unit-tested.
 */
import type { GraphView, JsonPreview, TuningEvent } from '../src/engine/progress/events';

export type NodeStatus = 'idle' | 'active' | 'visited' | 'failed';

/** One run of a node: what it was given and what it returned (or why it failed). */
export interface NodeRun {
  task: string;
  phase: 'started' | 'finished' | 'failed' | 'interrupted';
  input?: JsonPreview;
  output?: JsonPreview;
  error?: string;
  startedAt: string;
  endedAt?: string;
}

export interface NodeState {
  status: NodeStatus;
  /** Runs of the node, oldest first. */
  runs: NodeRun[];
  /** Answers of the model that a node's run had to ask again for (the retry policy's corrections). */
  retries: number;
}

export interface GraphModel {
  /** The session graph first, then the subgraphs its nodes host. */
  graphs: GraphView[];
  /** By nodeKey(graph, node). */
  nodes: Record<string, NodeState>;
  /** The subgraph of the host node that ran last (the one worth showing beside the session graph). */
  focusGraph?: string;
}

/** Runs kept per node: a loop node runs once per step, and each run carries its state. */
const MAX_RUNS = 20;

/** A NUL between graph and node: no id contains one. */
const KEY_SEPARATOR = '\u0000';

export function nodeKey(graph: string, node: string): string {
  return `${graph}${KEY_SEPARATOR}${node}`;
}

/** The graph and the node of a nodeKey. */
export function splitNodeKey(key: string): [graph: string, node: string] {
  const at = key.indexOf(KEY_SEPARATOR);
  return [key.slice(0, at), key.slice(at + 1)];
}

export function emptyGraphModel(): GraphModel {
  return { graphs: [], nodes: {} };
}

function isActive(state: NodeState): boolean {
  return state.runs.some((r) => r.phase === 'started');
}

function statusOf(state: NodeState): NodeStatus {
  if (isActive(state)) return 'active';
  if (state.runs.at(-1)?.phase === 'failed') return 'failed';
  return state.runs.length > 0 ? 'visited' : 'idle';
}

/** The model after one more event (other event types change nothing, except a retry, counted on the running nodes). */
export function reduceGraph(model: GraphModel, event: TuningEvent): GraphModel {
  switch (event.type) {
    case 'graph.described':
      // Described again on a resume: the runs so far stay.
      return { ...model, graphs: event.graphs };
    case 'graph.node': {
      const key = nodeKey(event.graph, event.node);
      const previous = model.nodes[key] ?? { status: 'idle' as const, runs: [], retries: 0 };
      let runs: NodeRun[];
      if (event.phase === 'started') {
        runs = [...previous.runs, { task: event.task, phase: 'started' as const, ...(event.data !== undefined && { input: event.data }), startedAt: event.at }].slice(-MAX_RUNS);
      } else {
        const index = previous.runs.findLastIndex((r) => r.task === event.task);
        const ended: NodeRun = {
          ...(index === -1 ? { task: event.task, startedAt: event.at } : previous.runs[index]!),
          phase: event.phase,
          ...(event.data !== undefined && { output: event.data }),
          ...(event.error !== undefined && { error: event.error }),
          endedAt: event.at,
        };
        runs = index === -1 ? [...previous.runs, ended].slice(-MAX_RUNS) : previous.runs.map((r, i) => (i === index ? ended : r));
      }
      const next = { ...previous, runs };
      const hosted = model.graphs.find((g) => g.id === event.graph)?.nodes.find((n) => n.id === event.node)?.subgraph;
      return {
        ...model,
        nodes: { ...model.nodes, [key]: { ...next, status: statusOf(next) } },
        ...(hosted !== undefined && event.phase === 'started' && { focusGraph: hosted }),
      };
    }
    case 'llm.retry': {
      // The retry happened inside a node that is running now; nodes that host a subgraph run around it, so the
      // innermost ones (hosting none) take it.
      const hosts = new Set(model.graphs.flatMap((g) => g.nodes.filter((n) => n.subgraph !== undefined).map((n) => nodeKey(g.id, n.id))));
      const running = Object.entries(model.nodes).filter(([key, s]) => s.status === 'active' && !hosts.has(key));
      if (running.length === 0) return model;
      const nodes = { ...model.nodes };
      for (const [key, s] of running) nodes[key] = { ...s, retries: s.retries + 1 };
      return { ...model, nodes };
    }
    case 'session.started':
    case 'session.finished':
    case 'session.failed':
    case 'session.cancelled':
    case 'plan.awaiting_approval': {
      // Nothing runs after the end (a node whose end was never reported, e.g. when the run was aborted, is not lit),
      // nor from before a new run starts (a session resumed after its window died, a branch after the log it
      // inherited, cut where its step started).
      const nodes = Object.fromEntries(
        Object.entries(model.nodes).map(([key, s]) => {
          const runs = s.runs.map((r) => (r.phase === 'started' ? { ...r, phase: 'interrupted' as const } : r));
          const next = { ...s, runs };
          return [key, { ...next, status: statusOf(next) }];
        }),
      );
      return { ...model, nodes };
    }
    default:
      return model;
  }
}

export function reduceGraphAll(events: readonly TuningEvent[]): GraphModel {
  return events.reduce(reduceGraph, emptyGraphModel());
}

/** How a node is labelled: LangGraph's entry and exit by what they are, every other node by its id. */
export function nodeLabel(id: string): string {
  return id === '__start__' ? 'start' : id === '__end__' ? 'end' : id;
}
