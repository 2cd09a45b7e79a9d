// The initial plan: ordered optimization steps, each to be validated, maybe broken down, then applied.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { InvalidAnswerError } from '../../../errors';
import { emit } from '../../../progress/events';
import { conversation, withAnswer, withRetries, type Attempt } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { measuredOf, SYSTEM_PROMPT } from '../../../prompts';
import type { RetryPolicy } from '../../../llm/retry';
import { planPrompt } from '../prompts';
import { newSteps, viewOf, type AutonomousStateUpdate, type AutonomousStateValue } from '../state';
import { kernelView } from '../../../candidate/kernel-view';

export const StepList = z.array(z.object({ title: z.string().describe('short name of the step'), details: z.string().describe('what to change and what to make tunable') }));
const PlanAnswer = z.object({ steps: StepList });

/** Steps without a title are problems for the model to fix. */
export function checkSteps(steps: readonly { title: string }[], answer: unknown): void {
  const problems = steps.flatMap((s, i) => (s.title.trim() === '' ? [`steps[${i}] has an empty title`] : []));
  if (problems.length > 0) throw withAnswer(new InvalidAnswerError(problems.join('; '), problems), JSON.stringify(answer));
}

export function planNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const answer = await withRetries(policy, config, 'plan', async ({ feedback }) => {
      const a = await askStructured(llm, conversation(SYSTEM_PROMPT, planPrompt(await kernelView(state, state.code), state.analysis, state.tuneParams, measuredOf(state, config)), feedback), PlanAnswer, config, 'plan');
      checkSteps(a.steps, a);
      return a;
    });
    const plan = newSteps(answer.steps, 1);
    emit(config, { type: 'plan', reason: 'initial', steps: plan.map(viewOf) });
    return { plan, stepCounter: plan.length };
  };
}
