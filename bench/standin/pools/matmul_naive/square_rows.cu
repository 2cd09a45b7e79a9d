// Square k tiles with several rows per thread: the k tile is as deep as the block is wide (as in the classic square
// tiling), and each thread computes tile_m rows of its column (as in the shared-tile kernel), so a value of B read
// from shared memory serves tile_m products. A block of block_size_x x block_size_y threads computes a
// (block_size_y * tile_m) x block_size_x tile of C; thread (tx, ty) owns rows ty + i * block_size_y of column tx.
// Per k tile each thread loads rows ty + i * block_size_y of the A tile and rows ty, ty + block_size_y, ... of the B
// tile, at column tx: every load of a warp is coalesced. Zeros outside the matrices, so any n works; every sum runs
// over k in ascending order.
#define TILE_M (block_size_y * tile_m)

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[TILE_M][block_size_x];
    __shared__ float b_tile[block_size_x][block_size_x];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tile_row = blockIdx.y * TILE_M;
    const int col = blockIdx.x * block_size_x + tx;

    float acc[tile_m];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) acc[i] = 0.0f;

    for (int k0 = 0; k0 < n; k0 += block_size_x) {
        #pragma unroll
        for (int i = 0; i < tile_m; i++) {
            const int r = tile_row + ty + i * block_size_y;
            a_tile[ty + i * block_size_y][tx] = (r < n && k0 + tx < n) ? A[r * n + k0 + tx] : 0.0f;
        }
        for (int r = ty; r < block_size_x; r += block_size_y) {
            b_tile[r][tx] = (k0 + r < n && col < n) ? B[(k0 + r) * n + col] : 0.0f;
        }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < block_size_x; k++) {
            const float b = b_tile[k][tx];
            #pragma unroll
            for (int i = 0; i < tile_m; i++) acc[i] += a_tile[ty + i * block_size_y][k] * b;
        }
        __syncthreads();  // the next k tile overwrites both tiles
    }

    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        const int row = tile_row + ty + i * block_size_y;
        if (row < n && col < n) C[row * n + col] = acc[i];
    }
}
