// compute-sanitizer on the real device (node --test dist-gpu/gpu-tests/sanitizer.test.js), on real kernels, each
// compiled with line information and checked by TunableKernel.sanitize (what the LLM strategies and `tune --sanitize`
// call):
//  - a shared-memory transpose at one warp per block with no __syncwarp between the stores and the loads passes the
//    tuner's correctness checks (the issue's case: right on this GPU today) and is rejected by racecheck, with both
//    lines named;
//  - a read one element past a buffer's end (inside its allocation: nothing faults) is memcheck's out-of-bounds read;
//  - a read of an output never written is initcheck's uninitialised read;
//  - a __syncthreads() inside a branch the last block's threads do not all take is synccheck's barrier error;
//  - the expert session of matmul_naive replayed: its four steps are each checked before they are accepted, and pass;
//  - the example kernels (examples/, real files, the benchmark hub) pass, their best of a small sample checked as
//    `tune --sanitize` checks it.
// Skipped, with the reason, without a driver or device; where compute-sanitizer is not installed the tests fail and say
// so (it ships with the CUDA toolkit). With OUT set, every verdict goes to $OUT/sanitizer.json.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXAMPLE_NAMES, REAL_EXAMPLE_SPECS, loadExample, loadSpec, type LoadedSpec } from '../../examples/load';
import type { EventOf } from '../../src/engine/progress/events';
import { findComputeSanitizer } from '../../src/gpu/sanitizer/find';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { describeFinding, describeVerdict, type LocatedFinding, type SanitizerVerdict } from '../../src/tuner/run/sanitizer';
import { KernelTest, TunableKernel, type SanitizeOptions } from '../../src/tuner/tunable-kernel';
import type { Config } from '../../src/tuner/types';
import { replayExpertSession } from '../support/expert-session';
import { gpuSkipReason } from '../support/gpu-available';

const skip = gpuSkipReason();
if (skip) console.log(`# compute-sanitizer tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 900_000 }, fn);
};

const root = path.resolve(__dirname, '..', '..');
const verdicts: Record<string, SanitizerVerdict> = {};

/** The 1-based line of the first line of `code` that contains `text`. */
function lineOf(code: string, text: string): number {
  const index = code.split('\n').findIndex((l) => l.includes(text));
  assert.ok(index >= 0, `the kernel has a line with ${text}`);
  return index + 1;
}

function hazards(v: SanitizerVerdict, what: string): LocatedFinding[] {
  console.log(`# ${what}: ${describeVerdict(v)}`);
  if (v.status !== 'hazards') assert.fail(`${what}: expected compute-sanitizer's findings, got: ${describeVerdict(v)}`);
  for (const f of v.findings) console.log(`#   ${describeFinding(f)}`);
  return v.findings;
}

const TRANSPOSE = `// out = in transposed, n x n floats, through a shared 32 x 32 tile
#define TILE 32
__global__ void transpose(float *out, const float *in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y0 = blockIdx.y * TILE;
    for (int j = threadIdx.y; j < TILE; j += block_size_y)
        if (x < n && y0 + j < n) tile[j][threadIdx.x] = in[(y0 + j) * n + x];
    // No barrier: with one warp per block its lanes were trusted to be in step, which CUDA does not promise.
    int ox = blockIdx.y * TILE + threadIdx.x;
    int oy0 = blockIdx.x * TILE;
    for (int j = threadIdx.y; j < TILE; j += block_size_y)
        if (ox < n && oy0 + j < n) out[(oy0 + j) * n + ox] = tile[threadIdx.x][j];
}
`;
const NAIVE_TRANSPOSE = `__global__ void transpose(float *out, const float *in, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}
`;

const PAST_THE_END = `__global__ void neighbour_mean(float *out, const float *in, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) out[i] = 0.5f * (in[i] + in[i + 1]);  // in[n] at the last element: past the end, inside the allocation
}
`;
const NEIGHBOUR_MEAN = PAST_THE_END.replace('in[i + 1]', 'in[i + 1 < n ? i + 1 : i]');

const UNINITIALISED = `__global__ void accumulate(float *sum, const float *x, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) sum[i] += x[i];  // sum is an output nobody initialised
}
`;

