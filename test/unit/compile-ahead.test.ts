// Compiling ahead of the GPUs: the announced configurations compile up to compileConcurrency at once, the next one
// starting whenever one finishes (not only when an evaluation starts), no further than the free memory allows, and
// each configuration once. The backend is the fake GPU (test/support/fake-backend.ts) with compiles that wait until
// the test lets them finish.
import { describe, expect, it, vi } from 'vitest';
import type { BuildRequest, CompiledKernel, KernelProgram } from '../../src/tuner/run/backend';
import { COMPILE_MEMORY_BYTES, compileLookahead, defaultCompileConcurrency, memoryAllowsCompile } from '../../src/tuner/run/compile-concurrency';
import { Evaluator, type EvaluationSetup } from '../../src/tuner/run/evaluator';
import { Geometry } from '../../src/tuner/space/geometry';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';
import { FakeBackend } from '../support/fake-backend';

const COPY = `
extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
`;
const BLOCKS = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320];

/** The fake GPU, whose compiles of the block sizes `gated` selects wait for release() (all of them once releaseAll() opened the gate); the oracle's (no block size) never waits. */
class GatedCompiles extends FakeBackend {
  /** Block sizes whose compile started and waits (or waited) for the test, in order. */
  readonly started: number[] = [];
  /** Every compile: its block size (undefined for a program without one) and compiler, in order. */
  readonly compiles: { block: number | undefined; compiler: string }[] = [];
  running = 0;
  maxRunning = 0;
  /** The compiles of each block size that wait (the oracle's and an evaluation's may compile the same one). */
  private readonly waiting = new Map<number, (() => void)[]>();
  private open = false;

  constructor(private readonly gated: (blockSize: number) => boolean) {
    super({ model: { timeMs: () => 1 } });
  }

  override async compile(request: BuildRequest, signal?: AbortSignal): Promise<CompiledKernel> {
    const block = request.defines.block_size_x === undefined ? undefined : Number(request.defines.block_size_x);
    this.compiles.push({ block, compiler: request.compiler });
    if (block === undefined || !this.gated(block)) return super.compile(request, signal);
    this.started.push(block);
    this.maxRunning = Math.max(this.maxRunning, ++this.running);
    if (!this.open) await new Promise<void>((resolve) => this.waiting.set(block, [...(this.waiting.get(block) ?? []), resolve]));
    this.running--;
    return super.compile(request, signal);
  }

  release(block: number): void {
    const finish = this.waiting.get(block);
    if (!finish) throw new Error(`no compile of block ${block} is waiting (started: ${this.started.join(', ')})`);
    this.waiting.delete(block);
    for (const f of finish) f();
  }

  releaseAll(): void {
    this.open = true;
    for (const block of [...this.waiting.keys()]) this.release(block);
  }
}

const test = () =>
  KernelTest.fromSpec({
    problemSize: 'n',
    arguments: {
      out: { dtype: 'float32', length: 'n', output: true },
      in: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
      n: { dtype: 'int32', value: 4096 },
    },
  });

describe('compiling ahead in a search', () => {
  it('compiles the first configurations while the oracle is built', async () => {
    // The oracle is this kernel at block 32, and its compile waits: the search has started meanwhile.
    const gpu = new GatedCompiles((block) => block === 32);
    const kernel = await TunableKernel.create(COPY, { fileName: 'copy.cu' });
    const reported: string[] = [];
    const tuning = kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: gpu, compileConcurrency: 2, earlyStop: false, onResult: (r) => reported.push(r.key) });
    await vi.waitFor(() => expect(gpu.compiles.map((c) => c.block)).toEqual(expect.arrayContaining([64, 96, 128, 160])));
    expect(gpu.started).toContain(32); // still waiting
    expect(reported).toEqual([]);
    gpu.releaseAll();
    const result = await tuning;
    expect(result.results.map((r) => r.status)).toEqual(BLOCKS.map(() => 'ok'));
    expect(reported).toHaveLength(BLOCKS.length);
  });

  it('starts the next announced compile when one finishes, while the GPU still waits for another', async () => {
    // Block 32 (the oracle and the first evaluation) compiles at once; the others wait for the test.
    const gpu = new GatedCompiles((block) => block !== 32);
    const kernel = await TunableKernel.create(COPY, { fileName: 'copy.cu' });
    const tuning = kernel.tune(test(), { block_size_x: BLOCKS }, [], { backend: gpu, compileConcurrency: 2, earlyStop: false });
    // Block 32 announced 64..224 (twice the concurrency): two compile, and the evaluation of 64 waits for its compile.
    await vi.waitFor(() => expect(gpu.started).toEqual([64, 96]));
    gpu.release(96);
    // No evaluation has started since (64 is still compiling), yet the next announced configuration compiles.
    await vi.waitFor(() => expect(gpu.started).toEqual([64, 96, 128]));
    gpu.releaseAll();
    const result = await tuning;
    expect(result.results.map((r) => r.status)).toEqual(BLOCKS.map(() => 'ok'));
    // Each configuration compiled once (none again after it was taken), never more than two at once.
    expect([...gpu.started].sort((a, b) => a - b)).toEqual(BLOCKS.slice(1));
    expect(gpu.maxRunning).toBe(2);
  });
});

