/* Data loader throughput against the raw JPEG decode rate.
 *
 *   loader_throughput [dir=<scratch>] [images=200] [imgsz=640] [batch=16] [batches=12]
 *                     [reps=3] [small=320] [train=0]
 *
 * Writes `images` photo-like 640x480 JPEGs (quality 90: smooth gradients, noise, a few shapes)
 * with YOLO labels and a data.yaml under dir (a fresh folder under /tmp when not given; kept
 * when given), then measures, side by side in one run, best of `reps`:
 *   (a) libjpeg-turbo decoding the same files at full size from memory, one thread (img/s);
 *   (b) the loader (vt_loader_fill, the default detection augmentation: mosaic, affine, HSV,
 *       fliplr; mosaic partners come from the batch, so one decode per sample) at imgsz for
 *       workers = 1 and 2, reading files, and with cache=ram warm; at
 *       `small` (where the reduced-scale JPEG decode applies) with and without it; and with
 *       mosaic=0 (one decode per sample) and without augmentation (the validation path);
 *   (c) a stage breakdown of one mosaic sample as the loader makes it (decode of its own image,
 *       the draws, then warp + HSV + flips + float conversion in one pass; and those apart);
 *   (d) (run first) cache=ram under a cap of a third of the dataset's base images: bytes cached vs the
 *       cap, and the process's peak RSS;
 *   (e) with train=1: one epoch of det-n at `small` on 40% of the images, workers=2, prefetch 0
 *       vs 2: epoch seconds, img/s and the data-wait seconds.
 * Ratios printed: loader img/s per worker / raw decode img/s, and 2-worker / 1-worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "core/core.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "image/image.h"
#include "task/detect_eval.h"
#include "visiontrain/visiontrain.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of all threads of the process: images per CPU second do not depend on how many
 * cores the other users of a shared machine leave us (spinning threads do count). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* VmHWM (peak) or VmRSS (now) of this process, kB: /proc/self/status, since getrusage's
 * maxrss may carry the peak of the process image before exec. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') v = atol(line + k + 1);
    if (f) fclose(f);
    return v;
}

static int write_jpeg(const char *path, const uint8_t *rgb, int w, int h, int quality)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr err;
    ci.err = jpeg_std_error(&err);
    jpeg_create_compress(&ci);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = 3;
    ci.in_color_space = JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, quality, TRUE);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)ci.next_scanline * w * 3);
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    return fclose(f);
}

/* A 640x480 photo-like image with 1..4 shapes (rectangles and discs); their boxes in YOLO form
 * go to `labels`. */
