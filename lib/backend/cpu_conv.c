/* CPU convolution over the CNHW layout.  1x1 stride-1 convolutions are one GEMM on the input
 * itself.  The others run in tiles: a tile is a run of columns of the im2col matrix (whole
 * images when an image is small, else whole output rows of one image) sized so its columns
 * (K x cols floats) stay in cache (conv_cap), but at least 256 columns wide; each pool thread
 * takes shares of the tiles in turn and, per tile, builds the columns into its own scratch
 * and calls a single-threaded GEMM on them while they are hot:
 *   forward   Y[:, tile] = W x col(tile)
 *   backward  dW += dY[:, tile] x col(tile)^T   (into the share's own partial sum)
 *             dcol = W^T x dY[:, tile], then scattered (col2im) into dX
 * When the executor keeps a layer's buffer from forward to backward (conv_columns: the whole
 * batch's columns, up to 8 MiB), the tiles' columns live there instead, each tile's block at
 * K x its first column: forward builds them, backward reuses them (no second im2col).
 * Backward shares are whole images, so no two threads scatter into the same dX rows, and the
 * partial weight gradients are added in share order: results are bitwise reproducible for a
 * given thread count (the shares depend on it, not on which thread runs which share).  Scratch
 * (vt_cpu_conv_workspace): threads x tile floats, plus (backward shares - 1) partial weight
 * gradients. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"

enum { TILE_MAX_COLS = 1024 };

static int conv_is_pointwise(const vt_conv_desc *d)
{
    return d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->ph == 0 && d->pw == 0 &&
           d->groups == 1;
}

/* The tiling of one convolution. */
typedef struct tiling {
    int K;        /* rows of the column matrix per group: cin/groups * kh * kw */
    int ipt;      /* images per tile (>= 1); when 1 and rows < ho, tiles split an image */
    int rows;     /* output rows per tile (ho when ipt > 1) */
    int per_img;  /* tiles per image (1 when ipt > 1) */
    int ntiles;
    size_t tile_floats; /* K x the largest tile's columns */
} tiling;

static tiling make_tiling(const vt_backend *b, const vt_conv_desc *d)
{
    tiling t;
    const cpu_backend *cb = (const cpu_backend *)b;
    size_t OHW = (size_t)d->ho * d->wo;
    t.K = d->cin / d->groups * d->kh * d->kw;
    /* about conv_cap floats of columns, but at least conv_min_cols columns: a GEMM packs all
     * of W for every tile, which narrow tiles of a layer with a long K would not repay */
    size_t cols = cb->conv_cap / (size_t)t.K;
    if (cols < cb->conv_min_cols) cols = cb->conv_min_cols;
    if (cols > TILE_MAX_COLS) cols = TILE_MAX_COLS;
    if (cols >= OHW) {
        /* at least one tile per thread, so every thread has work */
        size_t th = (size_t)vt_pool_threads(POOL(b)), ipt = cols / OHW,
               fair = ((size_t)d->n + th - 1) / th;
        if (ipt > fair) ipt = fair;
        t.ipt = ipt < (size_t)d->n ? (int)ipt : d->n;
        t.rows = d->ho;
        t.per_img = 1;
        t.ntiles = (d->n + t.ipt - 1) / t.ipt;
        t.tile_floats = (size_t)t.K * t.ipt * OHW;
    } else {
        size_t rows = (cols + d->wo - 1) / (size_t)d->wo;
        t.ipt = 1;
        t.per_img = (int)((d->ho + rows - 1) / rows);
        t.rows = (d->ho + t.per_img - 1) / t.per_img; /* the image's rows in equal tiles */
        t.ntiles = d->n * t.per_img;
        t.tile_floats = (size_t)t.K * t.rows * d->wo;
    }
    return t;
}

/* Tile i: images [n0, n0 + nb), output rows [oy0, oy1); its columns are the contiguous range
 * starting at *c0 of the N*Ho*Wo column space, *cols long. */
static void tile_range(const tiling *t, const vt_conv_desc *d, int i, int *n0, int *nb, int *oy0,
                       int *oy1, size_t *c0, int *cols)
{
    size_t OHW = (size_t)d->ho * d->wo;
    if (t->per_img == 1) {
        *n0 = i * t->ipt;
        *nb = d->n - *n0 < t->ipt ? d->n - *n0 : t->ipt;
        *oy0 = 0;
        *oy1 = d->ho;
    } else {
        *n0 = i / t->per_img;
        *nb = 1;
        *oy0 = i % t->per_img * t->rows;
        *oy1 = *oy0 + t->rows < d->ho ? *oy0 + t->rows : d->ho;
    }
    *c0 = (size_t)*n0 * OHW + (size_t)*oy0 * d->wo;
    *cols = (int)((size_t)*nb * (*oy1 - *oy0) * d->wo);
}

