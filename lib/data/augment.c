/* Augmentation: parameters, label lists, flips, and the detection pipeline pieces (mosaic,
 * letterbox + affine, mixup).  Geometry is in augment_geom.c, colour and classification in
 * augment_color.c. */
#include "data/augment.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/letterbox.h"

/* ---- parameters -------------------------------------------------------------------------- */

/* The fields a training option sets: the option's id, the field, whether it is an int. */
static const struct {
    int id;
    size_t off;
    int is_int;
} opt_fields[] = {
    {VT_OPT_HSV_H, offsetof(vt_aug_params, hsv_h), 0},
    {VT_OPT_HSV_S, offsetof(vt_aug_params, hsv_s), 0},
    {VT_OPT_HSV_V, offsetof(vt_aug_params, hsv_v), 0},
    {VT_OPT_DEGREES, offsetof(vt_aug_params, degrees), 0},
    {VT_OPT_TRANSLATE, offsetof(vt_aug_params, translate), 0},
    {VT_OPT_SCALE, offsetof(vt_aug_params, scale), 0},
    {VT_OPT_SHEAR, offsetof(vt_aug_params, shear), 0},
    {VT_OPT_PERSPECTIVE, offsetof(vt_aug_params, perspective), 0},
    {VT_OPT_FLIPUD, offsetof(vt_aug_params, flipud), 0},
    {VT_OPT_FLIPLR, offsetof(vt_aug_params, fliplr), 0},
    {VT_OPT_MOSAIC, offsetof(vt_aug_params, mosaic), 0},
    {VT_OPT_MIXUP, offsetof(vt_aug_params, mixup), 0},
    {VT_OPT_CLOSE_MOSAIC, offsetof(vt_aug_params, close_mosaic), 1},
    {VT_OPT_ERASING, offsetof(vt_aug_params, erasing), 0},
    {VT_OPT_CROP_SCALE, offsetof(vt_aug_params, crop_scale_min), 0},
};

void vt_aug_params_from_options(vt_aug_params *p, const vt_optvals *opts)
{
    for (size_t i = 0; i < sizeof opt_fields / sizeof opt_fields[0]; i++) {
        double v = opts ? vt_opt_num(opts, opt_fields[i].id)
                        : vt_optdef_by_id(opt_fields[i].id)->def_num;
        char *field = (char *)p + opt_fields[i].off;
        if (opt_fields[i].is_int) *(int *)(void *)field = (int)v;
        else *(float *)(void *)field = (float)v;
    }
    p->crop_ratio_min = 3.0f / 4.0f;
    p->crop_ratio_max = 4.0f / 3.0f;
}

void vt_aug_params_default(vt_aug_params *p) { vt_aug_params_from_options(p, NULL); }

int vt_aug_chance(vt_rng *r, float prob)
{
    return vt_rng_uniform(r) < prob;
}

/* ---- labels ------------------------------------------------------------------------------ */

void vt_aug_labels_init(vt_aug_labels *l) { memset(l, 0, sizeof *l); }

void vt_aug_labels_free(vt_aug_labels *l)
{
    if (!l) return;
    free(l->box);
    free(l->poly_off);
    free(l->poly_n);
    free(l->part_off);
    free(l->part_cnt);
    free(l->part_len);
    free(l->xy);
    vt_aug_labels_init(l);
}

void vt_aug_labels_clear(vt_aug_labels *l)
{
    l->n = 0;
    l->nxy = 0;
    l->npart = 0;
}

static vt_status grow_objects(vt_aug_labels *l, int need)
{
    if (need <= l->cap) return VT_OK;
    int cap = l->cap ? l->cap : 8;
    while (cap < need) cap *= 2;
    vt_aug_box *b = vt_realloc(l->box, sizeof *b * cap);
    if (!b) return VT_ERR_OUT_OF_MEMORY;
    l->box = b;
    int *o = vt_realloc(l->poly_off, sizeof *o * cap);
    if (!o) return VT_ERR_OUT_OF_MEMORY;
    l->poly_off = o;
    int *n = vt_realloc(l->poly_n, sizeof *n * cap);
    if (!n) return VT_ERR_OUT_OF_MEMORY;
    l->poly_n = n;
    int *po = vt_realloc(l->part_off, sizeof *po * cap);
    if (!po) return VT_ERR_OUT_OF_MEMORY;
    l->part_off = po;
    int *pc = vt_realloc(l->part_cnt, sizeof *pc * cap);
    if (!pc) return VT_ERR_OUT_OF_MEMORY;
    l->part_cnt = pc;
    l->cap = cap;
    return VT_OK;
}

