// Applying a step: the rewrite with the step's parameters (tested, with corrections fed back), then the decision.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import type { BaseTuningStrategy } from '../../base';
import { stepRequestTail } from '../../prompts';
import type { TuningStep } from '../steps';
import type { ExplicitStateUpdate, ExplicitStateValue } from '../state';
import { kernelView } from '../../../candidate/kernel-view';
import { measuredOf } from '../../../prompts';

export function instructionOf(step: TuningStep, state: ExplicitStateValue): string {
  return step.render({
    kernel_name: state.kernelName,
    description: state.analysis?.description ?? '',
    problem_size: `[${state.analysis?.problemSize.join(', ') ?? ''}]`,
  });
}

export function applyNode(strategy: BaseTuningStrategy, steps: readonly TuningStep[], llm: BaseChatModel) {
  return async (state: ExplicitStateValue, config: LangGraphRunnableConfig): Promise<ExplicitStateUpdate> => {
    const step = steps.find((s) => s.id === state.currentStepId)!;
    const session = { ...state, gridDivisors: { ...state.gridDivisors, ...step.gridDivisors } };
    const tuneParams = { ...state.tuneParams, ...step.tuneParams };
    const prompt = `${instructionOf(step, state)}\n\n${stepRequestTail({ code: await kernelView(state, state.code), tuneParams, measured: measuredOf(state, config), namesParameters: false, candidate: 0, candidates: 1 })}`;
    const outcome = await strategy.tryCandidate(llm, { stepId: step.id, candidate: 0, prompt, stepTuneParams: step.tuneParams }, session, config);
    const decision = strategy.decide(state, step, [outcome], config);
    return {
      ...decision.update,
      steps: state.steps.map((s) => (s.id === step.id ? { ...s, status: decision.accepted ? 'accepted' : 'rejected', completed: decision.correct } : s)),
      currentStepId: null,
    };
  };
}
