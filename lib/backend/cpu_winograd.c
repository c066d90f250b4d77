/* Winograd F(2x2, 3x3) and F(4x4, 3x3) for the CPU backend's 3x3 stride-1 "same" convolutions
 * (fp32 products).
 *
 * An output tile of m x m pixels (m = 2 or 4) is A^T [ U (.) V ] A, where V = B^T d B is its
 * a x a input tile transformed (a = m + 2), U = G g G^T the 3x3 filter transformed, (.) an
 * element-wise product summed over the input channels: K = a^2 products [cout x cin] x
 * [cin x tiles], one per element of the transform domain, with K x cin x cout x tiles
 * multiply-adds where im2col's GEMM does 9 m^2 x cin x cout x tiles: 2.25x fewer for 2x2
 * tiles (K = 16), 4x fewer for 4x4 (K = 36).  Backward is the exact adjoint of that forward:
 *   dM = A dY A^T              (the output gradients of a tile, a x a)
 *   dU = sum over tiles dM V^T (K products [cout x tiles] x [tiles x cin]), dW = G^T dU G
 *   dV = U^T dM                (K products), dX += B dV B^T, the tiles overlapping by 2
 * 2x2 tiles' transforms only add, subtract and halve, so in fp32 the results differ from
 * im2col's by rounding alone; 4x4 tiles' (Lavin and Gray's points 0, +-1, +-2) multiply by up
 * to 8 and 1/24 and round about 5x more (test_backend_cpu bounds both).  Which tile a shape
 * takes: vt_backend_cpu_winograd_tile (backend.h).
 *
 * Work comes in blocks of whole rows of tiles (an image's tile row: its m output rows), sized
 * so a block's transformed inputs and outputs (K x (cin + cout) x tiles floats) stay in the
 * cache; a thread transforms its block into its own scratch and calls single-threaded GEMMs on
 * it.  The transforms run along a row of tiles at a time, or, for 4x4 tiles on maps of up to
 * 12 tiles a row, over chunks of 64 tiles of the block gathered from any rows and images
 * (input_tiles4 ...): on a 7x7 map a row is 2 tiles, too short a loop.  Backward shares are
 * whole images (no two threads add into the same dX rows), each with its own partial dU,
 * added in share order: bitwise reproducible for a given thread count.
 * Layouts: x, y, dy, dx CNHW as the rest of the backend; V[k][ci][t], M[k][co][t] (k = a xi +
 * nu), U and dU [k][co][ci]. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"

/* Floats of a block's transformed tiles (K x (cin + cout) x tiles): 4 MiB, at least one row of
 * tiles; forward cuts smaller blocks where that gives each thread at least two.  On Zen 3,
 * 512K-2M floats measured the same within 10 % forward (2x2 and 4x4 tiles); backward with 256
 * channels wanted 1M or more (bench/README.md, "Winograd"). */
enum {
    WINO_CHUNK_TW = 12, /* 4x4 tiles: transformed a chunk of tiles at a time up to this many
                         * tiles a row (maps up to 48 px), a row of tiles at a time above */
    WCHUNK = 64,       /* tiles a chunk */
    WINO_BLOCK_FLOATS = 1 << 20,
    WINO_SHARES_PER_THREAD = 2,
    WINO_PARTIALS_MAX = 4 << 20,        /* more shares than threads only within this */
    WINO_SHARE_MIN_TILES = 256,         /* ... and where each share keeps this many tiles */
    WINO_THREADS_MAX_FLOATS = 16 << 20, /* 64 MiB of partial dU at most (tile_within) */
};

/* The shapes Winograd can take: 3x3, stride 1, padding 1, one group, 16+ channels */
static int wino_shape(const vt_conv_desc *d)
{
    return d->kh == 3 && d->kw == 3 && d->sh == 1 && d->sw == 1 && d->ph == 1 && d->pw == 1 &&
           d->groups == 1 && d->ho == d->h && d->wo == d->w && d->cin >= VT_WINO_MIN_CHANNELS &&
           d->cout >= VT_WINO_MIN_CHANNELS && d->n > 0;
}

/* Whether 4x4 tiles cover d's map within pct % more than its pixels */
static int covers4_within(const vt_conv_desc *d, int pct)
{
    size_t cover = (size_t)16 * ((d->h + 3) / 4) * ((d->w + 3) / 4), hw = (size_t)d->h * d->w;
    return 100 * cover <= (size_t)(100 + pct) * hw;
}

int vt_backend_cpu_winograd_tile(const vt_conv_desc *d)
{
    if (!wino_shape(d)) return 0;
    size_t tiles4 = (size_t)((d->h + 3) / 4) * ((d->w + 3) / 4), hw = (size_t)d->h * d->w,
           tiles2 = (size_t)((d->h + 1) / 2) * ((d->w + 1) / 2);
    /* a tile takes a batch of VT_WINO_MIN_BATCH_TILES of it or more */
    int few4 = (size_t)d->n * tiles4 < VT_WINO_MIN_BATCH_TILES;
    int big = tiles2 >= VT_WINO_MIN_TILES && (size_t)d->n * tiles2 >= VT_WINO_MIN_BATCH_TILES;
    /* 4x4 on 16+ px maps that its tiles cover within 15 %; on maps of 7+ px within 55 %
     * where the batch's work (output pixels / 16 x the smaller channel count) is enough, more
     * of it where 2x2 tiles cover the map exactly and 4x4 ones do not (sides even, not both
     * multiples of 4) */
    if (few4) return big ? 2 : 0;
    if (d->h >= VT_WINO4_MIN_SIDE && d->w >= VT_WINO4_MIN_SIDE && covers4_within(d, 15) && big)
        return 4;
    double work = (double)d->n * (double)hw / 16 * (d->cin < d->cout ? d->cin : d->cout);
    int even = d->h % 2 == 0 && d->w % 2 == 0 && (d->h % 4 || d->w % 4);
    if (d->h >= VT_WINO4_MIN_SMALL && d->w >= VT_WINO4_MIN_SMALL && covers4_within(d, 55) &&
        work >= (even ? VT_WINO4_MIN_WORK_EVEN : VT_WINO4_MIN_WORK))
        return 4;
    return big ? 2 : 0;
}

/* Under bf16 products im2col's GEMMs and 2x2 tiles' products run about twice as fast
 * (AVX512-BF16 on Zen 4) while 4x4 tiles keep fp32 products: where 4x4 tiles do not cover the
 * map within 15 % and a side has fewer than VT_WINO_BF16_MIN_CHANNELS channels, the
 * transforms are too large a share and im2col wins; on wide maps of many channels, the 2x2
 * tiles (bench/README.md, "Winograd under bf16"). */
int vt_backend_cpu_winograd_tile_bf16(const vt_conv_desc *d)
{
    int m = vt_backend_cpu_winograd_tile(d);
    if (!m) return 0;
    int narrow = d->cin < VT_WINO_BF16_MIN_CHANNELS || d->cout < VT_WINO_BF16_MIN_CHANNELS;
    if (narrow && !covers4_within(d, 15)) return 0;
    /* wide maps of many channels: 2x2 tiles' bf16 products beat 4x4 tiles' fp32 ones */
    int wide = d->cin >= VT_WINO_BF16_2X2_CHANNELS && d->cout >= VT_WINO_BF16_2X2_CHANNELS;
    return m == 4 && wide && d->h >= VT_WINO_BF16_2X2_SIDE && d->w >= VT_WINO_BF16_2X2_SIDE ? 2
                                                                                         : m;
}

/* An environment switch: 1 where `name` is 1, on, yes or true, 0 where it is 0, off, no or
 * false, else -1 (unset or another value) */
