/**
 * A session as the panel and the history show it, derived from its event log by a pure reducer. The host (history
 * steps, speed-up) and the webview (everything it renders) use the same function, so a report reopened from history
 * looks exactly like the live session did. No vscode or DOM import: it runs in both places and under vitest.
 */
import { describeChange } from '../progress/describe-change';
import { describeStop } from '../progress/describe-stop';
import type { ConfigSummary, EventOf, LaunchGeometryView, ObjectiveChange, PlanStepView, RejectionReason, StepStatus, TrackerSummary, TuningEvent, VariantView } from '../progress/events';
import type { HistoryEntry, HistoryStep } from '../store/history-store';
import { editStepId, editStepTitle, lastRunOf, type StoredSessionHeader } from './session-log';
import type { ConfigProfile } from '../../tuner/run/profile';
import type { SanitizerVerdict } from '../../tuner/run/sanitizer';
import { TIME_OBJECTIVE, type Config, type Objective, type ParamValue, type SearchSummary } from '../../tuner/types';
import { deviceText } from '../progress/device-text';

export type SessionStatus = 'running' | 'awaiting_approval' | 'completed' | 'failed' | 'cancelled' | 'interrupted';

/** What the host knows about a session before any event: enough to title the panel (stored with the session). */
export interface SessionHeader extends StoredSessionHeader {
  /** Set by the host when it knows better than the events (a session that died with its window is 'interrupted'). */
  statusOverride?: SessionStatus;
}

export interface CandidateView {
  candidate: number;
  attempt: number;
  code: string;
  diff: string;
  tuneParams: Record<string, ParamValue[]>;
  restrictions: string[];
  configs: ConfigSummary[];
  total: number;
  failures: number;
  bestTimeMs: number | null;
  /** Its best configuration's profile, once its timings are done. */
  profile?: ConfigProfile;
  /** compute-sanitizer's verdict on its best configuration, where it would have been accepted. */
  sanitizer?: SanitizerVerdict;
  /** How its search went (the strategy, why it ran, why it stopped), once it ended. */
  search?: SearchSummary;
}

export interface StepView extends PlanStepView {
  /** Why it was rejected or skipped, in words. */
  reason?: string;
  rejection?: RejectionReason;
  /** Candidates by number, latest attempt of each. */
  candidates: CandidateView[];
  accepted?: { candidate: number; oldTimeMs: number; newTimeMs: number; improvementPct: number; bestParams: Config; objective?: ObjectiveChange };
}

export interface UsageView {
  promptTokens: number;
  completionTokens: number;
  calls: number;
  /** USD, where the session knew the model's prices. */
  costUsd: number | null;
}

/** A child of an evolutionary session, decided and then entered as a variant or rejected. */
export interface ChildView {
  child: number;
  stepId: string;
  operator: 'mutate' | 'crossover' | 'judge';
  parents: string[];
  /** The judge's reading and instruction, for a judge-led child. */
  judged?: { diagnosis: string; instruction: string };
  /** The variant it became. */
  variant?: string;
  rejection?: RejectionReason;
}

/** An evolutionary session's population: what the lineage tree draws. */
export interface PopulationView {
  variants: VariantView[];
  /** Ids of the variants that left the archive (they stay in the lineage). */
  retired: string[];
  /** The fastest so far (the session's kernel). */
  bestId?: string;
  children: ChildView[];
  stopped?: EventOf<'population.stopped'>;
}

export interface NoticeView {
  level: 'warning' | 'error';
  text: string;
  at: string;
}

export interface FinalView {
  finalCode: string;
  tunableCode: string;
  bestParams: Config;
  tuneParams: Record<string, ParamValue[]>;
  restrictions: string[];
  tracker: TrackerSummary;
  launch: LaunchGeometryView;
}

export interface SessionView {
  header: SessionHeader;
  status: SessionStatus;
  threadId?: string;
  kernel?: { name: string; signature: string };
  /** gpus: how many GPUs of this model the session tunes on, when more than one. */
  device?: EventOf<'session.started'>['device'];
  /** What the session optimises: time, unless session.started named another objective. */
  objective: Objective;
  analysis?: { description: string; problemSize: string[]; outputs: string[] };
  tests: EventOf<'tests.ready'>['tests'];
  baseline?: { timeMs: number; params: Config; testId: string };
  /** The original kernel's profile at the baseline configuration. */
  baselineProfile?: ConfigProfile;
  /** Step ids in plan order (steps that started without being planned are appended). */
  order: string[];
  steps: Record<string, StepView>;
  currentStepId?: string;
  planAwaitingApproval: boolean;
  replanning?: { round: number; maxRounds: number };
  usage: UsageView;
  /** An evolutionary session's population; absent for the other strategies. */
  population?: PopulationView;
  notices: NoticeView[];
  /** The model failed once tuning had begun and the session finished with the best kernel so far: what failed, in words. */
  stoppedEarly?: string;
  final?: FinalView;
  error?: string;
  /** Time of the first and the latest event (ISO); the panel shows the elapsed time between them, or until now. */
  firstEventAt?: string;
  lastEventAt?: string;
  eventCount: number;
}

