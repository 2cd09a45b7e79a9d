/**
 * The tuned kernel proposed inside the user's editor, as Continue's vertical diff and Copilot's inline chat show a
 * rewrite: the new lines are in the document, green, right below the old lines they replace, which stay in place, red.
 * Accept | Reject lenses on each hunk, Accept All | Reject All | Side by side at the top, keyboard shortcuts and palette
 * commands for each, a status bar item counting the changes left, Escape rejecting the change at the cursor. The model
 * (what goes where, what a decision or an edit does) is src/extension/proposal.ts; this file keeps each document's
 * review and applies its edits; src/extension/inline-diff-view.ts draws it.
 *
 * - Reject deletes the new lines, Accept the old ones: the rest of the file is never touched, so Reject gives back the
 *   old bytes exactly (line endings, a missing final newline).
 * - Accept All is two edits: the proposal comes out, then the new code goes in. One Undo gives back the file without
 *   the proposal, a second one the open proposal.
 * - Undo / Redo: every text the document had during a review is remembered with its review state (ReviewTimeline), so
 *   when Undo or Redo brings a text back, its hunks, lenses and colours come back with it. A decision that changes no
 *   text (Accept of a change that only adds lines) is an undo step too: its lines are replaced by themselves.
 * - Save: while a proposal is open, a save writes the file without it, as if every pending change were rejected, the
 *   user's own edits kept; the proposal goes back into the editor right after (the editor stays dirty).
 * - Auto-save "afterDelay" (the default of VS Code for the Web and code-server) saves a dirty document a second after
 *   every change, so a proposal in the document would be taken out and put back every second. In a document that
 *   auto-saves so, the proposal opens as a diff instead, in the file's group, the right way round: the file on the left,
 *   the proposal (read-only) on the right. Accept / Reject (the diff's title bar, the keys) decide the change at the
 *   cursor: Accept puts it into the file, Reject takes it out of the proposal; the file only ever holds what the user
 *   took. (Should such a save still come, the proposal is taken out and stays out: "Show again".)
 * - The user's edits inside the old or new lines stay with that block; edits around a hunk move it; an edit across a
 *   hunk's blocks takes that hunk out of the review, its text left exactly as the user made it (Undo brings it back).
 * - Closing the document ends its review; a second proposal for the same document replaces the first (which is
 *   rejected first, so the user's own edits stay).
 */
import * as vscode from 'vscode';
import {
  acceptAll,
  acceptHunk,
  applyChanges,
  asideChangeAt,
  asideChanges,
  convertEol,
  describeHunk,
  hunkNear,
  isOpen,
  openReview,
  reinsert,
  rejectAll,
  rejectHunk,
  ReviewTimeline,
  textWith,
  textWithout,
  type HunkState,
  type OffsetEdit,
  type ReviewState,
  type Transition,
  type WithdrawnHunk,
  withoutAsideChange,
  type AsideChange,
} from './proposal';
import { lineSpan, ReviewView, type DrawnReview } from './inline-diff-view';
import type { WindowState } from './window-state';

export const PROPOSAL_SCHEME = 'kernel-tuner-proposal';
/** The side of a proposal's document that a review beside the file shows (the diff's right side). */
const ASIDE_SIDE = 'proposal';
/** After a save took the proposal out, it goes back in only if the document's editor is still open by then. */
const REINSERT_DELAY_MS = 150;

export interface ReviewOutcome {
  accepted: number;
  rejected: number;
  /** Taken out of the review by the user's edits, an undo, an automatic save or closing the document. */
  dropped: number;
}

/** A pending change as tests and the panel see it: lines are 0-based, `[start, end)`. */
export interface PendingChange {
  id: string;
  kind: 'code' | 'values';
  /** What the change does, in a few words (the lens text). */
  label: string;
  oldLines: { start: number; end: number };
  newLines: { start: number; end: number };
  oldText: string;
  newText: string;
}

interface DocReview {
  readonly uri: vscode.Uri;
  title: string;
  readonly timeline: ReviewTimeline;
  /** The review state of the document's current text; null: no review open. */
  state: ReviewState | null;
  /** The last state that had pending hunks (for "Show again" and the side-by-side view). */
  lastOpen?: ReviewState;
  onFinished?: (outcome: ReviewOutcome) => void;
  /** Set between the save participant taking the proposal out and the save's end (with the editors' selections). */
  saving?: { state: ReviewState; reason: vscode.TextDocumentSaveReason; selections: Map<vscode.TextEditor, readonly vscode.Selection[]> };
  /** A proposal reviewed beside the file (auto-save after a delay): a diff of the file against it. */
  aside?: Aside;
}