/* Valid output columns [lo, hi) of kernel column kx: 0 <= ox*sw - pw + kx < w. */
static void valid_cols(const vt_conv_desc *d, int kx, int *lo, int *hi)
{
    int l = d->pw - kx > 0 ? (d->pw - kx + d->sw - 1) / d->sw : 0;
    int h = d->w - 1 + d->pw - kx < 0 ? 0 : (d->w - 1 + d->pw - kx) / d->sw + 1;
    if (h > d->wo) h = d->wo;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* p[0 .. n) = 0.  The few floats of a padding column or a small map's row are stored inline:
 * the compiler would turn a plain loop into a call of memset, which costs more than they do. */
static inline void zero_floats(float *p, size_t n)
{
    if (n >= 64) {
        memset(p, 0, n * sizeof(float));
        return;
    }
    typedef float v4 __attribute__((vector_size(16)));
    const v4 z = {0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        memcpy(p + i, &z, sizeof z);
        __asm__("" : "+r"(i)); /* not a memset idiom */
    }
    for (; i < n; i++) {
        p[i] = 0.0f;
        __asm__("" : "+r"(i));
    }
}

/* A stride-1 convolution whose output rows are as wide as its input rows (wo == w: "same"
 * padding), over a block of its column matrix: nb images of rows [oy0, oy1), nb > 1 only for
 * whole images with ho == h.  Element j of a kernel tap's (ky, kx) row of the block is then
 * element j + off of the block's input planes (image n0's plane at p), off = oy0 w + (ky - ph)
 * w + kx - pw, wherever the tap falls inside an image; where it falls on padding (a row
 * outside the image, a column outside [lo, hi)) j + off wraps into a neighbouring row, image
 * or past the planes.  So im2col is one copy of the run, clipped to the block's planes, then
 * the padding zeroed, and col2im zeroes the padding of the column gradients, then adds the run
 * (the +0 it adds to neighbouring pixels of the block changes none, but for a -0's sign).  The
 * block's planes are its share's own (backward shares are whole images): no other thread's. */
static int same_run(const vt_conv_desc *d, int ky, int kx, int oy0, int oy1, int nb,
                    ptrdiff_t *off, ptrdiff_t *j0, ptrdiff_t *j1)
{
    ptrdiff_t w = d->w, len = (ptrdiff_t)nb * (oy1 - oy0) * w, planes = (ptrdiff_t)nb * d->h * w;
    *off = (ptrdiff_t)(oy0 - d->ph + ky) * w + kx - d->pw;
    *j0 = *off < 0 ? -*off : 0;
    *j1 = planes - *off < len ? planes - *off : len;
    if (*j1 < *j0) *j1 = *j0;
    if (*j0 > len) *j0 = *j1 = len;
    return (int)len;
}

/* Block rows [v0, v1) of each image are inside it for kernel row ky (relative to oy0). */
static void same_rows(const vt_conv_desc *d, int ky, int oy0, int oy1, int *v0, int *v1)
{
    int a = d->ph - ky - oy0, b = d->h + d->ph - ky - oy0, tr = oy1 - oy0;
    *v0 = a < 0 ? 0 : a < tr ? a : tr;
    *v1 = b > tr ? tr : b > *v0 ? b : *v0;
}

static void zero_padding(const vt_conv_desc *d, int ky, int lo, int hi, int oy0, int oy1, int nb,
                         float *col)
{
    int w = d->w, v0, v1;
    same_rows(d, ky, oy0, oy1, &v0, &v1);
    size_t tr = (size_t)(oy1 - oy0);
    for (int nl = 0; nl < nb; nl++) {
        float *blk = col + nl * tr * w;
        zero_floats(blk, (size_t)v0 * w);
        zero_floats(blk + (size_t)v1 * w, (tr - (size_t)v1) * w);
        /* the padding columns [0, lo) and [hi, w) of the rows inside, column by column
         * (strided stores) */
        float *rows = blk + (size_t)v0 * w;
        for (int ox = 0; ox < w; ox++)
            if (ox < lo || ox >= hi)
                for (int r = v0; r < v1; r++) rows[(size_t)(r - v0) * w + ox] = 0.0f;
    }
}

/* How a tile's taps run: 0 row by row, 1 same padding image by image (or a row tile), 2 same
 * padding in one run over the tile's whole images. */
static int same_mode(const vt_conv_desc *d, int nb, int oy0, int oy1)
{
    if (d->sh != 1 || d->sw != 1 || d->wo != d->w) return 0;
    return nb > 1 && oy0 == 0 && oy1 == d->h && d->ho == d->h ? 2 : 1;
}

/* ---- the same runs in one pass of 16-float masked vectors (AVX-512) ----
 * Per image of the block, its rows inside the image are one span that starts at a row's first
 * column; lane i of the span's chunk t holds column (16 t + i) % w, inside when that lies in
 * [lo, hi).  The chunks' masks repeat every w / gcd(w, 16) chunks (7 for w = 7, 14 or 28): a
 * table of them per tap.  im2col loads the inside lanes (zero elsewhere) and stores whole
 * chunks: the copy and the padding in one pass, no strided stores; col2im adds only the
 * inside lanes, so the column gradients' padding is never read nor zeroed. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_SAME512 1
#define SAME512 __attribute__((target("avx512f")))
enum { SAME512_PERIOD_MAX = 64 };

/* Bits [a, b) of 16 (clipped). */
static inline unsigned lane_bits(int a, int b)
{
    a = a < 0 ? 0 : a;
    b = b > 16 ? 16 : b;
    return a < b ? ((1u << b) - 1) & ~((1u << a) - 1) : 0;
}

/* The chunks' masks of each kernel column kx, built once per tile. */
enum { SAME512_KW_MAX = 8 };
typedef struct same_masks {
    int period; /* 0: no vectors (no AVX-512, a period or kernel too long) */
    uint16_t m[SAME512_KW_MAX][SAME512_PERIOD_MAX];
} same_masks;

static void same512_masks(const vt_conv_desc *d, same_masks *sm)
{
    int w = d->w, g = w, b = 16;
    while (b) {
        int t = g % b;
        g = b;
        b = t;
    }
    sm->period = w / g;
    if (sm->period > SAME512_PERIOD_MAX || d->kw > SAME512_KW_MAX) {
        sm->period = 0;
        return;
    }
    for (int kx = 0; kx < d->kw; kx++) {
        int lo, hi;
        valid_cols(d, kx, &lo, &hi);
        for (int t = 0, c = 0; t < sm->period; t++, c = (c + 16) % w) {
            unsigned m = 0;
            for (int s = -c; s < 16; s += w) m |= lane_bits(s + lo, s + hi);
            sm->m[kx][t] = (uint16_t)m;
        }
    }
}

SAME512 static void im2col_same512(const vt_conv_desc *d, const float *p, const uint16_t *mask,
                                   int period, int ky, int kx, int oy0, int oy1, int nb,
                                   float *dst)
{
    ptrdiff_t w = d->w, tr = oy1 - oy0, off = (ptrdiff_t)(oy0 - d->ph + ky) * w + kx - d->pw;
    int v0, v1;
    same_rows(d, ky, oy0, oy1, &v0, &v1);
    for (int nl = 0; nl < nb; nl++) {
        float *o = dst + nl * tr * w;
        const float *src = p + off + nl * (ptrdiff_t)d->h * w + v0 * w;
        ptrdiff_t len = (v1 - v0) * w;
        zero_floats(o, (size_t)(v0 * w));
        o += v0 * w;
        ptrdiff_t j = 0;
        int t = 0;
        for (; j + 16 <= len; j += 16, t = t + 1 == period ? 0 : t + 1)
            _mm512_storeu_ps(o + j, _mm512_maskz_loadu_ps(mask[t], src + j));
        if (j < len) {
            __mmask16 tail = (__mmask16)((1u << (len - j)) - 1);
            _mm512_mask_storeu_ps(o + j, tail, _mm512_maskz_loadu_ps(mask[t] & tail, src + j));
        }
        zero_floats(o + len, (size_t)((tr - v1) * w));
    }
}

SAME512 static void col2im_same512(const vt_conv_desc *d, float *p, const uint16_t *mask,
                                   int period, int ky, int kx, int oy0, int oy1, int nb,
                                   const float *src)
{
    ptrdiff_t w = d->w, tr = oy1 - oy0, off = (ptrdiff_t)(oy0 - d->ph + ky) * w + kx - d->pw;
    int v0, v1;
    same_rows(d, ky, oy0, oy1, &v0, &v1);
    for (int nl = 0; nl < nb; nl++) {
        const float *s = src + nl * tr * w + v0 * w;
        float *o = p + off + nl * (ptrdiff_t)d->h * w + v0 * w;
        ptrdiff_t len = (v1 - v0) * w;
        int t = 0;
        for (ptrdiff_t j = 0; j < len; j += 16, t = t + 1 == period ? 0 : t + 1) {
            __mmask16 m = mask[t];
            if (len - j < 16) m &= (__mmask16)((1u << (len - j)) - 1);
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, o + j),
                                     _mm512_maskz_loadu_ps(m, s + j));
            _mm512_mask_storeu_ps(o + j, m, v);
        }
    }
}

