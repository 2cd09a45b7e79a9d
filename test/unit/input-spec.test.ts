import { describe, expect, it } from 'vitest';
import { InvalidTestSpecError, resolveTestSpec } from '../../src/tuner/input-spec';
import { parseKernels } from '../../src/tuner/kernel-source';

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
    expect(() => resolveTestSpec({ problemSize: 'n', arguments: { y: { dtype: 'float8', length: 4 } } }, k)).toThrow(/arguments\.y/);
    expect(() => resolveTestSpec({ problemSize: 'n', arguments: { y: { dtype: 'float32', length: 'n', fill: 1, random: { kind: 'uniform' } } } }, k)).toThrow(
      /either fill or random/,
    );
    expect(() => resolveTestSpec({ ...saxpySpec, arguments: { ...saxpySpec.arguments, n: { dtype: 'int32', value: 'process.exit()' } } }, k)).toThrow(/n: value/);
  });
});
