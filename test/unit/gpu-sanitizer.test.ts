// compute-sanitizer at the GPU layer without a GPU: reading its reports (in the format of compute-sanitizer 2025.x and
// of the older cuda-memcheck), finding it as a user's machine has it, and sanitizeKernel end to end through the test
// double test/support/fake-compute-sanitizer.mjs, which runs the real worker bundle's --profile entry on the fake addon
// and reports what the launched kernel's source marks.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { int32, type CompiledProgram } from '../../src/gpu';
import type { LaunchTarget } from '../../src/gpu/ncu/launch-request';
import { findComputeSanitizer, sanitizerVersion, type ComputeSanitizer } from '../../src/gpu/sanitizer/find';
import { parseFrame, parseSanitizerOutput } from '../../src/gpu/sanitizer/report';
import { sanitizeKernel } from '../../src/gpu/sanitizer/sanitize';
import { executable, tempDirs } from '../support/temp-dirs';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const FAKE_SANITIZER: ComputeSanitizer = { path: path.resolve(__dirname, '../support/fake-compute-sanitizer.mjs'), foundBy: 'test double' };

const tempDir = tempDirs('lkt-sanitizer-test-');

describe('parseSanitizerOutput', () => {
  it('reads memcheck: one finding per place however many threads, the frames of inlined calls, the address lines', () => {
    const output = [
      '========= COMPUTE-SANITIZER',
      'the application prints this',
      '========= Invalid __global__ read of size 8 bytes',
      '=========     at load_pair(const double *, int)+0x40 in /src/pairs.cuh:12',
      '=========     by thread (63,0,0) in block (1,0,0)',
      '=========     Address 0x7f00aa000400 is out of bounds',
      '=========     and is 0 bytes after the nearest allocation at 0x7f00aa000000 of size 1,024 bytes',
      '=========     Device Frame: sum_pairs(const double *, double *, int)+0x210 in /src/sum.cu:30',
      '=========     Saved host backtrace up to driver entry point at kernel launch time',
      '=========         Host Frame: [0x2f4a51] in libcuda.so.1',
      '=========',
      '========= Invalid __global__ read of size 8 bytes',
      '=========     at load_pair(const double *, int)+0x40 in /src/pairs.cuh:12',
      '=========     by thread (62,0,0) in block (1,0,0)',
      '=========     Address 0x7f00aa000408 is out of bounds',
      '=========     Device Frame: sum_pairs(const double *, double *, int)+0x210 in /src/sum.cu:30',
      '=========',
      '========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.',
      '=========     Saved host backtrace up to driver entry point at error',
      '=========',
      '========= ERROR SUMMARY: 3 errors',
    ].join('\n');
    expect(parseSanitizerOutput('memcheck', output)).toEqual({
      findings: [
        {
          tool: 'memcheck',
          kind: 'out_of_bounds',
          severity: 'error',
          message: 'Invalid __global__ read of size 8 bytes',
          frames: [
            { function: 'load_pair(const double *, int)', file: '/src/pairs.cuh', line: 12 },
            { function: 'sum_pairs(const double *, double *, int)', file: '/src/sum.cu', line: 30 },
          ],
          thread: '(63,0,0)',
          block: '(1,0,0)',
          details: ['Address 0x7f00aa000400 is out of bounds', 'and is 0 bytes after the nearest allocation at 0x7f00aa000000 of size 1,024 bytes'],
          occurrences: 2,
        },
      ],
      reported: 3,
      apiErrors: 1,
      notes: [],
    });
  });

  it('reads racecheck\'s analysis: both sides of a race and the hazards, errors and warnings alike, a wrapped location too', () => {
    const output = [
      '========= COMPUTE-SANITIZER',
      '========= Error: Race reported between Write access at tile_sum(float *)+0x90 in /k/tile.cu:41',
      '=========     and Read access at tile_sum(float *)+0x100 in /k/tile.cu:51 [1,020 hazards]',
      '=========     and Write access at tile_sum(float *)+0x90 in /k/tile.cu:41 [4 hazards]',
      '=========',
      '========= Warning: Race reported between Write access at',
      '=========     tile_sum(float *)+0x130 in /k/tile.cu:60',
      '=========     and Read access at',
      '=========     tile_sum(float *)+0x150 in /k/tile.cu:61',
      '=========     [32 hazards]',
      '=========',
      '========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)',
    ].join('\n');
    const parsed = parseSanitizerOutput('racecheck', output);
    expect(parsed.reported).toBe(2);
    expect(parsed.findings).toEqual([
      {
        tool: 'racecheck',
        kind: 'race',
        severity: 'error',
        message: 'Race reported between Write access and Read / Write access',
        frames: [{ function: 'tile_sum(float *)', file: '/k/tile.cu', line: 41 }],
        accesses: [
          { access: 'Write', frame: { function: 'tile_sum(float *)', file: '/k/tile.cu', line: 41 } },
          { access: 'Read', frame: { function: 'tile_sum(float *)', file: '/k/tile.cu', line: 51 }, hazards: 1020 },
          { access: 'Write', frame: { function: 'tile_sum(float *)', file: '/k/tile.cu', line: 41 }, hazards: 4 },
        ],
        details: [],
        occurrences: 1,
      },
      {
        tool: 'racecheck',
        kind: 'race',
        severity: 'warning',
        message: 'Race reported between Write access and Read access',
        frames: [{ function: 'tile_sum(float *)', file: '/k/tile.cu', line: 60 }],
        accesses: [
          { access: 'Write', frame: { function: 'tile_sum(float *)', file: '/k/tile.cu', line: 60 } },
          { access: 'Read', frame: { function: 'tile_sum(float *)', file: '/k/tile.cu', line: 61 }, hazards: 32 },
        ],
        details: [],
        occurrences: 1,
      },
    ]);
  });

  it('reads cuda-memcheck\'s older locations ("0x148 in f.cu:3:fn")', () => {
    const output = [
      '========= ERROR: Race reported between Write access at 0x00000148 in ./race.cu:3:test(int*, int*)',
      '=========     and Read access at 0x00000170 in ./race.cu:4:test(int*, int*) [4 hazards]',
      '=========',
      '========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)',
    ].join('\n');
    const [race] = parseSanitizerOutput('racecheck', output).findings;
    expect(race!.accesses!.map((a) => a.frame)).toEqual([
      { function: 'test(int*, int*)', file: './race.cu', line: 3 },
      { function: 'test(int*, int*)', file: './race.cu', line: 4 },
    ]);
    expect(parseFrame('0x00000020 in test(int*, int*)')).toEqual({ function: 'test(int*, int*)' });
  });

  it('reads synccheck and initcheck, and a kernel built without line information (a function, no file)', () => {
    const sync = parseSanitizerOutput(
      'synccheck',
      [
        '========= Barrier error detected. Divergent thread(s) in block',
        '=========     at [clone reduce(int *, int *)] outlineSync()+0x11f0 in /k/reduce.cu:42',
        '=========     by thread (32,0,0) in block (0,0,0)',
        '=========     Device Frame: reduce(int *, int *)+0xe40 in /k/reduce.cu:60',
        '=========',
        '========= ERROR SUMMARY: 1 error',
      ].join('\n'),
    );
    expect(sync.findings[0]).toMatchObject({ kind: 'barrier', message: 'Barrier error detected. Divergent thread(s) in block', frames: [{ line: 42 }, { function: 'reduce(int *, int *)', line: 60 }] });
    const init = parseSanitizerOutput('initcheck', '========= Uninitialized __global__ memory read of size 4 bytes\n=========     at add_one(int *)+0x70\n=========     by thread (31,0,0) in block (1,0,0)\n=========     Address 0x7f3c7ec000fc\n=========\n========= ERROR SUMMARY: 1 error\n');
    expect(init.findings).toEqual([
      { tool: 'initcheck', kind: 'uninitialized', severity: 'error', message: 'Uninitialized __global__ memory read of size 4 bytes', frames: [{ function: 'add_one(int *)' }], thread: '(31,0,0)', block: '(1,0,0)', details: ['Address 0x7f3c7ec000fc'], occurrences: 1 },
    ]);
  });

  it('keeps the tool\'s own messages apart from findings, and knows when it wrote no summary', () => {
    const parsed = parseSanitizerOutput('memcheck', '========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first instrumented API call\n');
    expect(parsed).toEqual({ findings: [], apiErrors: 0, notes: ['Error: Target application terminated before first instrumented API call'] });
  });
});

