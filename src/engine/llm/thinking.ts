/**
 * Stripping the "thinking" that reasoning models (DeepSeek-R1, Qwen3, ...) write inline before their answer.
 *
 * `stripThinking` works on a finished text; `ThinkingStreamFilter` does the same on a stream without ever emitting
 * text it would later have to take back; `withThinkingStripped` wraps a chat model so that invoke, stream, bindTools
 * and withStructuredOutput all see the answer without its thinking.
 */
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import { createContentParser } from '@langchain/core/language_models/structured_output';
import { AIMessage, AIMessageChunk, type BaseMessage, type MessageContent } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { OutputParserException } from '@langchain/core/output_parsers';
import { Runnable, RunnableLambda } from '@langchain/core/runnables';
import type { InteropZodType } from '@langchain/core/utils/types';
import { ExchangeRecorder } from './recording';

export const DEFAULT_THINKING_PATTERN = /<think>[\s\S]*?<\/think>\s*/g;

/**
 * A pattern from settings (the seed's `thinking_pattern` is a Python regex string such as `<think>.*?</think>\s*`).
 * Compiled with `s` so that `.` spans lines as the seed intends, and `g` so that every block goes.
 */
export function compileThinkingPattern(pattern: string | RegExp): RegExp {
  if (typeof pattern !== 'string') return asGlobal(pattern);
  try {
    return new RegExp(pattern, 'gs');
  } catch (error) {
    throw new SyntaxError(`thinking pattern ${JSON.stringify(pattern)} is not a valid regular expression: ${(error as Error).message}`);
  }
}

