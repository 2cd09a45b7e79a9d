// The two compiler backends behind one interface: NVRTC inside the GPU worker (fast, in-process, several at once) and
// nvcc as a subprocess (the whole .cu file as nvcc sees it; where NVRTC is missing or cannot take a file).
// Dependencies point one way: this module uses the client (for NVRTC) and nvcc.ts; neither knows about it.

import type { Gpu } from './client';
import { CudaUnavailableError } from './errors';
import { NvccCompiler, type NvccCompilerOptions } from './nvcc';
import type { Program, ProgramInit } from './program';
import type { CompiledProgram, CompileOptions, Compiler } from './types';

export type { CompileOptions, Compiler } from './types';

/** NVRTC through the Gpu's worker; the default arch is the device's own. */
export class NvrtcCompiler implements Compiler {
  readonly backend = 'nvrtc' as const;
  constructor(private readonly gpu: Gpu) {}

  compile(program: Program | ProgramInit, options: CompileOptions = {}): Promise<CompiledProgram> {
    return this.gpu.compile(program, options);
  }
}

export interface AvailableCompilers {
  nvrtc: NvrtcCompiler | null;
  nvcc: NvccCompiler | null;
}

/** Every compiler this machine has for the Gpu: NVRTC when its worker loaded it, nvcc when found (for the device's arch). */
export async function availableCompilers(gpu: Gpu, nvcc: NvccCompilerOptions = {}): Promise<AvailableCompilers> {
  const nvccOptions: NvccCompilerOptions = { defaultArch: gpu.arch, ...nvcc };
  return {
    nvrtc: gpu.nvrtcAvailable ? new NvrtcCompiler(gpu) : null,
    nvcc: (await NvccCompiler.available(nvccOptions)) ? new NvccCompiler(nvccOptions) : null,
  };
}

export interface SelectCompilerOptions {
  /** With a Gpu: NVRTC when its worker loaded it, and the device's own arch for nvcc. */
  gpu?: Gpu;
  nvcc?: NvccCompilerOptions;
}

/** One compiler: NVRTC when the worker reports it loaded, else nvcc when found, else a CudaUnavailableError naming both. */
export async function selectCompiler(options: SelectCompilerOptions = {}): Promise<Compiler> {
  const gpu = options.gpu;
  if (gpu?.nvrtcAvailable) return new NvrtcCompiler(gpu);
  const nvccOptions: NvccCompilerOptions = { ...options.nvcc };
  if (nvccOptions.defaultArch === undefined && gpu) nvccOptions.defaultArch = gpu.arch;
  if (await NvccCompiler.available(nvccOptions)) return new NvccCompiler(nvccOptions);
  throw noCompilerError(gpu);
}

export function noCompilerError(gpu: Gpu | undefined): CudaUnavailableError {
  const nvrtcReason = gpu ? gpu.nativeStatus.nvrtc.error ?? 'not loaded' : 'no GPU worker to load it';
  return new CudaUnavailableError(
    `No CUDA compiler is available: NVRTC (libnvrtc.so.13/.12) could not be used (${nvrtcReason}) and nvcc was not ` +
      'found (looked at nvccPath, $CUDA_HOME, $CUDA_PATH, PATH and the usual install locations).',
    {
      code: 'NO_COMPILER',
      library: 'libnvrtc',
      explanation: 'Install the CUDA toolkit: its NVRTC library (cuda-nvrtc) or nvcc (cuda-nvcc), and put it on the library path / PATH.',
    },
  );
}
