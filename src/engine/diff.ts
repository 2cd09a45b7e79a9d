/**
 * Line diff, unified diff, hunk application, and the editor-side hunk session behind inline Accept / Reject.
 *
 * Line model. A text is a sequence of lines, each INCLUDING its terminator (`\n`, or `\r\n`); only the last line can
 * lack one. Lines are compared with their terminators, so a changed line ending or an added/removed final newline is a
 * real change, as in git. This is what makes the round trips byte-exact: applying no hunk gives the original, every
 * hunk gives the proposed text, whatever their line endings. A lone `\r` is line content, as in git.
 *
 * Algorithm. jsdiff (the `diff` package): Myers' O((N+M)D) diff. Lines occurring on one side only are set aside
 * before it runs (they cannot match; GNU diff does the same), so the result stays minimal and two unrelated files cost
 * a linear scan instead of jsdiff's quadratic worst case.
 *
 * Editor model (what {@link HunkSession} assumes, and why). While hunks are pending, the DOCUMENT KEEPS ITS ORIGINAL
 * TEXT (plus whatever the user types). Proposed changes exist only as decorations: the lines a hunk would remove are
 * decorated red in place, the lines it would insert are shown as virtual text (decorations cannot add rows, so the
 * extension renders them as after-line ghost text / hover, with "Open side-by-side diff" for the full view), and each
 * hunk has an Accept | Reject CodeLens on its {@link PendingHunk.anchorLine}.
 * - Accept = ONE edit (a {@link TextChange}, replacing the hunk's original lines with its proposed lines) applied in
 *   one WorkspaceEdit / editor.edit: one undo step, and undo gives back exactly the original lines.
 * - Reject = no edit at all, so rejecting restores the original text byte for byte by construction.
 * - The document never holds text that is neither the user's nor an accepted hunk's. Continue instead inserts the
 *   proposed lines into the buffer next to the removed ones; then a save (auto-save!), hot exit, a crash or an undo
 *   in the middle leaves both versions in the file. Keeping the buffer clean rules that out.
 * The session tracks the document text through {@link HunkSession.rebase} (feed it every onDidChangeTextDocument
 * content change, including the echo of our own Accept edits) and keeps each pending hunk anchored to its original
 * lines. An edit that touches a pending hunk's lines (or glues text onto its first/last line) drops that hunk and
 * reports it; it is never applied blindly.
 */
import { createTwoFilesPatch, diffArrays, FILE_HEADERS_ONLY } from 'diff';

/** One block of consecutive changed lines between unchanged lines. */
export interface Hunk {
  /** Stable id: the 1-based original line plus a hash of the position and both texts. Unique within one diff. */
  readonly id: string;
  /** 0-based index of the first original line replaced; for a pure insertion, the line it is inserted before. */
  readonly originalStart: number;
  /** Replaced original lines, without terminators. Empty for a pure insertion. */
  readonly originalLines: readonly string[];
  /** 0-based index in the proposed text of the first inserted line. */
  readonly proposedStart: number;
  /** Inserted lines, without terminators. Empty for a pure deletion. */
  readonly proposedLines: readonly string[];
  /** Exact original text of the hunk, terminators included. */
  readonly originalText: string;
  /** Exact replacement text, terminators included. */
  readonly proposedText: string;
  /** Up to 3 unchanged lines before the hunk (without terminators), for display. */
  readonly contextBefore: readonly string[];
  /** Up to 3 unchanged lines after the hunk (without terminators), for display. */
  readonly contextAfter: readonly string[];
}

export type Eol = '\n' | '\r\n';

const DISPLAY_CONTEXT = 3;

/** Splits after every `\n`; each element keeps its terminator, the last may have none. `''` has no lines. */
function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

function stripTerminator(line: string): string {
  if (line.endsWith('\r\n')) return line.slice(0, -2);
  if (line.endsWith('\n')) return line.slice(0, -1);
  return line;
}

/** The line ending used by most lines of `text`; undefined when it has no line break. */
export function detectEol(text: string): Eol | undefined {
  let crlf = 0;
  let lf = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (i > 0 && text.charCodeAt(i - 1) === 13) crlf++;
    else lf++;
  }
  if (crlf === 0 && lf === 0) return undefined;
  return crlf > lf ? '\r\n' : '\n';
}