static int env_switch(const char *name)
{
    const char *e = getenv(name);
    if (e && (!strcmp(e, "1") || !strcmp(e, "on") || !strcmp(e, "yes") || !strcmp(e, "true")))
        return 1;
    if (e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no") || !strcmp(e, "false")))
        return 0;
    return -1;
}

int vt_backend_cpu_winograd_default(void)
{
    if (env_switch("VT_CPU_WINOGRAD") == 0) return 0;
    const char *e = getenv("VT_CPU_WINOGRAD");
    return e && (!strcmp(e, "2") || !strcmp(e, "2x2")) ? 2 : 4;
}

int vt_backend_cpu_winograd_bf16_default(void)
{
    int e = env_switch("VT_CPU_WINOGRAD_BF16");
    if (e >= 0) return e;
    /* AVX512_BF16's products are about twice fp32's (Zen 4/5) or slower (Intel): Winograd's
     * measured faster there; AMX's are 3-6x fp32's: im2col, unmeasured against Winograd */
    return !strncmp(vt_gemm_bf16_kernel(), "AVX512_BF16", 11);
}

/* The shape's tile, or the 2x2 one, whose backward partial dU (one of (tile + 2)^2 x cout x
 * cin floats a share, at least a share a thread) fits WINO_THREADS_MAX_FLOATS, so that a
 * many-core host does not trade the convolution's memory for it (512 -> 512 channels: 4x4 on
 * one thread, 2x2 on 2-4, im2col from 5). */
static int tile_within(int threads, const vt_conv_desc *d, int largest, int force, int bf16)
{
    size_t th = (size_t)threads, cc = (size_t)d->cout * d->cin;
    int m = force && wino_shape(d) ? force
            : bf16                 ? vt_backend_cpu_winograd_tile_bf16(d)
                                   : vt_backend_cpu_winograd_tile(d);
    for (m = m < largest ? m : largest; m; m = m == 4 ? 2 : 0)
        if (th * (size_t)(m + 2) * (m + 2) * cc <= WINO_THREADS_MAX_FLOATS) return m;
    return 0;
}

int vt_cpu_wino_tile(const vt_backend *b, const vt_conv_desc *d)
{
    const cpu_backend *cb = (const cpu_backend *)b;
    int fp32 = cb->gemm == vt_sgemm, on = fp32 || cb->conv_winograd_bf16;
    return tile_within(vt_pool_threads(POOL(b)), d, on ? cb->conv_winograd : 0,
                       cb->conv_winograd_force, !fp32);
}

/* The products of a tile: the backend's, but fp32 in 4x4 tiles.  Their transformed tiles are
 * sums of up to 36 inputs with coefficients up to 8 (and the filters' 1/24), so rounding them
 * to bf16 gave 10x im2col's bf16 error (2.5e-2 relative against 2.4e-3; 2x2 tiles: 4e-3,
 * test_backend_cpu). */
static vt_cpu_gemm_fn tile_gemm(const vt_backend *b, int tile)
{
    return tile == 4 ? vt_sgemm : GEMM(b);
}

int vt_cpu_wino_applies(const vt_backend *b, const vt_conv_desc *d)
{
    return !d->keep_columns && vt_cpu_wino_tile(b, d);
}

typedef struct wino_geom {
    int M, A, K;    /* output tile M x M, input tile A x A (A = M + 2), K = A^2 products */
    int TH, TW;     /* tiles per image: rows, columns */
    int rows;       /* tile rows per block */
    int chunked;    /* transforms over chunks of WCHUNK tiles (input_tiles4 ...), not rows */
    size_t tmax;    /* tiles of the largest block */
    size_t per_thread; /* floats of a thread's scratch */
    size_t uk, u;   /* floats of one U[k] (cout x cin) and of U (and of one dU): K x uk */
} wino_geom;

/* blocks: cut the batch's tile rows into at least this many blocks where rows allow */
static wino_geom geom(const vt_conv_desc *d, int tile, int blocks)
{
    wino_geom g;
    g.M = tile;
    g.A = g.M + 2;
    g.K = g.A * g.A;
    g.TH = (d->ho + g.M - 1) / g.M;
    g.TW = (d->wo + g.M - 1) / g.M;
    size_t row = (size_t)g.K * (d->cin + d->cout) * g.TW;
    size_t r = WINO_BLOCK_FLOATS / row;
    size_t all = (size_t)d->n * g.TH;
    if (blocks > 1 && r > (all + blocks - 1) / blocks) r = (all + blocks - 1) / blocks;
    if (r < 1) r = 1;
    if (r > all) r = all;
    g.rows = (int)r;
    g.tmax = r * g.TW;
    /* V and M, then the transforms' rows: K arrays of TW, A padded rows of M TW + 2 and one
     * more */
    size_t pl = (size_t)g.M * g.TW + 2;
    g.chunked = g.M == 4 && g.TW <= WINO_CHUNK_TW;
    g.per_thread = (size_t)g.K * (d->cin + d->cout) * g.tmax +
                   (g.chunked ? (size_t)72 * WCHUNK + 3 * g.tmax /* + block_tiles' */
                              : (size_t)(g.K + g.A) * g.TW + (size_t)g.A * pl + pl + 4);
    g.uk = (size_t)d->cout * d->cin;
    g.u = (size_t)g.K * g.uk;
    return g;
}

/* Backward shares: whole images, each with its own partial dU (K x cout x cin floats) that
 * the weight gradient's transform then sums.  Two a thread, so that a thread the machine slows
 * down does not hold the other up, but one where the partials pass WINO_PARTIALS_MAX or a share
 * would get fewer than WINO_SHARE_MIN_TILES tiles: reading the partials back costs about as
 * much as a share's products over a few dozen tiles (`conv_profile`, backward, Zen 3, two a
 * thread -> one: 8, 256 -> 256 at 10x10 in 2x2 tiles, 50 tiles a share, 9.3-9.6 -> 8.2-8.4 ms;
 * 8, 128 -> 128 at 20x20, 50, 5.2-5.5 -> 4.8; 16, 128 -> 128 at 8x8, 64, 3.1-3.2 -> 2.9-3.0;
 * 256 tiles a share and more unchanged within the noise). */
static int shares_for(int th, const vt_conv_desc *d, int tile)
{
    size_t tiles = (size_t)d->n * (size_t)((d->ho + tile - 1) / tile) *
                   (size_t)((d->wo + tile - 1) / tile),
           u = (size_t)(tile + 2) * (size_t)(tile + 2) * (size_t)d->cout * (size_t)d->cin;
    int s = th * WINO_SHARES_PER_THREAD;
    if ((size_t)s * u > WINO_PARTIALS_MAX || tiles < (size_t)s * WINO_SHARE_MIN_TILES) s = th;
    return s < d->n ? s : d->n;
}

/* Whole shares (images backward, blocks forward) take ceil(shares / th) rounds for shares / th
 * of work a thread, run_inner's products ceil(K / th) for K / th (K = 16 or 36): run_inner
 * where it has the fewer rounds for the work, shares on a tie.  `conv_profile`, Zen 3, 2
 * threads, inner against whole images, backward: one image 1.6-1.9x faster, 3 images 1.0-1.5x,
 * 5 images 1.0-1.3x; 8, 16 and 64 images the same within the noise. */
static int inner_applies(int th, long long shares, int K)
{
    return (shares + th - 1) / th * K > (long long)(K + th - 1) / th * shares;
}

/* whole images leave threads idle (one image on 2 threads): run_inner, one dU */
static int backward_inner_applies(int th, const vt_conv_desc *d, const wino_geom *g)
{
    return inner_applies(th, d->n, g->K);
}

static int backward_shares(int th, const vt_conv_desc *d, const wino_geom *g)
{
    return backward_inner_applies(th, d, g) ? 1 : shares_for(th, d, g->M);
}

int vt_backend_cpu_winograd_shares(const vt_conv_desc *d, int threads, int tile)
{
    return tile == 2 || tile == 4 ? shares_for(threads > 0 ? threads : 1, d, tile) : 0;
}

static int forward_blocks(const vt_backend *b) { return 2 * vt_pool_threads(POOL(b)); }

/* Floats of the products' U packed once per call (vt_sgemm_pack_a: U[k] forward, U[k]^T for
 * the backward's dV), K of the larger; 0 where the products take no packed operand. */
static size_t packed_u(const vt_conv_desc *d, const wino_geom *g)
{
    return (size_t)g->K * vt_sgemm_pack_a_floats_either(d->cout, d->cin);
}

/* Either tile's, whichever a call takes (the switch can change after planning); 0 for none. */
static size_t workspace(const vt_conv_desc *d, int threads, int largest, int force)
{
    size_t most = 0;
    for (; largest > 0; largest -= 2) {
        int m = tile_within(threads, d, largest, force, 0); /* fp32's: the larger */
        if (!m) break;
        wino_geom g = geom(d, m, 1); /* backward's, the larger blocks */
        size_t bytes = (g.u * (1 + (size_t)backward_shares(threads, d, &g)) + packed_u(d, &g) +
                        (size_t)threads * g.per_thread) *
                       sizeof(float);
        if (bytes > most) most = bytes;
    }
    return most;
}

size_t vt_backend_cpu_winograd_workspace(const vt_conv_desc *d, int threads, int largest)
{
    return workspace(d, threads, largest, 0);
}

size_t vt_cpu_wino_workspace(vt_backend *b, const vt_conv_desc *d)
{
    return workspace(d, vt_pool_threads(POOL(b)), 4, ((const cpu_backend *)b)->conv_winograd_force);
}

/* ---- the transforms of one channel over one row of tiles ---- */

/* B^T down rows r0..r3 of a plane (NULL: outside it, zero), w columns: o_q[j] for q = 0..3. */
static void input_down(const float *r0, const float *r1, const float *r2, const float *r3, int w,
                       float *restrict o0, float *restrict o1, float *restrict o2,
                       float *restrict o3)
{
    if (r0 && r1 && r2 && r3) {
        for (int j = 0; j < w; j++) {
            float a = r0[j], b = r1[j], c = r2[j], e = r3[j];
            o0[j] = a - c, o1[j] = b + c, o2[j] = c - b, o3[j] = b - e;
        }
        return;
    }
    for (int j = 0; j < w; j++) {
        float a = r0 ? r0[j] : 0.0f, b = r1 ? r1[j] : 0.0f, c = r2 ? r2[j] : 0.0f,
              e = r3 ? r3[j] : 0.0f;
        o0[j] = a - c, o1[j] = b + c, o2[j] = c - b, o3[j] = b - e;
    }
}

/* V[k * kstride + tx] for tile row ty of plane p (h x w), tx < TW.  P: 4 rows of 2 TW + 2. */
static void input_row(const float *p, int h, int w, int ty, int TW, float *restrict v,
                      size_t kstride, float *restrict P)
{
    const size_t pl = (size_t)2 * TW + 2;
    const float *r[4];
    for (int i = 0; i < 4; i++) {
        int iy = 2 * ty - 1 + i;
        r[i] = iy >= 0 && iy < h ? p + (size_t)iy * w : NULL;
    }
    /* down the rows, P[j] at column j - 1, zero outside the plane */
    for (int q = 0; q < 4; q++) {
        P[q * pl] = 0.0f;
        for (size_t j = (size_t)w + 1; j < pl; j++) P[q * pl + j] = 0.0f;
    }
    input_down(r[0], r[1], r[2], r[3], w, P + 1, P + pl + 1, P + 2 * pl + 1, P + 3 * pl + 1);
    /* B^T along each row: tile tx reads P[2 tx .. 2 tx + 3] */
    for (int xi = 0; xi < 4; xi++) {
        const float *restrict s = P + xi * pl;
        float *restrict v0 = v + (size_t)(4 * xi) * kstride, *restrict v1 = v0 + kstride,
                        *restrict v2 = v1 + kstride, *restrict v3 = v2 + kstride;
        for (int t = 0; t < TW; t++) {
            float d0 = s[2 * t], d1 = s[2 * t + 1], d2 = s[2 * t + 2], d3 = s[2 * t + 3];
            v0[t] = d0 - d2, v1[t] = d1 + d2, v2[t] = d2 - d1, v3[t] = d1 - d3;
        }
    }
}

/* Output rows 2 ty, 2 ty + 1 (those < ho) of plane y (ho x wo) = A^T M A of tile row ty. */
static void output_row(const float *m, size_t kstride, int TW, int ty, int ho, int wo,
                       float *y, float *restrict tmp)
{
    float *a = tmp; /* a[xi][c][t]: 8 arrays of TW */
    for (int xi = 0; xi < 4; xi++) {
        const float *restrict m0 = m + (size_t)(4 * xi) * kstride, *restrict m1 = m0 + kstride,
                              *restrict m2 = m1 + kstride, *restrict m3 = m2 + kstride;
        float *restrict a0 = a + (size_t)(2 * xi) * TW, *restrict a1 = a0 + TW;
        for (int t = 0; t < TW; t++) {
            a0[t] = m0[t] + m1[t] + m2[t];
            a1[t] = m1[t] - m2[t] - m3[t];
        }
    }
    for (int r = 0; r < 2; r++) {
        int oy = 2 * ty + r;
        if (oy >= ho) break;
        float *restrict row = y + (size_t)oy * wo;
        /* row 0: a0 + a1 + a2; row 1: a1 - a2 - a3 (per column parity c) */
        const float *restrict A0 = a, *restrict A1 = a + 2 * (size_t)TW,
                              *restrict A2 = a + 4 * (size_t)TW, *restrict A3 = a + 6 * (size_t)TW;
        int full = wo / 2;
        if (r == 0) {
            for (int t = 0; t < full; t++) {
                row[2 * t] = A0[t] + A1[t] + A2[t];
                row[2 * t + 1] = A0[TW + t] + A1[TW + t] + A2[TW + t];
            }
            if (wo & 1) row[2 * full] = A0[full] + A1[full] + A2[full];
        } else {
            for (int t = 0; t < full; t++) {
                row[2 * t] = A1[t] - A2[t] - A3[t];
                row[2 * t + 1] = A1[TW + t] - A2[TW + t] - A3[TW + t];
            }
            if (wo & 1) row[2 * full] = A1[full] - A2[full] - A3[full];
        }
    }
}

/* dM[k * kstride + tx] = A g A^T of tile row ty's output gradients (plane dy, ho x wo; zero
 * past its edges).  tmp: 4 arrays of TW. */
static void grad_row(const float *dy, int ho, int wo, int ty, int TW, float *restrict dm,
                     size_t kstride, float *restrict tmp)
{
    float *e0 = tmp, *o0 = tmp + TW, *e1 = tmp + 2 * (size_t)TW, *o1 = tmp + 3 * (size_t)TW;
    int full = wo / 2;
    for (int r = 0; r < 2; r++) {
        float *restrict e = r ? e1 : e0, *restrict o = r ? o1 : o0;
        int oy = 2 * ty + r;
        if (oy >= ho) {
            memset(e, 0, (size_t)TW * sizeof(float));
            memset(o, 0, (size_t)TW * sizeof(float));
            continue;
        }
        const float *restrict row = dy + (size_t)oy * wo;
        for (int t = 0; t < full; t++) e[t] = row[2 * t], o[t] = row[2 * t + 1];
        if (wo & 1) e[full] = row[2 * full], o[full] = 0.0f;
    }
    /* b_xi = A rows (1,0), (1,1), (1,-1), (0,-1) down; then the same along */
    for (int xi = 0; xi < 4; xi++) {
        float *restrict d0 = dm + (size_t)(4 * xi) * kstride, *restrict d1 = d0 + kstride,
                        *restrict d2 = d1 + kstride, *restrict d3 = d2 + kstride;
        /* b = ae * row 0 + be * row 1 */
        float ae = xi < 3 ? 1.0f : 0.0f, be = xi == 0 ? 0.0f : xi == 1 ? 1.0f : -1.0f;
        for (int t = 0; t < TW; t++) {
            float ve = ae * e0[t] + be * e1[t], vo = ae * o0[t] + be * o1[t];
            d0[t] = ve, d1[t] = ve + vo, d2[t] = ve - vo, d3[t] = -vo;
        }
    }
}

/* dx (plane h x w) += B dV B^T of tile row ty, the tiles overlapping.  tmp: 16 arrays of TW,
 * then a padded row of 2 TW + 2. */
static void scatter_row(const float *dv, size_t kstride, int TW, int ty, int h, int w, float *dx,
                        float *restrict tmp)
{
    /* down: s[a][nu] = sum_xi B^T[xi][a] v[xi][nu] */
    float *s = tmp;
    for (int nu = 0; nu < 4; nu++) {
        const float *restrict v0 = dv + (size_t)nu * kstride, *restrict v1 = v0 + 4 * kstride,
                              *restrict v2 = v1 + 4 * kstride, *restrict v3 = v2 + 4 * kstride;
        float *restrict s0 = s + (size_t)nu * TW, *restrict s1 = s0 + 4 * (size_t)TW,
                        *restrict s2 = s1 + 4 * (size_t)TW, *restrict s3 = s2 + 4 * (size_t)TW;
        for (int t = 0; t < TW; t++) {
            s0[t] = v0[t];
            s1[t] = v1[t] - v2[t] + v3[t];
            s2[t] = v1[t] + v2[t] - v0[t];
            s3[t] = -v3[t];
        }
    }
    float *restrict P = tmp + 16 * (size_t)TW; /* P[j]: column j - 1 */
    for (int a = 0; a < 4; a++) {
        int iy = 2 * ty - 1 + a;
        if (iy < 0 || iy >= h) continue;
        const float *restrict u0 = s + (size_t)(4 * a) * TW, *restrict u1 = u0 + TW,
                              *restrict u2 = u1 + TW, *restrict u3 = u2 + TW;
        /* along: q0 = u0, q1 = u1 - u2 + u3, q2 = u1 + u2 - u0, q3 = -u3; tile t adds q_b at
         * P[2 t + b] */
        P[0] = u0[0];
        P[1] = u1[0] - u2[0] + u3[0];
        for (int t = 1; t < TW; t++) {
            P[2 * t] = u0[t] + (u1[t - 1] + u2[t - 1] - u0[t - 1]);
            P[2 * t + 1] = (u1[t] - u2[t] + u3[t]) - u3[t - 1];
        }
        P[2 * TW] = u1[TW - 1] + u2[TW - 1] - u0[TW - 1];
        P[2 * TW + 1] = -u3[TW - 1];
        float *restrict row = dx + (size_t)iy * w;
        for (int j = 0; j < w; j++) row[j] += P[j + 1];
    }
}

/* ---- F(4x4, 3x3): 6x6 input tiles, 4x4 outputs, Lavin and Gray's points 0, +-1, +-2, inf ----
 * B^T, A^T and G of one vector; the 2-D transforms apply them down, then along (or the
 * reverse), as F(2x2, 3x3)'s above. */

/* Macros, not functions: the loops around them vectorise only with the results in scalars. */
#define BT6(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5)                                       \
    do {                                                                                          \
        float a_ = (d4) - 4.0f * (d2), b_ = (d3) - 4.0f * (d1), c_ = (d4) - (d2),                  \
              e_ = 2.0f * ((d3) - (d1));                                                          \
        (o0) = 4.0f * (d0) - 5.0f * (d2) + (d4);                                                  \
        (o1) = a_ + b_;                                                                           \
        (o2) = a_ - b_;                                                                           \
        (o3) = c_ + e_;                                                                           \
        (o4) = c_ - e_;                                                                           \
        (o5) = 4.0f * (d1) - 5.0f * (d3) + (d5);                                                  \
    } while (0)

/* B (B^T's transpose) of one vector */
#define B6(v0, v1, v2, v3, v4, v5, o0, o1, o2, o3, o4, o5)                                        \
    do {                                                                                          \
        float p_ = (v1) + (v2), m_ = (v1) - (v2), q_ = (v3) + (v4), r_ = (v3) - (v4);             \
        (o0) = 4.0f * (v0);                                                                       \
        (o1) = 4.0f * ((v5) - m_) - 2.0f * r_;                                                    \
        (o2) = -5.0f * (v0) - 4.0f * p_ - q_;                                                     \
        (o3) = m_ + 2.0f * r_ - 5.0f * (v5);                                                      \
        (o4) = (v0) + p_ + q_;                                                                    \
        (o5) = (v5);                                                                              \
    } while (0)

#define AT6(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)                                               \
    do {                                                                                          \
        float s12_ = (m1) + (m2), d12_ = (m1) - (m2), s34_ = (m3) + (m4), d34_ = (m3) - (m4);     \
        (o0) = (m0) + s12_ + s34_;                                                                \
        (o1) = d12_ + 2.0f * d34_;                                                                \
        (o2) = s12_ + 4.0f * s34_;                                                                \
        (o3) = d12_ + 8.0f * d34_ + (m5);                                                         \
    } while (0)

/* A (A^T's transpose) of one 4-vector */
#define A6(e0, e1, e2, e3, o0, o1, o2, o3, o4, o5)                                                \
    do {                                                                                          \
        float s02_ = (e0) + (e2), s13_ = (e1) + (e3), t02_ = (e0) + 4.0f * (e2),                  \
              t13_ = 2.0f * (e1) + 8.0f * (e3);                                                   \
        (o0) = (e0);                                                                              \
        (o1) = s02_ + s13_;                                                                       \
        (o2) = s02_ - s13_;                                                                       \
        (o3) = t02_ + t13_;                                                                       \
        (o4) = t02_ - t13_;                                                                       \
        (o5) = (e3);                                                                              \
    } while (0)

/* A^T's rows, for the output transform's second direction */
static const float AT4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

static inline void g6(float w0, float w1, float w2, float o[6])
{
    float s = w0 + w2;
    o[0] = 0.25f * w0;
    o[1] = (-1.0f / 6) * (s + w1);
    o[2] = (-1.0f / 6) * (s - w1);
    o[3] = (1.0f / 24) * w0 + (1.0f / 12) * w1 + (1.0f / 6) * w2;
    o[4] = (1.0f / 24) * w0 - (1.0f / 12) * w1 + (1.0f / 6) * w2;
    o[5] = w2;
}

/* G^T of one 6-vector */
static inline void gt6(const float u[6], float o[3])
{
    float s = u[1] + u[2], d = u[2] - u[1], p = u[3] + u[4], q = u[3] - u[4];
    o[0] = 0.25f * u[0] - (1.0f / 6) * s + (1.0f / 24) * p;
    o[1] = (1.0f / 6) * d + (1.0f / 12) * q;
    o[2] = (1.0f / 6) * (p - s) + u[5];
}

/* The loops below take their arrays as restrict parameters: GCC vectorises them only so. */

/* o_q[j] = (B^T (r_0[j] .. r_5[j]))_q, j < n */
static void bt6_down(const float *restrict r0, const float *restrict r1, const float *restrict r2,
                     const float *restrict r3, const float *restrict r4, const float *restrict r5,
                     int n, float *restrict o0, float *restrict o1, float *restrict o2,
                     float *restrict o3, float *restrict o4, float *restrict o5)
{
    for (int j = 0; j < n; j++)
        BT6(r0[j], r1[j], r2[j], r3[j], r4[j], r5[j], o0[j], o1[j], o2[j], o3[j], o4[j], o5[j]);
}

/* Tile t of a row s reads s[4 t .. 4 t + 5]: ph_c[t] = s[4 t + c] (t <= TW), then
 * v_nu[t] = (B^T (ph_0[t], ph_1[t], ph_2[t], ph_3[t], ph_0[t + 1], ph_1[t + 1]))_nu. */
static void bt6_along(const float *restrict s, int TW, float *restrict ph, float *restrict v0,
                      float *restrict v1, float *restrict v2, float *restrict v3,
                      float *restrict v4, float *restrict v5)
{
    const size_t n = (size_t)TW + 1;
    float *restrict p0 = ph, *restrict p1 = ph + n, *restrict p2 = ph + 2 * n,
                    *restrict p3 = ph + 3 * n;
    for (int t = 0; t < TW; t++)
        p0[t] = s[4 * t], p1[t] = s[4 * t + 1], p2[t] = s[4 * t + 2], p3[t] = s[4 * t + 3];
    p0[TW] = s[4 * TW], p1[TW] = s[4 * TW + 1];
    for (int t = 0; t < TW; t++)
        BT6(p0[t], p1[t], p2[t], p3[t], p0[t + 1], p1[t + 1], v0[t], v1[t], v2[t], v3[t], v4[t],
            v5[t]);
}

/* V[k * kstride + tx] of tile row ty of plane p (h x w), tx < TW.  P: 6 rows of 4 TW + 2, then
 * 4 of TW + 1. */
static void input_row4(const float *p, int h, int w, int ty, int TW, float *restrict v,
                       size_t kstride, float *restrict P)
{
    const size_t pl = (size_t)4 * TW + 2;
    const float *r[6];
    int inside = 1;
    for (int i = 0; i < 6; i++) {
        int iy = 4 * ty - 1 + i;
        r[i] = iy >= 0 && iy < h ? p + (size_t)iy * w : NULL;
        inside &= r[i] != NULL;
    }
    for (int q = 0; q < 6; q++) {
        P[q * pl] = 0.0f;
        for (size_t j = (size_t)w + 1; j < pl; j++) P[q * pl + j] = 0.0f;
    }
    /* down the rows: P[q pl + j + 1] is column j */
    float *P0 = P + 1;
    if (inside)
        bt6_down(r[0], r[1], r[2], r[3], r[4], r[5], w, P0, P0 + pl, P0 + 2 * pl, P0 + 3 * pl,
                 P0 + 4 * pl, P0 + 5 * pl);
    else
        for (int j = 0; j < w; j++) {
            float d[6];
            for (int i = 0; i < 6; i++) d[i] = r[i] ? r[i][j] : 0.0f;
            BT6(d[0], d[1], d[2], d[3], d[4], d[5], P0[j], P0[pl + j], P0[2 * pl + j],
                P0[3 * pl + j], P0[4 * pl + j], P0[5 * pl + j]);
        }
    /* along each row */
    for (int xi = 0; xi < 6; xi++) {
        float *v0 = v + (size_t)(6 * xi) * kstride;
        bt6_along(P + xi * pl, TW, P + 6 * pl, v0, v0 + kstride, v0 + 2 * kstride,
                  v0 + 3 * kstride, v0 + 4 * kstride, v0 + 5 * kstride);
    }
}

/* a_c[t] = (A^T (m_0[t] .. m_5[t]))_c */
static void at6_along(const float *restrict m0, const float *restrict m1, const float *restrict m2,
                      const float *restrict m3, const float *restrict m4, const float *restrict m5,
                      int TW, float *restrict a0, float *restrict a1, float *restrict a2,
                      float *restrict a3)
{
    for (int t = 0; t < TW; t++)
        AT6(m0[t], m1[t], m2[t], m3[t], m4[t], m5[t], a0[t], a1[t], a2[t], a3[t]);
}

/* row[4 t + c] = sum_xi A^T[r][xi] a[xi][c][t] (a[xi][c] at a + (4 xi + c) TW), 4 t + c < wo */
static void at6_down(const float *restrict a, int TW, const float *restrict k, int wo,
                     float *restrict row)
{
    const float c0 = k[0], c1 = k[1], c2 = k[2], c3 = k[3], c4 = k[4], c5 = k[5];
    const size_t s = 4 * (size_t)TW; /* from a[xi] to a[xi + 1] */
    int full = wo / 4, rest = wo % 4;
    for (int t = 0; t < full; t++)
        for (int c = 0; c < 4; c++) {
            const float *q = a + (size_t)c * TW + t;
            row[4 * t + c] = c0 * q[0] + c1 * q[s] + c2 * q[2 * s] + c3 * q[3 * s] +
                             c4 * q[4 * s] + c5 * q[5 * s];
        }
    for (int c = 0; c < rest; c++) {
        const float *q = a + (size_t)c * TW + full;
        row[4 * full + c] = c0 * q[0] + c1 * q[s] + c2 * q[2 * s] + c3 * q[3 * s] +
                            c4 * q[4 * s] + c5 * q[5 * s];
    }
}

/* Output rows 4 ty .. 4 ty + 3 (those < ho) of plane y (ho x wo) = A^T M A of tile row ty.
 * tmp: 24 arrays of TW. */
static void output_row4(const float *m, size_t kstride, int TW, int ty, int ho, int wo,
                        float *y, float *restrict tmp)
{
    /* along: a[xi][c][t] = sum_nu M[6 xi + nu] A[nu][c] */
    for (int xi = 0; xi < 6; xi++) {
        const float *m0 = m + (size_t)(6 * xi) * kstride;
        float *a0 = tmp + (size_t)(4 * xi) * TW;
        at6_along(m0, m0 + kstride, m0 + 2 * kstride, m0 + 3 * kstride, m0 + 4 * kstride,
                  m0 + 5 * kstride, TW, a0, a0 + TW, a0 + 2 * TW, a0 + 3 * TW);
    }
    for (int r = 0; r < 4 && 4 * ty + r < ho; r++)
        at6_down(tmp, TW, AT4[r], wo, y + (size_t)(4 * ty + r) * wo);
}

/* dM_nu[t] = (A (b_0, b_1, b_2, b_3))_nu, b_c = sum_r k_r e[r][c][t] (e[r][c] at
 * e + (4 r + c) n), t < TW */
static void a6_strided(const float *restrict e, int TW, size_t n, float k0, float k1, float k2,
                       float k3, float *restrict d0, float *restrict d1, float *restrict d2,
                       float *restrict d3, float *restrict d4, float *restrict d5)
{
    const size_t s = 4 * n;
    for (int t = 0; t < TW; t++) {
        float b0 = k0 * e[t] + k1 * e[s + t] + k2 * e[2 * s + t] + k3 * e[3 * s + t];
        float b1 = k0 * e[n + t] + k1 * e[s + n + t] + k2 * e[2 * s + n + t] + k3 * e[3 * s + n + t];
        float b2 = k0 * e[2 * n + t] + k1 * e[s + 2 * n + t] + k2 * e[2 * s + 2 * n + t] +
                   k3 * e[3 * s + 2 * n + t];
        float b3 = k0 * e[3 * n + t] + k1 * e[s + 3 * n + t] + k2 * e[2 * s + 3 * n + t] +
                   k3 * e[3 * s + 3 * n + t];
        A6(b0, b1, b2, b3, d0[t], d1[t], d2[t], d3[t], d4[t], d5[t]);
    }
}

static void a6_tiles(const float *restrict e, int TW, float k0, float k1, float k2, float k3,
                     float *restrict d0, float *restrict d1, float *restrict d2,
                     float *restrict d3, float *restrict d4, float *restrict d5)
{
    a6_strided(e, TW, (size_t)TW, k0, k1, k2, k3, d0, d1, d2, d3, d4, d5);
}

/* a6_strided over a chunk's arrays (WCHUNK apart) */
static void a6_chunk(const float *restrict e, int nt, float k0, float k1, float k2, float k3,
                     float *restrict d0, float *restrict d1, float *restrict d2,
                     float *restrict d3, float *restrict d4, float *restrict d5)
{
    a6_strided(e, nt, WCHUNK, k0, k1, k2, k3, d0, d1, d2, d3, d4, d5);
}

/* e[c][t] = row[4 t + c] (zero from column wo on), TW tiles */
static void deinterleave4(const float *restrict row, int wo, int TW, float *restrict e)
{
    float *restrict e0 = e, *restrict e1 = e + TW, *restrict e2 = e + 2 * (size_t)TW,
                    *restrict e3 = e + 3 * (size_t)TW;
    int full = wo / 4, rest = wo % 4;
    for (int t = 0; t < full; t++)
        e0[t] = row[4 * t], e1[t] = row[4 * t + 1], e2[t] = row[4 * t + 2], e3[t] = row[4 * t + 3];
    if (rest)
        for (int c = 0; c < 4; c++) e[(size_t)c * TW + full] = c < rest ? row[4 * full + c] : 0.0f;
}

/* dM[k * kstride + tx] = A g A^T of tile row ty's output gradients (plane dy, ho x wo; zero
 * past its edges).  tmp: 16 arrays of TW. */
static void grad_row4(const float *dy, int ho, int wo, int ty, int TW, float *restrict dm,
                      size_t kstride, float *restrict tmp)
{
    /* e[r][c][t] = dy[4 ty + r][4 t + c] */
    for (int r = 0; r < 4; r++) {
        float *e = tmp + (size_t)(4 * r) * TW;
        int oy = 4 * ty + r;
        if (oy < ho) deinterleave4(dy + (size_t)oy * wo, wo, TW, e);
        else memset(e, 0, (size_t)4 * TW * sizeof(float));
    }
    /* down: b_c = sum_r A[xi][r] e[r][c]; along: dM[6 xi + nu] = sum_c A[nu][c] b_c */
    for (int xi = 0; xi < 6; xi++) {
        float *d0 = dm + (size_t)(6 * xi) * kstride;
        a6_tiles(tmp, TW, AT4[0][xi], AT4[1][xi], AT4[2][xi], AT4[3][xi], d0, d0 + kstride,
                 d0 + 2 * kstride, d0 + 3 * kstride, d0 + 4 * kstride, d0 + 5 * kstride);
    }
}

/* o_a[t] = (B (v_0[t] .. v_5[t]))_a */
static void b6_tiles(const float *restrict v0, const float *restrict v1, const float *restrict v2,
                     const float *restrict v3, const float *restrict v4, const float *restrict v5,
                     int TW, float *restrict o0, float *restrict o1, float *restrict o2,
                     float *restrict o3, float *restrict o4, float *restrict o5)
{
    for (int t = 0; t < TW; t++)
        B6(v0[t], v1[t], v2[t], v3[t], v4[t], v5[t], o0[t], o1[t], o2[t], o3[t], o4[t], o5[t]);
}

/* P[j + 1] for columns j = 4 t - 1 + b of tiles t whose B dV B^T row is q_b (q_b[t] at
 * q + b TW): neighbouring tiles overlap by two columns. */
static void overlap_add(const float *restrict q, int TW, float *restrict P)
{
    const size_t n = (size_t)TW;
    P[0] = q[0], P[1] = q[n], P[2] = q[2 * n], P[3] = q[3 * n];
    for (int t = 1; t < TW; t++) {
        P[4 * t] = q[t] + q[4 * n + t - 1];
        P[4 * t + 1] = q[n + t] + q[5 * n + t - 1];
        P[4 * t + 2] = q[2 * n + t];
        P[4 * t + 3] = q[3 * n + t];
    }
    P[4 * n] = q[5 * n - 1], P[4 * n + 1] = q[6 * n - 1];
}

static void add_row(const float *restrict p, int w, float *restrict row)
{
    for (int j = 0; j < w; j++) row[j] += p[j];
}

/* dx (plane h x w) += B dV B^T of tile row ty, the tiles overlapping by 2.  tmp: 36 arrays of
 * TW, 6 more, then a padded row of 4 TW + 2. */
static void scatter_row4(const float *dv, size_t kstride, int TW, int ty, int h, int w,
                         float *dx, float *restrict tmp)
{
    /* down: s[a][nu] = sum_xi B[a][xi] dV[xi][nu] */
    const size_t n = (size_t)TW, k6 = 6 * kstride;
    for (int nu = 0; nu < 6; nu++) {
        const float *v0 = dv + (size_t)nu * kstride;
        float *s0 = tmp + nu * n;
        b6_tiles(v0, v0 + k6, v0 + 2 * k6, v0 + 3 * k6, v0 + 4 * k6, v0 + 5 * k6, TW, s0,
                 s0 + 6 * n, s0 + 12 * n, s0 + 18 * n, s0 + 24 * n, s0 + 30 * n);
    }
    float *q = tmp + 36 * n, *P = q + 6 * n; /* P[j]: column j - 1 */
    for (int a = 0; a < 6; a++) {
        int iy = 4 * ty - 1 + a;
        if (iy < 0 || iy >= h) continue;
        const float *u = tmp + (size_t)(6 * a) * n;
        /* along: tile t's B of its row, at P[4 t .. 4 t + 5] */
        b6_tiles(u, u + n, u + 2 * n, u + 3 * n, u + 4 * n, u + 5 * n, TW, q, q + n, q + 2 * n,
                 q + 3 * n, q + 4 * n, q + 5 * n);
        overlap_add(q, TW, P);
        add_row(P + 1, w, dx + (size_t)iy * w);
    }
}

/* ---- F(4x4, 3x3) over a block's tiles at once, for maps of few tiles a row ----
 * The row transforms above vectorise along a row of tiles: on a 7x7 map that is 2 tiles, and
 * their loops cost more than the products.  These gather WCHUNK tiles of a channel (whatever
 * their rows and images) into arrays over the tiles, transform those (the same order of
 * operations: down, then along), and scatter back.  The block's tiles are listed once for all
 * channels (block_tiles): its tile t from tile row r0 is in row r = r0 + t / TW (image r / TH,
 * tile row r % TH), column t % TW. */
typedef struct tile_at {
    int n, ty, tx;
} tile_at;

static void block_tiles(const wino_geom *g, int r0, size_t T, tile_at *at)
{
    for (size_t t = 0; t < T; t++) {
        int r = r0 + (int)(t / (size_t)g->TW);
        at[t] = (tile_at){r / g->TH, r % g->TH, (int)(t % (size_t)g->TW)};
    }
}

/* D[(q r + c) WCHUNK + i] = plane[oy + r][ox + c] (zero outside the h x w plane), r, c < q, for
 * tiles at[i], i < nt; the plane of image n at x + n h w, a tile's corner at
 * (m ty - off, m tx - off). */
static void gather_tiles(const float *x, int h, int w, const tile_at *at, int nt, int q, int m,
                         int off, float *restrict D)
{
    size_t HW = (size_t)h * w;
    for (int i = 0; i < nt; i++) {
        tile_at a = at[i];
        const float *pl = x + (size_t)a.n * HW;
        int oy = m * a.ty - off, ox = m * a.tx - off, inside = ox >= 0 && ox + q <= w;
        for (int r = 0; r < q; r++) {
            float *o = D + (size_t)(q * r) * WCHUNK + i;
            int iy = oy + r;
            if (iy < 0 || iy >= h) {
                for (int c = 0; c < q; c++) o[(size_t)c * WCHUNK] = 0.0f;
                continue;
            }
            const float *row = pl + (size_t)iy * w + ox;
            if (inside)
                for (int c = 0; c < q; c++) o[(size_t)c * WCHUNK] = row[c];
            else
                for (int c = 0; c < q; c++)
                    o[(size_t)c * WCHUNK] = ox + c >= 0 && ox + c < w ? row[c] : 0.0f;
        }
    }
}

/* V[k kstride + t] of the block's tiles t < T of one channel (planes from x).  tmp: 72 WCHUNK. */
static void input_tiles4(const float *x, int h, int w, const tile_at *at, size_t T, float *v,
                         size_t kstride, float *restrict tmp)
{
    float *D = tmp, *E = tmp + 36 * WCHUNK;
    const size_t C = WCHUNK;
    for (size_t t0 = 0; t0 < T; t0 += C) {
        int nt = T - t0 < C ? (int)(T - t0) : (int)C;
        gather_tiles(x, h, w, at + t0, nt, 6, 4, 1, D);
        /* down: E[6 xi + j] = (B^T D[., j])_xi; along: V[6 xi + nu] = (B^T E[6 xi + .])_nu */
        for (int j = 0; j < 6; j++)
            bt6_down(D + j * C, D + (6 + j) * C, D + (12 + j) * C, D + (18 + j) * C,
                     D + (24 + j) * C, D + (30 + j) * C, nt, E + j * C, E + (6 + j) * C,
                     E + (12 + j) * C, E + (18 + j) * C, E + (24 + j) * C, E + (30 + j) * C);
        for (int xi = 0; xi < 6; xi++) {
            const float *e = E + (size_t)(6 * xi) * C;
            float *v0 = v + (size_t)(6 * xi) * kstride + t0;
            bt6_down(e, e + C, e + 2 * C, e + 3 * C, e + 4 * C, e + 5 * C, nt, v0, v0 + kstride,
                     v0 + 2 * kstride, v0 + 3 * kstride, v0 + 4 * kstride, v0 + 5 * kstride);
        }
    }
}

/* o[(4 r + c) WCHUNK + i] = sum_xi A^T[r][xi] a[xi][c][i] (a[xi][c] at a + (4 xi + c) WCHUNK) */
static void at6_tiles_down(const float *restrict a, int nt, float *restrict o)
{
    const size_t C = WCHUNK, s = 4 * C;
    for (int r = 0; r < 4; r++) {
        const float *k = AT4[r];
        for (int c = 0; c < 4; c++) {
            float *restrict oc = o + (size_t)(4 * r + c) * C;
            const float *restrict q = a + (size_t)c * C;
            for (int i = 0; i < nt; i++)
                oc[i] = k[0] * q[i] + k[1] * q[s + i] + k[2] * q[2 * s + i] +
                        k[3] * q[3 * s + i] + k[4] * q[4 * s + i] + k[5] * q[5 * s + i];
        }
    }
}

/* The outputs of the block's tiles t < T of one output channel (planes from y, ho x wo) =
 * A^T M A, M[k] at m + k kstride.  tmp: 40 WCHUNK. */
static void output_tiles4(const float *m, size_t kstride, const tile_at *tiles, size_t T,
                          int ho, int wo, float *y, float *restrict tmp)
{
    float *a = tmp, *o = tmp + 24 * WCHUNK;
    const size_t C = WCHUNK, OHW = (size_t)ho * wo;
    for (size_t t0 = 0; t0 < T; t0 += C) {
        int nt = T - t0 < C ? (int)(T - t0) : (int)C;
        for (int xi = 0; xi < 6; xi++) {
            const float *m0 = m + (size_t)(6 * xi) * kstride + t0;
            float *a0 = a + (size_t)(4 * xi) * C;
            at6_along(m0, m0 + kstride, m0 + 2 * kstride, m0 + 3 * kstride, m0 + 4 * kstride,
                      m0 + 5 * kstride, nt, a0, a0 + C, a0 + 2 * C, a0 + 3 * C);
        }
        at6_tiles_down(a, nt, o);
        for (int i = 0; i < nt; i++) {
            tile_at at = tiles[t0 + (size_t)i];
            float *pl = y + (size_t)at.n * OHW;
            int oy = 4 * at.ty, ox = 4 * at.tx;
            for (int r = 0; r < 4 && oy + r < ho; r++)
                for (int c = 0; c < 4 && ox + c < wo; c++)
                    pl[(size_t)(oy + r) * wo + ox + c] = o[(size_t)(4 * r + c) * C + i];
        }
    }
}

/* dM[k kstride + t] = A g A^T of the block's tiles t < T of one output channel (its output
 * gradients' planes from dy, ho x wo; zero past their edges).  tmp: 16 WCHUNK. */
static void grad_tiles4(const float *dy, int ho, int wo, const tile_at *at, size_t T,
                        float *dm, size_t kstride, float *restrict tmp)
{
    const size_t C = WCHUNK;
    for (size_t t0 = 0; t0 < T; t0 += C) {
        int nt = T - t0 < C ? (int)(T - t0) : (int)C;
        gather_tiles(dy, ho, wo, at + t0, nt, 4, 4, 0, tmp); /* e[r][c] at (4 r + c) C */
        for (int xi = 0; xi < 6; xi++) {
            float *d0 = dm + (size_t)(6 * xi) * kstride + t0;
            a6_chunk(tmp, nt, AT4[0][xi], AT4[1][xi], AT4[2][xi], AT4[3][xi], d0, d0 + kstride,
                     d0 + 2 * kstride, d0 + 3 * kstride, d0 + 4 * kstride, d0 + 5 * kstride);
        }
    }
}

/* dx (planes from dx, h x w) += B dV B^T of the block's tiles t < T of one input channel, the
 * tiles overlapping by 2.  tmp: 72 WCHUNK. */
static void scatter_tiles4(const float *dv, size_t kstride, const tile_at *tiles, size_t T,
                           int h, int w, float *dx, float *restrict tmp)
{
    float *S = tmp, *Q = tmp + 36 * WCHUNK;
    const size_t C = WCHUNK, k6 = 6 * kstride, HW = (size_t)h * w;
    for (size_t t0 = 0; t0 < T; t0 += C) {
        int nt = T - t0 < C ? (int)(T - t0) : (int)C;
        /* down: S[6 a + nu] = sum_xi B[a][xi] dV[xi][nu]; along: Q[6 a + b] = (B S[6 a + .])_b */
        for (int nu = 0; nu < 6; nu++) {
            const float *v0 = dv + (size_t)nu * kstride + t0;
            float *s0 = S + (size_t)nu * C;
            b6_tiles(v0, v0 + k6, v0 + 2 * k6, v0 + 3 * k6, v0 + 4 * k6, v0 + 5 * k6, nt, s0,
                     s0 + 6 * C, s0 + 12 * C, s0 + 18 * C, s0 + 24 * C, s0 + 30 * C);
        }
        for (int a = 0; a < 6; a++) {
            const float *u = S + (size_t)(6 * a) * C;
            float *q = Q + (size_t)(6 * a) * C;
            b6_tiles(u, u + C, u + 2 * C, u + 3 * C, u + 4 * C, u + 5 * C, nt, q, q + C,
                     q + 2 * C, q + 3 * C, q + 4 * C, q + 5 * C);
        }
        for (int i = 0; i < nt; i++) {
            tile_at at = tiles[t0 + (size_t)i];
            float *pl = dx + (size_t)at.n * HW;
            int oy = 4 * at.ty - 1, ox = 4 * at.tx - 1;
            for (int r = 0; r < 6; r++) {
                if (oy + r < 0 || oy + r >= h) continue;
                float *row = pl + (size_t)(oy + r) * w;
                for (int c = 0; c < 6; c++)
                    if (ox + c >= 0 && ox + c < w) row[ox + c] += Q[(size_t)(6 * r + c) * C + i];
            }
        }
    }
}

/* U[k][co][ci] = G g G^T for output channels [c0, c1). */
typedef struct wt_job {
    const vt_conv_desc *d;
    const float *w;
    float *u;
    const float *du; /* dw: the shares' dU, summed in order */
    int shares;
    float *dw;
} wt_job;

/* Input channels a weight transform takes at once, as vectors (arrays over the channels). */
enum { WCH = 64 };

/* g[q][j] = the 3x3 filter of output channel co, input channel i0 + j, tap q; j < n */
static void load_filters(const wt_job *J, size_t co, size_t i0, size_t n, float (*g)[WCH])
{
    size_t cin = (size_t)J->d->cin;
    for (size_t j = 0; j < n; j++)
        for (int q = 0; q < 9; q++) g[q][j] = J->w[(co * cin + i0 + j) * 9 + q];
}

/* u[k][j] = dU[k][co][i0 + j] summed over the shares in order, k < K, j < n */
static void sum_shares(const wt_job *J, int K, size_t co, size_t i0, size_t n, float (*u)[WCH])
{
    size_t cin = (size_t)J->d->cin, plane = (size_t)J->d->cout * cin, all = K * plane;
    for (int k = 0; k < K; k++) {
        const float *p = J->du + k * plane + co * cin + i0;
        for (size_t j = 0; j < n; j++) u[k][j] = p[j];
        for (int sh = 1; sh < J->shares; sh++)
            for (size_t j = 0; j < n; j++) u[k][j] += p[sh * all + j];
    }
}

static void weight_rows(void *ctx, size_t c0, size_t c1)
{
    const wt_job *J = ctx;
    size_t cin = (size_t)J->d->cin, plane = (size_t)J->d->cout * cin;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float g[9][WCH], t[4][3][WCH];
            load_filters(J, co, i0, n, g);
            for (int b = 0; b < 3; b++)
                for (size_t j = 0; j < n; j++) {
                    t[0][b][j] = g[b][j];
                    t[1][b][j] = 0.5f * (g[b][j] + g[3 + b][j] + g[6 + b][j]);
                    t[2][b][j] = 0.5f * (g[b][j] - g[3 + b][j] + g[6 + b][j]);
                    t[3][b][j] = g[6 + b][j];
                }
            float *u = J->u + co * cin + i0;
            for (int xi = 0; xi < 4; xi++) {
                float *restrict u0 = u + (4 * xi + 0) * plane, *restrict u1 = u0 + plane,
                                *restrict u2 = u1 + plane, *restrict u3 = u2 + plane;
                for (size_t j = 0; j < n; j++) {
                    u0[j] = t[xi][0][j];
                    u1[j] = 0.5f * (t[xi][0][j] + t[xi][1][j] + t[xi][2][j]);
                    u2[j] = 0.5f * (t[xi][0][j] - t[xi][1][j] + t[xi][2][j]);
                    u3[j] = t[xi][2][j];
                }
            }
        }
}

