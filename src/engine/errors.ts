/**
 * Engine-level errors of the seed's API that belong to neither the GPU layer (CompileError: src/gpu/errors.ts) nor the
 * tuner (RestrictionCheckError: src/tuner/restrictions.ts, FailedTestsError), plus the LLM layer's errors, re-exported
 * so that the engine's users import errors from one place.
 */
export {
  isAbortError,
  LlmAuthError,
  LlmConfigError,
  LlmConnectionError,
  LlmError,
  LlmModelNotFoundError,
  LlmRateLimitError,
  LlmRequestError,
  LlmResponseError,
  LlmServerError,
  LlmTimeoutError,
  LlmUnreachableError,
  StructuredOutputError,
} from './llm/errors';
export { RetriesExhaustedError } from './retry';

/** A test cannot be used: its input spec is invalid, its data too large, or the original kernel fails on it. */
export class InvalidTest extends Error {
  override name = 'InvalidTest';
}

/** Added to every time budget: process start, compilation and data transfer are not part of `timePerTest`. */
export const TIMEOUT_BUFFER_S = 10;

/**
 * The seed's budget for a tuning run: max(timePerTest * numCombinations, timePerTest) + 10 s. A single test is
 * `tuningTimeoutMs(timePerTest, 1)`.
 */
export function tuningTimeoutMs(timePerTestS: number, numCombinations: number): number {
  if (!Number.isFinite(timePerTestS) || timePerTestS <= 0) throw new RangeError(`timePerTest must be a positive number of seconds, got ${timePerTestS}`);
  if (!Number.isInteger(numCombinations) || numCombinations < 0) throw new RangeError(`numCombinations must be an integer >= 0, got ${numCombinations}`);
  return (Math.max(timePerTestS * numCombinations, timePerTestS) + TIMEOUT_BUFFER_S) * 1000;
}

/** A test or a tuning run exceeded its time budget (see tuningTimeoutMs). */
export class TimeoutError extends Error {
  override name = 'TimeoutError';

  constructor(
    message: string,
    readonly limitMs: number,
  ) {
    super(message);
  }
}