describe('findComputeSanitizer', () => {
  it('finds it on PATH first, then beside the CUDA toolkit (bin/, or its own directory)', () => {
    const dir = tempDir();
    executable(path.join(dir, 'bin', 'compute-sanitizer'));
    expect(findComputeSanitizer({ env: { PATH: path.join(dir, 'bin') }, locations: [] })).toEqual({ path: path.join(dir, 'bin', 'compute-sanitizer'), foundBy: 'PATH' });
    const root = path.join(dir, 'cuda-13.0');
    fs.mkdirSync(path.join(root, 'include'), { recursive: true });
    fs.writeFileSync(path.join(root, 'include', 'cuda_runtime.h'), '');
    executable(path.join(root, 'compute-sanitizer', 'compute-sanitizer'));
    expect(findComputeSanitizer({ env: { PATH: '', CUDA_HOME: root } })).toEqual({ path: path.join(root, 'compute-sanitizer', 'compute-sanitizer'), foundBy: `beside the CUDA toolkit at ${root}` });
    executable(path.join(root, 'bin', 'compute-sanitizer'));
    expect(findComputeSanitizer({ env: { PATH: '', CUDA_HOME: root } })?.path).toBe(path.join(root, 'bin', 'compute-sanitizer'));
  });

  it('is null where there is none', () => {
    expect(findComputeSanitizer({ env: { PATH: '' }, locations: [] })).toBeNull();
  });

  it('reads the version the tool prints ("Version 2025.3.1.0" is 2025.3.1)', async () => {
    expect(await sanitizerVersion(FAKE_SANITIZER)).toBe('2025.3.1');
  });
});