/* dW[co] = G^T dU G, dU the shares' partial sums added in share order. */
static void weight_grad_rows(void *ctx, size_t c0, size_t c1)
{
    const wt_job *J = ctx;
    size_t cin = (size_t)J->d->cin;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float u[16][WCH], r[4][3][WCH], g[9][WCH];
            sum_shares(J, 16, co, i0, n, u);
            /* along nu: r[xi][b] = sum_nu dU[xi][nu] G[nu][b] */
            for (int xi = 0; xi < 4; xi++)
                for (size_t j = 0; j < n; j++) {
                    float q0 = u[4 * xi][j], q1 = u[4 * xi + 1][j], q2 = u[4 * xi + 2][j],
                          q3 = u[4 * xi + 3][j];
                    r[xi][0][j] = q0 + 0.5f * (q1 + q2);
                    r[xi][1][j] = 0.5f * (q1 - q2);
                    r[xi][2][j] = 0.5f * (q1 + q2) + q3;
                }
            for (int b = 0; b < 3; b++)
                for (size_t j = 0; j < n; j++) {
                    g[b][j] = r[0][b][j] + 0.5f * (r[1][b][j] + r[2][b][j]);
                    g[3 + b][j] = 0.5f * (r[1][b][j] - r[2][b][j]);
                    g[6 + b][j] = 0.5f * (r[1][b][j] + r[2][b][j]) + r[3][b][j];
                }
            for (size_t j = 0; j < n; j++)
                for (int q = 0; q < 9; q++) J->dw[(co * cin + i0 + j) * 9 + q] = g[q][j];
        }
}

