/** Shared by the extension test suites: the extension's API, the workspace's kernel, waiting for conditions. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { KernelTunerApi } from '../../src/extension/extension';

export const EXTENSION_ID = 'llm-kernel-tuner.llm-kernel-tuner';

/**
 * The workspace's kernel file (test/extension/workspace/saxpy.cu, copied into the test workspace): the kernel of the
 * scripted autonomous session (test/fixtures/llm-scripts/autonomous-session.json) below a comment and an include.
 */
export function workspaceKernel(): string {
  const root = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
  return readFileSync(join(root, 'test', 'extension', 'workspace', 'saxpy.cu'), 'utf8');
}

export function workspaceUri(...path: string[]): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error('the extension tests need a workspace folder');
  return vscode.Uri.joinPath(folder.uri, ...path);
}

/** Where the first window writes which sessions' reports it leaves open (beside the workspace, for the reload suite). */
export function reportsOpenAtCloseFile(): string {
  return join(workspaceUri().fsPath, '..', 'reports-open-at-close.json');
}

export async function extensionApi(): Promise<KernelTunerApi> {
  const extension = vscode.extensions.getExtension<KernelTunerApi>(EXTENSION_ID);
  if (!extension) throw new Error(`extension ${EXTENSION_ID} is not installed in this host`);
  return extension.activate();
}

export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Undo or Redo as a user gives it: in the document's editor, with the keyboard focus there. Given again (at most
 * twice) when the document did not change: a command given while the focus is still on its way from elsewhere (a
 * panel, a closing diff editor) goes there instead.
 */
export async function inEditor(command: 'undo' | 'redo', document: vscode.TextDocument): Promise<void> {
  const version = document.version;
  for (let attempt = 1; attempt <= 3; attempt++) {
    await vscode.window.showTextDocument(document, { preserveFocus: false, preview: false });
    await vscode.commands.executeCommand(command);
    if (await until(`${command} in ${document.uri.path}`, () => document.version !== version, 2_000).then(() => true, () => false)) return;
  }
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

export function assertEqual<T>(actual: T, expected: T, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}
