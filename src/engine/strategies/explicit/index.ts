// The seed's ExplicitTuningStrategy, wired:
//   init → approve (with approvePlan) → next → evaluate (unless skipEvaluation) → apply → next … → END when no step can run
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph } from '@langchain/langgraph';
import type { GraphOptions } from '../../context';
import { emit } from '../../progress/events';
import { transportRetryPolicy } from '../../llm/transport';
import { TuningState } from '../../state';
import { BaseTuningStrategy, type TuningGraph, type TuningStrategyOptions } from '../base';
import { applyNode } from './nodes/apply';
import { approveNode } from './nodes/approve';
import { evaluateNode } from './nodes/evaluate';
import { nextStepNode } from './nodes/next-step';
import { ExplicitState, type ExplicitStateValue } from './state';
import { defaultTuningSteps, TuningStep, viewOfStep } from './steps';

export class ExplicitTuningStrategy extends BaseTuningStrategy {
  readonly tuningSteps: readonly TuningStep[];

  /** `tuningSteps`: default defaultTuningSteps(). Ids must be unique and dependencies must name earlier steps. */
  constructor(tuningSteps?: readonly TuningStep[], options: TuningStrategyOptions = {}) {
    super(options);
    this.tuningSteps = tuningSteps ?? defaultTuningSteps();
    const seen = new Set<string>();
    for (const step of this.tuningSteps) {
      if (!(step instanceof TuningStep)) throw new TypeError('tuningSteps must be TuningStep instances');
      if (seen.has(step.id)) throw new TypeError(`tuning step id ${step.id} is used twice`);
      const unknown = step.dependsOn.filter((d) => !seen.has(d));
      if (unknown.length > 0) throw new TypeError(`step ${step.id} depends on ${unknown.join(', ')}, which is not a step before it`);
      seen.add(step.id);
    }
  }

  createGraph(llm: BaseChatModel, options: GraphOptions = {}): TuningGraph {
    const llmNode = { retryPolicy: options.transportRetryPolicy ?? transportRetryPolicy };
    const steps = this.tuningSteps;
    const stepChosen = (state: ExplicitStateValue) => (state.currentStepId === null ? END : 'evaluate');
    const stillChosen = (state: ExplicitStateValue) => (state.currentStepId === null ? 'next' : 'apply');
    return new StateGraph({ state: ExplicitState, input: TuningState, output: TuningState })
      .addNode('init', (_state, config) => {
        emit(config, { type: 'plan', reason: 'initial', steps: steps.map(viewOfStep) });
        return { steps: steps.map((s) => ({ id: s.id, status: 'pending' as const, completed: false })), currentStepId: null };
      })
      .addNode('approve', approveNode(steps))
      .addNode('next', nextStepNode(this, steps))
      .addNode('evaluate', evaluateNode(steps, llm, this.retryPolicy), llmNode)
      .addNode('apply', applyNode(this, steps, llm), llmNode)
      .addEdge(START, 'init')
      .addEdge('init', 'approve')
      .addEdge('approve', 'next')
      .addConditionalEdges('next', stepChosen, ['evaluate', END])
      .addConditionalEdges('evaluate', stillChosen, ['apply', 'next'])
      .addEdge('apply', 'next')
      .compile({ name: 'explicit_tuning_strategy' });
  }
}

export { defaultTuningSteps, TuningStep };
