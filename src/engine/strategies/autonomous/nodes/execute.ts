// Carrying out a step: `next` picks it, one Send task per candidate asks for a rewrite and tests it (GPU work one at a
// time), `decide` keeps the fastest correct candidate if it beats the best kernel by the threshold.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Annotation, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { describeRejection } from '../../../progress/events';
import type { TuningStateValue } from '../../../state';
import type { BaseTuningStrategy } from '../../base';
import { stepRequestTail } from '../../prompts';
import { applyStepPrompt } from '../prompts';
import { type AutonomousStateUpdate, type AutonomousStateValue, type PlanStep } from '../state';
import { kernelView } from '../../../candidate/kernel-view';
import { measuredOf } from '../../../prompts';

export function nextStepNode(strategy: BaseTuningStrategy) {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const step = state.plan.find((s) => s.status === 'pending' && s.validated && s.approved);
    if (!step) return { currentStepId: null };
    return {
      ...strategy.startStep(state, step, config),
      currentStepId: step.id,
      plan: state.plan.map((s) => (s === step ? { ...s, status: 'running' } : s)),
      outcomes: { __overwrite__: [] },
    };
  };
}

/** What a candidate task receives through Send: the session state as it was when the step started. */
export const CandidateInputState = Annotation.Root({
  session: Annotation<TuningStateValue>,
  step: Annotation<PlanStep>,
  candidate: Annotation<number>,
  candidates: Annotation<number>,
});
export type CandidateInput = typeof CandidateInputState.State;

export function candidateNode(strategy: BaseTuningStrategy, llm: BaseChatModel) {
  return async (input: CandidateInput, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const { session, step, candidate, candidates } = input;
    const tail = stepRequestTail({ code: await kernelView(session, session.code), tuneParams: session.tuneParams, measured: measuredOf(session, config), namesParameters: true, candidate, candidates });
    const prompt = `${applyStepPrompt(step, session.analysis)}\n${tail}`;
    const outcome = await strategy.tryCandidate(llm, { stepId: step.id, candidate, prompt }, session, config);
    return { outcomes: [outcome] };
  };
}

export function decideNode(strategy: BaseTuningStrategy) {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const step = state.plan.find((s) => s.id === state.currentStepId);
    if (!step) throw new Error(`internal: step ${state.currentStepId} is not in the plan`);
    const outcomes = [...state.outcomes].sort((a, b) => a.candidate - b.candidate);
    const decision = strategy.decide(state, step, outcomes, config);
    const failed = outcomes.find((o) => !o.ok);
    const ms = (v: number | null | undefined) => `${Number((v ?? 0).toPrecision(4))} ms`;
    const outcome = decision.accepted
      ? `accepted: ${ms(state.bestTimeMs)} -> ${ms(decision.update.bestTimeMs)}`
      : decision.correct
        ? 'rejected: correct, but not faster by the threshold'
        : `rejected: ${failed && !failed.ok ? describeRejection(failed.reason) : 'no candidate'}`;
    const plan = state.plan.map((s) => (s.id === step.id ? { ...s, status: decision.accepted ? ('accepted' as const) : ('rejected' as const), outcome } : s));
    return { ...decision.update, plan, currentStepId: null };
  };
}
