// The final kernel: values defined behind #ifndef guards, the launch geometry in C for the host code.
import { describe, expect, it } from 'vitest';
import { finalizeKernel } from '../../src/engine/finalize';

const KERNEL = `__global__ void k(float *c, const float *a, int n, int m) {
  c[0] = a[0];
}
`;

describe('finalizeKernel', () => {
  it('defines every parameter and the three block sizes, guarded, before the code', () => {
    const final = finalizeKernel({ code: KERNEL, params: { block_size_x: 128, tile: 4, use_shared: true, mode: 'fast' }, problemSize: ['n'] });
    expect(final.defines).toEqual({ block_size_x: '128', block_size_y: '1', block_size_z: '1', tile: '4', use_shared: '1', mode: 'fast' });
    expect(final.code).toContain('#ifndef tile\n#define tile 4\n#endif\n');
    expect(final.code).toContain('#ifndef use_shared\n#define use_shared 1\n#endif\n');
    expect(final.code.endsWith(KERNEL)).toBe(true);
    expect(final.launch).toEqual({ block: [128, 1, 1], grid: ['(n + 127) / 128', '1', '1'], problemSize: ['n'] });
    expect(final.code).toContain('//   dim3 block(128, 1, 1);\n//   dim3 grid((n + 127) / 128, 1, 1);');
    expect(final.warnings).toEqual([]);
  });

  it('divides the grid by the declared divisors, folding tunable parameters into numbers', () => {
    const final = finalizeKernel({
      code: KERNEL,
      params: { block_size_x: 32, block_size_y: 8, tile_x: 4 },
      problemSize: ['n', 'm // 2'],
      gridDivisors: { x: ['block_size_x', 'tile_x'], y: 'block_size_y * 2' },
    });
    expect(final.launch.grid).toEqual(['(n + 127) / 128', '(m / 2 + 15) / 16', '1']);
    expect(final.launch.block).toEqual([32, 8, 1]);
  });

  it('keeps divisors over scalar arguments as expressions, and treats an empty divisor list as 1', () => {
    const final = finalizeKernel({ code: KERNEL, params: { block_size_x: 64 }, problemSize: ['n * m', 1024], gridDivisors: { x: ['block_size_x', 'm'], y: [] } });
    expect(final.launch.grid).toEqual(['(n * m + (64 * m) - 1) / (64 * m)', '1024', '1']);
  });

  it('without a tunable block size, the grid is the problem size (Kernel Tuner\'s default divisor is 1 then)', () => {
    const final = finalizeKernel({ code: KERNEL, params: {}, problemSize: ['n'] });
    expect(final.launch).toEqual({ block: [256, 1, 1], grid: ['n', '1', '1'], problemSize: ['n'] });
  });

  it('warns when the kernel reads a define that depends on the problem size', () => {
    const final = finalizeKernel({ code: 'int g = grid_size_x;\n', params: { block_size_x: 64 }, problemSize: ['n'] });
    expect(final.warnings).toEqual(['the kernel reads grid_size_x, which depends on the problem size at run time: define it in the host build (-Dgrid_size_x=...)']);
    expect(final.code).toContain('// Note: the kernel reads grid_size_x');
  });
});
