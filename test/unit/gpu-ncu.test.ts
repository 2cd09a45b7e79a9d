// Nsight Compute at the GPU layer without a GPU: finding ncu as on a user's machine, parsing its CSV (captured output
// in test/fixtures/ncu), the summary, telling its failures apart, and profileKernel end to end through the test double
// test/support/fake-ncu.mjs, which runs the real worker bundle's --profile entry on the fake addon.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { float32, int32, type CompiledProgram } from '../../src/gpu';
import { findNsightCompute, type NsightCompute } from '../../src/gpu/ncu/find';
import { profileKernel } from '../../src/gpu/ncu/profile';
import type { LaunchTarget } from '../../src/gpu/ncu/launch-request';
import { PROFILE_METRICS, classifyNcuFailure, parseNcuCsv, profileNumbers, summarizeProfile } from '../../src/gpu/ncu/report';
import { executable, tempDirs } from '../support/temp-dirs';

const FIXTURES = path.resolve(__dirname, '../fixtures/ncu');
const fixture = (name: string): string => fs.readFileSync(path.join(FIXTURES, name), 'utf8');
const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const FAKE_NCU: NsightCompute = { path: path.resolve(__dirname, '../support/fake-ncu.mjs'), foundBy: 'test double' };

const tempDir = tempDirs('lkt-ncu-test-');

