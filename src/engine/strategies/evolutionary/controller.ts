/**
 * One run of an evolutionary session (the `evolve` node): the model writes children while the GPUs evaluate others.
 *
 * Every child goes through the same pipeline as any candidate (code extracted, interface kept, parameters merged,
 * restrictions asked, tuned and verified on every test, profiled), and a failure the model can fix goes back to it with
 * the correction, as the retry policy says. Children are produced side by side: their model requests share the
 * session's slots (ModelCalls), their tuning runs the GPU pool (one GPU each where there are several), so the model
 * never waits for the GPU nor the GPU for the model, within a bounded window of `window` children in production.
 *
 * The search is deterministic for given answers and measurements, whatever the timing: child k is decided (operator,
 * parents: population.ts) right after child k - window entered, from the population as it was then; children enter the
 * population in their number's order, whichever finished first. So a recorded session replays, and a resumed one
 * goes on exactly where it stopped.
 *
 * A run ends after `chunk` children entered, at a clean point: no child starts a new request to the model, the ones
 * waiting for an answer get it, rewrites ready for the GPU are evaluated, and what each unfinished child has (its
 * judge's instruction, its corrections, a rewrite not yet evaluated) is kept as a draft in the checkpoint. The next run
 * starts the GPU on those at once.
 */
import { setMaxListeners } from 'node:events';
import { basename } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
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
  /** Children in production at once (decided, written, waiting for or on the GPU). */
  window: number;
  /** Children that enter per run of the node (between two checkpoints). */
  chunk: number;
  /** Tournament size of parent selection. */
  tournament: number;
  archive: Omit<ArchiveOptions, 'higherIsBetter'>;
  /** Children asked for at most (a replay asks exactly as many as the recording did). */
  maxChildren?: number;
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

export class EvolutionRun {
  private population: PopulationState;
  private session: TuningStateValue;
  private readonly higherIsBetter: boolean;
  private readonly threshold: number;
  private readonly modelCalls: ModelCalls;
  private readonly gpuShare: GpuShare;
  private readonly finished = new Map<number, ChildResult>();
  private readonly running = new Set<number>();
  private readonly settled: Promise<void>[] = [];
  private pausing = false;
  private entered = 0;
  private failure: unknown = undefined;
  private wake: (() => void) | undefined;
  private readonly startedSteps: string[];
  private readonly gpuBusyAtStart: number;

  constructor(
    private readonly strategy: BaseTuningStrategy,
    private readonly llm: BaseChatModel,
    state: TuningStateValue,
    private readonly config: LangGraphRunnableConfig,
    private readonly settings: EvolutionSettings,
  ) {
    if (!state.population) throw new Error('internal: the evolve node runs after the population was seeded');
    this.population = state.population;
    this.session = state;
    const ctx = engineContext(config);
    this.higherIsBetter = ctx.settings.objective.higherIsBetter;
    this.threshold = ctx.settings.performanceThreshold;
    this.modelCalls = ctx.modelCalls;
    this.modelCalls.restore(this.population.spent);
    this.gpuShare = ctx.backends.length > 1 ? 'one' : 'all';
    this.gpuBusyAtStart = ctx.gpuBusyS;
    this.startedSteps = [...(state.startedSteps ?? [])];
    // Each request in flight listens to the run's signal a few times over (the client, its transport retries).
    if (config.signal) setMaxListeners(Math.max(10, 8 * settings.window), config.signal);
  }

  /** Runs until `chunk` children entered (or every planned child is done), and returns the session's update. */
  async run(): Promise<TuningStateUpdate> {
    this.plan();
    this.startReady();
    while (this.running.size > 0) {
      await new Promise<void>((resume) => (this.wake = resume));
      if (this.failure !== undefined) {
        await Promise.allSettled(this.settled);
        throw this.failure;
      }
    }
    await Promise.all(this.settled);
    const gpuS = this.population.spent.gpuS + engineContext(this.config).gpuBusyS - this.gpuBusyAtStart;
    this.population = { ...this.population, spent: { usage: this.modelCalls.usage, wallS: this.modelCalls.wallS, gpuS } };
    return { ...this.sessionUpdate(), population: this.population, startedSteps: this.startedSteps };
  }

