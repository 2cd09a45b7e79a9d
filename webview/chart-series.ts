/**
 * What the performance chart plots, and how Chart.js is configured to plot it. Pure (no DOM): the data → series
 * mapping, the choice of a log scale and the Chart.js configuration are unit-tested here; webview/chart.ts mounts it.
 *
 * One chart, one shared time axis, two x axes side by side (Chart.js stacks axes of the same position and `stack`):
 * left, the time after each accepted step against the baseline; right, every configuration of the step the chart
 * follows, in the order they were evaluated, the fastest marked, those without a time (failed) on the axis. The step
 * series of related sessions (the one this session branched from, its branches) share the left half's step axis.
 */
import type { ChartConfiguration, ChartDataset, TooltipModel } from 'chart.js';
import type { ConfigSummary } from '../src/engine/progress/events';
import { formatMeasured, objectiveOf, objectiveValue, TIME_OBJECTIVE, type Objective } from '../src/tuner/types';
import { metricRows } from './config-metrics';

export interface TimelinePoint {
  label: string;
  timeMs: number;
  /** The plan's number of the step (none for the baseline; a series without it counts the accepted steps). */
  step?: number;
}

export interface ChartData {
  /** The baseline first, then every accepted step. */
  timeline: readonly TimelinePoint[];
  /** The same series of related sessions (the one this one branched from, its branches), drawn beside it. */
  others?: readonly { label: string; timeline: readonly TimelinePoint[] }[];
  /** The configurations of the step the chart follows, in evaluation order. */
  configs: readonly ConfigSummary[];
  stepTitle?: string;
  /** What the best configuration is chosen by; time unless the session optimises another objective. */
  objective?: Objective;
}

/** What a point's tooltip says: a title line, then "name: value" rows. */
export interface PointInfo {
  title: string;
  rows: [string, string][];
}

export interface ChartPoint {
  x: number;
  y: number;
  info: PointInfo;
}

export type ScaleKind = 'linear' | 'logarithmic';

export interface ChartSeries {
  /** x = 0 for the baseline, i for the i-th accepted step. */
  steps: ChartPoint[];
  /** The step axis' labels, one per position: "baseline", then "step n" as the plan numbers the step. */
  stepLabels: string[];
  /** Each related session's steps on the same axis, in the order given: its step i stands above this one's step i. */
  others: { label: string; points: ChartPoint[] }[];
  /** Configurations with a time (ok or stopped early); x = 1-based evaluation order. */
  configs: ChartPoint[];
  /** The best configuration by the objective that ran to the end (also in `configs`). */
  best?: ChartPoint;
  /** Configurations without a time, drawn on the time axis (y = yMin). */
  failed: ChartPoint[];
  baselineMs?: number;
  scale: ScaleKind;
  yMin: number;
  yMax: number;
  stepTitle?: string;
  /** One sentence of what the chart shows, for screen readers and the caption under it. */
  summary: string;
}

/** The colours and font the chart is drawn with (webview/chart.ts reads them from the theme's CSS variables). */
export interface ChartTheme {
  foreground: string;
  muted: string;
  grid: string;
  background: string;
  line: string;
  baseline: string;
  config: string;
  best: string;
  failed: string;
  /** The related sessions' lines, in turn (a fifth reuses the first colour). */
  others: readonly string[];
  fontFamily: string;
  fontSize: number;
}

export function formatTime(ms: number): string {
  if (ms >= 1000) return `${Number((ms / 1000).toPrecision(3))} s`;
  if (ms >= 1) return `${Number(ms.toPrecision(3))} ms`;
  return `${Number((ms * 1000).toPrecision(3))} µs`;
}

/** A log scale as soon as the times span a decade (on a linear axis the fast ones would sit on the floor). */
export function chooseScale(timesMs: readonly number[]): ScaleKind {
  const positive = timesMs.filter((t) => Number.isFinite(t) && t > 0);
  if (positive.length < 2) return 'linear';
  return Math.max(...positive) / Math.min(...positive) >= 10 ? 'logarithmic' : 'linear';
}

/** Round axis bounds: 0 up to a "nice" number above the largest value. */
export function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const exp = Math.pow(10, Math.floor(Math.log10(value)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * exp >= value) return m * exp;
  return 10 * exp;
}

