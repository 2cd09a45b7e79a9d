/**
 * What went wrong between us and the model, in words, and what to do about transient failures.
 *
 * The LangChain clients throw in many shapes (OpenAI SDK APIError with `status`, ollama-js ResponseError with
 * `status_code`, undici's `TypeError: fetch failed` with the socket error in `cause`, LangChain's own wrappers).
 * `describeLlmError` turns all of them into the LlmError classes; `withTransportRetry` retries the transient ones with
 * exponential backoff and jitter. The clients' own retries are switched off (see providers.ts) so that this is the only
 * retry logic, and LangGraph's node-level retry uses the same predicate through `transportRetryPolicy`.
 */
import type { RetryPolicy as NodeRetryPolicy } from '@langchain/langgraph';
import {
  isAbortError,
  LlmAuthError,
  LlmConnectionError,
  LlmError,
  LlmModelNotFoundError,
  LlmRateLimitError,
  LlmRequestError,
  LlmResponseError,
  LlmServerError,
  LlmTimeoutError,
  LlmUnreachableError,
} from './errors';

/** Where requests go; a ProviderConfig is one. Used only to word errors. */
export interface LlmEndpoint {
  provider: 'openai' | 'ollama';
  model: string;
  baseUrl?: string;
  timeoutMs?: number;
}

const DEFAULT_BASE_URL = { openai: 'https://api.openai.com/v1', ollama: 'http://127.0.0.1:11434' } as const;

export function endpointUrl(endpoint: LlmEndpoint): string {
  return (endpoint.baseUrl ?? DEFAULT_BASE_URL[endpoint.provider]).replace(/\/+$/, '');
}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The socket-level error code anywhere in the cause chain (AggregateError from happy-eyeballs included). */
function networkCode(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > 6) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || LOST_CODES.has(code) || TIMEOUT_CODES.has(code))) return code;
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const found = networkCode(inner, depth + 1);
      if (found) return found;
    }
  }
  return networkCode((error as { cause?: unknown }).cause, depth + 1);
}

function httpStatus(error: object): number | undefined {
  const e = error as { status?: unknown; status_code?: unknown; response?: { status?: unknown } };
  for (const candidate of [e.status, e.status_code, e.response?.status]) {
    if (typeof candidate === 'number' && candidate >= 100 && candidate <= 599) return candidate;
  }
  return undefined;
}

/** The server's own words: OpenAI's `{error: {message}}`, Ollama's `{error: "..."}`, else the error message. */
function serverMessage(error: object): string {
  const body = (error as { error?: unknown }).error;
  if (typeof body === 'string') return body;
  if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  return error instanceof Error ? error.message : String(error);
}

