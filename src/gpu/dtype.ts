// Element types: sizes, typed arrays, range checks and bit patterns. Values are checked against the dtype's range and
// rejected when they do not fit (never wrapped or clamped), because a silently wrapped scalar is a wrong kernel result.

import { argumentError } from './errors';
import {
  BFLOAT16_MAX,
  BFloat16Array,
  FLOAT16_MAX,
  HalfArray,
  fromBFloat16Bits,
  fromFloat16Bits,
  toBFloat16Bits,
  toFloat16Bits,
} from './half';
import type { NativeDType } from './native-types';

export { BFloat16Array, HalfArray } from './half';

/** Element types of device buffers and kernel scalar arguments: the addon's, and the 16-bit floats it sees as uint16. */
export type DType = NativeDType | 'float16' | 'bfloat16';

export const DTYPES: readonly DType[] = [
  'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float16', 'bfloat16', 'float32', 'float64',
];

export interface TypedArrayMap {
  int8: Int8Array;
  uint8: Uint8Array;
  int16: Int16Array;
  uint16: Uint16Array;
  int32: Int32Array;
  uint32: Uint32Array;
  int64: BigInt64Array;
  uint64: BigUint64Array;
  float16: HalfArray;
  bfloat16: BFloat16Array;
  float32: Float32Array;
  float64: Float64Array;
}
export type TypedArrayOf<D extends DType> = TypedArrayMap[D];
export type AnyTypedArray = TypedArrayMap[DType];

/** What a scalar of this dtype accepts: 64-bit integers take a bigint (or a safe-integer number). */
export type ScalarValueOf<D extends DType> = D extends 'int64' | 'uint64' ? bigint | number : number;

interface TypedArrayCtor {
  new (length: number): AnyTypedArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): AnyTypedArray;
  readonly BYTES_PER_ELEMENT: number;
}

interface DTypeInfo {
  bytes: 1 | 2 | 4 | 8;
  kind: 'int' | 'float';
  /** Integers: the range. */
  min: bigint;
  max: bigint;
  /** Floats: the largest finite value, and the largest n such that every integer in [-n, n] is exact. */
  maxFinite: number;
  exactIntegers: number;
  ctor: TypedArrayCtor;
}

const int = (bytes: 1 | 2 | 4 | 8, min: bigint, max: bigint, ctor: TypedArrayCtor): DTypeInfo =>
  ({ bytes, kind: 'int', min, max, maxFinite: 0, exactIntegers: 0, ctor });
const float = (bytes: 2 | 4 | 8, maxFinite: number, exactIntegers: number, ctor: TypedArrayCtor): DTypeInfo =>
  ({ bytes, kind: 'float', min: 0n, max: 0n, maxFinite, exactIntegers, ctor });

const INFO: Record<DType, DTypeInfo> = {
  int8: int(1, -(2n ** 7n), 2n ** 7n - 1n, Int8Array),
  uint8: int(1, 0n, 2n ** 8n - 1n, Uint8Array),
  int16: int(2, -(2n ** 15n), 2n ** 15n - 1n, Int16Array),
  uint16: int(2, 0n, 2n ** 16n - 1n, Uint16Array),
  int32: int(4, -(2n ** 31n), 2n ** 31n - 1n, Int32Array),
  uint32: int(4, 0n, 2n ** 32n - 1n, Uint32Array),
  int64: int(8, -(2n ** 63n), 2n ** 63n - 1n, BigInt64Array),
  uint64: int(8, 0n, 2n ** 64n - 1n, BigUint64Array),
  float16: float(2, FLOAT16_MAX, 2 ** 11, HalfArray),
  bfloat16: float(2, BFLOAT16_MAX, 2 ** 8, BFloat16Array),
  float32: float(4, 3.4028234663852886e38, 2 ** 24, Float32Array),
  float64: float(8, Number.MAX_VALUE, Number.MAX_SAFE_INTEGER, Float64Array),
};

/** Number ↔ bit pattern of a dtype whose host arrays hold raw 16-bit patterns. */
export interface HalfFormat {
  toBits(value: number): number;
  toNumber(bits: number): number;
}

