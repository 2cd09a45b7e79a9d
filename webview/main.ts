/**
 * The tuning panel. Everything shown is derived from the session's event log (session-view.ts's reducer); the host
 * sends the log (`session`) and appends to it (`events`). The log and the panel's own choices (diff mode, sort order,
 * open steps, a plan being edited) are kept with setState, so a page loaded again comes back as it was.
 * DOM is built with textContent only: event text comes from an LLM and is never parsed as HTML.
 */
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-progress-ring/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { ConfigSummary, EventOf, TuningEvent } from '../src/engine/progress/events';
import { describeChange } from '../src/engine/progress/describe-change';
import type { EditedPlanStep, FromWebviewMessage, RelatedSeries, ToWebviewMessage } from '../src/extension/protocol';
import { decidedCandidate, reduceAll, speedup, usageText, type CandidateView, type SessionHeader, type SessionView, type StepView } from '../src/engine/session/session-view';
import { startedStepsOf } from '../src/engine/session/session-log';
import { profileSourceText, type ConfigProfile } from '../src/tuner/run/profile';
import { findingLines, shownFindings, verdictSummary, type SanitizerVerdict } from '../src/tuner/run/sanitizer';
import { describeSearch, formatMedianInterval } from '../src/tuner/types';
import { captureFocus, chartDataElement, exposeCollapsibles, restoreFocus } from './a11y';
import { sessionChartData } from './chart-data';
import { mountPerformanceChart, type PerformanceChart } from './chart';
import { formatParams, formatTime, type ChartData } from './chart-series';
import { parseUnifiedDiff, sideBySide, type DiffHunk, type DiffLine } from './diff-rows';
import { highlightHunk, highlightLines } from './highlight-dom';
import { renderGraphSection } from './graph-panel';
import { renderLineageSection } from './lineage-panel';
import { modelCallsTable } from './model-calls';
import { reduceGraphAll, type GraphModel } from './graph-model';
import { sortConfigs, type SortState } from './sort';
import { energyNote, metricColumns } from './config-metrics';
import { bestOf, type Objective } from '../src/tuner/types';
import { deviceText } from '../src/engine/progress/device-text';

interface UiState {
  diffMode: 'unified' | 'split';
  sort: SortState;
  /** Steps the user opened or closed (others follow the default: the running and the last finished step are open). */
  open: Record<string, boolean>;
  planDraft?: EditedPlanStep[];
  /** The approval was sent; the editor stays closed until the session moves on. */
  planSent?: boolean;
  /** The graph node whose runs are shown (graph-model's nodeKey). */
  graphNode?: string;
  /** The lineage tree's node whose details are shown (a variant's id, or a child's step). */
  lineageNode?: string;
}

interface Persisted {
  sessionId: string | null;
  header: SessionHeader | null;
  events: TuningEvent[];
  live: boolean;
  ui: UiState;
  /** Step series of the sessions it branched from or that branched from it (the host sends them). */
  related?: RelatedSeries[];
}