describe('parseNcuCsv', () => {
  it('reads the raw page: ncu\'s progress lines skipped, numbers with thousands separators, units', () => {
    const [row, ...more] = parseNcuCsv(fixture('matmul_naive-raw.csv'));
    expect(more).toEqual([]);
    expect(row).toMatchObject({ kernelName: 'matmul_naive', blockSize: '(16, 16, 1)', gridSize: '(128, 128, 1)', device: '0', computeCapability: '9.0' });
    expect(row!.metrics['dram__throughput.avg.pct_of_peak_sustained_elapsed']).toBe(86.42);
    expect(row!.metrics['gpu__time_duration.sum']).toBe(1_843_264);
    expect(row!.units).toMatchObject({ 'gpu__time_duration.sum': 'nsecond', 'dram__throughput.avg.pct_of_peak_sustained_elapsed': '%' });
    expect(Object.keys(row!.metrics).sort()).toEqual([...PROFILE_METRICS].sort());
  });

  it('reads the details page too (a row per metric), keeping "n/a" as text', () => {
    const details = [
      '==PROF== Profiling "saxpy" - 0: 0%....50%....100% - 9 passes',
      '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
      '"0","7","node","127.0.0.1","saxpy(float, const float *, float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","92.1"',
      '"0","7","node","127.0.0.1","saxpy(float, const float *, float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum","","n/a"',
    ].join('\n');
    expect(parseNcuCsv(details)).toEqual([
      {
        kernelName: 'saxpy(float, const float *, float *)',
        blockSize: '(256, 1, 1)',
        gridSize: '(4096, 1, 1)',
        device: '0',
        computeCapability: '9.0',
        metrics: { 'dram__throughput.avg.pct_of_peak_sustained_elapsed': 92.1, 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum': 'n/a' },
        units: { 'dram__throughput.avg.pct_of_peak_sustained_elapsed': '%' },
      },
    ]);
  });

  it('finds no kernel in output without a table', () => {
    expect(parseNcuCsv(fixture('counters-not-permitted.txt'))).toEqual([]);
  });
});

describe('profileNumbers and summarizeProfile', () => {
  const numbers = profileNumbers(parseNcuCsv(fixture('matmul_naive-raw.csv'))[0]!);

  it('gives the structured numbers and calls a kernel at 86% of DRAM peak memory-bound', () => {
    expect(numbers).toMatchObject({
      dramThroughputPct: 86.42,
      smThroughputPct: 31.07,
      achievedOccupancyPct: 91.55,
      sharedBankConflicts: 0,
      localLoadBytes: 0,
      localStoreBytes: 0,
      durationNs: 1_843_264,
      registersPerThread: 32,
      bound: 'memory',
    });
  });

  it('keeps the top stall reasons that matter, largest first', () => {
    expect(numbers.topStalls).toEqual([
      { reason: 'long_scoreboard', cyclesPerInstruction: 18.73 },
      { reason: 'lg_throttle', cyclesPerInstruction: 3.42 },
      { reason: 'wait', cyclesPerInstruction: 1.86 },
    ]);
  });

  it('summarizes in a few lines', () => {
    expect(summarizeProfile(numbers, 'matmul_naive')).toEqual([
      'matmul_naive: memory-bound, DRAM throughput 86% of peak, L1/TEX cache 39%, L2 cache 48%, SM throughput 31% of peak',
      'achieved occupancy 92% with 32 registers per thread',
      'top warp stalls (cycles per issued instruction): long_scoreboard 18.7, lg_throttle 3.4, wait 1.9',
      'no shared-memory bank conflicts',
      'no local-memory traffic (no spills)',
    ]);
  });

  it('calls neither throughput above 60% latency-bound, and names spills and bank conflicts', () => {
    const lines = summarizeProfile(
      { dramThroughputPct: 12, smThroughputPct: 40, sharedBankConflicts: 2048, localLoadBytes: 3 * 1024 * 1024, localStoreBytes: 512, topStalls: [], bound: 'latency' },
      'k',
    );
    expect(lines).toEqual([
      'k: latency-bound (neither DRAM nor SM throughput reaches 60% of peak), DRAM throughput 12% of peak, SM throughput 40% of peak',
      'shared-memory bank conflicts: 2048',
      'local-memory traffic (spills or local arrays): 3.0 MiB loaded, 512 B stored',
    ]);
    expect(profileNumbers({ kernelName: 'k', metrics: { [PROFILE_METRICS[0]!]: 20, [PROFILE_METRICS[1]!]: 75 }, units: {} }).bound).toBe('compute');
  });
});

describe('classifyNcuFailure', () => {
  it('tells refused performance counters apart', () => {
    const f = classifyNcuFailure(fixture('counters-not-permitted.txt'), 1);
    expect(f.kind).toBe('counters-not-permitted');
    expect(f.message).toMatch(/ERR_NVGPUCTRPERM.*NVreg_RestrictProfilingToAdminUsers=0/);
  });

  it('names the metrics this GPU lacks', () => {
    expect(classifyNcuFailure(fixture('unknown-metric.txt'), 1)).toMatchObject({ kind: 'unknown-metrics', metrics: ['l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum'] });
  });

  it('says when no kernel was profiled, and otherwise quotes ncu\'s errors', () => {
    expect(classifyNcuFailure('==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n', 0).kind).toBe('no-kernel-profiled');
    expect(classifyNcuFailure('==ERROR== The application returned an error code (11).\n', 1)).toEqual({
      kind: 'failed',
      message: 'ncu failed (exit code 1):\n==ERROR== The application returned an error code (11).',
    });
  });
});

describe('findNsightCompute', () => {
  it('takes ncu from PATH first', () => {
    const dir = tempDir();
    executable(path.join(dir, 'bin', 'ncu'));
    expect(findNsightCompute({ env: { PATH: path.join(dir, 'bin') }, locations: [], standaloneRoot: path.join(dir, 'none') })).toEqual({ path: path.join(dir, 'bin', 'ncu'), foundBy: 'PATH' });
  });

  it('then the newest nsight-compute-<version> beside the CUDA toolkit, then its bin/ncu', () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'include'), { recursive: true });
    fs.writeFileSync(path.join(root, 'include', 'cuda_runtime.h'), '');
    executable(path.join(root, 'bin', 'ncu'));
    const options = { env: { PATH: '', CUDA_HOME: root }, locations: [], standaloneRoot: path.join(root, 'none') };
    expect(findNsightCompute(options)).toEqual({ path: path.join(root, 'bin', 'ncu'), foundBy: `beside the CUDA toolkit at ${root}` });
    executable(path.join(root, 'nsight-compute-2024.3.2', 'ncu'));
    executable(path.join(root, 'nsight-compute-2025.1.0', 'ncu'));
    expect(findNsightCompute(options)).toMatchObject({ path: path.join(root, 'nsight-compute-2025.1.0', 'ncu'), version: '2025.1.0' });
  });

  it('then the newest standalone install under /opt/nvidia/nsight-compute/<version>', () => {
    const opt = tempDir();
    for (const v of ['2024.3.2', '2025.2.1', '2025.10.0']) executable(path.join(opt, v, 'ncu'));
    fs.mkdirSync(path.join(opt, 'docs'));
    expect(findNsightCompute({ env: { PATH: '' }, locations: [], standaloneRoot: opt })).toEqual({ path: path.join(opt, '2025.10.0', 'ncu'), version: '2025.10.0', foundBy: opt });
  });

  it('is null where Nsight Compute is not installed', () => {
    expect(findNsightCompute({ env: { PATH: '' }, locations: [], standaloneRoot: path.join(tempDir(), 'none') })).toBeNull();
  });
});

