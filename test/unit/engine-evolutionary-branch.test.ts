// What the editor's lineage tree starts from a variant: "Branch from here" (a branch of the session from the variant's
// child step, with the variant's code, its values defined, in place) and "Evolve further" on a finished session. On
// the fake GPU (TEST DOUBLE) with the content-answering model stand-in (TEST DOUBLE: test/support/evolution-responder.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { FileCheckpointSaver } from '../../src/engine/store/checkpointer';
import { EvolutionaryTuningStrategy } from '../../src/engine/strategies/evolutionary';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { eventsBeforeStep } from '../../src/engine/session/session-log';
import { reduceAll } from '../../src/engine/session/session-view';
import { variantKernel } from '../../src/extension/variant-kernel';
import { collect, FAST_TRANSPORT_RETRY, openaiModel, SAXPY, scriptedServers } from '../support/engine-harness';
import { evolutionResponder, saxpyEvolutionTime } from '../support/evolution-responder';
import { FakeBackend } from '../support/fake-backend';

const servers = scriptedServers();
const dirs: string[] = [];
afterEach(async () => {
  await servers.closeAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HEADER = { sessionId: 'parent', kernelName: 'saxpy', fileName: 'kernel.cu', startedAt: '2026-11-29T00:00:00.000Z', model: 'evolution-responder (test double)', strategy: 'evolutionary' as const };

async function sessions() {
  const dir = mkdtempSync(join(tmpdir(), 'evolve-branch-'));
  dirs.push(dir);
  const server = await servers.start([], { responder: evolutionResponder() });
  const backend = new FakeBackend({ model: { timeMs: saxpyEvolutionTime } });
  const checkpointer = new FileCheckpointSaver(dir);
  const session = (threadId: string, maxChildren: number, extra: Partial<LLMKernelTransformerOptions> = {}) =>
    new LLMKernelTransformer(SAXPY, {
      llm: openaiModel(server),
      backend,
      tuningStrategy: new EvolutionaryTuningStrategy({ retryPolicy: defaultRetryPolicy(1), maxChildren, chunk: 2, seed: 3 }),
      transportRetryPolicy: FAST_TRANSPORT_RETRY,
      checkpointer,
      threadId,
      ...extra,
    });
  return { session };
}

describe('an evolutionary session, from its lineage tree', () => {
  it('branches from a variant that was not the best: the variant enters the branch\'s population and the branch evolves from it', async () => {
    const { session } = await sessions();
    const parent = await collect(session('parent', 8));
    expect(parent.end).toEqual({ status: 'finished' });
    const view = reduceAll(HEADER, parent.events);
    const kept = view.population!.variants.filter((v) => v.stepId !== undefined && v.id !== view.population!.bestId);
    const chosen = kept.at(-1)!;
    const { code } = await variantKernel(view, chosen.id);

    const branch = await collect(session('branch', 8, { branch: { parentThreadId: 'parent', fromStepId: chosen.stepId!, code } }));
    expect(branch.end).toEqual({ status: 'finished' });
    expect(branch.of('session.branched')[0]).toMatchObject({ stepId: chosen.stepId, edited: true });
    const edit = branch.of('population.variant').find((e) => e.variant.operator === 'edit');
    expect(edit, 'the variant enters the population as the kernel the branch starts from').toBeDefined();
    expect(edit!.variant.code).toBe(code);
    expect(edit!.variant.timeMs).toBeCloseTo(chosen.timeMs, 9);
    // The children decided after it have it among their parents, and every child the branch decided has a new number.
    const children = branch.of('population.child');
    expect(children.length).toBeGreaterThan(0);
    expect(children.some((c) => c.parents.includes(edit!.variant.id))).toBe(true);
    // The branch's log is what it inherited and its own: each variant once, each child decided there made or rejected.
    const log = [...eventsBeforeStep(parent.events, chosen.stepId!), ...branch.events];
    const ids = log.flatMap((e) => (e.type === 'population.variant' ? [e.variant.id] : []));
    expect(new Set(ids).size).toBe(ids.length);
    const population = reduceAll({ ...HEADER, sessionId: 'branch' }, log).population!;
    expect(population.children.filter((c) => !c.variant && !c.rejection)).toEqual([]);
    expect(population.variants.find((v) => v.id === edit!.variant.id)?.operator).toBe('edit');
  }, 120_000);
});
