/**
 * Running kernels through the tuner for the graph: the original kernel on a test (its time; it is also the oracle), and
 * a candidate over its search space on the first test, then its best configuration on every other test (the seed's
 * _run_tests). GPU work runs alone (EngineContext.exclusive); every evaluated configuration is reported as an event.
 * A candidate without a single correct configuration fails with the typed error of its most telling failure.
 */
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { CompileError, KernelFaultError, KernelTimeoutError, LaunchError } from '../../gpu/errors';
import { SearchSpaceError } from '../../tuner/space/search-space';
import { FailedTestsError, KernelTest, TunableKernel, type RunOptions, type TuneOptions } from '../../tuner/tunable-kernel';
import type { ConfigProfile } from '../../tuner/run/profile';
import { objectiveValue, outcomeOf, searchSummaryOf, type Config, type ConfigResult, type TuneResult } from '../../tuner/types';
import { countConfigurations, type TuneParamLists } from './code';
import { engineContext, type EngineContext } from '../context';
import { TimeoutError, tuningTimeoutMs, UnusableKernelError } from '../errors';
import { emit, summarizeConfig, type TuningEventBody } from '../progress/events';
import type { GridDivisors } from './finalize';
import { fileInfo } from './kernel-view';
import type { TestRef, TuningStateValue } from '../state';
import type { TuningBackend } from '../../tuner/run/backend';
import type { GpuShare } from '../resources/gpu-pool';

/** A rewrite of the kernel (the whole file, the rewrite spliced in), ready to be tuned. */
export interface CandidateKernel {
  code: string;
  tuneParams: TuneParamLists;
  restrictions: string[];
  gridDivisors: GridDivisors;
  /** Dynamic shared memory per block: bytes or an expression over the tunable parameters; null for none. */
  sharedMemBytes: number | string | null;
}

export interface CandidateRun {
  timeMs: number;
  /** The objective's value of the best configuration (its time when the objective is time). */
  objectiveValue: number;
  bestParams: Config;
  result: TuneResult;
  /** The best configuration's profile, when the backend can profile. */
  profile?: ConfigProfile;
}

/**
 * Time limit of profiling a kernel's best configuration with Nsight Compute (it replays the launch once per pass of
 * metrics); past it, the driver's metrics stand in.
 */
export const PROFILE_TIMEOUT_MS = 60_000;

/** The event of a kernel's profile (the original's without a step), or the warning of why profiling it failed. */
export function profileEvent(result: Pick<TuneResult, 'profile' | 'profileError'>, progress?: { stepId: string; candidate: number }): TuningEventBody | undefined {
  if (result.profile) return { type: 'profile', ...progress, profile: result.profile };
  if (result.profileError === undefined) return undefined;
  return { type: 'warning', message: `profiling ${progress ? `step ${progress.stepId}'s best configuration` : 'the original kernel'} failed: ${result.profileError.split('\n', 1)[0]}` };
}

/** Announces a kernel's profile, or why profiling it failed (see profileEvent); returns the profile. */
export function reportProfile(result: Pick<TuneResult, 'profile' | 'profileError'>, config: LangGraphRunnableConfig, progress?: { stepId: string; candidate: number }): ConfigProfile | undefined {
  const event = profileEvent(result, progress);
  if (event) emit(config, event);
  return result.profile;
}

/** The original kernel on the first test: its time, its objective's value, and its profile where it was asked for. */
export interface OriginalRun extends Pick<TuneResult, 'profile' | 'profileError'> {
  timeMs: number;
  objectiveValue: number;
}

export function kernelTestOf(ref: TestRef, ctx: EngineContext): KernelTest {
  if (ref.origin === 'user') {
    const test = ctx.userTests[ref.userIndex ?? -1];
    if (!test) throw new RangeError(`test ${ref.id} refers to user test ${ref.userIndex}, but only ${ctx.userTests.length} were given: add the same tests when resuming a session`);
    return test;
  }
  return KernelTest.fromSpec(ref.spec);
}

/**
 * What a tuning run on the first test optimises and measures besides the time: the session's objective, metrics and
 * energy, with the work of a launch on that test for metrics over flops and bytes (where the tests know it).
 */
function objectiveOptions(ctx: EngineContext, state: TuningStateValue): TuneOptions {
  const { objective, metrics, energy } = ctx.settings;
  const work = state.tests[0]?.work;
  return {
    objective: objective.name,
    objectiveHigherIsBetter: objective.higherIsBetter,
    ...(metrics && { metrics }),
    ...(energy && { energy }),
    ...(work && { work: { bytes: work.bytes, ...(work.flops !== undefined && { flops: work.flops }) } }),
  };
}

function commonOptions(ctx: EngineContext, config: LangGraphRunnableConfig, backends: readonly TuningBackend[] = ctx.backends): TuneOptions {
  const launchTimeoutS = ctx.settings.launchTimeoutS;
  return {
    backend: backends,
    compilerOptions: ctx.settings.compilerOptions,
    iterations: ctx.settings.iterations,
    // Unless the user fixed it, one launch may take 100x the reference kernel's time, at least a second (the tuner's
    // default): a candidate that hangs costs about a second.
    ...(launchTimeoutS !== undefined && { launchTimeoutMs: launchTimeoutS * 1000 }),
    ...(config.signal && { signal: config.signal }),
  };
}

function lists(config: Config): TuneParamLists {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, [v]]));
}

