// What Nsight Compute is asked for and what its answer means: the small fixed metric set, the parser of
// `ncu --csv --page raw --print-units base` output, the few-line summary that goes to the LLM, the panel and the report,
// and what a failed run was (ncu's own messages: counters not permitted, an unknown metric, no kernel profiled).

import { parse } from 'csv-parse/sync';

/** The reasons a warp was stalled, as Nsight Compute's Warp State Statistics name them. */
export const STALL_REASONS = [
  'barrier',
  'branch_resolving',
  'dispatch_stall',
  'drain',
  'imc_miss',
  'lg_throttle',
  'long_scoreboard',
  'math_pipe_throttle',
  'membar',
  'mio_throttle',
  'misc',
  'no_instruction',
  'not_selected',
  'short_scoreboard',
  'sleeping',
  'tex_throttle',
  'wait',
] as const;
export type StallReason = (typeof STALL_REASONS)[number];

/** Cycles a warp spends stalled for `reason` per instruction issued (the Warp State section's chart). */
export const stallMetric = (reason: string): string => `smsp__average_warps_issue_stalled_${reason}_per_issue_active.ratio`;

export const METRICS = {
  dramThroughputPct: 'dram__throughput.avg.pct_of_peak_sustained_elapsed',
  smThroughputPct: 'sm__throughput.avg.pct_of_peak_sustained_elapsed',
  achievedOccupancyPct: 'sm__warps_active.avg.pct_of_peak_sustained_active',
  sharedBankConflicts: 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum',
  localLoadBytes: 'l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum',
  localStoreBytes: 'l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum',
  durationNs: 'gpu__time_duration.sum',
  registersPerThread: 'launch__registers_per_thread',
  // The caches' throughput: a kernel that reuses data through L1 or L2 (a naive matrix multiply) is bound by them, not
  // by DRAM, which then stays low however the problem size compares with L2.
  l1texThroughputPct: 'l1tex__throughput.avg.pct_of_peak_sustained_active',
  l2ThroughputPct: 'lts__throughput.avg.pct_of_peak_sustained_elapsed',
} as const;

/** Every metric asked of ncu, in --metrics order. */
export const PROFILE_METRICS: readonly string[] = [...Object.values(METRICS), ...STALL_REASONS.map(stallMetric)];

/** One profiled kernel launch: ncu's identifying columns and every metric's value (numbers where they parse). */
export interface NcuKernelRow {
  kernelName: string;
  blockSize?: string;
  gridSize?: string;
  device?: string;
  computeCapability?: string;
  metrics: Record<string, number | string>;
  /** metric → its unit ("%", "byte", "nsecond"), where ncu printed a unit row. */
  units: Record<string, string>;
}

const ID_COLUMNS: Record<string, keyof Omit<NcuKernelRow, 'metrics' | 'units'> | null> = {
  ID: null,
  'Process ID': null,
  'Process Name': null,
  'Host Name': null,
  'Kernel Name': 'kernelName',
  Context: null,
  Stream: null,
  'Block Size': 'blockSize',
  'Grid Size': 'gridSize',
  Device: 'device',
  CC: 'computeCapability',
};

/** "1,234.5" and "88.42" → numbers; "n/a", "" and text stay strings. */
function value(text: string): number | string {
  const plain = text.trim().replace(/,(?=\d{3}(\D|$))/g, '');
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(plain) ? Number(plain) : text.trim();
}

/**
 * The kernel rows of ncu's CSV output: the raw page (`--page raw`: a column per metric, then a row of units) or the
 * details page (`--page details`, ncu's default: a row per metric with "Metric Name", "Metric Unit", "Metric Value").
 * ncu's own lines (==PROF==, ==WARNING==, ==ERROR==) and anything the profiled process printed are skipped: the table
 * starts at the header line whose first field is "ID".
 */