describe('sanitizeKernel (fake compute-sanitizer, fake addon, the real worker bundle)', () => {
  /** A fake build whose "cubin" carries its source and options, which the fake tool reads as the real one reads line information. */
  function build(source: string, options: string[] = ['-lineinfo']): CompiledProgram {
    return { cubin: Buffer.from(JSON.stringify({ kernels: ['vector_add'], options, source })), log: '', loweredNames: { vector_add: 'vector_add' }, backend: 'nvrtc', arch: 'sm_90', durationMs: 1 };
  }
  const SOURCE = ['// the prelude', '#line 1 "/work/add.cu"', '__global__ void vector_add(const float *a, const float *b, float *c, int n) {', '  int i = blockIdx.x * blockDim.x + threadIdx.x;'];
  const target = (body: string[], options?: string[]): LaunchTarget => ({
    compiled: build([...SOURCE, ...body, '}'].join('\n'), options),
    nameExpression: 'vector_add',
    launch: { grid: 4, block: 256 },
    args: [{ dtype: 'float32', length: 1024, random: { distribution: 'uniform', seed: 3 } }, { dtype: 'float32', length: 1024, fill: 1 }, { dtype: 'float32', length: 1024, uninitialized: true }, int32(1024)],
  });
  const options = (env: Record<string, string> = {}) => ({ sanitizer: FAKE_SANITIZER, env: { LKT_GPU_ADDON_MODULE: FAKE_ADDON, ...env }, timeoutMs: 60_000 });

  it('runs the launch under each of the four tools and finds it clean', async () => {
    const run = await sanitizeKernel(target(['  if (i < n) c[i] = a[i] + b[i];']), options());
    expect(run).toMatchObject({ status: 'clean', tools: ['memcheck', 'racecheck', 'synccheck', 'initcheck'], sanitizer: { path: FAKE_SANITIZER.path, version: '2025.3.1' } });
    if (run.status !== 'clean') return;
    expect(Object.keys(run.toolMs)).toEqual(['memcheck', 'racecheck', 'synccheck', 'initcheck']);
  });

  it('reports each tool\'s findings at the lines the compiler numbered, after the file\'s #line', async () => {
    const run = await sanitizeKernel(
      target(['  if (i < n) c[i] = a[i + 1] + b[i]; // fake-sanitizer: oob-read', '  c[0] = c[1]; // fake-sanitizer: uninitialized-read']),
      options(),
    );
    if (run.status !== 'hazards') throw new Error(JSON.stringify(run));
    expect(run.tools).toEqual(['memcheck', 'racecheck', 'synccheck', 'initcheck']);
    expect(run.findings.map((f) => [f.tool, f.kind, f.frames[0], f.occurrences])).toEqual([
      ['memcheck', 'out_of_bounds', { function: 'vector_add(float *, const float *, int)', file: '/work/add.cu', line: 3 }, 2],
      ['initcheck', 'uninitialized', { function: 'vector_add(float *, const float *, int)', file: '/work/add.cu', line: 4 }, 1],
    ]);
  });

  it('gets no file or line from a kernel built without line information', async () => {
    const run = await sanitizeKernel(target(['  __syncthreads(); // fake-sanitizer: divergent-barrier'], []), { ...options(), tools: ['synccheck'] });
    if (run.status !== 'hazards') throw new Error(JSON.stringify(run));
    expect(run.findings[0]!.frames).toEqual([{ function: 'vector_add(float *, const float *, int)' }]);
  });

  it('says that compute-sanitizer is not installed, or could not check the launch', async () => {
    expect(await sanitizeKernel(target([]), { sanitizer: null })).toEqual({ status: 'unavailable', reason: 'not-found', message: expect.stringMatching(/^compute-sanitizer is not installed: looked on PATH and the CUDA toolkit/) });
    const run = await sanitizeKernel(target([]), options({ FAKE_SANITIZER_NO_TARGET: '1' }));
    expect(run).toEqual({ status: 'unavailable', reason: 'failed', message: expect.stringMatching(/^compute-sanitizer's memcheck did not check the launch \(.*\): Error: Target application terminated before first instrumented API call$/) });
  });

  it('reports a launch that failed under it without a finding', async () => {
    const faulting = { ...target([]), compiled: { ...build(''), cubin: Buffer.from(JSON.stringify({ kernels: ['fault'], options: [], source: '' })), loweredNames: { fault: 'fault' } }, nameExpression: 'fault' };
    expect(await sanitizeKernel(faulting, options())).toMatchObject({ status: 'unavailable', reason: 'launch-failed', message: expect.stringMatching(/^the launch failed under compute-sanitizer's memcheck: .*CUDA_ERROR_ILLEGAL_ADDRESS/) });
  });

  it('says which tool ran out of its share of the time; the others still run', async () => {
    const run = await sanitizeKernel(target([]), { ...options({ FAKE_SANITIZER_SLEEP_MS: '5000' }), timeoutMs: 400 });
    expect(run).toMatchObject({ status: 'timed_out', tool: 'memcheck', limitMs: 400, clean: [] });
    // Hanging under memcheck alone, with a quarter of 8 s: the other three check the launch in the time left.
    const hangs = options({ FAKE_SANITIZER_SLEEP_MS: '60000', FAKE_SANITIZER_SLEEP_TOOL: 'memcheck' });
    expect(await sanitizeKernel(target([]), { ...hangs, timeoutMs: 8_000 })).toMatchObject({ status: 'timed_out', tool: 'memcheck', clean: ['racecheck', 'synccheck', 'initcheck'] });
    const found = await sanitizeKernel(target(['  __syncthreads(); // fake-sanitizer: divergent-barrier']), { ...hangs, timeoutMs: 8_000 });
    expect(found).toMatchObject({ status: 'hazards', tools: ['racecheck', 'synccheck', 'initcheck'], findings: [{ tool: 'synccheck', kind: 'barrier' }] });
  });

  it('refuses arguments that do not fit before anything runs', async () => {
    await expect(sanitizeKernel({ ...target([]), args: [{ dtype: 'float32', length: -1 }] }, options())).rejects.toThrow(/args\[0\]\.length/);
  });
});
