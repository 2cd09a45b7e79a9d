/**
 * Line diff, unified diff and hunk application (the inline proposal in the editor, src/extension/proposal.ts, builds on
 * computeHunks).
 *
 * Line model. A text is a sequence of lines, each INCLUDING its terminator (`\n`, or `\r\n`); only the last line can
 * lack one. Lines are compared with their terminators, so a changed line ending or an added/removed final newline is a
 * real change, as in git. This is what makes the round trips byte-exact: applying no hunk gives the original, every
 * hunk gives the proposed text, whatever their line endings. A lone `\r` is line content, as in git.
 *
 * Algorithm. jsdiff (the `diff` package): Myers' O((N+M)D) diff. Lines occurring on one side only are set aside
 * before it runs (they cannot match; GNU diff does the same), so the result stays minimal and two unrelated files cost
 * a linear scan instead of jsdiff's quadratic worst case.
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

const DISPLAY_CONTEXT = 3;

/** Splits after every `\n`; each element keeps its terminator, the last may have none. `''` has no lines. */
export function splitLines(text: string): string[] {
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