function timeRange(timesMs: readonly number[], scale: ScaleKind): [number, number] {
  const positive = timesMs.filter((t) => Number.isFinite(t) && t > 0);
  if (positive.length === 0) return [0, 1];
  const max = Math.max(...positive);
  if (scale === 'linear') return [0, niceMax(max * 1.05)];
  return [Math.pow(10, Math.floor(Math.log10(Math.min(...positive)))), Math.pow(10, Math.ceil(Math.log10(max)))];
}

/** "name=value, ..." of a configuration; `none` when it has no parameters. */
export function formatParams(config: Readonly<Record<string, unknown>>, none = '(none)'): string {
  const entries = Object.entries(config);
  return entries.length === 0 ? none : entries.map(([k, v]) => `${k}=${String(v)}`).join(', ');
}

/** A configuration's point names it in its tooltip and in the summary. */
const configTitle = (config: Readonly<Record<string, unknown>>) => formatParams(config, '(no parameters)');

const STATUS_TEXT: Partial<Record<ConfigSummary['status'], string>> = { ok: 'ok', stopped_early: 'stopped early (cannot beat the best)' };

function speedupText(baselineMs: number | undefined, timeMs: number): string {
  return baselineMs === undefined || timeMs <= 0 ? 'n/a (no baseline yet)' : `${(baselineMs / timeMs).toFixed(2)}× vs baseline`;
}

/** A session's timeline as points; `session` names a related session in the tooltip titles. */
function timelinePoints(timeline: readonly TimelinePoint[], session?: string): ChartPoint[] {
  const baselineMs = timeline[0]?.timeMs;
  return timeline.map((p, i) => ({
    x: i,
    y: p.timeMs,
    info: {
      title: (i === 0 ? 'Baseline (original kernel)' : `Step ${p.step ?? i}: ${p.label}`) + (session === undefined ? '' : ` — ${session}`),
      rows: [
        ['Time', formatTime(p.timeMs)],
        ['Speed-up', i === 0 ? '1.00× (reference)' : speedupText(baselineMs, p.timeMs)],
      ] as [string, string][],
    },
  }));
}

export function chartSeries(data: ChartData): ChartSeries {
  const baselineMs = data.timeline[0]?.timeMs;
  const steps = timelinePoints(data.timeline);
  const others = (data.others ?? []).filter((o) => o.timeline.length > 0).map((o) => ({ label: o.label, points: timelinePoints(o.timeline, o.label) }));
  const step = data.stepTitle ?? '(current step)';
  const objective = data.objective ?? TIME_OBJECTIVE;
  const timed: ChartPoint[] = [];
  const untimed: { config: ConfigSummary; x: number }[] = [];
  let best: { point: ChartPoint; score: number } | undefined;
  data.configs.forEach((c, i) => {
    const hasTime = (c.status === 'ok' || c.status === 'stopped_early') && c.timeMs !== undefined && Number.isFinite(c.timeMs);
    if (!hasTime) return void untimed.push({ config: c, x: i + 1 });
    const point = {
      x: i + 1,
      y: c.timeMs!,
      info: {
        title: configTitle(c.config),
        rows: [
          ['Time', formatTime(c.timeMs!)],
          ['Speed-up', speedupText(baselineMs, c.timeMs!)],
          ['Step', step],
          ['Result', STATUS_TEXT[c.status] ?? c.status],
          ...metricRows(c),
        ] as [string, string][],
      },
    };
    timed.push(point);
    const score = objectiveOf(c, objective);
    if (c.status === 'ok' && score < (best?.score ?? Infinity)) best = { point, score };
  });
  const times = [...steps.map((p) => p.y), ...others.flatMap((o) => o.points.map((p) => p.y)), ...timed.map((p) => p.y)];
  const scale = chooseScale(times);
  const [yMin, yMax] = timeRange(times, scale);
  const failed = untimed.map(({ config: c, x }) => ({
    x,
    y: yMin,
    info: {
      title: configTitle(c.config),
      rows: [['Result', c.status.replace(/_/g, ' ')], ['Step', step], ...(c.error ? [['Error', c.error] as [string, string]] : []), ...metricRows(c)] as [string, string][],
    },
  }));
  // Where a related session has more steps than this one, the axis goes on with its numbers.
  const stepCount = Math.max(data.timeline.length, ...(data.others ?? []).map((o) => o.timeline.length));
  const stepLabels = Array.from({ length: stepCount }, (_, x) => (x === 0 ? 'baseline' : `step ${(data.timeline[x] ?? data.others?.map((o) => o.timeline[x]).find((p) => p !== undefined))?.step ?? x}`));
  return { steps, stepLabels, others, configs: timed, ...(best && { best: best.point }), failed, ...(baselineMs !== undefined && { baselineMs }), scale, yMin, yMax, ...(data.stepTitle !== undefined && { stepTitle: data.stepTitle }), summary: summarize(data, steps, others, timed, failed, best?.point, scale, objective) };
}

