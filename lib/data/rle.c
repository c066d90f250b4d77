/* COCO run-length masks: decoding both forms of "counts" and tracing the outer contours of the
 * decoded mask into polygon parts.  See rle.h for the formats and what the contours keep. */
#include "data/rle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding ------------------------------------------------------------------------------ */

/* Runs written in column-major order into a row-major mask. */
typedef struct rle_out {
    uint8_t *mask;
    int h, w;
    int64_t pos, total;
    int val; /* the value of the next run: 0 first */
} rle_out;

static int put_run(rle_out *r, int64_t len, char *why, size_t cap)
{
    if (len < 0) {
        snprintf(why, cap, "a negative run length (%lld)", (long long)len);
        return 0;
    }
    if (len > r->total - r->pos) {
        snprintf(why, cap, "the runs cover more than the %d x %d = %lld pixels of \"size\"",
                 r->h, r->w, (long long)r->total);
        return 0;
    }
    if (r->val)
        for (int64_t p = r->pos; p < r->pos + len; p++)
            r->mask[(size_t)(p % r->h) * r->w + (size_t)(p / r->h)] = 1;
    r->pos += len;
    r->val ^= 1;
    return 1;
}

static vt_status check_end(const rle_out *r, char *why, size_t cap)
{
    if (r->pos == r->total) return VT_OK;
    snprintf(why, cap, "the runs cover %lld of the %d x %d = %lld pixels of \"size\"",
             (long long)r->pos, r->h, r->w, (long long)r->total);
    return VT_ERR_FORMAT;
}

static void out_init(rle_out *r, uint8_t *mask, int h, int w)
{
    r->mask = mask;
    r->h = h;
    r->w = w;
    r->pos = 0;
    r->total = (int64_t)h * w;
    r->val = 0;
    memset(mask, 0, (size_t)h * w);
}

vt_status vt_rle_decode_counts(const int64_t *counts, size_t n, int h, int w, uint8_t *mask,
                               char *why, size_t why_cap)
{
    rle_out r;
    out_init(&r, mask, h, w);
    for (size_t i = 0; i < n; i++)
        if (!put_run(&r, counts[i], why, why_cap)) return VT_ERR_FORMAT;
    return check_end(&r, why, why_cap);
}

vt_status vt_rle_decode_string(const char *s, int h, int w, uint8_t *mask, char *why,
                               size_t why_cap)
{
    rle_out r;
    out_init(&r, mask, h, w);
    int64_t prev2 = 0, prev1 = 0; /* the counts two and one places before */
    size_t p = 0, m = 0;
    while (s[p]) {
        int64_t x = 0;
        int k = 0, more = 1;
        while (more) {
            int c = (unsigned char)s[p] - 48;
            if (!s[p]) {
                snprintf(why, why_cap, "the compressed counts end inside a number");
                return VT_ERR_FORMAT;
            }
            if (c < 0 || c > 63) {
                snprintf(why, why_cap, "character '%c' (byte %zu) is not one of the compressed "
                         "counts' ('0' .. 'o')", s[p] >= 32 && s[p] < 127 ? s[p] : '?', p);
                return VT_ERR_FORMAT;
            }
            if (k >= 12) { /* 60 bits: no mask has such a run */
                snprintf(why, why_cap, "a compressed count of more than 60 bits (byte %zu)", p);
                return VT_ERR_FORMAT;
            }
            x |= (int64_t)(c & 0x1f) << (5 * k);
            more = c & 0x20;
            p++;
            k++;
            if (!more && (c & 0x10)) x -= (int64_t)1 << (5 * k); /* sign-extend */
        }
        if (m > 2) x += prev2;
        if (!put_run(&r, x, why, why_cap)) return VT_ERR_FORMAT;
        prev2 = prev1;
        prev1 = x;
        m++;
    }
    return check_end(&r, why, why_cap);
}

/* ---- contours ------------------------------------------------------------------------------ */

static int is_in(const uint8_t *m, int w, int h, int x, int y)
{
    return x >= 0 && y >= 0 && x < w && y < h && m[(size_t)y * w + x];
}

/* Fill the holes: the background reachable from outside the mask (8-connected, the
 * complement of 4-connected regions) stays background, the rest becomes inside.  m holds 0/1
 * and is rewritten as 0/1; stack has room for w * h entries. */
static void fill_holes(uint8_t *m, int w, int h, int32_t *stack)
{
    size_t top = 0;
    /* 2 marks background reached from the border */
    for (int x = 0; x < w; x++)
        for (int e = 0; e < 2; e++) {
            int y = e ? h - 1 : 0;
            size_t i = (size_t)y * w + x;
            if (!m[i]) {
                m[i] = 2;
                stack[top++] = (int32_t)i;
            }
        }
    for (int y = 0; y < h; y++)
        for (int e = 0; e < 2; e++) {
            int x = e ? w - 1 : 0;
            size_t i = (size_t)y * w + x;
            if (!m[i]) {
                m[i] = 2;
                stack[top++] = (int32_t)i;
            }
        }
    while (top) {
        int32_t i = stack[--top];
        int x = (int)(i % w), y = (int)(i / w);
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                int nx = x + dx, ny = y + dy;
                if (nx < 0 || ny < 0 || nx >= w || ny >= h) continue;
                size_t j = (size_t)ny * w + nx;
                if (!m[j]) {
                    m[j] = 2;
                    stack[top++] = (int32_t)j;
                }
            }
    }
    size_t n = (size_t)w * h;
    for (size_t i = 0; i < n; i++) m[i] = m[i] != 2;
}

