/**
 * The HTTP of the LLM test doubles (the scripted server of the tests, the model stand-in of the benchmarks): a chat
 * server that speaks OpenAI's and Ollama's wire formats, so that the real LangChain clients run against it.
 *
 *   - OpenAI chat completions: POST /v1/chat/completions, JSON or SSE (`stream: true`, usage chunk when
 *     `stream_options.include_usage`, closing `data: [DONE]`); tool calls; GET /v1/models.
 *   - Ollama: POST /api/chat, NDJSON stream (`{message, done:false}` lines, then `{done:true, done_reason,
 *     prompt_eval_count, eval_count}`) or one JSON object when `stream: false`; tool calls in Ollama's shape
 *     (arguments as an object); GET /api/tags.
 * What to answer is the owner's: `chat` gets every chat request with its parsed body.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Wire = 'openai' | 'ollama';

/** A request as received: its body parsed as JSON where it is JSON, else the text. */
export interface ReceivedRequest {
  method: string;
  path: string;
  body: any;
  headers: IncomingHttpHeaders;
}

/** An answer to send: its content in stream pieces (joined when not streamed), or a tool call. */
export interface ChatAnswer {
  id: string;
  model: string;
  pieces: string[];
  toolCall?: { name: string; text: string; object: unknown } | undefined;
  usage: { promptTokens: number; completionTokens: number };
  headers?: Record<string, string>;
}

export interface ChatServerOptions {
  /** Who answers, in error messages ("scripted server"). */
  name: string;
  /** Models listed by GET /api/tags and GET /v1/models. */
  models: string[];
  host?: string;
  port?: number;
  /** Sees every request first, listings and unknown routes included. */
  received?(request: ReceivedRequest): void;
  /** Answers a chat request (sendAnswer, sendError); a throw is answered 500 with its message. */
  chat(request: ReceivedRequest, wire: Wire, res: ServerResponse): Promise<void>;
}

export interface ChatServer {
  /** `http://HOST:PORT`; the OpenAI base URL is `${url}/v1`. */
  url: string;
  close(): Promise<void>;
}

export async function startChatServer(options: ChatServerOptions): Promise<ChatServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any = raw;
      if (raw !== '') {
        try {
          body = JSON.parse(raw);
        } catch {
          // Kept as text: a test may want to see what a client sent that was not JSON.
        }
      }
      const request: ReceivedRequest = { method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0]!, body, headers: req.headers };
      route(request, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: `${options.name} failed: ${String(error)}` });
        else res.destroy();
      });
    });
  });

  async function route(request: ReceivedRequest, res: ServerResponse): Promise<void> {
    options.received?.(request);
    const { method, path } = request;
    if (method === 'GET' && path === '/api/tags') {
      return sendJson(res, 200, { models: options.models.map((name) => ({ name, model: name, size: 1, digest: 'test-double' })) });
    }
    if (method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: options.models.map((id) => ({ id, object: 'model', owned_by: 'test-double' })) });
    }
    const wire: Wire | undefined = method === 'POST' && path === '/v1/chat/completions' ? 'openai' : method === 'POST' && path === '/api/chat' ? 'ollama' : undefined;
    if (!wire) return sendJson(res, 404, { error: `${options.name}: no route for ${method} ${path}` });
    return options.chat(request, wire, res);
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** The text of a chat message, whether its content is a string or a list of parts. */
export function messageText(message: any): string {
  if (typeof message?.content === 'string') return message.content;
  if (Array.isArray(message?.content)) {
    return message.content.map((part: any) => (typeof part === 'string' ? part : (part?.text ?? ''))).join('');
  }
  return '';
}

/** Stream pieces of a content: split at word ends, as a model's tokens arrive. */
export function splitIntoPieces(content: string): string[] {
  return content.match(/\s*\S+\s*/g) ?? (content === '' ? [] : [content]);
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

/** An error in the wire's own shape, so that the clients report `message`. */
export function sendError(res: ServerResponse, wire: Wire, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = wire === 'openai' ? { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'test_double_error', code: null } } : { error: message };
  sendJson(res, status, body, headers);
}

