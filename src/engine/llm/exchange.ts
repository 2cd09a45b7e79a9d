/**
 * The record of one request to a model and its answer (an `llm.exchange` event, a history entry's `llmExchanges`),
 * and the redaction every record goes through. Plain data and zod only: the history store reads these records in the
 * extension's light bundle, recording.ts writes them and replay.ts serves them again.
 */
import type { AIMessage, BaseMessage } from '@langchain/core/messages';
import { z } from 'zod';

const toolCall = z.object({ name: z.string(), args: z.unknown(), id: z.string().optional() });
const content = z.union([z.string(), z.array(z.unknown())]);

/** A message as it went to the model: its text (or its content blocks, as the client had them) and tool calls. */
export const ExchangeMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content,
  toolCalls: z.array(toolCall).optional(),
  toolCallId: z.string().optional(),
});
export type ExchangeMessage = z.infer<typeof ExchangeMessageSchema>;
export type ExchangeRole = ExchangeMessage['role'];

export const ExchangeResponseSchema = z.object({
  content,
  toolCalls: z.array(toolCall).optional(),
  /** Tool calls the client could not parse (their raw arguments). */
  invalidToolCalls: z.array(z.object({ name: z.string().optional(), args: z.string().optional(), id: z.string().optional(), error: z.string().optional() })).optional(),
  usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }).optional(),
  finishReason: z.string().optional(),
});
export type ExchangeResponse = z.infer<typeof ExchangeResponseSchema>;

/** One request to the model and what came back. Plain JSON. */
export const LlmExchangeSchema = z.object({
  /** What the graph asked for ("describe kernel", "step 2", "restrictions" ...). */
  purpose: z.string(),
  /** The model as the client names it. */
  model: z.string(),
  /** The client's invocation parameters (temperature, response_format, tools ...), secrets removed. */
  params: z.record(z.string(), z.unknown()),
  messages: z.array(ExchangeMessageSchema),
  /** The answer; absent when the request failed. */
  response: ExchangeResponseSchema.optional(),
  /** Why the request failed, with the HTTP status where there was one. */
  error: z.object({ name: z.string(), message: z.string(), status: z.number().optional() }).optional(),
  startedAt: z.string(),
  durationMs: z.number(),
});
export type LlmExchange = z.infer<typeof LlmExchangeSchema>;

/** A message's or an answer's tool calls as recorded. */
const toolCallsOf = (calls: readonly { name: string; args: unknown; id?: string | undefined }[]): z.infer<typeof toolCall>[] =>
  calls.map((c) => ({ name: c.name, args: c.args, ...(c.id !== undefined && { id: c.id }) }));

const ROLE: Record<string, ExchangeRole> = { system: 'system', human: 'user', ai: 'assistant', tool: 'tool', generic: 'user', developer: 'system' };

export function toExchangeMessage(message: BaseMessage): ExchangeMessage {
  const type = message.getType();
  const out: ExchangeMessage = { role: ROLE[type] ?? 'user', content: message.content as string | unknown[] };
  const calls = (message as AIMessage).tool_calls;
  if (type === 'ai' && calls && calls.length > 0) out.toolCalls = toolCallsOf(calls);
  const toolCallId = (message as { tool_call_id?: unknown }).tool_call_id;
  if (type === 'tool' && typeof toolCallId === 'string') out.toolCallId = toolCallId;
  return out;
}

export function responseOf(message: AIMessage): ExchangeResponse {
  const response: ExchangeResponse = { content: message.content as string | unknown[] };
  if (message.tool_calls && message.tool_calls.length > 0) response.toolCalls = toolCallsOf(message.tool_calls);
  if (message.invalid_tool_calls && message.invalid_tool_calls.length > 0) {
    response.invalidToolCalls = message.invalid_tool_calls.map((c) => ({
      ...(c.name !== undefined && { name: c.name }),
      ...(c.args !== undefined && { args: c.args }),
      ...(c.id !== undefined && { id: c.id }),
      ...(c.error !== undefined && { error: c.error }),
    }));
  }
  const usage = message.usage_metadata;
  if (usage) response.usage = { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens };
  const finish = message.response_metadata?.finish_reason ?? message.response_metadata?.done_reason;
  if (typeof finish === 'string') response.finishReason = finish;
  return response;
}

/** Field names that hold credentials, wherever they appear (headers included): apiKey, openAIApiKey, x-api-key, ... */
const SECRET_KEY = /(api[-_]?key|authorization|cookie|password|passwd|secret|token|credentials?|private[-_]?key)$/i;
const REDACTED = '[redacted]';

/** `user:password@` of a URL, and query parameters that carry keys (`?key=`, `&api_key=`, `token=`). */
export function redactText(text: string, knownSecrets: readonly string[]): string {
  let out = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(:[^\s/@]*)?@/gi, `$1${REDACTED}@`);
  out = out.replace(/([?&](?:api[-_]?key|key|token|access[-_]?token|auth)=)[^&\s#"']+/gi, `$1${REDACTED}`);
  out = out.replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g, `$1 ${REDACTED}`);
  for (const secret of knownSecrets) if (secret.length >= 4) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * A deep copy of `value` without secrets: credential-like fields are replaced by "[redacted]", and in every string
 * URL credentials, key-carrying query parameters, bearer tokens and each of `knownSecrets` are replaced too.
 */
export function redactSecrets<T>(value: T, knownSecrets: readonly string[] = []): T {
  const visit = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return redactText(v, knownSecrets);
    if (typeof v !== 'object' || v === null || depth > 50) return v;
    if (Array.isArray(v)) return v.map((x) => visit(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(v)) {
      if (inner === undefined || typeof inner === 'function') continue;
      out[key] = SECRET_KEY.test(key) && inner !== null && inner !== '' ? REDACTED : visit(inner, depth + 1);
    }
    return out;
  };
  return visit(value, 0) as T;
}

