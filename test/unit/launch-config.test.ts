// Argument checks of LaunchConfig, Program and scalars, validation against a device, and timing statistics.
import { describe, expect, it } from 'vitest';
import {
  ArgumentError,
  LaunchConfig,
  LaunchError,
  Program,
  archForComputeCapability,
  computeStats,
  float32,
  float64,
  int32,
  int64,
  int8,
  median,
  scalarBitPattern,
  uint64,
  uint8,
  type DeviceInfo,
  type KernelAttributes,
} from '../../src/gpu/client';

const H100: DeviceInfo = {
  ordinal: 0,
  name: 'H100',
  computeCapability: [9, 0],
  multiprocessors: 132,
  globalMemoryBytes: 80e9,
  l2CacheBytes: 50 * 2 ** 20,
  maxThreadsPerBlock: 1024,
  maxBlockDim: [1024, 1024, 64],
  maxGridDim: [2147483647, 65535, 65535],
  maxSharedMemoryPerBlock: 48 * 1024,
  maxSharedMemoryPerBlockOptin: 227 * 1024,
  maxRegistersPerBlock: 65536,
  maxThreadsPerMultiprocessor: 2048,
  maxBlocksPerMultiprocessor: 32,
  maxRegistersPerMultiprocessor: 65536,
  maxSharedMemoryPerMultiprocessor: 228 * 1024,
  reservedSharedMemoryPerBlock: 1024,
  warpSize: 32,
  clockRateKHz: 1980000,
  memoryClockRateKHz: 2619000,
  memoryBusWidthBits: 5120,
  pciBusId: '0000:00:00.0',
};

const KERNEL: KernelAttributes = {
  registers: 128,
  staticSharedBytes: 16 * 1024,
  constBytes: 0,
  localBytes: 0,
  maxThreadsPerBlock: 512,
  maxDynamicSharedBytes: 32 * 1024,
  ptxVersion: 90,
  binaryVersion: 90,
};

describe('LaunchConfig', () => {
  it('normalizes dimensions to three', () => {
    const c = new LaunchConfig({ grid: 10, block: [32, 4] });
    expect(c.grid).toEqual([10, 1, 1]);
    expect(c.block).toEqual([32, 4, 1]);
    expect(c.sharedMemBytes).toBe(0);
    expect(c.threadsPerBlock).toBe(128);
    expect(LaunchConfig.from(c)).toBe(c);
  });

  it('names the argument, what it expected and what it received', () => {
    expect(() => new LaunchConfig({ grid: 1, block: [-1] })).toThrow('Expected a positive integer for block[0] but received -1');
    expect(() => new LaunchConfig({ grid: 1.5, block: 1 })).toThrow('Expected a positive integer for grid but received 1.5');
    expect(() => new LaunchConfig({ grid: [1, 2, 3, 4] as never, block: 1 })).toThrow(
      'Expected a positive integer or an array of 1 to 3 positive integers for grid but received an array of length 4',
    );
    expect(() => new LaunchConfig({ grid: 1, block: 1, sharedMemBytes: -4 })).toThrow(ArgumentError);
    expect(() => new LaunchConfig(null as never)).toThrow('Expected an object for config but received null');
  });

  it('rejects what the device cannot run with LaunchError, never adjusting it', () => {
    const code = (init: ConstructorParameters<typeof LaunchConfig>[0], kernel?: KernelAttributes): string => {
      try {
        new LaunchConfig(init).validate(H100, kernel);
        return 'ok';
      } catch (e) {
        expect(e).toBeInstanceOf(LaunchError);
        return (e as LaunchError).code;
      }
    };
    expect(code({ grid: 1, block: 1024 })).toBe('ok');
    expect(code({ grid: 1, block: 2048 })).toBe('LAUNCH_BLOCK_TOO_LARGE');
    expect(code({ grid: 1, block: [64, 32] })).toBe('LAUNCH_BLOCK_TOO_LARGE');
    expect(code({ grid: 1, block: [1, 1, 65] })).toBe('LAUNCH_BLOCK_TOO_LARGE');
    expect(code({ grid: [1, 65536], block: 1 })).toBe('LAUNCH_GRID_TOO_LARGE');
    expect(code({ grid: 1, block: 1, sharedMemBytes: 227 * 1024 })).toBe('ok');
    expect(code({ grid: 1, block: 1, sharedMemBytes: 227 * 1024 + 1 })).toBe('LAUNCH_SHARED_MEMORY_TOO_LARGE');
    // With the kernel's own limits: registers cap the block at 512, static shared memory counts against the opt-in limit.
    expect(code({ grid: 1, block: 512 }, KERNEL)).toBe('ok');
    expect(code({ grid: 1, block: 1024 }, KERNEL)).toBe('CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES');
    expect(code({ grid: 1, block: 1, sharedMemBytes: 211 * 1024 }, KERNEL)).toBe('ok');
    expect(code({ grid: 1, block: 1, sharedMemBytes: 211 * 1024 + 1 }, KERNEL)).toBe('LAUNCH_SHARED_MEMORY_TOO_LARGE');
  });
});