/* F(4x4, 3x3)'s U[k][co][ci] = G g G^T, k = 6 xi + nu. */
static void weight_rows4(void *ctx, size_t c0, size_t c1)
{
    const wt_job *J = ctx;
    size_t cin = (size_t)J->d->cin, plane = (size_t)J->d->cout * cin;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float g[9][WCH], t[6][3][WCH];
            load_filters(J, co, i0, n, g);
            for (int b = 0; b < 3; b++) /* down: t[xi][b] = sum_a G[xi][a] g[a][b] */
                for (size_t j = 0; j < n; j++) {
                    float o[6];
                    g6(g[b][j], g[3 + b][j], g[6 + b][j], o);
                    for (int xi = 0; xi < 6; xi++) t[xi][b][j] = o[xi];
                }
            float *u = J->u + co * cin + i0;
            for (int xi = 0; xi < 6; xi++) {
                float *restrict u0 = u + (size_t)(6 * xi) * plane;
                for (size_t j = 0; j < n; j++) {
                    float o[6];
                    g6(t[xi][0][j], t[xi][1][j], t[xi][2][j], o);
                    for (int nu = 0; nu < 6; nu++) u0[nu * plane + j] = o[nu];
                }
            }
        }
}

/* F(4x4, 3x3)'s dW[co] = G^T dU G. */
static void weight_grad_rows4(void *ctx, size_t c0, size_t c1)
{
    const wt_job *J = ctx;
    size_t cin = (size_t)J->d->cin;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float u[36][WCH], r[6][3][WCH];
            sum_shares(J, 36, co, i0, n, u);
            /* along nu: r[xi][b] = sum_nu dU[xi][nu] G[nu][b] */
            for (int xi = 0; xi < 6; xi++)
                for (size_t j = 0; j < n; j++) {
                    float v[6], o[3];
                    for (int nu = 0; nu < 6; nu++) v[nu] = u[6 * xi + nu][j];
                    gt6(v, o);
                    for (int b = 0; b < 3; b++) r[xi][b][j] = o[b];
                }
            for (size_t j = 0; j < n; j++) {
                float *dw = J->dw + (co * cin + i0 + j) * 9;
                for (int b = 0; b < 3; b++) {
                    float v[6], o[3];
                    for (int xi = 0; xi < 6; xi++) v[xi] = r[xi][b][j];
                    gt6(v, o);
                    for (int a = 0; a < 3; a++) dw[3 * a + b] = o[a];
                }
            }
        }
}

