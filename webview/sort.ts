/** Sorting of the configurations table. Pure. */
import type { ConfigSummary } from '../src/engine/progress/events';
import { metricValue } from './config-metrics';

export interface SortState {
  /** 'time', 'status', 'param:<name>', or a metric's column ('metric:<id>', see config-metrics.ts). */
  column: string;
  descending: boolean;
}

/** Sorted copy; configurations without a time sort after the timed ones whatever the direction. */
export function sortConfigs(configs: readonly ConfigSummary[], sort: SortState): ConfigSummary[] {
  const dir = sort.descending ? -1 : 1;
  const value = (c: ConfigSummary): number | string | undefined => {
    if (sort.column === 'time') return c.timeMs;
    if (sort.column === 'status') return c.status;
    if (sort.column.startsWith('metric:')) return metricValue(c, sort.column);
    const v = c.config[sort.column.slice('param:'.length)];
    return typeof v === 'boolean' ? Number(v) : v;
  };
  return configs
    .map((c, i) => ({ c, i, v: value(c) }))
    .sort((a, b) => {
      if (a.v === undefined || b.v === undefined) return a.v === b.v ? a.i - b.i : a.v === undefined ? 1 : -1;
      if (a.v === b.v) return a.i - b.i;
      if (typeof a.v === 'number' && typeof b.v === 'number') return (a.v - b.v) * dir;
      return String(a.v).localeCompare(String(b.v), 'en', { numeric: true }) * dir;
    })
    .map(({ c }) => c);
}
