/**
 * The HTML report's page (src/report/html.ts inlines this bundle): draws the report from its embedded JSON. DOM is
 * built with textContent only (step titles, diffs and errors come from a model or a compiler, never parsed as HTML).
 * The chart and the CUDA highlighting are the panel's, so the report and the panel look and read alike. Tables sort by
 * any column, in place.
 */
import type { ReportConfig, ReportData, ReportModelCall, ReportPopulation, ReportProfile, ReportSanitizer, ReportStep } from '../../src/report/model';
import { modelCallsTable } from '../model-calls';
import { mountPerformanceChart } from '../chart';
import { formatParams, formatTime } from '../chart-series';
import { parseUnifiedDiff } from '../diff-rows';
import { highlightHunk } from '../highlight-dom';
import { sortConfigs, type SortState } from '../sort';
import { formatMedianInterval } from '../../src/tuner/types';
import { energyNote, metricColumns } from '../config-metrics';
import { formatMeasured, objectiveValue } from '../../src/tuner/types';

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) if (value !== undefined) el.setAttribute(name, value);
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

const num = (v: number | undefined | null, digits = 3) => (v === undefined || v === null ? '' : Number(v.toPrecision(digits)).toLocaleString('en'));
const pct = (v: number | undefined) => (v === undefined ? '' : `${v.toFixed(1)}%`);
const time = (ms: number | null | undefined) => (ms === null || ms === undefined ? 'n/a' : formatTime(ms));

function card(label: string, value: string, id?: string): HTMLElement {
  return h('div', { class: 'card', id }, h('div', { class: 'v' }, value), h('div', { class: 'k' }, label));
}

function facts(rows: [string, Child][]): HTMLElement {
  const dl = h('dl', { class: 'facts' });
  for (const [k, v] of rows) if (v !== undefined && v !== null && v !== '') dl.append(h('dt', {}, k), h('dd', {}, v));
  return dl;
}

function bestConfigOf(data: ReportData): ReportConfig | undefined {
  for (const step of [...data.steps].reverse()) {
    const best = step.best && step.configs.find((c) => c.key === step.best!.key);
    if (best && (step.status === 'accepted' || step.status === 'search')) return best;
  }
  return undefined;
}

/**
 * The step whose configurations the chart shows (the panel's choice; a report written before it was kept: the last step
 * with any), and its number as the plan numbers it.
 */
function chartedStep(data: ReportData): { step: ReportData['steps'][number]; number: number } | undefined {
  const at = data.steps.findIndex((s) => s.id === data.chartStepId);
  const index = at >= 0 ? at : data.steps.findLastIndex((s) => s.configs.length > 0);
  return index >= 0 ? { step: data.steps[index]!, number: index + 1 } : undefined;
}

function summary(data: ReportData): HTMLElement {
  const s = data.summary;
  const best = bestConfigOf(data);
  // A session's count is every step's; the chart (like the panel's) shows one step's: each card says which it counts.
  const charted = data.kind === 'session' ? chartedStep(data) : undefined;
  const objective = data.objective;
  const value = best && objective.name !== 'time' ? objectiveValue(best, objective) : undefined;
  return h(
    'section',
    { id: 'summary' },
    h('div', { class: 'cards' },
      card(data.kind === 'tune' ? 'reference kernel' : 'baseline', time(s.baselineTimeMs)),
      card('best', time(s.bestTimeMs), 'best-time'),
      value !== undefined && card(`best ${objective.name} (the objective, ${objective.higherIsBetter ? 'highest' : 'lowest'})`, formatMeasured(objective.name, value), 'best-objective'),
      s.speedup !== null && card('speed-up', `${s.speedup.toFixed(2)}×`, 'speedup'),
      best?.GBps !== undefined && card(`achieved bandwidth${best.bandwidthPct !== undefined ? ` (${pct(best.bandwidthPct)} of the limit)` : ''}`, `${num(best.GBps)} GB/s`, 'best-bandwidth'),
      best?.GFlops !== undefined && card(`achieved FP32${best.flopsPct !== undefined ? ` (${pct(best.flopsPct)} of the peak)` : ''}`, `${num(best.GFlops / 1000)} TFLOP/s`, 'best-flops'),
      card(data.kind === 'tune' ? 'configurations' : 'configurations, all steps', String(s.evaluations), 'configurations'),
      charted && card(`configurations of step ${charted.number}, charted below`, String(charted.step.configs.length), 'charted-configurations'),
      ...modelCards(data.modelCalls ?? []),
    ),
    s.bestConfig && h('p', {}, 'Best configuration: ', h('code', {}, formatParams(s.bestConfig))),
    (data.warnings ?? []).length > 0 && h('ul', { class: 'warnings', id: 'warnings' }, ...data.warnings!.map((w) => h('li', {}, w))),
  );
}

