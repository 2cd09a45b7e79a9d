// Occupancy, NVML readings and energy through the real worker protocol: dist/gpu-worker.js hosting the scripted test
// double test/support/fake-addon.cjs (no CUDA, no NVML; its readings are scripted, see the file's header).
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError, CudaUnavailableError, Gpu, LaunchError, int32, type Kernel } from '../../src/gpu';
import { COUNTER_UPDATES } from '../../src/gpu/energy';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');

const opened: Gpu[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((g) => g.dispose()));
});

async function openFake(env: Record<string, string> = {}): Promise<{ gpu: Gpu; kernel: Kernel }> {
  const gpu = await Gpu.open({ env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, ...env } });
  opened.push(gpu);
  const module = await gpu.loadModule(await gpu.compile({ source: '// fake kernels', nameExpressions: ['vector_add'] }));
  return { gpu, kernel: await module.getKernel('vector_add') };
}

async function vectorAdd(gpu: Gpu) {
  const n = 256;
  const [a, b, c] = await Promise.all([gpu.alloc('float32', n), gpu.alloc('float32', n), gpu.alloc('float32', n)]);
  await a.fill(1);
  await b.fill(2);
  return { config: { grid: 1, block: 256 }, args: [a, b, c, int32(n)] };
}

describe('occupancy', () => {
  it('is the driver\'s answer, with the limits the calculator names where it agrees', async () => {
    const { kernel } = await openFake();
    const o = await kernel.occupancy({ block: 256 });
    expect(o).toEqual({
      activeBlocksPerMultiprocessor: 8,
      activeWarpsPerMultiprocessor: 64,
      maxWarpsPerMultiprocessor: 64,
      occupancy: 1,
      source: 'driver',
      limitedBy: ['warps', 'registers'],
    });
    const shared = await kernel.occupancy({ block: [32, 4], sharedMemBytes: 100 * 1024 });
    expect(shared).toMatchObject({ activeBlocksPerMultiprocessor: 2, activeWarpsPerMultiprocessor: 8, limitedBy: ['shared memory'] });
  });

  it('leaves out the calculator\'s explanation where the driver says otherwise', async () => {
    const { kernel } = await openFake({ LKT_FAKE_OCCUPANCY_BLOCKS: '3' });
    const o = await kernel.occupancy({ block: 128 });
    expect(o).toEqual({ activeBlocksPerMultiprocessor: 3, activeWarpsPerMultiprocessor: 12, maxWarpsPerMultiprocessor: 64, occupancy: 12 / 64, source: 'driver' });
  });

  it('checks the block against the device and the kernel first, as a launch does', async () => {
    const { kernel } = await openFake();
    await expect(kernel.occupancy({ block: 2048 })).rejects.toBeInstanceOf(LaunchError);
    await expect(kernel.occupancy({ block: 64, sharedMemBytes: 300 * 1024 })).rejects.toThrow(/opt-in limit/);
  });

  it('gives the configuration\'s free metrics under Kernel Tuner\'s names', async () => {
    const { kernel } = await openFake();
    expect(await kernel.metrics({ block: 512, sharedMemBytes: 4096 })).toEqual({
      num_regs: 32,
      local_mem_bytes: 0,
      static_shared_mem_bytes: 0,
      dynamic_shared_mem_bytes: 4096,
      active_blocks_per_sm: 4,
      active_warps_per_sm: 64,
      occupancy: 1,
      occupancy_source: 'driver',
    });
  });
});

describe('NVML', () => {
  it('reads the device in watts, joules and MHz', async () => {
    const { gpu } = await openFake();
    expect(gpu.nativeStatus.nvml.loaded).toBe(true);
    const r = await gpu.nvml();
    expect(r).toMatchObject({ name: 'Fake H100 (test double)', powerW: 65, powerLimitW: 700, smClockMhz: 1980, memClockMhz: 2619, temperatureC: 38, unsupported: {} });
    expect(r.energyJ).toBeGreaterThan(0);
  });

  it('without NVML, the readings are a CudaUnavailableError that names NVML', async () => {
    const { gpu } = await openFake({ LKT_FAKE_NO_NVML: '1' });
    expect(gpu.nativeStatus.nvml).toMatchObject({ loaded: false, error: expect.stringMatching(/libnvidia-ml/) });
    const error = await gpu.nvml().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CudaUnavailableError);
    expect((error as CudaUnavailableError).library).toBe('libnvidia-ml');
  });
});

