// The expert session of examples/matmul_naive: answers written by hand as a capable model would give them
// (examples/matmul_naive/expert/), recorded as a session (examples/matmul_naive/expert-session.json) that
// bench/expert-replay.ts replays through the whole graph on the GPU. Here, without a GPU:
//  - the recording is the session these answers make with today's graph (after a change of the prompts, regenerate it:
//    LKT_RECORD_EXPERT=1 npx vitest run test/unit/expert-session.test.ts);
//  - its requests that plan or rewrite carry the GPU as measured and the current kernel's profile;
//  - it replays to the end on the fake backend, every step accepted, every recorded answer used, also on a fake GPU
//    that measures other numbers (another name, limits and an Nsight Compute profile), as on a real one;
//  - every step's kernel compiles with nvcc at the corners of its search space.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemorySaver } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryEntrySchema, type HistoryEntry } from '../../src/engine/store/history-store';
import type { LlmExchange } from '../../src/engine/llm/exchange';
import { ReplayChatModel } from '../../src/engine/llm/replay';
import { exchangesOf } from '../../src/engine/session/session-log';
import { historyFields, reduceAll } from '../../src/engine/session/session-view';
import { transformerOptionsFrom } from '../../src/engine/session/session-options';
import type { SessionSettings } from '../../src/engine/session/session-settings';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { collect, H100_LIMITS, ncuProfileOf, openaiModel, scriptedServers } from '../support/engine-harness';
import { FakeBackend, type FakeVariant } from '../support/fake-backend';
import type { ScriptTurn } from '../support/scripted-llm-server';

const EXAMPLE = join(__dirname, '..', '..', 'examples', 'matmul_naive');
const EXPERT = join(EXAMPLE, 'expert');
const RECORDING = join(EXAMPLE, 'expert-session.json');
const SOURCE = readFileSync(join(EXAMPLE, 'matmul_naive.cu'), 'utf8');
/** Fixed, so that the recording only changes when the session does. */
const RECORDED_AT = '2026-11-25T00:00:00.000Z';

const hasNvcc = await NvccCompiler.available();
const servers = scriptedServers();
afterEach(() => servers.closeAll());

const EXPERT_SETTINGS: SessionSettings = {
  kernelName: 'matmul_naive',
  fileName: 'matmul_naive.cu',
  includePaths: [],
  compilerOptions: [],
  strategy: { kind: 'autonomous', breakdownSteps: false, maxBreakdowns: 1, withReplanning: false, maxReplanning: 1, candidatesPerStep: 1 },
  retries: 1,
  performanceThreshold: 1,
  iterations: 32,
  timePerTestS: 15,
  structuredOutputType: 'default',
  stripThinking: false,
  approvePlan: false,
  model: { provider: 'openai', model: 'hand-written-expert' },
};

interface AnswerTurn extends ScriptTurn {
  /** A step's rewrite: the kernel file beside answers.json, a sentence before it and the json block after it (if any). */
  kernel?: string;
  prose?: string;
  json?: unknown;
}

/** The answers as the scripted model's turns: a step's answer is the prose, its kernel in a cuda block and its json, if any. */
function turns(): ScriptTurn[] {
  const answers = JSON.parse(readFileSync(join(EXPERT, 'answers.json'), 'utf8')) as { turns: AnswerTurn[] };
  return answers.turns.map(({ kernel, prose, json, ...turn }) => {
    if (kernel === undefined) return turn;
    const code = readFileSync(join(EXPERT, kernel), 'utf8').trimEnd();
    const jsonBlock = json === undefined ? '' : `\n\`\`\`json\n${JSON.stringify(json)}\n\`\`\`\n`;
    return { ...turn, respond: { content: `${prose}\n\n\`\`\`cuda\n${code}\n\`\`\`\n${jsonBlock}` } };
  });
}

/**
 * TEST DOUBLE's time model for this session: each step of the plan is faster than the one before on the fake GPU (as
 * on a real one), so the fake replay accepts every step; within a step, larger tiles are a little faster.
 */
function expertTime(v: FakeVariant): number {
  const n = v.test.kind === 'spec' ? v.test.test.scalars.n! : 4096;
  const source = v.source;
  const tflops = source.includes('a_tile[2]') ? 36 : source.includes('float4') ? 28 : source.includes('tile_n') ? 20 : source.includes('__shared__') ? 8 : 4;
  const d = (name: string) => Number(v.defines[name] ?? 1);
  const tiles = d('tile_m') * d('tile_n') * d('block_size_x') * d('block_size_y');
  const occupancy = source.includes('float4') ? 1 + 0.01 * (d('min_blocks_per_sm') - 1) : 1;
  return ((2 * n ** 3) / (tflops * 1e12) / (1 + Math.log2(tiles) / 100) / occupancy) * 1e3;
}

