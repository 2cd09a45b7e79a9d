// The device limits behind the speed-of-light figures of reports, on the real device (node --test
// dist-gpu/gpu-tests/speed-of-light.test.js): the driver's timed copy, the copy kernel copying every byte, the copy
// kernel reaching at least 90 % of the driver's copy, and the backend's limits. With OUT set, the measurement is
// written to $OUT/bandwidth.json. Skipped, with the reason, without a driver or device.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { COPY_KERNEL_SOURCE, COPY_SHAPES, measureBandwidth } from '../../src/gpu/bandwidth';
import { Gpu, uint64 } from '../../src/gpu/client';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { gpuSkipReason } from '../support/gpu-available';

const skip = gpuSkipReason();
if (skip) console.log(`# speed-of-light tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip }, fn);
};

describe('device limits', () => {
  let gpu: Gpu;
  before(async () => {
    if (!skip) gpu = await Gpu.open();
  });
  after(async () => {
    await gpu?.dispose();
  });

  test('cuMemcpyDtoD is timed between events and copies the buffer', async () => {
    const source = await gpu.alloc('uint32', 1 << 20);
    const destination = await gpu.alloc('uint32', 1 << 20);
    await source.fillRandom({ distribution: 'integers', min: 0, max: 1_000_000, seed: 3 });
    await destination.fill(0);
    const stats = await gpu.benchmarkCopy(destination, source, { warmup: 1, iterations: 5 });
    assert.equal(stats.samplesMs.length, 5);
    assert.ok(stats.medianMs > 0 && stats.medianMs < 100, `median ${stats.medianMs} ms`);
    assert.deepEqual(await destination.download(), await source.download());
    await assert.rejects(gpu.benchmarkCopy(destination, destination), /another DeviceBuffer/);
    await Promise.all([source.free(), destination.free()]);
  });

  test('the copy kernel copies every byte with every unroll, the tail of an odd length included', async () => {
    const vectors = (1 << 20) + 3;
    const program = await gpu.compile({ source: COPY_KERNEL_SOURCE, fileName: 'bandwidth_probe.cu', nameExpressions: COPY_SHAPES.unroll.map((u) => `copy_vectors<${u}>`) });
    const module = await gpu.loadModule(program);
    const source = await gpu.alloc('uint32', 4 * vectors);
    const destination = await gpu.alloc('uint32', 4 * vectors);
    await source.fillRandom({ distribution: 'integers', min: 0, max: 1_000_000, seed: 5 });
    const expected = await source.download();
    for (const unroll of COPY_SHAPES.unroll) {
      await destination.fill(0);
      await gpu.launch(await module.getKernel(`copy_vectors<${unroll}>`), { grid: gpu.device.multiprocessors * 2, block: 256 }, [destination, source, uint64(vectors)]);
      assert.deepEqual(await destination.download(), expected, `unroll ${unroll}`);
    }
    await Promise.all([source.free(), destination.free(), module.unload()]);
  });

  test('the copy kernel reaches at least 90 % of the driver\'s device-to-device copy', async () => {
    const m = await measureBandwidth(gpu);
    console.log(`# ${gpu.device.name}: copy kernel ${m.kernel.GBps.toFixed(0)} GB/s (unroll ${m.kernel.unroll}, block ${m.kernel.block}, grid ${m.kernel.grid}), cuMemcpyDtoD ${m.memcpy.GBps.toFixed(0)} GB/s: ${(100 * m.ratio).toFixed(1)}%`);
    if (process.env.OUT) {
      mkdirSync(process.env.OUT, { recursive: true });
      writeFileSync(join(process.env.OUT, 'bandwidth.json'), `${JSON.stringify({ device: gpu.device.name, ...m }, null, 2)}\n`);
    }
    assert.ok(m.bufferBytes >= 8 * gpu.device.l2CacheBytes || m.bufferBytes >= 512 << 20, `buffers of ${m.bufferBytes} bytes`);
    assert.ok(m.ratio >= 0.9, `the copy kernel reaches ${(100 * m.ratio).toFixed(1)}% of cuMemcpyDtoD`);
  });

  test('the backend states its limits: measured bandwidth and the FP32 formula', async () => {
    const backend = await GpuBackend.open();
    try {
      const limits = await backend.speedLimits();
      assert.equal(await backend.speedLimits(), limits, 'measured once');
      assert.ok(limits.bandwidthGBps > 0.9 * limits.memcpyGBps);
      assert.match(limits.bandwidthMethod, /copy kernel \(uint4/);
      assert.ok(limits.fp32GFlops === null || limits.fp32GFlops > 1000, `${limits.fp32GFlops} GFLOP/s`);
      console.log(`# limits: ${limits.bandwidthMethod}; FP32 ${limits.fp32Formula}`);
    } finally {
      await backend.dispose();
    }
  });
});
