/**
 * The panel's graph section: the session graph and, beside it, the subgraph of the node that ran last (or the one the
 * user picked), each node lit by what it did in this session; a click on a node shows its runs, with what each was
 * given and returned. Built with DOM calls and textContent only (node names and data come from the session).
 */
import type { GraphView, JsonPreview } from '../src/engine/progress/events';
import { layoutGraph, type GraphLayout, type PlacedNode } from './graph-layout';
import { nodeKey, nodeLabel, splitNodeKey, type GraphModel, type NodeRun, type NodeState } from './graph-model';
import { arrowDefs, el, onActivate, svg } from './svg-dom';

/** Runs shown for the selected node, newest first. */
const RUNS_SHOWN = 5;

function nodeTitle(graph: GraphView, node: PlacedNode, state: NodeState | undefined): string {
  const runs = state?.runs.length ?? 0;
  const parts = [`${graph.id}/${node.label}`, runs === 0 ? 'not run' : `${runs} run${runs > 1 ? 's' : ''}`];
  if (state?.retries) parts.push(`${state.retries} retr${state.retries > 1 ? 'ies' : 'y'}`);
  if (node.subgraph) parts.push(`runs the graph ${node.subgraph}`);
  return parts.join(' · ');
}

/**
 * Each graph's layout, by the description the events carry: a graph is described once per run and drawn again on every
 * redraw, and dagre takes milliseconds (about 15 ms for the autonomous strategy's graph).
 */
const layouts = new WeakMap<GraphView, GraphLayout>();

function layoutOf(graph: GraphView): GraphLayout {
  let placed = layouts.get(graph);
  if (!placed) layouts.set(graph, (placed = layoutGraph(graph)));
  return placed;
}

/** One graph as an SVG figure; `selected` is the nodeKey of the selected node. */
function drawGraph(graph: GraphView, model: GraphModel, selected: string | undefined, onSelect: (key: string) => void): HTMLElement {
  const placed = layoutOf(graph);
  const root = svg('svg', { class: 'graph', viewBox: `0 0 ${placed.width} ${placed.height}`, width: placed.width, height: placed.height, role: 'group', 'aria-label': `graph ${graph.name}` });
  const arrow = `arrow-${graph.id.replace(/[^\w-]/g, '_')}`;
  root.append(arrowDefs(arrow));
  for (const edge of placed.edges) {
    const from = model.nodes[nodeKey(graph.id, edge.source)];
    const to = model.nodes[nodeKey(graph.id, edge.target)];
    // An edge both of whose ends ran was (most likely) taken.
    const taken = (from?.runs.length ?? 0) > 0 && ((to?.runs.length ?? 0) > 0 || edge.target === '__end__');
    const path = svg('path', { d: edge.path, class: `edge${edge.conditional ? ' conditional' : ''}${taken ? ' taken' : ''}`, 'marker-end': `url(#${arrow})` });
    root.append(path);
  }
  for (const node of placed.nodes) {
    const key = nodeKey(graph.id, node.id);
    const state = model.nodes[key];
    const status = node.terminal ? 'terminal' : (state?.status ?? 'idle');
    const g = svg('g', {
      class: `node status-${status}${node.subgraph ? ' host' : ''}${key === selected ? ' selected' : ''}`,
      tabindex: 0,
      role: 'button',
      'data-node': node.id,
      'data-graph': graph.id,
      'aria-label': nodeTitle(graph, node, state),
    });
    const title = svg('title', {});
    title.textContent = nodeTitle(graph, node, state);
    g.append(title);
    g.append(svg('rect', { x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height, rx: node.terminal ? node.height / 2 : 5 }));
    if (node.subgraph) g.append(svg('rect', { class: 'inner', x: node.x - node.width / 2 + 3, y: node.y - node.height / 2 + 3, width: node.width - 6, height: node.height - 6, rx: 3 }));
    const label = svg('text', { x: node.x, y: node.y, 'text-anchor': 'middle', 'dominant-baseline': 'central' });
    label.textContent = node.label;
    g.append(label);
    const runs = state?.runs.length ?? 0;
    if (runs > 1 || state?.retries) {
      // A badge at the top right: how often it ran, and how often the model was asked again in it.
      const badge = svg('text', { class: 'badge', x: node.x + node.width / 2 - 2, y: node.y - node.height / 2 - 3, 'text-anchor': 'end' });
      badge.textContent = `${runs > 1 ? `×${runs}` : ''}${state?.retries ? ` ↻${state.retries}` : ''}`.trim();
      g.append(badge);
    }
    if (!node.terminal) onActivate(g, () => onSelect(key));
    root.append(g);
  }
  const figure = el('figure', 'graph-figure');
  figure.append(root, el('figcaption', undefined, graph.id === graph.name ? graph.name : `${graph.id}: ${graph.name}`));
  return figure;
}

