/* The loader: one job per batch, split over the pool; each slot decodes and augments one image
 * (and, for a mosaic or mixup, the extra images it draws). */
#include "data/loader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/seg_mask.h"
#include "image/image.h"

enum { MSG = 320 };

struct vt_loader {
    const vt_dataset *ds;
    vt_split split;
    vt_loader_config cfg;
    vt_aug_params aug;      /* valid when cfg.aug != NULL (cfg.aug then points here) */
    int mosaic_on;
    vt_pool *pool;
    unsigned char *bad;     /* per image: 1 once it failed to decode (warned once) */
    float *scratch;         /* cap images of channels*imgsz*imgsz, CHW each */
    int cap;
    vt_status *status;      /* per slot */
    char (*msg)[MSG];       /* per slot error message */
    /* detection: per slot, its boxes and letterbox geometry */
    vt_det_list *boxes;
    vt_letterbox *lb;
    int *packed;            /* packed image k -> slot */
    uint8_t *masks;         /* segmentation: per slot an imgsz x imgsz class mask */
    /* the job being filled */
    const int *indices;
    uint64_t aug_seed;
};

vt_status vt_loader_create(vt_loader **out, const vt_dataset *ds, vt_split split,
                           const vt_loader_config *cfg)
{
    *out = NULL;
    vt_loader *L = vt_calloc(1, sizeof *L);
    if (!L) return VT_ERR_OUT_OF_MEMORY;
    L->ds = ds;
    L->split = split;
    L->cfg = *cfg;
    if (cfg->aug) {
        L->aug = *cfg->aug;
        L->cfg.aug = &L->aug;
    }
    L->mosaic_on = 1;
    int n = ds->split[split].n;
    L->bad = vt_calloc((size_t)(n ? n : 1), 1);
    vt_status st = L->bad ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (!st) st = vt_pool_create(&L->pool, cfg->workers > 0 ? cfg->workers : 1);
    if (st) {
        vt_loader_destroy(L);
        return st;
    }
    *out = L;
    return VT_OK;
}

void vt_loader_destroy(vt_loader *L)
{
    if (!L) return;
    vt_pool_destroy(L->pool);
    free(L->bad);
    free(L->scratch);
    free(L->status);
    free(L->msg);
    for (int i = 0; L->boxes && i < L->cap; i++) vt_det_list_free(&L->boxes[i]);
    free(L->boxes);
    free(L->lb);
    free(L->packed);
    free(L->masks);
    free(L);
}

/* Image idx of the split and its boxes as augmentation labels in its own pixels. */
static vt_status load_labelled(const vt_loader *L, int idx, vt_image *img, vt_aug_labels *lab)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    vt_status st = vt_image_load(sl->paths[idx], img);
    if (st) return st;
    vt_aug_labels_clear(lab);
    float *xy = NULL;
    int xy_cap = 0;
    for (int j = sl->box_start[idx]; !st && j < sl->box_start[idx + 1]; j++) {
        const vt_det_box *b = &sl->boxes[j];
        const vt_seg_poly *pg = sl->polys ? &sl->polys[j] : NULL;
        if (pg && pg->npts >= 3) { /* a segmentation outline: carried through the geometry */
            if (2 * pg->npts > xy_cap) {
                float *nx = vt_realloc(xy, (size_t)pg->npts * 2 * sizeof *nx);
                if (!nx) {
                    st = VT_ERR_OUT_OF_MEMORY;
                    break;
                }
                xy = nx;
                xy_cap = 2 * pg->npts;
            }
            const float *src = sl->poly_xy + 2 * (size_t)pg->off;
            for (int k = 0; k < pg->npts; k++) {
                xy[2 * k] = src[2 * k] * img->w;
                xy[2 * k + 1] = src[2 * k + 1] * img->h;
            }
            st = vt_aug_labels_add_poly(lab, pg->cls, xy, pg->npts);
            continue;
        }
        st = vt_aug_labels_add_box(lab, b->cls, (b->cx - 0.5f * b->w) * img->w,
                                   (b->cy - 0.5f * b->h) * img->h, (b->cx + 0.5f * b->w) * img->w,
                                   (b->cy + 0.5f * b->h) * img->h);
    }
    free(xy);
    if (st) vt_image_free(img);
    return st;
}

/* One augmented detection sample at s x s: a mosaic of idx and three random images of the
 * split, or idx letterboxed; then the random affine (both paths) and, for the mosaic, HSV and
 * flips (vt_aug_letterbox_affine does them itself). */
