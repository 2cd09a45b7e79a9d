// The explicit strategy in a full session (Ollama client, scripted; fake backend with the real nvcc): dependencies,
// skipEvaluation, a step judged useless, a compile error whose log goes back to the model, a correct step with too
// little gain that still counts as completed, a wrong step. Also the 15 default steps.
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { defaultTuningSteps, ExplicitTuningStrategy, TuningStep } from '../../src/engine/strategies/explicit';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { collect, ollamaModel, requestText, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { expectGraphEvents } from '../support/graph-events';
import type { ScriptedLlmServer } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const steps = [
  new TuningStep({ id: 'block_size', promptTemplate: 'STEP block_size: use block_size_x as the block size of {kernel_name}.', tuneParams: { block_size_x: [128, 256, 512] }, skipEvaluation: true }),
  new TuningStep({ id: 'unroll', promptTemplate: 'STEP unroll: unroll the main loop.', dependsOn: ['block_size'] }),
  new TuningStep({ id: 'tiles', promptTemplate: 'STEP tiles: tile the loop.', dependsOn: ['unroll'] }),
  new TuningStep({ id: 'ilp', promptTemplate: 'STEP ilp: load independent values early.', dependsOn: ['block_size'] }),
  new TuningStep({ id: 'after_ilp', promptTemplate: 'STEP after_ilp: shorten the update.', dependsOn: ['ilp'], skipEvaluation: true }),
];

describe.skipIf(!(await NvccCompiler.available()))('explicit session', () => {
  it('honours dependsOn and skipEvaluation, feeds the compile log back, and ends when no step can run', async () => {
    server = await serve('explicit-session');
    const transformer = new LLMKernelTransformer(SAXPY, {
      llm: ollamaModel(server),
      backend: new FakeBackend({ model: { timeMs: saxpyTime }, compile: 'nvcc' }),
      tuningStrategy: new ExplicitTuningStrategy(steps, { retryPolicy: defaultRetryPolicy(1) }),
    });
    const run = await collect(transformer);
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });

    const outcome = run.events
      .filter((e) => ['step.started', 'step.skipped', 'step.accepted', 'step.rejected'].includes(e.type))
      .map((e) => `${e.type} ${(e as { stepId: string }).stepId}`);
    expect(outcome).toEqual([
      'step.started block_size',
      'step.accepted block_size',
      'step.started unroll',
      'step.skipped unroll',
      'step.skipped tiles',
      'step.started ilp',
      'step.rejected ilp',
      'step.started after_ilp',
      'step.rejected after_ilp',
    ]);
    expect(run.of('step.skipped').map((e) => e.reason)).toEqual(['does not apply to this kernel: the kernel has no loop', 'depends on unroll, which did not complete']);
    const [ilp, afterIlp] = run.of('step.rejected');
    expect(ilp!.reason).toMatchObject({ kind: 'insufficient_gain', thresholdPct: 1 });
    expect(afterIlp!.reason).toMatchObject({ kind: 'wrong_result' });

    // No evaluation was asked for the steps with skipEvaluation, nor for the step whose dependency failed.
    const asked = server.requests.map((r) => requestText(r.body));
    expect(asked.filter((t) => t.includes('An optimization is proposed')).map((t) => /STEP (\w+)/.exec(t)![1])).toEqual(['unroll', 'ilp']);
    expect(asked.some((t) => t.includes('STEP tiles'))).toBe(false);

    // The compiler's log, from the real nvcc, was in the request that asked for the fix.
    const retry = server.requests.find((r) => r.turn === 10)!;
    const last = (retry.body.messages as { role: string; content: string }[]).at(-1)!;
    expect(last.content).toContain('The kernel did not compile. Compiler output:');
    expect(last.content).toMatch(/error: identifier "undefined_thing" is undefined/);
    expect(run.of('llm.retry').map((e) => e.error)).toEqual(['CompileError', 'FailedTestsError']);

    const finished = run.of('session.finished')[0]!;
    expect(finished.bestParams).toEqual({ block_size_x: 512 });
    expect(finished.tracker.steps.map((s) => s.description)).toEqual(['block_size']);

    // The strategy's graph as it describes itself, and its node runs: every step chosen by next, evaluated unless
    // skipEvaluation, applied unless judged useless.
    const runs = expectGraphEvents(run.events, { name: 'explicit_tuning_strategy', nodes: ['init', 'approve', 'next', 'evaluate', 'apply'] });
    expect(runs).toEqual({ init: 1, approve: 1, next: 5, evaluate: 4, apply: 3 });
  }, 120_000);
});

