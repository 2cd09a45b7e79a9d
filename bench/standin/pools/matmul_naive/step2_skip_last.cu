// Step 2: 2D register blocking. Each thread computes a tile_m x tile_n block of C in registers, so a block of
// block_size_x x block_size_y threads computes (block_size_y * tile_m) x (block_size_x * tile_n) elements. Per k, a
// thread loads tile_m values of A and tile_n values of B from shared memory into registers and does tile_m * tile_n
// multiply-adds with them: tile_m * tile_n / (tile_m + tile_n) products per shared-memory read instead of one.
// Thread (tx, ty) owns rows ty * tile_m + i and columns tx * tile_n + j of the block's tile. The tiles are staged as in
// step 1 (zeros outside the matrices), and every sum still runs over k in ascending order.
#define TILE_M (block_size_y * tile_m)
#define TILE_N (block_size_x * tile_n)

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[TILE_M][tile_k];
    __shared__ float b_tile[tile_k][TILE_N];

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

    for (int k0 = 0; k0 < n; k0 += tile_k) {
        for (int e = tid; e < TILE_M * tile_k - 1; e += threads) {
            const int r = e / tile_k;
            const int c = e % tile_k;
            const int gr = tile_row + r;
            const int gc = k0 + c;
            a_tile[r][c] = (gr < n && gc < n) ? A[gr * n + gc] : 0.0f;
        }
        for (int e = tid; e < tile_k * TILE_N; e += threads) {
            const int r = e / TILE_N;
            const int c = e % TILE_N;
            const int gr = k0 + r;
            const int gc = tile_col + c;
            b_tile[r][c] = (gr < n && gc < n) ? B[gr * n + gc] : 0.0f;
        }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < tile_k; k++) {
            #pragma unroll
            for (int i = 0; i < tile_m; i++) a_reg[i] = a_tile[ty * tile_m + i][k];
            #pragma unroll
            for (int j = 0; j < tile_n; j++) b_reg[j] = b_tile[k][tx * tile_n + j];
            #pragma unroll
            for (int i = 0; i < tile_m; i++) {
                #pragma unroll
                for (int j = 0; j < tile_n; j++) acc[i][j] += a_reg[i] * b_reg[j];
            }
        }
        __syncthreads();  // the next k tile overwrites both tiles
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