function summarize(data: ChartData, steps: ChartPoint[], others: ChartSeries['others'], timed: ChartPoint[], failed: ChartPoint[], best: ChartPoint | undefined, scale: ScaleKind, objective: Objective): string {
  if (steps.length === 0) return 'Waiting for the baseline time.';
  const parts = [`Baseline ${formatTime(steps[0]!.y)}`];
  if (steps.length > 1) parts.push(`${steps.length - 1} accepted step(s), now ${formatTime(steps.at(-1)!.y)} (${(steps[0]!.y / steps.at(-1)!.y).toFixed(2)}×)`);
  for (const o of others) parts.push(`beside it, ${o.label}: ${o.points.length - 1} accepted step(s), now ${formatTime(o.points.at(-1)!.y)}`);
  if (data.configs.length > 0) {
    parts.push(
      `${data.configs.length} configuration(s) of "${data.stepTitle ?? 'the current step'}": ${timed.length} timed, ${failed.length} without a time` +
        (best ? `, ${bestWords(data, best, objective)} with ${best.info.title}` : ''),
    );
  }
  if (scale === 'logarithmic') parts.push('time on a log scale');
  return `${parts.join('; ')}.`;
}

/** "fastest 1.2 ms", or "least energy 1.61 J (5.6 ms)" where the best is chosen by another objective. */
function bestWords(data: ChartData, best: ChartPoint, objective: Objective): string {
  if (objective.name === 'time') return `fastest ${formatTime(best.y)}`;
  const config = data.configs[best.x - 1];
  const value = config && objectiveValue(config, objective);
  const by = objective.name === 'energy' ? 'least energy' : `${objective.higherIsBetter ? 'highest' : 'lowest'} ${objective.name}`;
  return `${by} ${value === undefined ? '' : `${formatMeasured(objective.name, value)} `}(${formatTime(best.y)})`;
}

