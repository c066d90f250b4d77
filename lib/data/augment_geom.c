/* Augmentation geometry: the random projective transform, warping pixels and labels with the
 * same matrix, and the drop rule.  See augment.h for the coordinate convention. */
#include "data/augment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/augment_px.h"

#define VT_AUG_PI 3.14159265358979323846

static double unif(vt_rng *r, double a, double b) { return a + (b - a) * vt_rng_uniform(r); }

/* c = a * b for row-major 3x3 (c may not alias a or b). */
static void mat_mul(const double *a, const double *b, double *c)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            c[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
}

static void mat_eye(double *m)
{
    memset(m, 0, 9 * sizeof *m);
    m[0] = m[4] = m[8] = 1.0;
}

/* Inverse by the adjugate; 0 when the matrix is (numerically) singular. */
static int mat_inv(const double *m, double *o)
{
    double a = m[0], b = m[1], c = m[2], d = m[3], e = m[4], f = m[5], g = m[6], h = m[7],
           i = m[8];
    double A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
    double det = a * A + b * B + c * C;
    double scale = fabs(a) + fabs(b) + fabs(d) + fabs(e);
    if (!(fabs(det) > 1e-12 * (scale * scale + 1e-300))) return 0;
    double k = 1.0 / det;
    o[0] = A * k;
    o[1] = -(b * i - c * h) * k;
    o[2] = (b * f - c * e) * k;
    o[3] = B * k;
    o[4] = (a * i - c * g) * k;
    o[5] = -(a * f - c * d) * k;
    o[6] = C * k;
    o[7] = -(a * h - b * g) * k;
    o[8] = (a * e - b * d) * k;
    return 1;
}

void vt_aug_transform_draw(const vt_aug_params *p, vt_rng *r, int src_w, int src_h, int out_w,
                           int out_h, vt_aug_transform *t)
{
    double C[9], P[9], R[9], S[9], T[9], m1[9], m2[9];
    mat_eye(C);
    C[2] = -src_w / 2.0;
    C[5] = -src_h / 2.0;
    mat_eye(P);
    P[6] = unif(r, -p->perspective, p->perspective);
    P[7] = unif(r, -p->perspective, p->perspective);
    double a = unif(r, -p->degrees, p->degrees) * (VT_AUG_PI / 180.0);
    double s = unif(r, 1.0 - p->scale, 1.0 + p->scale);
    /* cv2.getRotationMatrix2D(center=(0,0), angle=a, scale=s) */
    mat_eye(R);
    R[0] = s * cos(a);
    R[1] = s * sin(a);
    R[3] = -s * sin(a);
    R[4] = s * cos(a);
    mat_eye(S);
    S[1] = tan(unif(r, -p->shear, p->shear) * (VT_AUG_PI / 180.0));
    S[3] = tan(unif(r, -p->shear, p->shear) * (VT_AUG_PI / 180.0));
    mat_eye(T);
    T[2] = unif(r, 0.5 - p->translate, 0.5 + p->translate) * out_w;
    T[5] = unif(r, 0.5 - p->translate, 0.5 + p->translate) * out_h;
    /* M = T S R P C, right to left */
    mat_mul(P, C, m1);
    mat_mul(R, m1, m2);
    mat_mul(S, m2, m1);
    mat_mul(T, m1, t->m);
    t->gain = s;
}

static int valid_image(const vt_image *im)
{
    return im && im->data && im->w > 0 && im->h > 0 && im->c >= 1 && im->c <= 4;
}

/* One axis of the separable warp: for output index i, whether its centre falls inside the
 * source, its two taps (clamped) and the weight of the second, as the general loop computes
 * them from q = (Q + m * (i + 0.5)) / hw (Q the row's or column's constant term, hw the
 * homogeneous coordinate, the same for every pixel of a separable transform: inv[8]; the
 * general loop does not divide when it is 1, which dividing by it does not change). */
typedef struct warp_tap {
    int in, t0, t1;
    float f, f1; /* f and 1 - f */
} warp_tap;

static void warp_axis(double Q, double m, double hw, int n, int src_n, warp_tap *tap)
{
    for (int i = 0; i < n; i++) {
        const double pi = i + 0.5;
        const double q = (Q + m * pi) / hw;
        warp_tap *t = &tap[i];
        t->in = q >= 0.0 && q < src_n;
        if (!t->in) continue;
        const double u = q - 0.5;
        int i0 = (int)(u + 1.0) - 1;
        const float f = (float)(u - i0);
        int i1 = i0 + 1;
        if (i0 < 0) i0 = 0;
        if (i1 > src_n - 1) i1 = src_n - 1;
        t->t0 = i0;
        t->t1 = i1;
        t->f = f;
        t->f1 = 1 - f;
    }
}

/* The taps of every column (tx) and row (ty) of a separable warp, as the general loop computes
 * them; 0 when the homogeneous coordinate is not positive (every centre takes the fill). */
static int warp_taps(const double *inv, int out_w, int out_h, int sw, int sh, warp_tap *tx,
                     warp_tap *ty)
{
    /* W = inv[7] * py + inv[8] and hw = W + inv[6] * px are inv[8] at every pixel (inv[6] and
     * inv[7] are zeros) */
    const double hw = inv[8];
    if (!(hw > 1e-12)) return 0;
    /* X = inv[1] * py + inv[2] is the same for every row (inv[1] is a zero), and the general
     * loop's qy = Y + inv[3] * px the same for every column; computed as it does. */
    const double X = inv[1] * 0.5 + inv[2];
    warp_axis(X, inv[0], hw, out_w, sw, tx);
    for (int y = 0; y < out_h; y++) {
        const double py = y + 0.5, Y = inv[4] * py + inv[5];
        /* qy = Y + inv[3] * px, px > 0: the same zero is added at every column */
        warp_axis(Y + inv[3] * 0.5, 0.0, hw, 1, sh, &ty[y]);
    }
    return 1;
}

/* One RGB pixel of the separable warp from its four taps: the general loop's
 * (int)(w00 * p00 + w01 * p01 + w10 * p10 + w11 * p11 + 0.5f) per channel, w00 = fx1 * fy1,
 * w01 = fx * fy1, w10 = fx1 * fy, w11 = fx * fy.  With SSE2 the three channels go in three lanes
 * of one vector, each lane doing the same float operations in the same order (IEEE, no
 * contraction), so the bytes are the same.  It stores 4 bytes at o (the caller's buffer has a
 * byte of room after its last pixel, and the next pixel is written after); `wide`: the taps may
 * be read 4 bytes wide too (p11, the highest, is not its image's last pixel). */
