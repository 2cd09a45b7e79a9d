/**
 * The seed's BaseTuningStrategy: what every strategy shares. A strategy is a class whose `createGraph(llm)` returns a
 * graph over the session state (TuningState); it decides which steps to try, and uses these helpers to turn a model's
 * answer into a tested candidate: extract the code, keep the interface, merge the tunable parameters, ask for
 * restrictions, run the tests through the tuner, run a candidate that would be accepted under compute-sanitizer, and
 * accept the candidate only when it beats the best kernel by the performance threshold (recording the step in the
 * tracker).
 */
import { basename } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { CompileError } from '../../gpu/errors';
import { compileRestrictions } from '../../tuner/space/restrictions';
import { FailedTestsError } from '../../tuner/tunable-kernel';
import type { ConfigProfile } from '../../tuner/run/profile';
import type { Config } from '../../tuner/types';
import { checkInterface, countConfigurations, extractAnswerJson, extractKernelCode, mergeTuneParams, restrictionsStillValid, type TuneParamLists } from '../candidate/code';
import { engineContext, type GraphOptions } from '../context';
import { unifiedDiff } from '../candidate/diff';
import { InvalidTuneParamsError, RetriesExhaustedError, SanitizerHazardError } from '../errors';
import { emit, type ObjectiveChange, type RejectionReason } from '../progress/events';
import { conversation, defaultRetryPolicy, withAnswer, withRetries, type Attempt } from '../candidate/feedback';
import type { GridDivisors } from '../candidate/finalize';
import { formatZodIssues } from '../llm/json';
import { askStructured, askText } from '../llm/llm-call';
import { kernelView, spliceAnswer, unitOf } from '../candidate/kernel-view';
import { SYSTEM_PROMPT, type KernelView } from '../prompts';
import type { RetryPolicy } from '../llm/retry';
import { originalKernel, runCandidate, type CandidateKernel, type CandidateRun } from '../candidate/run-tests';
import { sanitizeCandidate } from '../candidate/sanitize';
import type { GpuShare } from '../resources/gpu-pool';
import { findingLines, type SanitizerVerdict } from '../../tuner/run/sanitizer';
import type { TuningStateUpdate, TuningStateValue } from '../state';
import { PerformanceTracker, improvementPct, objectiveChange } from '../candidate/tracker';
import { restrictionsPrompt } from './prompts';

export interface TuningStrategyOptions {
  /** Content retries of the strategy's model calls; default defaultRetryPolicy() (3 retries, corrections for every error). */
  retryPolicy?: RetryPolicy<Attempt>;
}

/** A compiled graph over the session state; it returns the state with the best kernel it found. */
export interface TuningGraph {
  invoke(state: TuningStateValue, config?: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>>;
}

/** What one candidate of a step came to. */
export type CandidateOutcome =
  | { ok: true; stepId: string; candidate: number; kernel: CandidateKernel; timeMs: number; objectiveValue: number; bestParams: Config; profile?: ConfigProfile }
  | { ok: false; stepId: string; candidate: number; reason: RejectionReason };

/** One request to the model for a rewrite. */
export interface StepRequest {
  stepId: string;
  candidate: number;
  /** The whole request: what to do, the kernel, the rules, the answer's form. */
  prompt: string;
  /** Parameters the step itself defines (explicit steps), merged into the current ones with those the answer names. */
  stepTuneParams?: TuneParamLists;
}

export interface Decision {
  update: TuningStateUpdate;
  accepted: boolean;
  /** A candidate passed the tests (accepted, or rejected only for too little gain). */
  correct: boolean;
}

const divisor = z.union([z.number().positive(), z.string().min(1), z.array(z.union([z.number().positive(), z.string().min(1)]))]);
const StepAnswerJson = z.object({
  /** The idea the rewrite applied, in a line (the evolutionary strategy asks for it). */
  idea: z.string().optional(),
  /** Its restrictions, where the request asked for them with the code (saves a request of their own). */
  restrictions: z.array(z.string()).optional(),
  tunableParameters: z.record(z.string(), z.unknown()).default({}),
  gridDivisors: z.object({ x: divisor.optional(), y: divisor.optional(), z: divisor.optional() }).strict().default({}),
  /** Dynamic shared memory per block of a kernel with `extern __shared__`: bytes, or an expression over its parameters. */
  sharedMemBytes: z.union([z.number().int().nonnegative(), z.string().min(1)]).optional(),
});

const RestrictionsAnswer = z.object({ restrictions: z.array(z.string()).describe('expressions over the tunable parameter names') });

/** A strategy option that counts something: an integer of at least 1, or a RangeError naming it. */
export function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be an integer > 0, got ${value}`);
  return value;
}

export abstract class BaseTuningStrategy {
  readonly retryPolicy: RetryPolicy<Attempt>;

  constructor(options: TuningStrategyOptions = {}) {
    this.retryPolicy = options.retryPolicy ?? defaultRetryPolicy();
  }

  abstract createGraph(llm: BaseChatModel, options?: GraphOptions): TuningGraph;

  /**
   * Announces that a step starts (step.started) and returns the update that records it in the session's
   * `startedSteps`: a branch of the session can later start again from here (see branch.ts).
   */
  startStep(state: TuningStateValue, step: { id: string; title: string }, config: LangGraphRunnableConfig): { startedSteps: string[] } {
    emit(config, { type: 'step.started', stepId: step.id, title: step.title });
    return { startedSteps: [...(state.startedSteps ?? []), step.id] };
  }

  /**
   * The code of an answer (the rewritten device unit), `#define`s of tunable parameters removed; NoCodeError when there
   * is none, TruncatedAnswerError when the answer was cut off in it.
   */
  extractCode(answer: string, kernelName: string, tunableNames: Iterable<string>): string {
    return extractKernelCode(answer, { kernelName, tunableNames });
  }

