// Shared-memory tiles with float4 global loads. As before, a block of block_size_x x block_size_y threads computes a
// (block_size_y * tile_m) x block_size_x tile of C, thread (tx, ty) the rows ty * tile_m ... ty * tile_m + tile_m - 1
// of column tx. The A and B tiles now come from global memory in float4 (16 bytes per load instruction) and go into
// shared memory as float4: four consecutive k of a row of A, four consecutive columns of a row of B. float4 needs
// 16-byte alignment, which every row has when n is a multiple of 4; for other n (and at the edges) the same values
// are read one float at a time. Zeros outside the matrices, and every sum runs over k in ascending order.
#define TILE_M (block_size_y * tile_m)

// Four consecutive floats of row `row` of a matrix from column `col` on (zeros outside it), in one 16-byte load when
// n is a multiple of 4 (every row then starts 16-byte aligned and col is a multiple of 4).
__device__ __forceinline__ float4 load4(const float *M, int row, int col, int n, bool aligned) {
    float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (row >= n) return v;
    const float *p = M + row * n + col;
    if (aligned) {
        if (col < n) v = *reinterpret_cast<const float4 *>(p);
    } else {
        if (col < n) v.x = p[0];
        if (col + 1 < n) v.y = p[1];
        if (col + 2 < n) v.z = p[2];
        if (col + 3 < n) v.w = p[3];
    }
    return v;
}

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ __align__(16) float a_tile[TILE_M][tile_k];
    __shared__ __align__(16) float b_tile[tile_k][block_size_x];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int threads = block_size_x * block_size_y;
    const int tile_row = blockIdx.y * TILE_M;
    const int tile_col = blockIdx.x * block_size_x;
    const int col = tile_col + tx;
    const bool aligned = (n & 3) == 0;

    float acc[tile_m];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) acc[i] = 0.0f;

    for (int k0 = 0; k0 < n; k0 += tile_k) {
        for (int q = tid; q < TILE_M * (tile_k / 4); q += threads) {
            const int r = q / (tile_k / 4);
            const int c = (q % (tile_k / 4)) * 4;
            *reinterpret_cast<float4 *>(&a_tile[r][c]) = load4(A, tile_row + r, k0 + c, n, aligned);
        }
        for (int q = tid; q < tile_k * (block_size_x / 4); q += threads) {
            const int r = q / (block_size_x / 4);
            const int c = (q % (block_size_x / 4)) * 4;
            *reinterpret_cast<float4 *>(&b_tile[r][c]) = load4(B, k0 + r, tile_col + c, n, aligned);
        }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < tile_k; k++) {
            const float b = b_tile[k][tx];
            #pragma unroll
            for (int i = 0; i < tile_m; i++) acc[i] += a_tile[ty * tile_m + i][k] * b;
        }
        __syncthreads();  // the next k tile overwrites both tiles
    }

    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        const int row = tile_row + ty * tile_m + i;
        if (row < n && col < n) C[row * n + col] = acc[i];
    }
}