/* ---- forward and backward over blocks of tile rows ---- */

typedef struct wino_job {
    const vt_conv_desc *d;
    wino_geom g;
    int parts;
    int blocks;         /* forward: the batch's tile rows in this many blocks of equal rows */
    const float *x, *dy, *u;
    float *y, *dx, *du; /* du: the shares' partial dU, share p's at p x g.u */
    float *scratch;     /* threads x g.per_thread */
    vt_cpu_gemm_fn gemm; /* tile_gemm's */
    /* U[k] (forward) or U[k]^T (backward) packed for the products (vt_sgemm_pack_a), upk floats
     * apart; NULL: the products pack U themselves (gemm) */
    float *up;
    size_t upk;
} wino_job;

/* The transforms of a tile size: of one channel over one row of tiles, and of the weights. */
typedef struct wino_kind {
    void (*input_row)(const float *p, int h, int w, int ty, int TW, float *restrict v,
                      size_t kstride, float *restrict P);
    void (*output_row)(const float *m, size_t kstride, int TW, int ty, int ho, int wo, float *y,
                       float *restrict tmp);
    void (*grad_row)(const float *dy, int ho, int wo, int ty, int TW, float *restrict dm,
                     size_t kstride, float *restrict tmp);
    void (*scatter_row)(const float *dv, size_t kstride, int TW, int ty, int h, int w, float *dx,
                        float *restrict tmp);
    void (*weights)(void *ctx, size_t c0, size_t c1);
    void (*weight_grads)(void *ctx, size_t c0, size_t c1);
} wino_kind;

