// y = a * x + y over n floats, one element per thread.
#include <cuda_runtime.h>

__global__ void saxpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
