/**
 * The tuning panel's host: one webview panel per session (opening it again reveals it), restored after a window
 * reload by a WebviewPanelSerializer. A new panel opens where the code stays readable: in a group below the code by
 * default (kernelTuner.panelLocation), or in the group where the user keeps the other panels. Strict CSP with a fresh crypto nonce per page; the script and styles come from
 * dist/ and media/ through asWebviewUri; nothing remote. Messages both ways follow protocol.ts; the panel's content is
 * the session's event log (SessionManager.snapshot) plus the events appended since.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { parseFromWebview, ProtocolError, type FromWebviewMessage, type RelatedSeries, type ToWebviewMessage } from './protocol';
import { SECTION } from './config';
import type { SessionManager } from './sessions';

export const PANEL_VIEW_TYPE = 'kernelTuner.session';

/** What the webview keeps with setState; the serializer gets it back after a reload. */
interface PersistedState {
  sessionId?: string;
}

export type PanelMessageHandler = (message: FromWebviewMessage) => Promise<void>;

interface PanelEntry {
  panel: vscode.WebviewPanel;
  /** Events the webview reported as drawn (its `rendered` acknowledgement). */
  renderedEvents: number;
  /** The related series last sent (JSON), so that an unchanged history sends nothing. */
  related?: string;
}

