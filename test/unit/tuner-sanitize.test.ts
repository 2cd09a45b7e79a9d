// TunableKernel.sanitize without a GPU: the small problem a configuration is checked on (every block keeps its shape),
// and the whole check through the real GpuBackend and GPU worker over the fake addon, with compute-sanitizer's test
// double (test/support/fake-compute-sanitizer.mjs) found on PATH as a user's would be: compiled with line information,
// findings located at the file's lines with their text, a reduced problem's findings confirmed (by the reference kernel,
// or on the test's own problem) before they stand, and every way it cannot check said so.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { describeFinding, describeVerdict, type SanitizerVerdict } from '../../src/tuner/run/sanitizer';
import { smallerProblem } from '../../src/tuner/run/small-problem';
import { Geometry } from '../../src/tuner/space/geometry';
import { resolveTestSpec, type TestSpecInput } from '../../src/tuner/spec/input-spec';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';
import { FakeBackend } from '../support/fake-backend';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-sanitize-'));
const toolDir = path.join(scratch, 'bin');
const originalPath = process.env.PATH;
beforeAll(() => {
  // Found as on a user's machine: on PATH.
  mkdirSync(toolDir);
  symlinkSync(path.resolve(__dirname, '../support/fake-compute-sanitizer.mjs'), path.join(toolDir, 'compute-sanitizer'));
  process.env.PATH = `${toolDir}${path.delimiter}${originalPath}`;
});
afterAll(() => {
  process.env.PATH = originalPath;
  rmSync(scratch, { recursive: true, force: true });
});

const spec = (n: number | string, problemSize: TestSpecInput['problemSize'] = 'n'): TestSpecInput => ({
  problemSize,
  arguments: {
    a: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
    b: { dtype: 'float32', length: 'n', fill: 1 },
    c: { dtype: 'float32', length: 'n', output: true },
    n: { dtype: 'int32', value: n },
  },
});

describe('the small problem a configuration is checked on', () => {
  const signature = async () => (await TunableKernel.create('__global__ void k(const float *a, const float *b, float *c, int n) {}', { fileName: 'k.cu' })).signature;
  const reduce = async (s: TestSpecInput, config: Record<string, number>, gridDivX?: string[]) => {
    const resolved = resolveTestSpec(s, await signature());
    const geometry = new Geometry({ problemSize: resolved.problemSize, ...(gridDivX && { gridDivX }) }, { paramNames: Object.keys(config), scalarNames: Object.keys(resolved.scalars) });
    return smallerProblem(s, resolved, geometry, config);
  };

  it('keeps two whole blocks and the partial one: every block has the shape it has in the test', async () => {
    // 1000 = 3 x 256 + 232: the reduced problem has 2 whole blocks and the same partial block of 232.
    expect(await reduce(spec(1000), { block_size_x: 256 })).toMatchObject({ reduced: { n: { from: 1000, to: 744 } }, spec: { arguments: { n: { dtype: 'int32', value: 744 } } } });
    expect((await reduce(spec(1 << 20), { block_size_x: 128 }))?.reduced).toEqual({ n: { from: 1 << 20, to: 256 } });
    // The work of a block is its grid divisors' product (a block of 32 threads with 4 elements each covers 128).
    expect((await reduce(spec(4096), { block_size_x: 32, tile: 4 }, ['block_size_x', 'tile']))?.reduced).toEqual({ n: { from: 4096, to: 256 } });
  });

  it('keeps every dimension a scalar sizes: the least common multiple of their blocks\' work', async () => {
    const square = await reduce(spec(4096, ['n', 'n']), { block_size_x: 32, block_size_y: 12 });
    expect(square?.reduced).toEqual({ n: { from: 4096, to: 4096 % 96 + 192 } });
  });

  it('leaves dimensions it cannot shrink without changing the kernel\'s arguments as they are', async () => {
    expect(await reduce(spec(4096, 'n / 2'), { block_size_x: 64 })).toBeUndefined();
    expect(await reduce(spec(4096, 4096), { block_size_x: 64 })).toBeUndefined();
    expect(await reduce(spec('4096 * 1'), { block_size_x: 64 })).toBeUndefined();
    // Already no more than two blocks and a partial one.
    expect(await reduce(spec(300), { block_size_x: 256 })).toBeUndefined();
  });
});

/** vector_add (which the fake addon runs), with a line the fake tool reports for `label` when it is given. */
const kernel = (body = '    if (i < n) c[i] = a[i] + b[i];') => `// a kernel file
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
${body}
}
`;

