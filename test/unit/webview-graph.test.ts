// The panel's graph view: the model the events make (statuses, runs, retries, which subgraph is shown) and the layout
// of the graphs as the real strategies describe themselves.
import { describe, expect, it } from 'vitest';
import { makeEvent, type GraphView, type TuningEvent, type TuningEventBody } from '../../src/engine/progress/events';
import { describeGraph } from '../../src/engine/progress/graph-view';
import { createChatModel } from '../../src/engine/llm/providers';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { ExplicitTuningStrategy } from '../../src/engine/strategies/explicit';
import { layoutGraph } from '../../webview/graph-layout';
import { nodeKey, reduceGraphAll, splitNodeKey } from '../../webview/graph-model';
import { SESSION_GRAPH } from '../support/graph-events';

// Building a graph asks the model nothing; this client is never called.
const llm = createChatModel({ provider: 'ollama', model: 'unused', baseUrl: 'http://127.0.0.1:9' });

const tune: GraphView = {
  id: 'tune',
  name: 'one_node',
  nodes: [{ id: '__start__' }, { id: 'optimize' }, { id: '__end__' }],
  edges: [
    { source: '__start__', target: 'optimize', conditional: false },
    { source: 'optimize', target: '__end__', conditional: false },
  ],
};
const ev = (body: TuningEventBody): TuningEvent => makeEvent(body);
const node = (graph: string, name: string, task: string, phase: 'started' | 'finished' | 'failed', extra: object = {}) =>
  ev({ type: 'graph.node', graph, node: name, task, phase, ...extra });

describe('graph model', () => {
  it('lights the running node, marks visited and failed ones, and keeps each run\'s input and output', () => {
    const events = [
      ev({ type: 'graph.described', graphs: [SESSION_GRAPH, tune] }),
      node('session', 'analyze', 'a1', 'started', { data: { code: 'k' } }),
      node('session', 'analyze', 'a1', 'finished', { data: { analysis: 'x' } }),
      node('session', 'tune', 't1', 'started'),
      node('tune', 'optimize', 'o1', 'started', { data: { step: 1 } }),
    ];
    let model = reduceGraphAll(events);
    expect(model.nodes[nodeKey('session', 'analyze')]).toMatchObject({ status: 'visited', runs: [{ phase: 'finished', input: { code: 'k' }, output: { analysis: 'x' } }] });
    expect(model.nodes[nodeKey('session', 'tune')]!.status).toBe('active');
    expect(model.nodes[nodeKey('tune', 'optimize')]!.status).toBe('active');
    expect(model.focusGraph).toBe('tune');

    // A retry belongs to the innermost running node, not to the node hosting its graph.
    model = reduceGraphAll([...events, ev({ type: 'llm.retry', purpose: 'step 1', attempt: 1, error: 'CompileError', message: 'no' })]);
    expect(model.nodes[nodeKey('tune', 'optimize')]!.retries).toBe(1);
    expect(model.nodes[nodeKey('session', 'tune')]!.retries).toBe(0);

    const failed = reduceGraphAll([...events, node('tune', 'optimize', 'o1', 'failed', { error: 'boom' })]);
    expect(failed.nodes[nodeKey('tune', 'optimize')]).toMatchObject({ status: 'failed', runs: [{ input: { step: 1 }, error: 'boom' }] });

    // Once the session ends nothing is lit, though a node's end was never reported.
    const cancelled = reduceGraphAll([...events, ev({ type: 'session.cancelled' })]);
    expect(cancelled.nodes[nodeKey('tune', 'optimize')]!.status).toBe('visited');
    expect(cancelled.nodes[nodeKey('tune', 'optimize')]!.runs[0]!.phase).toBe('interrupted');
  });

  it('closes the runs a new run leaves behind: a resume after the window died, a branch after the log it inherited', () => {
    const inherited = [ev({ type: 'graph.described', graphs: [SESSION_GRAPH, tune] }), node('session', 'tune', 't1', 'started'), node('tune', 'optimize', 'o1', 'started')];
    const started = ev({ type: 'session.started', threadId: 'b', resumed: false, kernel: { name: 'k', signature: 'void k()' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } });
    const model = reduceGraphAll([...inherited, started, ev({ type: 'graph.described', graphs: [SESSION_GRAPH, tune] }), node('session', 'tune', 't2', 'started')]);
    expect(model.nodes[nodeKey('tune', 'optimize')]).toMatchObject({ status: 'visited', runs: [{ task: 'o1', phase: 'interrupted' }] });
    expect(model.nodes[nodeKey('session', 'tune')]).toMatchObject({ status: 'active', runs: [{ task: 't1', phase: 'interrupted' }, { task: 't2', phase: 'started' }] });
  });

  it('keys a node by its graph and its id, and reads both back', () => {
    expect(splitNodeKey(nodeKey('tune', 'optimize'))).toEqual(['tune', 'optimize']);
    expect(nodeKey('session', 'tune')).not.toBe(nodeKey('session/tune', ''));
  });

  it('counts a node\'s runs in a loop and keeps their order', () => {
    const runs = [1, 2, 3].flatMap((i) => [node('tune', 'optimize', `o${i}`, 'started', { data: i }), node('tune', 'optimize', `o${i}`, 'finished', { data: i * 10 })]);
    const model = reduceGraphAll([ev({ type: 'graph.described', graphs: [SESSION_GRAPH, tune] }), ...runs]);
    expect(model.nodes[nodeKey('tune', 'optimize')]!.runs.map((r) => [r.input, r.output])).toEqual([[1, 10], [2, 20], [3, 30]]);
  });
});

describe('graph layout', () => {
  const overlap = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
    Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height;

  for (const [name, strategy] of [
    ['autonomous', new AutonomousTuningStrategy()],
    ['explicit', new ExplicitTuningStrategy()],
  ] as const) {
    it(`places every node of the ${name} strategy's own graph apart, inside the drawing, with every edge from its source to its target`, async () => {
      const graph = await describeGraph('tune', strategy.createGraph(llm) as never);
      const placed = layoutGraph(graph);
      expect(placed.nodes.map((n) => n.id).sort()).toEqual(graph.nodes.map((n) => n.id).sort());
      for (const n of placed.nodes) {
        expect(n.x - n.width / 2).toBeGreaterThanOrEqual(0);
        expect(n.y + n.height / 2).toBeLessThanOrEqual(placed.height);
        for (const m of placed.nodes) if (m !== n) expect(overlap(n, m), `${n.id} / ${m.id}`).toBe(false);
      }
      expect(placed.edges).toHaveLength(graph.edges.length);
      const at = new Map(placed.nodes.map((n) => [n.id, n]));
      for (const e of placed.edges) {
        const target = at.get(e.target)!;
        // The arrow ends on the target's border.
        expect(Math.abs(e.end.x - target.x)).toBeLessThanOrEqual(target.width / 2 + 1);
        expect(Math.abs(e.end.y - target.y)).toBeLessThanOrEqual(target.height / 2 + 1);
        expect(e.path).toMatch(/^M[\d.]+,[\d.]+ [LQ]/);
      }
      // Top to bottom: the entry above everything, the exit below its predecessors.
      const start = at.get('__start__')!;
      expect(placed.nodes.every((n) => n.id === '__start__' || n.y > start.y)).toBe(true);
      expect(placed.edges.filter((e) => e.conditional).length).toBe(graph.edges.filter((e) => e.conditional).length);
      expect(placed.edges.some((e) => e.conditional)).toBe(true);
    });
  }
});
