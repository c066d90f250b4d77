/* The batch loader's performance features: the reduced-scale JPEG decode, prefetch (async
 * batches identical to synchronous ones, errors reported when consumed, drain), the RAM cache
 * (identical batches, cap kept), and the trainer options prefetch / cache / fraction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "core/core.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "image/image.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Smooth colour gradients with a little noise and a disc: photo-like, so the JPEG is faithful. */
static uint8_t *photo(int w, int h, unsigned seed)
{
    uint8_t *p = malloc((size_t)w * h * 3);
    vt_rng r;
    vt_rng_seed(&r, seed);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *q = p + ((size_t)y * w + x) * 3;
            double dx = x - w * 0.6, dy = y - h * 0.4;
            int disc = dx * dx + dy * dy < (h * 0.2) * (h * 0.2);
            for (int k = 0; k < 3; k++) {
                double v = 40 + 150.0 * (k == 0 ? x : k == 1 ? y : x + y) / (k == 2 ? w + h : k ? h : w);
                if (disc) v = 230 - 60 * k;
                v += (vt_rng_uniform(&r) - 0.5) * 6;
                q[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    return p;
}

static void compare_images(const vt_image *a, const vt_image *b, double max_mean, int max_abs)
{
    ck_assert_int_eq(a->w, b->w);
    ck_assert_int_eq(a->h, b->h);
    ck_assert_int_eq(a->c, b->c);
    size_t n = (size_t)a->w * a->h * a->c;
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a->data[i] - (int)b->data[i]);
        sum += d;
        if (d > worst) worst = d;
    }
    ck_assert_msg(sum / n <= max_mean && worst <= max_abs, "mean |diff| %.3f, max %d", sum / n,
                  worst);
}

/* ---- JPEG fast path ---------------------------------------------------------------------- */

START_TEST(test_jpeg_scaled)
{
    const int W = 250, H = 190;
    uint8_t *rgb = photo(W, H, 3);
    const char *jpg = vt_test_path("a.jpg"), *png = vt_test_path("a.png");
    vt_test_write_jpeg(jpg, rgb, W, H, 95, 1.0);
    ck_assert_int_eq(vt_image_save_png(png, rgb, W, H, 3, (size_t)W * 3), VT_OK);
    vt_image full, sc, rs, rs2;
    ck_assert_int_eq(vt_image_load(jpg, &full), VT_OK);
    ck_assert_int_eq(full.w, W);
    /* Exact target: 1/4 is the smallest scale still >= 60 x 45 (1/8 would be 32 x 24). */
    ck_assert_int_eq(vt_image_load_scaled(jpg, 60, 45, 0, &sc), VT_OK);
    ck_assert_int_eq(sc.w, 63); /* ceil(250 / 4) */
    ck_assert_int_eq(sc.h, 48); /* ceil(190 / 4) */
    /* Close to decoding in full and resizing (both resized to the target). */
    ck_assert_int_eq(vt_image_resize(&full, 60, 45, &rs), VT_OK);
    ck_assert_int_eq(vt_image_resize(&sc, 60, 45, &rs2), VT_OK);
    compare_images(&rs, &rs2, 2.0, 40);
    vt_image_free(&sc);
    vt_image_free(&rs);
    vt_image_free(&rs2);
    /* Both sides must allow the scale: 100 x 20 needs width >= 200 at 1/2, so full size. */
    ck_assert_int_eq(vt_image_load_scaled(jpg, 126, 20, 0, &sc), VT_OK);
    ck_assert_int_eq(sc.w, W);
    vt_image_free(&sc);
    ck_assert_int_eq(vt_image_load_scaled(jpg, 120, 90, 0, &sc), VT_OK);
    ck_assert_int_eq(sc.w, 125); /* 1/2 */
    ck_assert_int_eq(sc.h, 95);
    vt_image_free(&sc);
    /* keep_aspect (letterbox into 31 x 31: scale 31/250, so 1/8 fits) */
    ck_assert_int_eq(vt_image_load_scaled(jpg, 31, 31, 1, &sc), VT_OK);
    ck_assert_int_eq(sc.w, 32);
    ck_assert_int_eq(sc.h, 24);
    vt_image_free(&sc);
    /* ... but not without it (the height 190 < 31 * 8). */
    ck_assert_int_eq(vt_image_load_scaled(jpg, 31, 31, 0, &sc), VT_OK);
    ck_assert_int_eq(sc.w, 63);
    vt_image_free(&sc);
    /* no target: full size, the same pixels as vt_image_load */
    ck_assert_int_eq(vt_image_load_scaled(jpg, 0, 0, 0, &sc), VT_OK);
    compare_images(&sc, &full, 0, 0);
    vt_image_free(&sc);
    /* PNG: always full size */
    ck_assert_int_eq(vt_image_load_scaled(png, 30, 30, 1, &sc), VT_OK);
    ck_assert_int_eq(sc.w, W);
    ck_assert_int_eq(sc.h, H);
    ck_assert_int_eq(memcmp(sc.data, rgb, (size_t)W * H * 3), 0);
    vt_image_free(&sc);
    vt_image_free(&full);
    free(rgb);
}
END_TEST

/* vt_image_load_scaled_into: the pixels of vt_image_load_scaled, in the caller's buffer when it
 * is large enough (the same pointer), a larger one when not, a PNG's allocation adopted; a
 * failure keeps the buffer. */
