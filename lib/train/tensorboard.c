/* TensorBoard logging of a run (tensorboard=1, the default): the file
 * <run>/events.out.tfevents.<time>.<host>, TFRecord + Event protobufs (core/tfrecord.h).
 *
 * What goes in (step = optimiser iterations, one axis for every tag so that TensorBoard's
 * purge on a resumed run's SessionLog START applies to all of them):
 *   each epoch     every results.csv column, under the column's name (epoch included, which
 *                  maps steps to epochs), in one record
 *   every 10 steps step/loss (the batch's), step/img_per_s and step/data_wait_share (over the
 *                  epoch so far, as the progress callback), step/host_rss_mib, on a GPU
 *                  step/device_memory_mib
 *   at the end     results.png and confusion_matrix.png as images
 *
 * Logging is best effort: a failure is logged as a warning, the file is closed and training
 * goes on without it.  The thread's error message is left as it was, so a failure of the run
 * itself still reports its own message. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/tfrecord.h"
#include "train/trainer_impl.h"

enum { TB_EVERY = 10 };

typedef struct vt_tblog {
    vt_tfrecord_file f;
} vt_tblog;

static double wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct saved_error {
    char msg[VT_ERRMSG_MAX];
} saved_error;

static void save_error(saved_error *s) { snprintf(s->msg, sizeof s->msg, "%s", vt_last_error()); }

static void restore_error(const saved_error *s)
{
    if (s->msg[0]) vt_fail(VT_OK, "%s", s->msg);
    else vt_err_clear();
}

static void give_up(vt_trainer *t, const char *what)
{
    vt_log(&t->log, VT_LOG_WARNING, "tensorboard: %s: %s; no more TensorBoard records in this run",
           what, vt_last_error());
    if (t->tb) {
        vt_tfrecord_close(&t->tb->f);
        free(t->tb);
        t->tb = NULL;
    }
}

/* One Event in one record; b is freed. */
static int put(vt_trainer *t, vt_pbuf *b, const char *what)
{
    vt_status st = b->failed ? vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory") : VT_OK;
    if (!st) st = vt_tfrecord_write(&t->tb->f, b->p, b->n);
    vt_pb_free(b);
    if (st) give_up(t, what);
    return st == VT_OK;
}

void vt_tb_open(vt_trainer *t)
{
    if (t->tb || !t->run_dir[0] || vt_opt_num(&t->opts, VT_OPT_TENSORBOARD) == 0) return;
    saved_error se;
    save_error(&se);
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/' || *c <= ' ') *c = '_';
    char path[4400];
    int n = snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.%s", t->run_dir,
                     (long long)time(NULL), host);
    vt_tblog *tb = vt_calloc(1, sizeof *tb);
    vt_status st = tb ? VT_ERR_IO : VT_ERR_OUT_OF_MEMORY;
    /* a second session of the run within the same second gets a suffix */
    for (int k = 1; tb && st && k < 100; k++) {
        st = vt_tfrecord_create(&tb->f, path);
        if (st && errno != EEXIST) break;
        if (st) snprintf(path + n, sizeof path - (size_t)n, ".%d", k);
    }
    if (st) {
        free(tb);
        give_up(t, "cannot create the events file");
        restore_error(&se);
        return;
    }
    t->tb = tb;
    vt_pbuf b = {0};
    vt_tfevent_file_version(&b, wall_time());
    if (put(t, &b, "write") && t->pos.iteration > 0) {
        /* resumed: what an earlier session logged after its checkpoint is void */
        vt_tfevent_session_start(&b, wall_time(), t->pos.iteration + 1);
        put(t, &b, "write");
    }
    restore_error(&se);
}

void vt_tb_epoch(vt_trainer *t)
{
    if (!t->tb || t->results.n == 0) return;
    saved_error se;
    save_error(&se);
    const vt_results *r = &t->results;
    vt_pbuf b = {0};
    vt_tfevent_scalars(&b, wall_time(), t->pos.iteration, r->cols,
                       r->v + (size_t)(r->n - 1) * r->ncol, r->ncol);
    put(t, &b, "write");
    restore_error(&se);
}

/* Resident set size from /proc/self/statm (pages); < 0 when unavailable. */
static double host_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, rss = -1;
    if (!f) return -1;
    if (fscanf(f, "%lld %lld", &size, &rss) != 2) rss = -1;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return rss < 0 || page <= 0 ? -1 : (double)rss * (double)page;
}

