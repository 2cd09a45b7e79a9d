// Profiler feedback without a GPU: what a configuration's profile says (Nsight Compute's lines, or the driver's metrics
// standing in with the reason), the inputs of the profiled launch, the measured parts of a prompt, and a replay that
// compares those by heading only (a session recorded on one GPU replays on another).
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { ReplayChatModel } from '../../src/engine/llm/replay';
import type { LlmExchange } from '../../src/engine/llm/exchange';
import { measuredBlock, withoutMeasurements, type Measured } from '../../src/engine/prompts';
import { parseNcuCsv, profileNumbers, summarizeProfile } from '../../src/gpu/ncu/report';
import type { KernelProfile } from '../../src/gpu/ncu/profile';
import { configProfile, profileSourceText, type DriverMetrics } from '../../src/tuner/run/profile';
import { launchInputs, mixSeed } from '../../src/tuner/run/test-data';
import { H100_LIMITS, ncuProfileOf } from '../support/engine-harness';
import { FAKE_DEVICE, FAKE_NCU_MISSING } from '../support/fake-backend';

const LAUNCH = { grid: [64, 1, 1] as [number, number, number], block: [128, 2, 1] as [number, number, number], sharedMemBytes: 4096 };
const SPILLING: DriverMetrics = {
  num_regs: 128,
  local_mem_bytes: 96,
  static_shared_mem_bytes: 8192,
  dynamic_shared_mem_bytes: 4096,
  active_blocks_per_sm: 2,
  active_warps_per_sm: 16,
  occupancy: 0.25,
  occupancy_source: 'driver',
  limitedBy: ['registers'],
};

describe('a configuration\'s profile', () => {
  it('is Nsight Compute\'s lines where it answered', () => {
    const p = configProfile({ block_size_x: 128 }, 'matmul', LAUNCH, { driver: SPILLING, ncu: ncuProfileOf('matmul') });
    expect(p.source).toBe('ncu');
    expect(p.summary[0]).toBe('matmul: memory-bound, DRAM throughput 86% of peak, L1/TEX cache 39%, L2 cache 48%, SM throughput 31% of peak');
    expect(p.ncu).toMatchObject({ version: '2025.3.1', numbers: { bound: 'memory', registersPerThread: 32 } });
    expect(p.driver).toBe(SPILLING);
    expect(profileSourceText(p)).toBe('Nsight Compute 2025.3.1, one launch');
  });

  it('is the driver\'s metrics, with why, where Nsight Compute did not answer', () => {
    const refused: KernelProfile = { available: false, reason: 'counters-not-permitted', message: 'ERR_NVGPUCTRPERM ...' };
    const p = configProfile({ block_size_x: 128 }, 'matmul', LAUNCH, { driver: SPILLING, ncu: refused });
    expect(p).toMatchObject({ source: 'driver', unavailable: { reason: 'counters-not-permitted', message: 'ERR_NVGPUCTRPERM ...' } });
    expect(p.summary).toEqual([
      'matmul: 128 registers per thread, 96 B of local memory per thread (spills or local arrays)',
      'shared memory per block: 8 KiB static, 4 KiB dynamic',
      'theoretical occupancy 25%: 2 blocks of 256 threads (16 warps) per SM, limited by registers',
    ]);
    expect(profileSourceText(p)).toBe("the driver's metrics: the driver does not allow reading the performance counters");
    expect(profileSourceText(configProfile({}, 'k', LAUNCH, { driver: SPILLING, ncu: FAKE_NCU_MISSING }))).toBe("the driver's metrics: Nsight Compute is not installed");
  });

  it('says a kernel whose caches are busiest is bound by them, not by DRAM', () => {
    const row = parseNcuCsv(
      [
        '"ID","Kernel Name","dram__throughput.avg.pct_of_peak_sustained_elapsed","l1tex__throughput.avg.pct_of_peak_sustained_active","lts__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed"',
        '"","","%","%","%","%"',
        '"0","matmul_naive","12.4","93.2","41.0","55.1"',
      ].join('\n'),
    )[0]!;
    const numbers = profileNumbers(row);
    expect(numbers).toMatchObject({ bound: 'memory', busiestMemory: 'L1/TEX cache', dramThroughputPct: 12.4 });
    expect(summarizeProfile(numbers, 'matmul_naive')[0]).toBe(
      'matmul_naive: memory-bound by the L1/TEX cache, not DRAM, DRAM throughput 12% of peak, L1/TEX cache 93%, L2 cache 41%, SM throughput 55% of peak',
    );
  });
});

