// LLMKernelTransformer's own API: makeKernelTunable (the seed's result, logging by verbosity), user tests given with
// addTest instead of generated ones, and the checks done before any model call.
import { afterEach, describe, expect, it } from 'vitest';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { float32, int32 } from '../../src/gpu/dtype';
import { KernelTest } from '../../src/tuner/tunable-kernel';
import { collect, openaiModel, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { loadScript, type ScriptedLlmServer } from '../support/scripted-llm-server';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';

const nvccAvailable = await NvccCompiler.available();
let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('makeKernelTunable', () => {
  it('returns the tuned kernel, the best parameters and the tracker, logging at the chosen verbosity', async () => {
    server = await serve('autonomous-session');
    const lines: [string, string][] = [];
    const transformer = new LLMKernelTransformer(SAXPY, {
      llm: openaiModel(server),
      backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
      tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }),
      verbosity: 'warning',
      log: (line, level) => lines.push([level, line]),
    });
    const { kernel, bestParams, tracker, final } = await transformer.makeKernelTunable();
    expect(kernel.name).toBe('saxpy');
    expect(kernel.code).toContain('FAKE_BLOCK_AWARE');
    expect(kernel.code).not.toContain('#define');
    expect(bestParams).toEqual({ block_size_x: 512 });
    expect(tracker.hasImprovements()).toBe(true);
    expect(tracker.getTotalImprovement().percent).toBeCloseTo(40, 6);
    expect(tracker.generateOverview()).toContain('| 1 | Tune the block size | 1.049 ms | 0.6291 ms | 40.0 % | block_size_x=512 |');
    expect(final.finalCode).toContain('#define block_size_x 512');
    // 'warning' shows the retry, that the accepted candidate was not run under compute-sanitizer (this fake GPU runs no
    // kernel) and that the file has no launch to rewrite, nothing of the info level.
    expect(lines.map(([level]) => level)).toEqual(['warning', 'warning', 'warning']);
    expect(lines[0]![1]).toContain('step 1: attempt 1 failed (FailedTestsError)');
    expect(lines[1]![1]).toMatch(/^step 3 candidate 0 with \{"block_size_x":512\}: not checked with compute-sanitizer: this backend runs no kernel/);
    expect(lines[2]![1]).toContain('no launch of saxpy was found in this file');
  });

  it('times every configuration with the iterations asked for', async () => {
    server = await serve('autonomous-session');
    const backend = new FakeBackend({ model: { timeMs: saxpyTime } });
    const transformer = new LLMKernelTransformer(SAXPY, {
      llm: openaiModel(server),
      backend,
      tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }),
      iterations: 5,
      verbosity: 'none',
    });
    await transformer.makeKernelTunable();
    const series = backend.timedSeries();
    expect(series.length).toBeGreaterThan(1);
    // 5 timed launches in every series (the reference kernel is timed 5 times too).
    expect(new Set(series.map((s) => s.iterations))).toEqual(new Set([5]));
  });

  it('uses the tests given with addTest when no testing strategy is set', async () => {
    server = await serve('user-test-session');
    const backend = new FakeBackend({ model: { timeMs: saxpyTime } });
    const transformer = new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend, testingStrategies: [], tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false }), verbosity: 'none' });
    const n = 1 << 18;
    transformer.addTest(new KernelTest([new Float32Array(n).fill(1), new Float32Array(n).fill(2), float32(3), int32(n)], null, 'n', { inOut: [1] }));
    const run = await collect(transformer);
    expect(server.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('tests.ready')[0]!.tests).toEqual([{ id: 'user-1', origin: 'user', problemSize: ['n'], outputs: ['y'], bytes: null, timeMs: null }]);
    expect(run.of('baseline')[0]).toMatchObject({ timeMs: n * 1e-6, testId: 'user-1' });
    expect(run.of('step.accepted')[0]).toMatchObject({ bestParams: { block_size_x: 512 } });
  });

  it('rejects a session that waits for plan approval, naming the way to resume it', async () => {
    server = await serve('plan-approval');
    const transformer = new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend: new FakeBackend({ model: { timeMs: saxpyTime } }), approvePlan: true, verbosity: 'none' });
    await expect(transformer.makeKernelTunable()).rejects.toThrow(`session ${transformer.threadId} waits for plan approval: drive it with stream() and resume with stream({ approval })`);
  });
});

describe('checks before the session', () => {
  it('refuses a gpuArch that is not the device\'s', async () => {
    server = await serve([]);
    const run = await collect(new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend: new FakeBackend({ model: { timeMs: saxpyTime } }), gpuArch: 'sm_80' }));
    expect(run.of('session.failed')[0]!.error.message).toBe('gpuArch is sm_80, but Fake GPU (test double) is sm_90: kernels are compiled for the device they run on; leave gpuArch out or pick that device');
    expect(server.requests).toEqual([]);
  });

  it('reports a kernel name that is not in the source', async () => {
    server = await serve([]);
    const run = await collect(new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend: new FakeBackend({ model: { timeMs: saxpyTime } }), kernelName: 'axpy' }));
    expect(run.of('session.failed')[0]!.error.message).toBe("no __global__ kernel named 'axpy' in the source; found: saxpy");
  });

  it.skipIf(!nvccAvailable)('fails clearly when the kernel to tune does not compile, without asking the model to fix the test', async () => {
    server = await serve(loadScript('minimal-session').slice(0, 4));
    const broken = SAXPY.replace('+ y[i];', '+ y[i] + undefined_var;');
    const run = await collect(new LLMKernelTransformer(broken, { llm: openaiModel(server), backend: new FakeBackend({ model: { timeMs: saxpyTime }, compile: 'nvcc' }) }));
    expect(server.remaining()).toBe(0);
    const failed = run.of('session.failed')[0]!;
    expect(failed.error.name).toBe('UnusableKernelError');
    expect(failed.error.message).toMatch(/^the kernel to tune does not compile with \{"block_size_x":256\}:\n[\s\S]*identifier "undefined_var" is undefined/);
    expect(run.of('llm.retry')).toEqual([]);
  }, 60_000);

  it('validates its numeric options when constructed', () => {
    const llm = {} as never;
    expect(() => new LLMKernelTransformer(SAXPY, { llm, performanceThreshold: -1 })).toThrow('performanceThreshold must be a number >= 0 (percent), got -1');
    expect(() => new LLMKernelTransformer(SAXPY, { llm, timePerTest: 0 })).toThrow('timePerTest must be a positive number of seconds, got 0');
    expect(() => new AutonomousTuningStrategy({ candidatesPerStep: 0 })).toThrow('candidatesPerStep must be an integer > 0, got 0');
    expect(() => new AutonomousTuningStrategy({ breakdownSteps: true, maxBreakdowns: 0 })).toThrow('maxBreakdowns must be an integer > 0, got 0');
  });
});