static void make_image(vt_rng *r, uint8_t *p, int w, int h, FILE *labels)
{
    double g[3][3];
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++) g[k][j] = vt_rng_uniform(r);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double u = (double)x / w, v = (double)y / h;
            for (int k = 0; k < 3; k++) {
                double val = 255 * (0.2 + 0.5 * (g[k][0] * u + g[k][1] * v) / 2 +
                                    0.2 * g[k][2] * (u * v)) +
                             (vt_rng_uniform(r) - 0.5) * 16;
                p[((size_t)y * w + x) * 3 + k] = (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
            }
        }
    int n = 1 + (int)vt_rng_below(r, 4);
    for (int i = 0; i < n; i++) {
        int bw = 40 + (int)vt_rng_below(r, 200), bh = 40 + (int)vt_rng_below(r, 160);
        int x0 = (int)vt_rng_below(r, (uint32_t)(w - bw)), y0 = (int)vt_rng_below(r, (uint32_t)(h - bh));
        int cls = (int)vt_rng_below(r, 3);
        uint8_t col[3] = {(uint8_t)vt_rng_below(r, 256), (uint8_t)vt_rng_below(r, 256),
                          (uint8_t)vt_rng_below(r, 256)};
        for (int y = y0; y < y0 + bh; y++)
            for (int x = x0; x < x0 + bw; x++) {
                double dx = (x - x0 - bw / 2.0) / (bw / 2.0), dy = (y - y0 - bh / 2.0) / (bh / 2.0);
                if (cls == 1 && dx * dx + dy * dy > 1) continue;
                for (int k = 0; k < 3; k++) {
                    int v = col[k] + (int)((vt_rng_uniform(r) - 0.5) * 12);
                    p[((size_t)y * w + x) * 3 + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            }
        fprintf(labels, "%d %.6f %.6f %.6f %.6f\n", cls, (x0 + bw / 2.0) / w, (y0 + bh / 2.0) / h,
                (double)bw / w, (double)bh / h);
    }
}

static int make_dataset(const char *dir, int n)
{
    char path[4200];
    const char *sub[] = {"", "/images", "/images/train", "/labels", "/labels/train"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s%s", dir, sub[i]);
        mkdir(path, 0755);
    }
    snprintf(path, sizeof path, "%s/data.yaml", dir);
    struct stat sb;
    if (stat(path, &sb) == 0) return 0; /* already there */
    const int W = 640, H = 480;
    uint8_t *pix = malloc((size_t)W * H * 3);
    vt_rng r;
    vt_rng_seed(&r, 42);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/labels/train/%05d.txt", dir, i);
        FILE *lf = fopen(path, "w");
        if (!lf) return -1;
        make_image(&r, pix, W, H, lf);
        fclose(lf);
        snprintf(path, sizeof path, "%s/images/train/%05d.jpg", dir, i);
        if (write_jpeg(path, pix, W, H, 90)) return -1;
    }
    free(pix);
    snprintf(path, sizeof path, "%s/data.yaml", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "train: images/train\nval: images/train\nnc: 3\nnames:\n  0: box\n  1: disc\n  2: "
               "square\n");
    return fclose(f);
}

/* (a) full-size libjpeg-turbo decode of files held in memory, one thread: img/s. */
static double raw_decode_rate(uint8_t **buf, size_t *size, int n, int reps, double *cpu_rate)
{
    double best = 0;
    *cpu_rate = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now(), c0 = cpu_now();
        for (int i = 0; i < n; i++) {
            struct jpeg_decompress_struct ci;
            struct jpeg_error_mgr err;
            ci.err = jpeg_std_error(&err);
            jpeg_create_decompress(&ci);
            jpeg_mem_src(&ci, buf[i], (unsigned long)size[i]);
            jpeg_read_header(&ci, TRUE);
            ci.out_color_space = JCS_RGB;
            jpeg_start_decompress(&ci);
            uint8_t *img = malloc((size_t)ci.output_width * ci.output_height * 3);
            while (ci.output_scanline < ci.output_height) {
                JSAMPROW rp = img + (size_t)ci.output_scanline * ci.output_width * 3;
                jpeg_read_scanlines(&ci, &rp, 1);
            }
            jpeg_finish_decompress(&ci);
            jpeg_destroy_decompress(&ci);
            free(img);
        }
        double rate = n / (now() - t0), crate = n / (cpu_now() - c0);
        if (rate > best) best = rate;
        if (crate > *cpu_rate) *cpu_rate = crate;
    }
    return best;
}

typedef struct run_cfg {
    int imgsz, workers, full_decode, cache; /* cache: warm the RAM cache first */
    int no_mosaic, no_aug;                  /* mosaic=0; no augmentation (the validation path) */
} run_cfg;

