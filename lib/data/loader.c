/* The loader: one job per batch, split over the pool; each slot decodes and augments one image
 * and writes its floats straight to its place in the CNHW batch; images that failed are
 * squeezed out afterwards.  Detection (and polygon segmentation) with augmentation runs a job
 * in two phases, each split over the pool: A, every slot loads its own base image and labels
 * into the lbuf; B, every slot whose image loaded builds its sample, taking its mosaic and
 * mixup partners among the batch's loaded images (read only, shared by the slots: the pool's
 * join between the phases orders A's writes before B's reads).  So a mosaic costs one decode,
 * not four, and the partners depend on the seed and the batch's indices only.
 *
 * Prefetch: a producer thread runs submitted jobs in order (it is then the pool's first thread),
 * each into its own buffer of a ring of prefetch + 1: the batches in flight and the one the
 * consumer holds.  head / processed / tail count jobs submitted, finished and consumed; the
 * buffer of job j is ring[j % nring].  A job's outputs are written by the producer before it
 * bumps `processed` under the mutex and read by the consumer after it sees that under the same
 * mutex, so the buffers themselves need no locking.
 *
 * Cache: per image, a base image published once (pixels written, then a release store of its
 * flag) and never changed or freed before the loader is destroyed, so readers on any thread
 * borrow it without locks or counts.  The mutex only serialises the byte accounting. */
#include "data/loader.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/seg_mask.h"
#include "image/image.h"

enum { MSG = 320, SYNTH_MAX_OBJECTS = 8 };

typedef struct vt_loader vt_loader;

/* One batch: the job and its outputs. */
typedef struct lbuf {
    vt_loader *L;
    int cap;                /* images the arrays below hold */
    float *own;             /* async: channels x cap x plane floats; NULL for the sync buffer */
    int own_hosted;         /* own came from cfg.host_alloc */
    float *dst;             /* where this job writes: own, or the caller's batch */
    int32_t *labels;        /* async: packed labels (the sync fill writes the caller's) */
    int *indices;           /* the job's images (a copy) */
    vt_status *status;      /* per slot */
    char (*msg)[MSG];       /* per slot error message */
    vt_det_list *boxes;     /* detection: per slot, its boxes and letterbox geometry */
    vt_letterbox *lb;
    int *packed;            /* packed image k -> slot */
    uint8_t *masks;         /* segmentation: per slot an imgsz x imgsz class mask */
    uint16_t *inst;         /* instances: per slot an (imgsz/4)^2 instance-index map */
    /* Two-phase jobs (see the top): per slot its base image (owned ones freed at the end of
     * the job, cached ones borrowed) and labels (lists keep their memory from job to job), and
     * the slots whose base image loaded, in slot order: the mosaic and mixup partners. */
    vt_image *base;
    unsigned char *base_owned;
    vt_aug_labels *base_lab;
    uint8_t **dbuf;         /* per slot, the buffer its JPEGs are decoded into (kept) */
    size_t *dcap;
    int *ok_slots;
    int n_ok_slots, two_phase;
    int n, n_ok, mosaic;
    uint64_t aug_seed;
} lbuf;

typedef struct cache {
    vt_image *img;          /* per image of the split; valid once ready[i] */
    atomic_uchar *ready;
    pthread_mutex_t mu;
    int64_t cap, used;
    int count;
} cache;

struct vt_loader {
    const vt_dataset *ds;
    vt_split split;
    vt_loader_config cfg;
    vt_sample_kind kind;    /* never AUTO */
    vt_aug_params aug;      /* valid when cfg.aug != NULL (cfg.aug then points here) */
    int mosaic_on;
    vt_pool *pool;
    unsigned char *bad;     /* per image: 1 once it failed to decode (warned once) */
    cache *cache;           /* NULL: none */
    int prefetch, full_decode;
    lbuf sync;              /* vt_loader_fill's */
    const lbuf *cur;        /* the batch vt_loader_boxes refers to */
    atomic_int abort;       /* slots not started are skipped (drain, destroy) */
    /* prefetch */
    lbuf *ring;
    int nring;
    pthread_t producer;
    int has_producer;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    long head, processed, tail;
    int quit;
};

/* ---- buffers ----------------------------------------------------------------------------- */

/* The float batch of an async buffer, from the configured allocator when there is one.  The
 * buffer remembers which allocator made it (own_hosted). */
static float *batch_alloc(lbuf *B, size_t bytes)
{
    const vt_loader_config *c = &B->L->cfg;
    if (c->host_alloc && c->host_free) {
        float *f = c->host_alloc(c->host_ctx, bytes);
        if (f) {
            B->own_hosted = 1;
            return f;
        }
        vt_err_clear(); /* fall back to ordinary memory */
    }
    B->own_hosted = 0;
    return vt_malloc(bytes);
}

static void batch_free(lbuf *B, float *f)
{
    if (f && B->own_hosted) B->L->cfg.host_free(B->L->cfg.host_ctx, f);
    else free(f);
}

static void lbuf_free(lbuf *B)
{
    if (B->L) batch_free(B, B->own);
    else free(B->own);
    free(B->labels);
    free(B->indices);
    free(B->status);
    free(B->msg);
    for (int i = 0; B->boxes && i < B->cap; i++) vt_det_list_free(&B->boxes[i]);
    free(B->boxes);
    free(B->lb);
    free(B->packed);
    free(B->masks);
    free(B->inst);
    for (int i = 0; B->base && i < B->cap; i++)
        if (B->base_owned[i]) vt_image_free(&B->base[i]);
    for (int i = 0; B->base_lab && i < B->cap; i++) vt_aug_labels_free(&B->base_lab[i]);
    free(B->base);
    free(B->base_owned);
    free(B->base_lab);
    for (int i = 0; B->dbuf && i < B->cap; i++) free(B->dbuf[i]);
    free(B->dbuf);
    free(B->dcap);
    free(B->ok_slots);
    memset(B, 0, sizeof *B);
}

#define GROW(ptr, n)                                                                               \
    do {                                                                                           \
        void *p_ = vt_realloc((ptr), (size_t)(n) * sizeof *(ptr));                                 \
        if (!p_) return VT_ERR_OUT_OF_MEMORY;                                                      \
        (ptr) = p_;                                                                                \
    } while (0)