static vt_status det_sample(const vt_loader *L, int idx, vt_rng *r, vt_image *dst,
                            vt_aug_labels *out)
{
    const vt_aug_params *p = &L->aug;
    int s = L->cfg.imgsz, n = L->ds->split[L->split].n;
    vt_image img[4] = {{0}};
    vt_aug_labels lab[4];
    for (int i = 0; i < 4; i++) vt_aug_labels_init(&lab[i]);
    vt_status st;
    if (vt_aug_chance(r, p->mosaic) && L->mosaic_on) {
        int pick[4] = {idx, (int)vt_rng_below(r, (uint32_t)n), (int)vt_rng_below(r, (uint32_t)n),
                       (int)vt_rng_below(r, (uint32_t)n)};
        st = VT_OK;
        for (int i = 0; i < 4 && !st; i++) st = load_labelled(L, pick[i], &img[i], &lab[i]);
        if (!st) {
            const vt_image *ip[4] = {&img[0], &img[1], &img[2], &img[3]};
            const vt_aug_labels *lp[4] = {&lab[0], &lab[1], &lab[2], &lab[3]};
            st = vt_aug_mosaic(ip, lp, s, p, r, dst, out);
            if (!st) vt_aug_hsv_flips(dst, out, p, r);
        }
    } else {
        st = load_labelled(L, idx, &img[0], &lab[0]);
        if (!st) st = vt_aug_letterbox_affine(&img[0], &lab[0], s, p, r, dst, out);
    }
    for (int i = 0; i < 4; i++) {
        vt_image_free(&img[i]);
        vt_aug_labels_free(&lab[i]);
    }
    return st;
}

/* Detection (and polygon segmentation) with augmentation: det_sample, and with probability
 * `mixup` a second sample of a random image blended in.  Detection keeps the boxes;
 * segmentation rasterises the transformed outlines into the slot's mask (background 0, so the
 * grey border a mosaic or a shift leaves counts as background, as in Ultralytics). */
static vt_status load_det_aug(vt_loader *L, int slot, vt_rng *r, vt_image *dst)
{
    int idx = L->indices[slot];
    vt_aug_labels out, out2;
    vt_aug_labels_init(&out);
    vt_aug_labels_init(&out2);
    vt_image second = {0};
    vt_status st = det_sample(L, idx, r, dst, &out);
    if (!st && vt_aug_chance(r, L->aug.mixup)) {
        int other = (int)vt_rng_below(r, (uint32_t)L->ds->split[L->split].n);
        st = det_sample(L, other, r, &second, &out2);
        if (!st) st = vt_aug_mixup(dst, &out, &second, &out2, r, NULL);
    }
    if (L->ds->task == VT_TASK_SEGMENT) {
        int sz = L->cfg.imgsz;
        uint8_t *m = L->masks + (size_t)slot * sz * sz;
        memset(m, 0, (size_t)sz * sz);
        if (!st) st = vt_seg_draw_aug_labels(&out, sz, sz, m);
        vt_image_free(&second);
        vt_aug_labels_free(&out);
        vt_aug_labels_free(&out2);
        return st;
    }
    vt_det_list *boxes = &L->boxes[slot];
    boxes->n = 0;
    for (int j = 0; !st && j < out.n; j++) {
        const vt_aug_box *b = &out.box[j];
        if (!(b->x1 > b->x0) || !(b->y1 > b->y0)) continue;
        vt_det d = {b->x0, b->y0, b->x1, b->y1, 1.0f, b->cls};
        st = vt_det_list_push(boxes, &d);
    }
    if (!st) st = vt_letterbox_geometry(L->cfg.imgsz, L->cfg.imgsz, L->cfg.imgsz, L->cfg.imgsz, 1,
                                        &L->lb[slot]);
    vt_image_free(&second);
    vt_aug_labels_free(&out);
    vt_aug_labels_free(&out2);
    return st;
}

/* Detection without augmentation: letterbox; boxes mapped with it. */
static vt_status load_det_plain(vt_loader *L, int slot, const vt_image *img, vt_image *dst)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    int idx = L->indices[slot], sz = L->cfg.imgsz;
    vt_letterbox *lb = &L->lb[slot];
    vt_status st = vt_letterbox_image(img, sz, sz, 1, 114, dst, lb);
    if (st) return st;
    vt_det_list *out = &L->boxes[slot];
    out->n = 0;
    for (int j = sl->box_start[idx]; j < sl->box_start[idx + 1]; j++) {
        const vt_det_box *b = &sl->boxes[j];
        float box[4] = {(b->cx - 0.5f * b->w) * img->w, (b->cy - 0.5f * b->h) * img->h,
                        (b->cx + 0.5f * b->w) * img->w, (b->cy + 0.5f * b->h) * img->h};
        vt_letterbox_forward(lb, box);
        if (!(box[2] > box[0]) || !(box[3] > box[1])) continue;
        vt_det d = {box[0], box[1], box[2], box[3], 1.0f, b->cls};
        if ((st = vt_det_list_push(out, &d))) return st;
    }
    return VT_OK;
}