static const wino_kind WINO2 = {input_row,   output_row,  grad_row,
                                scatter_row, weight_rows, weight_grad_rows};
static const wino_kind WINO4 = {input_row4,   output_row4,  grad_row4,
                                scatter_row4, weight_rows4, weight_grad_rows4};

static const wino_kind *kind(const wino_geom *g) { return g->M == 4 ? &WINO4 : &WINO2; }

/* A block of the batch: tile rows [r0, r1) (row r: image r / TH, tile row r % TH), T tiles;
 * where the transforms are chunked, its tiles listed (block_tiles). */
typedef struct wino_block {
    int r0, r1;
    size_t T;
    const tile_at *tiles;
} wino_block;

/* The block's transforms, each over every channel: by chunks of tiles or by rows of tiles. */

/* V[k][ci][t] from the input planes, ci in [c0, c1) */
static void transform_inputs(const wino_job *J, const wino_block *B, float *V, float *tmp,
                             int c0, int c1)
{
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    size_t HW = (size_t)d->h * d->w, T = B->T, kstride = (size_t)d->cin * T;
    for (int ci = c0; ci < c1; ci++) {
        const float *x = J->x + (size_t)ci * d->n * HW;
        float *v = V + (size_t)ci * T;
        if (g->chunked) {
            input_tiles4(x, d->h, d->w, B->tiles, T, v, kstride, tmp);
            continue;
        }
        for (int r = B->r0; r < B->r1; r++)
            kind(g)->input_row(x + (size_t)(r / g->TH) * HW, d->h, d->w, r % g->TH, g->TW,
                               v + (size_t)(r - B->r0) * g->TW, kstride, tmp);
    }
}