describe('Program', () => {
  it('checks its fields and builds the NVRTC options', () => {
    const p = new Program({ source: 'k', nameExpressions: ['k<float, 4>'], defines: { block_size_x: 128, MODE: 'fast' }, wantPtx: true });
    expect(p.fileName).toBe('kernel.cu');
    expect(p.toNativeRequest('sm_90')).toEqual({
      source: 'k',
      fileName: 'kernel.cu',
      nameExpressions: ['k<float, 4>'],
      options: ['--gpu-architecture=sm_90', '-Dblock_size_x=128', '-DMODE=fast'],
      wantPtx: true,
    });
    expect(new Program({ source: 'k', nameExpressions: ['k'], arch: 'sm_80' }).toNativeRequest('sm_90').options[0]).toBe('--gpu-architecture=sm_80');
    expect(archForComputeCapability([9, 0])).toBe('sm_90');
  });

  it('rejects invalid programs, naming the argument', () => {
    expect(() => new Program({ source: '', nameExpressions: ['k'] })).toThrow('Expected a non-empty string for source but received ""');
    expect(() => new Program({ source: 'k', nameExpressions: [] })).toThrow(/at least one kernel name expression for nameExpressions/);
    expect(() => new Program({ source: 'k', nameExpressions: ['k'], arch: 'compute_90' })).toThrow(/a target such as "sm_90" for arch/);
    expect(() => new Program({ source: 'k', nameExpressions: ['k'], defines: { 'bad-name': 1 } })).toThrow(/C identifiers for defines/);
    expect(() => new Program({ source: 'k', nameExpressions: ['k'], defines: { N: Number.NaN } })).toThrow(/for defines\.N but received NaN/);
    expect(() => new Program({ source: 'k', nameExpressions: ['k'], options: ['-arch=sm_80'] })).toThrow(/set arch instead/);
    expect(() => new Program({ source: 'k', nameExpressions: ['k'], fileName: 'a/b.cu' })).toThrow(/without directories/);
  });
});

describe('typed scalars', () => {
  it('accepts values in range and rejects the rest, never wrapping', () => {
    expect(int32(-5)).toEqual({ kind: 'scalar', dtype: 'int32', value: -5 });
    expect(uint64(2n ** 64n - 1n).value).toBe(2n ** 64n - 1n);
    expect(int64(42).value).toBe(42n);
    expect(float32(Number.NaN).value).toBeNaN();
    expect(() => int32(2 ** 31)).toThrow('Expected an integer in [-2147483648, 2147483647] (int32) for int32 scalar but received 2147483648');
    expect(() => uint8(-1)).toThrow(ArgumentError);
    expect(() => int8(1.5)).toThrow(ArgumentError);
    expect(() => uint64(-1n)).toThrow(ArgumentError);
    expect(() => int64(2 ** 60)).toThrow(/a bigint for int64 values beyond 2\^53/);
    expect(() => float32(1e39)).toThrow(/within float32 range/);
    expect(() => float64('1' as never)).toThrow(ArgumentError);
  });

  it('encodes fill patterns as little-endian bits of the element', () => {
    expect(scalarBitPattern('float32', 1)).toBe(0x3f800000n);
    expect(scalarBitPattern('int8', -1)).toBe(0xffn);
    expect(scalarBitPattern('int16', -2)).toBe(0xfffen);
    expect(scalarBitPattern('int64', -1n)).toBe(2n ** 64n - 1n);
    expect(scalarBitPattern('float64', 2)).toBe(0x4000000000000000n);
  });
});

describe('timing statistics', () => {
  it('takes the middle sample, or the mean of the two middle ones', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('computes mean, extremes and the sample standard deviation', () => {
    const s = computeStats([2, 4, 4, 4, 5, 5, 7, 9]);
    expect(s).toMatchObject({ medianMs: 4.5, meanMs: 5, minMs: 2, maxMs: 9 });
    expect(s.stdMs).toBeCloseTo(Math.sqrt(32 / 7), 12);
    expect(computeStats([3]).stdMs).toBe(0);
  });

  it('rejects empty and invalid samples', () => {
    expect(() => computeStats([])).toThrow(ArgumentError);
    expect(() => computeStats([1, Number.NaN])).toThrow('Expected a finite, non-negative number of milliseconds for samplesMs[1] but received NaN');
    expect(() => computeStats([-1])).toThrow(ArgumentError);
  });
});
