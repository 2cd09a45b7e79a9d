import { describe, expect, it } from 'vitest';
import { proposalForDocument, spliceFinalCode } from '../../src/extension/inline-diff-model';
import { ORIGINAL, PROPOSED } from '../support/small-kernel';

describe('proposal for an edited document', () => {
  it('is the final code when the document is unchanged', () => {
    expect(proposalForDocument(ORIGINAL, PROPOSED, ORIGINAL, '\n')).toEqual({ proposed: PROPOSED, conflicts: 0 });
  });

  it('keeps the user edits and the changes they do not touch', () => {
    const edited = ORIGINAL.replace('}\n', '}\n// host code the user added\n');
    const { proposed, conflicts } = proposalForDocument(ORIGINAL, PROPOSED, edited, '\n');
    expect(conflicts).toBe(0);
    expect(proposed).toBe(PROPOSED.replace('}\n', '}\n// host code the user added\n'));
  });

  it('leaves out a change whose lines the user edited, and counts it', () => {
    const edited = ORIGINAL.replace('blockDim.x + threadIdx.x', 'blockDim.x + threadIdx.x /* mine */');
    const { proposed, conflicts } = proposalForDocument(ORIGINAL, PROPOSED, edited, '\n');
    expect(conflicts).toBe(1);
    expect(proposed).toContain('/* mine */');
    expect(proposed.startsWith('#ifndef block_size_x\n')).toBe(true);
  });

  it('comes in the document\'s line endings, whatever the session\'s were', () => {
    const crlf = (t: string) => t.replace(/\n/g, '\r\n');
    expect(proposalForDocument(ORIGINAL, PROPOSED, crlf(ORIGINAL), '\r\n')).toEqual({ proposed: crlf(PROPOSED), conflicts: 0 });
    const edited = crlf(ORIGINAL).replace('}\r\n', '}\r\n// mine\r\n');
    expect(proposalForDocument(ORIGINAL, PROPOSED, edited, '\r\n')).toEqual({ proposed: crlf(PROPOSED).replace('}\r\n', '}\r\n// mine\r\n'), conflicts: 0 });
  });

  it('keeps a line the user inserted where the session replaces the next lines', () => {
    const edited = ORIGINAL.replace('    int i', '    // note\n    int i');
    const { proposed, conflicts } = proposalForDocument(ORIGINAL, PROPOSED, edited, '\n');
    expect(conflicts).toBe(0);
    expect(proposed).toBe(PROPOSED.replace('    int i', '    // note\n    int i'));
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

  it('takes the final code as the whole file when the model rewrote the comment above the kernel', () => {
    const commented = '// old comment\n__global__ void k(float *y) {\n    y[0] = 1;\n}\n';
    const final = '#ifndef B\n#define B 4\n#endif\n// new comment\n__global__ void k(float *y) {\n    y[0] = 2;\n}\n';
    expect(spliceFinalCode(commented, final, commented.indexOf('__global__'), commented.length - 1)).toBe(final);
  });

  it('takes the final code as the whole file when it already holds what surrounds the kernel', () => {
    const final = '#include <cstdio>\n#define block_size_x 64\n__global__ void k(float *y) { y[0] = 2; }\nint main() { return 0; }\n';
    expect(spliceFinalCode(file, final, start, end)).toBe(final);
    // The file's own #define of a parameter holds the chosen value in the final code, its launch the chosen block: still
    // the whole file.
    const defining = '#include <cstdio>\n#ifndef block_size_x\n#define block_size_x 256\n#endif\n__global__ void k(float *y) { y[0] = 1; }\nvoid run(float *y) { k<<<4, 256>>>(y); }\n';
    const chosen = defining.replace('block_size_x 256', 'block_size_x 512').replace('<<<4, 256>>>', '<<<2, 512>>>');
    expect(spliceFinalCode(defining, chosen, defining.indexOf('__global__'), defining.indexOf('}\n') + 1)).toBe(chosen);
    const kernelOnly = '__global__ void k(float *y) {}\n';
    expect(spliceFinalCode(kernelOnly, '// tuned\n__global__ void k(float *y) { }\n', 0, kernelOnly.length - 1)).toBe('// tuned\n__global__ void k(float *y) { }\n');
  });
});
