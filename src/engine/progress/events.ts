/**
 * The one typed event stream of a tuning session: what the panel, the CLI and the logs show, and nothing else. Nodes
 * emit events through LangGraph's `custom` stream mode (`emit(config, ...)`); `streamSession` (session.ts) turns a run
 * into an AsyncIterable of these events. Consumers switch on `type`, never on graph node names, so the graph can be
 * rearranged without touching them.
 *
 * Every event is plain JSON (it crosses the webview boundary and is written to reports) and carries `v`, the version
 * of this vocabulary: a consumer that sees a newer `v` than it knows can still show `describeEvent`'s text.
 */
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import type { ConfigProfile } from '../../tuner/run/profile';
import { profileSourceText } from '../../tuner/run/profile';
import { describeVerification } from '../../tuner/run/measurement';
import { describeVerdict, type SanitizerVerdict } from '../../tuner/run/sanitizer';
import type { DeviceSpeedLimits, LaunchWork } from '../../tuner/run/speed-of-light';
import { describeSearch, type Config, type ConfigResult, type ConfigStatus, type Dim3, type DriverMetrics, type EnergyReadings, type Objective, type ParamValue, type SearchSummary } from '../../tuner/types';
import type { LlmExchange } from '../llm/exchange';
import type { GridDivisors } from '../candidate/finalize';
import { describeChange } from './describe-change';
import { describeStop } from './describe-stop';
import { deviceText } from './device-text';

export const EVENTS_VERSION = 1;

/** 'kept': an evolutionary session's child that entered the population without becoming the fastest. */
export type StepStatus = 'pending' | 'running' | 'accepted' | 'kept' | 'rejected' | 'skipped';

/** A plan step as the UI shows it. */
export interface PlanStepView {
  id: string;
  title: string;
  details: string;
  /** 0 for a step of the plan, n for a step that came from breaking a step down n times. */
  depth: number;
  status: StepStatus;
}

/** One evaluated configuration, summarised: what the panel's table, its chart's tooltips and the report show. */
export interface ConfigSummary {
  key: string;
  config: Config;
  status: ConfigStatus;
  timeMs?: number;
  /** The first line of the failure message. */
  error?: string;
  /** Which launches had their outputs verified: "input sets 1–2, timed launches 7, 19, 28 and the last of 32". */
  verified?: string;
  /** How many launches were timed, and the 95 % interval of their median (ms; from 6 launches on). */
  launches?: number;
  medianIntervalMs?: [number, number];
  driver?: DriverMetrics;
  energy?: EnergyReadings;
  /** Why there is no energy where it was asked for. */
  energyUnavailable?: string;
  metrics?: Record<string, number>;
}

/**
 * The objective's values before and after a step, where the session optimises something other than time (the times
 * are in the event either way; improvementPct is the objective's).
 */
export interface ObjectiveChange {
  name: string;
  higherIsBetter: boolean;
  oldValue: number;
  newValue: number;
}

/** Why a candidate of a step was not accepted. */
export type RejectionReason =
  | { kind: 'wrong_result'; summary: string }
  | { kind: 'insufficient_gain'; oldTimeMs: number; newTimeMs: number; improvementPct: number; thresholdPct: number; objective?: ObjectiveChange }
  | { kind: 'compile_error'; message: string; log: string; attempts: number }
  /** compute-sanitizer found hazards in the last attempt's best configuration: its first findings, one line each. */
  | { kind: 'hazard'; findings: string[]; attempts: number }
  | { kind: 'failed'; error: string; message: string; attempts: number };

export interface LaunchGeometryView {
  block: Dim3;
  /** C expressions of the grid, one per dimension, over the kernel's scalar arguments. */
  grid: [string, string, string];
  /** The problem size expressions the grid is computed from. */
  problemSize: string[];
  /** Dynamic shared memory per block, as C, when the kernel uses it. */
  sharedMemBytes?: string;
}

