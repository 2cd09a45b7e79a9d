// The test data of a check on the GPU and how outputs are judged: the default tolerances, the poison written into pure
// outputs, the seeds and contents of each input set, the device buffers of one set, and the host-side summary of a
// mismatch, and the inputs of a launch in a process of its own (profiled, or run under compute-sanitizer).
// gpu-backend.ts builds and compares them on the device.

import { dtypeBytes, isFloatDType, scalar, scalarBitPattern, valuesOf, type DeviceBuffer, type DType, type KernelArg } from '../../gpu/client';
import type { LaunchArg, LaunchBuffer, LaunchTarget } from '../../gpu/ncu/launch-request';
import type { HostArgument, OutputMismatch, TestData, Tolerance } from './backend';
import type { BufferInit, Distribution } from '../spec/input-spec';

/**
 * Default float tolerances: |out - ref| <= atol + rtol * |ref|, where atol = atolScale * max|ref| of that output.
 * The scale-aware absolute term lets values that cancel to nearly zero (a dot product of random signs) differ by the
 * rounding of the large terms they came from; rtol covers reordered sums (tiling, unrolling, FMA contraction) over
 * thousands of terms. Integers compare exactly.
 *
 * The 16-bit floats are usually computed in float32 and rounded once on output, by the reference as much as by the
 * kernel under test: half a unit in the last place is a relative 2^-11 = 4.9e-4 (float16) or 2^-8 = 3.9e-3 (bfloat16),
 * and where a reordered float32 result falls on the other side of a rounding boundary the two outputs differ by a whole
 * unit, up to 2^-10 = 9.8e-4 or 2^-7 = 7.8e-3 of the value. rtol is two such units (2e-3, 1.6e-2): a one-unit flip
 * plus the float32 reordering error passes, while a wrong result (an unscaled or unwritten element, a wrong index) is
 * off by far more. atolScale keeps float32's ratio to rtol (a tenth). Whatever the scale, atol is at least one unit of
 * the format's subnormals, which a one-unit flip of an output below the normal range (|x| < 6.1e-5 for float16) needs.
 */
export const DEFAULT_TOLERANCE: Record<'float16' | 'bfloat16' | 'float32' | 'float64', Tolerance> = {
  float16: { rtol: 2e-3, atolScale: 2e-4 },
  bfloat16: { rtol: 1.6e-2, atolScale: 1.6e-3 },
  float32: { rtol: 1e-4, atolScale: 1e-5 },
  float64: { rtol: 1e-9, atolScale: 1e-11 },
};

/** The smallest subnormal of each float dtype: one unit in the last place below the normal range. */
export const SMALLEST_SUBNORMAL: Record<keyof typeof DEFAULT_TOLERANCE, number> = {
  float16: 2 ** -24,
  bfloat16: 2 ** -133,
  float32: 2 ** -149,
  float64: Number.MIN_VALUE,
};

/** Poison written into pure outputs before every checked run: canonical NaN for floats, 0xA5 bytes for integers. */
export const POISON: Record<DType, number | bigint> = {
  int8: -91,
  uint8: 0xa5,
  int16: -23131,
  uint16: 0xa5a5,
  int32: -1515870811,
  uint32: 0xa5a5a5a5,
  int64: -6510615555426900571n,
  uint64: 0xa5a5a5a5a5a5a5a5n,
  float16: Number.NaN,
  bfloat16: Number.NaN,
  float32: Number.NaN,
  float64: Number.NaN,
};

const FIRST_BAD_SHOWN = 8;

export type NumericArray = ArrayBufferView & { length: number; [i: number]: number | bigint };

export interface BufferSlot {
  name: string;
  dtype: DType;
  length: number;
  output: boolean;
  buffer: DeviceBuffer;
  /** In/out buffers: the initial content, copied in before each run. */
  initial?: DeviceBuffer;
  expected?: DeviceBuffer;
  /** Inputs: fingerprint after generation (the kernel must leave it unchanged). */
  fingerprint?: bigint;
  tolerance?: { rtol: number; atol: number } | 'exact';
}

