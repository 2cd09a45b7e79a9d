// The naive tester's prompt: the kernel, what the analysis found, and the exact shape of the declarative spec we turn
// into data ourselves. No code is asked for.
import type { KernelSignature } from '../../../tuner/source/kernel-signature';
import type { KernelAnalysis } from '../../state';
import { kernelBlock, type KernelView } from '../../prompts';

export function testSpecPrompt(code: string | KernelView, kernel: KernelSignature, analysis: KernelAnalysis, bounds: { minMs: number; maxMs: number }): string {
  const args = kernel.parameters.map((p) => `- ${p.name}: ${p.type}${p.isPointer ? (analysis.outputs.includes(p.name) ? ' (output)' : ' (input)') : ' (scalar)'}`);
  return [
    `Design the inputs of a test for the CUDA kernel \`${kernel.name}\`:`,
    kernelBlock(code),
    `What it does: ${analysis.description}`,
    `Problem size (threads per grid dimension): [${analysis.problemSize.join(', ')}]`,
    'Arguments:',
    ...args,
    '',
    'Describe each argument; the data is generated from your description:',
    '- scalar: "value" is a number, or an expression over the other scalars ("n * 2"); "length" is null.',
    '- pointer: "length" is the number of elements (a number, or an expression over the scalars such as "n * m"); "value" is null.',
    '  "init" says how its elements start: "uniform" (between "min" and "max"), "normal" ("mean", "std"), "integers"',
    '  (whole numbers from "min" to "max"), "fill" (every element "fill"), or "none" (an output the kernel only writes).',
    '  An output the kernel also reads (c += ...) needs an init. Fields a choice does not use are null.',
    'Sizes: the lengths must match how the kernel indexes each array at this problem size, or it reads out of bounds.',
    `Choose a problem size for which the kernel runs between ${bounds.minMs} ms and ${Number(bounds.maxMs.toPrecision(3))} ms on a GPU (about 1 ms is ideal).`,
    'Choose values that exercise the computation (not all zeros), and that keep it finite.',
    'Answer with JSON: {"arguments": [{"name": "...", "value": null, "length": "n", "init": "uniform", "min": -1, "max": 1, "mean": null, "std": null, "fill": null}, ...]}',
  ].join('\n');
}