#if defined(__SSE2__)
static inline __m128 tap_wide(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    const __m128i z = _mm_setzero_si128();
    return _mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(v), z), z));
}

static inline __m128 tap_narrow(const uint8_t *p)
{
    return _mm_cvtepi32_ps(_mm_setr_epi32(p[0], p[1], p[2], 0));
}

static inline void bilerp_rgb(uint8_t *o, const uint8_t *p00, const uint8_t *p01,
                              const uint8_t *p10, const uint8_t *p11, __m128 wx, __m128 wy,
                              int wide)
{
    const __m128 w = _mm_mul_ps(wx, wy); /* (w00, w01, w10, w11) */
    __m128 a00, a01, a10, a11;
    if (wide) {
        a00 = tap_wide(p00), a01 = tap_wide(p01), a10 = tap_wide(p10), a11 = tap_wide(p11);
    } else {
        a00 = tap_narrow(p00), a01 = tap_narrow(p01), a10 = tap_narrow(p10),
        a11 = tap_narrow(p11);
    }
    __m128 acc = _mm_mul_ps(_mm_shuffle_ps(w, w, 0x00), a00);
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_shuffle_ps(w, w, 0x55), a01));
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_shuffle_ps(w, w, 0xAA), a10));
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_shuffle_ps(w, w, 0xFF), a11));
    acc = _mm_add_ps(acc, _mm_set1_ps(0.5f));
    /* the weights sum to 1: 0..255.5, so the packs do not saturate */
    const __m128i i = _mm_cvttps_epi32(acc);
    const __m128i b = _mm_packus_epi16(_mm_packs_epi32(i, i), _mm_setzero_si128());
    const int32_t v = _mm_cvtsi128_si32(b);
    memcpy(o, &v, 4);
}
/* (fx1, fx, fx1, fx) and (fy1, fy1, fy, fy): their product is the four weights */
#define VT_WX(fx, fx1) _mm_setr_ps((fx1), (fx), (fx1), (fx))
#define VT_WY(fy, fy1) _mm_setr_ps((fy1), (fy1), (fy), (fy))
typedef __m128 wvec;
#else
typedef struct wvec {
    float a, b;
} wvec;
#define VT_WX(fx, fx1) ((wvec){(fx), (fx1)})
#define VT_WY(fy, fy1) ((wvec){(fy), (fy1)})
static inline void bilerp_rgb(uint8_t *o, const uint8_t *p00, const uint8_t *p01,
                              const uint8_t *p10, const uint8_t *p11, wvec wx, wvec wy, int wide)
{
    (void)wide;
    const float fx = wx.a, fx1 = wx.b, fy = wy.a, fy1 = wy.b;
    const float w00 = fx1 * fy1, w01 = fx * fy1, w10 = fx1 * fy, w11 = fx * fy;
    o[0] = (uint8_t)(int)(w00 * p00[0] + w01 * p01[0] + w10 * p10[0] + w11 * p11[0] + 0.5f);
    o[1] = (uint8_t)(int)(w00 * p00[1] + w01 * p01[1] + w10 * p10[1] + w11 * p11[1] + 0.5f);
    o[2] = (uint8_t)(int)(w00 * p00[2] + w01 * p01[2] + w10 * p10[2] + w11 * p11[2] + 0.5f);
}
#endif

static vt_status warp_separable(const vt_image *src, const double *inv, int out_w, int out_h,
                                uint8_t fill, uint8_t *out)
{
    const int sw = src->w, sh = src->h;
    const size_t stride = (size_t)sw * 3;
    const uint8_t *end = src->data + stride * sh;
    warp_tap *tx = vt_malloc(sizeof *tx * (size_t)out_w), *ty = vt_malloc(sizeof *ty * (size_t)out_h);
    if (!tx || !ty) {
        free(tx);
        free(ty);
        return VT_ERR_OUT_OF_MEMORY;
    }
    if (!warp_taps(inv, out_w, out_h, sw, sh, tx, ty)) {
        memset(out, fill, (size_t)out_w * out_h * 3);
        free(tx);
        free(ty);
        return VT_OK;
    }
    for (int y = 0; y < out_h; y++) {
        uint8_t *o = out + (size_t)y * out_w * 3;
        const warp_tap *wy = &ty[y];
        if (!wy->in) {
            memset(o, fill, (size_t)out_w * 3);
            continue;
        }
        const uint8_t *r0 = src->data + (size_t)wy->t0 * stride,
                      *r1 = src->data + (size_t)wy->t1 * stride;
        const wvec wyv = VT_WY(wy->f, wy->f1);
        for (int x = 0; x < out_w; x++, o += 3) {
            const warp_tap *wx = &tx[x];
            if (!wx->in) {
                o[0] = o[1] = o[2] = fill;
                continue;
            }
            const uint8_t *p00 = r0 + wx->t0 * 3, *p01 = r0 + wx->t1 * 3, *p10 = r1 + wx->t0 * 3,
                          *p11 = r1 + wx->t1 * 3;
            bilerp_rgb(o, p00, p01, p10, p11, VT_WX(wx->f, wx->f1), wyv, p11 + 3 < end);
        }
    }
    free(tx);
    free(ty);
    return VT_OK;
}

/* vt_aug_warp_image takes warp_separable for these: 3 channels, no rotation, shear or
 * perspective (inv is the inverse of the transform; its inv[8] need not be exactly 1: the
 * inverse of a scale s is not always exactly 1/s times s). */
static int is_separable(const double *inv, int c)
{
    return inv[6] == 0.0 && inv[7] == 0.0 && inv[1] == 0.0 && inv[3] == 0.0 && c == 3;
}

/* ---- the mosaic's warp without its canvas ------------------------------------------------
 * warp_separable over a canvas that is the fill but for four tiles, one per quadrant of the
 * split at (xc, yc).  A tap at canvas column x lies in the left tiles' half when x < xc, and
 * at canvas row y in the top tiles' half when y < yc, so the tile that could cover a tap is
 * known from its column (which half) and its row (which half); it is a tile pixel when both
 * its column and its row fall inside that tile's rectangle, else the fill.  Per column and
 * tap the byte offset of the column in the top and in the bottom tile of its half (-1:
 * outside), per row and tap the row's pointer in the left and in the right tile of its half
 * (NULL: outside).  The taps, weights and the sum are warp_separable's, so each byte is what
 * sampling the painted canvas gives. */
