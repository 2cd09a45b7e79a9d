// The tuning spec file of `llm-kernel-tuner tune` (JSON or YAML): which kernel, its test inputs (input-spec.ts), the
// tunable parameters and restrictions, the launch geometry and how to measure. Everything a run needs besides the GPU,
// so a spec plus its cache file reproduce a tuning session anywhere.
import { basename, dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { buildFlagsFor, type BuildFlags } from '../compile/compile-commands';
import { argumentSpecSchema, constantSpecSchema } from './input-spec';
import { KernelTest, TunableKernel, type TuneOptions } from '../tunable-kernel';
import { launchWorkOf, type LaunchWork } from '../run/speed-of-light';
import { MetricsError, ResultMetrics } from '../run/metrics';
import { MIN_ENERGY_WINDOW_MS } from '../../gpu/energy';
import type { TuneParams } from '../types';
import { DEFAULT_STRATEGY, resolveStrategy } from '../strategies';
import { unknownKeysError, withoutMistypedKeys } from './unknown-keys';
import { readUserFile } from './user-files';
import { isT1, t1ToSpec, type T1Spec } from './t1';
import { launchCountOf, launchCountProblems } from '../run/launch-count';
import { TIMING_MODES, type TimingMode } from '../run/measurement';

const paramValue = z.union([z.number(), z.string(), z.boolean()]);
const gridDivisor = z.union([z.number().positive(), z.string().min(1), z.array(z.union([z.number().positive(), z.string().min(1)]))]);

const tuningSpecShape = {
  /** The __global__ function to tune (required when the file has several). */
  kernel: z.string().min(1).optional(),
  /** The .cu file, relative to the spec; the command line's FILE takes precedence. */
  file: z.string().min(1).optional(),
  /** Template arguments of a templated kernel; a tunable parameter's name is one too (e.g. [float, block_size_x]). */
  templateArgs: z.array(z.union([z.string(), z.number(), z.boolean()])).optional(),
  /** Directories searched for #include, relative to the spec (like -I); compile_commands.json adds its own. */
  includePaths: z.array(z.string().min(1)).default([]),
  arguments: z.record(z.string(), argumentSpecSchema),
  /**
   * Kernel Tuner's cmem_args: `__constant__` symbol of the file → its data, `{ sameAs: argument }` (the same data as a
   * buffer argument) or its own (dtype, length, fill or random), copied to the symbol before every run.
   */
  constantMemory: z.record(z.string(), constantSpecSchema).optional(),
  problemSize: z.union([z.number(), z.string(), z.array(z.union([z.number(), z.string()])).min(1).max(3)]),
  seed: z.number().int().nonnegative().default(1),
  tuneParams: z.record(z.string(), z.array(paramValue).min(1)),
  restrictions: z.array(z.string().min(1)).default([]),
  gridDivX: gridDivisor.optional(),
  gridDivY: gridDivisor.optional(),
  gridDivZ: gridDivisor.optional(),
  blockSizeNames: z.array(z.string().min(1)).max(3).optional(),
  /** Dynamic shared memory per block: bytes, or an expression over tunable parameters and scalars ("block_size_x*4"). */
  sharedMemBytes: z.union([z.number().int().nonnegative(), z.string().min(1)]).optional(),
  compilerOptions: z.array(z.string()).default([]),
  /** Floating-point operations of one launch: a number, or an expression over the scalar arguments ("2*n*n*n"). */
  flops: z.union([z.number().nonnegative(), z.string().min(1)]).optional(),
  /**
   * Bytes one launch reads and writes in device memory, likewise; default the buffers' sizes (each input read once,
   * each output written once). With flops, what a report's speed-of-light figures divide by the time.
   */
  bytes: z.union([z.number().nonnegative(), z.string().min(1)]).optional(),
  /**
   * Measure energy and power with NVML after each configuration's timed launches (read only: nothing on the GPU is
   * set): true, or { windowMs } for how long the kernel runs back to back while NVML is read (default 1000).
   */
  energy: z.union([z.boolean(), z.strictObject({ windowMs: z.number().int().min(MIN_ENERGY_WINDOW_MS) })]).default(false),
  /** Kernel Tuner's way of asking for energy: `observers: [nvml]` (registers and occupancy are always recorded). */
  observers: z.array(z.literal('nvml', { error: 'the only observer is nvml (energy and power); registers and occupancy are always recorded' })).optional(),
  /**
   * Kernel Tuner's metrics: name → expression, in order, over time (ms), flops, bytes, energy (J per launch), power (W),
   * NVML's and the driver's readings by Kernel Tuner's names, the tunable parameters and the metrics before it.
   */
  metrics: z.record(z.string().min(1), z.string().min(1)).optional(),
  /** What the search optimises: time (default), energy, edp, or a metric's name. */
  objective: z.string().min(1).default('time'),
  /** Kernel Tuner's objective_higher_is_better: true for a metric such as GFLOP/s. */
  objectiveHigherIsBetter: z.boolean().default(false),
  /** Time limit of one launch in seconds; default scaled to the reference kernel's time (at least 1 s). */
  launchTimeoutS: z.number().positive().optional(),
  strategy: z.string().default(DEFAULT_STRATEGY),
  strategyOptions: z.record(z.string(), z.unknown()).optional(),
  maxFevals: z.number().int().positive().optional(),
  timeLimitS: z.number().positive().optional(),
  /** Timed launches per configuration, a fixed count (Kernel Tuner's iterations); without it the count adapts: */
  iterations: z.number().optional(),
  /** at least this many (default 7), */
  minIterations: z.number().optional(),
  /** at most this many (default 32), */
  maxIterations: z.number().optional(),
  /** and no more once the 95 % interval of the median lies within ±precision of it (default 0.01). */
  precision: z.number().optional(),
  /** verified (default), or kernel_tuner: timed as Kernel Tuner times, for comparisons with its figures (measurement.ts). */
  timing: z.enum(TIMING_MODES as [TimingMode, ...TimingMode[]]).default('verified'),
  warmup: z.number().int().nonnegative().default(1),
  flushL2: z.boolean().default(false),
  earlyStop: z.union([z.number().gt(1), z.literal(false)]).default(1.5),
  tolerance: z.object({ rtol: z.number().nonnegative().optional(), atol: z.number().nonnegative().optional(), atolScale: z.number().nonnegative().optional() }).strict().optional(),
  /** The oracle: this kernel at this configuration (default: the first valid configuration). */
  referenceConfig: z.record(z.string(), paramValue).optional(),
  /** Or a separate reference implementation (a .cu file relative to the spec), launched with referenceConfig. */
  reference: z.object({ file: z.string().min(1), kernel: z.string().optional() }).strict().optional(),
};
const TUNING_SPEC_KEYS = Object.keys(tuningSpecShape);

export const tuningSpecSchema = z.strictObject(tuningSpecShape, { error: unknownKeysError(TUNING_SPEC_KEYS) }).superRefine((spec, ctx) => {
  // The number of timed launches is one choice made by four keys (launch-count.ts): each problem under its key.
  for (const p of launchCountProblems(spec)) ctx.addIssue({ code: 'custom', path: [p.field], message: p.message });
});

export type TuningSpec = z.infer<typeof tuningSpecSchema>;

export class TuningSpecError extends Error {
  override readonly name = 'TuningSpecError';
}

/** A spec as loaded: paths resolved against its folder; from a T1 problem, with the T1's argument names in order. */
export type LoadedTuningSpec = TuningSpec & { dir: string; t1?: T1Spec['t1'] };

/**
 * Reads a spec file (YAML is a superset of JSON), validates it, and resolves its file paths against its folder. A T1
 * tuning-problem description (t1.ts) is read as the spec it stands for.
 */
export function loadTuningSpec(path: string): LoadedTuningSpec {
  const text = readUserFile(path, 'the tuning spec');
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new TuningSpecError(`the tuning spec ${path} is not valid YAML or JSON: ${(e as Error).message}`);
  }
  if (isT1(raw)) return t1ToSpec(raw, path);
  const parsed = tuningSpecSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = withoutMistypedKeys(parsed.error.issues, raw, TUNING_SPEC_KEYS).map((i) => `  ${i.path.join('.') || '(top level)'}: ${i.message}`);
    throw new TuningSpecError(`the tuning spec ${path} is not valid:\n${lines.join('\n')}`);
  }
  const dir = dirname(resolve(path));
  const spec = parsed.data;
  checkStrategy(spec, `the tuning spec ${path}`);
  return {
    ...spec,
    includePaths: spec.includePaths.map((p) => resolve(dir, p)),
    ...(spec.file && { file: resolve(dir, spec.file) }),
    ...(spec.reference && { reference: { ...spec.reference, file: resolve(dir, spec.reference.file) } }),
    dir,
  };
}

