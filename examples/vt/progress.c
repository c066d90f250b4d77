/* vt: the progress display of a training run (a live bar or plain lines, one table row per
 * epoch) and the library's log messages.  progress=off drops the bar and the table only (the
 * run folder, the data summary and the results still print); quiet=1 drops everything but
 * errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vt_cli.h"

/* ---- progress ----------------------------------------------------------------------------- */

int progress_mode(const char *cmd, const char *v, int *mode)
{
    if (!v || !strcmp(v, "auto")) *mode = isatty(STDOUT_FILENO) ? PROG_BAR : PROG_PLAIN;
    else if (!strcmp(v, "bar")) *mode = PROG_BAR;
    else if (!strcmp(v, "plain")) *mode = PROG_PLAIN;
    else if (!strcmp(v, "off") || !strcmp(v, "0")) *mode = PROG_OFF;
    else {
        fprintf(stderr, "vt %s: progress=%s: valid values: auto, bar, plain, off\n", cmd, v);
        return EXIT_USAGE;
    }
    return 0;
}

void clear_bar(progress_state *ps)
{
    if (ps->bar_shown) {
        fputs("\r\033[K", stdout);
        ps->bar_shown = 0;
    }
}

static double metric_or(const vt_progress *p, vt_metric m, double dflt)
{
    double v;
    return vt_progress_metric(p, m, &v) == VT_OK ? v : dflt;
}

/* The training GPU's figures, short ("GPU 97% 41.2/139.8G 512W 61C"): "" on the CPU (no
 * device memory reported), "GPU n/a" when the library has no figures (no NVML). */
static void fmt_gpu(const vt_progress *p, char *buf, size_t cap)
{
    double v, used, total;
    buf[0] = 0;
    if (vt_progress_metric(p, VT_METRIC_DEVICE_MEMORY_BYTES, &v) != VT_OK) return;
    size_t k = (size_t)snprintf(buf, cap, "  GPU");
    int any = 0;
    if (k < cap && vt_progress_metric(p, VT_METRIC_GPU_UTIL, &v) == VT_OK)
        k += (size_t)snprintf(buf + k, cap - k, " %.0f%%", v), any = 1;
    if (k < cap && vt_progress_metric(p, VT_METRIC_GPU_MEMORY_USED_BYTES, &used) == VT_OK &&
        vt_progress_metric(p, VT_METRIC_GPU_MEMORY_TOTAL_BYTES, &total) == VT_OK)
        k += (size_t)snprintf(buf + k, cap - k, " %.1f/%.1fG", used / 1e9, total / 1e9), any = 1;
    if (k < cap && vt_progress_metric(p, VT_METRIC_GPU_POWER_W, &v) == VT_OK)
        k += (size_t)snprintf(buf + k, cap - k, " %.0fW", v), any = 1;
    if (k < cap && vt_progress_metric(p, VT_METRIC_GPU_TEMP_C, &v) == VT_OK)
        k += (size_t)snprintf(buf + k, cap - k, " %.0fC", v), any = 1;
    if (!any && k < cap) snprintf(buf + k, cap - k, " n/a");
}

/* The best epoch so far, by the task's fitness (vt_task_fitness: top-1, mAP50-95, mIoU, ...):
 * for the last line, also without the table. */
static void track_best(progress_state *ps, const vt_progress *p, int epoch)
{
    double v;
    if (vt_progress_metric(p, vt_task_fitness(ps->task), &v) == VT_OK &&
        (ps->best_epoch == 0 || v > ps->best_value)) {
        ps->best_value = v;
        ps->best_epoch = epoch;
    }
}

/* A metric column of the epoch table: its label (vt_metric_label), in an odd width of at least
 * 7 (a %.4f value and a space: "top1" and "P" in 7, "mAP50-95" and "pixel_acc" in 9). */
static int column_width(vt_metric m)
{
    const char *label = vt_metric_label(m);
    int w = (int)(label ? strlen(label) : 1) | 1;
    return w < 7 ? 7 : w;
}

enum { MAX_COLUMNS = 16 };

