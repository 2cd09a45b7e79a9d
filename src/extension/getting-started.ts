/**
 * The commands behind the Getting Started walkthrough (package.json, contributes.walkthroughs): choose the model
 * provider (then "Check the model" runs), open the example kernel, and replay the example's recorded search where no
 * GPU is present. The checks of the model and of the GPU are the pre-flight's, in extension.ts.
 *
 * The example is examples/matmul_naive of this repository (shipped in the .vsix): the naive matrix multiply, its tuning
 * spec and the Kernel Tuner cache of its search recorded on an NVIDIA H200. It is copied into the workspace (never over
 * a copy already there, which the user may have changed), since tuning proposes its result in the file.
 */
import { constants } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { SECTION } from './config';
import type { ParametersTarget } from './kernels';

/** The example: its folder in the extension, where it goes in the workspace, its files, its kernel. */
export const EXAMPLE = { source: join('examples', 'matmul_naive'), folder: 'kernel-tuner-example', kernel: 'matmul_naive', file: 'matmul_naive.cu', spec: 'tune.yaml', cache: 'cache.json' } as const;

/** What "Choose the model" sets; asked of the user where left out (a caller, such as a test, may give all of it). */
export interface ModelChoice {
  provider: 'ollama' | 'openai';
  model: string;
  /** Empty: the provider's own server (Ollama on this machine, or OpenAI). */
  baseUrl: string;
}

interface ProviderItem extends vscode.QuickPickItem {
  provider: ModelChoice['provider'];
  /** Asks for the server's URL (an OpenAI-compatible server of one's own). */
  asksUrl: boolean;
  defaultModel: string;
}

const PROVIDERS: readonly ProviderItem[] = [
  { label: 'Ollama', detail: 'A local Ollama server (ollama serve, then ollama pull MODEL); no key.', provider: 'ollama', asksUrl: false, defaultModel: 'qwen2.5-coder:14b' },
  { label: 'OpenAI', detail: 'OpenAI\'s API; the key is kept in VS Code\'s secret storage.', provider: 'openai', asksUrl: false, defaultModel: 'gpt-4.1' },
  { label: 'OpenAI-compatible server', detail: 'vLLM, LM Studio, llama.cpp server, ... at a URL with /v1.', provider: 'openai', asksUrl: true, defaultModel: '' },
];

/**
 * Asks for the provider, the server's URL where it is one's own, and the model; writes them to the user's settings
 * (a workspace's settings would still win, as ever) and runs "Check the model". False when the user stopped.
 */
export async function chooseModel(given?: Partial<ModelChoice>): Promise<boolean> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const item = given?.provider
    ? PROVIDERS.find((p) => p.provider === given.provider)
    : await vscode.window.showQuickPick(PROVIDERS, { title: 'Kernel Tuner: which kind of LLM server rewrites your kernels?' });
  if (!item) return false;
  const baseUrl =
    given?.baseUrl ??
    (item.asksUrl
      ? await vscode.window.showInputBox({ title: 'The server\'s base URL, with /v1', value: 'http://127.0.0.1:8000/v1', validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? undefined : 'An http:// or https:// URL') })
      : '');
  if (baseUrl === undefined) return false;
  const current = config.get<string>('llm.model');
  const model = given?.model ?? (await vscode.window.showInputBox({ title: 'The model, as the server names it', value: item.defaultModel || current, validateInput: (v) => (v.trim() ? undefined : 'A model name') }));
  if (model === undefined) return false;
  await config.update('llm.provider', item.provider, vscode.ConfigurationTarget.Global);
  await config.update('llm.baseUrl', baseUrl.trim(), vscode.ConfigurationTarget.Global);
  await config.update('llm.model', model.trim(), vscode.ConfigurationTarget.Global);
  return (await vscode.commands.executeCommand<boolean>('kernelTuner.checkModel')) === true;
}

/** Where the example goes: the first workspace folder, else the extension's storage (a window without a folder). */
function exampleFolder(storage: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  return folder?.scheme === 'file' ? join(folder.fsPath, EXAMPLE.folder) : join(storage, EXAMPLE.folder);
}

/** Copies the example where it goes (keeping a copy already there) and opens its kernel. Returns the kernel's uri. */
export async function openExample(extensionPath: string, storage: string): Promise<vscode.Uri> {
  const dest = exampleFolder(storage);
  await mkdir(dest, { recursive: true });
  for (const name of [EXAMPLE.file, EXAMPLE.spec, EXAMPLE.cache]) {
    await copyFile(join(extensionPath, EXAMPLE.source, name), join(dest, name), constants.COPYFILE_EXCL).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
  }
  const uri = vscode.Uri.file(join(dest, EXAMPLE.file));
  await vscode.window.showTextDocument(uri, { preview: false });
  return uri;
}

/** Opens the example and replays its search from the cache recorded on a GPU: the panel fills as on a GPU, no GPU used. */
export async function replayExample(extensionPath: string, storage: string): Promise<void> {
  const uri = await openExample(extensionPath, storage);
  const dir = exampleFolder(storage);
  const target: ParametersTarget = { uri, kernelName: EXAMPLE.kernel, line: 0, specPath: join(dir, EXAMPLE.spec), replay: join(dir, EXAMPLE.cache) };
  await vscode.commands.executeCommand('kernelTuner.tuneParameters', target);
}
