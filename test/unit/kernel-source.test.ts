import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import {
  findKernel,
  kernelAt,
  nameExpression,
  ParseError,
  sameSignature,
  type KernelParameter,
  type KernelSignature,
  type SourceRange,
} from '../../src/tuner/source/kernel-signature';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixture = (name: string) => readFileSync(join(root, 'test/fixtures/kernels', name), 'utf8');

/** 0-based line/column of the `nth` occurrence of `needle` (counted from 0), plus its index. */
function locate(code: string, needle: string, nth = 0): { line: number; column: number; index: number } {
  let index = -1;
  for (let i = 0; i <= nth; i++) {
    index = code.indexOf(needle, index + 1);
    if (index < 0) throw new Error(`'${needle}' #${nth} not in the code`);
  }
  const before = code.slice(0, index);
  const line = before.split('\n').length - 1;
  return { line, column: index - (before.lastIndexOf('\n') + 1), index };
}

function range(code: string, startIndex: number, endIndex: number): SourceRange {
  const s = locate(code.slice(0, startIndex) + '\u0000', '\u0000');
  const e = locate(code.slice(0, endIndex) + '\u0000', '\u0000');
  return { startLine: s.line, startColumn: s.column, endLine: e.line, endColumn: e.column, startIndex, endIndex };
}

/** The range of the `nth` occurrence of `text`. */
function rangeOf(code: string, text: string, nth = 0): SourceRange {
  const { index } = locate(code, text, nth);
  return range(code, index, index + text.length);
}

function param(name: string, type: string, baseType: string, extra: Partial<KernelParameter> = {}): KernelParameter {
  return { name, type, baseType, isPointer: false, pointerDepth: 0, isConst: false, isRestrict: false, isReference: false, ...extra };
}

async function parseOne(code: string): Promise<KernelSignature> {
  const kernels = await parseKernels(code);
  expect(kernels).toHaveLength(1);
  return kernels[0]!;
}

async function parseError(code: string, fileName = 'k.cu'): Promise<ParseError> {
  try {
    await parseKernels(code, fileName);
  } catch (e) {
    if (e instanceof ParseError) return e;
    throw e;
  }
  throw new Error('expected a ParseError');
}

