// The 16-bit float formats on the host: IEEE binary16 (CUDA __half) and bfloat16 (CUDA __nv_bfloat16). Node 20 has no
// Float16Array, so their data is kept as raw bit patterns in Uint16Array subclasses, and converted here bit for bit:
// round to nearest even straight from the float64 (no detour through float32, which would round twice), subnormals,
// overflow to ±Infinity, NaN to the canonical quiet NaN.

interface Format {
  /** Stored mantissa bits. */
  mantissaBits: number;
  /** Exponent bias: the largest finite value has exponent `bias`, the smallest normal one `1 - bias`. */
  bias: number;
  /** The canonical quiet NaN. */
  nan: number;
}

const FLOAT16: Format = { mantissaBits: 10, bias: 15, nan: 0x7e00 };
const BFLOAT16: Format = { mantissaBits: 7, bias: 127, nan: 0x7fc0 };

// A float64's sign and exponent, read from its high word (the host's byte order decides which word that is). These
// and the table of powers of two keep a conversion to a few arithmetic operations: random fills convert every element.
const float64 = new Float64Array(1);
const words = new Uint32Array(float64.buffer);
const HIGH_WORD = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 1 : 0;
const POW2_OFFSET = 160;
/** 2^k at index k + POW2_OFFSET: the scales of both formats lie within 2^-160 .. 2^160. */
const POW2 = Float64Array.from({ length: 2 * POW2_OFFSET + 1 }, (_, i) => 2 ** (i - POW2_OFFSET));

/** Rounds a non-negative number to an integer, ties to even (x - floor(x) is exact for a double). */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  return rest > 0.5 || (rest === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
}

function encoder({ mantissaBits, bias, nan }: Format): (value: number) => number {
  const infinity = (2 * bias + 1) << mantissaBits;
  const minExponent = 1 - bias;
  return (value) => {
    float64[0] = value;
    const high = words[HIGH_WORD]!;
    const sign = (high >>> 16) & 0x8000;
    const exponent = ((high >>> 20) & 0x7ff) - 1023; // floor(log2(|value|)); -1023 for zero and double subnormals
    if (exponent > bias) return value !== value ? nan : sign | infinity;
    // |value| in units of the last place of its binade (of the subnormals below the normal range): scaling by a power
    // of two is exact, so the rounding below is the only one. A mantissa that rounds up to 2^mantissaBits carries into
    // the exponent, which is the right encoding, up to and including infinity.
    const unitExponent = (exponent < minExponent ? minExponent : exponent) - mantissaBits;
    const units = roundHalfEven(Math.abs(value) * POW2[POW2_OFFSET - unitExponent]!);
    if (exponent < minExponent) return sign | units;
    return sign | (((exponent + bias) << mantissaBits) + units - (1 << mantissaBits));
  };
}

function decoder({ mantissaBits, bias }: Format): (bits: number) => number {
  const maxExponent = 2 * bias + 1;
  const mantissaMask = (1 << mantissaBits) - 1;
  return (bits) => {
    const sign = bits & 0x8000 ? -1 : 1;
    const exponent = (bits & 0x7fff) >>> mantissaBits;
    const mantissa = bits & mantissaMask;
    if (exponent === maxExponent) return mantissa === 0 ? sign * Infinity : Number.NaN;
    if (exponent === 0) return sign * mantissa * POW2[POW2_OFFSET + 1 - bias - mantissaBits]!;
    return sign * (mantissaMask + 1 + mantissa) * POW2[POW2_OFFSET + exponent - bias - mantissaBits]!;
  };
}

/** The float16 bit pattern nearest to `value` (ties to even; beyond 65504 + half a unit: ±Infinity; NaN: 0x7e00). */
export const toFloat16Bits: (value: number) => number = encoder(FLOAT16);
/** The exact value of a float16 bit pattern. */
export const fromFloat16Bits: (bits: number) => number = decoder(FLOAT16);
/** The bfloat16 bit pattern nearest to `value` (ties to even; NaN: 0x7fc0). */
export const toBFloat16Bits: (value: number) => number = encoder(BFLOAT16);
/** The exact value of a bfloat16 bit pattern. */
export const fromBFloat16Bits: (bits: number) => number = decoder(BFLOAT16);

/** The largest finite float16 (0x7bff). */
export const FLOAT16_MAX = 65504;
/** The largest finite bfloat16 (0x7f7f). */
export const BFLOAT16_MAX = 3.3895313892515355e38;

/** Raw 16-bit float patterns; the subclass says which format they are in, so they are never taken for uint16 data. */
abstract class Float16BitsArray extends Uint16Array {
  protected abstract decode(bits: number): number;

  /** Every element as its exact value (both formats are subsets of float32). */
  toNumbers(): Float32Array {
    const out = new Float32Array(this.length);
    for (let i = 0; i < this.length; i++) out[i] = this.decode(this[i]!);
    return out;
  }

  /** The value of one element; a negative index counts from the end, as with at(). */
  numberAt(index: number): number | undefined {
    const bits = this.at(index);
    return bits === undefined ? undefined : this.decode(bits);
  }
}

function encodeAll<A extends Uint16Array>(out: A, values: ArrayLike<number>, toBits: (value: number) => number): A {
  for (let i = 0; i < values.length; i++) out[i] = toBits(values[i]!);
  return out;
}

/** float16 data (CUDA `__half`): raw bits, as a `__half*` buffer holds them. */
export class HalfArray extends Float16BitsArray {
  /** The nearest float16 of every value. */
  static fromNumbers(values: ArrayLike<number>): HalfArray {
    return encodeAll(new HalfArray(values.length), values, toFloat16Bits);
  }

  protected decode(bits: number): number {
    return fromFloat16Bits(bits);
  }
}

/** bfloat16 data (CUDA `__nv_bfloat16`): raw bits, as a `__nv_bfloat16*` buffer holds them. */
export class BFloat16Array extends Float16BitsArray {
  /** The nearest bfloat16 of every value. */
  static fromNumbers(values: ArrayLike<number>): BFloat16Array {
    return encodeAll(new BFloat16Array(values.length), values, toBFloat16Bits);
  }

  protected decode(bits: number): number {
    return fromBFloat16Bits(bits);
  }
}
