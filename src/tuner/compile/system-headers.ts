// What NVRTC reads in place of the host's system headers. NVRTC has no C or C++ standard library: `#include <stdio.h>`
// fails with "could not open source file", and a .cu file nvcc compiles usually includes several. Device code needs
// little from them (printf, memcpy, memset, malloc and assert are NVRTC builtins): the constants below, which are the
// values of glibc's headers on x86-64 and aarch64, and the fixed-width integer types. NVRTC has no __builtin_inff, so
// INFINITY and NAN are CUDA's own spelling of them (math_constants.h's CUDART_INF_F): usable in device code, not in a
// constant expression. Every macro is guarded and every type spelt as libcu++ spells it under NVRTC, so a stand-in and
// <cuda/std/...> headers (which cooperative groups and CUB include) can meet in one unit. Host-only headers (iostream,
// vector, unistd.h, ...) stand in as empty files: the host code that needs them is blanked before NVRTC sees it.
// A header not listed here and not found on an include path is left alone, so NVRTC reports it and nvcc takes the
// file instead: an unknown header may define something the device code needs.

const MATH = `
#define M_E        2.7182818284590452354
#define M_LOG2E    1.4426950408889634074
#define M_LOG10E   0.43429448190325182765
#define M_LN2      0.69314718055994530942
#define M_LN10     2.30258509299404568402
#define M_PI       3.14159265358979323846
#define M_PI_2     1.57079632679489661923
#define M_PI_4     0.78539816339744830962
#define M_1_PI     0.31830988618379067154
#define M_2_PI     0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2    1.41421356237309504880
#define M_SQRT1_2  0.70710678118654752440
#define HUGE_VAL   (__longlong_as_double(0x7ff0000000000000ULL))
#define HUGE_VALF  (__int_as_float(0x7f800000))
#define INFINITY   (__int_as_float(0x7f800000))
#define NAN        (__int_as_float(0x7fffffff))
`;

const FLOAT = `
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_DECIMAL_DIG 9
#define DBL_DECIMAL_DIG 17
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MIN_10_EXP (-37)
#define DBL_MIN_10_EXP (-307)
#define FLT_MAX_10_EXP 38
#define DBL_MAX_10_EXP 308
#define FLT_MAX 3.40282346638528859811704183484516925e+38F
#define DBL_MAX ((double)1.79769313486231570814527423731704357e+308L)
#define FLT_MIN 1.17549435082228750796873653722224568e-38F
#define DBL_MIN ((double)2.22507385850720138309023271733240406e-308L)
#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F
#define DBL_EPSILON ((double)2.22044604925031308084726333618164062e-16L)
#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
#define DBL_TRUE_MIN ((double)4.94065645841246544176568792868221372e-324L)
`;

const LIMITS = `
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-INT_MAX - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MAX 9223372036854775807L
#define LONG_MIN (-LONG_MAX - 1L)
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define ULLONG_MAX 18446744073709551615ULL
`;

const STDINT = `
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;
#define INT8_MIN (-128)
#define INT16_MIN (-32767-1)
#define INT32_MIN (-2147483647-1)
#define INT64_MIN (-9223372036854775807LL-1)
#define INT8_MAX 127
#define INT16_MAX 32767
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define SIZE_MAX 18446744073709551615UL
`;

const STDINT_STD = `
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
`;

// size_t and ptrdiff_t are NVRTC builtins; offsetof is spelt as libcu++ spells it under NVRTC.
const STDDEF = `
#define NULL 0
#define offsetof(type, member) (::size_t) ((char*) &(((type*) 0)->member) - (char*) 0)
`;

const STDLIB = `
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define NULL 0
`;

/** The header's text inside an include guard, each macro defined only where nothing defined it before. */
function guarded(name: string, body: string): string {
  const guard = `__LKT_STAND_IN_${name.replace(/\W/g, '_').toUpperCase()}`;
  const lines = body
    .trim()
    .split('\n')
    .map((line) => {
      const m = /^#define (\w+)\b/.exec(line);
      return m ? `#ifndef ${m[1]}\n${line}\n#endif` : line;
    });
  return `#ifndef ${guard}\n#define ${guard}\n${lines.join('\n')}\n#endif\n`;
}

/** Stand-ins with content: the device-usable part of each C header and its C++ twin. */
const WITH_CONTENT: Record<string, string> = {
  'math.h': MATH,
  cmath: MATH,
  'float.h': FLOAT,
  cfloat: FLOAT,
  'limits.h': LIMITS,
  climits: LIMITS,
  'stdint.h': STDINT,
  cstdint: STDINT + STDINT_STD,
  'inttypes.h': STDINT,
  cinttypes: STDINT + STDINT_STD,
  'stddef.h': STDDEF,
  cstddef: STDDEF,
  'stdlib.h': STDLIB,
  cstdlib: STDLIB,
};

