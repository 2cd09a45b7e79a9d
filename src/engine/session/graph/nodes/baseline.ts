// The baseline: the original kernel's time on the first test at the baseline launch parameters, and its profile there.
// Every candidate is judged against the best time so far, starting from this one; the first step's request tells the
// model this profile.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { engineContext } from '../../../context';
import { emit } from '../../../progress/events';
import { kernelTestOf, measureOriginal, reportProfile } from '../../../candidate/run-tests';
import type { TuningStateValue } from '../../../state';
import { PerformanceTracker } from '../../../candidate/tracker';

export async function baselineNode(state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> {
  const first = state.tests[0]!;
  const measured = await measureOriginal(state, kernelTestOf(first, engineContext(config)), config, { profile: true });
  emit(config, { type: 'baseline', timeMs: measured.timeMs, params: state.baselineParams, testId: first.id });
  const profile = reportProfile(measured, config);
  return { bestTimeMs: measured.timeMs, bestParams: state.baselineParams, tracker: new PerformanceTracker(measured.timeMs).toJSON(), profile: profile ?? null };
}
