// A late failure keeps what was won: a scripted model fails each phase of the strategies in turn (autonomous, explicit,
// a custom strategy), and the session finishes with the best kernel so far and a warning naming what failed; a resumed
// session asks again from there. Failures before the baseline, a strategy's own bugs and a cancel still end as before.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, MemorySaver, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { conversation, defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { askStructured } from '../../src/engine/llm/llm-call';
import { LlmConfigError, LlmServerError, StructuredOutputError } from '../../src/engine/llm/errors';
import { ReplayDivergenceError } from '../../src/engine/llm/replay';
import { RetriesExhaustedError } from '../../src/engine/llm/retry';
import { measuredOf, SYSTEM_PROMPT } from '../../src/engine/prompts';
import { isModelFailure } from '../../src/engine/session/stopped-early';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { TuningState, type TuningStateValue } from '../../src/engine/state';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { BaseTuningStrategy } from '../../src/engine/strategies/base';
import { ExplicitTuningStrategy, TuningStep } from '../../src/engine/strategies/explicit';
import { stepRequestTail } from '../../src/engine/strategies/prompts';
import { InvalidAnswerError, NoCodeError } from '../../src/engine/errors';
import { CompileError } from '../../src/gpu/errors';
import { collect, FAST_TRANSPORT_RETRY, openaiModel, SAXPY, saxpyTime, scriptedServers, type Collected } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { loadScript, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const servers = scriptedServers();
afterEach(() => servers.closeAll());

const PHASES = loadScript('late-phases-session');
const turn = (comment: string) => {
  const index = PHASES.findIndex((t) => t.comment === comment);
  if (index < 0) throw new Error(`late-phases-session has no turn "${comment}"`);
  return index;
};
const answer = (content: string): ScriptTurn => ({ comment: 'a failing answer', respond: { content } });
/** Every attempt of the strategies' retry policy (one retry) answers with `content`. */
const twice = (content: string) => [answer(content), answer(content)];
/** Every attempt of the node's transport retry gets a 500. */
const serverErrors = () => Array.from({ length: FAST_TRANSPORT_RETRY.maxAttempts }, (): ScriptTurn => ({ comment: 'server error', respond: { status: 500, error: 'overloaded' } }));

function autonomous(s: ScriptedLlmServer, extra: Partial<LLMKernelTransformerOptions> = {}): LLMKernelTransformerOptions {
  return {
    llm: openaiModel(s),
    backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
    tuningStrategy: new AutonomousTuningStrategy({ breakdownSteps: true, maxReplanning: 2, retryPolicy: defaultRetryPolicy(1) }),
    transportRetryPolicy: FAST_TRANSPORT_RETRY,
    ...extra,
  };
}

/** The script up to the phase `at`, with `failing` in its place (the session stops there, so nothing follows). */
const failingAt = (at: string, failing: ScriptTurn[]) => [...PHASES.slice(0, turn(at)), ...failing];

function expectKept(run: Collected, s: ScriptedLlmServer, accepted: number) {
  expect(s.mismatches).toEqual([]);
  expect(s.remaining()).toBe(0);
  expect(run.end).toEqual({ status: 'finished' });
  expect(run.types).not.toContain('session.failed');
  const finished = run.of('session.finished')[0]!;
  expect(finished.tracker.steps).toHaveLength(accepted);
  if (accepted > 0) {
    // Step 1's kernel, tuned, with its best block size defined.
    expect(finished.tracker.steps[0]).toMatchObject({ description: 'Tune the block size', bestParams: { block_size_x: 512 } });
    expect(finished.bestParams).toEqual({ block_size_x: 512 });
    expect(finished.tunableCode).toContain('FAKE_BLOCK_AWARE');
    expect(finished.finalCode).toMatch(/#define block_size_x 512/);
  } else {
    expect(finished.tunableCode).toBe(SAXPY);
    expect(finished.tracker.speedup).toBe(1);
  }
  return finished;
}

describe('the autonomous strategy', () => {
  const late = [
    { phase: 'the plan', at: 'plan: one step', failing: twice('I would tile the loop.'), during: 'plan', accepted: 0, error: 'StructuredOutputError: the answer is not usable JSON: the answer contains no JSON object' },
    { phase: 'the first validation', at: 'validate step 1', failing: twice('{"steps": [{"id": "step 1", "deviceOnly": true, "reason": "ok"}]}'), during: 'validate steps', accepted: 0, error: 'InvalidAnswerError: no verdict for step id "1"' },
    { phase: "step 1's breakdown", at: 'keep step 1 whole', failing: twice('{"breakDown": true}'), during: 'break down step 1', accepted: 0, error: 'StructuredOutputError: the answer does not match the expected JSON' },
    { phase: "step 1's rewrite (transport)", at: 'step 1: block size tunable', failing: serverErrors(), during: 'step 1', accepted: 0, error: 'LlmServerError: ' },
    { phase: 'the replan', at: 'replan round 1: one more step', failing: twice("{'done': False, 'steps': []}"), during: 'replan', accepted: 1, error: 'StructuredOutputError: the answer is not usable JSON: the JSON is malformed: names and strings take double quotes' },
    { phase: "the replanned step's validation", at: 'validate step 2', failing: twice('{"steps": [{"id": "1", "deviceOnly": true, "reason": "ok"}]}'), during: 'validate steps', accepted: 1, error: 'InvalidAnswerError: no verdict for step id "2"' },
    { phase: "the replanned step's breakdown", at: 'keep step 2 whole', failing: twice('{"breakDown": true, "steps": [{"title": "", "details": "x"}, {"title": "b", "details": "y"}]}'), during: 'break down step 2', accepted: 1, error: 'InvalidAnswerError: steps[0] has an empty title' },
    { phase: "step 2's rewrite (transport)", at: 'step 2: correct but barely faster', failing: serverErrors(), during: 'step 2', accepted: 1, error: 'LlmServerError: ' },
  ];

  it.each(late)('a model that fails $phase: finished with what was won, the failure named', async ({ at, failing, during, accepted, error }) => {
    const s = await servers.start(failingAt(at, failing));
    const run = await collect(new LLMKernelTransformer(SAXPY, autonomous(s)));
    expectKept(run, s, accepted);
    const stopped = run.of('tuning.stopped');
    expect(stopped).toEqual([expect.objectContaining({ during, acceptedSteps: accepted })]);
    expect(stopped[0]!.reason).toContain(error);
    // The warning comes before the result, and the result is the session's last word.
    expect(run.types.indexOf('tuning.stopped')).toBeLessThan(run.types.indexOf('session.finished'));
    expect(run.types.at(-1)).toBe('session.finished');
  });

  it("a later step's restrictions that stay wrong reject that step, and the session goes on", async () => {
    const s = await servers.start([
      ...PHASES.slice(0, turn('restrictions for step 2')),
      ...twice('{"restrictions": ["tile_x > 2"]}'),
      PHASES[turn('replan round 2: done')]!,
    ]);
    const run = await collect(new LLMKernelTransformer(SAXPY, autonomous(s)));
    expectKept(run, s, 1);
    expect(run.types).not.toContain('tuning.stopped');
    expect(run.of('step.rejected')).toEqual([expect.objectContaining({ stepId: '2', reason: expect.objectContaining({ kind: 'failed', error: 'RestrictionCheckError', attempts: 2 }) })]);
  });

  it('a session stopped early is resumed from where it stopped, with what it had won', async () => {
    const checkpointer = new MemorySaver();
    const first = await servers.start(failingAt('replan round 1: one more step', twice('{"done": "maybe"}')));
    const stopped = await collect(new LLMKernelTransformer(SAXPY, autonomous(first, { checkpointer, threadId: 'late-1' })));
    expectKept(stopped, first, 1);

    // The model answers again: the replan is asked anew and the session goes on to its end.
    const second = await servers.start(PHASES.slice(turn('replan round 1: one more step')));
    const resumed = await collect(new LLMKernelTransformer(SAXPY, autonomous(second, { checkpointer, threadId: 'late-1' })));
    expect(second.mismatches).toEqual([]);
    expect(second.remaining()).toBe(0);
    expect(resumed.end).toEqual({ status: 'finished' });
    expect(resumed.events[0]).toMatchObject({ type: 'session.started', resumed: true });
    expect(resumed.types).not.toContain('baseline');
    expect(resumed.types).not.toContain('tuning.stopped');
    expect(resumed.of('step.rejected').map((e) => e.stepId)).toEqual(['2']);
    expect(resumed.of('session.finished')[0]!.tracker.steps.map((s) => s.description)).toEqual(['Tune the block size']);
  });

  it("makeKernelTunable returns the steps won before the model failed", async () => {
    const s = await servers.start(failingAt('validate step 2', twice('{"steps": []}')));
    const result = await new LLMKernelTransformer(SAXPY, { ...autonomous(s), verbosity: 'none' }).makeKernelTunable();
    expect(result.tracker.steps.map((step) => step.description)).toEqual(['Tune the block size']);
    expect(result.bestParams).toEqual({ block_size_x: 512 });
    expect(result.kernel.code).toContain('FAKE_BLOCK_AWARE');
  });
});

describe('what still fails the session', () => {
  it('a model that fails before the baseline: nothing was won', async () => {
    const s = await servers.start([PHASES[0]!, ...twice('{"problemSize": ')]);
    const run = await collect(new LLMKernelTransformer(SAXPY, autonomous(s, { retryPolicy: defaultRetryPolicy(1) })));
    expect(run.end.status).toBe('failed');
    expect(run.types).not.toContain('session.finished');
    expect(run.of('session.failed')[0]!.error.name).toBe('RetriesExhaustedError');
  });

  it('a cancel during a late phase is a cancel', async () => {
    const controller = new AbortController();
    const s = await servers.start(failingAt('replan round 1: one more step', [{ comment: 'slow replan', respond: { delayMs: 2000, content: '{"done": true, "steps": []}' } }]));
    const run = await collect(new LLMKernelTransformer(SAXPY, autonomous(s, { signal: controller.signal })), {}, (event) => {
      if (event.type === 'replanning') setTimeout(() => controller.abort(), 50);
    });
    expect(run.end).toEqual({ status: 'cancelled' });
    expect(run.types).not.toContain('session.finished');
    expect(run.types).not.toContain('tuning.stopped');
  });

  it('which errors are the model failing, and which are not', () => {
    expect(isModelFailure(new RetriesExhaustedError([new InvalidAnswerError('x', ['x'])]))).toBe(true);
    expect(isModelFailure(new StructuredOutputError('x', '', ['x']))).toBe(true);
    expect(isModelFailure(new NoCodeError('the answer is empty', { empty: true }))).toBe(true);
    expect(isModelFailure(new LlmServerError('500'))).toBe(true);
    expect(isModelFailure(new LlmConfigError('bad url'))).toBe(false);
    expect(isModelFailure(new ReplayDivergenceError('call 3 differs', 3))).toBe(false);
    expect(isModelFailure(new TypeError('undefined is not a function'))).toBe(false);
    expect(isModelFailure(new Error('internal: step 2 is not in the plan'))).toBe(false);
    // Correctable errors outside any retry are the model's too: a candidate that does not compile.
    expect(isModelFailure(new CompileError('compile failed', { code: 'NVRTC_ERROR_COMPILATION', explanation: 'the source has errors', log: 'error: x is undefined' }))).toBe(true);
  });
});

describe('the explicit strategy', () => {
  it("a step's evaluation that stays unusable: finished with the steps before it", async () => {
    const script = loadScript('explicit-session');
    const evaluate = script.findIndex((t) => t.comment?.startsWith('unroll is evaluated'));
    const s = await servers.start([...script.slice(0, evaluate), ...twice('{"apply": "perhaps"}')]);
    const steps = [
      new TuningStep({ id: 'block_size', promptTemplate: 'STEP block_size: use block_size_x as the block size of {kernel_name}.', tuneParams: { block_size_x: [128, 256, 512] }, skipEvaluation: true }),
      new TuningStep({ id: 'unroll', promptTemplate: 'STEP unroll: unroll the main loop.', dependsOn: ['block_size'] }),
    ];
    const run = await collect(new LLMKernelTransformer(SAXPY, { ...autonomous(s), tuningStrategy: new ExplicitTuningStrategy(steps, { retryPolicy: defaultRetryPolicy(1) }) }));
    expect(s.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('tuning.stopped')).toEqual([expect.objectContaining({ during: 'evaluate step unroll', acceptedSteps: 1 })]);
    expect(run.of('session.finished')[0]!).toMatchObject({ bestParams: { block_size_x: 512 }, tracker: { steps: [{ description: 'block_size' }] } });
  });
});

/** A custom strategy of two nodes: the README's one-prompt step, then `after` (a second node that may fail). */
class TwoNodeStrategy extends BaseTuningStrategy {
  constructor(private readonly after: (llm: BaseChatModel, state: TuningStateValue, config: LangGraphRunnableConfig) => Promise<Partial<TuningStateValue>>) {
    super();
  }

  createGraph(llm: BaseChatModel) {
    const optimize = async (state: TuningStateValue, config: LangGraphRunnableConfig) => {
      const step = { id: 'one-prompt', title: 'Optimize in one go' };
      const started = this.startStep(state, step, config);
      const tail = stepRequestTail({ code: state.code, tuneParams: state.tuneParams, measured: measuredOf(state, config), namesParameters: true, candidate: 0, candidates: 1 });
      const prompt = `Rewrite this CUDA kernel to be as fast as you can make it on the GPU described below.\n\n${tail}`;
      const outcome = await this.tryCandidate(llm, { stepId: step.id, candidate: 0, prompt }, state, config);
      return { ...started, ...this.decide(state, step, [outcome], config).update };
    };
    return new StateGraph(TuningState)
      .addNode('optimize', optimize)
      .addNode('after', (state: TuningStateValue, config: LangGraphRunnableConfig) => this.after(llm, state, config))
      .addEdge(START, 'optimize')
      .addEdge('optimize', 'after')
      .addEdge('after', END)
      .compile();
  }
}

describe('a custom strategy', () => {
  const custom = loadScript('custom-strategy');

  it('a node whose model answer is unusable: finished with the step it had accepted', async () => {
    const s = await servers.start([...custom, answer('Sorry, I cannot answer that in JSON.')]);
    const strategy = new TwoNodeStrategy(async (llm, state, config) => {
      const verdict = await askStructured(llm, conversation(SYSTEM_PROMPT, 'Is the kernel done?', []), z.object({ done: z.boolean() }), config, 'ask if done');
      return verdict.done ? {} : { restrictions: state.restrictions };
    });
    const run = await collect(new LLMKernelTransformer(SAXPY, { ...autonomous(s), tuningStrategy: strategy }));
    expect(s.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('tuning.stopped')).toEqual([expect.objectContaining({ during: 'ask if done', acceptedSteps: 1, error: expect.objectContaining({ name: 'StructuredOutputError' }) })]);
    expect(run.of('session.finished')[0]!).toMatchObject({ bestParams: { block_size_x: 512 }, tracker: { steps: [{ description: 'Optimize in one go' }] } });
  });

  it("a node's own bug fails the session: it is not the model's", async () => {
    const s = await servers.start(custom);
    const strategy = new TwoNodeStrategy(async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'steps')");
    });
    const run = await collect(new LLMKernelTransformer(SAXPY, { ...autonomous(s), tuningStrategy: strategy }));
    expect(run.end.status).toBe('failed');
    expect(run.types).not.toContain('session.finished');
    expect(run.of('session.failed')[0]!.error).toEqual({ name: 'TypeError', message: "Cannot read properties of undefined (reading 'steps')" });
  });
});
