/**
 * Extension tests, first window: the real extension in a real VS Code (code-server here, @vscode/test-electron where
 * VS Code can be downloaded) with the scripted LLM server (OpenAI wire format, over HTTP) and the fake GPU backend
 * selected through the extension's test hook. A whole session runs, the panel receives it, the final kernel is
 * reviewed inline (Accept + undo, Reject, one hunk), and the history keeps it. suite-reload.ts checks, in a new window
 * on the same profile, that the history survived.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { KernelTunerApi } from '../../src/extension/extension';
import type { PendingChange } from '../../src/extension/inline-diff';
import type { HistoryEntry } from '../../src/engine/store/history-store';
import { asideChanges, withoutAsideChange, type AsideChange } from '../../src/extension/proposal';
import type { FakeBackend } from '../support/fake-backend';
import { isSessionReport } from '../../src/extension/report';
import { startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { after, before, describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, EXTENSION_ID, extensionApi, inEditor, reportsOpenAtCloseFile, until, workspaceKernel, workspaceUri } from './support';

let api: KernelTunerApi;
let server: ScriptedLlmServer;
let document: vscode.TextDocument;
let sessionId: string;
/** The file as it should read after Accept All. */
let finalCode: string;
/** The document with the session's proposal open in it. */
let display: string;
let SAXPY: string;

/** Every file below `dir` (none when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/** The lenses' titles by line (each line's in the order VS Code shows them). */
function lensRows(lenses: readonly vscode.CodeLens[]): Record<number, string[]> {
  const rows: Record<number, string[]> = {};
  for (const l of lenses) (rows[l.range.start.line] ??= []).push(l.command?.title ?? '');
  return rows;
}

/** "Show diff / apply again" of the session: the proposal opens again in saxpy.cu. */
async function applyAgain(): Promise<PendingChange[]> {
  const ids = (p: PendingChange[]) => p.map((c) => c.id).join();
  const before = ids(api.inlineDiff.pending(document.uri));
  await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
  return until('the proposal in the editor', () => {
    const pending = api.inlineDiff.pending(document.uri);
    return pending.length > 0 && ids(pending) !== before && pending;
  });
}

/**
 * saxpy.cu as the workspace has it, saved, without a proposal: where each test that opens its own proposal starts, so
 * that a test that failed halfway leaves nothing behind for the next.
 */
async function fresh(): Promise<void> {
  if (document.isClosed) document = await vscode.workspace.openTextDocument(workspaceUri('saxpy.cu'));
  if (api.inlineDiff.hasReview(document.uri)) await vscode.commands.executeCommand('kernelTuner.rejectAll', document.uri);
  if (document.getText() !== SAXPY || document.isDirty) await replaceAll(SAXPY);
}

/** Puts `text` into saxpy.cu and saves it (between tests that leave edits behind). */
async function replaceAll(text: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.replace(document.uri, new vscode.Range(0, 0, document.lineCount, 0), text);
  assert(await vscode.workspace.applyEdit(edit), 'reset the document');
  await document.save();
  assertEqual(document.getText(), text, 'the document after the reset');
}

async function editorOnKernel(): Promise<vscode.TextEditor> {
  const editor = await vscode.window.showTextDocument(document, { preview: false });
  editor.selection = new vscode.Selection(4, 8, 4, 8);
  return editor;
}

describe('activation', () => {
  before(async () => {
    SAXPY = workspaceKernel();
    document = await vscode.workspace.openTextDocument(workspaceUri('saxpy.cu'));
    await vscode.window.showTextDocument(document);
  });

  it('activates on a CUDA file and contributes its commands', async () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert(extension, 'the extension is installed');
    await until('activation on the .cu file', () => extension.isActive);
    api = await extensionApi();
    const commands = await vscode.commands.getCommands(true);
    for (const id of ['kernelTuner.tuneKernel', 'kernelTuner.acceptAll', 'kernelTuner.rejectAll', 'kernelTuner.openSideBySide', 'kernelTuner.setApiKey', 'kernelTuner.history.resume']) {
      assert(commands.includes(id), `command ${id} is registered`);
    }
    assertEqual(document.getText(), SAXPY, 'the workspace kernel');
  });

  it('shows a "Tune this kernel" lens above the kernel', async () => {
    const lenses = await until('the kernel lens', async () => {
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
      return found.some((l) => l.command?.title.includes('Tune this kernel')) ? found : undefined;
    });
    const lens = lenses.find((l) => l.command?.title.includes('Tune this kernel'))!;
    assertEqual(lens.range.start.line, 3, 'lens line');
    assertEqual(lens.command!.command, 'kernelTuner.tuneKernel', 'lens command');
  });
});