async function recordSession(): Promise<HistoryEntry> {
  const server = await servers.start(turns());
  const { options } = transformerOptionsFrom(EXPERT_SETTINGS, {
    llm: openaiModel(server, EXPERT_SETTINGS.model.model),
    backend: new FakeBackend({ model: { timeMs: expertTime }, limits: H100_LIMITS }),
    checkpointer: new MemorySaver(),
    threadId: 'expert-matmul-naive',
  });
  const run = await collect(new LLMKernelTransformer(SOURCE, options));
  expect(server.mismatches).toEqual([]);
  expect(server.remaining()).toBe(0);
  expect(run.end).toEqual({ status: 'finished' });
  // A hand-written answer takes no time; the fake measurements stay out of the record (the replay measures).
  const llmExchanges = exchangesOf(run.events).map((x) => ({ ...x, startedAt: RECORDED_AT, durationMs: 0 }));
  return HistoryEntrySchema.parse({
    id: 'expert-matmul-naive',
    kernelName: 'matmul_naive',
    filePath: 'examples/matmul_naive/matmul_naive.cu',
    createdAt: RECORDED_AT,
    updatedAt: RECORDED_AT,
    device: { name: 'none: hand-written answers, measured when replayed' },
    status: 'completed',
    steps: historyFields(reduceAll({ sessionId: 'expert-matmul-naive', kernelName: 'matmul_naive', fileName: 'matmul_naive.cu', startedAt: RECORDED_AT, model: 'expert', strategy: 'autonomous' }, run.events)).steps.map(({ stepId, title }) => ({ stepId, title, status: 'accepted' as const })),
    originalCode: SOURCE,
    threadId: 'expert-matmul-naive',
    run: EXPERT_SETTINGS,
    llmExchanges,
  });
}

const request = (x: LlmExchange) => ({ purpose: x.purpose, messages: x.messages, response: x.response });

