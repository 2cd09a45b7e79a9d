/**
 * Runs engine sessions in tests: the scripted LLM server (real LangChain clients over HTTP), the fake backend, and the
 * event stream collected with how the session ended.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { KernelProfile } from '../../src/gpu/ncu/profile';
import { parseNcuCsv, profileNumbers, summarizeProfile } from '../../src/gpu/ncu/report';
import type { DeviceSpeedLimits } from '../../src/tuner/run/speed-of-light';
import { createChatModel } from '../../src/engine/llm/providers';
import { transportRetryPolicy } from '../../src/engine/llm/transport';
import type { TuningEvent, TuningEventType } from '../../src/engine/progress/events';
import type { SessionEnd } from '../../src/engine/session/session';
import type { LLMKernelTransformer, StreamOptions } from '../../src/engine/session/transformer';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import type { LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { FakeBackend, largestBuffer, type FakeVariant } from './fake-backend';
import { loadScript, startScriptedLlmServer, type ScriptedLlmServer, type ScriptedServerOptions, type ScriptTurn } from './scripted-llm-server';

export const SAXPY = `__global__ void saxpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
`;

/** LangGraph's node retry for transport errors, without the production backoff (tests need not wait seconds). */
export const FAST_TRANSPORT_RETRY = { ...transportRetryPolicy, maxAttempts: 3, initialInterval: 5, backoffFactor: 1, maxInterval: 10, jitter: false };

export async function serve(script: string | ScriptTurn[], options: ScriptedServerOptions = {}): Promise<ScriptedLlmServer> {
  return startScriptedLlmServer(typeof script === 'string' ? loadScript(script) : script, options);
}

/** The scripted servers of a test file: `start` one, and `closeAll` after each test. */
export function scriptedServers(): { start(script: string | ScriptTurn[], options?: ScriptedServerOptions): Promise<ScriptedLlmServer>; closeAll(): Promise<void> } {
  const started: ScriptedLlmServer[] = [];
  return {
    async start(script, options = {}) {
      const server = await serve(script, options);
      started.push(server);
      return server;
    },
    /** A server a test already closed is left as it is. */
    async closeAll() {
      await Promise.all(started.splice(0).map((s) => s.close().catch(() => undefined)));
    },
  };
}

export function openaiModel(server: ScriptedLlmServer, model = 'scripted-model'): BaseChatModel {
  return createChatModel({ provider: 'openai', model, baseUrl: `${server.url}/v1`, apiKey: 'sk-test' });
}

export function ollamaModel(server: ScriptedLlmServer, model = 'scripted-model'): BaseChatModel {
  return createChatModel({ provider: 'ollama', model, baseUrl: server.url });
}

export interface Collected {
  events: TuningEvent[];
  end: SessionEnd;
  types: TuningEventType[];
  of<T extends TuningEventType>(type: T): Extract<TuningEvent, { type: T }>[];
}

export async function collect(transformer: LLMKernelTransformer, options: StreamOptions = {}, onEvent?: (e: TuningEvent) => void): Promise<Collected> {
  const events: TuningEvent[] = [];
  const stream = transformer.stream(options);
  let next = await stream.next();
  for (; !next.done; next = await stream.next()) {
    events.push(next.value);
    onEvent?.(next.value);
  }
  return {
    events,
    end: next.value,
    types: events.map((e) => e.type),
    of: <T extends TuningEventType>(type: T) => events.filter((e): e is Extract<TuningEvent, { type: T }> => e.type === type),
  };
}

/** The text of every message of a recorded chat request, joined. */
export function requestText(body: { messages?: { content?: unknown }[] }): string {
  return (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
}

/**
 * The time model of the saxpy sessions: 1 ns per element of the largest buffer; a source marked FAKE_BLOCK_AWARE is 40 %
 * faster with 512 threads per block, one marked FAKE_SLIGHTLY_FASTER 0.5 % faster.
 */
export function saxpyTime(v: FakeVariant): number {
  let t = largestBuffer(v.test) * 1e-6;
  if (v.source.includes('FAKE_BLOCK_AWARE') && v.defines.block_size_x === '512') t *= 0.6;
  if (v.source.includes('FAKE_SLIGHTLY_FASTER')) t *= 0.995;
  return t;
}

/** An autonomous saxpy session on the fake GPU (TEST DOUBLE) with `llm`: one retry per error, fast transport retries. */
export function saxpySessionOptions(llm: LLMKernelTransformerOptions['llm'], extra: Partial<LLMKernelTransformerOptions> = {}): LLMKernelTransformerOptions {
  return {
    llm,
    backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
    tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }),
    transportRetryPolicy: FAST_TRANSPORT_RETRY,
    ...extra,
  };
}

/** Limits as an H100 SXM's measure (TEST DOUBLE's figures, for the fake backend's speed of light). */
export const H100_LIMITS: DeviceSpeedLimits = {
  bandwidthGBps: 3000,
  bandwidthMethod: 'copy kernel (test double: not measured)',
  memcpyGBps: 3100,
  fp32GFlops: 66_908,
  fp32Formula: '132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz = 66.9 TFLOP/s',
};

/**
 * Nsight Compute's answer for a launch of `kernel` (TEST DOUBLE of a run: the captured raw page of
 * test/fixtures/ncu/matmul_naive-raw.csv, read by the real parser and summarized as a real profile is).
 */
export function ncuProfileOf(kernel: string): KernelProfile {
  const row = parseNcuCsv(readFileSync(join(__dirname, '..', 'fixtures', 'ncu', 'matmul_naive-raw.csv'), 'utf8'))[0]!;
  const numbers = profileNumbers(row);
  return {
    available: true,
    kernel,
    numbers,
    summary: summarizeProfile(numbers, kernel),
    metrics: row.metrics,
    units: row.units,
    skippedMetrics: [],
    ncu: { path: '/opt/nvidia/nsight-compute/2025.3.1/ncu', version: '2025.3.1', foundBy: '/opt/nvidia/nsight-compute' },
  };
}
