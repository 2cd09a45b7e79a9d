import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  HunkSession,
  applyHunks,
  computeHunks,
  detectEol,
  normalizeEol,
  unifiedDiff,
  type Hunk,
  type TextChange,
} from '../../src/engine/diff.js';
import { rng } from '../support/seeded-random';

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const int = (r: () => number, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));

const lines = (...xs: string[]): string => xs.map((x) => `${x}\n`).join('');

function changedLineCount(hunks: Hunk[]): number {
  return hunks.reduce((n, h) => n + h.originalLines.length + h.proposedLines.length, 0);
}

/** Reference LCS length by dynamic programming, to check the diff is minimal. */
function lcsLength(a: string[], b: string[]): number {
  const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) dp[i]![j] = a[i] === b[j] ? dp[i + 1]![j + 1]! + 1 : Math.max(dp[i + 1]![j]!, dp[i]![j + 1]!);
  return dp[0]![0]!;
}
const rawLines = (t: string): string[] => t.match(/[^\n]*\n|[^\n]+$/g) ?? [];

describe('computeHunks', () => {
  it('gives no hunks for identical texts, including empty ones', () => {
    expect(computeHunks('', '')).toEqual([]);
    expect(computeHunks('a\nb\n', 'a\nb\n')).toEqual([]);
    expect(computeHunks('a\r\nb', 'a\r\nb')).toEqual([]);
  });

  it('finds a pure insertion', () => {
    const [h, ...rest] = computeHunks(lines('a', 'b', 'c'), lines('a', 'b', 'x', 'y', 'c'));
    expect(rest).toEqual([]);
    expect(h).toMatchObject({ originalStart: 2, originalLines: [], proposedStart: 2, proposedLines: ['x', 'y'], originalText: '', proposedText: 'x\ny\n' });
    expect(h!.contextBefore).toEqual(['a', 'b']);
    expect(h!.contextAfter).toEqual(['c']);
  });

  it('finds a pure deletion', () => {
    const hunks = computeHunks(lines('a', 'b', 'c', 'd'), lines('a', 'd'));
    expect(hunks).toHaveLength(1);
    expect(hunks[0]).toMatchObject({ originalStart: 1, originalLines: ['b', 'c'], proposedLines: [], proposedText: '' });
  });

  it('finds a replacement as one hunk', () => {
    const hunks = computeHunks(lines('a', 'b', 'c'), lines('a', 'B', 'c'));
    expect(hunks).toHaveLength(1);
    expect(hunks[0]).toMatchObject({ originalStart: 1, originalLines: ['b'], proposedLines: ['B'] });
  });

  it('keeps changes separated by one unchanged line apart, and merges touching changed lines', () => {
    const apart = computeHunks(lines('a', 'b', 'c', 'd', 'e'), lines('a', 'B', 'c', 'D', 'e'));
    expect(apart.map((h) => [h.originalStart, h.originalLines, h.proposedLines])).toEqual([
      [1, ['b'], ['B']],
      [3, ['d'], ['D']],
    ]);
    const touching = computeHunks(lines('a', 'b', 'c', 'd'), lines('a', 'B', 'C', 'd'));
    expect(touching).toHaveLength(1);
    expect(touching[0]).toMatchObject({ originalLines: ['b', 'c'], proposedLines: ['B', 'C'] });
  });

  it('handles changes at the very start and the very end of the file', () => {
    const hunks = computeHunks(lines('a', 'b', 'c'), lines('z', 'b', 'c', 'd'));
    expect(hunks.map((h) => [h.originalStart, h.originalLines, h.proposedLines])).toEqual([
      [0, ['a'], ['z']],
      [3, [], ['d']],
    ]);
    expect(hunks[0]!.contextBefore).toEqual([]);
    expect(hunks[1]!.contextAfter).toEqual([]);
  });

  it('handles an empty original and an empty proposal', () => {
    expect(computeHunks('', 'a\nb')).toEqual([expect.objectContaining({ originalStart: 0, originalLines: [], proposedLines: ['a', 'b'], proposedText: 'a\nb' })]);
    expect(computeHunks('a\n', '')).toEqual([expect.objectContaining({ originalLines: ['a'], originalText: 'a\n', proposedText: '' })]);
  });

  it('keeps CRLF terminators in the texts and strips them from the lines', () => {
    const original = 'a\r\nb\r\nc\r\n';
    const proposed = 'a\r\nB\r\nc\r\n';
    const hunks = computeHunks(original, proposed);
    expect(hunks).toHaveLength(1);
    expect(hunks[0]).toMatchObject({ originalLines: ['b'], proposedLines: ['B'], originalText: 'b\r\n', proposedText: 'B\r\n', contextBefore: ['a'] });
    expect(applyHunks(original, hunks, [hunks[0]!.id])).toBe(proposed);
  });

  it('treats a different line ending as a change (byte exactness)', () => {
    const hunks = computeHunks('a\r\nb\r\n', 'a\r\nb\n');
    expect(hunks).toHaveLength(1);
    expect(hunks[0]).toMatchObject({ originalLines: ['b'], proposedLines: ['b'], originalText: 'b\r\n', proposedText: 'b\n' });
  });

  it('treats an added or removed final newline as a change of the last line', () => {
    const add = computeHunks('a\nb', 'a\nb\n');
    expect(add).toHaveLength(1);
    expect(add[0]).toMatchObject({ originalStart: 1, originalText: 'b', proposedText: 'b\n' });
    const keepMissing = computeHunks('a\nb', 'A\nb');
    expect(keepMissing).toHaveLength(1);
    expect(applyHunks('a\nb', keepMissing, [keepMissing[0]!.id])).toBe('A\nb');
  });

  it('derives ids from position and content: stable across calls, different for different content', () => {
    const a = computeHunks(lines('a', 'b', 'c', 'd', 'e'), lines('a', 'B', 'c', 'D', 'e'));
    const again = computeHunks(lines('a', 'b', 'c', 'd', 'e'), lines('a', 'B', 'c', 'D', 'e'));
    expect(again.map((h) => h.id)).toEqual(a.map((h) => h.id));
    expect(new Set(a.map((h) => h.id)).size).toBe(2);
    const other = computeHunks(lines('a', 'b', 'c', 'd', 'e'), lines('a', 'X', 'c', 'D', 'e'));
    expect(other[0]!.id).not.toBe(a[0]!.id);
    expect(other[1]!.id).toBe(a[1]!.id);
  });

  it('is minimal and exact on random inputs (checked against a DP LCS)', () => {
    const r = rng(7);
    for (let iter = 0; iter < 330; iter++) {
      // Mostly tiny inputs (every corner), then some of a few hundred lines (deep recursion, both parities of N - M).
      const maxLines = iter < 300 ? 14 : 300;
      const make = (): string => {
        const n = int(r, 0, maxLines);
        let t = '';
        for (let i = 0; i < n; i++) t += pick(r, ['a', 'b', 'c', 'd', '']) + pick(r, ['\n', '\n', '\r\n']);
        if (r() < 0.3) t += pick(r, ['a', 'b']);
        return t;
      };
      const a = make();
      const b = make();
      const hunks = computeHunks(a, b);
      const al = rawLines(a);
      const bl = rawLines(b);
      expect(changedLineCount(hunks)).toBe(al.length + bl.length - 2 * lcsLength(al, bl));
      expect(applyHunks(a, hunks, hunks.map((h) => h.id))).toBe(b);
      expect(applyHunks(a, hunks, [])).toBe(a);
    }
  });
});

