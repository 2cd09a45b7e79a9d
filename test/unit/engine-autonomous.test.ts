// A full autonomous session over the real OpenAI client (scripted server) and the fake backend compiling with the real
// nvcc: analysis, a generated test, the baseline, a plan of three steps (one rejected for a wrong result, one for too
// little gain, one accepted), and a replan that says done. Asserts the event sequence, what the model was told (the
// GPU, the kernel's speed of light and its profile: the driver's metrics for the original, Nsight Compute's for the
// block-aware rewrite), and the final kernel.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { collect, H100_LIMITS, ncuProfileOf, openaiModel, requestText, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FAKE_NCU_MISSING, FakeBackend, type FakeBackendOptions } from '../support/fake-backend';
import { expectGraphEvents } from '../support/graph-events';
import type { ScriptedLlmServer } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const nvccAvailable = await NvccCompiler.available();

/** The scripted autonomous session over the fake backend (compiling with the real nvcc), with these options besides. */
async function autonomousSession(options: Partial<LLMKernelTransformerOptions> = {}, device: Partial<FakeBackendOptions> = {}) {
  server = await serve('autonomous-session');
  const backend = new FakeBackend({ model: { timeMs: saxpyTime }, compile: 'nvcc', ...device });
  const transformer = new LLMKernelTransformer(SAXPY, {
    llm: openaiModel(server),
    backend,
    tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }),
    ...options,
  });
  return { backend, server, run: await collect(transformer) };
}

