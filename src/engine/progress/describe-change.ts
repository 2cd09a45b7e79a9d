// A step's change in words, for logs, the panel and the history: the times, and the objective's values where the
// session optimises something other than time. Pure and free of Node imports: the webview bundles it.
import { formatMeasured } from '../../tuner/types';
import type { ObjectiveChange } from './events';

const ms = (value: number) => `${Number(value.toPrecision(4))} ms`;

/** "1.2 ms -> 1.1 ms", or "energy 1.61 J -> 1.6 J (5.6 ms -> 5.7 ms)" where the objective is not the time. */
export function describeChange(change: { oldTimeMs: number; newTimeMs: number; objective?: ObjectiveChange }): string {
  const times = `${ms(change.oldTimeMs)} -> ${ms(change.newTimeMs)}`;
  const o = change.objective;
  return o ? `${o.name} ${formatMeasured(o.name, o.oldValue)} -> ${formatMeasured(o.name, o.newValue)} (${times})` : times;
}