describe('parseKernels on real-world kernels', () => {
  it('vector add: every field', async () => {
    const code = fixture('vector_add.cu');
    const [k] = await parseKernels(code, 'vector_add.cu');
    const start = locate(code, '__global__').index;
    const end = code.lastIndexOf('}') + 1;
    expect(k).toStrictEqual({
      name: 'vector_add',
      qualifiedName: 'vector_add',
      namespace: [],
      isTemplate: false,
      templateParameters: [],
      attributes: [],
      externC: false,
      parameters: [
        param('a', 'const float *', 'float', { isPointer: true, pointerDepth: 1, isConst: true }),
        param('b', 'const float *', 'float', { isPointer: true, pointerDepth: 1, isConst: true }),
        param('c', 'float *', 'float', { isPointer: true, pointerDepth: 1 }),
        param('n', 'int', 'int'),
      ],
      range: range(code, start, end),
      nameRange: rangeOf(code, 'vector_add', 0),
      bodyRange: range(code, locate(code, '{').index, end),
      signatureText: '__global__ void vector_add(const float *a, const float *b, float *c, int n)',
      declarations: [],
      warnings: [],
    });
    // The same positions written out, to check the helpers above.
    expect(k!.range).toMatchObject({ startLine: 8, startColumn: 0, endLine: 13, endColumn: 1 });
    expect(k!.nameRange).toMatchObject({ startLine: 8, startColumn: 16, endLine: 8, endColumn: 26 });
  });

  it('naive matmul: multi-line signature with __restrict__ pointers', async () => {
    const code = fixture('matmul_naive.cu');
    const k = await parseOne(code);
    expect(k.name).toBe('matmul_naive');
    const restrictIn = { isPointer: true, pointerDepth: 1, isConst: true, isRestrict: true };
    expect(k.parameters).toStrictEqual([
      param('A', 'const float *__restrict__', 'float', restrictIn),
      param('B', 'const float *__restrict__', 'float', restrictIn),
      param('C', 'float *__restrict__', 'float', { isPointer: true, pointerDepth: 1, isRestrict: true }),
      param('M', 'int', 'int'),
      param('N', 'int', 'int'),
      param('K', 'int', 'int'),
    ]);
    expect(k.signatureText).toBe(
      [
        '__global__ void matmul_naive(const float *__restrict__ A,',
        '                             const float *__restrict__ B,',
        '                             float *__restrict__ C,',
        '                             int M, int N, int K)',
      ].join('\n'),
    );
    expect(k.range).toMatchObject({ startLine: 1, startColumn: 0, endLine: 15, endColumn: 1 });
    expect(k.bodyRange).toMatchObject({ startLine: 5, startColumn: 0, endLine: 15, endColumn: 1 });
    expect(k.warnings).toEqual([]);
  });

  it('tiled matmul: __launch_bounds__ over #defines, __align__ shared memory in the body', async () => {
    const code = fixture('matmul_tiled.cu');
    const k = await parseOne(code);
    expect(k.name).toBe('matmul_kernel');
    expect(k.launchBounds).toStrictEqual({
      maxThreads: 'block_size_x * block_size_y',
      range: rangeOf(code, '__launch_bounds__(block_size_x * block_size_y)'),
    });
    expect(k.parameters.map((p) => [p.name, p.type, p.isConst])).toEqual([
      ['C', 'float *', false],
      ['A', 'const float *', true],
      ['B', 'const float *', true],
    ]);
    expect(k.signatureText).toBe('__global__ void __launch_bounds__(block_size_x * block_size_y)\nmatmul_kernel(float *C, const float *A, const float *B)');
    expect(k.range.startLine).toBe(locate(code, '__global__').line);
    expect(k.nameRange.startLine).toBe(k.range.startLine + 1);
    expect(k.range.endIndex).toBe(code.lastIndexOf('}') + 1);
    // tree-sitter-cuda reports `__align__(16)` as a syntax error; it is masked before parsing.
    expect(k.warnings).toEqual([]);
    expect(k.attributes).toEqual([]);
  });

  it('templated reduction: type and non-type template parameters, launch bounds, explicit instantiation', async () => {
    const code = fixture('reduction.cu');
    const k = await parseOne(code); // the __device__ template helper is not a kernel
    expect(k.name).toBe('reduce_sum');
    expect(k.isTemplate).toBe(true);
    expect(k.templateParameters).toStrictEqual([
      { kind: 'type', name: 'T', variadic: false },
      { kind: 'value', name: 'BLOCK_SIZE', type: 'unsigned int', default: '256', variadic: false },
      { kind: 'value', name: 'CHECK_BOUNDS', type: 'bool', default: 'true', variadic: false },
    ]);
    expect(k.templateArguments).toBeUndefined();
    expect(k.launchBounds).toStrictEqual({ maxThreads: 'BLOCK_SIZE', minBlocks: '2', range: rangeOf(code, '__launch_bounds__(BLOCK_SIZE, 2)') });
    expect(k.parameters).toStrictEqual([
      param('input', 'const T *__restrict__', 'T', { isPointer: true, pointerDepth: 1, isConst: true, isRestrict: true }),
      param('partial', 'T *__restrict__', 'T', { isPointer: true, pointerDepth: 1, isRestrict: true }),
      param('n', 'const size_t', 'size_t', { isConst: true }),
    ]);
    expect(k.range.startIndex).toBe(locate(code, 'template <typename T, unsigned int').index);
    expect(k.signatureText.split('\n')).toEqual([
      'template <typename T, unsigned int BLOCK_SIZE = 256, bool CHECK_BOUNDS = true>',
      '__global__ void __launch_bounds__(BLOCK_SIZE, 2)',
      'reduce_sum(const T *__restrict__ input, T *__restrict__ partial, const size_t n)',
    ]);
    const instantiation = locate(code, 'template __global__');
    expect(k.declarations).toStrictEqual([range(code, instantiation.index, code.indexOf(';', instantiation.index) + 1)]);
    expect(nameExpression(k, ['float'])).toBe('reduce_sum<float>');
    expect(nameExpression(k, { T: 'float', CHECK_BOUNDS: false })).toBe('reduce_sum<float, 256, false>');
    expect(() => nameExpression(k)).toThrow("template parameter 'T' of kernel 'reduce_sum' needs a value (it has no default)");
  });

  it('2D stencil: default argument, const scalars, function-like macros in the body', async () => {
    const code = fixture('stencil_2d.cu');
    const k = await parseOne(code);
    expect(k.parameters).toStrictEqual([
      param('out', 'float *__restrict__', 'float', { isPointer: true, pointerDepth: 1, isRestrict: true }),
      param('in', 'const float *__restrict__', 'float', { isPointer: true, pointerDepth: 1, isConst: true, isRestrict: true }),
      param('nx', 'const int', 'int', { isConst: true }),
      param('ny', 'const int', 'int', { isConst: true }),
      param('alpha', 'const float', 'float', { isConst: true, defaultValue: '0.25f' }),
    ]);
    expect(k.warnings).toEqual([]);
  });

  it('several kernels, device helpers, comments, extern "C", namespaces, #if, prototypes', async () => {
    const code = fixture('multi.cu');
    const kernels = await parseKernels(code, 'multi.cu');
    // Source order; commented-out kernels, the string literal and the __device__/__host__ helpers are absent.
    expect(kernels.map((k) => k.qualifiedName)).toEqual(['apply_relu', 'kt::ops::clamp', 'half_to_float', 'histogram', 'scale', 'noop']);
    const [relu, clamp, h2f, hist, scale, noop] = kernels as [KernelSignature, KernelSignature, KernelSignature, KernelSignature, KernelSignature, KernelSignature];

    expect(relu.attributes).toEqual(['static']);
    expect(relu.launchBounds).toStrictEqual({ maxThreads: 'THREADS', range: rangeOf(code, '__launch_bounds__(THREADS)') });
    expect(relu.range.startIndex).toBe(locate(code, 'static __global__').index);
    expect(relu.externC).toBe(false);

    expect(clamp.namespace).toEqual(['kt', 'ops']);
    expect(clamp.attributes).toEqual(['__noinline__']);
    expect(clamp.parameters[0]).toStrictEqual(param('data', 'float *const', 'float', { isPointer: true, pointerDepth: 1 }));

    expect(h2f.externC).toBe(true);
    expect(h2f.namespace).toEqual([]);
    expect(h2f.parameters.map((p) => p.type)).toEqual(['const __half *', 'float *', 'unsigned int']);
    expect(h2f.parameters[2]!.baseType).toBe('unsigned int');

    expect(hist.externC).toBe(true);
    // `extern "C" __global__ ...` in one declaration: the linkage is part of the range.
    expect(hist.range.startIndex).toBe(locate(code, 'extern "C" __global__').index);
    expect(hist.signatureText).toBe('extern "C" __global__ void histogram(const unsigned char *data, unsigned int *bins, int n)');

    const proto = locate(code, '__global__ void scale(float *x, float s, int n);');
    expect(scale.declarations).toStrictEqual([range(code, proto.index, proto.index + '__global__ void scale(float *x, float s, int n);'.length)]);
    expect(scale.range.startLine).toBe(locate(code, '__global__ void scale', 1).line);

    expect(noop.parameters).toEqual([]); // (void)
    expect(noop.launchBounds?.maxThreads).toBe('64');
    expect(noop.range.startIndex).toBe(locate(code, '__launch_bounds__(64)').index);
    expect(noop.signatureText).toBe('__launch_bounds__(64) __global__ void noop(void)');
    expect(kernels.every((k) => k.warnings.length === 0)).toBe(true);
  });

  it('CRLF line endings: positions, columns before the \\r, signature text with \\n', async () => {
    const code = fixture('crlf.cu');
    expect(code).toContain('\r\n'); // test/fixtures/kernels/.gitattributes keeps the bytes as they are
    const k = await parseOne(code);
    expect(k.name).toBe('saxpy_crlf');
    expect(k.range).toMatchObject({ startLine: 3, startColumn: 0, endLine: 12, endColumn: 1 });
    expect(k.nameRange).toMatchObject({ startLine: 4, startColumn: 0, endLine: 4, endColumn: 10 });
    expect(k.bodyRange).toMatchObject({ startLine: 8, startColumn: 0, endLine: 12, endColumn: 1 });
    expect(k.range.endIndex).toBe(code.lastIndexOf('}') + 1);
    expect(k.signatureText).toBe('__global__ void\nsaxpy_crlf(int n,\n           float a,\n           const float *x,\n           float *y)');
    expect(k.parameters.map((p) => `${p.type} ${p.name}`)).toEqual(['int n', 'float a', 'const float * x', 'float * y']);
  });

  it('a syntax error in a signature is a ParseError that points at the line', async () => {
    const code = fixture('syntax_error.cu');
    const e = await parseError(code, 'syntax_error.cu');
    expect(e.line).toBe(6);
    expect(e.column).toBe(28);
    expect(e.fileName).toBe('syntax_error.cu');
    expect(e.message).toBe(
      [
        "syntax_error.cu:7:29: syntax error near 'float a' in the signature of kernel 'saxpy'",
        '__global__ void saxpy(int n float a, const float *x, float *y) {',
        '                            ^',
      ].join('\n'),
    );
    expect(e.errors).toHaveLength(1);
    expect(e.kernels.map((k) => k.name)).toEqual(['scale_ok']); // still offered to the editor
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('ParseError');
  });

  it('a CUDA construct the grammar does not know, inside a body, is a warning only', async () => {
    const code = fixture('body_extension.cu');
    const [square, fill] = await parseKernels(code, 'body_extension.cu');
    const at = locate(code, '__device__ (int i)');
    expect(square!.name).toBe('square_all');
    expect(square!.warnings).toStrictEqual([
      {
        line: at.line,
        column: at.column,
        message: [
          "body_extension.cu:8:30: syntax error near '__device__' in the body of kernel 'square_all'",
          '    for_each_in_block(n, [=] __device__ (int i) { x[i] = x[i] * x[i]; });',
          '                             ^',
        ].join('\n'),
      },
    ]);
    expect(square!.parameters.map((p) => p.name)).toEqual(['x', 'n']);
    expect(fill!.name).toBe('fill');
    expect(fill!.warnings).toEqual([]);
  });
});

