// Naive matrix multiply C = A * B for n x n row-major floats: one thread per element of C, reading its row of A and its
// column of B straight from global memory (the caches do all the reuse). The baseline the tiled version is measured
// against, and its reference implementation (examples/matmul_tiled/tune.yaml).
// Thread blocks are block_size_x x block_size_y; the grid is ceil(n / block_size_x) x ceil(n / block_size_y).
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    const int col = blockIdx.x * block_size_x + threadIdx.x;
    const int row = blockIdx.y * block_size_y + threadIdx.y;
    if (row >= n || col >= n) return;

    float sum = 0.0f;
    for (int k = 0; k < n; k++) {
        sum += A[row * n + k] * B[k * n + col];
    }
    C[row * n + col] = sum;
}
