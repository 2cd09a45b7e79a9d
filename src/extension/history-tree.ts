/** The "Tuning History" view: one item per stored session, its steps as children; items are built by history-items.ts. */
import * as vscode from 'vscode';
import type { HistoryStep, HistoryStore, HistorySummary } from '../engine/store/history-store';
import { sessionItem, stepItem, type ItemSpec } from './history-items';

export type HistoryNode = { kind: 'session'; summary: HistorySummary } | { kind: 'step'; sessionId: string; index: number; step: HistoryStep };

function toTreeItem(spec: ItemSpec): vscode.TreeItem {
  const item = new vscode.TreeItem(spec.label, spec.collapsible ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
  item.description = spec.description;
  item.tooltip = new vscode.MarkdownString(spec.tooltip);
  item.iconPath = new vscode.ThemeIcon(spec.icon.id, spec.icon.color ? new vscode.ThemeColor(spec.icon.color) : undefined);
  item.contextValue = spec.contextValue;
  return item;
}

export class HistoryTreeProvider implements vscode.TreeDataProvider<HistoryNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<HistoryNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  /** The sessions of the last listing, and how many branches and replays each has under it. */
  private sessions: HistorySummary[] = [];
  private readonly childCount = new Map<string, number>();

  constructor(
    private readonly store: HistoryStore,
    private readonly log: vscode.LogOutputChannel,
  ) {
    // A live session saves often; one redraw per burst is enough.
    this.subscription = store.onDidChange(() => this.refresh());
  }

  refresh(): void {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.changed.fire(undefined);
    }, 150);
  }

  getTreeItem(node: HistoryNode): vscode.TreeItem {
    if (node.kind === 'step') {
      const item = toTreeItem(stepItem(node.step));
      item.id = `${node.sessionId}/${node.index}`;
      item.command = { command: 'kernelTuner.history.open', title: 'Open report', arguments: [node.sessionId] };
      return item;
    }
    const children = this.childCount.get(node.summary.id) ?? 0;
    const item = toTreeItem(sessionItem(node.summary, undefined, children));
    // The id includes the step and branch counts so that VS Code asks for the children again after one is added.
    item.id = `${node.summary.id}#${node.summary.stepCount}#${children}`;
    item.command = { command: 'kernelTuner.history.open', title: 'Open report', arguments: [node.summary.id] };
    return item;
  }

  /**
   * Sessions at the top, each with its steps and, below them, the sessions that branched from it or replayed it (the
   * fork, as a tree); a branch whose parent is gone stands at the top.
   */
  async getChildren(node?: HistoryNode): Promise<HistoryNode[]> {
    if (!node) {
      const { sessions, problems } = await this.store.list();
      for (const p of problems) this.log.warn(`history: skipped ${p.file}: ${p.message}`);
      this.sessions = sessions;
      const ids = new Set(sessions.map((s) => s.id));
      this.childCount.clear();
      for (const s of sessions) {
        const from = parentOf(s);
        if (from && ids.has(from)) this.childCount.set(from, (this.childCount.get(from) ?? 0) + 1);
      }
      return sessions.filter((s) => !ids.has(parentOf(s) ?? '')).map((summary) => ({ kind: 'session', summary }));
    }
    if (node.kind === 'step') return [];
    const branches: HistoryNode[] = this.sessions.filter((s) => parentOf(s) === node.summary.id).map((summary) => ({ kind: 'session', summary }));
    const entry = await this.store.get(node.summary.id).catch((error: unknown) => {
      this.log.warn(`history: cannot read session ${node.summary.id}: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    });
    return [...(entry?.steps ?? []).map((step, index): HistoryNode => ({ kind: 'step', sessionId: node.summary.id, index, step })), ...branches];
  }

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/** The session a session sits under in the tree: the one it branched from or replayed. */
function parentOf(summary: HistorySummary): string | undefined {
  return summary.parent?.id ?? summary.replayOf;
}

/** The session id a history command was invoked on: a tree node (context menu), an id (click, tests) or the selection. */
export function sessionIdOf(arg: unknown, view: vscode.TreeView<HistoryNode> | undefined): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = (arg as HistoryNode | undefined) ?? view?.selection[0];
  if (!node) return undefined;
  return node.kind === 'session' ? node.summary.id : node.sessionId;
}