typedef struct tile_col {
    int side[2];   /* tap 0 / 1: 0 left half, 1 right half */
    int off[2][2]; /* [tap][0 top, 1 bottom tile of that half]: byte offset in its row, or -1 */
    int fast[2];   /* [top / bottom]: both taps in the same half and inside that tile */
} tile_col;

typedef struct tile_warp {
    const vt_aug_tile *tiles;
    int out_w, out_h, xc, yc;
    warp_tap *tx, *ty;
    tile_col *col;
    const uint8_t *ends[4]; /* one past each tile image's pixels */
    uint8_t fillpx[4];
} tile_warp;

/* One output row's taps: per tap row its half (q) and its pointer in the half's left and right
 * tile; fast[side]: both tap rows in that tile; wide: no tap row is the last row of its image
 * (so every tap of the row may be read 4 bytes wide). */
typedef struct tile_row {
    int q[2], fast[2], wide;
    const uint8_t *rowp[2][2];
} tile_row;

static void tile_warp_free(tile_warp *tw)
{
    free(tw->tx);
    free(tw->ty);
    free(tw->col);
    tw->tx = tw->ty = NULL;
    tw->col = NULL;
}

/* Checks, the inverse and the taps; *done = 0 (and nothing allocated) when the transform is not
 * scale and shift. */
static vt_status tile_warp_init(tile_warp *tw, const vt_aug_tile tiles[4], int canvas_w,
                                int canvas_h, int xc, int yc, const vt_aug_transform *t,
                                int out_w, int out_h, uint8_t fill, int *done)
{
    memset(tw, 0, sizeof *tw);
    *done = 0;
    if (!tiles || !t || canvas_w < 1 || canvas_h < 1 || out_w < 1 || out_h < 1 ||
        out_w > 32768 || out_h > 32768)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad tile warp arguments");
    for (int i = 0; i < 4; i++) {
        const vt_aug_tile *tl = &tiles[i];
        const int empty = tl->x0 >= tl->x1 || tl->y0 >= tl->y1;
        if (tl->x0 > tl->x1 || tl->y0 > tl->y1 ||
            (!empty && (!valid_image(tl->img) || tl->img->c != 3 || tl->ox < 0 || tl->oy < 0 ||
                        tl->ox + (tl->x1 - tl->x0) > tl->img->w ||
                        tl->oy + (tl->y1 - tl->y0) > tl->img->h ||
                        ((i & 1) ? tl->x0 < xc : tl->x1 > xc) ||
                        ((i & 2) ? tl->y0 < yc : tl->y1 > yc))))
            return vt_fail(VT_ERR_INVALID_ARGUMENT,
                           "augment: tile %d is not an RGB image in its quadrant", i);
        tw->ends[i] = empty ? NULL
                            : tl->img->data + (size_t)tl->img->w * tl->img->h * 3;
    }
    double inv[9];
    if (!mat_inv(t->m, inv))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: the transform is singular");
    if (!is_separable(inv, 3)) return VT_OK;
    tw->tiles = tiles;
    tw->out_w = out_w;
    tw->out_h = out_h;
    tw->xc = xc;
    tw->yc = yc;
    memset(tw->fillpx, fill, sizeof tw->fillpx);
    tw->tx = vt_malloc(sizeof *tw->tx * (size_t)out_w);
    tw->ty = vt_malloc(sizeof *tw->ty * (size_t)out_h);
    tw->col = vt_malloc(sizeof *tw->col * (size_t)out_w);
    if (!tw->tx || !tw->ty || !tw->col) {
        tile_warp_free(tw);
        return VT_ERR_OUT_OF_MEMORY;
    }
    /* the taps exactly as warp_separable computes them */
    if (!warp_taps(inv, out_w, out_h, canvas_w, canvas_h, tw->tx, tw->ty)) { /* all fill */
        for (int x = 0; x < out_w; x++) tw->tx[x].in = 0;
        for (int y = 0; y < out_h; y++) tw->ty[y].in = 0;
    }
    for (int x = 0; x < out_w; x++) {
        tile_col *cl = &tw->col[x];
        if (!tw->tx[x].in) continue;
        const int tap[2] = {tw->tx[x].t0, tw->tx[x].t1};
        for (int a = 0; a < 2; a++) {
            const int side = tap[a] >= xc;
            cl->side[a] = side;
            for (int q = 0; q < 2; q++) {
                const vt_aug_tile *tl = &tiles[2 * q + side];
                cl->off[a][q] = tap[a] >= tl->x0 && tap[a] < tl->x1
                                    ? (tap[a] - tl->x0 + tl->ox) * 3
                                    : -1;
            }
        }
        for (int q = 0; q < 2; q++)
            cl->fast[q] = cl->side[0] == cl->side[1] && cl->off[0][q] >= 0 && cl->off[1][q] >= 0;
    }
    *done = 1;
    return VT_OK;
}

/* Row y's taps (its warp_tap is `in`). */
static void tile_warp_row(const tile_warp *tw, int y, tile_row *row)
{
    const warp_tap *wy = &tw->ty[y];
    const int rtap[2] = {wy->t0, wy->t1};
    row->wide = 1;
    for (int b = 0; b < 2; b++) {
        row->q[b] = rtap[b] >= tw->yc;
        for (int side = 0; side < 2; side++) {
            const vt_aug_tile *tl = &tw->tiles[2 * row->q[b] + side];
            const int in = rtap[b] >= tl->y0 && rtap[b] < tl->y1;
            const int r = rtap[b] - tl->y0 + tl->oy;
            row->rowp[b][side] = in ? tl->img->data + (size_t)r * tl->img->w * 3 : NULL;
            if (in && r == tl->img->h - 1) row->wide = 0;
        }
    }
    for (int side = 0; side < 2; side++)
        row->fast[side] = row->q[0] == row->q[1] && row->rowp[0][side] && row->rowp[1][side];
}

/* The four taps of column x (its warp_tap is `in`) on a row; 1 when they all come from one
 * tile (p11, the highest, then bounds them all). */
