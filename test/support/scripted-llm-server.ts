/**
 * TEST DOUBLE: a scripted LLM server. Not a model: it replays a script of canned answers, one turn per chat request,
 * so that the real LangChain clients (ChatOpenAI, ChatOllama) run over real HTTP in tests without any LLM.
 *
 * Speaks on 127.0.0.1 (port 0):
 *   - OpenAI chat completions: POST /v1/chat/completions, JSON or SSE (`stream: true`, usage chunk when
 *     `stream_options.include_usage`, closing `data: [DONE]`); tool calls; GET /v1/models.
 *   - Ollama: POST /api/chat, NDJSON stream (`{message, done:false}` lines, then `{done:true, done_reason,
 *     prompt_eval_count, eval_count}`) or one JSON object when `stream: false`; tool calls in Ollama's shape
 *     (arguments as an object); GET /api/tags.
 * Every request is recorded (path and parsed body) so tests can assert what the client sent. A turn whose `match`
 * fails is answered 500 with a diagnostic and recorded in `mismatches`; so is a request after the script ran out.
 * Scripts are JSON under test/fixtures/llm-scripts/.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export type ScriptRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ScriptTurn {
  /** A note for humans reading the script. */
  comment?: string;
  match?: {
    /** Every string must occur in the last message of `role`. */
    contains?: string | string[];
    /** The role whose last message is checked; default 'user'. */
    role?: ScriptRole;
  };
  respond: {
    content?: string;
    /** Explicit stream pieces (their concatenation is the content); by default the content is split at word ends. */
    chunks?: string[];
    toolCall?: { name: string; arguments: Record<string, unknown> | string };
    /** An HTTP error status (429, 500, 404, ...); `error` is the message put in the provider's error body. */
    status?: number;
    error?: string;
    /** A raw body sent as is with status 200 (or `status`), for garbage answers. */
    body?: string;
    headers?: Record<string, string>;
    delayMs?: number;
    /** Close the connection without answering. */
    dropConnection?: boolean;
  };
  usage?: { promptTokens: number; completionTokens: number };
}

export interface RecordedRequest {
  method: string;
  path: string;
  body: any;
  headers: Record<string, string | string[] | undefined>;
  /** The index of the turn that answered it, if a turn did. */
  turn?: number;
}

export interface ScriptMismatch {
  turn: number | null;
  path: string;
  reason: string;
}

export interface ScriptedLlmServer {
  /** `http://127.0.0.1:PORT`; the OpenAI base URL is `${url}/v1`. */
  url: string;
  requests: RecordedRequest[];
  mismatches: ScriptMismatch[];
  remaining(): number;
  close(): Promise<void>;
}

export interface ScriptedServerOptions {
  /** Models listed by GET /api/tags and GET /v1/models. */
  models?: string[];
  /**
   * 'sequential' (default): request n gets turn n. 'first-match': each request gets the first unused turn whose `match`
   * it satisfies, for clients that send requests side by side (parallel graph branches) in no fixed order.
   */
  order?: 'sequential' | 'first-match';
  /**
   * Answers every chat request by its contents instead of the script (which is then unused): for sessions whose
   * requests are made side by side and depend on what was answered before (an evolutionary session). Undefined: the
   * request is answered 500 and recorded as a mismatch.
   */
  responder?: (body: any) => ScriptTurn | undefined;
}

const SCRIPTS = join(__dirname, '..', 'fixtures', 'llm-scripts');

export function loadScript(name: string): ScriptTurn[] {
  const parsed = JSON.parse(readFileSync(join(SCRIPTS, `${name}.json`), 'utf8')) as { turns?: ScriptTurn[] } | ScriptTurn[];
  const turns = Array.isArray(parsed) ? parsed : parsed.turns;
  if (!Array.isArray(turns)) throw new Error(`script ${name}: expected an array of turns or {"turns": [...]}`);
  return turns;
}

type Wire = 'openai' | 'ollama';

function messageText(message: any): string {
  if (typeof message?.content === 'string') return message.content;
  if (Array.isArray(message?.content)) {
    return message.content.map((part: any) => (typeof part === 'string' ? part : (part?.text ?? ''))).join('');
  }
  return '';
}