#else
typedef struct same_masks {
    int period;
} same_masks;
#endif

/* The masks for a tile's same runs, where AVX-512 runs them (else period 0). */
static void same_masks_for(int v512, const vt_conv_desc *d, int mode, same_masks *sm)
{
    sm->period = 0;
#ifdef HAVE_SAME512
    if (v512 && mode) same512_masks(d, sm);
#endif
    (void)v512, (void)d, (void)mode;
}

static void im2col_same(const same_masks *sm, const vt_conv_desc *d, const float *p, int ky,
                        int kx, int lo, int hi, int oy0, int oy1, int nb, float *dst)
{
#ifdef HAVE_SAME512
    if (sm->period) { /* the CPU's vectors */
        im2col_same512(d, p, sm->m[kx], sm->period, ky, kx, oy0, oy1, nb, dst);
        return;
    }
#endif
    (void)sm;
    ptrdiff_t off, j0, j1, len = same_run(d, ky, kx, oy0, oy1, nb, &off, &j0, &j1);
    zero_floats(dst, (size_t)j0);
    memcpy(dst + j0, p + off + j0, (size_t)(j1 - j0) * sizeof(float));
    zero_floats(dst + j1, (size_t)(len - j1));
    zero_padding(d, ky, lo, hi, oy0, oy1, nb, dst);
}