/* the output planes from M[k][co][t], co in [c0, c1) */
static void transform_outputs(const wino_job *J, const wino_block *B, const float *M,
                              float *tmp, int c0, int c1)
{
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    size_t OHW = (size_t)d->ho * d->wo, T = B->T, kstride = (size_t)d->cout * T;
    for (int co = c0; co < c1; co++) {
        const float *m = M + (size_t)co * T;
        float *y = J->y + (size_t)co * d->n * OHW;
        if (g->chunked) {
            output_tiles4(m, kstride, B->tiles, T, d->ho, d->wo, y, tmp);
            continue;
        }
        for (int r = B->r0; r < B->r1; r++)
            kind(g)->output_row(m + (size_t)(r - B->r0) * g->TW, kstride, g->TW, r % g->TH,
                                d->ho, d->wo, y + (size_t)(r / g->TH) * OHW, tmp);
    }
}

/* dM[k][co][t] from the output gradients' planes, co in [c0, c1) */
static void transform_grads(const wino_job *J, const wino_block *B, float *M, float *tmp, int c0,
                            int c1)
{
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    size_t OHW = (size_t)d->ho * d->wo, T = B->T, kstride = (size_t)d->cout * T;
    for (int co = c0; co < c1; co++) {
        const float *dy = J->dy + (size_t)co * d->n * OHW;
        float *m = M + (size_t)co * T;
        if (g->chunked) {
            grad_tiles4(dy, d->ho, d->wo, B->tiles, T, m, kstride, tmp);
            continue;
        }
        for (int r = B->r0; r < B->r1; r++)
            kind(g)->grad_row(dy + (size_t)(r / g->TH) * OHW, d->ho, d->wo, r % g->TH, g->TW,
                              m + (size_t)(r - B->r0) * g->TW, kstride, tmp);
    }
}

/* dx's planes += the transforms of dV[k][ci][t], ci in [c0, c1) */
static void scatter_grads(const wino_job *J, const wino_block *B, const float *V, float *tmp,
                          int c0, int c1)
{
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    size_t HW = (size_t)d->h * d->w, T = B->T, kstride = (size_t)d->cin * T;
    for (int ci = c0; ci < c1; ci++) {
        const float *v = V + (size_t)ci * T;
        float *dx = J->dx + (size_t)ci * d->n * HW;
        if (g->chunked) {
            scatter_tiles4(v, kstride, B->tiles, T, d->h, d->w, dx, tmp);
            continue;
        }
        for (int r = B->r0; r < B->r1; r++)
            kind(g)->scatter_row(v + (size_t)(r - B->r0) * g->TW, kstride, g->TW, r % g->TH,
                                 d->h, d->w, dx + (size_t)(r / g->TH) * HW, tmp);
    }
}

/* Thread t's scratch: V (K x cin x tmax), M (K x cout x tmax), the transforms' temps, and
 * where chunked, after 72 WCHUNK temps, room for a block's tiles (NULL otherwise). */
static void scratch_of(const wino_job *J, int t, float **V, float **M, float **tmp,
                       tile_at **tiles)
{
    *V = J->scratch + (size_t)t * J->g.per_thread;
    *M = *V + (size_t)J->g.K * J->d->cin * J->g.tmax;
    *tmp = *M + (size_t)J->g.K * J->d->cout * J->g.tmax;
    *tiles = J->g.chunked ? (tile_at *)(void *)(*tmp + 72 * WCHUNK) : NULL;
}

/* the calling thread's */
static void thread_scratch(const wino_job *J, float **V, float **M, float **tmp, tile_at **tiles)
{
    scratch_of(J, vt_pool_thread(), V, M, tmp, tiles);
}

/* Block [r0, r1): its tiles listed where chunked (into the thread's `tiles`) */
static wino_block make_block(const wino_geom *g, int r0, int r1, tile_at *tiles)
{
    wino_block B = {r0, r1, (size_t)(r1 - r0) * g->TW, tiles};
    if (tiles) block_tiles(g, r0, B.T, tiles);
    return B;
}

/* The forward's products of a block for k in [k0, k1): M[k] = U[k] V[k] */
static void forward_products(const wino_job *J, const wino_block *B, const float *V, float *M,
                             int k0, int k1)
{
    const vt_conv_desc *d = J->d;
    int T = (int)B->T;
    for (int k = k0; k < k1; k++) {
        const float *Vk = V + (size_t)k * d->cin * T;
        float *Mk = M + (size_t)k * d->cout * T;
        if (!J->up || !vt_sgemm_packed_a(d->cout, T, d->cin, 1.0f, J->up + (size_t)k * J->upk, 0,
                                         Vk, T, 0.0f, Mk, T))
            J->gemm(NULL, 0, 0, d->cout, T, d->cin, 1.0f, J->u + (size_t)k * J->g.uk, d->cin, Vk,
                    T, 0.0f, Mk, T);
    }
}

static void forward_parts(void *ctx, size_t p0, size_t p1)
{
    const wino_job *J = ctx;
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    float *V, *M, *tmp;
    tile_at *tiles;
    thread_scratch(J, &V, &M, &tmp, &tiles);
    int all = d->n * g->TH, blocks = J->blocks;
    for (size_t p = p0; p < p1; p++) {
        int b0 = (int)((long long)blocks * p / J->parts),
            b1 = (int)((long long)blocks * (p + 1) / J->parts);
        for (int blk = b0; blk < b1; blk++) {
            /* blocks of equal rows (at most g->rows), not full ones and a remainder: a
             * remainder of a row or two made products under 32 tiles wide */
            int r0 = (int)((long long)all * blk / blocks),
                r1 = (int)((long long)all * (blk + 1) / blocks);
            wino_block B = make_block(g, r0, r1, tiles);
            transform_inputs(J, &B, V, tmp, 0, d->cin);
            forward_products(J, &B, V, M, 0, g->K);
            transform_outputs(J, &B, M, tmp, 0, d->cout);
        }
    }
}

