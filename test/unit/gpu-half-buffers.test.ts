// float16 and bfloat16 buffers and scalars through the real worker process, hosting the scripted test double
// test/support/fake-addon.cjs (no CUDA): uploads, downloads, fills and random fills keep the bit patterns, and a 16-bit
// float scalar reaches the addon as a uint16 bit pattern.
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BFloat16Array, Gpu, HalfArray, bfloat16, float16 } from '../../src/gpu/client';
import { fromFloat16Bits } from '../../src/gpu/half';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');

const opened: Gpu[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((g) => g.dispose()));
});

async function openFake(): Promise<Gpu> {
  const gpu = await Gpu.open({ env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON } });
  opened.push(gpu);
  return gpu;
}

describe('16-bit float buffers (real worker, fake addon)', () => {
  it('upload and download HalfArray and BFloat16Array bit for bit', async () => {
    const gpu = await openFake();
    const h = await gpu.alloc('float16', 4);
    await h.upload(HalfArray.fromNumbers([1, -2, 65504, 6e-8]));
    const back = await h.download();
    expect(back).toBeInstanceOf(HalfArray);
    expect([...back.toNumbers()]).toEqual([1, -2, 65504, 2 ** -24]);
    const b = await gpu.alloc('bfloat16', 2);
    await b.upload(BFloat16Array.fromNumbers([1.00390625, -0.5]));
    expect([...(await b.download())]).toEqual([0x3f80, 0xbf00]);
    // Raw bits in a plain Uint16Array are uint16 data, not float16.
    await expect(h.upload(new Uint16Array(4) as unknown as HalfArray)).rejects.toThrow('Expected a typed array of float16 for data but received Uint16Array(4)');
  });

  it('fill with the nearest pattern (NaN: the canonical one, the poison of pure outputs)', async () => {
    const gpu = await openFake();
    const h = await gpu.alloc('float16', 3);
    await h.fill(0.1);
    expect([...(await h.download())]).toEqual([0x2e66, 0x2e66, 0x2e66]);
    await h.fill(Number.NaN);
    expect([...(await h.download())]).toEqual([0x7e00, 0x7e00, 0x7e00]);
    const b = await gpu.alloc('bfloat16', 2);
    await b.fill(Number.NaN);
    expect([...(await b.download())]).toEqual([0x7fc0, 0x7fc0]);
    await expect(h.fill(70000)).rejects.toThrow('Expected a number within float16 range (|x| <= 65504) for value but received 70000');
  });

  it('fill at random in the worker, converting each float64 draw to the format', async () => {
    const gpu = await openFake();
    const h = await gpu.alloc('float16', 5000);
    await h.fillRandom({ distribution: 'integers', min: -2048, max: 2048, seed: 7 });
    const values = (await h.download()).toNumbers();
    expect(values.every((x) => Number.isInteger(x) && Math.abs(x) <= 2048)).toBe(true);
    expect(new Set(values).size).toBeGreaterThan(1000);
    const b = await gpu.alloc('bfloat16', 5000);
    await b.fillRandom({ distribution: 'uniform', min: -1, max: 1, seed: 7 });
    const uniform = (await b.download()).toNumbers();
    expect(uniform.every((x) => x >= -1 && x <= 1)).toBe(true);
    await expect(b.fillRandom({ distribution: 'integers', min: 0, max: 300 })).rejects.toThrow(/\|x\| <= 256 \(exact in bfloat16\)/);
  });

  it('passes a 16-bit float scalar to the addon as its uint16 bit pattern', async () => {
    const gpu = await openFake();
    const module = await gpu.loadModule(await gpu.compile({ source: '// fake kernels', nameExpressions: ['sleep'] }));
    const sleep = await module.getKernel('sleep');
    // The fake 'sleep' kernel waits as many milliseconds as its first argument's value: the pattern 0x00c8 is 200,
    // while the number it stands for (200 * 2^-24) would not wait at all.
    const started = performance.now();
    await gpu.launch(sleep, { grid: 1, block: 1 }, [float16(fromFloat16Bits(200))]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    await gpu.launch(sleep, { grid: 1, block: 1 }, [bfloat16(0)]);
    expect(() => float16(1e5)).toThrow(/within float16 range/);
  });
});