/* Classification: resize (or a random resized crop), then HSV, flips and erasing. */
static vt_status load_cls(vt_loader *L, const vt_image *img, vt_rng *r, vt_image *dst)
{
    int sz = L->cfg.imgsz;
    const vt_aug_params *p = r ? &L->aug : NULL;
    if (p && p->crop_scale_min < 1.0f) return vt_aug_classify(img, sz, p, r, dst);
    vt_status st = vt_image_resize(img, sz, sz, dst);
    if (st || !p) return st;
    vt_aug_hsv_flips(dst, NULL, p, r);
    vt_aug_random_erasing(dst, p->erasing, -1, r, NULL);
    return VT_OK;
}

/* Segmentation without the polygon path (validation, or a mask-PNG dataset): letterbox the
 * image (grey padding) and its class mask (nearest neighbour, the padding `ignore`), then with
 * augmentation HSV (the image) and the flips (both).  Mask-PNG datasets get no mosaic or affine
 * yet; polygon datasets train through load_det_aug. */
static vt_status load_seg(vt_loader *L, int slot, const vt_image *img, vt_rng *r, vt_image *dst)
{
    int idx = L->indices[slot], sz = L->cfg.imgsz;
    uint8_t ignore = (uint8_t)vt_seg_ignore_value(L->ds);
    uint8_t *src = vt_malloc((size_t)img->w * img->h);
    if (!src) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = vt_seg_image_mask(L->ds, L->split, idx, img->w, img->h, src);
    vt_letterbox lb;
    if (!st) st = vt_letterbox_image(img, sz, sz, 1, 114, dst, &lb);
    if (st) {
        free(src);
        return st;
    }
    uint8_t *m = L->masks + (size_t)slot * sz * sz;
    for (int y = 0; y < sz; y++) {
        int sy = (int)floor((y - lb.pad_y + 0.5) * img->h / (double)lb.new_h);
        for (int x = 0; x < sz; x++) {
            int sx = (int)floor((x - lb.pad_x + 0.5) * img->w / (double)lb.new_w);
            int in = x >= lb.pad_x && x < lb.pad_x + lb.new_w && y >= lb.pad_y &&
                     y < lb.pad_y + lb.new_h;
            sx = sx < 0 ? 0 : sx >= img->w ? img->w - 1 : sx;
            sy = sy < 0 ? 0 : sy >= img->h ? img->h - 1 : sy;
            m[(size_t)y * sz + x] = in ? src[(size_t)sy * img->w + sx] : ignore;
        }
    }
    free(src);
    if (r) {
        const vt_aug_params *p = &L->aug;
        vt_aug_hsv(dst, p->hsv_h, p->hsv_s, p->hsv_v, r);
        int ud = vt_aug_chance(r, p->flipud), lr = vt_aug_chance(r, p->fliplr);
        if (ud) {
            vt_aug_flipud(dst, NULL);
            for (int y = 0; y < sz / 2; y++)
                for (int x = 0; x < sz; x++) {
                    uint8_t *a = m + (size_t)y * sz + x, *b = m + (size_t)(sz - 1 - y) * sz + x;
                    uint8_t t = *a;
                    *a = *b;
                    *b = t;
                }
        }
        if (lr) {
            vt_aug_fliplr(dst, NULL);
            for (int y = 0; y < sz; y++)
                for (int x = 0; x < sz / 2; x++) {
                    uint8_t *a = m + (size_t)y * sz + x, *b = m + (size_t)y * sz + sz - 1 - x;
                    uint8_t t = *a;
                    *a = *b;
                    *b = t;
                }
        }
    }
    return VT_OK;
}

static vt_status load_one(vt_loader *L, int slot)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    int idx = L->indices[slot];
    int sz = L->cfg.imgsz, c = L->cfg.channels;
    int augment = L->aug_seed && L->cfg.aug;
    vt_rng rng;
    if (augment) vt_rng_seed(&rng, L->aug_seed ^ ((uint64_t)idx + 1) * 0x9E3779B97F4A7C15ull);
    vt_image img = {0}, out = {0};
    vt_status st;
    int poly_seg = L->ds->task == VT_TASK_SEGMENT && sl->polys && !sl->mask_paths;
    if ((L->ds->task == VT_TASK_DETECT || poly_seg) && augment) {
        st = load_det_aug(L, slot, &rng, &out);
    } else {
        if ((st = vt_image_load(sl->paths[idx], &img))) return st;
        st = L->ds->task == VT_TASK_DETECT    ? load_det_plain(L, slot, &img, &out)
             : L->ds->task == VT_TASK_SEGMENT ? load_seg(L, slot, &img, augment ? &rng : NULL, &out)
                                              : load_cls(L, &img, augment ? &rng : NULL, &out);
    }
    if (!st) {
        size_t plane = (size_t)sz * sz;
        vt_image_to_float(&out, c, 0, L->scratch + (size_t)slot * c * plane, plane);
    }
    vt_image_free(&out);
    vt_image_free(&img);
    return st;
}