static vt_status grow_parts(vt_aug_labels *l, int need)
{
    if (need <= l->cap_part) return VT_OK;
    int cap = l->cap_part ? l->cap_part : 8;
    while (cap < need) cap *= 2;
    int *p = vt_realloc(l->part_len, sizeof *p * cap);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    l->part_len = p;
    l->cap_part = cap;
    return VT_OK;
}

static vt_status grow_points(vt_aug_labels *l, int need)
{
    if (need <= l->cap_xy) return VT_OK;
    int cap = l->cap_xy ? l->cap_xy : 64;
    while (cap < need) cap *= 2;
    float *xy = vt_realloc(l->xy, sizeof *xy * 2 * (size_t)cap);
    if (!xy) return VT_ERR_OUT_OF_MEMORY;
    l->xy = xy;
    l->cap_xy = cap;
    return VT_OK;
}

vt_status vt_aug_labels_add_box(vt_aug_labels *l, int cls, float x0, float y0, float x1,
                                float y1)
{
    vt_status st = grow_objects(l, l->n + 1);
    if (st) return st;
    vt_aug_box *b = &l->box[l->n];
    b->cls = cls;
    b->x0 = fminf(x0, x1);
    b->x1 = fmaxf(x0, x1);
    b->y0 = fminf(y0, y1);
    b->y1 = fmaxf(y0, y1);
    l->poly_off[l->n] = 0;
    l->poly_n[l->n] = 0;
    l->part_off[l->n] = l->npart;
    l->part_cnt[l->n] = 0;
    l->n++;
    return VT_OK;
}

vt_status vt_aug_labels_add_poly(vt_aug_labels *l, int cls, const float *xy, int n)
{
    return vt_aug_labels_add_parts(l, cls, xy, &n, 1);
}

vt_status vt_aug_labels_add_parts(vt_aug_labels *l, int cls, const float *xy, const int *part_n,
                                  int nparts)
{
    if (!xy || !part_n || nparts < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: a polygon needs at least 3 points");
    int n = 0;
    for (int k = 0; k < nparts; k++) {
        if (part_n[k] < 3 || part_n[k] > (1 << 28) - n)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "augment: a polygon needs at least 3 points");
        n += part_n[k];
    }
    vt_status st = grow_objects(l, l->n + 1);
    if (!st) st = grow_points(l, l->nxy + n);
    if (!st) st = grow_parts(l, l->npart + nparts);
    if (st) return st;
    float x0 = xy[0], x1 = xy[0], y0 = xy[1], y1 = xy[1];
    for (int k = 1; k < n; k++) {
        x0 = fminf(x0, xy[2 * k]);
        x1 = fmaxf(x1, xy[2 * k]);
        y0 = fminf(y0, xy[2 * k + 1]);
        y1 = fmaxf(y1, xy[2 * k + 1]);
    }
    memcpy(l->xy + 2 * (size_t)l->nxy, xy, sizeof *xy * 2 * (size_t)n);
    l->box[l->n] = (vt_aug_box){cls, x0, y0, x1, y1};
    l->poly_off[l->n] = l->nxy;
    l->poly_n[l->n] = n;
    l->part_off[l->n] = l->npart;
    l->part_cnt[l->n] = nparts;
    memcpy(l->part_len + l->npart, part_n, sizeof *part_n * (size_t)nparts);
    l->npart += nparts;
    l->nxy += n;
    l->n++;
    return VT_OK;
}

const float *vt_aug_labels_poly(const vt_aug_labels *l, int i, int *n)
{
    *n = l->poly_n[i];
    return *n ? l->xy + 2 * (size_t)l->poly_off[i] : NULL;
}

int vt_aug_labels_num_parts(const vt_aug_labels *l, int i) { return l->part_cnt[i]; }

const float *vt_aug_labels_part(const vt_aug_labels *l, int i, int k, int *n)
{
    if (k < 0 || k >= l->part_cnt[i]) {
        *n = 0;
        return NULL;
    }
    const int *len = l->part_len + l->part_off[i];
    int skip = 0;
    for (int q = 0; q < k; q++) skip += len[q];
    *n = len[k];
    return l->xy + 2 * ((size_t)l->poly_off[i] + skip);
}