/** The answer as the request asked for it: streamed or not, in the wire's format. */
export function sendAnswer(res: ServerResponse, wire: Wire, body: any, answer: ChatAnswer): void {
  if (wire === 'openai') return body?.stream === true ? openAiStream(res, answer, body?.stream_options?.include_usage === true) : openAiJson(res, answer);
  return body?.stream === false ? ollamaJson(res, answer) : ollamaStream(res, answer);
}

const created = () => Math.floor(Date.now() / 1000);

function openAiUsage(a: ChatAnswer) {
  return { prompt_tokens: a.usage.promptTokens, completion_tokens: a.usage.completionTokens, total_tokens: a.usage.promptTokens + a.usage.completionTokens };
}

function openAiJson(res: ServerResponse, a: ChatAnswer): void {
  const message: Record<string, unknown> = { role: 'assistant', content: a.toolCall ? null : a.pieces.join('') };
  if (a.toolCall) {
    message.tool_calls = [{ id: `call_${a.id}`, type: 'function', function: { name: a.toolCall.name, arguments: a.toolCall.text } }];
  }
  sendJson(
    res,
    200,
    {
      id: a.id,
      object: 'chat.completion',
      created: created(),
      model: a.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: a.toolCall ? 'tool_calls' : 'stop' }],
      usage: openAiUsage(a),
    },
    a.headers,
  );
}

function openAiStream(res: ServerResponse, a: ChatAnswer, includeUsage: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...a.headers });
  const base = { id: a.id, object: 'chat.completion.chunk', created: created(), model: a.model };
  const send = (value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    send({ ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }] });
  delta({ role: 'assistant', content: '' });
  for (const piece of a.pieces) delta({ content: piece });
  if (a.toolCall) {
    delta({ tool_calls: [{ index: 0, id: `call_${a.id}`, type: 'function', function: { name: a.toolCall.name, arguments: '' } }] });
    delta({ tool_calls: [{ index: 0, function: { arguments: a.toolCall.text } }] });
  }
  delta({}, a.toolCall ? 'tool_calls' : 'stop');
  if (includeUsage) send({ ...base, choices: [], usage: openAiUsage(a) });
  res.end('data: [DONE]\n\n');
}

function ollamaFinal(a: ChatAnswer) {
  return {
    model: a.model,
    created_at: new Date().toISOString(),
    done: true,
    done_reason: 'stop',
    total_duration: 1_000_000,
    load_duration: 1000,
    prompt_eval_count: a.usage.promptTokens,
    prompt_eval_duration: 1000,
    eval_count: a.usage.completionTokens,
    eval_duration: 1000,
  };
}

function ollamaToolCalls(a: ChatAnswer) {
  return a.toolCall ? [{ function: { name: a.toolCall.name, arguments: a.toolCall.object } }] : undefined;
}

function ollamaJson(res: ServerResponse, a: ChatAnswer): void {
  sendJson(res, 200, { ...ollamaFinal(a), message: { role: 'assistant', content: a.pieces.join(''), tool_calls: ollamaToolCalls(a) } }, a.headers);
}

function ollamaStream(res: ServerResponse, a: ChatAnswer): void {
  res.writeHead(200, { 'content-type': 'application/x-ndjson', ...a.headers });
  const line = (value: unknown) => res.write(`${JSON.stringify(value)}\n`);
  const at = () => new Date().toISOString();
  for (const piece of a.pieces) line({ model: a.model, created_at: at(), message: { role: 'assistant', content: piece }, done: false });
  if (a.toolCall) line({ model: a.model, created_at: at(), message: { role: 'assistant', content: '', tool_calls: ollamaToolCalls(a) }, done: false });
  res.end(`${JSON.stringify({ ...ollamaFinal(a), message: { role: 'assistant', content: '' } })}\n`);
}