function checkMatch(turn: ScriptTurn, body: any): string | undefined {
  const match = turn.match;
  if (!match) return undefined;
  const role = match.role ?? 'user';
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const last = [...messages].reverse().find((m) => m?.role === role);
  if (!last) return `expected a message with role "${role}", the request has roles [${messages.map((m) => m?.role).join(', ')}]`;
  const text = messageText(last);
  const wanted = match.contains === undefined ? [] : Array.isArray(match.contains) ? match.contains : [match.contains];
  const missing = wanted.filter((w) => !text.includes(w));
  if (missing.length === 0) return undefined;
  const excerpt = text.length > 300 ? `${text.slice(0, 300)}...` : text;
  return `the last ${role} message lacks ${missing.map((m) => JSON.stringify(m)).join(', ')}; it reads: ${JSON.stringify(excerpt)}`;
}

/** The start of a request's last user message, for a mismatch's report. */
function requestExcerpt(body: any): string {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const last = [...messages].reverse().find((m) => m?.role === 'user');
  return messageText(last).slice(0, 200);
}

function splitIntoPieces(content: string): string[] {
  return content.match(/\s*\S+\s*/g) ?? (content === '' ? [] : [content]);
}

function toolArguments(call: NonNullable<ScriptTurn['respond']['toolCall']>): { text: string; object: unknown } {
  if (typeof call.arguments === 'string') {
    // A string is sent verbatim (it may be deliberately malformed); Ollama needs an object, so it is parsed if it can be.
    let object: unknown = {};
    try {
      object = JSON.parse(call.arguments);
    } catch {
      object = { _unparsable: call.arguments };
    }
    return { text: call.arguments, object };
  }
  return { text: JSON.stringify(call.arguments), object: call.arguments };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startScriptedLlmServer(script: ScriptTurn[], options: ScriptedServerOptions = {}): Promise<ScriptedLlmServer> {
  const requests: RecordedRequest[] = [];
  const mismatches: ScriptMismatch[] = [];
  const models = options.models ?? ['scripted-model'];
  let counter = 0;
  const used = new Set<number>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: `scripted server failed: ${String(error)}` });
        else res.destroy();
      });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    let body: any = raw;
    if (raw !== '') {
      try {
        body = JSON.parse(raw);
      } catch {
        // Recorded as text: a test may want to see what a client sent that was not JSON.
      }
    }
    const record: RecordedRequest = { method: req.method ?? 'GET', path, body, headers: req.headers };
    requests.push(record);

    if (req.method === 'GET' && path === '/api/tags') {
      return sendJson(res, 200, { models: models.map((name) => ({ name, model: name, size: 1, digest: 'scripted' })) });
    }
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', owned_by: 'scripted' })) });
    }
    const wire: Wire | undefined =
      req.method === 'POST' && path === '/v1/chat/completions' ? 'openai' : req.method === 'POST' && path === '/api/chat' ? 'ollama' : undefined;
    if (!wire) return sendJson(res, 404, { error: `scripted server: no route for ${req.method} ${path}` });

    if (options.responder) {
      const turn = options.responder(body);
      if (!turn) {
        const reason = `the responder has no answer for: ${JSON.stringify(requestExcerpt(body))}`;
        mismatches.push({ turn: null, path, reason });
        return sendError(res, wire, 500, `scripted server: ${reason}`);
      }
      return answerWith(req, res, wire, body, turn);
    }
    if (used.size >= script.length) {
      const reason = `the script has ${script.length} turn(s), all used; this is request ${requests.length}`;
      mismatches.push({ turn: null, path, reason });
      return sendError(res, wire, 500, `scripted server: ${reason}`);
    }
    const firstMatch = options.order === 'first-match' ? script.findIndex((t, i) => !used.has(i) && checkMatch(t, body) === undefined) : -1;
    const index = firstMatch >= 0 ? firstMatch : script.findIndex((_, i) => !used.has(i));
    used.add(index);
    const turn = script[index]!;
    record.turn = index;
    const mismatch = checkMatch(turn, body);
    if (mismatch) {
      mismatches.push({ turn: index, path, reason: mismatch });
      return sendError(res, wire, 500, `scripted server: turn ${index}${turn.comment ? ` (${turn.comment})` : ''} does not match: ${mismatch}`);
    }
    return answerWith(req, res, wire, body, turn);
  }

  async function answerWith(req: IncomingMessage, res: ServerResponse, wire: Wire, body: any, turn: ScriptTurn): Promise<void> {
    const r = turn.respond;
    if (r.delayMs) await sleep(r.delayMs);
    if (r.dropConnection) {
      req.socket.destroy();
      return;
    }
    if (r.body !== undefined) {
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers });
      res.end(r.body);
      return;
    }
    if (r.status !== undefined && (r.status < 200 || r.status >= 300)) {
      return sendError(res, wire, r.status, r.error ?? `scripted error ${r.status}`, r.headers);
    }
    const answer = {
      id: `scripted-${++counter}`,
      model: typeof body?.model === 'string' ? body.model : models[0]!,
      pieces: r.chunks ?? splitIntoPieces(r.content ?? ''),
      toolCall: r.toolCall ? { name: r.toolCall.name, ...toolArguments(r.toolCall) } : undefined,
      usage: turn.usage,
      headers: r.headers ?? {},
    };
    if (wire === 'openai') return body?.stream === true ? openAiStream(res, answer, body?.stream_options?.include_usage === true) : openAiJson(res, answer);
    return body?.stream === false ? ollamaJson(res, answer) : ollamaStream(res, answer);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    mismatches,
    remaining: () => script.length - used.size,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

