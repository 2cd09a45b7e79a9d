// The real LangChain clients (ChatOpenAI, ChatOllama) built by createChatModel, over HTTP against the scripted server:
// invoke, stream, token usage, reachability, error wording, and transport retries (ours and LangGraph's node retry).
import { HumanMessage, type AIMessageChunk } from '@langchain/core/messages';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import {
  LlmAuthError,
  LlmConfigError,
  LlmConnectionError,
  LlmModelNotFoundError,
  LlmRateLimitError,
  LlmRequestError,
  LlmResponseError,
  LlmServerError,
  LlmTimeoutError,
  LlmUnreachableError,
} from '../../src/engine/llm/errors';
import {
  checkReachable,
  createChatModel,
  endpointOf,
  parseProviderConfig,
  transportRetryOptionsFor,
  transportRetryPolicyFor,
  type ProviderConfig,
} from '../../src/engine/llm/providers';
import { describeLlmError, isTransientLlmError, transportRetryPolicy, withTransportRetry } from '../../src/engine/llm/transport';
import { closedPortUrl, loadScript, startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(script: ScriptTurn[] | string, models?: string[]): Promise<ScriptedLlmServer> {
  server = await startScriptedLlmServer(typeof script === 'string' ? loadScript(script) : script, { models });
  return server;
}

const openai = (s: ScriptedLlmServer, extra: Partial<ProviderConfig> = {}): ProviderConfig =>
  ({ provider: 'openai', model: 'scripted-model', baseUrl: `${s.url}/v1`, apiKey: 'sk-test', ...extra }) as ProviderConfig;
const ollama = (s: ScriptedLlmServer, extra: Partial<ProviderConfig> = {}): ProviderConfig =>
  ({ provider: 'ollama', model: 'scripted-model', baseUrl: s.url, ...extra }) as ProviderConfig;

const hello = [new HumanMessage('Say hello')];

async function collect(stream: AsyncIterable<AIMessageChunk>): Promise<{ pieces: string[]; whole: AIMessageChunk }> {
  const pieces: string[] = [];
  let whole: AIMessageChunk | undefined;
  for await (const chunk of stream) {
    if (typeof chunk.content === 'string' && chunk.content !== '') pieces.push(chunk.content);
    whole = whole ? whole.concat(chunk) : chunk;
  }
  return { pieces, whole: whole! };
}

describe('OpenAI-compatible client over HTTP', () => {
  it('invokes: one POST /v1/chat/completions, answer and usage read back', async () => {
    const s = await serve('chat-hello');
    const answer = await createChatModel(openai(s, { temperature: 0.2 })).invoke(hello);
    expect(answer.content).toBe('Hello from the scripted model, nice to meet you.');
    expect(answer.usage_metadata).toMatchObject({ input_tokens: 12, output_tokens: 9, total_tokens: 21 });
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(s.requests[0]!.body).toMatchObject({ model: 'scripted-model', temperature: 0.2, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(s.requests[0]!.body.stream).toBeFalsy();
    expect(s.requests[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(s.mismatches).toEqual([]);
  });

  it('streams: tokens arrive one by one over SSE, usage comes with include_usage', async () => {
    const s = await serve('chat-hello');
    const { pieces, whole } = await collect(await createChatModel(openai(s)).stream(hello));
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe('Hello from the scripted model, nice to meet you.');
    expect(whole.usage_metadata).toMatchObject({ input_tokens: 12, output_tokens: 9, total_tokens: 21 });
    expect(s.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(s.mismatches).toEqual([]);
  });

  it('applies timeoutMs', async () => {
    const s = await serve([{ respond: { content: 'late', delayMs: 400 } }]);
    const error = await failure(openai(s, { timeoutMs: 100 }));
    expect(error).toBeInstanceOf(LlmTimeoutError);
    expect(error.message).toBe(`the OpenAI-compatible endpoint at ${s.url}/v1 did not answer within 0.1 s (timeoutMs)`);
  });

  it('sends a placeholder key where none is configured (local servers need none)', async () => {
    const s = await serve('chat-hello');
    await createChatModel({ provider: 'openai', model: 'local', baseUrl: `${s.url}/v1` }).invoke(hello);
    expect(s.requests[0]!.headers.authorization).toBe('Bearer no-api-key');
  });
});

describe('Ollama client over HTTP', () => {
  it('invokes: POST /api/chat (streamed NDJSON even for invoke), answer and usage read back', async () => {
    const s = await serve('chat-hello');
    const answer = await createChatModel(ollama(s, { temperature: 0 })).invoke(hello);
    expect(answer.content).toBe('Hello from the scripted model, nice to meet you.');
    expect(answer.usage_metadata).toMatchObject({ input_tokens: 12, output_tokens: 9, total_tokens: 21 });
    expect(s.requests[0]).toMatchObject({ method: 'POST', path: '/api/chat' });
    expect(s.requests[0]!.body).toMatchObject({ model: 'scripted-model', stream: true, options: { temperature: 0 }, messages: [{ role: 'user', content: 'Say hello' }] });
  });

  it('streams tokens, then the final line with the counts', async () => {
    const s = await serve('chat-hello');
    const { pieces, whole } = await collect(await createChatModel(ollama(s)).stream(hello));
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe('Hello from the scripted model, nice to meet you.');
    expect(whole.usage_metadata).toMatchObject({ input_tokens: 12, output_tokens: 9 });
    expect(whole.response_metadata).toMatchObject({ done_reason: 'stop' });
  });

  it('applies timeoutMs to the whole request (ChatOllama has no timeout of its own)', async () => {
    const s = await serve([{ respond: { content: 'late', delayMs: 400 } }]);
    const config = ollama(s, { timeoutMs: 100 });
    const error = await createChatModel(config).invoke(hello).then(
      () => undefined,
      (e: unknown) => describeLlmError(e, parseProviderConfig(config)),
    );
    expect(error).toBeInstanceOf(LlmTimeoutError);
    expect(error!.message).toBe(`Ollama at ${s.url} did not answer within 0.1 s (timeoutMs)`);
    expect(error!.transient).toBe(true);
  });
});

describe('provider config', () => {
  it('fills in the default base URLs and strips trailing slashes', () => {
    expect(parseProviderConfig({ provider: 'ollama', model: 'm' }).baseUrl).toBe('http://127.0.0.1:11434');
    expect(parseProviderConfig({ provider: 'openai', model: 'm' }).baseUrl).toBe('https://api.openai.com/v1');
    expect(parseProviderConfig({ provider: 'openai', model: 'm', baseUrl: 'http://localhost:8000/v1/' }).baseUrl).toBe('http://localhost:8000/v1');
  });

  it('rejects bad configs naming every bad field', () => {
    expect(() => parseProviderConfig({ provider: 'ollama', model: '', baseUrl: 'localhost:11434', temperature: 5 })).toThrow(LlmConfigError);
    expect(() => parseProviderConfig({ provider: 'ollama', model: '', baseUrl: 'localhost:11434', temperature: 5 })).toThrow(
      /invalid LLM provider config: `model`: expected a model name; `baseUrl`: expected an http\(s\) URL such as http:\/\/127\.0\.0\.1:11434; `temperature`: /,
    );
    expect(() => parseProviderConfig({ provider: 'anthropic', model: 'x' })).toThrow(/`provider`/);
    // A typo of a field name is an error, not silently ignored.
    expect(() => parseProviderConfig({ provider: 'openai', model: 'x', baseURL: 'http://h/v1' })).toThrow(/baseURL/);
  });

  it('derives the endpoint of a model for error messages', () => {
    expect(endpointOf(createChatModel({ provider: 'ollama', model: 'llama3', baseUrl: 'http://gpu-box:11434' }))).toEqual({
      provider: 'ollama',
      model: 'llama3',
      baseUrl: 'http://gpu-box:11434',
    });
    expect(endpointOf(createChatModel({ provider: 'openai', model: 'gpt-x', baseUrl: 'http://h:8000/v1', timeoutMs: 5000 }))).toEqual({
      provider: 'openai',
      model: 'gpt-x',
      baseUrl: 'http://h:8000/v1',
      timeoutMs: 5000,
    });
  });

  it('turns maxRetries into attempts for both retry layers', () => {
    const config: ProviderConfig = { provider: 'ollama', model: 'm', maxRetries: 1 };
    expect(transportRetryOptionsFor(config)).toEqual({
      maxAttempts: 2,
      endpoint: { provider: 'ollama', model: 'm', baseUrl: 'http://127.0.0.1:11434', timeoutMs: undefined },
    });
    expect(transportRetryPolicyFor(config)).toMatchObject({ maxAttempts: 2, retryOn: isTransientLlmError });
    expect(transportRetryPolicyFor({ provider: 'ollama', model: 'm' }).maxAttempts).toBe(4);
  });
});

describe('checkReachable', () => {
  it('lists the models of a running Ollama that has the model', async () => {
    const s = await serve([], ['scripted-model:latest', 'other:7b']);
    await expect(checkReachable(ollama(s))).resolves.toEqual({ models: ['scripted-model:latest', 'other:7b'] });
    expect(s.requests[0]).toMatchObject({ method: 'GET', path: '/api/tags' });
  });

  it('says to pull a model Ollama does not have', async () => {
    const s = await serve([], ['other:7b']);
    const error = await checkReachable(ollama(s, { model: 'qwen2.5-coder:7b' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmModelNotFoundError);
    expect((error as Error).message).toBe(`model qwen2.5-coder:7b is not available on Ollama at ${s.url}: \`ollama pull qwen2.5-coder:7b\``);
  });

  it('says to start Ollama when nothing listens', async () => {
    const url = await closedPortUrl();
    const error = await checkReachable({ provider: 'ollama', model: 'm', baseUrl: url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnreachableError);
    expect((error as Error).message).toBe(`cannot reach Ollama at ${url}: is it running? \`ollama serve\``);
  });

  it('says to check the URL of an OpenAI-compatible server that does not answer', async () => {
    const url = `${await closedPortUrl()}/v1`;
    const error = await checkReachable({ provider: 'openai', model: 'm', baseUrl: url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnreachableError);
    expect((error as Error).message).toBe(`cannot reach the OpenAI-compatible endpoint at ${url} (ECONNREFUSED): check the base URL and that the server is running`);
  });

  it('reports a refused key', async () => {
    // The scripted server answers GET /v1/models itself; a server that checks keys is this small stand-in.
    const { createServer } = await import('node:http');
    const stub = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided' } }));
    });
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(stub.address() as { port: number }).port}/v1`;
    try {
      const error = await checkReachable({ provider: 'openai', model: 'm', baseUrl: url, apiKey: 'bad' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmAuthError);
      expect((error as Error).message).toBe(`the endpoint at ${url} refused the API key (401)`);
    } finally {
      stub.closeAllConnections();
      await new Promise((resolve) => stub.close(resolve));
    }
  });

  it('lists the models of an OpenAI-compatible server', async () => {
    const s = await serve([], ['qwen-coder', 'llama']);
    await expect(checkReachable(openai(s))).resolves.toEqual({ models: ['qwen-coder', 'llama'] });
    expect(s.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(s.requests[0]!.headers.authorization).toBe('Bearer sk-test');
  });
});

/** Calls the model once through withTransportRetry without retries and returns the LlmError it fails with. */
async function failure(config: ProviderConfig): Promise<Error> {
  const options = transportRetryOptionsFor(config);
  return withTransportRetry(() => createChatModel(config).invoke(hello), { ...options, maxAttempts: 1 }).then(
    () => {
      throw new Error('expected the request to fail');
    },
    (e: Error) => e,
  );
}

describe('errors of a session, in words', () => {
  it('refused connection (OpenAI-compatible) → LlmUnreachableError with the friendly sentence', async () => {
    const url = `${await closedPortUrl()}/v1`;
    const error = await failure({ provider: 'openai', model: 'm', baseUrl: url });
    expect(error).toBeInstanceOf(LlmUnreachableError);
    expect(error.message).toBe(`cannot reach the OpenAI-compatible endpoint at ${url} (ECONNREFUSED): check the base URL and that the server is running`);
  });

  it('refused connection (Ollama) → LlmUnreachableError with the friendly sentence, not retried', async () => {
    const url = await closedPortUrl();
    const error = await failure({ provider: 'ollama', model: 'm', baseUrl: url });
    expect(error).toBeInstanceOf(LlmUnreachableError);
    expect(error.message).toBe(`cannot reach Ollama at ${url}: is it running? \`ollama serve\``);
    expect(isTransientLlmError(error)).toBe(false);
  });

  it("Ollama's model-not-found → `ollama pull`", async () => {
    const s = await serve('ollama-model-missing');
    const error = await failure(ollama(s, { model: 'qwen2.5-coder:7b' }));
    expect(error).toBeInstanceOf(LlmModelNotFoundError);
    expect(error.message).toBe(`model qwen2.5-coder:7b is not available on Ollama at ${s.url}: \`ollama pull qwen2.5-coder:7b\``);
    expect((error as LlmModelNotFoundError).model).toBe('qwen2.5-coder:7b');
  });

  it('OpenAI 404 → model not available, with the /v1 hint', async () => {
    const s = await serve([{ respond: { status: 404, error: 'The model `nope` does not exist.' } }]);
    const error = await failure(openai(s, { model: 'nope' }));
    expect(error).toBeInstanceOf(LlmModelNotFoundError);
    expect(error.message).toMatch(/^model nope is not available at http:\/\/127\.0\.0\.1:\d+\/v1 \(404: The model `nope` does not exist\.\): check the model name/);
  });

  it('400 about the structured-output mode → LlmRequestError suggesting jsonify, not retried', async () => {
    const s = await serve([{ respond: { status: 400, error: "response_format 'json_schema' is not supported by this server" } }]);
    const error = await failure(openai(s));
    expect(error).toBeInstanceOf(LlmRequestError);
    expect(error.message).toBe(
      `the OpenAI-compatible endpoint at ${s.url}/v1 rejected the request (400): response_format 'json_schema' is not supported by this server (the model or server may not support this structured-output mode: try structuredOutputType "jsonify")`,
    );
    expect(isTransientLlmError(error)).toBe(false);
  });

  it('401 mid-session → LlmAuthError', async () => {
    const s = await serve([{ respond: { status: 401, error: 'Incorrect API key provided' } }]);
    const error = await failure(openai(s));
    expect(error).toBeInstanceOf(LlmAuthError);
    expect(error.message).toBe(`the endpoint at ${s.url}/v1 refused the API key (401)`);
  });

  it('a dropped connection → LlmConnectionError, transient', async () => {
    const s = await serve([{ respond: { dropConnection: true } }]);
    const error = await failure(ollama(s));
    expect(error).toBeInstanceOf(LlmConnectionError);
    expect(error.message).toMatch(new RegExp(`^the connection to Ollama at ${s.url} broke before the answer was complete`));
    expect(isTransientLlmError(error)).toBe(true);
  });

  it('garbage instead of a chat response → LlmResponseError', async () => {
    const s = await serve([{ respond: { body: '<html>502 Bad Gateway from some proxy' } }]);
    const error = await failure(openai(s));
    expect(error).toBeInstanceOf(LlmResponseError);
    expect(error.message).toMatch(
      new RegExp(`^the OpenAI-compatible endpoint at ${s.url}/v1 sent an answer that is not a valid chat response: Unexpected token '<'`),
    );
    expect(isTransientLlmError(error)).toBe(false);
  });

  it('maps raw shapes without an endpoint too', () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(describeLlmError(refused).message).toBe('cannot reach the LLM endpoint (ECONNREFUSED): check the base URL and that the server is running');
    expect(describeLlmError(Object.assign(new Error('boom'), { status: 503 }))).toBeInstanceOf(LlmServerError);
    const limited = describeLlmError(Object.assign(new Error('slow down'), { status: 429, headers: new Headers({ 'retry-after': '2' }) }));
    expect(limited).toBeInstanceOf(LlmRateLimitError);
    expect((limited as LlmRateLimitError).retryAfterMs).toBe(2000);
    expect(isTransientLlmError(new DOMException('aborted', 'AbortError'))).toBe(false);
    expect(isTransientLlmError(new Error('a bug'))).toBe(false);
  });
});

describe('transport retry (ours)', () => {
  it('HTTP 429 then success: retried after the asked wait, two requests', async () => {
    const s = await serve('transport-429-then-ok');
    const retries: Array<{ attempt: number; delayMs: number; error: Error }> = [];
    const answer = await withTransportRetry(() => createChatModel(openai(s)).invoke(hello), {
      ...transportRetryOptionsFor(openai(s)),
      baseDelayMs: 1,
      onRetry: (event) => retries.push(event),
    });
    expect(answer.content).toBe('Hello after waiting.');
    expect(s.requests).toHaveLength(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.error).toBeInstanceOf(LlmRateLimitError);
    expect((retries[0]!.error as LlmRateLimitError).retryAfterMs).toBe(5);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(5);
    expect(s.mismatches).toEqual([]);
  });

  it('HTTP 500 every time: LlmServerError after maxAttempts requests, backoff growing', async () => {
    const s = await serve('transport-500-always');
    const delays: number[] = [];
    const error = await withTransportRetry(() => createChatModel(ollama(s)).invoke(hello), {
      maxAttempts: 3,
      baseDelayMs: 4,
      endpoint: parseProviderConfig(ollama(s)),
      onRetry: ({ delayMs }) => delays.push(delayMs),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmServerError);
    expect((error as Error).message).toBe(`Ollama at ${s.url} failed with HTTP 500: CUDA out of memory while loading the model`);
    expect(s.requests).toHaveLength(3);
    expect(delays).toHaveLength(2);
    // Equal jitter: between half and all of 4 ms, then of 8 ms.
    expect(delays[0]).toBeGreaterThanOrEqual(2);
    expect(delays[0]).toBeLessThanOrEqual(4);
    expect(delays[1]).toBeGreaterThanOrEqual(4);
    expect(delays[1]).toBeLessThanOrEqual(8);
  });

  it('does not retry what cannot get better, and lets foreign errors through unchanged', async () => {
    let calls = 0;
    const bug = new RangeError('a bug in the caller');
    await expect(
      withTransportRetry(
        async () => {
          calls++;
          throw bug;
        },
        { baseDelayMs: 1 },
      ),
    ).rejects.toBe(bug);
    expect(calls).toBe(1);
  });

  it('stops at once when cancelled, also in the middle of a slow answer', async () => {
    const s = await serve([{ respond: { content: 'too late', delayMs: 2000 } }]);
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const error = await withTransportRetry(() => createChatModel(ollama(s)).invoke(hello, { signal: controller.signal }), {
      signal: controller.signal,
    }).catch((e: unknown) => e);
    expect((error as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('cancelling during the backoff wait ends it', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = withTransportRetry(
      async () => {
        throw Object.assign(new Error('busy'), { status: 503 });
      },
      { baseDelayMs: 5000, signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 30);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe("LangGraph's node retry with transportRetryPolicy", () => {
  it('retries a node on 429 and not on a refused key', async () => {
    const State = Annotation.Root({ answer: Annotation<string>() });
    const build = (config: ProviderConfig) =>
      new StateGraph(State)
        .addNode(
          'ask',
          async () => ({ answer: String((await createChatModel(config).invoke(hello)).content) }),
          { retryPolicy: { ...transportRetryPolicy, initialInterval: 1, jitter: false } },
        )
        .addEdge(START, 'ask')
        .addEdge('ask', END)
        .compile();

    const s = await serve('transport-429-then-ok');
    await expect(build(openai(s)).invoke({})).resolves.toEqual({ answer: 'Hello after waiting.' });
    expect(s.requests).toHaveLength(2);
    await s.close();

    server = await startScriptedLlmServer([{ respond: { status: 401, error: 'bad key' } }, { respond: { content: 'never' } }]);
    await expect(build(openai(server)).invoke({})).rejects.toMatchObject({ status: 401 });
    expect(server.requests).toHaveLength(1);
  });
});
