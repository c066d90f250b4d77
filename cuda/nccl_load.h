/* NCCL 2, loaded at run time for the communicator of GPU ranks (nccl_comm.cu).  As cuDNN
 * (cudnn_load.h): the module never links it; vt_nccl_open dlopens the file and looks up the
 * functions of nccl_abi.h, so a machine without libnccl.so.2 trains on one GPU as before and a
 * multi-rank GPU launch says why it cannot.  Plain C without CUDA headers, so that tests link
 * it directly and load fake NCCLs (tests/fake_nccl.c).  VT_NCCL_LIBRARY=/path/libnccl.so.2
 * picks the file to load. */
#ifndef VT_CUDA_NCCL_LOAD_H
#define VT_CUDA_NCCL_LOAD_H

#include <stddef.h>

#include "nccl_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VT_NCCL_FILE "libnccl.so.2"

typedef struct vt_nccl {
    void *lib;
    int version; /* ncclGetVersion: 22809 for 2.28.9 */
    vt_nccl_get_version_fn get_version;
    vt_nccl_get_error_string_fn error_string;
    vt_nccl_get_unique_id_fn get_unique_id;
    vt_nccl_comm_init_rank_fn comm_init_rank;
    vt_nccl_comm_destroy_fn comm_destroy;
    vt_nccl_comm_abort_fn comm_abort;
    vt_nccl_comm_get_async_error_fn comm_get_async_error;
    vt_nccl_red_op_create_pre_mul_sum_fn red_op_create_pre_mul_sum;
    vt_nccl_red_op_destroy_fn red_op_destroy;
    vt_nccl_all_reduce_fn all_reduce;
    vt_nccl_broadcast_fn broadcast;
    vt_nccl_all_gather_fn all_gather;
} vt_nccl;

/* Load NCCL from `path`: NULL when the file cannot be loaded, lacks a function used here or is
 * older than VT_NCCL_MIN_VERSION; then `why` (cap bytes, may be NULL) says which. */
vt_nccl *vt_nccl_open(const char *path, char *why, size_t why_cap);
void vt_nccl_close(vt_nccl *n); /* NULL: nothing */

/* The library for this process: loaded on the first call ($VT_NCCL_LIBRARY when set and not
 * empty, else VT_NCCL_FILE through the dynamic linker's path) and kept until the process ends.
 * NULL when it cannot be loaded; then *why (may be NULL) points at the reason, valid for the
 * process.  Thread-safe. */
const vt_nccl *vt_nccl_shared(const char **why);

/* "2.28.9" from 22809 (NCCL_VERSION's code since 2.9; the older 1000-based codes as well). */
void vt_nccl_version_text(int code, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
