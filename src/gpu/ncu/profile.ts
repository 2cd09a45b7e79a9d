// Profiles one launch of a compiled kernel with Nsight Compute: writes the cubin and the arguments to a temporary
// directory, runs `ncu ... node gpu-worker.js --profile=REQUEST.json` (see launch-once.ts) with a time limit, and
// reads ncu's CSV into the structured numbers and summary lines of report.ts.
//
// The GPU is left as it was: ncu is told --clock-control none (by default it locks the clocks to base while it
// profiles). Profiling runs in a process of its own, after the timings, so it never changes a measured time.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { KernelTimeoutError, deserializeError } from '../errors';
import { runTool } from '../run-tool';
import { defaultWorkerPath } from '../worker-process';
import { NCU_SEARCH_DESCRIPTION, findNsightCompute, type NsightCompute } from './find';
import { PROFILE_FLAG, type LaunchOnceResult } from './launch-once';
import { launchProcessEnv, writeLaunchRequest, type LaunchTarget } from './launch-request';
import { PROFILE_METRICS, classifyNcuFailure, parseNcuCsv, profileNumbers, summarizeProfile, type NcuKernelRow, type ProfileNumbers } from './report';

export interface ProfileOptions {
  /** The Nsight Compute to run; default findNsightCompute(). */
  ncu?: NsightCompute | null;
  /** Time limit of the whole profile (ncu replays the kernel once per metric pass); default 120 000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The worker bundle that runs the launch; default the one the GPU client uses. */
  workerPath?: string;
  /** Extra environment for the profiled process (the GPU worker's: GpuWorker.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Metrics to collect; default PROFILE_METRICS. */
  metrics?: readonly string[];
}

export type ProfileUnavailable = 'ncu-not-found' | 'counters-not-permitted' | 'timeout' | 'launch-failed' | 'failed';

export type KernelProfile =
  | {
      available: true;
      kernel: string;
      numbers: ProfileNumbers;
      /** A few lines for a prompt, the panel and the report. */
      summary: string[];
      /** Every metric ncu reported, by its name, with its unit where ncu printed one. */
      metrics: Record<string, number | string>;
      units: Record<string, string>;
      /** Metrics this GPU's ncu does not know, left out of the profile. */
      skippedMetrics: string[];
      ncu: NsightCompute;
    }
  | { available: false; reason: ProfileUnavailable; message: string };

const DEFAULT_TIMEOUT_MS = 120_000;
/** Asking again without the metrics ncu does not know on this GPU: at most this many times. */
const MAX_METRIC_RETRIES = 2;

function ncuArgs(ncuMetrics: readonly string[], loweredName: string, workerPath: string, requestFile: string): string[] {
  return [
    '--csv',
    '--page',
    'raw',
    '--print-units',
    'base',
    // ncu locks the clocks to base while profiling unless told otherwise: the machine's clocks stay as they are.
    '--clock-control',
    'none',
    '--kernel-name-base',
    'mangled',
    '--kernel-name',
    loweredName,
    '--launch-count',
    '1',
    '--metrics',
    ncuMetrics.join(','),
    process.execPath,
    workerPath,
    `${PROFILE_FLAG}${requestFile}`,
  ];
}

/** The kernel's row of ncu's output, or why there is none. */
function kernelRow(output: string, loweredName: string): NcuKernelRow | undefined {
  const rows = parseNcuCsv(output);
  return rows.find((r) => r.kernelName === loweredName || r.kernelName.startsWith(`${loweredName}(`)) ?? rows[0];
}

/** Profiles one launch of `target` with Nsight Compute. Never rejects for a missing or refusing ncu: it says why. */
export async function profileKernel(target: LaunchTarget, options: ProfileOptions = {}): Promise<KernelProfile> {
  const ncu = options.ncu === undefined ? findNsightCompute() : options.ncu;
  if (!ncu) return { available: false, reason: 'ncu-not-found', message: `Nsight Compute (ncu) is not installed: looked on ${NCU_SEARCH_DESCRIPTION}` };
  const dir = await mkdtemp(path.join(tmpdir(), 'lkt-ncu-'));
  try {
    const { requestFile, resultFile, loweredName } = await writeLaunchRequest(target, dir);
    const workerPath = options.workerPath ?? defaultWorkerPath();
    let metrics = [...(options.metrics ?? PROFILE_METRICS)];
    const skippedMetrics: string[] = [];
    for (let attempt = 0; ; attempt++) {
      await rm(resultFile, { force: true });
      let run;
      try {
        run = await runTool(ncu.path, ncuArgs(metrics, loweredName, workerPath, requestFile), {
          cwd: dir,
          timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          ...(options.signal && { signal: options.signal }),
          env: launchProcessEnv(options.env),
          tool: 'ncu',
          method: 'profile',
          timeoutAdvice: 'Nsight Compute replays the kernel once per pass of metrics; a slow kernel needs a longer time limit.',
        });
      } catch (e) {
        if (e instanceof KernelTimeoutError) return { available: false, reason: 'timeout', message: e.message };
        throw e;
      }
      const launched = await readFile(resultFile, 'utf8').then((t) => JSON.parse(t) as LaunchOnceResult, () => undefined);
      if (launched && !launched.ok)
        return { available: false, reason: 'launch-failed', message: `The profiled launch failed: ${deserializeError(launched.error).message}` };
      const row = kernelRow(run.output, loweredName);
      if (row) {
        const numbers = profileNumbers(row);
        return {
          available: true,
          kernel: target.nameExpression,
          numbers,
          summary: summarizeProfile(numbers, target.nameExpression),
          metrics: row.metrics,
          units: row.units,
          skippedMetrics,
          ncu,
        };
      }
      const failure = classifyNcuFailure(run.output, run.code);
      if (failure.kind === 'unknown-metrics' && attempt < MAX_METRIC_RETRIES) {
        const unknown = new Set(failure.metrics);
        skippedMetrics.push(...metrics.filter((m) => unknown.has(m)));
        metrics = metrics.filter((m) => !unknown.has(m));
        if (metrics.length > 0) continue;
      }
      return { available: false, reason: failure.kind === 'counters-not-permitted' ? 'counters-not-permitted' : 'failed', message: failure.message };
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