function json(value: JsonPreview | undefined): HTMLElement {
  return el('pre', 'json', value === undefined ? '(none)' : JSON.stringify(value, null, 2));
}

function duration(run: NodeRun): string {
  if (!run.endedAt) return '';
  const ms = Date.parse(run.endedAt) - Date.parse(run.startedAt);
  return ms >= 1000 ? ` in ${(ms / 1000).toFixed(1)} s` : ` in ${ms} ms`;
}

function renderRuns(key: string, model: GraphModel): HTMLElement {
  const [graph, node] = splitNodeKey(key);
  const state = model.nodes[key];
  const box = el('div', 'node-details');
  box.id = 'graph-node-details';
  box.append(el('h3', undefined, `${graph}/${nodeLabel(node)}`));
  if (!state || state.runs.length === 0) {
    box.append(el('p', 'muted', 'This node has not run in this session.'));
    return box;
  }
  box.append(el('p', undefined, `${state.runs.length} run${state.runs.length > 1 ? 's' : ''}${state.retries ? `, ${state.retries} answer(s) of the model asked again` : ''}. Newest first:`));
  const runs = state.runs.slice(-RUNS_SHOWN).reverse();
  runs.forEach((run, i) => {
    const details = el('details');
    details.open = i === 0;
    details.append(el('summary', `run-${run.phase}`, `Run ${state.runs.length - i}: ${run.phase}${duration(run)}`));
    if (run.error) details.append(el('p', 'error', run.error));
    details.append(el('h4', undefined, 'Input'), json(run.input), el('h4', undefined, run.phase === 'failed' ? 'Output (none: it failed)' : 'Output (its update to the state)'), json(run.output));
    box.append(details);
  });
  return box;
}

/**
 * The graph section, or null before the session described its graph. `selected` is the nodeKey the user clicked (kept
 * by the caller across redraws); `onSelect` is called with a new one.
 */
export function renderGraphSection(model: GraphModel, selected: string | undefined, onSelect: (key: string) => void): HTMLElement | null {
  const session = model.graphs[0];
  if (!session) return null;
  const [selectedGraph, selectedNode] = selected === undefined ? [] : splitNodeKey(selected);
  // Beside the session graph: the subgraph of the selected node (or of the node whose subgraph the selection is in),
  // else the one that ran last.
  const selectedHost = model.graphs.find((g) => g.id === selectedGraph)?.nodes.find((n) => n.id === selectedNode)?.subgraph;
  const besideId = selectedHost ?? (selectedGraph !== undefined && selectedGraph !== session.id ? selectedGraph : undefined) ?? model.focusGraph ?? model.graphs[1]?.id;
  const beside = model.graphs.find((g) => g.id === besideId && g.id !== session.id);
  const row = el('div', 'graph-row');
  row.append(drawGraph(session, model, selected, onSelect));
  if (beside) row.append(drawGraph(beside, model, selected, onSelect));
  const legend = el('p', 'graph-legend muted', 'Lit: running · solid: ran · outlined: not run · red: failed · ×n runs · ↻n answers asked again · double border: runs the graph beside it. Click a node for its inputs and outputs.');
  const section = el('section');
  section.id = 'graph';
  section.setAttribute('aria-labelledby', 'graph-title');
  const title = el('h2', undefined, 'Graph');
  title.id = 'graph-title';
  section.append(title, legend, row);
  if (selected && model.graphs.some((g) => g.id === selectedGraph)) section.append(renderRuns(selected, model));
  return section;
}
