import type { SessionView } from '../engine/session/session-view';

/** A few words on where the session is, for the status bar. */
export function progressMessage(view: SessionView): string {
  if (view.status === 'awaiting_approval') return 'waiting for plan approval';
  const step = view.currentStepId ? view.steps[view.currentStepId] : undefined;
  if (step) {
    const position = view.order.indexOf(step.id) + 1;
    const candidate = step.candidates.at(-1);
    const configs = candidate && candidate.total > 0 ? `, ${candidate.configs.length}/${candidate.total} configurations` : '';
    return `step ${position}/${view.order.length}: ${step.title}${configs}`;
  }
  if (view.order.length > 0 || view.baseline) return 'planning';
  if (view.tests.length > 0) return 'timing the baseline';
  if (view.analysis) return 'generating tests';
  if (view.kernel) return 'analysing the kernel';
  return 'starting';
}