describe('parseKernels on CUDA details', () => {
  it('__launch_bounds__ with three arguments, __cluster_dims__ and __maxnreg__ (unknown to the grammar)', async () => {
    const code = '__global__ void __launch_bounds__(256, 2, 1) __cluster_dims__(2, 1, 1) __maxnreg__(32) k(float *x) {}';
    const k = await parseOne(code);
    expect(k.launchBounds).toStrictEqual({ maxThreads: '256', minBlocks: '2', maxBlocksPerCluster: '1', range: rangeOf(code, '__launch_bounds__(256, 2, 1)') });
    expect(k.attributes).toEqual(['__cluster_dims__(2, 1, 1)', '__maxnreg__(32)']);
    expect(k.name).toBe('k');
    expect(k.signatureText).toBe(code.slice(0, code.indexOf(' {')));
  });

  it('launch bound expressions: nested parentheses, several lines, comments', async () => {
    const code = '__global__ void\n__launch_bounds__(BX * (BY + 1), /* min */ MIN_BLOCKS(\n  2))\nk(int a) {}';
    const k = await parseOne(code);
    expect(k.launchBounds).toMatchObject({ maxThreads: 'BX * (BY + 1)', minBlocks: 'MIN_BLOCKS( 2)' });
    expect(k.launchBounds?.maxBlocksPerCluster).toBeUndefined();
  });

  it('__launch_bounds__ with no or too many arguments, or twice, is a ParseError', async () => {
    expect((await parseError('__global__ void __launch_bounds__() k(int a) {}')).message).toContain(
      "k.cu:1:17: kernel 'k': __launch_bounds__ takes 1 to 3 arguments, got '__launch_bounds__()'",
    );
    expect((await parseError('__global__ void __launch_bounds__(1, 2, 3, 4) k(int a) {}')).message).toContain('takes 1 to 3 arguments');
    const twice = await parseError('__launch_bounds__(64) __global__ void __launch_bounds__(128) k(int a) {}');
    expect(twice.message).toContain("k.cu:1:39: kernel 'k': __launch_bounds__ given twice");
  });

  it('parameter forms: const placement, pointer levels, references, arrays, MSVC restrict, grid constants, unnamed', async () => {
    const code = `struct Params { int n; };
__global__ void k(float const *a, const float* b, double **pp, float *const *cp, int &r, const int &cr,
                  int arr[4], float m[][4], float* __restrict r2, const __grid_constant__ Params p, int,
                  unsigned long long big, thrust::complex< float > *z, float (*op)(float, float),
                  volatile int *flag, float4 v) {}`;
    const k = await parseOne(code);
    expect(k.parameters).toStrictEqual([
      param('a', 'const float *', 'float', { isPointer: true, pointerDepth: 1, isConst: true }),
      param('b', 'const float *', 'float', { isPointer: true, pointerDepth: 1, isConst: true }),
      param('pp', 'double **', 'double', { isPointer: true, pointerDepth: 2 }),
      param('cp', 'float *const *', 'float', { isPointer: true, pointerDepth: 2 }),
      param('r', 'int &', 'int', { isReference: true }),
      param('cr', 'const int &', 'int', { isReference: true, isConst: true }),
      param('arr', 'int [4]', 'int', { isPointer: true, pointerDepth: 1, arraySuffix: '[4]' }),
      param('m', 'float [][4]', 'float', { isPointer: true, pointerDepth: 1, arraySuffix: '[][4]' }),
      param('r2', 'float *__restrict__', 'float', { isPointer: true, pointerDepth: 1, isRestrict: true }),
      param('p', 'const __grid_constant__ Params', 'Params', { isConst: true }),
      param('', 'int', 'int'),
      param('big', 'unsigned long long', 'unsigned long long'),
      param('z', 'thrust::complex<float> *', 'thrust::complex<float>', { isPointer: true, pointerDepth: 1 }),
      param('op', 'float (*)(float, float)', 'float', { isPointer: true, pointerDepth: 1 }),
      param('flag', 'volatile int *', 'int', { isPointer: true, pointerDepth: 1 }),
      param('v', 'float4', 'float4'),
    ]);
  });

  it('template parameter kinds: class, packs, template templates, auto', async () => {
    const code = 'template <class T, typename U = float, int... Ns, typename... Ts, template <typename> class TT, auto V = 3>\n__global__ void k(T *a) {}';
    const k = await parseOne(code);
    expect(k.templateParameters).toStrictEqual([
      { kind: 'type', name: 'T', variadic: false },
      { kind: 'type', name: 'U', default: 'float', variadic: false },
      { kind: 'value', name: 'Ns', type: 'int', variadic: true },
      { kind: 'type', name: 'Ts', variadic: true },
      { kind: 'template', name: 'TT', variadic: false },
      { kind: 'value', name: 'V', type: 'auto', default: '3', variadic: false },
    ]);
  });

  it('explicit specialization and out-of-line definitions', async () => {
    const code = `template <typename T, int B> __global__ void k(T *x);
template <> __global__ void k<float, 16>(float *x) {}
namespace ns { __global__ void g(int a); }
__global__ void ns::g(int a) {}`;
    const [spec, g] = await parseKernels(code);
    expect(spec!.name).toBe('k');
    expect(spec!.isTemplate).toBe(true);
    expect(spec!.templateParameters).toEqual([]);
    expect(spec!.templateArguments).toEqual(['float', '16']);
    expect(spec!.nameRange).toStrictEqual(rangeOf(code, 'k', 1)); // in `k<float, 16>`
    expect(spec!.declarations).toStrictEqual([rangeOf(code, 'template <typename T, int B> __global__ void k(T *x);')]);
    expect(nameExpression(spec!)).toBe('k<float, 16>');
    expect(g!.qualifiedName).toBe('ns::g');
    expect(g!.namespace).toEqual(['ns']);
    expect(g!.declarations).toStrictEqual([rangeOf(code, '__global__ void g(int a);')]);
  });

  it('Unicode in comments: columns are UTF-16 offsets, as in VS Code', async () => {
    const code = '/* 🚀 ∑ café */ __global__ void k(int a) {}\n// ✓ 😀\n__global__ void j(int b) {}';
    const [k, j] = await parseKernels(code);
    expect(k!.nameRange).toStrictEqual(rangeOf(code, 'k'));
    expect(k!.nameRange.startColumn).toBe(code.indexOf('void k') + 5);
    expect(j!.range).toMatchObject({ startLine: 2, startColumn: 0 });
  });

  it('literals and comments do not confuse the attribute pre-pass', async () => {
    const code = `__global__ void a(int *x) {
  const char open = '('; int big = 1'000'000; const char *s = "__launch_bounds__(";
  // __launch_bounds__( unbalanced in a comment
  x[0] = big + open + s[0];
}
__global__ void __launch_bounds__(128) b(int *y) { y[0] = '}'; }`;
    const [a, b] = await parseKernels(code);
    expect(a!.launchBounds).toBeUndefined();
    expect(a!.warnings).toEqual([]);
    expect(b!.launchBounds?.maxThreads).toBe('128');
  });

  it('kernels under #if 0, or the #else of #if 1, are never compiled and not reported', async () => {
    const code = `#if 0
__global__ void off(int a) {}
__global__ void broken(int a b) {}
#elif defined(USE_ELIF)
__global__ void elif_k(int a) {}
#else
__global__ void else_k(int a) {}
#endif
#if 1
__global__ void on(int a) {}
#else
__global__ void off2(int a) {}
#endif`;
    expect((await parseKernels(code)).map((k) => k.name)).toEqual(['elif_k', 'else_k', 'on']);
  });

  it('no kernels: empty input, host code, #define bodies and strings that mention __global__', async () => {
    expect(await parseKernels('')).toEqual([]);
    expect(await parseKernels('int main() { return 0; }\n__device__ float f(float x) { return x; }')).toEqual([]);
    expect(await parseKernels('#define KERNEL_QUALIFIER __global__\nconst char *s = "__global__";')).toEqual([]);
  });

  it('syntax errors in host code or device functions are ignored', async () => {
    const k = await parseOne('__device__ float f(float x) { return x +* ; }\n__global__ void k(float *y) { y[0] = 1.0f; }');
    expect(k.name).toBe('k');
    expect(k.warnings).toEqual([]);
  });

  it('a kernel swallowed by an unclosed body is a ParseError that says so', async () => {
    const e = await parseError('__global__ void k(int a) {\n  if (a) {\n}\n__global__ void next(int y) {}\n');
    expect(e.line).toBe(3);
    expect(e.message.split('\n')[0]).toBe("k.cu:4:1: __global__ function inside the body of 'k' (line 1): is a '}' missing before it?");
  });

  it('a macro in a signature is a ParseError', async () => {
    const e = await parseError('__global__ void\nKERNEL_ATTR k(int a) {}');
    expect(e.line).toBe(1);
    expect(e.message.split('\n')[0]).toContain("k.cu:2:12: syntax error: expected '::' in the signature of kernel 'k'");
    const exported = await parseError('EXPORT __global__ void k2(int a) {}');
    expect(exported.message.split('\n')[0]).toBe("k.cu:1:19: syntax error near 'void' in the signature of kernel 'k2'");
  });

  it('a kernel declared through a macro that expands to __global__ is a ParseError at its use', async () => {
    const code = '#define KERNEL __global__\n#ifdef KERNEL\n#endif\nKERNEL void k(float *x) {}\n';
    const e = await parseError(code);
    expect(e.line).toBe(3);
    expect(e.column).toBe(0);
    expect(e.message.split('\n')[0]).toBe(
      "k.cu:4:1: kernel declared through the macro 'KERNEL' (#define at line 1), which this parser does not expand: write __global__ in the signature",
    );
    const fnMacro = await parseError('#define DEFINE_KERNEL(name) __global__ void name\nDEFINE_KERNEL(k)(float *x) {}');
    expect(fnMacro.line).toBe(1);
  });

  it('several errors: the first in the message, all in `errors`', async () => {
    const e = await parseError('__global__ void a(int n float x) {}\n__global__ void b(int m int y) {}');
    expect(e.errors.map((d) => d.line)).toEqual([0, 1]);
    expect(e.message).toMatch(/^k\.cu:1:/);
    expect(e.message).toMatch(/\(and 1 more error\)$/);
  });

  it('parses concurrently with one shared parser', async () => {
    const code = fixture('multi.cu');
    const results = await Promise.all(Array.from({ length: 5 }, () => parseKernels(code)));
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
  });
});

