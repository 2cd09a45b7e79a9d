// Every way an answer or a request can fail in a session, over the real clients and the scripted server: each content
// failure is told to the model (after its own answer) and fixed; transport failures are retried by LangGraph's node
// retry or end the session with one clear error. Also thinking stripping and the structured-output modes.
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { StructuredOutputType } from '../../src/engine/llm/structured';
import { createChatModel } from '../../src/engine/llm/providers';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { collect, FAST_TRANSPORT_RETRY, ollamaModel, openaiModel, requestText, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { closedPortUrl, loadScript, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { withoutGraphEvents } from '../support/graph-events';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function transformer(options: Partial<LLMKernelTransformerOptions> & Pick<LLMKernelTransformerOptions, 'llm'>): LLMKernelTransformer {
  return new LLMKernelTransformer(SAXPY, {
    backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
    tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false }),
    transportRetryPolicy: FAST_TRANSPORT_RETRY,
    ...options,
  });
}

type Message = { role: string; content: string | null };
const messagesOf = (s: ScriptedLlmServer, turn: number) => s.requests.find((r) => r.turn === turn)!.body.messages as Message[];

describe('content retries', () => {
  it('tells the model exactly what failed, after its own answer, until each answer is usable', async () => {
    server = await serve('retry-paths');
    const run = await collect(transformer({ llm: openaiModel(server) }));
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('llm.retry').map((e) => `${e.purpose}: ${e.error}`)).toEqual([
      'problem size: StructuredOutputError',
      'problem size: InvalidAnalysisError',
      'outputs: InvalidAnalysisError',
      'test spec: InvalidTestSpecError',
      'test spec: TestSizeError',
      'step 1: NoCodeError',
      'step 1: SignatureChangedError',
      'restrictions: RestrictionCheckError',
    ]);
    // Each correction follows the answer it is about.
    const fixed = messagesOf(server, 2);
    expect(fixed.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(fixed[2]!.content).toBe('{"problemSize": ["n",]]');
    const third = messagesOf(server, 3);
    expect(third.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(third[4]!.content).toBe('{"problemSize":["len"]}');
    // The test was resized after it was measured too short, and the accepted kernel is tuned on the resized one.
    expect(run.of('tests.ready')[0]!.tests[0]).toMatchObject({ timeMs: 1.048576 });
    expect(run.of('step.accepted')[0]).toMatchObject({ bestParams: { block_size_x: 512 } });
    expect(run.of('session.finished')[0]!.restrictions).toEqual(['block_size_x <= 1024']);
  });

  it('fails the session when the retries are spent, with every attempt named', async () => {
    server = await serve(loadScript('retry-paths').slice(0, 2));
    const run = await collect(transformer({ llm: openaiModel(server), retryPolicy: defaultRetryPolicy(0) }));
    expect(run.end.status).toBe('failed');
    const failed = run.of('session.failed')[0]!;
    expect(failed.error.name).toBe('RetriesExhaustedError');
    expect(failed.error.message).toMatch(/gave up after 1 attempts:\n {2}1\. StructuredOutputError: the answer is not usable JSON: the JSON is malformed/);
  });
});

describe('transport failures', () => {
  it('retries a 429 with LangGraph\'s node retry, then goes on', async () => {
    server = await serve('transport-429-session');
    const run = await collect(transformer({ llm: ollamaModel(server) }));
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    expect(server.requests.filter((r) => r.path === '/api/chat')).toHaveLength(6);
    // The repeated request is the same request.
    expect(requestText(server.requests[1]!.body)).toBe(requestText(server.requests[0]!.body));
  });

  it('ends with one clear error when nothing listens, without retrying', async () => {
    const url = await closedPortUrl();
    const run = await collect(transformer({ llm: createChatModel({ provider: 'ollama', model: 'llama3', baseUrl: url }) }));
    expect(run.end.status).toBe('failed');
    expect(run.of('session.failed')[0]!.error).toEqual({ name: 'LlmUnreachableError', message: `cannot reach Ollama at ${url}: is it running? \`ollama serve\`` });
    // The one request that failed is in the record, as it failed.
    expect(withoutGraphEvents(run.types)).toEqual(['session.started', 'llm.exchange', 'session.failed']);
    expect(run.of('llm.exchange')[0]!.exchange).toMatchObject({ purpose: 'describe kernel', model: 'llama3', error: { name: expect.any(String) } });
  });
});

describe('thinking models', () => {
  it('strips <think> blocks before anything is parsed or shown', async () => {
    server = await serve('thinking-session');
    const run = await collect(transformer({ llm: ollamaModel(server), stripThinkingOutput: true }));
    expect(server.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('analysis.done')[0]).toEqual(expect.objectContaining({ description: 'It computes y = a * x + y element-wise.', problemSize: ['n'], outputs: ['y'] }));
    const shown = run.events.filter((e) => e.type !== 'llm.exchange');
    expect(JSON.stringify(shown)).not.toContain('<think>');
    expect(run.of('llm.retry')).toEqual([]);
    // The record of the exchanges keeps each answer as the model gave it, text and structured alike.
    const answers = run.of('llm.exchange').map((e) => e.exchange.response?.content);
    expect(answers).toHaveLength(server.requests.length);
    expect(answers.filter((a) => String(a).startsWith('<think>')).length).toBeGreaterThan(1);
    expect(answers[0]).toContain('<think>');
  });
});

/** The minimal session's structured answers as function calls (function calling answers with tool calls). */
function asToolCalls(turns: ScriptTurn[]): ScriptTurn[] {
  return turns.map((t, i) => (i === 0 ? t : { ...t, respond: { toolCall: { name: 'answer', arguments: JSON.parse(t.respond.content!) as Record<string, unknown> } } }));
}

/** jsonify: each structured answer is a free answer, then its conversion to JSON. */
function asJsonify(turns: ScriptTurn[]): ScriptTurn[] {
  return turns.flatMap((t, i) =>
    i === 0 ? [t] : [{ ...t, respond: { content: `In words: ${t.respond.content}` } }, { comment: `${t.comment} (converted)`, match: { contains: 'Convert the answer below' }, respond: t.respond }],
  );
}

describe('structured-output modes', () => {
  const cases = [
    { provider: 'openai', type: StructuredOutputType.DEFAULT, check: (b: any) => expect(b.response_format?.type).toBe('json_schema') },
    { provider: 'openai', type: StructuredOutputType.JSON_SCHEMA, check: (b: any) => expect(b.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } }) },
    { provider: 'openai', type: StructuredOutputType.TOOL_CALLING, turns: asToolCalls, check: (b: any) => expect(b.tools?.[0]?.type).toBe('function') },
    { provider: 'openai', type: StructuredOutputType.JSON_MODE, check: (b: any) => expect(b.response_format).toEqual({ type: 'json_object' }) },
    { provider: 'openai', type: StructuredOutputType.SEPARATE_REQUEST, turns: asJsonify, check: (b: any) => expect(b.response_format).toBeUndefined() },
    { provider: 'ollama', type: StructuredOutputType.DEFAULT, check: (b: any) => expect(b.format).toMatchObject({ type: 'object' }) },
    { provider: 'ollama', type: StructuredOutputType.JSON_MODE, check: (b: any) => expect(b.format).toBe('json') },
    { provider: 'ollama', type: StructuredOutputType.TOOL_CALLING, turns: asToolCalls, check: (b: any) => expect(b.tools?.[0]?.function?.name).toBeDefined() },
    { provider: 'ollama', type: StructuredOutputType.SEPARATE_REQUEST, turns: asJsonify, check: (b: any) => expect(b.format).toBeUndefined() },
  ] as const;

  it.each(cases)('$provider $type: every structured request is made that way, and the session completes', async (c) => {
    const base = loadScript('minimal-session');
    const turns = 'turns' in c ? c.turns(base) : base;
    server = await serve(turns);
    const llm = c.provider === 'openai' ? openaiModel(server) : ollamaModel(server);
    const run = await collect(transformer({ llm, structuredOutputType: c.type }));
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    // Every request but the description (free text) asks for structured output; with jsonify, the conversions are plain too.
    const structured = server.requests.filter((r) => r.turn !== 0 && !requestText(r.body).includes('Convert the answer below'));
    expect(structured).toHaveLength(4);
    for (const request of structured) c.check(request.body);
    expect(run.of('analysis.done')[0]).toMatchObject({ problemSize: ['n'], outputs: ['y'] });
  });
});
