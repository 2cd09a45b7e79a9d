// Validation: steps that need more than device code (host code, compiler flags, external libraries) are skipped. One
// request judges every step not yet judged.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { InvalidAnswerError } from '../../../errors';
import { emit } from '../../../progress/events';
import { conversation, withAnswer, withRetries, type Attempt } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../../prompts';
import type { RetryPolicy } from '../../../llm/retry';
import { validatePrompt } from '../prompts';
import { viewOf, type AutonomousStateUpdate, type AutonomousStateValue, type PlanStep } from '../state';
import { kernelView } from '../../../candidate/kernel-view';

const ValidateAnswer = z.object({
  steps: z.array(z.object({ id: z.string(), deviceOnly: z.boolean().describe('the step needs device code changes only'), reason: z.string() })),
});

export function validateNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const unjudged = state.plan.filter((s) => s.status === 'pending' && !s.validated);
    if (unjudged.length === 0) return {};
    const verdicts = await withRetries(policy, config, 'validate steps', async ({ feedback }) => {
      const answer = await askStructured(llm, conversation(SYSTEM_PROMPT, validatePrompt(await kernelView(state, state.code), unjudged), feedback), ValidateAnswer, config, 'validate steps');
      const byId = new Map(answer.steps.map((v) => [v.id.trim(), v]));
      const problems = [
        ...unjudged.filter((s) => !byId.has(s.id)).map((s) => `no verdict for step id "${s.id}"`),
        ...[...byId.keys()].filter((id) => !unjudged.some((s) => s.id === id)).map((id) => `"${id}" is not the id of a step to judge`),
      ];
      if (problems.length > 0) throw withAnswer(new InvalidAnswerError(problems.join('; '), problems), JSON.stringify(answer));
      return byId;
    });
    const plan = state.plan.map((s): PlanStep => {
      const verdict = verdicts.get(s.id);
      if (!verdict || !unjudged.includes(s)) return s;
      if (verdict.deviceOnly) return { ...s, validated: true };
      emit(config, { type: 'step.skipped', stepId: s.id, reason: `needs more than device code: ${verdict.reason}` });
      return { ...s, validated: true, status: 'skipped', outcome: `skipped, needs more than device code: ${verdict.reason}` };
    });
    emit(config, { type: 'plan', reason: 'validated', steps: plan.map(viewOf) });
    return { plan };
  };
}