static inline int tile_taps(const tile_warp *tw, const tile_row *row, int x,
                            const uint8_t *p[4])
{
    const tile_col *cl = &tw->col[x];
    const int sd = cl->side[0], qq = row->q[0];
    if (cl->fast[qq] && sd == cl->side[1] && row->fast[sd]) {
        p[0] = row->rowp[0][sd] + cl->off[0][qq];
        p[1] = row->rowp[0][sd] + cl->off[1][qq];
        p[2] = row->rowp[1][sd] + cl->off[0][qq];
        p[3] = row->rowp[1][sd] + cl->off[1][qq];
        return 1;
    }
    for (int k = 0; k < 4; k++) { /* k = 2 * (row tap) + (column tap) */
        const int a = k & 1, b = k >> 1;
        const uint8_t *r = row->rowp[b][cl->side[a]];
        const int o = cl->off[a][row->q[b]];
        p[k] = r && o >= 0 ? r + o : tw->fillpx;
    }
    return 0;
}

vt_status vt_aug_warp_tiles(const vt_aug_tile tiles[4], int canvas_w, int canvas_h, int xc,
                            int yc, const vt_aug_transform *t, int out_w, int out_h,
                            uint8_t fill, vt_image *dst, int *done)
{
    tile_warp tw;
    if (!dst) return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad tile warp arguments");
    vt_status st = tile_warp_init(&tw, tiles, canvas_w, canvas_h, xc, yc, t, out_w, out_h, fill,
                                  done);
    if (st || !*done) return st;
    uint8_t *out = vt_malloc((size_t)out_w * out_h * 3 + 1); /* + 1: bilerp_rgb's 4-byte store */
    if (!out) {
        tile_warp_free(&tw);
        *done = 0;
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int y = 0; y < out_h; y++) {
        uint8_t *o = out + (size_t)y * out_w * 3;
        const warp_tap *wy = &tw.ty[y];
        if (!wy->in) {
            memset(o, fill, (size_t)out_w * 3);
            continue;
        }
        tile_row row;
        tile_warp_row(&tw, y, &row);
        const wvec wyv = VT_WY(wy->f, wy->f1);
        for (int x = 0; x < out_w; x++, o += 3) {
            const warp_tap *wx = &tw.tx[x];
            if (!wx->in) {
                o[0] = o[1] = o[2] = fill;
                continue;
            }
            const uint8_t *p[4];
            const int one = tile_taps(&tw, &row, x, p);
            bilerp_rgb(o, p[0], p[1], p[2], p[3], VT_WX(wx->f, wx->f1), wyv,
                       one && p[3] + 3 < tw.ends[2 * row.q[0] + tw.col[x].side[0]]);
        }
    }
    tile_warp_free(&tw);
    dst->w = out_w;
    dst->h = out_h;
    dst->c = 3;
    dst->data = out;
    return VT_OK;
}

#if defined(__SSE2__)
/* The fused warp's tables (see vt_aug_warp_tiles_float).  Per column, padded to nx (a multiple
 * of 8): the weights, whether it is in (a float mask), its taps' byte offsets in the top and
 * bottom tiles of its half; per group of 4 columns and tile row half q, the half (0 / 1) when
 * its 4 columns are in and all their taps in the same half's tile of that row half, else -1:
 * on a row whose two taps are in that tile too, the group's 16 taps are the two row pointers
 * plus these offsets. */
typedef struct fused_warp {
    tile_warp tw;
    int nx, ng;
    float *fxa, *fx1a, *ina;
    int32_t *off0[2], *off1[2];
    int *gs[2], *gin;
    int *gfill[2]; /* per group and q: every column out, or both its taps outside their tiles */
    float *rowc; /* one row of warped pixels, as floats per channel, nx apart (aligned) */
    void *mem[4];
} fused_warp;

/* Group g (columns 4g..4g+3) of a row, warped into rowc. */
static void fused_group4(const fused_warp *fw, const tile_row *row, const warp_tap *wy, int g)
{
    const tile_warp *tw = &fw->tw;
    const int x = 4 * g, n = tw->out_w - x < 4 ? tw->out_w - x : 4, qq = row->q[0], nx = fw->nx;
    const __m128 fillv = _mm_set1_ps((float)tw->fillpx[0]), half = _mm_set1_ps(0.5f);
    float *rowc = fw->rowc;
    __m128i v[4]; /* per tap: the 4 pixels' bytes */
    const int sd = fw->gs[qq][g];
    if (row->q[1] == qq && fw->gfill[qq][g]) { /* the fill all over */
        for (int j = 0; j < 3; j++) _mm_store_ps(rowc + j * nx + x, fillv);
        return;
    }
    if (sd >= 0 && row->fast[sd] && row->wide) {
        const uint8_t *r0 = row->rowp[0][sd], *r1 = row->rowp[1][sd];
        const int32_t *a = fw->off0[qq] + x, *b = fw->off1[qq] + x;
        v[0] = _mm_setr_epi32(vt_px_ld4(r0 + a[0]), vt_px_ld4(r0 + a[1]), vt_px_ld4(r0 + a[2]),
                              vt_px_ld4(r0 + a[3]));
        v[1] = _mm_setr_epi32(vt_px_ld4(r0 + b[0]), vt_px_ld4(r0 + b[1]), vt_px_ld4(r0 + b[2]),
                              vt_px_ld4(r0 + b[3]));
        v[2] = _mm_setr_epi32(vt_px_ld4(r1 + a[0]), vt_px_ld4(r1 + a[1]), vt_px_ld4(r1 + a[2]),
                              vt_px_ld4(r1 + a[3]));
        v[3] = _mm_setr_epi32(vt_px_ld4(r1 + b[0]), vt_px_ld4(r1 + b[1]), vt_px_ld4(r1 + b[2]),
                              vt_px_ld4(r1 + b[3]));
    } else {
        const uint8_t *p[4][4]; /* [pixel][tap] */
        int any = 0;
        for (int j = 0; j < 4; j++) {
            if (j < n && tw->tx[x + j].in) {
                tile_taps(tw, row, x + j, p[j]);
                for (int tp = 0; tp < 4; tp++) any |= p[j][tp] != tw->fillpx;
            } else {
                for (int tp = 0; tp < 4; tp++) p[j][tp] = tw->fillpx;
            }
        }
        if (!any) { /* the fill all over */
            for (int j = 0; j < 3; j++) _mm_store_ps(rowc + j * nx + x, fillv);
            return;
        }
        for (int tp = 0; tp < 4; tp++)
            v[tp] = row->wide ? _mm_setr_epi32(vt_px_ld4(p[0][tp]), vt_px_ld4(p[1][tp]),
                                               vt_px_ld4(p[2][tp]), vt_px_ld4(p[3][tp]))
                              : _mm_setr_epi32(vt_px_ld3(p[0][tp]), vt_px_ld3(p[1][tp]),
                                               vt_px_ld3(p[2][tp]), vt_px_ld3(p[3][tp]));
    }
    const __m128 fy = _mm_set1_ps(wy->f), fy1 = _mm_set1_ps(wy->f1);
    const __m128 fx = _mm_loadu_ps(fw->fxa + x), fx1 = _mm_loadu_ps(fw->fx1a + x);
    const __m128 w[4] = {_mm_mul_ps(fx1, fy1), _mm_mul_ps(fx, fy1), _mm_mul_ps(fx1, fy),
                         _mm_mul_ps(fx, fy)};
    __m128 acc[3];
    for (int tp = 0; tp < 4; tp++) {
        __m128 c[3];
        vt_px_split(v[tp], &c[0], &c[1], &c[2]);
        for (int j = 0; j < 3; j++) /* w00 * p00 + w01 * p01 + w10 * p10 + w11 * p11 */
            acc[j] = tp ? _mm_add_ps(acc[j], _mm_mul_ps(w[tp], c[j])) : _mm_mul_ps(w[0], c[j]);
    }
    __m128 px[3];
    for (int j = 0; j < 3; j++) /* (int)(sum + 0.5f): 0..255, as a float */
        px[j] = _mm_cvtepi32_ps(_mm_cvttps_epi32(_mm_add_ps(acc[j], half)));
    if (!fw->gin[g]) {
        const __m128 in = _mm_loadu_ps(fw->ina + x);
        for (int j = 0; j < 3; j++) px[j] = vt_px_sel(in, px[j], fillv);
    }
    for (int j = 0; j < 3; j++) _mm_store_ps(rowc + j * nx + x, px[j]);
}

