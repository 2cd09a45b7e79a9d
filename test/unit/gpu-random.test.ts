// The seeded generator behind DeviceBuffer.fillRandom: reference outputs, determinism, ranges and spec checks.
import { describe, expect, it } from 'vitest';
import type { AnyTypedArray, DType } from '../../src/gpu/dtype';
import { Xoshiro128, checkRandomSpec, generateRandom, type RandomSpec } from '../../src/gpu/random';

function generate(dtype: DType, count: number, spec: RandomSpec, chunk?: number): number[] {
  const out: number[] = [];
  generateRandom(
    dtype,
    count,
    checkRandomSpec(dtype, spec),
    (c: AnyTypedArray) => {
      for (const v of c) out.push(Number(v));
    },
    chunk,
  );
  return out;
}

describe('xoshiro128**', () => {
  it('matches the reference algorithm from state [1, 2, 3, 4]', () => {
    // Worked by hand from the reference C code: rotl(s1 * 5, 7) * 9, then the state update.
    const g = Xoshiro128.fromState([1, 2, 3, 4]);
    expect([g.nextUint32(), g.nextUint32(), g.nextUint32()]).toEqual([11520, 0, 5927040]);
  });

  it('is deterministic per seed and different across seeds', () => {
    const a = new Xoshiro128(42);
    const b = new Xoshiro128(42);
    const c = new Xoshiro128(43);
    const xs = Array.from({ length: 8 }, () => a.nextUint32());
    expect(Array.from({ length: 8 }, () => b.nextUint32())).toEqual(xs);
    expect(Array.from({ length: 8 }, () => c.nextUint32())).not.toEqual(xs);
  });
});

describe('generateRandom', () => {
  it('gives the same sequence whatever the chunk size (a replayed buffer holds the same bytes)', () => {
    for (const spec of [{ distribution: 'normal', seed: 3 }, { distribution: 'uniform', seed: 3 }] as const) {
      expect(generate('float64', 1001, spec, 7)).toEqual(generate('float64', 1001, spec, 1000));
    }
  });

  it('draws uniform floats in [min, max) with the right mean', () => {
    const xs = generate('float32', 100_000, { distribution: 'uniform', min: -2, max: 6, seed: 1 });
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(-2);
    expect(Math.max(...xs)).toBeLessThanOrEqual(6);
    expect(xs.reduce((a, b) => a + b, 0) / xs.length).toBeCloseTo(2, 1);
  });

  it('draws normal floats with the asked mean and standard deviation', () => {
    const xs = generate('float64', 100_000, { distribution: 'normal', mean: 10, std: 2, seed: 9 });
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const std = Math.sqrt(xs.reduce((a, v) => a + (v - mean) ** 2, 0) / (xs.length - 1));
    expect(mean).toBeCloseTo(10, 1);
    expect(std).toBeCloseTo(2, 1);
  });

  it('draws integers in [min, max] inclusive, reaching both ends', () => {
    const xs = generate('int8', 10_000, { distribution: 'integers', min: -3, max: 3, seed: 4 });
    expect(new Set(xs)).toEqual(new Set([-3, -2, -1, 0, 1, 2, 3]));
    const big: bigint[] = [];
    generateRandom('uint64', 1000, checkRandomSpec('uint64', { distribution: 'integers', min: 0n, max: 2n ** 64n - 1n, seed: 1 }), (c) => {
      for (const v of c as BigUint64Array) big.push(v);
    });
    expect(big.some((v) => v > 2n ** 63n)).toBe(true);
  });

  it('checks the spec against the dtype', () => {
    expect(() => checkRandomSpec('int32', { distribution: 'uniform' })).toThrow(
      "Expected 'integers' for the integer dtype int32 for spec.distribution but received \"uniform\"",
    );
    expect(() => checkRandomSpec('int32', { distribution: 'integers', max: 3 })).toThrow(/spec\.min/);
    expect(() => checkRandomSpec('uint8', { distribution: 'integers', min: 0, max: 256 })).toThrow(/\(uint8\) for spec\.max/);
    expect(() => checkRandomSpec('float32', { distribution: 'integers', min: 0, max: 2 ** 25 })).toThrow(/exact in float32/);
    expect(() => checkRandomSpec('float32', { distribution: 'uniform', min: 1, max: 1 })).toThrow(/greater than min/);
    expect(() => checkRandomSpec('float32', { distribution: 'normal', std: -1 })).toThrow(
      'Expected a non-negative number for spec.std but received -1',
    );
    expect(() => checkRandomSpec('float32', { distribution: 'uniform', seed: -1 })).toThrow(/spec\.seed/);
    expect(checkRandomSpec('float32', { distribution: 'uniform' })).toEqual({ distribution: 'uniform', min: 0, max: 1, seed: 0 });
  });
});
