/**
 * A chat model that answers from a recorded session (the `llm.exchange` events, see recording.ts) instead of a model:
 * the real graph runs unchanged, and every request it makes must be one the recording holds. A request that is not
 * (the kernel, a measurement or the code changed what the graph asks) stops the run with a ReplayDivergenceError that
 * says which call it was and what differs.
 *
 * Requests are matched by their messages, in recorded order first: the first unused exchange with the same messages
 * answers. The parts of a message that state measurements (the GPU, the kernel's profile: ../prompts.ts) are compared
 * by their headings only, so that a session recorded on one GPU (or on the fake one of the tests) replays on another. So candidates asked side by side (Send) may arrive in any order, and a request that the recorded session
 * asked twice (a transient failure, then its retry) gets the failure first and the answer next, as it did.
 */
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from '@langchain/core/language_models/base';
import { BaseChatModel, type BaseChatModelCallOptions, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { RunnableLambda, type Runnable, type RunnableConfig } from '@langchain/core/runnables';
import type { InteropZodType } from '@langchain/core/utils/types';
import { LlmConnectionError, LlmError } from './errors';
import { extractJson } from './json';
import { redactSecrets, toExchangeMessage, type ExchangeMessage, type LlmExchange } from './exchange';
import { withoutMeasurements } from '../prompts';

/** The run asked the model something the recording does not hold: the replay stops here. Never transient. */
export class ReplayDivergenceError extends LlmError {
  override name = 'ReplayDivergenceError';
  constructor(
    message: string,
    /** 1-based number of the model call of this run that diverged. */
    readonly call: number,
  ) {
    super(message);
  }
}

const clip = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const quote = (text: string) => JSON.stringify(clip(text));
/** A message's text with its measured parts reduced to their headings: what a replay compares. */
const asText = (content: ExchangeMessage['content']) => (typeof content === 'string' ? withoutMeasurements(content) : JSON.stringify(content));

function sameMessage(a: ExchangeMessage, b: ExchangeMessage): boolean {
  return a.role === b.role && asText(a.content) === asText(b.content) && JSON.stringify(a.toolCalls ?? []) === JSON.stringify(b.toolCalls ?? []) && a.toolCallId === b.toolCallId;
}

function sameMessages(a: readonly ExchangeMessage[], b: readonly ExchangeMessage[]): boolean {
  return a.length === b.length && a.every((m, i) => sameMessage(m, b[i]!));
}

/** Where two requests first differ, in words: the message, and the first differing line of its text. */
function describeRequestDifference(recorded: readonly ExchangeMessage[], actual: readonly ExchangeMessage[]): string {
  const n = Math.min(recorded.length, actual.length);
  for (let i = 0; i < n; i++) {
    const r = recorded[i]!;
    const a = actual[i]!;
    if (sameMessage(r, a)) continue;
    if (r.role !== a.role) return `message ${i + 1} is from the ${a.role}, the recording's from the ${r.role}`;
    const rl = asText(r.content).split('\n');
    const al = asText(a.content).split('\n');
    const line = rl.findIndex((l, k) => l !== al[k]);
    const at = line === -1 ? rl.length : line;
    if (at >= al.length && at >= rl.length) return `message ${i + 1} (${r.role}) differs in its tool calls`;
    return `message ${i + 1} (${r.role}) differs at line ${at + 1}: the recording has ${at < rl.length ? quote(rl[at]!) : 'no such line'}, this run ${at < al.length ? quote(al[at]!) : 'has no such line'}`;
  }
  return recorded.length > actual.length
    ? `this run sends ${actual.length} message(s), the recording ${recorded.length} (the next would be ${recorded[n]!.role}: ${quote(asText(recorded[n]!.content))})`
    : `this run sends ${actual.length} message(s), the recording ${recorded.length} (the extra one is ${actual[n]!.role}: ${quote(asText(actual[n]!.content))})`;
}

/** The error the recorded request failed with, thrown again so that the graph's retries take the same path. */
function recordedFailure(error: NonNullable<LlmExchange['error']>): Error {
  if (error.status !== undefined) return Object.assign(new Error(error.message), { name: error.name, status: error.status });
  return new LlmConnectionError(`the recorded request failed: ${error.message}`);
}

function messageOf(exchange: LlmExchange): AIMessage {
  const r = exchange.response!;
  return new AIMessage({
    content: r.content as string,
    ...(r.toolCalls && { tool_calls: r.toolCalls.map((c) => ({ name: c.name, args: c.args as Record<string, unknown>, ...(c.id !== undefined && { id: c.id }), type: 'tool_call' as const })) }),
    ...(r.invalidToolCalls && { invalid_tool_calls: r.invalidToolCalls.map((c) => ({ ...c, type: 'invalid_tool_call' as const })) }),
    ...(r.usage && { usage_metadata: { input_tokens: r.usage.inputTokens, output_tokens: r.usage.outputTokens, total_tokens: r.usage.inputTokens + r.usage.outputTokens } }),
    response_metadata: { model_name: exchange.model, ...(r.finishReason !== undefined && { finish_reason: r.finishReason }) },
  });
}

type ReplayCallOptions = BaseChatModelCallOptions & { tools?: BindToolsInput[] };

export class ReplayChatModel extends BaseChatModel<ReplayCallOptions> {
  static override lc_name(): string {
    return 'ReplayChatModel';
  }

  private readonly used: boolean[];
  private calls = 0;

  /** @param exchanges the recorded exchanges, in recorded order. */
  constructor(readonly exchanges: readonly LlmExchange[]) {
    super({});
    this.used = exchanges.map(() => false);
  }

  override _llmType(): string {
    return 'replay';
  }

  /** Model calls this run made so far. */
  get callCount(): number {
    return this.calls;
  }

  /** Recorded exchanges no request of this run has asked for (yet). */
  unused(): { index: number; exchange: LlmExchange }[] {
    return this.exchanges.flatMap((exchange, index) => (this.used[index] ? [] : [{ index, exchange }]));
  }

  override async _generate(messages: BaseMessage[], _options: this['ParsedCallOptions'], _runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    const call = ++this.calls;
    // Compared as recorded: the recording went through the same redaction.
    const asked = redactSecrets(messages.map(toExchangeMessage));
    const index = this.exchanges.findIndex((x, i) => !this.used[i] && sameMessages(x.messages, asked));
    if (index === -1) throw this.divergence(call, asked);
    this.used[index] = true;
    const exchange = this.exchanges[index]!;
    if (exchange.error || !exchange.response) throw recordedFailure(exchange.error ?? { name: 'Error', message: 'the recording holds no answer' });
    const message = messageOf(exchange);
    return { generations: [{ text: typeof message.content === 'string' ? message.content : message.text, message }] };
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<ReplayCallOptions>): Runnable<BaseLanguageModelInput, AIMessageChunk, ReplayCallOptions> {
    return this.withConfig({ ...kwargs, tools });
  }

  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  /**
   * The recorded answer as it came (tool call or text); `parsed` is the tool call's arguments or the JSON in the text.
   * Validation is the caller's (invokeStructured validates every answer with its zod schema).
   */
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    _outputSchema: InteropZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    const includeRaw = config?.includeRaw === true;
    return RunnableLambda.from(async (input: BaseLanguageModelInput, runConfig?: RunnableConfig) => {
      const raw = (await this.invoke(input, runConfig)) as AIMessage;
      const call = raw.tool_calls?.[0];
      const extracted = call ? undefined : extractJson(raw.text);
      const parsed = (call ? call.args : extracted?.ok ? extracted.value : null) as RunOutput | null;
      return includeRaw ? { raw: raw as BaseMessage, parsed } : parsed;
    }) as Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  }

  private divergence(call: number, asked: ExchangeMessage[]): ReplayDivergenceError {
    const unused = this.unused();
    const total = this.exchanges.length;
    if (unused.length === 0) {
      const last = asked.at(-1);
      return new ReplayDivergenceError(
        `replay diverged at model call ${call}: the recording's ${total} exchange(s) are all used, and this run asks the model again (${last ? `last message: ${quote(asText(last.content))}` : 'no messages'})`,
        call,
      );
    }
    // The nearest recorded request: the unused one that agrees with this one on the most leading messages, then on the
    // longest start of the first message that differs.
    const score = (x: LlmExchange): [number, number] => {
      let k = 0;
      while (k < x.messages.length && k < asked.length && sameMessage(x.messages[k]!, asked[k]!)) k++;
      const a = k < x.messages.length ? asText(x.messages[k]!.content) : '';
      const b = k < asked.length ? asText(asked[k]!.content) : '';
      let c = 0;
      while (c < a.length && c < b.length && a[c] === b[c]) c++;
      return [k, c];
    };
    const better = (p: [number, number], q: [number, number]) => p[0] > q[0] || (p[0] === q[0] && p[1] > q[1]);
    const nearest = unused.reduce((best, u) => (better(score(u.exchange), score(best.exchange)) ? u : best), unused[0]!);
    return new ReplayDivergenceError(
      `replay diverged at model call ${call}: no recorded request matches it. The nearest is the recording's call ${nearest.index + 1} of ${total} (for "${nearest.exchange.purpose}"): ${describeRequestDifference(nearest.exchange.messages, asked)}`,
      call,
    );
  }
}
