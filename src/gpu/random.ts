// Seeded random fills for device buffers, generated on the host (in the worker) and uploaded in chunks.
//
// Generator: xoshiro128** (Blackman & Vigna, 2018): 128-bit state, 32-bit outputs, fast in JavaScript because it only
// needs 32-bit integer operations (Math.imul, shifts). The 32-bit seed is expanded into the four state words with
// splitmix32. The sequence depends only on (seed, distribution, parameters, dtype), never on the chunk size, so a
// buffer filled twice with the same spec holds the same bytes: this is what lets the client re-create a buffer on a
// fresh worker from its recipe.

import { allocTypedArray, checkScalarValue, floatLimits, halfFormat, isFloatDType, type AnyTypedArray, type DType } from './dtype';
import { argumentError } from './errors';

export type RandomDistribution = 'uniform' | 'normal' | 'integers';

export interface RandomSpec {
  /**
   * uniform: floats in [min, max) (float dtypes; rounding to float32 or a 16-bit float can reach max);
   * normal: floats with mean and std (float dtypes; Marsaglia's polar method);
   * integers: whole numbers in [min, max], both inclusive and required (any dtype; exact values only).
   */
  distribution: RandomDistribution;
  /** uniform: default 0. integers: required. */
  min?: number | bigint;
  /** uniform: default 1. integers: required. */
  max?: number | bigint;
  /** normal: default 0. */
  mean?: number;
  /** normal: default 1. */
  std?: number;
  /** 32-bit unsigned seed; default 0. */
  seed?: number;
}

export type NormalizedRandomSpec =
  | { distribution: 'uniform'; min: number; max: number; seed: number }
  | { distribution: 'normal'; mean: number; std: number; seed: number }
  | { distribution: 'integers'; min: bigint; max: bigint; seed: number };

function finiteNumber(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw argumentError(name, 'a finite number', value);
  return value;
}

/** Validates a spec for a buffer of `dtype` and fills in the defaults. */
export function checkRandomSpec(dtype: DType, spec: unknown, name = 'spec'): NormalizedRandomSpec {
  if (typeof spec !== 'object' || spec === null) throw argumentError(name, 'a random fill spec object', spec);
  const s = spec as Record<string, unknown>;
  const seed = s.seed === undefined ? 0 : s.seed;
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw argumentError(`${name}.seed`, 'an integer in [0, 4294967295]', seed);
  const float = isFloatDType(dtype);
  switch (s.distribution) {
    case 'uniform': {
      if (!float) throw argumentError(`${name}.distribution`, `'integers' for the integer dtype ${dtype}`, s.distribution);
      const min = finiteNumber(`${name}.min`, s.min, 0);
      const max = finiteNumber(`${name}.max`, s.max, 1);
      if (!(min < max)) throw argumentError(`${name}.max`, `a number greater than min (${min})`, max);
      checkScalarValue(dtype, min, `${name}.min`);
      checkScalarValue(dtype, max, `${name}.max`);
      return { distribution: 'uniform', min, max, seed };
    }
    case 'normal': {
      if (!float) throw argumentError(`${name}.distribution`, `'integers' for the integer dtype ${dtype}`, s.distribution);
      const mean = finiteNumber(`${name}.mean`, s.mean, 0);
      const std = finiteNumber(`${name}.std`, s.std, 1);
      if (std < 0) throw argumentError(`${name}.std`, 'a non-negative number', std);
      return { distribution: 'normal', mean, std, seed };
    }
    case 'integers': {
      if (s.min === undefined) throw argumentError(`${name}.min`, "an integer (required for 'integers')", s.min);
      if (s.max === undefined) throw argumentError(`${name}.max`, "an integer (required for 'integers')", s.max);
      const [min, max] = [checkIntegerBound(dtype, s.min, `${name}.min`), checkIntegerBound(dtype, s.max, `${name}.max`)];
      if (min > max) throw argumentError(`${name}.max`, `an integer >= min (${min})`, s.max);
      return { distribution: 'integers', min, max, seed };
    }
    default:
      throw argumentError(`${name}.distribution`, "'uniform', 'normal' or 'integers'", s.distribution);
  }
}

/**
 * Integer bounds must be exactly representable: in range for integer dtypes, |x| <= 2048 (float16), 256 (bfloat16),
 * 2^24 (float32) or 2^53 - 1 (float64).
 */
function checkIntegerBound(dtype: DType, value: unknown, name: string): bigint {
  if (isFloatDType(dtype)) {
    const limit = floatLimits(dtype).exactIntegers;
    const n = typeof value === 'bigint' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || Math.abs(n) > limit)
      throw argumentError(name, `an integer with |x| <= ${limit} (exact in ${dtype})`, value);
    return BigInt(n);
  }
  return BigInt(checkScalarValue(dtype, value, name));
}

function splitmix32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x9e3779b9) | 0;
    let t = a ^ (a >>> 16);
    t = Math.imul(t, 0x21f0aaad);
    t ^= t >>> 15;
    t = Math.imul(t, 0x735a2d97);
    return (t ^ (t >>> 15)) >>> 0;
  };
}

