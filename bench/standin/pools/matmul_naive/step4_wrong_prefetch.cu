// Double-buffered k tiles with prefetched fragments. Step 4's kernel, and within a k tile the fragments of A and B for
// the next k are read from shared memory into registers while the products of this k run, so that the shared-memory
// latency hides behind the multiply-adds as the global latency already does. Fragments, float4 moves and the order of
// every sum are as in step 4.
#define TILE_M (block_size_y * tile_m)
#define TILE_N (block_size_x * tile_n)
#define THREADS (block_size_x * block_size_y)
#define A_STRIDE (TILE_M + 4)
#define A_VECTORS (TILE_M * tile_k / 4)  // float4 of A in one k tile
#define B_VECTORS (tile_k * TILE_N / 4)  // and of B
#define A_PER_THREAD ((A_VECTORS + THREADS - 1) / THREADS)
#define B_PER_THREAD ((B_VECTORS + THREADS - 1) / THREADS)

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

// Four consecutive floats of a shared tile (16-byte aligned) into registers, in one 16-byte load.
__device__ __forceinline__ void load_fragment(float *registers, const float *tile) {
    const float4 v = *reinterpret_cast<const float4 *>(tile);
    registers[0] = v.x;
    registers[1] = v.y;
    registers[2] = v.z;
    registers[3] = v.w;
}

__global__ void __launch_bounds__(block_size_x * block_size_y, min_blocks_per_sm) matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ __align__(16) float a_tile[2][tile_k][A_STRIDE];
    __shared__ __align__(16) float b_tile[2][tile_k][TILE_N];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int tile_row = blockIdx.y * TILE_M;
    const int tile_col = blockIdx.x * TILE_N;
    const bool aligned = (n & 3) == 0;

    // The float4 a thread moves: number tid + l * THREADS of each tile, row-major, so that a warp reads whole rows.
    float4 a_next[A_PER_THREAD];
    float4 b_next[B_PER_THREAD];
    auto fetch = [&](int k0) {  // global memory -> registers
        #pragma unroll
        for (int l = 0; l < A_PER_THREAD; l++) {
            const int q = tid + l * THREADS;
            if (A_VECTORS % THREADS == 0 || q < A_VECTORS) a_next[l] = load4(A, tile_row + q / (tile_k / 4), k0 + q % (tile_k / 4) * 4, n, aligned);
        }
        #pragma unroll
        for (int l = 0; l < B_PER_THREAD; l++) {
            const int q = tid + l * THREADS;
            if (B_VECTORS % THREADS == 0 || q < B_VECTORS) b_next[l] = load4(B, k0 + q / (TILE_N / 4), tile_col + q % (TILE_N / 4) * 4, n, aligned);
        }
    };
    auto stage = [&](int buf) {  // registers -> shared copy buf; A transposed: a_tile[buf][k][row]
        #pragma unroll
        for (int l = 0; l < A_PER_THREAD; l++) {
            const int q = tid + l * THREADS;
            if (A_VECTORS % THREADS == 0 || q < A_VECTORS) {
                const int r = q / (tile_k / 4);
                const int c = q % (tile_k / 4) * 4;
                a_tile[buf][c][r] = a_next[l].x;
                a_tile[buf][c + 1][r] = a_next[l].y;
                a_tile[buf][c + 2][r] = a_next[l].z;
                a_tile[buf][c + 3][r] = a_next[l].w;
            }
        }
        #pragma unroll
        for (int l = 0; l < B_PER_THREAD; l++) {
            const int q = tid + l * THREADS;
            if (B_VECTORS % THREADS == 0 || q < B_VECTORS) *reinterpret_cast<float4 *>(&b_tile[buf][q / (TILE_N / 4)][q % (TILE_N / 4) * 4]) = b_next[l];
        }
    };

    float acc[tile_m][tile_n];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        #pragma unroll
        for (int j = 0; j < tile_n; j++) acc[i][j] = 0.0f;
    }
    float a_frag[tile_m];
    float b_frag[tile_n];

    const int tiles = (n + tile_k - 1) / tile_k;
    fetch(0);
    stage(0);
    __syncthreads();
    for (int t = 0; t < tiles; t++) {
        const int buf = t & 1;
        if (t + 1 < tiles) fetch((t + 1) * tile_k);  // in flight during the computation below

        // The fragments of k + 1 are read from shared memory while the products of k run.
        #pragma unroll
        for (int i = 0; i < tile_m / 4; i++) load_fragment(&a_frag[i * 4], &a_tile[buf][0][i * block_size_y * 4 + ty * 4]);
        #pragma unroll
        for (int j = 0; j < tile_n / 4; j++) load_fragment(&b_frag[j * 4], &b_tile[buf][0][j * block_size_x * 4 + tx * 4]);
        #pragma unroll
        for (int k = 0; k < tile_k; k++) {
            float a_next[tile_m];
            float b_next[tile_n];
            if (k + 1 < tile_k) {
                #pragma unroll
                for (int i = 0; i < tile_m / 4; i++) load_fragment(&a_next[i * 4], &a_tile[buf][k][i * block_size_y * 4 + ty * 4]);
                #pragma unroll
                for (int j = 0; j < tile_n / 4; j++) load_fragment(&b_next[j * 4], &b_tile[buf][k][j * block_size_x * 4 + tx * 4]);
            }
            #pragma unroll
            for (int i = 0; i < tile_m; i++) {
                #pragma unroll
                for (int j = 0; j < tile_n; j++) acc[i][j] += a_frag[i] * b_frag[j];
            }
            if (k + 1 < tile_k) {
                #pragma unroll
                for (int i = 0; i < tile_m; i++) a_frag[i] = a_next[i];
                #pragma unroll
                for (int j = 0; j < tile_n; j++) b_frag[j] = b_next[j];
            }
        }

        // The other copy was last read in iteration t - 1, which every thread has finished (the barrier below).
        if (t + 1 < tiles) stage(buf ^ 1);
        __syncthreads();
    }

    #pragma unroll
    for (int i = 0; i < tile_m; i++) {
        const int row = tile_row + (i / 4) * block_size_y * 4 + ty * 4 + i % 4;
        if (row >= n) continue;
        #pragma unroll
        for (int j = 0; j < tile_n; j += 4) {
            const int col = tile_col + (j / 4) * block_size_x * 4 + tx * 4;
            float *out = C + row * n + col;
            if (aligned && col < n) {
                const float4 v = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
                *reinterpret_cast<float4 *>(out) = v;
            } else {
                if (col < n) out[0] = acc[i][j];
                if (col + 1 < n) out[1] = acc[i][j + 1];
                if (col + 2 < n) out[2] = acc[i][j + 2];
                if (col + 3 < n) out[3] = acc[i][j + 3];
            }
        }
    }
}
