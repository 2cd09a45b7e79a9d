/**
 * The two ways nodes ask the model: for text (code answers) and for an object (invokeStructured, in the session's
 * structured-output mode). Both honour the run's AbortSignal, turn every failed request into an LlmError (whose
 * `transient` flag LangGraph's node retry policy reads), and report each answer's token usage as an event.
 */
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { AIMessage, BaseMessage } from '@langchain/core/messages';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import type { z } from 'zod';
import { engineContext } from '../context';
import { emit } from '../progress/events';
import { failedCall, isAbortError } from './errors';
import { endpointOf, secretsOf } from './providers';
import { ExchangeRecorder } from './recording';
import { invokeStructured } from './structured';
import { describeLlmError, withTransportRetry } from './transport';

/** Reports an answer's token usage (and its cost, where the session knows the prices); returns nothing. */
function reportUsage(llm: BaseChatModel, message: BaseMessage, config: LangGraphRunnableConfig, purpose: string, count: (input: number, output: number) => number | null): void {
  const ai = message as AIMessage;
  const usage = ai.usage_metadata;
  const model = endpointOf(llm)?.model ?? (ai.response_metadata?.model_name as string | undefined) ?? (ai.response_metadata?.model as string | undefined) ?? 'unknown';
  const [promptTokens, completionTokens] = [usage?.input_tokens ?? 0, usage?.output_tokens ?? 0];
  const costUsd = count(promptTokens, completionTokens);
  emit(config, { type: 'llm.usage', purpose, model, promptTokens, completionTokens, ...(costUsd !== null && { costUsd }) });
}

/** Records each request of one logical call as an `llm.exchange` event of the session. */
function recorder(llm: BaseChatModel, config: LangGraphRunnableConfig, purpose: string): ExchangeRecorder {
  return new ExchangeRecorder(purpose, (exchange) => emit(config, { type: 'llm.exchange', exchange }), secretsOf(llm));
}

/** The model's answer as text. A failure is marked as this call's (failedCall). */
export async function askText(llm: BaseChatModel, messages: BaseMessage[], config: LangGraphRunnableConfig, purpose: string): Promise<string> {
  const signal = config.signal;
  const endpoint = endpointOf(llm);
  return engineContext(config).modelCalls.run(async (count) => {
    // One attempt: retries of transient failures belong to the node's retry policy. This still races the signal
    // (ChatOllama notices an abort only between chunks) and words the failure.
    const answer = await withTransportRetry(
      () =>
        llm.invoke(messages, { signal, callbacks: [recorder(llm, config, purpose)] }).catch((error: unknown) => {
          throw failedCall(isAbortError(error, signal) ? error : describeLlmError(error, endpoint), purpose);
        }),
      { maxAttempts: 1, signal, endpoint },
    );
    reportUsage(llm, answer, config, purpose, count);
    return answer.text;
  });
}

/** An object matching `schema`; a StructuredOutputError names every problem for the retry's correction. A failure is marked as this call's. */
export async function askStructured<S extends z.ZodType>(
  llm: BaseChatModel,
  messages: BaseMessage[],
  schema: S,
  config: LangGraphRunnableConfig,
  purpose: string,
): Promise<z.output<S>> {
  const ctx = engineContext(config);
  return ctx.modelCalls.run(async (count) => {
    try {
      return await invokeStructured(llm, messages, schema, {
        type: ctx.settings.structuredOutputType,
        name: purpose.replace(/[^A-Za-z0-9_]/g, '_'),
        ...(config.signal && { signal: config.signal }),
        onResponse: (message) => reportUsage(llm, message, config, purpose, count),
        callbacks: [recorder(llm, config, purpose)],
      });
    } catch (error) {
      throw failedCall(error, purpose);
    }
  });
}
