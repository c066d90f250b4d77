/* Winograd F(2x2, 3x3) for the CPU backend's 3x3 stride-1 "same" convolutions (fp32 products).
 *
 * An output tile of 2x2 pixels is A^T [ U (.) V ] A, where V = B^T d B is its 4x4 input tile
 * transformed, U = G g G^T the 3x3 filter transformed, (.) an element-wise product summed over
 * the input channels: 16 products [cout x cin] x [cin x tiles], one per element of the 4x4
 * transform domain, with 16 x cin x cout x tiles multiply-adds where im2col's GEMM does
 * 9 x 4 x cin x cout x tiles: 2.25x fewer.  Backward is the exact adjoint of that forward:
 *   dM = A dY A^T              (the output gradients of a tile, 4x4)
 *   dU = sum over tiles dM V^T (16 products [cout x tiles] x [tiles x cin]), dW = G^T dU G
 *   dV = U^T dM                (16 products), dX += B dV B^T, the tiles' 4x4 overlapping by 2
 * The transforms only add, subtract and halve, so in fp32 the results differ from im2col's by
 * rounding alone (test_backend_cpu bounds them).
 *
 * Work comes in blocks of whole rows of tiles (an image's tile row: its 2 output rows), sized
 * so a block's transformed inputs and outputs (16 x (cin + cout) x tiles floats) stay in the
 * cache; a thread transforms its block into its own scratch and calls single-threaded GEMMs on
 * it.  Backward shares are whole images (no two threads add into the same dX rows), each with
 * its own partial dU, added in share order: bitwise reproducible for a given thread count.
 * Layouts: x, y, dy, dx CNHW as the rest of the backend; V[k][ci][t], M[k][co][t] (k = 4 xi +
 * nu), U and dU [k][co][ci]. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_impl.h"
#include "backend/gemm.h"

/* Floats of a block's transformed tiles (16 x (cin + cout) x tiles): 4 MiB, at least one row of
 * tiles; forward cuts smaller blocks where that gives each thread at least two.  On Zen 3,
 * 512K-2M floats measured the same within 10 % forward; backward with 256 channels wanted 1M
 * or more (bench/README.md, "Winograd"). */
enum {
    WINO_BLOCK_FLOATS = 1 << 20,
    WINO_SHARES_PER_THREAD = 2,
    WINO_PARTIALS_MAX = 4 << 20,        /* more shares than threads only within this */
    WINO_THREADS_MAX_FLOATS = 16 << 20, /* 64 MiB of partial dU at most (vt_cpu_wino_fits) */
};

int vt_backend_cpu_winograd_shape(const vt_conv_desc *d)
{
    return d->kh == 3 && d->kw == 3 && d->sh == 1 && d->sw == 1 && d->ph == 1 && d->pw == 1 &&
           d->groups == 1 && d->ho == d->h && d->wo == d->w && d->cin >= VT_WINO_MIN_CHANNELS &&
           d->cout >= VT_WINO_MIN_CHANNELS &&
           (size_t)((d->h + 1) / 2) * (size_t)((d->w + 1) / 2) >= VT_WINO_MIN_TILES;
}

int vt_backend_cpu_winograd_default(void)
{
    const char *e = getenv("VT_CPU_WINOGRAD");
    return !(e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no") ||
                   !strcmp(e, "false")));
}

/* A shape this backend takes: backward's partial dU (one of 16 x cout x cin floats a share, at
 * least a share a thread) within WINO_THREADS_MAX_FLOATS, so that a many-core host does not
 * trade the convolution's memory for it (512 -> 512 channels: up to 4 threads). */
int vt_cpu_wino_fits(const vt_backend *b, const vt_conv_desc *d)
{
    return vt_backend_cpu_winograd_shape(d) &&
           (size_t)vt_pool_threads(POOL(b)) * 16 * d->cout * d->cin <= WINO_THREADS_MAX_FLOATS;
}

int vt_cpu_wino_applies(const vt_backend *b, const vt_conv_desc *d)
{
    const cpu_backend *cb = (const cpu_backend *)b;
    return cb->conv_winograd && cb->gemm == vt_sgemm && !d->keep_columns && vt_cpu_wino_fits(b, d);
}

typedef struct wino_geom {
    int TH, TW;     /* tiles per image: rows, columns */
    int rows;       /* tile rows per block */
    size_t tmax;    /* tiles of the largest block */
    size_t per_thread; /* floats of a thread's scratch */
    size_t u;       /* floats of U (and of one dU) */
} wino_geom;

