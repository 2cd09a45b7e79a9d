// What a configuration costs besides its time, on the real device (node --test dist-gpu/gpu-tests/metrics.test.js):
// the driver's occupancy against the TypeScript occupancy calculator, NVML's energy and power (read only) against the
// card's enforced power limit, and Nsight Compute's profile of a memory-bound kernel and of matmul_naive's best
// configuration. Skipped, with the reason, without a driver or device; the NVML part without NVML, the Nsight Compute
// part without ncu or where the driver refuses performance counters. With OUT set, the profiles go to $OUT/profiles.json.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeviceLimitError, Gpu, int32, occupancyDeviceFor, theoreticalOccupancy, type Kernel, type ProgramInit } from '../../src/gpu/client';
import { findNsightCompute } from '../../src/gpu/ncu/find';
import { profileKernel, type KernelProfile } from '../../src/gpu/ncu/profile';
import { gpuSkipReason } from '../support/gpu-available';
import { VECTOR_ADD } from '../support/vector-add';

const skip = gpuSkipReason();
if (skip) console.log(`# metrics tests skipped: ${skip}`);
const test = (name: string, fn: (t: { skip: (reason: string) => void }) => Promise<void>): void => {
  it(name, { skip }, fn);
};

/** 48 independent accumulators: many registers per thread (how many depends on the compiler). */
const MANY_REGISTERS = `
extern "C" __global__ void many_registers(const float* in, float* out, int n) {
  float acc[48];
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = in[(threadIdx.x + j * 97) % n];
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = acc[j] * in[(k + j) % n] + acc[(j + 1) % 48];
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 48; ++j) s += acc[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}`;

const STATIC_SHARED = `
extern "C" __global__ void static_shared(float* out) {
  __shared__ float tile[6000];
  for (int i = threadIdx.x; i < 6000; i += blockDim.x) tile[i] = (float)i;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 7) % 6000];
}`;

const DYNAMIC_SHARED = `
extern "C" __global__ void dynamic_shared(float* out, int count) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < count; i += blockDim.x) s[i] = (float)i;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x % count];
}`;

const BLOCKS = [32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024];
const DYNAMIC_BYTES = [0, 1000, 16 * 1024, 48 * 1024, 80 * 1024, 150 * 1024];

