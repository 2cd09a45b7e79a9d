// Shared-memory tiled matrix multiply C = A * B for n x n row-major floats, with the tunable parameters and the work
// decomposition of Kernel Tuner's matmul example (after V. Volkov, "Better performance at lower occupancy", GTC 2010),
// so that its timings compare with Kernel Tuner's.
//
// A block of block_size_x x block_size_y threads computes a TILE_ROWS x TILE_COLS tile of C; each thread computes
// tile_size_y x tile_size_x elements of it, block_size_y rows and block_size_x columns apart, so that every load and
// store of a warp is coalesced. Tiling in x gives a block more work; tiling in y gives a thread more work (registers).
// The k dimension advances block_size_x at a time: the block stages A[tile rows][k0, k0 + block_size_x) and
// B[k0, k0 + block_size_x)[tile columns] in shared memory. Thread row ty loads rows ty, ty + block_size_y, ... of both
// staged tiles, which covers the block_size_x rows of the B tile only when block_size_x == block_size_y * tile_size_y:
// the restriction of the search space.
// The grid is (n / TILE_COLS) x (n / TILE_ROWS): grid divisors block_size_x * tile_size_x and block_size_y * tile_size_y.
// n must be a multiple of TILE_COLS and TILE_ROWS (there are no bounds checks, as in the original), and n * n < 2^31.
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif
#ifndef tile_size_x
#define tile_size_x 4
#endif
#ifndef tile_size_y
#define tile_size_y 4
#endif

#define TILE_ROWS (block_size_y * tile_size_y)
#define TILE_COLS (block_size_x * tile_size_x)

#if TILE_ROWS != block_size_x
#error "matmul_tiled needs block_size_x == block_size_y * tile_size_y"
#endif

__global__ void matmul_tiled(float *C, const float *A, const float *B, int n) {
    __shared__ float a_tile[TILE_ROWS][block_size_x];
    __shared__ float b_tile[block_size_x][TILE_COLS];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * TILE_ROWS + ty;  // this thread's rows of C: row0 + i * block_size_y
    const int col0 = blockIdx.x * TILE_COLS + tx;  // and columns: col0 + j * block_size_x

    float acc[tile_size_y][tile_size_x];
    #pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++) {
            acc[i][j] = 0.0f;
        }
    }

    for (int k0 = 0; k0 < n; k0 += block_size_x) {
        #pragma unroll
        for (int i = 0; i < tile_size_y; i++) {
            const int r = ty + i * block_size_y;
            a_tile[r][tx] = A[(row0 + i * block_size_y) * n + k0 + tx];
            #pragma unroll
            for (int j = 0; j < tile_size_x; j++) {
                b_tile[r][tx + j * block_size_x] = B[(k0 + r) * n + col0 + j * block_size_x];
            }
        }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < block_size_x; k++) {
            #pragma unroll
            for (int i = 0; i < tile_size_y; i++) {
                const float a = a_tile[ty + i * block_size_y][k];
                #pragma unroll
                for (int j = 0; j < tile_size_x; j++) {
                    acc[i][j] += a * b_tile[k][tx + j * block_size_x];
                }
            }
        }
        __syncthreads();  // the next step overwrites the tiles
    }

    #pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++) {
            C[(row0 + i * block_size_y) * n + col0 + j * block_size_x] = acc[i][j];
        }
    }
}
