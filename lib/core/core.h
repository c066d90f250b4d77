/* Private core services: errors, logging, allocation, RNG, key=value options.
 * Nothing here is exported; every library file includes it. */
#ifndef VT_CORE_H
#define VT_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "visiontrain/visiontrain.h"

#define VT_ERRMSG_MAX 1024

#if defined(__GNUC__)
#define VT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VT_PRINTF(a, b)
#endif

/* Record a failure for the calling thread (see vt_last_error()) and return `status`.
 * Usage: return vt_fail(VT_ERR_IO, "%s: cannot open: %s", path, strerror(errno)); */
vt_status vt_fail(vt_status status, const char *fmt, ...) VT_PRINTF(2, 3);
vt_status vt_failv(vt_status status, const char *fmt, va_list ap) VT_PRINTF(2, 0);
/* Prefix the thread's current message with "context: " (e.g. the file being read). */
void vt_fail_context(const char *fmt, ...) VT_PRINTF(1, 2);
/* Copy the thread's last message into a handle's buffer (at the API boundary). Returns status. */
vt_status vt_err_capture(char *handle_buf, vt_status status);
void vt_err_clear(void);

/* Logging through a caller-set callback; the library itself never prints. */
typedef struct vt_logger {
    vt_log_fn fn;
    void *user;
    vt_log_level max_level;
} vt_logger;
void vt_log(const vt_logger *lg, vt_log_level level, const char *fmt, ...) VT_PRINTF(3, 4);

/* Allocation that records VT_ERR_OUT_OF_MEMORY on failure (returns NULL). */
void *vt_malloc(size_t bytes);
void *vt_calloc(size_t count, size_t size);
void *vt_realloc(void *p, size_t bytes);
char *vt_strdup(const char *s);
/* A whole regular file into memory (malloc'd; free() it), at most max_bytes of it.
 * VT_ERR_NOT_FOUND / VT_ERR_IO name the path ("cannot open", "not a regular file", "read
 * error"); a larger file is VT_ERR_FORMAT ("<path>: N bytes, more than M").  *data is NULL and
 * *size 0 on failure. */
vt_status vt_read_regular_file(const char *path, size_t max_bytes, void **data, size_t *size);
/* 64-byte aligned, freed with vt_free_aligned; VT_ALIGNED_SLACK more bytes readable past the
 * end. */
void *vt_malloc_aligned(size_t bytes);
/* vt_malloc_aligned's readable bytes past `bytes` rounded up to 64: BLIS 0.9's small-product
 * kernels read past an operand's end, a few floats of C, or (the dot-product kernels, against
 * a transposed B) up to one row of B; the slack covers rows of up to 1,024 floats, the
 * longest of an im2col tile (tests/test_backend_cpu.c, test_gemm_overread) */
#define VT_ALIGNED_SLACK (4096 + 64)
void vt_free_aligned(void *p);

/* Deterministic RNG (xoshiro128+-like, seeded by splitmix64); the state is a plain value so it
 * can be checkpointed. */
typedef struct vt_rng {
    uint64_t s[2];
} vt_rng;
void vt_rng_seed(vt_rng *r, uint64_t seed);
uint64_t vt_rng_next(vt_rng *r);
/* Uniform in [0,1). */
double vt_rng_uniform(vt_rng *r);
/* Uniform integer in [0,n). */
uint32_t vt_rng_below(vt_rng *r, uint32_t n);
/* Standard normal (Box-Muller). */
double vt_rng_normal(vt_rng *r);
/* Counter-based: uniform [0,1) float from (seed, index); the same on every backend: nvcc
 * compiles this very function for the device too (cuda/elementwise.cu's dropout masks). */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline float vt_hash_uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* ---- options ---------------------------------------------------------------------------- */

/* Scopes are the public vt_option_scope bits (VT_SCOPE_TRAINER, ...). */

/* Flags of an option. */
enum {
    VT_OPTF_ZERO_AUTO = 1 /* 0 is accepted outside [min, max]: "chosen by the library" */
};

/* One option: the single definition of its key, type, range, default and help.  For strings,
 * min and max bound the length (max 0: VT_OPT_STR_MAX - 1); vt_option_info reports 0 for both. */
typedef struct vt_optdef {
    int id;
    const char *key;
    int type; /* vt_option_type */
    double min, max;
    double def_num;
    const char *def_str;
    const char *const *choices; /* NULL-terminated list for enumerated strings, or NULL */
    int scope;                  /* vt_option_scope bits */
    const char *help;
    int flags;                  /* VT_OPTF_* */
} vt_optdef;

/* String values hold paths (project, resume), hence the length. */
#define VT_OPT_STR_MAX 1024
#define VT_OPT_SLOTS 128    /* options in the table */
#define VT_OPT_STR_SLOTS 24 /* string options in the table */

/* The values of one handle's or call's options (those of `scope`); all slots hold the table's
 * defaults until set. */
typedef struct vt_optvals {
    int scope;
    double num[VT_OPT_SLOTS];
    char str[VT_OPT_STR_SLOTS][VT_OPT_STR_MAX];
    unsigned char set[VT_OPT_SLOTS]; /* 1 once set explicitly */
} vt_optvals;

const vt_optdef *vt_optdef_by_id(int id);
/* Index of an option in vt_optvals arrays (< VT_OPT_SLOTS). */
int vt_opt_index(const vt_optdef *d);
/* The option of `scope` with this key, or NULL. */
const vt_optdef *vt_optdef_in_scope(const char *key, size_t keylen, int scope);
void vt_optvals_init(vt_optvals *v, int scope);
vt_status vt_optvals_set_num(vt_optvals *v, int id, double value);
vt_status vt_optvals_set_str(vt_optvals *v, int id, const char *value);
/* One "key=value"; the value is parsed according to the option's type. */
vt_status vt_optvals_set_kv(vt_optvals *v, const char *kv);
/* Space-separated "k=v k=v" list (NULL or "" is fine). */
vt_status vt_optvals_set_list(vt_optvals *v, const char *list);
/* The one parser of the calls that take an options string: `v` gets the defaults of `scope`,
 * then each "k=v" of `list` (NULL or "" is fine), checked against the table: unknown keys give
 * VT_ERR_UNKNOWN_OPTION listing the scope's keys, bad values VT_ERR_OPTION_VALUE naming the key
 * and its range.  `v` may be large: callers keep it on the heap or in a handle. */
vt_status vt_optvals_parse(vt_optvals *v, int scope, const char *list);
/* vt_optvals_parse into a new vt_optvals (free() it); *out is NULL on failure. */
vt_status vt_optvals_parse_new(vt_optvals **out, int scope, const char *list);
double vt_opt_num(const vt_optvals *v, int id);
const char *vt_opt_str(const vt_optvals *v, int id);
int vt_opt_isset(const vt_optvals *v, int id);

/* Generic "k=v k=v" splitting: calls fn for each pair; fn returns a status. */
typedef vt_status (*vt_kv_fn)(void *ctx, const char *key, const char *value);
vt_status vt_parse_kv_list(const char *list, vt_kv_fn fn, void *ctx);
/* Strict number parsing: the whole string must be a number; errors name the key. */
vt_status vt_parse_int(const char *key, const char *s, long long min, long long max,
                       long long *out);
vt_status vt_parse_double(const char *key, const char *s, double min, double max, double *out);

/* Monotonic clock in seconds. */
double vt_now(void);

/* Return the status of x when it is not VT_OK. */
#define VT_TRY(x)                                                                                  \
    do {                                                                                           \
        vt_status st_ = (x);                                                                       \
        if (st_) return st_;                                                                       \
    } while (0)

#endif
