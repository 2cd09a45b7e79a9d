// A full autonomous session over the real OpenAI client (scripted server) and the fake backend compiling with the real
// nvcc: analysis, a generated test, the baseline, a plan of three steps (one rejected for a wrong result, one for too
// little gain, one accepted), and a replan that says done. Asserts the event sequence, what the model was told, and
// the final kernel.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { collect, openaiModel, requestText, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { expectGraphEvents } from '../support/graph-events';
import type { ScriptedLlmServer } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const nvccAvailable = await NvccCompiler.available();

describe.skipIf(!nvccAvailable)('autonomous session', () => {
  it('rejects a wrong step and a too-small gain, accepts the faster one, and finishes when the replan is done', async () => {
    server = await serve('autonomous-session');
    const backend = new FakeBackend({ model: { timeMs: saxpyTime }, compile: 'nvcc' });
    const transformer = new LLMKernelTransformer(SAXPY, {
      llm: openaiModel(server),
      backend,
      tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }),
    });
    const run = await collect(transformer);
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });

    // The sequence of event types, with the per-configuration, usage and retry events left out.
    const coarse = run.types.filter((t) => !['configs.evaluated', 'llm.usage', 'llm.exchange', 'llm.retry', 'candidate', 'graph.described', 'graph.node'].includes(t));
    expect(coarse).toEqual([
      'session.started',
      'analysis.done',
      'tests.ready',
      'baseline',
      'plan',
      'plan',
      'step.started',
      'configs.searched', // the wrong candidate, and the rewrite after the model was told what failed
      'configs.searched',
      'step.rejected',
      'step.started',
      'configs.searched',
      'step.rejected',
      'step.started',
      'configs.searched',
      'step.accepted',
      'replanning',
      'warning', // the kernel file holds no launch of it to rewrite: the final proposal says how to launch it
      'session.finished',
    ]);
    // The strategy's graph as it describes itself; three steps ran a candidate each, then one replan.
    const runs = expectGraphEvents(run.events, {
      name: 'autonomous_tuning_strategy',
      nodes: ['init', 'makePlan', 'validate', 'breakdown', 'mergeBreakdowns', 'approve', 'next', 'runCandidate', 'decide', 'replan'],
    });
    expect(runs).toEqual({ init: 1, makePlan: 1, validate: 1, approve: 1, next: 4, runCandidate: 3, decide: 3, replan: 1 });
    expect(run.of('graph.described')[0]!.graphs.find((g) => g.id === 'tune')!.edges).toEqual(
      expect.arrayContaining([{ source: 'next', target: 'runCandidate', conditional: true }, { source: 'runCandidate', target: 'decide', conditional: false }]),
    );
    expect(run.of('warning')[0]!.message).toMatch(/^no launch of saxpy was found in this file: launch it with block \(512, 1, 1\)/);

    expect(run.of('analysis.done')[0]).toMatchObject({ problemSize: ['n'], outputs: ['y'], flops: '2*n' });
    expect(run.of('analysis.done')[0]!.bytes).toBeUndefined();
    const tests = run.of('tests.ready')[0]!.tests;
    expect(tests).toHaveLength(1);
    expect(tests[0]).toMatchObject({ origin: 'generated', problemSize: ['n'], outputs: ['y'], bytes: 2 * 1048576 * 4 });
    // The work of a launch: the model's flops over the test's n, and the bytes of x read and y read and written.
    expect(tests[0]!.work).toEqual({ flops: 2 * 1048576, bytes: 3 * 1048576 * 4, source: expect.stringContaining(`flops: "2*n" (the model's analysis)`) });
    expect(run.of('baseline')[0]).toMatchObject({ timeMs: 1.048576, params: { block_size_x: 256 } });

    const [wrong, small] = run.of('step.rejected');
    expect(wrong).toMatchObject({ stepId: '1', reason: { kind: 'wrong_result' } });
    expect(wrong!.reason.kind === 'wrong_result' && wrong!.reason.summary).toContain('FAKE_WRONG_RESULT');
    expect(small).toMatchObject({ stepId: '2', reason: { kind: 'insufficient_gain', thresholdPct: 1 } });
    if (small!.reason.kind === 'insufficient_gain') expect(small!.reason.improvementPct).toBeCloseTo(0.5, 6);
    expect(run.of('step.accepted')[0]).toMatchObject({ stepId: '3', oldTimeMs: 1.048576, bestParams: { block_size_x: 512 } });
    expect(run.of('step.accepted')[0]!.improvementPct).toBeCloseTo(40, 6);

    // The wrong result went back to the model as a wrong result, with the tuner's summary, after its own answer.
    const retry = run.of('llm.retry');
    expect(retry).toEqual([expect.objectContaining({ purpose: 'step 1', error: 'FailedTestsError' })]);
    const second = server.requests.find((r) => r.turn === 8)!;
    const messages = second.body.messages as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(messages[3]!.content).toContain('its results are wrong');
    expect(messages[3]!.content).toContain('wrong result on input set 1');
    expect(messages[3]!.content).not.toContain('did not compile');

    // Step 1 introduced a parameter with grid divisors: the configurations ran with the grid divided accordingly.
    const step1 = run.of('configs.evaluated').filter((e) => e.stepId === '1');
    expect(step1.map((e) => e.result.status)).toEqual(['wrong_result', 'wrong_result', 'wrong_result', 'wrong_result']);
    expect(step1[0]).toMatchObject({ done: 1, total: 2 });
    // Step 3 tried three block sizes, under the restriction the model gave.
    const step3 = run.of('configs.evaluated').filter((e) => e.stepId === '3');
    expect(step3.map((e) => e.result.config.block_size_x)).toEqual([256, 128, 512]);
    expect(step3.at(-1)).toMatchObject({ done: 3, total: 3, failures: 0, bestTimeMs: expect.closeTo(0.6291456, 9) });
    // Each step searched with auto: its time budget (timePerTest per configuration) covers the space, so brute force.
    const searched = run.of('configs.searched').find((e) => e.stepId === '3')!;
    expect(searched.search).toMatchObject({ strategy: 'brute_force', stopReason: 'completed', evaluations: 3 });
    expect(searched.search.reason).toMatch(/^the first 3 took [\d.]+ s each, so \d+ s allow about \d+: that covers all 3 configurations, so brute force evaluates every one$/);

    // Usage of every call was reported, with the model's name.
    expect(run.of('llm.usage').length).toBe(server.requests.length);
    expect(run.of('llm.usage')[0]).toMatchObject({ model: 'scripted-model', purpose: 'describe kernel' });

    const finished = run.of('session.finished')[0]!;
    expect(finished.bestParams).toEqual({ block_size_x: 512 });
    expect(finished.tuneParams).toEqual({ block_size_x: [256, 128, 512] });
    expect(finished.restrictions).toEqual(['block_size_x >= 128']);
    expect(finished.tunableCode).not.toContain('#define block_size_x');
    expect(finished.finalCode).toContain('#ifndef block_size_x\n#define block_size_x 512\n#endif');
    expect(finished.launch).toEqual({ block: [512, 1, 1], grid: ['(n + 511) / 512', '1', '1'], problemSize: ['n'] });
    expect(finished.tracker).toMatchObject({ baselineTimeMs: 1.048576, steps: [{ description: 'Tune the block size' }] });
    expect(finished.tracker.speedup).toBeCloseTo(1 / 0.6, 6);

    // The final kernel compiles as it is.
    await expect(new NvccCompiler({ defaultArch: 'sm_90' }).compile({ source: finished.finalCode, nameExpressions: ['saxpy'] })).resolves.toBeDefined();
    expect(backend.disposed).toBe(false);
    expect(requestText(server.requests[0]!.body)).toContain(SAXPY.trim());
  }, 120_000);

  it('runs the GPU test\'s matmul script (kernels compiled by nvcc, results and times from the fake backend)', async () => {
    server = await serve('gpu-matmul-session');
    const source = readFileSync(join(__dirname, '..', 'fixtures', 'kernels', 'matmul_naive.cu'), 'utf8');
    const backend = new FakeBackend({
      compile: 'nvcc',
      model: {
        correct: (v) => (v.source.includes('K / block_size_x;') ? 'the last partial tile of K is missing' : true),
        timeMs: (v) => (v.source.includes('__shared__') ? 0.4 : 1.0),
      },
    });
    const transformer = new LLMKernelTransformer(source, { llm: openaiModel(server), backend, tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(0) }) });
    const run = await collect(transformer);
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.of('step.rejected')).toEqual([expect.objectContaining({ stepId: '1', reason: expect.objectContaining({ kind: 'wrong_result' }) })]);
    expect(run.of('step.accepted')).toEqual([expect.objectContaining({ stepId: '2', oldTimeMs: 1, newTimeMs: 0.4 })]);
    // Square tiles only, as the restriction says: 16x16 and 32x32.
    expect(run.of('configs.evaluated').filter((e) => e.stepId === '2').map((e) => e.result.key)).toEqual(['16,16', '32,32']);
    const finished = run.of('session.finished')[0]!;
    expect(finished.launch).toEqual({ block: [16, 16, 1], grid: ['(N + 15) / 16', '(M + 15) / 16', '1'], problemSize: ['N', 'M'] });
  }, 120_000);
});
