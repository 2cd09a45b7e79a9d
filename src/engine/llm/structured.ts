/**
 * Asking a model for an object that matches a zod schema, in whichever way the model supports.
 *
 * The request is the provider's native one: what the LangChain client's `withStructuredOutput` sends for the chosen
 * method (for OpenAI's json_schema the same response_format, bound by us and streamed, see below). The parsing is
 * always ours: the schema goes to the client as plain JSON schema, we extract the JSON from the raw answer, validate it
 * with zod, and on failure throw a StructuredOutputError that names every bad field, ready to be fed back to the model
 * by a retry handler.
 */
import type { BaseChatModel, BaseChatModelCallOptions } from '@langchain/core/language_models/chat_models';
import { HumanMessage, type AIMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import { ChatOpenAI } from '@langchain/openai';
import type { z } from 'zod';
import { isAbortError, StructuredOutputError } from './errors';
import { extractJson, formatZodIssues } from './json';
import { endpointOf } from './providers';
import { DEFAULT_THINKING_PATTERN, ThinkingStrippedChatModel, withThinkingStripped } from './thinking';
import { describeLlmError, withTransportRetry, type TransportRetryOptions } from './transport';

/**
 * How structured output is obtained. The keys mirror the seed's enum (TOOL_CALLING is function calling, SEPARATE_REQUEST
 * is our 'jsonify'); JSON_MODE is ours: JSON-only output with the schema described in the prompt.
 */
export const StructuredOutputType = {
  /** The client's native default: json_schema response_format for OpenAI, `format: <schema>` for Ollama. */
  DEFAULT: 'default',
  JSON_SCHEMA: 'jsonSchema',
  TOOL_CALLING: 'functionCalling',
  JSON_MODE: 'jsonMode',
  /** Two requests: a free answer, then "convert this answer to JSON" (for models without structured output). */
  SEPARATE_REQUEST: 'jsonify',
} as const;
export type StructuredOutputType = (typeof StructuredOutputType)[keyof typeof StructuredOutputType];

export interface InvokeStructuredOptions {
  type?: StructuredOutputType;
  /** The schema's name on the wire (json_schema name, function name). Default "extract". */
  name?: string;
  signal?: AbortSignal;
  /** Strip thinking from the answers: true for the default `<think>` pattern, or a pattern. */
  stripThinking?: boolean | RegExp;
  /** Retry transient transport failures of each request; without it every request is tried once. */
  retry?: Omit<TransportRetryOptions, 'signal' | 'endpoint'>;
  /** Sees every raw answer (token usage, transcripts). */
  onResponse?: (message: BaseMessage) => void;
  /** LangChain callbacks for every request (the session's exchange recorder). */
  callbacks?: Callbacks;
}

/** LangChain's rule for ChatOpenAI: json_schema, except for the models older than structured outputs. */
function openAiDefaultMethod(model: string): 'jsonSchema' | 'functionCalling' {
  return model.startsWith('gpt-3') || model.startsWith('gpt-4-') || model === 'gpt-4' ? 'functionCalling' : 'jsonSchema';
}

function schemaInstruction(jsonSchema: unknown): string {
  return `Answer with one JSON object that matches this JSON schema, and nothing else:\n\`\`\`json\n${JSON.stringify(jsonSchema, null, 2)}\n\`\`\``;
}

/** JSON mode guarantees JSON but not its shape, so the schema goes into the last user message (a separate message would break chat templates that require alternating roles). */
function withSchemaInstruction(messages: BaseMessage[], jsonSchema: unknown): BaseMessage[] {
  const last = messages.at(-1);
  if (last instanceof HumanMessage && typeof last.content === 'string') {
    return [...messages.slice(0, -1), new HumanMessage({ ...last, content: `${last.content}\n\n${schemaInstruction(jsonSchema)}` })];
  }
  return [...messages, new HumanMessage(schemaInstruction(jsonSchema))];
}

function jsonifyPrompt(jsonSchema: unknown, answer: string): string {
  return [
    'Convert the answer below into one JSON object that matches the JSON schema. Keep the content of the answer;',
    'do not add fields the schema does not have, and do not leave out required ones. Reply with only the JSON object.',
    '',
    'JSON schema:',
    '```json',
    JSON.stringify(jsonSchema, null, 2),
    '```',
    '',
    'Answer to convert:',
    '"""',
    answer,
    '"""',
  ].join('\n');
}

type Candidate = { value: unknown; text: string } | { text: string };

/** Where the object is in an answer: the tool call's arguments, else the text. */
function candidateOf(raw: BaseMessage, name: string): Candidate {
  const ai = raw as AIMessage;
  const call = ai.tool_calls?.find((c) => c.name === name) ?? ai.tool_calls?.[0];
  if (call) return { value: call.args, text: JSON.stringify(call.args) };
  const invalid = ai.invalid_tool_calls?.[0];
  if (invalid) return { text: invalid.args ?? '' };
  return { text: ai.text };
}

function validate<S extends z.ZodType>(schema: S, candidate: Candidate): z.output<S> {
  let value: unknown;
  if ('value' in candidate) value = candidate.value;
  else {
    const extracted = extractJson(candidate.text);
    if (!extracted.ok) throw new StructuredOutputError(`the answer is not usable JSON: ${extracted.detail}`, candidate.text, [extracted.detail]);
    value = extracted.value;
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatZodIssues(result.error.issues);
  throw new StructuredOutputError(`the answer does not match the expected JSON: ${issues.join('; ')}`, candidate.text, issues);
}

export async function invokeStructured<S extends z.ZodType>(
  model: BaseChatModel,
  messages: BaseMessage[],
  schema: S,
  options: InvokeStructuredOptions = {},
): Promise<z.output<S>> {
  const { type = 'default', name = 'extract', signal, onResponse, callbacks } = options;
  const call = { signal, ...(callbacks && { callbacks }) };
  const pattern = options.stripThinking instanceof RegExp ? options.stripThinking : options.stripThinking ? DEFAULT_THINKING_PATTERN : undefined;
  const llm: BaseChatModel = pattern && !(model instanceof ThinkingStrippedChatModel) ? withThinkingStripped(model, pattern) : model;
  const endpoint = endpointOf(model);
  // Each request is only a client call (the includeRaw pipeline never throws on parsing), so whatever it throws,
  // cancellation aside, is a failed request: even a TypeError from a client choking on a 200 that is no chat response.
  const request = <T>(fn: () => Promise<T>) =>
    withTransportRetry(
      () =>
        fn().catch((error: unknown) => {
          throw isAbortError(error, signal) ? error : describeLlmError(error, endpoint);
        }),
      { maxAttempts: 1, ...options.retry, signal, endpoint },
    );
  const jsonSchema = toJsonSchema(schema);

  if (type === 'jsonify') {
    const first = await request(() => llm.invoke(messages, call));
    onResponse?.(first);
    if (first.text.trim() === '') throw new StructuredOutputError('the answer is not usable JSON: the answer is empty', '', ['the answer is empty']);
    const second = await request(() => llm.invoke([new HumanMessage(jsonifyPrompt(jsonSchema, first.text))], call));
    onResponse?.(second);
    return validate(schema, { text: second.text });
  }

  const inner = llm instanceof ThinkingStrippedChatModel ? llm.inner : llm;
  const prompt = type === 'jsonMode' ? withSchemaInstruction(messages, jsonSchema) : messages;
  const method = type === 'default' && inner instanceof ChatOpenAI ? openAiDefaultMethod(inner.model) : type;
  const raw = await request(async (): Promise<BaseMessage> => {
    if (inner instanceof ChatOpenAI && method === 'jsonSchema') {
      // Not streamed, the OpenAI SDK JSON.parses a json_schema answer itself and throws, without the text, on anything
      // but bare JSON (thinking, fences). So this is the response_format LangChain's withStructuredOutput sends for a zod
      // schema, streamed. (Streaming that pipeline instead fails: its parse fallback only works for invoke.)
      const responseFormat = { type: 'json_schema', json_schema: { name, description: jsonSchema.description, schema: jsonSchema, strict: true } };
      // `response_format` is a ChatOpenAI call option; through a ThinkingStrippedChatModel it is forwarded to it.
      const bound = llm.withConfig({ response_format: responseFormat } as Partial<BaseChatModelCallOptions>);
      let answer: AIMessageChunk | undefined;
      for await (const chunk of await bound.stream(prompt, call)) answer = answer ? answer.concat(chunk) : chunk;
      if (!answer) throw new Error('the answer stream ended without a message');
      return answer;
    }
    const runnable = llm.withStructuredOutput(jsonSchema, { name, includeRaw: true as const, ...(method === 'default' ? {} : { method }) });
    return (await runnable.invoke(prompt, call)).raw;
  });
  onResponse?.(raw);
  return validate(schema, candidateOf(raw, name));
}
