// The naive kernel with its k loop unrolled unroll_k times: fewer loop branches and index updates per multiply-add,
// and unroll_k independent loads in flight per thread. The products are still added one k after the other into one
// sum, so the result is the original's; the last n % unroll_k values of k are summed by a remainder loop.
__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    const int col = blockIdx.x * block_size_x + threadIdx.x;
    const int row = blockIdx.y * block_size_y + threadIdx.y;
    if (row >= n || col >= n) return;

    const float *a = A + row * n;
    const float *b = B + col;
    float sum = 0.0f;
    int k = 0;
    for (; k + unroll_k <= n; k += unroll_k) {
        #pragma unroll
        for (int u = 0; u < unroll_k; u++) sum += a[k + u] * b[(k + u) * n];
    }
    for (; k < n; k++) sum += a[k] * b[k * n];
    C[row * n + col] = sum;
}
