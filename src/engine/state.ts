/**
 * The state of a tuning session, shared by the top graph and every subgraph (analysis, testing strategies, tuning
 * strategies extend it with their own channels). Plain data only, so that checkpoints can be written to files and a
 * session resumed: the kernel as source, tests as declarative specs (or indices of the user's tests), the tracker as JSON.
 *
 * Every channel here keeps the last value written. A subgraph returns its whole state to its parent, which would apply
 * an appending reducer a second time; so lists are replaced whole (`tests: [...state.tests, added]`).
 */
import { Annotation } from '@langchain/langgraph';
import type { TestSpecInput } from '../tuner/spec/input-spec';
import type { ConfigProfile } from '../tuner/run/profile';
import type { LaunchWork } from '../tuner/run/speed-of-light';
import type { Config, ProblemSizeSpec } from '../tuner/types';
import type { TuneParamLists } from './candidate/code';
import type { GridDivisors } from './candidate/finalize';
import type { PerformanceTrackerJSON } from './candidate/tracker';
import type { PopulationState } from './strategies/evolutionary/state';

/** What the model said the kernel does, validated against its signature. */
export interface KernelAnalysis {
  description: string;
  /** One expression per grid dimension (x first), over the kernel's scalar arguments. */
  problemSize: string[];
  /** The pointer arguments the kernel writes: the outputs compared against the original kernel. */
  outputs: string[];
  /** Dynamic shared memory of its launch (a kernel with `extern __shared__`): an expression over the block size and scalars. */
  sharedMemBytes?: string;
  /** Floating-point operations of one launch, as an expression over its scalar arguments (for speed-of-light figures). */
  flops?: string;
  /** Bytes one launch reads from and writes to device memory, as an expression over its scalar arguments. */
  bytes?: string;
}

/** A test of the session: generated from a spec, or one the user gave (by its index in EngineContext.userTests). */
export interface TestRef {
  id: string;
  origin: 'user' | 'generated';
  userIndex?: number;
  spec?: TestSpecInput;
  problemSize: ProblemSizeSpec;
  outputs: string[];
  /** Bytes of all its buffers (generated tests). */
  bytes: number | null;
  /** The original kernel's time on it, when it was measured. */
  timeMs: number | null;
  /** The work of one launch on it (generated tests), for the achieved bandwidth and FLOP/s of every configuration. */
  work?: LaunchWork;
}

export const TuningState = Annotation.Root({
  /** The kernel to tune (its plain name; the source may hold other kernels). */
  kernelName: Annotation<string>,
  /** Shown in diffs and compiler messages. */
  fileName: Annotation<string>,
  /** The file's absolute path when it is on disk: its directory and includePaths are searched for its #includes. */
  filePath: Annotation<string | null>,
  includePaths: Annotation<string[]>,
  /** The source as given: the oracle every candidate is compared against. */
  originalCode: Annotation<string>,
  /** The best kernel so far (tunable: parameters are preprocessor names). */
  code: Annotation<string>,
  analysis: Annotation<KernelAnalysis | null>,
  tests: Annotation<TestRef[]>,
  /** The launch parameters the original kernel runs with, as the oracle and for the baseline. */
  baselineParams: Annotation<Config>,
  /** Tunable parameters of the best kernel. */
  tuneParams: Annotation<TuneParamLists>,
  restrictions: Annotation<string[]>,
  /** Grid divisors of the best kernel (default: the block size of each dimension). */
  gridDivisors: Annotation<GridDivisors>,
  /** Dynamic shared memory of the best kernel's launch (bytes, or an expression over its parameters); null: none. */
  sharedMemBytes: Annotation<number | string | null>,
  /** The best configuration of the best kernel. */
  bestParams: Annotation<Config>,
  /** Its time on the first test; null before the baseline was measured. */
  bestTimeMs: Annotation<number | null>,
  /**
   * The objective's value of the best configuration on the first test (its time, unless the session optimises another
   * objective); null before the baseline, absent in sessions checkpointed before objectives existed (their objective is time).
   */
  bestObjective: Annotation<number | null>,
  tracker: Annotation<PerformanceTrackerJSON>,
  /**
   * The best kernel's profile at its best configuration (Nsight Compute's, or the driver's metrics standing in): what
   * the next step's request tells the model. Null before the baseline; absent in sessions checkpointed before it existed.
   */
  profile: Annotation<ConfigProfile | null>,
  /**
   * Ids of the strategy's steps in the order they started (BaseTuningStrategy.startStep): the points a branch of the
   * session can start from (branch.ts). Absent in sessions checkpointed before it existed.
   */
  startedSteps: Annotation<string[]>,
  /**
   * The population of an evolutionary session (strategies/evolutionary): in the session state, not the strategy's own,
   * so that a finished session can go on evolving it, a branch starts from it, and the history keeps it. Absent for the
   * other strategies.
   */
  population: Annotation<PopulationState | null>,
});

export type TuningStateValue = typeof TuningState.State;
export type TuningStateUpdate = typeof TuningState.Update;
