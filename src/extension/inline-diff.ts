/**
 * Inline Accept / Reject of a proposed kernel inside the user's editor, on top of HunkSession (src/engine/diff.ts):
 * the document keeps its text while hunks are pending; removed lines are decorated with the theme's diff colours, the
 * inserted lines show as ghost text with the full block in a hover; CodeLens Accept | Reject per hunk and Accept All |
 * Reject All at the top. Accept is one WorkspaceEdit (one undo step); Reject changes nothing, so the original text stays
 * byte for byte. Every document change is fed to HunkSession.rebase, which keeps the other hunks anchored or drops them.
 */
import * as vscode from 'vscode';
import { HunkSession, type PendingHunk, type TextChange } from '../engine/diff';
import { hunkAtLine, hunkDecorations } from './inline-diff-model';

export const PROPOSAL_SCHEME = 'kernel-tuner-proposal';

interface Review {
  readonly uri: vscode.Uri;
  readonly session: HunkSession;
  readonly title: string;
  /** Bumped on every change, so the side-by-side view's virtual document refreshes. */
  readonly proposalUri: vscode.Uri;
  readonly onFinished?: (outcome: ReviewOutcome) => void;
}

export interface ReviewOutcome {
  accepted: number;
  rejected: number;
  dropped: number;
}

