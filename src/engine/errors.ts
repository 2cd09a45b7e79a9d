/**
 * Engine-level errors of the seed's API that belong to neither the GPU layer (CompileError: src/gpu/errors.ts) nor the
 * tuner (RestrictionCheckError: src/tuner/space/restrictions.ts, FailedTestsError), plus the LLM layer's errors,
 * re-exported so that the engine's users import errors from one place.
 */
import { findingLines, type SanitizerVerdict } from '../tuner/run/sanitizer';

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
export { RetriesExhaustedError } from './llm/retry';

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

/** The model's answer holds no kernel code; `empty`: it holds nothing at all. */
export class NoCodeError extends Error {
  override name = 'NoCodeError';

  constructor(
    message: string,
    readonly answer: { empty: boolean },
  ) {
    super(message);
  }
}

/** The model's answer was cut off before its end (its code block never closes): it hit the output token limit. */
export class TruncatedAnswerError extends Error {
  override name = 'TruncatedAnswerError';
}

/** A rewrite changed the kernel's name or parameter list, which the host code depends on. */
export class SignatureChangedError extends Error {
  override name = 'SignatureChangedError';

  constructor(
    message: string,
    readonly differences: readonly string[],
    /** The interface to keep, as the source declares it. */
    readonly expected: string,
  ) {
    super(message);
  }
}

/** Problems with an answer that the model can fix; `problems` has one line each, meant for the model. */
export abstract class AnswerProblemsError extends Error {
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(message);
  }
}

/** Tunable parameters the model named are unusable (bad names or values, block sizes not called block_size_x/y/z). */
export class InvalidTuneParamsError extends AnswerProblemsError {
  override name = 'InvalidTuneParamsError';
}

/** A structured answer that parsed but does not make sense (a plan step without a title, a verdict for an unknown step). */
export class InvalidAnswerError extends AnswerProblemsError {
  override name = 'InvalidAnswerError';
}

/** The kernel analysis (problem size, outputs) does not fit the kernel's parameters. */
export class InvalidAnalysisError extends AnswerProblemsError {
  override name = 'InvalidAnalysisError';
}

/** A test's baseline run is too short to time reliably or too long for the time budget. */
export class TestSizeError extends Error {
  override name = 'TestSizeError';

  constructor(
    message: string,
    readonly timeMs: number,
    readonly minMs: number,
    readonly maxMs: number,
  ) {
    super(message);
  }
}

/** The kernel to tune cannot be the oracle: it does not compile, or does not reproduce its own results. */
export class UnusableKernelError extends Error {
  override name = 'UnusableKernelError';
}

/**
 * compute-sanitizer found hazards in the best configuration of a candidate that passed the tests (a race, an access out
 * of bounds, a barrier not every thread reaches, a read of memory never written): right results on this GPU today, by
 * luck. The model can fix it, told the findings.
 */
export class SanitizerHazardError extends Error {
  override name = 'SanitizerHazardError';

  constructor(readonly verdict: Extract<SanitizerVerdict, { status: 'hazards' }>) {
    super(`compute-sanitizer found hazards at ${JSON.stringify(verdict.config)}: ${findingLines(verdict.findings, 1)[0]}`);
  }
}
