/**
 * Extension tests, second window on the same VS Code profile (the "reload" after suite.ts): the extension activates
 * afresh, the history still holds the session, and reopening it shows the stored report in the panel.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { isSessionReport } from '../../src/extension/report';
import { startScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, EXTENSION_ID, extensionApi, inEditor, reportsOpenAtCloseFile, until, workspaceUri } from './support';

describe('after a window reload', () => {
  it('the proposal left open comes back as a review, never as old and new lines unmarked', async () => {
    const api = await extensionApi();
    const uri = workspaceUri('saxpy.cu');
    const saved = readFileSync(uri.fsPath, 'utf8');
    // Hot exit brings the unsaved document back, the proposal's lines in it.
    const document = await vscode.workspace.openTextDocument(uri);
    const pending = await until('the review of the proposal left open', () => api.inlineDiff.pending(uri).length > 0 && api.inlineDiff.pending(uri));
    assert(document.isDirty && document.getText() !== saved, 'the unsaved proposal is back');
    assertEqual(api.inlineDiff.textWithoutProposal(document), saved, 'the document without the proposal: the file as saved');
    for (const p of pending) assert(p.oldLines.end === p.newLines.start, `the new lines of ${p.id} follow its old lines`);
    const titles = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)).map((l) => l.command?.title ?? '');
    assert(titles.some((t) => t.startsWith('$(check-all) Accept All')), `the review's lenses, got ${JSON.stringify(titles)}`);
    // Decided as before the reload: Accept All gives the session's kernel, Undo the file as saved.
    const { sessions } = await api.history.list();
    const session = await api.history.get(sessions.find((s) => s.kernelName === 'saxpy' && s.status === 'completed' && !s.parent && !s.replayOf)!.id);
    await vscode.window.showTextDocument(document);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', uri), 'Accept All');
    assertEqual(document.getText(), session?.finalCode, 'the document after Accept All');
    assert(!api.inlineDiff.hasReview(uri), 'the review ended');
    await inEditor('undo', document);
    assertEqual(document.getText(), saved, 'after one undo');
    assert(await document.save(), 'saved');
  });

  it('every report open when the window closed comes back, in the order they were opened, each drawing its session', async () => {
    const api = await extensionApi();
    const expected = JSON.parse(readFileSync(reportsOpenAtCloseFile(), 'utf8')) as string[];
    const back = () => expected.filter((id) => api.panels.hasPanel(id));
    await until(`the ${expected.length} reports back`, () => back().length === expected.length, 60_000).catch((error: unknown) => {
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => `${g.viewColumn}: ${t.label}`));
      throw new Error(`${error instanceof Error ? error.message : String(error)}: back ${JSON.stringify(back())} of ${JSON.stringify(expected)}, tabs ${JSON.stringify(tabs)}`);
    });
    // One tab each (the tab of the last one opened shows a moment after its panel).
    const reportTabs = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('kernelTuner.session')).length;
    await until(`${expected.length} report tabs`, () => reportTabs() >= expected.length, 10_000);
    assertEqual(reportTabs(), expected.length, 'report tabs');
    for (const id of expected) {
      const entry = await api.history.get(id);
      assert(entry && isSessionReport(entry.report), `session ${id} has a stored report`);
      const count = entry.report.events.length;
      await vscode.commands.executeCommand('kernelTuner.history.open', id);
      await until(`the report of ${id} to draw its ${count} events`, () => api.panels.renderedEvents(id) === count, 30_000);
    }
  }, 120_000);

  it('the history still lists the completed session with its report', async () => {
    const api = await extensionApi();
    const { sessions } = await api.history.list();
    const summary = sessions.find((s) => s.kernelName === 'saxpy' && s.status === 'completed' && !s.parent && !s.replayOf);
    assert(summary, `a completed saxpy session in the history, got ${JSON.stringify(sessions.map((s) => [s.kernelName, s.status]))}`);
    const nodes = await api.historyTree.getChildren();
    assert(nodes.some((n) => n.kind === 'session' && n.summary.id === summary.id), 'the tree shows it');
    const entry = await api.history.get(summary.id);
    assert(entry && isSessionReport(entry.report), 'the report survived');

    await vscode.commands.executeCommand('kernelTuner.history.open', summary.id);
    await until('the report panel', () => api.panels.hasPanel(summary.id));
    const count = entry.report.events.length;
    await until(`the panel to draw the ${count} stored events`, () => api.panels.renderedEvents(summary.id) === count, 30_000);
    assertEqual(api.sessions.isLive(summary.id), false, 'a stored report is not a live session');
  }, 60_000);

  it('"Show tuning panel" in a window that started no session shows the report in front last, else the newest session', async () => {
    const api = await extensionApi();
    assertEqual(api.lastSession(), undefined, 'no session started in this window');
    const { sessions } = await api.history.list();
    const open = sessions.filter((s) => api.panels.hasPanel(s.id));
    assert(open.length >= 2, 'reports are open');
    const front = open.at(-1)!.id;
    await vscode.commands.executeCommand('kernelTuner.history.open', front);
    await until('the report in front', () => api.panels.mostRecent() === front);
    await vscode.window.showTextDocument(workspaceUri('saxpy.cu'));
    assertEqual(await vscode.commands.executeCommand('kernelTuner.showPanel'), front, 'the report in front last');
    for (const s of open) api.panels.close(s.id);
    assertEqual(await vscode.commands.executeCommand('kernelTuner.showPanel'), sessions[0]!.id, 'with no report open: the newest session');
    await until('its report', () => api.panels.hasPanel(sessions[0]!.id));
  });
});

describe('time travel after a reload', () => {
  it('starts a branch from an edited kernel, from the checkpoints the first window wrote', async () => {
    const api = await extensionApi();
    const { sessions } = await api.history.list();
    const first = sessions.find((s) => s.parent?.stepId === '3');
    assert(first?.parent, 'the branch of the first window');
    const parentId = first.parent.id;
    const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
    const turns = (JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] }).turns;
    const step2 = turns.find((t) => t.comment?.startsWith('step 2'))!;
    const llm = await startScriptedLlmServer([{ ...step2, match: { contains: ['Fused multiply-add', 'edited by the user'] } }, ...turns.slice(turns.findIndex((t) => t.comment?.startsWith('step 3')))]);
    try {
      await vscode.workspace.getConfiguration('kernelTuner').update('llm.baseUrl', `${llm.url}/v1`, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('kernelTuner.history.branch', parentId, '2', 'edit');
      // The kernel step 2 started from, in an editor: the user's edit goes in, then the branch continues from it.
      const editor = await until('the kernel to edit', () => vscode.window.activeTextEditor?.document.uri.fsPath.includes('branch-drafts') && vscode.window.activeTextEditor);
      const original = readFileSync(workspaceUri('saxpy.cu').fsPath, 'utf8');
      assertEqual(editor.document.getText(), original, 'the kernel step 2 started from (steps 1 was rejected)');
      const line = editor.document.getText().split('\n').findIndex((l) => l.startsWith('__global__'));
      assert(await editor.edit((b) => b.insert(new vscode.Position(line, 0), '// FAKE_SLIGHTLY_FASTER: edited by the user\n')), 'the edit');
      await vscode.commands.executeCommand('kernelTuner.branch.continue');
      const started = api.lastSession();
      assert(started, 'the branch started');
      await started.finished;
      assertEqual(llm.mismatches, [], 'requests the script did not expect');
      const branch = await api.history.get(started.sessionId);
      assert(branch, 'the branch is in the history');
      assertEqual(branch.status, 'completed', `branch status (${branch.error ?? ''})`);
      assert(branch.parent?.editedCode?.includes('edited by the user'), 'the edit is stored with the branch');
      assertEqual(branch.steps.map((s) => `${s.stepId} ${s.status}`), ['1 rejected', 'edit:2 accepted', '2 rejected', '3 accepted'], 'the steps');
      const document = await vscode.workspace.openTextDocument(workspaceUri('saxpy.cu'));
      if (api.inlineDiff.hasReview(document.uri)) await vscode.commands.executeCommand('kernelTuner.rejectAll', document.uri);
    } finally {
      await llm.close();
    }
  }, 90_000);

  it('replays the session with its recorded answers, no model asked', async () => {
    const api = await extensionApi();
    const parentId = (await api.history.list()).sessions.find((s) => s.parent?.stepId === '3')!.parent!.id;
    // Nothing listens there: a request to the model would fail the replay.
    await vscode.workspace.getConfiguration('kernelTuner').update('llm.baseUrl', 'http://127.0.0.1:9/v1', vscode.ConfigurationTarget.Workspace);
    await vscode.commands.executeCommand('kernelTuner.history.replay', parentId);
    const started = api.lastSession();
    assert(started && started.sessionId !== parentId, 'the replay started');
    await started.finished;
    const [replay, parent] = [await api.history.get(started.sessionId), await api.history.get(parentId)];
    assert(replay, 'the replay is in the history');
    assertEqual(replay.status, 'completed', `replay status (${replay.error ?? ''})`);
    assertEqual(replay.replayOf, parentId, 'what it replays');
    assertEqual(replay.finalCode, parent?.finalCode, 'the same final kernel');
    assertEqual(replay.llmExchanges?.length, parent?.llmExchanges?.length, 'every recorded answer served once');
    // The same requests got the same answers (in any order: candidates asked side by side answer as they come).
    const asked = (e: typeof replay | undefined) => (e?.llmExchanges ?? []).map((x) => JSON.stringify([x.purpose, x.messages, x.response?.content])).sort();
    assertEqual(asked(replay), asked(parent), 'the requests and answers of the replay');
    const parentNode = (await api.historyTree.getChildren()).find((n) => n.kind === 'session' && n.summary.id === parentId)!;
    assert((await api.historyTree.getChildren(parentNode)).some((n) => n.kind === 'session' && n.summary.id === replay.id), 'the replay under its session');
  }, 90_000);

  it('replays a branch from where it branched off, with the log it inherited', async () => {
    const api = await extensionApi();
    const branch = (await api.history.list()).sessions.find((s) => s.parent?.stepId === '2' && s.status === 'completed' && !s.replayOf);
    assert(branch, 'the branch with the edited kernel');
    await vscode.commands.executeCommand('kernelTuner.history.replay', branch.id);
    const started = api.lastSession();
    assert(started && started.sessionId !== branch.id, 'the replay started');
    await started.finished;
    const [replay, original] = [await api.history.get(started.sessionId), await api.history.get(branch.id)];
    assert(replay, 'the replay is in the history');
    assertEqual(replay.status, 'completed', `replay status (${replay.error ?? ''})`);
    assertEqual(replay.finalCode, original?.finalCode, 'the same final kernel');
    assertEqual(replay.steps.map((s) => `${s.stepId} ${s.status}`), ['1 rejected', 'edit:2 accepted', '2 rejected', '3 accepted'], 'the steps it inherited and its own');
    assertEqual(replay.baselineTimeMs, original?.baselineTimeMs, 'the baseline it inherited');
  }, 90_000);
});

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (after reload)');
}
