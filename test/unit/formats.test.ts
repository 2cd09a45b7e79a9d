// The community's formats: T1 tuning-problem descriptions read as tuning specs (src/tuner/spec/t1.ts), and results
// written in the T4 format (src/tuner/cache/t4.ts, `tune --t4 FILE`), validated against Kernel Tuner's copies of the
// official JSON schemas (test/fixtures/schemas/kernel_tuner) with ajv.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, describe, expect, it } from 'vitest';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { t4MetadataPath, t4Results } from '../../src/tuner/cache/t4';
import { loadTuningSpec, tuningJob } from '../../src/tuner/spec/tuning-spec';
import type { ConfigResult } from '../../src/tuner/types';

const root = path.resolve(__dirname, '..', '..');
const cli = path.join(root, 'dist', 'cli.js');
const hub = path.join(root, 'test', 'fixtures', 'benchmark-hub');
const schemas = path.join(root, 'test', 'fixtures', 'schemas', 'kernel_tuner');
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-formats-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const KERNEL = `__constant__ float coeffs[2 * 8];
extern "C" __global__ void k(float *out, const float *in, const float *weights, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = in[i] * weights[i % 16] * coeffs[i % 16];
}
`;

/** A T1 problem beside its kernel file; `edit` changes it before it is written. */
function problem(edit: (t1: Record<string, any>) => void = () => {}): string {
  const dir = mkdtempSync(path.join(scratch, 't1-'));
  writeFileSync(path.join(dir, 'k.cu'), KERNEL);
  const t1: Record<string, any> = {
    General: { BenchmarkName: 'k', OutputFormat: 'JSON' },
    ConfigurationSpace: {
      TuningParameters: [
        { Name: 'block_size_x', Type: 'int', Values: '[32] + list(range(64, 256+1, 64))', Default: 128 },
        { Name: 'unroll', Type: 'int', Values: '[2**i for i in range(0, 4) if i != 2]', Default: 1 },
        { Name: 'mode', Type: 'string', Values: '["fast", "exact"]', Default: 'fast' },
        { Name: 'flag', Type: 'bool', Values: '[True, False]', Default: true },
      ],
      Conditions: [{ Expression: 'block_size_x * unroll <= 512', Parameters: ['block_size_x', 'unroll'] }],
    },
    KernelSpecification: {
      Language: 'CUDA',
      KernelName: 'k',
      KernelFile: 'k.cu',
      CompilerOptions: ['-lineinfo'],
      GlobalSizeType: 'CUDA',
      LocalSize: { X: 'block_size_x', Y: '1', Z: '1' },
      GlobalSize: { X: 'ProblemSize[0] // block_size_x', Y: '1', Z: '1' },
      GridDivX: ['block_size_x'],
      ProblemSize: [4096],
      SharedMemory: 0,
      Stream: null,
      Misc: { jitify: true },
      Arguments: [
        { Name: 'result', Type: 'float', MemoryType: 'Vector', AccessType: 'WriteOnly', FillType: 'Constant', FillValue: 0.0, Size: 'ProblemSize[0]', Output: 1 },
        { Name: 'values', Type: 'float', MemoryType: 'Vector', AccessType: 'ReadOnly', FillType: 'Random', FillValue: 1.0, Size: 'ProblemSize[0]' },
        { Name: 'coeffs', Type: 'float', MemoryType: 'Vector', AccessType: 'ReadOnly', MemType: 'Constant', FillType: 'Random', FillValue: 1.0, Size: 'max(unroll) * 2' },
        { Name: 'count', Type: 'int32', MemoryType: 'Scalar', AccessType: 'ReadOnly', FillValue: 4096 },
      ],
    },
    Search: { Name: 'random_sample', Attributes: [{ Name: 'fraction', Value: 0.5 }] },
    Budget: [{ Type: 'ConfigurationCount', BudgetValue: 7 }],
  };
  edit(t1);
  const file = path.join(dir, 'k.json');
  writeFileSync(file, JSON.stringify(t1));
  return file;
}

