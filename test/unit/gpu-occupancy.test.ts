// The occupancy calculator (src/gpu/occupancy.ts) against values the CUDA documentation states and values worked out
// by hand from the calculator's rules (cuda_occupancy.h) for each limit, and the free metrics built on it.
import { describe, expect, it } from 'vitest';
import { ArgumentError, NvccCompiler, calculatedKernelMetrics, occupancyDeviceFor, theoreticalOccupancy, type OccupancyDevice } from '../../src/gpu';
import { findNvcc } from '../../src/gpu/toolkit';

const V100 = occupancyDeviceFor([7, 0]);
const H100 = occupancyDeviceFor([9, 0]);

function occupancy(device: OccupancyDevice, threads: number, registers: number, staticShared = 0, dynamicShared = 0) {
  return theoreticalOccupancy(device, { registers, staticSharedBytes: staticShared }, { threadsPerBlock: threads, dynamicSharedBytes: dynamicShared });
}

describe('the CUDA Best Practices Guide\'s example (Calculating Occupancy, compute capability 7.0, 37 registers)', () => {
  it('128-thread blocks: 12 active blocks, 75% occupancy', () => {
    const o = occupancy(V100, 128, 37);
    expect(o.activeBlocksPerMultiprocessor).toBe(12);
    expect(o.occupancy).toBe(0.75);
    expect(o.limitedBy).toEqual(['registers']);
  });

  it('320-thread blocks: 4 active blocks, 62.5% (register allocation granularity)', () => {
    const o = occupancy(V100, 320, 37);
    expect(o.activeBlocksPerMultiprocessor).toBe(4);
    expect(o.activeWarpsPerMultiprocessor).toBe(40);
    expect(o.occupancy).toBe(0.625);
  });

  it('32 registers per thread is the most for 100% (65,536 registers / 2,048 threads)', () => {
    expect(occupancy(V100, 256, 32).occupancy).toBe(1);
    expect(occupancy(V100, 256, 33).occupancy).toBeLessThan(1);
  });
});

describe('each limit, worked out from the calculator\'s rules', () => {
  it('warps and registers together on an H100 (256 threads, 32 registers)', () => {
    const o = occupancy(H100, 256, 32);
    expect(o).toMatchObject({ activeBlocksPerMultiprocessor: 8, activeWarpsPerMultiprocessor: 64, maxWarpsPerMultiprocessor: 64, occupancy: 1 });
    expect(o.limitedBy).toEqual(['warps', 'registers']);
    expect(o.source).toBe('calculator');
  });

  it('registers: 64 per thread halve an H100 (128 threads: 8 blocks, 32 warps)', () => {
    expect(occupancy(H100, 128, 64)).toMatchObject({ activeBlocksPerMultiprocessor: 8, occupancy: 0.5 });
  });

  it('a block needing more registers than a block may have cannot run (1024 threads × 65 registers)', () => {
    const o = occupancy(H100, 1024, 65);
    expect(o.activeBlocksPerMultiprocessor).toBe(0);
    expect(o.occupancy).toBe(0);
    expect(o.limitedBy).toEqual(['registers']);
  });

  it('shared memory, with the 1 KiB the driver reserves per block from 8.0 (48 KiB static: 4 blocks of 228 KiB)', () => {
    const o = occupancy(H100, 128, 32, 48 * 1024);
    expect(o).toMatchObject({ activeBlocksPerMultiprocessor: 4, activeWarpsPerMultiprocessor: 16, occupancy: 0.25 });
    expect(o.limitedBy).toEqual(['shared memory']);
  });

  it('dynamic shared memory up to the opt-in limit fits once; one byte more does not', () => {
    expect(occupancy(H100, 128, 32, 0, 227 * 1024).activeBlocksPerMultiprocessor).toBe(1);
    expect(occupancy(H100, 128, 32, 0, 227 * 1024 + 1).activeBlocksPerMultiprocessor).toBe(0);
  });

  it('shared memory is allocated in 256-byte units on 7.x (1000 bytes take 1024: 96 fit, the 32-block limit binds)', () => {
    const o = occupancy(V100, 64, 16, 1000);
    expect(o.activeBlocksPerMultiprocessor).toBe(32);
    expect(o.limitedBy).toEqual(['warps', 'blocks']);
    expect(occupancy(V100, 64, 16, 24 * 1024 + 1).activeBlocksPerMultiprocessor).toBe(3); // 24832 bytes: 98304 / 24832
  });

  it('the resident block limit: one-warp blocks on an Ada GPU (8.9) stop at 24 blocks, 50%', () => {
    const o = occupancy(occupancyDeviceFor([8, 9]), 32, 16);
    expect(o).toMatchObject({ activeBlocksPerMultiprocessor: 24, occupancy: 0.5 });
    expect(o.limitedBy).toEqual(['blocks']);
  });

  it('1536-thread parts: 256 threads fill an 8.6 GPU with 6 blocks (48 warps)', () => {
    expect(occupancy(occupancyDeviceFor([8, 6]), 256, 32)).toMatchObject({ activeBlocksPerMultiprocessor: 6, maxWarpsPerMultiprocessor: 48, occupancy: 1 });
  });

  it('Turing (7.5): 32 warps per multiprocessor, 40 registers still fit 4 blocks of 256', () => {
    expect(occupancy(occupancyDeviceFor([7, 5]), 256, 40)).toMatchObject({ activeBlocksPerMultiprocessor: 4, occupancy: 1 });
  });

  it('a consumer Blackwell (12.0) with 64 KiB dynamic shared memory: one block, 4 of 48 warps', () => {
    const o = occupancy(occupancyDeviceFor([12, 0]), 128, 32, 0, 64 * 1024);
    expect(o.activeBlocksPerMultiprocessor).toBe(1);
    expect(o.occupancy).toBeCloseTo(4 / 48, 12);
  });

  it('barriers limit from 9.0: 16 named barriers per block leave 4 blocks on an H100 (64 slots)', () => {
    const o = theoreticalOccupancy(H100, { registers: 16, staticSharedBytes: 0, barriers: 16 }, { threadsPerBlock: 64, dynamicSharedBytes: 0 });
    expect(o.activeBlocksPerMultiprocessor).toBe(4);
    expect(o.limitedBy).toEqual(['barriers']);
  });

  it('more threads than a block may have cannot run', () => {
    expect(occupancy(H100, 1025, 16).activeBlocksPerMultiprocessor).toBe(0);
  });
});

