/**
 * State of the explicit strategy: the session state, plus where each of the strategy's steps stands. Only the session
 * state leaves the subgraph.
 */
import { Annotation } from '@langchain/langgraph';
import type { StepStatus } from '../../progress/events';
import { TuningState } from '../../state';

export interface ExplicitStepState {
  id: string;
  status: StepStatus;
  /** Produced a correct kernel (accepted, or correct but too little gain): the seed's "completed". */
  completed: boolean;
}

export const ExplicitState = Annotation.Root({
  ...TuningState.spec,
  steps: Annotation<ExplicitStepState[]>,
  /** The step being carried out. */
  currentStepId: Annotation<string | null>,
});

export type ExplicitStateValue = typeof ExplicitState.State;
export type ExplicitStateUpdate = typeof ExplicitState.Update;
