// float16 and bfloat16 on the host: bit-exact conversions (exhaustive where all 65536 patterns are cheap), their typed
// arrays, scalars and random fills.
import { describe, expect, it } from 'vitest';
import {
  allocTypedArray,
  bfloat16,
  checkScalarValue,
  float16,
  isTypedArrayOf,
  nativeScalar,
  scalarBitPattern,
  valuesOf,
  viewBytesAs,
} from '../../src/gpu/dtype';
import { BFloat16Array, HalfArray, fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from '../../src/gpu/half';
import { checkRandomSpec, generateRandom, type RandomSpec } from '../../src/gpu/random';

const FORMATS = [
  { name: 'float16', toBits: toFloat16Bits, toNumber: fromFloat16Bits, nan: 0x7e00, infinity: 0x7c00 },
  { name: 'bfloat16', toBits: toBFloat16Bits, toNumber: fromBFloat16Bits, nan: 0x7fc0, infinity: 0x7f80 },
] as const;

const isNaNBits = (infinity: number, bits: number) => (bits & 0x7fff) > infinity;

describe.each(FORMATS)('$name conversions', ({ toBits, toNumber, nan, infinity }) => {
  it('round-trips every one of the 65536 bit patterns (NaNs become the canonical NaN)', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = toNumber(bits);
      if (isNaNBits(infinity, bits)) {
        expect(value).toBeNaN();
        expect(toBits(value)).toBe(nan);
      } else if (toBits(value) !== bits) {
        expect.fail(`0x${bits.toString(16)} → ${value} → 0x${toBits(value).toString(16)}`);
      }
    }
  });

  it('rounds every midpoint between neighbours to the even one, and anything off the midpoint to the nearer one', () => {
    // Neighbours in magnitude: 0x0000 .. largest finite, then infinity (whose "midpoint" is the overflow threshold).
    for (let bits = 0; bits < infinity; bits++) {
      const [low, high] = [toNumber(bits), bits + 1 === infinity ? 2 * toNumber(bits) - toNumber(bits - 1) : toNumber(bits + 1)];
      const mid = (low + high) / 2;
      const even = bits % 2 === 0 ? bits : bits + 1;
      const above = mid + (high - low) / 1024;
      const below = mid - (high - low) / 1024;
      const got = [toBits(mid), toBits(above), toBits(below), toBits(-mid)];
      const want = [even, bits + 1, bits, 0x8000 | even];
      if (got.join() !== want.join()) expect.fail(`around 0x${bits.toString(16)}: got ${got} want ${want}`);
    }
  });

  it('keeps signed zeros and infinities, and sends NaN to the canonical quiet NaN', () => {
    expect(toBits(0)).toBe(0);
    expect(toBits(-0)).toBe(0x8000);
    expect(Object.is(toNumber(0x8000), -0)).toBe(true);
    expect(toBits(Infinity)).toBe(infinity);
    expect(toBits(-Infinity)).toBe(0x8000 | infinity);
    expect(toBits(Number.NaN)).toBe(nan);
    expect(toNumber(infinity)).toBe(Infinity);
    expect(toBits(Number.MIN_VALUE)).toBe(0);
    expect(toBits(-Number.MAX_VALUE)).toBe(0x8000 | infinity);
  });
});

