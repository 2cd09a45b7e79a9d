// Sum of n floats in a single launch, written to sum[0].
//
// num_blocks blocks of block_size_x threads walk the input with a grid-stride loop, `vector` consecutive floats per
// load (float2/float4 loads for 2 and 4). Each block reduces its threads' sums, with warp shuffles (use_shuffle 1) or a
// shared-memory tree (use_shuffle 0), and stores its partial sum; the last block to finish adds the num_blocks partials
// in a fixed order and writes the result (the "last block" pattern of the CUDA programming guide's memory-fence example).
//
// Why one launch with one output: the tuner compares outputs of a fixed length against the reference, so the result must
// not depend on the tunable parameters (per-block partial sums would), and the partials in fixed order make the result
// deterministic for a configuration (no floating-point atomics), so repeated launches give identical outputs.
// The grid must be exactly num_blocks blocks (problem size "num_blocks" with no grid divisor).
#ifndef block_size_x
#define block_size_x 256
#endif
#ifndef num_blocks
#define num_blocks 1024
#endif
#ifndef use_shuffle
#define use_shuffle 1
#endif
#ifndef vector
#define vector 4
#endif

#if vector == 1
typedef float load_t;
#elif vector == 2
typedef float2 load_t;
#elif vector == 4
typedef float4 load_t;
#else
#error "vector must be 1, 2 or 4"
#endif

// The partial sum of every block, and how many blocks have stored theirs in this launch. Zero when the module is loaded;
// the last block of a launch resets the counter for the next one (atomicInc wraps around to 0).
__device__ float block_sums[num_blocks];
__device__ unsigned int blocks_done;

__device__ __forceinline__ float lane_sum(float v) {
    #pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

__device__ __forceinline__ float load_sum(load_t v) {
#if vector == 1
    return v;
#elif vector == 2
    return v.x + v.y;
#else
    return (v.x + v.y) + (v.z + v.w);
#endif
}

// The sum of v over the block, valid in thread 0. Every thread of the block must call it.
__device__ __forceinline__ float block_sum(float v) {
#if use_shuffle
    __shared__ float warp_sums[block_size_x / 32];
    v = lane_sum(v);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = lane_sum(threadIdx.x < block_size_x / 32 ? warp_sums[threadIdx.x] : 0.0f);
    }
    return v;
#else
    __shared__ float partial[block_size_x];
    partial[threadIdx.x] = v;
    __syncthreads();
    #pragma unroll
    for (int stride = block_size_x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    return partial[0];
#endif
}

__global__ void reduce_sum(float *sum, const float *in, int n) {
    const int first = blockIdx.x * block_size_x + threadIdx.x;
    const int stride = num_blocks * block_size_x;
    const int loads = n / vector;
    const load_t *in_v = reinterpret_cast<const load_t *>(in);  // device allocations are 256-byte aligned

    float v = 0.0f;
    for (int i = first; i < loads; i += stride) {
        v += load_sum(in_v[i]);
    }
    for (int i = loads * vector + first; i < n; i += stride) {  // the n % vector floats left over
        v += in[i];
    }
    v = block_sum(v);

    __shared__ bool last_block;
    if (threadIdx.x == 0) {
        block_sums[blockIdx.x] = v;
        __threadfence();  // the partial is visible to every block before this block counts as done
        last_block = atomicInc(&blocks_done, num_blocks - 1) == num_blocks - 1;
    }
    __syncthreads();
    if (!last_block) return;

    float total = 0.0f;
    for (int b = threadIdx.x; b < num_blocks; b += block_size_x) {
        total += __ldcg(&block_sums[b]);  // from L2, where the other blocks' stores are
    }
    total = block_sum(total);
    if (threadIdx.x == 0) sum[0] = total;
}
