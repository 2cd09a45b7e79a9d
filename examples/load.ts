// Tuning specs as the tests and benchmarks use them: a spec (an example's tune.yaml, or a test fixture's) loaded and
// validated, its kernel parsed, and the spec turned into the arguments of TunableKernel.tune, as `llm-kernel-tuner tune`
// reads it.
import { join } from 'node:path';
import { loadTuningSpec, tuningJob, type TuningJob } from '../src/tuner/spec/tuning-spec';

export const EXAMPLE_NAMES = ['vector_add', 'matmul_naive', 'matmul_tiled', 'stencil_2d', 'reduction'] as const;
export type ExampleName = (typeof EXAMPLE_NAMES)[number];

export type LoadedSpec = TuningJob;

/**
 * The specs of examples/real (relative to the examples folder): unmodified files of public projects (llm.c, NVIDIA's
 * cuda-samples), one spec per kernel tuned; examples/real/README.md says what each covers.
 */
export const REAL_EXAMPLE_SPECS = [
  'real/softmax_forward_kernel4.yaml',
  'real/layernorm_forward_kernel3.yaml',
  'real/gelu_forward_kernel2.yaml',
  'real/encoder_forward_kernel3.yaml',
  'real/vectorAdd.yaml',
  'real/matrixMul.yaml',
  'real/fp16ScalarProduct.yaml',
  'real/reduce6.yaml',
  'real/transposeNoBankConflicts.yaml',
] as const;
export type RealExampleSpec = (typeof REAL_EXAMPLE_SPECS)[number];

/** The spec of examples/<name>, from the examples folder `examplesDir`. */
export function loadExample(examplesDir: string, name: string): Promise<LoadedSpec> {
  return loadSpec(join(examplesDir, name, 'tune.yaml'));
}

/** Loads a spec; `file` (absolute) replaces the kernel file it names, as the command line's FILE does. */
export function loadSpec(specPath: string, overrides: { file?: string } = {}): Promise<LoadedSpec> {
  return tuningJob(loadTuningSpec(specPath), overrides);
}
