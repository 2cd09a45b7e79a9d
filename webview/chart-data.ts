/**
 * What the performance chart shows, as tables: read by screen readers in place of the chart (a picture to them), one
 * row per point. Pure (no DOM), unit-tested; webview/a11y.ts turns it into elements.
 */
import { acceptedTimeline, focusStep, type SessionView } from '../src/extension/session-view';
import { formatTime } from './chart-series';

export interface DataTable {
  caption: string;
  columns: string[];
  rows: string[][];
}

/** Time per accepted step against the baseline, then the configurations of the step the chart follows. */
export function chartTables(view: SessionView): DataTable[] {
  const tables: DataTable[] = [];
  const timeline = acceptedTimeline(view);
  if (timeline.length > 0) {
    const base = timeline[0]!.timeMs;
    tables.push({
      caption: 'Time per accepted step (chart, left)',
      columns: ['Point', 'Median time', 'Speed-up over the baseline'],
      rows: timeline.map((p) => [p.label, formatTime(p.timeMs), `${(base / p.timeMs).toFixed(2)}×`]),
    });
  }
  const step = focusStep(view);
  const configs = step?.candidates.at(-1)?.configs ?? [];
  if (step && configs.length > 0) {
    const names = [...new Set(configs.flatMap((c) => Object.keys(c.config)))];
    tables.push({
      caption: `Configurations of step "${step.title}" (chart, right)`,
      columns: [...names, 'Median time', 'Result'],
      rows: configs.map((c) => [
        ...names.map((n) => (c.config[n] === undefined ? '' : String(c.config[n]))),
        c.timeMs === undefined ? '' : formatTime(c.timeMs),
        c.status.replace(/_/g, ' '),
      ]),
    });
  }
  return tables;
}
