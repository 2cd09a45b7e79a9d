/**
 * The data of the HTML report (html.ts embeds it as JSON; webview/report/ draws it): one model for a `tune` run (a
 * search over a spec) and for an LLM session (its event log), so both reports look alike. Every number carries what it
 * came from: the device and its measured limits, the compiler and its options, the work model of a launch, and what
 * reproduces the run (command, spec, cache, session). Pure; no vscode, no GPU.
 */
import type { ConfigSummary, EventOf, TuningEvent, VariantView } from '../engine/progress/events';
import { acceptedTimeline, decidedCandidate, describeReason, focusStep, reduceAll, warningsOf, type PopulationView, type SessionHeader } from '../engine/session/session-view';
import { madeBy, nicheText } from '../engine/progress/describe-variant';
import type { DeviceDescription } from '../tuner/run/backend';
import { profileSourceText, type ConfigProfile } from '../tuner/run/profile';
import { findingLines, shownFindings, verdictSummary, type SanitizerVerdict } from '../tuner/run/sanitizer';
import { achieved, type DeviceSpeedLimits, type LaunchWork } from '../tuner/run/speed-of-light';
import { summarizeConfig } from '../engine/progress/events';
import { describeLaunchCount, type LaunchCount } from '../tuner/run/launch-count';
import { bestOf, describeSearch, searchSummaryOf, TIME_OBJECTIVE, type Config, type Objective, type ParamValue, type TuneResult } from '../tuner/types';
import { deviceText } from '../engine/progress/device-text';

export const REPORT_DATA_FORMAT = 'llm-kernel-tuner-report/1';

/** One configuration as the report's table shows it. */
export interface ReportConfig extends ConfigSummary {
  /** Achieved bandwidth (GB/s) and FLOP/s (GFLOP/s) of this configuration, with their percentage of the limits. */
  GBps?: number;
  bandwidthPct?: number;
  GFlops?: number;
  flopsPct?: number;
}

export interface ReportStep {
  id: string;
  title: string;
  status: 'accepted' | 'kept' | 'rejected' | 'skipped' | 'pending' | 'running' | 'search';
  /** Why it was rejected or skipped; for a search, how it ended. */
  reason?: string;
  /** How its search went: the strategy, why it ran (auto's choice), why it stopped. */
  search?: string;
  /** Unified diff from the kernel before the step to the candidate it tuned. */
  diff?: string;
  tuneParams: Record<string, ParamValue[]>;
  restrictions: string[];
  configs: ReportConfig[];
  best?: { key: string; timeMs: number };
  /** Its best configuration's profile. */
  profile?: ReportProfile;
  /** What compute-sanitizer said of its best configuration. */
  sanitizer?: ReportSanitizer;
}

/** compute-sanitizer's verdict as the report shows it: the configuration, the verdict in a line, the findings. */
export interface ReportSanitizer {
  config: Config;
  status: SanitizerVerdict['status'];
  summary: string;
  findings: string[];
}

function reportSanitizer(verdict: SanitizerVerdict): ReportSanitizer {
  return { config: verdict.config, status: verdict.status, summary: verdictSummary(verdict), findings: findingLines(shownFindings(verdict)) };
}

/** A profile as the report shows it: the configuration, where the lines come from (and why not Nsight Compute), the lines. */
export interface ReportProfile {
  config: Config;
  source: string;
  summary: string[];
}

function reportProfile(profile: ConfigProfile): ReportProfile {
  const why = profile.unavailable ? `. ${profile.unavailable.message.split('\n', 1)[0]}` : '';
  return { config: profile.config, source: `${profileSourceText(profile)}${why}`, summary: profile.summary };
}

/** A variant of an evolutionary session as the report's population table shows it. */
export interface ReportVariant {
  id: string;
  /** How it was made: "crossover of v1 and v2" (madeBy). */
  madeBy: string;
  parents: string[];
  operator: VariantView['operator'];
  timeMs: number;
  /** The original's time over its own. */
  speedup: number | null;
  /** What bounds it and its occupancy band, in words: its niche in the archive. */
  niche: string;
  /** The session's kernel, in the archive (a parent of the next children), or retired from it. */
  state: 'best' | 'archive' | 'retired';
  idea: string;
  bestConfig: Config;
}

