/**
 * State of the naive LLM tester: the session state alone. Its one node reads the analysis and the kernel, and writes
 * `tests` (the list, replaced whole: see state.ts of the session).
 */
import { TuningState } from '../../state';

export const NaiveTesterState = TuningState;
export type NaiveTesterStateValue = typeof NaiveTesterState.State;
