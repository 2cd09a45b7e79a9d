/**
 * The pure half of the inline proposal (no vscode import): what goes into the document, where each hunk is, and what
 * every decision or user edit does to it. src/extension/inline-diff.ts applies the edits and draws the result.
 *
 * The model, as Continue's vertical diff and Copilot's inline chat show a rewrite: while a proposal is open the new
 * lines ARE in the document, right below the old lines they replace. Each hunk is two blocks of whole lines in the
 * text: red [start, mid) holds the old lines exactly as they were, green [mid, end) the proposed ones. Accept deletes
 * the red block, Reject the green one, so the text outside the proposal is never touched and a rejected hunk leaves
 * the old bytes exactly as they were (line endings and a missing final newline included). Where the old block ends
 * the file without a line break, one (`joint`, the document's EOL) is added between the blocks and removed again by
 * either decision.
 *
 * Offsets are UTF-16 indexes into the document text (`TextDocument.getText()`; VS Code documents use one EOL
 * throughout, and the proposal is converted to it). Every function returns a new state: states are values, which is
 * what lets the extension map any text the document returns to (undo, redo) back to the review state it had then.
 */
import { computeHunks, splitLines } from '../engine/candidate/diff';

export type Eol = '\n' | '\r\n';

/**
 * `code`: a change of the kernel. `values`: nothing but the `#ifndef NAME / #define NAME value / #endif` guards (or
 * plain `#define`s) that give the chosen parameter values: shown as one small hunk, folded, named by its values.
 */
export type HunkKind = 'code' | 'values';

/** One line-level change of the proposal, as the diff found it against the document when the proposal opened. */
export interface ProposedHunk {
  /** Unique within one review (and across the reviews of one window: `r<review>-<index>`). */
  readonly id: string;
  readonly kind: HunkKind;
  /** For `values` hunks: the names and values it defines, in order. */
  readonly values: readonly { name: string; value: string }[];
  /** 0-based line of the document (before the proposal opened) where the old lines start. */
  readonly originalStart: number;
  /** The old lines, with their line breaks. */
  readonly originalText: string;
  /** The proposed lines, with their line breaks (in the document's EOL). */
  readonly proposedText: string;
}

/** A pending hunk where it is now: red [start, mid), green [mid, end); `joint` characters at the end of red are ours. */
export interface HunkState {
  readonly hunk: ProposedHunk;
  readonly start: number;
  readonly mid: number;
  readonly end: number;
  /** 0, or the EOL's length: a line break added after an old last line that had none. */
  readonly joint: number;
}

export interface Tally {
  readonly accepted: number;
  readonly rejected: number;
  /** Hunks the user's own edits took out of the proposal (their text stays as the user left it). */
  readonly withdrawn: number;
}

export interface ReviewState {
  /** Serial number of the review this state belongs to. */
  readonly review: number;
  /** The document text in this state. */
  readonly text: string;
  readonly eol: Eol;
  /** The hunks still to decide, in document order. Empty: the review is over. */
  readonly pending: readonly HunkState[];
  readonly tally: Tally;
}

/** Replace [start, end) of the text the edit applies to by `text`. Edits of one list never overlap. */
export interface OffsetEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** What one action does: the edits to apply to `state.text`, and the state once they are applied. */
export interface Transition {
  readonly edits: readonly OffsetEdit[];
  readonly next: ReviewState;
}

/** A document change as VS Code reports it (`rangeOffset`, `rangeLength`, `text`), in the order it reports them. */
export interface TextChange {
  readonly rangeOffset: number;
  readonly rangeLength: number;
  readonly text: string;
}

export interface WithdrawnHunk {
  readonly hunk: ProposedHunk;
  readonly reason: 'edited' | 'out-of-sync';
}

// --- planning ----------------------------------------------------------------------------------------------------

export function convertEol(text: string, eol: Eol): string {
  return text.replace(/\r\n|\r|\n/g, eol);
}