/* (b) loader img/s over `batches` batches of `batch` (a fixed shuffled order), best of reps. */
static double loader_rate(const vt_dataset *ds, const run_cfg *rc, int batch, int batches,
                          int reps, double *cpu_rate)
{
    *cpu_rate = 0;
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    if (rc->no_mosaic) aug.mosaic = 0;
    vt_loader_config cfg = {rc->imgsz, 3, rc->workers, &aug, NULL, NULL, NULL, NULL,
                            VT_SAMPLE_AUTO};
    vt_loader *L;
    if (vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg)) return -1;
    vt_loader_set_full_decode(L, rc->full_decode);
    if (rc->cache && vt_loader_enable_cache(L, (int64_t)1 << 40)) return -1;
    int n = ds->split[VT_SPLIT_TRAIN].n;
    int *idx = malloc(sizeof(int) * (size_t)batch);
    float *x = malloc(sizeof(float) * 3 * (size_t)rc->imgsz * rc->imgsz * batch);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
    int ok;
    if (rc->cache) /* warm: every image once */
        for (int b0 = 0; b0 < n; b0 += batch) {
            int m = n - b0 < batch ? n - b0 : batch;
            for (int i = 0; i < m; i++) idx[i] = b0 + i;
            vt_loader_fill(L, idx, m, 7, x, lab, &ok);
        }
    double best = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now(), c0 = cpu_now();
        long imgs = 0;
        for (int b = 0; b < batches; b++) {
            for (int i = 0; i < batch; i++) idx[i] = (int)(((long)(rep * batches + b) * batch + i) * 37 % n);
            uint64_t seed = rc->no_aug ? 0 : 1000 + (uint64_t)rep * batches + b;
            if (vt_loader_fill(L, idx, batch, seed, x, lab, &ok)) {
                fprintf(stderr, "fill: %s\n", vt_last_error());
                return -1;
            }
            imgs += ok;
        }
        double rate = imgs / (now() - t0), crate = imgs / (cpu_now() - c0);
        if (rate > best) best = rate;
        if (crate > *cpu_rate) *cpu_rate = crate;
    }
    free(idx);
    free(x);
    free(lab);
    vt_loader_destroy(L);
    return best;
}

/* (c) where one mosaic sample's time goes (one thread, no cache), as the loader makes it: its
 * own image decoded at its base size (long side s, into a kept buffer), the 3 partners are
 * images of the batch decoded already (here: the previous samples' images), the draws and
 * labels (vt_aug_mosaic_sample), then the warp of the placed images, HSV, flips and the float
 * conversion in one pass (vt_aug_sample_float).  Then, for reference, the same stages apart:
 * the warp to bytes, HSV + flips on the bytes, the float conversion. */
static void breakdown(const vt_dataset *ds, int s, int samples)
{
    vt_aug_params p;
    vt_aug_params_default(&p);
    double t_dec = 0, t_draw = 0, t_fused = 0, t_warp = 0, t_hsv = 0, t_flt = 0;
    float *f = malloc(sizeof(float) * 3 * (size_t)s * s);
    vt_rng r;
    vt_rng_seed(&r, 5);
    int n = ds->split[VT_SPLIT_TRAIN].n;
    enum { RING = 4 };
    vt_image im[RING];
    uint8_t *buf[RING] = {NULL};
    size_t cap[RING] = {0};
    for (int k = -(RING - 1); k < samples; k++) {
        const int slot = (k + RING) % RING;
        double t0 = now();
        vt_image raw;
        vt_image_load_scaled_into(ds->split[VT_SPLIT_TRAIN].paths[(k + RING) % n], s, s, 1,
                                  &buf[slot], &cap[slot], &raw);
        vt_letterbox lb;
        vt_letterbox_geometry(raw.w, raw.h, s, s, 1, &lb);
        im[slot] = raw;
        if (raw.w != lb.new_w || raw.h != lb.new_h) { /* not for 640x480 at 640 or 320 */
            vt_image rs;
            vt_image_resize(&raw, lb.new_w, lb.new_h, &rs);
            free(buf[slot]);
            buf[slot] = rs.data;
            cap[slot] = (size_t)rs.w * rs.h * 3;
            im[slot] = rs;
        }
        double t1 = now();
        if (k < 0) continue; /* filling the ring */
        const vt_image *ip[4] = {&im[slot], &im[(slot + 1) % RING], &im[(slot + 2) % RING],
                                 &im[(slot + 3) % RING]};
        vt_aug_sample smp;
        vt_aug_mosaic_sample(ip, NULL, s, &p, &r, &smp, NULL);
        double t2 = now();
        vt_aug_sample_float(&smp, 3, f, (size_t)s * s);
        double t3 = now();
        vt_image w;
        int done = 0;
        vt_aug_warp_tiles(smp.tiles, smp.canvas_w, smp.canvas_h, smp.xc, smp.yc, &smp.t, s, s,
                          114, &w, &done);
        double t4 = now();
        vt_aug_colour_apply(&w, &smp.colour);
        double t5 = now();
        vt_image_to_float(&w, 3, 0, f, (size_t)s * s);
        double t6 = now();
        t_dec += t1 - t0;
        t_draw += t2 - t1;
        t_fused += t3 - t2;
        t_warp += t4 - t3;
        t_hsv += t5 - t4;
        t_flt += t6 - t5;
        vt_image_free(&w);
        vt_aug_sample_free(&smp);
    }
    for (int i = 0; i < RING; i++) free(buf[i]);
    const char *simd = getenv("VT_SIMD");
    int avx2 = __builtin_cpu_supports("avx2") && !(simd && !strcmp(simd, "sse2"));
    printf("breakdown of one mosaic sample at %d (ms, 1 thread, no cache, %s): decode its image "
           "%.2f, draws + labels %.2f, warp + hsv + flips + float in one pass %.2f; total %.2f "
           "(apart: warp to bytes %.2f, hsv + flips %.2f, to_float %.2f)\n",
           s, avx2 ? "AVX2" : "SSE2", 1e3 * t_dec / samples, 1e3 * t_draw / samples,
           1e3 * t_fused / samples, 1e3 * (t_dec + t_draw + t_fused) / samples,
           1e3 * t_warp / samples, 1e3 * t_hsv / samples, 1e3 * t_flt / samples);
    free(f);
}

