/* The arithmetic of the cuDNN convolutions (cudnn_conv.cu), plain C without CUDA or cuDNN so
 * that tests/test_cudnn_plan.c checks it on any machine: the strides that describe a CNHW
 * tensor to cuDNN, the key of a convolution shape and its hash, the per-backend table that
 * maps keys to plans (open addressing, never evicts), the workspace limit and the choice of an
 * algorithm among cudnnFind*'s results. */
#ifndef VT_CUDA_CUDNN_PLAN_H
#define VT_CUDA_CUDNN_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* backend.h is plain C without C++ guards of its own */
#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"
#include "cudnn_abi.h"

/* cuDNN's 4-D strides (in elements) of a CNHW tensor of c channels, n images, h x w: element
 * (c, n, y, x) is at ((c*N + n)*H + y)*W + x (backend.h), so n_stride = H*W, c_stride = N*H*W,
 * h_stride = W, w_stride = 1.  out[] = {n, c, h, w} strides, cudnnSetTensor4dDescriptorEx's
 * order.  0 when a size is < 1 or the tensor holds 2^31 elements or more (cuDNN's 4-D
 * descriptors take int strides); 1 otherwise. */
int vt_dnn_cnhw_strides(int c, int n, int h, int w, int out[4]);

/* Is the shape one cuDNN is asked to run?  0 (with *why set to a static reason) when a tensor
 * is too large for int strides.  The shape must be valid (conv.cu checks it first). */
int vt_dnn_shape_ok(const vt_conv_desc *d, const char **why);

/* The key of a plan: the whole shape (ho, wo follow from it) and the math mode, since the
 * algorithms are chosen for one of them (TF32 and plain fp32 get different ones). */
typedef struct vt_dnn_key {
    int v[13]; /* n cin h w cout kh kw sh sw ph pw groups plain_fp32 */
} vt_dnn_key;

vt_dnn_key vt_dnn_key_of(const vt_conv_desc *d, int plain_fp32);
int vt_dnn_key_eq(const vt_dnn_key *a, const vt_dnn_key *b);
/* FNV-1a (64-bit) over the key's values, each as 4 little-endian bytes: the same hash on every
 * machine. */
uint64_t vt_dnn_key_hash(const vt_dnn_key *k);

/* A table of keys over storage the caller owns (cap slots, cap a power of two): the slot of a
 * key is its hash modulo cap, then the next free slot (linear probing).  Entries are never
 * removed, so a slot index stays the key's for the table's life and the caller keeps each
 * plan at the same index of its own array.  At most 3/4 of the slots are filled: beyond that
 * vt_dnn_table_insert refuses (-1) and the caller runs those shapes without cuDNN. */
typedef struct vt_dnn_table {
    vt_dnn_key *keys;
    unsigned char *used; /* cap flags, zeroed by the caller */
    size_t cap, count;
} vt_dnn_table;

/* The key's slot, or -1 when absent. */
long vt_dnn_table_find(const vt_dnn_table *t, const vt_dnn_key *k);
/* The slot a new key takes (it must be absent: find first), or -1 when the table is full. */
long vt_dnn_table_insert(vt_dnn_table *t, const vt_dnn_key *k);

/* Workspace bytes a plan may use.  A plan made when conv_workspace announces the shape may use
 * up to max(im2col_bytes, cap): conv_workspace then returns the larger of im2col's bytes and
 * the plan's, so the buffer callers allocate always holds either path.  A plan made later by a
 * pass (a shape conv_workspace never saw, e.g. after the math mode changed) only knows that
 * the caller's buffer holds im2col's bytes: its limit is im2col_bytes. */
size_t vt_dnn_ws_limit(size_t im2col_bytes, size_t cap, int announced);
/* The default cap: the same 256 MiB as the im2col buffer (VT_CONV_COL_CAP). */
#define VT_DNN_WS_CAP ((size_t)256 << 20)

/* The algorithm to use among n results of cudnnFind* (sorted fastest first): the index of the
 * first one that succeeded, needs at most `limit` bytes of workspace and, when plain_fp32, does
 * not use tensor-op math (TF32).  -1 when none qualifies. */
int vt_dnn_pick(const vt_dnn_algo_perf *results, int n, size_t limit, int plain_fp32);

/* The workspace conv_workspace reports: the larger of im2col's and the plan's (0 when there is
 * no plan: plan_bytes 0). */
static inline size_t vt_dnn_ws_report(size_t im2col_bytes, size_t plan_bytes)
{
    return im2col_bytes > plan_bytes ? im2col_bytes : plan_bytes;
}

#ifdef __cplusplus
}
#endif

#endif
