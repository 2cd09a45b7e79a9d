// Step 1: shared-memory tiles, several rows per thread. A block of block_size_x x block_size_y threads computes a
// (block_size_y * tile_m) x block_size_x tile of C: thread (tx, ty) computes column tx of the rows ty * tile_m ...
// ty * tile_m + tile_m - 1. The k loop advances tile_k at a time; the block stages A[tile rows][k0, k0 + tile_k) and
// B[k0, k0 + tile_k)[tile columns] in shared memory (elements outside the matrices as zeros, so any n works), and each
// value of B read from shared memory serves tile_m products. Every sum runs over k in ascending order, as before.
#define TILE_M (block_size_y * tile_m)

__global__ void matmul_naive(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[TILE_M][tile_k];
    __shared__ float b_tile[tile_k][block_size_x];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int threads = block_size_x * block_size_y;
    const int tile_row = blockIdx.y * TILE_M;
    const int col = blockIdx.x * block_size_x + tx;

    float acc[tile_m];
    #pragma unroll
    for (int i = 0; i < tile_m; i++) acc[i] = 0.0f;

    for (int k0 = 0; k0 < n; k0 += tile_k) {
        for (int e = tid; e < TILE_M * tile_k; e += threads) {
            const int r = e / tile_k;
            const int c = e % tile_k;
            const int gr = tile_row + r;
            const int gc = k0 + c;
            a_tile[r][c] = (gr < n && gc < n) ? A[gr * n + gc] : 0.0f;
        }
        for (int e = tid; e < tile_k * block_size_x; e += threads) {
            const int r = e / block_size_x;
            const int c = e % block_size_x;
            const int gr = k0 + r;
            const int gc = blockIdx.x * block_size_x + c;
            b_tile[r][c] = (gr < n && gc < n) ? B[gr * n + gc] : 0.0f;
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
