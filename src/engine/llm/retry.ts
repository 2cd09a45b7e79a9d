/**
 * The seed's RetryPolicy and create_retry_wrapper: when a step fails in a way the model can fix (the code does not
 * compile, a restriction names an unknown parameter, the JSON is wrong), a handler turns the error into the state for
 * the next attempt, typically with a message to the model saying exactly what failed. This is about content; transport
 * failures (429, 5xx, resets) are retried below this, by withTransportRetry and LangGraph's node retry.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { isGraphBubbleUp } from '@langchain/langgraph';
import { isAbortError } from './errors';

/** Returns the state to retry with. */
export type RetryHandler<S> = (state: S, error: Error) => S | Promise<S>;

// Any error class, abstract ones included; `any[]` because constructors of unrelated errors take unrelated arguments.
export type ErrorClass = abstract new (...args: any[]) => Error;

export interface RetryPolicyOptions<S> {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  handlers?: ReadonlyMap<ErrorClass, RetryHandler<S>> | ReadonlyArray<readonly [ErrorClass, RetryHandler<S>]>;
  /** For errors no handler's class covers. Without it such errors are not retried. */
  defaultHandler?: RetryHandler<S>;
}

export class RetryPolicy<S> {
  readonly maxRetries: number;
  private readonly handlers: ReadonlyMap<ErrorClass, RetryHandler<S>>;
  private readonly defaultHandler: RetryHandler<S> | undefined;

  constructor(options: RetryPolicyOptions<S>) {
    const { maxRetries = 3, handlers, defaultHandler } = options;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError(`maxRetries must be an integer >= 0, got ${maxRetries}`);
    this.maxRetries = maxRetries;
    this.handlers = new Map(handlers ?? []);
    this.defaultHandler = defaultHandler;
    if (this.handlers.size === 0 && !defaultHandler) throw new TypeError('a RetryPolicy needs handlers or a defaultHandler');
  }

  /** The handler registered for the error's own class or its nearest ancestor, else the default handler. */
  handlerFor(error: Error): RetryHandler<S> | undefined {
    for (let proto: object | null = Object.getPrototypeOf(error); proto !== null; proto = Object.getPrototypeOf(proto)) {
      const handler = this.handlers.get((proto as { constructor: ErrorClass }).constructor);
      if (handler) return handler;
    }
    return this.defaultHandler;
  }
}

/** Thrown when every attempt failed; `attempts` holds each attempt's error, in order. */
export class RetriesExhaustedError extends Error {
  override name = 'RetriesExhaustedError';

  constructor(readonly attempts: readonly Error[]) {
    const lines = attempts.map((error, i) => `  ${i + 1}. ${error.name}: ${error.message}`);
    super(`gave up after ${attempts.length} attempts:\n${lines.join('\n')}`, { cause: attempts.at(-1) });
  }
}

/** A node function, or anything with `invoke(state, config)` such as a compiled LangGraph subgraph. */
export type RetryTarget<S, R> = ((state: S, config?: RunnableConfig) => R | Promise<R>) | { invoke(state: S, config?: RunnableConfig): Promise<R> };

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/**
 * Wraps `target` so that a failure is handed to the policy's handler for its class and the target runs again with the
 * state the handler returns, up to `maxRetries` times. Cancellation (an aborted `config.signal`, an AbortError) and
 * LangGraph's control flow (interrupts, parent commands) pass through at once; an error with no handler is rethrown
 * as is; after the last retry a RetriesExhaustedError carries every attempt's error.
 */
// S comes from the policy: a compiled graph's invoke also accepts commands and partial updates, which would widen it.
export function createRetryWrapper<S, R = S>(target: RetryTarget<NoInfer<S>, R>, policy: RetryPolicy<S>): (state: S, config?: RunnableConfig) => Promise<R> {
  const run = typeof target === 'function' ? target : (state: S, config?: RunnableConfig) => target.invoke(state, config);
  return async (state: S, config?: RunnableConfig) => {
    const signal = config?.signal;
    const errors: Error[] = [];
    let current = state;
    for (;;) {
      signal?.throwIfAborted();
      try {
        return await run(current, config);
      } catch (thrown) {
        if (isAbortError(thrown, signal) || isGraphBubbleUp(thrown)) throw thrown;
        const error = asError(thrown);
        const handler = policy.handlerFor(error);
        if (!handler) throw thrown;
        errors.push(error);
        if (errors.length > policy.maxRetries) throw new RetriesExhaustedError(errors);
        current = await handler(current, error);
      }
    }
  };
}
