// Prompts of the autonomous strategy (plan-and-solve): plan, validate, break down, apply, replan.
import type { KernelAnalysis } from '../../state';
import { formatTuneParams, kernelBlock, measuredBlock, type KernelView, type Measured } from '../../prompts';
import type { PlanStep } from './state';

const STEP_RULES = [
  'Each step must:',
  '- change device code only (no host code, no compiler flags, no external libraries);',
  '- be self-contained: applicable and tunable on its own, on top of the kernel as it is then;',
  '- say which quantities become tunable parameters (thread block sizes are always block_size_x/y/z).',
].join('\n');

function context(code: string | KernelView, analysis: KernelAnalysis | null, tuneParams: Record<string, readonly (number | string | boolean)[]>): string[] {
  return [
    kernelBlock(code),
    analysis ? `What it does: ${analysis.description}` : '',
    analysis ? `Problem size: [${analysis.problemSize.join(', ')}]; outputs: ${analysis.outputs.join(', ')}` : '',
    `Tunable parameters so far: ${formatTuneParams(tuneParams).replace(/\n/g, '; ')}`,
  ].filter((l) => l !== '');
}

export function planPrompt(code: string | KernelView, analysis: KernelAnalysis | null, tuneParams: Record<string, readonly (number | string | boolean)[]>, measured: Measured): string {
  return [
    'Plan how to make this CUDA kernel faster on the GPU described below:',
    ...context(code, analysis, tuneParams),
    '',
    measuredBlock(measured),
    '',
    'Give an ordered list of optimization steps, most promising first (typically 2 to 6).',
    STEP_RULES,
    'Answer with JSON: {"steps": [{"title": "short name", "details": "what to change and what to make tunable"}]}',
  ].join('\n');
}

export function validatePrompt(code: string | KernelView, steps: readonly PlanStep[]): string {
  return [
    'These optimization steps are proposed for the CUDA kernel below. Judge each one: can it be done by changing the',
    'kernel\'s device code alone? A step that needs host code changes (other launch code, extra buffers allocated by the',
    'host, streams), compiler flags, or external libraries (cuBLAS, CUTLASS, Thrust ...) cannot.',
    kernelBlock(code),
    'Steps:',
    ...steps.map((s) => `- id "${s.id}": ${s.title}: ${s.details}`),
    'Answer with JSON: {"steps": [{"id": "...", "deviceOnly": true, "reason": "one sentence"}]} with one entry per step.',
  ].join('\n');
}

export function breakdownPrompt(code: string | KernelView, step: PlanStep): string {
  return [
    'An optimization step is planned for the CUDA kernel below:',
    kernelBlock(code),
    `Step: ${step.title}: ${step.details}`,
    '',
    'Is it too large to apply and verify in one rewrite? If so, break it into smaller steps, each of which still',
    'leaves a correct, complete kernel. If it is small enough, keep it whole.',
    STEP_RULES,
    'Answer with JSON: {"breakDown": false, "steps": []} or {"breakDown": true, "steps": [{"title": "...", "details": "..."}]}',
  ].join('\n');
}

export function applyStepPrompt(step: PlanStep, analysis: KernelAnalysis | null): string {
  return [
    `Apply this optimization step to the CUDA kernel: ${step.title}.`,
    step.details ? `Details: ${step.details}` : '',
    analysis ? `What the kernel does: ${analysis.description}` : '',
    'Expose the choices the step introduces (tile sizes, elements per thread, unroll factors, on/off switches) as tunable',
    'parameters with a few sensible values each, so that the tuner finds the best ones. The results must stay exactly',
    'what the current kernel computes, for every problem size and every combination of parameter values you allow.',
    '',
  ]
    .filter((l) => l !== '')
    .join('\n');
}

export function replanPrompt(code: string | KernelView, analysis: KernelAnalysis | null, tuneParams: Record<string, readonly (number | string | boolean)[]>, past: readonly PlanStep[], measured: Measured): string {
  return [
    'The CUDA kernel below is the best version found so far:',
    ...context(code, analysis, tuneParams),
    '',
    measuredBlock(measured),
    '',
    'Steps tried so far:',
    ...(past.length > 0 ? past.map((s) => `- ${s.title}: ${s.outcome ?? s.status}`) : ['(none)']),
    '',
    'Are there further optimization steps worth trying? Do not repeat a step that was tried, unless in a clearly',
    'different way. If nothing promising is left, say you are done.',
    STEP_RULES,
    'Answer with JSON: {"done": true, "steps": []} or {"done": false, "steps": [{"title": "...", "details": "..."}]}',
  ].join('\n');
}
