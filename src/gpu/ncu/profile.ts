// Profiles one launch of a compiled kernel with Nsight Compute: writes the cubin and the arguments to a temporary
// directory, runs `ncu ... node gpu-worker.js --profile=REQUEST.json` (see launch-once.ts) with a time limit, and
// reads ncu's CSV into the structured numbers and summary lines of report.ts.
//
// The GPU is left as it was: ncu is told --clock-control none (by default it locks the clocks to base while it
// profiles). Profiling runs in a process of its own, after the timings, so it never changes a measured time.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { checkNonNegativeInteger } from '../check';
import { checkScalarValue, isKernelScalar, isTypedArrayOf, nativeScalar, scalarBitPattern, type AnyTypedArray, type DType, type KernelScalar, type ScalarValueOf } from '../dtype';
import { KernelTimeoutError, argumentError, deserializeError } from '../errors';
import { LaunchConfig, type LaunchConfigInit } from '../launch-config';
import { checkRandomSpec, type RandomSpec } from '../random';
import { runTool } from '../run-tool';
import type { CompiledProgram } from '../types';
import { defaultWorkerPath } from '../worker-process';
import { NCU_SEARCH_DESCRIPTION, findNsightCompute, type NsightCompute } from './find';
import { PROFILE_FLAG, type LaunchOnceArg, type LaunchOnceRequest, type LaunchOnceResult } from './launch-once';
import { PROFILE_METRICS, classifyNcuFailure, parseNcuCsv, profileNumbers, summarizeProfile, type NcuKernelRow, type ProfileNumbers } from './report';

/** A buffer argument: its contents as data, as one repeated value, as seeded random numbers, or zeros. */
export type ProfileBuffer<D extends DType = DType> =
  | { dtype: D; data: AnyTypedArray }
  | { dtype: D; length: number; fill: ScalarValueOf<D> }
  | { dtype: D; length: number; random: RandomSpec }
  | { dtype: D; length: number };

export type ProfileArg = ProfileBuffer | KernelScalar;

/** One configuration to profile: what the tuner has for it. */
export interface ProfileTarget {
  /** The configuration's build (NVRTC or nvcc), with the kernel's lowered name. */
  compiled: CompiledProgram;
  nameExpression: string;
  launch: LaunchConfigInit;
  args: readonly ProfileArg[];
  /** CUDA device ordinal; default 0. */
  device?: number;
}

export interface ProfileOptions {
  /** The Nsight Compute to run; default findNsightCompute(). */
  ncu?: NsightCompute | null;
  /** Time limit of the whole profile (ncu replays the kernel once per metric pass); default 120 000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The worker bundle that runs the launch; default the one the GPU client uses. */
  workerPath?: string;
  /** Extra environment for the profiled process. */
  env?: Record<string, string>;
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

async function launchArg(arg: ProfileArg, index: number, dir: string): Promise<LaunchOnceArg> {
  if (isKernelScalar(arg)) {
    const s = nativeScalar(arg.dtype, checkScalarValue(arg.dtype, arg.value, `args[${index}]`));
    return { kind: 'scalar', dtype: s.dtype, value: typeof s.value === 'bigint' ? s.value.toString() : s.value };
  }
  if (typeof arg !== 'object' || arg === null || !('dtype' in arg)) throw argumentError(`args[${index}]`, 'a buffer description or a typed scalar', arg);
  if ('data' in arg) {
    if (!isTypedArrayOf(arg.dtype, arg.data)) throw argumentError(`args[${index}].data`, `a typed array of ${arg.dtype}`, arg.data);
    const file = path.join(dir, `arg${index}.bin`);
    await writeFile(file, new Uint8Array(arg.data.buffer, arg.data.byteOffset, arg.data.byteLength));
    return { kind: 'buffer', dtype: arg.dtype, length: arg.data.length, contents: { file } };
  }
  const length = checkNonNegativeInteger(`args[${index}].length`, arg.length);
  if ('fill' in arg) {
    const pattern = scalarBitPattern(arg.dtype, checkScalarValue(arg.dtype, arg.fill, `args[${index}].fill`));
    return { kind: 'buffer', dtype: arg.dtype, length, contents: { pattern: pattern.toString() } };
  }
  if ('random' in arg) return { kind: 'buffer', dtype: arg.dtype, length, contents: { random: checkRandomSpec(arg.dtype, arg.random) } };
  return { kind: 'buffer', dtype: arg.dtype, length, contents: { zero: true } };
}

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
export async function profileKernel(target: ProfileTarget, options: ProfileOptions = {}): Promise<KernelProfile> {
  const ncu = options.ncu === undefined ? findNsightCompute() : options.ncu;
  if (!ncu) return { available: false, reason: 'ncu-not-found', message: `Nsight Compute (ncu) is not installed: looked on ${NCU_SEARCH_DESCRIPTION}` };
  const loweredName = target.compiled.loweredNames[target.nameExpression];
  if (loweredName === undefined)
    throw argumentError('nameExpression', `one of the build's name expressions (${Object.keys(target.compiled.loweredNames).join(', ')})`, target.nameExpression);
  const launch = LaunchConfig.from(target.launch);
  const dir = await mkdtemp(path.join(tmpdir(), 'lkt-ncu-'));
  try {
    const cubinFile = path.join(dir, 'kernel.cubin');
    await writeFile(cubinFile, target.compiled.cubin);
    const request: LaunchOnceRequest = {
      device: target.device ?? 0,
      cubinFile,
      loweredName,
      grid: launch.grid,
      block: launch.block,
      sharedMemBytes: launch.sharedMemBytes,
      args: await Promise.all(target.args.map((a, i) => launchArg(a, i, dir))),
      resultFile: path.join(dir, 'result.json'),
    };
    const requestFile = path.join(dir, 'request.json');
    await writeFile(requestFile, JSON.stringify(request));
    const workerPath = options.workerPath ?? defaultWorkerPath();
    let metrics = [...(options.metrics ?? PROFILE_METRICS)];
    const skippedMetrics: string[] = [];
    for (let attempt = 0; ; attempt++) {
      await rm(request.resultFile, { force: true });
      let run;
      try {
        run = await runTool(ncu.path, ncuArgs(metrics, loweredName, workerPath, requestFile), {
          cwd: dir,
          timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          ...(options.signal && { signal: options.signal }),
          // Inside an editor built on Electron, process.execPath is the editor: it runs the worker as Node only when told.
          env: { ...process.env, ...(process.versions.electron && { ELECTRON_RUN_AS_NODE: '1' }), ...options.env },
          tool: 'ncu',
          method: 'profile',
          timeoutAdvice: 'Nsight Compute replays the kernel once per pass of metrics; a slow kernel needs a longer time limit.',
        });
      } catch (e) {
        if (e instanceof KernelTimeoutError) return { available: false, reason: 'timeout', message: e.message };
        throw e;
      }
      const launched = await readFile(request.resultFile, 'utf8').then((t) => JSON.parse(t) as LaunchOnceResult, () => undefined);
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