export interface ReportPopulation {
  variants: ReportVariant[];
  /** Children kept out of the population, and why. */
  rejected: { stepId: string; madeBy: string; reason: string }[];
  /** Why the session stopped asking for children. */
  stopped?: string;
}

export type ReportModelCall = Pick<EventOf<'llm.usage'>, 'purpose' | 'promptTokens' | 'completionTokens' | 'costUsd'>;

function reportPopulation(p: PopulationView): ReportPopulation {
  const original = p.variants.find((v) => v.operator === 'original');
  const retired = new Set(p.retired);
  return {
    variants: p.variants.map((v) => ({
      id: v.id,
      madeBy: madeBy(v.operator, v.parents),
      parents: v.parents,
      operator: v.operator,
      timeMs: v.timeMs,
      speedup: original && v.timeMs > 0 ? original.timeMs / v.timeMs : null,
      niche: nicheText(v),
      state: v.id === p.bestId ? 'best' : retired.has(v.id) ? 'retired' : 'archive',
      idea: v.instruction,
      bestConfig: v.bestParams,
    })),
    rejected: p.children.flatMap((c) => (c.rejection ? [{ stepId: c.stepId, madeBy: madeBy(c.operator, c.parents), reason: describeReason(c.rejection) }] : [])),
    ...(p.stopped && { stopped: p.stopped.reason.message }),
  };
}

export interface ReportDevice {
  name: string;
  arch?: string;
  computeCapability?: [number, number];
  multiprocessors?: number;
  /** "13.0", from cuDriverGetVersion. */
  driver?: string;
  nvrtc?: string | null;
}

export interface ReportData {
  format: typeof REPORT_DATA_FORMAT;
  kind: 'tune' | 'session';
  title: string;
  kernel: string;
  generatedAt: string;
  /** How the times were obtained: measured on the GPU, or replayed from a cache. */
  mode: string;
  /** How each time was taken (launches, warm-up, median), when known. */
  timing?: string;
  device: ReportDevice | null;
  limits: DeviceSpeedLimits | null;
  /** Why there are no limits (a replay has no device to measure). */
  limitsNote?: string;
  compiler: { backend?: string; options: string[]; note?: string };
  /** The work of one launch the speed-of-light figures divide by the time; null when unknown. */
  work: LaunchWork | null;
  /** What the best configurations were chosen by. */
  objective: Objective;
  summary: { baselineTimeMs: number | null; bestTimeMs: number | null; speedup: number | null; bestConfig?: Config; /** Configurations in the results, those over the device's limits included (as the CLI counts them). */ evaluations: number };
  /** The original kernel's profile at the baseline configuration (a session's). */
  baselineProfile?: ReportProfile;
  /** What the run warned of (a session's tuning that stopped early because the model failed, ...); absent in older reports. */
  warnings?: string[];
  /** The chart's line: baseline (or reference) first, then each improvement (`step`: the plan's number of its step). */
  timeline: { label: string; timeMs: number; step?: number }[];
  steps: ReportStep[];
  /** The step whose configurations the chart shows (the panel's choice); absent in reports written before it was kept. */
  chartStepId?: string;
  /** An evolutionary session's population: its variants, the children that made none, why it stopped. */
  population?: ReportPopulation;
  /** A session's requests to the model, in order: tokens, and cost where the session knew the prices. */
  modelCalls?: ReportModelCall[];
  reproduce: {
    /** The command that reruns this (the tuner's, as it was called). */
    command: string;
    spec?: { path: string; text: string };
    cache?: string;
    file?: string;
    session?: string;
    seed?: number;
    notes: string[];
  };
}

/** `configs` with their speed of light, for the report's table. */
function withSpeedOfLight(configs: readonly ConfigSummary[], work: LaunchWork | null, limits: DeviceSpeedLimits | null): ReportConfig[] {
  return configs.map((c) => {
    if (!work || c.timeMs === undefined || !(c.timeMs > 0) || (c.status !== 'ok' && c.status !== 'stopped_early')) return { ...c };
    return { ...c, ...achieved(c.timeMs, work, limits) };
  });
}

