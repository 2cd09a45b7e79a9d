import { describe, expect, it } from 'vitest';
import { HunkSession } from '../../src/engine/diff';
import { hunkAtLine, hunkDecorations, previewInserted, proposalForDocument, spliceFinalCode } from '../../src/extension/inline-diff-model';

const ORIGINAL = ['#include <cuda.h>', '__global__ void k(float *y, int n) {', '    int i = blockIdx.x * blockDim.x + threadIdx.x;', '    if (i < n) y[i] = 2 * y[i];', '}', ''].join('\n');
const PROPOSED = [
  '#ifndef block_size_x',
  '#define block_size_x 128',
  '#endif',
  '#include <cuda.h>',
  '__global__ void k(float *y, int n) {',
  '    int i = blockIdx.x * block_size_x + threadIdx.x;',
  '    if (i < n) y[i] = 2 * y[i];',
  '}',
  '',
].join('\n');

describe('inline diff decorations', () => {
  it('marks removed lines in place and puts the inserted lines after the hunk (or before an insertion point)', () => {
    const session = new HunkSession(ORIGINAL, PROPOSED);
    const decorations = hunkDecorations(session.pending(), 6);
    expect(decorations).toHaveLength(2);
    const [insertion, replacement] = decorations;
    // A pure insertion at the top: nothing removed, preview on line 0, lens on line 0.
    expect(insertion).toMatchObject({ removed: { startLine: 0, endLine: 0 }, insertedAtLine: 0, lensLine: 0, added: 3, deleted: 0 });
    expect(insertion!.insertedPreview).toBe('+3 lines: #ifndef block_size_x ⏎ #define block_size_x 128 ⏎ #endif');
    expect(insertion!.insertedText).toBe('#ifndef block_size_x\n#define block_size_x 128\n#endif');
    // A one-line replacement: line 2 removed, the new line shown at its end.
    expect(replacement).toMatchObject({ removed: { startLine: 2, endLine: 3 }, insertedAtLine: 2, lensLine: 2, added: 1, deleted: 1 });
    expect(replacement!.insertedPreview).toBe('+1 line: int i = blockIdx.x * block_size_x + threadIdx.x;');
  });

  it('shows a deletion with no ghost text and keeps an insertion at the end of the file on the last line', () => {
    const deletion = hunkDecorations(new HunkSession('a\nb\nc\n', 'a\nc\n').pending(), 4)[0]!;
    expect(deletion).toMatchObject({ removed: { startLine: 1, endLine: 2 }, insertedPreview: '', deleted: 1, added: 0 });
    const atEnd = hunkDecorations(new HunkSession('a\nb\n', 'a\nb\nc\n').pending(), 3)[0]!;
    expect(atEnd).toMatchObject({ insertedAtLine: 1, lensLine: 2, removed: { startLine: 2, endLine: 2 } });
  });

  it('follows the hunks after an edit above them (rebase moves the decorations)', () => {
    const session = new HunkSession(ORIGINAL, PROPOSED);
    session.rebase({ rangeStartLine: 0, rangeStartCharacter: 0, rangeEndLine: 0, rangeEndCharacter: 0, text: '// note\n' });
    const [first, second] = hunkDecorations(session.pending(), 7);
    expect(first!.lensLine).toBe(1);
    expect(second!.removed).toEqual({ startLine: 3, endLine: 4 });
  });

  it('bounds the preview and collapses whitespace', () => {
    expect(previewInserted([])).toBe('');
    const long = previewInserted(['x'.repeat(300)]);
    expect(long.length).toBeLessThan(120);
    expect(long.endsWith('…')).toBe(true);
    expect(previewInserted(['  a   b  ', '', 'c'])).toBe('+3 lines: a b ⏎ c');
  });

  it('finds the hunk under the cursor, else the next one, else the last', () => {
    const pending = new HunkSession(ORIGINAL, PROPOSED).pending();
    expect(hunkAtLine(pending, 2)!.hunk.originalLines).toEqual(['    int i = blockIdx.x * blockDim.x + threadIdx.x;']);
    expect(hunkAtLine(pending, 1)).toBe(pending[1]);
    expect(hunkAtLine(pending, 5)).toBe(pending[1]);
    expect(hunkAtLine(pending, 0)).toBe(pending[0]);
  });
});

describe('proposal for an edited document', () => {
  it('is the final code when the document is unchanged', () => {
    expect(proposalForDocument(ORIGINAL, PROPOSED, ORIGINAL)).toEqual({ proposed: PROPOSED, conflicts: 0 });
  });

  it('keeps the user edits and the changes they do not touch', () => {
    const edited = ORIGINAL.replace('}\n', '}\n// host code the user added\n');
    const { proposed, conflicts } = proposalForDocument(ORIGINAL, PROPOSED, edited);
    expect(conflicts).toBe(0);
    expect(proposed).toBe(PROPOSED.replace('}\n', '}\n// host code the user added\n'));
  });

  it('leaves out a change whose lines the user edited, and counts it', () => {
    const edited = ORIGINAL.replace('blockDim.x + threadIdx.x', 'blockDim.x + threadIdx.x /* mine */');
    const { proposed, conflicts } = proposalForDocument(ORIGINAL, PROPOSED, edited);
    expect(conflicts).toBe(1);
    expect(proposed).toContain('/* mine */');
    expect(proposed.startsWith('#ifndef block_size_x\n')).toBe(true);
  });
});

describe('the tuned kernel in its file', () => {
  const file = '#include <cstdio>\n\n__global__ void k(float *y) {\n    y[0] = 1;\n}\n\nint main() { return 0; }\n';
  const start = file.indexOf('__global__');
  const end = file.indexOf('}\n') + 1;

  it('replaces only the kernel when the final code lacks the rest of the file', () => {
    const final = '#ifndef block_size_x\n#define block_size_x 64\n#endif\n\n__global__ void k(float *y) {\n    y[threadIdx.x] = 1;\n}\n';
    expect(spliceFinalCode(file, final, start, end)).toBe(
      '#include <cstdio>\n\n#ifndef block_size_x\n#define block_size_x 64\n#endif\n\n__global__ void k(float *y) {\n    y[threadIdx.x] = 1;\n}\n\nint main() { return 0; }\n',
    );
  });

  it('takes the final code as the whole file when it already holds what surrounds the kernel', () => {
    const final = '#include <cstdio>\n#define block_size_x 64\n__global__ void k(float *y) { y[0] = 2; }\nint main() { return 0; }\n';
    expect(spliceFinalCode(file, final, start, end)).toBe(final);
    const kernelOnly = '__global__ void k(float *y) {}\n';
    expect(spliceFinalCode(kernelOnly, '// tuned\n__global__ void k(float *y) { }\n', 0, kernelOnly.length - 1)).toBe('// tuned\n__global__ void k(float *y) { }\n');
  });
});
