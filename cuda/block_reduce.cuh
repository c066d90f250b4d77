/* Deterministic block-wide sums: a fixed shuffle tree within warps, then across warps, so the
 * same inputs and launch shape always give the same bits (no atomics). */
#ifndef VT_BLOCK_REDUCE_CUH
#define VT_BLOCK_REDUCE_CUH

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum of v over the block, returned to every thread.  blockDim.x must be a multiple of 32 (at
 * most 1024) and every thread must call it (it synchronises).  `sh` holds >= 32 floats and may be
 * reused right after the call returns. */
__device__ __forceinline__ float block_sum(float v, float *sh)
{
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    float t = lane < nw ? sh[lane] : 0.0f;
    return warp_sum(t);
}

/* Two sums at once (one pass over shared memory); `sh` holds >= 64 floats. */
__device__ __forceinline__ void block_sum2(float *a, float *b, float *sh)
{
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    float va = warp_sum(*a), vb = warp_sum(*b);
    __syncthreads();
    if (lane == 0) {
        sh[wid] = va;
        sh[32 + wid] = vb;
    }
    __syncthreads();
    *a = warp_sum(lane < nw ? sh[lane] : 0.0f);
    *b = warp_sum(lane < nw ? sh[32 + lane] : 0.0f);
}

#endif
