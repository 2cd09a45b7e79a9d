// Controlling a session: cancelling mid-step, resuming from a file checkpoint with a new transformer, plan approval
// through an interrupt and a Command with an edited plan; and the parallel parts of the autonomous strategy (breakdown
// and several candidates per step, both through Send).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FileCheckpointSaver } from '../../src/engine/store/checkpointer';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { collect, openaiModel, requestText, SAXPY, saxpySessionOptions, saxpyTime, scriptedServers } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { loadScript, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const servers = scriptedServers();
afterEach(() => servers.closeAll());
const scratch = mkdtempSync(join(tmpdir(), 'lkt-engine-session-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const server = (script: string | ScriptTurn[], order?: 'first-match') => servers.start(script, order ? { order } : {});

function options(s: ScriptedLlmServer, extra: Partial<LLMKernelTransformerOptions> = {}): LLMKernelTransformerOptions {
  return saxpySessionOptions(openaiModel(s), { tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false }), ...extra });
}

describe('cancellation', () => {
  it('stops promptly mid-step when the signal aborts, with no further model calls', async () => {
    const s = await server('autonomous-session');
    const controller = new AbortController();
    const backend = new FakeBackend({ model: { timeMs: saxpyTime }, timeDelayMs: 150 });
    let requestsAtAbort = -1;
    let abortedAt = 0;
    const run = await collect(new LLMKernelTransformer(SAXPY, options(s, { backend, signal: controller.signal })), {}, (event) => {
      if (event.type === 'candidate' && requestsAtAbort < 0) {
        requestsAtAbort = s.requests.length;
        abortedAt = performance.now();
        controller.abort();
      }
    });
    const stoppedAfterMs = performance.now() - abortedAt;
    expect(run.end).toEqual({ status: 'cancelled' });
    expect(run.types.at(-1)).toBe('session.cancelled');
    expect(run.types).not.toContain('step.rejected');
    expect(s.requests.length).toBe(requestsAtAbort);
    // The configuration being timed finishes (150 ms), the rest is not started. Each tuning run times its reference
    // kernel once first (the launch time limit scales with it): two runs, one configuration each, and the one cut short.
    expect(stoppedAfterMs).toBeLessThan(1000);
    expect(backend.timedSeries().length).toBeLessThanOrEqual(4);
  });
});

describe('resuming from a checkpoint', () => {
  it('continues with a new transformer on the same checkpoint directory and thread, without repeating finished work', async () => {
    const dir = join(scratch, 'resume');
    const full = loadScript('autonomous-session');
    const firstServer = await server(full);
    const controller = new AbortController();
    const first = await collect(
      new LLMKernelTransformer(SAXPY, options(firstServer, { checkpointer: new FileCheckpointSaver(dir), threadId: 'session-1', signal: controller.signal, tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }) })),
      {},
      (event) => {
        if (event.type === 'step.started' && event.stepId === '3') controller.abort();
      },
    );
    expect(first.end).toEqual({ status: 'cancelled' });
    expect(first.of('step.rejected').map((e) => e.stepId)).toEqual(['1', '2']);

    // A new process: a new transformer, the same checkpoint directory and thread id. The script starts at step 3.
    const fromStep3 = full.slice(full.findIndex((t) => t.comment?.startsWith('step 3')));
    const secondServer = await server(fromStep3);
    const resumed = new LLMKernelTransformer(SAXPY, options(secondServer, { checkpointer: new FileCheckpointSaver(dir), threadId: 'session-1', tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(1) }) }));
    const second = await collect(resumed);
    expect(secondServer.mismatches).toEqual([]);
    expect(secondServer.remaining()).toBe(0);
    expect(second.end).toEqual({ status: 'finished' });
    expect(second.events[0]).toMatchObject({ type: 'session.started', resumed: true, threadId: 'session-1' });
    expect(second.types).not.toContain('analysis.done');
    expect(second.types).not.toContain('baseline');
    expect(second.of('step.accepted')).toEqual([expect.objectContaining({ stepId: '3', oldTimeMs: 1.048576, bestParams: { block_size_x: 512 } })]);
    expect(second.of('session.finished')[0]!.tracker).toMatchObject({ baselineTimeMs: 1.048576, steps: [{ description: 'Tune the block size' }] });

    // A finished session, opened again, reports its result without running anything.
    const again = await collect(new LLMKernelTransformer(SAXPY, options(secondServer, { checkpointer: new FileCheckpointSaver(dir), threadId: 'session-1' })));
    expect(again.types).toEqual(['session.started', 'graph.described', 'session.finished']);
    expect(secondServer.requests.length).toBe(fromStep3.length);
  });
});