export class PanelManager implements vscode.WebviewPanelSerializer<PersistedState>, vscode.Disposable {
  private readonly panels = new Map<string, PanelEntry>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly sessions: SessionManager,
    private readonly handle: PanelMessageHandler,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPE, this),
      sessions.onDidAppend(({ sessionId, from, events }) => this.post(sessionId, { type: 'events', sessionId, from, events })),
      sessions.onDidChangeLive(({ sessionId, live, header }) => {
        this.post(sessionId, { type: 'live', sessionId, live, header });
        const entry = this.panels.get(sessionId);
        if (entry) entry.panel.title = panelTitle(header.kernelName, live);
      }),
    );
  }

  /** Opens or reveals the panel of a session (one tab per session). */
  async show(sessionId: string, kernelName: string, preserveFocus = false): Promise<vscode.WebviewPanel> {
    const existing = this.panels.get(sessionId);
    if (existing) {
      existing.panel.reveal(undefined, preserveFocus);
      return existing.panel;
    }
    const editor = vscode.window.activeTextEditor;
    const viewColumn = await this.placeNewPanel();
    const panel = vscode.window.createWebviewPanel(PANEL_VIEW_TYPE, panelTitle(kernelName, this.sessions.isLive(sessionId)), { viewColumn, preserveFocus }, this.options());
    this.attach(panel, sessionId);
    // Making the group below activates it: give the focus back to the code when asked to.
    if (preserveFocus && editor?.viewColumn !== undefined && editor.viewColumn !== panel.viewColumn) {
      await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, selection: editor.selection });
    }
    return panel;
  }

  /**
   * The group a new panel goes to: one holding another panel of ours (the user may have moved it there) other than the
   * code's, else as kernelTuner.panelLocation says. "below" makes a group under the active editor, sized so the code
   * keeps most of the height when it was the only group.
   */
  private async placeNewPanel(): Promise<vscode.ViewColumn> {
    const code = vscode.window.activeTextEditor?.viewColumn;
    const other = [...this.panels.values()].find((e) => e.panel.viewColumn !== undefined && e.panel.viewColumn !== code);
    if (other) return other.panel.viewColumn!;
    const location = vscode.workspace.getConfiguration(SECTION).get<string>('panelLocation', 'below');
    if (location === 'sameGroup') return vscode.ViewColumn.Active;
    if (location === 'beside' || !vscode.window.activeTextEditor) return vscode.ViewColumn.Beside;
    const alone = vscode.window.tabGroups.all.length === 1;
    await vscode.commands.executeCommand('workbench.action.newGroupBelow');
    if (alone) await vscode.commands.executeCommand('vscode.setEditorLayout', { orientation: 1, groups: [{ size: 0.56 }, { size: 0.44 }] });
    return vscode.window.tabGroups.activeTabGroup.viewColumn;
  }

  async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: PersistedState | undefined): Promise<void> {
    const sessionId = typeof state?.sessionId === 'string' ? state.sessionId : undefined;
    if (!sessionId || this.panels.has(sessionId)) {
      panel.dispose();
      return;
    }
    panel.webview.options = this.options();
    this.attach(panel, sessionId);
  }

  /** How many events the session's panel has drawn (0 without a panel). */
  renderedEvents(sessionId: string): number {
    return this.panels.get(sessionId)?.renderedEvents ?? 0;
  }

  /**
   * Sends each open panel the series of its related sessions (parent, branches) when they changed. `changed`: the
   * sessions saved or deleted since the last call; a session's own saves change nothing its chart draws of the others.
   */
  async refreshRelated(changed: ReadonlySet<string>): Promise<void> {
    for (const [sessionId, entry] of [...this.panels]) {
      if ([...changed].some((id) => id !== sessionId)) await this.postRelated(sessionId, entry);
    }
  }

  /** The related series last sent to the session's panel (for tests). */
  relatedSent(sessionId: string): RelatedSeries[] | undefined {
    const sent = this.panels.get(sessionId)?.related;
    return sent === undefined ? undefined : (JSON.parse(sent) as RelatedSeries[]);
  }

  hasPanel(sessionId: string): boolean {
    return this.panels.has(sessionId);
  }

  close(sessionId: string): void {
    this.panels.get(sessionId)?.panel.dispose();
  }

  dispose(): void {
    for (const { panel } of [...this.panels.values()]) panel.dispose();
    vscode.Disposable.from(...this.disposables).dispose();
  }

  private options(): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
  }

  private attach(panel: vscode.WebviewPanel, sessionId: string): void {
    const entry: PanelEntry = { panel, renderedEvents: 0 };
    this.panels.set(sessionId, entry);
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'activity-bar.svg');
    panel.webview.html = this.html(panel.webview, sessionId);
    const subscriptions = [
      panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(sessionId, entry, raw)),
      panel.onDidDispose(() => {
        if (this.panels.get(sessionId) === entry) this.panels.delete(sessionId);
        vscode.Disposable.from(...subscriptions).dispose();
      }),
    ];
  }

  private async receive(sessionId: string, entry: PanelEntry, raw: unknown): Promise<void> {
    let message: FromWebviewMessage;
    try {
      message = parseFromWebview(raw);
    } catch (error) {
      if (error instanceof ProtocolError) this.log.warn(`panel sent an invalid message: ${error.message}`);
      else throw error;
      return;
    }
    if (message.type === 'ready') {
      const snapshot = await this.sessions.snapshot(sessionId);
      if (!snapshot) {
        this.log.warn(`panel for session ${sessionId}: no such session in this window or the history`);
        entry.panel.dispose();
        return;
      }
      entry.panel.title = panelTitle(snapshot.header.kernelName, snapshot.live);
      this.postTo(entry, { type: 'session', header: snapshot.header, events: snapshot.events, live: snapshot.live });
      // A reloaded webview has lost what it was sent before.
      delete entry.related;
      await this.postRelated(sessionId, entry);
      return;
    }
    if (message.type === 'rendered') {
      if (message.sessionId === sessionId) entry.renderedEvents = message.eventCount;
      return;
    }
    if (message.sessionId !== sessionId) {
      this.log.warn(`panel of session ${sessionId} sent a message about session ${message.sessionId}; ignored`);
      return;
    }
    await this.handle(message).catch((error: unknown) => {
      const text = error instanceof Error ? error.message : String(error);
      this.log.error(`panel action ${message.type} failed: ${text}`);
      void vscode.window.showErrorMessage(`Kernel Tuner: ${text}`);
    });
  }

  private async postRelated(sessionId: string, entry: PanelEntry): Promise<void> {
    const series = await this.sessions.related(sessionId);
    const text = JSON.stringify(series);
    if (text === entry.related) return;
    entry.related = text;
    this.postTo(entry, { type: 'related', sessionId, series });
  }

  private post(sessionId: string, message: ToWebviewMessage): void {
    const entry = this.panels.get(sessionId);
    if (entry) this.postTo(entry, message);
  }

  private postTo(entry: PanelEntry, message: ToWebviewMessage): void {
    void entry.panel.webview.postMessage(message);
  }

  private html(webview: vscode.Webview, sessionId: string): string {
    const nonce = randomBytes(18).toString('base64');
    const asset = (...path: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, ...path)).toString();
    const csp = [
      "default-src 'none'",
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" nonce="${nonce}" href="${asset('media', 'panel.css')}">
<link rel="stylesheet" nonce="${nonce}" href="${asset('media', 'chart-and-code.css')}">
<title>Kernel Tuner</title>
</head>
<body data-session-id="${escapeAttribute(sessionId)}">
<main id="app" aria-live="polite"><p class="muted">Loading the session…</p></main>
<script nonce="${nonce}" src="${asset('dist', 'webview.js')}"></script>
</body>
</html>`;
  }
}

function panelTitle(kernelName: string, live: boolean): string {
  return `${live ? 'Tuning' : 'Report'}: ${kernelName}`;
}

function escapeAttribute(value: string): string {
  return value.replace(/[&"<>]/g, (c) => ({ '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;' })[c]!);
}
