/**
 * Which kernels a CUDA document holds, parsed once per document version: the "Tune this kernel" CodeLens above each
 * `__global__` definition, "Tune parameters" beside it where a tuning spec in the file's folder names the kernel (both
 * only in a trusted workspace: tuning runs the workspace's code), and the `kernelTuner.editorHasKernels` context key
 * behind the editor's menu items.
 *
 * The menu items follow the document, not the cursor: a right-click moves the cursor to the click, but VS Code builds
 * the menu before a key computed from that move could arrive, so a key that followed the cursor would offer them one
 * right-click late. The command finds the kernel at the cursor (the click) when it runs.
 */
import * as vscode from 'vscode';
import { parseKernels } from '../tuner/source/kernel-parser';
import { kernelAt, ParseError, type KernelSignature } from '../tuner/source/kernel-signature';
import { specsBeside, specsForKernel } from '../tuner/spec/spec-files';

export interface ParsedKernels {
  kernels: KernelSignature[];
  /** Set when part of the file could not be parsed; `kernels` still holds those whose signature was intact. */
  error?: ParseError;
}

/** Arguments of the CodeLens command: which kernel of which document. */
export interface KernelTarget {
  uri: vscode.Uri;
  kernelName: string;
  line: number;
}

/** Arguments of the "Tune parameters" lens: the kernel and its spec, when exactly one names it (else the command asks). */
export interface ParametersTarget extends KernelTarget {
  specPath?: string;
  /** A Kernel Tuner cache of a recorded run of the spec's search, replayed instead of running on a GPU. */
  replay?: string;
}

export function isCudaDocument(doc: vscode.TextDocument): boolean {
  return doc.languageId === 'cuda-cpp' || /\.cuh?$/i.test(doc.uri.path);
}

const HAS_KERNELS_CONTEXT = 'kernelTuner.editorHasKernels';

export class KernelIndex implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly cache = new Map<string, { version: number; result: Promise<ParsedKernels> }>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  private contextTimer: ReturnType<typeof setTimeout> | undefined;

  /** @param underReview documents with a proposal open: no "Tune this kernel" lens there until it is decided. */
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly underReview: (uri: vscode.Uri) => boolean,
  ) {
    this.disposables.push(
      this.changed,
      vscode.languages.registerCodeLensProvider([{ language: 'cuda-cpp' }, { pattern: '**/*.{cu,cuh}' }], this),
      vscode.window.onDidChangeActiveTextEditor((editor) => this.scheduleContext(editor)),
      vscode.workspace.onDidCloseTextDocument((doc) => this.cache.delete(doc.uri.toString())),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (isCudaDocument(e.document) && e.document === vscode.window.activeTextEditor?.document) this.scheduleContext(vscode.window.activeTextEditor);
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refresh()),
    );
    this.scheduleContext(vscode.window.activeTextEditor);
  }

  /** The kernels of the document at its current version. Never rejects: a parse failure is in `error`. */
  kernels(doc: vscode.TextDocument): Promise<ParsedKernels> {
    const key = doc.uri.toString();
    const cached = this.cache.get(key);
    if (cached && cached.version === doc.version) return cached.result;
    const result = parseKernels(doc.getText(), doc.uri.fsPath).then(
      (kernels): ParsedKernels => ({ kernels }),
      (error: unknown): ParsedKernels => {
        if (error instanceof ParseError) return { kernels: error.kernels, error };
        this.log.error(`could not parse ${doc.uri.fsPath}: ${error instanceof Error ? error.message : String(error)}`);
        return { kernels: [] };
      },
    );
    this.cache.set(key, { version: doc.version, result });
    return result;
  }

  async kernelAtCursor(editor: vscode.TextEditor): Promise<KernelSignature | null> {
    const { kernels } = await this.kernels(editor.document);
    const pos = editor.selection.active;
    return kernelAt(kernels, pos.line, pos.character);
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!vscode.workspace.isTrusted || !isCudaDocument(doc) || this.underReview(doc.uri)) return [];
    const { kernels } = await this.kernels(doc);
    const specs = doc.uri.scheme === 'file' ? specsBeside(doc.uri.fsPath) : [];
    return kernels.flatMap((k) => {
      const target: KernelTarget = { uri: doc.uri, kernelName: k.name, line: k.nameRange.startLine };
      const range = new vscode.Range(k.range.startLine, 0, k.range.startLine, 0);
      const lenses = [
        new vscode.CodeLens(range, {
          title: '$(rocket) Tune this kernel',
          tooltip: `Tune ${k.qualifiedName} with the LLM and measure every configuration on the GPU`,
          command: 'kernelTuner.tuneKernel',
          arguments: [target],
        }),
      ];
      const own = specsForKernel(specs, k, kernels.length);
      if (own.length > 0) {
        const spec = own.length === 1 ? own[0]! : undefined;
        const parameters: ParametersTarget = { ...target, ...(spec && { specPath: spec.path }) };
        lenses.push(
          new vscode.CodeLens(range, {
            title: spec ? '$(settings) Tune parameters' : '$(settings) Tune parameters…',
            tooltip: spec
              ? `Tune ${spec.parameters.join(', ')} of ${k.qualifiedName} as ${vscode.workspace.asRelativePath(spec.path)} says, with the tuner alone (no model)`
              : `Tune the parameters of ${k.qualifiedName} with the tuner alone (no model): ${own.length} specs name it, pick one`,
            command: 'kernelTuner.tuneParameters',
            arguments: [parameters],
          }),
        );
      }
      return lenses;
    });
  }

  /** Asks VS Code for the lenses again (a review opened or ended). */
  refresh(): void {
    this.changed.fire();
  }

  dispose(): void {
    if (this.contextTimer) clearTimeout(this.contextTimer);
    vscode.Disposable.from(...this.disposables).dispose();
  }

  /** After a burst of typing, once. */
  private scheduleContext(editor: vscode.TextEditor | undefined): void {
    if (this.contextTimer) clearTimeout(this.contextTimer);
    this.contextTimer = setTimeout(() => void this.updateContext(editor), 75);
  }

  private async updateContext(editor: vscode.TextEditor | undefined): Promise<void> {
    const hasKernels = editor !== undefined && isCudaDocument(editor.document) && (await this.kernels(editor.document)).kernels.length > 0;
    await vscode.commands.executeCommand('setContext', HAS_KERNELS_CONTEXT, hasKernels);
  }
}
