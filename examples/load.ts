// Tuning specs as the tests and benchmarks use them: a spec (an example's tune.yaml, or a test fixture's) loaded and
// validated, its kernel parsed, and the spec turned into the arguments of TunableKernel.tune, as `llm-kernel-tuner tune`
// reads it.
import { join } from 'node:path';
import { loadTuningSpec, tuningJob, type TuningJob } from '../src/tuner/tuning-spec';

export const EXAMPLE_NAMES = ['vector_add', 'matmul_naive', 'matmul_tiled', 'stencil_2d', 'reduction'] as const;
export type ExampleName = (typeof EXAMPLE_NAMES)[number];

export type LoadedSpec = TuningJob;

/** The spec of examples/<name>, from the examples folder `examplesDir`. */
export function loadExample(examplesDir: string, name: string): Promise<LoadedSpec> {
  return loadSpec(join(examplesDir, name, 'tune.yaml'));
}

/** Loads a spec; `file` (absolute) replaces the kernel file it names, as the command line's FILE does. */
export function loadSpec(specPath: string, overrides: { file?: string } = {}): Promise<LoadedSpec> {
  return tuningJob(loadTuningSpec(specPath), overrides);
}