describe('the inputs of a launch in a process of its own', () => {
  it('draws a spec\'s buffers and constant memory from the same distributions with the first input set\'s seeds, fills its fills, and zeroes pure outputs', () => {
    const { args, constants } = launchInputs({
      kind: 'spec',
      test: {
        seed: 7,
        problemSize: ['n'],
        scalars: { n: 1000 },
        totalBytes: 0,
        constants: [
          { symbol: 'c_a', dtype: 'float32', length: 1000, source: { kind: 'argument', name: 'a' } },
          { symbol: 'c_w', dtype: 'float32', length: 9, source: { kind: 'own', init: { kind: 'random', distribution: { kind: 'uniform', min: 0, max: 1 } } } },
        ],
        arguments: [
          { kind: 'buffer', name: 'c', dtype: 'float32', length: 1000, output: true },
          { kind: 'buffer', name: 'a', dtype: 'float32', length: 1000, output: false, init: { kind: 'random', distribution: { kind: 'normal', mean: 1, std: 2 } } },
          { kind: 'buffer', name: 'idx', dtype: 'int32', length: 1000, output: false, init: { kind: 'random', distribution: { kind: 'integers', min: 0, max: 9 } } },
          { kind: 'buffer', name: 'acc', dtype: 'float64', length: 10, output: true, init: { kind: 'fill', value: 0.5 } },
          { kind: 'scalar', name: 'n', dtype: 'int32', value: 1000 },
        ],
      },
    }, 'zeroed');
    expect(args).toEqual([
      { dtype: 'float32', length: 1000 },
      { dtype: 'float32', length: 1000, random: { distribution: 'normal', mean: 1, std: 2, seed: mixSeed(7, 1) } },
      { dtype: 'int32', length: 1000, random: { distribution: 'integers', min: 0, max: 9, seed: mixSeed(7, 2) } },
      { dtype: 'float64', length: 10, fill: 0.5 },
      { kind: 'scalar', dtype: 'int32', value: 1000 },
    ]);
    // The argument's constant is the argument's data; the spec's own draws as the GPU backend draws it: its seed comes
    // after the arguments', counted over the constants in order.
    expect(constants).toEqual([
      { symbol: 'c_a', data: args[1] },
      { symbol: 'c_w', data: { dtype: 'float32', length: 9, random: { distribution: 'uniform', min: 0, max: 1, seed: mixSeed(7, 6) } } },
    ]);
  });

  it('leaves pure outputs unwritten for compute-sanitizer\'s initcheck', () => {
    const { args } = launchInputs({ kind: 'spec', test: { seed: 1, problemSize: ['n'], scalars: {}, totalBytes: 0, constants: [], arguments: [{ kind: 'buffer', name: 'c', dtype: 'float32', length: 8, output: true }] } }, 'uninitialized');
    expect(args).toEqual([{ dtype: 'float32', length: 8, uninitialized: true }]);
  });

  it('takes a host test\'s arrays as they are, but not a pure output\'s', () => {
    const x = new Float32Array([1, 2, 3]);
    const { args } = launchInputs({
      kind: 'host',
      arguments: [
        { kind: 'buffer', name: 'x', dtype: 'float32', data: x, output: false },
        { kind: 'buffer', name: 'y', dtype: 'float32', data: new Float32Array(3), output: true },
        { kind: 'scalar', name: 'n', dtype: 'int64', value: 3n },
      ],
    }, 'zeroed');
    expect(args).toEqual([{ dtype: 'float32', data: x }, { dtype: 'float32', length: 3 }, { kind: 'scalar', dtype: 'int64', value: 3n }]);
  });
});

const measured = (over: Partial<Measured> = {}): Measured => ({
  device: FAKE_DEVICE,
  limits: H100_LIMITS,
  timeMs: 2,
  work: { bytes: 3e9, flops: 1e11, source: 'the spec' },
  profile: configProfile({ block_size_x: 128 }, 'k', LAUNCH, { driver: SPILLING, ncu: FAKE_NCU_MISSING }),
  ...over,
});