static void col2im_same(const same_masks *sm, const vt_conv_desc *d, float *p, int ky, int kx,
                        int lo, int hi, int oy0, int oy1, int nb, float *src)
{
#ifdef HAVE_SAME512
    if (sm->period) {
        col2im_same512(d, p, sm->m[kx], sm->period, ky, kx, oy0, oy1, nb, src);
        return;
    }
#endif
    (void)sm;
    ptrdiff_t off, j0, j1;
    same_run(d, ky, kx, oy0, oy1, nb, &off, &j0, &j1);
    zero_padding(d, ky, lo, hi, oy0, oy1, nb, src);
    float *restrict dp = p + off;
    const float *restrict sp = src;
    for (ptrdiff_t j = j0; j < j1; j++) dp[j] += sp[j];
}

/* ---- 3-wide kernels of stride 2 and padding 1 (every stride-2 conv of the detectors) ----
 * The three kernel columns of a kernel row read one input row: kx = 1 its even pixels, kx = 2
 * its odd ones, kx = 0 the odd ones a column later (ix = 2 ox - 1 + kx).  So im2col fills the
 * three column rows in one pass over the input row (a deinterleave), and col2im adds them in
 * one pass over the dX row, in the order the row by row loop adds them (kx = 0, 1, 2: the same
 * bits).  Row by row, 3 x 32 outputs a call, cost the per-call overhead more than the copies
 * (det-n's 16 -> 32 layer at 128 px). */
static int conv_s2_triple(const vt_conv_desc *d)
{
    return d->sw == 2 && d->kw == 3 && d->pw == 1;
}

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* r0, r1, r2 (kx = 0, 1, 2) of one output row of wo from input row s of w. */
static void im2col_s2_row(const float *restrict s, int w, int wo, float *restrict r0,
                          float *restrict r1, float *restrict r2)
{
    int ox = 0;
#if defined(__x86_64__)
    for (; ox + 5 <= wo && 2 * ox + 8 <= w; ox += 4) { /* r0 one column later */
        __m128 a = _mm_loadu_ps(s + 2 * ox), b = _mm_loadu_ps(s + 2 * ox + 4);
        __m128 odd = _mm_shuffle_ps(a, b, 0xDD);
        _mm_storeu_ps(r1 + ox, _mm_shuffle_ps(a, b, 0x88));
        _mm_storeu_ps(r2 + ox, odd);
        _mm_storeu_ps(r0 + ox + 1, odd);
    }
#endif
    for (; ox < wo; ox++) {
        int ix = 2 * ox;
        r0[ox] = ox > 0 && ix - 1 < w ? s[ix - 1] : 0.0f;
        r1[ox] = ix < w ? s[ix] : 0.0f;
        r2[ox] = ix + 1 < w ? s[ix + 1] : 0.0f;
    }
    if (wo > 0) r0[0] = 0.0f;
}

/* The reverse: dx row (w) += column rows c0, c1, c2 (wo each), kx = 0 first. */
static void col2im_s2_row(float *restrict dx, int w, int wo, const float *restrict c0,
                          const float *restrict c1, const float *restrict c2)
{
    int ox = 0;
#if defined(__x86_64__)
    const __m128 z = _mm_set1_ps(-0.0f); /* x + -0 is x, a -0 included */
    for (; ox + 5 <= wo && 2 * ox + 8 <= w; ox += 4) {
        /* dX columns 2 ox .. 2 ox + 7: even ones take c1, odd ones c0 a column later, then c2 */
        __m128 k0 = _mm_loadu_ps(c0 + ox + 1), k1 = _mm_loadu_ps(c1 + ox),
               k2 = _mm_loadu_ps(c2 + ox);
        __m128 lo = _mm_add_ps(_mm_loadu_ps(dx + 2 * ox), _mm_unpacklo_ps(z, k0)),
               hi = _mm_add_ps(_mm_loadu_ps(dx + 2 * ox + 4), _mm_unpackhi_ps(z, k0));
        _mm_storeu_ps(dx + 2 * ox, _mm_add_ps(lo, _mm_unpacklo_ps(k1, k2)));
        _mm_storeu_ps(dx + 2 * ox + 4, _mm_add_ps(hi, _mm_unpackhi_ps(k1, k2)));
    }
#endif
    for (; ox < wo; ox++) {
        int ix = 2 * ox;
        if (ix < w) dx[ix] += c1[ox];
        if (ix + 1 < w) {
            if (ox + 1 < wo) dx[ix + 1] += c0[ox + 1];
            dx[ix + 1] += c2[ox];
        }
    }
}