describe('Evaluator', () => {
  const NVRTC_UNIT: KernelProgram = { compiler: 'nvrtc', source: COPY, fileName: 'copy.cu' };
  const WHOLE_FILE: KernelProgram = { compiler: 'nvcc', source: COPY, fileName: 'copy.cu' };

  /** The setup evaluations wait for: the fake GPU's test data, prepared when the test says which program won. */
  async function setupOn(gpu: GatedCompiles, program: KernelProgram): Promise<EvaluationSetup> {
    const oracle = await gpu.load(await gpu.compile({ ...program, nameExpression: 'copy', defines: {}, compilerOptions: [] }));
    return { program, tests: [await gpu.prepare({ kind: 'host', arguments: [] }, { kernel: oracle })] };
  }

  async function evaluatorOn(gpu: GatedCompiles, freeBytes: () => number, setup: Promise<EvaluationSetup> = new Promise(() => undefined)): Promise<Evaluator> {
    return new Evaluator([{ backend: gpu, device: await gpu.describe() }], setup, {
      likelyProgram: NVRTC_UNIT,
      scalars: {},
      nameExpression: 'copy',
      compilerOptions: [],
      geometry: new Geometry({ problemSize: 4096 }, { paramNames: ['block_size_x'] }),
      paramNames: ['block_size_x'],
      launches: 1,
      warmup: 0,
      timing: 'verified',
      flushL2: false,
      earlyStopFactor: undefined,
      launchTimeoutMs: async () => 1000,
      compileConcurrency: 4,
      freeMemoryBytes: freeBytes,
    });
  }

  it('starts no more compiles than the free memory holds, and more as memory comes back', async () => {
    const gpu = new GatedCompiles(() => true);
    let free = 1.5 * COMPILE_MEMORY_BYTES;
    const evaluator = await evaluatorOn(gpu, () => free);
    evaluator.prefetch(BLOCKS.slice(0, 6).map((b) => ({ block_size_x: b })));
    expect(gpu.started).toEqual([32]);
    gpu.release(32);
    await vi.waitFor(() => expect(gpu.started).toEqual([32, 64]));
    free = 64 * COMPILE_MEMORY_BYTES;
    gpu.release(64);
    await vi.waitFor(() => expect(gpu.started).toEqual([32, 64, 96, 128, 160, 192]));
    expect(gpu.running).toBe(4);
    gpu.releaseAll();
    await evaluator.dispose();
  });

  it('replaces the last announcement: what was announced before and not started is dropped', async () => {
    const gpu = new GatedCompiles(() => true);
    const evaluator = await evaluatorOn(gpu, () => 64 * COMPILE_MEMORY_BYTES);
    evaluator.prefetch(BLOCKS.slice(0, 6).map((b) => ({ block_size_x: b })));
    expect(gpu.started).toEqual([32, 64, 96, 128]);
    evaluator.prefetch([256, 288].map((b) => ({ block_size_x: b })));
    gpu.release(32);
    gpu.release(64);
    await vi.waitFor(() => expect(gpu.started).toEqual([32, 64, 96, 128, 256, 288]));
    gpu.releaseAll();
    await evaluator.dispose();
  });

  it('compiles with the likely program before the setup is done, and never uses those compiles when the setup chose another', async () => {
    const gpu = new GatedCompiles(() => false);
    let chooseProgram: (setup: EvaluationSetup) => void = () => undefined;
    const evaluator = await evaluatorOn(gpu, () => 64 * COMPILE_MEMORY_BYTES, new Promise((resolve) => (chooseProgram = resolve)));
    evaluator.prefetch([{ block_size_x: 64 }, { block_size_x: 96 }]);
    const evaluation = evaluator.evaluate({ block_size_x: 32 });
    await vi.waitFor(() => expect(gpu.compiles).toEqual([64, 96, 32].map((block) => ({ block, compiler: 'nvrtc' }))));
    // NVRTC could not take the file after all: the setup's program is nvcc's whole file.
    chooseProgram(await setupOn(gpu, WHOLE_FILE));
    const result = await evaluation;
    expect(result.status).toBe('ok');
    expect(result.reproduce?.nvrtcVersion).toBe('nvcc');
    const byNvcc = gpu.compiles.filter((c) => c.compiler === 'nvcc' && c.block !== undefined).map((c) => c.block);
    expect(byNvcc.sort((a, b) => a! - b!)).toEqual([32, 64, 96]); // the evaluated one, and the announced ones again
    await evaluator.dispose();
  });
});

describe('how many compiles run ahead', () => {
  it('is one per core less one per GPU, at least one, and no more than the free memory holds', () => {
    const plenty = 1024 * COMPILE_MEMORY_BYTES;
    expect(defaultCompileConcurrency(1, 16, plenty)).toBe(15);
    expect(defaultCompileConcurrency(4, 64, plenty)).toBe(60);
    expect(defaultCompileConcurrency(1, 1, plenty)).toBe(1);
    expect(defaultCompileConcurrency(1, 16, 6.5 * COMPILE_MEMORY_BYTES)).toBe(6);
    expect(defaultCompileConcurrency(1, 16, 0)).toBe(1);
  });

  it('lets a compile start beside others only while each of them may still grow to its peak', () => {
    expect(memoryAllowsCompile(0, 0)).toBe(true);
    expect(memoryAllowsCompile(1, 2 * COMPILE_MEMORY_BYTES)).toBe(true);
    expect(memoryAllowsCompile(2, 2 * COMPILE_MEMORY_BYTES)).toBe(false);
  });

  it('announces twice as many configurations as compile at once', () => {
    expect(compileLookahead(15)).toBe(30);
  });
});