describe('plan approval', () => {
  it('interrupts after planning and resumes with the edited plan from a Command', async () => {
    const s = await server('plan-approval');
    const transformer = new LLMKernelTransformer(SAXPY, options(s, { approvePlan: true }));
    const paused = await collect(transformer);
    expect(paused.end).toMatchObject({ status: 'awaiting_approval' });
    expect(paused.types.at(-1)).toBe('plan.awaiting_approval');
    const proposed = paused.of('plan.awaiting_approval')[0]!.steps;
    expect(proposed.map((p) => [p.id, p.title])).toEqual([
      ['1', 'Use shared memory'],
      ['2', 'Unroll'],
      ['3', 'Block size'],
    ]);
    expect(s.requests).toHaveLength(6);

    const resumed = await collect(transformer, { approval: { steps: [{ id: '3', title: 'Block size, edited by the user', details: 'block_size_x up to 512' }] } });
    expect(s.mismatches).toEqual([]);
    expect(s.remaining()).toBe(0);
    expect(resumed.end).toEqual({ status: 'finished' });
    expect(resumed.of('step.skipped').map((e) => [e.stepId, e.reason])).toEqual([
      ['1', 'removed when the plan was approved'],
      ['2', 'removed when the plan was approved'],
    ]);
    expect(resumed.of('plan').at(-1)).toMatchObject({ reason: 'approved', steps: [{ id: '3', title: 'Block size, edited by the user', status: 'pending' }] });
    expect(resumed.of('step.started')).toEqual([expect.objectContaining({ stepId: '3', title: 'Block size, edited by the user' })]);
    expect(requestText(s.requests[6]!.body)).toContain('Details: block_size_x up to 512');
    expect(resumed.of('step.accepted')[0]).toMatchObject({ bestParams: { block_size_x: 512 } });

    // Resuming a session that waits for nothing is an error, not a silent restart.
    const nothing = await collect(transformer, { approval: { steps: [] } });
    expect(nothing.of('session.failed')[0]!.error.message).toBe(`session ${transformer.threadId} is not waiting for plan approval`);
  });
});

describe('parallel work through Send', () => {
  it('breaks several steps down side by side and validates the parts', async () => {
    const s = await server('breakdown-session', 'first-match');
    const run = await collect(new LLMKernelTransformer(SAXPY, options(s, { tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false, breakdownSteps: true }) })));
    expect(s.mismatches).toEqual([]);
    expect(s.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    const brokenDown = run.of('plan').find((p) => p.reason === 'broken_down')!;
    expect(brokenDown.steps.map((p) => [p.id, p.title, p.depth])).toEqual([
      ['1.1', 'First half', 1],
      ['1.2', 'Second half', 1],
      ['2', 'Small step', 0],
    ]);
    expect(run.of('step.skipped')).toEqual([expect.objectContaining({ stepId: '1.2', reason: 'needs more than device code: needs a second buffer allocated by the host' })]);
    expect(run.of('step.started').map((e) => e.stepId)).toEqual(['1.1', '2']);
    // The two breakdown requests were in flight together.
    const breakdowns = s.requests.filter((r) => requestText(r.body).includes('Is it too large'));
    expect(breakdowns).toHaveLength(2);
  });

  it('asks for several candidates of a step side by side, tunes them one at a time, and keeps the fastest', async () => {
    const s = await server('candidates-session', 'first-match');
    const backend = new FakeBackend({ model: { timeMs: saxpyTime }, timeDelayMs: 5 });
    const run = await collect(new LLMKernelTransformer(SAXPY, options(s, { backend, tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false, candidatesPerStep: 2 }) })));
    expect(s.mismatches).toEqual([]);
    expect(s.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('candidate').map((c) => c.candidate).sort()).toEqual([0, 1]);
    expect(new Set(run.of('configs.evaluated').map((e) => e.candidate))).toEqual(new Set([0, 1]));
    expect(backend.maxConcurrentTimings).toBe(1);
    expect(run.of('step.accepted')).toEqual([expect.objectContaining({ candidate: 1, bestParams: { block_size_x: 512 } })]);
    expect(run.of('session.finished')[0]!.restrictions).toEqual(['block_size_x >= 256']);
  });
});