describe('explicit plan approval', () => {
  it('pauses with the steps, and carries out only the approved ones', async () => {
    server = await serve('explicit-approval');
    const transformer = new LLMKernelTransformer(SAXPY, {
      llm: ollamaModel(server),
      backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
      tuningStrategy: new ExplicitTuningStrategy(steps),
      approvePlan: true,
    });
    const paused = await collect(transformer);
    expect(paused.end).toMatchObject({ status: 'awaiting_approval', steps: steps.map((s) => expect.objectContaining({ id: s.id })) });
    const resumed = await collect(transformer, { approval: { steps: [{ id: 'block_size', title: 'block_size' }] } });
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(resumed.end).toEqual({ status: 'finished' });
    expect(resumed.of('step.skipped').map((e) => e.stepId)).toEqual(['unroll', 'tiles', 'ilp', 'after_ilp']);
    expect(resumed.of('step.accepted').map((e) => e.stepId)).toEqual(['block_size']);
  });
});

describe('default tuning steps', () => {
  it('are the 15 steps of the seed, with their parameters and dependencies', () => {
    const defaults = defaultTuningSteps();
    expect(defaults.map((s) => s.id)).toEqual([
      'block_size_x',
      'block_size_y',
      'process_2elem_x',
      'tunable_nr_elem_x',
      'tile_stride_x',
      'process_2elem_y',
      'tunable_nr_elem_y',
      'tile_stride_y',
      'shared_memory_input',
      'shared_memory_output',
      'memory_prefetching',
      'multi_dimensional_tiling_x',
      'multi_dimensional_tiling_y',
      'loop_unrolling',
      'instruction_parallelism',
    ]);
    const byId = Object.fromEntries(defaults.map((s) => [s.id, s]));
    expect(Object.keys(byId.tunable_nr_elem_x!.tuneParams)).toEqual(['work_per_thread_x']);
    expect(Object.keys(byId.tile_stride_y!.tuneParams)).toEqual(['work_stride_y']);
    expect(Object.keys(byId.shared_memory_input!.tuneParams)).toEqual(['use_shared_mem']);
    expect(Object.keys(byId.shared_memory_output!.tuneParams)).toEqual(['output_shared_mem']);
    expect(Object.keys(byId.multi_dimensional_tiling_y!.tuneParams)).toEqual(['tile_size_y']);
    expect(Object.keys(byId.loop_unrolling!.tuneParams)).toEqual(['loop_unroll_factor']);
    expect(byId.multi_dimensional_tiling_y!.dependsOn).toEqual(['multi_dimensional_tiling_x', 'block_size_y']);
    expect(byId.memory_prefetching!.dependsOn).toEqual(['shared_memory_input']);
    expect(new ExplicitTuningStrategy().tuningSteps).toHaveLength(15);
  });

  it('word the y steps for y, not as copies of the x text', () => {
    const defaults = defaultTuningSteps();
    for (const kind of ['block_size', 'process_2elem', 'tunable_nr_elem', 'tile_stride', 'multi_dimensional_tiling']) {
      const x = defaults.find((s) => s.id === `${kind}_x`)!.render({ kernel_name: 'k', description: '', problem_size: '' });
      const y = defaults.find((s) => s.id === `${kind}_y`)!.render({ kernel_name: 'k', description: '', problem_size: '' });
      expect(y).not.toEqual(x);
      expect(y).toContain('block_size_y');
      expect(y).not.toMatch(/\b\w+_x\b/);
      expect(x).not.toMatch(/\b\w+_y\b/);
    }
  });

  it('rejects unknown placeholders, duplicate ids and dependencies on later or unknown steps', () => {
    expect(() => new TuningStep({ id: 'a', promptTemplate: 'use {kernel}' })).toThrow(/unknown placeholder\(s\) \{kernel\}/);
    const a = new TuningStep({ id: 'a', promptTemplate: 'A' });
    const b = new TuningStep({ id: 'b', promptTemplate: 'B', dependsOn: ['a'] });
    expect(() => new ExplicitTuningStrategy([b, a])).toThrow('step b depends on a, which is not a step before it');
    expect(() => new ExplicitTuningStrategy([a, a])).toThrow('tuning step id a is used twice');
  });
});
