// The final proposal: the tuned file with the chosen values defined where the reader expects them, and the host
// code's launches of the kernel rewritten for the chosen configuration (or exactly what to change where they cannot be).
import { describe, expect, it } from 'vitest';
import { finalizeKernel } from '../../src/engine/candidate/finalize';

const PROGRAM = `#include <cstdio>
#define BLOCK_SIZE 256   // threads per block

__device__ float twice(float v) { return 2 * v * tile; }

__global__ void scale(float *c, const float *a, int n, int m) {
  int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (i < n) c[i] = twice(a[i]);
}

void launch(float *c, const float *a, int rows, int cols, cudaStream_t stream) {
  scale<<<(rows * cols + BLOCK_SIZE - 1) / BLOCK_SIZE, BLOCK_SIZE, 0, stream>>>(c, a, rows * cols, cols);
  scale<<<1, 32>>>(c, a, n++, cols);
}
`;

describe('finalizeKernel', () => {
  it("puts values into the file's own #define, guards the others above their first user, and leaves unused names out", async () => {
    const final = await finalizeKernel({ code: PROGRAM, kernelName: 'scale', params: { BLOCK_SIZE: 128, tile: 4, use_shared: true }, problemSize: ['n'], blockSizeNames: ['BLOCK_SIZE'] });
    expect(final.defines).toEqual({ BLOCK_SIZE: '128', block_size_y: '1', block_size_z: '1', tile: '4', use_shared: '1' });
    expect(final.code).toContain('#define BLOCK_SIZE 128   // threads per block\n');
    expect(final.code).toContain('#ifndef tile\n#define tile 4\n#endif\n__device__ float twice');
    expect(final.code).not.toMatch(/use_shared|block_size_y/);
  });

  it('rewrites each launch in the host\'s own expressions, keeps the stream, and says why one cannot be rewritten', async () => {
    const final = await finalizeKernel({ code: PROGRAM, kernelName: 'scale', params: { BLOCK_SIZE: 128 }, problemSize: ['n'], blockSizeNames: ['BLOCK_SIZE'] });
    expect(final.code).toContain('  scale<<<((rows * cols) + 127) / 128, 128, 0, stream>>>(c, a, rows * cols, cols);\n');
    expect(final.code).toContain('  scale<<<1, 32>>>(c, a, n++, cols);\n');
    expect(final.launchSites).toEqual([
      { line: 12, inFunction: 'launch', before: '<<<(rows * cols + BLOCK_SIZE - 1) / BLOCK_SIZE, BLOCK_SIZE, 0, stream>>>', after: '<<<((rows * cols) + 127) / 128, 128, 0, stream>>>' },
      { line: 13, inFunction: 'launch', before: '<<<1, 32>>>', reason: 'the argument for n would be evaluated again in the grid' },
    ]);
    expect(final.warnings).toEqual(['the launch at line 13 was left as it is (the argument for n would be evaluated again in the grid): launch with block (128, 1, 1), grid ((n + 127) / 128, 1, 1)']);
    // Everything else stays byte for byte.
    expect(final.code.replace('#define BLOCK_SIZE 128 ', '#define BLOCK_SIZE 256 ').replace('<<<((rows * cols) + 127) / 128, 128, 0, stream>>>', '<<<(rows * cols + BLOCK_SIZE - 1) / BLOCK_SIZE, BLOCK_SIZE, 0, stream>>>')).toBe(PROGRAM);
  });

  it('writes 2-D grids and blocks as dim3, with the dynamic shared memory, folding tunable parameters into numbers', async () => {
    const code = `__global__ void k(float *c, int n, int m) { extern __shared__ float s[]; c[0] = s[0]; }\nvoid run(float *c, int w, int h) { dim3 g(1), b(1); k<<<g, b>>>(c, w, h); }\n`;
    const final = await finalizeKernel({
      code,
      kernelName: 'k',
      params: { block_size_x: 32, block_size_y: 8, tile_x: 4 },
      problemSize: ['n', 'm // 2'],
      gridDivisors: { x: ['block_size_x', 'tile_x'], y: 'block_size_y * 2' },
      sharedMemBytes: 'block_size_x * block_size_y * 4',
    });
    expect(final.launch).toEqual({ block: [32, 8, 1], grid: ['(n + 127) / 128', '(m / 2 + 15) / 16', '1'], problemSize: ['n', 'm // 2'], sharedMemBytes: '1024' });
    expect(final.code).toContain('k<<<dim3((w + 127) / 128, (h / 2 + 15) / 16), dim3(32, 8), 1024>>>(c, w, h);');
  });

  it('keeps divisors over scalar arguments as expressions, and treats an empty divisor list as 1', async () => {
    const code = '__global__ void k(float *c, int n, int m) { c[0] = 1; }\n';
    const final = await finalizeKernel({ code, kernelName: 'k', params: { block_size_x: 64 }, problemSize: ['n * m', 1024], gridDivisors: { x: ['block_size_x', 'm'], y: [] } });
    expect(final.launch.grid).toEqual(['(n * m + (64 * m) - 1) / (64 * m)', '1024', '1']);
  });

  it('without a launch in the file, states the geometry above the kernel and says so', async () => {
    const code = '#include "common.h"\n\n__global__ void k(float *c, int n) { c[block_size_x] = 1; }\n';
    const final = await finalizeKernel({ code, kernelName: 'k', params: { block_size_x: 64 }, problemSize: ['n'] });
    expect(final.code).toBe(
      '#include "common.h"\n\n#ifndef block_size_x\n#define block_size_x 64\n#endif\n// Tuned by llm-kernel-tuner. Launch this kernel with:\n//   dim3 block(64, 1, 1);\n//   dim3 grid((n + 63) / 64, 1, 1);\n// (the grid covers the problem size [n]).\n__global__ void k(float *c, int n) { c[block_size_x] = 1; }\n',
    );
    expect(final.warnings).toEqual(['no launch of k was found in this file: launch it with block (64, 1, 1), grid ((n + 63) / 64, 1, 1)']);
    expect(final.launchSites).toEqual([]);
  });

  it('warns when the kernel reads a define that depends on the problem size', async () => {
    const final = await finalizeKernel({ code: '__global__ void k(int *g) { g[0] = grid_size_x; }\n', kernelName: 'k', params: { block_size_x: 64 }, problemSize: ['n'] });
    expect(final.warnings[0]).toBe('the kernel reads grid_size_x, which depends on the problem size at run time: define it in the host build (-Dgrid_size_x=...)');
    expect(final.code).toContain('// Note: the kernel reads grid_size_x');
  });
});
