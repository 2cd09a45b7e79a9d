/**
 * The panel's lineage tree of an evolutionary session: its population drawn from the original down (lineage-model.ts,
 * laid out by lineage-layout.ts), live as children are decided, enter or are rejected. A node is a button (click,
 * Enter or Space): its details show how it was made (the operator, its parents, the judge's reading), its time and
 * niche, its changes against its first parent, its configurations and profile, its model calls, and the actions on
 * it: propose its code in the editor, branch a new session from it. Why evolution stopped, and "Evolve further" on a
 * finished session, head the section. DOM calls and textContent only: the texts come from the model.
 */
import '@vscode-elements/elements/dist/vscode-button/index.js';
import type { EventOf } from '../src/engine/progress/events';
import type { ConfigProfile } from '../src/tuner/run/profile';
import { describeReason, type PopulationView } from '../src/engine/session/session-view';
import { formatParams, formatTime } from './chart-series';
import { layoutLineage, LINE_HEIGHT, type LineageLayout } from './lineage-layout';
import { madeBy, nicheText } from '../src/engine/progress/describe-variant';
import { lineageGraph, speedupText, type LineageGraph, type LineageNode } from './lineage-model';
import { modelCallsTable } from './model-calls';
import { arrowDefs, el, onActivate, svg } from './svg-dom';

export interface LineageSection {
  population: PopulationView;
  /** The session runs in this window: nothing can be branched or evolved from it yet. */
  live: boolean;
  /** It finished: it can evolve further. */
  finished: boolean;
  /** Every model call of the session, in order (a child's are named after its step). */
  calls: readonly EventOf<'llm.usage'>[];
  /** The id of the node whose details are shown. */
  selected: string | undefined;
}

export interface LineageActions {
  select(id: string): void;
  propose(variantId: string): void;
  branch(variantId: string): void;
  evolveFurther(): void;
}

/** What the panel draws elsewhere too, drawn the same way here. */
export interface LineageParts {
  diff(diff: string): HTMLElement;
  /** The child's step: its tunable parameters, restrictions, configurations and best configuration's profile (and its diff, `withDiff`). */
  step(stepId: string, withDiff: boolean): HTMLElement | null;
  profile(profile: ConfigProfile, title: string): HTMLElement;
}

/** The last layout, by what it placed: a redraw for another event leaves the tree as it is. */
let cached: { key: string; layout: LineageLayout } | undefined;

function layoutOf(graph: LineageGraph): LineageLayout {
  const key = JSON.stringify([graph.nodes.map((n) => [n.id, n.lines, n.description]), graph.edges.map((e) => [e.source, e.target, e.label])]);
  if (cached?.key !== key) cached = { key, layout: layoutLineage(graph) };
  return cached.layout;
}

function button(label: string, onClick: () => void, attrs: { id: string; title: string; secondary?: boolean }): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  b.id = attrs.id;
  b.title = attrs.title;
  if (attrs.secondary) b.setAttribute('secondary', '');
  b.addEventListener('click', onClick);
  return b;
}

function drawTree(placed: LineageLayout, selected: string | undefined, select: (id: string) => void): SVGSVGElement {
  const root = svg('svg', { class: 'lineage', viewBox: `0 0 ${placed.width} ${placed.height}`, width: placed.width, height: placed.height, role: 'group', 'aria-label': 'lineage tree of the population' });
  root.append(arrowDefs('lineage-arrow'));
  for (const edge of placed.edges) {
    root.append(svg('path', { d: edge.path, class: `edge op-${edge.operator}`, 'marker-end': 'url(#lineage-arrow)' }));
    const label = svg('text', { class: `edge-label op-${edge.operator}`, x: edge.labelAt.x, y: edge.labelAt.y, 'text-anchor': 'middle', 'dominant-baseline': 'central' });
    label.textContent = edge.label;
    root.append(label);
  }
  for (const node of placed.nodes) {
    const classes = ['lineage-node', `kind-${node.kind}`, node.best && 'best', node.retired && 'retired', node.id === selected && 'selected'].filter(Boolean).join(' ');
    const g = svg('g', { class: classes, id: `lineage-node-${node.id}`, 'data-node': node.id, tabindex: 0, role: 'button', 'aria-pressed': String(node.id === selected), 'aria-label': node.description });
    const title = svg('title', {});
    title.textContent = node.description;
    g.append(title, svg('rect', { x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height, rx: 5 }));
    node.lines.forEach((line, i) => {
      const text = svg('text', { class: i === 0 ? 'head' : 'fact', x: node.x, y: node.y - node.height / 2 + 4 + LINE_HEIGHT * (i + 0.5), 'text-anchor': 'middle', 'dominant-baseline': 'central' });
      text.textContent = line;
      g.append(text);
    });
    onActivate(g, () => select(node.id));
    root.append(g);
  }
  return root;
}

function facts(rows: [string, string | undefined][]): HTMLElement {
  const dl = el('dl', 'facts');
  for (const [k, v] of rows) if (v) dl.append(el('dt', undefined, k), el('dd', undefined, v));
  return dl;
}

