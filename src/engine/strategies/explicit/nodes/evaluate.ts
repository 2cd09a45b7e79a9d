// "Does this step make sense for this kernel?", unless the step skips the question.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { emit } from '../../../progress/events';
import { conversation, withRetries, type Attempt } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { measuredOf, SYSTEM_PROMPT } from '../../../prompts';
import type { RetryPolicy } from '../../../llm/retry';
import { evaluatePrompt } from '../prompts';
import type { TuningStep } from '../steps';
import type { ExplicitStateUpdate, ExplicitStateValue } from '../state';
import { instructionOf } from './apply';
import { kernelView } from '../../../candidate/kernel-view';

const EvaluationAnswer = z.object({ apply: z.boolean().describe('the step makes sense for this kernel'), reason: z.string() });

export function evaluateNode(steps: readonly TuningStep[], llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: ExplicitStateValue, config: LangGraphRunnableConfig): Promise<ExplicitStateUpdate> => {
    const step = steps.find((s) => s.id === state.currentStepId)!;
    if (step.skipEvaluation) return {};
    const purpose = `evaluate step ${step.id}`;
    const view = await kernelView(state, state.code);
    const answer = await withRetries(policy, config, purpose, ({ feedback }) =>
      askStructured(llm, conversation(SYSTEM_PROMPT, evaluatePrompt(view, instructionOf(step, state), state.analysis, measuredOf(state, config)), feedback), EvaluationAnswer, config, purpose),
    );
    if (answer.apply) return {};
    emit(config, { type: 'step.skipped', stepId: step.id, reason: `does not apply to this kernel: ${answer.reason}` });
    return { steps: state.steps.map((s) => (s.id === step.id ? { ...s, status: 'skipped' } : s)), currentStepId: null };
  };
}