/**
 * Checks the spec's strategy and its options (Kernel Tuner's names) now, before any GPU or cache work: an unknown
 * strategy or option is a TuningSpecError naming the spec.
 */
export function checkStrategy(spec: Pick<TuningSpec, 'strategy' | 'strategyOptions'>, where: string): void {
  try {
    resolveStrategy(spec.strategy)(spec.strategyOptions);
  } catch (e) {
    if (e instanceof RangeError) throw new TuningSpecError(`${where}: strategy ${spec.strategy}: ${e.message}`);
    throw e;
  }
}

/** Everything a spec stands for, ready for TunableKernel.tune(test, tuneParams, restrictions, options). */
export interface TuningJob {
  /** The spec; from a T1 problem, its arguments named after the kernel's parameters. */
  spec: LoadedTuningSpec;
  /** The .cu file (absolute). */
  file: string;
  source: string;
  kernel: TunableKernel;
  test: KernelTest;
  tuneParams: TuneParams;
  restrictions: string[];
  /** Launch geometry, oracle, strategy and measurement; the caller adds device, cache, callbacks. */
  options: TuneOptions;
  /** The flags read from the project's compile_commands.json, when it has one that lists the file. */
  buildFlags?: BuildFlags;
  /** The work of one launch on the test (the spec's flops and bytes, else the buffers' sizes). */
  work: LaunchWork;
}

