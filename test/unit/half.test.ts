// float16 and bfloat16 on the host: bit-exact conversions (exhaustive where all 65536 patterns are cheap) and their
// typed arrays.
import { describe, expect, it } from 'vitest';
import { BFloat16Array, HalfArray, fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from '../../src/gpu/half';

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
});