export interface InputSet {
  args: KernelArg[];
  buffers: BufferSlot[];
  /** `__constant__` symbol → its data in this set: an argument's buffer, or one of its own (`ownConstants`). */
  constants: Map<string, DeviceBuffer>;
  ownConstants: DeviceBuffer[];
}

/** The reference kernel misbehaves on the test data (a test that cannot be trusted). */
export class InvalidTestDataError extends Error {
  override readonly name = 'InvalidTestDataError';
}

/** Seeds that differ per input set and argument, so no two buffers share a sequence. */
export function mixSeed(seed: number, argIndex: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(argIndex + 1, 0xc2b2ae35)) >>> 0;
}

type InitWithSeed = (BufferInit & { seed?: number }) | { kind: 'upload'; data: ArrayBufferView };

/** How input set `s` of an argument is made: the spec's distribution with that set's seed, or for host data the
 * uploaded arrays (set 0) and a fresh draw over the same value range (set 1). */
export function initOf(arg: TestDataArgument, s: number, seed: number): InitWithSeed | undefined {
  if (arg.kind !== 'buffer') return undefined;
  if ('data' in arg) {
    if (arg.output && !arg.inOut) return undefined; // a pure output: poisoned before every run
    if (s === 0) return { kind: 'upload', data: arg.data };
    return { kind: 'random', distribution: rangeOf(arg), seed };
  }
  return arg.init && (arg.init.kind === 'random' ? { ...arg.init, seed } : arg.init);
}

type TestDataArgument = (TestData & { kind: 'spec' })['test']['arguments'][number] | HostArgument;

/** A distribution over the value range of host-given data, for the freshly drawn second input set. */
function rangeOf(arg: HostArgument & { kind: 'buffer' }): Distribution {
  const values = valuesOf(arg.dtype, arg.data as unknown as NumericArray);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = Number(values[i]);
    if (Number.isFinite(v)) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  if (min > max) [min, max] = [0, 1];
  if (isFloatDType(arg.dtype)) return { kind: 'uniform', min, max: max > min ? max : min + 1 };
  return { kind: 'integers', min: Math.trunc(min), max: Math.trunc(max) };
}

/** Unsigned views of a float output's elements, to tell the poison from a NaN the kernel wrote. */
const FLOAT_BITS: Record<2 | 4 | 8, new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayLike<number | bigint>> = {
  2: Uint16Array,
  4: Uint32Array,
  8: BigUint64Array,
};

/**
 * Counts, worst errors and the first differing elements of an output, computed on the host from both arrays (of
 * `dtype`: float16 and bfloat16 as their bit patterns, reported as the numbers they stand for).
 */