/**
 * A proposal reviewed beside its file: `proposed` in the document's EOL (Reject takes a change back out of it), the
 * document it is shown as (the diff's right side), how many changes it had and how many the user rejected.
 */
interface Aside {
  proposed: string;
  readonly uri: vscode.Uri;
  readonly changes: number;
  rejected: number;
}

export class InlineDiffController implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly docs = new Map<string, DocReview>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly proposalChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.proposalChanged.event;
  private readonly reviewsChanged = new vscode.EventEmitter<vscode.Uri>();
  /** A document's review opened, changed or ended. */
  readonly onDidChangeReview = this.reviewsChanged.event;
  private serial = 0;
  /** Our own edits run one at a time: a decision is computed on the state the previous one left. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly view = new ReviewView({
    // A proposal's own document (the diff's side) belongs to its file's review.
    get: (key) => this.drawn(this.docs.get(reviewKey(vscode.Uri.parse(key)) ?? key)),
    all: () => [...this.docs.values()].map((d) => this.drawn(d)!),
  });

  constructor(
    private readonly log: vscode.LogOutputChannel,
    /** Where the open reviews are kept across a window reload. */
    private readonly kept: WindowState,
  ) {
    this.disposables.push(
      this.view,
      this.proposalChanged,
      this.reviewsChanged,
      vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, this),
      vscode.workspace.onDidChangeTextDocument((e) => this.onDocumentChanged(e)),
      vscode.workspace.onWillSaveTextDocument((e) => this.onWillSave(e)),
      vscode.workspace.onDidSaveTextDocument((doc) => this.onDidSave(doc)),
      vscode.workspace.onDidCloseTextDocument((doc) => this.onDocumentClosed(doc)),
      vscode.workspace.onDidOpenTextDocument((doc) => this.restore(doc)),
      vscode.window.tabGroups.onDidChangeTabs((e) => this.onTabsChanged(e)),
    );
    for (const document of vscode.workspace.textDocuments) this.restore(document);
  }

  /**
   * The review a reload interrupted, when its document opens again: hot exit brings the unsaved text back with the
   * proposal's lines in it, and the review comes back with it. A document that comes back as it was saved (without
   * the proposal, which stays in the history) ends the stored review.
   */
  private restore(document: vscode.TextDocument): void {
    const key = document.uri.toString();
    const stored = this.kept.review(key);
    if (!stored || this.docs.has(key)) return;
    if (stored.state.text !== document.getText()) {
      this.kept.setReview(key, undefined);
      this.log.info(`${key}: came back without the proposal that was open before the reload (it stays in the history)`);
      return;
    }
    const d = this.entry(document.uri);
    d.title = stored.title;
    d.onFinished = (outcome) => this.log.info(`${key}: ${outcome.accepted} change(s) accepted, ${outcome.rejected} rejected, ${outcome.dropped} withdrawn (${stored.title}, reviewed across a reload)`);
    this.serial = Math.max(this.serial, stored.state.review);
    d.timeline.remember(stored.state.text, stored.state);
    this.setState(d, stored.state);
    this.log.info(`${key}: the proposal open before the reload is a review again (${stored.state.pending.length} pending change(s))`);
  }

  /**
   * Opens `proposed` as a review in `document` (its new lines go into the document), or beside it where the document
   * auto-saves after a delay. A review already open there is rejected first. Returns false when there is nothing to
   * review (the proposal equals the document) or the editor refused the edit.
   */
  review(document: vscode.TextDocument, proposed: string, title: string, onFinished?: (outcome: ReviewOutcome) => void): Promise<boolean> {
    return this.serialize(async () => {
      const d = this.entry(document.uri);
      if (isOpen(d.state)) {
        void vscode.window.showInformationMessage(`The new proposal replaces the one that was open in ${this.name(d)} (Undo brings the old one back).`);
        if (!(await this.apply(d, rejectAll(d.state)))) return false;
      }
      this.endAside(d, 'rejected');
      const eol = document.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
      d.title = title;
      d.onFinished = onFinished;
      if (autoSavesAfterDelay(document)) return this.openAside(d, document, convertEol(proposed, eol));
      const text = document.getText();
      const opened = openReview(text, proposed, eol, ++this.serial);
      if (!opened) return false;
      d.timeline.remember(text, null);
      if (!(await this.apply(d, opened))) return false;
      await vscode.window.showTextDocument(document, { viewColumn: columnOf(document.uri), preview: false, preserveFocus: false });
      return true;
    });
  }

  /** Pending changes of the document, in document order. */
  pending(uri: vscode.Uri): PendingChange[] {
    const d = this.docs.get(uri.toString());
    const doc = this.document(uri);
    if (!d || !isOpen(d.state) || !doc) return [];
    const state = d.state;
    return state.pending.map((h) => {
      const old = lineSpan(doc, h.start, h.mid - h.joint);
      const added = lineSpan(doc, h.mid, h.end);
      return {
        id: h.hunk.id,
        kind: h.hunk.kind,
        label: describeHunk(h, state.text),
        oldLines: old,
        newLines: added,
        oldText: state.text.slice(h.start, h.mid - h.joint),
        newText: state.text.slice(h.mid, h.end),
      };
    });
  }

  /** Whether a proposal is open for the document: in it, or beside it. */
  hasReview(uri: vscode.Uri): boolean {
    const d = this.docs.get(uri.toString());
    return d !== undefined && (isOpen(d.state) || d.aside !== undefined);
  }

  /** Whether the document's proposal is reviewed beside it (auto-save after a delay) rather than in it. */
  isAside(uri: vscode.Uri): boolean {
    return this.docs.get(uri.toString())?.aside !== undefined;
  }

  /** The document's text as it is without the open proposal (its own text when none is open). */
  textWithoutProposal(document: vscode.TextDocument): string {
    const state = this.docs.get(document.uri.toString())?.state ?? null;
    return isOpen(state) && state.text === document.getText() ? textWithout(state) : document.getText();
  }

  acceptHunk(uri?: vscode.Uri, hunkId?: string): Promise<boolean> {
    return this.decide(uri, hunkId, 'accept');
  }

  rejectHunk(uri?: vscode.Uri, hunkId?: string): Promise<boolean> {
    return this.decide(uri, hunkId, 'reject');
  }

  acceptAll(uri?: vscode.Uri): Promise<boolean> {
    return this.serialize(async () => {
      const aside = this.asideFor(uri);
      if (aside) return this.acceptAside(aside);
      const d = this.current(uri);
      if (!d) return false;
      const [out, inPlace] = acceptAll(d.state!);
      return (await this.apply(d, out)) && (await this.apply(d, inPlace));
    });
  }

  rejectAll(uri?: vscode.Uri): Promise<boolean> {
    return this.serialize(async () => {
      const aside = this.asideFor(uri);
      if (aside) {
        this.endAside(aside, 'rejected');
        return true;
      }
      const d = this.current(uri);
      return d ? this.apply(d, rejectAll(d.state!)) : false;
    });
  }

  /** Moves the cursor to the next pending change below it (wrapping round). */
  async revealNext(uri?: vscode.Uri): Promise<boolean> {
    const d = this.current(uri);
    const editor = d && vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === d.uri.toString());
    if (!d || !editor) return false;
    const here = editor.document.offsetAt(editor.selection.active);
    const next = d.state!.pending.find((h) => h.start > here) ?? d.state!.pending[0]!;
    const at = editor.document.positionAt(next.start);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, editor.document.positionAt(next.end)), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return true;
  }

  /** VS Code's diff editor: the file without the proposal against the file with all of it (both read-only). */
  async openSideBySide(uri?: vscode.Uri): Promise<boolean> {
    const d = this.docs.get((uri ?? vscode.window.activeTextEditor?.document.uri)?.toString() ?? '');
    if (!d?.lastOpen) return false;
    await vscode.commands.executeCommand('vscode.diff', sideBySideUri(d.uri, 'without'), sideBySideUri(d.uri, 'with'), `${this.name(d)}: without ↔ with ${d.title}`);
    return true;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    const d = this.docs.get(query.get('for') ?? '');
    if (query.get('side') === ASIDE_SIDE) return d?.aside?.proposed ?? '';
    const state = d && (isOpen(d.state) ? d.state : d.lastOpen);
    if (!state) return '';
    return query.get('side') === 'with' ? textWith(state) : textWithout(state);
  }

  dispose(): void {
    vscode.Disposable.from(...this.disposables).dispose();
  }

  // --- decisions -----------------------------------------------------------------------------------------------

  /** Accept or Reject of one change: `hunkId`'s, else the one at the cursor. */
  private decide(uri: vscode.Uri | undefined, hunkId: string | undefined, decision: 'accept' | 'reject'): Promise<boolean> {
    return this.serialize(async () => {
      const aside = this.asideFor(uri);
      if (aside) return decision === 'accept' ? this.acceptAsideChange(aside) : this.rejectAsideChange(aside);
      const d = this.current(uri);
      if (!d) return false;
      const state = d.state!;
      const hunk = hunkId !== undefined ? state.pending.find((h) => h.hunk.id === hunkId) : this.hunkAtCursor(d);
      return hunk ? this.apply(d, (decision === 'accept' ? acceptHunk : rejectHunk)(state, hunk.hunk.id), hunk) : false;
    });
  }

  private hunkAtCursor(d: DocReview): HunkState | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.toString() !== d.uri.toString()) return d.state!.pending[0];
    return hunkNear(d.state!, editor.document.offsetAt(editor.selection.active.with(undefined, 0)));
  }

  /** The open review of `uri` (else of the active editor), in step with its document; undefined when there is none. */
  private current(uri: vscode.Uri | undefined): DocReview | undefined {
    const key = (uri ?? vscode.window.activeTextEditor?.document.uri)?.toString();
    const d = key ? this.docs.get(key) : undefined;
    if (!d || !isOpen(d.state)) return undefined;
    const doc = this.document(d.uri);
    if (!doc || doc.getText() !== d.state.text) {
      // Not expected (every change is followed); never apply a decision to text the review does not know.
      this.log.warn(`${d.uri.toString()}: the proposal lost track of the document; it is withdrawn`);
      this.setState(d, { ...d.state, text: doc?.getText() ?? '', pending: [] });
      return undefined;
    }
    return d;
  }

  /**
   * Applies a transition's edits as one edit (one undo step); the change event moves the review to `t.next`. A decision
   * on one change (`decided`) that leaves the text as it was is an undo step all the same: that change's lines are
   * replaced by themselves, an edit the editor keeps only when it is labelled (unlabelled, it is reduced to nothing).
   */
  private async apply(d: DocReview, t: Transition, decided?: HunkState): Promise<boolean> {
    const doc = this.document(d.uri);
    if (!doc) return false;
    const unchanged = decided !== undefined && d.state !== null && t.next.text === d.state.text;
    if (unchanged) d.timeline.rememberUnchanged(d.state!, t.next);
    else d.timeline.remember(t.next.text, t.next);
    const edits = unchanged ? [{ start: decided.start, end: decided.end, text: t.next.text.slice(decided.start, decided.end) }] : t.edits;
    const applied = edits.length === 0 || (await vscode.workspace.applyEdit(this.workspaceEdit(doc, edits, unchanged ? { needsConfirmation: false, label: 'Kernel Tuner: decide a proposed change' } : undefined)));
    if (!applied) {
      this.log.warn(`the editor refused an edit of ${d.uri.toString()}; the proposal is unchanged`);
      return false;
    }
    // The change event has set the state already; this covers an edit that changed nothing.
    if (doc.getText() === t.next.text && d.state !== t.next) this.setState(d, t.next);
    return true;
  }

  private workspaceEdit(doc: vscode.TextDocument, edits: readonly OffsetEdit[], metadata?: vscode.WorkspaceEditEntryMetadata): vscode.WorkspaceEdit {
    const edit = new vscode.WorkspaceEdit();
    for (const e of edits) edit.replace(doc.uri, new vscode.Range(doc.positionAt(e.start), doc.positionAt(e.end)), e.text, metadata);
    return edit;
  }

  private serialize<T>(run: () => Promise<T>): Promise<T> {
    const result = this.queue.then(run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  // --- beside the file (auto-save after a delay) ---------------------------------------------------------------

  private async openAside(d: DocReview, document: vscode.TextDocument, proposed: string): Promise<boolean> {
    const changes = asideChanges(document.getText(), proposed).length;
    if (changes === 0) return false;
    const uri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: d.uri.path, query: new URLSearchParams({ for: d.uri.toString(), side: ASIDE_SIDE, review: String(++this.serial) }).toString() });
    d.aside = { proposed, uri, changes, rejected: 0 };
    // As any diff reads: the file on the left (what goes, red), the proposal on the right (what comes, green).
    await vscode.commands.executeCommand('vscode.diff', d.uri, uri, `${this.name(d)} ↔ ${d.title}`, { viewColumn: columnOf(d.uri), preview: false });
    this.changed(d);
    void vscode.window.showInformationMessage('Auto-save is on, so the proposal is shown as a diff.');
    return true;
  }

  /** The review beside the file of `uri` (the file, or the proposal's side of the diff), else of the active editor. */
  private asideFor(uri: vscode.Uri | undefined): DocReview | undefined {
    const key = reviewKey(uri ?? vscode.window.activeTextEditor?.document.uri);
    const d = key ? this.docs.get(key) : undefined;
    return d?.aside !== undefined ? d : undefined;
  }

  /** Accept All beside the file: the rest of the proposal goes into the file as one edit (one undo step). */
  private async acceptAside(d: DocReview): Promise<boolean> {
    const doc = this.document(d.uri);
    if (!doc || d.aside === undefined) return false;
    const edits = asideChanges(doc.getText(), d.aside.proposed).map((c) => c.edit);
    if (edits.length > 0 && !(await vscode.workspace.applyEdit(this.workspaceEdit(doc, edits)))) return false;
    this.endAside(d, 'accepted');
    return true;
  }

  /** The change at the cursor (in either side of the diff), else the first. */
  private asideChangeAtCursor(aside: Aside, file: vscode.TextDocument): AsideChange | undefined {
    const changes = asideChanges(file.getText(), aside.proposed);
    const editor = vscode.window.activeTextEditor;
    const shown = editor?.document.uri.toString();
    const side = shown === aside.uri.toString() ? 'proposal' : shown === file.uri.toString() ? 'file' : undefined;
    return side ? asideChangeAt(changes, side, editor!.selection.active.line) : changes[0];
  }

  /** Accept beside the file: the change at the cursor goes into the file (one undo step); the diff shows the rest. */
  private async acceptAsideChange(d: DocReview): Promise<boolean> {
    const file = this.document(d.uri);
    const change = file && d.aside && this.asideChangeAtCursor(d.aside, file);
    if (!file || !change) return false;
    return vscode.workspace.applyEdit(this.workspaceEdit(file, [change.edit]));
  }

  /** Reject beside the file: the change at the cursor goes out of the proposal; the file is not touched. */
  private async rejectAsideChange(d: DocReview): Promise<boolean> {
    const file = this.document(d.uri);
    const aside = d.aside;
    const change = file && aside && this.asideChangeAtCursor(aside, file);
    if (!file || !aside || !change) return false;
    aside.proposed = withoutAsideChange(aside.proposed, change);
    aside.rejected++;
    this.proposalChanged.fire(aside.uri);
    if (aside.proposed === file.getText()) this.endAside(d, 'rejected');
    else this.changed(d);
    return true;
  }

  /**
   * Ends a review beside the file (its diff closes): the changes the user rejected, and those still open when it ended
   * that way (`rest`: Reject All, closing the diff or the file, a new proposal), count as rejected; the others the file
   * took.
   */
  private endAside(d: DocReview, rest: 'accepted' | 'rejected'): void {
    const aside = d.aside;
    if (aside === undefined) return;
    d.aside = undefined;
    const left = rest === 'rejected' ? asideChanges(this.document(d.uri)?.getText() ?? '', aside.proposed).length : 0;
    const rejected = Math.min(aside.changes, aside.rejected + left);
    void vscode.window.tabGroups.close(vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => isAsideTab(t, d.uri)));
    d.onFinished?.({ accepted: aside.changes - rejected, rejected, dropped: 0 });
    this.changed(d);
  }

  /** Closing the proposal beside the file ends that review. */
  private onTabsChanged(e: vscode.TabChangeEvent): void {
    for (const tab of e.closed) {
      for (const d of this.docs.values()) if (d.aside !== undefined && isAsideTab(tab, d.uri)) this.endAside(d, 'rejected');
    }
  }

  // --- following the document ----------------------------------------------------------------------------------

  private onDocumentChanged(e: vscode.TextDocumentChangeEvent): void {
    const d = this.docs.get(e.document.uri.toString());
    if (!d || e.contentChanges.length === 0) return;
    const text = e.document.getText();
    if (d.aside !== undefined) {
      // Every change taken (or typed) in: the review is over.
      if (text === d.aside.proposed) this.endAside(d, 'accepted');
      else this.changed(d);
      return;
    }
    // An Undo or Redo that leaves the text as it was steps through the decisions that changed no text.
    if (d.state !== null && text === d.state.text && e.reason !== undefined) {
      const back = e.reason === vscode.TextDocumentChangeReason.Undo ? d.timeline.undoUnchanged(d.state) : d.timeline.redoUnchanged(d.state);
      if (back) {
        this.setState(d, back);
        return;
      }
    }
    const known = d.timeline.recall(text);
    if (known !== undefined) {
      this.setState(d, known);
      return;
    }
    if (!isOpen(d.state)) return;
    const { next, withdrawn } = applyChanges(d.state, e.contentChanges);
    const state = next.text === text ? next : { ...next, text, pending: [] };
    if (state !== next) withdrawn.push(...next.pending.map((h): WithdrawnHunk => ({ hunk: h.hunk, reason: 'out-of-sync' })));
    d.timeline.remember(text, state);
    this.setState(d, state);
    if (withdrawn.length > 0) this.reportWithdrawn(d, withdrawn.length);
  }

  private reportWithdrawn(d: DocReview, count: number): void {
    const what = count === 1 ? 'One proposed change was' : `${count} proposed changes were`;
    void vscode.window.showWarningMessage(`${what} taken out of the review in ${this.name(d)}: your edit spans its old and new lines. The text stays as you typed it; Undo brings the change back.`);
    this.log.info(`${d.uri.toString()}: ${count} pending change(s) withdrawn after an edit across their lines`);
  }

  private onWillSave(e: vscode.TextDocumentWillSaveEvent): void {
    const key = e.document.uri.toString();
    let d = this.docs.get(key);
    let state = d?.state ?? null;
    if (!isOpen(state) || state.text !== e.document.getText()) {
      // "Save As" of an untitled document under review saves a new document holding the same text.
      d = undefined;
      state = [...this.docs.values()].map((r) => r.state).find((s): s is ReviewState => isOpen(s) && s.text === e.document.getText()) ?? null;
      if (!state) return;
    }
    const out = rejectAll(state);
    if (d) {
      const selections = new Map(vscode.window.visibleTextEditors.filter((x) => x.document === e.document).map((x) => [x, x.selections] as const));
      d.saving = { state, reason: e.reason, selections };
      d.timeline.remember(out.next.text, null);
    }
    this.log.info(`${key}: saved without the open proposal (${state.pending.length} pending change(s))`);
    e.waitUntil(Promise.resolve(out.edits.map((x) => vscode.TextEdit.replace(new vscode.Range(e.document.positionAt(x.start), e.document.positionAt(x.end)), x.text))));
  }

  private onDidSave(doc: vscode.TextDocument): void {
    const d = this.docs.get(doc.uri.toString());
    const saving = d?.saving;
    if (!d || !saving) return;
    d.saving = undefined;
    if (saving.reason === vscode.TextDocumentSaveReason.AfterDelay) {
      this.finish(d, saving.state);
      void vscode.window
        .showWarningMessage(
          `Auto-save (files.autoSave: afterDelay) saved ${this.name(d)} without the pending proposal and took it out of the editor: it would be saved half-applied a second later otherwise. Turn auto-save off (or to onFocusChange) to review it in place.`,
          'Show again',
          'Open setting',
        )
        .then((choice) => {
          if (choice === 'Show again') void this.review(doc, textWith(saving.state), d.title, d.onFinished);
          if (choice === 'Open setting') void vscode.commands.executeCommand('workbench.action.openSettings', 'files.autoSave');
        });
      return;
    }
    // Closing a dirty editor with "Save" saves first and closes after: after an explicit save, the proposal goes back
    // only if the editor stayed open (a moment later). A save on losing focus puts it back at once.
    const delay = saving.reason === vscode.TextDocumentSaveReason.Manual ? REINSERT_DELAY_MS : 0;
    setTimeout(() => {
      void this.serialize(async () => {
        const open = vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === d.uri.toString()));
        const document = this.document(d.uri);
        if (!open || !document || document.getText() !== textWithout(saving.state) || d.state !== null) {
          if (d.state === null) this.finish(d, saving.state);
          return;
        }
        d.timeline.remember(saving.state.text, saving.state);
        if (!(await vscode.workspace.applyEdit(this.workspaceEdit(document, reinsert(saving.state))))) return this.finish(d, saving.state);
        // The same text as before the save: the cursors go back where they were.
        for (const [editor, selections] of saving.selections) if (editor.document === document) editor.selections = selections;
      });
    }, delay);
  }

  private onDocumentClosed(doc: vscode.TextDocument): void {
    const d = this.docs.get(doc.uri.toString());
    if (!d) return;
    this.docs.delete(doc.uri.toString());
    this.endAside(d, 'rejected');
    if (isOpen(d.state)) this.finish(d, d.state);
    this.view.redraw(d.uri);
  }

  /** Ends a review that still had pending hunks (they count as dropped). */
  private finish(d: DocReview, last: ReviewState): void {
    d.onFinished?.({ accepted: last.tally.accepted, rejected: last.tally.rejected, dropped: last.tally.withdrawn + last.pending.length });
    if (isOpen(d.state)) d.state = null;
    this.changed(d);
  }

  private setState(d: DocReview, state: ReviewState | null): void {
    const was = d.state;
    d.state = state;
    if (isOpen(state)) d.lastOpen = state;
    // A review ends here when its last hunk is decided, or when the text returns to before it opened (Undo), but not
    // while a save has taken the proposal out for a moment.
    if (isOpen(was) && !isOpen(state) && !d.saving) {
      const last = state ?? was;
      d.onFinished?.({ accepted: last.tally.accepted, rejected: last.tally.rejected, dropped: last.tally.withdrawn + (state ? 0 : was.pending.length) });
    }
    this.changed(d);
  }

  private changed(d: DocReview): void {
    this.view.redraw(d.uri);
    // The side-by-side view's documents (if open) follow every decision and edit.
    this.proposalChanged.fire(sideBySideUri(d.uri, 'without'));
    this.proposalChanged.fire(sideBySideUri(d.uri, 'with'));
    this.reviewsChanged.fire(d.uri);
    this.kept.setReview(d.uri.toString(), isOpen(d.state) ? { title: d.title, state: d.state } : undefined);
  }

  private entry(uri: vscode.Uri): DocReview {
    const key = uri.toString();
    let d = this.docs.get(key);
    if (!d) {
      d = { uri, title: 'proposal', timeline: new ReviewTimeline(), state: null };
      this.docs.set(key, d);
    }
    return d;
  }

  private document(uri: vscode.Uri): vscode.TextDocument | undefined {
    return vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
  }

  private name(d: DocReview): string {
    return d.uri.path.split('/').pop() ?? d.uri.toString();
  }

  private drawn(d: DocReview | undefined): DrawnReview | undefined {
    return d && { uri: d.uri, state: d.state, aside: d.aside !== undefined };
  }

}

