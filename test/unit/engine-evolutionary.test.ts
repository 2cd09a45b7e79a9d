// The evolutionary strategy on the fake GPU (TEST DOUBLE) with the real OpenAI client over HTTP, answered by content
// (test/support/evolution-responder.ts): selection and the archive, a failed child kept out of the population and named
// in the next prompts, every budget stopping with its reason, exact cost accounting, determinism whatever the timing,
// resuming an interrupted session, and the model and the GPUs working at once.
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
}

async function evolve(run: Run = {}) {
  const server = await servers.start([], { responder: evolutionResponder({ ...(run.delayMs && { delayMs: run.delayMs }) }) });
  const backends = run.backends ?? [new FakeBackend({ model: { timeMs: saxpyEvolutionTime } })];
  const transformer = new LLMKernelTransformer(SAXPY, {
    llm: openaiModel(server),
    backend: backends,
    tuningStrategy: new EvolutionaryTuningStrategy({ retryPolicy: defaultRetryPolicy(1), maxChildren: 8, ...run.strategy }),
    transportRetryPolicy: FAST_TRANSPORT_RETRY,
    ...run.options,
  });
  return { server, backends, result: await collect(transformer) };
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
    expect(result.of('population.judged').map((j) => [j.child, j.instruction])).toEqual(judges.map((c) => [c, JUDGE_INSTRUCTION]));
    // Every rewrite of v1 alone (mutation, judge-led mutation) is wrong: rejected after the retry, never a variant.
    const ofV1 = children.filter((c) => c.operator !== 'crossover' && c.parents[0] === 'v1').map((c) => c.child);
    const rejected = result.of('population.rejected');
    expect(ofV1.length).toBeGreaterThan(0);
    expect(rejected.map((r) => r.child)).toEqual(ofV1);
    for (const r of rejected) expect(r.reason.kind).toBe('wrong_result');
    expect(variants.filter((v) => ofV1.includes(v.variant.child ?? -1))).toEqual([]);
    // Children decided after a rejection (4 places later: the window) are told what failed.
    const first = rejected[0]!.child;
    const later = children.filter((c) => c.child >= first + 4);
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) {
      const asked = server.requests.filter((r) => requestText(r.body).includes(`variant ${c.parents[0]}`));
      expect(asked.some((r) => requestText(r.body).includes(`child ${first} (`) && requestText(r.body).includes('failed: wrong result'))).toBe(true);
    }
    const stopped = result.of('population.stopped')[0]!;
    expect(stopped.reason).toEqual({ kind: 'children', message: 'the 12 children asked for are made' });
    expect(stopped.variants + stopped.rejected).toBe(1 + 12);
  }, 60_000);

  it('decides the same children and the same population whatever order the answers arrive in', async () => {
    const quick = await evolve({ strategy: { seed: 7 } });
    const rng = seeded(3);
    const shuffled = await evolve({ strategy: { seed: 7 }, delayMs: () => Math.floor(rng() * 40) });
    expect(decisions(shuffled.result.events)).toEqual(decisions(quick.result.events));
    const other = await evolve({ strategy: { seed: 8 } });
    expect(decisions(other.result.events)).not.toEqual(decisions(quick.result.events));
  }, 120_000);
});