const IFNDEF = /^\s*#\s*ifndef\s+([A-Za-z_]\w*)\s*$/;
const DEFINE = /^\s*#\s*define\s+([A-Za-z_]\w*)(?:\s+(.*?))?\s*$/;
const ENDIF = /^\s*#\s*endif\b/;

const bare = (line: string) => line.replace(/\r?\n$/, '');

/** How many lines at the start of `lines` are complete `#ifndef X / #define X v / #endif` guards, and what they define. */
function leadingGuards(lines: readonly string[]): { count: number; values: { name: string; value: string }[] } {
  const values: { name: string; value: string }[] = [];
  let i = 0;
  while (i + 2 < lines.length) {
    const name = IFNDEF.exec(bare(lines[i]!))?.[1];
    const define = DEFINE.exec(bare(lines[i + 1]!));
    if (!name || define?.[1] !== name || !ENDIF.test(bare(lines[i + 2]!))) break;
    values.push({ name, value: define[2] ?? '' });
    i += 3;
  }
  return { count: i, values };
}

/** The values of lines that are all `#define NAME value`, or undefined. */
function plainDefines(lines: readonly string[]): { name: string; value: string }[] | undefined {
  const values: { name: string; value: string }[] = [];
  for (const line of lines) {
    const m = DEFINE.exec(bare(line));
    if (!m) return undefined;
    values.push({ name: m[1]!, value: m[2] ?? '' });
  }
  return values;
}

/**
 * The hunks that turn `text` into `proposed` (converted to `eol`), line-level (each changed region its own hunk, as the
 * diff finds them). Guards that define the chosen values are split off the front of a hunk into a `values` hunk of their
 * own, so the kernel's changes read without them; a hunk that only changes plain `#define` values is a `values` hunk too.
 */
export function planHunks(text: string, proposed: string, eol: Eol, review: number): ProposedHunk[] {
  const out: ProposedHunk[] = [];
  const push = (kind: HunkKind, values: { name: string; value: string }[], originalStart: number, originalText: string, proposedText: string) =>
    out.push({ id: `r${review}-${out.length}`, kind, values, originalStart, originalText, proposedText });
  for (const h of computeHunks(text, convertEol(proposed, eol))) {
    const lines = splitLines(h.proposedText);
    const guards = leadingGuards(lines);
    const rest = lines.slice(guards.count).join('');
    if (guards.count > 0 && (rest !== '' || h.originalText !== '')) {
      push('values', guards.values, h.originalStart, '', lines.slice(0, guards.count).join(''));
      if (rest !== '' || h.originalText !== '') push('code', [], h.originalStart, h.originalText, rest);
      continue;
    }
    const oldDefines = h.originalText === '' ? [] : plainDefines(splitLines(h.originalText));
    const newValues = guards.count === lines.length && guards.count > 0 ? guards.values : plainDefines(lines);
    const isValues = oldDefines !== undefined && newValues !== undefined && newValues.length > 0;
    push(isValues ? 'values' : 'code', isValues ? newValues : [], h.originalStart, h.originalText, h.proposedText);
  }
  return out;
}

// --- opening and deciding ----------------------------------------------------------------------------------------