/** Host headers whose content device code does not need (or that NVRTC provides as builtins). */
const EMPTY = [
  // C standard library (printf, memcpy, memset, malloc, free and assert are NVRTC builtins)
  'assert.h', 'complex.h', 'ctype.h', 'errno.h', 'fenv.h', 'iso646.h', 'locale.h', 'setjmp.h', 'signal.h', 'stdalign.h',
  'stdarg.h', 'stdatomic.h', 'stdbool.h', 'stdio.h', 'string.h', 'tgmath.h', 'threads.h', 'time.h', 'uchar.h', 'wchar.h',
  'wctype.h', 'malloc.h', 'memory.h',
  'cassert', 'cctype', 'cerrno', 'cfenv', 'clocale', 'csetjmp', 'csignal', 'cstdarg', 'cstdbool', 'cstdio', 'cstring',
  'ctime', 'cuchar', 'cwchar', 'cwctype',
  // C++ standard library: host containers, streams, threads
  'algorithm', 'any', 'array', 'atomic', 'bit', 'bitset', 'charconv', 'chrono', 'codecvt', 'compare', 'complex', 'concepts',
  'condition_variable', 'deque', 'exception', 'execution', 'filesystem', 'format', 'forward_list', 'fstream', 'functional',
  'future', 'initializer_list', 'iomanip', 'ios', 'iosfwd', 'iostream', 'istream', 'iterator', 'limits', 'list', 'locale',
  'map', 'memory', 'memory_resource', 'mutex', 'new', 'numbers', 'numeric', 'optional', 'ostream', 'queue', 'random',
  'ranges', 'ratio', 'regex', 'scoped_allocator', 'set', 'shared_mutex', 'source_location', 'span', 'sstream', 'stack',
  'stdexcept', 'streambuf', 'string', 'string_view', 'system_error', 'thread', 'tuple', 'type_traits', 'typeindex',
  'typeinfo', 'unordered_map', 'unordered_set', 'utility', 'valarray', 'variant', 'vector', 'version',
  // operating system and host parallelism
  'unistd.h', 'strings.h', 'pthread.h', 'dlfcn.h', 'fcntl.h', 'getopt.h', 'dirent.h', 'libgen.h', 'sched.h', 'omp.h',
  'mpi.h', 'windows.h', 'io.h', 'direct.h',
];
/** POSIX system headers (sys/time.h, sys/stat.h, ...): host only. */
const EMPTY_DIRECTORY = /^sys\/\w+\.h$/;

/**
 * The stand-in NVRTC reads for a system header that is neither on an include path nor in the CUDA toolkit, or
 * undefined when the header is unknown (left for the compiler to report).
 */
export function systemHeaderStandIn(spelling: string): string | undefined {
  const content = WITH_CONTENT[spelling];
  if (content !== undefined) return guarded(spelling, content);
  if (EMPTY.includes(spelling) || EMPTY_DIRECTORY.test(spelling)) return `// llm-kernel-tuner: <${spelling}> is a host header; NVRTC compiles device code only\n`;
  return undefined;
}

/**
 * Toolkit headers that NVRTC compiles (device code, types, intrinsics, libcu++, CUB's block and warp primitives).
 * The rest of the toolkit (cuBLAS, cuFFT, cuSPARSE, NVTX, the driver API, Thrust, ...) is host API: it stands in as
 * the device-usable headers it includes, which is what device code may rely on it for (cublas_v2.h brings cuda_fp16.h).
 */
const DEVICE_USABLE_TOOLKIT_HEADER =
  /^(cuda_(fp16|bf16|fp8|fp6|fp4)\.hp?p?|cuda_runtime(_api)?\.h|cuda_device_runtime_api\.h|vector_(types|functions)\.hp?p?|builtin_types\.h|device_(types|functions|atomic_functions|double_functions|launch_parameters)\.hp?p?|driver_types\.h|host_defines\.h|math_(constants|functions)\.hp?p?|sm_\d+\w*\.hp?p?|cooperative_groups(\.h|\/.+)|cuda\/.+|cub\/.+|nv\/.+|crt\/.+|mma\.hp?p?|cuda_pipeline\w*\.h|cuda_awbarrier\w*\.h|curand(_\w+)?\.h|cuComplex\.h|texture_\w+\.hp?p?|surface_\w+\.hp?p?|cuda_(texture|surface)_types\.h|library_types\.h|cuda_stdint\.h|channel_descriptor\.h|common_functions\.h)$/;

export function isDeviceUsableToolkitHeader(spelling: string): boolean {
  return DEVICE_USABLE_TOOLKIT_HEADER.test(spelling.replace(/^\.\//, ''));
}

/**
 * What NVRTC reads before every device unit: nvcc includes cuda_runtime.h into every .cu file, and through it the
 * host's math.h, so `INFINITY` and `M_PI` work in any kernel nvcc compiles. (The guard is math.h's stand-in's, so an
 * explicit `#include <math.h>` adds nothing twice.)
 */
export const NVCC_IMPLICIT_PRELUDE = systemHeaderStandIn('math.h')!;