const HALF_FORMATS: Partial<Record<DType, HalfFormat>> = {
  float16: { toBits: toFloat16Bits, toNumber: fromFloat16Bits },
  bfloat16: { toBits: toBFloat16Bits, toNumber: fromBFloat16Bits },
};

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(INFO, value);
}

export function checkDType(name: string, value: unknown): DType {
  if (!isDType(value)) throw argumentError(name, `one of ${DTYPES.join(', ')}`, value);
  return value;
}

export function dtypeBytes(dtype: DType): 1 | 2 | 4 | 8 {
  return INFO[dtype].bytes;
}

export function isFloatDType(dtype: DType): boolean {
  return INFO[dtype].kind === 'float';
}

/** Smallest and largest value of an integer dtype. */
export function integerRange(dtype: DType): { min: bigint; max: bigint } {
  const i = INFO[dtype];
  return { min: i.min, max: i.max };
}

/** Of a float dtype: the largest finite value, and the bound within which every integer is exact (2^24 for float32). */
export function floatLimits(dtype: DType): { maxFinite: number; exactIntegers: number } {
  const i = INFO[dtype];
  return { maxFinite: i.maxFinite, exactIntegers: i.exactIntegers };
}

/** The conversions of float16 and bfloat16, whose host arrays hold bit patterns; undefined for the other dtypes. */
export function halfFormat(dtype: DType): HalfFormat | undefined {
  return HALF_FORMATS[dtype];
}

/** The elements of an array of `dtype` as numbers: float16 and bfloat16 bit patterns decoded, other arrays as they are. */
export function valuesOf(dtype: DType, array: ArrayLike<number | bigint>): ArrayLike<number | bigint> {
  const format = HALF_FORMATS[dtype];
  return format ? Float32Array.from(array as ArrayLike<number>, format.toNumber) : array;
}

export function allocTypedArray<D extends DType>(dtype: D, length: number): TypedArrayOf<D> {
  return new INFO[dtype].ctor(length) as TypedArrayOf<D>;
}

export function isTypedArrayOf<D extends DType>(dtype: D, value: unknown): value is TypedArrayOf<D> {
  // HalfArray and BFloat16Array are Uint16Arrays too, but their bits are no uint16 data.
  if (dtype === 'uint16' && (value instanceof HalfArray || value instanceof BFloat16Array)) return false;
  return value instanceof INFO[dtype].ctor;
}

/** A typed array of `dtype` over raw bytes; a view when aligned, else a copy (views need aligned offsets). */
export function viewBytesAs<D extends DType>(dtype: D, bytes: Uint8Array): TypedArrayOf<D> {
  const { ctor, bytes: size } = INFO[dtype];
  if (bytes.byteLength % size !== 0) throw argumentError('bytes', `a multiple of ${size} bytes`, bytes.byteLength);
  if (bytes.byteOffset % size === 0) return new ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / size) as TypedArrayOf<D>;
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new ctor(copy.buffer, 0, bytes.byteLength / size) as TypedArrayOf<D>;
}

/**
 * Checks that `value` fits `dtype` and returns it as a number, or a bigint for 64-bit integers (nativeScalar turns it
 * into what the addon takes). Integers must be whole and in range; floats reject finite values beyond their largest
 * finite one (they would become Infinity). NaN and ±Infinity are accepted for floats (outputs are poisoned with NaN
 * before checked runs).
 */
export function checkScalarValue(dtype: DType, value: unknown, name: string): number | bigint {
  const info = INFO[dtype];
  if (info.kind === 'float') {
    if (typeof value !== 'number') throw argumentError(name, `a number (${dtype})`, value);
    if (Number.isFinite(value) && Math.abs(value) > info.maxFinite)
      throw argumentError(name, `a number within ${dtype} range (|x| <= ${info.maxFinite})`, value);
    return value;
  }
  const range = `an integer in [${info.min}, ${info.max}] (${dtype})`;
  let big: bigint;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) big = BigInt(value);
  else if (typeof value === 'number' && Number.isInteger(value) && info.bytes === 8)
    throw argumentError(name, `a bigint for ${dtype} values beyond 2^53`, value);
  else throw argumentError(name, range, value);
  if (big < info.min || big > info.max) throw argumentError(name, range, value);
  return info.bytes === 8 ? big : Number(big);
}

