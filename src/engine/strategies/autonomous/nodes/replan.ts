// Replanning: with every step done, the model sees the best kernel and what each step came to, and either adds steps
// or says it is done.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { emit } from '../../../progress/events';
import { conversation, withRetries, type Attempt } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { measuredOf, SYSTEM_PROMPT } from '../../../prompts';
import type { RetryPolicy } from '../../../llm/retry';
import { replanPrompt } from '../prompts';
import { newSteps, viewOf, type AutonomousStateUpdate, type AutonomousStateValue } from '../state';
import { checkSteps, StepList } from './plan';
import { kernelView } from '../../../candidate/kernel-view';

const ReplanAnswer = z.object({ done: z.boolean().describe('nothing promising is left to try'), steps: StepList });

export function replanNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>, maxRounds: number) {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const round = state.replanRounds + 1;
    emit(config, { type: 'replanning', round, maxRounds });
    const answer = await withRetries(policy, config, 'replan', async ({ feedback }) => {
      const prompt = replanPrompt(await kernelView(state, state.code), state.analysis, state.tuneParams, state.plan, measuredOf(state, config));
      const a = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), ReplanAnswer, config, 'replan');
      if (!a.done) checkSteps(a.steps, a);
      return a;
    });
    if (answer.done || answer.steps.length === 0) return { replanRounds: round };
    const added = newSteps(answer.steps, state.stepCounter + 1);
    const plan = [...state.plan, ...added];
    emit(config, { type: 'plan', reason: 'replanned', steps: plan.map(viewOf) });
    return { replanRounds: round, plan, stepCounter: state.stepCounter + added.length };
  };
}
