/**
 * Extension tests in Restricted Mode: a third window on the same profile (the sessions of the first two in its
 * history), of a workspace that is not trusted and whose .vscode/settings.json points the model at a server of its own
 * and hands nvcc a -ccbin. The history and its reports are readable; tuning is refused before anything is compiled,
 * run or sent; the workspace's restricted settings are not read.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../support/scripted-llm-server';
import { after, before, describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, extensionApi, until, workspaceUri } from './support';

let llm: ScriptedLlmServer;

describe('in Restricted Mode (a workspace that is not trusted)', () => {
  before(async () => {
    // A server the workspace's settings name: it must never hear from the extension here.
    llm = await startScriptedLlmServer([]);
    mkdirSync(workspaceUri('.vscode').fsPath, { recursive: true });
    writeFileSync(
      workspaceUri('.vscode', 'settings.json').fsPath,
      JSON.stringify({ 'kernelTuner.llm.provider': 'openai', 'kernelTuner.llm.model': 'scripted-model', 'kernelTuner.llm.baseUrl': `${llm.url}/v1`, 'kernelTuner.compilerOptions': ['-ccbin', '/bin/sh'] }),
    );
    // Read once the setting that is not restricted has its workspace value.
    await until('the workspace settings read', () => vscode.workspace.getConfiguration('kernelTuner').inspect('llm.model')?.workspaceValue === 'scripted-model');
  });
  after(() => llm?.close());

  it('opens untrusted, the extension active', async () => {
    assertEqual(vscode.workspace.isTrusted, false, 'the workspace is trusted');
    await extensionApi();
  });

  it("does not read the workspace's settings that say where requests go or what the compiler is given", () => {
    const config = vscode.workspace.getConfiguration('kernelTuner');
    assertEqual(config.get('llm.baseUrl'), '', 'kernelTuner.llm.baseUrl in effect');
    assertEqual(config.get('llm.provider'), 'ollama', 'kernelTuner.llm.provider in effect');
    assertEqual(config.get('compilerOptions'), [], 'kernelTuner.compilerOptions in effect');
    // Settings that send nothing anywhere are read as always.
    assertEqual(config.get('llm.model'), 'scripted-model', 'kernelTuner.llm.model in effect');
  });

  it('lists the history and opens a session\'s report and its HTML report', async () => {
    const api = await extensionApi();
    const { sessions } = await api.history.list();
    const session = sessions.find((s) => s.kernelName === 'saxpy' && s.status === 'completed');
    assert(session, `a completed saxpy session in the history, got ${JSON.stringify(sessions.map((s) => [s.kernelName, s.status]))}`);
    const entry = await api.history.get(session.id);
    await vscode.commands.executeCommand('kernelTuner.history.open', session.id);
    await until('the report to draw its events', () => api.panels.renderedEvents(session.id) === (entry?.report as { events: unknown[] }).events.length, 30_000);
    await vscode.commands.executeCommand('kernelTuner.history.openHtmlReport', session.id);
    await until('the HTML report', () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('kernelTuner.htmlReport') && t.label === 'HTML report: saxpy'));
  });

  it('offers no Tune lens on a kernel (Tune parameters included)', async () => {
    const document = await vscode.workspace.openTextDocument(workspaceUri('params.cu'));
    await vscode.window.showTextDocument(document);
    await extensionApi();
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
    const tune = lenses.filter((l) => l.command?.command === 'kernelTuner.tuneKernel' || l.command?.command === 'kernelTuner.tuneParameters');
    assertEqual(tune.map((l) => l.command?.title), [], 'Tune lenses');
  });

  it('refuses to tune, replay or branch: nothing is compiled, run or sent', async () => {
    const api = await extensionApi();
    const { sessions } = await api.history.list();
    const replayable = sessions.find((s) => s.replayable && s.status === 'completed');
    assert(replayable, 'a session with recorded answers');
    const document = await vscode.workspace.openTextDocument(workspaceUri('saxpy.cu'));
    const editor = await vscode.window.showTextDocument(document);
    editor.selection = new vscode.Selection(4, 8, 4, 8);
    await vscode.commands.executeCommand('kernelTuner.tuneKernel');
    await vscode.commands.executeCommand('kernelTuner.history.replay', replayable.id);
    await vscode.commands.executeCommand('kernelTuner.history.branch', replayable.id, '3', 'as-it-was');
    assertEqual(api.lastSession(), undefined, 'a session started');
    assertEqual((await api.history.list()).sessions.length, sessions.length, 'sessions in the history');
    assertEqual(llm.requests.length, 0, 'requests to the server the workspace names');
    // The GPU is opened through the test backend module; it was never loaded.
    assertEqual((globalThis as { kernelTunerTestBackends?: unknown[] }).kernelTunerTestBackends, undefined, 'backends opened');
  });
});

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (Restricted Mode)');
}