interface VsCodeApi {
  postMessage(message: FromWebviewMessage): void;
  getState(): Persisted | undefined;
  setState(state: Persisted): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const api = acquireVsCodeApi();
const app = document.getElementById('app')!;
const restored = api.getState();
let state: Persisted = restored ?? {
  sessionId: document.body.dataset.sessionId ?? null,
  header: null,
  events: [],
  live: false,
  ui: { diffMode: 'unified', sort: { column: 'time', descending: false }, open: {} },
};
// What the events say, derived again only when they change: a redraw for the UI's own state (a sort, a resize) reuses it.
let view: SessionView | undefined;
let graph: GraphModel = reduceGraphAll([]);
/** The session's model calls, in order. */
let calls: EventOf<'llm.usage'>[] = [];
/** The steps that ran: a branch can start from any of them. */
let startedSteps: ReadonlySet<string> = new Set();
let frame = 0;

function post(message: FromWebviewMessage): void {
  api.postMessage(message);
}

function commit(rebuild: boolean): void {
  api.setState(state);
  if (rebuild) {
    view = state.header ? reduceAll(state.header, state.events) : undefined;
    graph = reduceGraphAll(state.events);
    calls = state.events.filter((e): e is EventOf<'llm.usage'> => e.type === 'llm.usage');
    startedSteps = new Set(startedStepsOf(state.events).map((s) => s.stepId));
  }
  if (!frame) frame = requestAnimationFrame(() => ((frame = 0), render()));
}

window.addEventListener('message', (e: MessageEvent<ToWebviewMessage>) => {
  const message = e.data;
  switch (message.type) {
    case 'session':
      state = { ...state, sessionId: message.header.sessionId, header: message.header, events: message.events, live: message.live };
      break;
    case 'events': {
      if (message.sessionId !== state.sessionId) return;
      const have = state.events.length;
      // A gap means this view missed messages (it was not loaded yet): ask for the whole log again.
      if (message.from > have) return post({ type: 'ready', sessionId: state.sessionId });
      const fresh = message.events.slice(have - message.from);
      if (fresh.length === 0) return;
      state = { ...state, events: [...state.events, ...fresh] };
      break;
    }
    case 'live':
      if (message.sessionId !== state.sessionId) return;
      state = { ...state, live: message.live, header: message.header };
      break;
    case 'related':
      if (message.sessionId !== state.sessionId) return;
      state = { ...state, related: message.series };
      break;
  }
  commit(true);
  if (state.sessionId) post({ type: 'rendered', sessionId: state.sessionId, eventCount: state.events.length });
});

// --- DOM helpers -------------------------------------------------------------------------------------------------

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Record<string, string | boolean | undefined>, ...children: Child[]): HTMLElementTagNameMap[K];
function h(tag: string, attrs?: Record<string, string | boolean | undefined>, ...children: Child[]): HTMLElement;
function h(tag: string, attrs: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** `label`: what a screen reader says when the visible text alone would be ambiguous; `pressed`: for toggle buttons. */
function button(label: string, onClick: () => void, options: { secondary?: boolean; id?: string; title?: string; label?: string; pressed?: boolean } = {}): HTMLElement {
  const pressed = options.pressed === undefined ? undefined : String(options.pressed);
  const b = h('vscode-button', { secondary: options.secondary, id: options.id, title: options.title, 'aria-label': options.label, 'aria-pressed': pressed }, label);
  b.addEventListener('click', onClick);
  return b;
}

function section(title: string, id: string, ...children: Child[]): HTMLElement {
  return h('section', { id, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), ...children);
}

function elapsed(v: SessionView): string {
  if (!v.firstEventAt) return '0 s';
  const end = state.live ? Date.now() : Date.parse(v.lastEventAt ?? v.firstEventAt);
  const s = Math.max(0, Math.round((end - Date.parse(v.firstEventAt)) / 1000));
  return s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** A session of the tuner alone ("Tune parameters"): no model, no tokens, nothing to branch from. */
const tunerOnly = (v: SessionView) => v.header.strategy === 'tuner';

const STATUS_LABEL: Record<SessionView['status'], string> = {
  running: 'running',
  awaiting_approval: 'waiting for plan approval',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
};

// --- sections ----------------------------------------------------------------------------------------------------

function renderHeader(v: SessionView): HTMLElement {
  const running = state.live && (v.status === 'running' || v.status === 'awaiting_approval');
  const gain = speedup(v);
  const facts = h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'File'),
    h('dd', {}, v.header.fileName),
    h('dt', {}, 'Device'),
    h('dd', { id: 'device' }, v.device ? `${v.device.gpus ? `${v.device.gpus} × ` : ''}${deviceText(v.device)}` : '…'),
    ...(tunerOnly(v)
      ? [h('dt', {}, 'Tuning'), h('dd', {}, v.header.model)]
      : [h('dt', {}, 'Model'), h('dd', {}, `${v.header.model} · ${v.header.strategy} strategy`)]),
    h('dt', {}, 'Elapsed'),
    h('dd', { id: 'elapsed' }, elapsed(v)),
    ...(tunerOnly(v)
      ? []
      : [h('dt', {}, 'Tokens'), h('dd', { id: 'tokens' }, usageText(v.usage))]),
  );
  const actions = h('div', { class: 'actions' });
  if (running) {
    actions.append(
      h('vscode-progress-ring', { class: 'ring', 'aria-label': 'tuning in progress' }),
      button('Cancel', () => state.sessionId && post({ type: 'cancel', sessionId: state.sessionId }), { secondary: true, id: 'cancel', label: 'Cancel the tuning session' }),
    );
  }
  if (v.final && state.sessionId) {
    const id = state.sessionId;
    actions.append(
      button('Show diff in editor', () => post({ type: 'showDiff', sessionId: id, stepId: null }), { id: 'show-diff', label: 'Show the tuned kernel as a proposal in the editor' }),
      button('Side by side', () => post({ type: 'openSideBySide', sessionId: id, stepId: null }), { secondary: true, label: 'Open the tuned kernel side by side in the diff editor' }),
    );
  }
  return h(
    'header',
    {},
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, `${v.header.kernelName}`),
      h('vscode-badge', { variant: 'counter', class: `status status-${v.status}`, id: 'status' }, STATUS_LABEL[v.status]),
      gain !== undefined && h('span', { class: 'speedup', id: 'speedup' }, `${gain.toFixed(2)}× faster`),
    ),
    v.kernel && h('pre', { class: 'signature' }, codeLine(v.kernel.signature)),
    facts,
    actions,
  );
}