describe('findKernel and kernelAt', () => {
  it('finds by plain or qualified name, and refuses an ambiguous name', async () => {
    const kernels = await parseKernels(fixture('multi.cu'));
    expect(findKernel(kernels, 'clamp')?.qualifiedName).toBe('kt::ops::clamp');
    expect(findKernel(kernels, 'kt::ops::clamp')?.name).toBe('clamp');
    expect(findKernel(kernels, 'missing')).toBeNull();
    const twice = await parseKernels('namespace a { __global__ void k(int x) {} }\nnamespace b { __global__ void k(int x) {} }');
    expect(() => findKernel(twice, 'k')).toThrow("kernel name 'k' is ambiguous: a::k (line 1), b::k (line 2)");
    expect(findKernel(twice, 'b::k')?.range.startLine).toBe(1);
  });

  it('tells which kernel holds the cursor, template line and closing brace included', async () => {
    const code = fixture('reduction.cu') + '\n__global__ void other(int *x) {}\n';
    const kernels = await parseKernels(code);
    const reduce = kernels[0]!;
    const t = locate(code, 'template <typename T, unsigned int');
    expect(kernelAt(kernels, t.line, t.column)).toBe(reduce);
    const inBody = locate(code, '__syncthreads');
    expect(kernelAt(kernels, inBody.line, inBody.column)).toBe(reduce);
    expect(kernelAt(kernels, reduce.range.endLine, reduce.range.endColumn)).toBe(reduce);
    expect(kernelAt(kernels, reduce.range.endLine, reduce.range.endColumn + 1)).toBeNull();
    const helper = locate(code, 'warp_reduce_sum(T value)');
    expect(kernelAt(kernels, helper.line, helper.column)).toBeNull();
    const other = locate(code, 'other');
    expect(kernelAt(kernels, other.line, other.column)?.name).toBe('other');
    expect(kernelAt(kernels, 0, 0)).toBeNull();
  });
});

