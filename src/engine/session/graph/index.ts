// The session graph (the seed's top-level workflow):
//   analyze → tests_0 … tests_n (one per testing strategy) → testsReady → baseline → tune (the strategy) → finish
// Subgraphs run inside their node with the node's config, so they share the run context, the event stream and the
// checkpointer (an interrupt inside the strategy pauses the session; resuming continues the subgraph where it stopped).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { CompiledStateGraph, END, START, StateGraph, type BaseCheckpointSaver, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { createAnalysisGraph } from '../../analysis';
import type { GraphOptions } from '../../context';
import { describeSessionGraphs } from '../../progress/graph-view';
import type { Attempt } from '../../candidate/feedback';
import type { RetryPolicy } from '../../llm/retry';
import { TuningState, type TuningStateValue } from '../../state';
import type { TuningGraph } from '../../strategies/base';
import type { TestingGraph } from '../../testing/base';
import { baselineNode } from './nodes/baseline';
import { finishNode } from './nodes/finish';
import { testsReadyNode } from './nodes/tests-ready';

export interface SessionGraphParts {
  llm: BaseChatModel;
  analysisRetryPolicy: RetryPolicy<Attempt>;
  testingStrategies: readonly { createGraph(llm: BaseChatModel, options?: GraphOptions): TestingGraph }[];
  tuningStrategy: { createGraph(llm: BaseChatModel, options?: GraphOptions): TuningGraph };
  graphOptions: GraphOptions;
  checkpointer: BaseCheckpointSaver;
}

const SESSION_KEYS = Object.keys(TuningState.spec);

/** A subgraph as a node: its result, reduced to the session's channels (a strategy's own channels stay inside). */
function subgraphNode(graph: { invoke(state: TuningStateValue, config?: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> }) {
  return async (state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> => {
    const result = await graph.invoke(state, config);
    return Object.fromEntries(Object.entries(result).filter(([key]) => SESSION_KEYS.includes(key)));
  };
}

/**
 * The compiled session graph; `describe()` is its own description and that of every subgraph its nodes run (for
 * the `graph.described` event).
 */
export function createSessionGraph(parts: SessionGraphParts) {
  const { llm, graphOptions } = parts;
  const testNodes = parts.testingStrategies.map((_, i) => `tests_${i}`);
  // The tuning strategy is declared as the node's subgraph, so that its checkpoint history can be read and updated
  // (time travel, branch.ts).
  const hosted: Record<string, TuningGraph | TestingGraph> = {
    analyze: createAnalysisGraph(llm, parts.analysisRetryPolicy, graphOptions),
    tune: parts.tuningStrategy.createGraph(llm, graphOptions),
  };
  parts.testingStrategies.forEach((strategy, i) => (hosted[testNodes[i]!] = strategy.createGraph(llm, graphOptions)));
  const builder = new StateGraph(TuningState)
    .addNode('analyze', subgraphNode(hosted.analyze!))
    .addNode('testsReady', testsReadyNode)
    .addNode('baseline', baselineNode)
    .addNode('tune', subgraphNode(hosted.tune!), { subgraphs: hosted.tune instanceof CompiledStateGraph ? [hosted.tune] : [] })
    .addNode('finish', finishNode);
  testNodes.forEach((node) => builder.addNode(node, subgraphNode(hosted[node]!)));
  // Node names of the testing strategies are only known at run time, so the edges are added by name.
  const chain = ['analyze', ...testNodes, 'testsReady', 'baseline', 'tune', 'finish'] as const;
  const edges = builder as unknown as { addEdge(from: string, to: string): unknown };
  edges.addEdge(START, chain[0]);
  for (let i = 1; i < chain.length; i++) edges.addEdge(chain[i - 1]!, chain[i]!);
  edges.addEdge('finish', END);
  const graph = builder.compile({ checkpointer: parts.checkpointer, name: 'llm_kernel_tuner' });
  return Object.assign(graph, { describe: () => describeSessionGraphs(graph, hosted) });
}