int progress_cb(void *user, vt_event ev, const vt_progress *p)
{
    progress_state *ps = user;
    if (ps->quiet) return 0;
    /* the run folder exists once the run has started: name it before the first progress line */
    if (!ps->dir_shown && ps->trainer) {
        const char *dir = vt_trainer_run_dir(ps->trainer);
        ps->dir_shown = 1;
        if (dir && *dir) printf("run folder: %s (weights/last.vtm, weights/best.vtm)\n", dir);
        double b;
        if (ps->auto_batch && vt_trainer_get_float(ps->trainer, VT_OPT_BATCH, &b) == VT_OK)
            printf("batch=-1: training with batch %.0f\n", b);
    }
    double t = now_s();
    int epoch = vt_progress_epoch(p), epochs = vt_progress_epochs(p);
    int batch = vt_progress_batch(p), batches = vt_progress_batches(p);
    if (ev == VT_EVENT_BATCH_END) {
        if (ps->mode == PROG_OFF) return 0;
        /* throttle: 10 redraws a second on a terminal, a line every 10 s otherwise */
        double every = ps->mode == PROG_BAR ? 0.1 : 10.0;
        if (t - ps->last_draw < every && batch != batches) return 0;
        if (ps->mode == PROG_PLAIN && batch == batches) return 0; /* the epoch row follows */
        ps->last_draw = t;
        double done = (double)(epoch - 1) * batches + batch, total = (double)epochs * batches;
        double elapsed = t - ps->t0, eta = done > 0 ? elapsed / done * (total - done) : -1;
        double loss = metric_or(p, VT_METRIC_LOSS, NAN), ips = metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0);
        char etab[32], gpu[96];
        fmt_duration(eta, etab, sizeof etab);
        fmt_gpu(p, gpu, sizeof gpu);
        if (ps->mode == PROG_BAR) {
            char bar[21];
            int fill = batches > 0 ? (int)(20.0 * batch / batches) : 0;
            for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
            bar[20] = 0;
            printf("\repoch %d/%d [%s] %d/%d  loss %.4f  %.0f img/s  ETA %s%s\033[K", epoch,
                   epochs, bar, batch, batches, loss, ips, etab, gpu);
            ps->bar_shown = 1;
        } else {
            printf("epoch %d/%d batch %d/%d  loss %.4f  %.0f img/s  ETA %s%s\n", epoch, epochs,
                   batch, batches, loss, ips, etab, gpu);
        }
        fflush(stdout);
        return 0;
    }
    if (ev != VT_EVENT_EPOCH_END) return 0; /* e.g. a checkpoint was saved */
    ps->epochs_seen++;
    track_best(ps, p, epoch);
    if (ps->mode == PROG_OFF) return 0;
    /* one row of the summary table: epoch, loss, val_loss, the task's metrics (the columns of
     * its results.csv), lr, img/s, time */
    clear_bar(ps);
    vt_metric cols[MAX_COLUMNS];
    int ncols = vt_task_metrics(ps->task, cols, MAX_COLUMNS);
    if (ncols > MAX_COLUMNS) ncols = MAX_COLUMNS;
    if (!ps->header_done) {
        printf("%9s %10s %10s", "epoch", "loss", "val_loss");
        for (int i = 0; i < ncols; i++)
            printf(" %*s", column_width(cols[i]), vt_metric_label(cols[i]));
        printf(" %10s %8s %9s\n", "lr", "img/s", "time");
        ps->header_done = 1;
    }
    char ep[24], cell[16], tb[32];
    double v;
    snprintf(ep, sizeof ep, "%d/%d", epoch, epochs);
    if (vt_progress_metric(p, VT_METRIC_VAL_LOSS, &v) == VT_OK)
        snprintf(cell, sizeof cell, "%.4f", v);
    else snprintf(cell, sizeof cell, "-");
    printf("%9s %10.4f %10s", ep, metric_or(p, VT_METRIC_LOSS, NAN), cell);
    for (int i = 0; i < ncols; i++) {
        if (vt_progress_metric(p, cols[i], &v) == VT_OK) snprintf(cell, sizeof cell, "%.4f", v);
        else snprintf(cell, sizeof cell, "-");
        printf(" %*s", column_width(cols[i]), cell);
    }
    /* time: wall time of the epoch, validation included */
    snprintf(tb, sizeof tb, "%.1fs", t - ps->epoch_t0);
    ps->epoch_t0 = t;
    printf(" %10.6f %8.0f %9s\n", metric_or(p, VT_METRIC_LR, 0),
           metric_or(p, VT_METRIC_IMAGES_PER_SEC, 0), tb);
    fflush(stdout);
    return 0;
}

/* Notes ("vt: ...") and warnings to stderr; quiet=1 sets the log level to errors only. */
void log_cb(void *user, vt_log_level level, const char *msg)
{
    progress_state *ps = user;
    if (ps && ps->quiet && level != VT_LOG_ERROR) return;
    if (ps) clear_bar(ps);
    fflush(stdout);
    if (level >= VT_LOG_INFO) fprintf(stderr, "vt: %s\n", msg); /* a note: no label */
    else fprintf(stderr, "vt: %s: %s\n", level == VT_LOG_ERROR ? "error" : "warning", msg);
}