describe('the expert session of examples/matmul_naive', () => {
  it('is recorded from the answers as the graph asks for them today', async () => {
    const fresh = await recordSession();
    if (process.env.LKT_RECORD_EXPERT === '1') writeFileSync(RECORDING, `${JSON.stringify(fresh, null, 2)}\n`);
    const stored = HistoryEntrySchema.parse(JSON.parse(readFileSync(RECORDING, 'utf8')));
    const hint = 'the recording is out of date: LKT_RECORD_EXPERT=1 npx vitest run test/unit/expert-session.test.ts';
    expect(stored.llmExchanges!.map(request), hint).toEqual(fresh.llmExchanges!.map(request));
    expect(stored.run, hint).toEqual(EXPERT_SETTINGS);
    expect(stored.originalCode, hint).toBe(SOURCE);
    expect(stored.llmExchanges!.map((x) => x.purpose)).toEqual(['describe kernel', 'problem size', 'outputs', 'test spec', 'plan', 'validate steps', 'step 1', 'restrictions', 'step 2', 'restrictions', 'step 3', 'restrictions', 'step 4', 'restrictions']);
  });

  it('tells the model the GPU as measured and, in every step after the first, the profile of the step before', () => {
    const stored = HistoryEntrySchema.parse(JSON.parse(readFileSync(RECORDING, 'utf8')));
    const prompt = (purpose: string) => stored.llmExchanges!.find((x) => x.purpose === purpose)!.messages.at(-1)!.content as string;
    for (const purpose of ['plan', 'step 1', 'step 2', 'step 3', 'step 4']) {
      expect(prompt(purpose)).toContain('The GPU, as the tuner measured it:\n- Fake GPU (test double)');
      expect(prompt(purpose)).toMatch(/- the current kernel takes [\d.]+ ms on the first test, [\d.]+% of its speed of light/);
      expect(prompt(purpose)).toMatch(/Profile of the current kernel at its best configuration \{.*\} \(the driver's metrics: Nsight Compute is not installed\):\n- matmul_naive: \d+ registers per thread/);
    }
    // Each step's request carries the configuration the step before it chose.
    expect(prompt('plan')).toContain('at its best configuration {"block_size_x":16,"block_size_y":16}');
    expect(prompt('step 2')).toMatch(/at its best configuration \{"block_size_x":\d+,"block_size_y":\d+,"tile_m":\d+,"tile_k":\d+\}/);
  });

  it('replays through the whole graph without a model, every step accepted, to the double-buffered kernel', async () => {
    const stored = HistoryEntrySchema.parse(JSON.parse(readFileSync(RECORDING, 'utf8')));
    const replay = new ReplayChatModel(stored.llmExchanges!);
    // Another GPU than the recording's: its name, limits and profiles differ, and the replay goes through all the same.
    const backend = new FakeBackend({
      model: { timeMs: expertTime, profile: () => ncuProfileOf('matmul_naive') },
      device: { name: 'Another fake GPU (test double)' },
      limits: { ...H100_LIMITS, bandwidthGBps: 4800 },
    });
    const { options } = transformerOptionsFrom(stored.run!, { llm: replay, backend, checkpointer: new MemorySaver(), threadId: 'replay' });
    const run = await collect(new LLMKernelTransformer(stored.originalCode, options));
    expect(run.end).toEqual({ status: 'finished' });
    expect(replay.unused()).toEqual([]);
    expect(run.of('step.accepted').map((e) => e.stepId)).toEqual(['1', '2', '3', '4']);
    // The requests of this run carry this GPU's measurements, not the recording's.
    const asked = run.of('llm.exchange').find((e) => e.exchange.purpose === 'step 2')!.exchange.messages.at(-1)!.content as string;
    expect(asked).toContain('- Another fake GPU (test double)');
    expect(asked).toContain('(Nsight Compute 2025.3.1, one launch):\n- matmul_naive: memory-bound, DRAM throughput 86% of peak');
    const finished = run.of('session.finished')[0]!;
    expect(finished.tunableCode).toContain('__launch_bounds__(block_size_x * block_size_y, min_blocks_per_sm)');
    expect(finished.tunableCode).toContain('a_tile[2][tile_k]');
    expect(Object.keys(finished.bestParams).sort()).toEqual(['block_size_x', 'block_size_y', 'min_blocks_per_sm', 'tile_k', 'tile_m', 'tile_n']);
    expect(finished.launch.grid).toEqual([`(n + ${Number(finished.bestParams.block_size_x) * Number(finished.bestParams.tile_n) - 1}) / ${Number(finished.bestParams.block_size_x) * Number(finished.bestParams.tile_n)}`, expect.any(String), '1']);
    // The restrictions of the third step keep the search to tiles float4 can move.
    const step3 = run.of('configs.evaluated').filter((e) => e.stepId === '3');
    expect(step3.length).toBe(96);
    expect(step3.every((e) => Number(e.result.config.tile_m) % 4 === 0)).toBe(true);
    // Those of the fourth keep blocks of 128 to 256 threads and leave out the one shape that spills registers.
    const step4 = run.of('configs.evaluated').filter((e) => e.stepId === '4').map((e) => e.result.config as Record<string, number>);
    expect(step4.length).toBe(63);
    const threads = (c: Record<string, number>) => c.block_size_x! * c.block_size_y!;
    expect(step4.every((c) => threads(c) >= 128 && threads(c) <= 256)).toBe(true);
    expect(step4.some((c) => threads(c) === 256 && c.tile_m! * c.tile_n! === 64 && c.tile_k === 16 && c.min_blocks_per_sm === 2)).toBe(false);
  });

  it.skipIf(!hasNvcc)('compiles every step\'s kernel with nvcc at the corners of its search space, without spilling registers', async () => {
    const nvcc = new NvccCompiler({ defaultArch: 'sm_90' });
    const corners: [string, Record<string, number>[]][] = [
      ['step1_shared_tiles.cu', [{ block_size_x: 32, block_size_y: 4, tile_m: 4, tile_k: 8 }, { block_size_x: 64, block_size_y: 16, tile_m: 8, tile_k: 16 }]],
      ['step2_register_blocking.cu', [{ block_size_x: 8, block_size_y: 8, tile_m: 4, tile_n: 4, tile_k: 8 }, { block_size_x: 16, block_size_y: 16, tile_m: 8, tile_n: 8, tile_k: 16 }]],
      [
        'step3_vectorized.cu',
        [
          { block_size_x: 8, block_size_y: 8, tile_m: 4, tile_n: 4, tile_k: 8, min_blocks_per_sm: 1 },
          { block_size_x: 16, block_size_y: 16, tile_m: 8, tile_n: 8, tile_k: 16, min_blocks_per_sm: 2 },
          { block_size_x: 32, block_size_y: 8, tile_m: 4, tile_n: 4, tile_k: 16, min_blocks_per_sm: 2 },
        ],
      ],
      [
        'step4_double_buffered.cu',
        [
          { block_size_x: 32, block_size_y: 4, tile_m: 4, tile_n: 4, tile_k: 8, min_blocks_per_sm: 1 },
          { block_size_x: 16, block_size_y: 16, tile_m: 8, tile_n: 8, tile_k: 8, min_blocks_per_sm: 2 },
          { block_size_x: 16, block_size_y: 16, tile_m: 8, tile_n: 8, tile_k: 16, min_blocks_per_sm: 1 },
          { block_size_x: 16, block_size_y: 8, tile_m: 8, tile_n: 8, tile_k: 16, min_blocks_per_sm: 2 },
          { block_size_x: 32, block_size_y: 8, tile_m: 8, tile_n: 4, tile_k: 16, min_blocks_per_sm: 2 },
        ],
      ],
    ];
    for (const [file, configs] of corners) {
      const source = readFileSync(join(EXPERT, file), 'utf8');
      for (const defines of configs) {
        const compiled = await nvcc.compile({ source, fileName: file, nameExpressions: ['matmul_naive'], defines: { block_size_z: 1, ...defines } });
        expect(compiled.log, `${file} ${JSON.stringify(defines)}`).not.toMatch(/warning/i);
        expect(compiled.resources?.matmul_naive, `${file} ${JSON.stringify(defines)}`).toMatchObject({ spillStoreBytes: 0, spillLoadBytes: 0 });
      }
    }
  }, 120_000);
});
