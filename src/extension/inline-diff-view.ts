/**
 * How an open proposal looks in the editor; src/extension/inline-diff.ts keeps the reviews and applies their edits.
 * The old lines red and the new ones green (backgrounds and overview ruler), the lenses, the status bar item counting
 * the changes left, and the context keys the menus and keybindings read. The file's Accept All | Reject All | Side by
 * side are on the first line, each change's Accept | Reject right below its new lines: one line of lenses per line of
 * text, so a change at the top of the file would otherwise share the file's line, and two adjacent changes one line.
 */
import * as vscode from 'vscode';
import { describeHunk, hunkAt, isOpen, type ReviewState } from './proposal';

const PENDING_CONTEXT = 'kernelTuner.diffPending';
const CURSOR_CONTEXT = 'kernelTuner.cursorInHunk';

/** What the view draws of one document's review. */
export interface DrawnReview {
  readonly uri: vscode.Uri;
  /** The review state of the document's current text; null: no review open. */
  readonly state: ReviewState | null;
  /** The proposal is reviewed beside the file (auto-save after a delay), not in it. */
  readonly aside: boolean;
}

/** The reviews the view draws: one by document uri (its string), and all of them. */
export interface DrawnReviews {
  get(key: string): DrawnReview | undefined;
  all(): Iterable<DrawnReview>;
}

