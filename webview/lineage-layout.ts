/**
 * Where the lineage tree's nodes, edges and edge labels go: the original at the top, each child below its parents
 * (dagre, as the session's graphs are laid out: graph-layout.ts). Pure geometry.
 */
import { CHAR_WIDTH, layoutDag } from './graph-layout';
import type { LineageEdge, LineageGraph, LineageNode } from './lineage-model';

export const LINE_HEIGHT = 15;
const PADDING = 8;
/** Edge labels are drawn at 11 px. */
const LABEL_CHAR_WIDTH = 6.2;

export interface PlacedLineageNode extends LineageNode {
  /** Centre and size, in SVG units. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedLineageEdge extends LineageEdge {
  path: string;
  end: { x: number; y: number; angle: number };
  /** The label's centre. */
  labelAt: { x: number; y: number };
}

export interface LineageLayout {
  width: number;
  height: number;
  /** In reading order: top to bottom, then left to right (the keyboard's order). */
  nodes: PlacedLineageNode[];
  edges: PlacedLineageEdge[];
}

export function layoutLineage(graph: LineageGraph): LineageLayout {
  const size = (n: LineageNode) => ({ width: Math.ceil(Math.max(...n.lines.map((l) => l.length)) * CHAR_WIDTH + 2 * PADDING), height: n.lines.length * LINE_HEIGHT + PADDING });
  const placed = layoutDag({
    nodes: graph.nodes.map((n) => ({ id: n.id, ...size(n) })),
    edges: graph.edges.map((e) => ({ source: e.source, target: e.target, labelSize: { width: Math.ceil(e.label.length * LABEL_CHAR_WIDTH + 6), height: LINE_HEIGHT } })),
    spacing: { node: 16, rank: 34 },
  });
  const nodes = graph.nodes
    .map((n): PlacedLineageNode => ({ ...n, ...placed.nodes.get(n.id)!, ...size(n) }))
    .sort((a, b) => a.y - b.y || a.x - b.x);
  const edges = graph.edges.flatMap((e, i): PlacedLineageEdge[] => {
    const at = placed.edges[i];
    return at ? [{ ...e, path: at.path, end: at.end, labelAt: at.label ?? at.end }] : [];
  });
  return { width: placed.width, height: placed.height, nodes, edges };
}
