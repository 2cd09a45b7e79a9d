/**
 * Line diff, unified diff and hunk application (the inline proposal in the editor, src/extension/proposal.ts, builds on
 * computeHunks).
 *
 * Line model. A text is a sequence of lines, each INCLUDING its terminator (`\n`, or `\r\n`); only the last line can
 * lack one. Lines are compared with their terminators, so a changed line ending or an added/removed final newline is a
 * real change, as in git. This is what makes the round trips byte-exact: applying no hunk gives the original, every
 * hunk gives the proposed text, whatever their line endings. A lone `\r` is line content, as in git.
 *
 * Algorithm. Myers' O((N+M)D) diff in its linear-space form (divide and conquer on the middle snake), after stripping
 * the common prefix and suffix, interning lines to integers and setting aside lines that occur on one side only
 * (they cannot match; GNU diff does the same), so a 5 000-line file with scattered edits takes milliseconds and two
 * unrelated files cost a linear scan. Near-worst cases (many changes among repeated lines) stay O((N+M)D).
 */

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

// --- Myers diff ------------------------------------------------------------------------------------------------------

interface ChangeMarks {
  readonly removed: Uint8Array;
  readonly added: Uint8Array;
}

/**
 * Finds a point on an optimal edit path of a[aLo,aHi) x b[bLo,bHi) strictly between its corners (Myers 1986, middle
 * snake). Precondition: both ranges non-empty, first elements differ, last elements differ (so D >= 2).
 */
function middlePoint(a: Int32Array, aLo: number, aHi: number, b: Int32Array, bLo: number, bHi: number): [number, number] {
  const n = aHi - aLo;
  const m = bHi - bLo;
  const delta = n - m;
  const odd = (delta & 1) !== 0;
  const half = Math.ceil((n + m) / 2);
  const offset = half + 1;
  // vf[offset + k]: furthest x of a forward path on diagonal k = x - y; vb likewise for paths from the end, with x
  // and y counted backwards. Diagonals whose point left the grid are excluded from later rounds (kfLo/kfHi...).
  const vf = new Int32Array(2 * half + 3);
  const vb = new Int32Array(2 * half + 3);
  let kfLo = 0;
  let kfHi = 0;
  let kbLo = 0;
  let kbHi = 0;
  for (let d = 0; d <= half; d++) {
    for (let k = -d + kfLo; k <= d - kfHi; k += 2) {
      let x = k === -d || (k !== d && vf[offset + k - 1]! < vf[offset + k + 1]!) ? vf[offset + k + 1]! : vf[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[aLo + x] === b[bLo + y]) {
        x++;
        y++;
      }
      vf[offset + k] = x;
      if (x > n) kfHi += 2;
      else if (y > m) kfLo += 2;
      else if (odd) {
        const kb = delta - k;
        if (kb >= -(d - 1) && kb <= d - 1 && x + vb[offset + kb]! >= n) return [aLo + x, bLo + y];
      }
    }
    for (let k = -d + kbLo; k <= d - kbHi; k += 2) {
      let x = k === -d || (k !== d && vb[offset + k - 1]! < vb[offset + k + 1]!) ? vb[offset + k + 1]! : vb[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[aHi - 1 - x] === b[bHi - 1 - y]) {
        x++;
        y++;
      }
      vb[offset + k] = x;
      if (x > n) kbHi += 2;
      else if (y > m) kbLo += 2;
      else if (!odd) {
        const kf = delta - k;
        if (kf >= -d && kf <= d && vf[offset + kf]! + x >= n) return [aHi - x, bHi - y];
      }
    }
  }
  throw new Error('diff: no middle snake found (unreachable for valid input)');
}

function markChanges(a: Int32Array, aLo: number, aHi: number, b: Int32Array, bLo: number, bHi: number, marks: ChangeMarks): void {
  while (aLo < aHi && bLo < bHi && a[aLo] === b[bLo]) {
    aLo++;
    bLo++;
  }
  while (aLo < aHi && bLo < bHi && a[aHi - 1] === b[bHi - 1]) {
    aHi--;
    bHi--;
  }
  if (aLo === aHi) {
    marks.added.fill(1, bLo, bHi);
    return;
  }
  if (bLo === bHi) {
    marks.removed.fill(1, aLo, aHi);
    return;
  }
  const [x, y] = middlePoint(a, aLo, aHi, b, bLo, bHi);
  markChanges(a, aLo, x, b, bLo, y, marks);
  markChanges(a, x, aHi, b, y, bHi, marks);
}

