// Square shared-memory tiles with one barrier per k tile: a block of block_size_x x block_size_y threads (a square)
// computes the tile of C of its own size, one element per thread. Each thread loads one element of the A tile and one
// of the B tile (zeros outside the matrices), multiplies its row of the A tile with its column of the B tile, and the
// block synchronises once, before the next k tile overwrites the tiles.
__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[block_size_y][block_size_x];
    __shared__ float b_tile[block_size_y][block_size_x];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * block_size_y + ty;
    const int col = blockIdx.x * block_size_x + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < n; k0 += block_size_x) {
        a_tile[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
        b_tile[ty][tx] = (k0 + ty < n && col < n) ? B[(k0 + ty) * n + col] : 0.0f;

        #pragma unroll
        for (int k = 0; k < block_size_x; k++) sum += a_tile[ty][k] * b_tile[k][tx];
        __syncthreads();  // the next k tile overwrites both tiles
    }
    if (row < n && col < n) C[row * n + col] = sum;
}
