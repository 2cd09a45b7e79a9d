// The LLM session on the real GPU (node --test after bundling: dist/gpu-tests/llm-session.test.js; no vitest, no
// node_modules there). The scripted model rewrites the naive matrix multiply twice: a tiled kernel that drops the last
// partial tile of K (wrong for K = 1000) and the correct tiled kernel. The real GpuBackend must reject the first for
// its wrong results and accept the second with a measured speed-up. Skipped, with the reason, without a GPU.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { createChatModel } from '../../src/engine/llm/providers';
import type { EventOf, TuningEvent } from '../../src/engine/progress/events';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import script from '../fixtures/llm-scripts/gpu-matmul-session.json';
import { gpuSkipReason } from '../support/gpu-available';
import { startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const skip = gpuSkipReason();
if (skip) console.log(`# GPU LLM session tests skipped: ${skip}`);


/** Every test carries the skip reason, so that the runner counts each one as skipped. */
const test = (name: string, fn: () => void | Promise<void>): void => {
  it(name, { skip }, fn);
};

describe('LLM session on the GPU: naive matmul', () => {
  let server: ScriptedLlmServer;
  let backend: GpuBackend;
  const events: TuningEvent[] = [];
  const of = <T extends TuningEvent['type']>(type: T) => events.filter((e): e is Extract<TuningEvent, { type: T }> => e.type === type);

  before(async () => {
    if (skip) return;
    server = await startScriptedLlmServer((script as { turns: ScriptTurn[] }).turns);
    backend = await GpuBackend.open();
    // The GPU tests run from the repository root (scripts/test.mjs), where the fixtures are.
    const source = readFileSync(join(process.cwd(), 'test', 'fixtures', 'kernels', 'matmul_naive.cu'), 'utf8');
    const transformer = new LLMKernelTransformer(source, {
      llm: createChatModel({ provider: 'openai', model: 'scripted-model', baseUrl: `${server.url}/v1` }),
      backend,
      tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(0) }),
    });
    const stream = transformer.stream();
    for (let next = await stream.next(); !next.done; next = await stream.next()) events.push(next.value);
    // The events of a real GPU session, kept when the run collects files (the README's panel screenshots replay them).
    if (process.env.OUT) writeFileSync(join(process.env.OUT, 'gpu-llm-session.events.json'), `${JSON.stringify(events, null, 1)}\n`);
  });
  after(async () => {
    await server?.close();
    await backend?.dispose();
  });

  test('runs the whole script and finishes', () => {
    assert.deepEqual(server.mismatches, []);
    assert.equal(server.remaining(), 0);
    assert.deepEqual(of('session.failed'), []);
    assert.equal(events.at(-1)?.type, 'session.finished');
  });

  test('rejects the tiled kernel that drops the last partial tile for its wrong results', () => {
    const rejected = of('step.rejected');
    assert.equal(rejected.length, 1);
    assert.equal(rejected[0]!.stepId, '1');
    assert.equal(rejected[0]!.reason.kind, 'wrong_result');
    const step1 = of('configs.evaluated').filter((e) => e.stepId === '1');
    assert.ok(step1.length >= 2, 'both square tile sizes ran');
    assert.ok(step1.every((e) => e.result.status === 'wrong_result'), JSON.stringify(step1.map((e) => e.result)));
  });

  test('accepts the correct tiled kernel with a real speed-up, recorded in the tracker', () => {
    const accepted = of('step.accepted');
    assert.equal(accepted.length, 1);
    assert.equal(accepted[0]!.stepId, '2');
    assert.ok(accepted[0]!.newTimeMs < accepted[0]!.oldTimeMs);
    const finished = events.at(-1) as EventOf<'session.finished'>;
    assert.equal(finished.bestParams.block_size_x, finished.bestParams.block_size_y);
    assert.equal(finished.tracker.steps.length, 1);
    assert.ok(finished.tracker.speedup > 1.01, `speed-up ${finished.tracker.speedup}`);
    console.log(`# baseline ${finished.tracker.baselineTimeMs} ms -> ${finished.tracker.finalTimeMs} ms (${finished.tracker.speedup.toFixed(2)}x) with ${JSON.stringify(finished.bestParams)}`);
  });

  test('hands back a kernel that compiles as it is, with the launch geometry for 1000 x 1000', async () => {
    const finished = events.at(-1) as EventOf<'session.finished'>;
    const tile = Number(finished.bestParams.block_size_x);
    assert.deepEqual(finished.launch.block, [tile, tile, 1]);
    assert.deepEqual(finished.launch.grid, [`(N + ${tile - 1}) / ${tile}`, `(M + ${tile - 1}) / ${tile}`, '1']);
    const built = await backend.load(await backend.compile({ compiler: (await backend.describe()).compilers[0]!, source: finished.finalCode, fileName: 'final.cu', nameExpression: 'matmul_naive', defines: {}, compilerOptions: [] }));
    await built.release();
  });
});
