// The baseline: the original kernel's time (and the objective's value, where the session optimises another) and its
// profile, on the first test at the baseline launch parameters. Every candidate is judged against the best so far,
// starting from this one; the first step's request tells the model this profile.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { engineContext } from '../../../context';
import { emit } from '../../../progress/events';
import { kernelTestOf, measureOriginal, reportProfile } from '../../../candidate/run-tests';
import type { TuningStateValue } from '../../../state';
import { PerformanceTracker } from '../../../candidate/tracker';

export async function baselineNode(state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> {
  const first = state.tests[0]!;
  const measured = await measureOriginal(state, kernelTestOf(first, engineContext(config)), config);
  emit(config, { type: 'baseline', timeMs: measured.timeMs, params: state.baselineParams, testId: first.id });
  const profile = reportProfile(measured, config);
  return { bestTimeMs: measured.timeMs, bestObjective: measured.objectiveValue, bestParams: state.baselineParams, tracker: new PerformanceTracker(measured.timeMs).toJSON(), profile: profile ?? null };
}