/* The backward's products of a block for k in [k0, k1): dU[k] = (first block) or += dM[k]
 * V[k]^T into du, and where dx is wanted dV[k] = U[k]^T dM[k] over V[k] (this k's V is no
 * longer needed). */
static void backward_products(const wino_job *J, const wino_block *B, float *V, const float *M,
                              float *du, int first, int k0, int k1)
{
    const vt_conv_desc *d = J->d;
    int T = (int)B->T;
    for (int k = k0; k < k1; k++) {
        float *Vk = V + (size_t)k * d->cin * T;
        const float *Mk = M + (size_t)k * d->cout * T;
        J->gemm(NULL, 0, 1, d->cout, d->cin, T, 1.0f, Mk, T, Vk, T, first ? 0.0f : 1.0f,
                du + (size_t)k * J->g.uk, d->cin);
        if (J->dx && (!J->up || !vt_sgemm_packed_a(d->cin, T, d->cout, 1.0f,
                                                   J->up + (size_t)k * J->upk, 0, Mk, T, 0.0f,
                                                   Vk, T)))
            J->gemm(NULL, 1, 0, d->cin, T, d->cout, 1.0f, J->u + (size_t)k * J->g.uk, d->cin, Mk,
                    T, 0.0f, Vk, T);
    }
}

/* Share p's tile rows in blocks of equal rows, at most g->rows (see forward_parts) */
static int share_blocks(const wino_geom *g, int nrows) { return (nrows + g->rows - 1) / g->rows; }

static wino_block share_block(const wino_geom *g, int start, int nrows, int nblk, int blk,
                              tile_at *tiles)
{
    return make_block(g, start + (int)((long long)nrows * blk / nblk),
                      start + (int)((long long)nrows * (blk + 1) / nblk), tiles);
}

static void backward_parts(void *ctx, size_t p0, size_t p1)
{
    const wino_job *J = ctx;
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    float *V, *M, *tmp;
    tile_at *tiles;
    thread_scratch(J, &V, &M, &tmp, &tiles);
    for (size_t p = p0; p < p1; p++) {
        int i0 = (int)((long long)d->n * p / J->parts),
            i1 = (int)((long long)d->n * (p + 1) / J->parts);
        int start = i0 * g->TH, nrows = i1 * g->TH - start, nblk = share_blocks(g, nrows);
        for (int blk = 0; blk < nblk; blk++) {
            wino_block B = share_block(g, start, nrows, nblk, blk, tiles);
            transform_grads(J, &B, M, tmp, 0, d->cout);
            transform_inputs(J, &B, V, tmp, 0, d->cin);
            backward_products(J, &B, V, M, J->du + p * g->u, blk == 0, 0, g->K);
            if (J->dx) scatter_grads(J, &B, V, tmp, 0, d->cin);
        }
    }
}

/* Where whole shares would leave threads idle (inner_applies): the batch's blocks one after
 * another, each step over the pool.  The transforms split by channel, the products by k; V and
 * M are the first thread's scratch, shared; the backward sums into one dU. */
typedef struct inner_job {
    const wino_job *J;
    wino_block B;
    float *V, *M;
    int first;
} inner_job;

static float *thread_tmp(const wino_job *J)
{
    float *V, *M, *tmp;
    tile_at *tiles;
    thread_scratch(J, &V, &M, &tmp, &tiles);
    return tmp;
}

/* forward: V's channels; the products; the outputs' channels */
static void inner_inputs(void *ctx, size_t c0, size_t c1)
{
    const inner_job *I = ctx;
    transform_inputs(I->J, &I->B, I->V, thread_tmp(I->J), (int)c0, (int)c1);
}

static void inner_forward_products(void *ctx, size_t k0, size_t k1)
{
    const inner_job *I = ctx;
    forward_products(I->J, &I->B, I->V, I->M, (int)k0, (int)k1);
}

static void inner_outputs(void *ctx, size_t c0, size_t c1)
{
    const inner_job *I = ctx;
    transform_outputs(I->J, &I->B, I->M, thread_tmp(I->J), (int)c0, (int)c1);
}

/* backward: items [0, cout) dM's channels, [cout, cout + cin) V's; the products; dx's */
static void inner_grads(void *ctx, size_t c0, size_t c1)
{
    const inner_job *I = ctx;
    size_t cout = (size_t)I->J->d->cout;
    float *tmp = thread_tmp(I->J);
    if (c0 < cout) transform_grads(I->J, &I->B, I->M, tmp, (int)c0, (int)(c1 < cout ? c1 : cout));
    if (c1 > cout)
        transform_inputs(I->J, &I->B, I->V, tmp, (int)(c0 > cout ? c0 - cout : 0),
                         (int)(c1 - cout));
}

static void inner_backward_products(void *ctx, size_t k0, size_t k1)
{
    const inner_job *I = ctx;
    backward_products(I->J, &I->B, I->V, I->M, I->J->du, I->first, (int)k0, (int)k1);
}

static void inner_scatter(void *ctx, size_t c0, size_t c1)
{
    const inner_job *I = ctx;
    scatter_grads(I->J, &I->B, I->V, thread_tmp(I->J), (int)c0, (int)c1);
}

static void run_inner(vt_backend *b, const wino_job *J, int backward)
{
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    /* V, M and the block's tiles: the first thread's (its temps stay its own) */
    inner_job I = {.J = J};
    float *tmp0;
    tile_at *tiles;
    scratch_of(J, 0, &I.V, &I.M, &tmp0, &tiles);
    int nrows = d->n * g->TH, nblk = share_blocks(g, nrows);
    for (int blk = 0; blk < nblk; blk++) {
        I.B = share_block(g, 0, nrows, nblk, blk, tiles);
        I.first = blk == 0;
        size_t grain = vt_cpu_grain(I.B.T * (size_t)g->K);
        if (!backward) {
            vt_pool_run(POOL(b), (size_t)d->cin, grain, inner_inputs, &I);
            vt_pool_run(POOL(b), (size_t)g->K, 1, inner_forward_products, &I);
            vt_pool_run(POOL(b), (size_t)d->cout, grain, inner_outputs, &I);
            continue;
        }
        vt_pool_run(POOL(b), (size_t)(d->cout + d->cin), grain, inner_grads, &I);
        vt_pool_run(POOL(b), (size_t)g->K, 1, inner_backward_products, &I);
        if (J->dx) vt_pool_run(POOL(b), (size_t)d->cin, grain, inner_scatter, &I);
    }
}

static size_t weight_grain(const vt_conv_desc *d)
{
    size_t per = (size_t)d->cin * 160; /* about the flops of one output channel's transforms */
    size_t g = GRAIN / (per ? per : 1);
    return g ? g : 1;
}

/* Where the products take a packed operand (fp32 through vt_sgemm): U[k] (or U[k]^T)
 * packed at `at` once for all the blocks of tiles, which otherwise each packed it again (a
 * scalar strided copy: 6 % of a 64 -> 96 conv at 40x40, perf).  Returns where the threads'
 * scratch starts after it. */
static float *pack_u(vt_backend *b, wino_job *J, float *at, int transposed)
{
    const vt_conv_desc *d = J->d;
    J->up = NULL;
    J->upk = vt_sgemm_pack_a_floats(transposed ? d->cin : d->cout, transposed ? d->cout : d->cin);
    if (J->gemm != vt_sgemm || !J->upk) return at;
    J->up = at; /* U[k] is cout x cin; the backward's product takes U[k]^T */
    vt_sgemm_pack_a_many(POOL(b), J->g.K, transposed, transposed ? d->cin : d->cout,
                         transposed ? d->cout : d->cin, J->u, J->g.uk, d->cin, at, J->upk);
    return at + packed_u(d, &J->g);
}

void vt_cpu_wino_forward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                         float *y, void *ws)
{
    int tile = vt_cpu_wino_tile(b, d);
    wino_job J = {.d = d, .g = geom(d, tile, forward_blocks(b)), .x = x, .u = ws, .y = y,
                  .gemm = tile_gemm(b, tile)};
    wt_job W = {d, w, (float *)ws, NULL, 0, NULL};
    vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), kind(&J.g)->weights, &W);
    /* blocks of at most g.rows tile rows, as many as a multiple of the threads (each thread
     * then gets the same rows: 5 blocks of 16 rows left one thread 48 rows against 32) where
     * the rows allow; where not (5 tile rows on 2 threads), the larger blocks of run_inner */
    int all = d->n * J.g.TH, th = vt_pool_threads(POOL(b));
    int blocks = (all + J.g.rows - 1) / J.g.rows;
    blocks = (blocks + th - 1) / th * th;
    J.blocks = blocks < all ? blocks : all;
    J.parts = J.blocks < 4 * th ? J.blocks : 4 * th;
    int inner = inner_applies(th, J.blocks, J.g.K);
    if (inner) J.g = geom(d, tile, 1);
    J.scratch = pack_u(b, &J, (float *)ws + J.g.u, 0);
    if (inner)
        run_inner(b, &J, 0);
    else
        vt_pool_run(POOL(b), (size_t)J.parts, 1, forward_parts, &J);
}

void vt_cpu_wino_backward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, void *ws)
{
    int tile = vt_cpu_wino_tile(b, d);
    wino_job J = {.d = d, .g = geom(d, tile, 1), .x = x, .dy = dy, .u = ws, .dx = dx,
                  .gemm = tile_gemm(b, tile)};
    J.parts = backward_shares(vt_pool_threads(POOL(b)), d, &J.g);
    J.du = (float *)ws + J.g.u;
    wt_job W = {d, w, (float *)ws, J.du, J.parts, dw};
    if (dx) vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), kind(&J.g)->weights, &W);
    J.scratch = dx ? pack_u(b, &J, J.du + (size_t)J.parts * J.g.u, 1)
                   : J.du + (size_t)J.parts * J.g.u;
    if (backward_inner_applies(vt_pool_threads(POOL(b)), d, &J.g))
        run_inner(b, &J, 1);
    else
        vt_pool_run(POOL(b), (size_t)J.parts, 1, backward_parts, &J);
    vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), kind(&J.g)->weight_grads, &W);
}
