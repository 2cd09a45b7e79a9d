// The compile paths and limits of real files on the device (node --test after bundling: dist/gpu-tests/; every test
// skips, with the reason, where there is no driver or device):
//  - a file NVRTC cannot take (a host-only library's device type) is compiled by nvcc with the same defines, and tunes;
//  - a file neither compiler takes fails with the compiler's log, in the user's file and line;
//  - a configuration that hangs is stopped by a watchdog scaled to the reference kernel, and the next one runs;
//  - dynamic shared memory over 48 KiB opts in, and over the device's limit a configuration is skipped;
//  - a file of CCCL headers (cub, cuda::std), a template kernel in a namespace, __constant__ data and INFINITY/M_PI
//    tunes through NVRTC, its template instantiated with the tunable values.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CompileError } from '../../src/gpu/errors';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { KernelTest, TunableKernel, type TunableKernelInfo } from '../../src/tuner/tunable-kernel';
import type { TuneResult } from '../../src/tuner/types';
import { gpuSkipReason } from '../support/gpu-available';

const skip = gpuSkipReason();
if (skip) console.log(`# compile path GPU tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 300_000 }, fn);
};

const summary = (r: TuneResult) => r.results.map((x) => `  ${x.key}: ${x.status}${x.error ? ` (${x.error.message.slice(0, 300)})` : ''}`).join('\n');

/** y[i] = 2 * x[i] over n floats (every kernel below computes it, some in a roundabout way). */
const doubling = KernelTest.fromSpec({
  problemSize: 'n',
  arguments: { y: { dtype: 'float32', length: 'n', output: true }, x: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } }, n: { dtype: 'int32', value: 1 << 22 } },
});

describe('compile paths and limits on the device', () => {
  let gpu: GpuBackend;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'lkt-compile-paths-'));
    if (!skip) gpu = await GpuBackend.open();
  });
  after(async () => {
    await gpu?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  async function kernelFile(name: string, code: string, headers: Record<string, string> = {}, info: Partial<TunableKernelInfo> = {}): Promise<TunableKernel> {
    for (const [file, text] of Object.entries(headers)) writeFileSync(path.join(dir, file), text);
    const filePath = path.join(dir, name);
    writeFileSync(filePath, code);
    return TunableKernel.create(code, { fileName: name, filePath, ...info });
  }

  test('a file whose device code NVRTC cannot take is compiled by nvcc with the same defines, and tunes', async () => {
    const kernel = await kernelFile(
      'thrust_complex.cu',
      `#include <cstdio>
#include <thrust/complex.h>
__global__ void doubled(float *y, const float *x, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) y[i] = (thrust::complex<float>(x[i], 0.0f) * 2.0f).real();
}
int main() { doubled<<<1, 256>>>(nullptr, nullptr, 0); std::printf("ok\\n"); }
`,
    );
    const result = await kernel.tune(doubling, { block_size_x: [128, 256] }, [], { backend: gpu, iterations: 5 });
    assert.ok(result.best, summary(result));
    assert.equal(result.compiler?.backend, 'nvcc', summary(result));
    assert.match(result.compiler?.note ?? '', /^compiled with nvcc: NVRTC could not compile the device unit: .*thrust_complex\.cu:5: /);
    for (const r of result.results) assert.equal(r.status, 'ok', summary(result));
  });

  test("a file neither compiler takes fails with the log of the user's file and line", async () => {
    const kernel = await kernelFile(
      'broken.cu',
      '#include "helpers.h"\n__global__ void doubled(float *y, const float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = twice(x[i]) +;\n}\n',
      { 'helpers.h': '__device__ float twice(float v) { return 2 * v; }\n' },
    );
    const error = await kernel.tune(doubling, { block_size_x: [128] }, [], { backend: gpu }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof CompileError, String(error));
    assert.deepEqual({ file: error.diagnostics[0]?.file, line: error.diagnostics[0]?.line }, { file: path.join(dir, 'broken.cu'), line: 4 });
    assert.match(error.log, /--- nvcc ---[\s\S]*--- nvrtc ---/);
  });

  test('a configuration that hangs is stopped by a watchdog scaled to the reference kernel, and the next one runs', async () => {
    const kernel = await kernelFile(
      'hang.cu',
      `__global__ void doubled(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // y is poisoned (NaN) before every checked run: with HANG the loop never ends
  if (HANG) while (*(volatile float *)&y[0] != 12345.0f) {}
  if (i < n) y[i] = 2.0f * x[i];
}
`,
    );
    const result = await kernel.tune(doubling, { block_size_x: [256], HANG: [0, 1], unused: [0, 1] }, [], { backend: gpu, iterations: 5, referenceConfig: { block_size_x: 256, HANG: 0, unused: 0 } });
    const byKey = Object.fromEntries(result.results.map((r) => [r.key, r]));
    for (const key of ['256,1,0', '256,1,1']) {
      assert.equal(byKey[key]?.status, 'timeout', summary(result));
      // The reference kernel takes microseconds: the limit is the floor of one second, not the old fixed ten.
      assert.match(byKey[key]!.error!.message, /did not finish within 1000 ms/);
    }
    for (const key of ['256,0,0', '256,0,1']) assert.equal(byKey[key]?.status, 'ok', summary(result));
    const referenceMs = result.reference?.timeMs;
    assert.ok(referenceMs !== undefined && referenceMs < 10, `reference ${referenceMs} ms`);
  });

  test('CCCL headers, a namespaced template kernel, __constant__ data and INFINITY/M_PI compile with NVRTC and tune', async () => {
    const kernel = await kernelFile(
      'cub_scale.cu',
      `#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/std/limits>

