/**
 * What an evolutionary session keeps between its runs (plain data, checkpointed with the session state): the
 * population, the children asked for and not yet entered, what each operator achieved, and what was spent.
 */
import type { CandidateKernel } from '../../candidate/run-tests';
import type { Feedback } from '../../candidate/feedback';
import type { ModelUsage } from '../../resources/model-calls';
import type { BudgetName } from '../../resources/model-calls';
import type { Operator, OperatorStats, RejectedChild, Variant } from './population';
import type { RejectionReason } from '../../progress/events';
import type { ConfigProfile } from '../../../tuner/run/profile';
import type { Config } from '../../../tuner/types';

/** A child as decided, from the population as it was then: its operator and parents (recorded: a replay follows it). */
export interface ChildPlan {
  child: number;
  operator: Operator;
  parents: string[];
  /**
   * How many variants and rejected children there were when it was decided: its requests show those results only, so
   * that they do not depend on which other children happened to finish while it was written.
   */
  known: { variants: number; rejected: number };
  /**
   * Its place among the children with the same operator and parents in production when it was decided (absent for the
   * first): its request asks for the idea the model ranks that, so that children written side by side differ.
   */
  rank?: number;
}

/** A child's outcome, kept when it finished while an earlier child still waits to enter. */
export type ChildOutcome =
  | { kind: 'entered'; kernel: CandidateKernel; idea: string; timeMs: number; objectiveValue: number; bestParams: Config; profile: ConfigProfile | null; attempts?: number }
  | { kind: 'rejected'; reason: RejectionReason };

/**
 * How far a child got before its run ended (a session paused between two runs): the judge's instruction once asked,
 * the corrections of its failed attempts, and the rewrite waiting for the GPU. It goes on from there.
 */
export interface ChildDraft {
  instruction?: string;
  feedback: Feedback[];
  /** Names of the errors of its failed attempts, in order. */
  failures: string[];
  /** A rewrite written and checked, waiting for the GPU. */
  ready?: { answer: string; kernel: CandidateKernel; idea: string };
  /** Finished, waiting for the children before it. */
  outcome?: ChildOutcome;
}

export type StopReason = { kind: 'budget'; budget: BudgetName; message: string } | { kind: 'children'; message: string };

export interface PopulationState {
  /** Seeds every random choice: child k's choices depend on the seed and k only. */
  seed: number;
  variants: Variant[];
  rejected: RejectedChild[];
  /** Children decided and not yet entered (or rejected), by child number. */
  plans: ChildPlan[];
  /** Progress of those children, by child number. */
  drafts: Record<number, ChildDraft>;
  /** Children that have entered or been rejected: 0 .. committed - 1. */
  committed: number;
  operatorStats: OperatorStats;
  /** What the session spent up to the end of its last run; gpuS: GPU-seconds its children's evaluations held the GPUs. */
  spent: { usage: ModelUsage; wallS: number; gpuS: number };
  /** Why it stopped asking for children; null while it goes on. */
  stopped: StopReason | null;
}
