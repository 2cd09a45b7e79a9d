// CUDA helpers the tuner runs on the GPU: test-data generation and verification. Checking a configuration then costs a
// few hundred microseconds even for outputs of 2^26 elements (Kernel Tuner copies them to the host and compares there:
// 0.73 s per configuration), and generating 2^26 random inputs takes a millisecond instead of seconds on the host.
// Compiled once per session through the same compiler as the kernels under test; templated, addressed by name
// expressions ("lkt_compare<float>"). They include no header (not even cuda_fp16.h), so they compile wherever the
// compiler runs: float16 and bfloat16 buffers are 16-bit storage converted by the helpers' own device functions.
import type { DType } from '../../gpu/dtype';

/** The element type the helpers are instantiated with for each dtype, for name expressions. */
export const CUDA_TYPE: Record<DType, string> = {
  int8: 'signed char',
  uint8: 'unsigned char',
  int16: 'short',
  uint16: 'unsigned short',
  int32: 'int',
  uint32: 'unsigned int',
  int64: 'long long',
  uint64: 'unsigned long long',
  float16: 'lkt_half',
  bfloat16: 'lkt_bfloat16',
  float32: 'float',
  float64: 'double',
};

/** Slots of the result buffer each helper writes (uint64 each). */
export const COMPARE_SLOTS = { mismatches: 0, firstBad: 1 } as const;
export const SCALE_SLOTS = { maxAbsBits: 0, nonFinite: 1 } as const;