/** The model's calls, tokens and cost (where the prices were known), for a session that asked any. */
function modelCards(calls: readonly ReportModelCall[]): HTMLElement[] {
  if (calls.length === 0) return [];
  const tokens = calls.reduce((n, c) => n + c.promptTokens + c.completionTokens, 0);
  const priced = calls.filter((c) => c.costUsd !== undefined);
  return [
    card('model calls', String(calls.length), 'model-call-count'),
    card('tokens (prompt and completion)', tokens.toLocaleString('en'), 'model-tokens'),
    ...(priced.length > 0 ? [card('cost of the model', `$${priced.reduce((n, c) => n + c.costUsd!, 0).toFixed(4)}`, 'model-cost')] : []),
  ];
}

function device(data: ReportData): HTMLElement {
  const d = data.device;
  const l = data.limits;
  return h(
    'section',
    { id: 'device' },
    h('h2', {}, 'Device, limits and compiler'),
    facts([
      ['Device', d ? `${d.name}${d.arch ? ` (${d.arch}${d.computeCapability ? `, compute capability ${d.computeCapability.join('.')}` : ''})` : ''}` : 'unknown'],
      ['Multiprocessors', d?.multiprocessors !== undefined ? String(d.multiprocessors) : undefined],
      ['Driver', d?.driver ? `CUDA ${d.driver}` : undefined],
      ['NVRTC', d?.nvrtc === undefined ? undefined : (d.nvrtc ?? 'not loaded')],
      ['Bandwidth limit', l ? `${num(l.bandwidthGBps, 4)} GB/s: ${l.bandwidthMethod}` : (data.limitsNote ?? 'not measured')],
      ['FP32 peak', l ? (l.fp32GFlops === null ? l.fp32Formula : `${num(l.fp32GFlops / 1000, 3)} TFLOP/s: ${l.fp32Formula}`) : undefined],
      ['Compiler', data.compiler.backend ? `${data.compiler.backend}${data.compiler.note ? ` (${data.compiler.note})` : ''}` : undefined],
      ['Compiler options', data.compiler.options.length > 0 ? h('code', {}, data.compiler.options.join(' ')) : '(none)'],
      ['Work of one launch', data.work ? `${num(data.work.bytes, 4)} bytes${data.work.flops !== undefined ? `, ${num(data.work.flops, 4)} floating-point operations` : ''} (${data.work.source})` : 'unknown: no speed-of-light figures'],
      ['Times', `${time(data.summary.baselineTimeMs)} (${data.kind === 'tune' ? 'reference kernel' : 'baseline'}) → ${time(data.summary.bestTimeMs)} (best)${data.timing ? `; ${data.timing}` : ''}`],
    ]),
  );
}

function chart(data: ReportData): HTMLElement {
  // Beside the line of improvements: the configurations of the step the panel's chart shows.
  const step = chartedStep(data)?.step;
  const holder = h('div', { class: 'chart-holder', id: 'chart' });
  mountPerformanceChart(holder, {
    timeline: data.timeline,
    configs: step?.configs ?? [],
    ...(step && { stepTitle: step.title }),
    objective: data.objective,
  });
  return h('section', { id: 'performance' }, h('h2', {}, 'Performance'), holder);
}

