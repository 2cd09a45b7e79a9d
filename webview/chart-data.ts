/**
 * What the performance chart of a session shows, and the same as tables: read by screen readers in place of the chart
 * (a picture to them), one row per point. Pure (no DOM), unit-tested; webview/a11y.ts turns the tables into elements.
 */
import { acceptedTimeline, decidedCandidate, focusStep, type SessionView } from '../src/engine/session/session-view';
import { formatTime, type ChartData } from './chart-series';
import { metricColumns } from './config-metrics';

/** The chart of a session: its accepted steps and the configurations of the step it follows, beside `others`' steps. */
export function sessionChartData(view: SessionView, others: ChartData['others'] = []): ChartData {
  const step = focusStep(view);
  return { timeline: acceptedTimeline(view), others, configs: (step && decidedCandidate(step)?.configs) ?? [], ...(step && { stepTitle: step.title }), objective: view.objective };
}

export interface DataTable {
  caption: string;
  columns: string[];
  rows: string[][];
}

/** Time per accepted step against the baseline, then the configurations of the step the chart follows. */
export function chartTables(data: ChartData): DataTable[] {
  const tables: DataTable[] = [];
  const { timeline, configs } = data;
  if (timeline.length > 0) {
    const base = timeline[0]!.timeMs;
    tables.push({
      caption: 'Time per accepted step (chart, left)',
      columns: ['Point', 'Median time', 'Speed-up over the baseline'],
      rows: timeline.map((p) => [p.label, formatTime(p.timeMs), `${(base / p.timeMs).toFixed(2)}×`]),
    });
  }
  if (configs.length > 0) {
    const names = [...new Set(configs.flatMap((c) => Object.keys(c.config)))];
    const metrics = metricColumns(configs);
    tables.push({
      caption: `Configurations${data.stepTitle === undefined ? '' : ` of step "${data.stepTitle}"`} (chart, right)`,
      columns: [...names, 'Median time', ...metrics.map((m) => m.label), 'Result'],
      rows: configs.map((c) => [
        ...names.map((n) => (c.config[n] === undefined ? '' : String(c.config[n]))),
        c.timeMs === undefined ? '' : formatTime(c.timeMs),
        ...metrics.map((m) => m.text(c)),
        c.status.replace(/_/g, ' '),
      ]),
    });
  }
  return tables;
}
