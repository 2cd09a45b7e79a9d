// One interface over the two compiler backends: NVRTC inside the worker (fast, in-process, several at once) and nvcc as
// a subprocess (where NVRTC is missing, e.g. CI: compile errors and resource usage stay testable with a real compiler).

import type { Gpu } from './client';
import { CudaUnavailableError } from './errors';
import { NvccCompiler, type NvccCompilerOptions } from './nvcc';
import type { Program, ProgramInit } from './program';
import type { CompiledProgram, CompilerBackend } from './types';

export interface CompileOptions {
  /** Aborting rejects with AbortError (nvcc is killed; an NVRTC compile finishes on its thread and is dropped). */
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface Compiler {
  readonly backend: CompilerBackend;
  /** Rejects with CompileError (log + diagnostics) when the program does not compile. */
  compile(program: Program | ProgramInit, options?: CompileOptions): Promise<CompiledProgram>;
}

/** NVRTC through the Gpu's worker; the default arch is the device's own. */
export class NvrtcCompiler implements Compiler {
  readonly backend = 'nvrtc' as const;
  constructor(private readonly gpu: Gpu) {}

  compile(program: Program | ProgramInit, options: CompileOptions = {}): Promise<CompiledProgram> {
    return this.gpu.compile(program, options);
  }
}

export interface SelectCompilerOptions {
  /** With a Gpu: NVRTC when its worker loaded it, and the device's own arch for nvcc. */
  gpu?: Gpu;
  nvcc?: NvccCompilerOptions;
}

/** NVRTC when the worker reports it loaded, else nvcc when found, else a CudaUnavailableError naming both. */
export async function selectCompiler(options: SelectCompilerOptions = {}): Promise<Compiler> {
  const gpu = options.gpu;
  if (gpu?.nvrtcAvailable) return new NvrtcCompiler(gpu);
  const nvccOptions: NvccCompilerOptions = { ...options.nvcc };
  if (nvccOptions.defaultArch === undefined && gpu) nvccOptions.defaultArch = gpu.arch;
  if (await NvccCompiler.available(nvccOptions)) return new NvccCompiler(nvccOptions);
  const nvrtcReason = gpu ? gpu.nativeStatus.nvrtc.error ?? 'not loaded' : 'no GPU worker to load it';
  throw new CudaUnavailableError(
    `No CUDA compiler is available: NVRTC (libnvrtc.so.13/.12) could not be used (${nvrtcReason}) and nvcc was not ` +
      'found (looked at nvccPath, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and PATH).',
    {
      code: 'NO_COMPILER',
      library: 'libnvrtc',
      explanation: 'Install the CUDA toolkit: its NVRTC library (cuda-nvrtc) or nvcc (cuda-nvcc), and put it on the library path / PATH.',
    },
  );
}