#ifndef block_size_x
#define block_size_x 128
#endif
#ifndef items_per_thread
#define items_per_thread 4
#endif

__constant__ float kScale = 2.0f;

namespace ops {
// Loads a block's tile through shared memory (cub's warp transpose), scales it and stores it back the same way.
template <int BLOCK, int ITEMS>
__global__ void scale_tile(float *y, const float *x, int n) {
  using Load = cub::BlockLoad<float, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<float, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage load; typename Store::TempStorage store; } tmp;
  const int offset = blockIdx.x * BLOCK * ITEMS;
  const int valid = min(n - offset, BLOCK * ITEMS);
  float v[ITEMS];
  Load(tmp.load).Load(x + offset, v, valid, 0.0f);
  __syncthreads();
  for (int k = 0; k < ITEMS; ++k) {
    const float s = v[k] * kScale + 0.0f * (float)M_PI;
    v[k] = s < cuda::std::numeric_limits<float>::infinity() ? s : INFINITY;
  }
  Store(tmp.store).Store(y + offset, v, valid);
}
}  // namespace ops

int main() {
  int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  ops::scale_tile<block_size_x, items_per_thread><<<(n + block_size_x * items_per_thread - 1) / (block_size_x * items_per_thread), block_size_x>>>(y, x, n);
  std::printf("%s\\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
`,
      {},
      { kernelName: 'ops::scale_tile', templateArgs: ['block_size_x', 'items_per_thread'] },
    );
    const result = await kernel.tune(doubling, { block_size_x: [64, 128, 256], items_per_thread: [1, 4, 7] }, [], {
      backend: gpu,
      iterations: 5,
      gridDivX: ['block_size_x', 'items_per_thread'],
      earlyStop: false,
    });
    assert.equal(result.compiler?.backend, 'nvrtc', `${result.compiler?.note}\n${summary(result)}`);
    assert.equal(result.results.length, 9, summary(result));
    for (const r of result.results) assert.equal(r.status, 'ok', summary(result));
  });

  test('dynamic shared memory over 48 KiB opts in, and a configuration over the device limit is skipped', async () => {
    const kernel = await kernelFile(
      'dynamic_shared.cu',
      `// Each block stages elements_per_thread values per thread in dynamic shared memory.
__global__ void doubled(float *y, const float *x, int n) {
  extern __shared__ float stage[];
  int base = blockIdx.x * blockDim.x * elements_per_thread;
  for (int e = 0; e < elements_per_thread; ++e) {
    int i = base + e * blockDim.x + threadIdx.x;
    stage[e * blockDim.x + threadIdx.x] = i < n ? x[i] : 0.0f;
  }
  __syncthreads();
  for (int e = 0; e < elements_per_thread; ++e) {
    int i = base + e * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * stage[e * blockDim.x + threadIdx.x];
  }
}
`,
    );
    const limit = (await gpu.describe()).maxSharedMemoryPerBlockOptin;
    const result = await kernel.tune(doubling, { block_size_x: [256], elements_per_thread: [4, 64, 512] }, [], {
      backend: gpu,
      iterations: 5,
      gridDivX: ['block_size_x', 'elements_per_thread'],
      sharedMemBytes: 'block_size_x * elements_per_thread * 4',
      earlyStop: false,
    });
    const status = Object.fromEntries(result.results.map((r) => [r.config.elements_per_thread, r]));
    assert.equal(status[4]?.status, 'ok', summary(result)); // 4 KiB
    assert.equal(status[64]?.status, 'ok', summary(result)); // 64 KiB: over the default 48 KiB, after the opt-in
    assert.equal(status[512]?.status, 'exceeds_device_limits', summary(result)); // 512 KiB
    assert.equal(status[512]?.error?.message, `${256 * 512 * 4} bytes of shared memory per block exceed the device's limit of ${limit}`);
  });
});
