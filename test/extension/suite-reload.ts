/**
 * Extension tests, second window on the same VS Code profile (the "reload" after suite.ts): the extension activates
 * afresh, the history still holds the session, and reopening it shows the stored report in the panel.
 */
import * as vscode from 'vscode';
import { isSessionReport } from '../../src/extension/report';
import { describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, extensionApi, until } from './support';

describe('after a window reload', () => {
  it('the history still lists the completed session with its report', async () => {
    const api = await extensionApi();
    const { sessions } = await api.history.list();
    const summary = sessions.find((s) => s.kernelName === 'saxpy' && s.status === 'completed');
    assert(summary, `a completed saxpy session in the history, got ${JSON.stringify(sessions.map((s) => [s.kernelName, s.status]))}`);
    const nodes = await api.historyTree.getChildren();
    assert(nodes.some((n) => n.kind === 'session' && n.summary.id === summary.id), 'the tree shows it');
    const entry = await api.history.get(summary.id);
    assert(entry && isSessionReport(entry.report), 'the report survived');

    // The report panels left open by the first window come back through the WebviewPanelSerializer, which VS Code
    // calls when a restored tab is shown: show the first one that is in the background.
    const reportTab = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs.map((t, index) => ({ t, index, group: g })))
      .find(({ t }) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('kernelTuner.session'));
    assert(reportTab, `a report tab restored, got ${JSON.stringify(vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label)))}`);
    if (!reportTab.t.isActive) {
      const focusGroup = ['First', 'Second', 'Third', 'Fourth'][reportTab.group.viewColumn - 1];
      if (focusGroup) await vscode.commands.executeCommand(`workbench.action.focus${focusGroup}EditorGroup`);
      await vscode.commands.executeCommand(`workbench.action.openEditorAtIndex${reportTab.index + 1}`);
    }
    const restored = await until(
      'a report panel restored by the serializer',
      () => sessions.find((s) => api.panels.hasPanel(s.id)),
      15_000,
    ).catch((error: unknown) => {
      console.log(`restored tabs: ${JSON.stringify(vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label)))}`);
      throw error;
    });
    const restoredEntry = await api.history.get(restored.id);
    assert(restoredEntry && isSessionReport(restoredEntry.report), 'the restored panel has a stored report');
    const restoredCount = restoredEntry.report.events.length;
    await until(`the restored panel to draw its ${restoredCount} events`, () => api.panels.renderedEvents(restored.id) === restoredCount, 30_000);
    await vscode.commands.executeCommand('kernelTuner.history.open', summary.id);
    await until('the report panel', () => api.panels.hasPanel(summary.id));
    const count = entry.report.events.length;
    await until(`the panel to draw the ${count} stored events`, () => api.panels.renderedEvents(summary.id) === count, 30_000);
    assertEqual(api.sessions.isLive(summary.id), false, 'a stored report is not a live session');
  }, 60_000);
});

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (after reload)');
}