export function initialView(header: SessionHeader): SessionView {
  return {
    header,
    status: header.statusOverride ?? 'running',
    objective: TIME_OBJECTIVE,
    tests: [],
    order: [],
    steps: {},
    planAwaitingApproval: false,
    usage: NO_USAGE,
    notices: [],
    eventCount: 0,
  };
}

const TERMINAL: readonly SessionStatus[] = ['completed', 'failed', 'cancelled'];

function withStep(view: SessionView, stepId: string, change: (step: StepView) => StepView, title = stepId): SessionView {
  const existing = view.steps[stepId];
  const step = existing ?? { id: stepId, title, details: '', depth: 0, status: 'pending' as StepStatus, candidates: [] };
  return {
    ...view,
    order: existing ? view.order : [...view.order, stepId],
    steps: { ...view.steps, [stepId]: change(step) },
  };
}

/** A candidate known only from its results so far (its 'candidate' event is missing, e.g. from a truncated log). */
function emptyCandidate(candidate: number): CandidateView {
  return { candidate, attempt: 1, code: '', diff: '', tuneParams: {}, restrictions: [], configs: [], total: 0, failures: 0, bestTimeMs: null };
}

function withCandidate(step: StepView, number: number, change: (c: CandidateView | undefined) => CandidateView): StepView {
  const index = step.candidates.findIndex((c) => c.candidate === number);
  const next = change(index === -1 ? undefined : step.candidates[index]);
  const candidates = index === -1 ? [...step.candidates, next].sort((a, b) => a.candidate - b.candidate) : step.candidates.map((c, i) => (i === index ? next : c));
  return { ...step, candidates };
}

function applyPlan(view: SessionView, steps: PlanStepView[]): SessionView {
  const next: Record<string, StepView> = {};
  for (const s of steps) next[s.id] = { ...(view.steps[s.id] ?? { candidates: [] }), ...s };
  // Steps that ran but left the plan (a replan drops finished steps) stay visible, before the new ones.
  const kept = view.order.filter((stepId) => !next[stepId] && view.steps[stepId]!.status !== 'pending');
  for (const stepId of kept) next[stepId] = view.steps[stepId]!;
  return { ...view, steps: next, order: [...kept, ...steps.map((s) => s.id)] };
}