export class InlineDiffController implements vscode.CodeLensProvider, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly proposalChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.proposalChanged.event;
  private readonly removedDecoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly insertedDecoration = vscode.window.createTextEditorDecorationType({
    after: {
      color: new vscode.ThemeColor('gitDecoration.addedResourceForeground'),
      backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
      margin: '0 0 0 2em',
      fontStyle: 'italic',
    },
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.disposables.push(
      this.removedDecoration,
      this.insertedDecoration,
      this.lensesChanged,
      this.proposalChanged,
      vscode.languages.registerCodeLensProvider([{ scheme: 'file' }, { scheme: 'untitled' }], this),
      vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, this),
      vscode.workspace.onDidChangeTextDocument((e) => this.onDocumentChanged(e)),
      vscode.workspace.onDidCloseTextDocument((doc) => this.onDocumentClosed(doc)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.redrawAll()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
    );
  }

  /**
   * Shows `proposed` as a pending diff over `document`. Replaces any review already open on it. Returns false when
   * there is nothing to review (the proposal equals the document).
   */
  async review(document: vscode.TextDocument, proposed: string, title: string, onFinished?: (outcome: ReviewOutcome) => void): Promise<boolean> {
    const key = document.uri.toString();
    this.end(key);
    const session = new HunkSession(document.getText(), proposed, { eol: document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n' });
    if (session.hunks.length === 0) return false;
    const proposalUri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: document.uri.path, query: `for=${encodeURIComponent(key)}` });
    this.reviews.set(key, { uri: document.uri, session, title, proposalUri, ...(onFinished && { onFinished }) });
    await vscode.window.showTextDocument(document, { preview: false, preserveFocus: false });
    this.redraw(key);
    return true;
  }

  /** Pending hunks of the document, in document order (for tests and the status of the panel). */
  pending(uri: vscode.Uri): readonly PendingHunk[] {
    return this.reviews.get(uri.toString())?.session.pending() ?? [];
  }

  hasReview(uri: vscode.Uri): boolean {
    return this.reviews.has(uri.toString());
  }

  async acceptHunk(uri?: vscode.Uri, hunkId?: string): Promise<boolean> {
    const target = this.target(uri, hunkId);
    if (!target) return false;
    const { review, id } = target;
    if (!this.inSync(review)) return false;
    return this.apply(review, review.session.accept(id), () => review.session.restore(id));
  }

  async rejectHunk(uri?: vscode.Uri, hunkId?: string): Promise<boolean> {
    const target = this.target(uri, hunkId);
    if (!target) return false;
    target.review.session.reject(target.id);
    this.afterDecision(target.review);
    return true;
  }

  async acceptAll(uri?: vscode.Uri): Promise<boolean> {
    const review = this.reviewFor(uri);
    if (!review || !this.inSync(review)) return false;
    const ids = review.session.pending().map((p) => p.hunk.id);
    return this.apply(review, review.session.acceptAll(), () => ids.forEach((id) => review.session.restore(id)));
  }

  async rejectAll(uri?: vscode.Uri): Promise<boolean> {
    const review = this.reviewFor(uri);
    if (!review) return false;
    review.session.rejectAll();
    this.afterDecision(review);
    return true;
  }

  /** VS Code's diff editor: the document (editable) against the proposal (a read-only virtual document). */
  async openSideBySide(uri?: vscode.Uri): Promise<boolean> {
    const review = this.reviewFor(uri);
    if (!review) return false;
    const name = review.uri.path.split('/').pop();
    await vscode.commands.executeCommand('vscode.diff', review.uri, review.proposalUri, `${name} ↔ ${review.title}`);
    return true;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const key = new URLSearchParams(uri.query).get('for');
    const review = key ? this.reviews.get(key) : undefined;
    if (!review) return '';
    // The document with every still-pending hunk applied: what Accept All would give now.
    let text = review.session.text;
    const lines = text.split('\n');
    const starts: number[] = [];
    let offset = 0;
    for (const line of lines) {
      starts.push(offset);
      offset += line.length + 1;
    }
    const at = (c: TextChange, end: boolean) => (starts[end ? c.rangeEndLine : c.rangeStartLine] ?? text.length) + (end ? c.rangeEndCharacter : c.rangeStartCharacter);
    for (const p of [...review.session.pending()].reverse()) text = text.slice(0, at(p.edit, false)) + p.edit.text + text.slice(at(p.edit, true));
    return text;
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const review = this.reviews.get(document.uri.toString());
    if (!review) return [];
    const decorations = hunkDecorations(review.session.pending(), document.lineCount);
    if (decorations.length === 0) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const uri = document.uri;
    const lenses = [
      new vscode.CodeLens(top, { title: `$(check-all) Accept All (${decorations.length})`, command: 'kernelTuner.acceptAll', arguments: [uri] }),
      new vscode.CodeLens(top, { title: '$(close-all) Reject All', command: 'kernelTuner.rejectAll', arguments: [uri] }),
      new vscode.CodeLens(top, { title: '$(diff) Side by side', command: 'kernelTuner.openSideBySide', arguments: [uri] }),
    ];
    for (const d of decorations) {
      const range = new vscode.Range(d.lensLine, 0, d.lensLine, 0);
      lenses.push(
        new vscode.CodeLens(range, { title: `$(check) Accept (+${d.added} −${d.deleted})`, command: 'kernelTuner.acceptHunk', arguments: [uri, d.hunkId] }),
        new vscode.CodeLens(range, { title: '$(close) Reject', command: 'kernelTuner.rejectHunk', arguments: [uri, d.hunkId] }),
      );
    }
    return lenses;
  }

  dispose(): void {
    for (const key of [...this.reviews.keys()]) this.end(key);
    vscode.Disposable.from(...this.disposables).dispose();
  }

  private target(uri: vscode.Uri | undefined, hunkId: string | undefined): { review: Review; id: string } | undefined {
    const review = this.reviewFor(uri);
    if (!review) return undefined;
    if (hunkId !== undefined) {
      return review.session.status(hunkId) === 'pending' ? { review, id: hunkId } : undefined;
    }
    const editor = vscode.window.activeTextEditor;
    const line = editor?.document.uri.toString() === review.uri.toString() ? editor.selection.active.line : 0;
    const hunk = hunkAtLine(review.session.pending(), line);
    return hunk ? { review, id: hunk.hunk.id } : undefined;
  }

  private reviewFor(uri: vscode.Uri | undefined): Review | undefined {
    const key = (uri ?? vscode.window.activeTextEditor?.document.uri)?.toString();
    return key ? this.reviews.get(key) : undefined;
  }

  /** Guards against a session that lost track of the document: then every hunk is dropped rather than misapplied. */
  private inSync(review: Review): boolean {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === review.uri.toString());
    if (!doc) return false;
    const dropped = review.session.sync(doc.getText());
    if (dropped.length > 0) {
      this.reportDropped(review, dropped.length);
      this.afterDecision(review);
      return false;
    }
    return true;
  }

  private async apply(review: Review, changes: TextChange[], undo: () => void): Promise<boolean> {
    const edit = new vscode.WorkspaceEdit();
    for (const c of changes) edit.replace(review.uri, new vscode.Range(c.rangeStartLine, c.rangeStartCharacter, c.rangeEndLine, c.rangeEndCharacter), c.text);
    const applied = await vscode.workspace.applyEdit(edit);
    if (!applied) {
      undo();
      this.log.warn(`the editor refused the edit for ${review.uri.fsPath}; the change stays pending`);
    }
    this.afterDecision(review);
    return applied;
  }

  private afterDecision(review: Review): void {
    const key = review.uri.toString();
    if (review.session.done) this.end(key);
    else this.redraw(key);
  }

  private onDocumentChanged(e: vscode.TextDocumentChangeEvent): void {
    const review = this.reviews.get(e.document.uri.toString());
    if (!review || e.contentChanges.length === 0) return;
    const dropped = review.session.rebase(
      e.contentChanges.map((c) => ({
        rangeStartLine: c.range.start.line,
        rangeStartCharacter: c.range.start.character,
        rangeEndLine: c.range.end.line,
        rangeEndCharacter: c.range.end.character,
        text: c.text,
      })),
    );
    if (dropped.length > 0) this.reportDropped(review, dropped.length);
    this.afterDecision(review);
  }

  private reportDropped(review: Review, count: number): void {
    const what = count === 1 ? 'One proposed change was' : `${count} proposed changes were`;
    void vscode.window.showWarningMessage(`${what} withdrawn because the lines it changes were edited. Open the report to apply the kernel again.`);
    this.log.info(`${review.uri.fsPath}: ${count} pending change(s) dropped after an overlapping edit`);
  }

  private onDocumentClosed(doc: vscode.TextDocument): void {
    if (this.reviews.has(doc.uri.toString())) this.end(doc.uri.toString());
  }

  private end(key: string): void {
    const review = this.reviews.get(key);
    if (!review) return;
    this.reviews.delete(key);
    this.redraw(key);
    const { session } = review;
    const count = (status: string) => session.hunks.filter((h) => session.status(h.id) === status).length;
    review.onFinished?.({ accepted: count('accepted'), rejected: count('rejected'), dropped: count('invalidated') });
  }

  private redrawAll(): void {
    for (const key of this.reviews.keys()) this.redraw(key);
    this.updateContext();
  }

  private redraw(key: string): void {
    const review = this.reviews.get(key);
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() !== key) continue;
      if (!review) {
        editor.setDecorations(this.removedDecoration, []);
        editor.setDecorations(this.insertedDecoration, []);
        continue;
      }
      const decorations = hunkDecorations(review.session.pending(), editor.document.lineCount);
      editor.setDecorations(
        this.removedDecoration,
        decorations.filter((d) => d.removed.endLine > d.removed.startLine).map((d) => new vscode.Range(d.removed.startLine, 0, d.removed.endLine - 1, 0)),
      );
      editor.setDecorations(
        this.insertedDecoration,
        decorations
          .filter((d) => d.insertedPreview !== '')
          .map((d) => {
            const line = editor.document.lineAt(d.insertedAtLine);
            const hover = new vscode.MarkdownString();
            hover.appendMarkdown(`**Proposed** (+${d.added} −${d.deleted}): accept with the lens above or Ctrl+Alt+Y\n\n`);
            hover.appendCodeblock(d.insertedText, 'cuda-cpp');
            return { range: new vscode.Range(line.range.end, line.range.end), hoverMessage: hover, renderOptions: { after: { contentText: d.insertedPreview } } };
          }),
      );
    }
    if (review) this.proposalChanged.fire(review.proposalUri);
    this.lensesChanged.fire();
    this.updateContext();
  }

  private updateContext(): void {
    const uri = vscode.window.activeTextEditor?.document.uri;
    void vscode.commands.executeCommand('setContext', 'kernelTuner.diffPending', uri !== undefined && this.reviews.has(uri.toString()));
  }
}
