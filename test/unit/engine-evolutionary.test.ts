// The evolutionary strategy on the fake GPU (TEST DOUBLE) with the real OpenAI client over HTTP, answered by content
// (test/support/evolution-responder.ts): selection and the archive, a failed child kept out of the population and named
// in the next prompts, every budget stopping with its reason, exact cost accounting, decisions recorded and replayed
// whatever the timing, resuming an interrupted session, checkpoints that do not stop the work, and the model and the
// GPUs working at once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { FileCheckpointSaver } from '../../src/engine/store/checkpointer';
import { EvolutionaryTuningStrategy, type EvolutionaryTuningStrategyOptions } from '../../src/engine/strategies/evolutionary';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import type { TuningEvent } from '../../src/engine/progress/events';
import { collect, FAST_TRANSPORT_RETRY, openaiModel, requestText, SAXPY, scriptedServers } from '../support/engine-harness';
import { evolutionResponder, JUDGE_INSTRUCTION, saxpyEvolutionTime, TOKENS } from '../support/evolution-responder';
import { FakeBackend } from '../support/fake-backend';
import { ReplayChatModel } from '../../src/engine/llm/replay';
import { exchangesOf } from '../../src/engine/session/session-log';
import { recordedDecisions } from '../../src/engine/session/session-settings';
import { rng as seeded } from '../support/seeded';