describe('driver metrics and energy on the device', () => {
  let gpu: Gpu;
  const kernelOf = async (program: ProgramInit, name: string): Promise<Kernel> => (await gpu.loadModule(await gpu.compile(program))).getKernel(name);

  before(async () => {
    if (!skip) gpu = await Gpu.open();
  });
  after(async () => {
    await gpu?.dispose();
  });

  test('the device reports the per-multiprocessor limits of the occupancy calculator\'s table', async () => {
    const d = gpu.device;
    const table = occupancyDeviceFor(d.computeCapability);
    for (const key of ['maxThreadsPerMultiprocessor', 'maxBlocksPerMultiprocessor', 'maxRegistersPerMultiprocessor', 'maxSharedMemoryPerMultiprocessor', 'maxSharedMemoryPerBlockOptin', 'reservedSharedMemoryPerBlock', 'maxSharedMemoryPerBlock'] as const)
      assert.equal(d[key], table[key], `${key} of ${d.name} (compute capability ${d.computeCapability.join('.')})`);
  });

  test('the driver\'s occupancy equals the calculator\'s for every kernel, block and shared memory size tried', async () => {
    const kernels = [
      await kernelOf({ source: VECTOR_ADD, nameExpressions: ['vector_add'] }, 'vector_add'),
      await kernelOf({ source: MANY_REGISTERS, nameExpressions: ['many_registers'] }, 'many_registers'),
      await kernelOf({ source: MANY_REGISTERS, nameExpressions: ['many_registers'], options: ['--maxrregcount=40'] }, 'many_registers'),
      await kernelOf({ source: STATIC_SHARED, nameExpressions: ['static_shared'] }, 'static_shared'),
      await kernelOf({ source: DYNAMIC_SHARED, nameExpressions: ['dynamic_shared'] }, 'dynamic_shared'),
    ];
    const mismatches: string[] = [];
    let compared = 0;
    for (const kernel of kernels) {
      const a = kernel.attributes;
      for (const block of BLOCKS.filter((b) => b <= a.maxThreadsPerBlock)) {
        for (const sharedMemBytes of DYNAMIC_BYTES.filter((s) => s + a.staticSharedBytes <= gpu.device.maxSharedMemoryPerBlockOptin)) {
          const driver = await kernel.occupancy({ block, sharedMemBytes });
          const calculated = theoreticalOccupancy(gpu.device, a, { threadsPerBlock: block, dynamicSharedBytes: sharedMemBytes });
          compared++;
          if (driver.activeBlocksPerMultiprocessor !== calculated.activeBlocksPerMultiprocessor)
            mismatches.push(`${kernel.nameExpression} (${a.registers} registers, ${a.staticSharedBytes} B static) block ${block}, ${sharedMemBytes} B dynamic: driver ${driver.activeBlocksPerMultiprocessor}, calculator ${calculated.activeBlocksPerMultiprocessor} (${calculated.limitedBy?.join(', ')})`);
          else assert.deepEqual(driver.limitedBy, calculated.limitedBy);
        }
      }
    }
    console.log(`# occupancy: ${compared} launches compared on ${gpu.device.name}; registers ${kernels.map((k) => k.attributes.registers).join(', ')}`);
    assert.deepEqual(mismatches, []);
    assert.ok(compared > 100, `${compared} compared`);
  });

  test('static shared memory over the per-block limit is a DeviceLimitError from NVRTC, with the numbers', async () => {
    const source = 'extern "C" __global__ void big(float* out) { __shared__ float s[13000]; s[threadIdx.x] = 1.f; __syncthreads(); out[threadIdx.x] = s[(threadIdx.x * 7) % 13000]; }';
    await assert.rejects(gpu.compile({ source, nameExpressions: ['big'] }), (e: unknown) => {
      assert.ok(e instanceof DeviceLimitError, String(e));
      assert.deepEqual(e.limit, { resource: 'static shared memory', kernel: 'big', usedBytes: 52000, limitBytes: 48 * 1024 });
      return true;
    });
  });

  test('a configuration\'s free metrics carry Kernel Tuner\'s num_regs and the driver\'s occupancy', async () => {
    const kernel = await kernelOf({ source: VECTOR_ADD, nameExpressions: ['vector_add'] }, 'vector_add');
    const m = await kernel.metrics({ block: 256 });
    assert.equal(m.num_regs, kernel.attributes.registers);
    assert.equal(m.occupancy_source, 'driver');
    assert.equal(m.occupancy, 1, JSON.stringify(m));
  });

  describe('NVML (read only)', () => {
    const nvmlSkip = (): string | false => (gpu.nativeStatus.nvml.loaded ? false : `NVML is not loaded: ${gpu.nativeStatus.nvml.error}`);
    /** vector_add's inputs (1s and 2s) and output, n floats each. */
    const vectorAddBuffers = async (n: number) => {
      const buffers = await Promise.all([gpu.alloc('float32', n), gpu.alloc('float32', n), gpu.alloc('float32', n)]);
      await buffers[0].fill(1);
      await buffers[1].fill(2);
      return buffers;
    };

    test('energy per launch is positive and the mean power stays under the card\'s enforced limit', async (t) => {
      const reason = nvmlSkip();
      if (reason) return t.skip(reason);
      const readings = await gpu.nvml();
      assert.ok(readings.powerLimitW && readings.powerLimitW > 50, JSON.stringify(readings));
      const kernel = await kernelOf({ source: VECTOR_ADD, nameExpressions: ['vector_add'] }, 'vector_add');
      const results = [];
      for (const n of [1 << 24, 1 << 25]) {
        const [a, b, c] = await vectorAddBuffers(n);
        const r = await gpu.benchmark(kernel, { grid: n / 256, block: 256 }, [a, b, c, int32(n)], { iterations: 20, energy: { windowMs: 1000 } });
        const e = r.energy!;
        assert.ok(e.available, JSON.stringify(e));
        console.log(`# ${gpu.device.name}, vector_add of ${n} floats: ${r.medianMs.toFixed(3)} ms, ${e.nvml_power.toFixed(1)} W (${e.powerSource}, limit ${e.powerLimitW} W), ${(e.nvml_energy * 1000).toFixed(3)} mJ per launch, ${e.core_freq} / ${e.mem_freq} MHz, ${e.temperature} °C, ${e.launches} launches in ${e.windowMs.toFixed(0)} ms`);
        assert.ok(e.nvml_energy > 0 && e.nvml_power > 0, JSON.stringify(e));
        assert.ok(e.nvml_power < readings.powerLimitW! * 1.01, `${e.nvml_power} W over the ${readings.powerLimitW} W limit`);
        assert.ok(e.windowMs >= 900, `window ${e.windowMs} ms`);
        assert.ok(e.core_freq! > 0 && e.mem_freq! > 0 && e.temperature! > 0 && e.temperature! < 110, JSON.stringify(e));
        results.push(e.nvml_energy);
        await Promise.all([a.free(), b.free(), c.free()]);
      }
      const ratio = results[1]! / results[0]!;
      assert.ok(ratio > 1.4 && ratio < 2.8, `twice the work took ${ratio.toFixed(2)}× the energy`);
    });

    test('a kernel of microseconds over a short window: the window lasts as asked and the power repeats', async (t) => {
      // Launch counts taken from the cold-cache time once left windows of a third of the asked length, with one
      // counter update or none in them: the same kernel then read anywhere from 190 to 795 W.
      const reason = nvmlSkip();
      if (reason) return t.skip(reason);
      const { powerLimitW } = await gpu.nvml();
      const kernel = await kernelOf({ source: VECTOR_ADD, nameExpressions: ['vector_add'] }, 'vector_add');
      const n = 1 << 20;
      const [a, b, c] = await vectorAddBuffers(n);
      const powers: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await gpu.benchmark(kernel, { grid: n / 256, block: 256 }, [a, b, c, int32(n)], { iterations: 20, energy: { windowMs: 300 } });
        const e = r.energy!;
        assert.ok(e.available, JSON.stringify(e));
        console.log(`# vector_add of ${n} floats: ${(r.medianMs * 1000).toFixed(1)} µs, ${e.nvml_power.toFixed(1)} W (${e.powerSource}), ${e.launches} launches in ${e.windowMs.toFixed(0)} ms`);
        assert.ok(e.windowMs >= 300, `a window of ${e.windowMs} ms, asked for 300`);
        assert.equal(e.powerSource, 'energy counter');
        if (powerLimitW !== undefined) assert.ok(e.nvml_power < powerLimitW * 1.1, `${e.nvml_power} W over the ${powerLimitW} W limit`);
        powers.push(e.nvml_power);
      }
      const spread = Math.max(...powers) / Math.min(...powers);
      assert.ok(spread < 1.3, `the same kernel read ${powers.map((p) => p.toFixed(0)).join(', ')} W`);
      await Promise.all([a.free(), b.free(), c.free()]);
    });
  });
});

