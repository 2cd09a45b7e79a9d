// Runs one launch of a compiled kernel under NVIDIA's compute-sanitizer, once per tool: memcheck (out-of-bounds and
// misaligned accesses, faults), racecheck (shared-memory races, within a warp too), synccheck (barriers not every
// thread reaches) and initcheck (reads of global memory never written). Each run is
// `compute-sanitizer --tool T ... node gpu-worker.js --profile=REQUEST.json`: the worker's launch-once process
// (../ncu/launch-once.ts), the arguments made as the tuner makes them but with pure outputs never written, so that a
// kernel that reads one is caught. The whole run has one time limit, shared by the tools; what they found, why they
// could not run, or which tool ran out of time comes back typed, never as a silent pass.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { KernelTimeoutError, deserializeError } from '../errors';
import { runTool } from '../run-tool';
import { defaultWorkerPath } from '../worker-process';
import { PROFILE_FLAG, type LaunchOnceResult } from '../ncu/launch-once';
import { launchProcessEnv, writeLaunchRequest, type LaunchTarget } from '../ncu/launch-request';
import { SANITIZER_SEARCH_DESCRIPTION, findComputeSanitizer, sanitizerVersion, type ComputeSanitizer } from './find';
import { SANITIZER_TOOLS, parseSanitizerOutput, type SanitizerFinding, type SanitizerTool } from './report';