/* A tile's columns: row r of K is (ci, ky, kx) with ci = c_first + r / (kh*kw). */
static void im2col_tile(int v512, const vt_conv_desc *d, const float *x, int c_first, int K,
                        int n0, int nb, int oy0, int oy1, float *col, int cols)
{
    size_t HW = (size_t)d->h * d->w;
    int kk = d->kh * d->kw, tr = oy1 - oy0;
    int mode = same_mode(d, nb, oy0, oy1), same = mode > 0, whole = mode == 2;
    same_masks sm;
    same_masks_for(v512, d, mode, &sm);
    int tri = !same && conv_s2_triple(d);
    for (int r = 0; r < K; r++) {
        int kx = r % d->kw, ky = r / d->kw % d->kh, ci = c_first + r / kk, lo, hi;
        valid_cols(d, kx, &lo, &hi);
        float *dst = col + (size_t)r * cols;
        if (tri) { /* kx = 0, 1, 2: rows r, r + 1, r + 2 */
            for (int nl = 0; nl < nb; nl++) {
                const float *src = x + ((size_t)ci * d->n + n0 + nl) * HW;
                for (int oy = oy0; oy < oy1; oy++) {
                    int iy = oy * d->sh - d->ph + ky;
                    float *d0 = dst + ((size_t)nl * tr + (oy - oy0)) * d->wo;
                    if (iy < 0 || iy >= d->h) {
                        for (int q = 0; q < 3; q++)
                            zero_floats(d0 + (size_t)q * cols, (size_t)d->wo);
                        continue;
                    }
                    im2col_s2_row(src + (size_t)iy * d->w, d->w, d->wo, d0, d0 + cols,
                                  d0 + 2 * (size_t)cols);
                }
            }
            r += 2;
            continue;
        }
        if (whole) {
            im2col_same(&sm, d, x + ((size_t)ci * d->n + n0) * HW, ky, kx, lo, hi, 0, d->h, nb,
                       dst);
            continue;
        }
        for (int nl = 0; nl < nb; nl++) {
            const float *src = x + ((size_t)ci * d->n + n0 + nl) * HW;
            if (same) {
                im2col_same(&sm, d, src, ky, kx, lo, hi, oy0, oy1, 1,
                           dst + (size_t)nl * tr * d->wo);
                continue;
            }
            for (int oy = oy0; oy < oy1; oy++) {
                int iy = oy * d->sh - d->ph + ky;
                float *drow = dst + ((size_t)nl * tr + (oy - oy0)) * d->wo;
                if (iy < 0 || iy >= d->h || lo == hi) {
                    zero_floats(drow, (size_t)d->wo);
                    continue;
                }
                const float *srow = src + (size_t)iy * d->w;
                zero_floats(drow, (size_t)lo);
                if (d->sw == 1) {
                    memcpy(drow + lo, srow + lo - d->pw + kx, (size_t)(hi - lo) * sizeof(float));
                } else {
                    const float *sp = srow + lo * d->sw - d->pw + kx;
                    if (d->sw == 2) { /* a constant stride: vector loads and shuffles */
                        const float *restrict s2 = sp - 2 * lo;
                        for (int ox = lo; ox < hi; ox++) drow[ox] = s2[2 * ox];
                    } else
                        for (int ox = lo; ox < hi; ox++, sp += d->sw) drow[ox] = *sp;
                }
                zero_floats(drow + hi, (size_t)(d->wo - hi));
            }
        }
    }
}

/* The reverse: add a tile's column gradients into dx (col: scratch, its padding entries
 * zeroed on the way). */
static void col2im_tile(int v512, const vt_conv_desc *d, float *dx, int c_first, int K, int n0,
                        int nb, int oy0, int oy1, float *col, int cols)
{
    size_t HW = (size_t)d->h * d->w;
    int kk = d->kh * d->kw, tr = oy1 - oy0;
    int mode = same_mode(d, nb, oy0, oy1), same = mode > 0, whole = mode == 2;
    same_masks sm;
    same_masks_for(v512, d, mode, &sm);
    int tri = !same && conv_s2_triple(d);
    for (int r = 0; r < K; r++) {
        int kx = r % d->kw, ky = r / d->kw % d->kh, ci = c_first + r / kk, lo, hi;
        valid_cols(d, kx, &lo, &hi);
        float *src = col + (size_t)r * cols;
        if (tri) { /* kx = 0, 1, 2: rows r, r + 1, r + 2 */
            for (int nl = 0; nl < nb; nl++) {
                float *dst = dx + ((size_t)ci * d->n + n0 + nl) * HW;
                for (int oy = oy0; oy < oy1; oy++) {
                    int iy = oy * d->sh - d->ph + ky;
                    if (iy < 0 || iy >= d->h) continue;
                    const float *s0 = src + ((size_t)nl * tr + (oy - oy0)) * d->wo;
                    col2im_s2_row(dst + (size_t)iy * d->w, d->w, d->wo, s0, s0 + cols,
                                  s0 + 2 * (size_t)cols);
                }
            }
            r += 2;
            continue;
        }
        if (whole) {
            col2im_same(&sm, d, dx + ((size_t)ci * d->n + n0) * HW, ky, kx, lo, hi, 0, d->h, nb,
                       src);
            continue;
        }
        for (int nl = 0; nl < nb; nl++) {
            float *dst = dx + ((size_t)ci * d->n + n0 + nl) * HW;
            if (same) {
                col2im_same(&sm, d, dst, ky, kx, lo, hi, oy0, oy1, 1,
                           src + (size_t)nl * tr * d->wo);
                continue;
            }
            for (int oy = oy0; oy < oy1; oy++) {
                int iy = oy * d->sh - d->ph + ky;
                if (iy < 0 || iy >= d->h) continue;
                const float *restrict srow = src + ((size_t)nl * tr + (oy - oy0)) * d->wo;
                float *restrict drow = dst + (size_t)iy * d->w;
                if (d->sw == 1) {
                    float *restrict dp = drow - d->pw + kx;
                    for (int ox = lo; ox < hi; ox++) dp[ox] += srow[ox];
                } else {
                    if (d->sw == 2) {
                        float *restrict d2 = drow - d->pw + kx;
                        for (int ox = lo; ox < hi; ox++) d2[2 * ox] += srow[ox];
                    } else
                        for (int ox = lo; ox < hi; ox++) drow[ox * d->sw - d->pw + kx] += srow[ox];
                }
            }
        }
    }
}