function diffTable(diff: string): HTMLElement {
  const hunks = parseUnifiedDiff(diff);
  if (hunks.length === 0) return h('p', { class: 'muted' }, 'No change to the kernel.');
  const table = h('table', { class: 'diff' });
  for (const hunk of hunks) {
    table.append(h('tr', { class: 'hunk' }, h('td', { colspan: '3' }, hunk.header)));
    const code = highlightHunk(hunk);
    for (const line of hunk.lines) {
      const sign = line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : ' ';
      table.append(h('tr', { class: line.kind }, h('td', { class: 'no' }, String(line.kind === 'add' ? line.newNo : line.oldNo)), h('td', { class: 'no' }, sign), h('td', {}, (line.kind === 'del' ? code.old : code.new).get(line)!)));
    }
  }
  return h('div', { class: 'diff-holder' }, table);
}

interface Column {
  label: string;
  /** The sort it stands for (sort.ts): the speed-of-light columns sort as the time does, the other way round. */
  sort: SortState['column'];
  inverse?: boolean;
  numeric: boolean;
  cell(c: ReportConfig, best: boolean): Child;
}

function configColumns(step: ReportStep, data: ReportData): Column[] {
  const names = [...new Set(step.configs.flatMap((c) => Object.keys(c.config)))];
  const maxPct = Math.max(0, ...step.configs.map((c) => c.bandwidthPct ?? 0));
  const bar = (v: number | undefined, max: number) => (v === undefined || max <= 0 ? '' : h('span', { class: 'bar', title: pct(v), 'data-width': String(Math.round((40 * v) / max)) }));
  const columns: Column[] = [
    ...names.map((n): Column => ({ label: n, sort: `param:${n}`, numeric: true, cell: (c) => (c.config[n] === undefined ? '' : String(c.config[n])) })),
    { label: 'median time', sort: 'time', numeric: true, cell: (c) => (c.timeMs === undefined ? '' : formatTime(c.timeMs)) },
  ];
  // How many launches each was timed with and how well its median is known (recordings from before have neither).
  if (step.configs.some((c) => c.launches !== undefined)) {
    columns.push({ label: 'launches', sort: 'time', numeric: true, cell: (c) => (c.launches === undefined ? '' : String(c.launches)) });
    columns.push({ label: 'median ±', sort: 'time', numeric: true, cell: (c) => (c.medianIntervalMs && c.timeMs !== undefined ? formatMedianInterval(c.timeMs, c.medianIntervalMs) : '') });
  }
  if (data.work) {
    columns.push({ label: 'GB/s', sort: 'time', inverse: true, numeric: true, cell: (c) => num(c.GBps) });
    if (data.limits) columns.push({ label: '% of bandwidth', sort: 'time', inverse: true, numeric: true, cell: (c) => (c.bandwidthPct === undefined ? '' : h('span', {}, bar(c.bandwidthPct, maxPct), pct(c.bandwidthPct))) });
    if (data.work.flops !== undefined) {
      columns.push({ label: 'GFLOP/s', sort: 'time', inverse: true, numeric: true, cell: (c) => num(c.GFlops) });
      if (data.limits?.fp32GFlops) columns.push({ label: '% of FP32 peak', sort: 'time', inverse: true, numeric: true, cell: (c) => pct(c.flopsPct) });
    }
  }
  // Registers, memory, occupancy, energy and the metrics: sorted low to high on a first click, as the time is.
  for (const m of metricColumns(step.configs)) columns.push({ label: m.label, sort: m.id, numeric: true, cell: (c) => m.text(c) });
  columns.push({ label: 'result', sort: 'status', numeric: false, cell: (c, best) => (best ? 'best' : c.status === 'ok' ? 'ok' : `${c.status.replace(/_/g, ' ')}${c.error ? `: ${c.error}` : ''}`) });
  // Recordings from before verified launches were recorded have none to show.
  if (step.configs.some((c) => c.verified)) columns.push({ label: 'verified', sort: 'status', numeric: false, cell: (c) => c.verified ?? '' });
  return columns;
}

