/**
 * What the Tuning History tree shows for a session and its steps, as plain data (no vscode import, unit-tested);
 * history-tree.ts turns it into TreeItems. `contextValue` is a space-separated list of flags that the manifest's
 * view/item/context menus match with regular expressions (`\bhasCode\b`, `\binterrupted\b`, ...).
 */
import type { HistoryStep, HistorySummary } from '../engine/store/history-store';
import { isEditStep } from '../engine/session/session-log';

export interface ItemSpec {
  label: string;
  description: string;
  /** Markdown. */
  tooltip: string;
  /** A codicon id, optionally with a theme colour id for it. */
  icon: { id: string; color?: string };
  contextValue: string;
  collapsible: boolean;
}

const STATUS_ICON: Record<HistorySummary['status'], { id: string; color?: string }> = {
  running: { id: 'sync~spin' },
  completed: { id: 'pass', color: 'testing.iconPassed' },
  failed: { id: 'error', color: 'testing.iconFailed' },
  cancelled: { id: 'circle-slash' },
  interrupted: { id: 'debug-pause', color: 'list.warningForeground' },
};

const STEP_ICON: Record<HistoryStep['status'], { id: string; color?: string }> = {
  pending: { id: 'circle-outline' },
  running: { id: 'sync~spin' },
  accepted: { id: 'check', color: 'testing.iconPassed' },
  kept: { id: 'type-hierarchy-sub' },
  rejected: { id: 'close', color: 'testing.iconFailed' },
  skipped: { id: 'debug-step-over' },
  failed: { id: 'error', color: 'testing.iconFailed' },
};

export function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toPrecision(3)} s`;
  if (ms >= 1) return `${ms.toPrecision(3)} ms`;
  return `${(ms * 1000).toPrecision(3)} µs`;
}

export function formatSpeedup(speedup: number): string {
  return `${speedup >= 10 ? speedup.toFixed(1) : speedup.toFixed(2)}×`;
}

/** "2026-11-22 14:05" in local time: sortable and short. */
export function formatDate(iso: string, timeZone?: string): string {
  const d = new Date(iso);
  const parts = new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hour12: false, ...(timeZone && { timeZone }) }).formatToParts(d);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour') === '24' ? '00' : get('hour')}:${get('minute')}`;
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** Completed sessions have a final kernel and the configurations of the final step; recorded ones can be replayed. */
export function sessionFlags(summary: Pick<HistorySummary, 'status' | 'bestTimeMs' | 'replayable'>): string[] {
  const flags = ['session', summary.status];
  if (summary.status === 'completed') flags.push('hasCode', 'hasConfigurations');
  if (summary.replayable) flags.push('replayable');
  return flags;
}

/** What a session is to the one it sits under in the tree: a branch from one of its steps, or a replay of it. */
function lineage(summary: HistorySummary): string | undefined {
  if (summary.parent) return `branch from step ${summary.parent.stepId}${summary.parent.stepTitle ? ` (${summary.parent.stepTitle})` : ''}`;
  if (summary.replayOf) return 'replay';
  return undefined;
}

/** `childCount`: the branches and replays listed under the session. */
export function sessionItem(summary: HistorySummary, timeZone?: string, childCount = 0): ItemSpec {
  const speed = summary.speedup !== undefined ? formatSpeedup(summary.speedup) : summary.status;
  const of = lineage(summary);
  const description = [...(of ? [of] : []), speed, baseName(summary.filePath), summary.device.name, formatDate(summary.createdAt, timeZone)].join(' · ');
  const lines = [
    `**${summary.kernelName}** in \`${summary.filePath}\``,
    '',
    `- Status: ${summary.status}${summary.error ? ` (${summary.error.split('\n', 1)[0]})` : ''}`,
    `- Device: ${summary.device.name}`,
    `- Started: ${formatDate(summary.createdAt, timeZone)}`,
  ];
  if (summary.baselineTimeMs !== undefined) lines.push(`- Baseline: ${formatMs(summary.baselineTimeMs)}`);
  if (summary.bestTimeMs !== undefined) lines.push(`- Best: ${formatMs(summary.bestTimeMs)}`);
  if (summary.speedup !== undefined) lines.push(`- Speed-up: ${formatSpeedup(summary.speedup)}`);
  lines.push(`- Steps: ${summary.stepCount}`);
  if (summary.parent) lines.push(`- Branch of session ${summary.parent.id}, from step ${summary.parent.stepId}`);
  if (summary.replayOf) lines.push(`- Replay of session ${summary.replayOf} (its recorded model answers)`);
  return {
    label: summary.kernelName,
    description,
    tooltip: lines.join('\n'),
    icon: STATUS_ICON[summary.status],
    contextValue: sessionFlags(summary).join(' '),
    collapsible: summary.stepCount + childCount > 0,
  };
}

/** A step a branch can start from: one of the strategy's steps that started (not the user's edit). */
function isBranchable(step: HistoryStep): boolean {
  return step.stepId !== undefined && !isEditStep(step.stepId) && ['running', 'accepted', 'rejected', 'failed'].includes(step.status);
}

export function stepItem(step: HistoryStep): ItemSpec {
  const parts: string[] = [step.status];
  if (step.timeMs !== undefined) parts.push(formatMs(step.timeMs));
  if (step.improvementPct !== undefined) parts.push(`${step.improvementPct >= 0 ? '−' : '+'}${Math.abs(step.improvementPct).toFixed(1)}% time`);
  const reason = typeof step.reason === 'string' ? step.reason : undefined;
  return {
    label: step.title,
    description: parts.join(' · '),
    tooltip: [`**${step.title}**`, '', `Status: ${step.status}`, ...(reason ? ['', reason] : [])].join('\n'),
    icon: STEP_ICON[step.status],
    contextValue: `step ${step.status}${isBranchable(step) ? ' branchable' : ''}`,
    collapsible: false,
  };
}