describe('applyHunks', () => {
  // Three change sites between unchanged blocks; each subset of accepted hunks has an independently built result.
  const blocks = [lines('#include <cuda.h>', ''), lines('__global__ void k(float* x) {'), lines('  int i = threadIdx.x;'), lines('}', '')];
  const sites = [
    { original: lines('// v1'), proposed: lines('// tuned', '#define block_size_x 128') },
    { original: lines('  x[i] = 0;', '  x[i] += 1;'), proposed: lines('  x[i] = 1;') },
    { original: '', proposed: lines('  // done') },
  ];
  const build = (take: (i: number) => boolean): string =>
    blocks.map((block, i) => (i === 0 ? '' : take(i - 1) ? sites[i - 1]!.proposed : sites[i - 1]!.original) + block).join('');
  const original = build(() => false);
  const proposed = build(() => true);
  const hunks = computeHunks(original, proposed);

  it('yields exactly the three sites', () => {
    expect(hunks).toHaveLength(3);
  });

  it('matches the reference for every subset of accepted hunks', () => {
    for (let mask = 0; mask < 8; mask++) {
      const accepted = hunks.filter((_, i) => mask & (1 << i)).map((h) => h.id);
      expect(applyHunks(original, hunks, accepted)).toBe(build((i) => (mask & (1 << i)) !== 0));
    }
    expect(applyHunks(original, hunks, [])).toBe(original);
    expect(applyHunks(original, hunks, hunks.map((h) => h.id))).toBe(proposed);
  });

  it('rejects unknown ids and hunks from another text', () => {
    expect(() => applyHunks(original, hunks, ['nope'])).toThrow(/unknown hunk/);
    expect(() => applyHunks(original.replace('// v1', '// v0'), hunks, [])).toThrow(/does not match/);
  });
});