function configTable(step: ReportStep, data: ReportData): HTMLElement {
  const columns = configColumns(step, data);
  let sort: SortState = { column: 'time', descending: false };
  let active = columns.findIndex((c) => c.sort === 'time' && !c.inverse);
  const table = h('table', { class: 'grid configs', 'data-step': step.id });
  const draw = () => {
    const head = h('tr', {});
    columns.forEach((col, i) => {
      const th = h('th', { class: `sortable${col.numeric ? ' num' : ''}`, tabindex: '0', 'aria-sort': i === active ? (sort.descending !== !!col.inverse ? 'descending' : 'ascending') : 'none' }, col.label, i === active ? (sort.descending !== !!col.inverse ? ' ▾' : ' ▴') : '');
      const choose = () => {
        // A first click sorts a speed-of-light column high to low, any other column low to high.
        const descending = i === active ? !sort.descending : !!col.inverse;
        sort = { column: col.sort, descending };
        active = i;
        draw();
      };
      th.addEventListener('click', choose);
      th.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), choose()));
      head.append(th);
    });
    const rows = (sortConfigs(step.configs, sort) as ReportConfig[]).map((c) => {
      const best = c.key === step.best?.key;
      return h('tr', { class: best ? 'best' : c.status === 'ok' ? '' : 'failed' }, ...columns.map((col) => h('td', { class: col.numeric ? 'num' : '' }, col.cell(c, best))));
    });
    table.replaceChildren(h('thead', {}, head), h('tbody', {}, ...rows));
    // Bar widths from data attributes: the page's CSP allows no inline style attribute to be written as HTML.
    for (const bar of table.querySelectorAll<HTMLElement>('.bar')) bar.style.width = `${bar.dataset.width}px`;
  };
  draw();
  return h('div', { class: 'table-holder' }, table);
}

function profile(title: string, p: ReportProfile, id?: string): HTMLElement {
  return h('div', { class: 'profile', id }, h('h3', {}, `${title} at `, h('code', {}, formatParams(p.config))), h('p', { class: 'muted' }, p.source), h('ul', {}, ...p.summary.map((l) => h('li', {}, l))));
}

function sanitizer(s: ReportSanitizer): HTMLElement {
  return h(
    'div',
    { class: `sanitizer sanitizer-${s.status}` },
    h('h3', {}, 'compute-sanitizer at ', h('code', {}, formatParams(s.config))),
    h('p', { class: s.status === 'clean' ? 'muted' : 'sanitizer-verdict' }, s.summary),
    s.findings.length > 0 && h('ul', { class: 'mono' }, ...s.findings.map((l) => h('li', {}, l))),
  );
}

function steps(data: ReportData): HTMLElement {
  const section = h('section', { id: 'steps' }, h('h2', {}, data.kind === 'tune' ? 'Configurations' : 'Steps'));
  if (data.baselineProfile) section.append(profile('Profile of the original kernel', data.baselineProfile, 'baseline-profile'));
  data.steps.forEach((step, i) => {
    const body: Child[] = [];
    if (step.search) body.push(h('p', { class: 'search' }, `Search: ${step.search}`));
    else if (step.reason) body.push(h('p', { class: 'muted' }, step.reason));
    if (step.diff !== undefined) body.push(h('h3', {}, 'Changes'), diffTable(step.diff));
    const tune = Object.entries(step.tuneParams);
    if (tune.length > 0) body.push(h('h3', {}, 'Tunable parameters'), h('ul', {}, ...tune.map(([k, v]) => h('li', {}, h('code', {}, k), `: ${v.join(', ')}`))));
    if (step.restrictions.length > 0) body.push(h('h3', {}, 'Restrictions'), h('ul', {}, ...step.restrictions.map((r) => h('li', {}, h('code', {}, r)))));
    // As the CLI counts them: stopped early is not a failure, and over the device's limits is skipped, not failed.
    const count = (pred: (status: string) => boolean) => step.configs.filter((c) => pred(c.status)).length;
    const failed = count((s) => s !== 'ok' && s !== 'stopped_early' && s !== 'exceeds_device_limits');
    const skipped = count((s) => s === 'exceeds_device_limits');
    const outcome = [`${failed} failed`, ...(skipped > 0 ? [`${skipped} skipped (over the device's limits)`] : [])].join(', ');
    if (step.configs.length > 0) body.push(h('h3', {}, `Configurations (${step.configs.length}: ${outcome}); click a column to sort`), configTable(step, data));
    const noEnergy = energyNote(step.configs);
    if (noEnergy) body.push(h('p', { class: 'muted energy-note' }, noEnergy));
    if (step.profile) body.push(profile('Profile of the best configuration', step.profile));
    if (step.sanitizer) body.push(sanitizer(step.sanitizer));
    const label = data.kind === 'tune' ? step.title : `${i + 1}. ${step.title}`;
    const details = h('details', { class: 'step', id: `step-${i + 1}` }, h('summary', {}, `${label} `, h('span', { class: `status status-${step.status}` }, step.status)), ...body);
    details.open = step.status === 'accepted' || step.status === 'search' || data.steps.length === 1;
    section.append(details);
  });
  return section;
}

