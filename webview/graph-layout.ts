/**
 * Where each node and edge of a graph goes, laid out by dagre (Sugiyama-style layered layout, the algorithm Mermaid's
 * flowcharts use; 50 KB, no eval, nothing remote). Pure geometry: the panel turns it into SVG elements.
 */
import { graphlib, layout } from '@dagrejs/dagre';
import type { GraphEdgeView, GraphNodeView, GraphView } from '../src/engine/progress/events';
import { nodeLabel } from './graph-model';

/** A node as described (its id, the graph it hosts), placed. */
export interface PlacedNode extends GraphNodeView {
  label: string;
  /** Centre, and size, in SVG units. */
  x: number;
  y: number;
  width: number;
  height: number;
  /** LangGraph's entry or exit. */
  terminal: boolean;
}

/** An edge as described, placed. */
export interface PlacedEdge extends GraphEdgeView {
  /** SVG path data, from the source's border to the target's. */
  path: string;
  /** Where the arrow ends and the direction it points in (degrees), for its head. */
  end: { x: number; y: number; angle: number };
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
}

/** 12 px text: about 7 px per character, plus padding. */
const CHAR_WIDTH = 7;
const NODE_HEIGHT = 28;

export function layoutGraph(graph: GraphView): GraphLayout {
  const g = new graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 30, edgesep: 10, marginx: 6, marginy: 6 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) {
    const label = nodeLabel(node.id);
    g.setNode(node.id, { width: Math.max(56, label.length * CHAR_WIDTH + 24), height: NODE_HEIGHT });
  }
  graph.edges.forEach((e, i) => {
    if (g.hasNode(e.source) && g.hasNode(e.target)) g.setEdge(e.source, e.target, { minlen: 1 }, String(i));
  });
  layout(g);
  const size = g.graph() as { width?: number; height?: number };
  const nodes = graph.nodes.map((node): PlacedNode => {
    const placed = g.node(node.id) as { x: number; y: number; width: number; height: number };
    return { ...node, label: nodeLabel(node.id), x: placed.x, y: placed.y, width: placed.width, height: placed.height, terminal: node.id === '__start__' || node.id === '__end__' };
  });
  const edges = graph.edges.flatMap((e, i): PlacedEdge[] => {
    const placed = g.edge({ v: e.source, w: e.target, name: String(i) }) as { points?: { x: number; y: number }[] } | undefined;
    const points = placed?.points ?? [];
    if (points.length < 2) return [];
    const [last, before] = [points.at(-1)!, points.at(-2)!];
    return [
      {
        ...e,
        path: smoothPath(points),
        end: { x: last.x, y: last.y, angle: (Math.atan2(last.y - before.y, last.x - before.x) * 180) / Math.PI },
      },
    ];
  });
  return { width: Math.ceil(size.width ?? 0), height: Math.ceil(size.height ?? 0), nodes, edges };
}

const f = (n: number) => n.toFixed(1);

/** A curve through dagre's points: straight for two, else quadratic segments through the midpoints. */
function smoothPath(points: readonly { x: number; y: number }[]): string {
  const [first, ...rest] = points;
  if (rest.length === 1) return `M${f(first!.x)},${f(first!.y)} L${f(rest[0]!.x)},${f(rest[0]!.y)}`;
  let d = `M${f(first!.x)},${f(first!.y)}`;
  for (let i = 0; i < rest.length - 1; i++) {
    const control = rest[i]!;
    const next = rest[i + 1]!;
    const end = i === rest.length - 2 ? next : { x: (control.x + next.x) / 2, y: (control.y + next.y) / 2 };
    d += ` Q${f(control.x)},${f(control.y)} ${f(end.x)},${f(end.y)}`;
  }
  return d;
}