describe('Nsight Compute profile', () => {
  let gpu: Gpu;
  const ncu = findNsightCompute();
  const profiles: Record<string, KernelProfile> = {};
  before(async () => {
    if (!skip) gpu = await Gpu.open();
  });
  after(async () => {
    await gpu?.dispose();
    if (process.env.OUT && Object.keys(profiles).length > 0) writeFileSync(path.join(process.env.OUT, 'profiles.json'), JSON.stringify(profiles, null, 2));
  });

  /** The profile, or a skip with the reason where ncu is missing or the counters are refused. */
  async function profiled(t: { skip: (reason: string) => void }, name: string, run: () => Promise<KernelProfile>): Promise<Extract<KernelProfile, { available: true }> | undefined> {
    if (!ncu) {
      t.skip('Nsight Compute (ncu) is not installed here');
      return undefined;
    }
    const p = await run();
    profiles[name] = p;
    if (!p.available && p.reason === 'counters-not-permitted') {
      t.skip(p.message);
      return undefined;
    }
    assert.ok(p.available, JSON.stringify(p));
    console.log(`# ${name} (${ncu.path}):\n${p.summary.map((l) => `#   ${l}`).join('\n')}`);
    return p;
  }

  test('a memory-bound kernel (vector add over 3 × 256 MiB) is memory-bound with DRAM throughput high', async (t) => {
    const n = 1 << 26;
    const compiled = await gpu.compile({ source: VECTOR_ADD, nameExpressions: ['vector_add'] });
    const p = await profiled(t, 'vector_add', () =>
      profileKernel({
        compiled,
        nameExpression: 'vector_add',
        launch: { grid: n / 256, block: 256 },
        args: [{ dtype: 'float32', length: n, fill: 1 }, { dtype: 'float32', length: n, random: { distribution: 'uniform', seed: 1 } }, { dtype: 'float32', length: n }, int32(n)],
      }),
    );
    if (!p) return;
    assert.equal(p.numbers.bound, 'memory');
    assert.ok(p.numbers.dramThroughputPct! >= 60, `DRAM ${p.numbers.dramThroughputPct}%`);
    assert.ok(p.numbers.achievedOccupancyPct! > 0);
  });

  test('matmul_naive\'s best configuration (64 × 2, n = 2048) is summarized in a few lines', async (t) => {
    const source = readFileSync(path.resolve(__dirname, '../../examples/matmul_naive/matmul_naive.cu'), 'utf8');
    const n = 2048;
    const compiled = await gpu.compile({ source, nameExpressions: ['matmul_naive'], defines: { block_size_x: 64, block_size_y: 2 } });
    const p = await profiled(t, 'matmul_naive', () =>
      profileKernel({
        compiled,
        nameExpression: 'matmul_naive',
        launch: { grid: [n / 64, n / 2], block: [64, 2] },
        args: [{ dtype: 'float32', length: n * n }, { dtype: 'float32', length: n * n, random: { distribution: 'uniform', min: -1, max: 1, seed: 1 } }, { dtype: 'float32', length: n * n, random: { distribution: 'uniform', min: -1, max: 1, seed: 2 } }, int32(n)],
      }),
    );
    if (!p) return;
    assert.ok(p.summary.length >= 3, p.summary.join('\n'));
    assert.ok(p.numbers.dramThroughputPct !== undefined && p.numbers.smThroughputPct !== undefined && p.numbers.topStalls.length > 0, JSON.stringify(p.numbers));
    assert.equal(p.numbers.registersPerThread, (await (await gpu.loadModule(compiled)).getKernel('matmul_naive')).attributes.registers);
  });
});