vt_status vt_aug_labels_append(vt_aug_labels *dst, const vt_aug_labels *src)
{
    if (!dst || !src || dst == src)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_labels_append: bad arguments");
    vt_status st = grow_objects(dst, dst->n + src->n);
    if (!st) st = grow_points(dst, dst->nxy + src->nxy);
    if (!st) st = grow_parts(dst, dst->npart + src->npart);
    if (st) return st;
    for (int i = 0; i < src->n; i++) {
        dst->box[dst->n + i] = src->box[i];
        dst->poly_n[dst->n + i] = src->poly_n[i];
        dst->poly_off[dst->n + i] = src->poly_n[i] ? src->poly_off[i] + dst->nxy : 0;
        dst->part_cnt[dst->n + i] = src->part_cnt[i];
        dst->part_off[dst->n + i] = src->part_off[i] + dst->npart;
    }
    if (src->nxy) memcpy(dst->xy + 2 * (size_t)dst->nxy, src->xy, sizeof(float) * 2 * src->nxy);
    if (src->npart)
        memcpy(dst->part_len + dst->npart, src->part_len, sizeof(int) * (size_t)src->npart);
    dst->n += src->n;
    dst->nxy += src->nxy;
    dst->npart += src->npart;
    return VT_OK;
}

/* Copy into a fresh list (used so an output list may alias an input one). */
static vt_status labels_copy(vt_aug_labels *dst, const vt_aug_labels *src)
{
    vt_aug_labels_init(dst);
    if (!src) return VT_OK;
    vt_status st = vt_aug_labels_append(dst, src);
    if (st) vt_aug_labels_free(dst);
    return st;
}

/* Move tmp's contents into out (freeing what out held). */
static void labels_move(vt_aug_labels *out, vt_aug_labels *tmp)
{
    vt_aug_labels_free(out);
    *out = *tmp;
    vt_aug_labels_init(tmp);
}

/* ---- flips ------------------------------------------------------------------------------- */

/* Mirror labels along x (axis 0: x -> size - x) or y (axis 1). */
static void mirror_labels(vt_aug_labels *l, int axis, float size)
{
    for (int i = 0; i < l->n; i++) {
        vt_aug_box *b = &l->box[i];
        float *lo = axis ? &b->y0 : &b->x0, *hi = axis ? &b->y1 : &b->x1;
        float nlo = size - *hi, nhi = size - *lo;
        *lo = nlo;
        *hi = nhi;
    }
    for (int k = 0; k < l->nxy; k++) l->xy[2 * k + axis] = size - l->xy[2 * k + axis];
}

void vt_aug_fliplr(vt_image *img, vt_aug_labels *labels)
{
    if (img && img->data) {
        const int w = img->w, c = img->c;
        for (int y = 0; y < img->h; y++) {
            uint8_t *row = img->data + (size_t)y * w * c;
            if (c == 3) { /* whole pixels */
                for (int a = 0, b = w - 1; a < b; a++, b--) {
                    uint8_t t[3];
                    memcpy(t, row + 3 * a, 3);
                    memcpy(row + 3 * a, row + 3 * b, 3);
                    memcpy(row + 3 * b, t, 3);
                }
                continue;
            }
            for (int a = 0, b = w - 1; a < b; a++, b--)
                for (int k = 0; k < c; k++) {
                    uint8_t t = row[a * c + k];
                    row[a * c + k] = row[b * c + k];
                    row[b * c + k] = t;
                }
        }
    }
    if (labels && img) mirror_labels(labels, 0, (float)img->w);
}

void vt_aug_flipud(vt_image *img, vt_aug_labels *labels)
{
    if (img && img->data) {
        const size_t row = (size_t)img->w * img->c;
        for (int a = 0, b = img->h - 1; a < b; a++, b--) {
            uint8_t *ra = img->data + a * row, *rb = img->data + b * row;
            for (size_t k = 0; k < row; k++) {
                uint8_t t = ra[k];
                ra[k] = rb[k];
                rb[k] = t;
            }
        }
    }
    if (labels && img) mirror_labels(labels, 1, (float)img->h);
}

