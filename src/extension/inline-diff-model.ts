/**
 * The pure half of the inline diff: what to draw for the pending hunks of a HunkSession, and how a session's proposal
 * is carried onto a document the user edited meanwhile. No vscode import, so both are unit-tested.
 *
 * Drawing follows src/engine/diff.ts's editor model: the document keeps its original lines while hunks are pending.
 * Removed lines are decorated in place; the inserted lines are not in the document, so they appear as one line of ghost
 * text at the end of the hunk (full text in its hover and in the side-by-side diff).
 */
import { HunkSession, type PendingHunk, type TextChange } from '../engine/diff';

export interface HunkDecoration {
  hunkId: string;
  /** Lines [startLine, endLine) to mark as removed; empty for a pure insertion. */
  removed: { startLine: number; endLine: number };
  /** Where the ghost text of the inserted lines goes: end of this line (0-based). */
  insertedAtLine: number;
  /** One-line preview of the inserted lines; empty for a pure deletion. */
  insertedPreview: string;
  /** The inserted lines, for the hover. */
  insertedText: string;
  /** Line of the Accept | Reject lens. */
  lensLine: number;
  added: number;
  deleted: number;
}

const PREVIEW_CHARS = 72;

/** One line summarising the inserted lines: `+N: first line … last line`, whitespace collapsed, bounded. */
export function previewInserted(lines: readonly string[]): string {
  if (lines.length === 0) return '';
  const squash = (s: string) => s.trim().replace(/\s+/g, ' ');
  const shown = lines.map(squash).filter((s) => s !== '');
  let body = shown.join(' ⏎ ');
  if (body.length > PREVIEW_CHARS) body = `${body.slice(0, PREVIEW_CHARS - 1)}…`;
  return `+${lines.length} line${lines.length === 1 ? '' : 's'}: ${body}`;
}

/**
 * Decorations for the pending hunks, in document order. `lineCount` is the document's number of lines: an insertion at
 * the end of the file (anchor == lineCount) shows on the last line.
 */
export function hunkDecorations(pending: readonly PendingHunk[], lineCount: number): HunkDecoration[] {
  const last = Math.max(0, lineCount - 1);
  return pending.map((p) => {
    const { startLine, endLine } = p.removedLines;
    // A replacement shows its new lines after the last removed line; a pure insertion after the line before it.
    const insertedAtLine = Math.min(last, endLine > startLine ? endLine - 1 : Math.max(0, startLine - 1));
    return {
      hunkId: p.hunk.id,
      removed: { startLine, endLine },
      insertedAtLine,
      insertedPreview: previewInserted(p.hunk.proposedLines),
      insertedText: p.hunk.proposedLines.join('\n'),
      lensLine: Math.min(last, p.anchorLine),
      added: p.hunk.proposedLines.length,
      deleted: p.hunk.originalLines.length,
    };
  });
}

/** The pending hunk the cursor is on, else the next one below it, else the last one above it. */
export function hunkAtLine(pending: readonly PendingHunk[], line: number): PendingHunk | undefined {
  const inside = pending.find((p) => line >= p.removedLines.startLine && line < Math.max(p.removedLines.endLine, p.removedLines.startLine + 1));
  return inside ?? pending.find((p) => p.anchorLine >= line) ?? pending.at(-1);
}

/**
 * The whole file with the tuned kernel in place of the original one. The engine hands back the whole file; a session
 * saved by an earlier version holds the kernel alone, which lacks what the file holds around it (includes, other
 * kernels, host code). Unless the final code already carries that text, it replaces only the original kernel's
 * definition (`kernelStart`..`kernelEnd`, string offsets), so nothing around it is lost.
 */
export function spliceFinalCode(original: string, finalCode: string, kernelStart: number, kernelEnd: number): string {
  const before = original.slice(0, kernelStart);
  const after = original.slice(kernelEnd);
  const outside = [...before.split('\n'), ...after.split('\n')].map((l) => l.trim()).filter((l) => l !== '');
  if (outside.every((line) => finalCode.includes(line))) return finalCode;
  return `${before}${finalCode.replace(/\s+$/, '')}${after}`;
}

/** The changes that turn `from` into `to`, as VS Code would report them (original coordinates, later ones first). */
function changesBetween(from: string, to: string): TextChange[] {
  const session = new HunkSession(from, to);
  // Applying in reverse document order keeps every earlier range valid, which is how rebase consumes a change list.
  return session.acceptAll().reverse();
}

/**
 * What to propose for a document now: the session changed `original` into `final`; the document holds `current`
 * (equal to `original` unless the user edited it meanwhile). The user's edits are kept; a change of the session whose
 * lines the user edited is left out and counted in `conflicts`.
 */
export function proposalForDocument(original: string, final: string, current: string): { proposed: string; conflicts: number } {
  if (current === original) return { proposed: final, conflicts: 0 };
  const session = new HunkSession(original, final);
  const dropped = session.rebase(changesBetween(original, current));
  const edits = session.acceptAll();
  let proposed = session.text;
  // Apply from the end so earlier positions stay valid.
  for (const edit of [...edits].reverse()) proposed = replaceRange(proposed, edit);
  return { proposed, conflicts: dropped.length };
}

function offsetOf(text: string, line: number, character: number): number {
  let offset = 0;
  for (let l = 0; l < line; l++) {
    const next = text.indexOf('\n', offset);
    if (next === -1) return text.length;
    offset = next + 1;
  }
  return offset + character;
}

function replaceRange(text: string, change: TextChange): string {
  const from = offsetOf(text, change.rangeStartLine, change.rangeStartCharacter);
  const to = offsetOf(text, change.rangeEndLine, change.rangeEndCharacter);
  return text.slice(0, from) + change.text + text.slice(to);
}