function asGlobal(pattern: RegExp): RegExp {
  return pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`);
}

interface ThinkingTags {
  open: string;
  close: string;
}

/**
 * The literal opening and closing tags of a pattern shaped like `OPEN<anything lazy>CLOSE...`, e.g. `<think>` and
 * `</think>`. Needed to recognise a block the model never closed, and to hold back a half-received tag when streaming.
 */
function thinkingTags(pattern: RegExp): ThinkingTags | undefined {
  const open = readLiteral(pattern.source, 0);
  const lazy = pattern.source.slice(open.source.length).search(/[*+]\?/);
  if (open.text.length < 2 || lazy < 0) return undefined;
  const close = readLiteral(pattern.source, open.source.length + lazy + 2);
  return close.text.length < 2 ? undefined : { open: open.text, close: close.text };
}

/** The literal text at `start` of a regex source, up to the first construct that is not a plain character. */
function readLiteral(source: string, start: number): { text: string; source: { length: number } } {
  const isQuantifier = (ch: string | undefined) => ch !== undefined && '*+?{'.includes(ch);
  let text = '';
  let i = start;
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === '\\') {
      const next = source[i + 1];
      // \s, \d, \1 ... are classes or references, and a quantified character is not a fixed literal.
      if (next === undefined || /[A-Za-z0-9]/.test(next) || isQuantifier(source[i + 2])) break;
      text += next;
      i += 2;
      continue;
    }
    if ('.*+?()[]{}|^$'.includes(ch) || isQuantifier(source[i + 1])) break;
    text += ch;
    i += 1;
  }
  return { text, source: { length: i } };
}

/**
 * Removes every thinking block. An opening tag the model never closed at the start of the answer (it was cut off
 * while thinking) means there is no answer at all, so the result is empty; the caller then treats it as any empty
 * answer instead of parsing the thoughts as if they were the answer.
 */
export function stripThinking(text: string, pattern: RegExp = DEFAULT_THINKING_PATTERN): string {
  const re = asGlobal(pattern);
  const stripped = text.replace(re, '');
  const tags = thinkingTags(re);
  if (tags && stripped.trimStart().startsWith(tags.open)) return '';
  return stripped;
}

/**
 * What the parsers read of an answer: its `<think>` blocks are never the answer, whatever the session's thinking
 * settings (a draft kernel or JSON in the thoughts would otherwise be taken for it). `cutOffWhileThinking`: the answer
 * ends inside a block it opened, so the model hit its output limit before it answered.
 */
export function answerOutsideThinking(text: string): { text: string; cutOffWhileThinking: boolean } {
  const stripped = stripThinking(text);
  return { text: stripped, cutOffWhileThinking: stripped === '' && text.replace(DEFAULT_THINKING_PATTERN, '').trimStart().startsWith('<think>') };
}

/**
 * Incremental `stripThinking`: `push` each received piece and emit what it returns, then emit what `finish` returns.
 * The concatenation of everything emitted equals `stripThinking(whole text)`. Text after an opening tag waits until
 * the block closes; a tail that may be the start of an opening tag waits for the next piece. A pattern without
 * recognisable literal tags is applied once, at the end.
 */
export class ThinkingStreamFilter {
  private received = '';
  private emitted = '';
  private readonly pattern: RegExp;
  private readonly tags: ThinkingTags | undefined;

  constructor(pattern: RegExp = DEFAULT_THINKING_PATTERN) {
    this.pattern = asGlobal(pattern);
    this.tags = thinkingTags(this.pattern);
  }

  push(piece: string): string {
    this.received += piece;
    if (!this.tags) return '';
    const { open } = this.tags;
    let view = this.received.replace(this.pattern, '');
    const pending = view.indexOf(open);
    if (pending >= 0) view = view.slice(0, pending);
    for (let k = Math.min(open.length - 1, view.length); k > 0; k--) {
      if (open.startsWith(view.slice(-k))) {
        view = view.slice(0, -k);
        break;
      }
    }
    return this.advanceTo(view);
  }

  finish(): string {
    return this.advanceTo(stripThinking(this.received, this.pattern));
  }

  private advanceTo(view: string): string {
    if (!view.startsWith(this.emitted)) return '';
    const out = view.slice(this.emitted.length);
    this.emitted = view;
    return out;
  }
}

function stripContent(content: MessageContent, pattern: RegExp): MessageContent {
  if (typeof content === 'string') return stripThinking(content, pattern);
  return content.map((block) =>
    block.type === 'text' && typeof block.text === 'string' ? { ...block, text: stripThinking(block.text, pattern) } : block,
  );
}

/** A copy of an AI message without its thinking; ids, tool calls, metadata and token usage are kept. */
export function stripThinkingFromMessage(message: BaseMessage, pattern: RegExp = DEFAULT_THINKING_PATTERN): AIMessage {
  const ai = message as AIMessage;
  return new AIMessage({
    content: stripContent(ai.content, pattern),
    id: ai.id,
    name: ai.name,
    tool_calls: ai.tool_calls,
    invalid_tool_calls: ai.invalid_tool_calls,
    additional_kwargs: ai.additional_kwargs,
    response_metadata: ai.response_metadata,
    usage_metadata: ai.usage_metadata,
  });
}

type PassThroughCallOptions = BaseChatModelCallOptions & { tools?: BindToolsInput[] };

/**
 * A chat model that forwards every call, with its call options (response_format, tools, format, signal, ...), to the
 * wrapped model and strips thinking from what comes back. Being a BaseChatModel it goes wherever a chat model goes.
 */
export class ThinkingStrippedChatModel extends BaseChatModel<PassThroughCallOptions> {
  static override lc_name(): string {
    return 'ThinkingStrippedChatModel';
  }

  readonly pattern: RegExp;

  constructor(
    readonly inner: BaseChatModel,
    pattern: RegExp = DEFAULT_THINKING_PATTERN,
  ) {
    super({});
    this.pattern = asGlobal(pattern);
  }

  // Constant: the base constructor calls this before `inner` is set.
  override _llmType(): string {
    return 'thinking-stripped';
  }

  /**
   * The wrapped model runs with the session's exchange recorders only (an explicit list also stops LangChain from
   * inheriting the graph's callbacks implicitly): otherwise LangGraph's "messages" stream would show its raw tokens,
   * thinking included, beside the stripped ones this model reports. The recorders keep the raw answer, as the model
   * gave it, and skip this wrapper's own run.
   */
  private forward(options: this['ParsedCallOptions'], runManager: CallbackManagerForLLMRun | undefined) {
    return { ...options, callbacks: (runManager?.handlers ?? []).filter((h) => h instanceof ExchangeRecorder) };
  }

  override async _generate(messages: BaseMessage[], options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    const answer = await this.inner.invoke(messages, this.forward(options, runManager));
    const message = stripThinkingFromMessage(answer, this.pattern);
    return { generations: [{ text: message.text, message }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const filter = new ThinkingStreamFilter(this.pattern);
    const toGeneration = (source: AIMessageChunk | undefined, text: string) =>
      new ChatGenerationChunk({
        text,
        message: new AIMessageChunk({
          content: text,
          id: source?.id,
          additional_kwargs: source?.additional_kwargs,
          response_metadata: source?.response_metadata,
          usage_metadata: source?.usage_metadata,
          tool_call_chunks: source?.tool_call_chunks,
        }),
      });
    for await (const chunk of await this.inner.stream(messages, this.forward(options, runManager))) {
      // Content blocks (non-string content) carry their reasoning separately; they pass unchanged.
      if (typeof chunk.content !== 'string') {
        yield new ChatGenerationChunk({ text: chunk.text, message: chunk });
        continue;
      }
      const generation = toGeneration(chunk, filter.push(chunk.content));
      yield generation;
      if (generation.text !== '') await runManager?.handleLLMNewToken(generation.text, undefined, undefined, undefined, undefined, { chunk: generation });
    }
    const rest = filter.finish();
    if (rest !== '') {
      const generation = toGeneration(undefined, rest);
      yield generation;
      await runManager?.handleLLMNewToken(rest, undefined, undefined, undefined, undefined, { chunk: generation });
    }
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<PassThroughCallOptions>): Runnable<BaseLanguageModelInput, AIMessageChunk, PassThroughCallOptions> {
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
   * The wrapped model's own structured output (same request: response_format, tools or format), with the raw answer
   * stripped and parsed again when the wrapped model's parser failed because of the thinking in front of the JSON.
   * Not for ChatOpenAI's json_schema method: the OpenAI SDK parses that answer itself and throws before anything can
   * be stripped; invokeStructured handles that case.
   */
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    outputSchema: InteropZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    const includeRaw = config?.includeRaw === true;
    const withRaw = this.inner.withStructuredOutput<RunOutput>(outputSchema, { ...config, includeRaw: true });
    const reparse = async (message: AIMessage): Promise<RunOutput> => {
      if ((message.tool_calls?.length ?? 0) > 0 || (message.invalid_tool_calls?.length ?? 0) > 0) {
        throw new OutputParserException('the tool call in the answer does not match the schema', JSON.stringify(message.tool_calls));
      }
      return (await createContentParser(outputSchema).invoke(message.text)) as RunOutput;
    };
    const finish = RunnableLambda.from(async ({ raw, parsed }: { raw: BaseMessage; parsed: RunOutput | null }) => {
      const message = stripThinkingFromMessage(raw, this.pattern);
      if (!includeRaw) return parsed ?? (await reparse(message));
      return { raw: message as BaseMessage, parsed: parsed ?? (await reparse(message).catch(() => null)) };
    });
    return withRaw.pipe(finish) as Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  }
}

export function withThinkingStripped(model: BaseChatModel, pattern: RegExp = DEFAULT_THINKING_PATTERN): ThinkingStrippedChatModel {
  return new ThinkingStrippedChatModel(model, pattern);
}
