// The community's results format, T4 (kernel_tuner/schema/T4/1.0.0/results-schema.json and metadata-schema.json), as
// Kernel Tuner's store_output_file and store_metadata_file write it beside its cache: one result per evaluation, in
// order, with its configuration, the time of each phase, why it is invalid if it is, and what was measured.
// Where the two formats differ in what they can say, the T4 words are Kernel Tuner's: a failed configuration's
// measured "time" is the error string Kernel Tuner records (CompilationFailedConfig, ...), the runtimes are the timed
// launches. We check correctness where Kernel Tuner does not: a wrong result is invalidity "correctness" with
// correctness 0 (Kernel Tuner writes 1 for every result).
import { writeFileSync } from 'node:fs';
import { hostname, platform, release } from 'node:os';
import { KT_ERROR_OF } from './format';
import type { LaunchWork } from '../run/speed-of-light';
import type { ConfigResult, ConfigStatus } from '../types';

export const T4_SCHEMA_VERSION = '1.0.0';

export type T4Invalidity = 'correct' | 'compile' | 'runtime' | 'timeout' | 'correctness' | 'constraints';

export interface T4Result {
  timestamp?: string;
  configuration: Record<string, number | string | boolean>;
  times: { compilation: number; benchmark: number; framework: number; search_algorithm: number; validation: number; runtimes: number[] };
  invalidity: T4Invalidity;
  correctness: number;
  measurements: { name: string; value: number | string; unit: string }[];
  objectives: string[];
}

export interface T4Results {
  schema_version: string;
  metadata: { timeunit: 'milliseconds' };
  results: T4Result[];
}

const INVALIDITY: Record<ConfigStatus, T4Invalidity> = {
  ok: 'correct',
  stopped_early: 'correct',
  compile_error: 'compile',
  launch_error: 'runtime',
  fault: 'runtime',
  timeout: 'timeout',
  wrong_result: 'correctness',
  // Timed launches that disagree: Kernel Tuner's RuntimeFailedConfig in the cache, so a runtime failure here too.
  inconsistent_timing: 'runtime',
  restricted: 'constraints',
  exceeds_device_limits: 'constraints',
};

/**
 * The T4 results of a run, in evaluation order. With the work of a launch (a spec's flops and bytes), a result that
 * has a time also gets Kernel Tuner's usual metrics, GFLOP/s and GB/s.
 */
export function t4Results(results: readonly ConfigResult[], options: { work?: LaunchWork } = {}): T4Results {
  return {
    schema_version: T4_SCHEMA_VERSION,
    metadata: { timeunit: 'milliseconds' },
    results: results.map((r) => {
      const t = r.timings;
      const measurements: T4Result['measurements'] = [{ name: 'time', value: r.timeMs ?? KT_ERROR_OF[r.status as keyof typeof KT_ERROR_OF], unit: 'ms' }];
      const work = options.work;
      if (work && r.timeMs !== undefined && r.timeMs > 0) {
        if (work.flops !== undefined) measurements.push({ name: 'GFLOP/s', value: work.flops / (r.timeMs / 1e3) / 1e9, unit: '' });
        measurements.push({ name: 'GB/s', value: work.bytes / (r.timeMs / 1e3) / 1e9, unit: '' });
      }
      return {
        ...(r.timestamp && { timestamp: r.timestamp }),
        configuration: { ...r.config },
        times: {
          compilation: t?.compileMs ?? 0,
          benchmark: t?.benchmarkMs ?? 0,
          // Loading the compiled kernel is framework time to Kernel Tuner.
          framework: (t?.frameworkMs ?? 0) + (t?.loadMs ?? 0),
          search_algorithm: t?.strategyMs ?? 0,
          validation: t?.verifyMs ?? 0,
          runtimes: r.stats?.samplesMs ?? [],
        },
        invalidity: INVALIDITY[r.status],
        correctness: r.status === 'wrong_result' ? 0 : 1,
        measurements,
        objectives: ['time'],
      };
    }),
  };
}

/** What the metadata file says about where the results were measured. */
export interface T4Environment {
  /** The device, as the run describes it (name, compute capability, driver, ...); absent for a replay. */
  device?: Record<string, unknown>;
  /** The compilers and libraries of the run, "name==version". */
  requirements: string[];
}

/** The T4 metadata: the host, the device the tuner measured on, and the software that ran. */
export function t4Metadata(environment: T4Environment) {
  return {
    schema_version: T4_SCHEMA_VERSION,
    metadata: {
      hardware: {
        operating_system: `${platform()} ${release()}`,
        hardware_description: [{ host: hostname(), ...(environment.device && { device: environment.device }) }],
      },
      environment: { device_query: { 'llm-kernel-tuner': environment.device ?? {} }, requirements: environment.requirements },
    },
  };
}

/** Where the metadata of a T4 results file goes: `out-results.json` → `out-metadata.json`, `out.json` → `out-metadata.json`. */
export function t4MetadataPath(resultsPath: string): string {
  return `${resultsPath.replace(/\.json$/i, '').replace(/-results$/, '')}-metadata.json`;
}

/** Writes the results file and its metadata file beside it; returns both paths. */
export function writeT4(path: string, results: T4Results, environment: T4Environment): { results: string; metadata: string } {
  const metadata = t4MetadataPath(path);
  writeFileSync(path, `${JSON.stringify(results)}\n`);
  writeFileSync(metadata, `${JSON.stringify(t4Metadata(environment), null, 2)}\n`);
  return { results: path, metadata };
}