describe('the measured parts of a prompt', () => {
  it('state the GPU, the kernel\'s time against its speed of light, and its profile', () => {
    expect(measuredBlock(measured()).split('\n')).toEqual([
      'The GPU, as the tuner measured it:',
      '- Fake GPU (test double): compute capability 9.0 (sm_90), 132 SMs, 50 MiB L2 cache, 80 GiB device memory',
      '- per SM: 2048 threads, 65536 registers, 228 KiB shared memory; per block: 1024 threads, 65536 registers, 48 KiB shared memory (227 KiB when the kernel opts in)',
      '- memory bandwidth 3000 GB/s (measured with a copy kernel, bytes read + written); FP32 peak 132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz = 66.9 TFLOP/s',
      '- the current kernel takes 2 ms on the first test, 75% of its speed of light (1.49 ms, FP32-bound: 3 GB moved at the measured bandwidth take 1 ms; 100 GFLOP at the FP32 peak 1.49 ms)',
      '',
      'Profile of the current kernel at its best configuration {"block_size_x":128} (the driver\'s metrics: Nsight Compute is not installed):',
      '- k: 128 registers per thread, 96 B of local memory per thread (spills or local arrays)',
      '- shared memory per block: 8 KiB static, 4 KiB dynamic',
      '- theoretical occupancy 25%: 2 blocks of 256 threads (16 warps) per SM, limited by registers',
    ]);
  });

  it('say what is missing: the limits, the work, the profile', () => {
    expect(measuredBlock(measured({ limits: null, profile: null })).split('\n').slice(3)).toEqual([
      '- memory bandwidth and FP32 peak: not measured on this device',
      "- the current kernel takes 2 ms on the first test (no speed of light: the device's limits were not measured)",
    ]);
    expect(measuredBlock(measured({ work: undefined })).split('\n')[4]).toBe('- the current kernel takes 2 ms on the first test (no speed of light: the work of a launch is not known)');
    expect(measuredBlock(measured({ work: { bytes: 3e9, source: 'buffers' } })).split('\n')[4]).toBe(
      '- the current kernel takes 2 ms on the first test, 50% of its speed of light (1 ms, memory-bound: 3 GB moved at the measured bandwidth take 1 ms; its FLOP count is not known)',
    );
  });

  it('reduce to their headings, leaving the rest of the prompt as it is', () => {
    const prompt = ['Step: tile it.', '', measuredBlock(measured()), '', 'Rules:', '- keep the signature'].join('\n');
    expect(withoutMeasurements(prompt)).toBe(
      ['Step: tile it.', '', 'The GPU, as the tuner measured it: (measured)', '', 'Profile of the current kernel at its best configuration: (measured)', '', 'Rules:', '- keep the signature'].join('\n'),
    );
    const elsewhere = measuredBlock(measured({ device: { ...FAKE_DEVICE, name: 'NVIDIA H100 80GB HBM3' }, limits: null, timeMs: 0.5, profile: configProfile({ tile: 4 }, 'k', LAUNCH, { driver: SPILLING, ncu: ncuProfileOf('k') }) }));
    expect(withoutMeasurements(elsewhere)).toBe(withoutMeasurements(measuredBlock(measured())));
  });
});

describe('a replay on another GPU', () => {
  const recorded = (prompt: string): LlmExchange => ({
    purpose: 'step 1',
    model: 'm',
    params: {},
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: prompt },
    ],
    response: { content: 'the recorded answer' },
    startedAt: '2026-01-01T00:00:00.000Z',
    durationMs: 0,
  });
  const prompt = (block: string, step = 'Step: tile it.') => [step, '', block, '', 'Rules:', '- keep the signature'].join('\n');

  it('answers a request whose measurements differ from the recording\'s', async () => {
    const replay = new ReplayChatModel([recorded(prompt(measuredBlock(measured())))]);
    const here = measuredBlock(measured({ device: { ...FAKE_DEVICE, name: 'NVIDIA H200' }, timeMs: 1.2, profile: configProfile({ tile: 8 }, 'k', LAUNCH, { driver: SPILLING, ncu: ncuProfileOf('k') }) }));
    const answer = await replay.invoke([new SystemMessage('sys'), new HumanMessage(prompt(here))]);
    expect(answer.content).toBe('the recorded answer');
    expect(replay.unused()).toEqual([]);
  });

  it('still stops where the rest of the request differs, or a measured part is missing', async () => {
    const replay = new ReplayChatModel([recorded(prompt(measuredBlock(measured())))]);
    await expect(replay.invoke([new SystemMessage('sys'), new HumanMessage(prompt(measuredBlock(measured()), 'Step: unroll it.'))])).rejects.toThrow(
      /differs at line 1: the recording has "Step: tile it.", this run "Step: unroll it."/,
    );
    await expect(replay.invoke([new SystemMessage('sys'), new HumanMessage(prompt(measuredBlock(measured({ profile: null }))))])).rejects.toThrow(/no recorded request matches it/);
  });
});
