// The metrics of one configuration that come for free, without running it: registers, local memory (spills), shared
// memory and theoretical occupancy, under the names the tuner records them with: Kernel Tuner's where it has one (its
// RegisterObserver writes num_regs), the same snake_case style for the rest. From the driver for a loaded kernel
// (Kernel.metrics), or from nvcc's ptxas report and the occupancy calculator where no driver can answer.

import { occupancyDeviceFor, theoreticalOccupancy, type Occupancy, type OccupancyLaunch } from './occupancy';
import type { KernelResources } from './types';

export interface KernelMetrics {
  /** Registers per thread (Kernel Tuner's RegisterObserver). */
  num_regs: number;
  /** Local memory per thread (bytes): local arrays and register spills. */
  local_mem_bytes: number;
  static_shared_mem_bytes: number;
  dynamic_shared_mem_bytes: number;
  active_blocks_per_sm: number;
  active_warps_per_sm: number;
  /** Theoretical occupancy: active warps / max warps per multiprocessor, 0..1. */
  occupancy: number;
  occupancy_source: Occupancy['source'];
}

/** A kernel's resource usage, as the driver (KernelAttributes) or the compiler (via usageOfResources) reports it. */
export interface KernelUsage {
  registers: number;
  staticSharedBytes: number;
  localBytes: number;
  barriers?: number;
}

export function kernelMetrics(usage: KernelUsage, dynamicSharedBytes: number, occupancy: Occupancy): KernelMetrics {
  return {
    num_regs: usage.registers,
    local_mem_bytes: usage.localBytes,
    static_shared_mem_bytes: usage.staticSharedBytes,
    dynamic_shared_mem_bytes: dynamicSharedBytes,
    active_blocks_per_sm: occupancy.activeBlocksPerMultiprocessor,
    active_warps_per_sm: occupancy.activeWarpsPerMultiprocessor,
    occupancy: occupancy.occupancy,
    occupancy_source: occupancy.source,
  };
}

export function usageOfResources(resources: KernelResources): KernelUsage {
  return {
    registers: resources.registers,
    staticSharedBytes: resources.sharedBytes,
    localBytes: resources.localBytes,
    barriers: resources.barriers,
  };
}

/** Without a driver: nvcc's resources and the occupancy calculator for the target's compute capability. */
export function calculatedKernelMetrics(
  resources: KernelResources,
  computeCapability: readonly [number, number],
  launch: OccupancyLaunch,
): KernelMetrics {
  const usage = usageOfResources(resources);
  return kernelMetrics(usage, launch.dynamicSharedBytes, theoreticalOccupancy(occupancyDeviceFor(computeCapability), usage, launch));
}
