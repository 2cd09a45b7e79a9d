// Constant memory (Kernel Tuner's cmem_args): a spec's constantMemory resolved against the kernel and the file's
// __constant__ declarations, and copied to the symbols before every run by the real GpuBackend and GPU worker, over the
// fake addon (test/support/fake-addon.cjs: a launch whose module's __constant__ symbols were not written since its
// last launch fails, so a run without its copy cannot pass).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { constantSymbols } from '../../src/tuner/source/constant-symbols';
import { preprocess } from '../../src/tuner/source/preprocessor';
import { checkConstantMemory, InvalidTestSpecError, resolveTestSpec, type TestSpecInput } from '../../src/tuner/spec/input-spec';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-cmem-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const KERNEL = `#define TAPS 8
__constant__ float coeffs[2 * TAPS];
static __constant__ int table[4];
extern "C" __global__ void scripted(float *out, const float *in, const float *weights, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = in[i] * coeffs[i % 16] + table[i % 4];
}
`;
/** The reference takes the weights as an argument: it declares no __constant__ memory, so it gets none. */
const REFERENCE = `extern "C" __global__ void reference(float *out, const float *in, const float *weights, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * weights[i % 16];
}
`;

const spec = (constantMemory: TestSpecInput['constantMemory']): TestSpecInput => ({
  problemSize: 'n',
  arguments: {
    out: { dtype: 'float32', length: 'n', output: true },
    in: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
    weights: { dtype: 'float32', length: 16, random: { kind: 'normal', mean: 0, std: 1 } },
    n: { dtype: 'int32', value: 4096 },
  },
  ...(constantMemory && { constantMemory }),
});

describe('a spec\'s constant memory', () => {
  it('is the data of a buffer argument, or its own, made as an input\'s', async () => {
    const kernel = await TunableKernel.create(KERNEL, { fileName: 'k.cu' });
    const resolved = resolveTestSpec(spec({ coeffs: { sameAs: 'weights' }, table: { dtype: 'int32', length: 4, random: { kind: 'integers', min: 0, max: 9 } } }), kernel.signature);
    expect(resolved.constants).toEqual([
      { symbol: 'coeffs', dtype: 'float32', length: 16, source: { kind: 'argument', name: 'weights' } },
      { symbol: 'table', dtype: 'int32', length: 4, source: { kind: 'own', init: { kind: 'random', distribution: { kind: 'integers', min: 0, max: 9 } } } },
    ]);
    expect(resolved.totalBytes).toBe(4096 * 4 * 2 + 16 * 4 + 4 * 4);
  });

  it('names what is wrong with it', async () => {
    const kernel = await TunableKernel.create(KERNEL, { fileName: 'k.cu' });
    const problems = (constantMemory: TestSpecInput['constantMemory']) => {
      try {
        resolveTestSpec(spec(constantMemory), kernel.signature);
        return [];
      } catch (e) {
        return (e as InvalidTestSpecError).problems;
      }
    };
    expect(problems({ coeffs: { sameAs: 'n' } })).toEqual(["constantMemory.coeffs.sameAs: 'n' is a scalar argument; name a buffer argument, or give the data (dtype, length, fill or random)"]);
    expect(problems({ coeffs: { sameAs: 'filter' } })).toEqual(["constantMemory.coeffs.sameAs: 'filter' is not an argument (arguments: out, in, weights, n)"]);
    expect(problems({ 'no-name': { sameAs: 'weights' } })).toEqual(["constantMemory.no-name: a __constant__ symbol's name is a C identifier"]);
    expect(problems({ coeffs: { dtype: 'float32', lenght: 16 } as never })).toEqual(['constantMemory.coeffs: unknown key "lenght": did you mean "length"?']);
  });

  it('must fit the __constant__ variables the file declares, as the preprocessor leaves them', () => {
    const declared = constantSymbols(preprocess(KERNEL, 'k.cu', { world: 'closed' }));
    expect([...declared.values()]).toEqual([
      { name: 'coeffs', type: 'float', elements: 16, at: 'k.cu:2' },
      { name: 'table', type: 'int', elements: 4, at: 'k.cu:3' },
    ]);
    const check = (symbol: string, dtype: 'float32' | 'float64', length: number) => () =>
      checkConstantMemory([{ symbol, dtype, length, source: { kind: 'argument', name: 'weights' } }], declared, 'k.cu');
    expect(check('coeffs', 'float32', 16)).not.toThrow();
    expect(check('coefs', 'float32', 16)).toThrow('constantMemory.coefs: k.cu declares no __constant__ coefs (it declares coeffs, table)');
    expect(check('coeffs', 'float64', 16)).toThrow('constantMemory.coeffs: __constant__ float coeffs (k.cu:2) is float32, but the data is float64');
    expect(check('coeffs', 'float32', 17)).toThrow('constantMemory.coeffs: 17 elements do not fit __constant__ float coeffs (k.cu:2), which holds 16');
  });
});

describe('constant memory on the GPU worker (the fake addon)', () => {
  const withGpu = async (work: (gpu: GpuBackend) => Promise<void>) => {
    const gpu = await GpuBackend.open({ env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON }, cacheDir: path.join(scratch, 'helpers') });
    try {
      await work(gpu);
    } finally {
      await gpu.dispose();
    }
  };

  it('is copied before every run: the oracle\'s, each check, each timed series (probe and rest)', async () => {
    const file = path.join(scratch, 'k.cu');
    writeFileSync(file, KERNEL);
    await withGpu(async (gpu) => {
      const kernel = await TunableKernel.create(KERNEL, { fileName: 'k.cu', filePath: file });
      const test = KernelTest.fromSpec(spec({ coeffs: { sameAs: 'weights' }, table: { dtype: 'int32', length: 4, fill: 3 } }));
      const result = await kernel.tune(test, { block_size_x: [32, 64, 128, 256] }, [], { backend: gpu, iterations: 5, earlyStop: 1.01, referenceConfig: { block_size_x: 256 } });
      expect(result.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
      // The same, against a reference of its own that declares no constant memory (it is given none).
      const referenced = await kernel.tune(test, { block_size_x: [64, 128] }, [], { backend: gpu, iterations: 5, oracle: { code: REFERENCE, kernelName: 'reference', config: { block_size_x: 128 } } });
      expect(referenced.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    });
  });

  it('left out, the kernel runs without it, which the test double refuses (as a real kernel computes garbage)', async () => {
    await withGpu(async (gpu) => {
      const kernel = await TunableKernel.create(KERNEL, { fileName: 'k.cu' });
      const run = kernel.tune(KernelTest.fromSpec(spec(undefined)), { block_size_x: [64] }, [], { backend: gpu, iterations: 5 });
      await expect(run).rejects.toThrow(/__constant__ coeffs, table not copied before this launch/);
    });
  });
});
