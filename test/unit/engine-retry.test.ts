// RetryPolicy + createRetryWrapper: the handler is chosen by error class, the corrective state reaches the next attempt
// (over HTTP: the compiler log is in the next request), exhaustion is aggregated, cancellation and LangGraph's control
// flow are never retried; around plain functions and around compiled subgraphs.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { Annotation, END, interrupt, MemorySaver, messagesStateReducer, START, StateGraph, Command } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { createChatModel } from '../../src/engine/llm/providers';
import { createRetryWrapper, RetriesExhaustedError, RetryPolicy, type RetryHandler } from '../../src/engine/llm/retry';
import { loadScript, startScriptedLlmServer, type ScriptedLlmServer } from '../support/scripted-llm-server';

class KernelError extends Error {}
class BuildError extends KernelError {
  constructor(readonly log: string) {
    super('the kernel did not compile');
  }
}
class LinkError extends BuildError {}
class WrongResultError extends KernelError {}

interface Attempt {
  tries: number;
  notes: string[];
}

const note =
  (text: string): RetryHandler<Attempt> =>
  (state, error) => ({ tries: state.tries + 1, notes: [...state.notes, `${text}: ${error.message}`] });

describe('RetryPolicy', () => {
  it('needs handlers or a default handler, and a sane maxRetries', () => {
    expect(() => new RetryPolicy<Attempt>({})).toThrow(/needs handlers or a defaultHandler/);
    expect(() => new RetryPolicy<Attempt>({ maxRetries: -1, defaultHandler: note('x') })).toThrow(RangeError);
    expect(new RetryPolicy<Attempt>({ defaultHandler: note('x') }).maxRetries).toBe(3);
  });

  it('picks the most specific handler along the prototype chain, then the default', () => {
    const build = note('build');
    const kernel = note('kernel');
    const fallback = note('other');
    const policy = new RetryPolicy<Attempt>({
      handlers: [
        [KernelError, kernel],
        [BuildError, build],
      ],
      defaultHandler: fallback,
    });
    expect(policy.handlerFor(new LinkError('log'))).toBe(build);
    expect(policy.handlerFor(new BuildError('log'))).toBe(build);
    expect(policy.handlerFor(new WrongResultError('wrong'))).toBe(kernel);
    expect(policy.handlerFor(new TypeError('x'))).toBe(fallback);
    expect(new RetryPolicy<Attempt>({ handlers: new Map([[BuildError, build]]) }).handlerFor(new WrongResultError('w'))).toBeUndefined();
  });
});