void vt_loader_set_mosaic(vt_loader *L, int on) { L->mosaic_on = on != 0; }

static void load_range(void *ctx, size_t b, size_t e)
{
    vt_loader *L = ctx;
    for (size_t s = b; s < e; s++) {
        L->status[s] = load_one(L, (int)s);
        if (L->status[s]) snprintf(L->msg[s], MSG, "%s", vt_last_error());
    }
}

vt_status vt_loader_fill(vt_loader *L, const int *indices, int n, uint64_t aug_seed,
                         float *batch, int32_t *labels, int *n_ok)
{
    *n_ok = 0;
    int c = L->cfg.channels;
    size_t plane = (size_t)L->cfg.imgsz * L->cfg.imgsz;
    if (n > L->cap) {
        float *s = vt_realloc(L->scratch, (size_t)n * c * plane * sizeof(float));
        if (!s) return VT_ERR_OUT_OF_MEMORY;
        L->scratch = s;
        vt_status *stv = vt_realloc(L->status, (size_t)n * sizeof *stv);
        if (!stv) return VT_ERR_OUT_OF_MEMORY;
        L->status = stv;
        char(*m)[MSG] = vt_realloc(L->msg, (size_t)n * sizeof *m);
        if (!m) return VT_ERR_OUT_OF_MEMORY;
        L->msg = m;
        if (L->ds->task == VT_TASK_DETECT) {
            vt_det_list *bl = vt_realloc(L->boxes, (size_t)n * sizeof *bl);
            if (!bl) return VT_ERR_OUT_OF_MEMORY;
            memset(bl + L->cap, 0, (size_t)(n - L->cap) * sizeof *bl);
            L->boxes = bl;
            vt_letterbox *lb = vt_realloc(L->lb, (size_t)n * sizeof *lb);
            if (!lb) return VT_ERR_OUT_OF_MEMORY;
            L->lb = lb;
        }
        if (L->ds->task == VT_TASK_SEGMENT) {
            uint8_t *mk = vt_realloc(L->masks, (size_t)n * plane);
            if (!mk) return VT_ERR_OUT_OF_MEMORY;
            L->masks = mk;
        }
        int *pk = vt_realloc(L->packed, (size_t)n * sizeof *pk);
        if (!pk) return VT_ERR_OUT_OF_MEMORY;
        L->packed = pk;
        L->cap = n;
    }
    L->indices = indices;
    L->aug_seed = aug_seed;
    vt_pool_run(L->pool, (size_t)n, 1, load_range, L);
    const vt_split_list *sl = &L->ds->split[L->split];
    int ok = 0, first_bad = -1;
    for (int s = 0; s < n; s++)
        if (L->status[s] == VT_OK) ok++;
        else {
            if (first_bad < 0) first_bad = s;
            if (!L->bad[indices[s]]) {
                L->bad[indices[s]] = 1;
                vt_log(L->cfg.log, VT_LOG_WARNING, "skipping image: %s", L->msg[s]);
            }
        }
    if (ok == 0)
        return vt_fail(VT_ERR_DATASET, "no image of a batch of %d could be read (first: %s)", n,
                       L->msg[first_bad]);
    /* Pack the decoded CHW images into CNHW. */
    int k = 0;
    for (int s = 0; s < n; s++) {
        if (L->status[s]) continue;
        for (int ch = 0; ch < c; ch++)
            memcpy(batch + ((size_t)ch * ok + k) * plane,
                   L->scratch + ((size_t)s * c + ch) * plane, plane * sizeof(float));
        labels[k] = sl->labels ? sl->labels[indices[s]] : indices[s];
        L->packed[k++] = s;
    }
    *n_ok = ok;
    return VT_OK;
}

void vt_loader_boxes(const vt_loader *L, int k, const vt_det **boxes, int *count,
                     vt_letterbox *lb)
{
    int s = L->packed[k];
    *boxes = L->boxes[s].v;
    *count = L->boxes[s].n;
    if (lb) *lb = L->lb[s];
}

const uint8_t *vt_loader_mask(const vt_loader *L, int k)
{
    return L->masks + (size_t)L->packed[k] * L->cfg.imgsz * L->cfg.imgsz;
}
