/**
 * TEST DOUBLE: the model stand-in for benchmarks. Not a model: an OpenAI-compatible chat server (Ollama's wire too,
 * through the test doubles' HTTP layer, test/support/chat-http.ts) that answers every request of a tuning session from
 * a fixed pool of real rewrites of the kernel at hand (./pool.ts, ./answers.ts), so that strategies can be compared on
 * a GPU with the same "model" and without one.
 *
 * - Choices are seeded: a request's draws depend on the seed, on what it asks (its text without the measured parts, so
 *   the same session asks the same on another GPU) and on how often that exact request came before; never on speed.
 * - Each answer waits a latency drawn uniformly from the range (seconds; 0 for quality runs). Requests are served side
 *   by side, each with its own latency.
 * - Token usage is reported as a model's would be: prompt tokens ~ the request's characters / 4, completion tokens ~
 *   the answer's / 4.
 * - Every request is logged (kind, attempt, the variants shown, the variant answered, its label, latency, tokens,
 *   status): in `log`, and as JSON lines to `logFile`.
 * - A request it cannot classify is answered 400, one whose kernel is not in the pool 422, each with what it saw.
 */
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { withoutMeasurements } from '../../src/engine/prompts';
import { Random } from '../../src/tuner/space/random';
import { sendAnswer, sendError, splitIntoPieces, startChatServer, type ReceivedRequest, type Wire } from '../../test/support/chat-http';
import { decide, INLINE_RESTRICTIONS_ASKED, render, type AnswerForm, type Ranking } from './answers';
import { UnknownKernelError, type Label, type Pool } from './pool';
import { chatMessages, classifyRequest, UnclassifiedRequestError, type ChatMessage, type RequestKind } from './requests';

export interface LatencyRange {
  minS: number;
  maxS: number;
}

/** "8-40" (seconds, uniform in between) or "0" (one value). */
export function parseLatency(text: string): LatencyRange {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?)\s*)?$/.exec(text);
  if (!m) throw new RangeError(`Expected a latency in seconds as MIN-MAX (e.g. 8-40) or one value (e.g. 0) but received "${text}"`);
  const minS = Number(m[1]);
  const maxS = m[2] === undefined ? minS : Number(m[2]);
  if (maxS < minS) throw new RangeError(`Expected a latency range MIN-MAX with MIN <= MAX but received "${text}"`);
  return { minS, maxS };
}

export interface StandinOptions {
  pool: Pool;
  seed: number;
  latency: LatencyRange;
  /** The chance of a <think> block before an answer (0 to 1). */
  thinkRate: number;
  /** The test's size (its size argument's value); default the pool's. */
  testSize?: number;
  /** A file to append the log to, one JSON object per line. */
  logFile?: string;
  /** The model it says it is; default standin-POOL. */
  model?: string;
  host?: string;
  port?: number;
}

export interface StandinLogEntry {
  /** 1 for the first request the server received. */
  call: number;
  at: string;
  kind: RequestKind | null;
  /** 1, or the attempt of a retry (the conversation holds the earlier answers). */
  attempt: number;
  /** The variants the request showed: a rewrite's parent(s), the kernel planned for, judged or restricted. */
  shown: string[];
  /** The variant answered (a rewrite), its label (for the benchmark's table; never used to choose) and idea. */
  child: string | null;
  label: Label | null;
  idea: string | null;
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  status: number;
  error?: string;
}

export interface StandinServer {
  /** The OpenAI base URL: http://HOST:PORT/v1. */
  baseUrl: string;
  /** Every request so far, in the order they were answered. */
  log: StandinLogEntry[];
  close(): Promise<void>;
}

const tokens = (chars: number) => Math.ceil(chars / 4);

const seedOf = (text: string) => createHash('sha256').update(text).digest().readUInt32LE(0);

/**
 * The seeds of a request's draws: the server's seed, what it asks (measured parts left out), and how often it was
 * asked. Its ranking (the model's order of preference for a kernel) depends on the kernel and how often this request
 * was asked, not on the rest of its text: requests that differ only in the place they ask for rank the same way.
 */