/* Shares of the tiles, which the pool's threads take in turn (several per thread, so that a
 * thread slowed down by the machine does not hold the other up): forward splits the tiles
 * evenly; backward splits whole images (so a share's col2im never touches another share's
 * dX), each share with its own partial weight gradient, so fewer shares where those would pass
 * PARTIALS_MAX_FLOATS (but never fewer than the threads).  Where a tile holds whole images,
 * backward splits the tiles as forward does: never more shares than tiles, as a share without
 * a tile would still clear its partial gradient and the reduction add it (16 images of 4x4 px
 * in 2 tiles: 6 shares, 4 of them empty, 1.8 of a 256->256 conv's 5.4 ms backward). */
enum { SHARES_PER_THREAD = 4, PARTIALS_MAX_FLOATS = 4 << 20 };

static int shares(const vt_backend *b, const tiling *t, const vt_conv_desc *d, int backward)
{
    int th = vt_pool_threads(POOL(b)), s = th * SHARES_PER_THREAD;
    size_t dw = (size_t)d->cout * (size_t)(d->cin / d->groups) * d->kh * d->kw;
    while (backward && s > th && (size_t)(s - 1) * dw > PARTIALS_MAX_FLOATS) s -= th;
    int units = backward && t->per_img > 1 ? d->n : t->ntiles;
    return units < s ? (units > 0 ? units : 1) : s;
}

static void share_tiles(const tiling *t, const vt_conv_desc *d, int backward, int parts, int p,
                        int *t0, int *t1)
{
    if (!backward || t->per_img == 1) {
        *t0 = (int)((long long)t->ntiles * p / parts);
        *t1 = (int)((long long)t->ntiles * (p + 1) / parts);
        return;
    }
    /* images [i0, i1) -> their tiles */
    int i0 = (int)((long long)d->n * p / parts), i1 = (int)((long long)d->n * (p + 1) / parts);
    *t0 = i0 * t->per_img;
    *t1 = i1 * t->per_img;
}

/* Floats of the weights packed once per call for the tiles' products (vt_sgemm_pack_a: each
 * group's W forward, its W^T for dX), the larger; 0 where the products take no packed
 * operand. */
static size_t packed_w(const vt_conv_desc *d, int K)
{
    return (size_t)d->groups * vt_sgemm_pack_a_floats_either(d->cout / d->groups, K);
}

size_t vt_cpu_conv_workspace(vt_backend *b, const vt_conv_desc *d)
{
    if (conv_is_pointwise(d)) return 0;
    tiling t = make_tiling(b, d);
    size_t th = (size_t)vt_pool_threads(POOL(b)), sh = (size_t)shares(b, &t, d, 1);
    size_t dw = (size_t)d->cout * t.K;
    size_t bytes = (th * t.tile_floats + (sh - 1) * dw + packed_w(d, t.K)) * sizeof(float);
    /* either path, whichever a call takes (precision can change after planning) */
    size_t wb = vt_cpu_wino_workspace(b, d);
    return wb > bytes ? wb : bytes;
}

typedef struct conv_job {
    const vt_conv_desc *d;
    tiling t;
    int parts, backward;
    int threads;    /* the pool's: column scratch slots when not kept */
    const float *x, *w, *dy;
    float *y, *dx, *dw;
    float *ws;      /* threads x tile_floats columns (keep: the whole batch's columns, tile
                     * i's at K x its first column), then parts - 1 partial dW */
    int keep;
    vt_cpu_gemm_fn gemm; /* the backend's (fp32 or bf16) */
    int v512;            /* the backend's conv_avx512: the same runs in AVX-512 */
    /* each group's W (forward) or W^T (backward's dX) packed for the products, wpk floats
     * apart (vt_sgemm_pack_a); NULL: the products pack W themselves, tile after tile */
    float *wp;
    size_t wpk;
} conv_job;

/* Floats before the partial dW sums in ws. */
static size_t cols_floats(const conv_job *J)
{
    return J->keep ? (size_t)J->t.K * J->d->n * J->d->ho * J->d->wo
                   : (size_t)J->threads * J->t.tile_floats;
}

/* ---- a tile's columns: built (im2col) or scattered (col2im) by the calling thread, or, where
 * a tile is all the work there is, split by input channels over the pool (each channel's rows
 * of the columns and dX planes are its own) ---- */

typedef struct cols_job {
    const conv_job *J;
    int c_first, n0, nb, oy0, oy1, cols;
    float *col;
    int scatter; /* 0: im2col into col, 1: col2im from it */
} cols_job;

/* Channels [c0, c1) of a tile's columns: rows [c0 kk, c1 kk) */
static void cols_channels(void *ctx, size_t c0, size_t c1)
{
    const cols_job *C = ctx;
    const vt_conv_desc *d = C->J->d;
    int kk = d->kh * d->kw, K = (int)(c1 - c0) * kk;
    float *col = C->col + c0 * kk * (size_t)C->cols;
    if (C->scatter)
        col2im_tile(C->J->v512, d, C->J->dx, C->c_first + (int)c0, K, C->n0, C->nb, C->oy0,
                    C->oy1, col, C->cols);
    else
        im2col_tile(C->J->v512, d, C->J->x, C->c_first + (int)c0, K, C->n0, C->nb, C->oy0,
                    C->oy1, col, C->cols);
}

