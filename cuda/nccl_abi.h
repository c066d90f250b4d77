/* The part of NCCL 2's C interface that the CUDA module's communicator uses (nccl_comm.cu),
 * declared here with NCCL's stable C ABI (nccl.h of NCCL 2.12 to 2.28), so that the module
 * builds without nccl.h and loads libnccl.so.2 with dlopen (nccl_load.h).  Types, values and
 * function pointer types only: plain C.  tests/nccl_abi_check.c compares every declaration with
 * the real nccl.h where it is installed. */
#ifndef VT_CUDA_NCCL_ABI_H
#define VT_CUDA_NCCL_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VT_NCCL_ID_BYTES
#define VT_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES (also in backend/cuda_device.h) */
#endif

typedef int vt_nccl_result;                        /* ncclResult_t */
typedef int vt_nccl_type;                          /* ncclDataType_t */
typedef int vt_nccl_op;                            /* ncclRedOp_t */
typedef struct vt_nccl_comm_struct *vt_nccl_comm;  /* ncclComm_t */
typedef struct vt_nccl_stream_struct *vt_nccl_stream; /* cudaStream_t */
typedef struct {
    char internal[VT_NCCL_ID_BYTES];
} vt_nccl_id;                                      /* ncclUniqueId */

enum {
    VT_NCCL_SUCCESS = 0,          /* ncclSuccess */
    VT_NCCL_REMOTE_ERROR = 6,     /* ncclRemoteError: another rank failed or left */
    VT_NCCL_IN_PROGRESS = 7,      /* ncclInProgress */
    VT_NCCL_UINT8 = 1,            /* ncclUint8 */
    VT_NCCL_FLOAT32 = 7,          /* ncclFloat32 */
    VT_NCCL_FLOAT64 = 8,          /* ncclFloat64 */
    VT_NCCL_SUM = 0,              /* ncclSum */
    VT_NCCL_MAX = 2,              /* ncclMax */
    VT_NCCL_MIN = 3,              /* ncclMin */
    VT_NCCL_SCALAR_HOST_IMMEDIATE = 1 /* ncclScalarHostImmediate */
};

/* The oldest NCCL the module takes: ncclRedOpCreatePreMulSum (2.11) and a
 * ncclCommGetAsyncError that reports a peer's failure (ncclRemoteError, 2.12). */
#define VT_NCCL_MIN_VERSION 21200 /* NCCL_VERSION(2, 12, 0) */

typedef vt_nccl_result (*vt_nccl_get_version_fn)(int *version);
typedef const char *(*vt_nccl_get_error_string_fn)(vt_nccl_result result);
typedef vt_nccl_result (*vt_nccl_get_unique_id_fn)(vt_nccl_id *id);
typedef vt_nccl_result (*vt_nccl_comm_init_rank_fn)(vt_nccl_comm *comm, int nranks, vt_nccl_id id,
                                                    int rank);
typedef vt_nccl_result (*vt_nccl_comm_destroy_fn)(vt_nccl_comm comm);
typedef vt_nccl_result (*vt_nccl_comm_abort_fn)(vt_nccl_comm comm);
typedef vt_nccl_result (*vt_nccl_comm_get_async_error_fn)(vt_nccl_comm comm,
                                                          vt_nccl_result *async_error);
typedef vt_nccl_result (*vt_nccl_red_op_create_pre_mul_sum_fn)(vt_nccl_op *op, void *scalar,
                                                               vt_nccl_type type, int residence,
                                                               vt_nccl_comm comm);
typedef vt_nccl_result (*vt_nccl_red_op_destroy_fn)(vt_nccl_op op, vt_nccl_comm comm);
typedef vt_nccl_result (*vt_nccl_all_reduce_fn)(const void *send, void *recv, size_t count,
                                                vt_nccl_type type, vt_nccl_op op,
                                                vt_nccl_comm comm, vt_nccl_stream stream);
typedef vt_nccl_result (*vt_nccl_broadcast_fn)(const void *send, void *recv, size_t count,
                                               vt_nccl_type type, int root, vt_nccl_comm comm,
                                               vt_nccl_stream stream);
typedef vt_nccl_result (*vt_nccl_all_gather_fn)(const void *send, void *recv, size_t count,
                                                vt_nccl_type type, vt_nccl_comm comm,
                                                vt_nccl_stream stream);

#ifdef __cplusplus
}
#endif

#endif