function requestSeeds(seed: number, messages: readonly ChatMessage[], occurrences: Map<string, number>): { draws: number; ranking: Ranking } {
  const asked = messages.map((m) => `${m.role}\n${withoutMeasurements(m.text)}`).join('\n\n');
  const key = createHash('sha256').update(asked).digest('hex');
  const occurrence = occurrences.get(key) ?? 0;
  occurrences.set(key, occurrence + 1);
  return { draws: seedOf(`${seed}\n${key}\n${occurrence}`), ranking: (of) => new Random(seedOf(`${seed}\nranking\n${of}\n${occurrence}`)) };
}

/** How the request wants its answer: JSON only (a response_format), or a forced tool call. */
function formOf(body: any, thinkRate: number): AnswerForm {
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  const toolName: string | undefined = body?.tool_choice?.function?.name ?? tools[0]?.function?.name;
  const format = body?.response_format?.type ?? (body?.format ? 'json_schema' : undefined);
  return {
    thinkRate,
    jsonOnly: format === 'json_schema' || format === 'json_object',
    toolName: tools.length > 0 ? toolName : undefined,
    restrictionsInline: chatMessages(body).some((m) => m.role === 'user' && m.text.includes(INLINE_RESTRICTIONS_ASKED)),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startStandin(options: StandinOptions): Promise<StandinServer> {
  const { pool, seed, latency, thinkRate } = options;
  if (!Number.isInteger(seed)) throw new RangeError(`Expected an integer seed but received ${seed}`);
  if (!(thinkRate >= 0 && thinkRate <= 1)) throw new RangeError(`Expected a think rate from 0 to 1 but received ${thinkRate}`);
  const testSize = options.testSize ?? pool.test.defaultSize;
  if (!Number.isInteger(testSize) || testSize < 1) throw new RangeError(`Expected a positive integer test size but received ${testSize}`);
  const model = options.model ?? `standin-${pool.name}`;
  const log: StandinLogEntry[] = [];
  const occurrences = new Map<string, number>();
  let calls = 0;

  async function chat(request: ReceivedRequest, wire: Wire, res: ServerResponse): Promise<void> {
    const entry: StandinLogEntry = { call: ++calls, at: new Date().toISOString(), kind: null, attempt: 1, shown: [], child: null, label: null, idea: null, latencyMs: 0, promptTokens: 0, completionTokens: 0, status: 200 };
    try {
      const messages = chatMessages(request.body);
      entry.promptTokens = tokens(messages.reduce((n, m) => n + m.text.length, 0));
      const asked = classifyRequest(messages);
      Object.assign(entry, { kind: asked.kind, attempt: asked.previousAnswers.length + 1 });
      const seeds = requestSeeds(seed, messages, occurrences);
      const rng = new Random(seeds.draws);
      entry.latencyMs = Math.round(1000 * rng.uniform(latency.minS, latency.maxS));
      const decision = decide(pool, asked, rng, testSize, seeds.ranking);
      Object.assign(entry, { shown: decision.shown.map((v) => v.id), child: decision.child?.id ?? null, label: decision.child?.label ?? null, idea: decision.child?.idea ?? null });
      const rendered = render(pool, asked.kind, decision.reply, formOf(request.body, thinkRate), rng);
      entry.completionTokens = tokens('content' in rendered ? rendered.content.length : rendered.toolCall.text.length);
      await sleep(entry.latencyMs);
      sendAnswer(res, wire, request.body, {
        id: `standin-${entry.call}`,
        model: typeof request.body?.model === 'string' ? request.body.model : model,
        pieces: 'content' in rendered ? splitIntoPieces(rendered.content) : [],
        toolCall: 'toolCall' in rendered ? rendered.toolCall : undefined,
        usage: { promptTokens: entry.promptTokens, completionTokens: entry.completionTokens },
      });
    } catch (error) {
      entry.status = error instanceof UnclassifiedRequestError ? 400 : error instanceof UnknownKernelError ? 422 : 500;
      entry.error = error instanceof Error ? error.message : String(error);
      sendError(res, wire, entry.status, `model stand-in (pool ${pool.name}): ${entry.error}`);
    } finally {
      log.push(entry);
      if (options.logFile) appendFileSync(options.logFile, `${JSON.stringify(entry)}\n`);
    }
  }

  const server = await startChatServer({ name: 'model stand-in', models: [model], chat, ...(options.host && { host: options.host }), ...(options.port !== undefined && { port: options.port }) });
  return { baseUrl: `${server.url}/v1`, log, close: () => server.close() };
}
