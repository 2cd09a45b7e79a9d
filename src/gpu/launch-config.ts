// LaunchConfig (grid, block, dynamic shared memory), checked on construction and, against a device and a kernel,
// before every launch: a configuration the hardware cannot run is a LaunchError here, not a CUDA error later.

import { checkNonNegativeInteger, checkObject, checkPositiveInteger } from './check';
import { argumentError, LaunchError } from './errors';
import type { DeviceInfo, Dim3, KernelAttributes } from './types';

export type Dim3Init = number | readonly [number] | readonly [number, number] | readonly [number, number, number];

export interface LaunchConfigInit {
  grid: Dim3Init;
  block: Dim3Init;
  /** Dynamic shared memory per block (bytes); default 0. Above the default 48 KiB the worker raises the kernel's
   * opt-in limit (cuFuncSetAttribute) before launching; above the device's opt-in limit it is a LaunchError. */
  sharedMemBytes?: number;
}

function checkDim3(name: string, value: unknown): Dim3 {
  if (typeof value === 'number') return [checkPositiveInteger(name, value), 1, 1];
  if (!Array.isArray(value) || value.length < 1 || value.length > 3)
    throw argumentError(name, 'a positive integer or an array of 1 to 3 positive integers', value);
  const dims = value.map((v, i) => checkPositiveInteger(`${name}[${i}]`, v));
  return [dims[0]!, dims[1] ?? 1, dims[2] ?? 1];
}

function launchError(code: string, message: string, explanation: string): LaunchError {
  return new LaunchError(message, { code, explanation, call: 'launch' });
}

export class LaunchConfig {
  readonly grid: Dim3;
  readonly block: Dim3;
  readonly sharedMemBytes: number;

  constructor(init: LaunchConfigInit) {
    const o = checkObject('config', init);
    this.grid = checkDim3('grid', o.grid);
    this.block = checkDim3('block', o.block);
    this.sharedMemBytes = o.sharedMemBytes === undefined ? 0 : checkNonNegativeInteger('sharedMemBytes', o.sharedMemBytes);
    Object.freeze(this);
  }

  static from(config: LaunchConfig | LaunchConfigInit): LaunchConfig {
    return config instanceof LaunchConfig ? config : new LaunchConfig(config);
  }

  get threadsPerBlock(): number {
    return this.block[0] * this.block[1] * this.block[2];
  }

  /**
   * Throws a LaunchError when the device (and, when given, the kernel) cannot run this configuration: a block
   * dimension or the block's thread count over the limit, a grid dimension over the limit, or more shared memory
   * than the opt-in limit allows.
   */
  validate(device: DeviceInfo, kernel?: KernelAttributes): this {
    const axes = ['x', 'y', 'z'] as const;
    for (let i = 0; i < 3; i++) {
      if (this.block[i]! > device.maxBlockDim[i]!)
        throw launchError(
          'LAUNCH_BLOCK_TOO_LARGE',
          `block[${i}] = ${this.block[i]} exceeds the device's limit of ${device.maxBlockDim[i]} threads along ${axes[i]}`,
          'Use a smaller block along that axis.',
        );
      if (this.grid[i]! > device.maxGridDim[i]!)
        throw launchError(
          'LAUNCH_GRID_TOO_LARGE',
          `grid[${i}] = ${this.grid[i]} exceeds the device's limit of ${device.maxGridDim[i]} blocks along ${axes[i]}`,
          'Use fewer blocks along that axis (or more work per block).',
        );
    }
    if (this.threadsPerBlock > device.maxThreadsPerBlock)
      throw launchError(
        'LAUNCH_BLOCK_TOO_LARGE',
        `A block of ${this.block.join('×')} = ${this.threadsPerBlock} threads exceeds the device's limit of ` +
          `${device.maxThreadsPerBlock} threads per block`,
        'Use fewer threads per block.',
      );
    if (this.sharedMemBytes > device.maxSharedMemoryPerBlockOptin)
      throw launchError(
        'LAUNCH_SHARED_MEMORY_TOO_LARGE',
        `${this.sharedMemBytes} bytes of dynamic shared memory exceed the device's opt-in limit of ` +
          `${device.maxSharedMemoryPerBlockOptin} bytes per block`,
        'Use less shared memory per block.',
      );
    if (kernel) {
      if (this.threadsPerBlock > kernel.maxThreadsPerBlock)
        throw launchError(
          'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
          `A block of ${this.threadsPerBlock} threads exceeds this kernel's limit of ${kernel.maxThreadsPerBlock} ` +
            `(it uses ${kernel.registers} registers per thread)`,
          'Too many resources requested for launch: use fewer threads per block or fewer registers per thread ' +
            '(__launch_bounds__, -maxrregcount).',
        );
      const limit = device.maxSharedMemoryPerBlockOptin - kernel.staticSharedBytes;
      if (this.sharedMemBytes > limit)
        throw launchError(
          'LAUNCH_SHARED_MEMORY_TOO_LARGE',
          `${this.sharedMemBytes} bytes of dynamic shared memory exceed this kernel's limit of ${limit} bytes ` +
            `(${device.maxSharedMemoryPerBlockOptin} opt-in per block minus ${kernel.staticSharedBytes} static)`,
          'Use less shared memory per block.',
        );
    }
    return this;
  }
}