/* Room for n images (with_batch: also the floats and labels of an async buffer). */
static vt_status lbuf_reserve(lbuf *B, int n, int with_batch)
{
    if (n <= B->cap) return VT_OK;
    const vt_loader *L = B->L;
    if (with_batch) {
        size_t plane = (size_t)L->cfg.imgsz * L->cfg.imgsz;
        /* not realloc: the old floats are of no use */
        float *old = B->own;
        int old_hosted = B->own_hosted;
        float *f = batch_alloc(B, (size_t)n * L->cfg.channels * plane * sizeof(float));
        if (!f) {
            B->own_hosted = old_hosted;
            return VT_ERR_OUT_OF_MEMORY;
        }
        int new_hosted = B->own_hosted;
        B->own_hosted = old_hosted;
        batch_free(B, old);
        B->own = f;
        B->own_hosted = new_hosted;
        GROW(B->labels, n);
    }
    GROW(B->indices, n);
    GROW(B->status, n);
    GROW(B->msg, n);
    GROW(B->packed, n);
    if (L->kind == VT_SAMPLE_BOXES || L->kind == VT_SAMPLE_INSTANCES) {
        GROW(B->lb, n);
        vt_det_list *bl = vt_realloc(B->boxes, (size_t)n * sizeof *bl);
        if (!bl) return VT_ERR_OUT_OF_MEMORY;
        memset(bl + B->cap, 0, (size_t)(n - B->cap) * sizeof *bl);
        B->boxes = bl;
    }
    if (L->kind != VT_SAMPLE_LABEL) { /* two-phase jobs: zeroed (no image, empty lists) */
        vt_image *bi = vt_realloc(B->base, (size_t)n * sizeof *bi);
        if (!bi) return VT_ERR_OUT_OF_MEMORY;
        memset(bi + B->cap, 0, (size_t)(n - B->cap) * sizeof *bi);
        B->base = bi;
        unsigned char *bo = vt_realloc(B->base_owned, (size_t)n);
        if (!bo) return VT_ERR_OUT_OF_MEMORY;
        memset(bo + B->cap, 0, (size_t)(n - B->cap));
        B->base_owned = bo;
        vt_aug_labels *bl = vt_realloc(B->base_lab, (size_t)n * sizeof *bl);
        if (!bl) return VT_ERR_OUT_OF_MEMORY;
        for (int i = B->cap; i < n; i++) vt_aug_labels_init(&bl[i]);
        B->base_lab = bl;
        uint8_t **db = vt_realloc(B->dbuf, (size_t)n * sizeof *db);
        if (!db) return VT_ERR_OUT_OF_MEMORY;
        memset(db + B->cap, 0, (size_t)(n - B->cap) * sizeof *db);
        B->dbuf = db;
        size_t *dc = vt_realloc(B->dcap, (size_t)n * sizeof *dc);
        if (!dc) return VT_ERR_OUT_OF_MEMORY;
        memset(dc + B->cap, 0, (size_t)(n - B->cap) * sizeof *dc);
        B->dcap = dc;
        GROW(B->ok_slots, n);
    }
    if (L->kind == VT_SAMPLE_MASK) {
        /* not realloc: the old masks are of no use */
        uint8_t *m = vt_malloc((size_t)n * L->cfg.imgsz * L->cfg.imgsz);
        if (!m) return VT_ERR_OUT_OF_MEMORY;
        free(B->masks);
        B->masks = m;
    }
    if (L->kind == VT_SAMPLE_INSTANCES) {
        size_t q = (size_t)(L->cfg.imgsz / 4) * (L->cfg.imgsz / 4);
        uint16_t *m = vt_malloc((size_t)n * q * sizeof *m);
        if (!m) return VT_ERR_OUT_OF_MEMORY;
        free(B->inst);
        B->inst = m;
    }
    B->cap = n;
    return VT_OK;
}

/* ---- cache ------------------------------------------------------------------------------- */

static vt_status cache_create(cache **out, int n, int64_t cap)
{
    cache *c = vt_calloc(1, sizeof *c);
    if (!c) return VT_ERR_OUT_OF_MEMORY;
    c->img = vt_calloc((size_t)(n ? n : 1), sizeof *c->img);
    c->ready = vt_calloc((size_t)(n ? n : 1), sizeof *c->ready);
    if (!c->img || !c->ready) {
        free(c->img);
        free(c->ready);
        free(c);
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; i++) atomic_init(&c->ready[i], 0);
    pthread_mutex_init(&c->mu, NULL);
    c->cap = cap;
    *out = c;
    return VT_OK;
}

static void cache_destroy(cache *c, int n)
{
    if (!c) return;
    for (int i = 0; i < n; i++) vt_image_free(&c->img[i]);
    pthread_mutex_destroy(&c->mu);
    free(c->img);
    free(c->ready);
    free(c);
}

/* Hand img to the cache as image idx: 1 when taken (it is the cache's from now on), 0 when it
 * would pass the cap or another thread cached idx first (the caller keeps it). */
