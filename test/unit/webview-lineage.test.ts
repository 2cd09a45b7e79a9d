// The panel's lineage tree of an evolutionary session: the nodes and edges its population makes (the recorded session
// on the fake GPU, and populations written here for what it lacks), and their layout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TuningEvent, VariantView } from '../../src/engine/progress/events';
import { reduceAll, type PopulationView, type SessionHeader } from '../../src/engine/session/session-view';
import { layoutLineage } from '../../webview/lineage-layout';
import { nicheText, twinRejection } from '../../src/engine/progress/describe-variant';
import { lineageGraph } from '../../webview/lineage-model';

const recorded = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')) as { report: { header: SessionHeader; events: TuningEvent[] } };
const population = reduceAll(recorded.report.header, recorded.report.events).population!;

const variant = (id: string, parents: string[], operator: VariantView['operator'], timeMs: number, child: number | null): VariantView => ({
  id,
  child,
  ...(child !== null && { stepId: `c${child}` }),
  parents,
  operator,
  instruction: '',
  timeMs,
  objectiveValue: timeMs,
  bestParams: {},
  tuneParams: {},
  restrictions: [],
  bound: 'dram',
  occupancy: 'high',
  code: '',
  diff: '',
});

describe('lineage tree model', () => {
  it('makes a node per variant and per child that made none, an edge per parent labelled with the operator', () => {
    const graph = lineageGraph(population, false);
    const variants = graph.nodes.filter((n) => n.kind === 'variant');
    expect(variants.map((n) => n.id)).toEqual(population.variants.map((v) => v.id));
    const rejected = graph.nodes.filter((n) => n.kind === 'rejected');
    expect(rejected.map((n) => n.id)).toEqual(population.children.filter((c) => c.rejection).map((c) => c.stepId));
    expect(rejected[0]!.lines).toEqual([`${rejected[0]!.id} · rejected`, 'wrong result']);
    expect(graph.nodes.some((n) => n.kind === 'unfinished')).toBe(false);
    // Every parent of every variant and child, one edge each, named by the operator; the original has none.
    const expected = [
      ...population.variants.filter((v) => v.operator !== 'original').flatMap((v) => v.parents.map((p) => `${p}->${v.id} ${v.operator}`)),
      ...population.children.filter((c) => !c.variant).flatMap((c) => c.parents.map((p) => `${p}->${c.stepId} ${c.operator}`)),
    ];
    expect(graph.edges.map((e) => `${e.source}->${e.target} ${e.label}`)).toEqual(expected);
    expect(graph.edges.filter((e) => e.operator === 'crossover').length).toBeGreaterThanOrEqual(2);
  });

  it('says on each node its time, its speed-up over the original and its niche, and marks the fastest and the retired', () => {
    const graph = lineageGraph(population, false);
    const original = population.variants[0]!;
    const best = graph.nodes.find((n) => n.best)!;
    expect(best.id).toBe(population.bestId);
    const v = best.variant!;
    expect(best.lines[0]).toBe(`${v.id} · best`);
    expect(best.lines[1]).toMatch(new RegExp(`· ${(original.timeMs / v.timeMs).toFixed(2)}×$`));
    expect(best.description).toContain(nicheText(v));
    expect(best.description).toMatch(/the fastest$/);
    for (const id of population.retired) {
      const node = graph.nodes.find((n) => n.id === id)!;
      expect(node.retired).toBe(true);
      expect(node.lines[0]).toBe(`${id} · retired`);
    }
    const first = graph.nodes.find((n) => n.id === 'v0')!;
    expect(first.description).toMatch(/^v0, the original kernel: /);
    expect(first.lines[1]).not.toContain('×');
  });

  it('shows a child not finished as being made while the session runs, as not finished after, and a branch\'s kernel by its edge', () => {
    const p: PopulationView = {
      variants: [variant('v0', [], 'original', 2, null), variant('v1', ['v0'], 'edit', 1, null)],
      retired: [],
      bestId: 'v1',
      children: [{ child: 0, stepId: 'c0', operator: 'crossover', parents: ['v0', 'v1'] }],
    };
    const live = lineageGraph(p, true);
    expect(live.nodes.find((n) => n.id === 'c0')).toMatchObject({ kind: 'unfinished', lines: ['c0 · being made', 'crossover'] });
    expect(lineageGraph(p, false).nodes.find((n) => n.id === 'c0')!.lines[0]).toBe('c0 · not finished');
    expect(live.edges.map((e) => `${e.source}->${e.target} ${e.label}`)).toEqual(['v0->v1 branch', 'v0->c0 crossover', 'v1->c0 crossover']);
    expect(live.nodes.find((n) => n.id === 'v1')!.lines[1]).toBe('1 ms · 2.00×');
  });

  it('names the variant a child rejected as a twin was the kernel of', () => {
    const p: PopulationView = {
      variants: [variant('v0', [], 'original', 2, null), variant('v1', ['v0'], 'mutate', 1, 0)],
      retired: [],
      bestId: 'v1',
      children: [
        { child: 0, stepId: 'c0', operator: 'mutate', parents: ['v0'], variant: 'v1' },
        { child: 1, stepId: 'c1', operator: 'judge', parents: ['v0'], rejection: twinRejection('v1', 1) },
      ],
    };
    const node = lineageGraph(p, false).nodes.find((n) => n.id === 'c1')!;
    expect(node).toMatchObject({ kind: 'rejected', lines: ['c1 · rejected', 'twin of v1'] });
    expect(node.description).toBe('child 1 (c1), judge-led mutation of v0: rejected, twin of v1');
  });
});

describe('lineage tree layout', () => {
  const overlap = (a: { x: number; y: number; width: number; height: number }, b: typeof a) => Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height;

  it('puts every node apart inside the drawing, each child below its parents, each edge from its parent to its child with its label between them', () => {
    const graph = lineageGraph(population, false);
    const placed = layoutLineage(graph);
    expect(placed.nodes.map((n) => n.id).sort()).toEqual(graph.nodes.map((n) => n.id).sort());
    for (const n of placed.nodes) {
      expect(n.x - n.width / 2).toBeGreaterThanOrEqual(0);
      expect(n.y + n.height / 2).toBeLessThanOrEqual(placed.height);
      // Wide enough for its longest line at 7 px a character.
      expect(n.width).toBeGreaterThanOrEqual(Math.max(...n.lines.map((l) => l.length)) * 7);
      for (const m of placed.nodes) if (m !== n) expect(overlap(n, m), `${n.id} / ${m.id}`).toBe(false);
    }
    const at = new Map(placed.nodes.map((n) => [n.id, n]));
    expect(placed.edges).toHaveLength(graph.edges.length);
    for (const e of placed.edges) {
      const [source, target] = [at.get(e.source)!, at.get(e.target)!];
      expect(target.y, `${e.source} above ${e.target}`).toBeGreaterThan(source.y);
      // The arrow ends on the child's border.
      expect(Math.abs(e.end.x - target.x)).toBeLessThanOrEqual(target.width / 2 + 1);
      expect(Math.abs(e.end.y - target.y)).toBeLessThanOrEqual(target.height / 2 + 1);
      expect(e.labelAt.y).toBeGreaterThan(source.y);
      expect(e.labelAt.y).toBeLessThan(target.y);
    }
    // The keyboard goes through the nodes as they read: top to bottom, left to right.
    const order = placed.nodes.map((n) => [n.y, n.x] as const);
    expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    expect(placed.nodes[0]!.id).toBe('v0');
  });
});