/** A maximal run of changed lines: original lines [aStart, aEnd) become proposed lines [bStart, bEnd). */
interface ChangeGroup {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

function diffLines(aLines: readonly string[], bLines: readonly string[]): ChangeGroup[] {
  const ids = new Map<string, number>();
  const intern = (lines: readonly string[]): Int32Array => {
    const out = new Int32Array(lines.length);
    lines.forEach((line, i) => {
      let id = ids.get(line);
      if (id === undefined) {
        id = ids.size;
        ids.set(line, id);
      }
      out[i] = id;
    });
    return out;
  };
  const a = intern(aLines);
  const b = intern(bLines);
  const marks: ChangeMarks = { removed: new Uint8Array(a.length), added: new Uint8Array(b.length) };
  // A line absent from the other side is in no common subsequence: mark it changed and run Myers on the rest only.
  // The result stays minimal, and two unrelated files cost O(N + M) instead of O((N + M)^2).
  const inA = new Uint8Array(ids.size);
  const inB = new Uint8Array(ids.size);
  a.forEach((id) => (inA[id] = 1));
  b.forEach((id) => (inB[id] = 1));
  const keptA: number[] = [];
  const keptB: number[] = [];
  a.forEach((id, i) => (inB[id] ? keptA.push(i) : (marks.removed[i] = 1)));
  b.forEach((id, j) => (inA[id] ? keptB.push(j) : (marks.added[j] = 1)));
  const fa = Int32Array.from(keptA, (i) => a[i]!);
  const fb = Int32Array.from(keptB, (j) => b[j]!);
  const sub: ChangeMarks = { removed: new Uint8Array(fa.length), added: new Uint8Array(fb.length) };
  markChanges(fa, 0, fa.length, fb, 0, fb.length, sub);
  sub.removed.forEach((m, k) => (marks.removed[keptA[k]!] = m));
  sub.added.forEach((m, k) => (marks.added[keptB[k]!] = m));

  const groups: ChangeGroup[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && !marks.removed[i] && !marks.added[j]) {
      i++;
      j++;
      continue;
    }
    const group: ChangeGroup = { aStart: i, aEnd: i, bStart: j, bEnd: j };
    while (i < a.length && marks.removed[i]) i++;
    while (j < b.length && marks.added[j]) j++;
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

function rangeHeader(start: number, count: number): string {
  if (count === 0) return `${start},0`;
  return count === 1 ? `${start + 1}` : `${start + 1},${count}`;
}

/**
 * A git-compatible unified diff from `original` to `proposed` (`git apply` / `patch -p1` accept it). Line endings
 * are emitted as they are in the texts; a missing final newline gets git's `\ No newline at end of file` marker.
 * Identical texts give `''`.
 */
export function unifiedDiff(original: string, proposed: string, options: UnifiedDiffOptions): string {
  const context = options.context ?? 3;
  if (!Number.isInteger(context) || context < 0) throw new RangeError(`unifiedDiff: context must be a non-negative integer, got ${context}`);
  if (original === proposed) return '';
  const aLines = splitLines(original);
  const bLines = splitLines(proposed);
  const groups = diffLines(aLines, bLines);
  const out: string[] = [`--- a/${options.fileName}\n`, `+++ b/${options.fileName}\n`];
  const emit = (prefix: string, line: string): void => {
    out.push(prefix, line);
    if (!line.endsWith('\n')) out.push('\n\\ No newline at end of file\n');
  };
  let g = 0;
  while (g < groups.length) {
    // Changes whose context would touch or overlap share one @@ block, as in git.
    let last = g;
    while (last + 1 < groups.length && groups[last + 1]!.aStart - groups[last]!.aEnd <= 2 * context) last++;
    const first = groups[g]!;
    const end = groups[last]!;
    const aFrom = Math.max(0, first.aStart - context);
    const aTo = Math.min(aLines.length, end.aEnd + context);
    const bFrom = first.bStart - (first.aStart - aFrom);
    const bTo = end.bEnd + (aTo - end.aEnd);
    out.push(`@@ -${rangeHeader(aFrom, aTo - aFrom)} +${rangeHeader(bFrom, bTo - bFrom)} @@\n`);
    let a = aFrom;
    for (let i = g; i <= last; i++) {
      const group = groups[i]!;
      for (; a < group.aStart; a++) emit(' ', aLines[a]!);
      for (let r = group.aStart; r < group.aEnd; r++) emit('-', aLines[r]!);
      for (let r = group.bStart; r < group.bEnd; r++) emit('+', bLines[r]!);
      a = group.aEnd;
    }
    for (; a < aTo; a++) emit(' ', aLines[a]!);
    g = last + 1;
  }
  return out.join('');
}