/** Log axes label the powers of ten only (their grid lines stay): labels in between crowd each other. */
function isDecade(value: number): boolean {
  return value > 0 && Math.abs(Math.log10(value) - Math.round(Math.log10(value))) < 1e-9;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Dataset labels; the legend, the tooltips and the tests know the datasets by them. */
export const DATASET = {
  steps: 'Time per accepted step',
  baseline: 'Baseline',
  configs: 'Configurations',
  best: 'Best configuration',
  failed: 'No time (failed)',
} as const;

export type ExternalTooltip = (this: TooltipModel<'scatter'>, args: { chart: unknown; tooltip: TooltipModel<'scatter'> }) => void;

/**
 * The Chart.js configuration of a series in a theme. `external` draws the tooltip (HTML, webview/chart.ts); without it
 * (image export) tooltips are off. Animations are off: the chart is redrawn on every event of a live session.
 */
export function chartConfig(series: ChartSeries, theme: ChartTheme, external?: ExternalTooltip): ChartConfiguration<'scatter', ChartPoint[]> {
  // Every series on one step axis: step i of a branch stands above step i of its parent.
  const stepCount = Math.max(series.steps.length, ...series.others.map((o) => o.points.length));
  const stepsMax = Math.max(1, stepCount - 1);
  const configsMax = Math.max(1, series.configs.length + series.failed.length);
  // backgroundColor / borderColor: the legend's swatch; point*: the points (circles outlined in the background colour).
  const point = (color: string, style: 'circle' | 'rectRot' | 'crossRot', radius: number) => ({
    backgroundColor: color,
    borderColor: color,
    pointBackgroundColor: color,
    pointBorderColor: style === 'crossRot' ? color : theme.background,
    pointBorderWidth: style === 'crossRot' ? 2 : 1,
    pointStyle: style,
    pointRadius: radius,
    pointHoverRadius: radius + 2,
  });
  const baselineLine = (xAxisID: string, from: number, to: number): ChartDataset<'scatter', ChartPoint[]> => ({
    label: DATASET.baseline,
    xAxisID,
    data: series.baselineMs === undefined ? [] : [from, to].map((x) => ({ x, y: series.baselineMs!, info: { title: 'Baseline', rows: [] } })),
    showLine: true,
    borderColor: theme.baseline,
    borderWidth: 1.5,
    borderDash: [5, 4],
    backgroundColor: theme.baseline,
    pointStyle: 'line',
    pointRadius: 0,
    pointHoverRadius: 0,
    pointHitRadius: 0,
  });
  // Dashed, hollow points, drawn under this session's own line (a higher `order` is drawn earlier, listed later).
  const related = series.others.map((o, k): ChartDataset<'scatter', ChartPoint[]> => {
    const colour = theme.others[k % theme.others.length] ?? theme.muted;
    return { label: o.label, xAxisID: 'steps', data: o.points, showLine: true, ...point(colour, 'circle', 3), pointBackgroundColor: theme.background, pointBorderColor: colour, pointBorderWidth: 1.5, borderWidth: 1.5, borderDash: [5, 3], order: 1 };
  });
  const datasets: ChartDataset<'scatter', ChartPoint[]>[] = [
    { label: DATASET.steps, xAxisID: 'steps', data: series.steps, showLine: true, ...point(theme.line, 'circle', 4), borderWidth: 2 },
    ...related,
    baselineLine('steps', 0, stepsMax),
    baselineLine('configs', 0.5, configsMax + 0.5),
    { label: DATASET.configs, xAxisID: 'configs', data: series.configs, ...point(theme.config, 'circle', 3.5) },
    { label: DATASET.best, xAxisID: 'configs', data: series.best ? [series.best] : [], ...point(theme.best, 'rectRot', 6) },
    // On the floor of the time axis: not clipped by it.
    { label: DATASET.failed, xAxisID: 'configs', data: series.failed, ...point(theme.failed, 'crossRot', 5), clip: 8 },
  ];
  const font = { family: theme.fontFamily, size: theme.fontSize };
  const axisTitle = (text: string) => ({ display: true, text, color: theme.muted, font });
  const ticks = { color: theme.muted, font };
  const grid = { color: theme.grid };
  return {
    type: 'scatter',
    data: { datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      color: theme.foreground,
      font,
      layout: { padding: 4 },
      interaction: { mode: 'nearest', intersect: true },
      scales: {
        steps: {
          type: 'linear',
          position: 'bottom',
          stack: 'x',
          stackWeight: 1,
          min: -0.3,
          max: stepsMax + 0.3,
          afterBuildTicks: (axis) => void (axis.ticks = Array.from({ length: stepCount }, (_, value) => ({ value }))),
          ticks: { ...ticks, callback: (value) => series.stepLabels[Number(value)] ?? '' },
          grid,
          title: axisTitle('Accepted steps'),
        },
        configs: {
          type: 'linear',
          position: 'bottom',
          stack: 'x',
          stackWeight: 1.2,
          min: 0.5,
          max: configsMax + 0.5,
          // Evaluation order: whole numbers, at most about a dozen labels.
          afterBuildTicks: (axis) => {
            const every = Math.ceil(configsMax / 12);
            axis.ticks = Array.from({ length: Math.floor(configsMax / every) }, (_, i) => ({ value: (i + 1) * every }));
          },
          ticks,
          grid,
          title: axisTitle(truncate(series.stepTitle ? `Configurations: ${series.stepTitle}` : 'Configurations', 70)),
        },
        y: {
          type: series.scale,
          min: series.yMin,
          max: series.yMax,
          ticks: { ...ticks, callback: (value) => (series.scale === 'linear' || isDecade(Number(value)) ? formatTime(Number(value)) : '') },
          grid,
          title: axisTitle(series.scale === 'logarithmic' ? 'Median time (log scale)' : 'Median time'),
        },
      },
      plugins: {
        legend: {
          position: 'top',
          labels: {
            color: theme.foreground,
            font,
            usePointStyle: true,
            // One entry for the baseline, which is drawn once per half (two related sessions may share a label).
            filter: (item, data) => item.text !== DATASET.baseline || data.datasets.findIndex((d) => d.label === item.text) === item.datasetIndex,
          },
        },
        tooltip: {
          enabled: false,
          ...(external && { external: external as never }),
          filter: (item) => item.dataset.label !== DATASET.baseline,
        },
      },
    },
  };
}