/* The colour of rowc's columns [x0, out_w) into the planes (four at a time). */
static void fused_colour4(const fused_warp *fw, const vt_px_hsv *k, int x0, float *plane[3],
                          int flip)
{
    const int out_w = fw->tw.out_w, nx = fw->nx;
    const float *rowc = fw->rowc;
    const __m128 scale = _mm_set1_ps(1.0f / 255.0f);
    for (int x = x0; x < out_w; x += 4) {
        const int n = out_w - x < 4 ? out_w - x : 4;
        __m128 o[3];
        vt_px_hsv4(k, _mm_load_ps(rowc + x), _mm_load_ps(rowc + nx + x),
                   _mm_load_ps(rowc + 2 * nx + x), &o[0], &o[1], &o[2]);
        for (int j = 0; j < 3; j++) vt_px_store(plane[j], out_w, x, n, flip, _mm_mul_ps(o[j], scale));
    }
}

#if defined(VT_PX_AVX2)
#pragma GCC push_options
#pragma GCC target("avx2")
/* fused_group4 for pairs of groups, eight columns at a time, where both are fast on the row
 * (the others go through fused_group4); the same operations per lane. */
static void fused_row_avx2(const fused_warp *fw, const tile_row *row, const warp_tap *wy)
{
    const int qq = row->q[0], nx = fw->nx;
    const __m256 half = _mm256_set1_ps(0.5f), fy = _mm256_set1_ps(wy->f),
                 fy1 = _mm256_set1_ps(wy->f1);
    const __m256i ff = _mm256_set1_epi32(0xFF);
    float *rowc = fw->rowc;
    for (int g = 0; g < fw->ng; g += 2) {
        const int sd = fw->gs[qq][g], x = 4 * g;
        if (g + 1 >= fw->ng || sd < 0 || fw->gs[qq][g + 1] != sd || !row->fast[sd] ||
            !row->wide) {
            fused_group4(fw, row, wy, g);
            if (g + 1 < fw->ng) fused_group4(fw, row, wy, g + 1);
            continue;
        }
        const uint8_t *r0 = row->rowp[0][sd], *r1 = row->rowp[1][sd];
        const int32_t *a = fw->off0[qq] + x, *b = fw->off1[qq] + x;
#define VT_G8(r, o)                                                                            \
    _mm256_setr_epi32(vt_px_ld4(r + o[0]), vt_px_ld4(r + o[1]), vt_px_ld4(r + o[2]),            \
                      vt_px_ld4(r + o[3]), vt_px_ld4(r + o[4]), vt_px_ld4(r + o[5]),            \
                      vt_px_ld4(r + o[6]), vt_px_ld4(r + o[7]))
        const __m256i v[4] = {VT_G8(r0, a), VT_G8(r0, b), VT_G8(r1, a), VT_G8(r1, b)};
#undef VT_G8
        const __m256 fx = _mm256_loadu_ps(fw->fxa + x), fx1 = _mm256_loadu_ps(fw->fx1a + x);
        const __m256 w[4] = {_mm256_mul_ps(fx1, fy1), _mm256_mul_ps(fx, fy1),
                             _mm256_mul_ps(fx1, fy), _mm256_mul_ps(fx, fy)};
        __m256 acc[3];
        for (int tp = 0; tp < 4; tp++)
            for (int j = 0; j < 3; j++) {
                const __m256 c = _mm256_cvtepi32_ps(
                    _mm256_and_si256(j ? _mm256_srli_epi32(v[tp], 8 * j) : v[tp], ff));
                acc[j] = tp ? _mm256_add_ps(acc[j], _mm256_mul_ps(w[tp], c))
                            : _mm256_mul_ps(w[0], c);
            }
        for (int j = 0; j < 3; j++)
            _mm256_store_ps(rowc + j * nx + x, _mm256_cvtepi32_ps(_mm256_cvttps_epi32(
                                                   _mm256_add_ps(acc[j], half))));
    }
}

/* fused_colour4, eight at a time; returns where it stopped (the rest: fused_colour4). */
static int fused_colour_avx2(const fused_warp *fw, const vt_px_hsv *k, float *plane[3],
                             int flip)
{
    const int out_w = fw->tw.out_w, nx = fw->nx;
    const float *rowc = fw->rowc;
    const __m256 scale = _mm256_set1_ps(1.0f / 255.0f);
    int x = 0;
    for (; x + 8 <= out_w; x += 8) {
        __m256 o[3];
        vt_px_hsv8(k, _mm256_load_ps(rowc + x), _mm256_load_ps(rowc + nx + x),
                   _mm256_load_ps(rowc + 2 * nx + x), &o[0], &o[1], &o[2]);
        for (int j = 0; j < 3; j++)
            vt_px_store8(plane[j], out_w, x, flip, _mm256_mul_ps(o[j], scale));
    }
    return x;
}
#pragma GCC pop_options
#endif
#endif

