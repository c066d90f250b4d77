/* Errors, logging, allocation, RNG, clock, versions. */
#include "core/core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

/* The last error of each thread.  Thread-local, so no locking and no shared mutable state. */
static _Thread_local char tls_err[VT_ERRMSG_MAX];

VT_API unsigned vt_version(void) { return VT_VERSION_NUMBER; }

VT_API const char *vt_version_string(void)
{
#define VT_STR2(x) #x
#define VT_STR(x) VT_STR2(x)
    return VT_STR(VT_VERSION_MAJOR) "." VT_STR(VT_VERSION_MINOR) "." VT_STR(VT_VERSION_PATCH);
}

VT_API unsigned vt_abi_version(void) { return VT_ABI_VERSION; }

VT_API const char *vt_status_string(vt_status s)
{
    switch (s) {
    case VT_OK: return "ok";
    case VT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case VT_ERR_OUT_OF_MEMORY: return "out of memory";
    case VT_ERR_IO: return "input/output error";
    case VT_ERR_NOT_FOUND: return "not found";
    case VT_ERR_FORMAT: return "corrupt or unsupported file";
    case VT_ERR_UNKNOWN_OPTION: return "unknown option";
    case VT_ERR_OPTION_VALUE: return "bad option value";
    case VT_ERR_DATASET: return "dataset error";
    case VT_ERR_UNSUPPORTED: return "unsupported";
    case VT_ERR_BAD_STATE: return "bad state";
    case VT_ERR_CANCELLED: return "cancelled";
    case VT_ERR_DEVICE: return "device error";
    case VT_ERR_DEVICE_OOM: return "device out of memory";
    case VT_ERR_CHECKPOINT: return "bad checkpoint";
    case VT_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case VT_ERR_INTERNAL: return "internal error";
    case VT_ERR_NUMERIC: return "numeric divergence";
    }
    return "unknown status";
}

VT_API const char *vt_last_error(void) { return tls_err; }

vt_status vt_failv(vt_status status, const char *fmt, va_list ap)
{
    /* Format into a local buffer first: callers may pass vt_last_error() itself as an argument
     * (to add context), and vsnprintf into its own source is undefined (glibc gives ""). */
    char buf[VT_ERRMSG_MAX];
    vsnprintf(buf, sizeof buf, fmt, ap);
    memcpy(tls_err, buf, sizeof tls_err);
    return status;
}

vt_status vt_fail(vt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vt_status st = vt_failv(status, fmt, ap);
    va_end(ap);
    return st;
}

void vt_fail_context(const char *fmt, ...)
{
    char prefix[512], old[VT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, tls_err, sizeof old);
    snprintf(tls_err, sizeof tls_err, "%s: %.*s", prefix, (int)(sizeof tls_err - strlen(prefix) - 3), old);
}

vt_status vt_err_capture(char *handle_buf, vt_status status)
{
    if (handle_buf && status != VT_OK) memcpy(handle_buf, tls_err, VT_ERRMSG_MAX);
    return status;
}

void vt_err_clear(void) { tls_err[0] = 0; }

void vt_log(const vt_logger *lg, vt_log_level level, const char *fmt, ...)
{
    if (!lg || !lg->fn || level > lg->max_level) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    lg->fn(lg->user, level, buf);
}

void *vt_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
    return p;
}

void *vt_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *vt_realloc(void *p, size_t bytes)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
    return q;
}

char *vt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = vt_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

vt_status vt_read_regular_file(const char *path, size_t max_bytes, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return vt_fail(VT_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > (uint64_t)max_bytes) {
        fclose(f);
        return vt_fail(VT_ERR_FORMAT, "%s: %lld bytes, more than %zu", path,
                       (long long)sb.st_size, max_bytes);
    }
    size_t n = (size_t)sb.st_size;
    void *buf = vt_malloc(n ? n : 1);
    vt_status st = buf ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (!st && fread(buf, 1, n, f) != n) st = vt_fail(VT_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *data = buf;
    *size = n;
    return VT_OK;
}

void *vt_malloc_aligned(size_t bytes)
{
    void *p = NULL;
    /* slack past the rounded size (core.h): a GEMM kernel's over-read past an operand would
     * fault where the buffer ends at a page boundary before an unmapped page */
    size_t n = ((bytes + 63) & ~(size_t)63) + VT_ALIGNED_SLACK;
    if (bytes > SIZE_MAX - 2 * VT_ALIGNED_SLACK || posix_memalign(&p, 64, n) != 0) {
        vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
        return NULL;
    }
    return p;
}

void vt_free_aligned(void *p) { free(p); }

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void vt_rng_seed(vt_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    r->s[0] = splitmix64(&x);
    r->s[1] = splitmix64(&x);
    if (!r->s[0] && !r->s[1]) r->s[1] = 1;
}

/* xoroshiro128+ */
uint64_t vt_rng_next(vt_rng *r)
{
    uint64_t s0 = r->s[0], s1 = r->s[1];
    uint64_t res = s0 + s1;
    s1 ^= s0;
    r->s[0] = ((s0 << 24) | (s0 >> 40)) ^ s1 ^ (s1 << 16);
    r->s[1] = (s1 << 37) | (s1 >> 27);
    return res;
}

double vt_rng_uniform(vt_rng *r) { return (double)(vt_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

uint32_t vt_rng_below(vt_rng *r, uint32_t n)
{
    return n ? (uint32_t)(((vt_rng_next(r) >> 32) * (uint64_t)n) >> 32) : 0;
}

double vt_rng_normal(vt_rng *r)
{
    double u1 = vt_rng_uniform(r), u2 = vt_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double vt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