describe('profileKernel (fake ncu, fake addon, the real worker bundle)', () => {
  /** A fake build: the fake addon's "cubin" names its kernels, and its lowered names are the expressions. */
  function build(kernel: string): CompiledProgram {
    return { cubin: Buffer.from(JSON.stringify({ kernels: [kernel] })), log: '', loweredNames: { [kernel]: kernel }, backend: 'nvrtc', arch: 'sm_90', durationMs: 1 };
  }
  const target = (kernel = 'vector_add'): LaunchTarget => ({
    compiled: build(kernel),
    nameExpression: kernel,
    launch: { grid: 4, block: 256 },
    args: [
      { dtype: 'float32', data: Float32Array.from({ length: 1024 }, (_, i) => i) },
      { dtype: 'float32', length: 1024, random: { distribution: 'uniform', seed: 3 } },
      { dtype: 'float32', length: 1024, fill: 0 },
      int32(1024),
    ],
  });
  const options = (env: Record<string, string> = {}) => ({ ncu: FAKE_NCU, env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, ...env }, timeoutMs: 30_000 });

  it('launches the kernel once under ncu and returns the numbers and the summary', async () => {
    const p = await profileKernel(target(), options());
    if (!p.available) throw new Error(p.message);
    expect(p.kernel).toBe('vector_add');
    expect(p.numbers.bound).toBe('memory');
    expect(p.summary[0]).toBe('vector_add: memory-bound, DRAM throughput 86% of peak, L1/TEX cache 39%, L2 cache 48%, SM throughput 31% of peak');
    expect(p.metrics['sm__warps_active.avg.pct_of_peak_sustained_active']).toBe(91.55);
    expect(p.skippedMetrics).toEqual([]);
    expect(p.ncu).toBe(FAKE_NCU);
  });

  it('says that ncu is not installed', async () => {
    expect(await profileKernel(target(), { ncu: null })).toEqual({ available: false, reason: 'ncu-not-found', message: expect.stringMatching(/not installed: looked on PATH, the CUDA toolkit/) });
  });

  it('tells refused performance counters apart from other failures', async () => {
    const p = await profileKernel(target(), options({ FAKE_NCU_NO_PERMISSION: '1' }));
    expect(p).toMatchObject({ available: false, reason: 'counters-not-permitted', message: expect.stringMatching(/ERR_NVGPUCTRPERM/) });
  });

  it('asks again without a metric this GPU lacks, and says which it left out', async () => {
    const missing = 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum';
    const p = await profileKernel(target(), options({ FAKE_NCU_UNKNOWN_METRIC: missing }));
    if (!p.available) throw new Error(p.message);
    expect(p.skippedMetrics).toEqual([missing]);
    expect(p.numbers.sharedBankConflicts).toBeUndefined();
    expect(p.numbers.dramThroughputPct).toBe(86.42);
  });

  it('reports a launch that faulted with the addon\'s error', async () => {
    const p = await profileKernel(target('fault'), options());
    expect(p).toMatchObject({ available: false, reason: 'launch-failed', message: expect.stringMatching(/^The profiled launch failed: .*CUDA_ERROR_ILLEGAL_ADDRESS/) });
  });

  it('reports arguments that do not fit the kernel before anything runs on the GPU', async () => {
    const bad = { ...target(), args: [{ dtype: 'float32' as const, length: -1 }] };
    await expect(profileKernel(bad, options())).rejects.toThrow(/args\[0\]\.length/);
    await expect(profileKernel({ ...target(), nameExpression: 'other' }, options())).rejects.toThrow(/name expressions \(vector_add\)/);
    await expect(profileKernel({ ...target(), args: [float32(1), { dtype: 'float32', data: new Int32Array(4) }] }, options())).rejects.toThrow(/typed array of float32/);
  });

  it('stops a profile that runs past its time limit', async () => {
    const p = await profileKernel(target(), { ...options({ FAKE_NCU_SLEEP_MS: '5000' }), timeoutMs: 300 });
    expect(p).toEqual({ available: false, reason: 'timeout', message: 'ncu did not finish within 300 ms' });
  });
});