/**
 * Parses the spec's kernel and builds its test and options; `file` (absolute) replaces the file the spec names, and
 * `source` its text on disk (an editor's unsaved buffer).
 */
export async function tuningJob(loaded: LoadedTuningSpec, overrides: { file?: string; source?: string } = {}): Promise<TuningJob> {
  let spec = loaded;
  const file = overrides.file ?? spec.file;
  if (!file) throw new TuningSpecError('the spec names no kernel file ("file:"), so give the .cu file');
  const source = overrides.source ?? readUserFile(file, 'the kernel file');
  // The project's own build flags for this file, where its workspace has a compile_commands.json.
  const build = buildFlagsFor(file);
  const options = tuneOptionsFromSpec(spec);
  if (build) options.compilerOptions = [...build.options, ...(options.compilerOptions ?? [])];
  const kernel = await TunableKernel.create(source, {
    fileName: basename(file),
    filePath: file,
    includePaths: [...spec.includePaths, ...(build?.includePaths ?? [])],
    ...(spec.kernel !== undefined && { kernelName: spec.kernel }),
    ...(spec.templateArgs && { templateArgs: spec.templateArgs }),
    // Read as the space's configurations compile it: the spec's parameters and -D options.
    space: { tuneParams: spec.tuneParams, ...(spec.blockSizeNames && { blockSizeNames: spec.blockSizeNames }), compilerOptions: options.compilerOptions ?? [] },
  });
  if (spec.t1) spec = withParameterNames(spec, spec.t1, kernel.signature.parameters.map((p) => p.name), kernel.name);
  const test = KernelTest.fromSpec({ arguments: spec.arguments, problemSize: spec.problemSize, seed: spec.seed, ...(spec.constantMemory && { constantMemory: spec.constantMemory }) });
  // Resolving now reports inputs that do not fit the kernel, and work expressions over unknown names, before any GPU
  // or cache work.
  const { data } = test.resolve(kernel.signature);
  if (data.kind !== 'spec') throw new Error('internal: a spec test resolved to host data');
  let work: LaunchWork;
  try {
    work = launchWorkOf(data.test, { flops: spec.flops, bytes: spec.bytes }, 'the spec');
  } catch (e) {
    throw new TuningSpecError(`the tuning spec's ${(e as Error).message}`);
  }
  options.work = { bytes: work.bytes, ...(work.flops !== undefined && { flops: work.flops }) };
  try {
    ResultMetrics.create(options, Object.keys(spec.tuneParams));
  } catch (e) {
    if (e instanceof MetricsError) throw new TuningSpecError(`the tuning spec's ${e.message}`);
    throw e;
  }
  return { spec, file, source, kernel, test, tuneParams: spec.tuneParams, restrictions: spec.restrictions, options, work, ...(build && { buildFlags: build }) };
}