START_TEST(test_load_into)
{
    const int W = 120, H = 90;
    uint8_t *rgb = photo(W, H, 4);
    const char *jpg = vt_test_path("b.jpg"), *png = vt_test_path("b.png");
    vt_test_write_jpeg(jpg, rgb, W, H, 90, 1.0);
    ck_assert_int_eq(vt_image_save_png(png, rgb, W, H, 3, (size_t)W * 3), VT_OK);
    uint8_t *buf = NULL;
    size_t cap = 0;
    vt_image a, ref;
    /* half size first: a buffer of 60 x 45 pixels */
    ck_assert_int_eq(vt_image_load_scaled_into(jpg, 60, 45, 0, &buf, &cap, &a), VT_OK);
    ck_assert_ptr_eq(a.data, buf);
    ck_assert_int_eq(cap, (size_t)60 * 45 * 3);
    ck_assert_int_eq(vt_image_load_scaled(jpg, 60, 45, 0, &ref), VT_OK);
    compare_images(&a, &ref, 0, 0);
    vt_image_free(&ref);
    /* full size: a larger buffer */
    ck_assert_int_eq(vt_image_load_scaled_into(jpg, 0, 0, 0, &buf, &cap, &a), VT_OK);
    ck_assert_ptr_eq(a.data, buf);
    ck_assert_int_eq(cap, (size_t)W * H * 3);
    ck_assert_int_eq(vt_image_load(jpg, &ref), VT_OK);
    compare_images(&a, &ref, 0, 0);
    vt_image_free(&ref);
    /* half size again: decoded into the same buffer */
    uint8_t *kept = buf;
    ck_assert_int_eq(vt_image_load_scaled_into(jpg, 60, 45, 0, &buf, &cap, &a), VT_OK);
    ck_assert_ptr_eq(buf, kept);
    ck_assert_ptr_eq(a.data, buf);
    ck_assert_int_eq(a.w, 60);
    /* a failure keeps it */
    ck_assert_int_eq(vt_image_load_scaled_into(vt_test_path("none.jpg"), 60, 45, 0, &buf, &cap,
                                               &a),
                     VT_ERR_NOT_FOUND);
    ck_assert_ptr_eq(buf, kept);
    /* a PNG's pixels become the buffer */
    ck_assert_int_eq(vt_image_load_scaled_into(png, 60, 45, 0, &buf, &cap, &a), VT_OK);
    ck_assert_ptr_eq(a.data, buf);
    ck_assert_int_eq(memcmp(a.data, rgb, (size_t)W * H * 3), 0);
    free(buf);
    free(rgb);
}
END_TEST

/* The separable warp (3 channels, scale and shift only) gives the bytes of the general loop,
 * which 4-channel images still take: compare the RGB of both. */
START_TEST(test_separable_warp_exact)
{
    vt_rng r;
    vt_rng_seed(&r, 9);
    vt_aug_params p;
    vt_aug_params_default(&p); /* degrees = shear = perspective = 0 */
    for (int it = 0; it < 40; it++) {
        int sw = 1 + (int)vt_rng_below(&r, 200), sh = 1 + (int)vt_rng_below(&r, 200);
        int ow = 1 + (int)vt_rng_below(&r, 150), oh = 1 + (int)vt_rng_below(&r, 150);
        vt_image s3 = {sw, sh, 3, malloc((size_t)sw * sh * 3)};
        vt_image s4 = {sw, sh, 4, malloc((size_t)sw * sh * 4)};
        for (int i = 0; i < sw * sh; i++)
            for (int k = 0; k < 4; k++) {
                uint8_t v = (uint8_t)vt_rng_below(&r, 256);
                s4.data[i * 4 + k] = v;
                if (k < 3) s3.data[i * 3 + k] = v;
            }
        vt_aug_params q = p;
        q.translate = it % 4 ? 0.1f : 0.7f; /* some rows and columns outside: the fill */
        vt_aug_transform t;
        vt_aug_transform_draw(&q, &r, sw, sh, ow, oh, &t);
        ck_assert(t.m[1] == 0.0 && t.m[3] == 0.0); /* the separable case */
        vt_image a, b;
        ck_assert_int_eq(vt_aug_warp_image(&s3, &t, ow, oh, 114, &a), VT_OK);
        ck_assert_int_eq(vt_aug_warp_image(&s4, &t, ow, oh, 114, &b), VT_OK);
        for (int i = 0; i < ow * oh; i++)
            for (int k = 0; k < 3; k++)
                ck_assert_msg(a.data[i * 3 + k] == b.data[i * 4 + k],
                              "warp %d: pixel %d channel %d: %d vs %d", it, i, k,
                              a.data[i * 3 + k], b.data[i * 4 + k]);
        vt_image_free(&a);
        vt_image_free(&b);
        vt_image_free(&s3);
        vt_image_free(&s4);
    }
}
END_TEST

/* vt_aug_hsv's 4-pixel SSE2 path gives the scalar path's bytes: a whole image (vector path
 * but for the tail) against each of its pixels alone (a 1-pixel image takes the scalar path),
 * with the same random gains (same seed). */
