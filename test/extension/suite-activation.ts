/**
 * Extension tests in a workspace without CUDA (a fourth window, on the first window's VS Code): the extension is not
 * activated by VS Code's start, as an extension with `onStartupFinished` would be; a CUDA file opened activates it.
 */
import { writeFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { describe, it, runAsExtensionTests } from './runner';
import { assert, assertEqual, EXTENSION_ID, until, workspaceUri } from './support';

/** A built-in extension that activates `onStartupFinished`: once it is active, VS Code's start has finished. */
const STARTUP_EXTENSION = 'vscode.merge-conflict';
/** How long an extension activated at startup would take beyond the first one, at most (ours activates in well under it). */
const ACTIVATION_MARGIN_MS = 5_000;

describe('in a workspace without CUDA', () => {
  it('the start of VS Code does not activate the extension', async () => {
    assertEqual((await vscode.workspace.findFiles('**/*.{cu,cuh}')).length, 0, 'CUDA files in the workspace');
    await until('VS Code\'s start to finish', () => vscode.extensions.getExtension(STARTUP_EXTENSION)?.isActive, 60_000);
    await new Promise((resolve) => setTimeout(resolve, ACTIVATION_MARGIN_MS));
    assertEqual(vscode.extensions.getExtension(EXTENSION_ID)?.isActive, false, 'the extension is active');
  });

  it('a CUDA file opened activates it, and its kernel has the Tune lens', async () => {
    const file = workspaceUri('scale.cu');
    writeFileSync(file.fsPath, '__global__ void scale(float *x, float a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n');
    await vscode.window.showTextDocument(file);
    await until('activation by the CUDA file', () => vscode.extensions.getExtension(EXTENSION_ID)?.isActive);
    const lenses = await until('the lens', async () => {
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', file);
      return found.length > 0 && found;
    });
    assert(lenses.some((l) => l.command?.command === 'kernelTuner.tuneKernel'), 'the Tune this kernel lens');
  });
});

export function run(): Promise<void> {
  return runAsExtensionTests('extension tests (a workspace without CUDA)');
}
