/**
 * One evolutionary session's children (the `evolve` node): the model writes children while the GPUs evaluate others.
 *
 * Every child goes through the same pipeline as any candidate (code extracted, interface kept, parameters merged,
 * restrictions asked, tuned and verified on every test, profiled), and a failure the model can fix goes back to it with
 * the correction, as the retry policy says. Children are produced side by side: their model requests share the
 * session's slots (ModelCalls), their tuning runs the GPU pool (one GPU each where there are several).
 *
 * The window keeps both busy without deciding far ahead of the results: a child is decided whenever fewer than
 * `window` children are being written (asked of the model, or corrected), unless the GPUs have more waiting than they
 * get through while an answer is written (hasRoom). So a child whose rewrite went to the GPU frees its place for the
 * next one at once, and a slow answer holds only its own place. With a window of 1, one child at a time: each decided
 * from every result before it.
 *
 * A child is decided (operator, parents: population.ts) from the population as it is at that moment, so what is
 * decided depends on which children finished first. Each decision is recorded with the results it saw (the
 * `population.child` event): a replay follows the recorded decisions instead of deciding again, and gets the same
 * children. Children enter in their number's order, whichever finished first, so a child's results are the same
 * prefix of the population in the session and in its replay.
 *
 * The node returns (a checkpoint of the session) after every `chunk` children that entered, without stopping the
 * work: the checkpoint keeps what each unfinished child has (its judge's instruction, its corrections, a rewrite not
 * yet evaluated) as a draft, and the children in flight go on into the next run of the node, which takes the same run
 * over. A session resumed from the checkpoint in another process starts from the drafts.
 */
import { setMaxListeners } from 'node:events';
import { basename } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { mean } from '../../../gpu/stats';
import { Random } from '../../../tuner/space/random';
import type { TuneParamLists } from '../../candidate/code';
import { unifiedDiff } from '../../candidate/diff';
import { conversation, withAnswer, type Attempt } from '../../candidate/feedback';
import { kernelView } from '../../candidate/kernel-view';
import { runCandidate } from '../../candidate/run-tests';
import { improvementPct, objectiveChange, PerformanceTracker } from '../../candidate/tracker';
import { engineContext } from '../../context';
import { askStructured, askText } from '../../llm/llm-call';
import { RetriesExhaustedError } from '../../llm/retry';
import { isAbortError } from '../../llm/errors';
import { LlmError, SanitizerHazardError } from '../../errors';
import { withTransportRetry } from '../../llm/transport';
import { emit, type RejectionReason, type VariantView } from '../../progress/events';
import { madeBy, twinRejection } from '../../progress/describe-variant';
import { SYSTEM_PROMPT, type Measured } from '../../prompts';
import type { ModelCalls } from '../../resources/model-calls';
import type { GpuShare } from '../../resources/gpu-pool';
import type { TuningStateUpdate, TuningStateValue } from '../../state';
import { parseStepJson, rejectionFor, type BaseTuningStrategy } from '../base';
import {
  admit,
  bestVariant,
  chooseOperator,
  classify,
  crossoverPartner,
  lineage,
  tournament,
  type ArchiveOptions,
  type Operator,
  type RejectedChild,
  type Variant,
  windowFor,
} from './population';
import { crossoverPrompt, JudgeAnswer, judgePrompt, mutatePrompt, type ParentView } from './prompts';
import type { ChildDraft, ChildOutcome, ChildPlan, PopulationState, StopReason } from './state';

export interface EvolutionSettings {
  /** Children written by the model at once (see hasRoom for when the GPUs hold the next one back). */
  window: number;
  /** Children that enter per run of the node (between two checkpoints). */
  chunk: number;
  /** Tournament size of parent selection. */
  tournament: number;
  archive: Omit<ArchiveOptions, 'higherIsBetter'>;
  /** Children asked for at most (a replay asks exactly as many as the recording did). */
  maxChildren?: number;
  /** The decisions of a recorded session, by child number: a replay follows them instead of deciding. */
  decisions?: readonly ChildPlan[];
}

/** What one child came to. */
type ChildResult = { kind: 'finished'; plan: ChildPlan; outcome: ChildOutcome; instruction: string } | { kind: 'paused'; plan: ChildPlan; draft: ChildDraft };

export const stepIdOf = (child: number): string => `c${child}`;

/** The random choices of child k: from the session's seed and k alone. */
function rngOf(seed: number, child: number): Random {
  return new Random((Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(child + 1, 0x85ebca6b)) >>> 0);
}