function renderFinal(v: SessionView): HTMLElement | null {
  if (!v.final) return null;
  const f = v.final;
  const launch = [`dim3 block(${f.launch.block.join(', ')});`, `dim3 grid(${f.launch.grid.join(', ')});`];
  return section(
    'Result',
    'result',
    // The model failed before the strategy was done: this is the best kernel so far, and says why it is not more.
    v.stoppedEarly && h('p', { class: 'stopped-early', id: 'stopped-early' }, `${v.stoppedEarly[0]!.toUpperCase()}${v.stoppedEarly.slice(1)}.`),
    h(
      'p',
      {},
      `${f.tracker.baselineTimeMs === null ? 'n/a' : formatTime(f.tracker.baselineTimeMs)} → ${f.tracker.finalTimeMs === null ? 'n/a' : formatTime(f.tracker.finalTimeMs)} (${f.tracker.speedup.toFixed(2)}×, ${f.tracker.improvementPct.toFixed(1)}% less time).`,
    ),
    h('p', {}, 'Chosen parameters (defined in the code with #ifndef guards, so a build can still override them): ', h('code', {}, formatParams(f.bestParams))),
    h('p', {}, 'The host code must launch the kernel with:'),
    h('pre', { class: 'code launch' }, ...launch.map((l) => h('div', {}, codeLine(l)))),
  );
}

function renderPlanEditor(v: SessionView): HTMLElement | null {
  if (!v.planAwaitingApproval || !state.live) {
    delete state.ui.planSent;
    return null;
  }
  if (state.ui.planSent) return section('Approve the plan', 'approval', h('p', { class: 'muted' }, 'Plan approved; the session continues…'));
  const draft = (state.ui.planDraft ??= v.order.map((id) => ({ id, title: v.steps[id]!.title, details: v.steps[id]!.details })));
  const list = h('ol', { class: 'plan-editor', id: 'plan-editor' });
  draft.forEach((step, i) => {
    const title = h('vscode-textfield', { value: step.title, 'aria-label': `Title of step ${i + 1}` }) as HTMLElement & { value: string };
    title.addEventListener('input', () => ((step.title = title.value), api.setState(state)));
    const details = h('vscode-textarea', { value: step.details, rows: '2', 'aria-label': `Details of step ${i + 1}` }) as HTMLElement & { value: string };
    details.addEventListener('input', () => ((step.details = details.value), api.setState(state)));
    list.append(
      h(
        'li',
        {},
        title,
        details,
        button('Remove', () => ((state.ui.planDraft = draft.filter((s) => s !== step)), commit(false)), { secondary: true, label: `Remove step ${i + 1}` }),
      ),
    );
  });
  const approve = button('Approve plan', () => {
    const steps = draft.filter((s) => s.title.trim() !== '');
    if (!state.sessionId || steps.length === 0) return;
    post({ type: 'approvePlan', sessionId: state.sessionId, steps });
    delete state.ui.planDraft;
    state.ui.planSent = true;
    commit(false);
  }, { id: 'approve' });
  const add = button('Add step', () => {
    draft.push({ id: `user-${Date.now().toString(36)}`, title: 'New step', details: '' });
    commit(false);
  }, { secondary: true });
  return section('Approve the plan', 'approval', h('p', {}, 'Edit, remove or add steps, then approve; nothing runs until you do.'), list, h('div', { class: 'actions' }, add, approve));
}