function retryAfterMs(error: object): number | undefined {
  const headers = (error as { headers?: unknown }).headers;
  const read = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    if (typeof headers === 'object' && headers !== null) {
      const value = (headers as Record<string, unknown>)[name];
      return typeof value === 'string' ? value : undefined;
    }
    return undefined;
  };
  const ms = Number(read('retry-after-ms'));
  if (read('retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const after = read('retry-after');
  if (after === undefined) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function where(endpoint: LlmEndpoint | undefined): string {
  if (!endpoint) return 'the LLM endpoint';
  return endpoint.provider === 'ollama' ? `Ollama at ${endpointUrl(endpoint)}` : `the OpenAI-compatible endpoint at ${endpointUrl(endpoint)}`;
}

function unreachable(endpoint: LlmEndpoint | undefined, code: string, cause: unknown): LlmUnreachableError {
  if (endpoint?.provider === 'ollama') {
    return new LlmUnreachableError(`cannot reach Ollama at ${endpointUrl(endpoint)}: is it running? \`ollama serve\``, { cause });
  }
  return new LlmUnreachableError(`cannot reach ${where(endpoint)} (${code}): check the base URL and that the server is running`, { cause });
}

function fromStatus(status: number, error: object, endpoint: LlmEndpoint | undefined): LlmError {
  const said = serverMessage(error);
  const options = { cause: error, status };
  const at = endpoint ? `the endpoint at ${endpointUrl(endpoint)}` : 'the LLM endpoint';
  if (status === 401 || status === 403) return new LlmAuthError(`${at} refused the API key (${status})`, options);
  if (status === 404) {
    const named = /model ['"`]?([^'"`\s]+?)['"`]? not found/i.exec(said)?.[1];
    const model = named ?? endpoint?.model ?? 'the requested model';
    if (endpoint?.provider === 'ollama') {
      return new LlmModelNotFoundError(`model ${model} is not available on Ollama at ${endpointUrl(endpoint)}: \`ollama pull ${model}\``, model, options);
    }
    return new LlmModelNotFoundError(
      `model ${model} is not available at ${endpoint ? endpointUrl(endpoint) : 'the LLM endpoint'} (404: ${said}): check the model name, and that the base URL is the API root (it usually ends in /v1)`,
      model,
      options,
    );
  }
  if (status === 429) {
    const wait = retryAfterMs(error);
    const asked = wait === undefined ? '' : `; it asks to wait ${(wait / 1000).toFixed(wait < 10_000 ? 1 : 0)} s`;
    return new LlmRateLimitError(`${where(endpoint)} is rate limiting requests (429)${asked}: ${said}`, wait, options);
  }
  if (status >= 500) return new LlmServerError(`${where(endpoint)} failed with HTTP ${status}: ${said}`, options);
  if (status >= 400) {
    const hint = /response_format|json_schema|json_object|tool|format/i.test(said)
      ? ' (the model or server may not support this structured-output mode: try structuredOutputType "jsonify")'
      : '';
    return new LlmRequestError(`${where(endpoint)} rejected the request (${status}): ${said}${hint}`, options);
  }
  return new LlmResponseError(`${where(endpoint)} answered with unexpected HTTP status ${status}: ${said}`, options);
}

/**
 * The LlmError for a failure of an LLM request, or undefined when the error is not about the transport at all (a bug,
 * a StructuredOutputError, a cancellation): those must travel on unchanged.
 */
export function classifyLlmError(error: unknown, endpoint?: LlmEndpoint): LlmError | undefined {
  if (error instanceof LlmError) return error;
  if (typeof error !== 'object' || error === null || isAbortError(error)) return undefined;
  const status = httpStatus(error);
  if (status !== undefined) return fromStatus(status, error, endpoint);

  const message = error instanceof Error ? error.message : '';
  const name = error instanceof Error ? error.name : '';
  const code = networkCode(error);
  // DOMException from AbortSignal.timeout, or LangChain's rewrap of the OpenAI client's timeout (a plain Error).
  const plainTimeout = name === 'TimeoutError' && (error instanceof DOMException || Object.getPrototypeOf(error) === Error.prototype);
  if (plainTimeout || (code !== undefined && TIMEOUT_CODES.has(code))) {
    const limit = endpoint?.timeoutMs === undefined ? 'in time' : `within ${endpoint.timeoutMs / 1000} s (timeoutMs)`;
    return new LlmTimeoutError(`${where(endpoint)} did not answer ${limit}`, { cause: error });
  }
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return unreachable(endpoint, code, error);
  if ((code !== undefined && LOST_CODES.has(code)) || /^(terminated|socket hang up|Connection error\.?)$|Did not receive done/i.test(message)) {
    return new LlmConnectionError(`the connection to ${where(endpoint)} broke before the answer was complete (${code ?? message})`, { cause: error });
  }
  if (/fetch failed/i.test(message)) return unreachable(endpoint, 'fetch failed', error);
  if (error instanceof SyntaxError) {
    return new LlmResponseError(`${where(endpoint)} sent an answer that is not a valid chat response: ${message}`, { cause: error });
  }
  return undefined;
}

/** Every failure of an LLM request as an LlmError; one that is not recognisable becomes an LlmResponseError. */
export function describeLlmError(error: unknown, endpoint?: LlmEndpoint): LlmError {
  return (
    classifyLlmError(error, endpoint) ??
    new LlmResponseError(`unexpected failure of a request to ${where(endpoint)}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    })
  );
}

/** True for failures worth the same request again: 429, 5xx, broken connections, timeouts. Never for cancellation. */
export function isTransientLlmError(error: unknown): boolean {
  return classifyLlmError(error)?.transient === true;
}

export interface TransportRetryOptions {
  /** Attempts in all, the first included. Default 4. */
  maxAttempts?: number;
  /** Delay before the first retry; doubles each time. Default 1000 ms. */
  baseDelayMs?: number;
  /** Upper bound of any delay, including a server's Retry-After. Default 30 s. */
  maxDelayMs?: number;
  signal?: AbortSignal;
  /** Words the errors; see describeLlmError. */
  endpoint?: LlmEndpoint;
  onRetry?: (event: { attempt: number; delayMs: number; error: LlmError }) => void;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Rejects as soon as `signal` aborts, even when the work itself does not watch the signal (ChatOllama only checks it between chunks). */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Exponential with equal jitter (half fixed, half random), never shorter than the server's Retry-After, capped. */
export function backoffDelayMs(attempt: number, error: LlmError, options: { baseDelayMs: number; maxDelayMs: number }): number {
  const exponential = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  const jittered = exponential / 2 + Math.random() * (exponential / 2);
  const asked = error instanceof LlmRateLimitError ? (error.retryAfterMs ?? 0) : 0;
  return Math.min(options.maxDelayMs, Math.max(jittered, asked));
}

/**
 * Runs `fn` (given the attempt number, from 1) and retries it while it fails transiently. Transport failures leave as
 * LlmErrors; other errors, and cancellation, leave unchanged at once.
 */
export async function withTransportRetry<T>(fn: (attempt: number) => Promise<T>, options: TransportRetryOptions = {}): Promise<T> {
  const { maxAttempts = 4, baseDelayMs = 1000, maxDelayMs = 30_000, signal, endpoint, onRetry } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError(`maxAttempts must be an integer >= 1, got ${maxAttempts}`);
  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw abortReason(signal);
    try {
      return await raceAbort(fn(attempt), signal);
    } catch (error) {
      if (isAbortError(error, signal)) throw error;
      const llmError = classifyLlmError(error, endpoint);
      if (!llmError) throw error;
      if (!llmError.transient || attempt >= maxAttempts) throw llmError;
      const delayMs = backoffDelayMs(attempt, llmError, { baseDelayMs, maxDelayMs });
      onRetry?.({ attempt, delayMs, error: llmError });
      await sleep(delayMs, signal);
    }
  }
}

/**
 * For `graph.addNode(name, fn, { retryPolicy: transportRetryPolicy })`: LangGraph retries the whole node on the same
 * transient failures. Its jitter adds up to one second per retry on top of the interval.
 */
export const transportRetryPolicy: NodeRetryPolicy = {
  maxAttempts: 4,
  initialInterval: 1000,
  backoffFactor: 2,
  maxInterval: 30_000,
  jitter: true,
  retryOn: isTransientLlmError,
  logWarning: false,
};
