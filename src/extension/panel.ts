/**
 * The tuning panel's host: one webview panel per session (opening it again reveals it). A new panel opens where the
 * code stays readable: in a group below the code by default (kernelTuner.panelLocation), or in the group where the
 * user keeps the other panels. Strict CSP with a fresh crypto nonce per page; the script and styles come from dist/ and
 * media/ through asWebviewUri; nothing remote. Messages both ways follow protocol.ts; the panel's content is the
 * session's event log (SessionManager.snapshot) plus the events appended since.
 *
 * After a window reload the extension opens the reports that were open again itself (window-state.ts keeps which), and
 * registers no WebviewPanelSerializer: VS Code restores a panel from the layout it saved last, which a window that
 * closes before its next save (a browser's tab) does not have or has in part, and a restored tab whose panel VS Code
 * does not revive stays empty. Without a serializer VS Code keeps no report tabs, and every report comes back one way.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { parseFromWebview, ProtocolError, type FromWebviewMessage, type RelatedSeries, type ToWebviewMessage } from './protocol';
import { SECTION } from './config';
import type { SessionManager } from './sessions';
import type { OpenReport, WindowState } from './window-state';

export const PANEL_VIEW_TYPE = 'kernelTuner.session';
/** How long a reopened report may take to load before the next one opens. */
const REOPEN_WAIT_MS = 10_000;

export type PanelMessageHandler = (message: FromWebviewMessage) => Promise<void>;

interface PanelEntry {
  panel: vscode.WebviewPanel;
  /** The kernel the title names. */
  kernelName: string;
  /** Events the webview reported as drawn (its `rendered` acknowledgement). */
  renderedEvents: number;
  /** The related series last sent (JSON), so that an unchanged history sends nothing. */
  related?: string;
}

export class PanelManager implements vscode.Disposable {
  private readonly panels = new Map<string, PanelEntry>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The reports open when the window last closed. */
  private readonly openBefore: readonly OpenReport[];
  /** Set while the window closes: its panels go with it, and stay remembered as open. */
  private closing = false;
  /** Called when a session's panel has been sent its session. */
  private readonly readyWaiters = new Map<string, () => void>();
  /** The sessions of the open panels, the one last in front last. */
  private readonly recency: string[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly sessions: SessionManager,
    private readonly handle: PanelMessageHandler,
    private readonly log: vscode.LogOutputChannel,
    /** Where the open reports are kept across a window reload. */
    private readonly kept: WindowState,
  ) {
    this.openBefore = [...kept.reports];
    this.disposables.push(
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
    const panel = this.create(sessionId, kernelName, await this.placeNewPanel(), preserveFocus);
    if (preserveFocus) await this.focusBack(editor, panel);
    return panel;
  }

  private create(sessionId: string, kernelName: string, viewColumn: vscode.ViewColumn, preserveFocus: boolean): vscode.WebviewPanel {
    const panel = vscode.window.createWebviewPanel(PANEL_VIEW_TYPE, panelTitle(kernelName, this.sessions.isLive(sessionId)), { viewColumn, preserveFocus }, this.options());
    this.attach(panel, sessionId, kernelName);
    return panel;
  }

  /** Making the group below activates it: the focus goes back to the code. */
  private async focusBack(editor: vscode.TextEditor | undefined, panel: vscode.WebviewPanel): Promise<void> {
    if (editor?.viewColumn !== undefined && editor.viewColumn !== panel.viewColumn) {
      await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, selection: editor.selection });
    }
  }

  /**
   * The group a new panel (a report, or an HTML report) goes to: one holding another panel of ours (the user may have
   * moved it there) other than the code's, else as kernelTuner.panelLocation says. "below" makes a group under the
   * active editor, sized so the code keeps most of the height when it was the only group.
   */
  async placeNewPanel(): Promise<vscode.ViewColumn> {
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

  /** Opens the reports that were open when the window last closed, in their order, where new panels open. */
  async reopen(): Promise<void> {
    const reports = this.openBefore.filter((report) => !this.panels.has(report.sessionId));
    if (reports.length === 0) return;
    this.log.info(`reopening ${reports.length} report(s) open before the reload: ${reports.map((r) => r.sessionId).join(', ')}`);
    // The window may still be restoring its editors: the code is the active group's tab, not yet an editor.
    const codeGroup = vscode.window.tabGroups.activeTabGroup;
    const code = codeGroup.activeTab?.input instanceof vscode.TabInputText ? codeGroup.activeTab.input.uri : undefined;
    const viewColumn = await this.placeNewPanel();
    // One after the other, each drawn before the next opens in front of it (a panel hidden before it loaded would load
    // only when shown).
    for (const report of reports) {
      this.create(report.sessionId, report.kernelName, viewColumn, true);
      await this.whenReady(report.sessionId, REOPEN_WAIT_MS);
    }
    if (code && vscode.window.tabGroups.activeTabGroup.viewColumn !== codeGroup.viewColumn) await vscode.window.showTextDocument(code, { viewColumn: codeGroup.viewColumn, preview: false });
  }

  /** Resolves when the session's panel has been sent its session (or after `timeoutMs`). */
  private whenReady(sessionId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.readyWaiters.set(sessionId, done);
    });
  }

  /** The session of the open panel that was in front last, if any is open. */
  mostRecent(): string | undefined {
    return this.recency.at(-1);
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
    this.closing = true;
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

  private attach(panel: vscode.WebviewPanel, sessionId: string, kernelName: string): void {
    const entry: PanelEntry = { panel, renderedEvents: 0, kernelName };
    this.panels.set(sessionId, entry);
    this.remember();
    const toFront = () => {
      const at = this.recency.indexOf(sessionId);
      if (at >= 0) this.recency.splice(at, 1);
      if (this.panels.get(sessionId) === entry) this.recency.push(sessionId);
    };
    toFront();
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'activity-bar.svg');
    panel.webview.html = this.html(panel.webview, sessionId);
    const subscriptions = [
      panel.webview.onDidReceiveMessage((raw: unknown) => void this.receive(sessionId, entry, raw)),
      panel.onDidChangeViewState(({ webviewPanel }) => webviewPanel.active && toFront()),
      panel.onDidDispose(() => {
        if (this.panels.get(sessionId) === entry) this.panels.delete(sessionId);
        toFront();
        if (!this.closing) this.remember();
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
      entry.kernelName = snapshot.header.kernelName;
      this.remember();
      this.postTo(entry, { type: 'session', header: snapshot.header, events: snapshot.events, live: snapshot.live });
      // A reloaded webview has lost what it was sent before.
      delete entry.related;
      await this.postRelated(sessionId, entry);
      this.readyWaiters.get(sessionId)?.();
      this.readyWaiters.delete(sessionId);
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

  /** Keeps the open reports for the next window. */
  private remember(): void {
    this.kept.setReports([...this.panels].map(([sessionId, e]) => ({ sessionId, kernelName: e.kernelName })));
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
