/**
 * Recording every request a session makes to its model, so that the session can be replayed without one (replay.ts).
 *
 * An `ExchangeRecorder` is a LangChain callback handler given to one logical request (askText / askStructured, see
 * llm-call.ts): LangChain reports to it each chat-model run that request makes, with the messages as sent, the call's
 * invocation parameters (model, temperature, response_format, tools, format ...), the answer and the timing. Each run
 * becomes one `llm.exchange` event. Secrets never reach the record: the client's API key is not part of the invocation
 * parameters, and `redactSecrets` removes credential-like fields, URL credentials and the client's own key wherever
 * it appears anyway.
 */
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { AIMessage, BaseMessage } from '@langchain/core/messages';
import type { ChatGeneration, LLMResult } from '@langchain/core/outputs';
import type { Serialized } from '@langchain/core/load/serializable';
import { redactSecrets, redactText, responseOf, toExchangeMessage, type ExchangeMessage, type ExchangeResponse, type LlmExchange } from './exchange';

/** lc_name of ThinkingStrippedChatModel (thinking.ts imports this module, so the name is spelled out). */
const THINKING_WRAPPER = 'ThinkingStrippedChatModel';

interface Pending {
  /** The model the request named; else the answer says (a replay names the recorded one there). */
  model: string | undefined;
  params: Record<string, unknown>;
  messages: ExchangeMessage[];
  startedAt: string;
  started: number;
}

function modelOf(...sources: (Record<string, unknown> | undefined)[]): string | undefined {
  for (const source of sources) for (const key of ['model', 'model_name', 'modelName']) if (typeof source?.[key] === 'string') return source[key] as string;
  return undefined;
}

/** Reports each chat-model run of one logical request as an exchange (see the module comment). */
export class ExchangeRecorder extends BaseCallbackHandler {
  name = 'llm_exchange_recorder';
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly purpose: string,
    private readonly onExchange: (exchange: LlmExchange) => void,
    /** Values to scrub from the record wherever they appear (the client's API key). */
    private readonly knownSecrets: readonly string[] = [],
  ) {
    // Awaited, so that an exchange is reported before the request's caller goes on (the record keeps the order).
    super({ _awaitHandler: true });
  }

  override handleChatModelStart(llm: Serialized, messages: BaseMessage[][], runId: string, _parentRunId?: string, extraParams?: Record<string, unknown>): void {
    // A wrapper that strips thinking forwards this recorder to the model it wraps: the raw answer is recorded there.
    if (llm.id.at(-1) === THINKING_WRAPPER) return;
    const params = (extraParams?.invocation_params ?? {}) as Record<string, unknown>;
    this.pending.set(runId, {
      model: modelOf(params, (llm as { kwargs?: Record<string, unknown> }).kwargs),
      params: redactSecrets(params, this.knownSecrets),
      messages: redactSecrets((messages[0] ?? []).map(toExchangeMessage), this.knownSecrets),
      startedAt: new Date().toISOString(),
      started: performance.now(),
    });
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const pending = this.take(runId);
    if (!pending) return;
    const generation = output.generations[0]?.[0] as ChatGeneration | undefined;
    const message = generation?.message as AIMessage | undefined;
    const response: ExchangeResponse = message ? responseOf(message) : { content: generation?.text ?? '' };
    pending.model ??= modelOf(message?.response_metadata);
    this.report(pending, { response: redactSecrets(response, this.knownSecrets) });
  }

  override handleLLMError(error: unknown, runId: string): void {
    const pending = this.take(runId);
    if (!pending) return;
    const e = error as { name?: unknown; message?: unknown; status?: unknown; status_code?: unknown };
    const status = typeof e.status === 'number' ? e.status : typeof e.status_code === 'number' ? e.status_code : undefined;
    const name = typeof e.name === 'string' ? e.name : 'Error';
    const message = redactText(typeof e.message === 'string' ? e.message : String(error), this.knownSecrets);
    this.report(pending, { error: { name, message, ...(status !== undefined && { status }) } });
  }

  private take(runId: string): Pending | undefined {
    const pending = this.pending.get(runId);
    this.pending.delete(runId);
    return pending;
  }

  private report(pending: Pending, outcome: Pick<LlmExchange, 'response'> | Pick<LlmExchange, 'error'>): void {
    this.onExchange({
      purpose: this.purpose,
      model: pending.model ?? 'unknown',
      params: pending.params,
      messages: pending.messages,
      ...outcome,
      startedAt: pending.startedAt,
      durationMs: Math.round((performance.now() - pending.started) * 1000) / 1000,
    });
  }
}