static int cache_put(cache *c, int idx, const vt_image *img)
{
    int64_t bytes = (int64_t)img->w * img->h * img->c;
    int taken = 0;
    pthread_mutex_lock(&c->mu);
    if (!atomic_load_explicit(&c->ready[idx], memory_order_relaxed) && c->used + bytes <= c->cap) {
        c->img[idx] = *img;
        c->used += bytes;
        c->count++;
        atomic_store_explicit(&c->ready[idx], 1, memory_order_release);
        taken = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return taken;
}

/* ---- lifetime ---------------------------------------------------------------------------- */

static void *producer_main(void *arg);

/* The pipeline a dataset trains with by its labels, for loaders that do not name one. */
static vt_sample_kind labels_sample_kind(const vt_labels *labels)
{
    return labels->instances ? VT_SAMPLE_INSTANCES
           : labels->masks   ? VT_SAMPLE_MASK
           : labels->boxes   ? VT_SAMPLE_BOXES
                             : VT_SAMPLE_LABEL;
}

vt_status vt_loader_create(vt_loader **out, const vt_dataset *ds, vt_split split,
                           const vt_loader_config *cfg)
{
    *out = NULL;
    vt_sample_kind kind = cfg->sample ? cfg->sample : labels_sample_kind(ds->labels);
    const vt_split_list *sl = &ds->split[split];
    /* what the pipeline reads must be there (an empty split has nothing to read) */
    int have = kind == VT_SAMPLE_LABEL   ? sl->labels || !sl->n
               : kind == VT_SAMPLE_BOXES ? sl->box_start || !sl->n
               : kind == VT_SAMPLE_MASK  ? sl->polys || sl->mask_paths || sl->box_start || !sl->n
               : kind == VT_SAMPLE_INSTANCES ? sl->part_start || !sl->n
                                         : 0;
    if (!have)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: the loader's sample pipeline %d needs "
                       "labels this dataset does not have", ds->root, (int)kind);
    if (kind == VT_SAMPLE_INSTANCES && (cfg->imgsz < 4 || cfg->imgsz % 4))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: instance maps are imgsz/4 a side; imgsz %d "
                       "is not a multiple of 4", ds->root, cfg->imgsz);
    vt_loader *L = vt_calloc(1, sizeof *L);
    if (!L) return VT_ERR_OUT_OF_MEMORY;
    L->ds = ds;
    L->split = split;
    L->cfg = *cfg;
    L->kind = kind;
    if (cfg->aug) {
        L->aug = *cfg->aug;
        L->cfg.aug = &L->aug;
    }
    L->mosaic_on = 1;
    L->sync.L = L;
    atomic_init(&L->abort, 0);
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->work, NULL);
    pthread_cond_init(&L->done, NULL);
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
    if (L->has_producer) {
        pthread_mutex_lock(&L->mu);
        L->quit = 1;
        atomic_store(&L->abort, 1);
        pthread_cond_broadcast(&L->work);
        pthread_mutex_unlock(&L->mu);
        pthread_join(L->producer, NULL);
    }
    vt_pool_destroy(L->pool);
    for (int i = 0; L->ring && i < L->nring; i++) lbuf_free(&L->ring[i]);
    free(L->ring);
    lbuf_free(&L->sync);
    if (L->ds) cache_destroy(L->cache, L->ds->split[L->split].n);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->work);
    pthread_cond_destroy(&L->done);
    free(L->bad);
    free(L);
}

vt_status vt_loader_start_prefetch(vt_loader *L, int depth)
{
    if (depth < 0 || depth > 8)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "loader: prefetch depth %d (0..8)", depth);
    if (L->has_producer || L->ring)
        return vt_fail(VT_ERR_BAD_STATE, "loader: prefetch already started");
    if (depth == 0 || L->cfg.workers <= 0) return VT_OK;
    L->ring = vt_calloc((size_t)depth + 1, sizeof *L->ring);
    if (!L->ring) return VT_ERR_OUT_OF_MEMORY;
    L->nring = depth + 1;
    L->prefetch = depth;
    for (int i = 0; i < L->nring; i++) L->ring[i].L = L;
    if (pthread_create(&L->producer, NULL, producer_main, L) != 0)
        return vt_fail(VT_ERR_OUT_OF_MEMORY, "cannot start the loader's producer thread");
    L->has_producer = 1;
    return VT_OK;
}

vt_status vt_loader_enable_cache(vt_loader *L, int64_t bytes)
{
    if (bytes <= 0 || L->cache)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "loader: cache of %lld bytes", (long long)bytes);
    return cache_create(&L->cache, L->ds->split[L->split].n, bytes);
}

void vt_loader_set_full_decode(vt_loader *L, int on) { L->full_decode = on != 0; }

