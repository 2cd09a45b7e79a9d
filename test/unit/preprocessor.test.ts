// The preprocessor's view of a file (src/tuner/source/preprocessor.ts), the kernels found in it for the configurations of
// a space (space-view.ts), and Kernel Tuner's loop_unroll_factor parameters as the compilers get them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withLoopUnrollFactors } from '../../src/tuner/compile/unroll-factors';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { evaluateCondition, preprocess, type PreprocessOptions } from '../../src/tuner/source/preprocessor';
import { kernelOfSpace, SignatureVariesError, spaceOptions } from '../../src/tuner/source/space-view';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';

const closed = (defines: Record<string, string> = {}): PreprocessOptions => ({ world: 'closed', defines });

/** The view's lines that hold more than spaces. */
const visibleLines = (view: string) => view.split('\n').filter((l) => l.trim() !== '');

describe('#if conditions', () => {
  const defines = { A: '', N: '4', H: '0x10', TWICE: 'N * 2', MAX: '' };
  it.each([
    ['defined(A)', 1],
    ['defined A && !defined(B)', 1],
    ['defined(B) || N > 3', 1],
    ['N * 2 == 8 && H == 16', 1],
    ['TWICE == 8', 1],
    ['(N << 2) == 16 && (H | 1) == 17 && (H & 0x18) == 16 && (N ^ 5) == 1 && ~0 == -1', 1],
    ['N > 3 ? 10 : 20', 10],
    ['7 / 2 == 3 && -7 / 2 == -3 && 7 % 3 == 1', 1],
    ['1u + 2UL + 010 + 0b11', 14],
    ['UNDEFINED_NAME', 0],
    ['!(defined(A))', 0],
    ['__CUDA_ARCH__ >= 800', undefined],
    ['CUDART_VERSION >= 12000', undefined],
    ['defined(B) && __CUDA_ARCH__ >= 800', 0],
    ['defined(A) || __CUDA_ARCH__ >= 800', 1],
    ['N / 0', undefined],
  ])('closed world: %s is %s', (condition, value) => {
    expect(evaluateCondition(condition, closed(defines))).toBe(value);
  });

  it('expands function-like macros, and leaves what a -D could change open in the open world', () => {
    const options: PreprocessOptions = { world: 'open', defines: { SQ: '' } };
    const withMacro = preprocess('#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define N 3\n#if MAX(N, 2) == 3\nyes\n#else\nno\n#endif\n', 'f.cu', options);
    expect(visibleLines(withMacro.files[0]!.view)).toEqual(['#define MAX(a, b) ((a) > (b) ? (a) : (b))', '#define N 3', 'yes']);
    expect(evaluateCondition('USER_FLAG > 1', { world: 'open' })).toBeUndefined();
    expect(evaluateCondition('USER_FLAG > 1', { world: 'closed' })).toBe(0);
    expect(evaluateCondition('defined(grid_size_x)', { world: 'closed', definedWithUnknownValue: ['grid_size_x'] })).toBe(1);
    expect(evaluateCondition('grid_size_x > 4', { world: 'closed', definedWithUnknownValue: ['grid_size_x'] })).toBeUndefined();
  });
});

