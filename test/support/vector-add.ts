/** The GPU tests' smallest real kernel: c = a + b over n floats, one thread per element. */
export const VECTOR_ADD = `
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}`;