/* Tile i of the job, its columns in col (unless kept), dW assigned (first) or added to in dw;
 * pool: NULL on a share's thread, else the backend's, whose threads then run its products
 * (vt_sgemm and the bf16 GEMM split C's rows or columns, not k: the same sums) and columns. */
static void conv_tile(const conv_job *J, vt_pool *pool, int i, int first, float *col, float *dw)
{
    const vt_conv_desc *d = J->d;
    size_t NOHW = (size_t)d->n * d->ho * d->wo, c0;
    int cin_g = d->cin / d->groups, cout_g = d->cout / d->groups, K = J->t.K;
    cols_job C = {J, 0, 0, 0, 0, 0, 0, col, 0};
    tile_range(&J->t, d, i, &C.n0, &C.nb, &C.oy0, &C.oy1, &c0, &C.cols);
    int cols = C.cols;
    if (J->keep) C.col = col = J->ws + (size_t)K * c0; /* one group */
    for (int g = 0; g < d->groups; g++) {
        const float *wg = J->w + (size_t)g * cout_g * K;
        C.c_first = g * cin_g;
        C.scatter = 0;
        if (!(J->keep && J->backward)) /* kept columns: forward built them */
            vt_pool_run(pool, (size_t)cin_g, 1, cols_channels, &C);
        const float *wpg = J->wp ? J->wp + (size_t)g * J->wpk : NULL;
        if (!J->backward) {
            float *yg = J->y + (size_t)g * cout_g * NOHW + c0;
            if (!wpg ||
                !vt_sgemm_packed_a(cout_g, cols, K, 1.0f, wpg, 0, col, cols, 0.0f, yg, (int)NOHW))
                J->gemm(pool, 0, 0, cout_g, cols, K, 1.0f, wg, K, col, cols, 0.0f, yg, (int)NOHW);
            continue;
        }
        const float *dyg = J->dy + (size_t)g * cout_g * NOHW + c0;
        J->gemm(pool, 0, 1, cout_g, K, cols, 1.0f, dyg, (int)NOHW, col, cols, first ? 0.0f : 1.0f,
                dw + (size_t)g * cout_g * K, K);
        if (J->dx) {
            if (!wpg || !vt_sgemm_packed_a(K, cols, cout_g, 1.0f, wpg, 0, dyg, (int)NOHW, 0.0f,
                                           col, cols))
                J->gemm(pool, 1, 0, K, cols, cout_g, 1.0f, wg, K, dyg, (int)NOHW, 0.0f, col, cols);
            C.scatter = 1;
            vt_pool_run(pool, (size_t)cin_g, 1, cols_channels, &C);
        }
    }
}

static void conv_share(void *ctx, size_t p0, size_t p1)
{
    const conv_job *J = ctx;
    const vt_conv_desc *d = J->d;
    for (size_t p = p0; p < p1; p++) {
        float *col = J->ws + (size_t)vt_pool_thread() * J->t.tile_floats;
        float *dw = p == 0 ? J->dw : J->ws + cols_floats(J) + (p - 1) * (size_t)d->cout * J->t.K;
        int t0, t1;
        share_tiles(&J->t, d, J->backward, J->parts, (int)p, &t0, &t1);
        for (int i = t0; i < t1; i++) conv_tile(J, NULL, i, i == t0, col, dw);
        if (J->backward && t0 == t1) memset(dw, 0, (size_t)d->cout * J->t.K * sizeof(float));
    }
}

/* Fewer tiles (forward) or images (backward shares) than threads: the tiles one after another,
 * each over the pool (no packed weights: J->wp NULL).  A batch of one image (a predictor's
 * forward) otherwise ran on one thread: 256 -> 256 at 10x10, 2 threads, forward 1.72 ms against
 * 1.70 on one, 0.96 this way. */
static void conv_tiles_inner(vt_backend *b, const conv_job *J)
{
    for (int i = 0; i < J->t.ntiles; i++) conv_tile(J, POOL(b), i, i == 0, J->ws, J->dw);
}

/* dw += the partial sums of shares 1.. (in order), split over rows of dw. */
typedef struct reduce_job {
    float *dw;
    const float *partials;
    size_t len;
    int parts;
} reduce_job;

static void reduce_rows(void *ctx, size_t b, size_t e)
{
    const reduce_job *R = ctx;
    for (int p = 1; p < R->parts; p++) {
        const float *src = R->partials + (size_t)(p - 1) * R->len;
        for (size_t i = b; i < e; i++) R->dw[i] += src[i];
    }
}

/* ---- kept columns: the tiles' columns of the whole batch, built by forward, reused by
 * backward ---- */

/* 8 MiB of columns per layer at most. Reading a kept 3x3 layer's columns back moves 9x the
 * bytes of its input, while rebuilding a tile from x hits the cache: on the AMX Xeon keeping
 * 64 MiB layers made the cnn-small step 5-20% slower (bf16 b256 most) than rebuilding them,
 * and keeping up to 8 MiB measured the same as never keeping. */
enum { KEEP_MAX_FLOATS = 2 << 20 };