describe('device limits per compute capability', () => {
  it('match the programming guide\'s table for the parts in use', () => {
    expect(H100).toMatchObject({ maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 233472, maxSharedMemoryPerBlockOptin: 232448, reservedSharedMemoryPerBlock: 1024 });
    expect(occupancyDeviceFor([8, 0])).toMatchObject({ maxSharedMemoryPerBlockOptin: 163 * 1024 });
    expect(V100).toMatchObject({ maxSharedMemoryPerBlockOptin: 96 * 1024, reservedSharedMemoryPerBlock: 0 });
    expect(occupancyDeviceFor([10, 0])).toMatchObject({ maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32 });
    expect(occupancyDeviceFor([12, 0])).toMatchObject({ maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerBlockOptin: 99 * 1024 });
  });

  it('an unknown compute capability is an ArgumentError naming the known ones', () => {
    expect(() => occupancyDeviceFor([6, 1])).toThrow(ArgumentError);
    expect(() => occupancyDeviceFor([6, 1])).toThrow(/one of 7\.0, 7\.2, 7\.5/);
  });

  it('rejects impossible inputs', () => {
    expect(() => occupancy(H100, 0, 32)).toThrow(ArgumentError);
    expect(() => occupancy(H100, 128, -1)).toThrow(ArgumentError);
  });
});

describe.skipIf(!findNvcc())('free metrics of an nvcc build without a GPU', () => {
  it('registers, static shared memory and occupancy from ptxas and the calculator', async () => {
    const source = `extern "C" __global__ void tile(const float* in, float* out) {
  __shared__ float t[32][33];
  t[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
  __syncthreads();
  out[threadIdx.x * 32 + threadIdx.y] = t[threadIdx.x][threadIdx.y];
}`;
    const compiled = await new NvccCompiler({ defaultArch: 'sm_90' }).compile({ source, nameExpressions: ['tile'] });
    const resources = compiled.resources!.tile!;
    const metrics = calculatedKernelMetrics(resources, [9, 0], { threadsPerBlock: 1024, dynamicSharedBytes: 0 });
    expect(metrics.static_shared_mem_bytes).toBe(32 * 33 * 4);
    expect(metrics.num_regs).toBe(resources.registers);
    expect(metrics).toMatchObject({ active_blocks_per_sm: 2, active_warps_per_sm: 64, occupancy: 1, occupancy_source: 'calculator', dynamic_shared_mem_bytes: 0 });
  });
});