export function viewOf(v: Variant): VariantView {
  return {
    id: v.id,
    child: v.child,
    ...(v.child !== null && { stepId: stepIdOf(v.child) }),
    parents: v.parents,
    operator: v.operator,
    instruction: v.instruction,
    timeMs: v.timeMs,
    objectiveValue: v.objectiveValue,
    bestParams: v.bestParams,
    tuneParams: v.tuneParams,
    restrictions: v.restrictions,
    bound: v.bound,
    occupancy: v.occupancy,
    code: v.code,
    gridDivisors: v.gridDivisors,
    ...(v.sharedMemBytes !== null && { sharedMemBytes: v.sharedMemBytes }),
    diff: v.diff,
    ...(v.profile && { profile: v.profile }),
  };
}

/** How long a run whose node returned waits for the next run of the node to take it over before it stops its work. */
const HANDOFF_TIMEOUT_MS = 30_000;

export class EvolutionRun {
  private population: PopulationState;
  private session: TuningStateValue;
  private config: LangGraphRunnableConfig;
  private readonly higherIsBetter: boolean;
  private readonly threshold: number;
  private readonly modelCalls: ModelCalls;
  private readonly gpuShare: GpuShare;
  private readonly finished = new Map<number, ChildResult>();
  private readonly running = new Set<number>();
  /** Children whose rewrite waits for or is on a GPU; the others in production not finished are being written. */
  private readonly atGpu = new Set<number>();
  /** What each unfinished child has so far: a checkpoint keeps it as the child's draft. */
  private readonly progress = new Map<number, ChildDraft>();
  private readonly settled: Promise<void>[] = [];
  private readonly decisions: ReadonlyMap<number, ChildPlan> | undefined;
  /** Stops the requests and evaluations of a run no node takes over (the session's own cancellation stops them too). */
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;
  private pausing = false;
  /** Children entered since the last checkpoint. */
  private entered = 0;
  private failure: unknown = undefined;
  private wake: (() => void) | undefined;
  private startedSteps: string[];
  private readonly gpuBusyAtStart: number;
  private readonly gpuSBefore: number;
  /** The population the last checkpoint holds: the state the next run of the node must start from to take this one over. */
  private handedOver: PopulationState | null = null;
  private handoffTimer: NodeJS.Timeout | undefined;
  /** Seconds each answer to a child's request took, and the GPUs each evaluated child held: what the window weighs. */
  private readonly answerS: number[] = [];
  private readonly evaluationS: number[] = [];
  private recheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly strategy: BaseTuningStrategy,
    private readonly llm: BaseChatModel,
    state: TuningStateValue,
    config: LangGraphRunnableConfig,
    private readonly settings: EvolutionSettings,
  ) {
    if (!state.population) throw new Error('internal: the evolve node runs after the population was seeded');
    this.population = state.population;
    this.session = state;
    this.config = config;
    const ctx = engineContext(config);
    this.higherIsBetter = ctx.settings.objective.higherIsBetter;
    this.threshold = ctx.settings.performanceThreshold;
    this.modelCalls = ctx.modelCalls;
    this.modelCalls.restore(this.population.spent);
    this.gpuShare = ctx.backends.length > 1 ? 'one' : 'all';
    this.gpuBusyAtStart = ctx.gpuBusyS;
    this.gpuSBefore = this.population.spent.gpuS;
    this.startedSteps = [...(state.startedSteps ?? [])];
    for (const [child, draft] of Object.entries(this.population.drafts)) this.progress.set(Number(child), draft);
    if (settings.decisions) this.decisions = new Map(settings.decisions.map((d) => [d.child, d]));
    this.signal = ctx.settings.signal ? AbortSignal.any([ctx.settings.signal, this.stop.signal]) : this.stop.signal;
    // Each request in flight listens to the signal a few times over (the client, its transport retries).
    setMaxListeners(Math.max(10, 16 * settings.window), this.signal);
  }

  /** Whether the next run of the node, given this state, goes on with this run (the state is its last checkpoint's). */
  continues(state: TuningStateValue): boolean {
    const [mine, theirs] = [this.handedOver, state.population];
    if (!mine || !theirs) return false;
    // The checkpoint may be a copy: the same children decided, entered and paid for make the same population.
    const mark = (p: PopulationState) => [p.seed, p.committed, p.variants.length, p.rejected.length, p.spent.usage.calls, p.plans.map((c) => c.child).join()].join('/');
    return mark(mine) === mark(theirs);
  }

  /**
   * Goes on until `chunk` more children entered (or every child is done), and returns the session's update: a
   * checkpoint. Children in flight go on meanwhile, for the next run of the node to take over (see continues).
   */
  async advance(config: LangGraphRunnableConfig): Promise<TuningStateUpdate> {
    clearTimeout(this.handoffTimer);
    this.handedOver = null;
    this.config = config;
    this.plan();
    this.startReady();
    while (this.failure === undefined && this.entered < this.settings.chunk && !EvolutionRun.done(this.population)) {
      if (this.running.size === 0) throw new Error(`internal: the evolutionary session stalled with children ${this.population.plans.map((p) => p.child).join(', ')} decided and none in production`);
      await new Promise<void>((resume) => (this.wake = resume));
    }
    if (this.failure !== undefined) {
      this.pausing = true;
      await Promise.allSettled(this.settled);
      throw this.failure;
    }
    this.entered = 0;
    if (EvolutionRun.done(this.population)) clearTimeout(this.recheck);
    const update = this.checkpoint();
    if (!EvolutionRun.done(this.population)) {
      this.handedOver = update.population!;
      // A session that ends here (an error, a limit of the graph) takes no run over: its work stops.
      this.handoffTimer = setTimeout(() => this.abandon(), HANDOFF_TIMEOUT_MS).unref();
    }
    return update;
  }

  /** Stops asking the model and the GPUs for anything: no run of the node takes this one over. */
  abandon(): void {
    clearTimeout(this.handoffTimer);
    clearTimeout(this.recheck);
    this.handedOver = null;
    this.pausing = true;
    this.stop.abort(new DOMException('the evolutionary session ended with children in flight', 'AbortError'));
  }

  /** Whether the population has children left to make or finish. */
  static done(population: PopulationState): boolean {
    return population.stopped !== null && population.plans.length === 0;
  }

  /** The session's update as it stands: the population with every unfinished child's draft, and what was spent. */
  private checkpoint(): TuningStateUpdate {
    const drafts: Record<number, ChildDraft> = {};
    for (const plan of this.population.plans) {
      const result = this.finished.get(plan.child);
      const draft = this.progress.get(plan.child) ?? { feedback: [], failures: [] };
      if (result?.kind === 'finished') drafts[plan.child] = { ...draft, ...(result.instruction && { instruction: result.instruction }), outcome: result.outcome };
      else drafts[plan.child] = result?.kind === 'paused' ? result.draft : draft;
    }
    const gpuS = this.gpuSBefore + engineContext(this.config).gpuBusyS - this.gpuBusyAtStart;
    this.population = { ...this.population, drafts, spent: { usage: this.modelCalls.usage, wallS: this.modelCalls.wallS, gpuS } };
    return { ...this.sessionUpdate(), population: this.population, startedSteps: [...this.startedSteps] };
  }

  /** The config a child's requests and evaluations run with: the run's signal, not the node's (see EngineSettings.signal). */
  private get work(): LangGraphRunnableConfig {
    return { ...this.config, signal: this.signal };
  }

  // ------------------------------------------------------------------ deciding children

  private elites(): Variant[] {
    return this.population.variants.filter((v) => v.elite);
  }

  /** Children decided and not finished that are being written, or waiting to be. */
  private writing(): number {
    return this.population.plans.filter((p) => !this.finished.has(p.child) && !this.atGpu.has(p.child)).length;
  }

  /** Decides children while the window has room (a replay: the recorded ones, once their results are in), unless a budget or the children's limit stops it. */
  private plan(): void {
    if (this.pausing) return;
    const window = windowFor(this.settings.window, this.modelCalls.budget.modelCalls);
    while (this.population.stopped === null) {
      const child = this.population.committed + this.population.plans.length;
      if (!this.decisions && !this.hasRoom(window)) return;
      const stop = this.stopBefore(child);
      if (stop) {
        this.population = { ...this.population, stopped: stop };
        return;
      }
      const decision = this.decisions ? this.recorded(child) : this.decide(child);
      if (!decision) return;
      this.population = { ...this.population, plans: [...this.population.plans, decision] };
      emit(this.config, { type: 'population.child', child, stepId: stepIdOf(child), operator: decision.operator, parents: decision.parents, known: decision.known, ...(decision.rank !== undefined && { rank: decision.rank }) });
    }
  }

  /**
   * Whether another child may be decided now: fewer than `window` children are being written, and the children waiting
   * for a GPU (not on one yet) would keep the GPUs busy for less time than an answer and an evaluation take. Past that, a
   * child decided later is written in time all the same, and is decided from more results; the run looks again once
   * the GPUs have worked through that much. Until both times are measured: fewer than `window` children waiting for or
   * on the GPUs. A window of 1 makes one child at a time, each decided from every result before it.
   */
  private hasRoom(window: number): boolean {
    const onGpus = this.atGpu.size;
    if (this.writing() >= window || onGpus >= 2 * window) return false;
    if (window === 1) return onGpus === 0;
    const answerS = mean(this.answerS);
    const evaluationS = mean(this.evaluationS);
    if (answerS === undefined || evaluationS === undefined) return onGpus < window;
    const gpus = engineContext(this.config).backends.length;
    const waitingS = (Math.max(0, onGpus - gpus) * evaluationS) / gpus;
    if (waitingS < answerS + evaluationS) return true;
    clearTimeout(this.recheck);
    this.recheck = setTimeout(() => {
      this.plan();
      this.startReady();
    }, 1000 * (waitingS - answerS - evaluationS)).unref();
    return false;
  }

  /** Child `child`'s operator and parents, from the population as it is now. */
  private decide(child: number): ChildPlan {
    const rng = rngOf(this.population.seed, child);
    const elites = this.elites();
    const operator = chooseOperator(rng, this.population.operatorStats, elites.length);
    const parents = this.parentsFor(operator, rng, elites).map((v) => v.id);
    const known = { variants: this.population.variants.length, rejected: this.population.rejected.length };
    const rank = 1 + this.population.plans.filter((p) => p.operator === operator && p.parents.join() === parents.join()).length;
    return { child, operator, parents, known, ...(rank > 1 && { rank }) };
  }

  /** The recorded decision of `child`, once the results it saw are in (children enter in order, so they are the same); null until then. */
  private recorded(child: number): ChildPlan | null {
    const decision = this.decisions!.get(child);
    if (!decision) {
      this.population = { ...this.population, stopped: { kind: 'children', message: `the ${this.decisions!.size} recorded children are made` } };
      return null;
    }
    const { variants, rejected } = this.population;
    return variants.length >= decision.known.variants && rejected.length >= decision.known.rejected ? decision : null;
  }

  private stopBefore(child: number): StopReason | null {
    if (this.settings.maxChildren !== undefined && child >= this.settings.maxChildren) {
      return { kind: 'children', message: `the ${this.settings.maxChildren} children asked for are made` };
    }
    // Each child decided and not yet started (no progress of its own) will make at least one request.
    const notStarted = this.population.plans.filter((p) => !this.progress.has(p.child)).length;
    const budget = this.modelCalls.spent(notStarted + 1);
    if (budget) {
      const usage = this.modelCalls.usage;
      const message =
        budget === 'model_calls'
          ? `the model-call budget (${this.modelCalls.budget.modelCalls} calls) is spent: ${usage.calls} calls made and ${notStarted} owed to children already decided leave none for another child`
          : this.budgetMessage(budget);
      return { kind: 'budget', budget, message };
    }
    return null;
  }

  private budgetMessage(budget: NonNullable<ReturnType<ModelCalls['spent']>>): string {
    const u = this.modelCalls.usage;
    const b = this.modelCalls.budget;
    switch (budget) {
      case 'tokens':
        return `the token budget (${b.tokens}) is spent: ${u.inputTokens + u.outputTokens} tokens used`;
      case 'cost':
        return `the cost budget ($${b.costUsd}) is spent: $${(u.costUsd ?? 0).toFixed(4)}`;
      case 'wall_time':
        return `the wall-time budget (${b.wallTimeS} s) is spent: ${Math.round(this.modelCalls.wallS)} s worked`;
      default:
        return `the model-call budget (${b.modelCalls} calls) is spent`;
    }
  }

  /** The judge reads the fastest variant; a mutation takes a tournament's winner; a crossover adds a partner from another niche. */
  private parentsFor(operator: Operator, rng: Random, elites: readonly Variant[]): Variant[] {
    if (operator === 'judge') return [bestVariant(elites, this.higherIsBetter)];
    const first = tournament(rng, elites, this.settings.tournament, this.higherIsBetter);
    if (operator === 'mutate') return [first];
    return [first, crossoverPartner(rng, elites, first, this.settings.tournament, this.higherIsBetter)];
  }

  // ------------------------------------------------------------------ producing children

  private startReady(): void {
    if (this.pausing) return;
    for (const plan of this.population.plans) {
      if (this.running.has(plan.child) || this.finished.has(plan.child)) continue;
      this.running.add(plan.child);
      const done = this.produce(plan).then(
        (result) => {
          const evaluationS = engineContext(this.config).gpuBusySOf(plan.child);
          if (evaluationS > 0) this.evaluationS.push(evaluationS);
          this.finished.set(plan.child, result);
          this.running.delete(plan.child);
          this.atGpu.delete(plan.child);
          this.commitInOrder();
          this.plan();
          this.startReady();
          this.wake?.();
        },
        (error: unknown) => {
          this.running.delete(plan.child);
          this.failure ??= error;
          this.pausing = true;
          this.wake?.();
        },
      );
      this.settled.push(done);
    }
  }

  /** A child's rewrite went to the GPU, or back to the model for a correction: that may make room for the next (see plan). */
  private moved(child: number, to: 'gpu' | 'model'): void {
    if (to === 'gpu') this.atGpu.add(child);
    else this.atGpu.delete(child);
    this.plan();
    this.startReady();
  }

  private variantById(id: string): Variant {
    const v = this.population.variants.find((x) => x.id === id);
    if (!v) throw new Error(`internal: variant ${id} is not in the population`);
    return v;
  }

  /** The session state as a candidate of this parent sees it: its kernel, parameters, time and profile. */
  private parentState(parent: Variant, second?: Variant): TuningStateValue {
    const tuneParams: TuneParamLists = { ...parent.tuneParams };
    for (const [name, values] of Object.entries(second?.tuneParams ?? {})) tuneParams[name] = [...new Set([...(tuneParams[name] ?? []), ...values])];
    return {
      ...this.session,
      code: parent.code,
      tuneParams,
      restrictions: [...new Set([...parent.restrictions, ...(second?.restrictions ?? [])])],
      gridDivisors: parent.gridDivisors,
      sharedMemBytes: parent.sharedMemBytes,
      bestParams: parent.bestParams,
      bestTimeMs: parent.timeMs,
      bestObjective: parent.objectiveValue,
      profile: parent.profile,
    };
  }

  private async parentView(parent: Variant): Promise<ParentView> {
    const ctx = engineContext(this.config);
    const measured: Measured = { device: ctx.device, limits: ctx.speedLimits, timeMs: parent.timeMs, work: this.session.tests[0]?.work, profile: parent.profile };
    return { variant: parent, code: await kernelView(this.session, parent.code), measured };
  }

  /** The results a child's requests show: those known when it was decided. */
  private known(plan: ChildPlan): { variants: Variant[]; rejected: RejectedChild[] } {
    return { variants: this.population.variants.slice(0, plan.known.variants), rejected: this.population.rejected.slice(0, plan.known.rejected) };
  }

  private async prompt(plan: ChildPlan, instruction: string | undefined): Promise<string> {
    const parents = plan.parents.map((id) => this.variantById(id));
    const { variants, rejected } = this.known(plan);
    if (plan.operator === 'crossover') return crossoverPrompt({ first: await this.parentView(parents[0]!), second: await this.parentView(parents[1]!), rank: plan.rank ?? 1, variants, rejected });
    return mutatePrompt({ parent: await this.parentView(parents[0]!), ...(instruction !== undefined ? { instruction } : { rank: plan.rank ?? 1 }), variants, rejected });
  }

  /** The judge's instruction for a child, asked once (kept in the child's draft). */
  private async judge(plan: ChildPlan): Promise<string> {
    const parent = this.variantById(plan.parents[0]!);
    const { variants, rejected } = this.known(plan);
    const prompt = judgePrompt({ parent: await this.parentView(parent), rank: plan.rank ?? 1, variants, rejected });
    let attempt: Attempt = { feedback: [] };
    const errors: Error[] = [];
    for (;;) {
      try {
        const feedback = attempt.feedback;
        const answer = await this.timed(() => this.transient(() => askStructured(this.llm, conversation(SYSTEM_PROMPT, prompt, feedback), JudgeAnswer, this.work, `judge ${stepIdOf(plan.child)}`)));
        emit(this.config, { type: 'population.judged', child: plan.child, stepId: stepIdOf(plan.child), parent: parent.id, diagnosis: answer.diagnosis, instruction: answer.instruction });
        return answer.instruction.trim();
      } catch (error) {
        attempt = await this.retryOrThrow(error, attempt, errors, `judge ${stepIdOf(plan.child)}`);
      }
    }
  }

  /**
   * The retry policy's next attempt for a correctable failure (an `llm.retry` event), or the error thrown again:
   * unchanged when the policy does not handle it (transport failures, cancellation, bugs), as RetriesExhaustedError
   * when the attempts are spent.
   */
  private async retryOrThrow(thrown: unknown, attempt: Attempt, errors: Error[], purpose: string): Promise<Attempt> {
    if (!(thrown instanceof Error) || isAbortError(thrown, this.signal)) throw thrown;
    const handler = this.strategy.retryPolicy.handlerFor(thrown);
    if (!handler || thrown instanceof LlmError) throw thrown;
    errors.push(thrown);
    if (errors.length > this.strategy.retryPolicy.maxRetries) throw new RetriesExhaustedError(errors);
    emit(this.config, { type: 'llm.retry', purpose, attempt: errors.length, error: thrown.name, message: thrown.message });
    return handler(attempt, thrown);
  }

  /** Writes, checks and evaluates one child, asking again after every correctable failure, until it enters, fails, or the run pauses. */
  private produce(plan: ChildPlan): Promise<ChildResult> {
    // Requests of a child already decided are not refused by a budget: it finishes (at most `window` children past it).
    // Its GPU work goes before a later child's, so that children finish (and make room) one after another, in order.
    return this.modelCalls.exempt(() => engineContext(this.config).withGpuPriority(plan.child, () => this.produceChild(plan)));
  }

  private async produceChild(plan: ChildPlan): Promise<ChildResult> {
    const stepId = stepIdOf(plan.child);
    const parents = plan.parents.map((id) => this.variantById(id));
    const state = this.parentState(parents[0]!, parents[1]);
    let draft: ChildDraft = this.progress.get(plan.child) ?? { feedback: [], failures: [] };
    const keep = (next: ChildDraft) => {
      draft = next;
      this.progress.set(plan.child, next);
    };
    keep(draft);
    if (!this.startedSteps.includes(stepId)) {
      this.startedSteps.push(...this.strategy.startStep({ ...this.session, startedSteps: [] }, { id: stepId, title: madeBy(plan.operator, plan.parents) }, this.config).startedSteps);
    }
    const errors: Error[] = draft.failures.map((name) => Object.assign(new Error(name), { name }));
    const instruction = () => draft.instruction ?? draft.ready?.idea ?? '';
    if (draft.outcome) return { kind: 'finished', plan, outcome: draft.outcome, instruction: instruction() };
    try {
      if (plan.operator === 'judge' && draft.instruction === undefined) {
        if (this.pausing) return { kind: 'paused', plan, draft };
        keep({ ...draft, instruction: await this.judge(plan) });
      }
      for (;;) {
        if (!draft.ready) {
          if (this.pausing) return { kind: 'paused', plan, draft };
          const messages = conversation(SYSTEM_PROMPT, await this.prompt(plan, draft.instruction), draft.feedback);
          const answer = await this.timed(() => this.transient(() => askText(this.llm, messages, this.work, `step ${stepId}`)));
          try {
            const kernel = await this.strategy.candidateFrom(answer, {}, state);
            kernel.restrictions = await this.transient(() => this.strategy.restrictionsFor(this.llm, answer, kernel, state, this.work));
            keep({ ...draft, ready: { answer, kernel, idea: ideaOf(answer) } });
          } catch (error) {
            keep(await this.corrected(draft, withAnswer(error, answer), errors, stepId));
            continue;
          }
        }
        const { answer, kernel } = draft.ready!;
        const twin = twinIn(this.known(plan).variants, kernel.code);
        if (twin) {
          // Evaluating it again would measure what is known: it fails at once, and the prompts name it.
          return { kind: 'finished', plan, outcome: { kind: 'rejected', reason: twinRejection(twin, draft.failures.length + 1) }, instruction: instruction() };
        }
        this.moved(plan.child, 'gpu');
        emit(this.config, {
          type: 'candidate',
          stepId,
          candidate: 0,
          attempt: draft.failures.length + 1,
          code: kernel.code,
          diff: unifiedDiff(state.code, kernel.code, { fileName: basename(state.fileName) }),
          tuneParams: kernel.tuneParams,
          restrictions: kernel.restrictions,
        });
        try {
          const run = await runCandidate(kernel, state, this.work, { stepId, candidate: 0 }, this.gpuShare);
          // Any variant may be proposed in the editor, so every child that would enter is checked, not only the fastest.
          if (engineContext(this.config).settings.sanitize) {
            const verdict = await this.strategy.sanitize(kernel, run.bestParams, state, this.work, { stepId, candidate: 0 }, this.gpuShare);
            if (verdict.status === 'hazards') throw new SanitizerHazardError(verdict);
          }
          const { idea } = draft.ready!;
          const outcome: ChildOutcome = { kind: 'entered', kernel, idea, timeMs: run.timeMs, objectiveValue: run.objectiveValue, bestParams: run.bestParams, profile: run.profile ?? null, attempts: draft.failures.length + 1 };
          return { kind: 'finished', plan, outcome, instruction: instruction() };
        } catch (error) {
          keep(await this.corrected({ ...draft, ready: undefined }, withAnswer(error, answer), errors, stepId));
          this.moved(plan.child, 'model');
        }
      }
    } catch (error) {
      if (!(error instanceof RetriesExhaustedError)) throw error;
      return { kind: 'finished', plan, outcome: { kind: 'rejected', reason: rejectionFor(error) }, instruction: instruction() };
    }
  }

  /**
   * A request retried while its failure is transient (429, 5xx, a reset connection), within the child: a failed node
   * would throw away every child this run entered since its last checkpoint.
   */
  private transient<T>(request: () => Promise<T>): Promise<T> {
    return withTransportRetry(request, { signal: this.signal });
  }

  /** A request to the model, its answer's time kept (see hasRoom). */
  private async timed<T>(request: () => Promise<T>): Promise<T> {
    const start = performance.now();
    const answer = await request();
    this.answerS.push((performance.now() - start) / 1000);
    return answer;
  }

  /** The draft with the failure's correction for the next attempt (see retryOrThrow). */
  private async corrected(draft: ChildDraft, error: unknown, errors: Error[], stepId: string): Promise<ChildDraft> {
    const next = await this.retryOrThrow(error, { feedback: draft.feedback }, errors, `step ${stepId}`);
    const { ready: _ready, ...rest } = draft;
    return { ...rest, feedback: next.feedback, failures: errors.map((e) => e.name) };
  }


  // ------------------------------------------------------------------ entering children

  /**
   * Enters finished children in their number's order, deciding after each what its result makes room for (see plan);
   * a child finished early waits for the ones before it.
   */
  private commitInOrder(): void {
    for (;;) {
      const next = this.population.plans[0];
      const result = next && this.finished.get(next.child);
      if (!result || result.kind === 'paused') return;
      this.finished.delete(next.child);
      this.progress.delete(next.child);
      this.population = { ...this.population, plans: this.population.plans.slice(1), committed: this.population.committed + 1 };
      const { outcome } = result;
      if (outcome.kind === 'rejected') this.reject(result.plan, outcome.reason, result.instruction);
      else {
        // A child written side by side with an earlier one may come back as its kernel: one variant, not two.
        const twin = twinIn(this.population.variants, outcome.kernel.code);
        if (twin) this.reject(result.plan, twinRejection(twin, outcome.attempts ?? 1), result.instruction);
        else this.enter(result.plan, outcome, result.instruction);
      }
      this.entered++;
      this.plan();
    }
  }

  private countTry(operator: Operator, win: boolean): void {
    const stats = this.population.operatorStats;
    this.population = { ...this.population, operatorStats: { ...stats, [operator]: { tries: stats[operator].tries + 1, wins: stats[operator].wins + (win ? 1 : 0) } } };
  }

  private enter(plan: ChildPlan, outcome: Extract<ChildOutcome, { kind: 'entered' }>, instruction: string): void {
    const parents = plan.parents.map((id) => this.variantById(id));
    const before = bestVariant(this.elites(), this.higherIsBetter);
    const { kernel } = outcome;
    const variant: Variant = {
      id: `v${this.population.variants.length}`,
      child: plan.child,
      parents: plan.parents,
      operator: plan.operator,
      instruction: instruction || outcome.idea,
      code: kernel.code,
      tuneParams: kernel.tuneParams,
      restrictions: kernel.restrictions,
      gridDivisors: kernel.gridDivisors,
      sharedMemBytes: kernel.sharedMemBytes,
      bestParams: outcome.bestParams,
      timeMs: outcome.timeMs,
      objectiveValue: outcome.objectiveValue,
      profile: outcome.profile,
      ...classify(outcome.profile),
      diff: unifiedDiff(parents[0]!.code, kernel.code, { fileName: basename(this.session.fileName) }),
      elite: true,
    };
    const elitesBefore = new Set(this.elites().map((v) => v.id));
    this.population = { ...this.population, variants: admit(this.population.variants, variant, { ...this.settings.archive, higherIsBetter: this.higherIsBetter }) };
    const entered = this.variantById(variant.id);
    const retired = [...elitesBefore].filter((id) => !this.variantById(id).elite);
    const gain = (base: Variant) => improvementPct(base.objectiveValue, variant.objectiveValue, this.higherIsBetter);
    this.countTry(plan.operator, entered.elite && parents.every((p) => gain(p) > 0));
    const best = gain(before) >= this.threshold;
    emit(this.config, { type: 'population.variant', variant: viewOf(entered), best, retired });
    if (best) this.makeBest(entered, before);
  }

  /** The variant becomes the session's kernel: what finish() proposes, with its lineage as the tracker's steps. */
  private makeBest(variant: Variant, before: Variant): void {
    const { objective } = engineContext(this.config).settings;
    const change = objectiveChange(this.session, objective, variant.objectiveValue);
    emit(this.config, {
      type: 'step.accepted',
      stepId: stepIdOf(variant.child!),
      candidate: 0,
      oldTimeMs: before.timeMs,
      newTimeMs: variant.timeMs,
      improvementPct: improvementPct(change.oldValue, change.newValue, objective.higherIsBetter),
      bestParams: variant.bestParams,
      ...(objective.name !== 'time' && { objective: change }),
    });
    const line = lineage(this.population.variants, variant.id);
    const tracker = new PerformanceTracker(line[0]!.timeMs);
    for (let i = 1; i < line.length; i++) {
      const v = line[i]!;
      tracker.addStep({ description: `${v.id}: ${v.instruction || madeBy(v.operator, v.parents)}`, code: v.code, oldTimeMs: line[i - 1]!.timeMs, newTimeMs: v.timeMs, tunableParams: v.tuneParams, restrictions: v.restrictions, bestParams: v.bestParams });
    }
    this.session = {
      ...this.session,
      code: variant.code,
      tuneParams: variant.tuneParams,
      restrictions: variant.restrictions,
      gridDivisors: variant.gridDivisors,
      sharedMemBytes: variant.sharedMemBytes,
      bestParams: variant.bestParams,
      bestTimeMs: variant.timeMs,
      bestObjective: variant.objectiveValue,
      tracker: tracker.toJSON(),
      profile: variant.profile,
    };
  }

  private reject(plan: ChildPlan, reason: RejectionReason, instruction: string): void {
    const rejected: RejectedChild = { child: plan.child, parents: plan.parents, operator: plan.operator, instruction, reason };
    this.population = { ...this.population, rejected: [...this.population.rejected, rejected] };
    this.countTry(plan.operator, false);
    emit(this.config, { type: 'population.rejected', child: plan.child, stepId: stepIdOf(plan.child), operator: plan.operator, parents: plan.parents, reason });
    emit(this.config, { type: 'step.rejected', stepId: stepIdOf(plan.child), reason });
  }

  private sessionUpdate(): TuningStateUpdate {
    const s = this.session;
    return {
      code: s.code,
      tuneParams: s.tuneParams,
      restrictions: s.restrictions,
      gridDivisors: s.gridDivisors,
      sharedMemBytes: s.sharedMemBytes,
      bestParams: s.bestParams,
      bestTimeMs: s.bestTimeMs,
      bestObjective: s.bestObjective,
      tracker: s.tracker,
      profile: s.profile,
    };
  }
}

/** The idea line of a rewrite's json block ('' when it names none: the code then speaks for itself). */
function ideaOf(answer: string): string {
  try {
    return parseStepJson(answer).idea?.trim() ?? '';
  } catch {
    return '';
  }
}

const squeezed = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The variant among these whose code this is, but for whitespace. */
function twinIn(variants: readonly Variant[], code: string): string | undefined {
  const mine = squeezed(code);
  return variants.find((v) => squeezed(v.code) === mine)?.id;
}