describe('T1 tuning problems', () => {
  it('reads the space, the restrictions, the kernel, its arguments in order, the budget and the strategy', async () => {
    const file = problem();
    const spec = loadTuningSpec(file);
    expect(spec.tuneParams).toEqual({ block_size_x: [32, 64, 128, 192, 256], unroll: [1, 2, 8], mode: ['fast', 'exact'], flag: [true, false] });
    expect(spec.restrictions).toEqual(['block_size_x * unroll <= 512']);
    expect(spec.file).toBe(path.join(path.dirname(file), 'k.cu'));
    expect(spec).toMatchObject({ kernel: 'k', problemSize: [4096], gridDivX: ['block_size_x'], compilerOptions: ['-lineinfo'], strategy: 'random_sample', strategyOptions: { fraction: 0.5 }, maxFevals: 7 });
    // The defaults form a valid configuration: the oracle's.
    expect(spec.referenceConfig).toEqual({ block_size_x: 128, unroll: 1, mode: 'fast', flag: true });
    // A pure output is poisoned before every run rather than filled; Random is numpy.random.randn's distribution.
    expect(spec.arguments).toEqual({
      result: { dtype: 'float32', length: 4096, output: true },
      values: { dtype: 'float32', length: 4096, output: false, random: { kind: 'normal', mean: 0, std: 1 } },
      coeffs: { dtype: 'float32', length: 16, output: false, random: { kind: 'normal', mean: 0, std: 1 } },
      count: { dtype: 'int32', value: 4096 },
    });
    expect(spec.constantMemory).toEqual({ coeffs: { sameAs: 'coeffs' } });
    // The kernel's parameters take the arguments in order: their names, the constant memory's too.
    const job = await tuningJob(spec);
    expect(Object.keys(job.spec.arguments)).toEqual(['out', 'in', 'weights', 'n']);
    expect(job.spec.constantMemory).toEqual({ coeffs: { sameAs: 'weights' } });
    const { data } = job.test.resolve(job.kernel.signature);
    expect(data.kind === 'spec' && data.test.constants).toEqual([{ symbol: 'coeffs', dtype: 'float32', length: 16, source: { kind: 'argument', name: 'weights' } }]);
  });

  it('reads the benchmark hub\'s convolution problem as Kernel Tuner does, its filter in constant memory', async () => {
    const job = await tuningJob(loadTuningSpec(path.join(hub, 'kernels', 'convolution_milo.json')));
    expect(job.kernel.name).toBe('convolution_kernel');
    expect(Object.keys(job.spec.arguments)).toEqual(['output', 'input', 'filter']);
    expect(job.spec.arguments.input).toMatchObject({ length: (4096 + 15 - 1) * (4096 + 15 - 1) });
    expect(job.spec.constantMemory).toEqual({ d_filter: { sameAs: 'filter' } });
    expect(job.spec.referenceConfig).toEqual({ block_size_x: 16, block_size_y: 16, tile_size_x: 1, tile_size_y: 1, read_only: 0, use_padding: 1, use_shmem: 1, use_cmem: 1, filter_height: 15, filter_width: 15 });
    expect(Object.values(job.tuneParams).reduce((n, v) => n * v.length, 1)).toBe(16 * 5 * 4 * 4 * 2 * 2 * 2);
  });

  it.each([
    ['an OpenCL kernel', (t: any) => (t.KernelSpecification.Language = 'OpenCL'), 'KernelSpecification.Language: "OpenCL" is not supported: the tuner compiles CUDA (NVRTC or nvcc)'],
    ['a kernel file that is not there', (t: any) => (t.KernelSpecification.KernelFile = 'gone/k.cu.hip'), 'KernelSpecification.KernelFile: gone/k.cu.hip is neither beside the problem'],
    ['values that are not a Python list', (t: any) => (t.ConfigurationSpace.TuningParameters[0].Values = 'numpy.arange(4)'), 'ConfigurationSpace.TuningParameters[0] (block_size_x).Values: "numpy.arange(4)" is not a Python list'],
    ['values of another type', (t: any) => (t.ConfigurationSpace.TuningParameters[0].Values = '[1.5, 2]'), 'ConfigurationSpace.TuningParameters[0] (block_size_x).Values: 1.5 is not an integer'],
    ['a fill from a file', (t: any) => (t.KernelSpecification.Arguments[1].FillType = 'BinaryRaw'), 'KernelSpecification.Arguments[1] (values).FillType: "BinaryRaw" is not supported (supported: Constant, Random)'],
    ['a vector element type', (t: any) => (t.KernelSpecification.Arguments[1].Type = 'float4'), 'KernelSpecification.Arguments[1] (values).Type: "float4" is not supported'],
    ['local memory', (t: any) => (t.KernelSpecification.Arguments[1].MemoryType = 'Local'), 'KernelSpecification.Arguments[1] (values).MemoryType: "Local" is not supported (supported: Scalar, Vector)'],
    ['a size over an unknown name', (t: any) => (t.KernelSpecification.Arguments[1].Size = 'N * 2'), "KernelSpecification.Arguments[1] (values).Size: \"N * 2\": unknown name 'N'"],
    ['a budget fraction', (t: any) => (t.Budget = [{ Type: 'ConfigurationFraction', BudgetValue: 0.1 }]), 'Budget[0].Type: "ConfigurationFraction" is not supported (supported: ConfigurationCount, TuningDuration)'],
    ['a block size expression', (t: any) => (t.KernelSpecification.LocalSize.X = '2 * block_size_x'), 'KernelSpecification.LocalSize.X: "2 * block_size_x" is not supported'],
    ['a simulation input', (t: any) => (t.KernelSpecification.SimulationInput = 'cache.json'), 'KernelSpecification.SimulationInput: is not read from the problem: replay a cache with --simulate FILE'],
    ['no arguments', (t: any) => delete t.KernelSpecification.Arguments, 'KernelSpecification.Arguments:'],
  ])('names the field it does not support: %s', (_what, edit, message) => {
    const file = problem(edit);
    expect(() => loadTuningSpec(file)).toThrow(`the T1 problem ${file}: ${message}`);
  });

  it('refuses arguments that do not match the kernel\'s parameters one for one, and the hub\'s HIP-only dedispersion problem', async () => {
    const file = problem((t) => t.KernelSpecification.Arguments.pop());
    await expect(tuningJob(loadTuningSpec(file))).rejects.toThrow(`the T1 problem ${file} lists 3 arguments (result, values, coeffs), but k takes 4 (out, in, weights, n): they are passed in order`);
    const dedispersion = path.join(hub, 'kernels', 'dedispersion_milo.json');
    expect(() => loadTuningSpec(dedispersion)).toThrow('KernelSpecification.KernelFile: dedisp_milo/dedispersion.cu.hip is neither beside the problem');
  });
});