  /** Whether the population has children left to make or finish. */
  static done(population: PopulationState): boolean {
    return population.stopped !== null && population.plans.length === 0;
  }

  // ------------------------------------------------------------------ deciding children

  private elites(): Variant[] {
    return this.population.variants.filter((v) => v.elite);
  }

  /** Decides children until `window` are in production, unless a budget or the children's limit stops it. */
  private plan(): void {
    const window = windowFor(this.settings.window, this.modelCalls.budget.modelCalls);
    while (this.population.stopped === null && this.population.plans.length < window) {
      const child = this.population.committed + this.population.plans.length;
      const stop = this.stopBefore(child);
      if (stop) {
        this.population = { ...this.population, stopped: stop };
        return;
      }
      const rng = rngOf(this.population.seed, child);
      const elites = this.elites();
      const operator = chooseOperator(rng, this.population.operatorStats, elites.length);
      const parents = this.parentsFor(operator, rng, elites);
      const known = { variants: this.population.variants.length, rejected: this.population.rejected.length };
      const ids = parents.map((v) => v.id);
      const rank = 1 + this.population.plans.filter((p) => p.operator === operator && p.parents.join() === ids.join()).length;
      this.population = { ...this.population, plans: [...this.population.plans, { child, operator, parents: ids, known, ...(rank > 1 && { rank }) }] };
      emit(this.config, { type: 'population.child', child, stepId: stepIdOf(child), operator, parents: parents.map((v) => v.id) });
    }
  }

  private stopBefore(child: number): StopReason | null {
    if (this.settings.maxChildren !== undefined && child >= this.settings.maxChildren) {
      return { kind: 'children', message: `the ${this.settings.maxChildren} children asked for are made` };
    }
    // Each child decided and not yet started will make at least one request.
    const notStarted = this.population.plans.filter((p) => !this.running.has(p.child) && !this.population.drafts[p.child]).length;
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
          this.finished.set(plan.child, result);
          this.running.delete(plan.child);
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
        const answer = await this.transient(() => askStructured(this.llm, conversation(SYSTEM_PROMPT, prompt, feedback), JudgeAnswer, this.config, `judge ${stepIdOf(plan.child)}`));
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
    if (!(thrown instanceof Error) || isAbortError(thrown, this.config.signal)) throw thrown;
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
    return this.modelCalls.exempt(() => this.produceChild(plan));
  }