describe('float16 known values', () => {
  it('encodes and decodes the landmarks of the format', () => {
    expect(toFloat16Bits(1)).toBe(0x3c00);
    expect(toFloat16Bits(-2)).toBe(0xc000);
    expect(toFloat16Bits(65504)).toBe(0x7bff);
    expect(toFloat16Bits(65519.99)).toBe(0x7bff);
    expect(toFloat16Bits(65520)).toBe(0x7c00); // the midpoint to the next power of two rounds to even: infinity
    expect(toFloat16Bits(6e-8)).toBe(0x0001); // nearest subnormal 2^-24 = 5.96e-8
    expect(toFloat16Bits(2 ** -25)).toBe(0x0000); // the tie between 0 and 2^-24 goes to zero
    expect(toFloat16Bits(2 ** -25 * 1.000001)).toBe(0x0001);
    expect(toFloat16Bits(2 ** -14)).toBe(0x0400); // the smallest normal
    expect(toFloat16Bits(0.1)).toBe(0x2e66);
    expect(toFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // a tie, to even
    expect(toFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(fromFloat16Bits(0x7bff)).toBe(65504);
    expect(fromFloat16Bits(0x0001)).toBe(2 ** -24);
    expect(fromFloat16Bits(0x2e66)).toBe(0.0999755859375);
    expect(fromFloat16Bits(0x7e00)).toBeNaN();
  });

  it('rounds from the float64 once, not through float32 (which would round a tie that is not one)', () => {
    const justAboveTie = 1 + 2 ** -11 + 2 ** -40; // float32 rounds it to the tie 1 + 2^-11, float16 then to 1
    expect(Math.fround(justAboveTie)).toBe(1 + 2 ** -11);
    expect(toFloat16Bits(justAboveTie)).toBe(0x3c01);
  });
});

describe('bfloat16 known values', () => {
  it('encodes and decodes the landmarks of the format', () => {
    expect(toBFloat16Bits(1)).toBe(0x3f80);
    expect(toBFloat16Bits(1.00390625)).toBe(0x3f80); // 1 + 2^-8 is a tie: to the even 1
    expect(toBFloat16Bits(1.01171875)).toBe(0x3f82); // 1 + 3 * 2^-8: to the even 1 + 2^-6
    expect(toBFloat16Bits(3.3895313892515355e38)).toBe(0x7f7f);
    expect(fromBFloat16Bits(0x7f7f)).toBe(3.3895313892515355e38);
    expect(toBFloat16Bits(3.4e38)).toBe(0x7f80);
    expect(toBFloat16Bits(-2)).toBe(0xc000);
    expect(toBFloat16Bits(2 ** -133)).toBe(0x0001);
    expect(toBFloat16Bits(2 ** -126)).toBe(0x0080);
    expect(fromBFloat16Bits(0x7fc0)).toBeNaN();
  });

  it('agrees with rounding the float32 bits to nearest even, the way the device helpers do it', () => {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    let seed = 12345;
    for (let i = 0; i < 200_000; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      u[0] = seed;
      if (Number.isNaN(f[0])) continue;
      const viaBits = ((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16) & 0xffff;
      if (toBFloat16Bits(f[0]!) !== viaBits) expect.fail(`0x${u[0]!.toString(16)}: ${toBFloat16Bits(f[0]!)} vs ${viaBits}`);
    }
  });
});

describe('HalfArray and BFloat16Array', () => {
  it('hold bit patterns, convert from and to numbers, and read single elements', () => {
    const h = HalfArray.fromNumbers([1, -2, 65520, 0.1]);
    expect(h).toBeInstanceOf(Uint16Array);
    expect([...h]).toEqual([0x3c00, 0xc000, 0x7c00, 0x2e66]);
    expect([...h.toNumbers()]).toEqual([1, -2, Infinity, 0.0999755859375]);
    expect(h.numberAt(-1)).toBe(0.0999755859375);
    expect(h.numberAt(4)).toBeUndefined();
    const b = BFloat16Array.fromNumbers(new Float32Array([1.00390625, 3]));
    expect([...b]).toEqual([0x3f80, 0x4040]);
    expect(b.numberAt(1)).toBe(3);
    // Derived arrays keep their class, so their bits keep their meaning.
    expect(h.slice(1)).toBeInstanceOf(HalfArray);
    expect(b.subarray(1)).toBeInstanceOf(BFloat16Array);
  });

  it('are told apart from uint16 data and from each other', () => {
    const h = new HalfArray(2);
    expect(isTypedArrayOf('float16', h)).toBe(true);
    expect(isTypedArrayOf('uint16', h)).toBe(false);
    expect(isTypedArrayOf('bfloat16', h)).toBe(false);
    expect(isTypedArrayOf('float16', new Uint16Array(2))).toBe(false);
    expect(isTypedArrayOf('uint16', new Uint16Array(2))).toBe(true);
    expect(allocTypedArray('bfloat16', 3)).toBeInstanceOf(BFloat16Array);
    expect(viewBytesAs('float16', new Uint8Array([0x00, 0x3c, 0x00, 0xc0]))).toEqual(HalfArray.fromNumbers([1, -2]));
    expect(Array.from(valuesOf('bfloat16', BFloat16Array.fromNumbers([0.5, -4])))).toEqual([0.5, -4]);
    expect(valuesOf('uint16', new Uint16Array([0x3c00]))[0]).toBe(0x3c00);
  });
});

describe('16-bit float scalars', () => {
  it('take numbers within the finite range and travel to the addon as uint16 bit patterns', () => {
    expect(float16(0.1)).toEqual({ kind: 'scalar', dtype: 'float16', value: 0.1 });
    expect(nativeScalar('float16', 0.1)).toEqual({ dtype: 'uint16', value: 0x2e66 });
    expect(nativeScalar('bfloat16', bfloat16(-3).value)).toEqual({ dtype: 'uint16', value: 0xc040 });
    expect(nativeScalar('float32', 0.1)).toEqual({ dtype: 'float32', value: 0.1 });
    expect(scalarBitPattern('float16', Number.NaN)).toBe(0x7e00n);
    expect(scalarBitPattern('bfloat16', Number.NaN)).toBe(0x7fc0n);
    expect(checkScalarValue('float16', -Infinity, 'x')).toBe(-Infinity);
    expect(() => float16(65536)).toThrow('Expected a number within float16 range (|x| <= 65504) for float16 scalar but received 65536');
    expect(() => bfloat16(1e39)).toThrow(/within bfloat16 range \(\|x\| <= 3\.3895313892515355e\+38\)/);
    expect(() => checkScalarValue('float16', 1n, 'alpha')).toThrow('Expected a number (float16) for alpha but received 1n');
  });
});

describe('random fills of 16-bit floats', () => {
  function draw(dtype: 'float16' | 'bfloat16', spec: RandomSpec): number[] {
    const out: number[] = [];
    generateRandom(dtype, 20_000, checkRandomSpec(dtype, spec), (chunk) => {
      expect(chunk).toBeInstanceOf(dtype === 'float16' ? HalfArray : BFloat16Array);
      out.push(...(chunk as HalfArray).toNumbers());
    }, 4096);
    return out;
  }

  it('draws as float64 and rounds to the format: uniform, normal and exact integers', () => {
    const uniform = draw('float16', { distribution: 'uniform', min: -2, max: 6, seed: 1 });
    expect(Math.min(...uniform)).toBeGreaterThanOrEqual(-2);
    expect(Math.max(...uniform)).toBeLessThanOrEqual(6);
    expect(uniform.reduce((a, b) => a + b, 0) / uniform.length).toBeCloseTo(2, 1);
    const normal = draw('bfloat16', { distribution: 'normal', mean: 10, std: 2, seed: 2 });
    expect(normal.reduce((a, b) => a + b, 0) / normal.length).toBeCloseTo(10, 0);
    const integers = draw('float16', { distribution: 'integers', min: -2048, max: 2048, seed: 3 });
    expect(integers.every((x) => Number.isInteger(x) && Math.abs(x) <= 2048)).toBe(true);
    expect(new Set(integers).size).toBeGreaterThan(3000);
  });

  it('refuses bounds beyond the format: integers that are not exact, uniform bounds that overflow', () => {
    expect(() => checkRandomSpec('float16', { distribution: 'integers', min: 0, max: 2049 })).toThrow(
      'Expected an integer with |x| <= 2048 (exact in float16) for spec.max but received 2049',
    );
    expect(() => checkRandomSpec('bfloat16', { distribution: 'integers', min: -257, max: 0 })).toThrow(/\|x\| <= 256 \(exact in bfloat16\) for spec\.min/);
    expect(() => checkRandomSpec('float16', { distribution: 'uniform', min: 0, max: 1e5 })).toThrow(/within float16 range .* for spec\.max/);
    expect(checkRandomSpec('bfloat16', { distribution: 'integers', min: -256, max: 256 })).toMatchObject({ min: -256n, max: 256n });
  });
});
