// Theoretical occupancy: how many blocks of a kernel fit on one multiprocessor at once, and what share of its warp slots
// they fill. The driver answers this for a loaded kernel (cuOccupancyMaxActiveBlocksPerMultiprocessor, see
// Kernel.occupancy); this is the same computation as the CUDA occupancy calculator (cuda_occupancy.h), for where the
// driver cannot answer: a kernel compiled by nvcc on a machine without a GPU, the fake backend of the tests.
//
// Per multiprocessor, blocks are limited by
//   warps:          floor(max warps / warps per block)
//   registers:      registers are allocated per warp, rounded up to 256; each of the 4 sub-partitions holds
//                   floor(registers per SM / 4 / registers per warp) warps
//   shared memory:  static + dynamic + the driver's reserved bytes per block, rounded up to the allocation granularity
//                   (256 bytes on 7.x, 128 from 8.0), against the shared memory per SM
//   blocks:         the architecture's resident block limit
//   barriers:       from 9.0, blocks × (1 or 2) barrier slots shared by the named barriers each block uses
// and a block that cannot fit at all (too many registers for the block, more shared memory than the opt-in limit,
// more threads than 1024) gives 0. The numbers per compute capability come from the CUDA C++ Programming Guide's table
// of technical specifications per compute capability (the same as libcu++'s cuda::arch_traits).

import { argumentError } from './errors';

export type OccupancyLimit = 'warps' | 'registers' | 'shared memory' | 'blocks' | 'barriers';

/** What occupancy depends on in a device (DeviceInfo has these fields, as the driver reports them). */
export interface OccupancyDevice {
  computeCapability: readonly [number, number];
  warpSize: number;
  maxThreadsPerBlock: number;
  maxThreadsPerMultiprocessor: number;
  maxBlocksPerMultiprocessor: number;
  maxRegistersPerBlock: number;
  maxRegistersPerMultiprocessor: number;
  /** The default per-block limit (48 KiB); more needs the kernel's opt-in, up to maxSharedMemoryPerBlockOptin. */
  maxSharedMemoryPerBlock: number;
  maxSharedMemoryPerBlockOptin: number;
  maxSharedMemoryPerMultiprocessor: number;
  reservedSharedMemoryPerBlock: number;
}

export interface OccupancyKernel {
  /** Registers per thread. */
  registers: number;
  staticSharedBytes: number;
  /** Named barriers per block (ptxas -v "used N barriers"); default 1, which never limits. */
  barriers?: number;
}

export interface OccupancyLaunch {
  threadsPerBlock: number;
  dynamicSharedBytes: number;
}

export interface Occupancy {
  /** Blocks resident on one multiprocessor at once; 0 when a block cannot run at all. */
  activeBlocksPerMultiprocessor: number;
  activeWarpsPerMultiprocessor: number;
  maxWarpsPerMultiprocessor: number;
  /** Active warps / max warps per multiprocessor, 0..1. */
  occupancy: number;
  /** Where the number comes from: the driver (a loaded kernel on the device) or this calculator. */
  source: 'driver' | 'calculator';
  /** The limits that the active block count reaches (the calculator's; absent where it disagrees with the driver). */
  limitedBy?: OccupancyLimit[];
}

const KIB = 1024;
const WARP_SIZE = 32;

interface Architecture {
  maxThreadsPerMultiprocessor: number;
  maxBlocksPerMultiprocessor: number;
  maxSharedMemoryPerMultiprocessor: number;
}

/** Per compute capability, from the programming guide's table (7.0 to 12.1; newer minors of a family alike). */
const ARCHITECTURES: Record<string, Architecture> = {
  '7.0': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 96 * KIB },
  '7.2': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 96 * KIB },
  '7.5': { maxThreadsPerMultiprocessor: 1024, maxBlocksPerMultiprocessor: 16, maxSharedMemoryPerMultiprocessor: 64 * KIB },
  '8.0': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 164 * KIB },
  '8.6': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 16, maxSharedMemoryPerMultiprocessor: 100 * KIB },
  '8.7': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 16, maxSharedMemoryPerMultiprocessor: 164 * KIB },
  '8.8': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 16, maxSharedMemoryPerMultiprocessor: 100 * KIB },
  '8.9': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerMultiprocessor: 100 * KIB },
  '9.0': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 228 * KIB },
  '10.0': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 228 * KIB },
  '10.1': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerMultiprocessor: 228 * KIB },
  '10.3': { maxThreadsPerMultiprocessor: 2048, maxBlocksPerMultiprocessor: 32, maxSharedMemoryPerMultiprocessor: 228 * KIB },
  '11.0': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerMultiprocessor: 228 * KIB },
  '12.0': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerMultiprocessor: 100 * KIB },
  '12.1': { maxThreadsPerMultiprocessor: 1536, maxBlocksPerMultiprocessor: 24, maxSharedMemoryPerMultiprocessor: 100 * KIB },
};

