// Every request a session makes to its model is recorded as an llm.exchange event (messages as sent, parameters, the
// answer, timing), for both clients and every structured-output mode; secrets never reach the record.
import { afterEach, describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/engine/llm/exchange';
import { createChatModel } from '../../src/engine/llm/providers';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { collect, saxpySessionOptions, ollamaModel, openaiModel, requestText, SAXPY, scriptedServers } from '../support/engine-harness';
import { loadScript, type ScriptTurn } from '../support/scripted-llm-server';

const servers = scriptedServers();
afterEach(() => servers.closeAll());
const server = (script: string | ScriptTurn[]) => servers.start(script);

const options = saxpySessionOptions;

describe('recording the model exchanges', () => {
  it('records one exchange per request, with the messages as sent and the answer as received (OpenAI client)', async () => {
    const s = await server('autonomous-session');
    const run = await collect(new LLMKernelTransformer(SAXPY, options(openaiModel(s))));
    expect(run.end).toEqual({ status: 'finished' });
    const exchanges = run.of('llm.exchange').map((e) => e.exchange);
    expect(exchanges).toHaveLength(s.requests.length);
    exchanges.forEach((x, i) => {
      const body = s.requests[i]!.body as { messages: { role: string; content: string }[] };
      expect(x.messages.map((m) => [m.role, m.content])).toEqual(body.messages.map((m) => [m.role, m.content]));
      expect(x.model).toBe('scripted-model');
      expect(x.durationMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(x.startedAt)).not.toBeNaN();
    });
    expect(exchanges.map((x) => x.purpose)).toEqual([
      'describe kernel',
      'problem size',
      'outputs',
      'test spec',
      'plan',
      'validate steps',
      'step 1',
      'restrictions',
      'step 1',
      'restrictions',
      'step 2',
      'step 3',
      'restrictions',
      'replan',
    ]);
    const script = loadScript('autonomous-session');
    expect(exchanges.map((x) => x.response?.content)).toEqual(script.map((t) => t.respond.content));
    // The structured requests carry their response_format, as the client sent it.
    const plan = exchanges[4]!;
    expect(plan.params).toMatchObject({ model: 'scripted-model', response_format: { type: 'json_schema', json_schema: { name: 'plan' } } });
    expect(plan.response?.usage).toEqual({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
    // The event reached the stream in order: each exchange before its usage report.
    const types = run.types.filter((t) => t === 'llm.exchange' || t === 'llm.usage');
    expect(types.slice(0, 4)).toEqual(['llm.exchange', 'llm.usage', 'llm.exchange', 'llm.usage']);
  });

  it('records a failed request with its status, then the retry that answered (Ollama client)', async () => {
    const script = loadScript('autonomous-session');
    const s = await server([{ comment: 'overloaded', respond: { status: 503, error: 'model is loading' } }, ...script]);
    const run = await collect(new LLMKernelTransformer(SAXPY, options(ollamaModel(s))));
    expect(run.end).toEqual({ status: 'finished' });
    const [failed, retried] = run.of('llm.exchange').map((e) => e.exchange);
    expect(failed).toMatchObject({ purpose: 'describe kernel', error: { status: 503 } });
    expect(failed!.response).toBeUndefined();
    expect(retried).toMatchObject({ purpose: 'describe kernel', response: { content: script[0]!.respond.content } });
    expect(retried!.messages).toEqual(failed!.messages);
  });

  it('never records the API key, an Authorization header or credentials in a URL', async () => {
    const s = await server('autonomous-session');
    const secret = 'sk-proj-THIS-IS-SECRET-0123456789';
    const llm = createChatModel({ provider: 'openai', model: 'scripted-model', baseUrl: `${s.url}/v1`, apiKey: secret });
    const run = await collect(new LLMKernelTransformer(SAXPY, options(llm)));
    expect(run.end).toEqual({ status: 'finished' });
    // The key did go out (the server saw it), and nothing of it is in the session's events.
    expect(s.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    const recorded = JSON.stringify(run.events);
    expect(recorded).not.toContain(secret);
    expect(recorded).not.toContain('THIS-IS-SECRET');
    expect(recorded.toLowerCase()).not.toContain('authorization');
    expect(recorded).not.toMatch(/Bearer\s/);
  });

  it('redacts credential fields, headers, URL credentials, key parameters and known secrets from any record', () => {
    const record = {
      model: 'm',
      apiKey: 'abc123secret',
      openAIApiKey: 'x',
      headers: { Authorization: 'Bearer abcdefghijklmnop', 'X-Api-Key': 'k-123', accept: 'application/json' },
      nested: [{ access_token: 'tok', note: 'see https://user:pa55@example.com/v1?key=zzz&x=1' }],
      prompt: 'my key is sk-known-value, and Bearer abcdefgh12345678 is a token',
      max_tokens: 256,
      usage: { promptTokens: 10 },
    };
    const clean = redactSecrets(record, ['sk-known-value']);
    expect(clean.apiKey).toBe('[redacted]');
    expect(clean.openAIApiKey).toBe('[redacted]');
    expect(clean.headers).toEqual({ Authorization: '[redacted]', 'X-Api-Key': '[redacted]', accept: 'application/json' });
    expect(clean.nested[0]).toEqual({ access_token: '[redacted]', note: 'see https://[redacted]@example.com/v1?key=[redacted]&x=1' });
    expect(clean.prompt).toBe('my key is [redacted], and Bearer [redacted] is a token');
    expect(clean.max_tokens).toBe(256);
    expect(clean.usage).toEqual({ promptTokens: 10 });
    // The input is left as it was.
    expect(record.apiKey).toBe('abc123secret');
  });

  it('records both requests of the jsonify mode, the second one asking to convert the first answer', async () => {
    const script = loadScript('autonomous-session').flatMap((turn) => {
      const structured = turn.respond.content?.trim().startsWith('{');
      if (!structured) return [turn];
      return [
        { comment: `${turn.comment} (free answer)`, respond: { content: `Here it is: ${turn.respond.content}` } },
        { comment: `${turn.comment} (as JSON)`, match: { contains: 'Convert the answer below' }, respond: { content: turn.respond.content! } },
      ];
    });
    const s = await server(script);
    const run = await collect(new LLMKernelTransformer(SAXPY, options(openaiModel(s), { structuredOutputType: 'jsonify' })));
    expect(s.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    const exchanges = run.of('llm.exchange').map((e) => e.exchange);
    expect(exchanges).toHaveLength(s.requests.length);
    const [free, converted] = exchanges.filter((x) => x.purpose === 'problem size');
    expect(free!.response?.content).toMatch(/^Here it is: /);
    expect(requestText({ messages: converted!.messages as { content?: unknown }[] })).toContain(free!.response!.content as string);
  });
});
