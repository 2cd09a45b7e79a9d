// y = a * x + y with a tunable block size: "Tune parameters" searches it as params.tune.yaml (beside it) says, with
// the tuner alone. FAKE_BLOCK_AWARE: the extension tests' fake GPU times 512 threads per block fastest.
#include <cuda_runtime.h>

#ifndef block_size_x
#define block_size_x 256
#endif

__global__ void saxpy_params(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

void saxpy_params_launch(const float *x, float *y, float a, int n) {
    saxpy_params<<<(n + 255) / 256, 256>>>(x, y, a, n);
}
