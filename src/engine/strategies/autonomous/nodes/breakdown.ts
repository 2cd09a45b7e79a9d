// Breakdown: one Send task per step, side by side; each asks whether its step should be split into smaller ones. The
// merge node puts the parts in place of their step (they are validated, and may be broken down again up to the limit).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Annotation, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { emit } from '../../../progress/events';
import { conversation, withRetries, type Attempt } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../../prompts';
import type { RetryPolicy } from '../../../llm/retry';
import { breakdownPrompt } from '../prompts';
import { viewOf, type AutonomousStateUpdate, type AutonomousStateValue, type PlanStep } from '../state';
import { checkSteps, StepList } from './plan';
import { kernelView, type FileState } from '../../../candidate/kernel-view';

const BreakdownAnswer = z.object({ breakDown: z.boolean().describe('whether the step should be split'), steps: StepList });

/** What a breakdown task receives through Send. */
export const BreakdownInputState = Annotation.Root({ step: Annotation<PlanStep>, code: Annotation<string>, file: Annotation<FileState> });
export type BreakdownInput = typeof BreakdownInputState.State;

export function breakdownNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (input: BreakdownInput, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const purpose = `break down step ${input.step.id}`;
    const answer = await withRetries(policy, config, purpose, async ({ feedback }) => {
      const a = await askStructured(llm, conversation(SYSTEM_PROMPT, breakdownPrompt(await kernelView(input.file, input.code), input.step), feedback), BreakdownAnswer, config, purpose);
      if (a.breakDown) checkSteps(a.steps, a);
      return a;
    });
    // A "breakdown" into one step is the step itself.
    const parts = answer.breakDown && answer.steps.length > 1 ? answer.steps : null;
    return { breakdowns: [{ stepId: input.step.id, steps: parts }] };
  };
}

export function mergeBreakdownsNode() {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const results = new Map(state.breakdowns.map((b) => [b.stepId, b.steps]));
    let changed = false;
    const plan = state.plan.flatMap((step): PlanStep[] => {
      if (!results.has(step.id)) return [step];
      const parts = results.get(step.id);
      if (!parts) return [{ ...step, brokenDown: true }];
      changed = true;
      return parts.map((p, i) => ({
        id: `${step.id}.${i + 1}`,
        title: p.title.trim(),
        details: p.details.trim(),
        depth: step.depth + 1,
        status: 'pending',
        validated: false,
        brokenDown: false,
        approved: false,
      }));
    });
    if (changed) emit(config, { type: 'plan', reason: 'broken_down', steps: plan.map(viewOf) });
    return { plan, breakdowns: { __overwrite__: [] } };
  };
}
