import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidTestSpecError, resolveTestSpec } from '../../src/tuner/spec/input-spec';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { loadTuningSpec } from '../../src/tuner/spec/tuning-spec';

const SOURCE = `
template <typename T>
__global__ void saxpy(T *y, const T *x, const float4 *v, T a, int n, unsigned long long m) {}
__global__ void histogram(unsigned int *bins, const unsigned char *data, size_t n) {}
`;

async function kernel(name: string) {
  const kernels = await parseKernels(SOURCE, 'k.cu');
  return kernels.find((k) => k.name === name)!;
}

const saxpySpec: { problemSize: string; arguments: Record<string, object> } = {
  problemSize: 'n',
  arguments: {
    y: { dtype: 'float32', length: 'n', output: true },
    x: { dtype: 'float32', length: 'n', random: { kind: 'normal', mean: 0, std: 2 } },
    v: { dtype: 'float32', length: 'n * 4' },
    a: { dtype: 'float32', value: 2.5 },
    n: { dtype: 'int32', value: 1024 },
    m: { dtype: 'uint64', value: 'n / 2' },
  },
};

describe('resolveTestSpec', () => {
  it('resolves lengths and scalar expressions in argument order', async () => {
    const t = resolveTestSpec(saxpySpec, await kernel('saxpy'));
    expect(t.arguments.map((a) => a.name)).toEqual(['y', 'x', 'v', 'a', 'n', 'm']);
    expect(t.scalars).toEqual({ a: 2.5, n: 1024, m: 512 });
    expect(t.arguments[0]).toEqual({ kind: 'buffer', name: 'y', dtype: 'float32', length: 1024, output: true });
    expect(t.arguments[1]).toMatchObject({ init: { kind: 'random', distribution: { kind: 'normal', mean: 0, std: 2 } } });
    // Inputs without a fill default to a non-zero distribution: zeros hide unwritten outputs.
    expect(t.arguments[2]).toMatchObject({ length: 4096, init: { kind: 'random', distribution: { kind: 'uniform', min: -1, max: 1 } } });
    expect(t.totalBytes).toBe(1024 * 4 * 2 + 4096 * 4);
    expect(t.seed).toBe(1);
  });

  it('keeps an initial content for in/out buffers and poisons pure outputs', async () => {
    const t = resolveTestSpec(
      {
        problemSize: 'n',
        arguments: {
          bins: { dtype: 'uint32', length: 256, output: true, fill: 0 },
          data: { dtype: 'uint8', length: 'n', random: { kind: 'integers', min: 0, max: 255 } },
          n: { dtype: 'uint64', value: 1 << 20 },
        },
      },
      await kernel('histogram'),
    );
    expect(t.arguments[0]).toMatchObject({ output: true, init: { kind: 'fill', value: 0 } });
  });

  it('names every problem at once, with what to change', async () => {
    const bad = {
      problemSize: 'n',
      arguments: {
        y: { dtype: 'float64', length: 'n', output: true },
        x: { dtype: 'float32', value: 3 },
        v: { dtype: 'float32', length: 4097 },
        a: { dtype: 'float32', length: 4 },
        n: { dtype: 'int32', value: 1.5 },
        q: { dtype: 'int32', value: 1 },
      },
    };
    let error: InvalidTestSpecError | undefined;
    try {
      resolveTestSpec(bad, await kernel('saxpy'));
    } catch (e) {
      error = e as InvalidTestSpecError;
    }
    expect(error).toBeInstanceOf(InvalidTestSpecError);
    const problems = error!.problems.join('\n');
    expect(problems).toContain('q: saxpy has no parameter of that name');
    expect(problems).toContain('x: is a pointer');
    expect(problems).toContain('a: is a scalar');
    expect(problems).toContain('m: missing');
    expect(problems).toContain('n: int32 needs an integer, but the value is 1.5');
    expect(problems).toMatch(/v: length 4097 is not a multiple of the 4 lanes of float4/);
    expect(problems).not.toMatch(/y: length/);
  });

  it('checks dtypes against the declared C types', async () => {
    const spec = {
      problemSize: 'n',
      arguments: {
        bins: { dtype: 'int32', length: 256, output: true },
        data: { dtype: 'uint8', length: 'n' },
        n: { dtype: 'uint64', value: 100 },
      },
    };
    expect(() => resolveTestSpec(spec, {} as never)).toThrow();
    const k = await kernel('histogram');
    expect(() => resolveTestSpec(spec, k)).toThrow(/bins: the kernel declares unsigned int \*, which is uint32, but the spec says int32/);
  });

  it('refuses a const output, a spec without outputs and a test over the size limit', async () => {
    const k = await kernel('saxpy');
    const constOut = structuredClone(saxpySpec);
    constOut.arguments.x = { dtype: 'float32', length: 'n', output: true };
    expect(() => resolveTestSpec(constOut, k)).toThrow(/x: is const .* cannot be an output/);
    const noOut = structuredClone(saxpySpec);
    noOut.arguments.y = { dtype: 'float32', length: 'n' };
    expect(() => resolveTestSpec(noOut, k)).toThrow(/no argument is marked "output": true/);
    expect(() => resolveTestSpec(saxpySpec, k, { maxBytes: 1000 })).toThrow(/the buffers need 24\.0 KiB, over the limit of 1000 B/);
  });

  it('rejects malformed specs with the path of the bad field', async () => {
    const k = await kernel('saxpy');
    expect(() => resolveTestSpec({ problemSize: 'n', arguments: { y: { dtype: 'float8', length: 4 } } }, k)).toThrow(/arguments\.y\.dtype/);
    expect(() => resolveTestSpec({ problemSize: 'n', arguments: { y: { dtype: 'float32', length: 'n', fill: 1, random: { kind: 'uniform' } } } }, k)).toThrow(
      /either fill or random/,
    );
    expect(() => resolveTestSpec({ ...saxpySpec, arguments: { ...saxpySpec.arguments, n: { dtype: 'int32', value: 'process.exit()' } } }, k)).toThrow(/n: value/);
  });
});