  /** Throws SignatureChangedError when the kernel's name or parameter list differs from the original's. */
  async checkSignature(code: string, state: TuningStateValue): Promise<void> {
    await checkInterface(code, (await originalKernel(state)).signature, state.fileName);
  }

  /** Restrictions for a candidate, every name checked against its tunable parameters (RestrictionCheckError otherwise). */
  async askRestrictions(llm: BaseChatModel, code: string | KernelView, tuneParams: TuneParamLists, existing: readonly string[], config: LangGraphRunnableConfig): Promise<string[]> {
    const names = Object.keys(tuneParams);
    const stillValid = restrictionsStillValid(existing, tuneParams);
    return withRetries(this.retryPolicy, config, 'restrictions', async ({ feedback }) => {
      const prompt = restrictionsPrompt(code, tuneParams, stillValid);
      const answer = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), RestrictionsAnswer, config, 'restrictions');
      const restrictions = answer.restrictions.map((r) => r.trim()).filter((r) => r !== '');
      try {
        compileRestrictions(restrictions, names);
      } catch (error) {
        throw withAnswer(error, JSON.stringify(answer));
      }
      return restrictions;
    });
  }

  /**
   * A candidate's restrictions: those its answer's json block lists (checked against its parameter names), else asked
   * of the model when it has more than one configuration, else none.
   */
  async restrictionsFor(llm: BaseChatModel, answer: string, kernel: CandidateKernel, state: TuningStateValue, config: LangGraphRunnableConfig): Promise<string[]> {
    const given = parseStepJson(answer).restrictions;
    if (given) {
      const restrictions = given.map((r) => r.trim()).filter((r) => r !== '');
      compileRestrictions(restrictions, Object.keys(kernel.tuneParams));
      return restrictions;
    }
    if (countConfigurations(kernel.tuneParams) <= 1) return [];
    return this.askRestrictions(llm, await kernelView(state, kernel.code), kernel.tuneParams, state.restrictions, config);
  }

  /** Tunes the candidate on the first test, checks the best configuration on the others (typed errors on failure). */
  runTests(candidate: CandidateKernel, state: TuningStateValue, config: LangGraphRunnableConfig, progress: { stepId: string; candidate: number }): Promise<CandidateRun> {
    return runCandidate(candidate, state, config, progress);
  }

  /**
   * compute-sanitizer's verdict on a candidate's best configuration (candidate/sanitize.ts): clean, hazards with its
   * first findings, unavailable with why, or timed out; announced as a `sanitized` event. A strategy of its own calls
   * this before it accepts a candidate that tryCandidate did not produce, and treats hazards as tryCandidate does.
   */
  sanitize(candidate: CandidateKernel, bestParams: Config, state: TuningStateValue, config: LangGraphRunnableConfig, progress: { stepId: string; candidate: number }, share: GpuShare = 'all'): Promise<SanitizerVerdict> {
    return sanitizeCandidate(candidate, bestParams, state, config, progress, share);
  }

  /**
   * Asks for a rewrite and tests it, feeding every correctable failure back (retry policy) until a candidate passes or
   * the attempts are spent; the outcome says which, with the reason of the last failure. A candidate that would be
   * accepted (it clears the performance threshold) is run under compute-sanitizer first, where the session asks for it:
   * hazards are a failure like a wrong result, told to the model with the findings.
   */
  async tryCandidate(llm: BaseChatModel, request: StepRequest, state: TuningStateValue, config: LangGraphRunnableConfig): Promise<CandidateOutcome> {
    const { stepId, candidate } = request;
    const purpose = `step ${stepId}`;
    let attempt = 0;
    try {
      return await withRetries(this.retryPolicy, config, purpose, async ({ feedback }) => {
        attempt++;
        const answer = await askText(llm, conversation(SYSTEM_PROMPT, request.prompt, feedback), config, purpose);
        try {
          const kernel = await this.candidateFrom(answer, request, state);
          kernel.restrictions = await this.restrictionsFor(llm, answer, kernel, state, config);
          emit(config, {
            type: 'candidate',
            stepId,
            candidate,
            attempt,
            code: kernel.code,
            diff: unifiedDiff(state.code, kernel.code, { fileName: basename(state.fileName) }),
            tuneParams: kernel.tuneParams,
            restrictions: kernel.restrictions,
          });
          const run = await this.runTests(kernel, state, config, { stepId, candidate });
          if (engineContext(config).settings.sanitize && gainOf(state, run.objectiveValue, config).clears) {
            const verdict = await this.sanitize(kernel, run.bestParams, state, config, { stepId, candidate });
            if (verdict.status === 'hazards') throw new SanitizerHazardError(verdict);
          }
          return { ok: true as const, stepId, candidate, kernel, timeMs: run.timeMs, objectiveValue: run.objectiveValue, bestParams: run.bestParams, ...(run.profile && { profile: run.profile }) };
        } catch (error) {
          throw withAnswer(error, answer);
        }
      });
    } catch (error) {
      if (!(error instanceof RetriesExhaustedError)) throw error;
      return { ok: false, stepId, candidate, reason: rejectionFor(error) };
    }
  }

  /**
   * The candidate an answer describes: its rewrite of the device unit spliced into the file, the kernel's interface
   * checked, parameters merged (the current ones, the step's, and those a ```json block names) over the device code,
   * grid divisors and dynamic shared memory from the json block over the current ones. Throws what the model is told
   * to fix (see feedback.ts) when the answer is not usable.
   */
  async candidateFrom(answer: string, request: Pick<StepRequest, 'stepTuneParams'>, state: TuningStateValue): Promise<CandidateKernel> {
    const json = parseStepJson(answer);
    const proposed = { ...request.stepTuneParams, ...json.tunableParameters };
    const rewrite = this.extractCode(answer, state.kernelName, [...Object.keys(state.tuneParams), ...Object.keys(proposed)]);
    // The answer itself must define the kernel: a renamed copy would be spliced in beside the original, which would be
    // tuned unchanged.
    await this.checkSignature(rewrite, state);
    const code = await spliceAnswer(state, state.code, rewrite);
    await this.checkSignature(code, state);
    const sharedMemBytes = json.sharedMemBytes ?? state.sharedMemBytes ?? null;
    return {
      code,
      tuneParams: mergeTuneParams(state.tuneParams, proposed, (await unitOf(state, code)).text),
      restrictions: [],
      gridDivisors: { ...state.gridDivisors, ...(json.gridDivisors as GridDivisors) },
      sharedMemBytes,
    };
  }

  /**
   * Accepts the best correct candidate by the session's objective when it improves on the best so far by at least the
   * performance threshold (recording the step in the tracker, its profile becoming the kernel's), else rejects the
   * step with the reason; emits step.accepted / step.rejected.
   */
  decide(state: TuningStateValue, step: { id: string; title: string }, outcomes: readonly CandidateOutcome[], config: LangGraphRunnableConfig): Decision {
    const { objective } = engineContext(config).settings;
    const direction = objective.higherIsBetter ? -1 : 1;
    const passed = outcomes.filter((o): o is Extract<CandidateOutcome, { ok: true }> => o.ok).sort((a, b) => direction * (a.objectiveValue - b.objectiveValue));
    const best = passed[0];
    if (!best) {
      const failed = outcomes.filter((o): o is Extract<CandidateOutcome, { ok: false }> => !o.ok);
      const reason = (['wrong_result', 'hazard', 'compile_error', 'failed'] as const).map((k) => failed.find((o) => o.reason.kind === k)).find((o) => o !== undefined)?.reason;
      emit(config, { type: 'step.rejected', stepId: step.id, reason: reason ?? { kind: 'failed', error: 'Error', message: 'no candidate was produced', attempts: 0 } });
      return { update: {}, accepted: false, correct: false };
    }
    const oldTimeMs = state.bestTimeMs;
    if (oldTimeMs === null) throw new Error('a candidate is judged against the baseline time, which was not measured');
    const { change, gain, threshold, clears } = gainOf(state, best.objectiveValue, config);
    const times = { oldTimeMs, newTimeMs: best.timeMs, ...(objective.name !== 'time' && { objective: change }) };
    if (!clears) {
      emit(config, { type: 'step.rejected', stepId: step.id, reason: { kind: 'insufficient_gain', ...times, improvementPct: gain, thresholdPct: threshold } });
      return { update: {}, accepted: false, correct: true };
    }
    const tracker = PerformanceTracker.fromJSON(state.tracker);
    tracker.addStep({
      description: step.title,
      code: best.kernel.code,
      oldTimeMs,
      newTimeMs: best.timeMs,
      tunableParams: best.kernel.tuneParams,
      restrictions: best.kernel.restrictions,
      bestParams: best.bestParams,
    });
    emit(config, { type: 'step.accepted', stepId: step.id, candidate: best.candidate, ...times, improvementPct: gain, bestParams: best.bestParams });
    return {
      update: {
        code: best.kernel.code,
        tuneParams: best.kernel.tuneParams,
        restrictions: best.kernel.restrictions,
        gridDivisors: best.kernel.gridDivisors,
        sharedMemBytes: best.kernel.sharedMemBytes,
        bestParams: best.bestParams,
        bestTimeMs: best.timeMs,
        bestObjective: best.objectiveValue,
        tracker: tracker.toJSON(),
        profile: best.profile ?? null,
      },
      accepted: true,
      correct: true,
    };
  }
}

