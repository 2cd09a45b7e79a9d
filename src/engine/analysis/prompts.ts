// Prompts of the kernel analysis. Each asks one question and states the exact form of the answer; the kernel's own
// parameter names are listed so that the model answers with names that exist.
import type { KernelSignature } from '../../tuner/source/kernel-signature';
import { kernelBlock, type KernelView } from '../prompts';

export function describePrompt(code: string | KernelView, kernelName: string): string {
  return [
    `Describe what the CUDA kernel \`${kernelName}\` below computes, in a short paragraph: the computation, the layout of the`,
    'data it reads and writes, and how threads and blocks map onto the data. Plain prose, no code.',
    '',
    kernelBlock(code),
  ].join('\n');
}

const scalarList = (k: KernelSignature) =>
  k.parameters
    .filter((p) => !p.isPointer)
    .map((p) => `${p.name} (${p.type})`)
    .join(', ') || '(none)';

export function problemSizePrompt(code: string | KernelView, kernel: KernelSignature, description: string, dynamicSharedMemory = false): string {
  const sharedMemory = dynamicSharedMemory
    ? [
        'The kernel declares `extern __shared__` memory: also give sharedMemBytes, the bytes of dynamic shared memory its launch',
        'needs per block, as an expression over block_size_x, block_size_y, block_size_z and the scalar arguments',
        '(e.g. "block_size_x * 4" for one float per thread).',
        'Answer with JSON: {"problemSize": ["..."], "sharedMemBytes": "...", "flops": "...", "bytes": "..."}',
      ]
    : ['Answer with JSON: {"problemSize": ["..."], "flops": "...", "bytes": "..."}'];
  return [
    `The kernel \`${kernel.name}\`:`,
    kernelBlock(code),
    `What it does: ${description}`,
    '',
    'Give its problem size: the number of threads the launch grid must provide in each dimension when every thread',
    'handles one element, x first (1 to 3 entries). The grid is computed as ceil(problem size / block size) per',
    'dimension, so the x entry must match the index the kernel derives from blockIdx.x and threadIdx.x, and so on.',
    `Each entry is an expression over the kernel's scalar arguments: ${scalarList(kernel)}; it may use + - * // % min max`,
    'and integer constants. Example for a kernel over a rows x cols matrix with x along the columns: ["cols", "rows"].',
    'If you can, also give the work of one launch, each an expression over the same scalar arguments (leave a field out',
    'when unsure): flops, its floating-point operations (a multiply-add counts 2; e.g. "2*n*n*n" for an n x n matrix',
    'multiply), and bytes, the bytes it must read and write in device memory at least (each input read once, each output',
    'written once; e.g. "3*n*n*4" for that multiply over floats).',
    ...sharedMemory,
  ].join('\n');
}

export function outputsPrompt(code: string | KernelView, kernel: KernelSignature, description: string): string {
  const pointers = kernel.parameters.filter((p) => p.isPointer && !p.isConst).map((p) => `${p.name} (${p.type})`);
  return [
    `The kernel \`${kernel.name}\`:`,
    kernelBlock(code),
    `What it does: ${description}`,
    '',
    'Which of its arguments does it write (its outputs)? These are compared against the original kernel to check every',
    `rewrite. Candidates (non-const pointers): ${pointers.join(', ') || '(none)'}. List only arguments the kernel writes.`,
    'Answer with JSON: {"outputs": ["..."]}',
  ].join('\n');
}