describe('sameSignature', () => {
  const parse = async (code: string) => parseOne(code);

  it('ignores whitespace, const placement, body and attributes', async () => {
    const a = await parse('__global__ void k(const float* a, float *b, int n) { b[0] = a[0]; }');
    const b = await parse('__global__ void __launch_bounds__(256)\nk(float const *a,\n  float* b, int n) { /* rewritten */ b[0] = 2 * a[0]; }');
    expect(sameSignature(a, b)).toEqual({ same: true });
  });

  it('reports every difference', async () => {
    const a = await parse('__global__ void k(const float *a, float *b, int n) {}');
    expect(sameSignature(a, await parse('__global__ void k2(const float *a, float *b, int n) {}'))).toEqual({
      same: false,
      differences: ["kernel name changed: 'k' -> 'k2'"],
    });
    expect(sameSignature(a, await parse('__global__ void k(const float *a, double *b, int m) {}'))).toEqual({
      same: false,
      differences: ["parameter 2 'b': type changed: 'float *' -> 'double *'", "parameter 3: name changed: 'n' -> 'm'"],
    });
    expect(sameSignature(a, await parse('__global__ void k(const float *a, float *b, int n, int tile) {}'))).toEqual({
      same: false,
      differences: ['parameter count changed: 3 -> 4 (was: a, b, n; now: a, b, n, tile)'],
    });
    expect(sameSignature(a, await parse('template <int TILE> __global__ void k(const float *a, float *b, int n) {}'))).toEqual({
      same: false,
      differences: ['template parameter count changed: 0 -> 1 (was: none; now: TILE)'],
    });
  });

  it('qualifier changes count, unless ignoreQualifiers', async () => {
    const a = await parse('__global__ void k(const float *a, float *b, int n) {}');
    const b = await parse('__global__ void k(const float *__restrict__ a, float *__restrict__ b, const int n) {}');
    const strict = sameSignature(a, b);
    expect(strict.same).toBe(false);
    expect(!strict.same && strict.differences).toEqual([
      "parameter 1 'a': type changed: 'const float *' -> 'const float *__restrict__'",
      "parameter 2 'b': type changed: 'float *' -> 'float *__restrict__'",
      "parameter 3 'n': type changed: 'int' -> 'const int'",
    ]);
    expect(sameSignature(a, b, { ignoreQualifiers: true })).toEqual({ same: true });
    // Pointer depth is never a qualifier.
    const c = await parse('__global__ void k(const float **a, float *b, int n) {}');
    expect(sameSignature(a, c, { ignoreQualifiers: true }).same).toBe(false);
  });
});