/* blocks: cut the batch's tile rows into at least this many blocks where rows allow */
static wino_geom geom(const vt_conv_desc *d, int blocks)
{
    wino_geom g;
    g.TH = (d->ho + 1) / 2;
    g.TW = (d->wo + 1) / 2;
    size_t row = (size_t)16 * (d->cin + d->cout) * g.TW;
    size_t r = WINO_BLOCK_FLOATS / row;
    size_t all = (size_t)d->n * g.TH;
    if (blocks > 1 && r > (all + blocks - 1) / blocks) r = (all + blocks - 1) / blocks;
    if (r < 1) r = 1;
    if (r > all) r = all;
    g.rows = (int)r;
    g.tmax = r * g.TW;
    /* V and M, then the transforms' rows: 16 arrays of TW and 4 padded rows of 2 TW + 2 */
    g.per_thread = (size_t)16 * (d->cin + d->cout) * g.tmax + (size_t)16 * g.TW +
                   (size_t)4 * (2 * g.TW + 2) + (size_t)(2 * g.TW + 2);
    g.u = (size_t)16 * d->cout * d->cin;
    return g;
}

static int backward_shares(const vt_backend *b, const vt_conv_desc *d, const wino_geom *g)
{
    int th = vt_pool_threads(POOL(b)), s = th * WINO_SHARES_PER_THREAD;
    if ((size_t)s * g->u > WINO_PARTIALS_MAX) s = th;
    return s < d->n ? s : d->n;
}

static int forward_blocks(const vt_backend *b) { return 2 * vt_pool_threads(POOL(b)); }