describe('T4 results', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validateResults = ajv.compile(JSON.parse(readFileSync(path.join(schemas, 'T4', '1.0.0', 'results-schema.json'), 'utf8')));
  const validateMetadata = ajv.compile(JSON.parse(readFileSync(path.join(schemas, 'T4', '1.0.0', 'metadata-schema.json'), 'utf8')));
  const valid = (validate: typeof validateResults, data: unknown) => {
    const ok = validate(data);
    if (!ok) throw new Error(ajv.errorsText(validate.errors));
    return ok;
  };

  it('writes every kind of result as the schema and Kernel Tuner have it', () => {
    const base = { timestamp: '2025-03-12T00:05:53.230Z', timings: { compileMs: 500, loadMs: 2, verifyMs: 3, benchmarkMs: 40, strategyMs: 1, frameworkMs: 4 } };
    const results: ConfigResult[] = [
      { config: { b: 32 }, key: '32', status: 'ok', timeMs: 1.5, stats: { samplesMs: [1.4, 1.5, 1.6], medianMs: 1.5, meanMs: 1.5, minMs: 1.4, maxMs: 1.6, stdMs: 0.1 }, ...base },
      { config: { b: 64 }, key: '64', status: 'compile_error', error: { message: 'error: identifier "x" is undefined' }, ...base },
      { config: { b: 96 }, key: '96', status: 'wrong_result', error: { message: '3 of 4096 elements differ' }, ...base },
      { config: { b: 128 }, key: '128', status: 'fault' },
      { config: { b: 160 }, key: '160', status: 'timeout' },
      { config: { b: 2048 }, key: '2048', status: 'exceeds_device_limits' },
    ];
    const t4 = t4Results(results, { work: { bytes: 3e6, flops: 3e9, source: 'the spec' } });
    expect(valid(validateResults, t4)).toBe(true);
    expect(t4.results.map((r) => [r.invalidity, r.correctness])).toEqual([
      ['correct', 1],
      ['compile', 1],
      ['correctness', 0],
      ['runtime', 1],
      ['timeout', 1],
      ['constraints', 1],
    ]);
    expect(t4.results[0]).toEqual({
      timestamp: '2025-03-12T00:05:53.230Z',
      configuration: { b: 32 },
      times: { compilation: 500, benchmark: 40, framework: 6, search_algorithm: 1, validation: 3, runtimes: [1.4, 1.5, 1.6] },
      invalidity: 'correct',
      correctness: 1,
      measurements: [
        { name: 'time', value: 1.5, unit: 'ms' },
        { name: 'GFLOP/s', value: 2000, unit: '' },
        { name: 'GB/s', value: 2, unit: '' },
      ],
      objectives: ['time'],
    });
    // A failure's time is Kernel Tuner's error string.
    expect(t4.results.slice(1).map((r) => r.measurements)).toEqual(
      ['CompilationFailedConfig', 'RuntimeFailedConfig', 'RuntimeFailedConfig', 'RuntimeFailedConfig', 'InvalidConfig'].map((value) => [{ name: 'time', value, unit: 'ms' }]),
    );
  });

  it('tune --t4 writes the results of a replay and their metadata beside the cache, both valid, one result per evaluation', () => {
    const out = path.join(scratch, 'run', 'convolution-results.json');
    mkdirSync(path.dirname(out), { recursive: true });
    const cache = path.join(hub, 'cachefiles', 'convolution_milo', 'A100.json.gz');
    const r = spawnSync(
      process.execPath,
      [cli, 'tune', path.join(hub, 'kernels', 'convolution_milo.json'), '--simulate', cache, '--param', 'block_size_x=16,32', '--param', 'block_size_y=4', '--param', 'tile_size_x=1,2', '--param', 'tile_size_y=1', '--t4', out, '--no-report', '-q'],
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(t4MetadataPath(out)).toBe(path.join(scratch, 'run', 'convolution-metadata.json'));
    expect(r.stdout).toContain(`T4 results: ${out} (metadata: ${t4MetadataPath(out)})`);
    const results = JSON.parse(readFileSync(out, 'utf8'));
    const metadata = JSON.parse(readFileSync(t4MetadataPath(out), 'utf8'));
    expect(valid(validateResults, results)).toBe(true);
    expect(valid(validateMetadata, metadata)).toBe(true);
    const recorded = CacheFile.load(cache);
    expect(results.results.length).toBeGreaterThan(0);
    for (const result of results.results) {
      const entry = recorded.get(Object.values(result.configuration).join(','))!;
      expect(result.measurements[0]).toEqual({ name: 'time', value: entry.timeMs, unit: 'ms' });
      expect(result.times.runtimes).toEqual(entry.stats!.samplesMs);
      expect(result.times.compilation).toBe(entry.timings!.compileMs);
    }
    expect(metadata.metadata.environment.device_query['llm-kernel-tuner'].name).toBe('NVIDIA A100-PCIE-40GB');
  });
});