describe('nameExpression', () => {
  it('builds NVRTC name expressions', async () => {
    const code = 'namespace ns { template <typename T, int TILE = 16, bool B = false> __global__ void matmul(T *c) {} }\n__global__ void plain(int a) {}';
    const [matmul, plain] = await parseKernels(code);
    expect(nameExpression(matmul!, ['float', 16])).toBe('ns::matmul<float, 16>');
    expect(nameExpression(matmul!, { T: 'double', B: true })).toBe('ns::matmul<double, 16, true>');
    expect(nameExpression(matmul!, ['float'])).toBe('ns::matmul<float>');
    expect(() => nameExpression(matmul!, { TYLE: 4 })).toThrow("kernel 'ns::matmul' has no template parameter 'TYLE'");
    expect(() => nameExpression(matmul!, ['float', 1, true, 4])).toThrow("kernel 'ns::matmul' takes 3 template arguments, got 4");
    expect(nameExpression(plain!)).toBe('plain');
    expect(() => nameExpression(plain!, ['float'])).toThrow("kernel 'plain' is not a template; it takes no template arguments");
  });
});

describe('bundled as CommonJS (as scripts/build.mjs bundles the CLI)', () => {
  it('loads web-tree-sitter and both WASM files from beside the bundle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kernel-source-'));
    try {
      await esbuild.build({
        entryPoints: [join(root, 'src/tuner/source/kernel-parser.ts')],
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        outfile: join(dir, 'kernel-parser.js'),
        logLevel: 'silent',
      });
      copyFileSync(join(root, 'node_modules/tree-sitter-cuda/tree-sitter-cuda.wasm'), join(dir, 'tree-sitter-cuda.wasm'));
      copyFileSync(join(root, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'), join(dir, 'web-tree-sitter.wasm'));
      const script = `require('./kernel-parser.js').parseKernels('__global__ void k(const float *a, int n) {}')
        .then((ks) => console.log(JSON.stringify(ks.map((k) => [k.name, k.parameters.map((p) => p.type)]))))
        .catch((e) => { console.error(e); process.exit(1); });`;
      // The bundle lies outside the repository, so node_modules cannot be the fallback: the files beside it are used.
      const out = execFileSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual([['k', ['const float *', 'int']]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