/** Rewrites every line break (`\r\n`, `\r`, `\n`, as VS Code counts them) to `eol`. The final-newline state is kept. */
export function normalizeEol(text: string, eol: Eol): string {
  return text.replace(/\r\n|\r|\n/g, eol);
}

// --- line diff (jsdiff) ----------------------------------------------------------------------------------------------

/** A maximal run of changed lines: original lines [aStart, aEnd) become proposed lines [bStart, bEnd). */
interface ChangeGroup {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

function diffLines(aLines: readonly string[], bLines: readonly string[]): ChangeGroup[] {
  const ids = new Map<string, number>();
  const intern = (lines: readonly string[]): number[] =>
    lines.map((line) => {
      let id = ids.get(line);
      if (id === undefined) ids.set(line, (id = ids.size));
      return id;
    });
  const a = intern(aLines);
  const b = intern(bLines);
  const removed = new Uint8Array(a.length);
  const added = new Uint8Array(b.length);
  // A line absent from the other side is in no common subsequence: mark it changed and let jsdiff see the rest only.
  // The result stays minimal, and two unrelated 5 000-line files take milliseconds instead of jsdiff's 3 s.
  const inA = new Set(a);
  const inB = new Set(b);
  const keptA: number[] = [];
  const keptB: number[] = [];
  a.forEach((id, i) => (inB.has(id) ? keptA.push(i) : (removed[i] = 1)));
  b.forEach((id, j) => (inA.has(id) ? keptB.push(j) : (added[j] = 1)));
  let i = 0;
  let j = 0;
  for (const change of diffArrays(keptA.map((k) => a[k]!), keptB.map((k) => b[k]!))) {
    const count = change.value.length;
    if (change.removed) for (let k = 0; k < count; k++) removed[keptA[i++]!] = 1;
    else if (change.added) for (let k = 0; k < count; k++) added[keptB[j++]!] = 1;
    else {
      i += count;
      j += count;
    }
  }

  const groups: ChangeGroup[] = [];
  i = 0;
  j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && !removed[i] && !added[j]) {
      i++;
      j++;
      continue;
    }
    const group: ChangeGroup = { aStart: i, aEnd: i, bStart: j, bEnd: j };
    while (i < a.length && removed[i]) i++;
    while (j < b.length && added[j]) j++;
    group.aEnd = i;
    group.bEnd = j;
    groups.push(group);
  }
  return groups;
}

// --- hunks -----------------------------------------------------------------------------------------------------------

/** 64-bit FNV-1a (two 32-bit lanes) as 16 hex digits: cheap, dependency-free, ample for ids within one file. */
function hash64(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}

/** The blocks of changed lines that turn `original` into `proposed`, in order. Identical texts give `[]`. */
export function computeHunks(original: string, proposed: string): Hunk[] {
  if (original === proposed) return [];
  const aLines = splitLines(original);
  const bLines = splitLines(proposed);
  return diffLines(aLines, bLines).map((g) => {
    const originalText = aLines.slice(g.aStart, g.aEnd).join('');
    const proposedText = bLines.slice(g.bStart, g.bEnd).join('');
    return {
      id: `L${g.aStart + 1}-${hash64(`${g.aStart}\u0000${originalText}\u0000${proposedText}`)}`,
      originalStart: g.aStart,
      originalLines: aLines.slice(g.aStart, g.aEnd).map(stripTerminator),
      proposedStart: g.bStart,
      proposedLines: bLines.slice(g.bStart, g.bEnd).map(stripTerminator),
      originalText,
      proposedText,
      contextBefore: aLines.slice(Math.max(0, g.aStart - DISPLAY_CONTEXT), g.aStart).map(stripTerminator),
      contextAfter: aLines.slice(g.aEnd, g.aEnd + DISPLAY_CONTEXT).map(stripTerminator),
    };
  });
}

/**
 * `original` with only the hunks whose ids are in `acceptedIds` applied. The hunks must come from
 * `computeHunks(original, ...)`; a hunk that does not match `original` or an unknown accepted id throws.
 */