  private async produceChild(plan: ChildPlan): Promise<ChildResult> {
    const stepId = stepIdOf(plan.child);
    const parents = plan.parents.map((id) => this.variantById(id));
    const state = this.parentState(parents[0]!, parents[1]);
    let draft: ChildDraft = this.population.drafts[plan.child] ?? { feedback: [], failures: [] };
    if (!this.startedSteps.includes(stepId)) {
      this.startedSteps.push(...this.strategy.startStep({ ...this.session, startedSteps: [] }, { id: stepId, title: madeBy(plan.operator, plan.parents) }, this.config).startedSteps);
    }
    const errors: Error[] = draft.failures.map((name) => Object.assign(new Error(name), { name }));
    const instruction = () => draft.instruction ?? draft.ready?.idea ?? '';
    if (draft.outcome) return { kind: 'finished', plan, outcome: draft.outcome, instruction: instruction() };
    try {
      if (plan.operator === 'judge' && draft.instruction === undefined) {
        if (this.pausing) return { kind: 'paused', plan, draft };
        draft = { ...draft, instruction: await this.judge(plan) };
      }
      for (;;) {
        if (!draft.ready) {
          if (this.pausing) return { kind: 'paused', plan, draft };
          const messages = conversation(SYSTEM_PROMPT, await this.prompt(plan, draft.instruction), draft.feedback);
          const answer = await this.transient(() => askText(this.llm, messages, this.config, `step ${stepId}`));
          try {
            const kernel = await this.strategy.candidateFrom(answer, {}, state);
            kernel.restrictions = await this.transient(() => this.strategy.restrictionsFor(this.llm, answer, kernel, state, this.config));
            draft = { ...draft, ready: { answer, kernel, idea: ideaOf(answer) } };
          } catch (error) {
            draft = await this.corrected(draft, withAnswer(error, answer), errors, stepId);
            continue;
          }
        }
        const { answer, kernel } = draft.ready!;
        const twin = twinIn(this.known(plan).variants, kernel.code);
        if (twin) {
          // Evaluating it again would measure what is known: it fails at once, and the prompts name it.
          return { kind: 'finished', plan, outcome: { kind: 'rejected', reason: twinRejection(twin, draft.failures.length + 1) }, instruction: instruction() };
        }
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
          const run = await runCandidate(kernel, state, this.config, { stepId, candidate: 0 }, this.gpuShare);
          // Any variant may be proposed in the editor, so every child that would enter is checked, not only the fastest.
          if (engineContext(this.config).settings.sanitize) {
            const verdict = await this.strategy.sanitize(kernel, run.bestParams, state, this.config, { stepId, candidate: 0 }, this.gpuShare);
            if (verdict.status === 'hazards') throw new SanitizerHazardError(verdict);
          }
          const { idea } = draft.ready!;
          const outcome: ChildOutcome = { kind: 'entered', kernel, idea, timeMs: run.timeMs, objectiveValue: run.objectiveValue, bestParams: run.bestParams, profile: run.profile ?? null, attempts: draft.failures.length + 1 };
          return { kind: 'finished', plan, outcome, instruction: instruction() };
        } catch (error) {
          draft = await this.corrected({ ...draft, ready: undefined }, withAnswer(error, answer), errors, stepId);
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
    return withTransportRetry(request, { ...(this.config.signal && { signal: this.config.signal }) });
  }

  /** The draft with the failure's correction for the next attempt (see retryOrThrow). */
  private async corrected(draft: ChildDraft, error: unknown, errors: Error[], stepId: string): Promise<ChildDraft> {
    const next = await this.retryOrThrow(error, { feedback: draft.feedback }, errors, `step ${stepId}`);
    const { ready: _ready, ...rest } = draft;
    return { ...rest, feedback: next.feedback, failures: errors.map((e) => e.name) };
  }


  // ------------------------------------------------------------------ entering children

  /**
   * Enters finished children in their number's order, deciding the next child after each (see plan); a paused child
   * waits for the next run, and so do the children after it, whose outcomes are kept in their drafts.
   */
  private commitInOrder(): void {
    for (;;) {
      const next = this.population.plans[0];
      const result = next && this.finished.get(next.child);
      if (!result || result.kind === 'paused') break;
      this.finished.delete(next.child);
      const { [next.child]: _entered, ...drafts } = this.population.drafts;
      this.population = { ...this.population, plans: this.population.plans.slice(1), drafts, committed: this.population.committed + 1 };
      const { outcome } = result;
      if (outcome.kind === 'rejected') this.reject(result.plan, outcome.reason, result.instruction);
      else {
        // A child written side by side with an earlier one may come back as its kernel: one variant, not two.
        const twin = twinIn(this.population.variants, outcome.kernel.code);
        if (twin) this.reject(result.plan, twinRejection(twin, outcome.attempts ?? 1), result.instruction);
        else this.enter(result.plan, outcome, result.instruction);
      }
      if (++this.entered >= this.settings.chunk) this.pausing = true;
      this.plan();
    }
    this.keepDrafts();
  }

  /** What each child that has not entered yet has, for the next run. */
  private keepDrafts(): void {
    const drafts = { ...this.population.drafts };
    for (const [child, result] of this.finished) {
      drafts[child] = result.kind === 'paused' ? result.draft : { ...(drafts[child] ?? { feedback: [], failures: [] }), ...(result.instruction && { instruction: result.instruction }), outcome: result.outcome };
    }
    this.population = { ...this.population, drafts };
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