/** The view after one more event. Pure; unknown (newer) event types only count and move the clock. */
export function reduce(view: SessionView, event: TuningEvent): SessionView {
  const stamped: SessionView = { ...view, eventCount: view.eventCount + 1, firstEventAt: view.firstEventAt ?? event.at, lastEventAt: event.at };
  switch (event.type) {
    case 'session.started':
      return {
        ...stamped,
        // A resumed run goes on from where tuning stopped; a run of a finished session that goes on (an evolutionary
        // session evolved further) runs again, and its population stops anew.
        stoppedEarly: undefined,
        status: TERMINAL.includes(stamped.status) && !event.resumed ? stamped.status : 'running',
        ...(stamped.population && { population: withoutStop(stamped.population) }),
        threadId: event.threadId,
        kernel: event.kernel,
        device: event.device,
        objective: event.objective ?? TIME_OBJECTIVE,
      };
    case 'session.branched': {
      if (!event.edited) return stamped;
      // The user's kernel comes before the step it starts: its pseudo-step goes in front of it, not at the end.
      const editId = editStepId(event.stepId);
      if (stamped.steps[editId]) return stamped;
      const at = stamped.order.indexOf(event.stepId);
      const order = at === -1 ? [...stamped.order, editId] : [...stamped.order.slice(0, at), editId, ...stamped.order.slice(at)];
      const step: StepView = { id: editId, title: editStepTitle(event.stepId), details: '', depth: 0, status: 'pending', candidates: [] };
      return { ...stamped, order, steps: { ...stamped.steps, [editId]: step } };
    }
    case 'analysis.done':
      return { ...stamped, analysis: { description: event.description, problemSize: event.problemSize, outputs: event.outputs } };
    case 'tests.ready':
      return { ...stamped, tests: event.tests };
    case 'baseline':
      return { ...stamped, baseline: { timeMs: event.timeMs, params: event.params, testId: event.testId } };
    case 'profile': {
      const { profile, stepId } = event;
      if (stepId === undefined) return { ...stamped, baselineProfile: profile };
      return withStep(stamped, stepId, (s) => withCandidate(s, event.candidate ?? 0, (c) => ({ ...(c ?? emptyCandidate(event.candidate ?? 0)), profile })));
    }
    case 'sanitized':
      return withStep(stamped, event.stepId, (s) => withCandidate(s, event.candidate, (c) => ({ ...(c ?? emptyCandidate(event.candidate)), sanitizer: event.verdict })));
    case 'plan':
      return { ...applyPlan(stamped, event.steps), planAwaitingApproval: false, status: stamped.status === 'awaiting_approval' ? 'running' : stamped.status };
    case 'plan.awaiting_approval':
      return { ...applyPlan(stamped, event.steps), planAwaitingApproval: true, status: 'awaiting_approval' };
    case 'step.started':
      return { ...withStep(stamped, event.stepId, (s) => ({ ...s, title: s.title || event.title, status: 'running' }), event.title), currentStepId: event.stepId };
    case 'step.skipped':
      return withStep(stamped, event.stepId, (s) => ({ ...s, status: 'skipped', reason: event.reason }));
    case 'candidate':
      return withStep(stamped, event.stepId, (s) =>
        withCandidate(s, event.candidate, () => ({
          candidate: event.candidate,
          attempt: event.attempt,
          code: event.code,
          diff: event.diff,
          tuneParams: event.tuneParams,
          restrictions: event.restrictions,
          // A new attempt is a new kernel: its configurations start afresh.
          configs: [],
          total: 0,
          failures: 0,
          bestTimeMs: null,
        })),
      );
    case 'configs.evaluated':
      return withStep(stamped, event.stepId, (s) =>
        withCandidate(s, event.candidate, (c) => {
          const base = c ?? emptyCandidate(event.candidate);
          const configs = base.configs.filter((r) => r.key !== event.result.key);
          return { ...base, configs: [...configs, event.result], total: event.total, failures: event.failures, bestTimeMs: event.bestTimeMs };
        }),
      );
    case 'configs.searched':
      return withStep(stamped, event.stepId, (s) => withCandidate(s, event.candidate, (c) => ({ ...(c ?? emptyCandidate(event.candidate)), search: event.search })));
    case 'step.accepted':
      return withStep(stamped, event.stepId, (s) => ({
        ...s,
        status: 'accepted',
        accepted: {
          candidate: event.candidate,
          oldTimeMs: event.oldTimeMs,
          newTimeMs: event.newTimeMs,
          improvementPct: event.improvementPct,
          bestParams: event.bestParams,
          ...(event.objective && { objective: event.objective }),
        },
      }));
    case 'step.rejected':
      return withStep(stamped, event.stepId, (s) => ({ ...s, status: 'rejected', rejection: event.reason, reason: describeReason(event.reason) }));
    case 'replanning':
      return { ...stamped, replanning: { round: event.round, maxRounds: event.maxRounds } };
    case 'llm.usage':
      return { ...stamped, usage: addUsage(stamped.usage, event) };
    case 'population.child':
    case 'population.judged':
    case 'population.variant':
    case 'population.rejected':
    case 'population.stopped':
      return reducePopulation(stamped, event);
    case 'llm.retry':
      return { ...stamped, notices: [...stamped.notices, { level: 'warning', text: `${event.purpose}: attempt ${event.attempt} failed (${event.error}): ${firstLine(event.message)}`, at: event.at }] };
    case 'warning':
      return { ...stamped, notices: [...stamped.notices, { level: 'warning', text: event.message, at: event.at }] };
    case 'tuning.stopped': {
      const text = describeStop(event);
      return { ...stamped, stoppedEarly: text, notices: [...stamped.notices, { level: 'warning', text, at: event.at }] };
    }
    case 'session.finished':
      return {
        ...stamped,
        status: 'completed',
        currentStepId: undefined,
        final: {
          finalCode: event.finalCode,
          tunableCode: event.tunableCode,
          bestParams: event.bestParams,
          tuneParams: event.tuneParams,
          restrictions: event.restrictions,
          tracker: event.tracker,
          launch: event.launch,
        },
      };
    case 'session.failed':
      return { ...stamped, status: 'failed', currentStepId: undefined, error: event.error.message };
    case 'session.cancelled':
      return { ...stamped, status: 'cancelled', currentStepId: undefined };
    default:
      return stamped;
  }
}

const NO_USAGE: UsageView = { promptTokens: 0, completionTokens: 0, calls: 0, costUsd: null };

