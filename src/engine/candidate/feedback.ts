/**
 * Content retries: when an answer of the model fails (no code, a changed signature, a compile error, wrong results, a
 * bad restriction, malformed JSON ...), the retry policy's handler for that error class appends a correction to the
 * conversation, naming exactly what failed, and the model is asked again. Transport failures (LlmError) never pass
 * through here: LangGraph's node retry policy retries those.
 */
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { CompileError, KernelFaultError, KernelTimeoutError, LaunchError } from '../../gpu/errors';
import { GeometryError } from '../../tuner/space/geometry';
import { InvalidTestDataError } from '../../tuner/run/test-data';
import { InvalidTestSpecError } from '../../tuner/spec/input-spec';
import { SpliceError } from '../../tuner/source/device-unit';
import { ParseError } from '../../tuner/source/kernel-signature';
import { RestrictionCheckError } from '../../tuner/space/restrictions';
import { SearchSpaceError } from '../../tuner/space/search-space';
import { FailedTestsError } from '../../tuner/tunable-kernel';
import {
  AnswerProblemsError,
  InvalidTest,
  LlmError,
  NoCodeError,
  SanitizerHazardError,
  SignatureChangedError,
  StructuredOutputError,
  TestSizeError,
  TimeoutError,
  TruncatedAnswerError,
} from '../errors';
import { findingLines } from '../../tuner/run/sanitizer';
import { emit } from '../progress/events';
import { failedCall } from '../llm/errors';
import { createRetryWrapper, RetryPolicy, type ErrorClass, type RetryHandler } from '../llm/retry';

/** One failed answer and what the model is told about it. */
export interface Feedback {
  /** The model's answer, when it got as far as answering. */
  answer?: string;
  correction: string;
}

/** The state a content retry loop passes from attempt to attempt (and to RetryPolicy handlers). */
export interface Attempt {
  feedback: Feedback[];
}

const ANSWER = Symbol('llm answer');

/** Marks an error as caused by this answer, so that the retry shows the model its own answer before the correction. */
export function withAnswer<E>(error: E, answer: string): E {
  if (error instanceof Error && !(ANSWER in error)) Object.defineProperty(error, ANSWER, { value: answer, enumerable: false });
  return error;
}

export function answerOf(error: Error): string | undefined {
  return (error as { [ANSWER]?: string })[ANSWER];
}

/** Compiler logs can be long; the model needs the first errors, not pages of the same one. */
const MAX_LOG_CHARS = 6000;

function clip(text: string, max = MAX_LOG_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n... (${text.length - max} more characters)`;
}

const bullets = (lines: readonly string[]) => lines.map((l) => `- ${l}`).join('\n');

/** What the model is told about a failure: what exactly went wrong and what to do. */
export function correctionFor(error: Error): string {
  if (error instanceof StructuredOutputError) return error.feedback;
  if (error instanceof NoCodeError) {
    return `Your answer ${error.answer.empty ? 'is empty' : 'contains no CUDA kernel code'}. Answer with the complete kernel source in one \`\`\`cuda fenced block.`;
  }
  if (error instanceof TruncatedAnswerError) {
    return `Your answer was cut off before its end (${error.message}), probably at the output token limit. Answer again with the complete kernel in one \`\`\`cuda block (and the \`\`\`json block the request asks for), without explanations, so that it fits.`;
  }
  if (error instanceof SpliceError) return `Your answer cannot be used: ${error.message}.\nAnswer again with the kernel and the device code it uses only.`;
  if (error instanceof SignatureChangedError) {
    return [
      "The kernel's interface changed:",
      bullets(error.differences),
      `The host code calls it as \`${error.expected}\`: keep this name and parameter list exactly (order, names and types); only the body may change. Answer with the complete corrected kernel.`,
    ].join('\n');
  }
  if (error instanceof ParseError) return `The code could not be parsed: ${error.message}\nAnswer with complete, valid CUDA source.`;
  if (error instanceof CompileError) {
    return [
      'The kernel did not compile. Compiler output:',
      '```',
      clip(error.log.trim() || error.message),
      '```',
      'Fix every error and answer with the complete corrected kernel.',
    ].join('\n');
  }
  if (error instanceof FailedTestsError) {
    return [
      'The kernel compiled and ran, but its results are wrong: they differ from the original kernel on the same inputs.',
      error.message,
      `Configuration: ${JSON.stringify(error.result.config)}.`,
      'Find the bug (indexing, bounds checks, missing __syncthreads, elements the launch grid does not cover) and answer with the complete corrected kernel.',
    ].join('\n');
  }
  if (error instanceof SanitizerHazardError) {
    return [
      `The kernel passed the tests, but compute-sanitizer found hazards in it at configuration ${JSON.stringify(error.verdict.config)}: its results are right on this GPU today by luck of scheduling or of what memory holds.`,
      bullets(findingLines(error.verdict.findings)),
      'Shared memory written by one thread and read by another needs a barrier between the two: __syncthreads() across the block, __syncwarp() within a warp (the lanes of a warp are not in lockstep). Every thread of the block must reach each __syncthreads(), so none may sit in a branch only some threads take. Every index must stay inside its buffer, the last, partial block included, and nothing may be read before it is written. Answer with the complete corrected kernel.',
    ].join('\n');
  }
  if (error instanceof TimeoutError || error instanceof KernelTimeoutError) {
    return `The kernel did not finish in time: ${error.message}\nLook for loops that never end and __syncthreads() that not every thread of the block reaches, and answer with the complete corrected kernel.`;
  }
  if (error instanceof KernelFaultError) {
    return `The kernel crashed on the GPU: ${error.message}\nThis is almost always an out-of-bounds access: check every index against the array sizes, including threads of the last, partial block. Answer with the complete corrected kernel.`;
  }
  if (error instanceof LaunchError) {
    return `The kernel cannot be launched: ${error.message}\nReduce its resource use (registers, shared memory) or restrict the parameters that cause it, and answer again.`;
  }
  if (error instanceof RestrictionCheckError) {
    return `${error.message}\nRestrictions may only use these tunable parameters: ${error.knownNames.join(', ') || 'none'}. Answer again with corrected restrictions.`;
  }
  if (error instanceof AnswerProblemsError || error instanceof InvalidTestSpecError) {
    return `Your answer cannot be used:\n${bullets(error.problems)}\nAnswer again with these problems fixed.`;
  }
  if (error instanceof TestSizeError) return error.message;
  if (error instanceof SearchSpaceError || error instanceof GeometryError || error instanceof InvalidTestDataError || error instanceof InvalidTest) {
    return `Your answer cannot be used: ${error.message}\nAnswer again with this fixed.`;
  }
  return `Your answer failed: ${error.name}: ${error.message}\nAnswer again with this fixed.`;
}

