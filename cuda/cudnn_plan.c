/* The arithmetic of the cuDNN convolutions: see cudnn_plan.h. */
#include "cudnn_plan.h"

#include <string.h>

int vt_dnn_cnhw_strides(int c, int n, int h, int w, int out[4])
{
    if (c < 1 || n < 1 || h < 1 || w < 1) return 0;
    long long hw = (long long)h * w, nhw = hw * n, all = nhw * c;
    if (all >= INT32_MAX) return 0;
    out[0] = (int)hw;  /* n */
    out[1] = (int)nhw; /* c */
    out[2] = w;        /* h */
    out[3] = 1;        /* w */
    return 1;
}

int vt_dnn_shape_ok(const vt_conv_desc *d, const char **why)
{
    int s[4];
    if (!vt_dnn_cnhw_strides(d->cin, d->n, d->h, d->w, s) ||
        !vt_dnn_cnhw_strides(d->cout, d->n, d->ho, d->wo, s)) {
        if (why) *why = "a tensor has 2^31 elements or more (cuDNN's int strides)";
        return 0;
    }
    long long wn = (long long)d->cout * (d->cin / d->groups) * d->kh * d->kw;
    if (wn >= INT32_MAX) {
        if (why) *why = "the filter has 2^31 elements or more";
        return 0;
    }
    return 1;
}

vt_dnn_key vt_dnn_key_of(const vt_conv_desc *d, int plain_fp32)
{
    vt_dnn_key k = {{d->n, d->cin, d->h, d->w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph, d->pw,
                     d->groups, plain_fp32 != 0}};
    return k;
}

int vt_dnn_key_eq(const vt_dnn_key *a, const vt_dnn_key *b)
{
    return memcmp(a->v, b->v, sizeof a->v) == 0;
}

uint64_t vt_dnn_key_hash(const vt_dnn_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < sizeof k->v / sizeof k->v[0]; i++) {
        uint32_t v = (uint32_t)k->v[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

long vt_dnn_table_find(const vt_dnn_table *t, const vt_dnn_key *k)
{
    if (!t->cap) return -1;
    size_t mask = t->cap - 1, i = (size_t)vt_dnn_key_hash(k) & mask;
    for (size_t probe = 0; probe < t->cap && t->used[i]; probe++, i = (i + 1) & mask)
        if (vt_dnn_key_eq(&t->keys[i], k)) return (long)i;
    return -1;
}

long vt_dnn_table_insert(vt_dnn_table *t, const vt_dnn_key *k)
{
    if (!t->cap || (t->count + 1) * 4 > t->cap * 3) return -1;
    size_t mask = t->cap - 1, i = (size_t)vt_dnn_key_hash(k) & mask;
    while (t->used[i]) i = (i + 1) & mask; /* a free slot exists: count < cap */
    t->used[i] = 1;
    t->keys[i] = *k;
    t->count++;
    return (long)i;
}

size_t vt_dnn_ws_limit(size_t im2col_bytes, size_t cap, int announced)
{
    if (!announced) return im2col_bytes;
    return im2col_bytes > cap ? im2col_bytes : cap;
}

int vt_dnn_pick(const vt_dnn_algo_perf *results, int n, size_t limit, int plain_fp32)
{
    for (int i = 0; i < n; i++) {
        const vt_dnn_algo_perf *r = &results[i];
        if (r->status != VT_DNN_STATUS_SUCCESS || r->algo < 0 || r->memory > limit) continue;
        if (plain_fp32 && (r->math_type == VT_DNN_TENSOR_OP_MATH ||
                           r->math_type == VT_DNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
            continue;
        return i;
    }
    return -1;
}
