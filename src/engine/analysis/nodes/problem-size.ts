// The problem size, one expression per grid dimension over the kernel's scalar arguments; every expression is parsed
// and its names checked, and the exact problem goes back to the model.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { compileExpression } from '../../../tuner/space/expressions';
import type { KernelSignature } from '../../../tuner/source/kernel-signature';
import { InvalidAnalysisError } from '../../errors';
import { conversation, withAnswer, withRetries, type Attempt } from '../../candidate/feedback';
import { askStructured } from '../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../prompts';
import type { RetryPolicy } from '../../llm/retry';
import { originalKernel } from '../../candidate/run-tests';
import { problemSizePrompt } from '../prompts';
import type { AnalysisStateValue } from '../state';
import { kernelView } from '../../candidate/kernel-view';

const ProblemSizeAnswer = z.object({
  problemSize: z.array(z.string()).describe('one expression per grid dimension, x first, over the scalar arguments'),
  sharedMemBytes: z.string().optional().describe('bytes of dynamic shared memory per block, for a kernel with extern __shared__'),
  flops: z.string().optional().describe('floating-point operations of one launch, an expression over the scalar arguments'),
  bytes: z.string().optional().describe('bytes one launch reads and writes in device memory, an expression over the scalar arguments'),
});

const scalarNames = (kernel: KernelSignature) => kernel.parameters.filter((p) => !p.isPointer).map((p) => p.name);

/** The problem of an expression of the answer (`label` names it for the model): none when it is one over `names`. */
function expressionProblems(label: string, expression: string, names: readonly string[]): string[] {
  try {
    compileExpression(expression, { knownNames: names });
    return [];
  } catch (e) {
    return [`${label} "${expression}": ${(e as Error).message.split('\n', 1)[0]} (allowed names: ${names.join(', ') || 'none, use numbers'})`];
  }
}

/** The problems of the optional work expressions (each over the scalar arguments). */
function workProblems(work: { flops?: string | undefined; bytes?: string | undefined }, kernel: KernelSignature): string[] {
  const scalars = scalarNames(kernel);
  return (['flops', 'bytes'] as const).flatMap((key) => {
    const expression = work[key]?.trim();
    return expression ? expressionProblems(key, expression, scalars) : [];
  });
}

const BLOCK_NAMES = ['block_size_x', 'block_size_y', 'block_size_z'];

/** The problems of a problem size answer, one line each (empty when it is usable). */
function problemSizeProblems(problemSize: readonly string[], kernel: KernelSignature): string[] {
  const scalars = scalarNames(kernel);
  const count = problemSize.length < 1 || problemSize.length > 3 ? [`give 1 to 3 entries (one per grid dimension), not ${problemSize.length}`] : [];
  return [...count, ...problemSize.flatMap((expression, i) => expressionProblems(`entry ${i + 1}`, expression, scalars))];
}

/** The problems of a dynamic shared memory answer (an expression over the block size and the scalar arguments). */
function sharedMemProblems(expression: string | undefined, kernel: KernelSignature): string[] {
  if (expression === undefined || expression.trim() === '') return ['the kernel declares extern __shared__ memory: give sharedMemBytes, the bytes its launch needs per block'];
  return expressionProblems('sharedMemBytes', expression, [...BLOCK_NAMES, ...scalarNames(kernel)]);
}

export function problemSizeNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AnalysisStateValue, config: LangGraphRunnableConfig) => {
    const kernel = (await originalKernel(state)).signature;
    const view = await kernelView(state, state.originalCode);
    // A kernel with `extern __shared__` memory cannot be launched without knowing how much of it a block needs.
    const dynamicSharedMemory = /\bextern\s+__shared__\b/.test(view.code);
    const answer = await withRetries(policy, config, 'problem size', async ({ feedback }) => {
      const prompt = problemSizePrompt(view, kernel, state.description, dynamicSharedMemory);
      const a = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), ProblemSizeAnswer, config, 'problem size');
      const sizes = a.problemSize.map((s) => s.trim());
      const problems = [...problemSizeProblems(sizes, kernel), ...(dynamicSharedMemory ? sharedMemProblems(a.sharedMemBytes, kernel) : []), ...workProblems(a, kernel)];
      if (problems.length > 0) throw withAnswer(new InvalidAnalysisError(`invalid problem size: ${problems.join('; ')}`, problems), JSON.stringify(a));
      const work = Object.fromEntries((['flops', 'bytes'] as const).flatMap((k) => (a[k]?.trim() ? [[k, a[k]!.trim()]] : [])));
      return { problemSize: sizes, sharedMemBytes: dynamicSharedMemory ? a.sharedMemBytes!.trim() : null, work };
    });
    return { problemSize: answer.problemSize, launchSharedMemBytes: answer.sharedMemBytes, launchWork: Object.keys(answer.work).length > 0 ? answer.work : null };
  };
}