/** The chart lives across renders (Chart.js keeps its canvas and listeners); each render only gives it new data. */
let chartView: { section: HTMLElement; chart: PerformanceChart } | undefined;

function renderChart(data: ChartData): HTMLElement {
  if (chartView) {
    chartView.chart.update(data);
    return chartView.section;
  }
  const holder = h('div', { class: 'chart-holder', id: 'chart' });
  const exportButton = (format: 'png' | 'svg') =>
    button(`Export ${format.toUpperCase()}`, () => state.sessionId && post({ type: 'exportChart', sessionId: state.sessionId, format, data: chartView!.chart.image(format) }), {
      secondary: true,
      id: `export-${format}`,
      title: `Save the chart as a ${format.toUpperCase()} image`,
    });
  chartView = {
    section: section('Performance', 'performance', holder, h('div', { class: 'actions' }, exportButton('png'), exportButton('svg'))),
    chart: mountPerformanceChart(holder, data),
  };
  return chartView.section;
}

/** An evolutionary session's population as a lineage tree; a node's details draw its parts as the steps do. */
function renderLineage(v: SessionView): HTMLElement | null {
  const sessionId = state.sessionId;
  if (!v.population || !sessionId) return null;
  return renderLineageSection(
    { population: v.population, live: state.live, finished: v.status === 'completed', calls, selected: state.ui.lineageNode },
    {
      select: (id) => ((state.ui.lineageNode = id), commit(false)),
      propose: (variantId) => post({ type: 'proposeVariant', sessionId, variantId }),
      branch: (variantId) => post({ type: 'branchVariant', sessionId, variantId }),
      evolveFurther: () => post({ type: 'evolveFurther', sessionId }),
    },
    {
      diff: renderDiff,
      step: (stepId, withDiff) => {
        const step = v.steps[stepId];
        const candidate = step && decidedCandidate(step);
        return step && candidate ? renderCandidate(step, candidate, v.objective, withDiff) : null;
      },
      profile: renderProfile,
    },
  );
}

/** Every call to the model, its tokens and cost: closed until asked for. */
function renderModelCalls(): HTMLElement | null {
  if (calls.length === 0) return null;
  const collapsible = h('vscode-collapsible', { heading: 'Model calls', description: `${calls.length} call(s)`, open: state.ui.open['model-calls'] ?? false, id: 'model-calls' });
  collapsible.addEventListener('vsc-collapsible-toggle', (e) => {
    state.ui.open['model-calls'] = (e as CustomEvent<{ open: boolean }>).detail.open;
    api.setState(state);
  });
  collapsible.append(h('div', { class: 'model-calls-holder' }, modelCallsTable(calls, 'Every request to the model, in order')));
  return collapsible;
}

function renderGraph(): HTMLElement | null {
  return renderGraphSection(graph, state.ui.graphNode, (key) => ((state.ui.graphNode = key), commit(false)));
}