void vt_tb_step(vt_trainer *t, float batch_loss)
{
    if (!t->tb || t->prog.iteration % TB_EVERY != 0) return;
    saved_error se;
    save_error(&se);
    const vt_train_pos *p = &t->pos;
    static const char *const tags[] = {"step/loss", "step/img_per_s", "step/data_wait_share",
                                       "step/host_rss_mib", "step/device_memory_mib",
                                       /* a GPU run's (NVML; NaN when absent) */
                                       "step/gpu_util_pct", "step/gpu_mem_used_gb",
                                       "step/gpu_power_w", "step/gpu_temp_c"};
    static const vt_metric gpu[4] = {VT_METRIC_GPU_UTIL, VT_METRIC_GPU_MEMORY_USED_BYTES,
                                     VT_METRIC_GPU_POWER_W, VT_METRIC_GPU_TEMP_C};
    static const double gpu_scale[4] = {1, 1e-9, 1, 1};
    double rss = host_rss_bytes();
    double v[9] = {batch_loss, p->epoch_time > 0 ? p->images / p->epoch_time : NAN,
                   p->epoch_time > 0 ? p->data_wait / p->epoch_time : NAN,
                   rss >= 0 ? rss / 1048576.0 : NAN,
                   t->prog.has[VT_METRIC_DEVICE_MEMORY_BYTES]
                       ? t->prog.value[VT_METRIC_DEVICE_MEMORY_BYTES] / 1048576.0
                       : NAN};
    for (int i = 0; i < 4; i++)
        v[5 + i] = t->prog.has[gpu[i]] ? t->prog.value[gpu[i]] * gpu_scale[i] : NAN;
    vt_pbuf b = {0};
    vt_tfevent_scalars(&b, wall_time(), t->prog.iteration, tags, v, t->results.gpu_col ? 9 : 5);
    put(t, &b, "write");
    restore_error(&se);
}

void vt_tb_sync(vt_trainer *t)
{
    if (!t->tb) return;
    saved_error se;
    save_error(&se);
    if (vt_tfrecord_sync(&t->tb->f)) give_up(t, "flush");
    restore_error(&se);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A PNG of the run folder as an image event; a file that is not there is skipped. */
static void put_png(vt_trainer *t, const char *name, const char *tag)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", t->run_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    unsigned char *png = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 33 && fseek(f, 0, SEEK_SET) == 0 &&
        (png = malloc((size_t)n)) && fread(png, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    /* IHDR comes first: width, height, bit depth, colour type */
    if (!png || n < 33 || memcmp(png, sig, 8) != 0 || memcmp(png + 12, "IHDR", 4) != 0) {
        free(png);
        vt_fail(VT_ERR_FORMAT, "%s: not a PNG file", path);
        give_up(t, "image");
        return;
    }
    static const int channels[7] = {1, 0, 3, 0, 2, 0, 4}; /* by PNG colour type */
    int ctype = png[25] <= 6 ? png[25] : 1;
    vt_pbuf b = {0};
    vt_tfevent_image(&b, wall_time(), t->pos.iteration, tag, (int)be32(png + 16),
                     (int)be32(png + 20), channels[ctype] ? channels[ctype] : 3, png, (size_t)n);
    free(png);
    put(t, &b, "write");
}

void vt_tb_close(vt_trainer *t)
{
    if (!t->tb) return;
    saved_error se;
    save_error(&se);
    /* the run folder's figures (those the task wrote) */
    static const char *const figures[] = {"results", "confusion_matrix", "PR_curve", "F1_curve",
                                          "BoxPR_curve", "BoxF1_curve", "MaskPR_curve",
                                          "MaskF1_curve", "val_batch0_labels", "val_batch0_pred"};
    enum { NFIG = sizeof figures / sizeof figures[0] };
    for (int i = 0; i < NFIG && t->tb && vt_opt_num(&t->opts, VT_OPT_PLOTS) != 0; i++) {
        char file[64], tag[64];
        snprintf(file, sizeof file, "%s.png", figures[i]);
        snprintf(tag, sizeof tag, "plots/%s", figures[i]);
        put_png(t, file, tag);
    }
    if (t->tb && vt_tfrecord_sync(&t->tb->f)) give_up(t, "flush");
    if (t->tb) {
        vt_tfrecord_close(&t->tb->f);
        free(t->tb);
        t->tb = NULL;
    }
    restore_error(&se);
}
