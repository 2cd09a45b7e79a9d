// A recorded evolutionary session for the editor's tests and screenshots (test/fixtures/sessions/evolution-saxpy.fake-gpu.json):
// a real session of the evolutionary strategy, recorded on the FAKE GPU (TEST DOUBLE: times and Nsight Compute
// profiles from the formulas below) with the content-answering model stand-in (TEST DOUBLE:
// test/support/evolution-responder.ts). Its header says so. Regenerate it after a change of the strategy or its prompts:
//   LKT_RECORD_EVOLUTION=1 npx vitest run test/unit/evolution-recording.test.ts
// Here, without a GPU: it replays to the same population with its recorded answers and no model; its population has
// what the lineage tree must draw (kept and retired variants, a rejected child, a judge's reading, niches); and each
// variant's code with its best values defined is what the session's final kernel is for the best one.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemorySaver } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryEntrySchema, type HistoryEntry } from '../../src/engine/store/history-store';
import { ReplayChatModel } from '../../src/engine/llm/replay';
import { exchangesOf, SESSION_REPORT_FORMAT } from '../../src/engine/session/session-log';
import { historyFields, reduceAll, type SessionHeader } from '../../src/engine/session/session-view';
import { transformerOptionsFrom } from '../../src/engine/session/session-options';
import { replaySettings, type SessionSettings } from '../../src/engine/session/session-settings';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import type { TuningEvent } from '../../src/engine/progress/events';
import type { KernelProfile } from '../../src/gpu/ncu/profile';
import { summarizeProfile } from '../../src/gpu/ncu/report';
import { variantKernel } from '../../src/extension/variant-kernel';
import { collect, ncuProfileOf, openaiModel, scriptedServers } from '../support/engine-harness';
import { evolutionResponder, saxpyEvolutionTime } from '../support/evolution-responder';
import { FakeBackend, type FakeVariant } from '../support/fake-backend';