export function parseNcuCsv(output: string): NcuKernelRow[] {
  const lines = output.split(/\r?\n/);
  const start = lines.findIndex((l) => /^"ID","/.test(l));
  if (start < 0) return [];
  const table = lines.slice(start).filter((l) => l.startsWith('"'));
  const [header, ...rows] = parse(table.join('\n'), { relax_column_count: true }) as string[][];
  if (!header) return [];
  const column = (name: string): number => header.indexOf(name);
  const byId = new Map<string, NcuKernelRow>();
  const rowOf = (cells: string[]): NcuKernelRow => {
    const id = cells[0] ?? '';
    let row = byId.get(id);
    if (!row) {
      row = { kernelName: '', metrics: {}, units: {} };
      for (const [name, field] of Object.entries(ID_COLUMNS)) if (field && column(name) >= 0) row[field] = cells[column(name)] ?? '';
      byId.set(id, row);
    }
    return row;
  };
  const [nameAt, unitAt, valueAt] = [column('Metric Name'), column('Metric Unit'), column('Metric Value')];
  if (nameAt >= 0 && valueAt >= 0) {
    for (const cells of rows) {
      const row = rowOf(cells);
      const metric = cells[nameAt] ?? '';
      row.metrics[metric] = value(cells[valueAt] ?? '');
      const unit = unitAt >= 0 ? cells[unitAt] : undefined;
      if (unit) row.units[metric] = unit;
    }
    return [...byId.values()];
  }
  const unitRow = rows[0]?.[0] === '' ? rows.shift() : undefined;
  for (const cells of rows) {
    const row = rowOf(cells);
    header.forEach((name, i) => {
      if (name in ID_COLUMNS) return;
      row.metrics[name] = value(cells[i] ?? '');
      const unit = unitRow?.[i];
      if (unit) row.units[name] = unit;
    });
  }
  return [...byId.values()];
}

export interface StallShare {
  reason: StallReason;
  /** Cycles per issued instruction a warp spent stalled for this reason. */
  cyclesPerInstruction: number;
}

export interface ProfileNumbers {
  dramThroughputPct?: number;
  smThroughputPct?: number;
  l1texThroughputPct?: number;
  l2ThroughputPct?: number;
  /** Achieved occupancy: active warps as % of the peak the active cycles allow. */
  achievedOccupancyPct?: number;
  sharedBankConflicts?: number;
  /** Local memory traffic of the launch (register spills and local arrays), bytes loaded and stored. */
  localLoadBytes?: number;
  localStoreBytes?: number;
  durationNs?: number;
  registersPerThread?: number;
  /** The largest stall reasons, largest first (at most 3, each at least 5% of the stall cycles). */
  topStalls: StallShare[];
  /**
   * What bounds the kernel, by the Speed Of Light rule: the larger of the memory throughput (the busiest of DRAM, L1/TEX
   * and L2, as ncu's Memory Throughput) and the SM throughput, when it reaches 60% of peak; else neither (latency).
   */
  bound?: 'memory' | 'compute' | 'latency';
  /** The busiest memory unit, when the memory throughput was measured. */
  busiestMemory?: MemoryUnit;
}

export type MemoryUnit = 'DRAM' | 'L1/TEX cache' | 'L2 cache';

const MEMORY_UNITS: readonly [MemoryUnit, 'dramThroughputPct' | 'l1texThroughputPct' | 'l2ThroughputPct'][] = [
  ['DRAM', 'dramThroughputPct'],
  ['L1/TEX cache', 'l1texThroughputPct'],
  ['L2 cache', 'l2ThroughputPct'],
];

const TOP_STALLS = 3;
const BOUND_PCT = 60;

function numberOf(metrics: Record<string, number | string>, name: string): number | undefined {
  const v = metrics[name];
  return typeof v === 'number' ? v : undefined;
}

export function profileNumbers(row: NcuKernelRow): ProfileNumbers {
  const out: ProfileNumbers = { topStalls: [] };
  for (const [key, metric] of Object.entries(METRICS) as [keyof typeof METRICS, string][]) {
    const v = numberOf(row.metrics, metric);
    if (v !== undefined) out[key] = v;
  }
  const stalls = STALL_REASONS.map((reason) => ({ reason, cyclesPerInstruction: numberOf(row.metrics, stallMetric(reason)) ?? 0 })).filter((s) => s.cyclesPerInstruction > 0);
  const total = stalls.reduce((a, s) => a + s.cyclesPerInstruction, 0);
  out.topStalls = stalls
    .filter((s) => s.cyclesPerInstruction >= 0.05 * total)
    .sort((a, b) => b.cyclesPerInstruction - a.cyclesPerInstruction)
    .slice(0, TOP_STALLS);
  const measured = MEMORY_UNITS.filter(([, key]) => out[key] !== undefined);
  const busiest = measured.reduce<(typeof measured)[number] | undefined>((a, u) => (a === undefined || out[u[1]]! > out[a[1]]! ? u : a), undefined);
  if (busiest) out.busiestMemory = busiest[0];
  const memory = busiest && out[busiest[1]]!;
  const sm = out.smThroughputPct;
  if (memory !== undefined && sm !== undefined)
    out.bound = Math.max(memory, sm) < BOUND_PCT ? 'latency' : memory >= sm ? 'memory' : 'compute';
  return out;
}

const pct = (v: number): string => `${v.toFixed(v < 10 ? 1 : 0)}%`;

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 ** 2).toFixed(1)} MiB`;
}

/** A few lines for a prompt, the panel and the report. */
export function summarizeProfile(n: ProfileNumbers, kernel: string): string[] {
  const lines: string[] = [];
  const throughput = [
    n.dramThroughputPct !== undefined && `DRAM throughput ${pct(n.dramThroughputPct)} of peak`,
    n.l1texThroughputPct !== undefined && `L1/TEX cache ${pct(n.l1texThroughputPct)}`,
    n.l2ThroughputPct !== undefined && `L2 cache ${pct(n.l2ThroughputPct)}`,
    n.smThroughputPct !== undefined && `SM throughput ${pct(n.smThroughputPct)} of peak`,
  ].filter(Boolean);
  const cachesMeasured = n.l1texThroughputPct !== undefined || n.l2ThroughputPct !== undefined;
  const bound = {
    memory: n.busiestMemory && n.busiestMemory !== 'DRAM' ? `memory-bound by the ${n.busiestMemory}, not DRAM` : 'memory-bound',
    compute: 'compute-bound',
    latency: `latency-bound (neither ${cachesMeasured ? 'memory' : 'DRAM'} nor SM throughput reaches ${BOUND_PCT}% of peak)`,
  };
  lines.push(`${kernel}: ${n.bound ? `${bound[n.bound]}, ` : ''}${throughput.join(', ') || 'no throughput metrics'}`);
  if (n.achievedOccupancyPct !== undefined)
    lines.push(`achieved occupancy ${pct(n.achievedOccupancyPct)}${n.registersPerThread !== undefined ? ` with ${n.registersPerThread} registers per thread` : ''}`);
  if (n.topStalls.length > 0)
    lines.push(`top warp stalls (cycles per issued instruction): ${n.topStalls.map((s) => `${s.reason} ${s.cyclesPerInstruction.toFixed(1)}`).join(', ')}`);
  if (n.sharedBankConflicts !== undefined)
    lines.push(n.sharedBankConflicts === 0 ? 'no shared-memory bank conflicts' : `shared-memory bank conflicts: ${n.sharedBankConflicts}`);
  const local = (n.localLoadBytes ?? 0) + (n.localStoreBytes ?? 0);
  if (n.localLoadBytes !== undefined || n.localStoreBytes !== undefined)
    lines.push(local === 0 ? 'no local-memory traffic (no spills)' : `local-memory traffic (spills or local arrays): ${bytes(n.localLoadBytes ?? 0)} loaded, ${bytes(n.localStoreBytes ?? 0)} stored`);
  return lines;
}

export type NcuFailureKind = 'counters-not-permitted' | 'unknown-metrics' | 'no-kernel-profiled' | 'failed';

export interface NcuFailure {
  kind: NcuFailureKind;
  message: string;
  /** For unknown-metrics: the metric names ncu could not find (asked again without them). */
  metrics?: string[];
}

/** Why an ncu run gave no kernel row, from its output. */
export function classifyNcuFailure(output: string, exitCode: number | null): NcuFailure {
  if (/ERR_NVGPUCTRPERM/.test(output))
    return {
      kind: 'counters-not-permitted',
      message:
        'The driver does not let this user read the GPU performance counters (ERR_NVGPUCTRPERM): profile as root, or ' +
        'have an administrator allow it (NVreg_RestrictProfilingToAdminUsers=0, see https://developer.nvidia.com/ERR_NVGPUCTRPERM).',
    };
  const unknown = [...output.matchAll(/Failed to find metric[s]? (?:regex:)?"?([\w.]+)"?/g)].map((m) => m[1]!);
  if (unknown.length > 0) return { kind: 'unknown-metrics', metrics: unknown, message: `ncu does not know the metric(s) ${unknown.join(', ')} on this GPU` };
  const errors = output.split(/\r?\n/).filter((l) => /^==ERROR==/.test(l));
  if (/No kernels were profiled/.test(output) && errors.length === 0)
    return { kind: 'no-kernel-profiled', message: 'ncu profiled no kernel: the launch did not happen or the kernel name filter did not match it' };
  const tail = (errors.length > 0 ? errors : output.trim().split(/\r?\n/).slice(-5)).join('\n');
  return { kind: 'failed', message: `ncu failed (exit code ${exitCode})${tail ? `:\n${tail}` : ''}` };
}
