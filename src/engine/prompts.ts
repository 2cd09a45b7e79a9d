/**
 * Pieces every prompt shares: who the model is asked to be, how kernels are shown, and the rules of the tuner that
 * every rewrite must follow (they are how Kernel Tuner launches and compiles a kernel, so a model that ignores them
 * produces kernels that cannot be tuned).
 */
import { basename } from 'node:path';
import type { ParamValue } from '../tuner/types';

export const SYSTEM_PROMPT = [
  'You are an expert in CUDA performance engineering. You analyse and optimize CUDA kernels that are tuned automatically:',
  'every kernel you write is compiled, checked for correct results against the original kernel and timed on a real GPU.',
  'Be precise. When asked for JSON, answer with JSON only.',
].join(' ');

/**
 * A kernel as the model sees it: its device unit (the kernel and the device code of its file it uses: see
 * src/tuner/source/device-unit.ts), and the device code it uses from the user's headers, which is context, not to be
 * changed.
 */
export interface KernelView {
  code: string;
  context: readonly { file: string; text: string }[];
}

/** The kernel in a ```cuda block, then each header's code it uses in its own block, marked read-only. */
export function kernelBlock(kernel: string | KernelView): string {
  const view = typeof kernel === 'string' ? { code: kernel, context: [] } : kernel;
  const fence = (code: string) => `\`\`\`cuda\n${code.trimEnd()}\n\`\`\``;
  return [
    fence(view.code),
    ...view.context.map((h) => `It uses this device code from ${basename(h.file)} (read-only: another file, which stays as it is; call it, do not copy or change it):\n${fence(h.text)}`),
  ].join('\n');
}

export function formatTuneParams(tuneParams: Record<string, readonly ParamValue[]>): string {
  const entries = Object.entries(tuneParams);
  return entries.length === 0 ? '(none)' : entries.map(([name, values]) => `${name} = [${values.join(', ')}]`).join('\n');
}

/** How a tunable kernel is compiled and launched: what the model must know to write one. */
export const TUNER_RULES = [
  'How the kernel is compiled and launched:',
  '- Every tunable parameter is injected as a preprocessor definition (`-Dname=value`): use the names directly, never #define them yourself. Give them distinctive names (tile_size_x, elements_per_thread): a common word such as mode or size would also replace that word inside the CUDA headers.',
  '- The thread block is (block_size_x, block_size_y, block_size_z): these three names are always defined. A block size must be one of these names; use it for compile-time sizes (shared memory arrays, loop bounds).',
  '- The grid is ceil(problem size / grid divisor) per dimension. The divisor defaults to the block size of that dimension; if each block handles more elements than it has threads, state the divisors (products of tunable parameter names).',
  '- The kernel name and its parameter list (names, types, order) must stay exactly as they are: the host code calls it.',
  '- Only device code may change: no host code, no compiler flags, no libraries beyond the CUDA runtime headers.',
  '- You see the kernel with the device code of its file it uses (the host program is not shown and stays as it is): return that code, rewritten. A helper you add goes into it; device code from other files is read-only.',
].join('\n');