vt_status vt_aug_warp_tiles_float(const vt_aug_tile tiles[4], int canvas_w, int canvas_h,
                                  int xc, int yc, const vt_aug_transform *t, int out_w,
                                  int out_h, uint8_t fill, const vt_aug_colour *colour,
                                  float *dst, size_t chan_stride, int *done)
{
    if (!colour || !dst)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad tile warp arguments");
#if defined(__SSE2__)
    fused_warp fw;
    memset(&fw, 0, sizeof fw);
    vt_status st = tile_warp_init(&fw.tw, tiles, canvas_w, canvas_h, xc, yc, t, out_w, out_h,
                                  fill, done);
    if (st || !*done) return st;
    const tile_warp *tw = &fw.tw;
    const int nx = (out_w + 7) & ~7, ng = nx / 4;
    fw.nx = nx;
    fw.ng = (out_w + 3) / 4; /* groups with columns in the image */
    fw.mem[0] = fw.fxa = vt_malloc(sizeof(float) * 3 * (size_t)nx);
    int32_t *offs = fw.mem[1] = vt_malloc(sizeof(int32_t) * 4 * (size_t)nx);
    int *gside = fw.mem[2] = vt_malloc(sizeof(int) * 5 * (size_t)ng);
    float *rowbuf = fw.mem[3] = vt_malloc(sizeof(float) * (3 * (size_t)nx + 8));
    if (!fw.fxa || !offs || !gside || !rowbuf) {
        for (int i = 0; i < 4; i++) free(fw.mem[i]);
        tile_warp_free(&fw.tw);
        *done = 0;
        return VT_ERR_OUT_OF_MEMORY;
    }
    fw.rowc = (float *)(((uintptr_t)rowbuf + 31) & ~(uintptr_t)31);
    fw.fx1a = fw.fxa + nx;
    fw.ina = fw.fxa + 2 * nx;
    fw.off0[0] = offs, fw.off0[1] = offs + nx, fw.off1[0] = offs + 2 * nx,
    fw.off1[1] = offs + 3 * nx;
    fw.gs[0] = gside, fw.gs[1] = gside + ng, fw.gin = gside + 2 * ng;
    fw.gfill[0] = gside + 3 * ng, fw.gfill[1] = gside + 4 * ng;
    for (int x = 0; x < nx; x++) {
        const int in = x < out_w && tw->tx[x].in;
        fw.fxa[x] = in ? tw->tx[x].f : 0.0f;
        fw.fx1a[x] = in ? tw->tx[x].f1 : 1.0f;
        const uint32_t mask = in ? 0xFFFFFFFFu : 0u;
        memcpy(&fw.ina[x], &mask, sizeof mask);
        for (int q = 0; q < 2; q++) {
            fw.off0[q][x] = in ? tw->col[x].off[0][q] : -1;
            fw.off1[q][x] = in ? tw->col[x].off[1][q] : -1;
        }
    }
    for (int g = 0; g < ng; g++) {
        int all_in = 1;
        for (int j = 0; j < 4; j++) all_in &= 4 * g + j < out_w && tw->tx[4 * g + j].in;
        fw.gin[g] = all_in;
        for (int q = 0; q < 2; q++) {
            int none = 1;
            for (int j = 0; j < 4; j++)
                none &= fw.off0[q][4 * g + j] < 0 && fw.off1[q][4 * g + j] < 0;
            fw.gfill[q][g] = none;
            int side = all_in ? tw->col[4 * g].side[0] : -1;
            for (int j = 0; j < 4 && side >= 0; j++) {
                const tile_col *cl = &tw->col[4 * g + j];
                if (!cl->fast[q] || cl->side[0] != side || cl->side[1] != side) side = -1;
            }
            fw.gs[q][g] = side;
        }
    }
    vt_px_hsv k;
    vt_px_hsv_init(&k, colour->dh, colour->gs, colour->gv);
    const __m128 scale = _mm_set1_ps(1.0f / 255.0f), fillv = _mm_set1_ps((float)fill);
    __m128 fo[3]; /* the fill after HSV, as floats */
    vt_px_hsv4(&k, fillv, fillv, fillv, &fo[0], &fo[1], &fo[2]);
    for (int j = 0; j < 3; j++) fo[j] = _mm_mul_ps(fo[j], scale);
#if defined(VT_PX_AVX2)
    const int avx2 = vt_px_avx2();
#endif
    for (int y = 0; y < out_h; y++) {
        const int oy = colour->flipud ? out_h - 1 - y : y;
        float *plane[3];
        for (int j = 0; j < 3; j++) plane[j] = dst + j * chan_stride + (size_t)oy * out_w;
        const warp_tap *wy = &tw->ty[y];
        if (!wy->in) {
            for (int x = 0; x < out_w; x += 4)
                for (int j = 0; j < 3; j++)
                    vt_px_store(plane[j], out_w, x, out_w - x < 4 ? out_w - x : 4,
                                colour->fliplr, fo[j]);
            continue;
        }
        tile_row row;
        tile_warp_row(tw, y, &row);
        if (!row.rowp[0][0] && !row.rowp[0][1] && !row.rowp[1][0] && !row.rowp[1][1]) {
            for (int x = 0; x < out_w; x += 4) /* both tap rows outside the tiles: the fill */
                for (int j = 0; j < 3; j++)
                    vt_px_store(plane[j], out_w, x, out_w - x < 4 ? out_w - x : 4,
                                colour->fliplr, fo[j]);
            continue;
        }
        /* the row's warped pixels, then their colour from the row in L1 (two lighter loops
         * than one) */
        int x0 = 0;
#if defined(VT_PX_AVX2)
        if (avx2) {
            fused_row_avx2(&fw, &row, wy);
            x0 = fused_colour_avx2(&fw, &k, plane, colour->fliplr);
        } else
#endif
        {
            for (int g = 0; g < fw.ng; g++) fused_group4(&fw, &row, wy, g);
        }
        fused_colour4(&fw, &k, x0, plane, colour->fliplr);
    }
    for (int i = 0; i < 4; i++) free(fw.mem[i]);
    tile_warp_free(&fw.tw);
    return VT_OK;
#else
    (void)tiles, (void)canvas_w, (void)canvas_h, (void)xc, (void)yc, (void)t, (void)out_w,
        (void)out_h, (void)fill, (void)chan_stride;
    *done = 0; /* the caller warps to bytes and converts those */
    return VT_OK;
#endif
}