const ROOT = join(__dirname, '..', '..');
const EVOLUTION_RECORDING = join(ROOT, 'test', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json');
const SOURCE = readFileSync(join(ROOT, 'test', 'extension', 'workspace', 'saxpy.cu'), 'utf8');
const SESSION_ID = 'evolution-saxpy-fake-gpu';

const SETTINGS: SessionSettings = {
  kernelName: 'saxpy',
  fileName: 'saxpy.cu',
  includePaths: [],
  compilerOptions: [],
  strategy: { kind: 'evolutionary', seed: 5, window: 3, maxChildren: 10 },
  llmConcurrency: 4,
  prices: { inputPerMTok: 3, outputPerMTok: 15 },
  retries: 1,
  performanceThreshold: 1,
  iterations: 32,
  timePerTestS: 15,
  structuredOutputType: 'default',
  stripThinking: false,
  approvePlan: false,
  model: { provider: 'openai', model: 'evolution-responder' },
};

/**
 * TEST DOUBLE of Nsight Compute on the fake GPU: a rewrite that combined two parents is compute-bound, any other
 * memory-bound; occupancy falls with every idea applied. So the archive has niches to keep apart.
 */
function profileOf(v: FakeVariant): KernelProfile {
  const ideas = v.source.split('\n').filter((l) => l.startsWith('// FAKE_SPEED')).length;
  const base = ncuProfileOf('saxpy') as Extract<KernelProfile, { available: true }>;
  const numbers = { ...base.numbers, bound: v.source.includes('FAKE_SPEED crossover') ? ('compute' as const) : ('memory' as const), busiestMemory: 'DRAM' as const, achievedOccupancyPct: Math.max(12, 90 - 20 * ideas) };
  return { ...base, numbers, summary: summarizeProfile(numbers, 'saxpy') };
}

const fakeGpu = () => new FakeBackend({ model: { timeMs: saxpyEvolutionTime, profile: profileOf } });

const servers = scriptedServers();
afterEach(() => servers.closeAll());

/** Operators, parents, the variants they made and why children were rejected: what a replay must decide again. */
function decisions(events: readonly TuningEvent[]): string[] {
  return events.flatMap((e) => {
    if (e.type === 'population.child') return [`child ${e.child}: ${e.operator} of ${e.parents.join('+')}`];
    if (e.type === 'population.variant') return [`${e.variant.id} (${e.variant.bound}/${e.variant.occupancy})${e.best ? ' best' : ''}${e.retired.length > 0 ? `, retired ${e.retired.join('+')}` : ''}`];
    if (e.type === 'population.rejected') return [`child ${e.child} rejected: ${e.reason.kind}`];
    return [];
  });
}

async function recordSession(): Promise<HistoryEntry> {
  const server = await servers.start([], { responder: evolutionResponder() });
  const { options } = transformerOptionsFrom(SETTINGS, { llm: openaiModel(server, SETTINGS.model.model), backend: fakeGpu(), checkpointer: new MemorySaver(), threadId: SESSION_ID });
  const run = await collect(new LLMKernelTransformer(SOURCE, options));
  expect(server.mismatches).toEqual([]);
  expect(run.end).toEqual({ status: 'finished' });
  const events = run.events.filter((e) => e.type !== 'llm.exchange');
  const header: SessionHeader = {
    sessionId: SESSION_ID,
    kernelName: 'saxpy',
    fileName: 'saxpy.cu',
    startedAt: events[0]!.at,
    model: 'FAKE GPU recording (test doubles, not a measurement): the fake GPU backend times kernels by a formula; scripted answers, no LLM',
    strategy: 'evolutionary',
  };
  const view = reduceAll(header, events);
  return HistoryEntrySchema.parse({
    id: SESSION_ID,
    kernelName: 'saxpy',
    filePath: 'saxpy.cu',
    createdAt: header.startedAt,
    updatedAt: events.at(-1)!.at,
    device: { name: view.device!.name },
    ...historyFields(view),
    originalCode: SOURCE,
    threadId: SESSION_ID,
    report: { format: SESSION_REPORT_FORMAT, header, events },
    run: SETTINGS,
    llmExchanges: exchangesOf(run.events),
  });
}

function recording(): { entry: HistoryEntry; header: SessionHeader; events: TuningEvent[] } {
  const entry = HistoryEntrySchema.parse(JSON.parse(readFileSync(EVOLUTION_RECORDING, 'utf8')));
  const report = entry.report as { header: SessionHeader; events: TuningEvent[] };
  return { entry, header: report.header, events: report.events };
}

describe('the recorded evolutionary session (fake GPU)', () => {
  it.runIf(process.env.LKT_RECORD_EVOLUTION === '1')('is recorded anew', async () => {
    const entry = await recordSession();
    writeFileSync(EVOLUTION_RECORDING, `${JSON.stringify(entry)}\n`);
  }, 120_000);

  it('says in its header and its device that it was recorded on the fake GPU with scripted answers', () => {
    const { entry, header } = recording();
    expect(header.model).toMatch(/^FAKE GPU recording \(test doubles, not a measurement\)/);
    expect(entry.device.name).toBe('Fake GPU (test double)');
    expect(entry.run?.strategy).toEqual(SETTINGS.strategy);
  });

  it('replays to the same population with its recorded answers and no model, every answer used', async () => {
    const { entry, events } = recording();
    const replay = new ReplayChatModel(entry.llmExchanges!);
    const { options } = transformerOptionsFrom(replaySettings(entry.run!, events), { llm: replay, backend: fakeGpu(), checkpointer: new MemorySaver(), threadId: 'replay' });
    const run = await collect(new LLMKernelTransformer(entry.originalCode, options));
    expect(run.end).toEqual({ status: 'finished' });
    expect(replay.unused()).toEqual([]);
    expect(decisions(run.events)).toEqual(decisions(events));
  }, 120_000);

  it('has what the lineage tree draws: kept, retired and best variants, a rejected child and why, a judge\'s reading, several niches, the cost of every call', () => {
    const { header, events } = recording();
    const view = reduceAll(header, events);
    const p = view.population!;
    expect(p.variants.length).toBeGreaterThanOrEqual(6);
    expect(p.bestId).toBe(view.population!.variants.reduce((a, b) => (b.timeMs < a.timeMs ? b : a)).id);
    expect(p.retired.length).toBeGreaterThan(0);
    expect(p.children.filter((c) => c.rejection).map((c) => c.rejection!.kind)).toContain('wrong_result');
    expect(p.children.some((c) => c.operator === 'crossover' && c.variant)).toBe(true);
    expect(p.children.some((c) => c.judged)).toBe(true);
    expect(new Set(p.variants.map((v) => `${v.bound}/${v.occupancy}`)).size).toBeGreaterThanOrEqual(3);
    expect(p.stopped?.reason).toEqual({ kind: 'children', message: 'the 10 children asked for are made' });
    const usage = events.filter((e) => e.type === 'llm.usage');
    expect(usage.length).toBeGreaterThan(10);
    expect(usage.every((u) => u.costUsd !== undefined)).toBe(true);
    expect(view.usage.costUsd).toBeCloseTo(p.stopped!.usage.costUsd!, 12);
  });

  it("makes each variant's code as the final kernel is made: the best one's is the session's final kernel, another's has its own values defined", async () => {
    const { header, events } = recording();
    const view = reduceAll(header, events);
    const best = await variantKernel(view, view.population!.bestId!);
    expect(best.code).toBe(view.final!.finalCode);
    const other = view.population!.variants.find((v) => v.child !== null && v.id !== view.population!.bestId)!;
    const { code } = await variantKernel(view, other.id);
    expect(code).not.toBe(view.final!.finalCode);
    for (const [name, value] of Object.entries(other.bestParams)) expect(code).toContain(`#define ${name} ${value}`);
    for (const line of other.code.split('\n').filter((l) => l.startsWith('// FAKE_SPEED'))) expect(code).toContain(line);
    await expect(variantKernel(view, 'v999')).rejects.toThrow('this session has no variant v999');
  });
});
