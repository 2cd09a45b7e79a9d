// A tuning strategy that stopped early, in words, for logs, the panel, the reports and the history. Pure and free of
// Node imports: the webview bundles it.
import type { EventOf } from './events';

/** "tuning stopped early at "replan": ...; the session ends with the best kernel so far (1 accepted step)". */
export function describeStop(stop: Pick<EventOf<'tuning.stopped'>, 'during' | 'reason' | 'acceptedSteps'>): string {
  const kept =
    stop.acceptedSteps > 0
      ? `the session ends with the best kernel so far (${stop.acceptedSteps} accepted step${stop.acceptedSteps === 1 ? '' : 's'})`
      : 'no step was accepted before it, so the kernel stays as it was';
  return `tuning stopped early at "${stop.during}": ${stop.reason}; ${kept}`;
}