void vt_aug_hsv_flips(vt_image *img, vt_aug_labels *labels, const vt_aug_params *p, vt_rng *r)
{
    vt_aug_colour c;
    vt_aug_colour_draw(p, r, &c);
    vt_aug_colour_apply(img, &c);
    if (img) vt_aug_colour_labels(labels, img->w, img->h, &c);
}

void vt_aug_colour_apply(vt_image *img, const vt_aug_colour *c)
{
    vt_aug_hsv_apply(img, c->dh, c->gs, c->gv);
    if (c->flipud) vt_aug_flipud(img, NULL);
    if (c->fliplr) vt_aug_fliplr(img, NULL);
}

void vt_aug_colour_labels(vt_aug_labels *labels, int w, int h, const vt_aug_colour *c)
{
    if (!labels) return;
    if (c->flipud) mirror_labels(labels, 1, (float)h);
    if (c->fliplr) mirror_labels(labels, 0, (float)w);
}

/* ---- letterbox + affine ------------------------------------------------------------------ */

static int valid_image(const vt_image *im)
{
    return im && im->data && im->w > 0 && im->h > 0 && im->c >= 1 && im->c <= 4;
}

/* ---- samples: a warp of tiles, then colour -------------------------------------------------
 * A sample's canvas is the fill 114 but for its tiles (see vt_aug_tile): a mosaic's four placed
 * images on 2s x 2s, or a letterbox's one image on s x s.  Its pixels are that canvas warped by
 * the sample's transform, then its colour: without painting the canvas where the warp is
 * separable (vt_aug_warp_tiles), else painted and warped in general. */

/* The canvas painted. */
static vt_status paint_tiles(const vt_aug_sample *smp, vt_image *canvas)
{
    const int c = smp->c, cw = smp->canvas_w, ch = smp->canvas_h;
    uint8_t *data = vt_malloc((size_t)cw * ch * c);
    if (!data) return VT_ERR_OUT_OF_MEMORY;
    memset(data, 114, (size_t)cw * ch * c);
    for (int i = 0; i < 4; i++) {
        const vt_aug_tile *t = &smp->tiles[i];
        for (int y = t->y0; y < t->y1 && t->x1 > t->x0; y++)
            memcpy(data + ((size_t)y * cw + t->x0) * c,
                   t->img->data + ((size_t)(y - t->y0 + t->oy) * t->img->w + t->ox) * c,
                   (size_t)(t->x1 - t->x0) * c);
    }
    canvas->w = cw;
    canvas->h = ch;
    canvas->c = c;
    canvas->data = data;
    return VT_OK;
}

/* The warped canvas as bytes, before the colour. */
static vt_status sample_warp(const vt_aug_sample *smp, vt_image *dst)
{
    int done = 0;
    vt_status st = VT_OK;
    if (smp->c == 3)
        st = vt_aug_warp_tiles(smp->tiles, smp->canvas_w, smp->canvas_h, smp->xc, smp->yc,
                               &smp->t, smp->s, smp->s, 114, dst, &done);
    if (st || done) return st;
    vt_image canvas = {0, 0, 0, NULL};
    st = paint_tiles(smp, &canvas);
    if (!st) st = vt_aug_warp_image(&canvas, &smp->t, smp->s, smp->s, 114, dst);
    vt_image_free(&canvas);
    return st;
}

void vt_aug_sample_free(vt_aug_sample *smp)
{
    if (!smp) return;
    for (int i = 0; i < 4; i++) vt_image_free(&smp->own[i]);
    memset(smp, 0, sizeof *smp);
}