function renderAnalysis(v: SessionView): HTMLElement | null {
  if (!v.analysis && v.tests.length === 0 && !v.baseline) return null;
  const parts: Child[] = [];
  if (v.analysis) {
    parts.push(
      h('p', { class: 'description' }, v.analysis.description),
      h('p', {}, 'Problem size: ', h('code', {}, `[${v.analysis.problemSize.join(', ')}]`), ' · outputs: ', h('code', {}, v.analysis.outputs.join(', '))),
    );
  }
  if (v.tests.length > 0) {
    const rows = v.tests.map((t) =>
      h(
        'tr',
        {},
        h('td', {}, t.id),
        h('td', {}, t.origin),
        h('td', {}, `[${t.problemSize.join(', ')}]`),
        h('td', {}, t.outputs.join(', ')),
        h('td', { class: 'num' }, t.bytes === null ? '' : `${(t.bytes / 1e6).toFixed(1)} MB`),
        h('td', { class: 'num' }, t.timeMs === null ? '' : formatTime(t.timeMs)),
      ),
    );
    parts.push(
      h('h3', {}, 'Tests'),
      h('table', { class: 'grid' }, h('thead', {}, h('tr', {}, ...['Test', 'Origin', 'Problem size', 'Outputs', 'Data', 'Original time'].map((c) => h('th', {}, c)))), h('tbody', {}, ...rows)),
    );
  }
  if (v.baseline) parts.push(h('p', { id: 'baseline' }, 'Baseline: ', h('strong', {}, formatTime(v.baseline.timeMs)), ` with ${formatParams(v.baseline.params)} (test ${v.baseline.testId})`));
  if (v.baselineProfile) parts.push(renderProfile(v.baselineProfile, 'Profile of the original kernel', 'baseline-profile'));
  return section(tunerOnly(v) ? 'Test and baseline' : 'Kernel analysis', 'analysis', ...parts);
}

function codeLine(text: string): DocumentFragment {
  return highlightLines([text])[0]!;
}

function renderDiff(diff: string): HTMLElement {
  let hunks: DiffHunk[];
  try {
    hunks = parseUnifiedDiff(diff);
  } catch (error) {
    // Not expected (the engine writes these diffs), but the text is still worth showing.
    return h('div', {}, h('p', { class: 'muted' }, `The diff could not be read (${error instanceof Error ? error.message : String(error)}); as recorded:`), h('pre', { class: 'code' }, diff));
  }
  if (hunks.length === 0) return h('p', { class: 'muted' }, 'No change to the kernel.');
  const table = h('table', { class: `diff diff-${state.ui.diffMode}` });
  // Fixed column widths: the line numbers narrow, the code halves equal (the hunk header row must not set them).
  const columns = state.ui.diffMode === 'split' ? ['no', 'code', 'no', 'code'] : ['no', 'sign', 'code'];
  table.append(h('colgroup', {}, ...columns.map((c) => h('col', { class: `col-${c}` }))));
  const lineCell = (line: DiffLine | undefined, side: 'old' | 'new', fragment: DocumentFragment | undefined) => {
    const no = line ? (side === 'old' ? line.oldNo : line.newNo) : undefined;
    const kind = line ? line.kind : 'empty';
    return [h('td', { class: `no ${kind}` }, no === undefined ? '' : String(no)), h('td', { class: `code ${kind}` }, fragment ?? '')];
  };
  for (const hunk of hunks) {
    table.append(h('tr', { class: 'hunk-header' }, h('td', { colspan: state.ui.diffMode === 'split' ? '4' : '3' }, hunk.header)));
    const code = highlightHunk(hunk);
    if (state.ui.diffMode === 'unified') {
      for (const line of hunk.lines) {
        const fragment = (line.kind === 'add' ? code.new : code.old).get(line);
        const sign = line.kind === 'add' ? '+' : line.kind === 'del' ? '−' : ' ';
        table.append(h('tr', { class: line.kind }, h('td', { class: `no ${line.kind}` }, String(line.kind === 'add' ? line.newNo : line.oldNo)), h('td', { class: `sign ${line.kind}` }, sign), h('td', { class: `code ${line.kind}` }, fragment ?? '')));
      }
    } else {
      for (const row of sideBySide(hunk)) {
        table.append(h('tr', {}, ...lineCell(row.left, 'old', row.left && code.old.get(row.left)), ...lineCell(row.right, 'new', row.right && code.new.get(row.right))));
      }
    }
  }
  return h('div', { class: 'diff-holder' }, table);
}

