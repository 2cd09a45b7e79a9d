import { describe, expect, it } from 'vitest';
import { float32, int32 } from '../../src/gpu/dtype';
import { CompileError } from '../../src/gpu/errors';
import type { TuningBackend } from '../../src/tuner/backend';
import { hostCodeIn } from '../../src/tuner/host-code';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';

const KERNEL = `__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
`;

const PROGRAM = `#include <cstdio>
${KERNEL}
int main() {
  float *x;
  cudaMalloc(&x, 1024 * sizeof(float));
  scale<<<4, 256>>>(x, 2.0f, 1024);
  cudaDeviceSynchronize();
  printf("done\\n");
}
`;

describe('host code in a kernel source', () => {
  it('names what it found, and nothing in device code or comments', () => {
    expect(hostCodeIn(PROGRAM)).toBe('a <<<...>>> kernel launch, a main() function, CUDA runtime API calls, host-only headers');
    expect(hostCodeIn(KERNEL)).toBeUndefined();
    expect(hostCodeIn(`${KERNEL}// launched as scale<<<grid, block>>>(x, a, n) from main()\n/* int main() { cudaMalloc(...) } */\n`)).toBeUndefined();
  });

  it('turns the reference compile failure of a whole program into advice', async () => {
    // Test double at the GPU boundary: a backend whose compiler rejects the source as NVRTC does host code.
    const rejecting = {
      describe: async () => ({ name: 'test double', computeCapability: [9, 0], multiprocessors: 1, globalMemoryBytes: 1, l2CacheBytes: 1, maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64], driverVersion: 13000, nvrtcVersion: '13.0', arch: 'sm_90' }),
      build: async () => {
        throw new CompileError('kernel.cu(1): catastrophic error: cannot open source file "cstdio"', { code: 'NVRTC_ERROR_COMPILATION', explanation: '', log: 'kernel.cu(1): catastrophic error: cannot open source file "cstdio"' });
      },
      dispose: async () => undefined,
    } as unknown as TuningBackend;
    const kernel = await TunableKernel.create(PROGRAM, { fileName: 'program.cu' });
    const test = new KernelTest([new Float32Array(1024), float32(2), int32(1024)], null, 1024, { outputs: [0] });
    await expect(kernel.tune(test, { block_size_x: [256] }, [], { backend: rejecting })).rejects.toThrow(
      /the reference kernel does not compile: .*cstdio[\s\S]*The source holds host code \(a <<<\.\.\.>>> kernel launch, a main\(\) function/,
    );
  });
});