function throwIfAborted(config: LangGraphRunnableConfig): void {
  config.signal?.throwIfAborted();
}

/** The original kernel's time on a test (what sizes a generated test), at the baseline launch parameters. */
export async function timeOriginal(state: TuningStateValue, test: KernelTest, config: LangGraphRunnableConfig): Promise<number> {
  return (await runOriginal(state, test, config, {})).timeMs;
}

/**
 * The original kernel's time, the objective's value and its profile (or why profiling failed: see reportProfile) on a
 * test: the baseline every step is judged against, and what the first step's request tells the model.
 */
export function measureOriginal(state: TuningStateValue, test: KernelTest, config: LangGraphRunnableConfig): Promise<OriginalRun> {
  return runOriginal(state, test, config, { ...objectiveOptions(engineContext(config), state), profile: { timeoutMs: PROFILE_TIMEOUT_MS } });
}

/**
 * Runs the original kernel on a test at the baseline launch parameters (with `measure`'s objective, metrics, energy and
 * profile). A kernel that does not compile or does not reproduce its own results cannot be the oracle:
 * UnusableKernelError (no model can fix that by changing the test).
 */
async function runOriginal(state: TuningStateValue, test: KernelTest, config: LangGraphRunnableConfig, measure: TuneOptions): Promise<OriginalRun> {
  const ctx = engineContext(config);
  const kernel = await TunableKernel.create(state.originalCode, fileInfo(state));
  const unusable = (log: string) =>
    new UnusableKernelError(`the kernel to tune does not compile with ${JSON.stringify(state.baselineParams)}:\n${log}`);
  // It is its own oracle here, so a compile error comes from building the oracle (thrown) or the configuration (a result).
  const result = await ctx
    .exclusive(() => kernel.tune(test, lists(state.baselineParams), [], { ...commonOptions(ctx, config), ...measure, ...sharedMemOf(state.analysis?.sharedMemBytes), timeLimitMs: tuningTimeoutMs(ctx.settings.timePerTestS, 1), earlyStop: false }))
    .catch((e: unknown) => {
      throw e instanceof CompileError ? unusable(e.log) : e;
    });
  throwIfAborted(config);
  const best = result.best;
  const value = best && objectiveValue(best, result.objective);
  if (best?.timeMs !== undefined && value !== undefined) {
    return { timeMs: best.timeMs, objectiveValue: value, ...(result.profile && { profile: result.profile }), ...(result.profileError !== undefined && { profileError: result.profileError }) };
  }
  const failure = failureOf(result);
  if (failure instanceof CompileError) throw unusable(failure.log);
  if (failure instanceof FailedTestsError) {
    throw new UnusableKernelError(`the kernel to tune does not reproduce its own results (a race, or atomics on floats?), so it cannot serve as the reference: ${failure.message}`);
  }
  throw failure;
}

/** How a candidate runs: the session's compiler options and limits, the original kernel as the oracle, the candidate's geometry. */
export function candidateRunOptions(candidate: CandidateKernel, state: TuningStateValue, ctx: EngineContext, config: LangGraphRunnableConfig, backends: readonly TuningBackend[] = ctx.backends): RunOptions {
  return {
    ...commonOptions(ctx, config, backends),
    // The original kernel launches with the default geometry, whatever grid divisors the candidate declares.
    oracle: { code: state.originalCode, ...(state.filePath && { filePath: state.filePath }), config: state.baselineParams, kernelName: state.kernelName, launch: sharedMemOf(state.analysis?.sharedMemBytes) },
    ...sharedMemOf(candidate.sharedMemBytes),
    ...(candidate.gridDivisors.x !== undefined && { gridDivX: candidate.gridDivisors.x }),
    ...(candidate.gridDivisors.y !== undefined && { gridDivY: candidate.gridDivisors.y }),
    ...(candidate.gridDivisors.z !== undefined && { gridDivZ: candidate.gridDivisors.z }),
  };
}

/**
 * Tunes a candidate on the first test and checks its best configuration on the others, on the GPUs of `share`: every
 * GPU of the session (default), or one of them, so that several candidates are tuned side by side.
 */
