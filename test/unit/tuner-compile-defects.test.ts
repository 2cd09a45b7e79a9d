// Issue 17's compile defects as the tuner reports them, with the real nvcc (the GPU is a test double that compiles
// with nvcc; the GPU layer's own checks are gpu-compile-defects.test.ts): static shared memory over the device's limit
// is a configuration over the device's limits with the numbers, not a compile error; the hint that a tunable parameter
// clashes with a header appears where renaming it makes the errors go away, and never for a plain syntax error.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CompileError, LaunchError } from '../../src/gpu/errors';
import { findNvcc } from '../../src/gpu/toolkit';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';
import { FakeBackend } from '../support/fake-backend';
import type { TimedLaunches } from '../../src/tuner/run/backend';

const test = KernelTest.fromSpec({
  problemSize: 'n',
  arguments: { out: { dtype: 'float32', length: 'n', output: true }, n: { dtype: 'int32', value: 1 << 16 } },
});

const STAGE_SHARED = join(__dirname, '..', 'fixtures', 'kernels', 'stage_shared.cu');

const backend = () => new FakeBackend({ model: { timeMs: (v) => 1 + Number(v.defines.block_size_x) / 1000 }, compile: 'nvcc' });

describe.skipIf(!findNvcc())('compile defects as the tuner reports them (real nvcc)', () => {
  it("static shared memory over the device's limit: exceeds_device_limits with the bytes used and allowed; the others run", async () => {
    // 64 floats per thread of the block: 16 KiB at 64 threads, 32 KiB at 128, 64 KiB at 256 (over the 48 KiB of a static array).
    const kernel = await TunableKernel.create(readFileSync(STAGE_SHARED, 'utf8'), { fileName: 'stage_shared.cu' });
    const result = await kernel.tune(test, { block_size_x: [64, 128, 256], floats_per_thread: [64] }, [], { backend: backend() });
    const byBlock = Object.fromEntries(result.results.map((r) => [r.config.block_size_x, r]));
    expect(byBlock[64]!.status).toBe('ok');
    expect(byBlock[128]!.status).toBe('ok');
    expect(byBlock[256]!.status).toBe('exceeds_device_limits');
    expect(byBlock[256]!.error!.message).toMatch(/Kernel \S*stage\S* uses 65536 bytes of static shared memory, more than the device's limit of 49152/);
    expect(byBlock[256]!.error!.message).toMatch(/uses too much shared data/);
    // The static shared memory of those that fit is ptxas's, in their driver metrics.
    expect(byBlock[128]!.driver).toMatchObject({ static_shared_mem_bytes: 32768, occupancy_source: 'calculator' });
  });

  it('a missing ";" in some configurations: a compile error with the log and no hint about parameters', async () => {
    const kernel = await TunableKernel.create(
      `__global__ void fill(float* out, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
#if block_size_x == 256
  float v = 2.0f
#else
  float v = 1.0f;
#endif
  if (i < n) out[i] = v;
}
`,
      { fileName: 'fill.cu' },
    );
    const result = await kernel.tune(test, { block_size_x: [128, 256] }, [], { backend: backend(), referenceConfig: { block_size_x: 128 } });
    const broken = result.results.find((r) => r.config.block_size_x === 256)!;
    expect(broken.status).toBe('compile_error');
    expect(broken.error!.log).toMatch(/fill\.cu\(\d+\): error: expected a ";"/);
    expect(broken.error!.message).not.toMatch(/also a name in a header/);
  });

  it('a parameter named like a word of a CUDA header: the compile error says to rename it, because renaming it compiles', async () => {
    const kernel = await TunableKernel.create(
      `__global__ void pick(float* out, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = mode;
}
`,
      { fileName: 'pick.cu' },
    );
    const failure = await kernel.tune(test, { block_size_x: [128], mode: [1, 2] }, [], { backend: backend() }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(CompileError);
    expect((failure as CompileError).message).toMatch(
      /The tunable parameter 'mode' is also a name in a header \(cuda_runtime_api\.h:\d+: .*\): parameters are #defines, so rename it to something no header uses \(e\.g\. 'mode_value'\)\./,
    );
  });
});

describe('a block the kernel cannot launch', () => {
  /** TEST DOUBLE: a fake GPU whose kernel uses so many registers that blocks over 256 threads do not launch, as the driver says. */
  class RegisterHungryBackend extends FakeBackend {
    override async check(...args: Parameters<FakeBackend['check']>): ReturnType<FakeBackend['check']> {
      this.refuseLarge(args[1]);
      return super.check(...args);
    }
    override async timedLaunches(...args: Parameters<FakeBackend['timedLaunches']>): Promise<TimedLaunches> {
      this.refuseLarge(args[1]);
      return super.timedLaunches(...args);
    }
    private refuseLarge(launch: { block: readonly number[] }): void {
      const threads = launch.block.reduce((a, b) => a * b, 1);
      if (threads > 256) {
        throw new LaunchError(`A block of ${threads} threads exceeds this kernel's limit of 256 (it uses 255 registers per thread)`, {
          code: 'CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES',
          explanation: 'Too many resources requested for launch.',
          call: 'launch',
        });
      }
    }
  }

  it('is over the device limits, as Kernel Tuner counts too many resources requested for launch', async () => {
    const kernel = await TunableKernel.create(
      `__global__ void fill(float* out, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}
`,
      { fileName: 'fill.cu' },
    );
    const gpu = new RegisterHungryBackend({ model: { timeMs: (v) => 1 + Number(v.defines.block_size_x) / 1000 } });
    const result = await kernel.tune(test, { block_size_x: [128, 256, 512] }, [], { backend: gpu, referenceConfig: { block_size_x: 128 } });
    const byBlock = Object.fromEntries(result.results.map((r) => [r.config.block_size_x, r]));
    expect(byBlock[512]!.status).toBe('exceeds_device_limits');
    expect(byBlock[512]!.error!.message).toMatch(/exceeds this kernel's limit of 256/);
    expect(result.best!.config.block_size_x).toBe(128);
  });
});