export interface SanitizeOptions {
  /** The compute-sanitizer to run; default findComputeSanitizer(). */
  sanitizer?: ComputeSanitizer | null;
  /** The tools to run, in this order; default all four (SANITIZER_TOOLS). */
  tools?: readonly SanitizerTool[];
  /** Time limit of all the tools' runs together; default 120 000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The worker bundle that runs the launch; default the one the GPU client uses. */
  workerPath?: string;
  /** Extra environment for the launched process (the GPU worker's: GpuWorker.env). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** The compute-sanitizer that ran: where, and its version where it says. */
export interface SanitizerIdentity {
  path: string;
  version?: string;
}

interface RunFacts {
  sanitizer: SanitizerIdentity;
  /** Milliseconds of each tool's run (process start, CUDA under instrumentation, the launch), in the order they ran. */
  toolMs: Partial<Record<SanitizerTool, number>>;
}

export type SanitizerRun =
  /** Every tool ran the launch and reported nothing. */
  | ({ status: 'clean'; tools: SanitizerTool[] } & RunFacts)
  /** Tools reported findings; `tools` are those that finished (a later one may have run out of time or failed). */
  | ({ status: 'hazards'; findings: SanitizerFinding[]; tools: SanitizerTool[] } & RunFacts)
  /** compute-sanitizer is not installed, did not run the launch, or the launch failed under it without a finding. */
  | { status: 'unavailable'; reason: 'not-found' | 'failed' | 'launch-failed'; message: string }
  /** `tool` was the first to run out of its share of the time; the tools in `clean` finished without a finding. */
  | ({ status: 'timed_out'; tool: SanitizerTool; limitMs: number; clean: SanitizerTool[] } & RunFacts);

const DEFAULT_TIMEOUT_MS = 120_000;
/** Padding after every allocation: a read just past a buffer's end stays out of bounds, even where another buffer follows. */
const PADDING_BYTES = 64;

/** The options of one tool's run (the kernel's backtraces with full paths, so that a frame names the user's file). */
export function sanitizerArgs(tool: SanitizerTool, workerPath: string, requestFile: string): string[] {
  const toolOptions: Record<SanitizerTool, string[]> = {
    // The launching process's failing API calls (after a fault, say) are not the kernel's findings.
    memcheck: ['--padding', String(PADDING_BYTES), '--report-api-errors', 'no'],
    racecheck: ['--racecheck-report', 'analysis'],
    synccheck: [],
    initcheck: [],
  };
  return [
    '--tool',
    tool,
    ...toolOptions[tool],
    '--show-backtrace',
    'device',
    '--strip-paths',
    'no',
    // The launch's own outcome is read from its result file.
    '--check-exit-code',
    'no',
    process.execPath,
    workerPath,
    `${PROFILE_FLAG}${requestFile}`,
  ];
}

function lastLines(output: string, n: number): string {
  return output.trim().split(/\r?\n/).slice(-n).join('\n');
}

/**
 * Runs one launch of `target` under each tool. Never rejects for a missing or failing compute-sanitizer or a timeout:
 * the result says so. Bad arguments throw before anything runs; an abort rejects with the GPU layer's AbortError.
 */
export async function sanitizeKernel(target: LaunchTarget, options: SanitizeOptions = {}): Promise<SanitizerRun> {
  const found = options.sanitizer === undefined ? findComputeSanitizer() : options.sanitizer;
  if (!found) return { status: 'unavailable', reason: 'not-found', message: `compute-sanitizer is not installed: looked on ${SANITIZER_SEARCH_DESCRIPTION}` };
  const tools = [...(options.tools ?? SANITIZER_TOOLS)];
  const limitMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  const dir = await mkdtemp(path.join(tmpdir(), 'lkt-sanitizer-'));
  try {
    const { requestFile, resultFile } = await writeLaunchRequest(target, dir);
    const workerPath = options.workerPath ?? defaultWorkerPath();
    const version = await sanitizerVersion(found);
    const facts: RunFacts = { sanitizer: { path: found.path, ...(version && { version }) }, toolMs: {} };
    const findings: SanitizerFinding[] = [];
    const finished: SanitizerTool[] = [];
    /** The first tool that ran out of its time: a kernel that hangs under one tool leaves the others their share. */
    let timedOut: SanitizerTool | undefined;
    const outcome = (): SanitizerRun => {
      if (findings.length > 0) return { status: 'hazards', findings, tools: finished, ...facts };
      return timedOut ? { status: 'timed_out', tool: timedOut, limitMs, clean: finished, ...facts } : { status: 'clean', tools: finished, ...facts };
    };
    for (const [index, tool] of tools.entries()) {
      // Each tool gets an even share of the time left, so what one tool leaves unused goes to the ones after it.
      const shareMs = Math.floor((limitMs - (performance.now() - started)) / (tools.length - index));
      if (shareMs <= 0) {
        timedOut ??= tool;
        continue;
      }
      await rm(resultFile, { force: true });
      const toolStarted = performance.now();
      let run;
      try {
        run = await runTool(found.path, sanitizerArgs(tool, workerPath, requestFile), {
          cwd: dir,
          timeoutMs: shareMs,
          ...(options.signal && { signal: options.signal }),
          env: launchProcessEnv(options.env),
          tool: 'compute-sanitizer',
          method: tool,
          timeoutAdvice: 'compute-sanitizer slows a launch down many times; a smaller problem or a longer time limit lets it finish.',
        });
      } catch (e) {
        if (!(e instanceof KernelTimeoutError)) throw e;
        timedOut ??= tool;
        continue;
      }
      facts.toolMs[tool] = Math.round(performance.now() - toolStarted);
      const report = parseSanitizerOutput(tool, run.output);
      const launched = await readFile(resultFile, 'utf8').then((t) => JSON.parse(t) as LaunchOnceResult, () => undefined);
      if (report.findings.length > 0) {
        findings.push(...report.findings);
      } else if ((report.reported ?? 0) > report.apiErrors) {
        // Counted but in no form read here: still a finding, with the tool's words.
        findings.push({
          tool,
          kind: 'other',
          severity: 'error',
          message: `compute-sanitizer's ${tool} counted ${report.reported} error(s)`,
          frames: [],
          details: report.notes.length > 0 ? report.notes : [lastLines(run.output, 12)],
          occurrences: report.reported!,
        });
      } else if (launched && !launched.ok) {
        if (findings.length > 0) return outcome();
        return { status: 'unavailable', reason: 'launch-failed', message: `the launch failed under compute-sanitizer's ${tool}: ${deserializeError(launched.error).message}` };
      } else if (!launched || report.reported === undefined) {
        if (findings.length > 0) return outcome();
        const why = report.notes.length > 0 ? report.notes.join('; ') : lastLines(run.output, 8) || `no output, exit code ${run.code}`;
        return { status: 'unavailable', reason: 'failed', message: `compute-sanitizer's ${tool} did not check the launch (${found.path}): ${why}` };
      }
      finished.push(tool);
    }
    return outcome();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