void vt_loader_set_mosaic(vt_loader *L, int on) { L->mosaic_on = on != 0; }

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int vt_loader_pick_subset(int n, double fraction, uint64_t seed, int *out)
{
    for (int i = 0; i < n; i++) out[i] = i;
    if (!(fraction < 1) || n <= 2) return n;
    long k = lround(fraction * n);
    int m = k < 2 ? 2 : k > n ? n : (int)k;
    vt_rng r;
    vt_rng_seed(&r, ~(seed * 1000003u)); /* apart from the epochs' seed * 1000003 + epoch */
    for (int i = 0; i < m; i++) { /* the first m of a Fisher-Yates shuffle */
        int j = i + (int)vt_rng_below(&r, (uint32_t)(n - i)), tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
    qsort(out, (size_t)m, sizeof(int), cmp_int);
    return m;
}

void vt_loader_cache_stats(const vt_loader *L, int *images, int64_t *bytes)
{
    *images = 0;
    *bytes = 0;
    if (!L || !L->cache) return;
    pthread_mutex_lock(&L->cache->mu);
    *images = L->cache->count;
    *bytes = L->cache->used;
    pthread_mutex_unlock(&L->cache->mu);
}

/* ---- one image --------------------------------------------------------------------------- */

/* Image idx at its base size (see loader.h): from the cache, or decoded (at a reduced JPEG
 * scale when that loses nothing) and resized.  *owned: 1 when the caller must free *img, 0 when
 * it is the cache's (read only) or lies in *buf.  buf / cap (may be NULL): a buffer kept by the
 * caller to decode into (vt_image_load_scaled_into); given to the cache with the image. */
static vt_status base_image(const vt_loader *L, int idx, vt_image *img, int *owned,
                            uint8_t **buf, size_t *cap)
{
    cache *c = L->cache;
    if (c && atomic_load_explicit(&c->ready[idx], memory_order_acquire)) {
        *img = c->img[idx];
        *owned = 0;
        return VT_OK;
    }
    *owned = 1;
    /* detection and segmentation keep the aspect ratio (long side s), classification squashes */
    int s = L->cfg.imgsz, det = L->kind != VT_SAMPLE_LABEL;
    const char *path = L->ds->split[L->split].paths[idx];
    vt_image raw = {0};
    /* full decode: no target size */
    const int tw = L->full_decode ? 0 : s, th = L->full_decode ? 0 : s;
    vt_status st = buf ? vt_image_load_scaled_into(path, tw, th, det, buf, cap, &raw)
                       : vt_image_load_scaled(path, tw, th, det, &raw);
    if (st) return st;
    int w = s, h = s;
    if (det) { /* long side s, as mosaic and letterbox resize */
        vt_letterbox lb;
        if ((st = vt_letterbox_geometry(raw.w, raw.h, s, s, 1, &lb))) {
            vt_image_free(&raw);
            return st;
        }
        w = lb.new_w;
        h = lb.new_h;
    }
    if (raw.w == w && raw.h == h) {
        *img = raw;
        if (buf) *owned = 0; /* in *buf */
    } else {
        st = vt_image_resize(&raw, w, h, img);
        if (!buf) vt_image_free(&raw);
        if (st) return st;
    }
    if (c && cache_put(c, idx, img)) {
        *owned = 0;
        if (buf && img->data == *buf) { /* the cache's now */
            *buf = NULL;
            *cap = 0;
        }
    }
    return VT_OK;
}

/* Object j of an instance dataset as augmentation labels: its parts' normalised points times
 * (sx, sy), then through the letterbox lb when given; *xy / *xy_cap is scratch.  The parts'
 * point counts come straight from the dataset (its parts of one object are contiguous). */
static vt_status instance_labels(const vt_split_list *sl, int j, float sx, float sy,
                                 const vt_letterbox *lb, float **xy, int *xy_cap,
                                 vt_aug_labels *lab)
{
    int q0 = sl->part_start[j], q1 = sl->part_start[j + 1];
    const vt_seg_poly *p0 = &sl->parts[q0], *p1 = &sl->parts[q1 - 1];
    int off = p0->off, total = p1->off + p1->npts - off;
    int lens[64], *len = q1 - q0 <= 64 ? lens : vt_malloc((size_t)(q1 - q0) * sizeof *len);
    if (!len) return VT_ERR_OUT_OF_MEMORY;
    if (2 * total > *xy_cap) {
        float *nx = vt_realloc(*xy, (size_t)total * 2 * sizeof *nx);
        if (!nx) {
            if (len != lens) free(len);
            return VT_ERR_OUT_OF_MEMORY;
        }
        *xy = nx;
        *xy_cap = 2 * total;
    }
    const float *src = sl->poly_xy + 2 * (size_t)off;
    for (int k = 0; k < total; k++) {
        float x = src[2 * k] * sx, y = src[2 * k + 1] * sy;
        if (lb) {
            float c4[4] = {x, y, x, y};
            vt_letterbox_forward(lb, c4);
            x = c4[0];
            y = c4[1];
        }
        (*xy)[2 * k] = x;
        (*xy)[2 * k + 1] = y;
    }
    for (int q = q0; q < q1; q++) len[q - q0] = sl->parts[q].npts;
    vt_status st = vt_aug_labels_add_parts(lab, sl->boxes[j].cls, *xy, len, q1 - q0);
    if (len != lens) free(len);
    return st;
}

/* Image idx at its base size and its boxes as augmentation labels in its pixels. */
static vt_status load_labelled(const vt_loader *L, int idx, vt_image *img, int *owned,
                               uint8_t **buf, size_t *cap, vt_aug_labels *lab)
{
    const vt_split_list *sl = &L->ds->split[L->split];
    vt_status st = base_image(L, idx, img, owned, buf, cap);
    if (st) return st;
    vt_aug_labels_clear(lab);
    float *xy = NULL;
    int xy_cap = 0;
    for (int j = sl->box_start[idx]; !st && j < sl->box_start[idx + 1]; j++) {
        const vt_det_box *b = &sl->boxes[j];
        const vt_seg_poly *pg = sl->polys ? &sl->polys[j] : NULL;
        if (sl->part_start) { /* an instance's parts: carried through the geometry together */
            st = instance_labels(sl, j, (float)img->w, (float)img->h, NULL, &xy, &xy_cap, lab);
            continue;
        }
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
    if (st && *owned) vt_image_free(img);
    return st;
}

/* A random partner for a mosaic or mixup: one of the batch's slots whose base image loaded
 * (the slot itself included), like Ultralytics' buffer of recently loaded images. */
static int pick_partner(const lbuf *B, vt_rng *r)
{
    return B->ok_slots[vt_rng_below(r, (uint32_t)B->n_ok_slots)];
}

/* The instance-index map of `slot`: objects objs[0..n) of labels (input pixels), value k + 1
 * for objs[k], on a cleared map at 1/4 of the input. */
static vt_status paint_instances(lbuf *B, int slot, const vt_aug_labels *labels, const int *objs,
                                 int n)
{
    int q = B->L->cfg.imgsz / 4;
    uint16_t *map = B->inst + (size_t)slot * q * q;
    memset(map, 0, (size_t)q * q * sizeof *map);
    if (n > 65535)
        return vt_fail(VT_ERR_DATASET, "%s: %d objects in one sample; instance maps hold 65535",
                       B->L->ds->split[B->L->split].paths[B->indices[slot]], n);
    return vt_seg_draw_instance_map(labels, objs, n, 0.25f, q, q, map);
}

/* One augmented detection sample at s x s from the base image of `slot`: a mosaic of it and
 * three partners of the batch, or it letterboxed; then the random affine, HSV and flips.  Its
 * draws and labels are made now, its pixels by vt_aug_sample_float / _image. */
static vt_status det_sample(const lbuf *B, int slot, vt_rng *r, vt_aug_sample *smp,
                            vt_aug_labels *out)
{
    const vt_loader *L = B->L;
    const vt_aug_params *p = &L->aug;
    int s = L->cfg.imgsz;
    if (vt_aug_chance(r, p->mosaic) && B->mosaic) {
        int pick[4] = {slot, pick_partner(B, r), pick_partner(B, r), pick_partner(B, r)};
        const vt_image *ip[4];
        const vt_aug_labels *lp[4];
        for (int i = 0; i < 4; i++) {
            ip[i] = &B->base[pick[i]];
            lp[i] = &B->base_lab[pick[i]];
        }
        return vt_aug_mosaic_sample(ip, lp, s, p, r, smp, out);
    }
    return vt_aug_letterbox_sample(&B->base[slot], &B->base_lab[slot], s, p, r, smp, out);
}

/* Detection (and polygon segmentation) with augmentation: det_sample, and with probability
 * `mixup` a second sample of a partner of the batch blended in; the floats go to dst (channel
 * k at dst + k * chan_stride), straight from the warp when there is no mixup.  Detection keeps
 * the boxes; segmentation rasterises the transformed outlines into the slot's mask (background
 * 0, so the grey border a mosaic or a shift leaves counts as background, as in Ultralytics). */
static vt_status load_det_aug(lbuf *B, int slot, vt_rng *r, float *dst, size_t chan_stride)
{
    const vt_loader *L = B->L;
    vt_aug_labels out, out2;
    vt_aug_labels_init(&out);
    vt_aug_labels_init(&out2);
    vt_aug_sample first, second;
    memset(&second, 0, sizeof second);
    vt_status st = det_sample(B, slot, r, &first, &out);
    if (!st && vt_aug_chance(r, L->aug.mixup)) {
        int other = pick_partner(B, r);
        vt_image a = {0}, b = {0};
        st = det_sample(B, other, r, &second, &out2);
        if (!st) st = vt_aug_sample_image(&first, &a);
        if (!st) st = vt_aug_sample_image(&second, &b);
        if (!st) st = vt_aug_mixup(&a, &out, &b, &out2, r, NULL);
        if (!st) vt_image_to_float(&a, L->cfg.channels, 0, dst, chan_stride);
        vt_image_free(&a);
        vt_image_free(&b);
    } else if (!st) {
        st = vt_aug_sample_float(&first, L->cfg.channels, dst, chan_stride);
    }
    vt_aug_sample_free(&first);
    vt_aug_sample_free(&second);
    if (L->kind == VT_SAMPLE_MASK) {
        int sz = L->cfg.imgsz;
        uint8_t *m = B->masks + (size_t)slot * sz * sz;
        memset(m, 0, (size_t)sz * sz);
        if (!st) st = vt_seg_draw_aug_labels(&out, sz, sz, m);
        vt_aug_labels_free(&out);
        vt_aug_labels_free(&out2);
        return st;
    }
    vt_det_list *boxes = &B->boxes[slot];
    boxes->n = 0;
    /* instances: the objects whose boxes are kept, in box order, for the map */
    int inst = L->kind == VT_SAMPLE_INSTANCES && !st;
    int *kept = inst ? vt_malloc(((size_t)out.n + 1) * sizeof *kept) : NULL;
    if (inst && !kept) st = VT_ERR_OUT_OF_MEMORY;
    for (int j = 0; !st && j < out.n; j++) {
        const vt_aug_box *b = &out.box[j];
        if (!(b->x1 > b->x0) || !(b->y1 > b->y0)) continue;
        vt_det d = {b->x0, b->y0, b->x1, b->y1, 1.0f, b->cls};
        if (kept) kept[boxes->n] = j;
        st = vt_det_list_push(boxes, &d);
    }
    if (!st) st = vt_letterbox_geometry(L->cfg.imgsz, L->cfg.imgsz, L->cfg.imgsz, L->cfg.imgsz, 1,
                                        &B->lb[slot]);
    if (!st && kept) st = paint_instances(B, slot, &out, kept, boxes->n);
    free(kept);
    vt_aug_labels_free(&out);
    vt_aug_labels_free(&out2);
    return st;
}

/* Detection without augmentation: the full image letterboxed; boxes mapped with it. */
static vt_status load_det_plain(lbuf *B, int slot, vt_image *dst)
{
    const vt_loader *L = B->L;
    const vt_split_list *sl = &L->ds->split[L->split];
    int idx = B->indices[slot], sz = L->cfg.imgsz;
    vt_image img = {0};
    vt_status st = vt_image_load(sl->paths[idx], &img);
    if (st) return st;
    vt_letterbox *lb = &B->lb[slot];
    st = vt_letterbox_image(&img, sz, sz, 1, 114, dst, lb);
    vt_det_list *out = &B->boxes[slot];
    out->n = 0;
    /* instances: the outlines of the kept boxes, letterboxed like them */
    int inst = L->kind == VT_SAMPLE_INSTANCES;
    vt_aug_labels lab;
    vt_aug_labels_init(&lab);
    float *xy = NULL;
    int xy_cap = 0;
    for (int j = sl->box_start[idx]; !st && j < sl->box_start[idx + 1]; j++) {
        const vt_det_box *b = &sl->boxes[j];
        float box[4] = {(b->cx - 0.5f * b->w) * img.w, (b->cy - 0.5f * b->h) * img.h,
                        (b->cx + 0.5f * b->w) * img.w, (b->cy + 0.5f * b->h) * img.h};
        vt_letterbox_forward(lb, box);
        if (!(box[2] > box[0]) || !(box[3] > box[1])) continue;
        vt_det d = {box[0], box[1], box[2], box[3], 1.0f, b->cls};
        st = vt_det_list_push(out, &d);
        if (!st && inst)
            st = instance_labels(sl, j, (float)img.w, (float)img.h, lb, &xy, &xy_cap, &lab);
    }
    if (!st && inst) {
        int *objs = vt_malloc(((size_t)lab.n + 1) * sizeof *objs);
        if (!objs) st = VT_ERR_OUT_OF_MEMORY;
        for (int k = 0; !st && k < lab.n; k++) objs[k] = k;
        if (!st) st = paint_instances(B, slot, &lab, objs, lab.n);
        free(objs);
    }
    free(xy);
    vt_aug_labels_free(&lab);
    vt_image_free(&img);
    return st;
}

/* Classification: the base image (imgsz x imgsz) then HSV, flips and erasing; or a random
 * resized crop of the full image. */
static vt_status load_cls(const vt_loader *L, int idx, vt_rng *r, vt_image *dst)
{
    int sz = L->cfg.imgsz;
    const vt_aug_params *p = r ? &L->aug : NULL;
    vt_status st;
    if (p && p->crop_scale_min < 1.0f) {
        vt_image img = {0};
        if ((st = vt_image_load(L->ds->split[L->split].paths[idx], &img))) return st;
        st = vt_aug_classify(&img, sz, p, r, dst);
        vt_image_free(&img);
        return st;
    }
    vt_image img = {0};
    int owned;
    if ((st = base_image(L, idx, &img, &owned, NULL, NULL))) return st;
    if (owned) {
        *dst = img;
    } else { /* the cache's: augment a copy */
        st = vt_image_resize(&img, sz, sz, dst);
        if (st) return st;
    }
    if (!p) return VT_OK;
    vt_aug_hsv_flips(dst, NULL, p, r);
    vt_aug_random_erasing(dst, p->erasing, -1, r, NULL);
    return VT_OK;
}

/* Segmentation without the polygon path (validation, or a mask-PNG dataset): letterbox the
 * image (grey padding) and its class mask (nearest neighbour, the padding `ignore`), then with
 * augmentation HSV (the image) and the flips (both).  Mask-PNG datasets get no mosaic or affine
 * yet; polygon datasets train through load_det_aug. */
static vt_status load_seg(lbuf *B, int slot, const vt_image *img, vt_rng *r, vt_image *dst)
{
    const vt_loader *L = B->L;
    int idx = B->indices[slot], sz = L->cfg.imgsz;
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
    uint8_t *m = B->masks + (size_t)slot * sz * sz;
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

static vt_status load_one(lbuf *B, int slot)
{
    const vt_loader *L = B->L;
    int idx = B->indices[slot];
    int sz = L->cfg.imgsz, c = L->cfg.channels;
    int augment = B->aug_seed && L->cfg.aug;
    vt_rng rng;
    if (augment) vt_rng_seed(&rng, B->aug_seed ^ ((uint64_t)idx + 1) * 0x9E3779B97F4A7C15ull);
    vt_image out = {0};
    vt_status st;
    const vt_split_list *sl = &L->ds->split[L->split];
    int poly_seg = L->kind == VT_SAMPLE_MASK && sl->polys && !sl->mask_paths;
    size_t plane = (size_t)sz * sz;
    if (L->kind == VT_SAMPLE_BOXES || L->kind == VT_SAMPLE_INSTANCES || (poly_seg && augment)) {
        /* straight to the slot's place in the CNHW batch of n images */
        if (augment)
            return load_det_aug(B, slot, &rng, B->dst + (size_t)slot * plane,
                                (size_t)B->n * plane);
        st = load_det_plain(B, slot, &out);
    } else if (L->kind == VT_SAMPLE_MASK) {
        vt_image img = {0};
        if ((st = vt_image_load(sl->paths[idx], &img))) return st;
        st = load_seg(B, slot, &img, augment ? &rng : NULL, &out);
        vt_image_free(&img);
    } else {
        st = load_cls(L, idx, augment ? &rng : NULL, &out);
    }
    if (!st) {
        /* straight to the slot's place in the CNHW batch of n images */
        vt_image_to_float(&out, c, 0, B->dst + (size_t)slot * plane, (size_t)B->n * plane);
    }
    vt_image_free(&out);
    return st;
}

static void load_range(void *ctx, size_t b, size_t e)
{
    lbuf *B = ctx;
    for (size_t s = b; s < e; s++) {
        if (B->two_phase && B->status[s]) continue; /* its base image failed in phase A */
        if (atomic_load_explicit(&B->L->abort, memory_order_relaxed)) {
            B->status[s] = VT_ERR_CANCELLED;
            snprintf(B->msg[s], MSG, "abandoned");
            continue;
        }
        B->status[s] = load_one(B, (int)s);
        if (B->status[s]) snprintf(B->msg[s], MSG, "%s", vt_last_error());
    }
}

/* Phase A of a two-phase job: each slot's own base image and labels. */
static void load_base_range(void *ctx, size_t b, size_t e)
{
    lbuf *B = ctx;
    for (size_t s = b; s < e; s++) {
        B->base_owned[s] = 0;
        memset(&B->base[s], 0, sizeof B->base[s]);
        if (atomic_load_explicit(&B->L->abort, memory_order_relaxed)) {
            B->status[s] = VT_ERR_CANCELLED;
            snprintf(B->msg[s], MSG, "abandoned");
            continue;
        }
        int owned = 0;
        B->status[s] = load_labelled(B->L, B->indices[s], &B->base[s], &owned, &B->dbuf[s],
                                     &B->dcap[s], &B->base_lab[s]);
        if (B->status[s]) {
            snprintf(B->msg[s], MSG, "%s", vt_last_error());
            memset(&B->base[s], 0, sizeof B->base[s]);
            continue;
        }
        B->base_owned[s] = (unsigned char)owned;
    }
}

/* Detection, or polygon segmentation, with augmentation: mosaic and mixup partners come from
 * the batch, so the job runs in two phases (see the top). */
static int job_two_phase(const vt_loader *L, const lbuf *B)
{
    if (!B->aug_seed || !L->cfg.aug) return 0;
    const vt_split_list *sl = &L->ds->split[L->split];
    return L->kind == VT_SAMPLE_BOXES || L->kind == VT_SAMPLE_INSTANCES ||
           (L->kind == VT_SAMPLE_MASK && sl->polys && !sl->mask_paths);
}

/* Run a job: every slot (after phase A for a two-phase job), then squeeze the failed ones out
 * (labels, packed, n_ok).  The batch is channels x n x plane while slots write; packed, it is
 * channels x n_ok x plane: moving planes in increasing order is safe in place, as a destination
 * never lies after its source. */
static void run_job(vt_loader *L, lbuf *B, int32_t *labels)
{
    int n = B->n, c = L->cfg.channels, ok = 0;
    B->two_phase = job_two_phase(L, B);
    if (B->two_phase) {
        vt_pool_run(L->pool, (size_t)n, 1, load_base_range, B);
        B->n_ok_slots = 0;
        for (int s = 0; s < n; s++)
            if (!B->status[s]) B->ok_slots[B->n_ok_slots++] = s;
    }
    vt_pool_run(L->pool, (size_t)n, 1, load_range, B);
    if (B->two_phase) /* decoded images are freed, cached ones stay the cache's */
        for (int s = 0; s < n; s++) {
            if (B->base_owned[s]) vt_image_free(&B->base[s]);
            B->base_owned[s] = 0;
            memset(&B->base[s], 0, sizeof B->base[s]);
        }
    const vt_split_list *sl = &L->ds->split[L->split];
    size_t plane = (size_t)L->cfg.imgsz * L->cfg.imgsz;
    for (int s = 0; s < n; s++)
        if (!B->status[s]) B->packed[ok++] = s;
    if (ok < n)
        for (int ch = 0; ch < c; ch++)
            for (int k = 0; k < ok; k++) {
                float *to = B->dst + ((size_t)ch * ok + k) * plane;
                const float *from = B->dst + ((size_t)ch * n + B->packed[k]) * plane;
                if (to != from) memmove(to, from, plane * sizeof(float));
            }
    for (int k = 0; k < ok; k++) {
        int idx = B->indices[B->packed[k]];
        labels[k] = sl->labels ? sl->labels[idx] : idx;
    }
    B->n_ok = ok;
}

/* The consumer's side of a finished job: warnings, and the error when nothing decoded. */
static vt_status report(vt_loader *L, const lbuf *B)
{
    int first_bad = -1;
    for (int s = 0; s < B->n; s++) {
        if (!B->status[s]) continue;
        if (first_bad < 0) first_bad = s;
        int idx = B->indices[s];
        if (B->status[s] != VT_ERR_CANCELLED && !L->bad[idx]) {
            L->bad[idx] = 1;
            vt_log(L->cfg.log, VT_LOG_WARNING, "skipping image: %s", B->msg[s]);
        }
    }
    if (B->n_ok == 0)
        return vt_fail(VT_ERR_DATASET, "no image of a batch of %d could be read (first: %s)",
                       B->n, B->n ? B->msg[first_bad] : "empty batch");
    return VT_OK;
}

static vt_status check_indices(const vt_loader *L, const int *indices, int n)
{
    int total = L->ds->split[L->split].n;
    if (n < 1 || !indices) return vt_fail(VT_ERR_INVALID_ARGUMENT, "loader: batch of %d", n);
    for (int i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= total)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "loader: image %d of a split of %d",
                           indices[i], total);
    return VT_OK;
}

/* ---- synchronous ------------------------------------------------------------------------- */

vt_status vt_loader_fill(vt_loader *L, const int *indices, int n, uint64_t aug_seed,
                         float *batch, int32_t *labels, int *n_ok)
{
    *n_ok = 0;
    if (L->head != L->tail)
        return vt_fail(VT_ERR_BAD_STATE, "vt_loader_fill with %ld submitted batches outstanding",
                       L->head - L->tail);
    vt_status st = check_indices(L, indices, n);
    if (st) return st;
    lbuf *B = &L->sync;
    if ((st = lbuf_reserve(B, n, 0))) return st;
    memcpy(B->indices, indices, (size_t)n * sizeof(int));
    B->n = n;
    B->aug_seed = aug_seed;
    B->mosaic = L->mosaic_on;
    B->dst = batch;
    L->cur = B;
    run_job(L, B, labels);
    if ((st = report(L, B))) return st;
    *n_ok = B->n_ok;
    return VT_OK;
}

/* ---- asynchronous ------------------------------------------------------------------------ */

static void *producer_main(void *arg)
{
    vt_loader *L = arg;
    pthread_mutex_lock(&L->mu);
    for (;;) {
        while (L->processed == L->head && !L->quit) pthread_cond_wait(&L->work, &L->mu);
        if (L->quit) break;
        lbuf *B = &L->ring[L->processed % L->nring];
        pthread_mutex_unlock(&L->mu);
        run_job(L, B, B->labels);
        pthread_mutex_lock(&L->mu);
        L->processed++;
        pthread_cond_broadcast(&L->done);
    }
    pthread_mutex_unlock(&L->mu);
    return NULL;
}

int vt_loader_pending(const vt_loader *L) { return L ? (int)(L->head - L->tail) : 0; }

vt_status vt_loader_submit(vt_loader *L, const int *indices, int n, uint64_t aug_seed)
{
    if (!L->has_producer)
        return vt_fail(VT_ERR_BAD_STATE, "vt_loader_submit: the loader has no prefetch");
    if (L->head - L->tail >= L->prefetch)
        return vt_fail(VT_ERR_BAD_STATE, "vt_loader_submit: %d batches already in flight",
                       L->prefetch);
    vt_status st = check_indices(L, indices, n);
    if (st) return st;
    /* Free: not in flight (head - tail < prefetch) and not the consumer's (that is tail - 1). */
    lbuf *B = &L->ring[L->head % L->nring];
    if (L->cur == B) L->cur = NULL;
    if ((st = lbuf_reserve(B, n, 1))) return st;
    memcpy(B->indices, indices, (size_t)n * sizeof(int));
    B->n = n;
    B->aug_seed = aug_seed;
    B->mosaic = L->mosaic_on;
    B->dst = B->own;
    pthread_mutex_lock(&L->mu);
    L->head++;
    pthread_cond_signal(&L->work);
    pthread_mutex_unlock(&L->mu);
    return VT_OK;
}

vt_status vt_loader_wait(vt_loader *L, const float **batch, const int32_t **labels, int *n_ok)
{
    *n_ok = 0;
    if (L->head == L->tail)
        return vt_fail(VT_ERR_BAD_STATE, "vt_loader_wait: no batch was submitted");
    pthread_mutex_lock(&L->mu);
    while (L->processed <= L->tail) pthread_cond_wait(&L->done, &L->mu);
    pthread_mutex_unlock(&L->mu);
    lbuf *B = &L->ring[L->tail % L->nring];
    L->tail++;
    L->cur = B;
    vt_status st = report(L, B);
    if (st) return st;
    *batch = B->own;
    *labels = B->labels;
    *n_ok = B->n_ok;
    return VT_OK;
}

void vt_loader_drain(vt_loader *L)
{
    if (!L || !L->has_producer || L->head == L->tail) return;
    pthread_mutex_lock(&L->mu);
    atomic_store(&L->abort, 1);
    while (L->processed < L->head) pthread_cond_wait(&L->done, &L->mu);
    atomic_store(&L->abort, 0);
    pthread_mutex_unlock(&L->mu);
    L->tail = L->head;
    L->cur = NULL;
}

void vt_loader_boxes(const vt_loader *L, int k, const vt_det **boxes, int *count,
                     vt_letterbox *lb)
{
    const lbuf *B = L->cur;
    if (!B || !B->boxes || k < 0 || k >= B->n_ok) { /* no such image: no boxes */
        *boxes = NULL;
        *count = 0;
        if (lb) memset(lb, 0, sizeof *lb);
        return;
    }
    int s = B->packed[k];
    *boxes = B->boxes[s].v;
    *count = B->boxes[s].n;
    if (lb) *lb = B->lb[s];
}

const uint8_t *vt_loader_mask(const vt_loader *L, int k)
{
    const lbuf *B = L->cur;
    if (!B || !B->masks || k < 0 || k >= B->n_ok) return NULL;
    return B->masks + (size_t)B->packed[k] * L->cfg.imgsz * L->cfg.imgsz;
}

const uint16_t *vt_loader_instances(const vt_loader *L, int k, int *w, int *h)
{
    const lbuf *B = L ? L->cur : NULL;
    if (w) *w = 0;
    if (h) *h = 0;
    if (!B || !B->inst || k < 0 || k >= B->n_ok) return NULL;
    int q = L->cfg.imgsz / 4;
    if (w) *w = q;
    if (h) *h = q;
    return B->inst + (size_t)B->packed[k] * q * q;
}

/* ---- synthetic targets ------------------------------------------------------------------- */

vt_status vt_loader_create_synthetic(vt_loader **out, vt_sample_kind kind, int imgsz)
{
    *out = NULL;
    if (kind != VT_SAMPLE_BOXES && kind != VT_SAMPLE_MASK && kind != VT_SAMPLE_INSTANCES)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "synthetic targets: sample pipeline %d has no "
                       "boxes or masks", (int)kind);
    if (imgsz < 16 || (kind == VT_SAMPLE_INSTANCES && imgsz % 4))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "synthetic targets: imgsz %d (at least 16%s)",
                       imgsz, kind == VT_SAMPLE_INSTANCES ? ", a multiple of 4" : "");
    vt_loader *L = vt_calloc(1, sizeof *L);
    if (!L) return VT_ERR_OUT_OF_MEMORY;
    L->cfg.imgsz = imgsz;
    L->cfg.channels = 1;
    L->cfg.sample = kind;
    L->kind = kind;
    L->sync.L = L;
    atomic_init(&L->abort, 0);
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->work, NULL);
    pthread_cond_init(&L->done, NULL);
    *out = L;
    return VT_OK;
}

