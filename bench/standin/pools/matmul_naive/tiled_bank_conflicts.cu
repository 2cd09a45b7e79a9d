// Square shared-memory tiles, the B tile stored transposed: a block of block_size_x x block_size_y threads (a square)
// computes the tile of C of its own size, one element per thread. Per k tile each thread loads one element of A and
// one of B into shared memory (zeros outside the matrices, so any n works); the B tile is kept as b_tile_t[column][k]
// so that the column a thread multiplies with is contiguous in shared memory, like its row of the A tile.
__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[block_size_y][block_size_x];
    __shared__ float b_tile_t[block_size_x][block_size_y];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * block_size_y + ty;
    const int col = blockIdx.x * block_size_x + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < n; k0 += block_size_x) {
        a_tile[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
        b_tile_t[tx][ty] = (k0 + ty < n && col < n) ? B[(k0 + ty) * n + col] : 0.0f;
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < block_size_x; k++) sum += a_tile[ty][k] * b_tile_t[tx][k];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = sum;
}
