/**
 * Chat models from plain config (settings, CLI flags), and a reachability check that fails with one clear sentence.
 *
 * The engine never reads environment variables: whoever builds the config (CLI, extension with SecretStorage) puts
 * the key and URL in it. Both clients get an explicit base URL, so OPENAI_BASE_URL / OLLAMA_BASE_URL cannot redirect
 * them behind the user's back, and no retries of their own, so that `withTransportRetry` is the one retry logic.
 */
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { RetryPolicy as NodeRetryPolicy } from '@langchain/langgraph';
import { ChatOllama } from '@langchain/ollama';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { LlmConfigError, LlmModelNotFoundError } from './errors';
import { formatZodIssues } from './json';
import { ThinkingStrippedChatModel } from './thinking';
import { describeLlmError, endpointUrl, transportRetryPolicy, type LlmEndpoint, type TransportRetryOptions } from './transport';

const httpUrl = z
  .string()
  .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
    message: 'expected an http(s) URL such as http://127.0.0.1:11434',
  })
  .transform((value) => value.replace(/\/+$/, ''));

const common = {
  model: z.string().trim().min(1, 'expected a model name'),
  baseUrl: httpUrl.optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** Limit for one whole request, streaming included. */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries of a transiently failed request made by our code (withTransportRetry / the node retry policy). Default 3. */
  maxRetries: z.number().int().min(0).max(10).optional(),
};

export const providerConfigSchema = z.discriminatedUnion('provider', [
  z.strictObject({
    provider: z.literal('openai'),
    ...common,
    /** Local servers (vLLM, llama.cpp, LM Studio) usually need none. */
    apiKey: z.string().optional(),
  }),
  z.strictObject({ provider: z.literal('ollama'), ...common }),
]);

export type ProviderConfig = z.input<typeof providerConfigSchema>;
export type ResolvedProviderConfig = z.output<typeof providerConfigSchema> & { baseUrl: string };

/** Validates and fills in defaults (the base URL); throws LlmConfigError naming every bad field. */
export function parseProviderConfig(config: unknown): ResolvedProviderConfig {
  const parsed = providerConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issues = formatZodIssues(parsed.error.issues).map((issue) => issue.replace(/^field /, ''));
    throw new LlmConfigError(`invalid LLM provider config: ${issues.join('; ')}`);
  }
  return { ...parsed.data, baseUrl: endpointUrl(parsed.data) };
}

/**
 * Local servers ignore the key, but the OpenAI client refuses to start without one; an endpoint that does check it
 * answers 401, which describeLlmError words as "refused the API key".
 */
const NO_API_KEY = 'no-api-key';

export function createChatModel(config: ProviderConfig): BaseChatModel {
  const c = parseProviderConfig(config);
  if (c.provider === 'openai') {
    return new ChatOpenAI({
      model: c.model,
      temperature: c.temperature,
      timeout: c.timeoutMs,
      maxRetries: 0,
      apiKey: c.apiKey ?? NO_API_KEY,
      configuration: { baseURL: c.baseUrl },
    });
  }
  return new ChatOllama({
    model: c.model,
    baseUrl: c.baseUrl,
    temperature: c.temperature,
    // ChatOllama has no timeout option: the limit goes into every fetch it makes, body included.
    ...(c.timeoutMs === undefined ? {} : { fetch: fetchWithTimeout(c.timeoutMs) }),
  });
}

function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return (input, init) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
  };
}

/** The endpoint a model talks to, for wording errors; undefined for models of other providers. */
export function endpointOf(model: BaseChatModel): LlmEndpoint | undefined {
  const inner = model instanceof ThinkingStrippedChatModel ? model.inner : model;
  if (inner instanceof ChatOllama) return { provider: 'ollama', model: inner.model, baseUrl: inner.baseUrl };
  if (inner instanceof ChatOpenAI) {
    return { provider: 'openai', model: inner.model, baseUrl: inner.clientConfig.baseURL ?? undefined, timeoutMs: inner.timeout };
  }
  return undefined;
}

/** Credentials a model's client holds (its API key), for scrubbing them from anything recorded. */
export function secretsOf(model: BaseChatModel): string[] {
  const inner = model instanceof ThinkingStrippedChatModel ? model.inner : model;
  const key = inner instanceof ChatOpenAI ? inner.apiKey : undefined;
  return typeof key === 'string' && key !== NO_API_KEY ? [key] : [];
}

/** `config.maxRetries` as options for withTransportRetry (the endpoint included, for the wording of errors). */
export function transportRetryOptionsFor(config: ProviderConfig): TransportRetryOptions {
  const c = parseProviderConfig(config);
  return { maxAttempts: (c.maxRetries ?? 3) + 1, endpoint: { provider: c.provider, model: c.model, baseUrl: c.baseUrl, timeoutMs: c.timeoutMs } };
}

/** `config.maxRetries` as LangGraph's node retry policy. */
export function transportRetryPolicyFor(config: ProviderConfig): NodeRetryPolicy {
  return { ...transportRetryPolicy, maxAttempts: (parseProviderConfig(config).maxRetries ?? 3) + 1 };
}

export interface Reachability {
  /** The models the endpoint lists (empty where it lists none). */
  models: string[];
}

const REACHABILITY_TIMEOUT_MS = 10_000;

/**
 * One cheap request (Ollama: GET /api/tags, OpenAI-compatible: GET /models) before a session starts, so that a server
 * that is down, a wrong URL, a refused key or (Ollama) a model that was never pulled is one clear error up front.
 */
export async function checkReachable(config: ProviderConfig, signal?: AbortSignal): Promise<Reachability> {
  const c = parseProviderConfig(config);
  const timeout = AbortSignal.timeout(c.timeoutMs ?? REACHABILITY_TIMEOUT_MS);
  const url = c.provider === 'ollama' ? `${c.baseUrl}/api/tags` : `${c.baseUrl}/models`;
  const headers: Record<string, string> = c.provider === 'openai' ? { authorization: `Bearer ${c.apiKey ?? NO_API_KEY}` } : {};
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw describeLlmError(error, c);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  // Some OpenAI-compatible servers have no model list; they answered, which is what this check is for.
  if (c.provider === 'openai' && response.status === 404) return { models: [] };
  if (!response.ok) {
    const said = (body as { error?: unknown } | undefined)?.error ?? text;
    throw describeLlmError(Object.assign(new Error(`HTTP ${response.status}`), { status: response.status, error: said }), c);
  }
  if (c.provider === 'openai') {
    const data = (body as { data?: Array<{ id?: unknown }> } | undefined)?.data;
    return { models: Array.isArray(data) ? data.flatMap((m) => (typeof m.id === 'string' ? [m.id] : [])) : [] };
  }
  const listed = (body as { models?: Array<{ name?: unknown }> } | undefined)?.models;
  const models = Array.isArray(listed) ? listed.flatMap((m) => (typeof m.name === 'string' ? [m.name] : [])) : [];
  if (!models.includes(c.model) && !models.includes(`${c.model}:latest`)) {
    throw new LlmModelNotFoundError(`model ${c.model} is not available on Ollama at ${c.baseUrl}: \`ollama pull ${c.model}\``, c.model);
  }
  return { models };
}
