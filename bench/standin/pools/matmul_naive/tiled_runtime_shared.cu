// Shared-memory tiles sized by the launch: the tiles take the block's shape from blockDim, so the same kernel works
// for any block. Each thread loads one element of the A tile and one of the B tile (zeros outside the matrices), the
// block synchronises, and every thread multiplies its row of the A tile with its column of the B tile.
__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[blockDim.y][blockDim.x];
    __shared__ float b_tile[blockDim.y][blockDim.x];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < n; k0 += blockDim.x) {
        a_tile[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
        b_tile[ty][tx] = (k0 + ty < n && col < n) ? B[(k0 + ty) * n + col] : 0.0f;
        __syncthreads();

        for (int k = 0; k < blockDim.x; k++) sum += a_tile[ty][k] * b_tile[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = sum;
}