START_TEST(test_hsv_vector_exact)
{
    vt_rng r;
    vt_rng_seed(&r, 17);
    const int n = 1003;
    vt_image img = {n, 1, 3, malloc((size_t)n * 3)};
    uint8_t *orig = malloc((size_t)n * 3);
    long diff = 0;
    for (int it = 0; it < 60; it++) {
        for (int i = 0; i < n; i++) {
            int kind = (int)vt_rng_below(&r, 4);
            for (int k = 0; k < 3; k++) {
                int v = (int)vt_rng_below(&r, 256);
                if (kind == 1) v = i % 256;                          /* gray */
                if (kind == 2) v = k == (i % 3) ? 255 : (int)vt_rng_below(&r, 8); /* saturated */
                orig[i * 3 + k] = (uint8_t)v;
            }
            if (kind == 3) orig[i * 3 + 1] = orig[i * 3]; /* two channels equal: hue edges */
        }
        memcpy(img.data, orig, (size_t)n * 3);
        float hg = it % 3 ? 0.5f : 0.015f, sg = it % 2 ? 0.9f : 0.7f, vg = it % 5 ? 0.4f : 1.0f;
        uint64_t seed = 100 + (uint64_t)it;
        vt_rng a;
        vt_rng_seed(&a, seed);
        vt_aug_hsv(&img, hg, sg, vg, &a);
        for (int i = 0; i < n; i++) {
            uint8_t px[3] = {orig[i * 3], orig[i * 3 + 1], orig[i * 3 + 2]};
            vt_image one = {1, 1, 3, px};
            vt_rng b;
            vt_rng_seed(&b, seed);
            vt_aug_hsv(&one, hg, sg, vg, &b);
            for (int k = 0; k < 3; k++) diff += px[k] != img.data[i * 3 + k];
        }
    }
    ck_assert_msg(diff == 0, "%ld bytes differ between the vector and scalar HSV", diff);
    free(img.data);
    free(orig);
}
END_TEST

/* ---- loader ------------------------------------------------------------------------------ */

enum { NB = 5, BS = 6 };

typedef struct batches {
    float *x[NB];
    int32_t lab[NB][BS];
    int n_ok[NB];
    vt_status st[NB];
    vt_det *boxes[NB][BS];
    int nbox[NB][BS];
} batches;

static void batches_free(batches *b)
{
    for (int i = 0; i < NB; i++) {
        free(b->x[i]);
        for (int k = 0; k < BS; k++) free(b->boxes[i][k]);
    }
    memset(b, 0, sizeof *b);
}

static void keep_batch(batches *o, int i, const vt_loader *L, const float *x, size_t floats,
                       const int32_t *lab, int ok, int det)
{
    o->n_ok[i] = ok;
    o->x[i] = malloc(floats * sizeof(float) + 1);
    memcpy(o->x[i], x, floats * sizeof(float));
    memcpy(o->lab[i], lab, (size_t)ok * sizeof(int32_t));
    for (int k = 0; det && k < ok; k++) {
        const vt_det *bx;
        int nb;
        vt_loader_boxes(L, k, &bx, &nb, NULL);
        o->nbox[i][k] = nb;
        o->boxes[i][k] = malloc(sizeof(vt_det) * (size_t)(nb + 1));
        if (nb) memcpy(o->boxes[i][k], bx, sizeof(vt_det) * (size_t)nb); /* bx may be NULL */
    }
}

/* A counting allocator for the loader's batch buffers (vt_loader_config.host_alloc). */
static int use_hooks, hook_fail, hook_allocs, hook_frees;
static void *hook_alloc(void *ctx, size_t n)
{
    ck_assert_ptr_eq(ctx, &hook_allocs);
    if (hook_fail) return NULL;
    hook_allocs++;
    return malloc(n);
}
static void hook_free(void *ctx, void *p)
{
    ck_assert_ptr_eq(ctx, &hook_allocs);
    hook_frees++;
    free(p);
}

/* NB batches of BS images of a fixed shuffled order, epoch-like; mosaic off from batch 3 on.
 * depth 0: vt_loader_fill; else submit/wait with depth batches in flight. */
static void load_batches(const vt_dataset *ds, int sz, int workers, int depth, int64_t cache,
                         const vt_aug_params *aug, uint64_t seed, int rounds, batches *out,
                         int *cached)
{
    int det = ds->task == VT_TASK_DETECT, n = ds->split[VT_SPLIT_TRAIN].n;
    ck_assert_int_ge(n, NB * BS);
    vt_loader_config cfg = {sz, 3, workers, aug, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    if (use_hooks) {
        cfg.host_alloc = hook_alloc;
        cfg.host_free = hook_free;
        cfg.host_ctx = &hook_allocs;
    }
    vt_loader *L;
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
    ck_assert_int_eq(vt_loader_start_prefetch(L, depth), VT_OK);
    if (cache) ck_assert_int_eq(vt_loader_enable_cache(L, cache), VT_OK);
    int perm[NB * BS];
    for (int i = 0; i < NB * BS; i++) perm[i] = (i * 7 + 3) % n;
    size_t per = (size_t)3 * sz * sz;
    float *buf = malloc(per * BS * sizeof(float));
    for (int round = 0; round < rounds; round++) {
        batches_free(out);
        int next = 0;
        for (int b = 0; b < NB; b++) {
            if (depth) {
                for (; next < NB && next < b + depth; next++) {
                    vt_loader_set_mosaic(L, next < 3);
                    ck_assert_int_eq(vt_loader_submit(L, perm + next * BS, BS, seed + round),
                                     VT_OK);
                }
                const float *x;
                const int32_t *lab;
                int ok;
                out->st[b] = vt_loader_wait(L, &x, &lab, &ok);
                if (!out->st[b]) keep_batch(out, b, L, x, per * ok, lab, ok, det);
            } else {
                vt_loader_set_mosaic(L, b < 3);
                int ok;
                out->st[b] = vt_loader_fill(L, perm + b * BS, BS, seed + round, buf,
                                            out->lab[b], &ok);
                if (!out->st[b]) keep_batch(out, b, L, buf, per * ok, out->lab[b], ok, det);
            }
        }
        ck_assert_int_eq(vt_loader_pending(L), 0);
    }
    if (cached) {
        int64_t bytes;
        vt_loader_cache_stats(L, cached, &bytes);
        ck_assert_msg(bytes <= cache, "cache holds %lld bytes over its cap %lld",
                      (long long)bytes, (long long)cache);
    }
    free(buf);
    vt_loader_destroy(L);
}

static void assert_same(const batches *a, const batches *b, int sz, const char *what)
{
    size_t per = (size_t)3 * sz * sz;
    for (int i = 0; i < NB; i++) {
        ck_assert_msg(a->st[i] == b->st[i], "%s: batch %d status %d vs %d", what, i, a->st[i],
                      b->st[i]);
        ck_assert_int_eq(a->n_ok[i], b->n_ok[i]);
        if (a->st[i]) continue;
        ck_assert_msg(memcmp(a->x[i], b->x[i], per * a->n_ok[i] * sizeof(float)) == 0,
                      "%s: batch %d pixels differ", what, i);
        ck_assert_int_eq(memcmp(a->lab[i], b->lab[i], sizeof(int32_t) * a->n_ok[i]), 0);
        for (int k = 0; k < a->n_ok[i]; k++) {
            ck_assert_msg(a->nbox[i][k] == b->nbox[i][k], "%s: batch %d image %d: %d vs %d boxes",
                          what, i, k, a->nbox[i][k], b->nbox[i][k]);
            if (a->nbox[i][k])
                ck_assert_int_eq(memcmp(a->boxes[i][k], b->boxes[i][k],
                                        sizeof(vt_det) * (size_t)a->nbox[i][k]), 0);
        }
    }
}

static vt_dataset *open_synth(vt_task task, const char *name, const char *opts)
{
    const char *dir = vt_test_path("%s", name);
    ck_assert_msg(vt_synth_generate(dir, task, opts) == VT_OK, "%s", vt_last_error());
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, task, dir), VT_OK);
    return ds;
}

