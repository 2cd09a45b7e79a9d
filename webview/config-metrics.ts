/**
 * What each configuration measured besides its time, as the panel's configuration table, its chart's tooltips and the
 * report show it: the driver's registers, local memory (spills), shared memory and occupancy, NVML's energy and power,
 * and the derived metrics (edp, GFLOPS/W, the run's own). Only what some configuration has gets a column. Pure.
 */
import type { ConfigSummary } from '../src/engine/progress/events';

export interface MetricColumn {
  /** The sort key of the column: 'metric:<id>'. */
  id: string;
  label: string;
  /** What the header's tooltip says. */
  title: string;
  value(c: ConfigSummary): number | undefined;
  text(c: ConfigSummary): string;
}

const kib = (bytes: number) => (bytes >= 1024 ? `${Number((bytes / 1024).toPrecision(3))} KiB` : `${bytes} B`);

/** Joules as J, mJ or µJ with 3 significant digits. */
export function formatEnergy(joules: number): string {
  if (joules >= 1) return `${Number(joules.toPrecision(3))} J`;
  if (joules >= 1e-3) return `${Number((joules * 1e3).toPrecision(3))} mJ`;
  return `${Number((joules * 1e6).toPrecision(3))} µJ`;
}

const number = (v: number) => String(Number(v.toPrecision(4)));
const text = (v: number | undefined, format: (v: number) => string) => (v === undefined ? '' : format(v));
const sharedBytes = (c: ConfigSummary) => (c.driver ? c.driver.static_shared_mem_bytes + (c.driver.dynamic_shared_mem_bytes ?? 0) : undefined);

/** The fixed columns, in their order; `shown` says whether a set of configurations needs the column at all. */
const FIXED: (Omit<MetricColumn, 'text'> & { format: (v: number) => string; shown: (configs: readonly ConfigSummary[]) => boolean })[] = [
  { id: 'metric:registers', label: 'Registers', title: 'Registers per thread (num_regs)', value: (c) => c.driver?.num_regs, format: String, shown: (cs) => cs.some((c) => c.driver) },
  {
    id: 'metric:local',
    label: 'Local memory',
    title: 'Local memory per thread: local arrays and register spills',
    value: (c) => c.driver?.local_mem_bytes,
    format: kib,
    shown: (cs) => cs.some((c) => (c.driver?.local_mem_bytes ?? 0) > 0),
  },
  {
    id: 'metric:shared',
    label: 'Shared memory',
    title: 'Shared memory per block: static and dynamic',
    value: sharedBytes,
    format: kib,
    shown: (cs) => cs.some((c) => (sharedBytes(c) ?? 0) > 0),
  },
  {
    id: 'metric:occupancy',
    label: 'Occupancy',
    title: 'Theoretical occupancy: active warps per multiprocessor over the most it can hold',
    value: (c) => c.driver?.occupancy,
    format: (v) => `${Math.round(100 * v)}%`,
    shown: (cs) => cs.some((c) => c.driver?.occupancy !== undefined),
  },
  { id: 'metric:energy', label: 'Energy', title: 'Energy of one launch (nvml_energy)', value: (c) => c.energy?.nvml_energy, format: formatEnergy, shown: (cs) => cs.some((c) => c.energy) },
  { id: 'metric:power', label: 'Power', title: 'Mean power while the kernel ran back to back (nvml_power)', value: (c) => c.energy?.nvml_power, format: (v) => `${v.toFixed(0)} W`, shown: (cs) => cs.some((c) => c.energy) },
];

/** The columns these configurations need: the fixed ones some have, then every derived metric in the order they come. */
export function metricColumns(configs: readonly ConfigSummary[]): MetricColumn[] {
  const fixed = FIXED.filter((col) => col.shown(configs)).map(({ format, shown: _shown, ...col }): MetricColumn => ({ ...col, text: (c) => text(col.value(c), format) }));
  const names = [...new Set(configs.flatMap((c) => Object.keys(c.metrics ?? {})))];
  const derived = names.map((name): MetricColumn => ({ id: `metric:${name}`, label: name, title: `The metric ${name}`, value: (c) => c.metrics?.[name], text: (c) => text(c.metrics?.[name], number) }));
  return [...fixed, ...derived];
}

/** A configuration's value in a column by its id (for sorting): the fixed ones, else the metric of that name. */
export function metricValue(c: ConfigSummary, id: string): number | undefined {
  const fixed = FIXED.find((col) => col.id === id);
  return fixed ? fixed.value(c) : c.metrics?.[id.slice('metric:'.length)];
}

/** What a point's tooltip adds for one configuration: every metric it has, with the clocks and temperature NVML read. */
export function metricRows(c: ConfigSummary): [string, string][] {
  const rows: [string, string][] = metricColumns([c]).map((col) => [col.label, col.text(c)]);
  const e = c.energy;
  if (e?.core_freq !== undefined) rows.push(['Clocks', `SM ${e.core_freq.toFixed(0)} MHz${e.mem_freq === undefined ? '' : `, memory ${e.mem_freq.toFixed(0)} MHz`}`]);
  if (e?.temperature !== undefined) rows.push(['Temperature', `${e.temperature.toFixed(0)} °C`]);
  if (c.energyUnavailable !== undefined) rows.push(['Energy', `not measured: ${c.energyUnavailable}`]);
  return rows;
}

/** Why no configuration has energy readings where energy was asked for; undefined where some have them or none was asked for. */
export function energyNote(configs: readonly ConfigSummary[]): string | undefined {
  if (configs.some((c) => c.energy)) return undefined;
  const reason = configs.find((c) => c.energyUnavailable !== undefined)?.energyUnavailable;
  return reason === undefined ? undefined : `Energy and power not measured: ${reason}`;
}