describe('a tuning session', () => {
  before(async () => {
    const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
    const script = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
    server = await startScriptedLlmServer(script.turns);
    const config = vscode.workspace.getConfiguration('kernelTuner');
    await config.update('llm.provider', 'openai', vscode.ConfigurationTarget.Workspace);
    await config.update('llm.model', 'scripted-model', vscode.ConfigurationTarget.Workspace);
    await config.update('llm.baseUrl', `${server.url}/v1`, vscode.ConfigurationTarget.Workspace);
    // The script answers one correction per failing step.
    await config.update('retries', 1, vscode.ConfigurationTarget.Workspace);
  });
  after(() => server?.close());

  it('runs "Tune this kernel" on the kernel under the cursor to the end', async () => {
    await editorOnKernel();
    await vscode.commands.executeCommand('kernelTuner.tuneKernel');
    const started = api.lastSession();
    assert(started, 'the command started a session');
    sessionId = started.sessionId;
    await started.finished;
    assertEqual(server.mismatches, [], 'requests the script did not expect');
    assertEqual(server.remaining(), 0, 'unused scripted answers');
    const entry = await api.history.get(sessionId);
    assert(entry, 'the session is in the history');
    assertEqual(entry.status, 'completed', 'history status');
    assertEqual(entry.device.name, 'Fake GPU (test double)', 'device of the session');
    assertEqual(
      entry.steps.map((s) => s.status),
      ['rejected', 'rejected', 'accepted'],
      'step outcomes',
    );
    assert(entry.speedup !== undefined && Math.abs(entry.speedup - 1 / 0.6) < 1e-6, `speed-up 1/0.6, got ${entry.speedup}`);
    assert(entry.finalCode, 'the session has a final kernel');
    assert(entry.finalCode.includes('#ifndef block_size_x') && entry.finalCode.includes('#define block_size_x 512'), 'the final kernel defines the chosen block size');
    // The engine hands back the whole file: what surrounds the kernel (its comment and include) stays as it was, though
    // this script's model answered with the kernel alone.
    finalCode = entry.finalCode;
    assert(finalCode.startsWith(SAXPY.slice(0, SAXPY.indexOf('__global__'))), 'the file keeps its comment and include');
    assertEqual(finalCode.split('#include <cuda_runtime.h>').length, 2, 'the include once');
  }, 120_000);

  it('sent every event to the panel, which drew them', async () => {
    const snapshot = await api.sessions.snapshot(sessionId);
    assert(snapshot && isSessionReport((await api.history.get(sessionId))?.report), 'the report is stored');
    assert(api.panels.hasPanel(sessionId), 'the session has a panel');
    const types = snapshot.events.map((e) => e.type);
    for (const type of ['session.started', 'analysis.done', 'tests.ready', 'baseline', 'plan', 'step.accepted', 'configs.evaluated', 'session.finished'] as const) {
      assert(types.includes(type), `the log has ${type}`);
    }
    await until(`the panel to draw all ${snapshot.events.length} events`, () => api.panels.renderedEvents(sessionId) === snapshot.events.length, 30_000);
  });

  it('opens the final kernel in the editor as a proposal: new lines below the old ones, line by line', async () => {
    const pending = await until('the proposal in the editor', () => api.inlineDiff.pending(document.uri).length > 0 && api.inlineDiff.pending(document.uri));
    display = document.getText();
    assert(display !== SAXPY, 'the new lines are in the document');
    assertEqual(api.inlineDiff.textWithoutProposal(document), SAXPY, 'the document without the proposal');
    assert(pending.length >= 2, `line-level changes, got ${pending.length}`);
    const values = pending.filter((p) => p.kind === 'values');
    assertEqual(values.map((p) => p.label), ['chosen values: block_size_x = 512'], 'the chosen values are a change of their own');
    for (const p of pending) {
      const lines = (span: { start: number; end: number }) => Array.from({ length: span.end - span.start }, (_, i) => document.lineAt(span.start + i).text + '\n').join('');
      assertEqual(lines(p.oldLines), p.oldText, `old lines of ${p.id}`);
      assertEqual(lines(p.newLines), p.newText, `new lines of ${p.id}`);
      assert(p.oldLines.end === p.newLines.start, `the new lines of ${p.id} follow its old lines`);
    }
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
    const titles = lenses.map((l) => l.command?.title ?? '');
    assert(titles.some((t) => t.includes('Accept All')) && titles.some((t) => t.includes('Reject All')), 'Accept All / Reject All lenses');
    assertEqual(titles.filter((t) => t === '$(check) Accept').length, pending.length, 'one Accept lens per change');
    assertEqual(titles.filter((t) => t === '$(close) Reject').length, pending.length, 'one Reject lens per change');
    const rows = lensRows(lenses);
    assertEqual(rows[0], ['$(check-all) Accept All (' + pending.length + ')', '$(close-all) Reject All', '$(diff) Side by side'], 'the file\'s actions on the first line, alone');
    for (const p of pending) assertEqual(rows[p.newLines.end], ['$(check) Accept', '$(close) Reject', `$(arrow-up) ${p.label}`], `the lenses of ${p.id}, right below its new lines`);
    assert(!titles.some((t) => t.includes('Tune this kernel')), 'no "Tune this kernel" lens while the proposal is open');
    const before = api.lastSession()?.sessionId;
    await editorOnKernel();
    await vscode.commands.executeCommand('kernelTuner.tuneKernel');
    assertEqual(api.lastSession()?.sessionId, before, 'no session starts on a file with an open proposal');
    assertEqual(document.getText(), display, 'the document');
  });

  it('Accept All gives the final kernel; one Undo the original, a second one the open proposal', async () => {
    const count = api.inlineDiff.pending(document.uri).length;
    await vscode.window.showTextDocument(document);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', document.uri), 'Accept All applied');
    assertEqual(document.getText(), finalCode, 'the document after Accept All');
    assert(!api.inlineDiff.hasReview(document.uri), 'nothing left to review');
    await inEditor('undo', document);
    assertEqual(document.getText(), SAXPY, 'the document after one undo');
    assert(!api.inlineDiff.hasReview(document.uri), 'no proposal after one undo');
    await inEditor('undo', document);
    assertEqual(document.getText(), display, 'the document after a second undo');
    assertEqual(api.inlineDiff.pending(document.uri).length, count, 'the proposal is back, every change pending');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    assertEqual(document.getText(), SAXPY, 'the document after Reject All');
    await document.save();
  });

  it('Reject All leaves the document byte-identical; Side by side shows it without and with the proposal', async () => {
    await fresh();
    await applyAgain();
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.openSideBySide', document.uri), 'Open side-by-side diff ran');
    const findDiffTab = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === 'kernel-tuner-proposal');
    const input = (await until('the diff editor', findDiffTab)).input as vscode.TabInputTextDiff;
    assertEqual((await vscode.workspace.openTextDocument(input.original)).getText(), SAXPY, 'the left side is the file without the proposal');
    assertEqual((await vscode.workspace.openTextDocument(input.modified)).getText(), finalCode, 'the right side is the file with all of it');
    // The open view follows the review: an accepted change moves to the left side, its Undo takes it back out.
    const without = await vscode.workspace.openTextDocument(input.original);
    const taken = api.inlineDiff.pending(document.uri).find((p) => p.kind === 'code' && p.oldText !== '')!;
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptHunk', document.uri, taken.id), 'Accept one change');
    await until('the left side with the accepted change', () => without.getText() === SAXPY.replace(taken.oldText, taken.newText));
    await inEditor('undo', document);
    assertEqual(document.getText(), display, 'the document after the undo');
    await until('the left side without it again', () => without.getText() === SAXPY);
    // Found again: a tab object goes stale once another editor comes to the front.
    await vscode.window.tabGroups.close(findDiffTab()!);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All ran');
    assertEqual(document.getText(), SAXPY, 'the document after Reject All');
    assert(!api.inlineDiff.hasReview(document.uri), 'the review ended');
    await document.save();
  });

  it('accepts the change under the cursor and keeps the others pending; each Undo steps back through the review', async () => {
    await fresh();
    const pending = await applyAgain();
    const editor = await vscode.window.showTextDocument(document);
    const last = pending.filter((p) => p.kind === 'code' && p.oldText !== '').at(-1)!;
    editor.selection = new vscode.Selection(last.newLines.start, 2, last.newLines.start, 2);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptHunk'), 'Accept (change under the cursor) applied');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.id), pending.filter((p) => p !== last).map((p) => p.id), 'the other changes stay pending');
    const accepted = SAXPY.replace(last.oldText, last.newText);
    assertEqual(api.inlineDiff.textWithoutProposal(document), accepted, 'only that change is in the file');
    const afterAccept = document.getText();
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All of the rest');
    assertEqual(document.getText(), accepted, 'the accepted change only');
    await inEditor('undo', document);
    assertEqual(document.getText(), afterAccept, 'undo of Reject All');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length - 1, 'the rest is pending again');
    await inEditor('undo', document);
    assertEqual(document.getText(), display, 'undo of the Accept: the whole proposal');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length, 'every change pending');
    await inEditor('undo', document);
    assertEqual(document.getText(), SAXPY, 'undo of the proposal: the original');
    assert(!api.inlineDiff.hasReview(document.uri), 'no review');
    await document.save();
  });

  it('Accept on a change that only adds lines, then Undo: the review is back with that change pending; Redo decides it again', async () => {
    await fresh();
    // Opened while the file is in no editor, as from the history: the change of the chosen values comes first.
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === document.uri.toString());
    await vscode.window.tabGroups.close(tabs);
    const pending = await applyAgain();
    const added = pending[0]!;
    assertEqual([added.kind, added.oldText], ['values', ''], 'the first change only adds lines');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptHunk', document.uri, added.id), 'Accept on the first change');
    const others = pending.slice(1).map((p) => p.id);
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.id), others, 'the others pending');
    await inEditor('undo', document);
    assertEqual(document.getText(), display, 'undo of the Accept: the whole proposal in the document');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.id), pending.map((p) => p.id), 'every change pending again');
    await inEditor('redo', document);
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.id), others, 'redo: the change accepted again');
    await inEditor('undo', document);
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length, 'undo again: pending again');
    await inEditor('undo', document);
    assertEqual(document.getText(), SAXPY, 'a second undo: the file without the proposal');
    assert(!api.inlineDiff.hasReview(document.uri), 'no review');
    await document.save();
  });

  it('follows the user\'s edits: lines above and below move the changes, typing in a change stays in it, an edit across one withdraws it', async () => {
    await fresh();
    const pending = await applyAgain();
    const editor = await vscode.window.showTextDocument(document);
    const end = document.lineAt(document.lineCount - 1).range.end;
    assert(await editor.edit((b) => b.insert(end, '// host code\n')), 'edit at the end');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.oldLines), pending.map((p) => p.oldLines), 'the changes after an edit below');
    assert(await editor.edit((b) => b.insert(new vscode.Position(0, 0), '// top\n')), 'edit at the top');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.newLines.start), pending.map((p) => p.newLines.start + 1), 'the changes after an edit above');
    const code = api.inlineDiff.pending(document.uri).filter((p) => p.kind === 'code' && p.oldText !== '').at(-1)!;
    assert(await editor.edit((b) => b.insert(new vscode.Position(code.newLines.start, 0), '/*typed*/')), 'typing in the new lines');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length, 'typing in a change keeps it');
    assert(api.inlineDiff.pending(document.uri).find((p) => p.id === code.id)!.newText.startsWith('/*typed*/'), 'the typed text is in its new lines');
    // Joining its last old line with its first new line takes the change out of the review, the text as the user left it.
    const joined = api.inlineDiff.pending(document.uri).find((p) => p.id === code.id)!;
    const lastOld = document.lineAt(joined.oldLines.end - 1).range.end;
    assert(await editor.edit((b) => b.delete(new vscode.Range(lastOld, new vscode.Position(joined.newLines.start, 0)))), 'edit across the change');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length - 1, 'the change is withdrawn, the others stay');
    const afterJoin = document.getText();
    await inEditor('undo', document);
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length, 'undo brings the change back');
    await inEditor('redo', document);
    assertEqual(document.getText(), afterJoin, 'redo');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    assert(document.getText().startsWith('// top\n') && document.getText().endsWith('// host code\n'), 'the user\'s lines stay');
    await replaceAll(SAXPY);
  });

  it('a save while the proposal is open writes the file without it; the proposal stays in the editor', async () => {
    await fresh();
    const pending = await applyAgain();
    assert(await document.save(), 'saved');
    assertEqual(readFileSync(document.uri.fsPath, 'utf8'), SAXPY, 'the file on disk');
    await until('the proposal back in the editor', () => document.getText() === display && api.inlineDiff.pending(document.uri).length === pending.length);
    assert(document.isDirty, 'the editor holds the unsaved proposal');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    assertEqual(document.getText(), SAXPY, 'the document');
    await document.save();
  });

  it('a second proposal for the same file replaces the first, keeping the user\'s edits', async () => {
    await fresh();
    const first = await applyAgain();
    const editor = await vscode.window.showTextDocument(document);
    assert(await editor.edit((b) => b.insert(new vscode.Position(0, 0), '// mine\n')), 'the user types');
    assert(document.isDirty, 'a dirty document');
    await applyAgain();
    assertEqual(api.inlineDiff.pending(document.uri).length, first.length, 'one proposal, not two');
    assertEqual(api.inlineDiff.textWithoutProposal(document), `// mine\n${SAXPY}`, 'the document without the proposal');
    assertEqual(document.getText(), `// mine\n${display}`, 'the new proposal over the user\'s text');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    assertEqual(document.getText(), `// mine\n${SAXPY}`, 'the user\'s edit, nothing else');
    await replaceAll(SAXPY);
  });

  it('closing the document ends its review and leaves the file as it was', async () => {
    await fresh();
    await applyAgain();
    await vscode.window.showTextDocument(document);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    await until('the review to end', () => !api.inlineDiff.hasReview(document.uri));
    assertEqual(readFileSync(document.uri.fsPath, 'utf8'), SAXPY, 'the file on disk');
    document = await vscode.workspace.openTextDocument(workspaceUri('saxpy.cu'));
    assertEqual(document.getText(), SAXPY, 'the document opened again');
    assert(!api.inlineDiff.hasReview(document.uri), 'no review');
  });

  it('with auto-save after a delay, the proposal is a diff in the file\'s group, the file left and the proposal right; the file holds only what is taken', async () => {
    await fresh();
    await vscode.window.showTextDocument(document, { preview: false });
    const fileGroup = vscode.window.tabGroups.activeTabGroup.viewColumn;
    const files = vscode.workspace.getConfiguration('files');
    await files.update('autoSave', 'afterDelay', vscode.ConfigurationTarget.Workspace);
    const isProposalDiff = (t: vscode.Tab) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === 'kernel-tuner-proposal' && t.input.original.toString() === document.uri.toString();
    const proposalTabs = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter(isProposalDiff);
    try {
      await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
      await until('the proposal beside the file', () => api.inlineDiff.isAside(document.uri));
      const diffTab = await until('the diff editor', () => proposalTabs()[0]);
      assertEqual(diffTab.group.viewColumn, fileGroup, 'the diff opens in the file\'s group');
      const proposal = await vscode.workspace.openTextDocument((diffTab.input as vscode.TabInputTextDiff).modified);
      assertEqual(proposal.getText(), finalCode, 'the proposal, read-only on the right');
      assertEqual(document.getText(), SAXPY, 'the file holds none of it');
      const titles = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri)).map((l) => l.command?.title ?? '');
      assert(titles.some((t) => t.includes('Accept All')) && titles.some((t) => t.includes('Reject All')), 'Accept All / Reject All on the file');
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
      await until('the diff to close', () => proposalTabs().length === 0);
      // Accept and Reject decide the change at the cursor in the proposal's side of the diff: three changes apart.
      const three = SAXPY.replace('// y = a * x + y', '// y = a * x + y (three changes)').replace('const float *x', 'const float *__restrict__ x').replace('if (i < n)', 'if (i < n && a != 0.0f)');
      assert(await api.inlineDiff.review(document, three, 'three changes'), 'a review of three changes');
      const tab = await until('the diff editor', () => proposalTabs()[0]);
      const proposed = await vscode.workspace.openTextDocument((tab.input as vscode.TabInputTextDiff).modified);
      const proposedEditor = await until('the proposal\'s side of the diff', () => vscode.window.visibleTextEditors.find((e) => e.document === proposed));
      const changes = asideChanges(SAXPY, three);
      assertEqual(changes.length, 3, 'three changes');
      const [first, second, third] = changes as [AsideChange, AsideChange, AsideChange];
      proposedEditor.selection = new vscode.Selection(second.proposedLines.start, 0, second.proposedLines.start, 0);
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptHunk', proposed.uri), 'Accept the change at the cursor');
      const taken = SAXPY.slice(0, second.edit.start) + second.edit.text + SAXPY.slice(second.edit.end);
      assertEqual(document.getText(), taken, 'the file takes that change alone');
      proposedEditor.selection = new vscode.Selection(third.proposedLines.start, 0, third.proposedLines.start, 0);
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectHunk', proposed.uri), 'Reject the change at the cursor');
      await until('the proposal without the rejected change', () => proposed.getText() === withoutAsideChange(three, third));
      assertEqual(document.getText(), taken, 'Reject leaves the file as it was');
      assert(api.inlineDiff.isAside(document.uri), 'one change left to decide');
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
      await until('the diff to close', () => proposalTabs().length === 0);
      assertEqual(document.getText(), taken, 'the file keeps the change it took');
      await inEditor('undo', document);
      assertEqual(document.getText(), SAXPY, 'one undo: the file as it was');
      assertEqual(first.fileLines.start, 0, 'the first change, left alone, was the comment');
      await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
      await until('the proposal beside the file again', () => api.inlineDiff.isAside(document.uri));
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', document.uri), 'Accept All');
      assertEqual(document.getText(), finalCode, 'the file after Accept All');
      assert(!api.inlineDiff.hasReview(document.uri), 'the review ended');
      await until('the diff to close', () => proposalTabs().length === 0);
      await inEditor('undo', document);
      assertEqual(document.getText(), SAXPY, 'one undo');
    } finally {
      await files.update('autoSave', undefined, vscode.ConfigurationTarget.Workspace);
      await document.save();
    }
  });

  it('keeps the file\'s actions on a line of their own when a change starts at the top', async () => {
    await fresh();
    const untitled = await vscode.workspace.openTextDocument({ language: 'cuda-cpp', content: SAXPY });
    await vscode.window.showTextDocument(untitled);
    assert(await api.inlineDiff.review(untitled, `#define block_size_x 512\n${SAXPY}`, 'test proposal'), 'a review with a change at the top');
    const rows = lensRows(await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', untitled.uri));
    assertEqual(rows[0], ['$(check-all) Accept All (1)', '$(close-all) Reject All', '$(diff) Side by side'], 'line 1: the file\'s actions');
    assertEqual(rows[1], ['$(check) Accept', '$(close) Reject', '$(arrow-up) chosen values: block_size_x = 512'], 'line 2, below the new line: the change\'s');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', untitled.uri), 'Reject All');
    assertEqual(untitled.getText(), SAXPY, 'the document after Reject All');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  it('works in an untitled document, and in a CRLF file without a final newline beside another review', async () => {
    await fresh();
    const untitled = await vscode.workspace.openTextDocument({ language: 'cuda-cpp', content: SAXPY });
    await vscode.window.showTextDocument(untitled);
    assert(await api.inlineDiff.review(untitled, finalCode, 'test proposal'), 'a review in the untitled document');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', untitled.uri), 'Accept All');
    assertEqual(untitled.getText(), finalCode, 'the untitled document after Accept All');
    await inEditor('undo', untitled);
    assertEqual(untitled.getText(), SAXPY, 'after one undo');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');

    const crlfText = SAXPY.replace(/\n/g, '\r\n').replace(/\r\n$/, '');
    const crlfUri = workspaceUri('crlf.cu');
    writeFileSync(crlfUri.fsPath, crlfText);
    const crlf = await vscode.workspace.openTextDocument(crlfUri);
    assertEqual(crlf.eol, vscode.EndOfLine.CRLF, 'a CRLF document');
    await applyAgain();
    const saxpyPending = api.inlineDiff.pending(document.uri).length;
    await vscode.window.showTextDocument(crlf);
    assert(await api.inlineDiff.review(crlf, finalCode, 'test proposal'), 'a review in the CRLF document');
    assert(api.inlineDiff.hasReview(document.uri) && api.inlineDiff.hasReview(crlfUri), 'two reviews at once');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', crlfUri), 'Reject All in the CRLF file');
    assertEqual(crlf.getText(), crlfText, 'the CRLF document byte for byte');
    assert(await crlf.save(), 'saved');
    assertEqual(readFileSync(crlfUri.fsPath, 'utf8'), crlfText, 'the CRLF file on disk');
    assert(await api.inlineDiff.review(crlf, finalCode, 'test proposal'), 'the review again');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', crlfUri), 'Accept All in the CRLF file');
    assertEqual(crlf.getText(), finalCode.replace(/\n/g, '\r\n'), 'the proposal in CRLF');
    await inEditor('undo', crlf);
    assertEqual(crlf.getText(), crlfText, 'undo in the CRLF file');
    assertEqual(api.inlineDiff.pending(document.uri).length, saxpyPending, 'the other file\'s review is untouched');
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All in saxpy.cu');
    assertEqual(document.getText(), SAXPY, 'saxpy.cu');
    await document.save();
  });

  it('lists the session in the Tuning History tree', async () => {
    const sessions = await api.historyTree.getChildren();
    const node = sessions.find((n) => n.kind === 'session' && n.summary.id === sessionId);
    assert(node, 'a history item for the session');
    const item = api.historyTree.getTreeItem(node);
    assertEqual(item.label, 'saxpy', 'item label');
    assert(String(item.description).startsWith('1.67× · saxpy.cu · Fake GPU (test double) · '), `item description, got ${item.description}`);
    assert(String(item.contextValue).includes('hasCode'), 'the item offers "apply again"');
    const steps = await api.historyTree.getChildren(node);
    assertEqual(
      steps.map((s) => (s.kind === 'step' ? s.step.title : '')),
      ['Several elements per thread', 'Fused multiply-add', 'Tune the block size'],
      'step items',
    );
  });
});

/** A new session with the scripted autonomous session on a fresh server; returns its id and the server. */
async function startScripted(settings: Record<string, unknown> = {}): Promise<{ id: string; finished: Promise<void>; llm: ScriptedLlmServer }> {
  const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
  const script = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] };
  const llm = await startScriptedLlmServer(script.turns);
  await fresh();
  const config = vscode.workspace.getConfiguration('kernelTuner');
  await config.update('llm.baseUrl', `${llm.url}/v1`, vscode.ConfigurationTarget.Workspace);
  for (const [key, value] of Object.entries(settings)) await config.update(key, value, vscode.ConfigurationTarget.Workspace);
  await editorOnKernel();
  const before = api.lastSession()?.sessionId;
  await vscode.commands.executeCommand('kernelTuner.tuneKernel');
  const started = api.lastSession();
  assert(started && started.sessionId !== before, 'the command started a new session');
  return { id: started.sessionId, finished: started.finished, llm };
}

