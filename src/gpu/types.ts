// Plain data types of the public GPU API (shared by the client, the protocol and the compilers).

import type { NativeDeviceInfo } from './native-types';
import type { Program, ProgramInit } from './program';

export type Dim3 = [number, number, number];

/** A device as the driver reports it (see NativeDeviceInfo for the fields). */
export type DeviceInfo = NativeDeviceInfo;

export interface RuntimeInfo {
  /** cuDriverGetVersion, e.g. 13000 for CUDA 13.0. */
  driverVersion: number;
  /** [major, minor], or null when NVRTC is not loaded (nvcc may still compile). */
  nvrtcVersion: [number, number] | null;
  device: DeviceInfo;
}

export interface MemInfo {
  freeBytes: number;
  totalBytes: number;
}

/** A kernel's attributes as the driver reports them once its module is loaded. */
export interface KernelAttributes {
  /** Registers per thread. */
  registers: number;
  /** Statically declared shared memory per block (bytes). */
  staticSharedBytes: number;
  constBytes: number;
  /** Local memory per thread (bytes): local arrays and register spills. */
  localBytes: number;
  /** The most threads per block this kernel can launch with (fewer than the device's when it uses many registers). */
  maxThreadsPerBlock: number;
  /** Current limit of dynamic shared memory (raised by the worker when a launch asks for more, up to the opt-in limit). */
  maxDynamicSharedBytes: number;
  ptxVersion: number;
  binaryVersion: number;
}

/** NVML's readings of the worker's device now (read only); a field is absent where the device does not report it, and
 * `unsupported` says why (NVML's error code). */
export interface NvmlReadings {
  name?: string;
  /** The energy counter: joules since the driver was loaded (Volta and newer). */
  energyJ?: number;
  powerW?: number;
  /** The power limit the driver enforces now. */
  powerLimitW?: number;
  smClockMhz?: number;
  memClockMhz?: number;
  temperatureC?: number;
  unsupported: Record<string, string>;
}

/** Resource usage of one kernel as the compiler (ptxas) reports it. */
export interface KernelResources {
  registers: number;
  /** Static shared memory (bytes). */
  sharedBytes: number;
  /** Stack frame per thread (bytes): local arrays and spills. */
  localBytes: number;
  spillStoreBytes: number;
  spillLoadBytes: number;
  /** Constant bank 0 (bytes: parameters and constants), when reported. */
  constantBytes: number;
  barriers: number;
}

export type CompilerBackend = 'nvrtc' | 'nvcc';

export interface CompiledProgram {
  /** SASS for `arch`, ready for Gpu.loadModule. */
  cubin: Buffer;
  ptx?: string;
  /** The compiler's full output (warnings, ptxas info); may be empty. */
  log: string;
  /** name expression → lowered (mangled) name, for every name expression of the program. */
  loweredNames: Record<string, string>;
  backend: CompilerBackend;
  /** The sm_XY target it was compiled for. */
  arch: string;
  durationMs: number;
  /** Per name expression, when the backend reports it (nvcc's ptxas -v); NVRTC's come from Kernel.attributes. */
  resources?: Record<string, KernelResources>;
}

export interface CompileOptions {
  /** Aborting rejects with AbortError (nvcc is killed; an NVRTC compile finishes on its thread and is dropped). */
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** NVRTC (in the GPU worker) or nvcc (a subprocess): the same Program in, a CompiledProgram or a CompileError out. */
export interface Compiler {
  readonly backend: CompilerBackend;
  /** Rejects with CompileError (log + diagnostics) when the program does not compile. */
  compile(program: Program | ProgramInit, options?: CompileOptions): Promise<CompiledProgram>;
}
