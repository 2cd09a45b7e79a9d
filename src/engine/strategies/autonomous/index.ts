// The seed's AutonomousTuningStrategy (plan and solve), wired:
//   init → makePlan → validate ⇄ (breakdown × N via Send → mergeBreakdowns) → approve → next
//   next → (runCandidate × candidatesPerStep via Send → decide → next) | replan | END
//   replan → validate | END
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, Send, START, StateGraph } from '@langchain/langgraph';
import type { GraphOptions } from '../../context';
import { transportRetryPolicy } from '../../llm/transport';
import { DEFAULT_AUTONOMOUS } from '../../session/session-settings';
import type { TuningStateValue } from '../../state';
import { TuningState } from '../../state';
import { BaseTuningStrategy, positiveInteger, type TuningGraph, type TuningStrategyOptions } from '../base';
import { approveNode } from './nodes/approve';
import { breakdownNode, BreakdownInputState, mergeBreakdownsNode, type BreakdownInput } from './nodes/breakdown';
import { candidateNode, CandidateInputState, decideNode, nextStepNode, type CandidateInput } from './nodes/execute';
import { planNode } from './nodes/plan';
import { replanNode } from './nodes/replan';
import { validateNode } from './nodes/validate';
import { AutonomousState, type AutonomousStateUpdate, type AutonomousStateValue } from './state';
import { fileStateOf } from '../../candidate/kernel-view';

export interface AutonomousTuningStrategyOptions extends TuningStrategyOptions {
  /** Ask whether each step should be broken into smaller ones (recursively, up to maxBreakdowns levels). Default false. */
  breakdownSteps?: boolean;
  /** When the plan is done, ask for more steps (up to maxReplanning times). Default true. */
  withReplanning?: boolean;
  /** Default 1; must be > 0 with breakdownSteps. Steps multiply with every level: keep it at 1 or 2. */
  maxBreakdowns?: number;
  /** Default 3; must be > 0 with withReplanning. */
  maxReplanning?: number;
  /** Candidates asked for each step, side by side; the fastest correct one competes. Default 1. */
  candidatesPerStep?: number;
}

export class AutonomousTuningStrategy extends BaseTuningStrategy {
  readonly breakdownSteps: boolean;
  readonly withReplanning: boolean;
  readonly maxBreakdowns: number;
  readonly maxReplanning: number;
  readonly candidatesPerStep: number;

  constructor(options: AutonomousTuningStrategyOptions = {}) {
    super(options);
    this.breakdownSteps = options.breakdownSteps ?? DEFAULT_AUTONOMOUS.breakdownSteps;
    this.withReplanning = options.withReplanning ?? DEFAULT_AUTONOMOUS.withReplanning;
    this.maxBreakdowns = this.breakdownSteps ? positiveInteger('maxBreakdowns', options.maxBreakdowns ?? DEFAULT_AUTONOMOUS.maxBreakdowns) : 0;
    this.maxReplanning = this.withReplanning ? positiveInteger('maxReplanning', options.maxReplanning ?? DEFAULT_AUTONOMOUS.maxReplanning) : 0;
    this.candidatesPerStep = positiveInteger('candidatesPerStep', options.candidatesPerStep ?? DEFAULT_AUTONOMOUS.candidatesPerStep);
  }

  createGraph(llm: BaseChatModel, options: GraphOptions = {}): TuningGraph {
    const llmNode = { retryPolicy: options.transportRetryPolicy ?? transportRetryPolicy };
    const policy = this.retryPolicy;

    const toBreakDown = (state: AutonomousStateValue) =>
      state.plan.filter((s) => s.status === 'pending' && s.validated && !s.brokenDown && s.depth < this.maxBreakdowns);
    const afterValidate = (state: AutonomousStateValue) => {
      const steps = toBreakDown(state);
      return steps.length > 0 ? steps.map((step) => new Send('breakdown', { step, code: state.code, file: fileStateOf(state) } satisfies BreakdownInput)) : 'approve';
    };
    const afterNext = (state: AutonomousStateValue) => {
      const step = state.plan.find((s) => s.id === state.currentStepId);
      if (step) {
        const session = sessionOf(state);
        return Array.from({ length: this.candidatesPerStep }, (_, candidate) => new Send('runCandidate', { session, step, candidate, candidates: this.candidatesPerStep } satisfies CandidateInput));
      }
      return this.withReplanning && state.replanRounds < this.maxReplanning ? 'replan' : END;
    };
    const afterReplan = (state: AutonomousStateValue) => (state.plan.some((s) => s.status === 'pending' && !s.validated) ? 'validate' : END);

    return new StateGraph({ state: AutonomousState, input: TuningState, output: TuningState })
      .addNode('init', (): AutonomousStateUpdate => ({ plan: [], stepCounter: 0, replanRounds: 0, currentStepId: null, outcomes: { __overwrite__: [] }, breakdowns: { __overwrite__: [] } }))
      .addNode('makePlan', planNode(llm, policy), llmNode)
      .addNode('validate', validateNode(llm, policy), llmNode)
      .addNode('breakdown', breakdownNode(llm, policy), { ...llmNode, input: BreakdownInputState })
      .addNode('mergeBreakdowns', mergeBreakdownsNode())
      .addNode('approve', approveNode())
      .addNode('next', nextStepNode(this))
      .addNode('runCandidate', candidateNode(this, llm), { ...llmNode, input: CandidateInputState })
      .addNode('decide', decideNode(this))
      .addNode('replan', replanNode(llm, policy, this.maxReplanning), llmNode)
      .addEdge(START, 'init')
      .addEdge('init', 'makePlan')
      .addEdge('makePlan', 'validate')
      .addConditionalEdges('validate', afterValidate, ['breakdown', 'approve'])
      .addEdge('breakdown', 'mergeBreakdowns')
      .addEdge('mergeBreakdowns', 'validate')
      .addEdge('approve', 'next')
      .addConditionalEdges('next', afterNext, ['runCandidate', 'replan', END])
      .addEdge('runCandidate', 'decide')
      .addEdge('decide', 'next')
      .addConditionalEdges('replan', afterReplan, ['validate', END])
      .compile({ name: 'autonomous_tuning_strategy' });
  }
}

/** The session state alone, for a Send task (the strategy's own channels stay out of it). */
function sessionOf(state: TuningStateValue): TuningStateValue {
  return Object.fromEntries(Object.keys(TuningState.spec).map((k) => [k, state[k as keyof TuningStateValue]])) as TuningStateValue;
}