async function eventTypes(id: string): Promise<string[]> {
  return ((await api.sessions.snapshot(id))?.events ?? []).map((e) => e.type);
}

describe('controlling a session', () => {
  after(async () => {
    delete process.env.KERNEL_TUNER_TEST_DELAY_MS;
    await vscode.workspace.getConfiguration('kernelTuner').update('approvePlan', undefined, vscode.ConfigurationTarget.Workspace);
  });

  it('Cancel stops a running session: history "cancelled", the document untouched, no diff offered', async () => {
    // The fake backend is created in this process (the extension host): a slow timing leaves time to cancel.
    process.env.KERNEL_TUNER_TEST_DELAY_MS = '400';
    const { id, finished, llm } = await startScripted();
    try {
      await until('a running step', async () => (await eventTypes(id)).includes('step.started'), 30_000);
      await vscode.commands.executeCommand('kernelTuner.cancel');
      await finished;
      const entry = await api.history.get(id);
      assertEqual(entry?.status, 'cancelled', 'history status');
      assertEqual((await eventTypes(id)).at(-1), 'session.cancelled', 'the last event');
      assertEqual(document.getText(), SAXPY, 'the document');
      assert(!api.inlineDiff.hasReview(document.uri), 'no inline diff');
      assertEqual(api.sessions.isLive(id), false, 'the session is over');
    } finally {
      delete process.env.KERNEL_TUNER_TEST_DELAY_MS;
      await llm.close();
    }
  }, 90_000);

  it('times every configuration with the kernelTuner.iterations setting', async () => {
    const backends = (globalThis as { kernelTunerTestBackends?: FakeBackend[] }).kernelTunerTestBackends;
    assert(backends, 'the test backend module was loaded in this host');
    const { finished, llm } = await startScripted({ iterations: 7 });
    try {
      await finished;
      const asked = new Set(backends.at(-1)!.timedSeries().map((s) => s.iterations));
      // Besides the configurations' 7, the tuner times the reference kernel a few times for the launch time limit.
      assert(asked.has(7) && !asked.has(32), `timed launches asked for: ${JSON.stringify([...asked])}`);
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    } finally {
      await vscode.workspace.getConfiguration('kernelTuner').update('iterations', undefined, vscode.ConfigurationTarget.Workspace);
      await llm.close();
    }
  }, 90_000);

  it('with plan approval, the session waits for the plan and continues with the approved one', async () => {
    const { id, finished, llm } = await startScripted({ approvePlan: true });
    try {
      await until('the plan to wait for approval', async () => (await api.sessions.snapshot(id))?.events.some((e) => e.type === 'plan.awaiting_approval'), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assertEqual((await eventTypes(id)).at(-1), 'plan.awaiting_approval', 'nothing runs before the approval');
      const waiting = (await api.sessions.snapshot(id))!.events.find((e) => e.type === 'plan.awaiting_approval')!;
      assert(waiting.type === 'plan.awaiting_approval', 'the awaiting event');
      assert(
        api.sessions.approvePlan(id, waiting.steps.map((s) => ({ id: s.id, title: s.title, details: s.details }))),
        'the approval reached the session',
      );
      await finished;
      assertEqual(llm.mismatches, [], 'requests the script did not expect');
      assertEqual((await api.history.get(id))?.status, 'completed', 'history status');
      assert(api.inlineDiff.hasReview(document.uri), 'the tuned kernel is offered');
      assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
      assertEqual(document.getText(), SAXPY, 'the document');
    } finally {
      await llm.close();
    }
  }, 90_000);
});

/** The scripted autonomous session's turns from the one whose comment starts with `comment` on. */
function turnsFrom(comment: string): ScriptTurn[] {
  const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
  const turns = (JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'llm-scripts', 'autonomous-session.json'), 'utf8')) as { turns: ScriptTurn[] }).turns;
  return turns.slice(turns.findIndex((t) => t.comment?.startsWith(comment)));
}