export function applyHunks(original: string, hunks: readonly Hunk[], acceptedIds: Iterable<string>): string {
  const accepted = new Set(acceptedIds);
  const known = new Set(hunks.map((h) => h.id));
  for (const id of accepted) if (!known.has(id)) throw new RangeError(`applyHunks: unknown hunk id ${id}`);
  const lines = splitLines(original);
  const sorted = [...hunks].sort((x, y) => x.originalStart - y.originalStart);
  const out: string[] = [];
  let next = 0;
  for (const hunk of sorted) {
    const end = hunk.originalStart + hunk.originalLines.length;
    if (hunk.originalStart < next || end > lines.length || lines.slice(hunk.originalStart, end).join('') !== hunk.originalText) {
      throw new Error(`applyHunks: hunk ${hunk.id} does not match the original text`);
    }
    if (!accepted.has(hunk.id)) continue;
    out.push(...lines.slice(next, hunk.originalStart), hunk.proposedText);
    next = end;
  }
  out.push(...lines.slice(next));
  return out.join('');
}

export interface UnifiedDiffOptions {
  /** Path shown in the `--- a/` and `+++ b/` headers (relative, forward slashes, as git expects with -p1). */
  fileName: string;
  /** Unchanged lines around each change. Default 3, as git. */
  context?: number;
}

/**
 * A git-compatible unified diff from `original` to `proposed` (`git apply` / `patch -p1` accept it), by jsdiff. Line
 * endings are emitted as they are in the texts; a missing final newline gets git's `\ No newline at end of file`
 * marker. Identical texts give `''`.
 */
export function unifiedDiff(original: string, proposed: string, options: UnifiedDiffOptions): string {
  const context = options.context ?? 3;
  if (!Number.isInteger(context) || context < 0) throw new RangeError(`unifiedDiff: context must be a non-negative integer, got ${context}`);
  if (original === proposed) return '';
  return createTwoFilesPatch(`a/${options.fileName}`, `b/${options.fileName}`, original, proposed, undefined, undefined, { context, headerOptions: FILE_HEADERS_ONLY });
}

// --- editor session --------------------------------------------------------------------------------------------------

/**
 * A replacement of a range by text, in VS Code coordinates (0-based lines, UTF-16 character offsets), the shape of a
 * `TextDocumentContentChangeEvent` and of a `TextEdit`. Input to {@link HunkSession.rebase}, output of Accept.
 */
export interface TextChange {
  readonly rangeStartLine: number;
  readonly rangeStartCharacter: number;
  readonly rangeEndLine: number;
  readonly rangeEndCharacter: number;
  readonly text: string;
}

export type HunkStatus = 'pending' | 'accepted' | 'rejected' | 'invalidated';

/** Lines [startLine, endLine) of the current document. */
export interface LineRange {
  readonly startLine: number;
  readonly endLine: number;
}

/** What the extension needs to show and accept one pending hunk, in current document coordinates. */
export interface PendingHunk {
  readonly hunk: Hunk;
  /** Line for the CodeLens; the hunk's first original line, or the line the insertion goes before. */
  readonly anchorLine: number;
  /** Lines to decorate as removed (red); empty range for a pure insertion. */
  readonly removedLines: LineRange;
  /** The edit that accepts this hunk against the current document. */
  readonly edit: TextChange;
}

export type InvalidationReason = 'overlapping-edit' | 'out-of-sync';

export interface InvalidatedHunk {
  readonly hunk: Hunk;
  readonly reason: InvalidationReason;
}

interface Region {
  start: number;
  end: number;
}

interface Entry {
  readonly hunk: Hunk;
  status: HunkStatus;
  /**
   * Offsets of the hunk's original text in the current document. Always set while pending; kept after Accept until
   * any change touches it (normally the echo of the Accept edit), so a refused edit can be {@link HunkSession.restore}d.
   */
  region: Region | undefined;
}

/**
 * Review state of one proposal over one document; see the module header for the model. Pure: it never touches an
 * editor. Typical wiring: `new HunkSession(doc.getText(), proposed)`, draw `pending()`, forward every
 * `contentChanges` array of onDidChangeTextDocument to `rebase()` (report what it returns), on Accept apply the
 * returned changes with `editor.edit` (which refuses if the document moved on; then call `restore`), on Reject just
 * redraw. Before applying, `sync(doc.getText())` is a cheap guard that the session and the document agree.
 */
export class HunkSession {
  /** The document text the session started from. */
  readonly original: string;
  /** The proposal, with line breaks normalized to the document's (VS Code would normalize them on insert). */
  readonly proposed: string;
  readonly hunks: readonly Hunk[];
  private readonly entries = new Map<string, Entry>();
  private doc: string;
  private lineStartsCache: number[] | undefined;

