/**
 * The HTML report of a session in the history: opened in a webview beside the editor (its own CSP, hashes of its inline
 * script and style only, applies there as in a browser) or exported as one file to share.
 */
import * as vscode from 'vscode';
import type { HistoryEntry } from '../engine/store/history-store';
import { renderReportHtml } from '../report/html';
import { sessionReportData } from './report';

/** The report's HTML of a stored session; undefined (with a message) when it was stored without its events. */
function sessionReportHtml(entry: HistoryEntry): string | undefined {
  const data = sessionReportData(entry);
  if (!data) {
    void vscode.window.showWarningMessage('This session was stored without its events, so it has no HTML report.');
    return undefined;
  }
  return renderReportHtml(data);
}

/** The two history commands: open the report in a webview, export it as an HTML file. */
export function htmlReportCommands(
  command: (id: string, run: (...args: unknown[]) => unknown) => vscode.Disposable,
  entryFor: (arg: unknown) => Promise<HistoryEntry | undefined>,
  defaultFolder: () => vscode.Uri,
): vscode.Disposable[] {
  return [
    command('kernelTuner.history.openHtmlReport', async (arg) => {
      const entry = await entryFor(arg);
      const html = entry && sessionReportHtml(entry);
      if (!entry || !html) return;
      const panel = vscode.window.createWebviewPanel('kernelTuner.htmlReport', `Report: ${entry.kernelName}`, vscode.ViewColumn.Beside, { enableScripts: true, localResourceRoots: [] });
      panel.webview.html = html;
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
      void vscode.window.showInformationMessage(`Exported to ${vscode.workspace.asRelativePath(dest)}.`);
    }),
  ];
}
