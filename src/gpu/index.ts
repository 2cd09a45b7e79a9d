// The GPU layer's public surface: the client (devices, memory, launches, metrics, energy), the compilers and the
// compile pool, the toolkit lookup and Nsight Compute.
export * from './client';
export { NvccCompiler, type NvccCompilerOptions } from './nvcc';
export { CompilePool, type CompilePoolOptions } from './compile-pool';
export { NvrtcCompiler, availableCompilers, selectCompiler, type AvailableCompilers, type Compiler, type CompileOptions, type SelectCompilerOptions } from './compiler';
export { findCudaToolkit, findNvcc, type CudaToolkit } from './toolkit';
export { findNsightCompute, type NsightCompute } from './ncu/find';
export { profileKernel, type KernelProfile, type ProfileOptions } from './ncu/profile';
export { type LaunchArg, type LaunchBuffer, type LaunchTarget } from './ncu/launch-request';
export { type ProfileNumbers, type StallShare } from './ncu/report';
export { confirmedDefineClashes, withDefineClashHint, type CompileAgain, type DefineClash } from './define-clash';
