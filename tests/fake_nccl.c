/* A fake NCCL (libnccl.so.2) for test_nccl.c: every function cuda/nccl_load.c looks up, each
 * answering ncclInvalidUsage except the version, the error string and the unique id (bytes
 * 0, 1, 2, ...).  FAKE_NCCL_INCOMPLETE builds one without ncclRedOpCreatePreMulSum (an NCCL
 * older than 2.11), FAKE_NCCL_OLD one that says it is NCCL 2.10.3. */
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, INVALID_USAGE = 5 };

EXPORT int ncclGetVersion(int *version);
EXPORT const char *ncclGetErrorString(int result);
EXPORT int ncclGetUniqueId(void *id);
typedef struct {
    char internal[128];
} fake_id;
EXPORT int ncclCommInitRank(void **comm, int nranks, fake_id id, int rank);
EXPORT int ncclCommDestroy(void *comm);
EXPORT int ncclCommAbort(void *comm);
EXPORT int ncclCommGetAsyncError(void *comm, int *err);
#ifndef FAKE_NCCL_INCOMPLETE
EXPORT int ncclRedOpCreatePreMulSum(int *op, void *scalar, int type, int residence, void *comm);
#endif
EXPORT int ncclRedOpDestroy(int op, void *comm);
EXPORT int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
EXPORT int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *st);
EXPORT int ncclAllGather(const void *s, void *r, size_t n, int t, void *c, void *st);

int ncclGetVersion(int *version)
{
#ifdef FAKE_NCCL_OLD
    *version = 21003;
#else
    *version = 22809;
#endif
    return OK;
}

const char *ncclGetErrorString(int result)
{
    return result == OK ? "no error" : "invalid usage (fake)";
}

int ncclGetUniqueId(void *id)
{
    for (int i = 0; i < 128; i++) ((unsigned char *)id)[i] = (unsigned char)i;
    return OK;
}

int ncclCommInitRank(void **comm, int nranks, fake_id id, int rank)
{
    (void)nranks, (void)id, (void)rank;
    *comm = NULL;
    return INVALID_USAGE;
}

int ncclCommDestroy(void *comm) { return comm ? OK : INVALID_USAGE; }
int ncclCommAbort(void *comm) { return comm ? OK : INVALID_USAGE; }

int ncclCommGetAsyncError(void *comm, int *err)
{
    *err = OK;
    return comm ? OK : INVALID_USAGE;
}

#ifndef FAKE_NCCL_INCOMPLETE
int ncclRedOpCreatePreMulSum(int *op, void *scalar, int type, int residence, void *comm)
{
    (void)op, (void)scalar, (void)type, (void)residence, (void)comm;
    return INVALID_USAGE;
}
#endif

int ncclRedOpDestroy(int op, void *comm)
{
    (void)op, (void)comm;
    return INVALID_USAGE;
}

int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st)
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)c, (void)st;
    return INVALID_USAGE;
}

int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *st)
{
    (void)s, (void)r, (void)n, (void)t, (void)root, (void)c, (void)st;
    return INVALID_USAGE;
}

int ncclAllGather(const void *s, void *r, size_t n, int t, void *c, void *st)
{
    (void)s, (void)r, (void)n, (void)t, (void)c, (void)st;
    return INVALID_USAGE;
}