function renderConfigs(candidate: CandidateView, bestKey: string | undefined): HTMLElement {
  const names = [...new Set(candidate.configs.flatMap((c) => Object.keys(c.config)))];
  const metrics = metricColumns(candidate.configs);
  // Which launches had their outputs verified; sessions recorded before that was recorded have none.
  const verified = candidate.configs.some((c) => c.verified);
  // How many launches each was timed with and how well its median is known; older recordings have neither.
  const launches = candidate.configs.some((c) => c.launches !== undefined);
  const sorted = sortConfigs(candidate.configs, state.ui.sort);
  const header = (label: string, column: string, title = 'Sort') => {
    const active = state.ui.sort.column === column;
    const th = h('th', { class: 'sortable', 'aria-sort': active ? (state.ui.sort.descending ? 'descending' : 'ascending') : 'none', tabindex: '0', title }, label, active ? (state.ui.sort.descending ? ' ▾' : ' ▴') : '');
    const sort = () => {
      state.ui.sort = { column, descending: active ? !state.ui.sort.descending : false };
      commit(false);
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && sort());
    return th;
  };
  const rows = sorted.map((c: ConfigSummary) =>
    h(
      'tr',
      { class: c.key === bestKey ? 'best' : c.status === 'ok' ? '' : 'failed' },
      ...names.map((n) => h('td', { class: 'num' }, c.config[n] === undefined ? '' : String(c.config[n]))),
      h('td', { class: 'num' }, c.timeMs === undefined ? '' : formatTime(c.timeMs)),
      launches && h('td', { class: 'num' }, c.launches === undefined ? '' : String(c.launches)),
      launches && h('td', { class: 'num' }, c.medianIntervalMs && c.timeMs !== undefined ? formatMedianInterval(c.timeMs, c.medianIntervalMs) : ''),
      ...metrics.map((m) => h('td', { class: 'num' }, m.text(c))),
      h('td', {}, c.key === bestKey ? 'best' : c.status === 'ok' ? 'ok' : c.status.replace(/_/g, ' '), c.error ? h('span', { class: 'muted', title: c.error }, ` – ${c.error}`) : ''),
      verified && h('td', { class: 'muted' }, c.verified ?? ''),
    ),
  );
  return h(
    'table',
    { class: 'grid configs' },
    h('thead', {}, h('tr', {}, ...names.map((n) => header(n, `param:${n}`)), header('Median time', 'time'), launches && h('th', { title: 'timed launches' }, 'Launches'), launches && h('th', { title: 'the wider side of the 95 % interval of the median' }, 'Median ±'), ...metrics.map((m) => header(m.label, m.id, `${m.title}; sort`)), header('Result', 'status'), verified && h('th', {}, 'Verified launches'))),
    h('tbody', {}, ...rows),
  );
}

/** A profile's lines, where they come from, and why not from Nsight Compute when they do not (the model read the same lines). */
function renderProfile(profile: ConfigProfile, title: string, id?: string): HTMLElement {
  const source = profileSourceText(profile);
  return h(
    'div',
    { class: 'profile', id },
    h('h4', {}, `${title} at `, h('code', {}, formatParams(profile.config))),
    h('p', { class: 'muted profile-source' }, profile.unavailable ? `${source}. ${profile.unavailable.message.split('\n', 1)[0]}` : source),
    h('ul', { class: 'profile-lines' }, ...profile.summary.map((line) => h('li', {}, line))),
  );
}

/** compute-sanitizer's verdict on a best configuration: clean, its findings at the file's lines, or why it did not check. */
function renderSanitizer(verdict: SanitizerVerdict): HTMLElement {
  const findings = shownFindings(verdict);
  return h(
    'div',
    { class: `sanitizer sanitizer-${verdict.status}` },
    h('h4', {}, 'compute-sanitizer at ', h('code', {}, formatParams(verdict.config))),
    h('p', { class: verdict.status === 'clean' ? 'muted' : 'sanitizer-verdict' }, verdictSummary(verdict)),
    findings.length > 0 && h('ul', { class: 'sanitizer-findings' }, ...findingLines(findings).map((line) => h('li', {}, line))),
  );
}