/* (d) cache=ram under a cap: bytes cached vs cap, peak RSS. */
static void cache_cap(const vt_dataset *ds, int s, int batch)
{
    vt_aug_params aug;
    vt_aug_params_default(&aug);
    vt_loader_config cfg = {s, 3, 2, &aug, NULL, NULL, NULL, NULL, VT_SAMPLE_AUTO};
    int n = ds->split[VT_SPLIT_TRAIN].n;
    int64_t base = (int64_t)s * (s * 3 / 4) * 3; /* 640x480 sources: long side s */
    int64_t cap = base * n / 3;
    int *idx = malloc(sizeof(int) * (size_t)batch);
    float *x = malloc(sizeof(float) * 3 * (size_t)s * s * batch);
    int32_t lab[4096];
    int ok;
    vt_loader *L;
    /* the batch buffer and one epoch without cache first, so the RSS difference below is the
     * cache's (and not the batch's, the decoders' or malloc's working set) */
    if (vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg)) return;
    for (int b0 = 0; b0 < n; b0 += batch) {
        int m = n - b0 < batch ? n - b0 : batch;
        for (int i = 0; i < m; i++) idx[i] = b0 + i;
        vt_loader_fill(L, idx, m, 2, x, lab, &ok);
    }
    vt_loader_destroy(L);
    long rss0 = status_kb("VmRSS");
    if (vt_loader_create(&L, ds, VT_SPLIT_TRAIN, &cfg) || vt_loader_enable_cache(L, cap)) return;
    for (int ep = 0; ep < 2; ep++)
        for (int b0 = 0; b0 < n; b0 += batch) {
            int m = n - b0 < batch ? n - b0 : batch;
            for (int i = 0; i < m; i++) idx[i] = b0 + i;
            vt_loader_fill(L, idx, m, 3 + (uint64_t)ep, x, lab, &ok);
        }
    int images;
    int64_t bytes;
    vt_loader_cache_stats(L, &images, &bytes);
    long rss1 = status_kb("VmRSS"), hwm = status_kb("VmHWM");
    printf("(d) cache=ram, cap %.1f MB (a third of the %d base images, %.1f MB): %d images "
           "cached, %.1f MB (%s the cap); RSS %.1f MB after an epoch without cache, %.1f MB "
           "after 2 epochs with it (+%.1f MB; peak %.1f MB)\n",
           cap / 1e6, n, base * n / 1e6, images, bytes / 1e6, bytes <= cap ? "within" : "OVER",
           rss0 / 1e3, rss1 / 1e3, (rss1 - rss0) / 1e3, hwm / 1e3);
    free(idx);
    free(x);
    vt_loader_destroy(L);
}

