/**
 * Pieces every prompt shares: who the model is asked to be, how kernels are shown, and the rules of the tuner that
 * every rewrite must follow (they are how Kernel Tuner launches and compiles a kernel, so a model that ignores them
 * produces kernels that cannot be tuned).
 */
import type { ParamValue } from '../tuner/types';

export const SYSTEM_PROMPT = [
  'You are an expert in CUDA performance engineering. You analyse and optimize CUDA kernels that are tuned automatically:',
  'every kernel you write is compiled, checked for correct results against the original kernel and timed on a real GPU.',
  'Be precise. When asked for JSON, answer with JSON only.',
].join(' ');

export function kernelBlock(code: string): string {
  return `\`\`\`cuda\n${code.trimEnd()}\n\`\`\``;
}

export function formatTuneParams(tuneParams: Record<string, readonly ParamValue[]>): string {
  const entries = Object.entries(tuneParams);
  return entries.length === 0 ? '(none)' : entries.map(([name, values]) => `${name} = [${values.join(', ')}]`).join('\n');
}

/** How a tunable kernel is compiled and launched: what the model must know to write one. */
export const TUNER_RULES = [
  'How the kernel is compiled and launched:',
  '- Every tunable parameter is injected as a preprocessor definition (`-Dname=value`): use the names directly, never #define them yourself.',
  '- The thread block is (block_size_x, block_size_y, block_size_z): these three names are always defined. A block size must be one of these names; use it for compile-time sizes (shared memory arrays, loop bounds).',
  '- The grid is ceil(problem size / grid divisor) per dimension. The divisor defaults to the block size of that dimension; if each block handles more elements than it has threads, state the divisors (products of tunable parameter names).',
  '- The kernel name and its parameter list (names, types, order) must stay exactly as they are: the host code calls it.',
  '- Only device code may change: no host code, no compiler flags, no libraries beyond the CUDA runtime headers.',
].join('\n');