describe('createRetryWrapper around a function', () => {
  it('passes the corrective state to the next attempt', async () => {
    const seen: Attempt[] = [];
    const wrapped = createRetryWrapper(
      async (state: Attempt) => {
        seen.push(state);
        if (state.tries === 0) throw new BuildError('error: identifier "tile" is undefined');
        if (state.tries === 1) throw new WrongResultError('output 3 differs');
        return { ...state, done: true };
      },
      new RetryPolicy<Attempt>({
        handlers: [
          [BuildError, (s, e) => ({ tries: s.tries + 1, notes: [...s.notes, `compile log: ${(e as BuildError).log}`] })],
          [WrongResultError, note('wrong result')],
        ],
      }),
    );
    await expect(wrapped({ tries: 0, notes: [] })).resolves.toEqual({
      tries: 2,
      notes: ['compile log: error: identifier "tile" is undefined', 'wrong result: output 3 differs'],
      done: true,
    });
    expect(seen.map((s) => s.tries)).toEqual([0, 1, 2]);
  });

  it('after maxRetries, RetriesExhaustedError carries every attempt', async () => {
    let calls = 0;
    const wrapped = createRetryWrapper(
      async () => {
        calls++;
        throw new BuildError(`log ${calls}`);
      },
      new RetryPolicy<Attempt>({ maxRetries: 2, defaultHandler: note('again') }),
    );
    const error = await wrapped({ tries: 0, notes: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    const exhausted = error as RetriesExhaustedError;
    expect(calls).toBe(3);
    expect(exhausted.attempts).toHaveLength(3);
    expect(exhausted.attempts.every((e) => e instanceof BuildError)).toBe(true);
    expect(exhausted.cause).toBe(exhausted.attempts[2]);
    expect(exhausted.message).toBe('gave up after 3 attempts:\n  1. Error: the kernel did not compile\n  2. Error: the kernel did not compile\n  3. Error: the kernel did not compile');
  });

  it('rethrows an error no handler covers, at once', async () => {
    let calls = 0;
    const bug = new TypeError('a bug');
    const wrapped = createRetryWrapper(
      async () => {
        calls++;
        throw bug;
      },
      new RetryPolicy<Attempt>({ handlers: [[BuildError, note('b')]] }),
    );
    await expect(wrapped({ tries: 0, notes: [] })).rejects.toBe(bug);
    expect(calls).toBe(1);
  });

  it('never retries a cancellation, and stops when the signal is aborted during a handler', async () => {
    let calls = 0;
    const abortError = new DOMException('stopped', 'AbortError');
    const wrapped = createRetryWrapper(
      async () => {
        calls++;
        throw abortError;
      },
      new RetryPolicy<Attempt>({ defaultHandler: note('x') }),
    );
    await expect(wrapped({ tries: 0, notes: [] })).rejects.toBe(abortError);
    expect(calls).toBe(1);

    const controller = new AbortController();
    let attempts = 0;
    const slow = createRetryWrapper(
      async () => {
        attempts++;
        throw new BuildError('log');
      },
      new RetryPolicy<Attempt>({
        defaultHandler: (s) => {
          controller.abort();
          return s;
        },
      }),
    );
    await expect(slow({ tries: 0, notes: [] }, { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(attempts).toBe(1);

    const already = new AbortController();
    already.abort();
    let started = 0;
    const never = createRetryWrapper(async () => ++started, new RetryPolicy<Attempt>({ defaultHandler: note('x') }));
    await expect(never({ tries: 0, notes: [] }, { signal: already.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(started).toBe(0);
  });
});

// A small "rewrite the kernel" subgraph: asks the model, then "compiles" (a stand-in that rejects an unknown identifier).
const RewriteState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  code: Annotation<string>(),
});
type Rewrite = typeof RewriteState.State;

function fakeCompile(code: string): void {
  if (code.includes('+= tile;')) throw new BuildError('kernel.cu(1): error: identifier "tile" is undefined');
}

const feedCompilerLog: RetryHandler<Rewrite> = (state, error) => ({
  ...state,
  messages: [...state.messages, new HumanMessage(`The kernel did not compile. Fix it. Compiler output:\n${(error as BuildError).log}`)],
});

function rewriteGraph(url: string) {
  const model = createChatModel({ provider: 'ollama', model: 'scripted-model', baseUrl: url });
  return new StateGraph(RewriteState)
    .addNode('ask', async (state: Rewrite) => {
      const answer = await model.invoke(state.messages);
      return { messages: [answer], code: String(answer.content) };
    })
    .addNode('compile', (state: Rewrite) => {
      fakeCompile(state.code);
      return {};
    })
    .addEdge(START, 'ask')
    .addEdge('ask', 'compile')
    .addEdge('compile', END)
    .compile();
}

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('createRetryWrapper around a compiled subgraph', () => {
  it('invoked directly: the compiler log is in the second request to the model', async () => {
    server = await startScriptedLlmServer(loadScript('compile-error-feedback'));
    const wrapped = createRetryWrapper(rewriteGraph(server.url), new RetryPolicy<Rewrite>({ handlers: [[BuildError, feedCompilerLog]] }));
    const result = await wrapped({ messages: [new HumanMessage('Rewrite the kernel to add one.')], code: '' });
    expect(result.code).toContain('+= 1.0f;');
    expect(server.requests).toHaveLength(2);
    expect(server.mismatches).toEqual([]);
    // The handler gets the state the failed attempt started with: a subgraph that throws returns no partial state, so
    // the failed answer is not in it (an error that should show the code to the model must carry the code).
    const second = server.requests[1]!.body.messages as Array<{ role: string; content: string }>;
    expect(second.map((m) => m.role)).toEqual(['user', 'user']);
    expect(second[1]!.content).toBe('The kernel did not compile. Fix it. Compiler output:\nkernel.cu(1): error: identifier "tile" is undefined');
  });

  it('as a node of a parent graph with a checkpointer', async () => {
    server = await startScriptedLlmServer(loadScript('compile-error-feedback'));
    const wrapped = createRetryWrapper(rewriteGraph(server.url), new RetryPolicy<Rewrite>({ handlers: [[BuildError, feedCompilerLog]] }));
    const parent = new StateGraph(RewriteState).addNode('rewrite', wrapped).addEdge(START, 'rewrite').addEdge('rewrite', END).compile({ checkpointer: new MemorySaver() });
    const result = await parent.invoke({ messages: [new HumanMessage('Rewrite the kernel to add one.')] }, { configurable: { thread_id: 't1' } });
    expect(result.code).toContain('+= 1.0f;');
    expect(result.messages.at(-1)).toBeInstanceOf(AIMessage);
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
  });

  it("lets LangGraph's interrupt through instead of treating it as a failure", async () => {
    const State = Annotation.Root({ plan: Annotation<string>() });
    let handled = 0;
    const inner = new StateGraph(State)
      .addNode('approve', () => ({ plan: interrupt<string, string>('approve the plan?') }))
      .addEdge(START, 'approve')
      .addEdge('approve', END)
      .compile();
    const parent = new StateGraph(State)
      .addNode(
        'approval',
        createRetryWrapper(
          inner,
          new RetryPolicy<typeof State.State>({
            defaultHandler: (s) => {
              handled++;
              return s;
            },
          }),
        ),
      )
      .addEdge(START, 'approval')
      .addEdge('approval', END)
      .compile({ checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: 'hitl' } };
    const first = await parent.invoke({ plan: 'draft' }, thread);
    expect((first as { __interrupt__?: unknown[] }).__interrupt__).toHaveLength(1);
    expect(handled).toBe(0);
    const resumed = await parent.invoke(new Command({ resume: 'approved plan' }), thread);
    expect(resumed.plan).toBe('approved plan');
  });
});