describe.skipIf(!nvccAvailable)('autonomous session', () => {
  it('rejects a wrong step and a too-small gain, accepts the faster one, and finishes when the replan is done', async () => {
    const { backend, server, run } = await autonomousSession(
      {},
      { model: { timeMs: saxpyTime, profile: (v) => (v.source.includes('FAKE_BLOCK_AWARE') ? ncuProfileOf('saxpy') : FAKE_NCU_MISSING) }, limits: H100_LIMITS },
    );
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });

    // The sequence of event types, with the per-configuration, usage and retry events left out.
    const coarse = run.types.filter((t) => !['configs.evaluated', 'llm.usage', 'llm.exchange', 'llm.retry', 'candidate', 'graph.described', 'graph.node'].includes(t));
    expect(coarse).toEqual([
      'session.started',
      'device.limits',
      'analysis.done',
      'tests.ready',
      'baseline',
      'profile', // of the original kernel
      'plan',
      'plan',
      'step.started',
      'configs.searched', // the wrong candidate, and the rewrite after the model was told what failed
      'configs.searched',
      'step.rejected', // no correct configuration: nothing to profile
      'step.started',
      'configs.searched',
      'profile',
      'step.rejected',
      'step.started',
      'configs.searched',
      'profile',
      'sanitized', // it would be accepted: compute-sanitizer's verdict first (this fake GPU runs no kernel, and says so)
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

    // Each tuned kernel's best configuration was profiled once its timings were done: the original's and step 2's by the
    // driver's metrics (no Nsight Compute on this fake GPU), step 3's by Nsight Compute.
    const profiles = run.of('profile');
    expect(profiles.map((p) => [p.stepId, p.profile.source, p.profile.config])).toEqual([
      [undefined, 'driver', { block_size_x: 256 }],
      ['2', 'driver', { block_size_x: 256 }],
      ['3', 'ncu', { block_size_x: 512 }],
    ]);
    expect(profiles[0]!.profile.unavailable).toMatchObject({ reason: 'ncu-not-found' });
    expect(profiles[0]!.profile.summary).toEqual([
      'saxpy: 32 registers per thread, no local memory (no spills)',
      'shared memory per block: 0 B static, 0 B dynamic',
      'theoretical occupancy 100%: 8 blocks of 256 threads (64 warps) per SM, limited by warps and registers',
    ]);
    expect(backend.log.filter((e) => e.kind === 'profile')).toHaveLength(3);
    expect(backend.log.findIndex((e) => e.kind === 'profile')).toBeGreaterThan(backend.log.findIndex((e) => e.kind === 'time'));

    // Every request that plans or rewrites names the GPU as the tuner measured it, the kernel's time against its speed
    // of light, and the profile of the kernel it works on.
    const userText = (turn: number) => (server!.requests.find((r) => r.turn === turn)!.body.messages as { role: string; content: string }[])[1]!.content;
    const [planPrompt, step1Prompt, step2Prompt, step3Prompt, replanPrompt] = [4, 6, 10, 11, 13].map(userText);
    for (const prompt of [planPrompt, step1Prompt, step2Prompt, step3Prompt, replanPrompt]) {
      expect(prompt).toContain('The GPU, as the tuner measured it:\n- Fake GPU (test double): compute capability 9.0 (sm_90), 132 SMs, 50 MiB L2 cache, 80 GiB device memory');
      expect(prompt).toContain('- per SM: 2048 threads, 65536 registers, 228 KiB shared memory; per block: 1024 threads, 65536 registers, 48 KiB shared memory (227 KiB when the kernel opts in)');
      expect(prompt).toContain('- memory bandwidth 3000 GB/s (measured with a copy kernel, bytes read + written); FP32 peak 132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz = 66.9 TFLOP/s');
      expect(prompt).not.toContain('modern');
    }
    // The work of a launch is 12.6 MB (the analysis's flops are far below the FP32 peak's time): memory-bound.
    expect(step1Prompt).toContain('- the current kernel takes 1.05 ms on the first test, 0.4% of its speed of light (4.19 µs, memory-bound: 12.6 MB moved at the measured bandwidth take 4.19 µs; 2.1 MFLOP at the FP32 peak 31.3 ns)');
    const original = 'Profile of the current kernel at its best configuration {"block_size_x":256} (the driver\'s metrics: Nsight Compute is not installed):\n- saxpy: 32 registers per thread';
    for (const prompt of [planPrompt, step1Prompt, step2Prompt, step3Prompt]) expect(prompt).toContain(original);
    // After step 3 was accepted, the replan sees its kernel's profile: Nsight Compute's lines.
    expect(replanPrompt).toContain('- the current kernel takes 629 µs on the first test');
    expect(replanPrompt).toContain('Profile of the current kernel at its best configuration {"block_size_x":512} (Nsight Compute 2025.3.1, one launch):\n- saxpy: memory-bound, DRAM throughput 86% of peak, L1/TEX cache 39%, L2 cache 48%, SM throughput 31% of peak\n- achieved occupancy 92% with 32 registers per thread');

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

  it('follows a higher-is-better objective: steps are judged by the gain in GFLOP/s, the threshold applies to it', async () => {
    const { server, run } = await autonomousSession({
      // The model's analysis gives flops: 2*n, so a launch's GFLOP/s is its flops over its time.
      metrics: { GFLOPS: 'flops / (time / 1e3) / 1e9' },
      objective: 'GFLOPS',
      objectiveHigherIsBetter: true,
    });
    expect(server.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('session.started')[0]!.objective).toEqual({ name: 'GFLOPS', higherIsBetter: true });
    const flops = 2 * 1048576;
    const gflops = (ms: number) => flops / (ms / 1e3) / 1e9;
    // Step 2 is 0.5% faster: 0.5025% more GFLOP/s, under the 1% threshold.
    const small = run.of('step.rejected').find((e) => e.stepId === '2')!;
    expect(small.reason).toMatchObject({ kind: 'insufficient_gain', thresholdPct: 1, objective: { name: 'GFLOPS', higherIsBetter: true, oldValue: expect.closeTo(gflops(1.048576), 9) } });
    if (small.reason.kind === 'insufficient_gain') {
      expect(small.reason.improvementPct).toBeCloseTo((100 * 0.5) / 99.5, 6);
      expect(small.reason.objective!.newValue).toBeGreaterThan(small.reason.objective!.oldValue);
    }
    // Step 3 is 40% faster: 66.7% more GFLOP/s, accepted as the gain in the objective.
    const accepted = run.of('step.accepted')[0]!;
    expect(accepted).toMatchObject({ stepId: '3', oldTimeMs: 1.048576, bestParams: { block_size_x: 512 } });
    expect(accepted.improvementPct).toBeCloseTo(100 / 1.5, 6);
    expect(accepted.objective).toEqual({ name: 'GFLOPS', higherIsBetter: true, oldValue: expect.closeTo(gflops(1.048576), 9), newValue: expect.closeTo(gflops(0.6291456), 9) });
    // Every configuration carried its metrics and driver metrics to the panel.
    const evaluated = run.of('configs.evaluated').filter((e) => e.stepId === '3').map((e) => e.result);
    for (const c of evaluated) {
      expect(c.metrics!['GFLOPS']).toBeCloseTo(gflops(c.timeMs!), 9);
      expect(c.driver).toMatchObject({ num_regs: expect.any(Number), occupancy_source: 'calculator' });
    }
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