export const HELPER_KERNELS_SOURCE = String.raw`
// Written by llm-kernel-tuner. Grid-stride loops with per-thread partial results and one atomic per thread,
// so a completely wrong output (every element differs) costs no more than a correct one.

// The 16-bit floats as bit patterns (2 bytes, like __half and __nv_bfloat16), each its own type so that its name
// expressions differ from unsigned short's.
struct lkt_half { unsigned short bits; };
struct lkt_bfloat16 { unsigned short bits; };

// float16 through the hardware's conversions, which every architecture has (what cuda_fp16.h does too).
__device__ __forceinline__ float lkt_half_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short lkt_float_to_half(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// bfloat16 is the upper half of a float32: widening is a shift, narrowing rounds to nearest even on the bits (the
// carry of a rounding up runs into the exponent, up to infinity), so no architecture needs bf16 instructions.
__device__ __forceinline__ float lkt_bfloat16_to_float(unsigned short b) { return __uint_as_float((unsigned int)b << 16); }
__device__ __forceinline__ unsigned short lkt_float_to_bfloat16(float f) {
  const unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN: the canonical quiet NaN
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Per element type: whether it is a float, its value as a double, and an element made from a number (from a double or
// a long long, so 64-bit integers stay exact; the 16-bit floats round through float32, which can round a draw twice but
// keeps the integers they hold exact).
template <typename T, bool Float> struct lkt_native {
  static constexpr bool is_float = Float;
  static __device__ __forceinline__ double value(T x) { return (double)x; }
  template <typename S> static __device__ __forceinline__ T make(S v) { return (T)v; }
};
template <typename T> struct lkt_traits : lkt_native<T, false> {};
template <> struct lkt_traits<float> : lkt_native<float, true> {};
template <> struct lkt_traits<double> : lkt_native<double, true> {};
template <> struct lkt_traits<lkt_half> {
  static constexpr bool is_float = true;
  static __device__ __forceinline__ double value(lkt_half x) { return lkt_half_to_float(x.bits); }
  template <typename S> static __device__ __forceinline__ lkt_half make(S v) { return {lkt_float_to_half((float)v)}; }
};
template <> struct lkt_traits<lkt_bfloat16> {
  static constexpr bool is_float = true;
  static __device__ __forceinline__ double value(lkt_bfloat16 x) { return lkt_bfloat16_to_float(x.bits); }
  template <typename S> static __device__ __forceinline__ lkt_bfloat16 make(S v) { return {lkt_float_to_bfloat16((float)v)}; }
};

template <typename T>
__device__ __forceinline__ bool lkt_close(T out, T ref, double atol, double rtol) {
  if constexpr (lkt_traits<T>::is_float) {
    const double o = lkt_traits<T>::value(out), r = lkt_traits<T>::value(ref);
    if (isnan(r)) return isnan(o);          // the oracle's own NaN/Inf must be reproduced ...
    if (isinf(r)) return o == r;
    if (!isfinite(o)) return false;         // ... and none may appear where the oracle has a number
    return fabs(o - r) <= atol + rtol * fabs(r);
  } else {
    return out == ref;
  }
}

// result[0] += number of elements that differ; result[1] = min(result[1], index of the first one).
template <typename T>
__global__ void lkt_compare(const T* __restrict__ out, const T* __restrict__ ref, unsigned long long n,
                            double atol, double rtol, unsigned long long* result) {
  unsigned long long bad = 0, first = ~0ULL;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (!lkt_close(out[i], ref[i], atol, rtol)) {
      if (bad == 0) first = i;
      ++bad;
    }
  }
  if (bad != 0) {
    atomicAdd(&result[0], bad);
    atomicMin(&result[1], first);
  }
}

// The largest finite |x| (as the bits of a non-negative double, whose order matches the unsigned integers') and the
// number of NaN/Inf elements: the scale of the absolute tolerance, and a sanity check of the oracle's output.
template <typename T>
__global__ void lkt_scale(const T* __restrict__ x, unsigned long long n, unsigned long long* result) {
  double maxAbs = 0.0;
  unsigned long long nonFinite = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = lkt_traits<T>::value(x[i]);
    if (lkt_traits<T>::is_float && !isfinite(v)) ++nonFinite;
    else maxAbs = fmax(maxAbs, fabs(v));
  }
  atomicMax(&result[0], (unsigned long long)__double_as_longlong(maxAbs));
  if (nonFinite != 0) atomicAdd(&result[1], nonFinite);
}

// An order-independent 64-bit fingerprint of a buffer (sum of mixed (index, word) pairs): equal before and after a
// run means the kernel left that input alone, without keeping a second copy of every input on the device.
__device__ __forceinline__ unsigned long long lkt_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Counter-based random fills: element i depends only on (seed, i), never on the launch shape, so a buffer can be
// regenerated bit for bit (after a worker restart, or to restore an input a faulty kernel overwrote).
__device__ __forceinline__ double lkt_unit(unsigned long long seed, unsigned long long i) {
  return (double)(lkt_mix(seed ^ lkt_mix(i)) >> 11) * 0x1.0p-53;  // [0, 1) with 53 random bits
}

template <typename T>
__global__ void lkt_fill_uniform(T* __restrict__ out, unsigned long long n, double lo, double hi, unsigned long long seed) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = lkt_traits<T>::make(lo + (hi - lo) * lkt_unit(seed, i));
}

template <typename T>
__global__ void lkt_fill_normal(T* __restrict__ out, unsigned long long n, double mean, double sd, unsigned long long seed) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double u1 = 1.0 - lkt_unit(seed, 2 * i), u2 = lkt_unit(seed, 2 * i + 1);  // Box-Muller; u1 in (0, 1]
    out[i] = lkt_traits<T>::make(mean + sd * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
  }
}

// Integers in [lo, lo + span - 1]; span 0 stands for 2^64. The modulo bias is below 2^-40 for spans under 2^24.
template <typename T>
__global__ void lkt_fill_integers(T* __restrict__ out, unsigned long long n, long long lo, unsigned long long span, unsigned long long seed) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const unsigned long long r = lkt_mix(seed ^ lkt_mix(i));
    out[i] = lkt_traits<T>::make(lo + (long long)(span == 0 ? r : r % span));
  }
}

__global__ void lkt_fingerprint(const unsigned char* __restrict__ data, unsigned long long bytes, unsigned long long* result) {
  const unsigned long long words = bytes / 4;
  const unsigned int* w = (const unsigned int*)data;
  unsigned long long sum = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (unsigned long long i = tid; i < words; i += stride) sum += lkt_mix((i << 32) ^ w[i]);
  if (tid == 0) {
    for (unsigned long long i = words * 4; i < bytes; ++i) sum += lkt_mix(0xffffffff00000000ULL ^ (i << 8) ^ data[i]);
  }
  atomicAdd(&result[0], sum);
}

// How many elements of a buffer still hold a bit pattern: after the reference kernel ran on a poisoned output, the
// elements it never wrote. Any element size, so one instance serves every dtype.
__global__ void lkt_count_pattern(const unsigned char* __restrict__ data, unsigned long long n, unsigned int elementBytes,
                                  unsigned long long pattern, unsigned long long* result) {
  unsigned long long count = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned long long v = 0;
    for (unsigned int b = 0; b < elementBytes; ++b) v |= (unsigned long long)data[i * elementBytes + b] << (8 * b);
    if (v == pattern) ++count;
  }
  if (count != 0) atomicAdd(&result[0], count);
}
`;

export function compareKernelName(dtype: DType): string {
  return `lkt_compare<${CUDA_TYPE[dtype]}>`;
}

export function scaleKernelName(dtype: DType): string {
  return `lkt_scale<${CUDA_TYPE[dtype]}>`;
}

export function fillKernelName(kind: 'uniform' | 'normal' | 'integers', dtype: DType): string {
  return `lkt_fill_${kind}<${CUDA_TYPE[dtype]}>`;
}

export const FINGERPRINT_KERNEL_NAME = 'lkt_fingerprint';
export const COUNT_PATTERN_KERNEL_NAME = 'lkt_count_pattern';

/** Every name expression of the helpers for the given dtypes (the module is compiled once with all of them). */
export function helperNameExpressions(dtypes: Iterable<DType>): string[] {
  const names = new Set<string>([FINGERPRINT_KERNEL_NAME, COUNT_PATTERN_KERNEL_NAME]);
  for (const d of dtypes) {
    names.add(compareKernelName(d));
    names.add(scaleKernelName(d));
    for (const kind of ['uniform', 'normal', 'integers'] as const) names.add(fillKernelName(kind, d));
  }
  return [...names];
}
