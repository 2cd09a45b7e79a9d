// One explicit diffusion step on an nx x ny grid (row-major floats) with the 5-point stencil
//     out = in + alpha * (north + south + west + east - 4 * in)
// on the interior; the boundary cells (first and last row and column) are copied unchanged, so every cell is written.
//
// Tunable parameters: the block (block_size_x x block_size_y threads), tile_size_y (rows per thread, block_size_y apart,
// so a warp's loads and stores stay coalesced) and use_shared: 1 stages the block's cells plus a one-cell halo on every
// side in shared memory and reads the neighbours from there; 0 reads them from global memory (through L1).
// The grid is ceil(nx / block_size_x) x ceil(ny / (block_size_y * tile_size_y)). nx * ny must be below 2^31.
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 4
#endif
#ifndef tile_size_y
#define tile_size_y 2
#endif
#ifndef use_shared
#define use_shared 1
#endif

#define TILE_ROWS (block_size_y * tile_size_y)

__global__ void stencil_2d(float *out, const float *in, int nx, int ny, float alpha) {
    const int x = blockIdx.x * block_size_x + threadIdx.x;
    const int y0 = blockIdx.y * TILE_ROWS + threadIdx.y;  // this thread's rows: y0 + t * block_size_y

#if use_shared
    // tile[r][c] holds cell (blockIdx.x * block_size_x - 1 + c, blockIdx.y * TILE_ROWS - 1 + r): the block's cells and
    // their halo. Loaded by all threads together, row by row, so consecutive threads read consecutive cells. Cells
    // outside the grid are never used (they are neighbours of boundary cells only) and hold 0.
    __shared__ float tile[TILE_ROWS + 2][block_size_x + 2];
    const int gx0 = blockIdx.x * block_size_x - 1;
    const int gy0 = blockIdx.y * TILE_ROWS - 1;
    for (int i = threadIdx.y * block_size_x + threadIdx.x; i < (TILE_ROWS + 2) * (block_size_x + 2); i += block_size_x * block_size_y) {
        const int r = i / (block_size_x + 2);
        const int c = i % (block_size_x + 2);
        const int gx = gx0 + c;
        const int gy = gy0 + r;
        tile[r][c] = (gx >= 0 && gx < nx && gy >= 0 && gy < ny) ? in[gy * nx + gx] : 0.0f;
    }
    __syncthreads();
#endif

    if (x >= nx) return;  // after the barrier: these threads still helped to load the halo
    #pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        const int y = y0 + t * block_size_y;
        if (y >= ny) return;
#if use_shared
        const int r = threadIdx.y + t * block_size_y + 1;
        const int c = threadIdx.x + 1;
        const float center = tile[r][c];
#else
        const float center = in[y * nx + x];
#endif
        if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
            out[y * nx + x] = center;
            continue;
        }
#if use_shared
        const float neighbours = tile[r - 1][c] + tile[r + 1][c] + tile[r][c - 1] + tile[r][c + 1];
#else
        const float neighbours = in[(y - 1) * nx + x] + in[(y + 1) * nx + x] + in[y * nx + x - 1] + in[y * nx + x + 1];
#endif
        out[y * nx + x] = center + alpha * (neighbours - 4.0f * center);
    }
}
