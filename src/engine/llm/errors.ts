/**
 * Errors of the LLM layer. Every failure of a request to a model ends up as one of these (see `describeLlmError`),
 * each with one sentence that tells the user what is wrong and what to do. `transient` says whether trying the same
 * request again later can help; the transport retry and LangGraph's node retry both decide on it.
 */

export interface LlmErrorOptions {
  cause?: unknown;
  /** HTTP status the endpoint answered, where there was one. */
  status?: number;
}

// Names are spelled out: a bundler may rename colliding classes, and `name` is what logs and the UI show.
export class LlmError extends Error {
  override name = 'LlmError';
  readonly transient: boolean = false;
  readonly status: number | undefined;

  constructor(message: string, options: LlmErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
  }
}

/** The provider config is invalid (unknown provider, bad URL, ...): nothing was sent. */
export class LlmConfigError extends LlmError {
  override name = 'LlmConfigError';
}

/** Nothing answers at the endpoint (connection refused, unknown host). Retrying at once does not help: the user must act. */
export class LlmUnreachableError extends LlmError {
  override name = 'LlmUnreachableError';
}

/** The endpoint refused the credentials (401/403). */
export class LlmAuthError extends LlmError {
  override name = 'LlmAuthError';
}

/** The endpoint does not serve the requested model (404). */
export class LlmModelNotFoundError extends LlmError {
  override name = 'LlmModelNotFoundError';
  constructor(
    message: string,
    readonly model: string,
    options: LlmErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** The endpoint rejected the request itself (400, 422, ...): a retry of the same request would fail the same way. */
export class LlmRequestError extends LlmError {
  override name = 'LlmRequestError';
}

/** HTTP 429. `retryAfterMs` is the wait the endpoint asked for, when it said. */
export class LlmRateLimitError extends LlmError {
  override name = 'LlmRateLimitError';
  override readonly transient = true;
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
    options: LlmErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** HTTP 5xx. */
export class LlmServerError extends LlmError {
  override name = 'LlmServerError';
  override readonly transient = true;
}

/** The connection broke before the answer was complete (reset, closed mid-stream). */
export class LlmConnectionError extends LlmError {
  override name = 'LlmConnectionError';
  override readonly transient = true;
}

/** The endpoint did not answer within the configured `timeoutMs`. */
export class LlmTimeoutError extends LlmError {
  override name = 'LlmTimeoutError';
  override readonly transient = true;
}

/** The endpoint answered something that is not a valid chat response (garbage, truncated JSON, HTML from a proxy). */
export class LlmResponseError extends LlmError {
  override name = 'LlmResponseError';
}

/**
 * The model answered, but the answer is not JSON matching the schema. Not a transport problem: the cure is to tell the
 * model what was wrong, which `feedback` says in words meant for the model.
 */
export class StructuredOutputError extends Error {
  override name = 'StructuredOutputError';
  constructor(
    message: string,
    /** The text the JSON was looked for in (after thinking was stripped). */
    readonly rawText: string,
    /** One line per problem, e.g. "field `steps[1].title`: expected string, received number". */
    readonly issues: readonly string[],
  ) {
    super(message);
  }

  get feedback(): string {
    const lines = this.issues.map((issue) => `- ${issue}`).join('\n');
    return `Your previous answer could not be used:\n${lines}\nAnswer again with only the corrected JSON object.`;
  }
}

/**
 * Whether an error means "the caller cancelled". Covers the shapes in use: DOMException AbortError, LangChain's
 * ModelAbortError, the OpenAI client's `Error("AbortError")`, and anything thrown once `signal` is aborted.
 */
export function isAbortError(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  if (!(error instanceof Error)) return false;
  return error.name === 'AbortError' || error.name === 'ModelAbortError' || error.message === 'AbortError';
}

const FAILED_CALL = Symbol('failed model call');

/**
 * Marks an error as the failure of the model call for `purpose` ("replan", "step 3"), unless a call inside it already
 * did ("restrictions" while asking for step 3): what a session that stops early names as what failed.
 */
export function failedCall<E>(error: E, purpose: string): E {
  if (error instanceof Error && !(FAILED_CALL in error)) Object.defineProperty(error, FAILED_CALL, { value: purpose, enumerable: false });
  return error;
}

/** The purpose of the model call an error is the failure of (see failedCall), where one was marked. */
export function failedCallOf(error: unknown): string | undefined {
  return error instanceof Error ? (error as { [FAILED_CALL]?: string })[FAILED_CALL] : undefined;
}