static void check_prefetch_and_cache(vt_dataset *ds, int sz)
{
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.mixup = 0.3f; /* extra random picks */
    aug.crop_scale_min = 1.0f;
    static batches ref, x, y;
    load_batches(ds, sz, 1, 0, 0, &aug, 11, 1, &ref, NULL);
    load_batches(ds, sz, 2, 1, 0, &aug, 11, 1, &x, NULL);
    assert_same(&ref, &x, sz, "prefetch 1, 2 workers");
    load_batches(ds, sz, 3, 3, 0, &aug, 11, 1, &x, NULL);
    assert_same(&ref, &x, sz, "prefetch 3, 3 workers");
    /* The batches' own allocator (pinned memory for a GPU): used for every async buffer, all
     * freed, the same batches; and when it fails, malloc instead. */
    use_hooks = 1;
    hook_allocs = hook_frees = 0;
    load_batches(ds, sz, 2, 2, 0, &aug, 11, 1, &x, NULL);
    assert_same(&ref, &x, sz, "prefetch 2 from host_alloc");
    ck_assert_int_ge(hook_allocs, 3); /* depth + 1 buffers */
    ck_assert_int_eq(hook_frees, hook_allocs);
    hook_fail = 1;
    load_batches(ds, sz, 2, 2, 0, &aug, 11, 1, &x, NULL);
    assert_same(&ref, &x, sz, "prefetch 2, host_alloc failing");
    ck_assert_int_eq(hook_frees, hook_allocs);
    use_hooks = hook_fail = 0;
    /* a different seed changes the batches (so the comparisons above can fail) */
    load_batches(ds, sz, 1, 0, 0, &aug, 12, 1, &y, NULL);
    ck_assert(memcmp(ref.x[0], y.x[0], sizeof(float) * 3 * sz * sz) != 0);
    batches_free(&y);
    /* The cache: the second round reads cached images; identical to uncached, sync or async. */
    int n = ds->split[VT_SPLIT_TRAIN].n, cached = 0;
    load_batches(ds, sz, 1, 0, 0, &aug, 11, 2, &ref, NULL);
    load_batches(ds, sz, 2, 2, (int64_t)1 << 40, &aug, 11, 2, &x, &cached);
    assert_same(&ref, &x, sz, "cache=ram, second round");
    ck_assert_int_ge(cached, NB * BS < n ? NB * BS : n); /* every image read was kept */
    /* Under a cap of 5 base images' bytes: at most 5 cached, the cap kept, the same batches. */
    int64_t one = (int64_t)sz * sz * 3;
    load_batches(ds, sz, 2, 0, 5 * one, &aug, 11, 2, &x, &cached);
    assert_same(&ref, &x, sz, "cache=ram with a small cap");
    ck_assert_int_ge(cached, 1);
    ck_assert_int_le(cached, 5);
    batches_free(&ref);
    batches_free(&x);
}

START_TEST(test_loader_detect)
{
    vt_dataset *ds = open_synth(VT_TASK_DETECT, "det",
                                "classes=3 train=40 val=4 imgsz=64 seed=2 max_objects=3");
    check_prefetch_and_cache(ds, 64);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_loader_classify)
{
    vt_dataset *ds = open_synth(VT_TASK_CLASSIFY, "cls", "classes=3 train=12 val=2 imgsz=24 seed=4");
    check_prefetch_and_cache(ds, 32); /* resized up from 24 */
    vt_dataset_destroy(ds);
}
END_TEST

static int warnings;
static void count_warnings(void *user, vt_log_level level, const char *msg)
{
    (void)user;
    (void)msg;
    if (level == VT_LOG_WARNING) warnings++;
}