interface Answer {
  id: string;
  model: string;
  pieces: string[];
  toolCall: { name: string; text: string; object: unknown } | undefined;
  usage: ScriptTurn['usage'];
  headers: Record<string, string>;
}

function usageOf(answer: Answer) {
  return answer.usage ?? { promptTokens: 10, completionTokens: Math.max(answer.pieces.length, 1) };
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

function sendError(res: ServerResponse, wire: Wire, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = wire === 'openai' ? { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'scripted_error', code: null } } : { error: message };
  sendJson(res, status, body, headers);
}

const created = () => Math.floor(Date.now() / 1000);

function openAiJson(res: ServerResponse, a: Answer): void {
  const usage = usageOf(a);
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
      usage: { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens },
    },
    a.headers,
  );
}

function openAiStream(res: ServerResponse, a: Answer, includeUsage: boolean): void {
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
  if (includeUsage) {
    const usage = usageOf(a);
    send({ ...base, choices: [], usage: { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens } });
  }
  res.end('data: [DONE]\n\n');
}

function ollamaFinal(a: Answer) {
  const usage = usageOf(a);
  return {
    model: a.model,
    created_at: new Date().toISOString(),
    done: true,
    done_reason: 'stop',
    total_duration: 1_000_000,
    load_duration: 1000,
    prompt_eval_count: usage.promptTokens,
    prompt_eval_duration: 1000,
    eval_count: usage.completionTokens,
    eval_duration: 1000,
  };
}

function ollamaToolCalls(a: Answer) {
  return a.toolCall ? [{ function: { name: a.toolCall.name, arguments: a.toolCall.object } }] : undefined;
}

function ollamaJson(res: ServerResponse, a: Answer): void {
  sendJson(res, 200, { ...ollamaFinal(a), message: { role: 'assistant', content: a.pieces.join(''), tool_calls: ollamaToolCalls(a) } }, a.headers);
}

function ollamaStream(res: ServerResponse, a: Answer): void {
  res.writeHead(200, { 'content-type': 'application/x-ndjson', ...a.headers });
  const line = (value: unknown) => res.write(`${JSON.stringify(value)}\n`);
  const at = () => new Date().toISOString();
  for (const piece of a.pieces) line({ model: a.model, created_at: at(), message: { role: 'assistant', content: piece }, done: false });
  if (a.toolCall) line({ model: a.model, created_at: at(), message: { role: 'assistant', content: '', tool_calls: ollamaToolCalls(a) }, done: false });
  res.end(`${JSON.stringify({ ...ollamaFinal(a), message: { role: 'assistant', content: '' } })}\n`);
}

/** A URL where nothing listens: a port the OS gave us, closed again. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