vt_status vt_aug_sample_image(const vt_aug_sample *smp, vt_image *dst)
{
    if (!smp || !dst || smp->s < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_sample_image: bad arguments");
    vt_image img = {0, 0, 0, NULL};
    vt_status st = sample_warp(smp, &img);
    if (st) return st;
    vt_aug_colour_apply(&img, &smp->colour);
    *dst = img;
    return VT_OK;
}

vt_status vt_aug_sample_float(const vt_aug_sample *smp, int want_c, float *dst,
                              size_t chan_stride)
{
    if (!smp || !dst || smp->s < 1 || (want_c != 1 && want_c != 3))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_sample_float: bad arguments");
    int done = 0;
    vt_status st = VT_OK;
    if (smp->c == 3 && want_c == 3)
        st = vt_aug_warp_tiles_float(smp->tiles, smp->canvas_w, smp->canvas_h, smp->xc, smp->yc,
                                     &smp->t, smp->s, smp->s, 114, &smp->colour, dst,
                                     chan_stride, &done);
    if (st || done) return st;
    vt_image img = {0, 0, 0, NULL};
    st = sample_warp(smp, &img);
    if (!st) st = vt_aug_colour_to_float(&img, &smp->colour, want_c, dst, chan_stride);
    vt_image_free(&img);
    return st;
}

/* After the tiles and the labels on the canvas: the transform to s x s, the colour, and the
 * labels through both. */
static vt_status sample_finish(vt_aug_sample *smp, const vt_aug_params *p, vt_rng *r,
                               vt_aug_labels *labels)
{
    const int s = smp->s;
    vt_aug_transform_draw(p, r, smp->canvas_w, smp->canvas_h, s, s, &smp->t);
    vt_status st = vt_aug_warp_labels(labels, &smp->t, s, s);
    if (st) return st;
    vt_aug_colour_draw(p, r, &smp->colour);
    vt_aug_colour_labels(labels, s, s, &smp->colour);
    return VT_OK;
}

vt_status vt_aug_letterbox_sample(const vt_image *src, const vt_aug_labels *labels, int s,
                                  const vt_aug_params *p, vt_rng *r, vt_aug_sample *smp,
                                  vt_aug_labels *out)
{
    if (smp) memset(smp, 0, sizeof *smp);
    if (!valid_image(src) || !p || !r || !smp || s < 1 || s > 32768 || (labels && !out))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_letterbox_sample: bad arguments");
    vt_letterbox lb;
    vt_aug_labels tmp;
    vt_status st = vt_letterbox_geometry(src->w, src->h, s, s, 1, &lb);
    if (st) return st;
    if ((st = labels_copy(&tmp, labels))) return st;
    /* vt_letterbox_image: the image resized (a plain copy when it has that size already) and
     * placed at the padding, on s x s of 114 */
    const vt_image *img = src;
    if (lb.new_w != src->w || lb.new_h != src->h) {
        st = vt_image_resize(src, lb.new_w, lb.new_h, &smp->own[0]);
        img = &smp->own[0];
    }
    smp->s = s;
    smp->c = src->c;
    smp->canvas_w = smp->canvas_h = s;
    smp->xc = smp->yc = s; /* everything is top left */
    smp->tiles[0] = (vt_aug_tile){img, lb.pad_x, lb.pad_y, lb.pad_x + lb.new_w,
                                  lb.pad_y + lb.new_h, 0, 0};
    for (int i = 1; i < 4; i++) smp->tiles[i] = (vt_aug_tile){NULL, s, s, s, s, 0, 0};
    for (int i = 0; !st && i < tmp.n; i++) {
        vt_aug_box *b = &tmp.box[i];
        float c4[4] = {b->x0, b->y0, b->x1, b->y1};
        vt_letterbox_forward(&lb, c4);
        b->x0 = c4[0];
        b->y0 = c4[1];
        b->x1 = c4[2];
        b->y1 = c4[3];
    }
    /* Polygon points with the same per-axis scale and offset as the boxes. */
    for (int k = 0; !st && k < tmp.nxy; k++) {
        float c4[4] = {tmp.xy[2 * k], tmp.xy[2 * k + 1], tmp.xy[2 * k], tmp.xy[2 * k + 1]};
        vt_letterbox_forward(&lb, c4);
        tmp.xy[2 * k] = c4[0];
        tmp.xy[2 * k + 1] = c4[1];
    }
    if (!st) st = sample_finish(smp, p, r, &tmp);
    if (st) {
        vt_aug_labels_free(&tmp);
        vt_aug_sample_free(smp);
        return st;
    }
    if (out) labels_move(out, &tmp);
    vt_aug_labels_free(&tmp);
    return VT_OK;
}

vt_status vt_aug_letterbox_affine(const vt_image *src, const vt_aug_labels *labels, int s,
                                  const vt_aug_params *p, vt_rng *r, vt_image *dst,
                                  vt_aug_labels *out)
{
    if (!dst || (labels && !out))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_letterbox_affine: bad arguments");
    vt_aug_sample smp;
    vt_aug_labels tmp;
    vt_aug_labels_init(&tmp);
    vt_status st = vt_aug_letterbox_sample(src, labels, s, p, r, &smp, &tmp);
    if (!st) st = vt_aug_sample_image(&smp, dst);
    vt_aug_sample_free(&smp);
    if (!st && out) labels_move(out, &tmp);
    vt_aug_labels_free(&tmp);
    return st;
}

/* ---- mosaic ------------------------------------------------------------------------------ */

/* Where each image goes (Ultralytics load_mosaic): draws the centre, resizes what needs it
 * (into smp->own), fills smp's tiles and maps the labels to canvas pixels into *all. */
static vt_status mosaic_layout(const vt_image *const imgs[4],
                               const vt_aug_labels *const labels[4], int s, vt_rng *r,
                               vt_aug_sample *smp, vt_aug_labels *all)
{
    const int S2 = 2 * s;
    int yc = (int)(s / 2.0 + s * vt_rng_uniform(r)); /* uniform(s/2, 3s/2), y first */
    int xc = (int)(s / 2.0 + s * vt_rng_uniform(r));
    smp->s = s;
    smp->c = imgs[0]->c;
    smp->canvas_w = smp->canvas_h = S2;
    smp->xc = xc;
    smp->yc = yc;
    vt_aug_labels one;
    vt_aug_labels_init(&one);
    vt_status st = VT_OK;
    for (int i = 0; i < 4 && !st; i++) {
        const vt_image *im = imgs[i];
        vt_letterbox lb; /* only its size: long side = s, aspect kept */
        st = vt_letterbox_geometry(im->w, im->h, s, s, 1, &lb);
        const vt_image *src = im;
        if (!st && (lb.new_w != im->w || lb.new_h != im->h)) {
            st = vt_image_resize(im, lb.new_w, lb.new_h, &smp->own[i]);
            src = &smp->own[i];
        }
        if (st) break;
        const int w = src->w, h = src->h;
        int x1a, y1a, x2a, y2a, x1b, y1b; /* canvas rectangle, and its origin in the image */
        if (i == 0) { /* top left */
            x1a = xc - w > 0 ? xc - w : 0, y1a = yc - h > 0 ? yc - h : 0, x2a = xc, y2a = yc;
            x1b = w - (x2a - x1a), y1b = h - (y2a - y1a);
        } else if (i == 1) { /* top right */
            x1a = xc, y1a = yc - h > 0 ? yc - h : 0, x2a = xc + w < S2 ? xc + w : S2, y2a = yc;
            x1b = 0, y1b = h - (y2a - y1a);
        } else if (i == 2) { /* bottom left */
            x1a = xc - w > 0 ? xc - w : 0, y1a = yc, x2a = xc, y2a = yc + h < S2 ? yc + h : S2;
            x1b = w - (x2a - x1a), y1b = 0;
        } else { /* bottom right */
            x1a = xc, y1a = yc, x2a = xc + w < S2 ? xc + w : S2, y2a = yc + h < S2 ? yc + h : S2;
            x1b = 0, y1b = 0;
        }
        smp->tiles[i] = (vt_aug_tile){src, x1a, y1a, x2a, y2a, x1b, y1b};
        if (!labels || !labels[i] || !labels[i]->n) continue;
        /* image pixels -> resized -> canvas, clipped to what was placed */
        vt_aug_transform t = {{lb.sx, 0, x1a - x1b, 0, lb.sy, y1a - y1b, 0, 0, 1}, 1.0};
        const float clip[4] = {(float)x1a, (float)y1a, (float)x2a, (float)y2a};
        vt_aug_labels_clear(&one);
        st = vt_aug_labels_append(&one, labels[i]);
        if (!st) st = vt_aug_map_labels(&one, &t, clip, 0);
        if (!st) st = vt_aug_labels_append(all, &one);
    }
    vt_aug_labels_free(&one);
    return st;
}

static vt_status mosaic_check(const vt_image *const imgs[4], int s, vt_rng *r)
{
    if (!imgs || !r || s < 2 || s > 16384)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_mosaic: bad arguments (s = %d)", s);
    for (int i = 0; i < 4; i++)
        if (!valid_image(imgs[i]) || imgs[i]->c != imgs[0]->c)
            return vt_fail(VT_ERR_INVALID_ARGUMENT,
                           "vt_aug_mosaic: image %d is missing or has a different channel "
                           "count",
                           i);
    return VT_OK;
}

vt_status vt_aug_mosaic_canvas(const vt_image *const imgs[4], const vt_aug_labels *const labels[4],
                               int s, vt_rng *r, vt_image *canvas, vt_aug_labels *out)
{
    vt_status st = canvas ? mosaic_check(imgs, s, r)
                          : vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_mosaic: bad arguments");
    if (st) return st;
    vt_aug_sample smp;
    memset(&smp, 0, sizeof smp);
    vt_aug_labels all;
    vt_aug_labels_init(&all);
    st = mosaic_layout(imgs, labels, s, r, &smp, &all);
    if (!st) st = paint_tiles(&smp, canvas);
    vt_aug_sample_free(&smp);
    if (!st && out) labels_move(out, &all);
    vt_aug_labels_free(&all);
    return st;
}

vt_status vt_aug_mosaic(const vt_image *const imgs[4], const vt_aug_labels *const labels[4],
                        int s, const vt_aug_params *p, vt_rng *r, vt_image *dst,
                        vt_aug_labels *out)
{
    vt_status st = p && dst ? mosaic_check(imgs, s, r)
                            : vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_mosaic: bad arguments");
    if (st) return st;
    vt_aug_sample smp;
    memset(&smp, 0, sizeof smp);
    vt_aug_labels all;
    vt_aug_labels_init(&all);
    st = mosaic_layout(imgs, labels, s, r, &smp, &all);
    /* vt_aug_affine of the canvas: the transform, the pixels, the labels */
    vt_image img = {0, 0, 0, NULL};
    if (!st) {
        vt_aug_transform_draw(p, r, 2 * s, 2 * s, s, s, &smp.t);
        st = sample_warp(&smp, &img);
    }
    if (!st) st = vt_aug_warp_labels(&all, &smp.t, s, s);
    vt_aug_sample_free(&smp);
    if (st) {
        vt_image_free(&img);
        vt_aug_labels_free(&all);
        return st;
    }
    *dst = img;
    if (out) labels_move(out, &all);
    vt_aug_labels_free(&all);
    return VT_OK;
}

vt_status vt_aug_mosaic_sample(const vt_image *const imgs[4],
                               const vt_aug_labels *const labels[4], int s,
                               const vt_aug_params *p, vt_rng *r, vt_aug_sample *smp,
                               vt_aug_labels *out)
{
    if (smp) memset(smp, 0, sizeof *smp);
    vt_status st = p && smp ? mosaic_check(imgs, s, r)
                            : vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_aug_mosaic: bad arguments");
    if (st) return st;
    vt_aug_labels all;
    vt_aug_labels_init(&all);
    st = mosaic_layout(imgs, labels, s, r, smp, &all);
    if (!st) st = sample_finish(smp, p, r, &all);
    if (st) {
        vt_aug_sample_free(smp);
        vt_aug_labels_free(&all);
        return st;
    }
    if (out) labels_move(out, &all);
    vt_aug_labels_free(&all);
    return VT_OK;
}

/* ---- mixup ------------------------------------------------------------------------------- */

/* Gamma(32, 1) as a sum of 32 exponentials (exact for an integer shape, and simple). */
static double gamma32(vt_rng *r)
{
    double s = 0.0;
    for (int i = 0; i < 32; i++) s -= log(1.0 - vt_rng_uniform(r)); /* 1 - u is in (0, 1] */
    return s;
}

vt_status vt_aug_mixup(vt_image *a, vt_aug_labels *la, const vt_image *b,
                       const vt_aug_labels *lb, vt_rng *r, float *ratio_out)
{
    if (!valid_image(a) || !valid_image(b) || !r || a->w != b->w || a->h != b->h ||
        a->c != b->c)
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "vt_aug_mixup: the two images must have the same size and channels");
    double x = gamma32(r), y = gamma32(r);
    float ratio = (float)(x / (x + y));
    if (la && lb && la != lb) {
        vt_status st = vt_aug_labels_append(la, lb);
        if (st) return st;
    } else if (la && lb) {
        vt_aug_labels copy;
        vt_status st = labels_copy(&copy, lb);
        if (!st) st = vt_aug_labels_append(la, &copy);
        vt_aug_labels_free(&copy);
        if (st) return st;
    }
    size_t n = (size_t)a->w * a->h * a->c;
    for (size_t i = 0; i < n; i++) {
        float v = a->data[i] * ratio + b->data[i] * (1.0f - ratio);
        a->data[i] = (uint8_t)(v + 0.5f);
    }
    if (ratio_out) *ratio_out = ratio;
    return VT_OK;
}
