// The scripted LLM server (a test double) keeps its promises: wire formats, matching, diagnostics, recording.
import { afterEach, describe, expect, it } from 'vitest';
import { loadScript, startScriptedLlmServer, type ScriptedLlmServer } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('scripted LLM server', () => {
  it('answers a turn whose match fails with 500 and a diagnostic, and records the mismatch', async () => {
    server = await startScriptedLlmServer(loadScript('compile-error-feedback'));
    const response = await post(`${server.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'Something else' }] });
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toBe(
      'scripted server: turn 0 (first attempt: code that does not compile) does not match: the last user message lacks "Rewrite the kernel"; it reads: "Something else"',
    );
    expect(server.mismatches).toEqual([{ turn: 0, path: '/v1/chat/completions', reason: expect.stringContaining('lacks "Rewrite the kernel"') }]);
    expect(server.remaining()).toBe(1);
  });

  it('checks the role asked for, and reports a request after the script ran out', async () => {
    server = await startScriptedLlmServer([{ match: { role: 'system', contains: 'CUDA' }, respond: { content: 'ok' } }]);
    const ok = await post(`${server.url}/api/chat`, { model: 'm', stream: false, messages: [{ role: 'system', content: 'You know CUDA.' }, { role: 'user', content: 'hi' }] });
    expect(await ok.json()).toMatchObject({ message: { role: 'assistant', content: 'ok' }, done: true, done_reason: 'stop', eval_count: 1 });
    const extra = await post(`${server.url}/api/chat`, { model: 'm', stream: false, messages: [] });
    expect(extra.status).toBe(500);
    expect(await extra.json()).toEqual({ error: 'scripted server: the script has 1 turn(s), all used; this is request 2' });
    expect(server.mismatches).toEqual([{ turn: null, path: '/api/chat', reason: 'the script has 1 turn(s), all used; this is request 2' }]);
    expect(server.requests.map((r) => r.turn)).toEqual([0, undefined]);
  });

  it('streams Ollama NDJSON: pieces, then a final line with the counts', async () => {
    server = await startScriptedLlmServer([{ respond: { chunks: ['a', 'b'] }, usage: { promptTokens: 3, completionTokens: 2 } }]);
    const response = await post(`${server.url}/api/chat`, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await response.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ message: { role: 'assistant', content: 'a' }, done: false });
    expect(lines[2]).toMatchObject({ done: true, done_reason: 'stop', prompt_eval_count: 3, eval_count: 2 });
  });

  it('streams OpenAI SSE with a tool call, a usage chunk and [DONE]', async () => {
    server = await startScriptedLlmServer([{ respond: { toolCall: { name: 'f', arguments: { a: 1 } } } }]);
    const response = await post(`${server.url}/v1/chat/completions`, { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [] });
    const events = (await response.text()).split('\n\n').filter((e) => e !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const data = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as { choices: any[]; usage?: unknown });
    expect(data.some((d) => d.choices[0]?.delta?.tool_calls?.[0]?.function?.name === 'f')).toBe(true);
    expect(data.at(-2)!.choices[0].finish_reason).toBe('tool_calls');
    expect(data.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } });
  });

  it('lists its models, and says so for unknown routes', async () => {
    server = await startScriptedLlmServer([], { models: ['a:7b'] });
    expect(await (await fetch(`${server.url}/api/tags`)).json()).toMatchObject({ models: [{ name: 'a:7b' }] });
    expect(await (await fetch(`${server.url}/v1/models`)).json()).toMatchObject({ data: [{ id: 'a:7b' }] });
    const missing = await fetch(`${server.url}/v1/embeddings`);
    expect(missing.status).toBe(404);
    expect(server.requests.map((r) => r.path)).toEqual(['/api/tags', '/v1/models', '/v1/embeddings']);
  });
});