/** An evolutionary session's variants and the children that made none. */
function population(p: ReportPopulation): HTMLElement {
  const table = (head: string[], rows: Child[][], id: string) =>
    h('div', { class: 'table-holder' }, h('table', { class: 'grid', id }, h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))), h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c)))))));
  const state = { best: 'the fastest (the session\'s kernel)', archive: 'in the archive', retired: 'retired' };
  return h(
    'section',
    { id: 'population' },
    h('h2', {}, 'Population'),
    p.stopped && h('p', { id: 'population-stopped' }, `Evolution stopped: ${p.stopped}.`),
    table(
      ['Variant', 'Made by', 'Parents', 'Time', 'Speed-up', 'Niche', 'State', 'Best configuration', 'Idea'],
      p.variants.map((v) => [v.id, v.madeBy, v.parents.join(', '), time(v.timeMs), v.speedup === null ? '' : `${v.speedup.toFixed(2)}×`, v.niche, state[v.state], formatParams(v.bestConfig), v.idea]),
      'variants',
    ),
    p.rejected.length > 0 && h('h3', {}, 'Children kept out of the population'),
    p.rejected.length > 0 && table(['Child', 'Made by', 'Why'], p.rejected.map((r) => [r.stepId, r.madeBy, r.reason]), 'rejected'),
  );
}

function reproduce(data: ReportData): HTMLElement {
  const r = data.reproduce;
  return h(
    'section',
    { id: 'reproduce' },
    h('h2', {}, 'Reproduce'),
    h('p', {}, 'Every number above comes from this run; to get it again:'),
    h('pre', { id: 'command' }, r.command),
    facts([
      ['Kernel file', r.file],
      ['Cache', r.cache],
      ['Session', r.session],
      ['Seed', r.seed === undefined ? undefined : String(r.seed)],
    ]),
    ...r.notes.map((n) => h('p', { class: 'muted' }, n)),
    r.spec && h('h3', {}, `Spec: ${r.spec.path}`),
    r.spec && h('pre', { id: 'spec' }, r.spec.text),
  );
}

const data = JSON.parse(document.getElementById('report-data')!.textContent!) as ReportData;
document.title = data.title;
document.getElementById('report')!.replaceChildren(
  h('h1', {}, data.title),
  h('p', { class: 'muted' }, `${data.mode} · report generated ${data.generatedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`),
  summary(data),
  chart(data),
  device(data),
  ...(data.population ? [population(data.population)] : []),
  steps(data),
  ...((data.modelCalls ?? []).length > 0 ? [h('section', { id: 'model-calls' }, h('h2', {}, 'Model calls'), h('div', { class: 'table-holder' }, modelCallsTable(data.modelCalls!, 'Every request to the model, in order')))] : []),
  reproduce(data),
  h('footer', {}, `llm-kernel-tuner report (${data.format}). One file, no network: the data is in the page.`),
);
