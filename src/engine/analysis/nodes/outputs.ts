// The output arguments: each must be a pointer the kernel may write. With them the analysis is complete, and the
// baseline launch parameters follow from the number of problem dimensions.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import type { KernelSignature } from '../../../tuner/source/kernel-signature';
import type { Config } from '../../../tuner/types';
import { InvalidAnalysisError } from '../../errors';
import { emit } from '../../progress/events';
import { conversation, withAnswer, withRetries, type Attempt } from '../../candidate/feedback';
import { askStructured } from '../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../prompts';
import type { RetryPolicy } from '../../llm/retry';
import { originalKernel } from '../../candidate/run-tests';
import type { TuningStateUpdate } from '../../state';
import { outputsPrompt } from '../prompts';
import type { AnalysisStateValue } from '../state';
import { kernelView } from '../../candidate/kernel-view';

const OutputsAnswer = z.object({ outputs: z.array(z.string()).describe('names of the arguments the kernel writes') });

function outputsProblems(outputs: readonly string[], kernel: KernelSignature): string[] {
  const problems: string[] = [];
  if (outputs.length === 0) problems.push('name at least one argument the kernel writes');
  const seen = new Set<string>();
  for (const name of outputs) {
    const p = kernel.parameters.find((q) => q.name === name);
    if (seen.has(name)) problems.push(`'${name}' is listed twice`);
    seen.add(name);
    if (!p) problems.push(`'${name}' is not a parameter of ${kernel.name} (parameters: ${kernel.parameters.map((q) => q.name).join(', ')})`);
    else if (!p.isPointer) problems.push(`'${name}' is a scalar (${p.type}) passed by value: the kernel cannot write it back`);
    else if (p.isConst) problems.push(`'${name}' is a pointer to const (${p.type}): the kernel cannot write it`);
  }
  return problems;
}

/** Kernel Tuner's default block is 256 x 1 x 1; a 2D or 3D problem gets a block of the same size in its dimensions. */
function baselineParamsFor(dimensions: number): Config {
  if (dimensions >= 3) return { block_size_x: 8, block_size_y: 8, block_size_z: 4 };
  if (dimensions === 2) return { block_size_x: 16, block_size_y: 16 };
  return { block_size_x: 256 };
}

export function outputsNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AnalysisStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
    const kernel = (await originalKernel(state)).signature;
    if (!kernel.parameters.some((p) => p.isPointer && !p.isConst)) {
      throw new InvalidAnalysisError(`${kernel.name} has no non-const pointer argument, so it has no output that could be checked`, []);
    }
    const outputs = await withRetries(policy, config, 'outputs', async ({ feedback }) => {
      const prompt = outputsPrompt(await kernelView(state, state.originalCode), kernel, state.description);
      const answer = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), OutputsAnswer, config, 'outputs');
      const names = answer.outputs.map((s) => s.trim());
      const problems = outputsProblems(names, kernel);
      if (problems.length > 0) throw withAnswer(new InvalidAnalysisError(`invalid outputs: ${problems.join('; ')}`, problems), JSON.stringify(answer));
      return names;
    });
    const analysis = { description: state.description, problemSize: state.problemSize, outputs, ...(state.launchSharedMemBytes && { sharedMemBytes: state.launchSharedMemBytes }), ...state.launchWork };
    emit(config, { type: 'analysis.done', ...analysis });
    const baseline = baselineParamsFor(state.problemSize.length);
    return {
      analysis,
      sharedMemBytes: state.launchSharedMemBytes ?? null,
      baselineParams: baseline,
      bestParams: baseline,
      tuneParams: Object.fromEntries(Object.entries(baseline).map(([k, v]) => [k, [v]])),
    };
  };
}