size_t vt_cpu_conv_columns(vt_backend *b, const vt_conv_desc *d)
{
    if (conv_is_pointwise(d) || d->groups != 1 || vt_cpu_wino_applies(b, d)) return 0;
    size_t f = (size_t)d->cin * d->kh * d->kw * d->n * d->ho * d->wo;
    if (f > KEEP_MAX_FLOATS) return 0;
    tiling t = make_tiling(b, d);
    size_t sh = (size_t)shares(b, &t, d, 1);
    return (f + (sh - 1) * (size_t)d->cout * d->cin * d->kh * d->kw + packed_w(d, t.K)) *
           sizeof(float);
}

/* Where the products take a packed operand (fp32 through vt_sgemm): each group's W (or W^T)
 * packed at `at` once for all the tiles, which otherwise each packed it again (a scalar strided
 * copy into 6-row panels, or 6-float copies for W^T: a layer's whole weights a tile, as large
 * as its products' other operand in deep layers on small maps). */
static void pack_w(vt_backend *b, conv_job *J, float *at, int transposed)
{
    const vt_conv_desc *d = J->d;
    int cog = d->cout / d->groups;
    J->wp = NULL;
    J->wpk = vt_sgemm_pack_a_floats(transposed ? J->t.K : cog, transposed ? cog : J->t.K);
    if (J->gemm != vt_sgemm || !J->wpk) return;
    J->wp = at;
    int K = J->t.K; /* W_g is cout_g x K; dX's product takes W_g^T */
    vt_sgemm_pack_a_many(POOL(b), d->groups, transposed, transposed ? K : cog, transposed ? cog : K,
                         J->w, (size_t)cog * K, K, at, J->wpk);
}

vt_status vt_cpu_conv_forward(vt_backend *b, const vt_conv_desc *d, const float *x,
                              const float *w, const float *bias, float *y, void *ws)
{
    size_t NOHW = (size_t)d->n * d->ho * d->wo;
    if (conv_is_pointwise(d)) {
        GEMM(b)(POOL(b), 0, 0, d->cout, (int)NOHW, d->cin, 1.0f, w, d->cin, x, (int)NOHW, 0.0f,
                y, (int)NOHW);
    } else if (vt_cpu_wino_applies(b, d)) {
        vt_cpu_wino_forward(b, d, x, w, y, ws);
    } else {
        conv_job J = {d,    make_tiling(b, d), 0,    0,    vt_pool_threads(POOL(b)), x,
                      w,    NULL,              y,    NULL, NULL,                     ws,
                      d->keep_columns, GEMM(b), ((const cpu_backend *)b)->conv_avx512,
                      NULL, 0};
        J.parts = shares(b, &J.t, d, 0);
        if (J.parts < J.threads) {
            conv_tiles_inner(b, &J);
        } else {
            pack_w(b, &J, J.ws + cols_floats(&J), 0); /* no partial dW forward */
            vt_pool_run(POOL(b), (size_t)J.parts, 1, conv_share, &J);
        }
    }
    if (bias) vt_cpu_bias_add(b, d->cout, NOHW, bias, y);
    return VT_OK;
}

vt_status vt_cpu_conv_backward(vt_backend *b, const vt_conv_desc *d, const float *x,
                               const float *w, const float *dy, float *dx, float *dw, float *db,
                               void *ws)
{
    size_t NOHW = (size_t)d->n * d->ho * d->wo;
    if (db) vt_cpu_channel_sum(b, d->cout, NOHW, dy, db);
    if (conv_is_pointwise(d)) {
        /* dW[cout][cin] = dY[cout][NHW] x X[cin][NHW]^T;  dX[cin][NHW] += W^T dY */
        GEMM(b)(POOL(b), 0, 1, d->cout, d->cin, (int)NOHW, 1.0f, dy, (int)NOHW, x, (int)NOHW,
                0.0f, dw, d->cin);
        if (dx)
            GEMM(b)(POOL(b), 1, 0, d->cin, (int)NOHW, d->cout, 1.0f, w, d->cin, dy, (int)NOHW,
                    1.0f, dx, (int)NOHW);
        return VT_OK;
    }
    if (vt_cpu_wino_applies(b, d)) {
        vt_cpu_wino_backward(b, d, x, w, dy, dx, dw, ws);
        return VT_OK;
    }
    conv_job J = {d,  make_tiling(b, d), 0,  1,  vt_pool_threads(POOL(b)), x, w, dy, NULL, dx,
                  dw, ws,                d->keep_columns, GEMM(b),
                  ((const cpu_backend *)b)->conv_avx512, NULL, 0};
    J.parts = shares(b, &J.t, d, 1);
    if (J.parts < J.threads) {
        conv_tiles_inner(b, &J);
        return VT_OK;
    }
    if (dx) pack_w(b, &J, J.ws + cols_floats(&J) + (size_t)(J.parts - 1) * d->cout * J.t.K, 1);
    vt_pool_run(POOL(b), (size_t)J.parts, 1, conv_share, &J);
    if (J.parts > 1) {
        size_t len = (size_t)d->cout * J.t.K;
        reduce_job R = {dw, J.ws + cols_floats(&J), len, J.parts};
        vt_pool_run(POOL(b), len, GRAIN, reduce_rows, &R);
    }
    return VT_OK;
}