/** The little-endian bit pattern of one element, as memFill takes it (an unsigned bigint of the element's width). */
export function scalarBitPattern(dtype: DType, value: number | bigint): bigint {
  const view = new DataView(new ArrayBuffer(8));
  switch (dtype) {
    case 'int8': view.setInt8(0, Number(value)); return BigInt(view.getUint8(0));
    case 'uint8': view.setUint8(0, Number(value)); return BigInt(view.getUint8(0));
    case 'int16': view.setInt16(0, Number(value), true); return BigInt(view.getUint16(0, true));
    case 'uint16': view.setUint16(0, Number(value), true); return BigInt(view.getUint16(0, true));
    case 'int32': view.setInt32(0, Number(value), true); return BigInt(view.getUint32(0, true));
    case 'uint32': view.setUint32(0, Number(value), true); return BigInt(view.getUint32(0, true));
    case 'float16': return BigInt(toFloat16Bits(Number(value)));
    case 'bfloat16': return BigInt(toBFloat16Bits(Number(value)));
    case 'float32': view.setFloat32(0, Number(value), true); return BigInt(view.getUint32(0, true));
    case 'int64': view.setBigInt64(0, BigInt(value), true); return view.getBigUint64(0, true);
    case 'uint64': view.setBigUint64(0, BigInt(value), true); return view.getBigUint64(0, true);
    case 'float64': view.setFloat64(0, Number(value), true); return view.getBigUint64(0, true);
  }
}

/** A checked scalar as the addon's launch takes it: float16 and bfloat16 as 'uint16' with their bit pattern. */
export function nativeScalar(dtype: DType, value: number | bigint): { dtype: NativeDType; value: number | bigint } {
  if (dtype === 'float16' || dtype === 'bfloat16') return { dtype: 'uint16', value: Number(scalarBitPattern(dtype, value)) };
  return { dtype, value };
}

// ---------------------------------------------------------------------------------------------------------------------
// Typed kernel scalars

/** A kernel scalar argument with its dtype: the C++ parameter type must match (int32 for `int`, float32 for `float`). */
export interface KernelScalar<D extends DType = DType> {
  readonly kind: 'scalar';
  readonly dtype: D;
  readonly value: number | bigint;
}

export function scalar<D extends DType>(dtype: D, value: ScalarValueOf<D>): KernelScalar<D> {
  checkDType('dtype', dtype);
  return Object.freeze({ kind: 'scalar', dtype, value: checkScalarValue(dtype, value, `${dtype} scalar`) });
}

export function isKernelScalar(value: unknown): value is KernelScalar {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return v.kind === 'scalar' && isDType(v.dtype) && (typeof v.value === 'number' || typeof v.value === 'bigint');
}

export const int8 = (value: number): KernelScalar<'int8'> => scalar('int8', value);
export const uint8 = (value: number): KernelScalar<'uint8'> => scalar('uint8', value);
export const int16 = (value: number): KernelScalar<'int16'> => scalar('int16', value);
export const uint16 = (value: number): KernelScalar<'uint16'> => scalar('uint16', value);
export const int32 = (value: number): KernelScalar<'int32'> => scalar('int32', value);
export const uint32 = (value: number): KernelScalar<'uint32'> => scalar('uint32', value);
export const int64 = (value: bigint | number): KernelScalar<'int64'> => scalar('int64', value);
export const uint64 = (value: bigint | number): KernelScalar<'uint64'> => scalar('uint64', value);
export const float16 = (value: number): KernelScalar<'float16'> => scalar('float16', value);
export const bfloat16 = (value: number): KernelScalar<'bfloat16'> => scalar('bfloat16', value);
export const float32 = (value: number): KernelScalar<'float32'> => scalar('float32', value);
export const float64 = (value: number): KernelScalar<'float64'> => scalar('float64', value);
