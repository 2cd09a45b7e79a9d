// What real models write (test/fixtures/llm-corpus/): every case through the engine's own code paths, answered right
// or refused with the correction the model must receive; then a whole session over the scripted OpenAI-compatible
// server whose answers come from the corpus, each refusal fixed by the next answer.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { outputsNode } from '../../src/engine/analysis/nodes/outputs';
import { appendCorrection, defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { fileStateOf } from '../../src/engine/candidate/kernel-view';
import { PerformanceTracker } from '../../src/engine/candidate/tracker';
import { EngineContext } from '../../src/engine/context';
import { RetriesExhaustedError } from '../../src/engine/llm/retry';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import type { TuningStateValue } from '../../src/engine/state';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { breakdownNode } from '../../src/engine/strategies/autonomous/nodes/breakdown';
import { planNode } from '../../src/engine/strategies/autonomous/nodes/plan';
import { replanNode } from '../../src/engine/strategies/autonomous/nodes/replan';
import { validateNode } from '../../src/engine/strategies/autonomous/nodes/validate';
import type { AutonomousStateValue, PlanStep } from '../../src/engine/strategies/autonomous/state';
import { TIME_OBJECTIVE } from '../../src/tuner/types';
import { collect, FAST_TRANSPORT_RETRY, openaiModel, saxpyTime, scriptedServers } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { answerOf, CORPUS_KINDS, loadLlmCorpus, REWRITE_SLOT, type CorpusCase, type CorpusRequestKind } from '../support/llm-corpus';
import { loadScript, type ScriptTurn } from '../support/scripted-llm-server';

const { kernel, cases } = loadLlmCorpus();
const servers = scriptedServers();
afterEach(() => servers.closeAll());

/** One attempt: the first failure is what the model would be told about. */
const ONE_ATTEMPT = defaultRetryPolicy(0);

/** The session as every request of the corpus sees it: saxpy analysed and timed, its block size tunable. */
const session: TuningStateValue = {
  kernelName: kernel.name,
  fileName: `${kernel.name}.cu`,
  filePath: null,
  includePaths: [],
  originalCode: kernel.original,
  code: kernel.original,
  analysis: { description: 'y = a * x + y, one element per thread', problemSize: ['n'], outputs: ['y'] },
  tests: [],
  baselineParams: { block_size_x: 256 },
  tuneParams: { block_size_x: [256] },
  restrictions: [],
  gridDivisors: {},
  sharedMemBytes: null,
  bestParams: { block_size_x: 256 },
  bestTimeMs: 1,
  bestObjective: 1,
  tracker: new PerformanceTracker(1).toJSON(),
  profile: null,
  startedSteps: [],
  population: null,
};

const planStep = (id: string, title: string, status: PlanStep['status'] = 'pending', validated = false): PlanStep => ({ id, title, details: '', depth: 0, status, validated, brokenDown: false, approved: false });

function autonomous(plan: PlanStep[]): AutonomousStateValue {
  return { ...session, plan, stepCounter: plan.length, replanRounds: 0, currentStepId: null, outcomes: [], breakdowns: [] };
}

let config: { context: { engine: EngineContext } };
beforeAll(async () => {
  const backend = new FakeBackend({ model: { timeMs: saxpyTime } });
  const settings = { structuredOutputType: 'default' as const, compilerOptions: [], timePerTestS: 15, performanceThreshold: 1, objective: TIME_OBJECTIVE, energy: false, approvePlan: false, iterations: 32, sanitize: false };
  config = { context: { engine: new EngineContext([backend], await backend.describe(), [], settings) } };
});

const strategy = new AutonomousTuningStrategy({ retryPolicy: ONE_ATTEMPT });

/**
 * Each kind's request, made as the strategies make it, and what its answer comes to (test/fixtures/llm-corpus/README.md):
 * a structured one asked of the real client over the scripted server, a rewrite turned into a candidate.
 */
const requests: Record<Exclude<CorpusRequestKind, 'rewrite'>, (llm: BaseChatModel) => Promise<unknown>> = {
  plan: async (llm) => (await planNode(llm, ONE_ATTEMPT)(autonomous([]), config)).plan!.map(({ title, details }) => ({ title, details })),
  validate: async (llm) => {
    const update = await validateNode(llm, ONE_ATTEMPT)(autonomous([planStep('1', 'Several elements per thread'), planStep('2', 'Use cuBLAS')]), config);
    return Object.fromEntries(update.plan!.map((s) => [s.id, s.status !== 'skipped']));
  },
  breakdown: async (llm) => {
    const update = await breakdownNode(llm, ONE_ATTEMPT)({ step: planStep('1', 'Several elements per thread', 'pending', true), code: session.code, file: fileStateOf(session) }, config);
    return (update.breakdowns as { steps: { title: string }[] | null }[])[0]!.steps?.map((s) => s.title) ?? null;
  },
  replan: async (llm) => {
    const past = [{ ...planStep('1', 'Tune the block size', 'accepted', true), outcome: 'accepted: 1 ms -> 0.6 ms' }];
    const update = await replanNode(llm, ONE_ATTEMPT, 3)(autonomous(past), config);
    return { done: update.plan === undefined, steps: (update.plan ?? past).slice(past.length).map((s) => s.title) };
  },
  restrictions: (llm) => strategy.askRestrictions(llm, session.code, { block_size_x: [256, 128, 512] }, [], config),
  outputs: async (llm) => {
    const update = await outputsNode(llm, ONE_ATTEMPT)({ ...session, description: session.analysis!.description, problemSize: ['n'], launchSharedMemBytes: null, launchWork: null }, config);
    return update.analysis!.outputs;
  },
};

/** What a case's answer comes to: the value, or the error the model is told about (the first attempt's). */
async function outcomeOf(c: CorpusCase): Promise<{ value: unknown } | { error: Error }> {
  const answer = answerOf(c, kernel.rewrite);
  try {
    if (c.kind === 'rewrite') {
      const candidate = await strategy.candidateFrom(answer, {}, session);
      return { value: { code: candidate.code, tuneParams: candidate.tuneParams } };
    }
    const server = await servers.start([{ comment: c.id, respond: { content: answer } }]);
    return { value: await requests[c.kind](openaiModel(server)) };
  } catch (error) {
    return { error: error instanceof RetriesExhaustedError ? error.attempts[0]! : (error as Error) };
  }
}

describe('the corpus', () => {
  it('has cases of every kind, each taken and refused at least once', () => {
    for (const kind of CORPUS_KINDS) {
      const outcomes = new Set(cases.filter((c) => c.kind === kind).map((c) => c.expect.outcome === 'retry'));
      expect([kind, [...outcomes].sort()]).toEqual([kind, [false, true]]);
    }
    expect(kernel.rewrite).not.toContain(REWRITE_SLOT);
  });
});

describe.each(cases.map((c) => [c.id, c] as const))('%s', (_, c) => {
  it(c.what, async () => {
    const outcome = await outcomeOf(c);
    const expected = c.expect;
    if (expected.outcome === 'retry') {
      if (!('error' in outcome)) throw new Error(`the answer was taken: ${JSON.stringify(outcome.value)}`);
      expect(outcome.error.name).toBe(expected.error);
      // What the retry policy's handler appends to the conversation: the model is told this, after its own answer.
      const told = appendCorrection({ feedback: [] }, outcome.error) as { feedback: { correction: string }[] };
      for (const fragment of expected.correction) expect(told.feedback[0]!.correction).toContain(fragment);
      return;
    }
    if ('error' in outcome) throw outcome.error;
    if (expected.outcome === 'value') expect(outcome.value).toEqual(expected.value);
    else expect(outcome.value).toEqual({ code: (expected.code ?? `${REWRITE_SLOT}\n`).replaceAll(REWRITE_SLOT, kernel.rewrite), tuneParams: expected.tuneParams });
  });
});

/** The corpus case `id`, answered as a scripted turn (the rewrite marked for the fake GPU: 40 % faster at 512 threads). */
function turn(id: string): ScriptTurn {
  const c = cases.find((x) => x.id === id);
  if (!c) throw new Error(`no corpus case ${id}`);
  return { comment: id, respond: { content: answerOf(c, `// FAKE_BLOCK_AWARE\n${kernel.rewrite}`) } };
}

describe('a whole session answered from the corpus', () => {
  it('takes every usable answer, and fixes every refused one with its correction at the next attempt', async () => {
    const minimal = loadScript('minimal-session');
    const [describeKernel, problemSize, , testSpec] = minimal;
    // Each refused answer is followed by another: the retry policy gives three more attempts.
    const script = [
      describeKernel!,
      problemSize!,
      turn('outputs-const-input'),
      turn('outputs-fenced'),
      testSpec!,
      turn('plan-python-dict'),
      turn('plan-json-in-prose'),
      turn('validate-wrong-ids'),
      turn('validate-verdicts'),
      turn('rewrite-truncated'),
      turn('rewrite-think-cut-off'),
      turn('rewrite-renamed-kernel'),
      turn('rewrite-whole-file-with-main'),
      turn('restrictions-unknown-name'),
      turn('restrictions-with-comments'),
      turn('replan-python-literals'),
      turn('replan-done-in-prose'),
    ];
    const server = await servers.start(script);
    const run = await collect(
      new LLMKernelTransformer(kernel.original, {
        llm: openaiModel(server),
        backend: new FakeBackend({ model: { timeMs: saxpyTime } }),
        tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(3), maxReplanning: 1 }),
        transportRetryPolicy: FAST_TRANSPORT_RETRY,
      }),
    );
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.types).not.toContain('tuning.stopped');

    // Every refused answer was told its correction at the next request, right after the answer itself (an answer that
    // parsed, as the JSON that was read of it).
    const shown = (raw: string) => {
      try {
        return JSON.stringify(JSON.parse(raw));
      } catch {
        return raw;
      }
    };
    const refused = script.map((t, i) => [t, i] as const).filter(([t]) => cases.find((c) => c.id === t.comment)?.expect.outcome === 'retry');
    expect(refused.map(([t]) => t.comment)).toEqual(['outputs-const-input', 'plan-python-dict', 'validate-wrong-ids', 'rewrite-truncated', 'rewrite-think-cut-off', 'rewrite-renamed-kernel', 'restrictions-unknown-name', 'replan-python-literals']);
    for (const [t, i] of refused) {
      const c = cases.find((x) => x.id === t.comment)!;
      const messages = server.requests.find((r) => r.turn === i + 1)!.body.messages as { role: string; content: string }[];
      expect(messages.at(-2)).toEqual({ role: 'assistant', content: shown(t.respond.content!) });
      if (c.expect.outcome !== 'retry') throw new Error('unreachable');
      for (const fragment of c.expect.correction) expect(messages.at(-1)!.content).toContain(fragment);
    }
    expect(run.of('llm.retry').map((e) => `${e.purpose}: ${e.error}`)).toEqual([
      'outputs: InvalidAnalysisError',
      'plan: StructuredOutputError',
      'validate steps: InvalidAnswerError',
      'step 1: TruncatedAnswerError',
      'step 1: TruncatedAnswerError',
      'step 1: SignatureChangedError',
      'restrictions: RestrictionCheckError',
      'replan: StructuredOutputError',
    ]);
    // Step 2 needs cuBLAS and is skipped; step 1 is the kernel of the whole program the model wrote, without its main().
    expect(run.of('step.skipped').map((e) => e.stepId)).toEqual(['2']);
    expect(run.of('step.accepted')).toEqual([expect.objectContaining({ stepId: '1', bestParams: { block_size_x: 512 } })]);
    const finished = run.of('session.finished')[0]!;
    expect(finished.restrictions).toEqual(['block_size_x >= 128']);
    expect(finished.tunableCode).toContain(kernel.rewrite);
    expect(finished.tunableCode).not.toContain('int main');
  });
});