/** `changes`: whether the candidate rewrote the kernel (the tuner alone changes only the parameters' values). */
function renderCandidate(step: StepView, candidate: CandidateView, objective: Objective, changes: boolean): HTMLElement {
  const bestKey = bestOf(candidate.configs, objective)?.key;
  const noEnergy = energyNote(candidate.configs);
  const tuneParams = Object.entries(candidate.tuneParams);
  const toggle = h(
    'div',
    { class: 'toggle', role: 'group', 'aria-label': 'Diff layout' },
    button('Unified', () => ((state.ui.diffMode = 'unified'), commit(false)), { secondary: state.ui.diffMode !== 'unified', label: 'Unified diffs', pressed: state.ui.diffMode === 'unified' }),
    button('Side by side', () => ((state.ui.diffMode = 'split'), commit(false)), { secondary: state.ui.diffMode !== 'split', label: 'Side-by-side diffs', pressed: state.ui.diffMode === 'split' }),
  );
  return h(
    'div',
    { class: 'candidate' },
    step.candidates.length > 1 && h('h4', {}, `Candidate ${candidate.candidate}${candidate.attempt > 1 ? ` (attempt ${candidate.attempt})` : ''}`),
    changes && h('div', { class: 'row' }, h('h4', {}, 'Changes'), toggle),
    changes && renderDiff(candidate.diff),
    h(
      'div',
      { class: 'two-col' },
      h('div', {}, h('h4', {}, 'Tunable parameters'), tuneParams.length === 0 ? h('p', { class: 'muted' }, 'none') : h('ul', {}, ...tuneParams.map(([k, vs]) => h('li', {}, h('code', {}, k), `: ${vs.join(', ')}`)))),
      h('div', {}, h('h4', {}, 'Restrictions'), candidate.restrictions.length === 0 ? h('p', { class: 'muted' }, 'none') : h('ul', {}, ...candidate.restrictions.map((r) => h('li', {}, h('code', {}, r))))),
    ),
    h('h4', {}, `Configurations (${candidate.configs.length}${candidate.total ? ` of ${candidate.total}` : ''}, ${candidate.failures} failed)`),
    candidate.search && h('p', { class: 'search' }, `Search: ${describeSearch(candidate.search)}`),
    candidate.configs.length > 0 ? renderConfigs(candidate, bestKey) : h('p', { class: 'muted' }, 'none evaluated yet'),
    noEnergy && h('p', { class: 'muted energy-note' }, noEnergy),
    candidate.profile && renderProfile(candidate.profile, 'Profile of the best configuration'),
    candidate.sanitizer && renderSanitizer(candidate.sanitizer),
  );
}

const STEP_STATUS_LABEL: Record<StepView['status'], string> = { pending: 'pending', running: 'running', accepted: 'accepted', kept: 'kept in the population', rejected: 'rejected', skipped: 'skipped' };

