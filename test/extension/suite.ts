/**
 * Extension tests, first window: the real extension in a real VS Code (code-server here, @vscode/test-electron where
 * VS Code can be downloaded) with the scripted LLM server (OpenAI wire format, over HTTP) and the fake GPU backend
 * selected through the extension's test hook. A whole session runs, the panel receives it, the final kernel is
 * reviewed inline (Accept + undo, Reject, one hunk), and the history keeps it. suite-reload.ts checks, in a new window
 * on the same profile, that the history survived.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { KernelTunerApi } from '../../src/extension/extension';
import { isSessionReport } from '../../src/extension/report';
import { startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';
import { after, before, describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, EXTENSION_ID, extensionApi, until, workspaceKernel, workspaceUri } from './support';

let api: KernelTunerApi;
let server: ScriptedLlmServer;
let document: vscode.TextDocument;
let sessionId: string;
/** The file as it should read after Accept All. */
let finalCode: string;
let SAXPY: string;

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

  it('shows a "Tune kernel" lens above the kernel', async () => {
    const lenses = await until('the kernel lens', async () => {
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
      return found.some((l) => l.command?.title.includes('Tune kernel')) ? found : undefined;
    });
    const lens = lenses.find((l) => l.command?.title.includes('Tune kernel'))!;
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

  it('offers the final kernel inline; Accept All is one edit and undo restores the original', async () => {
    const pending = await until('the inline diff', () => api.inlineDiff.pending(document.uri).length > 0 && api.inlineDiff.pending(document.uri));
    assertEqual(document.getText(), SAXPY, 'the document keeps its text while changes are pending');
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
    const titles = lenses.map((l) => l.command?.title ?? '');
    assert(titles.some((t) => t.includes('Accept All')) && titles.some((t) => t.includes('Reject All')), 'Accept All / Reject All lenses');
    assertEqual(titles.filter((t) => t.includes('$(check) Accept (')).length, pending.length, 'one Accept lens per hunk');

    await vscode.window.showTextDocument(document);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptAll', document.uri), 'Accept All applied');
    assertEqual(document.getText(), finalCode, 'the document after Accept All');
    assertEqual(api.inlineDiff.pending(document.uri).length, 0, 'nothing left pending');
    await vscode.commands.executeCommand('undo');
    assertEqual(document.getText(), SAXPY, 'the document after one undo');
  });

  it('Reject All leaves the document byte-identical', async () => {
    await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
    await until('the inline diff again', () => api.inlineDiff.pending(document.uri).length > 0);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.openSideBySide', document.uri), 'Open side-by-side diff ran');
    const diffTab = await until('the diff editor', () =>
      vscode.window.tabGroups.all.flatMap((g) => g.tabs).find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === 'kernel-tuner-proposal'),
    );
    const input = diffTab.input as vscode.TabInputTextDiff;
    assertEqual(input.original.toString(), document.uri.toString(), 'the left side is the document');
    assertEqual((await vscode.workspace.openTextDocument(input.modified)).getText(), finalCode, 'the right side is the proposal');
    await vscode.window.tabGroups.close(diffTab);
    const versionBefore = document.version;
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All ran');
    assertEqual(document.getText(), SAXPY, 'the document after Reject All');
    assertEqual(document.version, versionBefore, 'no edit at all');
    assert(!api.inlineDiff.hasReview(document.uri), 'the review ended');
  });

  it('accepts a single hunk under the cursor and keeps the others pending', async () => {
    await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
    const pending = await until('the inline diff again', () => api.inlineDiff.pending(document.uri).length > 0 && api.inlineDiff.pending(document.uri));
    const editor = await vscode.window.showTextDocument(document);
    const last = pending.at(-1)!;
    editor.selection = new vscode.Selection(last.anchorLine, 0, last.anchorLine, 0);
    assert(await vscode.commands.executeCommand<boolean>('kernelTuner.acceptHunk'), 'Accept (hunk under the cursor) applied');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length - 1, 'the other hunks stay pending');
    const expected = SAXPY.split('\n');
    expected.splice(last.hunk.originalStart, last.hunk.originalLines.length, ...last.hunk.proposedLines);
    assertEqual(document.getText(), expected.join('\n'), 'only that hunk changed');
    if (pending.length > 1) assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All of the rest');
    assert(!api.inlineDiff.hasReview(document.uri), 'the review ended');
    await vscode.commands.executeCommand('undo');
    assertEqual(document.getText(), SAXPY, 'undo restores the original');
    await document.save();
  });

  it('keeps the pending changes anchored while the user edits elsewhere, and drops one whose lines are edited', async () => {
    await vscode.commands.executeCommand('kernelTuner.history.applyAgain', sessionId);
    const pending = await until('the inline diff again', () => api.inlineDiff.pending(document.uri).length > 0 && api.inlineDiff.pending(document.uri));
    const editor = await vscode.window.showTextDocument(document);
    // An edit after the last hunk: every hunk stays, at the same place.
    const end = document.lineAt(document.lineCount - 1).range.end;
    assert(await editor.edit((b) => b.insert(end, '// host code\n')), 'edit at the end');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.anchorLine), pending.map((p) => p.anchorLine), 'anchors after an edit below');
    // An edit above every hunk moves them down by one line.
    assert(await editor.edit((b) => b.insert(new vscode.Position(0, 0), '// top\n')), 'edit at the top');
    assertEqual(api.inlineDiff.pending(document.uri).map((p) => p.anchorLine), pending.map((p) => p.anchorLine + 1), 'anchors after an edit above');
    // An edit inside the last hunk withdraws that hunk only (with a single hunk, the review ends).
    const last = api.inlineDiff.pending(document.uri).at(-1)!;
    assert(await editor.edit((b) => b.insert(new vscode.Position(last.removedLines.startLine, 0), ' ')), 'edit inside a hunk');
    assertEqual(api.inlineDiff.pending(document.uri).length, pending.length - 1, 'the edited hunk is withdrawn');
    if (pending.length > 1) assert(await vscode.commands.executeCommand<boolean>('kernelTuner.rejectAll', document.uri), 'Reject All');
    assert(!api.inlineDiff.hasReview(document.uri), 'the review ended');
    for (let i = 0; i < 3; i++) await vscode.commands.executeCommand('undo');
    assertEqual(document.getText(), SAXPY, 'three undos restore the original');
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

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (first window)');
}