START_TEST(test_loader_errors_and_drain)
{
    vt_dataset *ds = open_synth(VT_TASK_DETECT, "bad",
                                "classes=3 train=12 val=2 imgsz=32 seed=1 max_objects=2");
    /* images 0 and 1 become unreadable after opening */
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(vt_test_write_file(ds->split[VT_SPLIT_TRAIN].paths[i], "junk", 4), 0);
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.mosaic = 0; /* so only the batch's own images matter */
    vt_logger log = {count_warnings, NULL, VT_LOG_DEBUG};
    vt_loader_config cfg = {32, 3, 2, &aug, &log, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    vt_loader *L;
    /* a pipeline whose labels the dataset does not have is refused */
    vt_loader_config lc = cfg;
    lc.sample = VT_SAMPLE_LABEL;
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &lc), VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(vt_last_error(), "sample pipeline"));
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
    ck_assert_int_eq(vt_loader_start_prefetch(L, 2), VT_OK);
    int all_bad[2] = {0, 1}, mixed[3] = {1, 5, 6}, good[2] = {7, 8};
    const float *x;
    const int32_t *lab;
    int ok;
    warnings = 0;
    ck_assert_int_eq(vt_loader_submit(L, all_bad, 2, 9), VT_OK);
    ck_assert_int_eq(vt_loader_submit(L, mixed, 3, 9), VT_OK);
    ck_assert_int_eq(vt_loader_submit(L, good, 2, 9), VT_ERR_BAD_STATE); /* depth 2 */
    ck_assert_int_eq(vt_loader_fill(L, good, 2, 9, NULL, NULL, &ok), VT_ERR_BAD_STATE);
    /* nothing is logged by the producer: the warnings come with the consuming wait */
    ck_assert_int_eq(warnings, 0);
    ck_assert_int_eq(vt_loader_wait(L, &x, &lab, &ok), VT_ERR_DATASET);
    ck_assert_int_eq(warnings, 2);
    ck_assert_int_eq(vt_loader_submit(L, good, 2, 9), VT_OK);
    ck_assert_int_eq(vt_loader_wait(L, &x, &lab, &ok), VT_OK);
    ck_assert_int_eq(ok, 2);
    ck_assert_int_eq(lab[0], 5);
    ck_assert_int_eq(lab[1], 6);
    ck_assert_int_eq(warnings, 2); /* image 1 is warned about once */
    /* the packed batch equals a synchronous fill of the readable images */
    float *ref = malloc(sizeof(float) * 3 * 32 * 32 * 3);
    int32_t rl[3];
    int rok;
    ck_assert_int_eq(vt_loader_wait(L, &x, &lab, &ok), VT_OK); /* "good" */
    /* drain with batches in flight, then fill synchronously */
    ck_assert_int_eq(vt_loader_submit(L, mixed, 3, 9), VT_OK);
    ck_assert_int_eq(vt_loader_submit(L, good, 2, 9), VT_OK);
    ck_assert_int_eq(vt_loader_pending(L), 2);
    vt_loader_drain(L);
    ck_assert_int_eq(vt_loader_pending(L), 0);
    ck_assert_int_eq(vt_loader_wait(L, &x, &lab, &ok), VT_ERR_BAD_STATE);
    ck_assert_int_eq(vt_loader_fill(L, mixed, 3, 9, ref, rl, &rok), VT_OK);
    ck_assert_int_eq(rok, 2);
    ck_assert_int_eq(vt_loader_submit(L, mixed, 3, 9), VT_OK);
    ck_assert_int_eq(vt_loader_wait(L, &x, &lab, &ok), VT_OK);
    ck_assert_int_eq(ok, 2);
    ck_assert_int_eq(memcmp(x, ref, sizeof(float) * 3 * 32 * 32 * 2), 0);
    /* destroyed with batches in flight */
    ck_assert_int_eq(vt_loader_submit(L, good, 2, 9), VT_OK);
    ck_assert_int_eq(vt_loader_submit(L, good, 2, 10), VT_OK);
    vt_loader_destroy(L);
    free(ref);
    vt_dataset_destroy(ds);
}
END_TEST

/* ---- trainer options --------------------------------------------------------------------- */

enum { MAXLOSS = 64 };
typedef struct trace {
    float loss[MAXLOSS];
    int n, batches;
    double wait;
} trace;

static int record(void *user, vt_event ev, const vt_progress *p)
{
    trace *t = user;
    double v;
    if (ev == VT_EVENT_BATCH_END && t->n < MAXLOSS &&
        vt_progress_metric(p, VT_METRIC_LOSS, &v) == VT_OK) {
        t->loss[t->n++] = (float)v;
        t->batches = vt_progress_batches(p);
    }
    if (ev == VT_EVENT_BATCH_END && vt_progress_metric(p, VT_METRIC_DATA_WAIT_SECONDS, &v) == VT_OK)
        t->wait = v;
    return 0;
}

