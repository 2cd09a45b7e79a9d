/**
 * TEST DOUBLE: a scripted LLM server. Not a model: it replays a script of canned answers, one turn per chat request,
 * so that the real LangChain clients (ChatOpenAI, ChatOllama) run over real HTTP in tests without any LLM.
 *
 * Speaks OpenAI's and Ollama's chat wire formats on 127.0.0.1 (port 0), streamed or not, tool calls included: the HTTP
 * layer is ./chat-http.ts. Every request is recorded (path and parsed body) so tests can assert what the client sent.
 * A turn whose `match` fails is answered 500 with a diagnostic and recorded in `mismatches`; so is a request after the
 * script ran out. Scripts are JSON under test/fixtures/llm-scripts/.
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { messageText, sendAnswer, sendError, splitIntoPieces, startChatServer, type ReceivedRequest, type Wire } from './chat-http';

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

export interface RecordedRequest extends ReceivedRequest {
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

  async function chat(received: ReceivedRequest, wire: Wire, res: ServerResponse): Promise<void> {
    const record = received as RecordedRequest;
    const { path, body } = record;
    if (options.responder) {
      const turn = options.responder(body);
      if (!turn) {
        const reason = `the responder has no answer for: ${JSON.stringify(requestExcerpt(body))}`;
        mismatches.push({ turn: null, path, reason });
        return sendError(res, wire, 500, `scripted server: ${reason}`);
      }
      return answerWith(res, wire, body, turn);
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
    return answerWith(res, wire, body, turn);
  }

  async function answerWith(res: ServerResponse, wire: Wire, body: any, turn: ScriptTurn): Promise<void> {
    const r = turn.respond;
    if (r.delayMs) await sleep(r.delayMs);
    if (r.dropConnection) {
      res.socket?.destroy();
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
    const pieces = r.chunks ?? splitIntoPieces(r.content ?? '');
    sendAnswer(res, wire, body, {
      id: `scripted-${++counter}`,
      model: typeof body?.model === 'string' ? body.model : models[0]!,
      pieces,
      toolCall: r.toolCall ? { name: r.toolCall.name, ...toolArguments(r.toolCall) } : undefined,
      usage: turn.usage ?? { promptTokens: 10, completionTokens: Math.max(pieces.length, 1) },
      headers: r.headers ?? {},
    });
  }

  const server = await startChatServer({ name: 'scripted server', models, received: (request) => requests.push(request), chat });
  return {
    url: server.url,
    requests,
    mismatches,
    remaining: () => script.length - used.size,
    close: () => server.close(),
  };
}

/** A URL where nothing listens: a port the OS gave us, closed again. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
