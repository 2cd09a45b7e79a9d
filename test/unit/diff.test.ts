import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyHunks, computeHunks, unifiedDiff, type Hunk } from '../../src/engine/candidate/diff.js';
import { int, pick, rng } from '../support/seeded';

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