size_t vt_cpu_wino_workspace(vt_backend *b, const vt_conv_desc *d)
{
    wino_geom g = geom(d, 1); /* backward's, the larger blocks */
    size_t th = (size_t)vt_pool_threads(POOL(b));
    return (g.u * (1 + (size_t)backward_shares(b, d, &g)) + th * g.per_thread) * sizeof(float);
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

static void weight_rows(void *ctx, size_t c0, size_t c1)
{
    const wt_job *J = ctx;
    size_t cin = (size_t)J->d->cin, plane = (size_t)J->d->cout * cin;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float g[9][WCH], t[4][3][WCH];
            for (size_t j = 0; j < n; j++)
                for (int q = 0; q < 9; q++) g[q][j] = J->w[(co * cin + i0 + j) * 9 + q];
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
    size_t cin = (size_t)J->d->cin, plane = (size_t)J->d->cout * cin, all = 16 * plane;
    for (size_t co = c0; co < c1; co++)
        for (size_t i0 = 0; i0 < cin; i0 += WCH) {
            size_t n = cin - i0 < WCH ? cin - i0 : WCH;
            float u[16][WCH], r[4][3][WCH], g[9][WCH];
            for (int k = 0; k < 16; k++) {
                const float *p = J->du + k * plane + co * cin + i0;
                for (size_t j = 0; j < n; j++) u[k][j] = p[j];
                for (int sh = 1; sh < J->shares; sh++)
                    for (size_t j = 0; j < n; j++) u[k][j] += p[sh * all + j];
            }
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

/* ---- forward and backward over blocks of tile rows ---- */

typedef struct wino_job {
    const vt_conv_desc *d;
    wino_geom g;
    int parts;
    const float *x, *dy, *u;
    float *y, *dx, *du; /* du: the shares' partial dU, share p's at p x g.u */
    float *scratch;     /* threads x g.per_thread */
} wino_job;

/* Tile rows [r0, r1) of the batch (row r: image r / TH, tile row r % TH) into V, tt = the
 * row's first tile in the block. */
static void transform_inputs(const wino_job *J, int r0, int r1, size_t T, float *V, float *P)
{
    const vt_conv_desc *d = J->d;
    size_t HW = (size_t)d->h * d->w, TW = (size_t)J->g.TW, kstride = (size_t)d->cin * T;
    for (int ci = 0; ci < d->cin; ci++)
        for (int r = r0; r < r1; r++) {
            int n = r / J->g.TH, ty = r % J->g.TH;
            input_row(J->x + ((size_t)ci * d->n + n) * HW, d->h, d->w, ty, J->g.TW,
                      V + (size_t)ci * T + (size_t)(r - r0) * TW, kstride, P);
        }
}

/* The calling thread's scratch: V (16 x cin x tmax), M (16 x cout x tmax), the rows' temps. */
static void thread_scratch(const wino_job *J, float **V, float **M, float **tmp)
{
    *V = J->scratch + (size_t)vt_pool_thread() * J->g.per_thread;
    *M = *V + (size_t)16 * J->d->cin * J->g.tmax;
    *tmp = *M + (size_t)16 * J->d->cout * J->g.tmax;
}

static void forward_parts(void *ctx, size_t p0, size_t p1)
{
    const wino_job *J = ctx;
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    float *V, *M, *tmp;
    thread_scratch(J, &V, &M, &tmp);
    int all = d->n * g->TH, blocks = (all + g->rows - 1) / g->rows;
    size_t OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++) {
        int b0 = (int)((long long)blocks * p / J->parts),
            b1 = (int)((long long)blocks * (p + 1) / J->parts);
        for (int blk = b0; blk < b1; blk++) {
            int r0 = blk * g->rows, r1 = r0 + g->rows < all ? r0 + g->rows : all;
            size_t T = (size_t)(r1 - r0) * g->TW;
            transform_inputs(J, r0, r1, T, V, tmp);
            for (int k = 0; k < 16; k++)
                vt_sgemm(NULL, 0, 0, d->cout, (int)T, d->cin, 1.0f,
                         J->u + (size_t)k * g->u / 16, d->cin, V + (size_t)k * d->cin * T,
                         (int)T, 0.0f, M + (size_t)k * d->cout * T, (int)T);
            for (int co = 0; co < d->cout; co++)
                for (int r = r0; r < r1; r++) {
                    int n = r / g->TH, ty = r % g->TH;
                    output_row(M + (size_t)co * T + (size_t)(r - r0) * g->TW,
                               (size_t)d->cout * T, g->TW, ty, d->ho, d->wo,
                               J->y + ((size_t)co * d->n + n) * OHW, tmp);
                }
        }
    }
}

static void backward_parts(void *ctx, size_t p0, size_t p1)
{
    const wino_job *J = ctx;
    const vt_conv_desc *d = J->d;
    const wino_geom *g = &J->g;
    float *V, *M, *tmp;
    thread_scratch(J, &V, &M, &tmp);
    size_t HW = (size_t)d->h * d->w, OHW = (size_t)d->ho * d->wo;
    for (size_t p = p0; p < p1; p++) {
        float *du = J->du + p * g->u;
        int i0 = (int)((long long)d->n * p / J->parts),
            i1 = (int)((long long)d->n * (p + 1) / J->parts);
        int end = i1 * g->TH, first = 1;
        for (int r0 = i0 * g->TH; r0 < end; r0 += g->rows, first = 0) {
            int r1 = r0 + g->rows < end ? r0 + g->rows : end;
            size_t T = (size_t)(r1 - r0) * g->TW;
            for (int co = 0; co < d->cout; co++)
                for (int r = r0; r < r1; r++) {
                    int n = r / g->TH, ty = r % g->TH;
                    grad_row(J->dy + ((size_t)co * d->n + n) * OHW, d->ho, d->wo, ty, g->TW,
                             M + (size_t)co * T + (size_t)(r - r0) * g->TW,
                             (size_t)d->cout * T, tmp);
                }
            transform_inputs(J, r0, r1, T, V, tmp);
            for (int k = 0; k < 16; k++) {
                float *Vk = V + (size_t)k * d->cin * T, *Mk = M + (size_t)k * d->cout * T;
                vt_sgemm(NULL, 0, 1, d->cout, d->cin, (int)T, 1.0f, Mk, (int)T, Vk, (int)T,
                         first ? 0.0f : 1.0f, du + (size_t)k * g->u / 16, d->cin);
                if (J->dx) /* dV over V: this k's V is no longer needed */
                    vt_sgemm(NULL, 1, 0, d->cin, (int)T, d->cout, 1.0f,
                             J->u + (size_t)k * g->u / 16, d->cin, Mk, (int)T, 0.0f, Vk, (int)T);
            }
            if (!J->dx) continue;
            for (int ci = 0; ci < d->cin; ci++)
                for (int r = r0; r < r1; r++) {
                    int n = r / g->TH, ty = r % g->TH;
                    scatter_row(V + (size_t)ci * T + (size_t)(r - r0) * g->TW,
                                (size_t)d->cin * T, g->TW, ty, d->h, d->w,
                                J->dx + ((size_t)ci * d->n + n) * HW, tmp);
                }
        }
    }
}

static size_t weight_grain(const vt_conv_desc *d)
{
    size_t per = (size_t)d->cin * 160; /* about the flops of one output channel's transforms */
    size_t g = GRAIN / (per ? per : 1);
    return g ? g : 1;
}

void vt_cpu_wino_forward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                         float *y, void *ws)
{
    wino_job J = {d, geom(d, forward_blocks(b)), 0, x, NULL, ws, y, NULL, NULL, NULL};
    J.scratch = (float *)ws + J.g.u;
    wt_job W = {d, w, (float *)ws, NULL, 0, NULL};
    vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), weight_rows, &W);
    int blocks = (d->n * J.g.TH + J.g.rows - 1) / J.g.rows;
    int th = vt_pool_threads(POOL(b)) * 4;
    J.parts = blocks < th ? blocks : th;
    vt_pool_run(POOL(b), (size_t)J.parts, 1, forward_parts, &J);
}

void vt_cpu_wino_backward(vt_backend *b, const vt_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, void *ws)
{
    wino_job J = {d, geom(d, 1), 0, x, dy, ws, NULL, dx, NULL, NULL};
    J.parts = backward_shares(b, d, &J.g);
    J.du = (float *)ws + J.g.u;
    J.scratch = J.du + (size_t)J.parts * J.g.u;
    wt_job W = {d, w, (float *)ws, J.du, J.parts, dw};
    if (dx) vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), weight_rows, &W);
    vt_pool_run(POOL(b), (size_t)J.parts, 1, backward_parts, &J);
    vt_pool_run(POOL(b), (size_t)d->cout, weight_grain(d), weight_grad_rows, &W);
}
