/** A small kernel file and its tuned version (guards for the chosen value, one line changed), for the proposal's tests. */
export const ORIGINAL = ['#include <cuda.h>', '__global__ void k(float *y, int n) {', '    int i = blockIdx.x * blockDim.x + threadIdx.x;', '    if (i < n) y[i] = 2 * y[i];', '}', ''].join('\n');
export const PROPOSED = [
  '#ifndef block_size_x',
  '#define block_size_x 128',
  '#endif',
  '#include <cuda.h>',
  '__global__ void k(float *y, int n) {',
  '    int i = blockIdx.x * block_size_x + threadIdx.x;',
  '    if (i < n) y[i] = 2 * y[i];',
  '}',
  '',
].join('\n');
