// What the kernel computes, in free text: the context for every later question about it.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { InvalidAnalysisError } from '../../errors';
import { conversation, withAnswer, withRetries, type Attempt } from '../../candidate/feedback';
import { askText } from '../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../prompts';
import type { RetryPolicy } from '../../llm/retry';
import { describePrompt } from '../prompts';
import type { AnalysisStateValue } from '../state';
import { kernelView } from '../../candidate/kernel-view';

export function describeNode(llm: BaseChatModel, policy: RetryPolicy<Attempt>) {
  return async (state: AnalysisStateValue, config: LangGraphRunnableConfig) => {
    const description = await withRetries(policy, config, 'describe kernel', async ({ feedback }) => {
      const answer = await askText(llm, conversation(SYSTEM_PROMPT, describePrompt(await kernelView(state, state.originalCode), state.kernelName), feedback), config, 'describe kernel');
      const text = answer.trim();
      if (text === '') throw withAnswer(new InvalidAnalysisError('the description is empty', ['the answer is empty: describe what the kernel computes']), answer);
      return text;
    });
    return { description };
  };
}