/** One launch of the kernel in the host code, and what the final proposal does with it. */
export interface LaunchSiteChange {
  /** 1-based line of the launch in the tuned file. */
  line: number;
  inFunction?: string;
  /** The launch configuration as it was, e.g. "<<<grid_size, block_size>>>". */
  before: string;
  /** Its replacement, when it was rewritten. */
  after?: string;
  /** Why it was left as it is. */
  reason?: string;
}

export interface TrackerSummary {
  baselineTimeMs: number | null;
  finalTimeMs: number | null;
  speedup: number;
  improvementPct: number;
  steps: { description: string; oldTimeMs: number | null; newTimeMs: number; improvementPct: number; bestParams: Record<string, ParamValue> }[];
}

/** A variant of an evolutionary session's population, as the lineage tree, the report and the editor use it. */
export interface VariantView {
  id: string;
  /** The child that made it; null for the original kernel. */
  child: number | null;
  /** The step the child ran as ("c3"): its candidate, configurations and profile in the session's steps. */
  stepId?: string;
  parents: string[];
  operator: 'original' | 'edit' | 'mutate' | 'crossover' | 'judge';
  instruction: string;
  timeMs: number;
  objectiveValue: number;
  bestParams: Config;
  tuneParams: Record<string, ParamValue[]>;
  restrictions: string[];
  /** What bounds it (dram, cache, compute, latency, unprofiled) and its occupancy band: its niche in the archive. */
  bound: string;
  occupancy: string;
  /** The whole file, tunable (its parameters as preprocessor names). */
  code: string;
  /** How its grid is computed, and its dynamic shared memory: what its code with its best values defined needs (finalize.ts). */
  gridDivisors?: GridDivisors;
  sharedMemBytes?: number | string;
  /** Unified diff from its first parent. */
  diff: string;
  profile?: ConfigProfile;
}

/** Why an evolutionary session stopped asking for children. */
export type PopulationStop =
  | { kind: 'budget'; budget: 'model_calls' | 'tokens' | 'cost' | 'wall_time'; message: string }
  | { kind: 'children'; message: string };

/** One node of a graph as the compiled graph describes itself (LangGraph's getGraphAsync). */
export interface GraphNodeView {
  id: string;
  /** The graph (an id of `graph.described`) this node runs inside it, when it hosts a subgraph. */
  subgraph?: string;
}

export interface GraphEdgeView {
  source: string;
  target: string;
  /** Taken only when the source's routing function chooses it. */
  conditional: boolean;
  label?: string;
}

/** A compiled graph's own description. `__start__` and `__end__` are LangGraph's entry and exit. */
export interface GraphView {
  /** The path of the nodes hosting it: "session" for the session graph, else the hosting node's id ("tune"). */
  id: string;
  /** The graph's name (compile({ name })). */
  name: string;
  nodes: GraphNodeView[];
  edges: GraphEdgeView[];
}

/** What a node run was given or returned, as plain JSON cut to a size fit for the event log. */
export type JsonPreview = null | boolean | number | string | JsonPreview[] | { [key: string]: JsonPreview };

interface Base {
  v: typeof EVENTS_VERSION;
  /** ISO 8601. */
  at: string;
}

