// Prompts of the explicit strategy: whether a step makes sense for this kernel, and the request to apply it.
import type { KernelAnalysis } from '../../state';
import { kernelBlock, measuredBlock, type KernelView, type Measured } from '../../prompts';

export function evaluatePrompt(code: string | KernelView, instruction: string, analysis: KernelAnalysis | null, measured: Measured): string {
  return [
    'An optimization is proposed for the CUDA kernel below:',
    kernelBlock(code),
    analysis ? `What it does: ${analysis.description}` : '',
    `The optimization: ${instruction}`,
    '',
    measuredBlock(measured),
    '',
    'Does it make sense for this kernel: can it be applied, and is it likely to make the kernel faster on this GPU?',
    'Say no when the kernel has nothing it applies to (no such loop, no such dimension, no data reuse to exploit).',
    'Answer with JSON: {"apply": true, "reason": "one sentence"}',
  ]
    .filter((l) => l !== '')
    .join('\n');
}