function details(node: LineageNode, s: LineageSection, actions: LineageActions, parts: LineageParts): HTMLElement {
  const box = el('div', 'node-details lineage-details');
  box.id = 'lineage-details';
  const { variant, child } = node;
  const original = s.population.variants.find((v) => v.operator === 'original');
  const operator = variant?.operator ?? child!.operator;
  const parents = variant?.parents ?? child!.parents;
  box.append(el('h3', undefined, `${node.id}: ${madeBy(operator, parents)}`));
  if (variant) {
    const speedup = variant !== original ? speedupText(original, variant) : '';
    box.append(
      facts([
        ['Time', `${formatTime(variant.timeMs)}${speedup ? ` (${speedup} the original's speed)` : ''}`],
        ['Niche', nicheText(variant)],
        ['In the archive', node.best ? 'yes, the fastest: the session\'s kernel' : node.retired ? 'no: retired for a better one of its niche (it stays in the lineage)' : 'yes: a parent for the next children'],
        // A judge-led child's idea is the judge's instruction, told below.
        ['Idea', (!child?.judged && variant.instruction) || undefined],
        ['Best configuration', formatParams(variant.bestParams)],
      ]),
    );
  } else if (child?.rejection) {
    box.append(el('p', 'rejection', `Rejected: ${describeReason(child.rejection)}. Kept out of the population; the next requests tell the model what failed.`));
  } else {
    box.append(el('p', 'muted', s.live ? 'Being written by the model or measured on the GPU.' : 'Not finished when the session ended.'));
  }
  if (child?.judged) {
    const judge = el('p', 'judge');
    const diagnosis = child.judged.diagnosis.trim();
    judge.append(el('strong', undefined, 'The judge'), ` read ${parents[0]}'s profile: ${diagnosis}${/[.!?]$/.test(diagnosis) ? '' : '.'} It asked: ${child.judged.instruction}`);
    box.append(judge);
  }
  if (variant && variant.operator !== 'original') {
    const row = el('div', 'actions');
    row.append(button('Propose in editor', () => actions.propose(variant.id), { id: 'propose-variant', title: `Propose ${variant.id}'s code, its best values defined, in the editor to accept or reject change by change` }));
    if (variant.stepId && !s.live) {
      row.append(button('Branch from here', () => actions.branch(variant.id), { id: 'branch-variant', secondary: true, title: `Start a new evolutionary session from ${variant.id}: it enters that session's population, which evolves from it` }));
    }
    box.append(row);
    box.append(el('h4', undefined, `Changes against ${variant.parents[0]}`), parts.diff(variant.diff));
  }
  const stepId = variant?.stepId ?? child?.stepId;
  const step = stepId === undefined ? null : parts.step(stepId, !variant);
  if (step) box.append(step);
  else if (variant?.profile) box.append(parts.profile(variant.profile, `Profile of ${variant.id}`));
  const calls = stepId === undefined ? [] : s.calls.filter((c) => c.purpose.endsWith(` ${stepId}`));
  if (calls.length > 0) box.append(modelCallsTable(calls, `Model calls of ${stepId}`));
  return box;
}

/** The section, or null for a session without a population. */
export function renderLineageSection(s: LineageSection, actions: LineageActions, parts: LineageParts): HTMLElement | null {
  if (s.population.variants.length === 0) return null;
  const graph = lineageGraph(s.population, s.live);
  const placed = layoutOf(graph);
  const section = el('section');
  section.id = 'lineage';
  section.setAttribute('aria-labelledby', 'lineage-title');
  const title = el('h2', undefined, 'Population');
  title.id = 'lineage-title';
  const p = s.population;
  const rejected = graph.nodes.filter((n) => n.kind === 'rejected').length;
  const summary = el(
    'p',
    'lineage-summary',
    `${p.variants.length} variant(s), ${p.variants.length - p.retired.length} in the archive, ${p.retired.length} retired; ${rejected} child(ren) rejected.${p.bestId ? ` The fastest: ${p.bestId}.` : ''}`,
  );
  section.append(title, summary);
  if (p.stopped) {
    const stop = el('p', 'lineage-stopped');
    stop.id = 'lineage-stopped';
    stop.append(el('strong', undefined, 'Evolution stopped: '), `${p.stopped.reason.message}.`);
    if (s.finished && !s.live) stop.append(' ', button('Evolve further…', actions.evolveFurther, { id: 'evolve-further', secondary: true, title: 'Go on evolving this population: you give a larger budget (or more children), what was spent still counts' }));
    section.append(stop);
  }
  section.append(
    el('p', 'lineage-legend muted', 'Each node a variant (its time, speed-up over the original, niche) or a child that made none, dimmed; edges from its parents, labelled with the operator. Click a node, or Tab to it and press Enter, for its changes, configurations and profile.'),
  );
  const holder = el('div', 'lineage-holder');
  holder.append(drawTree(placed, s.selected, actions.select));
  section.append(holder);
  const node = graph.nodes.find((n) => n.id === s.selected);
  if (node) section.append(details(node, s, actions, parts));
  return section;
}