const DIVERGENT_BARRIER = `__global__ void neighbour_sum(float *y, const float *x, int n) {
    __shared__ float s[block_size_x];
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        s[threadIdx.x] = x[i];
        __syncthreads();  // in the last block the threads past n never get here
        y[i] = s[threadIdx.x] + s[threadIdx.x == 0 ? 0 : threadIdx.x - 1];
    }
    __syncthreads();  // ... they wait at this barrier instead: two barriers, one block (an exited thread would not count)
}
`;

/** A test of `kernel(out, in, n)`: `in` random, `out` a pure output of `length` elements. */
function oneInputTest(out: string, input: string, n: number, length = 'n', problemSize: string | string[] = 'n'): KernelTest {
  return KernelTest.fromSpec({
    problemSize,
    arguments: { [out]: { dtype: 'float32', length, output: true }, [input]: { dtype: 'float32', length, random: { kind: 'uniform', min: -1, max: 1 } }, n: { dtype: 'int32', value: n } },
  });
}

describe('compute-sanitizer on the device', () => {
  let backend: GpuBackend;
  before(async () => {
    if (skip) return;
    const sanitizer = findComputeSanitizer();
    assert.ok(sanitizer, 'compute-sanitizer is installed with the CUDA toolkit (on PATH or beside it)');
    console.log(`# compute-sanitizer: ${sanitizer.path} (${sanitizer.foundBy})`);
    backend = await GpuBackend.open();
  });
  after(async () => {
    await backend?.dispose();
    if (process.env.OUT && Object.keys(verdicts).length > 0) writeFileSync(path.join(process.env.OUT, 'sanitizer.json'), JSON.stringify(verdicts, null, 2));
  });

  const sanitize = async (name: string, code: string, test: KernelTest, config: Config, options: SanitizeOptions = {}): Promise<SanitizerVerdict> => {
    const kernel = await TunableKernel.create(code, { fileName: `${name}.cu` });
    const verdict = await kernel.sanitize(test, config, { backend, ...options });
    verdicts[name] = verdict;
    return verdict;
  };

  test('a transpose at one warp per block without __syncwarp passes the tuner\'s checks and is rejected by racecheck, both lines named', async () => {
    const kernel = await TunableKernel.create(TRANSPOSE, { fileName: 'transpose.cu' });
    const result = await kernel.tune(oneInputTest('out', 'in', 1024, 'n*n', ['n', 'n']), { block_size_x: [32], block_size_y: [1] }, [], {
      backend,
      // A block covers a 32 x 32 tile, whatever its shape.
      gridDivX: 32,
      gridDivY: 32,
      oracle: { code: NAIVE_TRANSPOSE, config: { block_size_x: 16, block_size_y: 16 } },
      iterations: 7,
      sanitize: {},
    });
    const best = result.best;
    console.log(`# transpose 32x1: ${result.results.map((r) => `${r.status}${r.error ? ` (${r.error.message.split('\n')[0]})` : ''}`).join(', ')}`);
    assert.equal(best?.status, 'ok', 'the racing transpose gives the right results on this GPU: output checks cannot see the race');
    verdicts['transpose 32x1'] = result.sanitizer!;
    const [race] = hazards(result.sanitizer!, 'transpose 32x1').filter((f) => f.kind === 'race');
    assert.ok(race, 'racecheck reports the race');
    assert.deepEqual(race.accessesAt?.map((a) => a?.line).sort(), [lineOf(TRANSPOSE, 'tile[j][threadIdx.x] ='), lineOf(TRANSPOSE, '= tile[threadIdx.x][j]')].sort());
    assert.match(describeFinding(race), /^racecheck: a race between a (write|read) at transpose\.cu:\d+ \(`.*tile\[/);
  });

  test('a read one element past the end of a buffer, inside its allocation, is memcheck\'s out-of-bounds read', async () => {
    const v = await sanitize('past-the-end', PAST_THE_END, oneInputTest('out', 'in', 1000), { block_size_x: 256 }, { oracle: { code: NEIGHBOUR_MEAN, config: { block_size_x: 256 } } });
    const [finding] = hazards(v, 'past the end').filter((f) => f.tool === 'memcheck');
    assert.equal(finding?.kind, 'out_of_bounds');
    assert.match(finding!.message, /^Invalid __global__ read of size 4 bytes/);
    assert.equal(finding!.at?.line, lineOf(PAST_THE_END, 'in[i + 1]'));
  });

  test('a read of an output never written is initcheck\'s uninitialised read', async () => {
    const v = await sanitize('uninitialised', UNINITIALISED, oneInputTest('sum', 'x', 4096), { block_size_x: 128 });
    const [finding] = hazards(v, 'uninitialised').filter((f) => f.tool === 'initcheck');
    assert.equal(finding?.kind, 'uninitialized');
    assert.match(finding!.message, /^Uninitialized __global__ memory read of size 4 bytes/);
    assert.equal(finding!.at?.line, lineOf(UNINITIALISED, 'sum[i] += x[i]'));
  });

  test('a __syncthreads() inside a branch the last block\'s threads do not all take is synccheck\'s barrier error', async () => {
    // 8 full blocks of 64 and one of 48: the last block's second warp diverges at the barrier.
    const v = await sanitize('divergent-barrier', DIVERGENT_BARRIER, oneInputTest('y', 'x', 8 * 64 + 48), { block_size_x: 64 });
    const [finding] = hazards(v, 'divergent barrier').filter((f) => f.tool === 'synccheck');
    assert.equal(finding?.kind, 'barrier');
    assert.match(finding!.message, /^Barrier error detected/);
    assert.equal(finding!.at?.line, lineOf(DIVERGENT_BARRIER, '__syncthreads();'));
  });

  test('the expert session of matmul_naive: each step is checked before it is accepted, and all four pass', async () => {
    const { events, end } = await replayExpertSession(root, backend, 'sanitizer', { iterations: 8 });
    const failed = events.find((e): e is EventOf<'session.failed'> => e.type === 'session.failed');
    assert.deepEqual(end, { status: 'finished' }, failed?.error.message);
    const sanitized = events.filter((e): e is EventOf<'sanitized'> => e.type === 'sanitized');
    for (const e of sanitized) {
      verdicts[`expert step ${e.stepId}`] = e.verdict;
      console.log(`# expert step ${e.stepId}: ${describeVerdict(e.verdict)}`);
    }
    assert.deepEqual(sanitized.map((e) => [e.stepId, e.verdict.status]), [['1', 'clean'], ['2', 'clean'], ['3', 'clean'], ['4', 'clean']]);
    assert.deepEqual(events.filter((e) => e.type === 'step.accepted').map((e) => (e as EventOf<'step.accepted'>).stepId), ['1', '2', '3', '4']);
  });

  const examples: [string, () => Promise<LoadedSpec>][] = [
    ...EXAMPLE_NAMES.map((name): [string, () => Promise<LoadedSpec>] => [name, () => loadExample(path.join(root, 'examples'), name)]),
    ...[...REAL_EXAMPLE_SPECS, ...['convolution_milo', 'dedispersion_milo', 'hotspot_milo', 'gemm_milo'].map((s) => `benchmark_hub/${s}.yaml`)].map(
      (spec): [string, () => Promise<LoadedSpec>] => [spec, () => loadSpec(path.join(root, 'examples', spec))],
    ),
  ];
  for (const [name, load] of examples) {
    test(`examples/${name}: the best of a small sample passes, as tune --sanitize checks it`, async () => {
      const loaded = await load();
      const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend, strategy: 'random_sample', maxFevals: 4, seed: 1, iterations: 3, sanitize: {} });
      assert.ok(result.best, `${name}: a configuration of the sample ran (${result.results.map((r) => r.status).join(', ')})`);
      const v = result.sanitizer!;
      verdicts[name] = v;
      console.log(`# ${name} ${JSON.stringify(result.best.config)}: ${describeVerdict(v)}`);
      assert.equal(v.status, 'clean', describeVerdict(v));
      assert.deepEqual(v.status === 'clean' && v.tools, ['memcheck', 'racecheck', 'synccheck', 'initcheck']);
    });
  }
});
