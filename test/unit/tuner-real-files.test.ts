// The tuner on files as they are: the values a file #defines for its tunable parameters are the reference, dynamic
// shared memory comes from an expression, NVRTC falls back to nvcc, and the launch time limit scales with the
// reference kernel. The GPU is a test double (FakeBackend); the compiles of these paths run for real in test/gpu.
import { describe, expect, it } from 'vitest';
import { KernelTest, parseDefineValue, scaledLaunchTimeoutMs, TunableKernel } from '../../src/tuner/tunable-kernel';
import { FakeBackend } from '../support/fake-backend';

const FILE = `#include <stdio.h>
#define BLOCK_SIZE 256
__global__ void scale(float* x, float a, int n) {
  extern __shared__ float tile[];
  int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  if (i < n) x[i] = a * tile[threadIdx.x];
}
int main() { scale<<<4, BLOCK_SIZE, BLOCK_SIZE * 4>>>(nullptr, 2.f, 1024); printf("ok"); }
`;

const test = KernelTest.fromSpec({
  problemSize: 'n',
  arguments: { x: { dtype: 'float32', length: 'n', output: true, random: { kind: 'uniform' } }, a: { dtype: 'float32', value: 2 }, n: { dtype: 'int32', value: 1 << 20 } },
});

describe('tuning a file as it is', () => {
  it("takes the file's own #define as the reference configuration and overrides it in every other", async () => {
    const backend = new FakeBackend({ model: { timeMs: (v) => Number(v.defines.BLOCK_SIZE) / 100 } });
    const kernel = await TunableKernel.create(FILE, { fileName: 'scale.cu' });
    const result = await kernel.tune(test, { BLOCK_SIZE: [64, 128] }, [], { backend, blockSizeNames: ['BLOCK_SIZE'], sharedMemBytes: 'BLOCK_SIZE * 4' });
    expect(result.reference?.config).toEqual({ BLOCK_SIZE: 256 });
    const builds = backend.log.filter((e) => e.kind === 'compile');
    expect(builds[0]!.defines.BLOCK_SIZE).toBe('256'); // the oracle first; the others compile ahead, in any order
    expect(builds.slice(1).map((b) => b.defines.BLOCK_SIZE).sort()).toEqual(['128', '64']);
    for (const b of builds) expect(b.source).not.toMatch(/#define BLOCK_SIZE/);
    expect(result.best?.config).toEqual({ BLOCK_SIZE: 64 });
    expect(result.compiler).toEqual({ backend: 'nvcc' });
  });

  it('launches with the dynamic shared memory of the expression, and skips what the device cannot give', async () => {
    const backend = new FakeBackend({ model: { timeMs: () => 1 }, device: { maxSharedMemoryPerBlockOptin: 3000 } });
    const kernel = await TunableKernel.create(FILE, { fileName: 'scale.cu' });
    const launches: number[] = [];
    const result = await kernel.tune(test, { BLOCK_SIZE: [512, 1024] }, [], {
      backend,
      blockSizeNames: ['BLOCK_SIZE'],
      sharedMemBytes: 'BLOCK_SIZE * 4',
      referenceConfig: { BLOCK_SIZE: 512 },
      onResult: (r) => launches.push(r.geometry ? 1 : 0),
    });
    const byBlock = Object.fromEntries(result.results.map((r) => [r.config.BLOCK_SIZE, r]));
    expect(byBlock[512]!.status).toBe('ok');
    expect(byBlock[1024]).toMatchObject({ status: 'exceeds_device_limits', error: { message: '4096 bytes of shared memory per block exceed the device\'s limit of 3000' } });
    expect(backend.log.filter((e) => e.kind === 'compile').map((b) => b.defines.BLOCK_SIZE)).not.toContain('1024');
    expect(launches).toHaveLength(2);
  });

  it("falls back to nvcc when NVRTC cannot take the device unit, and says why", async () => {
    const backend = new FakeBackend({ model: { timeMs: () => 1 }, compilers: ['nvrtc', 'nvcc'], nvrtcRejects: /__global__ void scale/ });
    const kernel = await TunableKernel.create(FILE, { fileName: 'scale.cu' });
    const result = await kernel.tune(test, { BLOCK_SIZE: [128] }, [], { backend, blockSizeNames: ['BLOCK_SIZE'] });
    expect(result.compiler).toEqual({ backend: 'nvcc', note: 'compiled with nvcc: NVRTC could not compile the device unit: scale.cu:1: the fake NVRTC rejects this program' });
    // The oracle with NVRTC, then with nvcc; the configuration with nvcc, and once with NVRTC before the oracle had
    // chosen (the likely program, compiled while the oracle was built; never used).
    const compiles = backend.log.filter((e) => e.kind === 'compile');
    expect(compiles.map((b) => b.compiler).sort()).toEqual(['nvcc', 'nvcc', 'nvrtc', 'nvrtc']);
    expect(result.results[0]!.reproduce?.nvrtcVersion).toBe('nvcc');
    // NVRTC's program is the device unit (main blanked); nvcc's is the whole file.
    const nvrtc = compiles.find((b) => b.compiler === 'nvrtc');
    const nvcc = compiles.find((b) => b.compiler === 'nvcc');
    expect(nvrtc!.source).not.toMatch(/int main/);
    expect(nvcc!.source).toMatch(/int main/);
  });

  it('scales the launch time limit with the reference kernel, at least a second', async () => {
    expect(scaledLaunchTimeoutMs(0.01)).toBe(1000);
    expect(scaledLaunchTimeoutMs(50)).toBe(5000);
    const backend = new FakeBackend({ model: { timeMs: () => 40 } });
    const kernel = await TunableKernel.create(FILE, { fileName: 'scale.cu' });
    await kernel.tune(test, { BLOCK_SIZE: [128] }, [], { backend, blockSizeNames: ['BLOCK_SIZE'], iterations: 10, warmup: 1 });
    const [reference, ...config] = backend.log.filter((e) => e.kind === 'time');
    expect(reference!.timeoutMs).toBe(10_000); // before the reference is timed: 10 s per launch
    expect(config.map((e) => e.timeoutMs)).toEqual(config.map(() => 4000)); // 100 x 40 ms per launch
    const fixed = new FakeBackend({ model: { timeMs: () => 40 } });
    await kernel.tune(test, { BLOCK_SIZE: [128] }, [], { backend: fixed, blockSizeNames: ['BLOCK_SIZE'], iterations: 10, warmup: 1, launchTimeoutMs: 1500 });
    // A limit given by the user is used as it is, and the reference kernel is not timed for it: one series of 10 launches.
    expect(fixed.timedSeries().map((s) => s.iterations)).toEqual([10]);
    expect(new Set(fixed.log.filter((e) => e.kind === 'time').map((e) => e.timeoutMs))).toEqual(new Set([1500]));
  });

  it('reads the values files write for their parameters', () => {
    expect(parseDefineValue('256')).toBe(256);
    expect(parseDefineValue('32U')).toBe(32);
    expect(parseDefineValue('(16)')).toBe(16);
    expect(parseDefineValue('1.5f')).toBe(1.5);
    expect(parseDefineValue('true')).toBe(true);
    expect(parseDefineValue('(TILE * 2)')).toBe('(TILE * 2)');
  });
});