function renderSteps(v: SessionView): HTMLElement | null {
  if (v.order.length === 0) return null;
  const lastFinished = [...v.order].reverse().find((id) => ['accepted', 'rejected'].includes(v.steps[id]!.status));
  const list = h('div', { class: 'steps' });
  v.order.forEach((id, i) => {
    const step = v.steps[id]!;
    const open = state.ui.open[id] ?? (step.status === 'running' || id === lastFinished);
    const summary =
      step.status === 'accepted' && step.accepted
        ? `accepted: ${step.accepted.objective ? describeChange(step.accepted).replaceAll(' -> ', ' → ') : `${formatTime(step.accepted.oldTimeMs)} → ${formatTime(step.accepted.newTimeMs)}`} (${step.accepted.improvementPct.toFixed(1)}%)`
        : step.reason
          ? `${STEP_STATUS_LABEL[step.status]}: ${step.reason}`
          : STEP_STATUS_LABEL[step.status];
    // The header holds one line: the status and the kind of reason; the reason in full is the first line of the body.
    const headline = step.status === 'accepted' || !step.reason ? summary : `${STEP_STATUS_LABEL[step.status]}: ${step.reason.split(':')[0]}`;
    const collapsible = h('vscode-collapsible', { heading: `${i + 1}. ${step.title}`, description: headline, title: summary, open, class: `step step-${step.status}`, 'data-step': id });
    collapsible.addEventListener('vsc-collapsible-toggle', (e) => {
      state.ui.open[id] = (e as CustomEvent<{ open: boolean }>).detail.open;
      api.setState(state);
    });
    const body = h('div', { class: 'step-body' });
    body.append(h('p', { class: `step-status status-${step.status}` }, h('span', { class: 'dot' }), h('span', { class: 'reason' }, summary)));
    if (step.details) body.append(h('p', { class: 'details' }, step.details));
    const actions = h('div', { class: 'actions' });
    const sessionId = state.sessionId;
    if (step.accepted && sessionId) actions.append(button('Apply this step in the editor', () => post({ type: 'showDiff', sessionId, stepId: id }), { secondary: true, label: `Apply step ${i + 1} in the editor` }));
    // A step that ran can be started again, as a branch of this session (not while it runs).
    if (sessionId && !state.live && startedSteps.has(id) && !tunerOnly(v)) actions.append(button('Branch from this step…', () => post({ type: 'branch', sessionId, stepId: id }), { secondary: true, title: 'Run this step and the ones after it again, as it was or from your edit of the kernel' }));
    if (actions.childElementCount > 0) body.append(actions);
    for (const candidate of step.candidates) body.append(renderCandidate(step, candidate, v.objective, !tunerOnly(v)));
    collapsible.append(body);
    list.append(collapsible);
  });
  const replan = v.replanning ? h('p', { class: 'muted' }, `Replanning round ${v.replanning.round} of at most ${v.replanning.maxRounds}.`) : null;
  return section(tunerOnly(v) ? 'Search' : 'Plan and steps', 'plan', replan, list);
}

function renderNotices(v: SessionView): HTMLElement | null {
  const notices = [...v.notices, ...(v.error ? [{ level: 'error' as const, text: v.error, at: v.lastEventAt ?? '' }] : [])];
  if (notices.length === 0) return null;
  return section('Messages', 'messages', h('ul', { class: 'notices' }, ...notices.map((n) => h('li', { class: n.level }, n.text))));
}

function render(): void {
  const scroll = window.scrollY;
  const focused = document.activeElement;
  // Typing in the plan editor must not lose the caret to a redraw (events are rare while the session waits).
  if (focused?.closest('#plan-editor vscode-textfield, #plan-editor vscode-textarea')) return;
  if (!view) {
    app.replaceChildren(h('p', { class: 'muted' }, 'Loading the session…'));
    return;
  }
  const memo = captureFocus(app);
  const data = sessionChartData(view, state.related);
  const chart = renderChart(data);
  // The chart's section persists across redraws (Chart.js keeps its canvas): its data tables are replaced.
  chart.querySelector('#chart-data')?.remove();
  const tables = chartDataElement(data);
  if (tables) chart.append(tables);
  app.replaceChildren(
    ...[renderHeader(view), renderNotices(view), renderFinal(view), renderPlanEditor(view), renderLineage(view), chart, renderGraph(), renderAnalysis(view), renderSteps(view), renderModelCalls()].filter(
      (x): x is HTMLElement => x !== null,
    ),
  );
  exposeCollapsibles(app);
  void restoreFocus(app, memo);
  window.scrollTo(0, scroll);
}

// The elapsed time ticks while the session runs here.
setInterval(() => {
  if (!state.live || !view) return;
  const el = document.getElementById('elapsed');
  if (el) el.textContent = elapsed(view);
}, 1000);

window.addEventListener('resize', () => commit(false));
// Saved at once, so that a page loaded again has its session even before its first message arrived.
if (state.header) commit(true);
else api.setState(state);
post({ type: 'ready', sessionId: state.sessionId });