describe('the view', () => {
  it('blanks what the compiler does not see and keeps every offset and line', () => {
    const code = [
      '#define USE_FAST 1',
      '#if USE_FAST',
      'int fast;',
      '#elif defined(OTHER)',
      'int other;',
      '#else',
      'int slow;',
      '#endif',
      '#ifdef NOT_HERE // a comment',
      'int never; \\',
      '  continued;',
      '#endif',
      'int after;',
    ].join('\r\n');
    const { view } = preprocess(code, 'f.cu', closed()).files[0]!;
    expect(view.length).toBe(code.length);
    expect(view.split('\n').length).toBe(code.split('\n').length);
    expect(visibleLines(view).map((l) => l.trim())).toEqual(['#define USE_FAST 1', 'int fast;', 'int after;']);
  });

  it('leaves a conditional it cannot decide as it is between declarations, and an #elif after decided branches as an #if', async () => {
    const code = '#if 0\n__global__ void off(int a) {}\n#elif defined(USE_ELIF)\n__global__ void elif_k(int a) {}\n#else\n__global__ void else_k(int a) {}\n#endif\n';
    const unit = preprocess(code, 'f.cu', { world: 'open' });
    expect(visibleLines(unit.files[0]!.view)).toEqual(['#  if defined(USE_ELIF)', '__global__ void elif_k(int a) {}', '#else', '__global__ void else_k(int a) {}', '#endif']);
    expect(unit.groups.map((g) => g.resolution)).toEqual(['kept']);
    // In the tuner's closed world USE_ELIF is defined nowhere: only the #else is compiled.
    expect((await parseKernels(code, 'f.cu', { preprocess: closed() })).map((k) => k.name)).toEqual(['else_k']);
  });

  it("reads Kernel Tuner's idiom of a conditional inside a kernel's declaration, with and without a configuration", async () => {
    const code = [
      '#ifndef blocks_per_sm',
      '#define blocks_per_sm 0',
      '#endif',
      'extern "C"',
      '__global__ void',
      '#if blocks_per_sm > 0',
      '__launch_bounds__(block_size_x, blocks_per_sm)',
      '#endif',
      'scale(float *x, int n) { x[0] *= n; }',
    ].join('\n');
    // The editor (open world): blocks_per_sm may come from -D, so the first branch that may hold is read.
    const [open] = await parseKernels(code, 'k.cu');
    expect(open!.name).toBe('scale');
    expect(open!.launchBounds?.minBlocks).toBe('blocks_per_sm');
    expect(open!.externC).toBe(true);
    // The tuner: the file's own default (0) decides it.
    const [tuned] = await parseKernels(code, 'k.cu', { preprocess: closed({ kernel_tuner: '1' }) });
    expect(tuned!.launchBounds).toBeUndefined();
    expect(tuned!.parameters.map((p) => p.type)).toEqual(['float *', 'int']);
    // Tuned as a parameter, the conditional is settled per configuration and the signature is the same in all.
    const inSpace = await kernelOfSpace(code, 'k.cu', 'scale', { block_size_x: [64, 128], blocks_per_sm: [0, 2] }, {});
    expect(inSpace.kernel?.parameters.map((p) => p.name)).toEqual(['x', 'n']);
    expect(inSpace.views).toHaveLength(3); // the space's view, then blocks_per_sm = 0 and 2
  });

  it("overrides a tunable parameter's own #define in the closed world, as the tuner's -D does", () => {
    const code = '#define TILE 16\n#if TILE == 16\nsixteen\n#else\nother\n#endif\n';
    const options = spaceOptions({ TILE: [32] }, {});
    expect(visibleLines(preprocess(code, 'f.cu', options).files[0]!.view)).toEqual(['#define TILE 16', 'other']);
  });

  it('blanks the uses of macros that expand to nothing, so that tree-sitter reads the declaration', async () => {
    const code = '#define __global\n#define LOCAL_PTR __global\n__global__ void k(const __global float* x, LOCAL_PTR float* y) {}\n';
    const [k] = await parseKernels(code, 'k.cu');
    expect(k!.parameters.map((p) => `${p.type} ${p.name}`)).toEqual(['const float * x', 'float * y']);
    expect(k!.signatureText).toBe('__global__ void k(const __global float* x, LOCAL_PTR float* y)');
  });

  it('follows local headers with the macros defined so far, and reports their kernels with their file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lkt-pp-'));
    try {
      writeFileSync(path.join(dir, 'defs.h'), '#pragma once\n#define USE_DOUBLE\n');
      writeFileSync(path.join(dir, 'k.cuh'), '#include "defs.h"\n#ifdef USE_DOUBLE\n__global__ void k(double *x) {}\n#else\n__global__ void k(float *x) {}\n#endif\n');
      const code = '#include "defs.h"\n#include "k.cuh"\n#include "defs.h"\n';
      const options: PreprocessOptions = { world: 'closed', includes: { filePath: path.join(dir, 'main.cu') } };
      expect(preprocess(code, 'main.cu', options).files.map((f) => path.basename(f.fileName))).toEqual(['main.cu', 'defs.h', 'k.cuh']);
      const kernels = await parseKernels(code, 'main.cu', { preprocess: options });
      expect(kernels.map((k) => [k.name, k.parameters[0]!.type, k.file])).toEqual([['k', 'double *', path.join(dir, 'k.cuh')]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a kernel across the configurations of a space', () => {
  const varying = [
    '#if VARIANT == 1',
    '__global__ void k(float *x, int n) {}',
    '#else',
    '__global__ void k(float *x) {}',
    '#endif',
  ].join('\n');

  it('refuses a kernel whose signature depends on a tuned parameter, naming the value, the line and the difference', async () => {
    const error = await kernelOfSpace(varying, 'v.cu', 'k', { VARIANT: [0, 1] }, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SignatureVariesError);
    expect((error as Error).message).toBe(
      "kernel 'k' has another signature when VARIANT = 1 (v.cu:1: #if VARIANT == 1): parameter count changed: 1 -> 2 (was: x; now: x, n). " +
        'Every configuration is checked against the same inputs, so the parameters must be the same in every branch, or the parameter fixed to one value',
    );
    // With the parameter fixed, there is one kernel and nothing varies.
    expect((await kernelOfSpace(varying, 'v.cu', 'k', { VARIANT: [1] }, {})).kernel?.parameters).toHaveLength(2);
  });

  it('refuses a space where some configurations do not compile the kernel', async () => {
    const code = '#if ENABLE\n__global__ void k(float *x) {}\n#endif\n';
    await expect(kernelOfSpace(code, 'e.cu', 'k', { ENABLE: [1, 0] }, {})).rejects.toThrow("kernel 'k' is not compiled when ENABLE = 0 (e.cu:1: #if ENABLE)");
  });

  it('finds the one kernel of that name each configuration compiles, when the signature is the same in all', async () => {
    const code = '#if SMALL\n__global__ void k(float *x) { x[0] = 1; }\n#else\n__global__ void k(float *y) { y[1] = 2; }\n#endif\n';
    const error = await kernelOfSpace(code, 's.cu', 'k', { SMALL: [0, 1] }, {}).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^kernel 'k' has another signature when SMALL = 1 \(s\.cu:1: #if SMALL\): parameter 1: name changed: 'y' -> 'x'/);
    const same = code.replace('float *y) { y[1]', 'float *x) { x[1]');
    const found = await kernelOfSpace(same, 's.cu', 'k', { SMALL: [0, 1] }, {});
    expect(found.kernel?.bodyRange.startLine).toBe(3); // the first configuration's (SMALL = 0)
    expect(found.kernels).toHaveLength(1);
    // Without a name it is the only kernel; beside another kernel, it must be named.
    expect((await kernelOfSpace(same, 's.cu', undefined, { SMALL: [0, 1] }, {})).kernel?.name).toBe('k');
    const two = await kernelOfSpace(`${same}__global__ void other(int *y) {}\n`, 's.cu', undefined, { SMALL: [0, 1] }, {});
    expect(two.kernel).toBeNull();
    expect(two.kernels.map((k) => k.name)).toEqual(['k', 'k', 'other']);
  });

  it('tune() reads the file for its own space: the same check before anything runs', async () => {
    const kernel = await TunableKernel.create(varying, { fileName: 'v.cu', kernelName: 'k', space: { tuneParams: { VARIANT: [1] } } });
    expect(kernel.signature.parameters).toHaveLength(2);
    const test = KernelTest.fromSpec({ problemSize: 4, arguments: { x: { dtype: 'float32', length: 4, output: true } } });
    await expect(kernel.tune(test, { VARIANT: [0, 1] })).rejects.toThrow(SignatureVariesError);
  });
});

describe("Kernel Tuner's loop_unroll_factor parameters", () => {
  const source = 'line 1\n  #pragma unroll loop_unroll_factor_t\nfor (;;) {}\n#pragma unroll loop_unroll_factor_tx\n';

  it('reach the compiler as constexpr int, each line of the source keeping its number', () => {
    const { source: out, defines } = withLoopUnrollFactors(source, { block_size_x: '32', loop_unroll_factor_t: '4' });
    expect(defines).toEqual({ block_size_x: '32' });
    expect(out).toBe(`constexpr int loop_unroll_factor_t = 4;\n#line 1\n${source}`);
  });

  it('with the value 0, blank their own #pragma unroll lines (no unroll pragma) and define nothing', () => {
    const { source: out, defines } = withLoopUnrollFactors(source, { loop_unroll_factor_t: '0' });
    expect(defines).toEqual({});
    expect(out.split('\n')).toEqual(['line 1', ' '.repeat('  #pragma unroll loop_unroll_factor_t'.length), 'for (;;) {}', '#pragma unroll loop_unroll_factor_tx', '']);
  });
});