  /**
   * @param options.eol the document's line ending (`document.eol`); needed only when `original` has no line break to
   *   tell it, as VS Code converts inserted text to it.
   */
  constructor(original: string, proposed: string, options: { eol?: Eol } = {}) {
    if (/\r(?!\n)/.test(original)) {
      throw new Error('HunkSession: the document contains a lone CR; VS Code documents never do (it normalizes line breaks)');
    }
    this.original = original;
    this.proposed = normalizeEol(proposed, options.eol ?? detectEol(original) ?? detectEol(proposed) ?? '\n');
    this.doc = original;
    this.hunks = computeHunks(original, this.proposed);
    const starts = this.lineStarts();
    for (const hunk of this.hunks) {
      const start = hunk.originalStart < starts.length ? starts[hunk.originalStart]! : original.length;
      this.entries.set(hunk.id, { hunk, status: 'pending', region: { start, end: start + hunk.originalText.length } });
    }
  }

  /** The document text as the session has tracked it. */
  get text(): string {
    return this.doc;
  }

  /** True once no hunk is pending. */
  get done(): boolean {
    for (const entry of this.entries.values()) if (entry.status === 'pending') return false;
    return true;
  }

  status(id: string): HunkStatus | undefined {
    return this.entries.get(id)?.status;
  }

  /** Ids of the hunks accepted so far, in document order. */
  acceptedIds(): string[] {
    return this.hunks.filter((h) => this.entries.get(h.id)!.status === 'accepted').map((h) => h.id);
  }

  /** Pending hunks in document order, with their current anchors, decoration ranges and accept edits. */
  pending(): PendingHunk[] {
    const out: PendingHunk[] = [];
    for (const hunk of this.hunks) {
      const entry = this.entries.get(hunk.id)!;
      if (entry.status !== 'pending') continue;
      const edit = this.editFor(entry);
      out.push({
        hunk,
        anchorLine: edit.rangeStartLine,
        removedLines: { startLine: edit.rangeStartLine, endLine: edit.rangeStartLine + hunk.originalLines.length },
        edit,
      });
    }
    return out;
  }

  /**
   * Marks a pending hunk accepted and returns the edit to apply (one change; apply it as one edit = one undo step).
   * Throws for an unknown id or a hunk that is not pending.
   */
  accept(id: string): TextChange[] {
    const entry = this.pendingEntry(id);
    entry.status = 'accepted';
    return [this.editFor(entry)];
  }

  /** Accepts every pending hunk; the non-overlapping edits refer to the current document, in document order. */
  acceptAll(): TextChange[] {
    const edits: TextChange[] = [];
    for (const hunk of this.hunks) {
      const entry = this.entries.get(hunk.id)!;
      if (entry.status !== 'pending') continue;
      entry.status = 'accepted';
      edits.push(this.editFor(entry));
    }
    return edits;
  }

  /** Rejects a pending hunk: nothing to apply, the document already holds its original lines. */
  reject(id: string): void {
    const entry = this.pendingEntry(id);
    entry.status = 'rejected';
    entry.region = undefined;
  }

  rejectAll(): void {
    for (const entry of this.entries.values()) {
      if (entry.status !== 'pending') continue;
      entry.status = 'rejected';
      entry.region = undefined;
    }
  }

  /**
   * Puts an accepted hunk back to pending because its edit was not applied (the editor refused it). Allowed only while
   * no change has touched the hunk's lines since, so it can never revive a hunk whose edit did land.
   */
  restore(id: string): void {
    const entry = this.entries.get(id);
    if (!entry || entry.status !== 'accepted' || !entry.region) {
      throw new Error(`HunkSession.restore: hunk ${id} is not an accepted hunk with untouched lines`);
    }
    entry.status = 'pending';
  }

  /**
   * Applies document changes (in the order VS Code reports them) to the tracked text and re-anchors the pending hunks.
   * Returns the hunks dropped by these changes: those whose lines were edited, or all of them if a change does not fit
   * the tracked text (the session lost track of the document).
   */
  rebase(changes: TextChange | readonly TextChange[]): InvalidatedHunk[] {
    const list: readonly TextChange[] = Array.isArray(changes) ? changes : [changes as TextChange];
    const dropped: InvalidatedHunk[] = [];
    for (const change of list) {
      const from = this.offsetAt(change.rangeStartLine, change.rangeStartCharacter);
      const to = this.offsetAt(change.rangeEndLine, change.rangeEndCharacter);
      if (from === undefined || to === undefined || to < from) {
        dropped.push(...this.invalidateAll('out-of-sync'));
        continue;
      }
      this.applyChange(from, to, change.text, dropped);
    }
    return dropped;
  }