function lineOffsets(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/**
 * The same edits sorted, with edits that touch (one ends where the next starts) joined into one, in order: hunks split
 * from one change edit the same place, and an editor may refuse or reorder touching edits of one WorkspaceEdit.
 */
function mergeTouching(edits: readonly OffsetEdit[]): OffsetEdit[] {
  const out: OffsetEdit[] = [];
  for (const e of [...edits].sort((a, b) => a.start - b.start || a.end - b.end)) {
    const last = out.at(-1);
    if (last && last.end === e.start) out[out.length - 1] = { start: last.start, end: e.end, text: last.text + e.text };
    else out.push(e);
  }
  return out;
}

/** `text` with the edits applied (edits refer to `text`, do not overlap, any order). */
export function applyEdits(text: string, edits: readonly OffsetEdit[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start || b.end - a.end)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/**
 * Opens a review of `proposed` over `text`: the edits insert every hunk's new lines below its old ones. Undefined when
 * the proposal equals the text. `review` numbers the review (hunk ids carry it).
 */
export function openReview(text: string, proposed: string, eol: Eol, review: number): Transition | undefined {
  const hunks = planHunks(text, proposed, eol, review);
  if (hunks.length === 0) return undefined;
  const starts = lineOffsets(text);
  const edits: OffsetEdit[] = [];
  const pending: HunkState[] = [];
  let shift = 0;
  for (const hunk of hunks) {
    const at = hunk.originalStart < starts.length ? starts[hunk.originalStart]! : text.length;
    if (text.slice(at, at + hunk.originalText.length) !== hunk.originalText) throw new Error(`proposal: hunk ${hunk.id} does not match the document`);
    const redEnd = at + hunk.originalText.length;
    const joint = hunk.originalText !== '' && hunk.proposedText !== '' && !hunk.originalText.endsWith('\n') ? eol : '';
    const inserted = joint + hunk.proposedText;
    const start = at + shift;
    const mid = start + hunk.originalText.length + joint.length;
    pending.push({ hunk, start, mid, end: mid + hunk.proposedText.length, joint: joint.length });
    shift += inserted.length;
    edits.push({ start: redEnd, end: redEnd, text: inserted });
  }
  const merged = mergeTouching(edits);
  const next: ReviewState = { review, text: applyEdits(text, merged), eol, pending, tally: { accepted: 0, rejected: 0, withdrawn: 0 } };
  return { edits: merged, next };
}

function find(state: ReviewState, id: string): HunkState {
  const h = state.pending.find((p) => p.hunk.id === id);
  if (!h) throw new Error(`proposal: no pending hunk ${id}`);
  return h;
}

/** Removes ranges from the text and the decided hunks from `pending`, shifting the others. */
function remove(state: ReviewState, cuts: readonly { hunk: HunkState; start: number; end: number }[], tally: Tally): Transition {
  const decided = new Set(cuts.map((c) => c.hunk));
  const edits = mergeTouching(cuts.map((c) => ({ start: c.start, end: c.end, text: '' })));
  const shiftAt = (offset: number) => cuts.reduce((s, c) => (c.end <= offset ? s + (c.end - c.start) : s), 0);
  const pending = state.pending
    .filter((p) => !decided.has(p))
    .map((p) => {
      const d = shiftAt(p.start);
      return { ...p, start: p.start - d, mid: p.mid - d, end: p.end - d };
    });
  return { edits, next: { ...state, text: applyEdits(state.text, edits), pending, tally } };
}

const redCut = (h: HunkState) => ({ hunk: h, start: h.start, end: h.mid });
const greenCut = (h: HunkState) => ({ hunk: h, start: h.mid - h.joint, end: h.end });

/** Accept one hunk: its old lines go, its new lines stay. */
export function acceptHunk(state: ReviewState, id: string): Transition {
  return remove(state, [redCut(find(state, id))], { ...state.tally, accepted: state.tally.accepted + 1 });
}

/** Reject one hunk: its new lines go; the old ones are left exactly as they were. */
export function rejectHunk(state: ReviewState, id: string): Transition {
  return remove(state, [greenCut(find(state, id))], { ...state.tally, rejected: state.tally.rejected + 1 });
}

export function rejectAll(state: ReviewState): Transition {
  return remove(state, state.pending.map(greenCut), { ...state.tally, rejected: state.tally.rejected + state.pending.length });
}

/**
 * Accept every pending hunk, as two transitions: first every proposal comes out (the text as it was before the proposal,
 * with the user's own edits), then one edit puts the new lines in place of the old. Applied as two undo steps, one Undo
 * after Accept All gives back the text without the proposal, and a second one the open proposal.
 */
export function acceptAll(state: ReviewState): [Transition, Transition] {
  const greens = state.pending.map((h) => state.text.slice(h.mid, h.end));
  const n = state.pending.length;
  const tally = { ...state.tally, accepted: state.tally.accepted + n };
  // The review ends with the first step: its tally is the decision's (every hunk accepted), not the rejection it uses.
  const out = rejectAll(state);
  const first: Transition = { edits: out.edits, next: { ...out.next, tally } };
  let shift = 0;
  const edits: OffsetEdit[] = state.pending.map((h, i) => {
    const start = h.start - shift;
    const oldLength = h.mid - h.joint - h.start;
    shift += h.end - h.mid + h.joint;
    return { start, end: start + oldLength, text: greens[i]! };
  });
  const merged = mergeTouching(edits);
  const next: ReviewState = { ...state, text: applyEdits(first.next.text, merged), pending: [], tally };
  return [first, { edits: merged, next }];
}

/** The text as it would be with every pending hunk rejected: what a save writes while the proposal is open. */
export function textWithout(state: ReviewState): string {
  return rejectAll(state).next.text;
}

/** The text as it would be with every pending hunk accepted. */
export function textWith(state: ReviewState): string {
  return acceptAll(state)[1].next.text;
}

/** The edits that put the pending hunks back into `textWithout(state)` (after a save took them out). */
export function reinsert(state: ReviewState): readonly OffsetEdit[] {
  let shift = 0;
  return mergeTouching(
    state.pending.map((h) => {
      const at = h.mid - h.joint - shift;
      shift += h.end - h.mid + h.joint;
      return { start: at, end: at, text: state.text.slice(h.mid - h.joint, h.end) };
    }),
  );
}

// --- the user's edits --------------------------------------------------------------------------------------------

type Place = 'before' | 'red' | 'green' | 'after' | 'across';

/** Where a change of [from, to) inserting `text` falls relative to a hunk (boundaries resolved as a reader would). */
function placeOf(h: HunkState, from: number, to: number, text: string, docLength: number): Place {
  const { start, mid, end } = h;
  const endsLine = text.endsWith('\n');
  if (from === to) {
    if (from === start) {
      // Whole lines typed at the hunk's first line go above it; anything else joins that line.
      if (endsLine) return 'before';
      return start < mid ? 'red' : mid < end ? 'green' : 'after';
    }
    if (from === end) return end === docLength && end > start ? (mid < end ? 'green' : 'red') : 'after';
    if (from === mid) return mid < end ? 'green' : 'red';
    if (from < start) return 'before';
    if (from > end) return 'after';
    return from < mid ? 'red' : 'green';
  }
  if (to <= start) return 'before';
  if (from >= end) return 'after';
  if (from >= start && to <= mid - h.joint) return 'red';
  if (from >= mid && to <= end) return 'green';
  return 'across';
}

/** The hunk is still whole lines with its blocks intact (else the user's edit took it apart: it is withdrawn). */
function intact(h: HunkState, text: string, eol: Eol): boolean {
  const { start, mid, end, joint } = h;
  if (start > 0 && text.charCodeAt(start - 1) !== 10) return false;
  if (start === end) return false;
  if (joint > 0 && (mid - joint <= start || text.slice(mid - joint, mid) !== eol)) return false;
  const lineEnd = (at: number) => at === text.length || text.charCodeAt(at - 1) === 10;
  if (start < mid && !lineEnd(mid)) return false;
  if (mid < end && !lineEnd(end)) return false;
  return true;
}

/**
 * Follows the user's edits (in the order VS Code reports them). Edits inside a hunk's old or new lines stay in it (a
 * later Reject or Accept keeps or removes them with the block); edits around it move it. An edit across a hunk's
 * boundaries withdraws that hunk: the text stays exactly as the user left it. If a change does not fit the tracked text
 * (the document moved on without us), every hunk is withdrawn.
 */
export function applyChanges(state: ReviewState, changes: readonly TextChange[]): { next: ReviewState; withdrawn: WithdrawnHunk[] } {
  let text = state.text;
  let pending = [...state.pending];
  const withdrawn: WithdrawnHunk[] = [];
  for (const change of changes) {
    const from = change.rangeOffset;
    const to = from + change.rangeLength;
    if (from < 0 || to > text.length) {
      withdrawn.push(...pending.map((h) => ({ hunk: h.hunk, reason: 'out-of-sync' as const })));
      pending = [];
      continue;
    }
    const next = text.slice(0, from) + change.text + text.slice(to);
    const delta = change.text.length - change.rangeLength;
    const moved: HunkState[] = [];
    for (const h of pending) {
      const place = placeOf(h, from, to, change.text, text.length);
      const shifted =
        place === 'before' ? { ...h, start: h.start + delta, mid: h.mid + delta, end: h.end + delta }
        : place === 'red' ? { ...h, mid: h.mid + delta, end: h.end + delta }
        : place === 'green' ? { ...h, end: h.end + delta }
        : place === 'after' ? h
        : undefined;
      if (shifted && intact(shifted, next, state.eol)) moved.push(shifted);
      else withdrawn.push({ hunk: h.hunk, reason: 'edited' });
    }
    pending = moved;
    text = next;
  }
  return { next: { ...state, text, pending, tally: { ...state.tally, withdrawn: state.tally.withdrawn + withdrawn.length } }, withdrawn };
}

// --- reading the state -------------------------------------------------------------------------------------------

/** A review is open while it has pending hunks. */
export function isOpen(state: ReviewState | null | undefined): state is ReviewState {
  return state !== null && state !== undefined && state.pending.length > 0;
}

/** The pending hunk at `offset` (inside its lines), else the next one below, else the last one above. */
export function hunkNear(state: ReviewState, offset: number): HunkState | undefined {
  return hunkAt(state, offset) ?? state.pending.find((h) => h.start >= offset) ?? state.pending.at(-1);
}

/** The pending hunk whose lines hold `offset` (an offset at the very end of the text counts for a hunk ending there). */
export function hunkAt(state: ReviewState, offset: number): HunkState | undefined {
  return state.pending.find((h) => offset >= h.start && (offset < h.end || (h.end === state.text.length && offset === h.end)));
}

/** Lens text of a hunk: what it changes, in a few words. */
export function describeHunk(h: HunkState, text: string): string {
  if (h.hunk.kind === 'values') return `chosen values: ${h.hunk.values.map((v) => `${v.name} = ${v.value}`).join(', ')}`;
  const count = (s: string) => splitLines(s).length;
  const removed = count(text.slice(h.start, h.mid - h.joint));
  const added = count(text.slice(h.mid, h.end));
  return `+${added} −${removed}`;
}

/**
 * Remembers the review state of each text the document had (bounded, most recent kept), so that when Undo or Redo
 * brings the document back to one of them the review comes back with it. `null` marks a text with no review open.
 *
 * A decision that leaves the text as it was (Accept of a change that only adds lines, Reject of one that only removes
 * lines) is an undo step of its own too (the editor records it as the change's lines replaced by themselves), but the
 * text cannot tell its before from its after: such decisions are kept in order, and an Undo or Redo that leaves the
 * text as it was steps through them.
 */
export class ReviewTimeline {
  private readonly states = new Map<string, ReviewState | null>();
  private readonly unchanged: { before: ReviewState; after: ReviewState }[] = [];
  private readonly undone: { before: ReviewState; after: ReviewState }[] = [];

  constructor(private readonly capacity = 64) {}

  remember(text: string, state: ReviewState | null): void {
    this.states.delete(text);
    this.states.set(text, state);
    while (this.states.size > this.capacity) this.states.delete(this.states.keys().next().value!);
  }

  /** The state remembered for this text; undefined when the text was never seen (a new edit). */
  recall(text: string): ReviewState | null | undefined {
    return this.states.get(text);
  }

  /** A decision from `before` to `after` that leaves the text as it was. */
  rememberUnchanged(before: ReviewState, after: ReviewState): void {
    this.unchanged.push({ before, after });
    if (this.unchanged.length > this.capacity) this.unchanged.shift();
    this.undone.length = 0;
    this.remember(after.text, after);
  }

  /** The state an Undo that left the text as it was brings back from `current`; undefined when it undid no decision. */
  undoUnchanged(current: ReviewState | null): ReviewState | undefined {
    const last = this.unchanged.at(-1);
    if (!last || last.after !== current) return undefined;
    this.undone.push(this.unchanged.pop()!);
    this.remember(last.before.text, last.before);
    return last.before;
  }

  /** The state a Redo that left the text as it was brings back from `current`; undefined when it redid no decision. */
  redoUnchanged(current: ReviewState | null): ReviewState | undefined {
    const last = this.undone.at(-1);
    if (!last || last.before !== current) return undefined;
    this.unchanged.push(this.undone.pop()!);
    this.remember(last.after.text, last.after);
    return last.after;
  }
}

// --- beside the file ---------------------------------------------------------------------------------------------

/**
 * A change of a proposal reviewed beside its file (a diff of the file against the proposal, where auto-save would write
 * a proposal in the file half-applied): where it is in each, and the edit that takes it into the file.
 */
export interface AsideChange {
  /** Replaces the change's lines of the file by the proposal's (offsets into the file). */
  readonly edit: OffsetEdit;
  /** The change's lines as the file has them. */
  readonly fileText: string;
  /** 0-based lines, [start, end), in the file and in the proposal. */
  readonly fileLines: { readonly start: number; readonly end: number };
  readonly proposedLines: { readonly start: number; readonly end: number };
  /** Offsets of the change's lines in the proposal. */
  readonly proposedStart: number;
  readonly proposedEnd: number;
}

/** The line-level changes that turn `file` into `proposed` (already in the file's EOL), in order. */
export function asideChanges(file: string, proposed: string): AsideChange[] {
  const fileStarts = lineOffsets(file);
  const proposedStarts = lineOffsets(proposed);
  const at = (starts: number[], line: number, text: string) => (line < starts.length ? starts[line]! : text.length);
  return computeHunks(file, proposed).map((h) => {
    const start = at(fileStarts, h.originalStart, file);
    const proposedStart = at(proposedStarts, h.proposedStart, proposed);
    return {
      edit: { start, end: start + h.originalText.length, text: h.proposedText },
      fileText: h.originalText,
      fileLines: { start: h.originalStart, end: h.originalStart + h.originalLines.length },
      proposedLines: { start: h.proposedStart, end: h.proposedStart + h.proposedLines.length },
      proposedStart,
      proposedEnd: proposedStart + h.proposedText.length,
    };
  });
}

/** The proposal with one change taken back out, its lines as the file has them: Reject beside the file. */
export function withoutAsideChange(proposed: string, change: AsideChange): string {
  return proposed.slice(0, change.proposedStart) + change.fileText + proposed.slice(change.proposedEnd);
}

/** The change whose lines (of the file, or of the proposal) hold `line`, else the next one below, else the last. */
export function asideChangeAt(changes: readonly AsideChange[], side: 'file' | 'proposal', line: number): AsideChange | undefined {
  const lines = (c: AsideChange) => (side === 'file' ? c.fileLines : c.proposedLines);
  return changes.find((c) => line >= lines(c).start && line < Math.max(lines(c).end, lines(c).start + 1)) ?? changes.find((c) => lines(c).start >= line) ?? changes.at(-1);
}