function addUsage(u: UsageView, event: EventOf<'llm.usage'>): UsageView {
  return {
    promptTokens: u.promptTokens + event.promptTokens,
    completionTokens: u.completionTokens + event.completionTokens,
    calls: u.calls + 1,
    costUsd: event.costUsd === undefined ? u.costUsd : (u.costUsd ?? 0) + event.costUsd,
  };
}

/** What a session's model calls used and cost, from its events. */
export function usageOf(events: readonly TuningEvent[]): UsageView {
  return events.reduce((u, e) => (e.type === 'llm.usage' ? addUsage(u, e) : u), NO_USAGE);
}

/** "12 call(s): 12,000 prompt + 2,400 completion tokens, $0.0720" (the cost where the prices were known). */
export function usageText(u: UsageView): string {
  return `${u.calls} call(s): ${u.promptTokens.toLocaleString('en')} prompt + ${u.completionTokens.toLocaleString('en')} completion tokens${u.costUsd === null ? '' : `, $${u.costUsd.toFixed(4)}`}`;
}

const NO_POPULATION: PopulationView = { variants: [], retired: [], children: [] };

function withoutStop({ stopped: _stopped, ...population }: PopulationView): PopulationView {
  return population;
}

function withChild(p: PopulationView, child: number, change: (c: ChildView) => ChildView): PopulationView {
  return { ...p, children: p.children.map((c) => (c.child === child ? change(c) : c)) };
}

/** The population events: the lineage, and each child's step marked kept (entered) or accepted (the fastest). */
function reducePopulation(view: SessionView, event: EventOf<'population.child' | 'population.judged' | 'population.variant' | 'population.rejected' | 'population.stopped'>): SessionView {
  const p = view.population ?? NO_POPULATION;
  switch (event.type) {
    case 'population.child': {
      const child: ChildView = { child: event.child, stepId: event.stepId, operator: event.operator, parents: event.parents };
      // A resumed run decides no child twice, but a run that stopped before its checkpoint does it again: the later wins.
      return { ...view, population: { ...p, children: [...p.children.filter((c) => c.child !== event.child), child] } };
    }
    case 'population.judged':
      return { ...view, population: withChild(p, event.child, (c) => ({ ...c, judged: { diagnosis: event.diagnosis, instruction: event.instruction } })) };
    case 'population.variant': {
      const v = event.variant;
      const variants = [...p.variants.filter((x) => x.id !== v.id), v];
      const retired = [...new Set([...p.retired.filter((id) => id !== v.id), ...event.retired])];
      let population: PopulationView = { ...p, variants, retired, ...(event.best && { bestId: v.id }) };
      if (v.child !== null) population = withChild(population, v.child, (c) => ({ ...c, variant: v.id }));
      const next = { ...view, population };
      return v.stepId && !event.best ? withStep(next, v.stepId, (s) => ({ ...s, status: 'kept' })) : next;
    }
    case 'population.rejected':
      return { ...view, population: withChild(p, event.child, (c) => ({ ...c, rejection: event.reason })) };
    case 'population.stopped':
      return { ...view, population: { ...p, stopped: event } };
  }
}

/** The warnings of a session's last run, in words (the model's retries aside): what the reports list. */
export function warningsOf(events: readonly TuningEvent[]): string[] {
  return lastRunOf(events).flatMap((e) => (e.type === 'warning' ? [e.message] : e.type === 'tuning.stopped' ? [describeStop(e)] : []));
}

export function reduceAll(header: SessionHeader, events: readonly TuningEvent[]): SessionView {
  const view = events.reduce(reduce, initialView(header));
  // The host's word wins only over a session the events leave unfinished (it died with its window).
  if (header.statusOverride && !TERMINAL.includes(view.status)) return { ...view, status: header.statusOverride };
  return view;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!;
}

export function describeReason(reason: RejectionReason): string {
  switch (reason.kind) {
    case 'wrong_result':
      return `wrong result: ${reason.summary}`;
    case 'insufficient_gain':
      return `too little gain: ${describeChange(reason).replaceAll(' -> ', ' → ')} is ${reason.improvementPct.toFixed(1)}%, below the ${reason.thresholdPct}% threshold`;
    case 'compile_error':
      return `did not compile after ${reason.attempts} attempt(s): ${firstLine(reason.message)}`;
    case 'hazard':
      return `hazards found by compute-sanitizer after ${reason.attempts} attempt(s): ${reason.findings[0] ?? 'no finding named'}`;
    case 'failed':
      return `failed after ${reason.attempts} attempt(s): ${firstLine(reason.message)}`;
  }
}