/** The document is saved a moment after every change (the afterDelay auto-save; untitled documents never auto-save). */
function autoSavesAfterDelay(document: vscode.TextDocument): boolean {
  return document.uri.scheme !== 'untitled' && vscode.workspace.getConfiguration('files', document).get('autoSave') === 'afterDelay';
}

/** A side of the side-by-side view of `uri`'s proposal: the file without it, or with all of it (read-only). */
function sideBySideUri(uri: vscode.Uri, side: 'without' | 'with'): vscode.Uri {
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: uri.path, query: new URLSearchParams({ for: uri.toString(), side }).toString() });
}

function isAsideTab(tab: vscode.Tab, uri: vscode.Uri): boolean {
  return tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === PROPOSAL_SCHEME && tab.input.original.toString() === uri.toString();
}

/** The key of the review a document belongs to: its own uri, or for a proposal's document the uri of its file. */
export function reviewKey(uri: vscode.Uri | undefined): string | undefined {
  return uri?.scheme === PROPOSAL_SCHEME ? (new URLSearchParams(uri.query).get('for') ?? undefined) : uri?.toString();
}

/** The editor group that shows the document already (the code's, not the panel's), else the first. */
function columnOf(uri: vscode.Uri): vscode.ViewColumn {
  const group = vscode.window.tabGroups.all.find((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString()));
  return group?.viewColumn ?? vscode.ViewColumn.One;
}

