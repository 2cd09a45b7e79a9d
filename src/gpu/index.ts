// The GPU layer's public surface: the client (devices, memory, launches, metrics, energy), the compilers and the
// compile pool, the toolkit lookup, Nsight Compute and compute-sanitizer.
export * from './client';
export { NvccCompiler, type NvccCompilerOptions } from './nvcc';
export { CompilePool, type CompilePoolOptions } from './compile-pool';
export { NvrtcCompiler, availableCompilers, selectCompiler, type AvailableCompilers, type Compiler, type CompileOptions, type SelectCompilerOptions } from './compiler';
export { findCudaToolkit, findNvcc, type CudaToolkit } from './toolkit';
export { findNsightCompute, type NsightCompute } from './ncu/find';
export { profileKernel, type KernelProfile, type ProfileOptions } from './ncu/profile';
export { type LaunchArg, type LaunchBuffer, type LaunchTarget } from './ncu/launch-request';
export { findComputeSanitizer, type ComputeSanitizer } from './sanitizer/find';
export { SANITIZER_TOOLS, type SanitizerFinding, type SanitizerTool } from './sanitizer/report';
export { sanitizeKernel, type SanitizeOptions, type SanitizerRun } from './sanitizer/sanitize';
export { type ProfileNumbers, type StallShare } from './ncu/report';
export { confirmedDefineClashes, withDefineClashHint, type CompileAgain, type DefineClash } from './define-clash';