export type TuningEventBody =
  | {
      type: 'session.started';
      threadId: string;
      resumed: boolean;
      kernel: { name: string; signature: string };
      /** `replayedFrom`: no GPU ran the session; its results were replayed from that cache file of a recorded run. */
      device: { name: string; arch: string; computeCapability: [number, number]; gpus?: number; replayedFrom?: string };
      /** What every tuning run optimises and every step must improve, when it is not the time. */
      objective?: Objective;
    }
  /**
   * This session is a branch of `parentThreadId`: it starts again from step `stepId`, from the kernel that step started
   * from, or (`edited`) from the user's version of it, which the next events check and time as the pseudo-step
   * `edit:<stepId>`.
   */
  | { type: 'session.branched'; parentThreadId: string; stepId: string; edited: boolean }
  | { type: 'graph.described'; graphs: GraphView[] }
  | {
      type: 'graph.node';
      /** The id of the graph (see GraphView.id) the node belongs to. */
      graph: string;
      node: string;
      /** One run of the node (a node runs several times in a loop, or side by side when sent to in parallel). */
      task: string;
      phase: 'started' | 'finished' | 'failed' | 'interrupted';
      /** started: the node's input; finished: its update to the state. */
      data?: JsonPreview;
      error?: string;
    }
  | {
      type: 'analysis.done';
      description: string;
      problemSize: string[];
      outputs: string[];
      /** The work of one launch as expressions over the scalar arguments, when the model gave them. */
      flops?: string;
      bytes?: string;
    }
  | {
      type: 'tests.ready';
      tests: { id: string; origin: 'user' | 'generated'; problemSize: (string | number)[]; outputs: string[]; bytes: number | null; timeMs: number | null; work?: LaunchWork }[];
    }
  /** The device's bandwidth and FP32 limits, measured on it, for the speed of light of every configuration. */
  | { type: 'device.limits'; limits: DeviceSpeedLimits }
  | { type: 'baseline'; timeMs: number; params: Config; testId: string }
  /**
   * The profile of a kernel at its best configuration, after its timings: the original kernel's (no stepId), or a
   * step's candidate's. Nsight Compute's lines, or the driver's metrics with why there is no Nsight Compute profile.
   */
  | { type: 'profile'; stepId?: string; candidate?: number; profile: ConfigProfile }
  /**
   * compute-sanitizer's verdict on the best configuration of a candidate that would be accepted (a step's), or of the
   * search of the tuner alone: clean, hazards (the candidate is rejected and the model told), or why it did not check.
   */
  | { type: 'sanitized'; stepId: string; candidate: number; verdict: SanitizerVerdict }
  | { type: 'plan'; reason: 'initial' | 'validated' | 'broken_down' | 'approved' | 'replanned'; steps: PlanStepView[] }
  | { type: 'plan.awaiting_approval'; steps: PlanStepView[] }
  | { type: 'step.started'; stepId: string; title: string }
  | { type: 'step.skipped'; stepId: string; reason: string }
  | {
      type: 'candidate';
      stepId: string;
      candidate: number;
      attempt: number;
      code: string;
      /** Unified diff from the current kernel to this candidate. */
      diff: string;
      tuneParams: Record<string, ParamValue[]>;
      restrictions: string[];
    }
  | {
      type: 'configs.evaluated';
      stepId: string;
      candidate: number;
      done: number;
      total: number;
      /** Configurations that failed (compile, launch, fault, timeout, wrong result); one stopped early is no failure. */
      failures: number;
      bestTimeMs: number | null;
      result: ConfigSummary;
    }
  /** A candidate's search ended: the strategy that ran (and why, when auto chose it) and why it stopped. */
  | { type: 'configs.searched'; stepId: string; candidate: number; search: SearchSummary }
  | { type: 'step.accepted'; stepId: string; candidate: number; oldTimeMs: number; newTimeMs: number; improvementPct: number; bestParams: Config; objective?: ObjectiveChange }
  | { type: 'step.rejected'; stepId: string; reason: RejectionReason }
  | { type: 'replanning'; round: number; maxRounds: number }
  /**
   * An evolutionary session decided a child: which operator makes it, from which parents (it runs as step `stepId`);
   * `known`: how many variants and rejected children there were (its requests show those), `rank`: the idea it asks
   * for among the model's promising ones (absent: the first). A replay follows these decisions.
   */
  | { type: 'population.child'; child: number; stepId: string; operator: 'mutate' | 'crossover' | 'judge'; parents: string[]; known?: { variants: number; rejected: number }; rank?: number }
  /** The judge's reading of a parent's profile, and the change it asks the child to make. */
  | { type: 'population.judged'; child: number; stepId: string; parent: string; diagnosis: string; instruction: string }
  /**
   * A variant entered the population (the original first); `best`: it is the fastest so far and is now the session's
   * kernel; `retired`: variants that left the archive for it (they stay in the lineage).
   */
  | { type: 'population.variant'; variant: VariantView; best: boolean; retired: string[] }
  /** A child that did not enter, and why (the next prompts name it). */
  | { type: 'population.rejected'; child: number; stepId: string; operator: 'mutate' | 'crossover' | 'judge'; parents: string[]; reason: RejectionReason }
  /** The session stopped asking for children: which budget, or the children's limit; what it spent. */
  | {
      type: 'population.stopped';
      reason: PopulationStop;
      variants: number;
      rejected: number;
      usage: { calls: number; inputTokens: number; outputTokens: number; costUsd: number | null };
      wallS: number;
      /** GPU-seconds the children's evaluations held the GPUs (beside the model's wall time: how well they overlapped). */
      gpuS: number;
    }
  /** An answer's tokens, and its cost (USD) where the session was given the model's prices. */
  | { type: 'llm.usage'; purpose: string; model: string; promptTokens: number; completionTokens: number; costUsd?: number }
  /** One request to the model and its answer, as sent and received (secrets removed): what a replay serves again. */
  | { type: 'llm.exchange'; exchange: LlmExchange }
  | { type: 'llm.retry'; purpose: string; attempt: number; error: string; message: string }
  | { type: 'warning'; message: string }
  /**
   * The model failed once tuning had begun (its answers stayed unusable after the retries, or it could not be asked):
   * the tuning strategy stopped at the call `during`, and the session finishes with the best kernel so far
   * (`acceptedSteps` accepted steps; none: the original kernel). Resuming the session asks the model again from there.
   */
  | { type: 'tuning.stopped'; during: string; reason: string; error: { name: string; message: string }; acceptedSteps: number }
  | {
      type: 'session.finished';
      /** The kernel with the chosen values defined: compiles as it is. */
      finalCode: string;
      /** The tunable kernel (parameters as preprocessor names). */
      tunableCode: string;
      bestParams: Config;
      tuneParams: Record<string, ParamValue[]>;
      restrictions: string[];
      tracker: TrackerSummary;
      launch: LaunchGeometryView;
      /** The host code's launches of the kernel: rewritten for the chosen configuration in finalCode, or why not. */
      launchSites: LaunchSiteChange[];
    }
  | { type: 'session.failed'; error: { name: string; message: string } }
  | { type: 'session.cancelled' };

