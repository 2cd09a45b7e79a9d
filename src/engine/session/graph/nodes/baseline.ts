// The baseline: the original kernel's time (and the objective's value, where the session optimises another) on the
// first test at the baseline launch parameters. Every candidate is judged against the best so far, starting from this one.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { engineContext } from '../../../context';
import { emit } from '../../../progress/events';
import { kernelTestOf, measureOriginal } from '../../../candidate/run-tests';
import type { TuningStateValue } from '../../../state';
import { PerformanceTracker } from '../../../candidate/tracker';

export async function baselineNode(state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> {
  const first = state.tests[0]!;
  const { timeMs, objectiveValue } = await measureOriginal(state, kernelTestOf(first, engineContext(config)), config);
  emit(config, { type: 'baseline', timeMs, params: state.baselineParams, testId: first.id });
  return { bestTimeMs: timeMs, bestObjective: objectiveValue, bestParams: state.baselineParams, tracker: new PerformanceTracker(timeMs).toJSON() };
}