typedef struct pts {
    float *xy;
    int n, cap, max;
} pts;

static int emit(pts *p, int x, int y)
{
    if (p->n >= p->max) return 0;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 256;
        float *v = vt_realloc(p->xy, (size_t)cap * 2 * sizeof *v);
        if (!v) return -1;
        p->xy = v;
        p->cap = cap;
    }
    p->xy[2 * p->n] = (float)x;
    p->xy[2 * p->n + 1] = (float)y;
    p->n++;
    return 1;
}

/* The outer boundary of the region whose first pixel in raster order is (x0, y0), walked along
 * pixel edges with the region on the right (clockwise on screen, y down), from the top-left
 * corner of that pixel heading east.  At each corner the walk looks at the two pixels ahead:
 * right-ahead outside: turn right; both inside: turn left; else straight on.  Turning right
 * whenever the right-ahead pixel is outside keeps diagonal neighbours apart (4-connected
 * regions).  Only corners where the heading changes are emitted.  1 done, 0 too many points,
 * -1 out of memory. */
static int trace(const uint8_t *m, int w, int h, int x0, int y0, pts *out)
{
    static const int DX[4] = {1, 0, -1, 0}, DY[4] = {0, 1, 0, -1}; /* E S W N */
    int vx = x0, vy = y0, d = 0, r = emit(out, vx, vy);
    while (r == 1) {
        vx += DX[d];
        vy += DY[d];
        int rnx = -DY[d], rny = DX[d]; /* the right-hand normal */
        int sx = DX[d] + rnx, sy = DY[d] + rny, lx = DX[d] - rnx, ly = DY[d] - rny;
        int right = is_in(m, w, h, vx + (sx > 0 ? 0 : -1), vy + (sy > 0 ? 0 : -1));
        int left = is_in(m, w, h, vx + (lx > 0 ? 0 : -1), vy + (ly > 0 ? 0 : -1));
        int nd = !right ? (d + 1) & 3 : left ? (d + 3) & 3 : d;
        if (vx == x0 && vy == y0 && nd == 0) break;
        if (nd != d) r = emit(out, vx, vy);
        d = nd;
    }
    return r;
}

vt_status vt_rle_contours(const uint8_t *mask, int w, int h, int max_points, float **xy,
                          int **part_n, int *nparts, char *why, size_t why_cap)
{
    *xy = NULL;
    *part_n = NULL;
    *nparts = 0;
    size_t n = (size_t)w * h;
    uint8_t *m = vt_malloc(n ? n : 1), *seen = vt_calloc(n ? n : 1, 1);
    int32_t *stack = vt_malloc((n ? n : 1) * sizeof *stack);
    int *pn = NULL, np = 0, cap_pn = 0;
    pts out = {NULL, 0, 0, max_points};
    vt_status st = m && seen && stack ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (!st) {
        for (size_t i = 0; i < n; i++) m[i] = mask[i] != 0;
        fill_holes(m, w, h, stack);
    }
    for (int y = 0; !st && y < h; y++)
        for (int x = 0; !st && x < w; x++) {
            size_t i = (size_t)y * w + x;
            if (!m[i] || seen[i]) continue;
            /* a new region: mark it (4-connected), then trace it from this first pixel */
            size_t top = 0;
            seen[i] = 1;
            stack[top++] = (int32_t)i;
            while (top) {
                int32_t j = stack[--top];
                int jx = (int)(j % w), jy = (int)(j / w);
                static const int NX[4] = {1, -1, 0, 0}, NY[4] = {0, 0, 1, -1};
                for (int k = 0; k < 4; k++) {
                    int nx = jx + NX[k], ny = jy + NY[k];
                    if (!is_in(m, w, h, nx, ny)) continue;
                    size_t q = (size_t)ny * w + nx;
                    if (!seen[q]) {
                        seen[q] = 1;
                        stack[top++] = (int32_t)q;
                    }
                }
            }
            int before = out.n, r = trace(m, w, h, x, y, &out);
            if (r < 0) {
                st = VT_ERR_OUT_OF_MEMORY;
            } else if (r == 0) {
                snprintf(why, why_cap, "its outline needs more than %d points", max_points);
                st = VT_ERR_FORMAT;
            } else {
                if (np == cap_pn) {
                    int c = cap_pn ? cap_pn * 2 : 16;
                    int *v = vt_realloc(pn, (size_t)c * sizeof *v);
                    if (!v) {
                        st = VT_ERR_OUT_OF_MEMORY;
                        break;
                    }
                    pn = v;
                    cap_pn = c;
                }
                pn[np++] = out.n - before;
            }
        }
    free(m);
    free(seen);
    free(stack);
    if (st || np == 0) {
        free(out.xy);
        free(pn);
        return st;
    }
    *xy = out.xy;
    *part_n = pn;
    *nparts = np;
    return VT_OK;
}