describe('TunableKernel.sanitize (GpuBackend over the fake addon, compute-sanitizer\'s test double on PATH)', () => {
  const withGpu = async (work: (gpu: GpuBackend) => Promise<void>, env: Record<string, string> = {}) => {
    const gpu = await GpuBackend.open({ env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, ...env }, cacheDir: path.join(scratch, 'helpers') });
    try {
      await work(gpu);
    } finally {
      await gpu.dispose();
    }
  };
  const fileOf = (name: string, code: string) => {
    const file = path.join(scratch, name);
    writeFileSync(file, code);
    return file;
  };
  const sanitized = async (code: string, name: string, options: Parameters<TunableKernel['sanitize']>[2] = {}, n = 1 << 20): Promise<SanitizerVerdict> => {
    const file = fileOf(name, code);
    const k = await TunableKernel.create(code, { fileName: name, filePath: file });
    let verdict!: SanitizerVerdict;
    await withGpu(async (gpu) => {
      verdict = await k.sanitize([KernelTest.fromSpec(spec(n)), KernelTest.fromSpec(spec(2 * n))], { block_size_x: 256 }, { backend: gpu, ...options });
    });
    return verdict;
  };

  it('checks a clean kernel under the four tools on the smallest test made small', async () => {
    const v = await sanitized(kernel(), 'clean.cu');
    if (v.status !== 'clean') throw new Error(describeVerdict(v));
    expect(v.tools).toEqual(['memcheck', 'racecheck', 'synccheck', 'initcheck']);
    expect(v.launch).toEqual({ grid: [2, 1, 1], block: [256, 1, 1], reduced: { n: { from: 1 << 20, to: 512 } } });
    expect(v.sanitizer.version).toBe('2025.3.1');
    expect(describeVerdict(v)).toMatch(/^compute-sanitizer 2025\.3\.1: clean under memcheck, racecheck, synccheck, initcheck \(grid \(2, 1, 1\), block \(256, 1, 1\), n = 512 \(the test's 1048576\); \d+\.\d s\)$/);
  });

  it('names a finding at the file\'s line, with its text, compiled with line information', async () => {
    const code = kernel('    if (i < n) c[i] = a[i + 1] + b[i];  // fake-sanitizer: oob-read');
    const v = await sanitized(code, 'oob.cu', { oracle: { code: kernel(), config: { block_size_x: 128 } } });
    if (v.status !== 'hazards') throw new Error(describeVerdict(v));
    const [finding] = v.findings;
    expect(finding!.at).toEqual({ file: path.join(scratch, 'oob.cu'), line: 4, text: '    if (i < n) c[i] = a[i + 1] + b[i];  // fake-sanitizer: oob-read' });
    expect(describeFinding(finding!)).toBe(
      'memcheck: Invalid __global__ read of size 4 bytes at oob.cu:4 (`if (i < n) c[i] = a[i + 1] + b[i];  // fake-sanitizer: oob-read`) by thread (31,0,0) in block (7,0,0) and 1 more like it: Address 0x7fb1e6000800 is out of bounds; and is 0 bytes after the nearest allocation at 0x7fb1e6000000 of size 2,048 bytes',
    );
    // Found on the reduced problem, where the reference kernel runs clean: it stands.
    expect(v.note).toBe("found on a reduced problem (grid (2, 1, 1), block (256, 1, 1), n = 512 (the test's 1048576)), on which the reference kernel runs clean");
    expect(v.tools).toEqual(['memcheck', 'racecheck', 'synccheck', 'initcheck']);
  });

  it('names both sides of a race', async () => {
    const code = kernel(['    __shared__ float s[256];', '    s[threadIdx.x] = a[i];  // fake-sanitizer: race-write', '    c[i] = s[255 - threadIdx.x];  // fake-sanitizer: race-read'].join('\n'));
    const v = await sanitized(code, 'race.cu', { tools: ['racecheck'] });
    if (v.status !== 'hazards') throw new Error(describeVerdict(v));
    expect(describeFinding(v.findings[0]!)).toBe(
      'racecheck: a race between a write at race.cu:5 (`s[threadIdx.x] = a[i];  // fake-sanitizer: race-write`) and a read at race.cu:6 (`c[i] = s[255 - threadIdx.x];  // fake-sanitizer: race-read`) (4096 hazards), with no barrier between them',
    );
    // No reference to vouch for the reduced problem: the race is confirmed on the test's own.
    expect(v.note).toBe("reported on a reduced problem (grid (2, 1, 1), block (256, 1, 1), n = 512 (the test's 1048576)) and confirmed on the test's own");
    expect(v.launch.reduced).toEqual({});
  });

  it('finds the lines of a file given without a path, which the tool names under the directory it ran in', async () => {
    const code = kernel('    if (i < n) c[i] = a[i] + b[i];  // fake-sanitizer: uninitialized-read');
    const k = await TunableKernel.create(code, { fileName: 'unsaved.cu' });
    await withGpu(
      async (gpu) => {
        const v = await k.sanitize(KernelTest.fromSpec(spec(4096)), { block_size_x: 256 }, { backend: gpu, tools: ['initcheck'] });
        if (v.status !== 'hazards') throw new Error(describeVerdict(v));
        expect(v.findings[0]!.frames[0]!.file).toBe('/tmp/run-dir/unsaved.cu');
        expect(v.findings[0]!.at).toEqual({ file: '/tmp/run-dir/unsaved.cu', line: 4, text: '    if (i < n) c[i] = a[i] + b[i];  // fake-sanitizer: uninitialized-read' });
      },
      { FAKE_SANITIZER_IN_DIR: '/tmp/run-dir' },
    );
  });

  it('sets aside what only the reduced problem reports', async () => {
    const code = kernel('    if (i < n) c[i] = a[i] + b[i];  // fake-sanitizer: uninitialized-read when blocks < 100');
    const v = await sanitized(code, 'small-only.cu');
    if (v.status !== 'clean') throw new Error(describeVerdict(v));
    expect(v.note).toMatch(/^a reduced problem \(.*n = 512 .*\) reported 1 finding\(s\) that the test's own problem does not have: the reduction does not fit the kernel$/);
  });

  it('says when it could not check: not installed, not able to run the launch, out of time, a backend that runs no kernel', async () => {
    process.env.PATH = originalPath;
    try {
      const v = await sanitized(kernel(), 'none.cu');
      expect(v).toMatchObject({ status: 'unavailable', reason: 'not-found' });
      expect(describeVerdict(v)).toMatch(/^not checked with compute-sanitizer: compute-sanitizer is not installed: looked on PATH and the CUDA toolkit/);
    } finally {
      process.env.PATH = `${toolDir}${path.delimiter}${originalPath}`;
    }
    const k = await TunableKernel.create(kernel(), { fileName: 'k.cu' });
    const test = KernelTest.fromSpec(spec(4096));
    await withGpu(async (gpu) => {
      expect(await k.sanitize(test, { block_size_x: 256 }, { backend: gpu })).toMatchObject({ status: 'unavailable', reason: 'failed', message: expect.stringMatching(/Target application terminated before first instrumented API call/) });
    }, { FAKE_SANITIZER_NO_TARGET: '1' });
    await withGpu(async (gpu) => {
      const v = await k.sanitize(test, { block_size_x: 256 }, { backend: gpu, timeoutMs: 1500 });
      expect(v).toMatchObject({ status: 'timed_out', tool: 'memcheck', limitMs: 1500, clean: [] });
      expect(describeVerdict(v)).toBe('compute-sanitizer 2025.3.1: memcheck ran out of time (1.5 s for the whole check), so it is not fully checked');
    }, { FAKE_SANITIZER_SLEEP_MS: '10000' });
    expect(await k.sanitize(test, { block_size_x: 256 }, { backend: new FakeBackend({ model: { timeMs: () => 1 } }) })).toMatchObject({ status: 'unavailable', reason: 'no-backend' });
  });

  it('checks the best configuration of a search when asked to', async () => {
    const code = kernel('    if (i < n) c[i] = a[i] + b[i];  // fake-sanitizer: divergent-barrier');
    const k = await TunableKernel.create(code, { fileName: 'tuned.cu', filePath: fileOf('tuned.cu', code) });
    await withGpu(async (gpu) => {
      const result = await k.tune(KernelTest.fromSpec(spec(4096)), { block_size_x: [128, 256] }, [], { backend: gpu, iterations: 3, sanitize: { timeoutMs: 60_000 } });
      expect(result.sanitizer).toMatchObject({ status: 'hazards', config: result.best!.config, findings: [{ tool: 'synccheck', kind: 'barrier', at: { line: 4 } }] });
    });
  });
});