vt_status vt_aug_warp_image(const vt_image *src, const vt_aug_transform *t, int out_w,
                            int out_h, uint8_t fill, vt_image *dst)
{
    if (!valid_image(src) || !t || !dst || out_w < 1 || out_h < 1 || out_w > 32768 ||
        out_h > 32768)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad warp arguments (%dx%d output)",
                       out_w, out_h);
    double inv[9];
    if (!mat_inv(t->m, inv))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: the transform is singular");
    const int sw = src->w, sh = src->h, c = src->c;
    uint8_t *out = vt_malloc((size_t)out_w * out_h * c + 1); /* + 1: bilerp_rgb's 4-byte store */
    if (!out) return VT_ERR_OUT_OF_MEMORY;
    const size_t stride = (size_t)sw * c;
    const int affine = inv[6] == 0.0 && inv[7] == 0.0 && inv[8] == 1.0;
    if (is_separable(inv, c)) {
        /* Scale and shift only (no rotation or shear: the default detection augmentation):
         * the source x depends on the output column alone and y on the row alone, so the
         * taps and weights are computed once per column and per row.  The arithmetic is the
         * general loop's, operation for operation, so the pixels are the same bytes. */
        vt_status st = warp_separable(src, inv, out_w, out_h, fill, out);
        if (st) {
            free(out);
            return st;
        }
        dst->w = out_w;
        dst->h = out_h;
        dst->c = c;
        dst->data = out;
        return VT_OK;
    }
    for (int y = 0; y < out_h; y++) {
        uint8_t *o = out + (size_t)y * out_w * c;
        const double py = y + 0.5;
        /* Row start of the homogeneous source point; each pixel adds inv[0,3,6] * px. */
        const double X = inv[1] * py + inv[2], Y = inv[4] * py + inv[5], W = inv[7] * py + inv[8];
        for (int x = 0; x < out_w; x++, o += c) {
            const double px = x + 0.5;
            double qx = X + inv[0] * px, qy = Y + inv[3] * px;
            if (!affine) {
                double hw = W + inv[6] * px;
                if (hw > 1e-12) {
                    qx /= hw;
                    qy /= hw;
                } else {
                    qx = qy = -1.0;
                }
            }
            /* Centres outside the source take the fill (also NaN from a degenerate point);
             * inside, taps are clamped, so the source's edge stays sharp where the labels'
             * clip puts it. */
            if (!(qx >= 0.0 && qx < sw && qy >= 0.0 && qy < sh)) {
                for (int k = 0; k < c; k++) o[k] = fill;
                continue;
            }
            /* u >= -0.5, so truncating u + 1 is floor(u) + 1 without a libm call */
            const double u = qx - 0.5, v = qy - 0.5;
            int x0 = (int)(u + 1.0) - 1, y0 = (int)(v + 1.0) - 1;
            const float fx = (float)(u - x0), fy = (float)(v - y0);
            int x1 = x0 + 1, y1 = y0 + 1;
            if (x0 < 0) x0 = 0;
            if (y0 < 0) y0 = 0;
            if (x1 > sw - 1) x1 = sw - 1;
            if (y1 > sh - 1) y1 = sh - 1;
            const uint8_t *r0 = src->data + (size_t)y0 * stride,
                          *r1 = src->data + (size_t)y1 * stride;
            const float w00 = (1 - fx) * (1 - fy), w01 = fx * (1 - fy), w10 = (1 - fx) * fy,
                        w11 = fx * fy;
            const uint8_t *p00 = r0 + x0 * c, *p01 = r0 + x1 * c, *p10 = r1 + x0 * c,
                          *p11 = r1 + x1 * c;
#define VT_AUG_TAP(k)                                                                    \
    o[k] = (uint8_t)(int)(w00 * p00[k] + w01 * p01[k] + w10 * p10[k] + w11 * p11[k] + 0.5f)
            /* the weights sum to 1, so the value stays within 0..255 */
            if (c == 3) {
                VT_AUG_TAP(0);
                VT_AUG_TAP(1);
                VT_AUG_TAP(2);
            } else {
                for (int k = 0; k < c; k++) VT_AUG_TAP(k);
            }
#undef VT_AUG_TAP
        }
    }
    dst->w = out_w;
    dst->h = out_h;
    dst->c = c;
    dst->data = out;
    return VT_OK;
}

/* ---- labels ------------------------------------------------------------------------------ */

/* Transform a point; 0 when it maps to or behind the horizon (perspective only). */
static int map_point(const double *m, double x, double y, double *ox, double *oy)
{
    double w = m[6] * x + m[7] * y + m[8];
    if (!(w > 1e-9)) return 0;
    *ox = (m[0] * x + m[1] * y + m[2]) / w;
    *oy = (m[3] * x + m[4] * y + m[5]) / w;
    return isfinite(*ox) && isfinite(*oy);
}

/* One Sutherland-Hodgman stage: keep the side where sign * (p[axis] - bound) >= 0.  Emits at
 * most 1.5 * n points (each kept vertex, plus one per crossing edge; crossings are at most
 * twice the smaller of kept and dropped vertices). */
static int clip_stage(const double *in, int n, double *out, int axis, double bound, double sign)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        const double *a = in + 2 * i, *b = in + 2 * ((i + 1) % n);
        double da = sign * (a[axis] - bound), db = sign * (b[axis] - bound);
        int ina = da >= 0, inb = db >= 0;
        if (ina) {
            out[2 * m] = a[0];
            out[2 * m + 1] = a[1];
            m++;
        }
        if (ina != inb) {
            double f = da / (da - db);
            out[2 * m] = a[0] + f * (b[0] - a[0]);
            out[2 * m + 1] = a[1] + f * (b[1] - a[1]);
            /* exactly on the bound, whatever the rounding of f */
            out[2 * m + axis] = bound;
            m++;
        }
    }
    return m;
}

/* Drop rule, see vt_aug_warp_labels in augment.h. */
static int keep_box(double w0, double h0, double gain, double w, double h)
{
    const double eps = 1e-16;
    if (!(w > 2.0 && h > 2.0)) return 0;
    if (!(w * h / (w0 * h0 * gain * gain + eps) > 0.1)) return 0;
    double ar = fmax(w / (h + eps), h / (w + eps));
    return ar < 20.0;
}

