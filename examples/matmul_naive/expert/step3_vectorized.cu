// Step 3: vectorised loads and stores. Global memory is read and written in float4 (16 bytes per instruction): four
// consecutive k of a row of A, four consecutive columns of a row of B and of C. The A tile is stored transposed in
// shared memory (a_tile[k][row]), so that a thread's tile_m values of A for one k, like its tile_n values of B, are
// consecutive and come from shared memory as float4 too. float4 needs 16-byte alignment: every row starts on one when
// n is a multiple of 4, and then a float4 is either wholly inside the matrix or wholly outside. For other n (and at the
// edges) the same values are moved one float at a time. Tiles, registers and the order of every sum are as in step 2.
// The tile loops unrolled, a thread may hold more registers than two blocks per SM allow: min_blocks_per_sm 2 asks the
// compiler to fit them (__launch_bounds__), 1 leaves it free; the tuner finds which is faster.
#define TILE_M (block_size_y * tile_m)
#define TILE_N (block_size_x * tile_n)

__global__ void __launch_bounds__(block_size_x * block_size_y, min_blocks_per_sm) matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ __align__(16) float a_tile[tile_k][TILE_M];
    __shared__ __align__(16) float b_tile[tile_k][TILE_N];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int threads = block_size_x * block_size_y;
    const int tile_row = blockIdx.y * TILE_M;
    const int tile_col = blockIdx.x * TILE_N;
    const bool aligned = (n & 3) == 0;

    float acc[tile_m][tile_n];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        #pragma unroll
        for (int j = 0; j < tile_n; j++) acc[i][j] = 0.0f;
    }
    float a_reg[tile_m];
    float b_reg[tile_n];

    for (int k0 = 0; k0 < n; k0 += tile_k) {
        // A[tile_row + r][k0 + c .. k0 + c + 3] -> a_tile[c .. c + 3][r]
        for (int q = tid; q < TILE_M * (tile_k / 4); q += threads) {
            const int r = q / (tile_k / 4);
            const int c = (q % (tile_k / 4)) * 4;
            const int gr = tile_row + r;
            const int gc = k0 + c;
            float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
            if (aligned) {
                if (gr < n && gc < n) v = *reinterpret_cast<const float4 *>(&A[gr * n + gc]);
            } else if (gr < n) {
                v.x = gc < n ? A[gr * n + gc] : 0.0f;
                v.y = gc + 1 < n ? A[gr * n + gc + 1] : 0.0f;
                v.z = gc + 2 < n ? A[gr * n + gc + 2] : 0.0f;
                v.w = gc + 3 < n ? A[gr * n + gc + 3] : 0.0f;
            }
            a_tile[c][r] = v.x;
            a_tile[c + 1][r] = v.y;
            a_tile[c + 2][r] = v.z;
            a_tile[c + 3][r] = v.w;
        }
        // B[k0 + r][tile_col + c .. tile_col + c + 3] -> b_tile[r][c .. c + 3]
        for (int q = tid; q < tile_k * (TILE_N / 4); q += threads) {
            const int r = q / (TILE_N / 4);
            const int c = (q % (TILE_N / 4)) * 4;
            const int gr = k0 + r;
            const int gc = tile_col + c;
            float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
            if (aligned) {
                if (gr < n && gc < n) v = *reinterpret_cast<const float4 *>(&B[gr * n + gc]);
            } else if (gr < n) {
                v.x = gc < n ? B[gr * n + gc] : 0.0f;
                v.y = gc + 1 < n ? B[gr * n + gc + 1] : 0.0f;
                v.z = gc + 2 < n ? B[gr * n + gc + 2] : 0.0f;
                v.w = gc + 3 < n ? B[gr * n + gc + 3] : 0.0f;
            }
            *reinterpret_cast<float4 *>(&b_tile[r][c]) = v;
        }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < tile_k; k++) {
            #pragma unroll
            for (int i = 0; i < tile_m; i += 4) {
                const float4 a = *reinterpret_cast<const float4 *>(&a_tile[k][ty * tile_m + i]);
                a_reg[i] = a.x;
                a_reg[i + 1] = a.y;
                a_reg[i + 2] = a.z;
                a_reg[i + 3] = a.w;
            }
            #pragma unroll
            for (int j = 0; j < tile_n; j += 4) {
                const float4 b = *reinterpret_cast<const float4 *>(&b_tile[k][tx * tile_n + j]);
                b_reg[j] = b.x;
                b_reg[j + 1] = b.y;
                b_reg[j + 2] = b.z;
                b_reg[j + 3] = b.w;
            }
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
        if (row >= n) continue;
        #pragma unroll
        for (int j = 0; j < tile_n; j += 4) {
            const int col = tile_col + tx * tile_n + j;
            if (aligned && col < n) {
                const float4 v = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
                *reinterpret_cast<float4 *>(&C[row * n + col]) = v;
            } else {
                if (col < n) C[row * n + col] = acc[i][j];
                if (col + 1 < n) C[row * n + col + 1] = acc[i][j + 1];
                if (col + 2 < n) C[row * n + col + 2] = acc[i][j + 2];
                if (col + 3 < n) C[row * n + col + 3] = acc[i][j + 3];
            }
        }
    }
}
