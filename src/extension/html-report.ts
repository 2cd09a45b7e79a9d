/**
 * The HTML report of a session in the history: opened in a webview where the tuning panels open (its own CSP, hashes of
 * its inline script and style only, applies there as in a browser), or exported as one file to share.
 */
import * as vscode from 'vscode';
import type { HistoryEntry } from '../engine/store/history-store';
import { renderReportHtml } from '../report/html';
import { sessionReportData } from './report';
import { announceSaved } from './saved-file';

/** The report's HTML of a stored session; undefined (with a message) when it was stored without its events. */
function sessionReportHtml(entry: HistoryEntry): string | undefined {
  const data = sessionReportData(entry);
  if (!data) {
    void vscode.window.showWarningMessage('This session was stored without its events, so it has no HTML report.');
    return undefined;
  }
  return renderReportHtml(data);
}

/**
 * The two history commands: open the report in a webview (one per session; again: it comes to the front, redrawn), in
 * the group `place` gives (the tuning panels'), titled apart from the session's tuning panel; export it as an HTML file.
 */
export function htmlReportCommands(
  command: (id: string, run: (...args: unknown[]) => unknown) => vscode.Disposable,
  entryFor: (arg: unknown) => Promise<HistoryEntry | undefined>,
  defaultFolder: () => vscode.Uri,
  place: () => Promise<vscode.ViewColumn>,
): vscode.Disposable[] {
  const open = new Map<string, vscode.WebviewPanel>();
  return [
    command('kernelTuner.history.openHtmlReport', async (arg) => {
      const entry = await entryFor(arg);
      const html = entry && sessionReportHtml(entry);
      if (!entry || !html) return;
      const shown = open.get(entry.id);
      if (shown) {
        shown.webview.html = html;
        shown.reveal();
        return;
      }
      // Beside another HTML report, else where a tuning panel would open.
      const column = [...open.values()].find((p) => p.viewColumn !== undefined)?.viewColumn ?? (await place());
      const panel = vscode.window.createWebviewPanel('kernelTuner.htmlReport', `HTML report: ${entry.kernelName}`, column, { enableScripts: true, localResourceRoots: [] });
      panel.webview.html = html;
      open.set(entry.id, panel);
      panel.onDidDispose(() => open.delete(entry.id));
    }),
    command('kernelTuner.history.exportHtml', async (arg) => {
      const entry = await entryFor(arg);
      const html = entry && sessionReportHtml(entry);
      if (!entry || !html) return;
      const dest = await vscode.window.showSaveDialog({
        defaultUri: vscode.Uri.joinPath(defaultFolder(), `${entry.kernelName}-${entry.id}.report.html`),
        filters: { HTML: ['html'] },
        title: 'Export the session as an HTML report',
      });
      if (!dest) return;
      await vscode.workspace.fs.writeFile(dest, new TextEncoder().encode(html));
      void announceSaved(`Exported to ${vscode.workspace.asRelativePath(dest)}.`, dest);
    }),
  ];
}
