/**
 * Graph events in tests: a session graph to describe, and checks of the graph events of a session run (the graphs are
 * described first, every node run names a described graph and node, and every run that started ended).
 */
import { expect } from 'vitest';
import type { EventOf, GraphView, TuningEvent } from '../../src/engine/progress/events';

/** A session graph shaped like the engine's (in short): the analysis, then the strategy's graph, run by the node `tune`. */
export const SESSION_GRAPH: GraphView = {
  id: 'session',
  name: 'llm_kernel_tuner',
  nodes: [{ id: '__start__' }, { id: 'analyze' }, { id: 'tune', subgraph: 'tune' }, { id: '__end__' }],
  edges: [
    { source: '__start__', target: 'analyze', conditional: false },
    { source: 'analyze', target: 'tune', conditional: false },
    { source: 'tune', target: '__end__', conditional: false },
  ],
};

/** Checks the graph events of a session run; returns how many times each node of the strategy's graph ran. */
export function expectGraphEvents(events: readonly TuningEvent[], tune: { name: string; nodes: string[] }): Record<string, number> {
  expect(events[0]?.type).toBe('session.started');
  const described = events[1] as EventOf<'graph.described'>;
  expect(described.type).toBe('graph.described');
  const graphs = new Map(described.graphs.map((g) => [g.id, g]));
  expect(described.graphs[0]!.id).toBe('session');
  expect(graphs.get('session')!.nodes).toEqual(expect.arrayContaining([{ id: 'tune', subgraph: 'tune' }, { id: 'analyze', subgraph: 'analyze' }]));
  const strategy = graphs.get('tune')!;
  expect(strategy.name).toBe(tune.name);
  expect(strategy.nodes.map((n) => n.id).sort()).toEqual(['__end__', '__start__', ...tune.nodes].sort());
  for (const edge of strategy.edges) expect(strategy.nodes.map((n) => n.id)).toEqual(expect.arrayContaining([edge.source, edge.target]));

  const open = new Map<string, EventOf<'graph.node'>>();
  const runs: Record<string, number> = {};
  for (const e of events) {
    if (e.type !== 'graph.node') continue;
    expect(graphs.get(e.graph)?.nodes.map((n) => n.id), `${e.graph}/${e.node}`).toContain(e.node);
    if (e.phase === 'started') {
      expect(open.has(e.task)).toBe(false);
      open.set(e.task, e);
      if (e.graph === 'tune') runs[e.node] = (runs[e.node] ?? 0) + 1;
    } else {
      expect(open.get(e.task)?.node).toBe(e.node);
      open.delete(e.task);
    }
  }
  expect([...open.values()]).toEqual([]);
  return runs;
}

/** The event types without the graph's own (for checks of the session's sequence). */
export function withoutGraphEvents(types: readonly string[]): string[] {
  return types.filter((t) => !t.startsWith('graph.'));
}
