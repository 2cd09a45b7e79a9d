// The seed's NaiveLLMTester: one test, its inputs designed by the model as a declarative spec (never as code).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph } from '@langchain/langgraph';
import type { GraphOptions } from '../../context';
import { transportRetryPolicy } from '../../llm/transport';
import { BaseTestingStrategy, type TestingGraph } from '../base';
import { generateNode } from './nodes/generate';
import { NaiveTesterState } from './state';

export class NaiveLLMTester extends BaseTestingStrategy {
  createGraph(llm: BaseChatModel, options: GraphOptions = {}): TestingGraph {
    return new StateGraph(NaiveTesterState)
      .addNode('generate', generateNode(this, llm), { retryPolicy: options.transportRetryPolicy ?? transportRetryPolicy })
      .addEdge(START, 'generate')
      .addEdge('generate', END)
      .compile({ name: 'naive_llm_tester' });
  }
}
