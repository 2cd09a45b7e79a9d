// The problem size, one expression per grid dimension over the kernel's scalar arguments; every expression is parsed
// and its names checked, and the exact problem goes back to the model.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { compileExpression } from '../../../tuner/expressions';
import type { KernelSignature } from '../../../tuner/kernel-source';
import { InvalidAnalysisError } from '../../errors';
import { conversation, withAnswer, withRetries, type Attempt } from '../../feedback';
import { askStructured } from '../../llm-call';
import { SYSTEM_PROMPT } from '../../prompts';
import type { RetryPolicy } from '../../retry';
import { originalKernel } from '../../run-tests';
import { problemSizePrompt } from '../prompts';
import type { AnalysisStateValue } from '../state';

const ProblemSizeAnswer = z.object({
  problemSize: z.array(z.string()).describe('one expression per grid dimension, x first, over the scalar arguments'),
});

/** The problems of a problem size answer, one line each (empty when it is usable). */
function problemSizeProblems(problemSize: readonly string[], kernel: KernelSignature): string[] {
  const scalars = kernel.parameters.filter((p) => !p.isPointer).map((p) => p.name);
  const problems: string[] = [];
  if (problemSize.length < 1 || problemSize.length > 3) problems.push(`give 1 to 3 entries (one per grid dimension), not ${problemSize.length}`);
  problemSize.forEach((expression, i) => {
    try {
      compileExpression(expression, { knownNames: scalars });
    } catch (e) {
      problems.push(`entry ${i + 1} "${expression}": ${(e as Error).message.split('\n', 1)[0]} (allowed names: ${scalars.join(', ') || 'none, use numbers'})`);
    }
  });
  return problems;
}

export function problemSizeNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AnalysisStateValue, config: LangGraphRunnableConfig) => {
    const kernel = (await originalKernel(state)).signature;
    const problemSize = await withRetries(policy, config, 'problem size', async ({ feedback }) => {
      const prompt = problemSizePrompt(state.originalCode, kernel, state.description);
      const answer = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), ProblemSizeAnswer, config, 'problem size');
      const sizes = answer.problemSize.map((s) => s.trim());
      const problems = problemSizeProblems(sizes, kernel);
      if (problems.length > 0) throw withAnswer(new InvalidAnalysisError(`invalid problem size: ${problems.join('; ')}`, problems), JSON.stringify(answer));
      return sizes;
    });
    return { problemSize };
  };
}