/** A step's `best`: its best correct configuration by the objective, when it has one. */
function stepBest(configs: readonly ConfigSummary[], objective: Objective): Pick<ReportStep, 'best'> {
  const best = bestOf(configs, objective);
  return best?.timeMs !== undefined ? { best: { key: best.key, timeMs: best.timeMs } } : {};
}

const driverText = (version: number) => `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;

export interface TuneReportInput {
  kernel: string;
  result: TuneResult;
  paramNames: string[];
  restrictions: string[];
  tuneParams: Record<string, ParamValue[]>;
  mode: string;
  /** The device it ran on; for a replay, the cache's device name only. */
  device: DeviceDescription | { name: string } | null;
  limits: DeviceSpeedLimits | null;
  limitsNote?: string;
  compilerOptions: string[];
  work: LaunchWork | null;
  timing?: string;
  reproduce: ReportData['reproduce'];
  generatedAt?: string;
}

function reportDevice(device: TuneReportInput['device']): ReportDevice | null {
  if (!device) return null;
  if (!('arch' in device)) return { name: device.name };
  return {
    name: device.name,
    arch: device.arch,
    computeCapability: device.computeCapability,
    multiprocessors: device.multiprocessors,
    driver: driverText(device.driverVersion),
    nvrtc: device.nvrtcVersion,
  };
}

/** "44 configurations (4 over the device's limits)": the words the CLI's summary uses, so the counts agree. */
function countWords(results: readonly { status: string }[]): string {
  const over = results.filter((r) => r.status === 'exceeds_device_limits').length;
  return `${results.length} configurations${over > 0 ? ` (${over} over the device's limits)` : ''}`;
}

/** The report of a `tune` run: one search, its configurations, the reference kernel's time as the baseline. */
export function reportFromTune(input: TuneReportInput): ReportData {
  const { result } = input;
  const objective = result.objective ?? TIME_OBJECTIVE;
  const configs = result.results.map(summarizeConfig);
  const best = result.best;
  const reference = result.reference?.timeMs;
  // The line of the chart starts at the reference kernel; without its time (a replay) there is no line to draw.
  const timeline = reference !== undefined && best?.timeMs !== undefined ? [{ label: 'reference', timeMs: reference }, { label: 'best', timeMs: best.timeMs }] : [];
  const step: ReportStep = {
    id: 'search',
    title: `${result.strategy}: ${countWords(result.results)}`,
    status: 'search',
    reason: `stopped: ${result.stopReason}`,
    search: describeSearch(searchSummaryOf(result)),
    tuneParams: input.tuneParams,
    restrictions: input.restrictions,
    configs: withSpeedOfLight(configs, input.work, input.limits),
    ...stepBest(configs, objective),
    ...(result.sanitizer && { sanitizer: reportSanitizer(result.sanitizer) }),
  };
  return {
    format: REPORT_DATA_FORMAT,
    kind: 'tune',
    title: `${input.kernel}: tuning report`,
    kernel: input.kernel,
    generatedAt: input.generatedAt ?? new Date().toISOString(),
    mode: input.mode,
    ...(input.timing && { timing: input.timing }),
    device: reportDevice(input.device),
    limits: input.limits,
    ...(input.limitsNote && { limitsNote: input.limitsNote }),
    compiler: { ...(result.compiler && { backend: result.compiler.backend }), options: input.compilerOptions, ...(result.compiler?.note && { note: result.compiler.note }) },
    work: input.work,
    objective,
    summary: {
      baselineTimeMs: reference ?? null,
      bestTimeMs: best?.timeMs ?? null,
      speedup: reference !== undefined && best?.timeMs ? reference / best.timeMs : null,
      ...(best && { bestConfig: best.config }),
      evaluations: result.results.length,
    },
    timeline,
    steps: [step],
    chartStepId: step.id,
    reproduce: input.reproduce,
  };
}

export interface SessionReportInput {
  header: SessionHeader;
  events: readonly TuningEvent[];
  /** Compiler options of the session, when known (the events do not carry them). */
  compilerOptions?: string[];
  /** Timed launches per configuration, when known (from the session's settings). */
  iterations?: LaunchCount;
  reproduce: ReportData['reproduce'];
  generatedAt?: string;
}

/** The report of an LLM session, from its event log: each step's diff and configurations, the chart of accepted steps. */
export function reportFromSession(input: SessionReportInput): ReportData {
  const view = reduceAll(input.header, [...input.events]);
  const of = <T extends TuningEvent['type']>(type: T) => input.events.filter((e): e is EventOf<T> => e.type === type);
  const limits = of('device.limits').at(-1)?.limits ?? null;
  const work = of('tests.ready').at(-1)?.tests[0]?.work ?? null;
  const steps = view.order.map((id): ReportStep => {
    const s = view.steps[id]!;
    const candidate = decidedCandidate(s);
    const configs = candidate?.configs ?? [];
    return {
      id,
      title: s.title,
      status: s.status,
      ...(s.reason && { reason: s.reason }),
      ...(candidate?.search && { search: describeSearch(candidate.search) }),
      ...(candidate && { diff: candidate.diff }),
      tuneParams: candidate?.tuneParams ?? {},
      restrictions: candidate?.restrictions ?? [],
      configs: withSpeedOfLight(configs, work, limits),
      ...stepBest(configs, view.objective),
      ...(candidate?.profile && { profile: reportProfile(candidate.profile) }),
      ...(candidate?.sanitizer && { sanitizer: reportSanitizer(candidate.sanitizer) }),
    };
  });
  const tracker = view.final?.tracker;
  const timeline = acceptedTimeline(view);
  const chartStep = focusStep(view);
  const baseline = view.baseline?.timeMs ?? null;
  const bestTime = tracker?.finalTimeMs ?? timeline.at(-1)?.timeMs ?? null;
  return {
    format: REPORT_DATA_FORMAT,
    kind: 'session',
    title: `${input.header.kernelName}: tuning session report`,
    kernel: input.header.kernelName,
    generatedAt: input.generatedAt ?? new Date().toISOString(),
    mode: `${input.header.strategy === 'tuner' ? `${input.header.model}` : `LLM session (${input.header.model}, ${input.header.strategy} strategy)`}, ${view.status}; ${view.device?.replayedFrom !== undefined ? `every configuration replayed from ${view.device.replayedFrom}, recorded on ${view.device.name} (no GPU used)` : 'every configuration measured on the GPU'}`,
    ...(input.iterations !== undefined && { timing: `each ${describeLaunchCount(input.iterations)} after a warm-up launch, every configuration checked against the original kernel first` }),
    device: view.device ? (view.device.replayedFrom !== undefined ? { name: deviceText(view.device) } : { name: view.device.name, arch: view.device.arch, computeCapability: view.device.computeCapability }) : null,
    limits,
    ...(!limits && { limitsNote: 'the session did not measure the device limits (no speed-of-light percentages)' }),
    compiler: { options: input.compilerOptions ?? [] },
    work,
    objective: view.objective,
    summary: {
      baselineTimeMs: baseline,
      bestTimeMs: bestTime,
      speedup: baseline !== null && bestTime ? baseline / bestTime : null,
      ...(view.final && { bestConfig: view.final.bestParams }),
      evaluations: steps.reduce((n, s) => n + s.configs.length, 0),
    },
    ...(view.baselineProfile && { baselineProfile: reportProfile(view.baselineProfile) }),
    warnings: warningsOf(input.events),
    timeline,
    steps,
    ...(chartStep && { chartStepId: chartStep.id }),
    ...(view.population && { population: reportPopulation(view.population) }),
    modelCalls: of('llm.usage').map(({ purpose, promptTokens, completionTokens, costUsd }) => ({ purpose, promptTokens, completionTokens, ...(costUsd !== undefined && { costUsd }) })),
    reproduce: input.reproduce,
  };
}
