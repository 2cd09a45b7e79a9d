/**
 * Which kernels a CUDA document holds, parsed once per document version: the "Tune kernel" CodeLens above each
 * `__global__` definition, "Tune parameters" beside it where a tuning spec in the file's folder names the kernel, and
 * the `kernelTuner.cursorInKernel` context key behind the editor menu item.
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
}

export function isCudaDocument(doc: vscode.TextDocument): boolean {
  return doc.languageId === 'cuda-cpp' || /\.cuh?$/i.test(doc.uri.path);
}

const CURSOR_CONTEXT = 'kernelTuner.cursorInKernel';

export class KernelIndex implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly cache = new Map<string, { version: number; result: Promise<ParsedKernels> }>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  private cursorTimer: ReturnType<typeof setTimeout> | undefined;

  /** @param underReview documents with a proposal open: no "Tune kernel" lens there until it is decided. */
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly underReview: (uri: vscode.Uri) => boolean,
  ) {
    this.disposables.push(
      this.changed,
      vscode.languages.registerCodeLensProvider([{ language: 'cuda-cpp' }, { pattern: '**/*.{cu,cuh}' }], this),
      vscode.window.onDidChangeTextEditorSelection((e) => this.scheduleCursorCheck(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((editor) => this.scheduleCursorCheck(editor)),
      vscode.workspace.onDidCloseTextDocument((doc) => this.cache.delete(doc.uri.toString())),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (isCudaDocument(e.document) && e.document === vscode.window.activeTextEditor?.document) this.scheduleCursorCheck(vscode.window.activeTextEditor);
      }),
    );
    this.scheduleCursorCheck(vscode.window.activeTextEditor);
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
    if (!isCudaDocument(doc) || this.underReview(doc.uri)) return [];
    const { kernels } = await this.kernels(doc);
    const specs = doc.uri.scheme === 'file' ? specsBeside(doc.uri.fsPath) : [];
    return kernels.flatMap((k) => {
      const target: KernelTarget = { uri: doc.uri, kernelName: k.name, line: k.nameRange.startLine };
      const range = new vscode.Range(k.range.startLine, 0, k.range.startLine, 0);
      const lenses = [
        new vscode.CodeLens(range, {
          title: '$(rocket) Tune kernel',
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
    if (this.cursorTimer) clearTimeout(this.cursorTimer);
    vscode.Disposable.from(...this.disposables).dispose();
  }

  private scheduleCursorCheck(editor: vscode.TextEditor | undefined): void {
    if (this.cursorTimer) clearTimeout(this.cursorTimer);
    this.cursorTimer = setTimeout(() => void this.updateCursorContext(editor), 75);
  }

  private async updateCursorContext(editor: vscode.TextEditor | undefined): Promise<void> {
    const inKernel = editor !== undefined && isCudaDocument(editor.document) && (await this.kernelAtCursor(editor)) !== null;
    await vscode.commands.executeCommand('setContext', CURSOR_CONTEXT, inKernel);
  }
}
