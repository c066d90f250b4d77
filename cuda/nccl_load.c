/* NCCL 2 loaded with dlopen (nccl_load.h), the way cudnn_load.c loads cuDNN: the functions come
 * from nccl_abi.h, so no NCCL header is needed to build. */
#include "nccl_load.h"

#include "dl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void vt_nccl_version_text(int code, char *buf, size_t cap)
{
    /* NCCL_VERSION(X, Y, Z): X * 10000 + Y * 100 + Z from 2.9 on, X * 1000 + Y * 100 + Z before */
    int major = code >= 10000 ? code / 10000 : code / 1000;
    int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
    snprintf(buf, cap, "%d.%d.%d", major, minor, code % 100);
}

vt_nccl *vt_nccl_open(const char *path, char *why, size_t why_cap)
{
    vt_nccl *n = calloc(1, sizeof *n);
    if (!n) {
        vt_dl_say(why, why_cap, "NCCL: out of memory");
        return NULL;
    }
    static const char *const names[] = {
        "ncclGetVersion", "ncclGetErrorString", "ncclGetUniqueId", "ncclCommInitRank",
        "ncclCommDestroy", "ncclCommAbort", "ncclCommGetAsyncError", "ncclRedOpCreatePreMulSum",
        "ncclRedOpDestroy", "ncclAllReduce", "ncclBroadcast", "ncclAllGather"};
    void **slot[] = {(void **)&n->get_version, (void **)&n->error_string,
                     (void **)&n->get_unique_id, (void **)&n->comm_init_rank,
                     (void **)&n->comm_destroy, (void **)&n->comm_abort,
                     (void **)&n->comm_get_async_error, (void **)&n->red_op_create_pre_mul_sum,
                     (void **)&n->red_op_destroy, (void **)&n->all_reduce,
                     (void **)&n->broadcast, (void **)&n->all_gather};
    _Static_assert(sizeof names / sizeof names[0] == sizeof slot / sizeof slot[0],
                   "one slot per name");
    n->lib = vt_dl_open(path, "NCCL", names, slot, sizeof names / sizeof names[0],
                        "NCCL older than 2.12?", why, why_cap);
    if (!n->lib) {
        free(n);
        return NULL;
    }
    if (n->get_version(&n->version) != VT_NCCL_SUCCESS || n->version < VT_NCCL_MIN_VERSION) {
        char have[32], need[32];
        vt_nccl_version_text(n->version, have, sizeof have);
        vt_nccl_version_text(VT_NCCL_MIN_VERSION, need, sizeof need);
        vt_dl_say(why, why_cap, "%s is NCCL %s; the module needs NCCL %s or newer", path, have,
                  need);
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    return n;
}

void vt_nccl_close(vt_nccl *n)
{
    if (!n) return;
    dlclose(n->lib);
    free(n);
}

static vt_nccl *shared_nccl;
static char shared_why[512];
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_load(void)
{
    const char *path = getenv("VT_NCCL_LIBRARY");
    if (!path || !*path) path = VT_NCCL_FILE;
    shared_nccl = vt_nccl_open(path, shared_why, sizeof shared_why);
}

const vt_nccl *vt_nccl_shared(const char **why)
{
    pthread_once(&shared_once, shared_load);
    if (why) *why = shared_nccl ? "" : shared_why;
    return shared_nccl;
}