/** Appends the error's correction (after the model's own answer) to the attempt: every default handler does this. */
export const appendCorrection: RetryHandler<Attempt> = (state, error) => {
  const answer = answerOf(error) ?? (error instanceof StructuredOutputError ? error.rawText : undefined);
  return { ...state, feedback: [...state.feedback, { ...(answer !== undefined && { answer }), correction: correctionFor(error) }] };
};

/** The error classes a model can do something about. */
export const CORRECTABLE_ERRORS: readonly ErrorClass[] = [
  StructuredOutputError,
  NoCodeError,
  TruncatedAnswerError,
  SignatureChangedError,
  SpliceError,
  ParseError,
  CompileError,
  FailedTestsError,
  SanitizerHazardError,
  TimeoutError,
  KernelTimeoutError,
  KernelFaultError,
  LaunchError,
  RestrictionCheckError,
  AnswerProblemsError,
  InvalidTestSpecError,
  TestSizeError,
  SearchSpaceError,
  GeometryError,
  InvalidTestDataError,
  InvalidTest,
];

/** The seed's default policies (transformer, tester, tuner) in one: 3 retries, a correction for each correctable error. */
export function defaultRetryPolicy(maxRetries = 3): RetryPolicy<Attempt> {
  return new RetryPolicy<Attempt>({ maxRetries, handlers: CORRECTABLE_ERRORS.map((c) => [c, appendCorrection] as const) });
}

type Outcome<R> = { value: R } | { passThrough: unknown };

/**
 * Runs `attempt` under the policy: each failure the policy handles becomes a correction for the next attempt (and an
 * `llm.retry` event); transport failures and errors it does not handle leave at once, unchanged; when every attempt
 * failed, a RetriesExhaustedError carries each attempt's error. What leaves is marked as the failure of `purpose`
 * (failedCall), unless a call inside it was marked first.
 */
export async function withRetries<R>(
  policy: RetryPolicy<Attempt>,
  config: LangGraphRunnableConfig,
  purpose: string,
  attempt: (state: Attempt) => Promise<R>,
): Promise<R> {
  // createRetryWrapper consults the policy for every error; errors it must not see are carried out as values.
  const guarded = async (state: Attempt): Promise<Outcome<R>> => {
    try {
      return { value: await attempt(state) };
    } catch (error) {
      if (error instanceof LlmError || !(error instanceof Error) || !policy.handlerFor(error)) return { passThrough: error };
      throw error;
    }
  };
  const announcing = new RetryPolicy<Attempt>({
    maxRetries: policy.maxRetries,
    defaultHandler: (state, error) => {
      emit(config, { type: 'llm.retry', purpose, attempt: state.feedback.length + 1, error: error.name, message: error.message });
      return policy.handlerFor(error)!(state, error);
    },
  });
  let outcome: Outcome<R>;
  try {
    outcome = await createRetryWrapper<Attempt, Outcome<R>>(guarded, announcing)({ feedback: [] }, config);
  } catch (error) {
    throw failedCall(error, purpose);
  }
  if ('passThrough' in outcome) throw failedCall(outcome.passThrough, purpose);
  return outcome.value;
}

/** System prompt, the request, then each failed answer followed by its correction. */
export function conversation(system: string, prompt: string, feedback: readonly Feedback[]): BaseMessage[] {
  const messages: BaseMessage[] = [new SystemMessage(system)];
  let pendingUser = prompt;
  for (const f of feedback) {
    if (f.answer === undefined) {
      // No answer to show: a second user message in a row would break chat templates that alternate roles.
      pendingUser += `\n\n${f.correction}`;
      continue;
    }
    messages.push(new HumanMessage(pendingUser), new AIMessage(f.answer));
    pendingUser = f.correction;
  }
  messages.push(new HumanMessage(pendingUser));
  return messages;
}