export type TuningEvent = TuningEventBody & Base;
export type TuningEventType = TuningEvent['type'];
export type EventOf<T extends TuningEventType> = Extract<TuningEvent, { type: T }>;

export function makeEvent(body: TuningEventBody): TuningEvent {
  return { ...body, v: EVENTS_VERSION, at: new Date().toISOString() } as TuningEvent;
}

/** Sends an event to the session's stream; a run that does not stream the `custom` mode drops it. */
export function emit(config: LangGraphRunnableConfig | undefined, body: TuningEventBody): void {
  config?.writer?.(makeEvent(body));
}

export function isTuningEvent(value: unknown): value is TuningEvent {
  const v = value as { v?: unknown; type?: unknown; at?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.v === 'number' && typeof v.type === 'string' && typeof v.at === 'string';
}

export function summarizeConfig(result: ConfigResult): ConfigSummary {
  const error = result.error?.message.split('\n', 1)[0];
  return {
    key: result.key,
    config: result.config,
    status: result.status,
    ...(result.timeMs !== undefined && { timeMs: result.timeMs }),
    ...(error !== undefined && { error }),
    ...(result.verified && { verified: describeVerification(result.verified) }),
    ...(result.stats && { launches: result.stats.samplesMs.length }),
    ...(result.stats?.medianIntervalMs && { medianIntervalMs: result.stats.medianIntervalMs }),
    ...(result.driver && { driver: result.driver }),
    ...(result.energy && { energy: result.energy }),
    ...(result.energyUnavailable !== undefined && { energyUnavailable: result.energyUnavailable }),
    ...(result.metrics && { metrics: result.metrics }),
  };
}

export type EventLevel = 'debug' | 'info' | 'warning' | 'error';

const ms = (value: number | null) => (value === null ? 'n/a' : `${Number(value.toPrecision(4))} ms`);
const pct = (value: number) => `${value.toFixed(1)}%`;

export function describeRejection(reason: RejectionReason): string {
  switch (reason.kind) {
    case 'wrong_result':
      return `wrong result: ${reason.summary}`;
    case 'insufficient_gain':
      return `${describeChange(reason)} is ${pct(reason.improvementPct)}, below the threshold of ${pct(reason.thresholdPct)}`;
    case 'compile_error':
      return `did not compile after ${reason.attempts} attempt(s): ${reason.message.split('\n', 1)[0]}`;
    case 'hazard':
      return `compute-sanitizer found hazards after ${reason.attempts} attempt(s): ${reason.findings[0] ?? 'no finding named'}`;
    case 'failed':
      return `failed after ${reason.attempts} attempt(s) (${reason.error}): ${reason.message.split('\n', 1)[0]}`;
  }
}

/** One line for a log or a terminal, and how important it is. */
export function describeEvent(event: TuningEvent): { level: EventLevel; text: string } {
  const info = (text: string) => ({ level: 'info' as const, text });
  const debug = (text: string) => ({ level: 'debug' as const, text });
  switch (event.type) {
    case 'session.started':
      return info(`${event.resumed ? 'resuming' : 'tuning'} ${event.kernel.name} on ${event.device.gpus ? `${event.device.gpus} x ` : ''}${deviceText(event.device)}, session ${event.threadId}`);
    case 'session.branched':
      return info(`branch of session ${event.parentThreadId}: from step ${event.stepId}${event.edited ? ', with the kernel edited' : ', as it was'}`);
    case 'graph.described':
      return debug(`graphs: ${event.graphs.map((g) => `${g.id} (${g.nodes.length} nodes)`).join(', ')}`);
    case 'graph.node':
      return debug(`node ${event.graph}/${event.node} ${event.phase}${event.error ? `: ${event.error.split('\n', 1)[0]}` : ''}`);
    case 'device.limits':
      return info(`device limits: ${event.limits.bandwidthMethod}; FP32 ${event.limits.fp32Formula}`);
    case 'analysis.done':
      return info(`analysis: ${event.description.split('\n', 1)[0]} | problem size [${event.problemSize.join(', ')}] | outputs ${event.outputs.join(', ')}`);
    case 'tests.ready':
      return info(`tests: ${event.tests.map((t) => `${t.id} (${t.origin}, size [${t.problemSize.join(', ')}]${t.timeMs === null ? '' : `, ${ms(t.timeMs)}`})`).join('; ')}`);
    case 'baseline':
      return info(`baseline: ${ms(event.timeMs)} with ${JSON.stringify(event.params)}`);
    case 'profile':
      return info(`profile of ${event.stepId === undefined ? 'the original kernel' : `step ${event.stepId}`} with ${JSON.stringify(event.profile.config)} (${profileSourceText(event.profile)}): ${event.profile.summary.join('; ')}`);
    case 'sanitized': {
      const text = `step ${event.stepId} candidate ${event.candidate} with ${JSON.stringify(event.verdict.config)}: ${describeVerdict(event.verdict)}`;
      // Not checked (no tool, out of time) is worth a warning; hazards are told by the retry or the rejection that follows.
      return event.verdict.status === 'unavailable' || event.verdict.status === 'timed_out' ? { level: 'warning', text } : info(text);
    }
    case 'plan':
      return info(`plan (${event.reason}): ${event.steps.map((s, i) => `${i + 1}. ${s.title} [${s.status}]`).join(' ')}`);
    case 'plan.awaiting_approval':
      return info(`plan awaiting approval: ${event.steps.map((s, i) => `${i + 1}. ${s.title}`).join(' ')}`);
    case 'step.started':
      return info(`step ${event.stepId}: ${event.title}`);
    case 'step.skipped':
      return info(`step ${event.stepId} skipped: ${event.reason}`);
    case 'candidate':
      return debug(`step ${event.stepId} candidate ${event.candidate} attempt ${event.attempt}: params ${JSON.stringify(event.tuneParams)}${event.restrictions.length ? `, restrictions ${event.restrictions.join('; ')}` : ''}`);
    case 'configs.evaluated':
      return debug(
        `step ${event.stepId}: ${event.done}/${event.total} configurations (${event.failures} failed), best ${ms(event.bestTimeMs)}; ${event.result.key}: ${event.result.status}${event.result.timeMs === undefined ? '' : ` ${ms(event.result.timeMs)}`}`,
      );
    case 'configs.searched':
      return info(`step ${event.stepId} candidate ${event.candidate} searched with ${describeSearch(event.search)}`);
    case 'step.accepted':
      return info(`step ${event.stepId} accepted: ${describeChange(event)} (${pct(event.improvementPct)}) with ${JSON.stringify(event.bestParams)}`);
    case 'step.rejected':
      return info(`step ${event.stepId} rejected: ${describeRejection(event.reason)}`);
    case 'replanning':
      return info(`replanning (round ${event.round} of at most ${event.maxRounds})`);
    case 'population.child':
      return info(`child ${event.child} (step ${event.stepId}): ${event.operator} of ${event.parents.join(' and ')}`);
    case 'population.judged':
      return info(`judge on ${event.parent} for child ${event.child}: ${event.diagnosis.split('\n', 1)[0]} -> ${event.instruction.split('\n', 1)[0]}`);
    case 'population.variant':
      return info(
        `${event.variant.id} entered${event.best ? ', the fastest so far' : ''}: ${ms(event.variant.timeMs)} (${event.variant.bound}/${event.variant.occupancy})${event.variant.child === null ? ', the original kernel' : `, ${event.variant.operator} of ${event.variant.parents.join(' and ')}`}${event.retired.length > 0 ? `; retired ${event.retired.join(', ')}` : ''}`,
      );
    case 'population.rejected':
      return info(`child ${event.child} (${event.operator} of ${event.parents.join(' and ')}) rejected: ${describeRejection(event.reason)}`);
    case 'population.stopped': {
      const cost = event.usage.costUsd === null ? '' : `, $${event.usage.costUsd.toFixed(4)}`;
      return info(`evolution stopped: ${event.reason.message}; ${event.variants} variants, ${event.rejected} children rejected, ${event.usage.calls} model calls, ${event.usage.inputTokens + event.usage.outputTokens} tokens${cost}, ${Math.round(event.wallS)} s (GPUs busy ${Math.round(event.gpuS)} s)`);
    }
    case 'llm.usage':
      return debug(`${event.purpose}: ${event.model} used ${event.promptTokens} prompt + ${event.completionTokens} completion tokens${event.costUsd === undefined ? '' : ` ($${event.costUsd.toFixed(4)})`}`);
    case 'llm.exchange': {
      const x = event.exchange;
      return debug(`${x.purpose}: ${x.model} ${x.error ? `failed (${x.error.name})` : 'answered'} in ${Math.round(x.durationMs)} ms`);
    }
    case 'llm.retry':
      return { level: 'warning', text: `${event.purpose}: attempt ${event.attempt} failed (${event.error}), asking again: ${event.message.split('\n', 1)[0]}` };
    case 'warning':
      return { level: 'warning', text: event.message };
    case 'tuning.stopped':
      return { level: 'warning', text: describeStop(event) };
    case 'session.finished':
      return info(
        `finished: ${ms(event.tracker.baselineTimeMs)} -> ${ms(event.tracker.finalTimeMs)} (${event.tracker.speedup.toFixed(2)}x) with ${JSON.stringify(event.bestParams)}; launch block (${event.launch.block.join(', ')}), grid (${event.launch.grid.join(', ')})`,
      );
    case 'session.failed':
      return { level: 'error', text: `failed: ${event.error.message}` };
    case 'session.cancelled':
      return { level: 'warning', text: 'cancelled' };
  }
}
