import { describe, expect, it } from 'vitest';
import type { NativeDeviceInfo } from '../../src/gpu/native-types';
import { blockDims, defines, exceedsDeviceLimits, Geometry, GeometryError, resolveBlockSizeNames, type DeviceLimits } from '../../src/tuner/space/geometry';

const H100_LIMITS: DeviceLimits = {
  maxThreadsPerBlock: 1024,
  maxBlockDim: [1024, 1024, 64],
  maxGridDim: [2147483647, 65535, 65535],
  maxSharedMemoryPerBlock: 49152,
  maxSharedMemoryPerBlockOptin: 232448,
};

describe('geometry: thread block (Kernel Tuner get_thread_block_dimensions)', () => {
  it('takes the block from block_size_x/y/z', () => {
    expect(blockDims({ block_size_x: 32, block_size_y: 8, block_size_z: 2, other: 5 })).toEqual([32, 8, 2]);
  });

  it('defaults a missing x to 256 and a missing y or z to 1', () => {
    expect(blockDims({ tile: 4 })).toEqual([256, 1, 1]);
    expect(blockDims({ block_size_x: 64 })).toEqual([64, 1, 1]);
    expect(blockDims({ block_size_y: 4 })).toEqual([256, 4, 1]);
  });

  it('uses custom block size names, completed with the defaults', () => {
    expect(resolveBlockSizeNames(['bx'])).toEqual(['bx', 'block_size_y', 'block_size_z']);
    expect(blockDims({ bx: 128, block_size_y: 2 }, ['bx'])).toEqual([128, 2, 1]);
    expect(() => resolveBlockSizeNames(['a', 'b', 'c', 'd'])).toThrow(GeometryError);
  });

  it('rejects a block size that is not a positive integer', () => {
    expect(() => blockDims({ block_size_x: 12.5 })).toThrow(/block size 'block_size_x' must be a positive integer, but is 12.5/);
    expect(() => blockDims({ block_size_x: 'big' })).toThrow(GeometryError);
  });
});

describe('geometry: grid = ceil(problem size / divisors)', () => {
  const params = ['block_size_x', 'block_size_y', 'tile_size_x', 'tile_size_y'];

  it('divides by the block size by default', () => {
    const g = new Geometry({ problemSize: [4096, 4096] }, { paramNames: params });
    expect(g.launch({ block_size_x: 32, block_size_y: 8, tile_size_x: 1, tile_size_y: 1 })).toEqual({
      problemSize: [4096, 4096, 1],
      grid: [128, 512, 1],
      block: [32, 8, 1],
      sharedMemBytes: 0,
    });
  });

  it('gives the dynamic shared memory of a number or an expression over parameters and scalars', () => {
    const g = new Geometry({ problemSize: 'n', sharedMemBytes: 'block_size_x * tile_size_x * 4 + n // 1024' }, { paramNames: params, scalarNames: ['n'] });
    expect(g.launch({ block_size_x: 128, block_size_y: 1, tile_size_x: 2, tile_size_y: 1 }, { n: 4096 }).sharedMemBytes).toBe(128 * 2 * 4 + 4);
    expect(new Geometry({ problemSize: 1, sharedMemBytes: 49152 }, { paramNames: [] }).launch({}).sharedMemBytes).toBe(49152);
    expect(() => new Geometry({ problemSize: 1, sharedMemBytes: 'tiles * 4' }, { paramNames: params })).toThrow(/dynamic shared memory: unknown name 'tiles'/);
    expect(() => new Geometry({ problemSize: 1, sharedMemBytes: 'block_size_x - 1000' }, { paramNames: params }).launch({ block_size_x: 32 })).toThrow(GeometryError);
  });

  it('rounds up when the problem size is not a multiple', () => {
    const g = new Geometry({ problemSize: 1000 }, { paramNames: ['block_size_x'] });
    expect(g.launch({ block_size_x: 256 }).grid).toEqual([4, 1, 1]);
  });

  it('multiplies a list of divisors, accepting names, expressions and numbers', () => {
    const g = new Geometry(
      { problemSize: [4096, 4096], gridDivX: ['block_size_x', 'tile_size_x'], gridDivY: 'block_size_y*tile_size_y', gridDivZ: 2 },
      { paramNames: params },
    );
    const launch = g.launch({ block_size_x: 16, block_size_y: 4, tile_size_x: 4, tile_size_y: 8 });
    expect(launch.grid).toEqual([64, 128, 1]);
    expect(launch.block).toEqual([16, 4, 1]);
  });

  it('treats an empty divisor list as 1: the problem size is the grid', () => {
    const g = new Geometry({ problemSize: [7, 3], gridDivX: [], gridDivY: [] }, { paramNames: ['block_size_x'] });
    expect(g.launch({ block_size_x: 64 }).grid).toEqual([7, 3, 1]);
  });

  it('divides by 1 when the dimension has no tunable block size (Kernel Tuner grid_div default)', () => {
    const g = new Geometry({ problemSize: 1024 }, { paramNames: ['unroll'] });
    expect(g.launch({ unroll: 2 })).toEqual({ problemSize: [1024, 1, 1], grid: [1024, 1, 1], block: [256, 1, 1], sharedMemBytes: 0 });
  });

  it('evaluates problem sizes over scalar arguments and tunable parameters, truncating like int()', () => {
    const g = new Geometry({ problemSize: ['n', 'n*m // 2', 'm / tile_size_x'] }, { paramNames: params, scalarNames: ['n', 'm'] });
    const launch = g.launch({ block_size_x: 32, block_size_y: 1, tile_size_x: 3, tile_size_y: 1 }, { n: 100, m: 10 });
    expect(launch.problemSize).toEqual([100, 500, 3]);
    expect(launch.grid).toEqual([4, 500, 3]);
  });

  it('checks every name up front and names the unknown one', () => {
    expect(() => new Geometry({ problemSize: 'rows * cols' }, { paramNames: params, scalarNames: ['rows'] })).toThrow(
      /problem size x: unknown name 'cols' in "rows \* cols"; known names: block_size_x, block_size_y, tile_size_x, tile_size_y, rows/,
    );
    expect(() => new Geometry({ problemSize: 10, gridDivY: 'tile_size_z' }, { paramNames: params })).toThrow(/grid divisor y: unknown name 'tile_size_z'.*did you mean 'tile_size_x'/);
    expect(() => new Geometry({ problemSize: 'process.exit()' }, { paramNames: params })).toThrow(/attribute access is not allowed/);
  });

  it('refuses a name that is both a scalar argument and a tunable parameter', () => {
    expect(() => new Geometry({ problemSize: 'n' }, { paramNames: ['n'], scalarNames: ['n'] })).toThrow(/'n' is both a scalar kernel argument and a tunable parameter/);
  });

  it('rejects sizes and divisors that are not positive', () => {
    expect(() => new Geometry({ problemSize: 0 }, { paramNames: [] })).toThrow(/problem size x must be a positive number/);
    expect(() => new Geometry({ problemSize: [1, 2, 3, 4] }, { paramNames: [] })).toThrow(/1 to 3 dimensions/);
    const g = new Geometry({ problemSize: 'n', gridDivX: 'block_size_x - 32' }, { paramNames: ['block_size_x'], scalarNames: ['n'] });
    expect(() => g.launch({ block_size_x: 64 }, { n: 0 })).toThrow(/problem size x must be a positive integer, but is 0/);
    expect(() => g.launch({ block_size_x: 32 }, { n: 10 })).toThrow(/grid divisor x evaluates to 0/);
    const h = new Geometry({ problemSize: 'n // k' }, { paramNames: [], scalarNames: ['n', 'k'] });
    expect(() => h.launch({}, { n: 10, k: 0 })).toThrow(/problem size x:.*integer division by zero/);
  });
});