describe('unifiedDiff', () => {
  const work = mkdtempSync(join(tmpdir(), 'lkt-diff-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  let n = 0;
  /** Applies the diff with `git apply` (after --check) and with `patch`, returning both results. */
  function applyWithTools(original: string, proposed: string): { git: string; patch: string; diff: string } {
    const dir = join(work, `case${n++}`);
    execFileSync('git', ['init', '-q', dir]);
    const file = join(dir, 'src', 'kernel.cu');
    execFileSync('mkdir', ['-p', join(dir, 'src')]);
    const diff = unifiedDiff(original, proposed, { fileName: 'src/kernel.cu' });
    const patchFile = join(work, `case${n}.patch`);
    writeFileSync(patchFile, diff);
    writeFileSync(file, original);
    const git = ['-c', 'core.autocrlf=false', '-c', 'core.whitespace=cr-at-eol', '-C', dir];
    execFileSync('git', [...git, 'apply', '--whitespace=nowarn', '--check', patchFile]);
    execFileSync('git', [...git, 'apply', '--whitespace=nowarn', patchFile]);
    const viaGit = readFileSync(file, 'utf8');
    writeFileSync(file, original);
    execFileSync('patch', ['-s', '-p1', '--dry-run', '-i', patchFile], { cwd: dir });
    execFileSync('patch', ['-s', '-p1', '--binary', '-i', patchFile], { cwd: dir });
    return { git: viaGit, patch: readFileSync(file, 'utf8'), diff };
  }

  it('produces the standard format with merged context', () => {
    const original = lines('1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15', '16', '17', '18', '19', '20');
    const proposed = original.replace('2\n', 'two\n').replace('5\n', '').replace('18\n', '18\neighteen-and-a-half\n');
    expect(unifiedDiff(original, proposed, { fileName: 'k.cu' })).toBe(
      [
        '--- a/k.cu',
        '+++ b/k.cu',
        '@@ -1,8 +1,7 @@',
        ' 1',
        '-2',
        '+two',
        ' 3',
        ' 4',
        '-5',
        ' 6',
        ' 7',
        ' 8',
        '@@ -16,5 +15,6 @@',
        ' 16',
        ' 17',
        ' 18',
        '+eighteen-and-a-half',
        ' 19',
        ' 20',
        '',
      ].join('\n'),
    );
    expect(unifiedDiff(original, original, { fileName: 'k.cu' })).toBe('');
  });

  it('marks a missing final newline like git', () => {
    expect(unifiedDiff('a\nb', 'a\nc', { fileName: 'f', context: 1 })).toBe(
      '--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n',
    );
  });

  const cases: [string, string, string][] = [
    ['replace, insert and delete', lines('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'), lines('a', 'B', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k').replace('f\n', '')],
    ['CRLF file', 'a\r\nb\r\nc\r\nd\r\n', 'a\r\nB\r\nc\r\nd\r\ne\r\n'],
    ['no final newline, changed last line', 'x\ny\nz', 'x\ny\nZ'],
    ['final newline added', 'x\ny\nz', 'x\ny\nz\n'],
    ['final newline removed', 'x\ny\nz\n', 'x\ny\nz'],
    ['empty original', '', 'new\nfile\n'],
    ['everything removed', 'old\nfile\n', ''],
    ['insert at the start', lines('b', 'c'), lines('a', 'b', 'c')],
  ];
  it.each(cases)('applies with git apply and patch: %s', (_name, original, proposed) => {
    const { git, patch, diff } = applyWithTools(original, proposed);
    expect(diff.startsWith('--- a/src/kernel.cu\n+++ b/src/kernel.cu\n@@ ')).toBe(true);
    expect(git).toBe(proposed);
    expect(patch).toBe(proposed);
  });

  it('applies with git for random edits of a kernel-sized file', () => {
    const r = rng(99);
    const base = Array.from({ length: 120 }, (_, i) => `line ${i} ${pick(r, ['{', '}', 'x = y;', ''])}`);
    const next = base.flatMap((l) => (r() < 0.05 ? [] : r() < 0.05 ? [l, `new ${l}`] : r() < 0.05 ? [`${l} // changed`] : [l]));
    const original = base.join('\n') + '\n';
    const proposed = next.join('\n');
    expect(applyWithTools(original, proposed).git).toBe(proposed);
  });

  it('changes as many lines as computeHunks, both minimal (seeded)', () => {
    const r = rng(31);
    for (let iter = 0; iter < 100; iter++) {
      const make = (): string => Array.from({ length: int(r, 0, 20) }, () => pick(r, ['a', 'b', 'c', '{', '}'])).join('\n') + (r() < 0.7 ? '\n' : '');
      const a = make();
      const b = make();
      const body = unifiedDiff(a, b, { fileName: 'f', context: 2 }).split('\n').slice(2);
      const hunks = computeHunks(a, b);
      expect(body.filter((l) => l.startsWith('-')).length).toBe(hunks.reduce((n, h) => n + h.originalLines.length, 0));
      expect(body.filter((l) => l.startsWith('+')).length).toBe(hunks.reduce((n, h) => n + h.proposedLines.length, 0));
    }
  });

  it('validates context', () => {
    expect(() => unifiedDiff('a', 'b', { fileName: 'f', context: -1 })).toThrow(RangeError);
  });
});

describe('performance', () => {
  const r = rng(5);
  const file = Array.from({ length: 5000 }, (_, i) => `    value_${i} = compute(${i % 97}, ${Math.floor(r() * 1e6)});`);

  it('diffs a 5 000-line file with scattered edits quickly', () => {
    const edited = file.flatMap((l, i) => (i % 50 === 7 ? [`${l} // tuned`] : i % 211 === 3 ? [] : i % 173 === 11 ? [l, '    __syncthreads();'] : [l]));
    const a = file.join('\n') + '\n';
    const b = edited.join('\n') + '\n';
    const t0 = performance.now();
    const hunks = computeHunks(a, b);
    const ms = performance.now() - t0;
    expect(applyHunks(a, hunks, hunks.map((h) => h.id))).toBe(b);
    expect(hunks.length).toBeGreaterThan(100);
    expect(ms).toBeLessThan(500);
  });

  it('diffs 5 000 lines of few distinct values with heavy edits (large D, every line matchable) in bounded time', () => {
    const vocab = ['{', '}', '', '  __syncthreads();', '  sum += a[i];', '  i += stride;', '  if (i < n) {', '  }'];
    const a = Array.from({ length: 5000 }, () => pick(r, vocab));
    const b = a.flatMap((l) => (r() < 0.15 ? [] : r() < 0.15 ? [pick(r, vocab), l] : r() < 0.1 ? [pick(r, vocab)] : [l]));
    const at = a.join('\n') + '\n';
    const bt = b.join('\n') + '\n';
    const t0 = performance.now();
    const hunks = computeHunks(at, bt);
    const ms = performance.now() - t0;
    expect(applyHunks(at, hunks, hunks.map((h) => h.id))).toBe(bt);
    expect(ms).toBeLessThan(3000);
  });

  it('diffs two unrelated 5 000-line files in linear time (no line matches)', () => {
    const a = file.join('\n') + '\n';
    const b = file.map((l) => `${l} /* other */`).join('\n') + '\n';
    const t0 = performance.now();
    const hunks = computeHunks(a, b);
    const ms = performance.now() - t0;
    expect(hunks).toHaveLength(1);
    expect(hunks[0]!.originalLines).toHaveLength(5000);
    expect(ms).toBeLessThan(3000);
  });
});

describe('EOL helpers', () => {
  it('detects the dominant line ending and normalizes all breaks', () => {
    expect(detectEol('a\r\nb\r\nc\n')).toBe('\r\n');
    expect(detectEol('a\nb\n')).toBe('\n');
    expect(detectEol('abc')).toBeUndefined();
    expect(normalizeEol('a\nb\r\nc\rd', '\r\n')).toBe('a\r\nb\r\nc\r\nd');
    expect(normalizeEol('a\r\nb\r\n', '\n')).toBe('a\nb\n');
  });
});

// --- HunkSession ------------------------------------------------------------------------------------------------------

/** Offset of a VS Code position in an LF/CRLF document (independent of the session's own bookkeeping). */
function offsetOf(doc: string, line: number, character: number): number {
  let start = 0;
  for (let l = 0; l < line; l++) {
    const nl = doc.indexOf('\n', start);
    if (nl === -1) throw new Error(`line ${line} out of range`);
    start = nl + 1;
  }
  return start + character;
}
function positionOf(doc: string, offset: number): { line: number; character: number } {
  const before = doc.slice(0, offset);
  const line = (before.match(/\n/g) ?? []).length;
  return { line, character: offset - (before.lastIndexOf('\n') + 1) };
}
function change(doc: string, from: number, to: number, text: string): TextChange {
  const s = positionOf(doc, from);
  const e = positionOf(doc, to);
  return { rangeStartLine: s.line, rangeStartCharacter: s.character, rangeEndLine: e.line, rangeEndCharacter: e.character, text };
}
function applyOne(doc: string, c: TextChange): string {
  return doc.slice(0, offsetOf(doc, c.rangeStartLine, c.rangeStartCharacter)) + c.text + doc.slice(offsetOf(doc, c.rangeEndLine, c.rangeEndCharacter));
}
/** Applies edits the way VS Code does (all ranges refer to the same document) and returns the change events it reports. */
function applyEdits(doc: string, edits: readonly TextChange[]): { doc: string; events: TextChange[] } {
  const sorted = [...edits].sort((x, y) => offsetOf(doc, y.rangeStartLine, y.rangeStartCharacter) - offsetOf(doc, x.rangeStartLine, x.rangeStartCharacter));
  let next = doc;
  for (const e of sorted) next = applyOne(next, e);
  return { doc: next, events: sorted };
}

describe('HunkSession', () => {
  const original = lines('a', 'b', 'c', 'd', 'e', 'f', 'g');
  const proposed = lines('a', 'B', 'c', 'd', 'e', 'F', 'g', 'h');

  it('starts with every hunk pending on its original lines and the document untouched', () => {
    const s = new HunkSession(original, proposed);
    expect(s.text).toBe(original);
    const pending = s.pending();
    expect(pending.map((p) => [p.anchorLine, p.removedLines.startLine, p.removedLines.endLine, p.hunk.proposedLines])).toEqual([
      [1, 1, 2, ['B']],
      [5, 5, 6, ['F']],
      [7, 7, 7, ['h']],
    ]);
    expect(pending[0]!.edit).toEqual({ rangeStartLine: 1, rangeStartCharacter: 0, rangeEndLine: 2, rangeEndCharacter: 0, text: 'B\n' });
  });

  it('accepting everything gives the proposal; rejecting everything changes nothing', () => {
    const s = new HunkSession(original, proposed);
    const { doc, events } = applyEdits(original, s.acceptAll());
    expect(doc).toBe(proposed);
    expect(s.rebase(events)).toEqual([]);
    expect(s.text).toBe(proposed);
    expect(s.done).toBe(true);

    const r = new HunkSession(original, proposed);
    r.rejectAll();
    expect(r.text).toBe(original);
    expect(r.pending()).toEqual([]);
    expect(r.done).toBe(true);
  });

  it('keeps hunks anchored when lines are inserted above, and the accept edit lands on the right lines', () => {
    const s = new HunkSession(original, proposed);
    let doc = original;
    const typed = change(doc, 0, 0, '// header\n// more\n');
    doc = applyOne(doc, typed);
    expect(s.rebase(typed)).toEqual([]);
    expect(s.pending().map((p) => p.anchorLine)).toEqual([3, 7, 9]);
    const id = s.pending()[1]!.hunk.id;
    const { doc: after, events } = applyEdits(doc, s.accept(id));
    doc = after;
    s.rebase(events);
    expect(doc).toBe('// header\n// more\n' + lines('a', 'b', 'c', 'd', 'e', 'F', 'g'));
    expect(s.status(id)).toBe('accepted');
    expect(s.pending().map((p) => p.anchorLine)).toEqual([3, 9]);
    expect(s.text).toBe(doc);
  });

  it('drops a hunk whose lines are edited and reports it, leaving the others usable', () => {
    const s = new HunkSession(original, proposed);
    let doc = original;
    const edit = change(doc, offsetOf(doc, 5, 0), offsetOf(doc, 5, 1), 'f2');
    doc = applyOne(doc, edit);
    const dropped = s.rebase(edit);
    expect(dropped.map((d) => [d.hunk.originalLines, d.reason])).toEqual([[['f'], 'overlapping-edit']]);
    expect(s.status(dropped[0]!.hunk.id)).toBe('invalidated');
    expect(() => s.accept(dropped[0]!.hunk.id)).toThrow(/invalidated/);
    const { doc: final, events } = applyEdits(doc, s.acceptAll());
    s.rebase(events);
    expect(final).toBe(lines('a', 'B', 'c', 'd', 'e', 'f2', 'g', 'h'));
  });

  it('distinguishes a new line above a hunk (kept) from text glued onto its first line (dropped)', () => {
    const s = new HunkSession(original, proposed);
    let doc = original;
    const above = change(doc, offsetOf(doc, 1, 0), offsetOf(doc, 1, 0), 'new\n');
    doc = applyOne(doc, above);
    expect(s.rebase(above)).toEqual([]);
    const glued = change(doc, offsetOf(doc, 2, 0), offsetOf(doc, 2, 0), 'x');
    doc = applyOne(doc, glued);
    expect(s.rebase(glued).map((d) => d.hunk.originalLines)).toEqual([['b']]);
    const joinLines = change(doc, offsetOf(doc, 6, 0) - 1, offsetOf(doc, 6, 0), '');
    doc = applyOne(doc, joinLines);
    expect(s.rebase(joinLines).map((d) => d.hunk.originalLines)).toEqual([['f']]);
    expect(s.text).toBe(doc);
  });

  it('drops an end-of-file insertion when the final newline is deleted', () => {
    const s = new HunkSession('a\nb\n', 'a\nb\nc\n');
    const del = change('a\nb\n', 3, 4, '');
    expect(s.rebase(del).map((d) => d.hunk.proposedLines)).toEqual([['c']]);
  });

  it('works on CRLF documents and normalizes an LF proposal to CRLF', () => {
    const doc = 'a\r\nb\r\nc\r\n';
    const s = new HunkSession(doc, 'a\nB\nc\nd\n');
    expect(s.proposed).toBe('a\r\nB\r\nc\r\nd\r\n');
    const typed = { rangeStartLine: 0, rangeStartCharacter: 1, rangeEndLine: 0, rangeEndCharacter: 1, text: '!' };
    const doc2 = applyOne(doc, typed);
    expect(s.rebase(typed)).toEqual([]);
    const { doc: final, events } = applyEdits(doc2, s.acceptAll());
    s.rebase(events);
    expect(final).toBe('a!\r\nB\r\nc\r\nd\r\n');
    expect(s.text).toBe(final);
  });

  it("uses the document's line ending when given, even if the text cannot tell it", () => {
    expect(new HunkSession('one line', 'one line\nand more\n', { eol: '\r\n' }).proposed).toBe('one line\r\nand more\r\n');
    expect(new HunkSession('one line', 'one line\r\nand more\r\n').proposed).toBe('one line\r\nand more\r\n');
  });

  it('restores an accepted hunk whose edit was refused, but never one whose edit landed', () => {
    const s = new HunkSession(original, proposed);
    const id = s.pending()[0]!.hunk.id;
    s.accept(id);
    s.restore(id);
    expect(s.status(id)).toBe('pending');
    const { doc, events } = applyEdits(original, s.accept(id));
    s.rebase(events);
    expect(() => s.restore(id)).toThrow(/not an accepted hunk/);
    expect(s.text).toBe(doc);

    const ins = new HunkSession('a\n', 'a\nb\n');
    const insId = ins.pending()[0]!.hunk.id;
    ins.rebase(applyEdits('a\n', ins.accept(insId)).events);
    expect(() => ins.restore(insId)).toThrow();
  });

  it('drops everything when a change does not fit the tracked text, or the text is out of sync', () => {
    const s = new HunkSession(original, proposed);
    const bad = { rangeStartLine: 99, rangeStartCharacter: 0, rangeEndLine: 99, rangeEndCharacter: 0, text: 'x' };
    expect(s.rebase(bad).map((d) => d.reason)).toEqual(['out-of-sync', 'out-of-sync', 'out-of-sync']);
    expect(s.pending()).toEqual([]);

    const t = new HunkSession(original, proposed);
    expect(t.sync(original)).toEqual([]);
    expect(t.sync(original + 'zzz')).toHaveLength(3);
    expect(t.text).toBe(original + 'zzz');
  });

  it('refuses a document with a lone CR and unknown ids', () => {
    expect(() => new HunkSession('a\rb', 'x')).toThrow(/lone CR/);
    expect(() => new HunkSession('a', 'b').accept('nope')).toThrow(/unknown hunk/);
  });

  /**
   * Property: whatever the user types and in whatever order hunks are accepted, rejected, or refused and restored,
   * every Accept edit replaces exactly that hunk's ORIGINAL characters (tracked by provenance, so a duplicate of the
   * same text elsewhere does not count) as whole lines, and the session's text always equals the document. So the
   * document is always the original + the user's edits + the accepted hunks, nothing else.
   */
  it('never corrupts under random edits and decisions (seeded)', () => {
    const vocab = ['x = 1;', 'y = 2;', '{', '}', '', 'for (;;)', 'a'];
    for (let seed = 1; seed <= 150; seed++) {
      const r = rng(seed);
      const eol = seed % 3 === 0 ? '\r\n' : '\n';
      const base = Array.from({ length: int(r, 0, 25) }, () => pick(r, vocab));
      const prop = base.flatMap((l) => (r() < 0.15 ? [] : r() < 0.15 ? [pick(r, vocab), l] : r() < 0.15 ? [`${l}!`] : [l]));
      if (r() < 0.3) prop.push(pick(r, vocab));
      const original = base.join(eol) + (r() < 0.7 && base.length ? eol : '');
      const proposedText = prop.join(eol) + (r() < 0.7 && prop.length ? eol : '');
      const s = new HunkSession(original, proposedText);
      const hunkOffset = new Map<string, number>();
      for (const h of s.hunks) hunkOffset.set(h.id, offsetOf(original, h.originalStart, 0));

      let doc = original;
      // tags[i]: offset in the original of doc[i], or -1 for text the user or an accepted hunk wrote.
      let tags = Array.from(original, (_, i) => i);
      const splice = (from: number, to: number, text: string, tag: number): void => {
        doc = doc.slice(0, from) + text + doc.slice(to);
        tags = [...tags.slice(0, from), ...new Array<number>(text.length).fill(tag), ...tags.slice(to)];
      };
      const checkAcceptEdit = (id: string, e: TextChange): void => {
        const hunk = s.hunks.find((h) => h.id === id)!;
        const from = offsetOf(doc, e.rangeStartLine, e.rangeStartCharacter);
        const to = offsetOf(doc, e.rangeEndLine, e.rangeEndCharacter);
        const o = hunkOffset.get(id)!;
        expect(doc.slice(from, to)).toBe(hunk.originalText);
        expect(tags.slice(from, to)).toEqual(Array.from(hunk.originalText, (_, i) => o + i));
        expect(tags.slice(0, from).every((t) => t < o)).toBe(true);
        expect(tags.slice(to).every((t) => t === -1 || t >= o + hunk.originalText.length)).toBe(true);
        expect(from === 0 || doc[from - 1] === '\n').toBe(true);
        expect(to === from || doc[to - 1] === '\n' || to === doc.length).toBe(true);
        expect(e.text).toBe(hunk.proposedText);
      };

      for (let step = 0; step < 25; step++) {
        const roll = r();
        const pending = s.pending();
        if (roll < 0.45 || pending.length === 0) {
          // A user edit: random range, random text (line breaks in the document's style).
          const a = int(r, 0, doc.length);
          const b = Math.min(doc.length, a + (r() < 0.5 ? 0 : int(r, 0, 8)));
          let from = a;
          let to = b;
          // Never split a CRLF pair: VS Code positions cannot point between \r and \n.
          if (from > 0 && doc[from - 1] === '\r') from--;
          if (to > 0 && to < doc.length && doc[to - 1] === '\r') to++;
          const text = Array.from({ length: int(r, 0, 3) }, () => pick(r, ['q', 'zz', eol, eol, 'x = 1;'])).join('');
          const c = change(doc, from, to, text);
          splice(from, to, text, -1);
          s.rebase(c);
        } else if (roll < 0.7) {
          const target = pick(r, pending);
          const edits = s.accept(target.hunk.id);
          expect(edits).toHaveLength(1);
          if (r() < 0.2) {
            s.restore(target.hunk.id); // the editor refused the edit
            continue;
          }
          checkAcceptEdit(target.hunk.id, edits[0]!);
          const from = offsetOf(doc, edits[0]!.rangeStartLine, edits[0]!.rangeStartCharacter);
          const to = offsetOf(doc, edits[0]!.rangeEndLine, edits[0]!.rangeEndCharacter);
          const c = change(doc, from, to, edits[0]!.text);
          splice(from, to, edits[0]!.text, -1);
          expect(s.rebase(c)).toEqual([]);
        } else if (roll < 0.85) {
          s.reject(pick(r, pending).hunk.id);
        } else {
          const ids = pending.map((p) => p.hunk.id);
          const edits = s.acceptAll();
          edits.forEach((e, i) => checkAcceptEdit(ids[i]!, e));
          const before = doc;
          const { events } = applyEdits(before, edits);
          for (const ev of events) {
            const from = offsetOf(doc, ev.rangeStartLine, ev.rangeStartCharacter);
            const to = offsetOf(doc, ev.rangeEndLine, ev.rangeEndCharacter);
            splice(from, to, ev.text, -1);
          }
          expect(s.rebase(events)).toEqual([]);
        }
        expect(s.text).toBe(doc);
      }
    }
  });

  it('equals applyHunks of the accepted set when the user does not type (random orders, seeded)', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(1000 + seed);
      const base = Array.from({ length: int(r, 1, 30) }, (_, i) => `l${i % 7}`);
      const prop = base.flatMap((l) => (r() < 0.2 ? [] : r() < 0.2 ? ['n', l] : r() < 0.2 ? [`${l}'`] : [l]));
      const original = base.join('\n') + '\n';
      const proposedText = prop.join('\n') + (r() < 0.5 ? '\n' : '');
      const s = new HunkSession(original, proposedText);
      let doc = original;
      const order = [...s.hunks].sort(() => r() - 0.5);
      for (const h of order) {
        if (r() < 0.5) s.reject(h.id);
        else {
          const { doc: next, events } = applyEdits(doc, s.accept(h.id));
          doc = next;
          s.rebase(events);
        }
      }
      expect(doc).toBe(applyHunks(original, s.hunks, s.acceptedIds()));
      expect(s.text).toBe(doc);
    }
  });
});
