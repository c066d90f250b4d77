/* cuda/nccl_abi.h, the module's own declarations of NCCL 2, against NCCL's nccl.h: every value
 * it declares, at compile time, and every function pointer type against the real prototype,
 * through a copy of each type with NCCL's own communicator, id, enum and stream types put back
 * (__builtin_types_compatible_p; nothing is linked).  Built only where nccl.h is installed
 * (tests/meson.build); the module itself never includes it. */
#include <nccl.h>
#include <stddef.h>
#include <stdio.h>

#include "nccl_abi.h"

#define SAME(ours, theirs)                                                                       \
    _Static_assert((long long)(ours) == (long long)(theirs), #ours " != " #theirs)

SAME(VT_NCCL_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
SAME(sizeof(vt_nccl_id), sizeof(ncclUniqueId));
SAME(VT_NCCL_SUCCESS, ncclSuccess);
SAME(VT_NCCL_REMOTE_ERROR, ncclRemoteError);
SAME(VT_NCCL_IN_PROGRESS, ncclInProgress);
SAME(VT_NCCL_UINT8, ncclUint8);
SAME(VT_NCCL_FLOAT32, ncclFloat32);
SAME(VT_NCCL_FLOAT64, ncclFloat64);
SAME(VT_NCCL_SUM, ncclSum);
SAME(VT_NCCL_MAX, ncclMax);
SAME(VT_NCCL_MIN, ncclMin);
SAME(VT_NCCL_SCALAR_HOST_IMMEDIATE, ncclScalarHostImmediate);
SAME(VT_NCCL_MIN_VERSION, NCCL_VERSION(2, 12, 0));
SAME(sizeof(vt_nccl_result), sizeof(ncclResult_t));
SAME(sizeof(vt_nccl_type), sizeof(ncclDataType_t));
SAME(sizeof(vt_nccl_op), sizeof(ncclRedOp_t));
_Static_assert(NCCL_VERSION_CODE >= VT_NCCL_MIN_VERSION, "nccl.h older than the module needs");

/* Function types: ours (nccl_abi.h, in the same order) with NCCL's types put back. */
typedef ncclResult_t (*get_version_t)(int *);
typedef const char *(*error_string_t)(ncclResult_t);
typedef ncclResult_t (*get_unique_id_t)(ncclUniqueId *);
typedef ncclResult_t (*comm_init_rank_t)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*comm_destroy_t)(ncclComm_t);
typedef ncclResult_t (*comm_abort_t)(ncclComm_t);
typedef ncclResult_t (*comm_get_async_error_t)(ncclComm_t, ncclResult_t *);
typedef ncclResult_t (*pre_mul_sum_t)(ncclRedOp_t *, void *, ncclDataType_t,
                                      ncclScalarResidence_t, ncclComm_t);
typedef ncclResult_t (*red_op_destroy_t)(ncclRedOp_t, ncclComm_t);
typedef ncclResult_t (*all_reduce_t)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
typedef ncclResult_t (*broadcast_t)(const void *, void *, size_t, ncclDataType_t, int,
                                    ncclComm_t, cudaStream_t);
typedef ncclResult_t (*all_gather_t)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                     cudaStream_t);

#define HAS_TYPE(fn, T)                                                                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), T), #fn "'s prototype")
HAS_TYPE(ncclGetVersion, get_version_t);
HAS_TYPE(ncclGetErrorString, error_string_t);
HAS_TYPE(ncclGetUniqueId, get_unique_id_t);
HAS_TYPE(ncclCommInitRank, comm_init_rank_t);
HAS_TYPE(ncclCommDestroy, comm_destroy_t);
HAS_TYPE(ncclCommAbort, comm_abort_t);
HAS_TYPE(ncclCommGetAsyncError, comm_get_async_error_t);
HAS_TYPE(ncclRedOpCreatePreMulSum, pre_mul_sum_t);
HAS_TYPE(ncclRedOpDestroy, red_op_destroy_t);
HAS_TYPE(ncclAllReduce, all_reduce_t);
HAS_TYPE(ncclBroadcast, broadcast_t);
HAS_TYPE(ncclAllGather, all_gather_t);

/* ... and ours have the same shape with our opaque stand-ins: same arity and argument sizes
 * (the stand-in of an enum is an int, of a handle or a stream a pointer). */
SAME(sizeof(vt_nccl_comm), sizeof(ncclComm_t));
SAME(sizeof(vt_nccl_stream), sizeof(cudaStream_t));
SAME(sizeof(int), sizeof(ncclScalarResidence_t));

int main(void)
{
    printf("cuda/nccl_abi.h matches nccl.h of NCCL %d.%d.%d\n", NCCL_MAJOR, NCCL_MINOR,
           NCCL_PATCH);
    return 0;
}