/* The pixels of a q x q map, at 1/f of the input, whose centres lie inside box d (input pixels):
 * columns [r[0], r[1]), rows [r[2], r[3]) (empty when the box is thinner than a pixel). */
static void box_pixels(const vt_det *d, float f, int q, int r[4])
{
    const float e[4] = {d->x0, d->x1, d->y0, d->y1};
    for (int i = 0; i < 4; i++) {
        int v = (int)ceilf(e[i] / f - 0.5f);
        r[i] = v < 0 ? 0 : v > q ? q : v;
    }
}

vt_status vt_loader_fill_synthetic(vt_loader *L, int n, int classes, uint64_t seed)
{
    if (L->ds)
        return vt_fail(VT_ERR_BAD_STATE, "vt_loader_fill_synthetic: a dataset's loader");
    if (n < 1 || classes < 1 || classes > 255)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "synthetic targets: %d images of %d classes", n,
                       classes);
    lbuf *B = &L->sync;
    vt_status st = lbuf_reserve(B, n, 0);
    if (st) return st;
    int sz = L->cfg.imgsz, q = sz / 4;
    for (int k = 0; k < n; k++) {
        vt_rng r;
        vt_rng_seed(&r, seed * 0x9E3779B97F4A7C15ull + (uint64_t)k);
        B->packed[k] = k;
        B->status[k] = VT_OK;
        vt_det d[SYNTH_MAX_OBJECTS];
        int nb = 1 + (int)vt_rng_below(&r, SYNTH_MAX_OBJECTS);
        for (int j = 0; j < nb; j++) { /* sides of 1/16 to 1/2 of the image, inside it */
            float w = sz * (0.0625f + 0.4375f * (float)vt_rng_uniform(&r));
            float h = sz * (0.0625f + 0.4375f * (float)vt_rng_uniform(&r));
            float x0 = (sz - w) * (float)vt_rng_uniform(&r),
                  y0 = (sz - h) * (float)vt_rng_uniform(&r);
            d[j] = (vt_det){x0, y0, x0 + w, y0 + h, 1.0f, (int)vt_rng_below(&r, (uint32_t)classes)};
        }
        if (B->boxes) {
            B->boxes[k].n = 0;
            for (int j = 0; j < nb; j++)
                if ((st = vt_det_list_push(&B->boxes[k], &d[j]))) return st;
            B->lb[k] = (vt_letterbox){sz, sz, sz, sz, sz, sz, 0, 0, 1.0f, 1.0f};
        }
        if (B->masks) { /* class 0 everywhere, then each box in its class */
            uint8_t *m = B->masks + (size_t)k * sz * sz;
            memset(m, 0, (size_t)sz * sz);
            for (int j = 0; j < nb; j++) {
                int r[4];
                box_pixels(&d[j], 1.0f, sz, r);
                for (int y = r[2]; y < r[3]; y++)
                    memset(m + (size_t)y * sz + r[0], d[j].cls, (size_t)(r[1] - r[0]));
            }
        }
        if (B->inst) { /* object j + 1, the larger first so that a smaller one lies on top */
            uint16_t *m = B->inst + (size_t)k * q * q;
            memset(m, 0, (size_t)q * q * sizeof *m);
            int order[SYNTH_MAX_OBJECTS];
            for (int j = 0; j < nb; j++) order[j] = j;
            for (int a = 1; a < nb; a++)
                for (int b = a; b > 0; b--) {
                    const vt_det *u = &d[order[b - 1]], *v = &d[order[b]];
                    if ((u->x1 - u->x0) * (u->y1 - u->y0) >= (v->x1 - v->x0) * (v->y1 - v->y0))
                        break;
                    int tmp = order[b];
                    order[b] = order[b - 1], order[b - 1] = tmp;
                }
            for (int a = 0; a < nb; a++) {
                int r[4];
                box_pixels(&d[order[a]], 4.0f, q, r);
                for (int y = r[2]; y < r[3]; y++)
                    for (int x = r[0]; x < r[1]; x++)
                        m[(size_t)y * q + x] = (uint16_t)(order[a] + 1);
            }
        }
    }
    B->n = B->n_ok = n;
    L->cur = B;
    return VT_OK;
}
