// Prompts every tuning strategy shares: restrictions, and the parts of a step request that say what a rewrite must
// keep and how to answer.
import type { ParamValue } from '../../tuner/types';
import { formatTuneParams, kernelBlock, measuredBlock, TUNER_RULES, type KernelView, type Measured } from '../prompts';

export function restrictionsPrompt(code: string | KernelView, tuneParams: Record<string, readonly ParamValue[]>, existing: readonly string[]): string {
  return [
    'The tunable CUDA kernel below is tuned over every combination of these parameter values:',
    formatTuneParams(tuneParams),
    kernelBlock(code),
    'List the restrictions a configuration must satisfy for this kernel to be correct and launchable, as expressions over',
    `the parameter names only (${Object.keys(tuneParams).join(', ')}), with + - * / // % ** min max, comparisons and`,
    'and/or/not. Examples: "block_size_x * block_size_y <= 1024", "tile_size_x % block_size_x == 0".',
    existing.length > 0 ? `Restrictions so far (keep the ones that still apply): ${existing.map((r) => `"${r}"`).join(', ')}.` : '',
    'Only restrictions the code needs: an empty list is a fine answer.',
    'Answer with JSON: {"restrictions": ["..."]}',
  ]
    .filter((l) => l !== '')
    .join('\n');
}

/**
 * The end of every step request: the current kernel, its parameters, the GPU and the kernel's measurements there
 * (`measured`: measuredOf(state, config)), the rules, and the form of the answer.
 */
export function stepRequestTail(options: {
  code: string | KernelView;
  tuneParams: Record<string, readonly ParamValue[]>;
  measured?: Measured;
  namesParameters: boolean;
  candidate: number;
  candidates: number;
}): string {
  const lines = [
    'The current kernel:',
    kernelBlock(options.code),
    'Its tunable parameters (values tried):',
    formatTuneParams(options.tuneParams),
    '',
    ...(options.measured ? [measuredBlock(options.measured), ''] : []),
    TUNER_RULES,
    '',
  ];
  lines.push(...answerFormLines(options.namesParameters));
  if (options.candidates > 1) {
    lines.push(`This is candidate ${options.candidate + 1} of ${options.candidates} for this step: take an approach that differs from the obvious first choice as the number grows.`);
  }
  return lines.join('\n');
}

/** How a rewrite is to be answered: the code, and (when the model names parameters) the json block with them. */
export function answerFormLines(namesParameters: boolean): string[] {
  if (namesParameters) {
    return [
      'Answer with the complete rewritten kernel source in one ```cuda block, then one ```json block naming the tunable',
      'parameters you introduced or whose values should change, with the values to try, and the grid divisors when the',
      'default (the block size) no longer fits:',
      '```json',
      '{"tunableParameters": {"block_size_x": [64, 128, 256], "tile_size_x": [1, 2, 4]}, "gridDivisors": {"x": ["block_size_x", "tile_size_x"]}}',
      '```',
    ];
  }
  return [
    'Answer with the complete rewritten kernel source in one ```cuda block. If a block now covers more elements than it',
    'has threads in some dimension, add a ```json block with the grid divisors, e.g. {"gridDivisors": {"x": ["block_size_x", "work_per_thread_x"]}}.',
  ];
}