/**
 * The kernel an accepted step left behind, ready to compile: the accepted candidate's code with the step's best
 * values defined under #ifndef guards (as the final kernel has them). Undefined for a step that was not accepted.
 */
export function stepCode(view: SessionView, stepId: string): string | undefined {
  const step = view.steps[stepId];
  if (!step?.accepted) return undefined;
  const code = step.candidates.find((c) => c.candidate === step.accepted!.candidate)?.code;
  if (code === undefined) return undefined;
  const guards = Object.entries(step.accepted.bestParams).flatMap(([name, value]) => [
    `#ifndef ${name}`,
    `#define ${name} ${typeof value === 'boolean' ? Number(value) : value}`,
    '#endif',
  ]);
  const header = [`// After the step "${step.title}" of llm-kernel-tuner; the tuning report states the launch geometry.`, ...guards];
  return `${header.join('\n')}\n\n${code.replace(/^\s*\n/, '')}`;
}

/** Time per accepted step against the baseline: the points of the performance chart's line. */
export function acceptedTimeline(view: SessionView): { label: string; timeMs: number; step?: number }[] {
  if (!view.baseline) return [];
  const points: { label: string; timeMs: number; step?: number }[] = [{ label: 'baseline', timeMs: view.baseline.timeMs }];
  view.order.forEach((stepId, i) => {
    const accepted = view.steps[stepId]?.accepted;
    // `step`: numbered as the plan numbers it.
    if (accepted) points.push({ label: view.steps[stepId]!.title, timeMs: accepted.newTimeMs, step: i + 1 });
  });
  return points;
}

/**
 * The step whose configurations the chart shows: the running one; when none runs, the last accepted one (the kernel
 * the session ends with comes from it), else the last that has any.
 */
export function focusStep(view: SessionView): StepView | undefined {
  if (view.currentStepId && view.steps[view.currentStepId]) return view.steps[view.currentStepId];
  const tried = view.order.map((id) => view.steps[id]!).filter((s) => s.candidates.some((c) => c.configs.length > 0));
  return tried.findLast((s) => s.accepted) ?? tried.at(-1);
}

/** The candidate a step was decided on: the accepted one, else the last tried. */
export function decidedCandidate(step: StepView): CandidateView | undefined {
  return step.candidates.find((c) => c.candidate === step.accepted?.candidate) ?? step.candidates.at(-1);
}

/** The best time reached so far (baseline if nothing was accepted). */
export function bestTimeMs(view: SessionView): number | undefined {
  if (view.final?.tracker.finalTimeMs != null) return view.final.tracker.finalTimeMs;
  const timeline = acceptedTimeline(view);
  return timeline.at(-1)?.timeMs;
}

/**
 * Baseline time over the best time, once there is something to compare: a step was accepted or the session finished
 * (before that, "1.00×" would only mislead).
 */
export function speedup(view: SessionView): number | undefined {
  if (!view.final && !Object.values(view.steps).some((s) => s.accepted)) return undefined;
  const best = bestTimeMs(view);
  if (!view.baseline || best === undefined || best <= 0) return undefined;
  return view.baseline.timeMs / best;
}

const HISTORY_STATUS: Record<SessionView['status'], HistoryEntry['status']> = {
  running: 'running',
  awaiting_approval: 'running',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
};

/** The history entry's fields that follow from the events (the extension's and the CLI's history alike). */
export function historyFields(view: SessionView): Pick<HistoryEntry, 'status' | 'steps'> & Partial<Pick<HistoryEntry, 'baselineTimeMs' | 'bestTimeMs' | 'speedup' | 'finalCode' | 'error' | 'device'>> {
  const steps: HistoryStep[] = view.order.map((stepId) => {
    const s = view.steps[stepId]!;
    return {
      stepId,
      title: s.title,
      status: s.status,
      ...(s.accepted && { timeMs: s.accepted.newTimeMs, improvementPct: s.accepted.improvementPct }),
      ...(s.reason && { reason: s.reason }),
    };
  });
  const best = bestTimeMs(view);
  const gain = speedup(view);
  return {
    status: HISTORY_STATUS[view.status],
    steps,
    ...(view.baseline && { baselineTimeMs: view.baseline.timeMs }),
    ...(best !== undefined && { bestTimeMs: best }),
    ...(gain !== undefined && Number.isFinite(gain) && { speedup: gain }),
    ...(view.final && { finalCode: view.final.finalCode }),
    ...(view.error && { error: view.error }),
    ...(view.device && { device: { name: view.device.replayedFrom !== undefined ? deviceText(view.device) : view.device.name, arch: view.device.arch, computeCapability: view.device.computeCapability } }),
  };
}
