// The kernels whose times the timing benchmarks compare (issue 14's verified timing, issue 26's agreement with Kernel
// Tuner): one configuration each of the examples, from a vector add that lives in L2 to a compute-bound matmul.
// bench/kernel_tuner/measure.py's same_configs case times the same configurations with Kernel Tuner.
import { loadExample, type LoadedSpec } from '../../examples/load';
import { KernelTest } from '../../src/tuner/tunable-kernel';
import type { Config } from '../../src/tuner/types';

export interface TimingCase {
  name: string;
  loaded: LoadedSpec;
  config: Config;
  /** The test, when it is not the spec's own (a smaller problem). */
  test?: KernelTest;
}

export async function timingCases(examplesDir: string): Promise<TimingCase[]> {
  const vectorAdd = await loadExample(examplesDir, 'vector_add');
  // The vector add over 2^16 floats: 3 µs a launch, its buffers in L2, where resets next to the launch weigh most.
  const small = KernelTest.fromSpec({ problemSize: vectorAdd.spec.problemSize, seed: vectorAdd.spec.seed, arguments: { ...vectorAdd.spec.arguments, n: { dtype: 'int32', value: 1 << 16 } } });
  return [
    { name: 'vector_add 2^26', loaded: vectorAdd, config: { block_size_x: 256 } },
    { name: 'vector_add 2^16', loaded: vectorAdd, config: { block_size_x: 256 }, test: small },
    { name: 'matmul_tiled 4096²', loaded: await loadExample(examplesDir, 'matmul_tiled'), config: { block_size_x: 32, block_size_y: 4, tile_size_x: 4, tile_size_y: 8 } },
    { name: 'stencil_2d 4096²', loaded: await loadExample(examplesDir, 'stencil_2d'), config: { block_size_x: 128, block_size_y: 2, tile_size_y: 2, use_shared: 0 } },
    { name: 'reduction 2^26', loaded: await loadExample(examplesDir, 'reduction'), config: { block_size_x: 256, num_blocks: 1024, use_shuffle: 1, vector: 4 } },
  ];
}
