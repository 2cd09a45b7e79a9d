/**
 * Where each node and edge of a graph goes, laid out by dagre (Sugiyama-style layered layout, the algorithm Mermaid's
 * flowcharts use; 50 KB, no eval, nothing remote): the session's graphs here, the lineage of a population in
 * lineage-layout.ts. Pure geometry: the panels turn it into SVG elements.
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
export const CHAR_WIDTH = 7;
const NODE_HEIGHT = 28;

/** What dagre places: boxes by id, and edges between them with an optional label box. */
export interface DagInput {
  nodes: { id: string; width: number; height: number }[];
  edges: { source: string; target: string; labelSize?: { width: number; height: number } }[];
  /** Space between nodes of a rank, and between ranks. */
  spacing?: { node: number; rank: number };
}

export interface DagLayout {
  width: number;
  height: number;
  /** Centres, by id. */
  nodes: Map<string, { x: number; y: number }>;
  /** By edge index; undefined for an edge dagre could not place (an end that is no node). */
  edges: ({ path: string; end: { x: number; y: number; angle: number }; label?: { x: number; y: number } } | undefined)[];
}

/** Places a directed graph top to bottom (dagre): node centres, each edge's curve and arrow end, and its label's centre. */
export function layoutDag(input: DagInput): DagLayout {
  const g = new graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: input.spacing?.node ?? 18, ranksep: input.spacing?.rank ?? 30, edgesep: 10, marginx: 6, marginy: 6 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of input.nodes) g.setNode(node.id, { width: node.width, height: node.height });
  input.edges.forEach((e, i) => {
    if (g.hasNode(e.source) && g.hasNode(e.target)) g.setEdge(e.source, e.target, { minlen: 1, ...(e.labelSize && { width: e.labelSize.width, height: e.labelSize.height, labelpos: 'c' }) }, String(i));
  });
  layout(g);
  const size = g.graph() as { width?: number; height?: number };
  const nodes = new Map(
    input.nodes.map((n) => {
      const { x, y } = g.node(n.id) as { x: number; y: number };
      return [n.id, { x, y }];
    }),
  );
  const edges = input.edges.map((e, i) => {
    const placed = g.edge({ v: e.source, w: e.target, name: String(i) }) as { points?: { x: number; y: number }[]; x?: number; y?: number } | undefined;
    const points = placed?.points ?? [];
    if (points.length < 2) return undefined;
    const [last, before] = [points.at(-1)!, points.at(-2)!];
    return {
      path: smoothPath(points),
      end: { x: last.x, y: last.y, angle: (Math.atan2(last.y - before.y, last.x - before.x) * 180) / Math.PI },
      ...(e.labelSize && placed?.x !== undefined && placed.y !== undefined && { label: { x: placed.x, y: placed.y } }),
    };
  });
  return { width: Math.ceil(size.width ?? 0), height: Math.ceil(size.height ?? 0), nodes, edges };
}

export function layoutGraph(graph: GraphView): GraphLayout {
  const boxes = graph.nodes.map((node) => {
    const label = nodeLabel(node.id);
    return { node, label, width: Math.max(56, label.length * CHAR_WIDTH + 24), height: NODE_HEIGHT };
  });
  const placed = layoutDag({ nodes: boxes.map((b) => ({ id: b.node.id, width: b.width, height: b.height })), edges: graph.edges });
  const nodes = boxes.map(({ node, label, width, height }): PlacedNode => {
    const { x, y } = placed.nodes.get(node.id)!;
    return { ...node, label, x, y, width, height, terminal: node.id === '__start__' || node.id === '__end__' };
  });
  const edges = graph.edges.flatMap((e, i): PlacedEdge[] => {
    const at = placed.edges[i];
    return at ? [{ ...e, path: at.path, end: at.end }] : [];
  });
  return { width: placed.width, height: placed.height, nodes, edges };
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