describe('benchmark with energy', () => {
  it('adds Kernel Tuner\'s NVML metrics measured over the window after the timed launches', async () => {
    const { gpu, kernel } = await openFake();
    const { config, args } = await vectorAdd(gpu);
    const result = await gpu.benchmark(kernel, config, args, { iterations: 8, energy: { windowMs: 200 } });
    expect(result.samplesMs).toHaveLength(8);
    const energy = result.energy!;
    if (!energy.available) throw new Error(energy.reason);
    expect(energy.nvml_power).toBeCloseTo(200, 9); // the fake draws 200 W
    expect(energy.nvml_energy).toBeCloseTo((200 * result.medianMs) / 1000, 12);
    expect(energy).toMatchObject({ powerSource: 'energy counter', core_freq: 1980, mem_freq: 2619, temperature: 41, powerLimitW: 700 });
    expect(energy.windowMs).toBeGreaterThanOrEqual(200);
    expect(energy.launches).toBe(energy.windowMs); // the fake's launches take 1 ms each
  });

  it('prolongs a window that holds too few counter updates for a slope (an H100\'s counter moves every 100 ms)', async () => {
    const { gpu, kernel } = await openFake({ LKT_FAKE_COUNTER_PERIOD_MS: '100' });
    const { config, args } = await vectorAdd(gpu);
    const energy = (await gpu.benchmark(kernel, config, args, { iterations: 3, energy: { windowMs: 100 } })).energy!;
    if (!energy.available) throw new Error(energy.reason);
    expect(energy.windowMs).toBeGreaterThanOrEqual(COUNTER_UPDATES * 100);
    expect(energy.windowMs).toBeLessThan(COUNTER_UPDATES * 100 + 50); // ended at the batch after the third update
    expect(energy).toMatchObject({ powerSource: 'energy counter', nvml_power: expect.closeTo(200, 9) });
  });

  it('on a device whose counter moves less often than every second, ends the window a second late, on the power readings', async () => {
    const { gpu, kernel } = await openFake({ LKT_FAKE_COUNTER_PERIOD_MS: '2000' });
    const { config, args } = await vectorAdd(gpu);
    const energy = (await gpu.benchmark(kernel, config, args, { iterations: 3, energy: { windowMs: 100 } })).energy!;
    expect(energy).toMatchObject({ available: true, powerSource: 'power readings', nvml_power: 200 });
    if (energy.available) expect(energy.windowMs).toBeGreaterThanOrEqual(1100);
  });

  it('is absent unless asked for, and the default window is a second', async () => {
    const { gpu, kernel } = await openFake();
    const { config, args } = await vectorAdd(gpu);
    expect((await gpu.benchmark(kernel, config, args, { iterations: 3 })).energy).toBeUndefined();
    const result = await gpu.benchmark(kernel, config, args, { iterations: 3, energy: true });
    expect(result.energy).toMatchObject({ available: true, windowMs: expect.any(Number) });
    if (result.energy?.available) expect(result.energy.windowMs).toBeGreaterThanOrEqual(1000);
  });

  it('falls back to the power readings on a device without the energy counter', async () => {
    const { gpu, kernel } = await openFake({ LKT_FAKE_NO_ENERGY_COUNTER: '1' });
    const { config, args } = await vectorAdd(gpu);
    const energy = (await gpu.benchmark(kernel, config, args, { energy: { windowMs: 100 } })).energy;
    expect(energy).toMatchObject({ available: true, powerSource: 'power readings', nvml_power: 200 });
  });

  it('without NVML, timings still come back and the energy says why it is missing', async () => {
    const { gpu, kernel } = await openFake({ LKT_FAKE_NO_NVML: '1' });
    const { config, args } = await vectorAdd(gpu);
    const result = await gpu.benchmark(kernel, config, args, { iterations: 4, energy: true });
    expect(result.samplesMs).toHaveLength(4);
    expect(result.energy).toEqual({ available: false, reason: expect.stringMatching(/NVML \(libnvidia-ml\.so\.1\) is not available: .*libnvidia-ml/) });
  });

  it('refuses a window too short for NVML\'s energy counter', async () => {
    const { gpu, kernel } = await openFake();
    const { config, args } = await vectorAdd(gpu);
    await expect(gpu.benchmark(kernel, config, args, { energy: { windowMs: 50 } })).rejects.toThrow(ArgumentError);
    await expect(gpu.benchmark(kernel, config, args, { energy: { windowMs: 50 } })).rejects.toThrow(/at least 100 ms/);
  });
});