  /**
   * Compares the tracked text with the document's actual text; on any difference every pending hunk is dropped (and
   * returned) and tracking restarts from `documentText`.
   */
  sync(documentText: string): InvalidatedHunk[] {
    if (documentText === this.doc) return [];
    const dropped = this.invalidateAll('out-of-sync');
    this.setDoc(documentText);
    return dropped;
  }

  private pendingEntry(id: string): Entry {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(`HunkSession: unknown hunk ${id}`);
    if (entry.status !== 'pending') throw new Error(`HunkSession: hunk ${id} is ${entry.status}, not pending`);
    return entry;
  }

  private invalidateAll(reason: InvalidationReason): InvalidatedHunk[] {
    const dropped: InvalidatedHunk[] = [];
    for (const entry of this.entries.values()) {
      if (entry.status === 'pending') {
        entry.status = 'invalidated';
        dropped.push({ hunk: entry.hunk, reason });
      }
      entry.region = undefined;
    }
    return dropped;
  }

  private applyChange(from: number, to: number, text: string, dropped: InvalidatedHunk[]): void {
    const delta = text.length - (to - from);
    const next = this.doc.slice(0, from) + text + this.doc.slice(to);
    for (const entry of this.entries.values()) {
      const region = entry.region;
      if (!region) continue;
      if (entry.status === 'accepted') {
        // Any change at or inside the lines (the Accept echo, minimized or not) ends the chance to restore.
        if (from <= region.end && to >= region.start) entry.region = undefined;
        else if (to <= region.start) {
          region.start += delta;
          region.end += delta;
        }
        continue;
      }
      let intact: boolean;
      if (to <= region.start) {
        region.start += delta;
        region.end += delta;
        intact = true;
      } else intact = from >= region.end;
      // Untouched characters are not enough: the hunk must still be whole lines, with nothing glued to its first
      // line from the left or to a last line that has no terminator.
      if (intact) intact = region.start === 0 || next.charCodeAt(region.start - 1) === 10;
      if (intact && region.end > region.start) intact = next.charCodeAt(region.end - 1) === 10 || region.end === next.length;
      if (!intact) {
        entry.status = 'invalidated';
        entry.region = undefined;
        dropped.push({ hunk: entry.hunk, reason: 'overlapping-edit' });
      }
    }
    this.setDoc(next);
  }

  private setDoc(text: string): void {
    this.doc = text;
    this.lineStartsCache = undefined;
  }

  /** Offsets where each VS Code line starts (after every `\n`; `\r\n` is one break since lone CRs are excluded). */
  private lineStarts(): number[] {
    if (!this.lineStartsCache) {
      const starts = [0];
      for (let i = this.doc.indexOf('\n'); i !== -1; i = this.doc.indexOf('\n', i + 1)) starts.push(i + 1);
      this.lineStartsCache = starts;
    }
    return this.lineStartsCache;
  }

  private offsetAt(line: number, character: number): number | undefined {
    const starts = this.lineStarts();
    if (!Number.isInteger(line) || !Number.isInteger(character) || line < 0 || character < 0 || line >= starts.length) return undefined;
    const start = starts[line]!;
    let end = line + 1 < starts.length ? starts[line + 1]! - 1 : this.doc.length;
    if (line + 1 < starts.length && end > start && this.doc.charCodeAt(end - 1) === 13) end--;
    return character <= end - start ? start + character : undefined;
  }

  private positionAt(offset: number): { line: number; character: number } {
    const starts = this.lineStarts();
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, character: offset - starts[lo]! };
  }

  private editFor(entry: Entry): TextChange {
    const region = entry.region!;
    const start = this.positionAt(region.start);
    const end = this.positionAt(region.end);
    return {
      rangeStartLine: start.line,
      rangeStartCharacter: start.character,
      rangeEndLine: end.line,
      rangeEndCharacter: end.character,
      text: entry.hunk.proposedText,
    };
  }
}