/** The device limits of a compute capability, as the driver would report them (for an nvcc build without a GPU). */
export function occupancyDeviceFor(computeCapability: readonly [number, number]): OccupancyDevice {
  const [major, minor] = computeCapability;
  const arch = ARCHITECTURES[`${major}.${minor}`];
  if (!arch)
    throw argumentError('computeCapability', `one of ${Object.keys(ARCHITECTURES).join(', ')}`, `${major}.${minor}`);
  const reservedSharedMemoryPerBlock = major >= 8 ? KIB : 0;
  return {
    computeCapability: [major, minor],
    warpSize: WARP_SIZE,
    maxThreadsPerBlock: 1024,
    ...arch,
    maxRegistersPerBlock: 64 * KIB,
    maxRegistersPerMultiprocessor: 64 * KIB,
    maxSharedMemoryPerBlock: 48 * KIB,
    maxSharedMemoryPerBlockOptin: arch.maxSharedMemoryPerMultiprocessor - reservedSharedMemoryPerBlock,
    reservedSharedMemoryPerBlock,
  };
}

const REGISTER_ALLOCATION_UNIT = 256;
const MAX_REGISTERS_PER_THREAD = 255;
const SUB_PARTITIONS = 4;

const roundUp = (x: number, unit: number): number => Math.ceil(x / unit) * unit;

function sharedAllocationUnit(major: number): number {
  return major >= 8 ? 128 : 256;
}

/** Barrier slots per resident block: two, except on the parts with fewer (8.x but 8.0, 10.1, 11.0, 12.x). */
function barrierSlotsPerBlock([major, minor]: readonly [number, number]): number {
  if (major === 12 || (major === 10 && minor === 1) || (major === 11 && minor === 0) || (major === 8 && minor !== 0)) return 1;
  return 2;
}

function blocksByRegisters(device: OccupancyDevice, registers: number, warpsPerBlock: number): number {
  if (registers === 0) return Infinity;
  const perWarp = roundUp(registers * device.warpSize, REGISTER_ALLOCATION_UNIT);
  // The hardware checks the block's registers as if its warps were spread over every sub-partition.
  const assumedPerBlock = perWarp * roundUp(warpsPerBlock, SUB_PARTITIONS);
  if (registers > MAX_REGISTERS_PER_THREAD || assumedPerBlock > device.maxRegistersPerBlock) return 0;
  const warpsPerSubPartition = Math.floor(device.maxRegistersPerMultiprocessor / SUB_PARTITIONS / perWarp);
  return Math.floor((warpsPerSubPartition * SUB_PARTITIONS) / warpsPerBlock);
}

function blocksBySharedMemory(device: OccupancyDevice, staticBytes: number, dynamicBytes: number): number {
  const used = staticBytes + device.reservedSharedMemoryPerBlock + dynamicBytes;
  const allocated = roundUp(used, sharedAllocationUnit(device.computeCapability[0]));
  // Above the default per-block limit the kernel opts in (the worker raises its attribute as a launch would).
  const perBlockLimit =
    (used > device.maxSharedMemoryPerBlock ? device.maxSharedMemoryPerBlockOptin : device.maxSharedMemoryPerBlock) +
    device.reservedSharedMemoryPerBlock;
  if (allocated > perBlockLimit) return 0;
  return allocated === 0 ? Infinity : Math.floor(device.maxSharedMemoryPerMultiprocessor / allocated);
}

function checkCount(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw argumentError(name, `an integer >= ${min}`, value);
  return value;
}

/** Active warps, max warps and their ratio for `activeBlocks` blocks of `threadsPerBlock` threads. */
export function occupancyOf(device: OccupancyDevice, threadsPerBlock: number, activeBlocks: number, source: Occupancy['source']): Occupancy {
  const maxWarps = Math.floor(device.maxThreadsPerMultiprocessor / device.warpSize);
  const activeWarps = activeBlocks * Math.ceil(threadsPerBlock / device.warpSize);
  return {
    activeBlocksPerMultiprocessor: activeBlocks,
    activeWarpsPerMultiprocessor: activeWarps,
    maxWarpsPerMultiprocessor: maxWarps,
    occupancy: activeWarps / maxWarps,
    source,
  };
}

/** The CUDA occupancy calculator's theoretical occupancy of a kernel launched with `launch` on `device`. */
export function theoreticalOccupancy(device: OccupancyDevice, kernel: OccupancyKernel, launch: OccupancyLaunch): Occupancy {
  const threads = checkCount('threadsPerBlock', launch.threadsPerBlock, 1);
  const registers = checkCount('registers', kernel.registers, 0);
  const staticBytes = checkCount('staticSharedBytes', kernel.staticSharedBytes, 0);
  const dynamicBytes = checkCount('dynamicSharedBytes', launch.dynamicSharedBytes, 0);
  const barriers = checkCount('barriers', kernel.barriers ?? 1, 0);
  const warpsPerBlock = Math.ceil(threads / device.warpSize);
  const maxWarps = Math.floor(device.maxThreadsPerMultiprocessor / device.warpSize);
  const limits: Record<OccupancyLimit, number> = {
    warps: threads > device.maxThreadsPerBlock ? 0 : Math.floor(maxWarps / warpsPerBlock),
    registers: blocksByRegisters(device, registers, warpsPerBlock),
    'shared memory': blocksBySharedMemory(device, staticBytes, dynamicBytes),
    blocks: device.maxBlocksPerMultiprocessor,
    barriers:
      device.computeCapability[0] >= 9 && barriers > 0
        ? Math.floor((device.maxBlocksPerMultiprocessor * barrierSlotsPerBlock(device.computeCapability)) / barriers)
        : Infinity,
  };
  const active = Math.min(...Object.values(limits));
  const limitedBy = (Object.keys(limits) as OccupancyLimit[]).filter((k) => limits[k] === active);
  return { ...occupancyOf(device, threads, active, 'calculator'), limitedBy };
}