/** A candidate's change in the objective against the best so far, and whether it clears the performance threshold. */
function gainOf(state: TuningStateValue, objectiveValue: number, config: LangGraphRunnableConfig): { change: ObjectiveChange; gain: number; threshold: number; clears: boolean } {
  const { performanceThreshold: threshold, objective } = engineContext(config).settings;
  const change = objectiveChange(state, objective, objectiveValue);
  const gain = improvementPct(change.oldValue, change.newValue, objective.higherIsBetter);
  return { change, gain, threshold, clears: gain >= threshold };
}

/** The json block of a rewrite's answer, checked (InvalidTuneParamsError naming every problem); empty when there is none. */
export function parseStepJson(answer: string): z.infer<typeof StepAnswerJson> {
  const raw = extractAnswerJson(answer);
  if (raw === undefined) return { tunableParameters: {}, gridDivisors: {} };
  const parsed = StepAnswerJson.safeParse(raw);
  if (!parsed.success) {
    const problems = formatZodIssues(parsed.error.issues).map((p) => `in the json block, ${p}`);
    throw new InvalidTuneParamsError(`invalid json block: ${problems.join('; ')}`, problems);
  }
  return parsed.data;
}

/** Why a candidate failed, from the last attempt's error. */
export function rejectionFor(error: RetriesExhaustedError): RejectionReason {
  const last = error.attempts.at(-1)!;
  const attempts = error.attempts.length;
  if (last instanceof FailedTestsError) return { kind: 'wrong_result', summary: last.message };
  if (last instanceof CompileError) return { kind: 'compile_error', message: last.message, log: last.log, attempts };
  if (last instanceof SanitizerHazardError) return { kind: 'hazard', findings: findingLines(last.verdict.findings), attempts };
  return { kind: 'failed', error: last.name, message: last.message, attempts };
}