describe('geometry: defines', () => {
  it('injects Kernel Tuner\'s defines in its order, values as Python str() writes them', () => {
    const config = { block_size_x: 32, block_size_y: 4, tile: 0.5, precision: 'float', use_shared: true, off: false };
    const d = defines(config, { grid: [128, 1024, 1], block: [32, 4, 1] });
    expect(Object.entries(d)).toEqual([
      ['grid_size_x', '128'],
      ['grid_size_y', '1024'],
      ['grid_size_z', '1'],
      ['block_size_x', '32'],
      ['block_size_y', '4'],
      ['block_size_z', '1'],
      ['tile', '0.5'],
      ['precision', 'float'],
      ['use_shared', '1'],
      ['off', '0'],
      ['kernel_tuner', '1'],
    ]);
  });

  it('defines the block under custom names', () => {
    const d = defines({ bx: 64 }, { grid: [2, 1, 1], block: [64, 1, 1] }, ['bx']);
    expect(Object.keys(d)).toEqual(['grid_size_x', 'grid_size_y', 'grid_size_z', 'bx', 'block_size_y', 'block_size_z', 'kernel_tuner']);
    expect(d['bx']).toBe('64');
  });
});

describe('geometry: device limits', () => {
  it('accepts a launch that fits', () => {
    expect(exceedsDeviceLimits(H100_LIMITS, { block: [32, 32, 1], grid: [100000, 100, 1], sharedBytes: 100_000 })).toBeUndefined();
  });

  it.each([
    [{ block: [64, 32, 1] as [number, number, number] }, /block 64x32x1 has 2048 threads; the device allows at most 1024 per block/],
    [{ block: [1, 1, 128] as [number, number, number] }, /block z dimension 128 exceeds the device's maximum of 64/],
    [{ block: [32, 1, 1] as [number, number, number], grid: [1, 70000, 1] as [number, number, number] }, /grid y dimension 70000 exceeds the device's maximum of 65535/],
    [{ block: [32, 1, 1] as [number, number, number], sharedBytes: 300_000 }, /300000 bytes of shared memory per block exceed the device's limit of 232448/],
  ])('reports %o', (launch, reason) => {
    expect(exceedsDeviceLimits(H100_LIMITS, launch)).toMatch(reason);
  });

  it('falls back to the default shared memory limit without the opt-in one', () => {
    const { maxSharedMemoryPerBlockOptin: _optin, ...limits } = H100_LIMITS;
    expect(exceedsDeviceLimits(limits, { block: [1, 1, 1], sharedBytes: 50_000 })).toMatch(/limit of 49152/);
  });

  it('takes the GPU layer\'s device info as it is', () => {
    const device = { ...H100_LIMITS, name: 'NVIDIA H100', ordinal: 0 } as unknown as NativeDeviceInfo;
    expect(exceedsDeviceLimits(device, { block: [2048, 1, 1] })).toMatch(/2048 threads/);
  });
});