static void train(vt_dataset *ds, const char *arch, int sz, const char *const *settings,
                  trace *tr)
{
    vt_model *m;
    vt_trainer *t;
    char mo[32];
    snprintf(mo, sizeof mo, "imgsz=%d", sz);
    ck_assert_int_eq(vt_model_create(&m, arch, vt_dataset_num_classes(ds), mo), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    for (const char *const *s = settings; *s; s++)
        ck_assert_msg(vt_trainer_set(t, *s) == VT_OK, "%s: %s", *s, vt_trainer_last_error(t));
    memset(tr, 0, sizeof *tr);
    vt_trainer_set_progress(t, record, tr);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
}

static void assert_same_losses(const trace *a, const trace *b, const char *what)
{
    ck_assert_int_eq(a->n, b->n);
    ck_assert_msg(memcmp(a->loss, b->loss, sizeof(float) * a->n) == 0, "%s: losses differ", what);
}

START_TEST(test_trainer_prefetch_cache_classify)
{
    vt_dataset *ds = open_synth(VT_TASK_CLASSIFY, "tc", "classes=3 train=8 val=2 imgsz=16 seed=5");
    static trace a, b, c, d;
    const char *s0[] = {"epochs=2", "batch=6", "seed=3", "workers=1", "prefetch=0", "save=0",
                        "val=0", "erasing=0.5", NULL};
    const char *s1[] = {"epochs=2", "batch=6", "seed=3", "workers=2", "prefetch=3", "save=0",
                        "val=0", "erasing=0.5", NULL};
    const char *s2[] = {"epochs=2", "batch=6", "seed=3", "workers=2", "prefetch=1", "save=0",
                        "val=0", "erasing=0.5", "cache=ram", "cache_bytes=2000", NULL};
    const char *s3[] = {"epochs=2", "batch=6", "seed=4", "workers=2", "save=0", "val=0",
                        "erasing=0.5", NULL};
    train(ds, "cls-n", 16, s0, &a);
    train(ds, "cls-n", 16, s1, &b);
    train(ds, "cls-n", 16, s2, &c);
    train(ds, "cls-n", 16, s3, &d);
    ck_assert_int_eq(a.n, 8); /* 24 images / 6 x 2 epochs */
    assert_same_losses(&a, &b, "prefetch 0 vs 3");
    assert_same_losses(&a, &c, "cache=ram (capped) vs none");
    ck_assert(memcmp(a.loss, d.loss, sizeof(float) * a.n) != 0);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_trainer_prefetch_cache_detect)
{
    vt_dataset *ds = open_synth(VT_TASK_DETECT, "td",
                                "classes=3 train=12 val=2 imgsz=64 seed=6 max_objects=2");
    static trace a, b, c;
    const char *s0[] = {"epochs=2", "batch=4", "seed=1", "workers=1", "prefetch=0", "save=0",
                        "val=0", "mixup=0.5", "close_mosaic=1", NULL};
    const char *s1[] = {"epochs=2", "batch=4", "seed=1", "workers=2", "prefetch=2", "save=0",
                        "val=0", "mixup=0.5", "close_mosaic=1", "cache=ram", NULL};
    const char *s2[] = {"epochs=2", "batch=4", "seed=1", "workers=3", "prefetch=8", "save=0",
                        "val=0", "mixup=0.5", "close_mosaic=1", NULL};
    train(ds, "det-n", 64, s0, &a);
    train(ds, "det-n", 64, s1, &b);
    train(ds, "det-n", 64, s2, &c);
    ck_assert_int_eq(a.n, 6);
    assert_same_losses(&a, &b, "detect: prefetch 2 + cache vs none");
    assert_same_losses(&a, &c, "detect: prefetch 8 vs none");
    vt_dataset_destroy(ds);
}
END_TEST

static int cancel_at;
static int cancel_cb(void *user, vt_event ev, const vt_progress *p)
{
    (void)user;
    return ev == VT_EVENT_BATCH_END && vt_progress_batch(p) == cancel_at;
}

START_TEST(test_trainer_cancel_with_prefetch)
{
    vt_dataset *ds = open_synth(VT_TASK_CLASSIFY, "cc", "classes=2 train=24 val=2 imgsz=16 seed=1");
    vt_model *m;
    vt_trainer *t;
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 2, "imgsz=16"), VT_OK);
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    const char *s[] = {"epochs=3", "batch=4", "workers=2", "prefetch=8", "save=0", "val=0", NULL};
    for (const char *const *k = s; *k; k++) ck_assert_int_eq(vt_trainer_set(t, *k), VT_OK);
    cancel_at = 2; /* 12 batches per epoch: 8 in flight when it stops */
    vt_trainer_set_progress(t, cancel_cb, NULL);
    ck_assert_int_eq(vt_trainer_run(t), VT_ERR_CANCELLED);
    ck_assert_int_eq(vt_trainer_stop_reason(t), VT_STOP_CANCELLED);
    /* the trainer runs again after a cancel (new loader, nothing left over) */
    vt_trainer_set_progress(t, NULL, NULL);
    ck_assert_int_eq(vt_trainer_set(t, "epochs=1"), VT_OK);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_trainer_fraction)
{
    vt_dataset *ds = open_synth(VT_TASK_CLASSIFY, "fr", "classes=3 train=8 val=2 imgsz=16 seed=5");
    static trace a, b, c, d, e, f;
    const char *full[] = {"epochs=1", "batch=4", "seed=3", "save=0", "val=0", NULL};
    const char *one[] = {"epochs=1", "batch=4", "seed=3", "save=0", "val=0", "fraction=1", NULL};
    const char *half[] = {"epochs=1", "batch=4", "seed=3", "save=0", "val=0", "fraction=0.5",
                          NULL};
    const char *half7[] = {"epochs=1", "batch=4", "seed=7", "save=0", "val=0", "fraction=0.5",
                           NULL};
    const char *tiny[] = {"epochs=1", "batch=4", "seed=3", "save=0", "val=0", "fraction=0",
                          NULL};
    train(ds, "cls-n", 16, full, &a);
    train(ds, "cls-n", 16, one, &b);
    train(ds, "cls-n", 16, half, &c);
    train(ds, "cls-n", 16, half, &d);
    train(ds, "cls-n", 16, half7, &e);
    train(ds, "cls-n", 16, tiny, &f);
    ck_assert_int_eq(a.batches, 6); /* 24 images */
    assert_same_losses(&a, &b, "fraction=1 vs default");
    ck_assert_int_eq(c.batches, 3); /* 12 images */
    ck_assert_int_eq(c.n, 3);
    assert_same_losses(&c, &d, "fraction=0.5 twice");
    ck_assert_int_eq(e.batches, 3);
    ck_assert_int_eq(f.batches, 1); /* at least 2 images: one batch of 2 */
    vt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_pick_subset)
{
    int a[50], b[50], c[50];
    ck_assert_int_eq(vt_loader_pick_subset(50, 1.0, 3, a), 50);
    for (int i = 0; i < 50; i++) ck_assert_int_eq(a[i], i);
    ck_assert_int_eq(vt_loader_pick_subset(50, 0.3, 3, a), 15);
    ck_assert_int_eq(vt_loader_pick_subset(50, 0.3, 3, b), 15);
    ck_assert_int_eq(vt_loader_pick_subset(50, 0.3, 4, c), 15);
    ck_assert_int_eq(memcmp(a, b, sizeof(int) * 15), 0);   /* same seed, same subset */
    ck_assert(memcmp(a, c, sizeof(int) * 15) != 0);        /* another seed, another one */
    for (int i = 1; i < 15; i++) ck_assert_int_lt(a[i - 1], a[i]); /* sorted, distinct */
    ck_assert_int_ge(a[0], 0);
    ck_assert_int_lt(a[14], 50);
    ck_assert_int_eq(vt_loader_pick_subset(50, 0.0, 3, a), 2);
    ck_assert_int_eq(vt_loader_pick_subset(2, 0.1, 3, a), 2);
}
END_TEST

