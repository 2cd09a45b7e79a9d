// The tuning spec file of `llm-kernel-tuner tune` (JSON or YAML): which kernel, its test inputs (input-spec.ts), the
// tunable parameters and restrictions, the launch geometry and how to measure. Everything a run needs besides the GPU,
// so a spec plus its cache file reproduce a tuning session anywhere.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { argumentSpecSchema } from './input-spec';

const paramValue = z.union([z.number(), z.string(), z.boolean()]);
const gridDivisor = z.union([z.number().positive(), z.string().min(1), z.array(z.union([z.number().positive(), z.string().min(1)]))]);

export const tuningSpecSchema = z
  .object({
    /** The __global__ function to tune (required when the file has several). */
    kernel: z.string().min(1).optional(),
    /** The .cu file, relative to the spec; the command line's FILE takes precedence. */
    file: z.string().min(1).optional(),
    /** Template arguments of a templated kernel. */
    templateArgs: z.array(z.union([z.string(), z.number(), z.boolean()])).optional(),
    arguments: z.record(z.string(), argumentSpecSchema),
    problemSize: z.union([z.number(), z.string(), z.array(z.union([z.number(), z.string()])).min(1).max(3)]),
    seed: z.number().int().nonnegative().default(1),
    tuneParams: z.record(z.string(), z.array(paramValue).min(1)),
    restrictions: z.array(z.string().min(1)).default([]),
    gridDivX: gridDivisor.optional(),
    gridDivY: gridDivisor.optional(),
    gridDivZ: gridDivisor.optional(),
    blockSizeNames: z.array(z.string().min(1)).max(3).optional(),
    compilerOptions: z.array(z.string()).default([]),
    strategy: z.string().default('brute_force'),
    strategyOptions: z.record(z.string(), z.unknown()).optional(),
    maxFevals: z.number().int().positive().optional(),
    timeLimitS: z.number().positive().optional(),
    iterations: z.number().int().positive().default(32),
    warmup: z.number().int().nonnegative().default(3),
    flushL2: z.boolean().default(false),
    earlyStop: z.union([z.number().gt(1), z.literal(false)]).default(4),
    tolerance: z.object({ rtol: z.number().nonnegative().optional(), atol: z.number().nonnegative().optional(), atolScale: z.number().nonnegative().optional() }).strict().optional(),
    /** The oracle: this kernel at this configuration (default: the first valid configuration). */
    referenceConfig: z.record(z.string(), paramValue).optional(),
    /** Or a separate reference implementation (a .cu file relative to the spec), launched with referenceConfig. */
    reference: z.object({ file: z.string().min(1), kernel: z.string().optional() }).strict().optional(),
  })
  .strict();

export type TuningSpec = z.infer<typeof tuningSpecSchema>;

export class TuningSpecError extends Error {
  override readonly name = 'TuningSpecError';
}

/** Reads a spec file (YAML is a superset of JSON), validates it, and resolves its file paths against its folder. */
export function loadTuningSpec(path: string): TuningSpec & { dir: string } {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new TuningSpecError(`cannot read the tuning spec ${path}: ${(e as Error).message}`);
  }
  const parsed = tuningSpecSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top level)'}: ${i.message}`);
    throw new TuningSpecError(`the tuning spec ${path} is not valid:\n${lines.join('\n')}`);
  }
  const dir = dirname(resolve(path));
  const spec = parsed.data;
  return {
    ...spec,
    ...(spec.file && { file: resolve(dir, spec.file) }),
    ...(spec.reference && { reference: { ...spec.reference, file: resolve(dir, spec.reference.file) } }),
    dir,
  };
}
