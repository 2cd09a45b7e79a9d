// Element types: sizes, typed arrays, range checks and bit patterns. Values are checked against the dtype's range and
// rejected when they do not fit (never wrapped or clamped), because a silently wrapped scalar is a wrong kernel result.

import { argumentError } from './errors';
import type { DType } from './native-types';

export type { DType } from './native-types';

export const DTYPES: readonly DType[] = [
  'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'float32', 'float64',
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
  min: bigint;
  max: bigint;
  ctor: TypedArrayCtor;
}

const INFO: Record<DType, DTypeInfo> = {
  int8: { bytes: 1, kind: 'int', min: -(2n ** 7n), max: 2n ** 7n - 1n, ctor: Int8Array },
  uint8: { bytes: 1, kind: 'int', min: 0n, max: 2n ** 8n - 1n, ctor: Uint8Array },
  int16: { bytes: 2, kind: 'int', min: -(2n ** 15n), max: 2n ** 15n - 1n, ctor: Int16Array },
  uint16: { bytes: 2, kind: 'int', min: 0n, max: 2n ** 16n - 1n, ctor: Uint16Array },
  int32: { bytes: 4, kind: 'int', min: -(2n ** 31n), max: 2n ** 31n - 1n, ctor: Int32Array },
  uint32: { bytes: 4, kind: 'int', min: 0n, max: 2n ** 32n - 1n, ctor: Uint32Array },
  int64: { bytes: 8, kind: 'int', min: -(2n ** 63n), max: 2n ** 63n - 1n, ctor: BigInt64Array },
  uint64: { bytes: 8, kind: 'int', min: 0n, max: 2n ** 64n - 1n, ctor: BigUint64Array },
  float32: { bytes: 4, kind: 'float', min: 0n, max: 0n, ctor: Float32Array },
  float64: { bytes: 8, kind: 'float', min: 0n, max: 0n, ctor: Float64Array },
};

const FLOAT32_MAX = 3.4028234663852886e38;

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

export function allocTypedArray<D extends DType>(dtype: D, length: number): TypedArrayOf<D> {
  return new INFO[dtype].ctor(length) as TypedArrayOf<D>;
}

export function isTypedArrayOf<D extends DType>(dtype: D, value: unknown): value is TypedArrayOf<D> {
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
 * Checks that `value` fits `dtype` and returns it in the form the addon takes (bigint for 64-bit integers).
 * Integers must be whole and in range; float32 rejects finite values beyond its range (they would become Infinity).
 * NaN and ±Infinity are accepted for floats (outputs are poisoned with NaN before checked runs).
 */
export function checkScalarValue(dtype: DType, value: unknown, name: string): number | bigint {
  const info = INFO[dtype];
  if (info.kind === 'float') {
    if (typeof value !== 'number') throw argumentError(name, `a number (${dtype})`, value);
    if (dtype === 'float32' && Number.isFinite(value) && Math.abs(value) > FLOAT32_MAX)
      throw argumentError(name, 'a number within float32 range (|x| <= 3.4028234663852886e38)', value);
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
    case 'float32': view.setFloat32(0, Number(value), true); return BigInt(view.getUint32(0, true));
    case 'int64': view.setBigInt64(0, BigInt(value), true); return view.getBigUint64(0, true);
    case 'uint64': view.setBigUint64(0, BigInt(value), true); return view.getBigUint64(0, true);
    case 'float64': view.setFloat64(0, Number(value), true); return view.getBigUint64(0, true);
  }
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
export const float32 = (value: number): KernelScalar<'float32'> => scalar('float32', value);
export const float64 = (value: number): KernelScalar<'float64'> => scalar('float64', value);
