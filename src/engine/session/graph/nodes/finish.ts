// The end of a session: the final kernel (compiles as it is, launch geometry stated) and the summary.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { emit, type TrackerSummary, type TuningEventBody } from '../../../progress/events';
import { finalizeKernel } from '../../../candidate/finalize';
import type { TuningStateValue } from '../../../state';
import { PerformanceTracker } from '../../../candidate/tracker';

/** The tracker as `session.finished` states it. */
export function trackerSummary(tracker: PerformanceTracker): TrackerSummary {
  const total = tracker.getTotalImprovement();
  return {
    baselineTimeMs: total.baselineTimeMs,
    finalTimeMs: total.finalTimeMs ?? total.baselineTimeMs,
    speedup: total.speedup,
    improvementPct: total.percent,
    steps: tracker.steps.map((s) => ({ description: s.description, oldTimeMs: s.oldTimeMs, newTimeMs: s.newTimeMs, improvementPct: s.improvementPct, bestParams: s.bestParams })),
  };
}

/** The session.finished event of a finished session's state, and what the host code must know beyond it. */
export async function finishedEvent(state: TuningStateValue): Promise<{ event: Extract<TuningEventBody, { type: 'session.finished' }>; warnings: string[] }> {
  const final = await finalizeKernel({
    code: state.code,
    kernelName: state.kernelName,
    params: state.bestParams,
    problemSize: state.analysis?.problemSize ?? [],
    gridDivisors: state.gridDivisors,
    sharedMemBytes: state.sharedMemBytes ?? state.analysis?.sharedMemBytes ?? null,
  });
  return {
    event: {
      type: 'session.finished',
      finalCode: final.code,
      tunableCode: state.code,
      bestParams: state.bestParams,
      tuneParams: state.tuneParams,
      restrictions: state.restrictions,
      tracker: trackerSummary(PerformanceTracker.fromJSON(state.tracker)),
      launch: final.launch,
      launchSites: final.launchSites,
    },
    warnings: final.warnings,
  };
}

export async function finishNode(state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> {
  const { event, warnings } = await finishedEvent(state);
  for (const message of warnings) emit(config, { type: 'warning', message });
  emit(config, event);
  return {};
}
