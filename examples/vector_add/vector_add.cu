// Element-wise vector addition, c = a + b: one thread per element (Kernel Tuner's first example).
// block_size_x is a tunable parameter: the tuner defines it, and the grid is ceil(n / block_size_x) blocks.
// The default below lets the file compile on its own.
#ifndef block_size_x
#define block_size_x 256
#endif

__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    const int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