export class ReviewView implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly statusBar = vscode.window.createStatusBarItem('kernelTuner.proposal', vscode.StatusBarAlignment.Left, 49);
  private readonly oldDecoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly newDecoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });

  constructor(private readonly reviews: DrawnReviews) {
    this.statusBar.name = 'Kernel Tuner proposal';
    this.disposables.push(
      this.oldDecoration,
      this.newDecoration,
      this.lensesChanged,
      this.statusBar,
      vscode.languages.registerCodeLensProvider([{ scheme: 'file' }, { scheme: 'untitled' }], this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.redrawAll()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
      // The cursor matters only where a review is (the "Escape rejects the change at the cursor" key).
      vscode.window.onDidChangeTextEditorSelection((e) => e.textEditor === vscode.window.activeTextEditor && this.reviews.get(e.textEditor.document.uri.toString()) && this.updateContext()),
    );
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const d = this.reviews.get(document.uri.toString());
    if (d?.aside) {
      const top = new vscode.Range(0, 0, 0, 0);
      return [
        new vscode.CodeLens(top, { title: '$(check-all) Accept All', tooltip: 'Take the whole proposal into the file (Ctrl+Shift+Enter)', command: 'kernelTuner.acceptAll', arguments: [document.uri] }),
        new vscode.CodeLens(top, { title: '$(close-all) Reject All', tooltip: 'End the review; the file keeps what you took (Ctrl+Shift+Backspace)', command: 'kernelTuner.rejectAll', arguments: [document.uri] }),
      ];
    }
    if (!d || !isOpen(d.state) || d.state.text !== document.getText()) return [];
    const state = d.state;
    const uri = document.uri;
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses = [
      new vscode.CodeLens(top, { title: `$(check-all) Accept All (${state.pending.length})`, tooltip: 'Keep every new line (Ctrl+Shift+Enter)', command: 'kernelTuner.acceptAll', arguments: [uri] }),
      new vscode.CodeLens(top, { title: '$(close-all) Reject All', tooltip: 'Keep every old line (Ctrl+Shift+Backspace)', command: 'kernelTuner.rejectAll', arguments: [uri] }),
      new vscode.CodeLens(top, { title: '$(diff) Side by side', tooltip: 'The file without and with the proposal in the diff editor', command: 'kernelTuner.openSideBySide', arguments: [uri] }),
    ];
    for (const h of state.pending) {
      // Below the change; at its top only where nothing follows it (a last line without a line break).
      const below = lineSpan(document, h.start, h.end).end;
      const at = below < document.lineCount ? below : document.positionAt(h.start).line;
      const line = new vscode.Range(at, 0, at, 0);
      const what = describeHunk(h, state.text);
      lenses.push(
        new vscode.CodeLens(line, { title: '$(check) Accept', tooltip: 'Keep the new (green) lines of this change (Ctrl+Alt+Y)', command: 'kernelTuner.acceptHunk', arguments: [uri, h.hunk.id] }),
        new vscode.CodeLens(line, { title: '$(close) Reject', tooltip: 'Keep the old (red) lines of this change (Ctrl+Alt+N, or Escape)', command: 'kernelTuner.rejectHunk', arguments: [uri, h.hunk.id] }),
        new vscode.CodeLens(line, { title: at === below ? `$(arrow-up) ${what}` : what, command: '' }),
      );
    }
    return lenses;
  }

  dispose(): void {
    vscode.Disposable.from(...this.disposables).dispose();
  }

  redrawAll(): void {
    for (const d of this.reviews.all()) this.redraw(d.uri);
  }

  /** Draws the review of `uri` (none: clears it) in its visible editors, its lenses and the context keys. */
  redraw(uri: vscode.Uri): void {
    const d = this.reviews.get(uri.toString());
    const state = d && isOpen(d.state) ? d.state : undefined;
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() !== uri.toString()) continue;
      const doc = editor.document;
      const ranges = (from: number, to: number) => {
        if (to <= from) return [];
        const span = lineSpan(doc, from, to);
        return [new vscode.Range(span.start, 0, span.end - 1, 0)];
      };
      const live = state && state.text === doc.getText() ? state : undefined;
      editor.setDecorations(this.oldDecoration, live ? live.pending.flatMap((h) => ranges(h.start, h.mid - h.joint)) : []);
      editor.setDecorations(this.newDecoration, live ? live.pending.flatMap((h) => ranges(h.mid, h.end)) : []);
    }
    this.lensesChanged.fire();
    this.updateContext();
  }

  updateContext(): void {
    const editor = vscode.window.activeTextEditor;
    const d = editor && this.reviews.get(editor.document.uri.toString());
    const state = d && isOpen(d.state) ? d.state : undefined;
    const atCursor = state && editor && state.text === editor.document.getText() ? hunkAt(state, editor.document.offsetAt(editor.selection.active.with(undefined, 0))) : undefined;
    void vscode.commands.executeCommand('setContext', PENDING_CONTEXT, state !== undefined || d?.aside === true);
    void vscode.commands.executeCommand('setContext', CURSOR_CONTEXT, atCursor !== undefined);
    if (d?.aside) {
      this.statusBar.text = '$(diff) proposal in a diff: auto-save is on';
      this.statusBar.tooltip = 'Kernel Tuner: auto-save (files.autoSave: afterDelay) would save a proposal in the file half-applied, so it is reviewed as a diff: your file left, the proposal right. Click to change auto-save.';
      this.statusBar.command = { command: 'workbench.action.openSettings', title: 'Auto-save', arguments: ['files.autoSave'] };
      this.statusBar.show();
      return;
    }
    if (!state) {
      this.statusBar.hide();
      return;
    }
    const n = state.pending.length;
    this.statusBar.text = `$(diff) ${n} change${n === 1 ? '' : 's'} to review`;
    this.statusBar.tooltip = 'Kernel Tuner: go to the next proposed change (Accept Ctrl+Alt+Y, Reject Ctrl+Alt+N or Escape, all: Ctrl+Shift+Enter / Ctrl+Shift+Backspace)';
    this.statusBar.command = { command: 'kernelTuner.nextHunk', title: 'Go to the next proposed change', arguments: [editor!.document.uri] };
    this.statusBar.show();
  }

}

/** The lines [start, end) that hold the characters [from, to) (at least one line). */
export function lineSpan(doc: vscode.TextDocument, from: number, to: number): { start: number; end: number } {
  const start = doc.positionAt(from).line;
  const last = to > from ? doc.positionAt(to - 1).line : start;
  return { start, end: to > from ? last + 1 : start };
}