export function summarizeMismatch(
  name: string,
  dtype: DType,
  gotArray: NumericArray,
  wantArray: NumericArray,
  tolerance: { rtol: number; atol: number } | 'exact',
  mismatchesOnDevice?: number,
): OutputMismatch {
  const isFloat = isFloatDType(dtype);
  const poison = POISON[dtype];
  const got = valuesOf(dtype, gotArray);
  const want = valuesOf(dtype, wantArray);
  const gotBits = isFloat ? new FLOAT_BITS[dtypeBytes(dtype) as 2 | 4 | 8](gotArray.buffer as ArrayBuffer, gotArray.byteOffset, gotArray.length) : undefined;
  const poisonBits = isFloat ? scalarBitPattern(dtype, Number.NaN) : undefined;
  let mismatches = 0;
  let unwritten = 0;
  let nonFinite = 0;
  let maxAbsError = 0;
  let maxRelError = 0;
  const firstBad: OutputMismatch['firstBad'] = [];
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    let bad: boolean;
    if (!isFloat) {
      bad = g !== w;
      if (bad && g === (typeof g === 'bigint' ? BigInt(poison) : Number(poison))) unwritten++;
      if (bad) {
        const abs = Math.abs(Number(g) - Number(w));
        maxAbsError = Math.max(maxAbsError, abs);
        if (w !== 0 && w !== 0n) maxRelError = Math.max(maxRelError, abs / Math.abs(Number(w)));
      }
    } else {
      const gv = g as number;
      const wv = w as number;
      if (Number.isNaN(wv)) bad = !Number.isNaN(gv);
      else if (!Number.isFinite(wv)) bad = gv !== wv;
      else if (!Number.isFinite(gv)) {
        bad = true;
        if (BigInt(gotBits![i]!) === poisonBits) unwritten++;
        else nonFinite++;
      } else {
        const abs = Math.abs(gv - wv);
        const t = tolerance as { rtol: number; atol: number };
        bad = abs > t.atol + t.rtol * Math.abs(wv);
        if (bad) {
          maxAbsError = Math.max(maxAbsError, abs);
          if (wv !== 0) maxRelError = Math.max(maxRelError, abs / Math.abs(wv));
        }
      }
    }
    if (bad) {
      mismatches++;
      if (firstBad.length < FIRST_BAD_SHOWN) firstBad.push({ index: i, got: g, expected: w });
    }
  }
  return {
    name,
    elements: got.length,
    mismatches: Math.max(mismatches, mismatchesOnDevice ?? 0),
    unwritten,
    nonFinite,
    maxAbsError,
    maxRelError,
    firstBad,
    tolerance,
  };
}

/**
 * The inputs of a test as a launch in a process of its own makes them: the same distributions and the first input
 * set's seeds, the same fills, the constant memory; pure outputs zeroed, or (for compute-sanitizer's initcheck) left
 * as allocated, so that a kernel that reads an output it never wrote is caught.
 */
export function launchInputs(data: TestData, pureOutputs: 'zeroed' | 'uninitialized'): Pick<LaunchTarget, 'args' | 'constants'> {
  const unwritten = (dtype: DType, length: number): LaunchBuffer => (pureOutputs === 'uninitialized' ? { dtype, length, uninitialized: true } : { dtype, length });
  if (data.kind === 'host') {
    const args = data.arguments.map((a): LaunchArg => {
      if (a.kind === 'scalar') return scalar(a.dtype, a.value as never);
      // A pure output's contents do not matter to its kernel; an input's (and an in/out buffer's) are the user's.
      return a.output && !a.inOut ? unwritten(a.dtype, a.data.length) : { dtype: a.dtype, data: a.data as never };
    });
    return { args };
  }
  const seed = data.test.seed;
  const contents = (dtype: DType, length: number, init: BufferInit | undefined, seedIndex: number): LaunchBuffer => {
    if (!init) return unwritten(dtype, length);
    if (init.kind === 'fill') return { dtype, length, fill: init.value as never };
    const d = init.distribution;
    // The first input set's seed (the launched process draws its own numbers from the distribution).
    const drawSeed = mixSeed(seed, seedIndex);
    return {
      dtype,
      length,
      random:
        d.kind === 'uniform'
          ? { distribution: 'uniform', min: d.min, max: d.max, seed: drawSeed }
          : d.kind === 'normal'
            ? { distribution: 'normal', mean: d.mean, std: d.std, seed: drawSeed }
            : { distribution: 'integers', min: d.min, max: d.max, seed: drawSeed },
    };
  };
  const { arguments: entries, constants } = data.test;
  const args = entries.map((a, index): LaunchArg => (a.kind === 'scalar' ? scalar(a.dtype, a.value as never) : contents(a.dtype, a.length, a.init, index)));
  return {
    args,
    constants: constants.map((c, index) => {
      if (c.source.kind === 'own') return { symbol: c.symbol, data: contents(c.dtype, c.length, c.source.init, entries.length + index) };
      const name = c.source.name;
      return { symbol: c.symbol, data: args[entries.findIndex((a) => a.name === name)] as LaunchBuffer };
    }),
  };
}
