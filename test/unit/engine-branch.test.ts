// Time travel: a session starts again from an earlier step of another one, as it was or with the kernel edited by the
// user, in a new process (a new checkpoint saver on the same directory). The branch is a session of its own; the parent
// keeps its checkpoints and its result.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FileCheckpointSaver } from '../../src/engine/store/checkpointer';
import { emit } from '../../src/engine/progress/events';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { TuningState, type TuningStateValue } from '../../src/engine/state';
import { BaseTuningStrategy } from '../../src/engine/strategies/base';
import { ExplicitTuningStrategy, TuningStep } from '../../src/engine/strategies/explicit';
import { stepRequestTail } from '../../src/engine/strategies/prompts';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { collect, openaiModel, requestText, SAXPY, saxpySessionOptions, saxpyTime, scriptedServers } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { withoutGraphEvents } from '../support/graph-events';
import { loadScript, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const servers = scriptedServers();
afterEach(() => servers.closeAll());
const scratch = mkdtempSync(join(tmpdir(), 'lkt-engine-branch-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const server = (script: ScriptTurn[]) => servers.start(script);

const FULL = loadScript('autonomous-session');
const from = (comment: string) => FULL.slice(FULL.findIndex((t) => t.comment?.startsWith(comment)));

/** A transformer as a new process makes it: a new saver on the directory, a new backend, a new strategy. */
function transformer(dir: string, threadId: string, s: ScriptedLlmServer, extra: Partial<LLMKernelTransformerOptions> = {}): LLMKernelTransformer {
  return new LLMKernelTransformer(SAXPY, saxpySessionOptions(openaiModel(s), { checkpointer: new FileCheckpointSaver(dir), threadId, ...extra }));
}

async function checkpointsOf(dir: string, threadId: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const tuple of new FileCheckpointSaver(dir).list({ configurable: { thread_id: threadId } })) ids.push(`${tuple.config.configurable?.checkpoint_ns}/${tuple.checkpoint.id}`);
  return ids.sort();
}

/** The parent session: three steps (rejected, rejected, accepted), finished, in `dir` under thread "parent". */
async function parentSession(dir: string): Promise<void> {
  const run = await collect(transformer(dir, 'parent', await server(FULL)));
  expect(run.end).toEqual({ status: 'finished' });
}

const stepEvents = (events: readonly { type: string; stepId?: string }[]) =>
  events.filter((e) => ['step.started', 'step.accepted', 'step.rejected'].includes(e.type)).map((e) => `${e.type} ${e.stepId}`);

describe('branching from a checkpoint', () => {
  it('starts again from a step as it was, after a restart, and leaves the parent as it was', async () => {
    const dir = join(scratch, 'as-it-was');
    await parentSession(dir);
    const parentCheckpoints = await checkpointsOf(dir, 'parent');
    const parentFinal = (await collect(transformer(dir, 'parent', await server([])))).of('session.finished')[0]!;

    const s = await server(from('step 3'));
    const branch = await collect(transformer(dir, 'branch', s, { branch: { parentThreadId: 'parent', fromStepId: '3' } }));
    expect(s.mismatches).toEqual([]);
    expect(s.remaining()).toBe(0);
    expect(branch.end).toEqual({ status: 'finished' });
    // The graphs are described and the device's limits measured before it branches off.
    expect(branch.events.filter((e) => !e.type.startsWith('graph.') && e.type !== 'device.limits').slice(0, 2)).toEqual([
      expect.objectContaining({ type: 'session.started', threadId: 'branch', resumed: false }),
      expect.objectContaining({ type: 'session.branched', parentThreadId: 'parent', stepId: '3', edited: false }),
    ]);
    // Nothing before the step ran again: no analysis, no tests, no baseline, no plan; only step 3 and the replan.
    expect(branch.types).not.toContain('analysis.done');
    expect(branch.types).not.toContain('baseline');
    expect(branch.types).not.toContain('plan');
    expect(stepEvents(branch.events)).toEqual(['step.started 3', 'step.accepted 3']);
    expect(requestText(s.requests[0]!.body)).toContain('Apply this optimization step to the CUDA kernel: Tune the block size');
    expect(branch.of('step.accepted')[0]).toMatchObject({ oldTimeMs: 1.048576, bestParams: { block_size_x: 512 } });

    // The parent: the same checkpoints, the same result.
    expect(await checkpointsOf(dir, 'parent')).toEqual(parentCheckpoints);
    const parentAgain = await collect(transformer(dir, 'parent', await server([])));
    expect(withoutGraphEvents(parentAgain.types)).toEqual(['session.started', 'session.finished']);
    expect(parentAgain.of('session.finished')[0]!.finalCode).toBe(parentFinal.finalCode);
  });

  it('starts again from a step with the kernel edited by the user: checked, timed, recorded, and what the step sees', async () => {
    const dir = join(scratch, 'edited');
    await parentSession(dir);
    const edited = SAXPY.replace('__global__', '// FAKE_SLIGHTLY_FASTER: edited by the user\n__global__');
    const step2 = FULL.find((t) => t.comment?.startsWith('step 2'))!;
    const s = await server([{ ...step2, match: { contains: ['Fused multiply-add', 'edited by the user'] } }, ...from('step 3')]);
    const branch = await collect(transformer(dir, 'edited', s, { branch: { parentThreadId: 'parent', fromStepId: '2', code: edited } }));
    expect(s.mismatches).toEqual([]);
    expect(s.remaining()).toBe(0);
    expect(branch.end).toEqual({ status: 'finished' });
    expect(branch.of('session.branched')[0]).toMatchObject({ stepId: '2', edited: true });
    expect(stepEvents(branch.events)).toEqual(['step.started edit:2', 'step.accepted edit:2', 'step.started 2', 'step.rejected 2', 'step.started 3', 'step.accepted 3']);
    const candidate = branch.of('candidate')[0]!;
    expect(candidate).toMatchObject({ stepId: 'edit:2', code: edited });
    expect(candidate.diff).toContain('+// FAKE_SLIGHTLY_FASTER: edited by the user');
    expect(branch.of('configs.evaluated').filter((e) => e.stepId === 'edit:2').length).toBeGreaterThan(0);
    // The user's kernel is 0.5 % faster than the one step 2 started from, which the step now has to beat.
    const accepted = branch.of('step.accepted')[0]!;
    expect(accepted.oldTimeMs).toBe(1.048576);
    expect(accepted.newTimeMs).toBeCloseTo(1.048576 * 0.995, 9);
    expect(branch.of('step.rejected')[0]!.reason).toMatchObject({ kind: 'insufficient_gain', oldTimeMs: accepted.newTimeMs });
    expect(requestText(s.requests[0]!.body)).toContain('// FAKE_SLIGHTLY_FASTER: edited by the user');
    const tracker = branch.of('session.finished')[0]!.tracker;
    expect(tracker.steps.map((t) => t.description)).toEqual(['Kernel edited by the user before step 2', 'Tune the block size']);
  });

  it('refuses a kernel that cannot continue the session, before writing anything, and a step that never started', async () => {
    const dir = join(scratch, 'refused');
    await parentSession(dir);
    const s = await server([]);
    const wrong = SAXPY.replace('__global__', '// FAKE_WRONG_RESULT\n__global__');
    const refused = await collect(transformer(dir, 'wrong', s, { branch: { parentThreadId: 'parent', fromStepId: '2', code: wrong } }));
    expect(refused.end.status).toBe('failed');
    expect((refused.end as { error: Error }).error.message).toMatch(/^the edited kernel cannot continue the session: wrong result on input set \d: y/);
    expect(refused.of('session.failed')[0]!.error.name).toBe('EditedKernelError');
    expect(await checkpointsOf(dir, 'wrong')).toEqual([]);

    const renamed = SAXPY.replace('float a, int n', 'float alpha, int n').replace('a * x[i]', 'alpha * x[i]');
    const interfaceChanged = await collect(transformer(dir, 'renamed', s, { branch: { parentThreadId: 'parent', fromStepId: '3', code: renamed } }));
    expect((interfaceChanged.end as { error: Error }).error.message).toMatch(/^the edited kernel cannot continue the session: .*interface/);
    expect(await checkpointsOf(dir, 'renamed')).toEqual([]);

    const never = await collect(transformer(dir, 'never', s, { branch: { parentThreadId: 'parent', fromStepId: '7' } }));
    expect((never.end as { error: Error }).error.message).toBe('step 7 never started in session parent: branch from one of the steps that did (1, 2, 3)');
    const nobody = await collect(transformer(dir, 'nobody', s, { branch: { parentThreadId: 'no-such-session', fromStepId: '1' } }));
    expect((nobody.end as { error: Error }).error.message).toBe('there is no session no-such-session in the checkpoints');
    expect(s.requests).toEqual([]);
  });

  it('says so when the session records no step it could start from (a strategy that does not call startStep)', async () => {
    const dir = join(scratch, 'unrecorded');
    class Unrecorded extends BaseTuningStrategy {
      createGraph(llm: BaseChatModel) {
        const optimize = async (state: TuningStateValue, config: LangGraphRunnableConfig) => {
          const step = { id: 'one-prompt', title: 'Optimize in one go' };
          emit(config, { type: 'step.started', stepId: step.id, title: step.title });
          const prompt = ['Rewrite this CUDA kernel to be as fast as you can make it on a modern GPU.', stepRequestTail({ code: state.code, tuneParams: state.tuneParams, namesParameters: true, candidate: 0, candidates: 1 })].join('\n\n');
          return this.decide(state, step, [await this.tryCandidate(llm, { stepId: step.id, candidate: 0, prompt }, state, config)], config).update;
        };
        return new StateGraph(TuningState).addNode('optimize', optimize).addEdge(START, 'optimize').addEdge('optimize', END).compile();
      }
    }
    const parent = await collect(transformer(dir, 'unrecorded', await server(loadScript('custom-strategy')), { tuningStrategy: new Unrecorded() }));
    expect(parent.end).toEqual({ status: 'finished' });
    const branch = await collect(transformer(dir, 'b', await server([]), { tuningStrategy: new Unrecorded(), branch: { parentThreadId: 'unrecorded', fromStepId: 'one-prompt' } }));
    expect((branch.end as { error: Error }).error.message).toBe(
      'session unrecorded records no step that started: none has yet, or it was stored by a version that did not record them, or its strategy does not (BaseTuningStrategy.startStep records a step)',
    );
  });

  it('branches a branch, and resumes a branch that was interrupted, from its own checkpoints', async () => {
    const dir = join(scratch, 'nested');
    await parentSession(dir);
    const first = await collect(transformer(dir, 'b1', await server(from('step 2')), { branch: { parentThreadId: 'parent', fromStepId: '2' } }));
    expect(first.end).toEqual({ status: 'finished' });

    // A branch of the branch, from its step 3, cancelled while the step's candidate is tuned.
    const controller = new AbortController();
    const cancelled = await collect(
      transformer(dir, 'b2', await server(from('step 3')), { branch: { parentThreadId: 'b1', fromStepId: '3' }, signal: controller.signal, backend: new FakeBackend({ model: { timeMs: saxpyTime }, timeDelayMs: 50 }) }),
      {},
      (event) => event.type === 'candidate' && controller.abort(),
    );
    expect(cancelled.end).toEqual({ status: 'cancelled' });

    // Resumed in a new process: the branch continues from its own checkpoints (its first answer was kept).
    // The candidate task was cut short, so the step asks again; nothing before it does.
    const s = await server(from('step 3'));
    const resumed = await collect(transformer(dir, 'b2', s, { branch: { parentThreadId: 'b1', fromStepId: '3' } }));
    expect(s.mismatches).toEqual([]);
    expect(resumed.end).toEqual({ status: 'finished' });
    expect(resumed.events[0]).toMatchObject({ type: 'session.started', resumed: true, threadId: 'b2' });
    expect(resumed.types).not.toContain('session.branched');
    expect(resumed.of('step.accepted')).toEqual([expect.objectContaining({ stepId: '3', bestParams: { block_size_x: 512 } })]);
  });

  it('branches a session of the explicit strategy from one of its steps', async () => {
    const dir = join(scratch, 'explicit');
    const steps = [
      new TuningStep({ id: 'block_size', promptTemplate: 'STEP block_size: use block_size_x as the block size of {kernel_name}.', tuneParams: { block_size_x: [128, 256, 512] }, skipEvaluation: true }),
      new TuningStep({ id: 'fma', promptTemplate: 'STEP fma: use fused multiply-add.', skipEvaluation: true }),
    ];
    const turn = (comment: string, contains: string): ScriptTurn => ({ ...FULL.find((t) => t.comment?.startsWith(comment))!, match: { contains } });
    const fma = turn('step 2', 'STEP fma');
    const restrictions = turn('restrictions for step 3', 'List the restrictions');
    const script = [...FULL.slice(0, 4), turn('step 3', 'STEP block_size'), restrictions, fma, restrictions];
    const strategy = () => new ExplicitTuningStrategy(steps, { retryPolicy: defaultRetryPolicy(1) });
    const ps = await server(script);
    const parent = await collect(transformer(dir, 'explicit-parent', ps, { tuningStrategy: strategy() }));
    expect(parent.end).toEqual({ status: 'finished' });
    expect(stepEvents(parent.events)).toEqual(['step.started block_size', 'step.accepted block_size', 'step.started fma', 'step.rejected fma']);

    const s = await server([fma, restrictions]);
    const branch = await collect(transformer(dir, 'explicit-branch', s, { tuningStrategy: strategy(), branch: { parentThreadId: 'explicit-parent', fromStepId: 'fma' } }));
    expect(s.remaining()).toBe(0);
    expect(branch.end).toEqual({ status: 'finished' });
    expect(stepEvents(branch.events)).toEqual(['step.started fma', 'step.rejected fma']);
    expect(branch.of('session.finished')[0]!.bestParams).toEqual(parent.of('session.finished')[0]!.bestParams);
  });
});
