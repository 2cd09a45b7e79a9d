/**
 * State of the autonomous strategy: the session state, plus the plan being carried out. Only the session state leaves
 * the subgraph.
 */
import { Annotation } from '@langchain/langgraph';
import type { PlanStepView, StepStatus } from '../../progress/events';
import { TuningState } from '../../state';
import type { CandidateOutcome } from '../base';

export interface PlanStep {
  /** "1", "2" ... for planned steps; "2.1", "2.2" for the parts of step 2 after a breakdown. */
  id: string;
  title: string;
  details: string;
  /** How many breakdowns led to this step. */
  depth: number;
  status: StepStatus;
  /** Judged to need device code only (steps that need host code, flags or libraries are skipped). */
  validated: boolean;
  /** Breaking it down was considered. */
  brokenDown: boolean;
  /** Approved by the user (or approval is off). */
  approved: boolean;
  /** What happened to it, for replanning: "accepted: 1.2 ms -> 0.8 ms", "rejected: wrong result ...". */
  outcome?: string;
}

export interface BreakdownResult {
  stepId: string;
  /** The parts, or null when the step stays whole. */
  steps: { title: string; details: string }[] | null;
}

/** Appends; `{ __overwrite__: [] }` empties the list for the next round. */
const appended = <T>() => Annotation<T[]>({ reducer: (a, b) => [...a, ...b], default: () => [] });

export const AutonomousState = Annotation.Root({
  ...TuningState.spec,
  plan: Annotation<PlanStep[]>,
  /** Number of top-level steps planned so far (ids of new steps continue from it). */
  stepCounter: Annotation<number>,
  /** Replanning rounds done. */
  replanRounds: Annotation<number>,
  /** The step being carried out. */
  currentStepId: Annotation<string | null>,
  /** Outcomes of the current step's candidates (one per Send task). */
  outcomes: appended<CandidateOutcome>(),
  /** Results of the breakdown tasks of one round. */
  breakdowns: appended<BreakdownResult>(),
});

export type AutonomousStateValue = typeof AutonomousState.State;
export type AutonomousStateUpdate = typeof AutonomousState.Update;


export function viewOf(step: PlanStep): PlanStepView {
  return { id: step.id, title: step.title, details: step.details, depth: step.depth, status: step.status };
}

export function newSteps(steps: readonly { title: string; details: string }[], firstNumber: number): PlanStep[] {
  return steps.map((s, i) => ({
    id: String(firstNumber + i),
    title: s.title.trim(),
    details: s.details.trim(),
    depth: 0,
    status: 'pending',
    validated: false,
    brokenDown: false,
    approved: false,
  }));
}