export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    const next = splitmix32(seed);
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the all-zero state is a fixed point
  }

  /** A generator with a given raw state (for known-answer tests against the reference implementation). */
  static fromState(state: readonly [number, number, number, number]): Xoshiro128 {
    const g = new Xoshiro128(0);
    [g.s0, g.s1, g.s2, g.s3] = state.map((w) => w >>> 0) as [number, number, number, number];
    return g;
  }

  /** The next 32-bit output, as an unsigned number. */
  nextUint32(): number {
    const s1x5 = Math.imul(this.s1, 5);
    const result = Math.imul((s1x5 << 7) | (s1x5 >>> 25), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  nextFloat53(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }
}

/** Draws values of one spec; keeps the Box–Muller spare so the sequence is independent of chunking. */
class Sampler {
  private readonly rng: Xoshiro128;
  private spare: number | null = null;

  constructor(private readonly spec: NormalizedRandomSpec) {
    this.rng = new Xoshiro128(spec.seed);
  }

  float(): number {
    const spec = this.spec;
    if (spec.distribution === 'uniform') return spec.min + this.rng.nextFloat53() * (spec.max - spec.min);
    if (spec.distribution === 'normal') return spec.mean + spec.std * this.standardNormal();
    return Number(this.integer());
  }

  /** Marsaglia's polar method (no trigonometry; two values per accepted pair, from 32-bit uniforms). */
  private standardNormal(): number {
    if (this.spare !== null) {
      const z = this.spare;
      this.spare = null;
      return z;
    }
    for (;;) {
      const u = this.rng.nextUint32() * 4.656612873077393e-10 - 1; // [-1, 1)
      const v = this.rng.nextUint32() * 4.656612873077393e-10 - 1;
      const s = u * u + v * v;
      if (s >= 1 || s === 0) continue;
      const f = Math.sqrt((-2 * Math.log(s)) / s);
      this.spare = v * f;
      return u * f;
    }
  }

  /** Unbiased integer in [min, max] by rejection sampling. */
  integer(): bigint {
    const spec = this.spec as { min: bigint; max: bigint };
    const range = spec.max - spec.min + 1n;
    if (range <= 0x100000000n) {
      const r = Number(range);
      const limit = 0x100000000 - (0x100000000 % r);
      let x = this.rng.nextUint32();
      while (x >= limit) x = this.rng.nextUint32();
      return spec.min + BigInt(x % r);
    }
    const limit = 2n ** 64n - ((2n ** 64n) % range);
    for (;;) {
      const x = (BigInt(this.rng.nextUint32()) << 32n) | BigInt(this.rng.nextUint32());
      if (x < limit) return spec.min + (x % range);
    }
  }

  /** Uniform in [min, min + span) from the top 24 bits of one output (float32's precision). */
  uniform24(min: number, span: number): number {
    return min + (this.rng.nextUint32() >>> 8) * (span / 16777216);
  }

  /** Small integers as numbers, without bigint arithmetic per element (the common case). */
  smallInteger(min: number, range: number, limit: number): number {
    let x = this.rng.nextUint32();
    while (x >= limit) x = this.rng.nextUint32();
    return min + (x % range);
  }
}

/**
 * Generates `count` values of `dtype` and hands them over in chunks of at most `chunkElements`, each with its element
 * offset, so that a large buffer never needs one host array of its full size.
 */
export function generateRandom(
  dtype: DType,
  count: number,
  spec: NormalizedRandomSpec,
  onChunk: (chunk: AnyTypedArray, elementOffset: number) => void,
  chunkElements = 1 << 20,
): void {
  if (!Number.isSafeInteger(count) || count < 0) throw argumentError('count', 'a non-negative integer', count);
  if (!Number.isSafeInteger(chunkElements) || chunkElements <= 0)
    throw argumentError('chunkElements', 'a positive integer', chunkElements);
  const sampler = new Sampler(spec);
  const is64 = dtype === 'int64' || dtype === 'uint64';
  const smallRange =
    spec.distribution === 'integers' && spec.max - spec.min + 1n <= 0x100000000n && !is64
      ? { min: Number(spec.min), range: Number(spec.max - spec.min + 1n) }
      : null;
  const limit = smallRange ? 0x100000000 - (0x100000000 % smallRange.range) : 0;
  // float32 keeps 24 bits of a uniform draw: one 32-bit output per element instead of two.
  const uniform32 = dtype === 'float32' && spec.distribution === 'uniform' ? { min: spec.min, span: spec.max - spec.min } : null;
  // The 16-bit floats round every draw (integers included) from the float64 to their bit pattern.
  const toBits = halfFormat(dtype)?.toBits;
  for (let offset = 0; offset < count; offset += chunkElements) {
    const n = Math.min(chunkElements, count - offset);
    const chunk = allocTypedArray(dtype, n);
    if (is64) {
      const big = chunk as BigInt64Array | BigUint64Array;
      for (let i = 0; i < n; i++) big[i] = sampler.integer();
    } else if (toBits) {
      const bits = chunk as Uint16Array;
      for (let i = 0; i < n; i++) bits[i] = toBits(sampler.float());
    } else if (smallRange) {
      const arr = chunk as Exclude<AnyTypedArray, BigInt64Array | BigUint64Array>;
      for (let i = 0; i < n; i++) arr[i] = sampler.smallInteger(smallRange.min, smallRange.range, limit);
    } else if (uniform32) {
      const arr = chunk as Float32Array;
      for (let i = 0; i < n; i++) arr[i] = sampler.uniform24(uniform32.min, uniform32.span);
    } else {
      const arr = chunk as Exclude<AnyTypedArray, BigInt64Array | BigUint64Array>;
      for (let i = 0; i < n; i++) arr[i] = sampler.float();
    }
    onChunk(chunk, offset);
  }
}