const HALF_SOURCE = `
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void scale(__half *out, const half *in, const __half2 *pairs, __nv_bfloat16 *bout, const nv_bfloat162 *bpairs, half a, __nv_bfloat16 b, int n) {}
`;

async function halfKernel() {
  return (await parseKernels(HALF_SOURCE, 'half.cu'))[0]!;
}

const halfSpec = () => ({
  problemSize: 'n',
  arguments: {
    out: { dtype: 'float16', length: 'n', output: true },
    in: { dtype: 'float16', length: 'n', random: { kind: 'integers', min: -2048, max: 2048 } },
    pairs: { dtype: 'float16', length: '2 * n' },
    bout: { dtype: 'bfloat16', length: 'n', output: true, fill: 0.5 },
    bpairs: { dtype: 'bfloat16', length: '2 * n', random: { kind: 'normal', mean: 0, std: 1 } },
    a: { dtype: 'float16', value: 0.1 },
    b: { dtype: 'bfloat16', value: -3 },
    n: { dtype: 'int32', value: 1000 },
  } as Record<string, object>,
});

/** The problems of a spec that fails, one per line. */
function problemsOf(spec: unknown, k: Awaited<ReturnType<typeof halfKernel>>): string[] {
  try {
    resolveTestSpec(spec, k);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidTestSpecError);
    return (e as InvalidTestSpecError).problems;
  }
  throw new Error('the spec was accepted');
}

describe('resolveTestSpec with 16-bit floats', () => {
  it('maps half, __half, __nv_bfloat16, nv_bfloat16 and their pairs to float16 and bfloat16 (2 bytes an element)', async () => {
    const t = resolveTestSpec(halfSpec(), await halfKernel());
    expect(t.arguments.map((a) => [a.name, a.dtype])).toEqual([
      ['out', 'float16'],
      ['in', 'float16'],
      ['pairs', 'float16'],
      ['bout', 'bfloat16'],
      ['bpairs', 'bfloat16'],
      ['a', 'float16'],
      ['b', 'bfloat16'],
      ['n', 'int32'],
    ]);
    // A half2* of n pairs is 2n float16 elements.
    expect(t.arguments[2]).toMatchObject({ kind: 'buffer', length: 2000 });
    expect(t.totalBytes).toBe(2 * (1000 + 1000 + 2000 + 1000 + 2000));
    expect(t.scalars).toMatchObject({ a: 0.1, b: -3 });
  });

  it('reports a dtype that does not match the declared half type, and odd lengths of pairs', async () => {
    const spec = halfSpec();
    spec.arguments.out = { dtype: 'float32', length: 'n', output: true };
    spec.arguments.b = { dtype: 'float16', value: 1 };
    spec.arguments.bpairs = { dtype: 'bfloat16', length: 'n + 1' };
    const problems = problemsOf(spec, await halfKernel());
    expect(problems).toContain('out: the kernel declares __half *, which is float16, but the spec says float32');
    expect(problems).toContain('b: the kernel declares __nv_bfloat16, which is bfloat16, but the spec says float16');
    expect(problems).toContain('bpairs: length 1001 is not a multiple of the 2 lanes of nv_bfloat162');
  });

  it('keeps values within the format: finite range, and integer draws where every integer is exact', async () => {
    const spec = halfSpec();
    spec.arguments.in = { dtype: 'float16', length: 'n', random: { kind: 'integers', min: 0, max: 2049 } };
    spec.arguments.pairs = { dtype: 'float16', length: '2 * n', random: { kind: 'uniform', min: -1e5, max: 1 } };
    spec.arguments.bout = { dtype: 'bfloat16', length: 'n', output: true, fill: 1e39 };
    spec.arguments.bpairs = { dtype: 'bfloat16', length: '2 * n', random: { kind: 'integers', min: -256, max: 257 } };
    spec.arguments.a = { dtype: 'float16', value: 65536 };
    const problems = problemsOf(spec, await halfKernel());
    expect(problems).toEqual([
      'a: 65536 does not fit float16 (|x| <= 65504)',
      'in: integers 0..2049 are not all exact in float16: keep them within |x| <= 2048',
      'pairs: -100000..1 does not fit float16 (|x| <= 65504)',
      'bout.fill: 1e+39 does not fit bfloat16 (|x| <= 3.3895313892515355e+38)',
      'bpairs: integers -256..257 are not all exact in bfloat16: keep them within |x| <= 256',
    ]);
  });
});

