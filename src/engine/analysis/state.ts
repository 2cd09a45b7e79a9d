/**
 * State of the kernel analysis subgraph: the session state, plus what the model has said so far. The subgraph's output
 * is the session state only: `analysis` and the baseline launch parameters, written once everything is validated.
 */
import { Annotation } from '@langchain/langgraph';
import { TuningState } from '../state';

export const AnalysisState = Annotation.Root({
  ...TuningState.spec,
  /** What the kernel computes, in the model's words. */
  description: Annotation<string>,
  /** The validated problem size expressions, one per grid dimension. */
  problemSize: Annotation<string[]>,
  /** The validated dynamic shared memory expression, for a kernel with `extern __shared__`. */
  launchSharedMemBytes: Annotation<string | null>,
  /** The validated work expressions of one launch (flops, bytes), when the model gave them. */
  launchWork: Annotation<{ flops?: string; bytes?: string } | null>,
});

export type AnalysisStateValue = typeof AnalysisState.State;