/** A T1 problem's arguments (in the kernel's parameter order, under names of their own) named as the kernel's parameters. */
function withParameterNames(spec: LoadedTuningSpec, t1: NonNullable<LoadedTuningSpec['t1']>, parameters: readonly string[], kernel: string): LoadedTuningSpec {
  if (t1.argumentNames.length !== parameters.length) {
    throw new TuningSpecError(`the T1 problem ${t1.path} lists ${t1.argumentNames.length} arguments (${t1.argumentNames.join(', ')}), but ${kernel} takes ${parameters.length} (${parameters.join(', ')}): they are passed in order`);
  }
  const renamed = (name: string) => parameters[t1.argumentNames.indexOf(name)] ?? name;
  const constantMemory = spec.constantMemory && Object.fromEntries(Object.entries(spec.constantMemory).map(([symbol, c]) => [symbol, 'sameAs' in c ? { sameAs: renamed(c.sameAs) } : c]));
  return {
    ...spec,
    arguments: Object.fromEntries(Object.entries(spec.arguments).map(([name, a]) => [renamed(name), a])),
    ...(constantMemory && { constantMemory }),
  };
}

/** The TuneOptions a spec stands for (paths already resolved by loadTuningSpec). */
export function tuneOptionsFromSpec(spec: TuningSpec): TuneOptions {
  const reference = spec.reference;
  return {
    ...(spec.gridDivX !== undefined && { gridDivX: spec.gridDivX }),
    ...(spec.gridDivY !== undefined && { gridDivY: spec.gridDivY }),
    ...(spec.gridDivZ !== undefined && { gridDivZ: spec.gridDivZ }),
    ...(spec.blockSizeNames && { blockSizeNames: spec.blockSizeNames }),
    ...(spec.sharedMemBytes !== undefined && { sharedMemBytes: spec.sharedMemBytes }),
    compilerOptions: spec.compilerOptions,
    ...(spec.launchTimeoutS !== undefined && { launchTimeoutMs: spec.launchTimeoutS * 1000 }),
    strategy: spec.strategy,
    ...(spec.strategyOptions && { strategyOptions: spec.strategyOptions }),
    ...(spec.maxFevals !== undefined && { maxFevals: spec.maxFevals }),
    ...(spec.timeLimitS !== undefined && { timeLimitMs: spec.timeLimitS * 1000 }),
    iterations: launchCountOf(spec),
    timing: spec.timing,
    warmup: spec.warmup,
    flushL2: spec.flushL2,
    earlyStop: spec.earlyStop,
    ...((spec.energy !== false || spec.observers?.includes('nvml')) && { energy: spec.energy === false ? true : spec.energy }),
    ...(spec.metrics && { metrics: spec.metrics }),
    objective: spec.objective,
    objectiveHigherIsBetter: spec.objectiveHigherIsBetter,
    ...(spec.tolerance && { tolerance: spec.tolerance }),
    ...(reference
      ? {
          oracle: {
            code: readUserFile(reference.file, 'the reference kernel file'),
            filePath: reference.file,
            ...(reference.kernel !== undefined && { kernelName: reference.kernel }),
            ...(spec.referenceConfig && { config: spec.referenceConfig }),
          },
        }
      : spec.referenceConfig && { referenceConfig: spec.referenceConfig }),
  };
}