const servers = scriptedServers();
const dirs: string[] = [];
afterEach(async () => {
  await servers.closeAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Run {
  strategy?: EvolutionaryTuningStrategyOptions;
  options?: Partial<LLMKernelTransformerOptions>;
  delayMs?: (body: any) => number;
  backends?: FakeBackend[];
  /** The responder answers every mutation of a parent with the same kernel, whatever it is asked. */
  sameIdea?: boolean;
  onEvent?: (e: TuningEvent) => void;
}

async function evolve(run: Run = {}) {
  const server = await servers.start([], { responder: evolutionResponder({ ...(run.delayMs && { delayMs: run.delayMs }), ...(run.sameIdea && { sameIdea: true }) }) });
  const backends = run.backends ?? [new FakeBackend({ model: { timeMs: saxpyEvolutionTime } })];
  const transformer = new LLMKernelTransformer(SAXPY, {
    llm: openaiModel(server),
    backend: backends,
    tuningStrategy: new EvolutionaryTuningStrategy({ retryPolicy: defaultRetryPolicy(1), maxChildren: 8, ...run.strategy }),
    transportRetryPolicy: FAST_TRANSPORT_RETRY,
    ...run.options,
  });
  return { server, backends, result: await collect(transformer, {}, run.onEvent) };
}

/** The decisions and outcomes of a session, without times of day: what must not depend on timing. */
function decisions(events: readonly TuningEvent[]) {
  return events.flatMap((e) => {
    if (e.type === 'population.child') return [`child ${e.child}: ${e.operator} ${e.parents.join('+')}`];
    if (e.type === 'population.variant') return [`${e.variant.id} <- ${e.variant.parents.join('+')} ${e.variant.timeMs.toPrecision(6)}${e.best ? ' best' : ''}`];
    if (e.type === 'population.rejected') return [`child ${e.child} rejected: ${e.reason.kind}`];
    return [];
  });
}

describe('evolutionary strategy', () => {
  it('evolves a population: children enter in order, the fastest becomes the kernel, a failed child stays out and is named to the model', async () => {
    const { server, result } = await evolve({ strategy: { maxChildren: 12 } });
    expect(server.mismatches).toEqual([]);
    expect(result.end).toEqual({ status: 'finished' });
    const children = result.of('population.child');
    expect(children.map((c) => c.child)).toEqual([...Array(12).keys()]);
    expect(new Set(children.map((c) => c.operator))).toEqual(new Set(['mutate', 'crossover', 'judge']));
    const variants = result.of('population.variant');
    expect(variants[0]!.variant).toMatchObject({ id: 'v0', operator: 'original', parents: [] });
    expect(variants.map((v) => v.variant.id)).toEqual(variants.map((_, i) => `v${i}`));
    // Each entered child is 10 % faster than its parents per marker; the fastest is the session's final kernel, and the
    // tracker's steps are its lineage from the original.
    const fastest = variants.reduce((a, b) => (b.variant.timeMs < a.variant.timeMs ? b : a));
    expect(fastest.variant.timeMs).toBeLessThan(variants[0]!.variant.timeMs * 0.9 ** 2 * 1.0001);
    const finished = result.of('session.finished')[0]!;
    expect(finished.tunableCode).toBe(fastest.variant.code);
    expect(finished.tracker.finalTimeMs).toBeCloseTo(fastest.variant.timeMs, 9);
    expect(finished.tracker.steps.at(-1)!.newTimeMs).toBeCloseTo(fastest.variant.timeMs, 9);
    // Judge-led children apply the judge's instruction.
    const judges = children.filter((c) => c.operator === 'judge').map((c) => c.child);
    expect(result.of('population.judged').map((j) => j.child)).toEqual(judges);
    for (const j of result.of('population.judged')) expect(j.instruction.startsWith(JUDGE_INSTRUCTION)).toBe(true);
    // Every rewrite of v1 alone (mutation, judge-led mutation) is wrong: rejected after the retry, never a variant.
    const ofV1 = children.filter((c) => c.operator !== 'crossover' && c.parents[0] === 'v1').map((c) => c.child);
    const rejected = result.of('population.rejected');
    expect(ofV1.length).toBeGreaterThan(0);
    expect(rejected.map((r) => r.child)).toEqual(ofV1);
    for (const r of rejected) expect(r.reason.kind).toBe('wrong_result');
    expect(variants.filter((v) => ofV1.includes(v.variant.child ?? -1))).toEqual([]);
    // Children decided once the rejection was in (the results they saw count it) are told what failed.
    const first = rejected[0]!.child;
    const later = children.filter((c) => c.known!.rejected > 0);
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) {
      const asked = server.requests.filter((r) => requestText(r.body).includes(`variant ${c.parents[0]}`));
      expect(asked.some((r) => requestText(r.body).includes(`child ${first} (`) && requestText(r.body).includes('failed: wrong result'))).toBe(true);
    }
    const stopped = result.of('population.stopped')[0]!;
    expect(stopped.reason).toEqual({ kind: 'children', message: 'the 12 children asked for are made' });
    expect(stopped.variants + stopped.rejected).toBe(1 + 12);
  }, 60_000);

  it('asks children written side by side for different ideas, and keeps one variant of a kernel that comes back twice', async () => {
    // Asked differently, children of one parent differ: no two variants share a kernel.
    const asked = await evolve({ strategy: { seed: 1, maxChildren: 8 } });
    const codes = asked.result.of('population.variant').map((v) => v.variant.code);
    expect(new Set(codes).size).toBe(codes.length);
    const ranks = asked.server.requests.map((r) => /rank number (\d+) among the promising ones/.exec(requestText(r.body))?.[1]).filter(Boolean);
    expect(ranks).toContain('2');
    // Asked for their second and third choices, no child came back as another's kernel (the entry check had nothing to catch).
    const isTwin = (r: { reason: { kind: string; error?: string } }) => r.reason.kind === 'failed' && r.reason.error === 'DuplicateVariant';
    expect(asked.result.of('population.rejected').filter(isTwin)).toEqual([]);

    // A model that answers the same whatever it is asked: the later twin is rejected, named as a twin, and counted as a failed try.
    const same = await evolve({ strategy: { seed: 1, maxChildren: 8 }, sameIdea: true });
    const variants = same.result.of('population.variant').map((v) => v.variant);
    expect(new Set(variants.map((v) => v.code)).size).toBe(variants.length);
    const twins = same.result.of('population.rejected').filter(isTwin);
    expect(twins.length).toBeGreaterThan(0);
    for (const t of twins) expect(t.reason).toMatchObject({ message: expect.stringMatching(/^the rewrite is v\d+'s code again$/) });
    const stopped = same.result.of('population.stopped')[0]!;
    expect(stopped.variants + stopped.rejected).toBe(1 + 8);
  }, 60_000);

  it('refuses to evolve further a session it has no checkpoint of, before asking the model anything', async () => {
    const { server, result } = await evolve({ options: { evolveFurther: true, threadId: 'imported-session' } });
    expect(result.end).toMatchObject({ status: 'failed' });
    expect(String((result.end as { error: unknown }).error)).toContain('session imported-session has no checkpoint here to evolve further from');
    expect(server.requests).toEqual([]);
  });

  it('decides from the results in when a place frees, records what each decision saw, and a replay follows the decisions whatever order the answers came in', async () => {
    const rng = seeded(3);
    const shuffled = await evolve({ strategy: { seed: 7 }, delayMs: () => Math.floor(rng() * 40) });
    expect(shuffled.result.end).toEqual({ status: 'finished' });
    const children = shuffled.result.of('population.child');
    // Each decision says what it saw: the results in when it was made, never more than the children before it.
    for (const c of children) {
      expect(c.known).toBeDefined();
      expect(c.known!.variants - 1 + c.known!.rejected).toBeLessThanOrEqual(c.child);
    }
    // With a window of 4 children are decided before the results of the ones before them are in.
    expect(children.some((c) => c.known!.variants - 1 + c.known!.rejected < c.child)).toBe(true);

    const { decisions: recorded } = recordedDecisions(shuffled.result.events);
    expect(recorded?.length).toBe(children.length);
    const replay = new ReplayChatModel(exchangesOf(shuffled.result.events));
    const replayed = await collect(
      new LLMKernelTransformer(SAXPY, {
        llm: replay,
        backend: new FakeBackend({ model: { timeMs: saxpyEvolutionTime } }),
        tuningStrategy: new EvolutionaryTuningStrategy({ retryPolicy: defaultRetryPolicy(1), seed: 7, maxChildren: children.length, decisions: recorded! }),
        transportRetryPolicy: FAST_TRANSPORT_RETRY,
      }),
    );
    expect(replayed.end).toEqual({ status: 'finished' });
    expect(replay.unused()).toEqual([]);
    expect(decisions(replayed.events)).toEqual(decisions(shuffled.result.events));
  }, 120_000);

  it('decides each child from every result before it with a window of 1, one child at a time', async () => {
    const { result } = await evolve({ strategy: { seed: 2, window: 1, maxChildren: 6 } });
    const children = result.of('population.child');
    expect(children.map((c) => c.child)).toEqual([...Array(6).keys()]);
    for (const c of children) expect(c.known!.variants - 1 + c.known!.rejected).toBe(c.child);
  }, 60_000);

  it.each([
    ['model_calls', { budget: { modelCalls: 10 } }],
    ['tokens', { budget: { tokens: 12_000 } }],
    ['cost', { budget: { costUsd: 0.05 }, prices: { inputPerMTok: 3, outputPerMTok: 15 } }],
    ['wall_time', { budget: { wallTimeS: 1.5 } }],
  ] as const)('stops when the %s budget is spent, says so, and counts what it spent', async (name, options) => {
    const { result } = await evolve({ strategy: { maxChildren: 40 }, options, delayMs: () => (name === 'wall_time' ? 50 : 0) });
    expect(result.end).toEqual({ status: 'finished' });
    const stopped = result.of('population.stopped')[0]!;
    expect(stopped.reason).toMatchObject({ kind: 'budget', budget: name });
    expect(stopped.reason.message).toMatch(/budget .* is spent/);
    const usage = result.of('llm.usage');
    // What it spent is what the answers reported, exactly: every answer reports TOKENS.
    expect(stopped.usage.calls).toBe(usage.length);
    expect(stopped.usage.inputTokens).toBe(usage.length * TOKENS.promptTokens);
    expect(stopped.usage.outputTokens).toBe(usage.length * TOKENS.completionTokens);
    // Children decided before the budget ran out finish; none is decided after.
    const children = result.of('population.child');
    expect(children.length).toBeLessThan(40);
    expect(stopped.variants - 1 + stopped.rejected).toBe(children.length);
    if (name === 'cost') {
      const perCall = (TOKENS.promptTokens * 3 + TOKENS.completionTokens * 15) / 1e6;
      for (const u of usage) expect(u.costUsd).toBeCloseTo(perCall, 12);
      expect(stopped.usage.costUsd).toBeCloseTo(usage.length * perCall, 12);
      expect(stopped.usage.costUsd).toBeGreaterThanOrEqual(0.05);
    } else {
      expect(stopped.usage.costUsd).toBeNull();
    }
    if (name === 'model_calls') expect(usage.length).toBeGreaterThanOrEqual(10);
  }, 60_000);

  it('refuses a cost budget without prices, and budgets that are not positive, before anything runs', () => {
    const llm = {} as LLMKernelTransformerOptions['llm'];
    expect(() => new LLMKernelTransformer(SAXPY, { llm, budget: { costUsd: 1 } })).toThrow("a cost budget needs the model's prices per million input and output tokens");
    expect(() => new LLMKernelTransformer(SAXPY, { llm, budget: { modelCalls: 0 } })).toThrow(/invalid budget: modelCalls/);
    expect(() => new LLMKernelTransformer(SAXPY, { llm, llmConcurrency: 0 })).toThrow('model calls in flight must be an integer >= 1, got 0');
  });

  it('goes on with the same population after an interruption: the children the checkpoint holds are finished, not decided again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evolve-resume-'));
    dirs.push(dir);
    const server = await servers.start([], { responder: evolutionResponder() });
    const backend = new FakeBackend({ model: { timeMs: saxpyEvolutionTime } });
    const controller = new AbortController();
    const session = (signal?: AbortSignal) =>
      new LLMKernelTransformer(SAXPY, {
        llm: openaiModel(server),
        backend,
        tuningStrategy: new EvolutionaryTuningStrategy({ retryPolicy: defaultRetryPolicy(1), maxChildren: 16, chunk: 2, seed: 3 }),
        transportRetryPolicy: FAST_TRANSPORT_RETRY,
        checkpointer: new FileCheckpointSaver(dir),
        threadId: 'evolve-1',
        ...(signal && { signal }),
      });
    // Interrupted as its second run of the evolve node starts: the first one's children are in the checkpoint.
    let evolveRuns = 0;
    let checkpointed: { population: { committed: number; plans: { child: number }[]; variants: { id: string; timeMs: number }[] } } | undefined;
    const interrupted = await collect(session(controller.signal), {}, (e) => {
      if (e.type === 'graph.node' && e.node === 'evolve' && e.phase === 'finished' && evolveRuns === 1) checkpointed = e.data as typeof checkpointed;
      if (e.type === 'graph.node' && e.node === 'evolve' && e.phase === 'started' && ++evolveRuns === 2) controller.abort();
    });
    expect(interrupted.end.status).toBe('cancelled');
    const resumed = await collect(session());
    expect(resumed.end).toEqual({ status: 'finished' });
    expect(resumed.of('population.variant').some((v) => v.variant.id === 'v0')).toBe(false);
    // The children the checkpoint had decided are made without being decided again; the next ones are decided anew.
    const held = checkpointed!.population;
    const decidedBefore = held.committed + held.plans.length;
    expect(decidedBefore).toBeGreaterThan(2);
    const again = resumed.of('population.child').map((c) => c.child);
    expect(again.length).toBeGreaterThan(0);
    expect(Math.min(...again)).toBe(decidedBefore);
    // The variants of the checkpoint stay as they were, and the population grows to all 16 children.
    const entered = new Map(interrupted.of('population.variant').map((v) => [v.variant.id, v.variant.timeMs]));
    for (const v of held.variants) expect(entered.get(v.id)).toBe(v.timeMs);
    const stopped = resumed.of('population.stopped')[0]!;
    expect(stopped.variants + stopped.rejected).toBe(1 + 16);
  }, 120_000);

  it('checkpoints without stopping the work: requests in flight go on into the next run of the node, none is asked again', async () => {
    const { delayMs, spans } = slowRewrites(60);
    const boundaries: number[] = [];
    const { server, result } = await evolve({ strategy: { chunk: 1, seed: 4, maxChildren: 10 }, delayMs, onEvent: (e) => {
      if (e.type === 'graph.node' && e.node === 'evolve' && e.phase === 'finished') boundaries.push(performance.now());
    } });
    expect(result.end).toEqual({ status: 'finished' });
    expect(boundaries.length).toBeGreaterThan(5);
    // A request was being answered while the node returned its checkpoint...
    expect(spans.some(([start, end]) => boundaries.some((b) => start < b && b < end))).toBe(true);
    // ... and its answer was used: every request made is a call counted, none was dropped and asked again.
    expect(server.requests.length).toBe(result.of('llm.usage').length);
    expect(result.of('population.stopped')[0]!.usage.calls).toBe(server.requests.length);
  }, 60_000);

  it('frees a child\'s place when its rewrite goes to the GPU: the model writes a whole window of children while the GPU measures another', async () => {
    const { delayMs, spans } = slowRewrites(150);
    const gpu = new TimedFakeBackend({ model: { timeMs: saxpyEvolutionTime }, timeDelayMs: 40 });
    const { result } = await evolve({ strategy: { window: 3, seed: 6, maxChildren: 10 }, backends: [gpu], delayMs });
    expect(result.end).toEqual({ status: 'finished' });
    const writing = (t: number) => spans.filter(([start, end]) => start <= t && t < end).length;
    // At some moment the GPU timed a child while three others were being written (a window of 3 counting the child on
    // the GPU would have left room for two).
    const moments = gpu.busy.flatMap(([start, end]) => [start, ...spans.map(([s]) => s).filter((s) => s > start && s < end)]);
    expect(Math.max(...moments.map(writing))).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('writes children while the GPU evaluates others, and evaluates them side by side on several GPUs', async () => {
    const { delayMs, spans: modelBusy } = slowRewrites(80);
    const gpus = [0, 1].map(() => new TimedFakeBackend({ model: { timeMs: saxpyEvolutionTime }, timeDelayMs: 40 }));
    const { result } = await evolve({ strategy: { window: 4 }, backends: gpus, delayMs });
    expect(result.end).toEqual({ status: 'finished' });
    const overlaps = (a: [number, number], b: [number, number]) => a[0] < b[1] && b[0] < a[1];
    const gpuBusy = gpus.flatMap((g) => g.busy);
    // The model answered while a GPU timed kernels...
    expect(modelBusy.some((m) => gpuBusy.some((g) => overlaps(m, g)))).toBe(true);
    // ... both GPUs worked, at the same time, each on one child at a time.
    expect(gpus.every((g) => g.busy.length > 0)).toBe(true);
    expect(gpus[0]!.busy.some((a) => gpus[1]!.busy.some((b) => overlaps(a, b)))).toBe(true);
    expect(gpus.map((g) => g.maxConcurrentTimings)).toEqual([1, 1]);
  }, 60_000);
});

/** Answers to rewrite requests (an operator's) that take `ms`, the others at once; `spans`: when each rewrite was being answered. */
function slowRewrites(ms: number) {
  const spans: [number, number][] = [];
  const delayMs = (body: any) => {
    if (!requestText(body).includes('Operator:')) return 0;
    spans.push([performance.now(), performance.now() + ms]);
    return ms;
  };
  return { delayMs, spans };
}

/** The fake GPU, recording when it was busy timing kernels. */
class TimedFakeBackend extends FakeBackend {
  readonly busy: [number, number][] = [];
  override async timedLaunches(...args: Parameters<FakeBackend['timedLaunches']>): ReturnType<FakeBackend['timedLaunches']> {
    const start = performance.now();
    try {
      return await super.timedLaunches(...args);
    } finally {
      this.busy.push([start, performance.now()]);
    }
  }
}