/* (e) the trainer: det-n one epoch on a fraction of the dataset, prefetch 0 vs 2: img/s and the
 * seconds blocked on data (VT_METRIC_DATA_WAIT_SECONDS). */
static void trainer_prefetch(vt_dataset *ds, int imgsz, int batch, double fraction)
{
    /* 0, 2, 0, 2: the first run of a process also pays for first-touch page faults */
    for (int k = 0; k < 4; k++) {
        int pf = k % 2 ? 2 : 0;
        vt_model *m;
        vt_trainer *t;
        char mo[32], kv[64];
        snprintf(mo, sizeof mo, "imgsz=%d", imgsz);
        if (vt_model_create(&m, "det-n", 3, mo) || vt_trainer_create(&t, m, ds)) return;
        const char *set[] = {"epochs=1", "save=0", "val=0", "workers=2", "warmup_epochs=0", NULL};
        for (int i = 0; set[i]; i++) vt_trainer_set(t, set[i]);
        snprintf(kv, sizeof kv, "batch=%d", batch);
        vt_trainer_set(t, kv);
        snprintf(kv, sizeof kv, "fraction=%g", fraction);
        vt_trainer_set(t, kv);
        snprintf(kv, sizeof kv, "prefetch=%d", pf);
        vt_trainer_set(t, kv);
        double t0 = now();
        vt_status st = vt_trainer_run(t);
        double wall = now() - t0, wait = -1, ips = -1, ep = -1;
        vt_trainer_metric(t, VT_METRIC_DATA_WAIT_SECONDS, &wait);
        vt_trainer_metric(t, VT_METRIC_IMAGES_PER_SEC, &ips);
        vt_trainer_metric(t, VT_METRIC_EPOCH_SECONDS, &ep);
        printf("(e) trainer det-n imgsz %d batch %d, fraction %g, workers 2, prefetch %d: %s, "
               "epoch %.1f s, %.1f img/s, data wait %.2f s (%.0f%% of the epoch)\n",
               imgsz, batch, fraction, pf, st ? vt_last_error() : "ok", ep, ips, wait,
               ep > 0 ? 100 * wait / ep : 0);
        (void)wall;
        vt_trainer_destroy(t);
        vt_model_destroy(m);
    }
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int images = 200, imgsz = 640, batch = 16, batches = 12, reps = 3, small = 320, train = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "dir=", 4)) dir = a + 4;
        else if (!strncmp(a, "images=", 7)) images = atoi(a + 7);
        else if (!strncmp(a, "imgsz=", 6)) imgsz = atoi(a + 6);
        else if (!strncmp(a, "batch=", 6)) batch = atoi(a + 6);
        else if (!strncmp(a, "batches=", 8)) batches = atoi(a + 8);
        else if (!strncmp(a, "reps=", 5)) reps = atoi(a + 5);
        else if (!strncmp(a, "small=", 6)) small = atoi(a + 6);
        else if (!strncmp(a, "train=", 6)) train = atoi(a + 6);
        else {
            fprintf(stderr, "unknown argument %s\n", a);
            return 2;
        }
    }
    char tmp[256];
    if (!dir) {
        snprintf(tmp, sizeof tmp, "/tmp/vt_loader_bench_%d", (int)getpid());
        dir = tmp;
    }
    double t0 = now();
    if (make_dataset(dir, images)) {
        fprintf(stderr, "cannot write the dataset under %s\n", dir);
        return 1;
    }
    printf("dataset: %d JPEGs 640x480 q90 under %s (%.1f s to write)\n", images, dir, now() - t0);
    vt_dataset *ds;
    if (vt_dataset_open(&ds, VT_TASK_DETECT, dir)) {
        fprintf(stderr, "open: %s\n", vt_last_error());
        return 1;
    }
    int n = ds->split[VT_SPLIT_TRAIN].n;
    cache_cap(ds, imgsz, batch); /* first: the peak RSS is then the cache's */
    uint8_t **buf = calloc((size_t)n, sizeof *buf);
    size_t *size = calloc((size_t)n, sizeof *size), total = 0;
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(ds->split[VT_SPLIT_TRAIN].paths[i], "rb");
        fseek(f, 0, SEEK_END);
        size[i] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        buf[i] = malloc(size[i]);
        if (fread(buf[i], 1, size[i], f) != size[i]) return 1;
        fclose(f);
        total += size[i];
    }
    printf("mean file size %.1f KB; load average at start: ", total / 1e3 / n);
    fflush(stdout);
    if (system("cut -d' ' -f1-3 /proc/loadavg")) printf("\n");

    double raw_cpu, raw = raw_decode_rate(buf, size, n, reps, &raw_cpu);
    printf("(a) raw libjpeg-turbo decode, full size, 1 thread: %.1f img/s (%.2f ms/img), %.1f "
           "img/CPU-s\n", raw, 1e3 / raw, raw_cpu);
    struct {
        const char *what;
        run_cfg rc;
    } runs[] = {
        {"files, default aug", {imgsz, 1, 0, 0, 0, 0}},
        {"files, default aug", {imgsz, 2, 0, 0, 0, 0}},
        {"cache=ram (warm)", {imgsz, 1, 0, 1, 0, 0}},
        {"cache=ram (warm)", {imgsz, 2, 0, 1, 0, 0}},
        {"files, JPEG fast path", {small, 1, 0, 0, 0, 0}},
        {"files, full decode", {small, 1, 1, 0, 0, 0}},
        {"files, JPEG fast path", {small, 2, 0, 0, 0, 0}},
        {"files, full decode", {small, 2, 1, 0, 0, 0}},
        {"files, mosaic=0", {imgsz, 1, 0, 0, 1, 0}},
        {"files, no augmentation", {imgsz, 1, 0, 0, 0, 1}},
        {"files, mosaic=0", {imgsz, 2, 0, 0, 1, 0}},
        {"files, no augmentation", {imgsz, 2, 0, 0, 0, 1}},
    };
    int nr = (int)(sizeof runs / sizeof runs[0]);
    double rate[16], crate[16];
    printf("(b) loader, detection, default augmentation (mosaic 1.0, affine, HSV, fliplr), batch %d:\n",
           batch);
    printf("    %-24s %6s %7s %9s %13s %12s %11s %12s\n", "source", "imgsz", "workers",
           "img/s", "img/s/worker", "/raw decode", "img/CPU-s", "/raw (CPU)");
    for (int i = 0; i < nr; i++) {
        rate[i] = loader_rate(ds, &runs[i].rc, batch, batches, reps, &crate[i]);
        double per = rate[i] / runs[i].rc.workers;
        printf("    %-24s %6d %7d %9.1f %13.1f %12.3f %11.1f %12.3f\n", runs[i].what,
               runs[i].rc.imgsz, runs[i].rc.workers, rate[i], per, per / raw, crate[i],
               crate[i] / raw_cpu);
    }
    printf("    scaling 2 workers / 1: files %.2fx, cache %.2fx, fast path at %d %.2fx, mosaic=0 "
           "%.2fx, no augmentation %.2fx\n",
           rate[1] / rate[0], rate[3] / rate[2], small, rate[6] / rate[4], rate[10] / rate[8],
           rate[11] / rate[9]);
    printf("    img/CPU-s 2 workers / 1 (1.00 = no threading overhead): files %.2f, cache %.2f, "
           "fast path %.2f, mosaic=0 %.2f, no augmentation %.2f\n",
           crate[1] / crate[0], crate[3] / crate[2], crate[6] / crate[4], crate[10] / crate[8],
           crate[11] / crate[9]);
    printf("    JPEG fast path at %d: %.2fx the full decode (1 worker), %.2fx (2 workers)\n", small,
           rate[4] / rate[5], rate[6] / rate[7]);
    breakdown(ds, imgsz, 24);
    breakdown(ds, small, 24);
    if (train) trainer_prefetch(ds, small, batch, 0.4);
    for (int i = 0; i < n; i++) free(buf[i]);
    free(buf);
    free(size);
    vt_dataset_destroy(ds);
    if (dir == tmp) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    }
    return 0;
}
