/**
 * The running graph as the UI draws it: each compiled graph's own description (LangGraph's getGraphAsync, so a drawing
 * can never drift from the code and a custom strategy is drawn for free), and the runs of its nodes, read from
 * LangGraph's `tasks` stream mode. Both become typed events (`graph.described`, `graph.node`); a consumer draws what the
 * events say and never switches on a node's name.
 */
import type { GraphEdgeView, GraphView, JsonPreview, TuningEventBody } from './events';

/** The id of the session graph; a subgraph's id is the path of the nodes that host it ("tune"). */
export const SESSION_GRAPH_ID = 'session';

/** What describeGraph needs of a compiled graph (LangGraph's CompiledStateGraph has it). */
export interface DescribableGraph {
  getGraphAsync(): Promise<{ nodes: Record<string, { id: string }>; edges: { source: string; target: string; data?: string; conditional?: boolean }[] }>;
  readonly name?: string;
}

function isDescribable(graph: unknown): graph is DescribableGraph {
  return typeof (graph as Partial<DescribableGraph> | null)?.getGraphAsync === 'function';
}

/**
 * The description of `graph` under `id`; `hosts` maps a node id to the id of the graph it runs (a subgraph invoked
 * inside that node).
 */
export async function describeGraph(id: string, graph: DescribableGraph, hosts: Readonly<Record<string, string>> = {}): Promise<GraphView> {
  const drawable = await graph.getGraphAsync();
  const nodes = Object.values(drawable.nodes).map((n) => ({ id: n.id, ...(hosts[n.id] !== undefined && { subgraph: hosts[n.id] }) }));
  const edges = drawable.edges.map(
    (e): GraphEdgeView => ({ source: e.source, target: e.target, conditional: e.conditional === true, ...(e.data !== undefined && e.data !== e.target && { label: e.data }) }),
  );
  return { id, name: graph.name ?? id, nodes, edges };
}

/**
 * The session graph and the subgraphs its nodes host, session graph first. A hosted graph that cannot describe itself
 * (a strategy whose createGraph returns something other than a compiled graph) is left out: its node is drawn alone.
 */
export async function describeSessionGraphs(session: DescribableGraph, hosted: Readonly<Record<string, unknown>>): Promise<GraphView[]> {
  const describable = Object.entries(hosted).filter((e): e is [string, DescribableGraph] => isDescribable(e[1]));
  const hosts = Object.fromEntries(describable.map(([node]) => [node, node]));
  return Promise.all([describeGraph(SESSION_GRAPH_ID, session, hosts), ...describable.map(([node, graph]) => describeGraph(node, graph))]);
}

/** The graph id of a stream chunk's namespace: ["tune:<task id>"] is "tune", [] the session graph. */
function graphIdOf(namespace: readonly string[]): string {
  return namespace.length === 0 ? SESSION_GRAPH_ID : namespace.map((part) => part.split(':', 1)[0]).join('/');
}

/** Limits of what one node run adds to the event log (the whole session state is often a node's input). */
const PREVIEW = { string: 4000, items: 50, depth: 6, keys: 60 };

/** `value` as plain JSON, long strings and lists cut (with a note of what was left out), functions and cycles dropped. */
function previewJson(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): JsonPreview {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value.length > PREVIEW.string ? `${value.slice(0, PREVIEW.string)}… (${value.length - PREVIEW.string} more characters)` : value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object') return null;
  if (seen.has(value)) return '(cycle)';
  if (depth >= PREVIEW.depth) return Array.isArray(value) ? `(list of ${value.length})` : '(object)';
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const items = value.slice(0, PREVIEW.items).map((v) => previewJson(v, depth + 1, seen));
      return value.length > PREVIEW.items ? [...items, `… (${value.length - PREVIEW.items} more)`] : items;
    }
    // A LangGraph Send (a task's input) and other class instances: their own enumerable fields.
    const entries = Object.entries(value).filter(([, v]) => typeof v !== 'function');
    const out: Record<string, JsonPreview> = {};
    for (const [k, v] of entries.slice(0, PREVIEW.keys)) out[k] = previewJson(v, depth + 1, seen);
    if (entries.length > PREVIEW.keys) out['…'] = `${entries.length - PREVIEW.keys} more fields`;
    return out;
  } finally {
    seen.delete(value);
  }
}

interface TaskStart {
  id: string;
  name: string;
  input: unknown;
}

interface TaskResult {
  id: string;
  name: string;
  result: unknown;
  error: unknown;
  interrupts: unknown[];
}

/** The `graph.node` event of a LangGraph `tasks` chunk; undefined for a chunk of another shape. */
export function nodeEventOf(namespace: readonly string[], payload: unknown): Extract<TuningEventBody, { type: 'graph.node' }> | undefined {
  const task = payload as Partial<TaskStart & TaskResult> | null;
  if (typeof task !== 'object' || task === null || typeof task.id !== 'string' || typeof task.name !== 'string') return undefined;
  const base = { type: 'graph.node' as const, graph: graphIdOf(namespace), node: task.name, task: task.id };
  if ('input' in task) return { ...base, phase: 'started', data: previewJson(task.input) };
  if (!('result' in task)) return undefined;
  if (task.error !== null && task.error !== undefined) {
    const error = task.error as { message?: unknown };
    return { ...base, phase: 'failed', error: typeof error.message === 'string' ? error.message : String(task.error) };
  }
  if (Array.isArray(task.interrupts) && task.interrupts.length > 0) return { ...base, phase: 'interrupted' };
  return { ...base, phase: 'finished', data: previewJson(task.result) };
}
