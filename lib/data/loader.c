#include "data/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

enum { MSG = 320 };

struct vt_loader {
    const vt_dataset *ds;
    vt_split split;
    vt_loader_config cfg;
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
    free(L);
}

/* Detection: letterbox, then a horizontal flip of pixels and boxes. */
static vt_status load_one_det(vt_loader *L, int slot, const vt_image *img)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    int idx = L->indices[slot];
    int sz = L->cfg.imgsz, c = L->cfg.channels;
    vt_image lbimg = {0};
    vt_letterbox *lb = &L->lb[slot];
    vt_status st = vt_letterbox_image(img, sz, sz, 1, 114, &lbimg, lb);
    if (st) return st;
    int flip = 0;
    if (L->aug_seed && L->cfg.fliplr > 0)
        flip = vt_hash_uniform(L->aug_seed, (uint64_t)idx * 16 + 1) < L->cfg.fliplr;
    size_t plane = (size_t)sz * sz;
    vt_image_to_float(&lbimg, c, flip, L->scratch + (size_t)slot * c * plane, plane);
    vt_image_free(&lbimg);
    vt_det_list *out = &L->boxes[slot];
    out->n = 0;
    for (int j = sl->box_start[idx]; j < sl->box_start[idx + 1]; j++) {
        const vt_det_box *b = &sl->boxes[j];
        float box[4] = {(b->cx - 0.5f * b->w) * img->w, (b->cy - 0.5f * b->h) * img->h,
                        (b->cx + 0.5f * b->w) * img->w, (b->cy + 0.5f * b->h) * img->h};
        vt_letterbox_forward(lb, box);
        if (flip) {
            float x0 = box[0];
            box[0] = sz - box[2];
            box[2] = sz - x0;
        }
        if (!(box[2] > box[0]) || !(box[3] > box[1])) continue;
        vt_det d = {box[0], box[1], box[2], box[3], 1.0f, b->cls};
        if ((st = vt_det_list_push(out, &d))) return st;
    }
    return VT_OK;
}

static vt_status load_one(vt_loader *L, int slot)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    int idx = L->indices[slot];
    int sz = L->cfg.imgsz, c = L->cfg.channels;
    vt_image img, rs = {0};
    vt_status st = vt_image_load(sl->paths[idx], &img);
    if (st) return st;
    if (L->ds->task == VT_TASK_DETECT) {
        st = load_one_det(L, slot, &img);
        vt_image_free(&img);
        return st;
    }
    const vt_image *src = &img;
    if (img.w != sz || img.h != sz) {
        st = vt_image_resize(&img, sz, sz, &rs);
        src = &rs;
    }
    if (!st) {
        int flip = 0;
        if (L->aug_seed && L->cfg.fliplr > 0)
            flip = vt_hash_uniform(L->aug_seed, (uint64_t)idx * 16 + 1) < L->cfg.fliplr;
        size_t plane = (size_t)sz * sz;
        vt_image_to_float(src, c, flip, L->scratch + (size_t)slot * c * plane, plane);
    }
    vt_image_free(&rs);
    vt_image_free(&img);
    return st;
}

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