describe('time travel', () => {
  it('starts a branch from step 3 as it was: the history lists it under its session, and each chart draws the other', async () => {
    await fresh();
    const llm = await startScriptedLlmServer(turnsFrom('step 3'));
    try {
      await vscode.workspace.getConfiguration('kernelTuner').update('llm.baseUrl', `${llm.url}/v1`, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('kernelTuner.history.branch', sessionId, '3', 'as-it-was');
      const started = api.lastSession();
      assert(started && started.sessionId !== sessionId, 'the command started a new session');
      await started.finished;
      assertEqual(llm.mismatches, [], 'requests the script did not expect');
      assertEqual(llm.remaining(), 0, 'unused scripted answers');
      const branch = await api.history.get(started.sessionId);
      assert(branch, 'the branch is in the history');
      assertEqual(branch.status, 'completed', 'branch status');
      assertEqual([branch.parent?.id, branch.parent?.stepId, branch.parent?.stepTitle], [sessionId, '3', 'Tune the block size'], 'where it branched off');
      assertEqual(branch.llmExchanges?.length, 3, 'the model exchanges of step 3 and the replan');
      assertEqual(branch.steps.map((s) => s.status), ['rejected', 'rejected', 'accepted'], 'the steps it inherited and its own');

      const roots = await api.historyTree.getChildren();
      assert(!roots.some((n) => n.kind === 'session' && n.summary.id === branch.id), 'a branch is not at the top of the tree');
      const parentNode = roots.find((n) => n.kind === 'session' && n.summary.id === sessionId);
      assert(parentNode, 'the session it branched from');
      const children = await api.historyTree.getChildren(parentNode);
      assert(children.some((n) => n.kind === 'session' && n.summary.id === branch.id), 'the branch under its session');
      assert(String(api.historyTree.getTreeItem(parentNode).contextValue).includes('replayable'), 'the session offers a replay');

      const related = await until('the parent in the branch\'s chart', () => api.panels.relatedSent(branch.id)?.find((r) => r.sessionId === sessionId));
      assertEqual(related.timeline.map((p) => p.label), ['baseline', 'Tune the block size'], 'the parent\'s series');
      await vscode.commands.executeCommand('kernelTuner.history.open', sessionId);
      await until('the branch in its parent\'s chart', () => api.panels.relatedSent(sessionId)?.some((r) => r.sessionId === branch.id));
      if (api.inlineDiff.hasReview(document.uri)) await vscode.commands.executeCommand('kernelTuner.rejectAll', document.uri);
      assertEqual(document.getText(), SAXPY, 'the document');
    } finally {
      await llm.close();
    }
  }, 90_000);
});

describe('Tune parameters: the tuner alone', () => {
  let params: vscode.TextDocument;
  let PARAMS: string;
  let tunedId: string;
  let tunedCode: string;

  before(async () => {
    const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
    PARAMS = readFileSync(join(root, 'test', 'extension', 'workspace', 'params.cu'), 'utf8');
    params = await vscode.workspace.openTextDocument(workspaceUri('params.cu'));
    await vscode.window.showTextDocument(params, { preview: false });
  });

  it('shows a "Tune parameters" lens beside "Tune this kernel" where a spec beside the file names the kernel', async () => {
    const lenses = await until('the Tune parameters lens', async () => {
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', params.uri);
      return found.some((l) => l.command?.command === 'kernelTuner.tuneParameters') ? found : undefined;
    });
    const lens = lenses.find((l) => l.command?.command === 'kernelTuner.tuneParameters')!;
    assertEqual(lens.command!.title, '$(settings) Tune parameters', 'lens title');
    assertEqual((lens.command!.arguments![0] as { specPath: string }).specPath, workspaceUri('params.tune.yaml').fsPath, 'the spec it found');
    assert(lenses.some((l) => l.command?.command === 'kernelTuner.tuneKernel'), 'the "Tune this kernel" lens beside it');
    const saxpyLenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
    assert(!saxpyLenses.some((l) => l.command?.command === 'kernelTuner.tuneParameters'), 'no such lens where no spec names the kernel');
  });

  it('runs the search from the lens with no model (its pre-flight does not apply), as a session of one step', async () => {
    const config = vscode.workspace.getConfiguration('kernelTuner');
    // A model no server answers: an LLM session would stop at its pre-flight check.
    await config.update('llm.baseUrl', 'http://127.0.0.1:9/v1', vscode.ConfigurationTarget.Workspace);
    const backends = (globalThis as { kernelTunerTestBackends?: FakeBackend[] }).kernelTunerTestBackends;
    assert(backends, 'the test backend module was loaded in this host');
    const lens = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', params.uri)).find((l) => l.command?.command === 'kernelTuner.tuneParameters')!;
    await vscode.commands.executeCommand(lens.command!.command, ...lens.command!.arguments!);
    const started = api.lastSession();
    assert(started && started.sessionId !== sessionId, 'the command started a session');
    tunedId = started.sessionId;
    await started.finished;
    const entry = await api.history.get(tunedId);
    const report = entry?.report;
    assert(entry && isSessionReport(report), 'the session is in the history, with its report');
    assertEqual(entry.status, 'completed', 'history status');
    assertEqual(entry.steps.map((s) => [s.title, s.status]), [['Tune parameters', 'accepted']], 'one step');
    assertEqual([report.header.strategy, entry.run, entry.llmExchanges?.length ?? 0], ['tuner', undefined, 0], 'no model, no settings of one');
    assert(entry.speedup !== undefined && Math.abs(entry.speedup - 0.75 / 0.6) < 1e-6, `256 → 512 threads: 0.75/0.6 faster, got ${entry.speedup}`);
    const types = report.events.map((e) => e.type);
    assertEqual(types.filter((t) => t === 'configs.evaluated').length, 3, 'every configuration in the log');
    for (const type of ['session.started', 'tests.ready', 'profile', 'baseline', 'step.accepted', 'session.finished'] as const) assert(types.includes(type), `the log has ${type}`);
    assert(!types.some((t) => t.startsWith('llm.')), 'no model was asked');
    const log = backends.at(-1)!.log;
    assert(log.findIndex((e) => e.kind === 'profile') > log.findLastIndex((e) => e.kind === 'time'), 'the best configuration was profiled after every timing');
    assert(api.panels.hasPanel(tunedId), 'the session has a panel');
    await until('the panel to draw every event', () => api.panels.renderedEvents(tunedId) === report.events.length, 30_000);
    tunedCode = entry.finalCode!;
    assert(tunedCode.includes('#define block_size_x 512') && !tunedCode.includes('#define block_size_x 256'), 'the final file holds the best value in its own #define');
    assert(tunedCode.includes('saxpy_params<<<(n + 511) / 512, 512>>>(x, y, a, n);'), 'the host launch rewritten for it');
    await config.update('llm.baseUrl', undefined, vscode.ConfigurationTarget.Workspace);
  }, 90_000);

  it('proposes the best values in the file; Accept writes them', async () => {
    const pending = await until('the proposal in params.cu', () => api.inlineDiff.pending(params.uri).length > 0 && api.inlineDiff.pending(params.uri));
    assertEqual(pending.map((p) => p.kind), ['values', 'code'], 'the chosen value, and the launch');
    assertEqual(pending[0]!.label, 'chosen values: block_size_x = 512', 'the chosen value');
    assertEqual([pending[1]!.oldText.trim(), pending[1]!.newText.trim()], ['saxpy_params<<<(n + 255) / 256, 256>>>(x, y, a, n);', 'saxpy_params<<<(n + 511) / 512, 512>>>(x, y, a, n);'], 'the launch');
    assertEqual(api.inlineDiff.textWithoutProposal(params), PARAMS, 'the document without the proposal');
    await vscode.window.showTextDocument(params);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', params.uri), 'Accept All applied');
    assertEqual(params.getText(), tunedCode, 'the document after Accept All');
    await params.save();
    assertEqual(readFileSync(params.uri.fsPath, 'utf8'), tunedCode, 'the file on disk');
    await vscode.commands.executeCommand('undo');
    assertEqual(params.getText(), PARAMS, 'the document after an undo');
    await params.save();
  });

  it('Reject leaves the file byte for byte', async () => {
    await vscode.commands.executeCommand('kernelTuner.history.applyAgain', tunedId);
    await until('the proposal again', () => api.inlineDiff.pending(params.uri).length > 0);
    assert(params.getText() !== PARAMS, 'the proposal is in the document');
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', params.uri), 'Reject All');
    assertEqual(params.getText(), PARAMS, 'the document after Reject All');
    await params.save();
    assertEqual(readFileSync(params.uri.fsPath, 'utf8'), PARAMS, 'the file on disk, byte for byte');
  });
});

const RECORDED_LONG_AGO = '2000-01-01T00:00:00.000Z';

describe('an evolutionary session in the history', () => {
  it('keeps its population: its children as steps (kept, accepted, rejected), and its report opens and draws every event', async () => {
    api = await extensionApi();
    const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
    // Recorded on the fake GPU with scripted answers (its header says so): test/unit/evolution-recording.test.ts.
    const entry = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')) as HistoryEntry;
    const file = workspaceUri('evolution', 'saxpy.cu');
    await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(entry.originalCode));
    // Dated before any session this window tunes: the suites find those as the newest saxpy sessions.
    await api.history.save({ ...entry, filePath: 'evolution/saxpy.cu', fileUri: file.toString(), createdAt: RECORDED_LONG_AGO });
    const sessions = await until('the session in the history tree', async () => {
      const nodes = await api.historyTree.getChildren();
      return nodes.some((n) => n.kind === 'session' && n.summary.id === entry.id) && nodes;
    });
    const node = sessions.find((n) => n.kind === 'session' && n.summary.id === entry.id)!;
    const steps = await api.historyTree.getChildren(node);
    assertEqual(
      steps.map((s) => (s.kind === 'step' ? `${s.step.stepId} ${s.step.status}` : '')),
      entry.steps.map((s) => `${s.stepId} ${s.status}`),
      'a step per child, as the session ended',
    );
    const statuses = new Set(entry.steps.map((s) => s.status));
    assert(statuses.has('kept') && statuses.has('accepted') && statuses.has('rejected'), `kept, accepted and rejected children, got ${[...statuses].join(', ')}`);
    const kept = steps.find((s) => s.kind === 'step' && s.step.status === 'kept')!;
    assertEqual((api.historyTree.getTreeItem(kept).iconPath as vscode.ThemeIcon).id, 'type-hierarchy-sub', 'the icon of a child kept in the population');
    await vscode.commands.executeCommand('kernelTuner.history.open', entry.id);
    const events = (entry.report as { events: unknown[] }).events.length;
    await until(`the panel to draw all ${events} events`, () => api.panels.renderedEvents(entry.id) === events, 30_000);
    api.panels.close(entry.id);
  }, 60_000);
});

