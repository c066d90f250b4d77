/* Caching device allocator of one CUDA backend.
 *
 * cudaMalloc/cudaFree synchronise the device and cost tens of microseconds, so blocks freed by a
 * training step are kept in per-size-class free lists and handed out again by the next step.
 * Reuse needs no event tracking because every op of a backend runs on its single stream: a block
 * freed on the host and re-allocated is only touched by work queued after the earlier users.
 * Sizes round up to 4 classes per power of two (at most 25% waste); above 64 MiB (the
 * executor's activation arena, gigabytes) to a multiple of 2 MiB, reused only at that size.  A
 * cudaMalloc that fails first releases the free blocks and retries, so the cache never causes
 * an out-of-memory by itself. */
#include <cstdlib>

#include "cuda_internal.cuh"

#define VT_CUDA_MIN_BLOCK 512u

/* Rounded size and class of a request.  Large requests get class -1 (matched only by exact
 * size): a multiple of 2 MiB, or their exact size when too large to round without overflow. */
static size_t size_class(size_t bytes, int *cls)
{
    if (bytes <= VT_CUDA_MIN_BLOCK) {
        *cls = 0;
        return VT_CUDA_MIN_BLOCK;
    }
    if (bytes > ((size_t)1 << 60)) {
        *cls = -1;
        return bytes;
    }
    if (bytes > ((size_t)64 << 20)) {
        size_t g = (size_t)2 << 20;
        *cls = -1;
        return (bytes + g - 1) / g * g;
    }
    int e = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^e < bytes <= 2^(e+1) */
    size_t step = (size_t)1 << (e - 2);
    size_t q = (bytes + step - 1) / step; /* 5..8 */
    *cls = 1 + (e - 9) * 4 + (int)(q - 5);
    return q * step;
}

static vt_status cache_push(vt_cuda_cache *c, void *ptr, size_t size, int cls)
{
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 256;
        vt_cuda_block *nb = (vt_cuda_block *)realloc(c->blocks, ncap * sizeof *nb);
        if (!nb) return vt_fail(VT_ERR_OUT_OF_MEMORY, "out of host memory in the CUDA allocator");
        c->blocks = nb;
        c->cap = ncap;
    }
    vt_cuda_block *blk = &c->blocks[c->count++];
    blk->ptr = ptr;
    blk->size = size;
    blk->cls = cls;
    blk->in_use = 1;
    return VT_OK;
}

static void cache_remove(vt_cuda_cache *c, size_t i)
{
    c->blocks[i] = c->blocks[--c->count];
}

void vt_cuda_cache_release(vt_cuda_backend *cb)
{
    vt_cuda_cache *c = &cb->cache;
    for (size_t i = c->count; i-- > 0;) {
        if (c->blocks[i].in_use) continue;
        (void)cudaFree(c->blocks[i].ptr);
        c->held -= c->blocks[i].size;
        cache_remove(c, i);
    }
    (void)cudaGetLastError();
}

void vt_cuda_cache_destroy(vt_cuda_backend *cb)
{
    vt_cuda_cache *c = &cb->cache;
    for (size_t i = 0; i < c->count; i++) (void)cudaFree(c->blocks[i].ptr);
    (void)cudaGetLastError();
    free(c->blocks);
    c->blocks = NULL;
    c->count = c->cap = 0;
    c->held = 0;
    cb->scratch = NULL;
    cb->scratch_bytes = 0;
    cb->bf16_buf[0] = cb->bf16_buf[1] = NULL;
    cb->bf16_bytes[0] = cb->bf16_bytes[1] = 0;
    cb->graphs.cublas_ws = NULL;
}

static vt_status alloc_block(vt_cuda_backend *cb, size_t bytes, void **out)
{
    vt_cuda_cache *c = &cb->cache;
    *out = NULL;
    int cls;
    size_t size = size_class(bytes, &cls);
    for (size_t i = 0; i < c->count; i++) {
        vt_cuda_block *blk = &c->blocks[i];
        if (!blk->in_use && blk->cls == cls && blk->size == size) {
            blk->in_use = 1;
            *out = blk->ptr;
            return VT_OK;
        }
    }
    VT_CUDA_GUARD(cb);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        vt_cuda_cache_release(cb);
        e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (e == cudaErrorMemoryAllocation) {
            return vt_fail(VT_ERR_DEVICE_OOM,
                    "CUDA device %d out of memory: cannot allocate %zu bytes (this backend holds "
                    "%zu bytes)",
                    cb->device, bytes, c->held);
        }
        return vt_fail(VT_ERR_DEVICE, "cudaMalloc of %zu bytes on CUDA device %d failed: %s",
                       bytes, cb->device, cudaGetErrorString(e));
    }
    vt_status st = cache_push(c, p, size, cls);
    if (st != VT_OK) {
        (void)cudaFree(p);
        return st;
    }
    c->held += size;
    if (c->held > c->peak) c->peak = c->held;
    *out = p;
    return VT_OK;
}

void *vt_cuda_alloc(vt_backend *b, size_t bytes)
{
    void *p = NULL;
    (void)alloc_block(vt_cuda(b), bytes, &p);
    return p;
}

void vt_cuda_free(vt_backend *b, void *p)
{
    if (!p) return;
    vt_cuda_cache *c = &vt_cuda(b)->cache;
    /* Newest blocks are at the end and are the likeliest to be freed first. */
    for (size_t i = c->count; i-- > 0;) {
        if (c->blocks[i].ptr == p) {
            c->blocks[i].in_use = 0;
            return;
        }
    }
    /* Not ours: ignoring it is the only safe choice for a void function that must not abort. */
}

vt_status vt_cuda_grow(vt_cuda_backend *cb, void **buf, size_t *have, size_t bytes)
{
    if (*have >= bytes) return VT_OK;
    size_t want = *have * 2 > bytes ? *have * 2 : bytes;
    void *p = NULL;
    vt_status st = alloc_block(cb, want, &p);
    if (st != VT_OK) return st;
    vt_cuda_free(&cb->base, *buf);
    *buf = p;
    *have = want;
    return VT_OK;
}

vt_status vt_cuda_scratch(vt_cuda_backend *cb, size_t bytes)
{
    return vt_cuda_grow(cb, &cb->scratch, &cb->scratch_bytes, bytes);
}
