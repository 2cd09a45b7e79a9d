// The kernel analysis subgraph: describe → problem size → outputs. Each answer about the interface is validated against
// the parsed signature and asked again, with the exact problem, until it fits (or the retry policy gives up).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph } from '@langchain/langgraph';
import type { GraphOptions } from '../context';
import type { Attempt } from '../candidate/feedback';
import { transportRetryPolicy } from '../llm/transport';
import type { RetryPolicy } from '../llm/retry';
import { TuningState } from '../state';
import { describeNode } from './nodes/describe';
import { outputsNode } from './nodes/outputs';
import { problemSizeNode } from './nodes/problem-size';
import { AnalysisState } from './state';

export function createAnalysisGraph(llm: BaseChatModel, policy: RetryPolicy<Attempt>, options: GraphOptions = {}) {
  const llmNode = { retryPolicy: options.transportRetryPolicy ?? transportRetryPolicy };
  return new StateGraph({ state: AnalysisState, input: TuningState, output: TuningState })
    .addNode('describeKernel', describeNode(llm, policy), llmNode)
    .addNode('askProblemSize', problemSizeNode(llm, policy), llmNode)
    .addNode('askOutputs', outputsNode(llm, policy), llmNode)
    .addEdge(START, 'describeKernel')
    .addEdge('describeKernel', 'askProblemSize')
    .addEdge('askProblemSize', 'askOutputs')
    .addEdge('askOutputs', END)
    .compile({ name: 'analysis' });
}