describe('Getting started: the walkthrough\'s buttons', () => {
  const noGpu = () => process.env.KERNEL_TUNER_TEST_NO_GPU!;
  after(() => rmSync(noGpu(), { force: true }));

  it('every step has a button, each a command of the extension', async () => {
    const json = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as { contributes: { walkthroughs: { id: string; steps: { id: string; description: string }[] }[] } };
    const [walkthrough] = json.contributes.walkthroughs;
    assertEqual(walkthrough!.steps.map((s) => s.id), ['model', 'gpu', 'example', 'replay'], 'the steps');
    const buttons = walkthrough!.steps.map((s) => [...s.description.matchAll(/\]\(command:([\w.]+)\)/g)].map((m) => m[1]!));
    assertEqual(buttons, [['kernelTuner.chooseModel', 'kernelTuner.checkModel'], ['kernelTuner.checkGpu'], ['kernelTuner.openExample'], ['kernelTuner.replayExample']], 'the buttons');
    const commands = await vscode.commands.getCommands(true);
    for (const id of buttons.flat()) assert(commands.includes(id), `${id} is registered`);
  });

  it('Choose the model sets the provider, the server and the model in the user\'s settings, then checks them', async () => {
    const llm = await startScriptedLlmServer([]);
    const config = vscode.workspace.getConfiguration('kernelTuner');
    try {
      const checked = await vscode.commands.executeCommand<boolean>('kernelTuner.chooseModel', { provider: 'openai', model: 'scripted-model', baseUrl: `${llm.url}/v1` });
      assert(checked, 'the model answers');
      assertEqual(config.inspect('llm.baseUrl')?.globalValue, `${llm.url}/v1`, 'the server, in the user\'s settings');
      assertEqual(config.inspect('llm.model')?.globalValue, 'scripted-model', 'the model');
      assert(llm.requests.some((r) => r.method === 'GET'), 'the server was asked');
    } finally {
      for (const key of ['llm.provider', 'llm.baseUrl', 'llm.model']) await config.update(key, undefined, vscode.ConfigurationTarget.Global);
      await llm.close();
    }
  });

  it('Check the GPU opens it and names it; without a GPU it says so and names none', async () => {
    const device = await vscode.commands.executeCommand<{ name: string } | undefined>('kernelTuner.checkGpu');
    assertEqual(device?.name, 'Fake GPU (test double)', 'the GPU');
    writeFileSync(noGpu(), '');
    assertEqual(await vscode.commands.executeCommand('kernelTuner.checkGpu'), undefined, 'no GPU');
    rmSync(noGpu());
  });

  it('Open the example copies it into the workspace and opens the kernel, both Tune lenses above it', async () => {
    const uri = await vscode.commands.executeCommand<vscode.Uri>('kernelTuner.openExample');
    assertEqual(uri.fsPath, workspaceUri('kernel-tuner-example', 'matmul_naive.cu').fsPath, 'the kernel in the workspace');
    for (const file of ['tune.yaml', 'cache.json']) assert(existsSync(workspaceUri('kernel-tuner-example', file).fsPath), `${file} beside it`);
    assertEqual(vscode.window.activeTextEditor?.document.uri.fsPath, uri.fsPath, 'the kernel is open');
    const titles = await until('the lenses', async () => {
      const found = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)).map((l) => l.command?.title ?? '');
      return found.length >= 2 && found;
    });
    assertEqual(titles, ['$(rocket) Tune this kernel', '$(settings) Tune parameters'], 'the lenses');
  });

  it('without a GPU, Replay the recorded search runs the example\'s search from its cache: the panel, the history, the proposal', async () => {
    writeFileSync(noGpu(), '');
    const before = api.lastSession()?.sessionId;
    await vscode.commands.executeCommand('kernelTuner.replayExample');
    const started = api.lastSession();
    assert(started && started.sessionId !== before, 'a session started');
    await started.finished;
    const entry = await api.history.get(started.sessionId);
    assertEqual([entry?.status, entry?.device.name], ['completed', 'NVIDIA H200 (replayed from cache.json, no GPU)'], 'the session');
    assert(api.panels.hasPanel(started.sessionId), 'its panel');
    const example = workspaceUri('kernel-tuner-example', 'matmul_naive.cu');
    const pending = await until('the proposal in the example', () => api.inlineDiff.pending(example).length > 0 && api.inlineDiff.pending(example));
    const values = pending.filter((p) => p.kind === 'values').map((p) => p.label).join('; ');
    assert(values.includes('block_size_x = 64') && values.includes('block_size_y = 2'), `the fastest block the H200 recorded, got ${values}`);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', example), 'Reject All');
    await (await vscode.workspace.openTextDocument(example)).save();
  }, 90_000);
});

describe('the window closes with reports and a proposal open', () => {
  it('leaves the session\'s proposal open, unsaved, in saxpy.cu, and says which reports are open (for the reload suite)', async () => {
    await fresh();
    const pending = await applyAgain();
    assert(pending.length > 0 && document.isDirty, 'an unsaved proposal');
    assertEqual(readFileSync(document.uri.fsPath, 'utf8'), SAXPY, 'the file on disk');
    // Hot exit brings back what VS Code backed up (a second after the last change): the window closes once the
    // proposal is in a backup (User/Backups in a browser's profile, Backups beside User on the desktop).
    const profile = join(api.history.root, '..', '..', '..');
    const text = document.getText();
    await until('a backup of saxpy.cu with the proposal in it', () => [join(profile, 'Backups'), join(profile, '..', 'Backups')].some((dir) => filesUnder(dir).some((f) => readFileSync(f, 'utf8').includes(text))), 30_000);
    const open = (await api.history.list()).sessions.filter((s) => api.panels.hasPanel(s.id)).map((s) => s.id);
    assert(open.length >= 2, `several reports open, got ${JSON.stringify(open)}`);
    writeFileSync(reportsOpenAtCloseFile(), JSON.stringify(open));
  });
});

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (first window)');
}
