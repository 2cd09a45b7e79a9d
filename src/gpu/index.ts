// The GPU layer's public surface: the client (devices, memory, launches), the compilers and the toolkit lookup.
export * from './client';
export { NvccCompiler, type NvccCompilerOptions } from './nvcc';
export { NvrtcCompiler, availableCompilers, selectCompiler, type AvailableCompilers, type Compiler, type CompileOptions, type SelectCompilerOptions } from './compiler';
export { findCudaToolkit, findNvcc, type CudaToolkit } from './toolkit';
