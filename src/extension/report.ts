/**
 * A session as the history stores it: the event log (the report the panel re-renders), the summary fields of the
 * history entry, and the final step's configurations in the shape HistoryStore exports as a Kernel Tuner cache. Pure.
 */
import type { TuningEvent } from '../engine/progress/events';
import { isReplayable, type HistoryEntry } from '../engine/store/history-store';
import { isStoredSessionReport, SESSION_REPORT_FORMAT, type StoredSessionReport } from '../engine/session/session-log';
import { reportFromSession, type ReportData } from '../report/model';
import type { FailureKind } from '../tuner/types';
import type { SessionHeader, SessionView } from '../engine/session/session-view';

export interface ReportConfiguration {
  config: Record<string, number | string | boolean>;
  timeMs?: number;
  failure?: Exclude<FailureKind, 'stopped_early'>;
  /** The driver's metrics, NVML's readings and the metrics, by Kernel Tuner's names (its cache has them at top level). */
  observed?: Record<string, number | string>;
}

/** The stored report (session-settings.ts) with the extension's header, and what the exports read. */
export interface SessionReport extends StoredSessionReport<SessionHeader> {
  /** Kernel Tuner's problem_size: the first test's sizes, numbers or expressions over the kernel's scalar arguments. */
  problemSize?: (number | string)[];
  /** The configurations of the last accepted step (one search space), for the Kernel Tuner cache export. */
  configurations?: ReportConfiguration[];
}

export function isSessionReport(value: unknown): value is SessionReport {
  return isStoredSessionReport(value);
}

function lastAcceptedConfigurations(view: SessionView): ReportConfiguration[] | undefined {
  for (let i = view.order.length - 1; i >= 0; i--) {
    const step = view.steps[view.order[i]!]!;
    if (!step.accepted) continue;
    const candidate = step.candidates.find((c) => c.candidate === step.accepted!.candidate);
    const configurations = (candidate?.configs ?? []).flatMap((c): ReportConfiguration[] => {
      const observed = { ...c.driver, ...c.energy, ...c.metrics };
      const extra = Object.keys(observed).length > 0 ? { observed } : {};
      if ((c.status === 'ok' || c.status === 'stopped_early') && c.timeMs !== undefined && Number.isFinite(c.timeMs)) return [{ config: c.config, timeMs: c.timeMs, ...extra }];
      if (c.status !== 'ok' && c.status !== 'stopped_early') return [{ config: c.config, failure: c.status, ...extra }];
      return [];
    });
    return configurations.length > 0 ? configurations : undefined;
  }
  return undefined;
}

/** As the first test gives it: our caches, like Kernel Tuner's, name a size by an expression where it is one (`n`). */
function problemSizeOf(view: SessionView): (number | string)[] | undefined {
  const size = view.tests[0]?.problemSize;
  return size && size.length > 0 ? [...size] : undefined;
}

export function buildReport(header: SessionHeader, events: TuningEvent[], view: SessionView): SessionReport {
  const problemSize = problemSizeOf(view);
  const configurations = lastAcceptedConfigurations(view);
  return { format: SESSION_REPORT_FORMAT, header, events, ...(problemSize && { problemSize }), ...(configurations && { configurations }) };
}

/**
 * The HTML report's data of a stored session (undefined when it was stored without its events): its compiler options
 * from its settings, and what reproduces it, a replay of its recorded answers where it holds them.
 */
export function sessionReportData(entry: HistoryEntry): ReportData | undefined {
  if (!isSessionReport(entry.report)) return undefined;
  const { header, events } = entry.report;
  const tunerAlone = header.strategy === 'tuner';
  return reportFromSession({
    header,
    events,
    ...(entry.run && { compilerOptions: entry.run.compilerOptions, iterations: entry.run.iterations }),
    reproduce: {
      command: tunerAlone
        ? `VS Code: open ${header.fileName}, put the cursor in ${header.kernelName} and run "Kernel Tuner: Tune parameters" (${header.model})`
        : `VS Code: open ${header.fileName}, put the cursor in ${header.kernelName} and run "Kernel Tuner: Tune this kernel" (model ${header.model}, ${header.strategy} strategy)`,
      file: header.fileName,
      session: header.sessionId,
      notes: tunerAlone
        ? ['`llm-kernel-tuner tune SPEC` runs the same search from the command line; this report\'s numbers are this session\'s, whose events the JSON export holds.']
        : [
            "A model's answers differ from run to run, so that starts a new session; this report's numbers are this session's, whose events the JSON export holds.",
            ...(isReplayable(entry) ? ['"Replay with the recorded model answers" in the history runs this session\'s graph again with its recorded answers and no model.'] : []),
          ],
    },
  });
}
