// The custom strategy of src/engine/README.md, run: a class with createGraph that uses the base class's helpers.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { afterEach, expect, it } from 'vitest';
import { TuningState, type TuningStateValue } from '../../src/engine/state';
import { BaseTuningStrategy } from '../../src/engine/strategies/base';
import { measuredOf } from '../../src/engine/prompts';
import { stepRequestTail } from '../../src/engine/strategies/prompts';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { collect, openaiModel, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { expectGraphEvents } from '../support/graph-events';
import type { ScriptedLlmServer } from '../support/scripted-llm-server';

class OnePromptStrategy extends BaseTuningStrategy {
  createGraph(llm: BaseChatModel) {
    const optimize = async (state: TuningStateValue, config: LangGraphRunnableConfig) => {
      const step = { id: 'one-prompt', title: 'Optimize in one go' };
      const started = this.startStep(state, step, config);
      const prompt = [
        'Rewrite this CUDA kernel to be as fast as you can make it on the GPU described below.',
        stepRequestTail({ code: state.code, tuneParams: state.tuneParams, measured: measuredOf(state, config), namesParameters: true, candidate: 0, candidates: 1 }),
      ].join('\n\n');
      const outcome = await this.tryCandidate(llm, { stepId: step.id, candidate: 0, prompt }, state, config);
      return { ...started, ...this.decide(state, step, [outcome], config).update };
    };
    return new StateGraph(TuningState).addNode('optimize', optimize).addEdge(START, 'optimize').addEdge('optimize', END).compile();
  }
}

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it('runs the README\'s custom strategy', async () => {
  server = await serve('custom-strategy');
  const run = await collect(new LLMKernelTransformer(SAXPY, { llm: openaiModel(server), backend: new FakeBackend({ model: { timeMs: saxpyTime } }), tuningStrategy: new OnePromptStrategy() }));
  expect(server.mismatches).toEqual([]);
  expect(run.end).toEqual({ status: 'finished' });
  expect(run.of('step.accepted')).toEqual([expect.objectContaining({ stepId: 'one-prompt', bestParams: { block_size_x: 512 } })]);
  expect(run.of('session.finished')[0]!.tracker.steps.map((s) => s.description)).toEqual(['Optimize in one go']);
  // Drawn for free: the strategy's compiled graph describes itself (unnamed, it is called after its node), and its one
  // node ran once.
  expect(expectGraphEvents(run.events, { name: 'tune', nodes: ['optimize'] })).toEqual({ optimize: 1 });
  expect(run.of('graph.described')[0]!.graphs.find((g) => g.id === 'tune')!.edges).toEqual([
    { source: '__start__', target: 'optimize', conditional: false },
    { source: 'optimize', target: '__end__', conditional: false },
  ]);
});