describe('test spec messages name the field at fault', () => {
  const k = () => kernel('histogram');
  const spec = (bins: unknown) => ({
    problemSize: 'n',
    arguments: { bins, data: { dtype: 'uint8', length: 'n' }, n: { dtype: 'uint64', value: 100 } },
  });

  it('lists the supported dtypes for an unknown one', async () => {
    expect(problemsOf(spec({ dtype: 'float8', length: 256, output: true }), await k())).toEqual([
      'arguments.bins.dtype: unknown dtype "float8"; supported: int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, float64',
    ]);
    expect(problemsOf(spec({ length: 256, output: true }), await k())).toEqual([
      'arguments.bins.dtype: required; supported: int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, float64',
    ]);
  });

  it('names a misspelt key with the key it was meant to be, and says nothing more about that key', async () => {
    expect(problemsOf(spec({ dtyp: 'uint32', length: 256, output: true }), await k())).toEqual(['arguments.bins: unknown key "dtyp": did you mean "dtype"?']);
    expect(problemsOf(spec({ dtype: 'uint32', lenght: 256, output: true }), await k())).toEqual(['arguments.bins: unknown key "lenght": did you mean "length"?']);
    expect(problemsOf(spec({ dtype: 'uint32', valeu: 3 }), await k())).toEqual(['arguments.bins: unknown key "valeu": did you mean "value"?']);
    expect(problemsOf(spec({ dtyp: 'uint32', value: 3 }), await k())).toEqual(['arguments.bins: unknown key "dtyp": did you mean "dtype"?']);
    // A key like none of them: the keys an argument has.
    expect(problemsOf(spec({ dtype: 'uint32', length: 256, colour: 'red' }), await k())).toEqual([
      'arguments.bins: unknown key "colour" (an argument has dtype and value, or dtype, length, output, fill, random)',
    ]);
    expect(problemsOf(spec({ dtype: 'uint32' }), await k())).toEqual([
      'arguments.bins: give a value (for a scalar) or a length (for a buffer): an argument has dtype and value, or dtype, length, output, fill, random',
    ]);
    // A misspelt key of the spec itself.
    expect(problemsOf({ problemSiz: 'n', arguments: spec({ dtype: 'uint32', length: 256, output: true }).arguments }, await k())).toEqual([
      'spec: unknown key "problemSiz": did you mean "problemSize"?',
    ]);
  });

  it('tells a scalar from a buffer by its keys, and refuses a mix of both', async () => {
    expect(problemsOf(spec({ dtype: 'uint32', value: 3, length: 256, output: true }), await k())).toEqual([
      'arguments.bins: value makes it a scalar, but length, output are for buffers: give one or the other',
    ]);
    expect(problemsOf(spec({ dtype: 'uint32', length: true, output: 'yes' }), await k())).toEqual([
      'arguments.bins.length: expected a finite number or an expression over the scalar arguments (a string such as "n / 2")',
      'arguments.bins.output: Invalid input: expected boolean, received string',
    ]);
    expect(problemsOf(spec({ dtype: 'uint32', length: 256, random: { kind: 'poisson' } }), await k())).toEqual([
      'arguments.bins.random.kind: expected kind uniform (min, max), normal (mean, std) or integers (min, max)',
    ]);
    expect(problemsOf(spec(7), await k())).toEqual([
      'arguments.bins: expected an object (an argument has dtype and value, or dtype, length, output, fill, random), received 7',
    ]);
  });

  it('reads the same through a tuning spec file, whose own keys are checked the same way', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'lkt-spec-')), 'spec.yaml');
    writeFileSync(file, 'arguments:\n  c: { dtyp: float32, length: 4 }\nproblemSize: 4\ntuneParam: { block_size_x: [32] }\nrestriction: []\n');
    expect(() => loadTuningSpec(file)).toThrow(
      `the tuning spec ${file} is not valid:\n` +
        '  arguments.c: unknown key "dtyp": did you mean "dtype"?\n' +
        '  (top level): unknown key "tuneParam": did you mean "tuneParams"?; unknown key "restriction": did you mean "restrictions"?',
    );
  });
});