/* Transform one polygon of np points (or a box, xy NULL) and clip it to the rectangle: the
 * result in b0 (b1 is scratch; both hold 6 np + 8 points); its point count, < 3 when nothing
 * is left (or a point maps behind the horizon). */
static int map_clip(const vt_aug_transform *t, const float *xy, int np, const vt_aug_box *bx,
                    const double clip[4], double *b0, double *b1)
{
    int ok = 1;
    if (xy) {
        for (int k = 0; k < np && ok; k++)
            ok = map_point(t->m, xy[2 * k], xy[2 * k + 1], &b0[2 * k], &b0[2 * k + 1]);
    } else {
        /* A box is the polygon of its corners, so that a rotated box cut by the canvas edge
         * gets the box of its visible part (the transformed corners' box, then clipped, as
         * Ultralytics does, can reach far beyond the pixels) */
        const double px[4] = {bx->x0, bx->x1, bx->x1, bx->x0};
        const double py[4] = {bx->y0, bx->y0, bx->y1, bx->y1};
        np = 4;
        for (int k = 0; k < 4 && ok; k++)
            ok = map_point(t->m, px[k], py[k], &b0[2 * k], &b0[2 * k + 1]);
    }
    if (!ok) return 0;
    np = clip_stage(b0, np, b1, 0, clip[0], 1.0);
    np = clip_stage(b1, np, b0, 0, clip[2], -1.0);
    np = clip_stage(b0, np, b1, 1, clip[1], 1.0);
    np = clip_stage(b1, np, b0, 1, clip[3], -1.0);
    return np;
}

vt_status vt_aug_map_labels(vt_aug_labels *l, const vt_aug_transform *t, const float clip[4],
                           int drop_rule)
{
    if (!l || !t || !clip || !(clip[2] >= clip[0]) || !(clip[3] >= clip[1]))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad label transform arguments");
    if (l->n == 0) return VT_OK;
    /* Scratch: two ping-pong buffers for the clip stages of one part (1.5^4 n < 6n + 8 points
     * each), and the float results of all parts of an object. */
    int maxpt = 4; /* a box is a 4-point polygon */
    size_t maxobj = 4 * 6 + 8;
    for (int i = 0; i < l->n; i++) {
        size_t obj = 0;
        for (int k = 0; k < l->part_cnt[i]; k++) {
            int len = l->part_len[l->part_off[i] + k];
            if (len > maxpt) maxpt = len;
            obj += (size_t)6 * len + 8;
        }
        if (obj > maxobj) maxobj = obj;
    }
    size_t bufpts = (size_t)6 * maxpt + 8;
    double *b0, *b1;
    float *f;
    int *fparts; /* the point counts of an object's kept parts (a box: one) */
    b0 = vt_malloc(bufpts * 2 * sizeof(double));
    b1 = vt_malloc(bufpts * 2 * sizeof(double));
    f = vt_malloc(maxobj * 2 * sizeof(float));
    fparts = vt_malloc(((size_t)l->npart + 1) * sizeof *fparts);
    if (!b0 || !b1 || !f || !fparts) {
        free(b0);
        free(b1);
        free(f);
        free(fparts);
        return VT_ERR_OUT_OF_MEMORY;
    }
    vt_aug_labels out;
    vt_aug_labels_init(&out);
    vt_status st = VT_OK;
    const double cl[4] = {clip[0], clip[1], clip[2], clip[3]};
    for (int i = 0; i < l->n && !st; i++) {
        const vt_aug_box *bx = &l->box[i];
        double w0 = bx->x1 - bx->x0, h0 = bx->y1 - bx->y0;
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        int nparts = l->part_cnt[i], is_poly = l->poly_n[i] > 0;
        int kept = 0, nf = 0; /* parts kept, and their points in f */
        const float *xy = is_poly ? l->xy + 2 * (size_t)l->poly_off[i] : NULL;
        for (int k = 0; k < (is_poly ? nparts : 1); k++) {
            int len = is_poly ? l->part_len[l->part_off[i] + k] : 4;
            int np = map_clip(t, xy, len, bx, cl, b0, b1);
            if (xy) xy += 2 * (size_t)len;
            if (np < 3) continue;
            float *fk = f + 2 * (size_t)nf;
            for (int q = 0; q < np; q++) {
                /* the float copy defines a stored polygon's box, so the box is taken from it */
                fk[2 * q] = (float)b0[2 * q];
                fk[2 * q + 1] = (float)b0[2 * q + 1];
                x0 = fmin(x0, fk[2 * q]);
                x1 = fmax(x1, fk[2 * q]);
                y0 = fmin(y0, fk[2 * q + 1]);
                y1 = fmax(y1, fk[2 * q + 1]);
            }
            fparts[kept++] = np;
            nf += np;
        }
        if (!kept) continue;
        if (drop_rule ? !keep_box(w0, h0, t->gain, x1 - x0, y1 - y0)
                      : !(x1 > x0 && y1 > y0))
            continue;
        st = is_poly ? vt_aug_labels_add_parts(&out, bx->cls, f, fparts, kept)
                    : vt_aug_labels_add_box(&out, bx->cls, (float)x0, (float)y0, (float)x1,
                                            (float)y1);
    }
    free(b0);
    free(b1);
    free(f);
    free(fparts);
    if (st) {
        vt_aug_labels_free(&out);
        return st;
    }
    vt_aug_labels_free(l);
    *l = out;
    return VT_OK;
}

vt_status vt_aug_warp_labels(vt_aug_labels *l, const vt_aug_transform *t, int out_w, int out_h)
{
    if (out_w < 1 || out_h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: bad label canvas %dx%d", out_w, out_h);
    const float clip[4] = {0.0f, 0.0f, (float)out_w, (float)out_h};
    return vt_aug_map_labels(l, t, clip, 1);
}

vt_status vt_aug_affine(const vt_image *src, vt_aug_labels *labels, int out_w, int out_h,
                        const vt_aug_params *p, vt_rng *r, vt_image *dst)
{
    if (!valid_image(src) || !p || !r || !dst)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_affine: bad arguments");
    vt_aug_transform t;
    vt_aug_transform_draw(p, r, src->w, src->h, out_w, out_h, &t);
    vt_image out = {0, 0, 0, NULL};
    vt_status st = vt_aug_warp_image(src, &t, out_w, out_h, 114, &out);
    if (!st && labels) st = vt_aug_warp_labels(labels, &t, out_w, out_h);
    if (st) {
        vt_image_free(&out);
        return st;
    }
    *dst = out;
    return VT_OK;
}