export async function runCandidate(
  candidate: CandidateKernel,
  state: TuningStateValue,
  config: LangGraphRunnableConfig,
  progress: { stepId: string; candidate: number },
  share: GpuShare = 'all',
): Promise<CandidateRun> {
  const ctx = engineContext(config);
  const kernel = await TunableKernel.create(candidate.code, fileInfo(state));
  const [first, ...others] = state.tests.map((ref) => kernelTestOf(ref, ctx));
  if (!first) throw new RangeError('the session has no tests');
  return ctx.onGpus(share, (backends) => tuneCandidate(kernel, candidate, first, others, state, config, progress, backends));
}

async function tuneCandidate(
  kernel: TunableKernel,
  candidate: CandidateKernel,
  first: KernelTest,
  others: readonly KernelTest[],
  state: TuningStateValue,
  config: LangGraphRunnableConfig,
  progress: { stepId: string; candidate: number },
  backends: readonly TuningBackend[],
): Promise<CandidateRun> {
  const ctx = engineContext(config);
  const options: TuneOptions = candidateRunOptions(candidate, state, ctx, config, backends);
  let done = 0;
  let failures = 0;
  const result = await kernel.tune(first, candidate.tuneParams, candidate.restrictions, {
    ...options,
    ...objectiveOptions(ctx, state),
    timeLimitMs: tuningTimeoutMs(ctx.settings.timePerTestS, countConfigurations(candidate.tuneParams)),
    profile: { timeoutMs: PROFILE_TIMEOUT_MS },
    onResult: (r, p) => {
      done++;
      if (outcomeOf(r.status) === 'failed') failures++;
      emit(config, { type: 'configs.evaluated', ...progress, done, total: p.total, failures, bestTimeMs: p.best?.timeMs ?? null, result: summarizeConfig(r) });
    },
  });
  emit(config, { type: 'configs.searched', ...progress, search: searchSummaryOf(result) });
  throwIfAborted(config);
  const best = result.best;
  const value = best && objectiveValue(best, result.objective);
  if (best?.timeMs === undefined || value === undefined) throw failureOf(result);
  const profile = reportProfile(result, config, progress);
  for (const test of others) await kernel.test(test, best.config, options);
  throwIfAborted(config);
  return { timeMs: best.timeMs, objectiveValue: value, bestParams: best.config, result, ...(profile && { profile }) };
}

/** Of the failures, the one that tells the model most: wrong results first, then compile errors, faults, timeouts. */
const PRECEDENCE = ['wrong_result', 'compile_error', 'fault', 'timeout', 'launch_error'] as const;

/** The error a tuning run without a correct configuration stands for. */
function failureOf(result: TuneResult): Error {
  const ran = result.results.filter((r) => r.status !== 'restricted' && r.status !== 'exceeds_device_limits');
  const pick = PRECEDENCE.map((status) => ran.find((r) => r.status === status)).find((r): r is ConfigResult => r !== undefined);
  if (!pick) {
    if (result.stopReason === 'time_limit') return new TimeoutError(`no configuration finished within the time limit (${result.elapsedMs.toFixed(0)} ms spent)`, result.elapsedMs);
    const excluded = result.results.filter((r) => r.status === 'exceeds_device_limits').map((r) => `${r.key}: ${r.error?.message ?? r.note ?? 'exceeds the device limits'}`);
    return new SearchSpaceError(
      excluded.length > 0
        ? `no configuration fits the device: ${excluded.slice(0, 5).join('; ')}`
        : 'no configuration satisfies the restrictions: relax them or add parameter values they allow',
    );
  }
  const message = `configuration ${JSON.stringify(pick.config)}: ${pick.error?.message ?? pick.status}`;
  switch (pick.status) {
    case 'wrong_result':
      return new FailedTestsError(pick.error?.message ?? 'wrong result', pick);
    case 'compile_error':
      return new CompileError(message, { code: 'COMPILE_ERROR', explanation: 'The candidate does not compile.', log: pick.error?.log ?? pick.error?.message ?? '' });
    case 'fault':
      return new KernelFaultError(message, { code: 'KERNEL_FAULT', explanation: 'The candidate faulted on the GPU.' });
    case 'timeout':
      return new KernelTimeoutError(message, { code: 'KERNEL_TIMEOUT', explanation: 'The candidate did not finish within the launch time limit.' });
    default:
      return new LaunchError(message, { code: 'LAUNCH_FAILED', explanation: 'The candidate cannot be launched on this device.' });
  }
}

/** The original kernel of the session, parsed. */
export function originalKernel(state: TuningStateValue): Promise<TunableKernel> {
  return TunableKernel.create(state.originalCode, fileInfo(state));
}

function sharedMemOf(bytes: number | string | null | undefined): { sharedMemBytes?: number | string } {
  return bytes === null || bytes === undefined ? {} : { sharedMemBytes: bytes };
}