/* Mosaic and mixup partners come from the batch: loading only a few images with mosaic and
 * mixup always on decodes (and so caches) no other image of the split; an image that fails to
 * decode is nobody's partner, so a batch with failures packs the same bytes and boxes as the
 * batch of its readable images alone; a batch of one image mosaics it with itself. */
START_TEST(test_batch_partners)
{
    vt_dataset *ds = open_synth(VT_TASK_DETECT, "sp",
                                "classes=3 train=40 val=2 imgsz=32 seed=2 max_objects=2");
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    aug.mixup = 1.0f;
    enum { SZ = 32, PER = 3 * SZ * SZ };
    float *x = malloc(sizeof(float) * PER * 6), *y = malloc(sizeof(float) * PER * 6);
    int32_t lab[6], lab2[6];
    for (int workers = 1; workers <= 2; workers++) {
        vt_loader_config cfg = {SZ, 3, workers, &aug, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
        vt_loader *L;
        ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
        ck_assert_int_eq(vt_loader_enable_cache(L, (int64_t)1 << 30), VT_OK);
        int sub[6] = {3, 9, 14, 20, 27, 33}, ok, images;
        int64_t bytes;
        for (int seed = 1; seed <= 4; seed++)
            ck_assert_int_eq(vt_loader_fill(L, sub, 6, (uint64_t)seed, x, lab, &ok), VT_OK);
        vt_loader_cache_stats(L, &images, &bytes);
        ck_assert_int_eq(images, 6);
        int one = 17;
        ck_assert_int_eq(vt_loader_fill(L, &one, 1, 5, x, lab, &ok), VT_OK);
        ck_assert_int_eq(ok, 1);
        vt_loader_destroy(L);
    }
    /* images 0 and 1 become unreadable: left out, and nobody's partner */
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(vt_test_write_file(ds->split[VT_SPLIT_TRAIN].paths[i], "junk", 4), 0);
    vt_loader_config cfg = {SZ, 3, 2, &aug, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    vt_loader *L;
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
    int with_bad[6] = {0, 5, 6, 1, 7, 12}, good[4] = {5, 6, 7, 12}, ok, ok2;
    for (int seed = 1; seed <= 3; seed++) {
        ck_assert_int_eq(vt_loader_fill(L, with_bad, 6, (uint64_t)seed, x, lab, &ok), VT_OK);
        ck_assert_int_eq(ok, 4);
        vt_det *boxes[4];
        int nbox[4];
        for (int k = 0; k < 4; k++) {
            const vt_det *b;
            vt_loader_boxes(L, k, &b, &nbox[k], NULL);
            boxes[k] = malloc(sizeof(vt_det) * (size_t)(nbox[k] + 1));
            if (nbox[k]) memcpy(boxes[k], b, sizeof(vt_det) * (size_t)nbox[k]);
        }
        ck_assert_int_eq(vt_loader_fill(L, good, 4, (uint64_t)seed, y, lab2, &ok2), VT_OK);
        ck_assert_int_eq(ok2, 4);
        ck_assert_int_eq(memcmp(lab, lab2, sizeof(int32_t) * 4), 0);
        ck_assert_msg(memcmp(x, y, sizeof(float) * PER * 4) == 0, "seed %d: pixels differ", seed);
        for (int k = 0; k < 4; k++) {
            const vt_det *b;
            int nb;
            vt_loader_boxes(L, k, &b, &nb, NULL);
            ck_assert_int_eq(nb, nbox[k]);
            if (nb) ck_assert_int_eq(memcmp(b, boxes[k], sizeof(vt_det) * (size_t)nb), 0);
            free(boxes[k]);
        }
    }
    vt_loader_destroy(L);
    free(x);
    free(y);
    vt_dataset_destroy(ds);
}
END_TEST

/* The synthetic targets (the estimator's calibration of detection and segmentation steps):
 * boxes inside the image with classes in range, masks and instance maps painted from the same
 * boxes, the same targets for the same seed and other ones for another, and the refusals. */
START_TEST(test_synthetic_targets)
{
    const int sz = 64, q = sz / 4, n = 5, classes = 3;
    vt_loader *L;
    ck_assert_int_eq(vt_loader_create_synthetic(&L, VT_SAMPLE_LABEL, sz), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_loader_create_synthetic(&L, VT_SAMPLE_INSTANCES, 66),
                     VT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(L);
    const vt_sample_kind kinds[] = {VT_SAMPLE_BOXES, VT_SAMPLE_MASK, VT_SAMPLE_INSTANCES};
    for (int kk = 0; kk < 3; kk++) {
        vt_sample_kind kind = kinds[kk];
        ck_assert_int_eq(vt_loader_create_synthetic(&L, kind, sz), VT_OK);
        ck_assert_int_eq(vt_loader_fill_synthetic(L, 0, classes, 1), VT_ERR_INVALID_ARGUMENT);
        vt_det first[8];
        int nfirst = 0, wrong = 0, total = 0; /* wrong: seed 2 as seed 1, or seed 1 not */
        for (int seed = 1; seed <= 3; seed++) {
            /* a smaller fill after a larger one, then seed 1 again: the same targets */
            ck_assert_int_eq(vt_loader_fill_synthetic(L, seed == 2 ? 2 * n : n, classes,
                                                      seed == 3 ? 1 : (uint64_t)seed),
                             VT_OK);
            for (int k = 0; k < n; k++) {
                const vt_det *b;
                int nb;
                vt_loader_boxes(L, k, &b, &nb, NULL);
                const uint8_t *m = vt_loader_mask(L, k);
                int w, h;
                const uint16_t *map = vt_loader_instances(L, k, &w, &h);
                ck_assert_int_eq(m != NULL, kind == VT_SAMPLE_MASK);
                ck_assert_int_eq(map != NULL, kind == VT_SAMPLE_INSTANCES);
                if (kind == VT_SAMPLE_MASK) { /* boxes are the mask's business only */
                    int painted = 0;
                    for (int i = 0; i < sz * sz; i++) {
                        ck_assert_int_lt(m[i], classes);
                        painted += m[i] != 0;
                    }
                    total += painted;
                    continue;
                }
                ck_assert_int_ge(nb, 1);
                ck_assert_int_le(nb, 8);
                for (int j = 0; j < nb; j++) {
                    ck_assert(b[j].x0 >= 0 && b[j].y0 >= 0 && b[j].x1 <= sz && b[j].y1 <= sz);
                    ck_assert(b[j].x1 - b[j].x0 >= sz / 16.0f - 1e-3f);
                    ck_assert(b[j].y1 - b[j].y0 <= sz / 2.0f + 1e-3f);
                    ck_assert(b[j].cls >= 0 && b[j].cls < classes);
                }
                if (k == 0 && seed == 1) memcpy(first, b, sizeof *b * (size_t)(nfirst = nb));
                if (k == 0 && seed > 1)
                    wrong |= (seed == 2) !=
                             (nb != nfirst || memcmp(first, b, sizeof *b * (size_t)nb) != 0);
                total += nb;
                if (!map) continue;
                ck_assert_int_eq(w, q);
                ck_assert_int_eq(h, q);
                for (int y = 0; y < q; y++)
                    for (int x = 0; x < q; x++) {
                        int v = map[y * q + x];
                        ck_assert_int_le(v, nb);
                        if (!v) continue;
                        const vt_det *d = &b[v - 1]; /* the pixel's centre inside its box */
                        ck_assert(4 * (x + 0.5f) >= d->x0 && 4 * (x + 0.5f) <= d->x1);
                        ck_assert(4 * (y + 0.5f) >= d->y0 && 4 * (y + 0.5f) <= d->y1);
                    }
            }
        }
        ck_assert_int_gt(total, 0);
        if (kind != VT_SAMPLE_MASK) ck_assert_int_eq(wrong, 0);
        vt_loader_destroy(L);
    }
    /* a dataset's loader has no synthetic fill */
    vt_dataset *ds = open_synth(VT_TASK_DETECT, "det", "classes=3 train=4 val=2 imgsz=32 seed=3");
    vt_loader_config cfg = {32, 3, 0, NULL, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    ck_assert_int_eq(vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg), VT_OK);
    ck_assert_int_eq(vt_loader_fill_synthetic(L, 2, 2, 1), VT_ERR_BAD_STATE);
    vt_loader_destroy(L);
    vt_dataset_destroy(ds);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = tcase_create("loader");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_jpeg_scaled);
    tcase_add_test(tc, test_load_into);
    tcase_add_test(tc, test_separable_warp_exact);
    tcase_add_test(tc, test_hsv_vector_exact);
    tcase_add_test(tc, test_loader_detect);
    tcase_add_test(tc, test_loader_classify);
    tcase_add_test(tc, test_loader_errors_and_drain);
    tcase_add_test(tc, test_trainer_prefetch_cache_classify);
    tcase_add_test(tc, test_trainer_prefetch_cache_detect);
    tcase_add_test(tc, test_trainer_cancel_with_prefetch);
    tcase_add_test(tc, test_trainer_fraction);
    tcase_add_test(tc, test_pick_subset);
    tcase_add_test(tc, test_batch_partners);
    tcase_add_test(tc, test_synthetic_targets);
    suite_add_tcase(s, tc);
    return vt_test_run(s);
}
