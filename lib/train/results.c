/* The per-epoch results table (see results.h). */
#include "train/results.h"

#include "image/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const head_cols[VT_RESULTS_HEAD] = {"epoch", "train/loss", "val/loss"};
static const unsigned char head_plot[VT_RESULTS_HEAD] = {0, 1, 1};
static const char *const tail_cols[VT_RESULTS_TAIL] = {"lr", "time/epoch", "time/data_wait",
                                                       "time/elapsed"};
static const unsigned char tail_plot[VT_RESULTS_TAIL] = {1, 1, 0, 0};
static const char *const gpu_cols[VT_RESULTS_GPU] = {"gpu/util_pct", "gpu/mem_used_gb",
                                                     "gpu/mem_total_gb", "gpu/power_w",
                                                     "gpu/temp_c"};
static const vt_metric gpu_metrics[VT_RESULTS_GPU] = {
    VT_METRIC_GPU_UTIL, VT_METRIC_GPU_MEMORY_USED_BYTES, VT_METRIC_GPU_MEMORY_TOTAL_BYTES,
    VT_METRIC_GPU_POWER_W, VT_METRIC_GPU_TEMP_C};
static const double gpu_scale[VT_RESULTS_GPU] = {1, 1e-9, 1e-9, 1, 1};

void vt_results_init(vt_results *r, const vt_task_iface *task)
{
    memset(r, 0, sizeof *r);
    int k = 0;
    for (int i = 0; i < VT_RESULTS_HEAD; i++, k++)
        r->cols[k] = head_cols[i], r->plot[k] = head_plot[i];
    for (int i = 0; i < task->n_metrics && k < VT_RESULTS_MAXCOL - VT_RESULTS_TAIL; i++, k++)
        r->cols[k] = task->metric_cols[i], r->plot[k] = task->metric_plot[i];
    for (int i = 0; i < VT_RESULTS_TAIL; i++, k++)
        r->cols[k] = tail_cols[i], r->plot[k] = tail_plot[i];
    r->ncol = k;
}

void vt_results_row(const vt_task_iface *task, int epoch, double train_loss, int validated,
                    const vt_progress *prog, double epoch_time, double data_wait, double elapsed,
                    double row[VT_RESULTS_MAXCOL])
{
    double vv = validated ? 1.0 : NAN; /* NaN: no validation value */
    const double *pv = prog->value;
    int k = 0;
    row[k++] = epoch;
    row[k++] = train_loss;
    row[k++] = vv * pv[VT_METRIC_VAL_LOSS];
    for (int i = 0; i < task->n_metrics && k < VT_RESULTS_MAXCOL - VT_RESULTS_TAIL; i++)
        row[k++] = vv * pv[task->metrics[i]];
    row[k++] = pv[VT_METRIC_LR];
    row[k++] = epoch_time;
    row[k++] = data_wait;
    row[k++] = elapsed;
}

vt_status vt_results_add_gpu(vt_results *r)
{
    if (r->gpu_col) return VT_OK;
    if (r->ncol + VT_RESULTS_GPU > VT_RESULTS_MAXCOL)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "results: no room for the GPU columns");
    int nc = r->ncol + VT_RESULTS_GPU;
    if (r->n > 0) {
        double *v = vt_malloc((size_t)r->cap * (size_t)nc * sizeof(double));
        if (!v) return VT_ERR_OUT_OF_MEMORY;
        for (int i = 0; i < r->n; i++)
            for (int c = 0; c < nc; c++)
                v[(size_t)i * nc + c] = c < r->ncol ? r->v[(size_t)i * r->ncol + c] : NAN;
        free(r->v);
        r->v = v;
    } else {
        free(r->v); /* rows of the old width */
        r->v = NULL;
        r->cap = 0;
    }
    r->gpu_col = r->ncol;
    for (int i = 0; i < VT_RESULTS_GPU; i++) {
        r->cols[r->ncol + i] = gpu_cols[i];
        r->plot[r->ncol + i] = 0;
    }
    r->ncol = nc;
    return VT_OK;
}

void vt_results_row_gpu(const vt_results *r, const vt_progress *prog,
                        double row[VT_RESULTS_MAXCOL])
{
    for (int i = 0; r->gpu_col && i < VT_RESULTS_GPU; i++)
        row[r->gpu_col + i] = prog->has[gpu_metrics[i]]
                                  ? prog->value[gpu_metrics[i]] * gpu_scale[i]
                                  : NAN;
}

void vt_results_free(vt_results *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}

vt_status vt_results_append(vt_results *r, const double *row)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        double *v = vt_realloc(r->v, (size_t)cap * (size_t)r->ncol * sizeof(double));
        if (!v) return VT_ERR_OUT_OF_MEMORY;
        r->v = v;
        r->cap = cap;
    }
    memcpy(r->v + (size_t)r->n * r->ncol, row, (size_t)r->ncol * sizeof(double));
    r->n++;
    return VT_OK;
}

void vt_results_truncate(vt_results *r, int epoch)
{
    while (r->n > 0 && r->v[(size_t)(r->n - 1) * r->ncol] > epoch) r->n--;
}

vt_status vt_results_to_csv(const vt_results *r, int exact, char **text, size_t *len)
{
    size_t cap = 256 + (size_t)(r->n + 1) * (size_t)r->ncol * 32;
    char *s = vt_malloc(cap);
    if (!s) return VT_ERR_OUT_OF_MEMORY;
    size_t k = 0;
    for (int c = 0; c < r->ncol; c++)
        k += (size_t)snprintf(s + k, cap - k, "%s%s", c ? "," : "", r->cols[c]);
    s[k++] = '\n';
    for (int i = 0; i < r->n; i++) {
        for (int c = 0; c < r->ncol; c++) {
            double v = r->v[(size_t)i * r->ncol + c];
            if (c) s[k++] = ',';
            if (!isnan(v)) k += (size_t)snprintf(s + k, cap - k, exact ? "%.17g" : "%.6g", v);
        }
        s[k++] = '\n';
    }
    s[k] = 0;
    *text = s;
    *len = k;
    return VT_OK;
}

vt_status vt_results_from_csv(vt_results *r, const char *text, size_t len, const char *what)
{
    r->n = 0;
    const char *p = text, *end = text + len;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return vt_fail(VT_ERR_CHECKPOINT, "%s: results history has no header", what);
    /* header must list our columns */
    size_t hl = 0;
    char hdr[1024];
    for (int c = 0; c < r->ncol && hl < sizeof hdr; c++)
        hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "%s%s", c ? "," : "", r->cols[c]);
    /* a run that trained on a GPU has its columns too (vt_results_add_gpu) */
    size_t gl = hl;
    for (int c = 0; !r->gpu_col && c < VT_RESULTS_GPU && gl < sizeof hdr; c++)
        gl += (size_t)snprintf(hdr + gl, sizeof hdr - gl, ",%s", gpu_cols[c]);
    if (gl < sizeof hdr && gl > hl && (size_t)(nl - p) == gl && memcmp(p, hdr, gl) == 0) {
        vt_status st = vt_results_add_gpu(r);
        if (st) return st;
        hl = gl;
    }
    hdr[hl < sizeof hdr ? hl : sizeof hdr - 1] = 0;
    if ((size_t)(nl - p) != hl || memcmp(p, hdr, hl) != 0)
        return vt_fail(VT_ERR_CHECKPOINT, "%s: results history has columns '%.*s', expected '%s'",
                       what, (int)(nl - p), p, hdr);
    p = nl + 1;
    double *row = vt_malloc((size_t)r->ncol * sizeof(double));
    if (!row) return VT_ERR_OUT_OF_MEMORY;
    int line = 2;
    vt_status st = VT_OK;
    while (!st && p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        for (int c = 0; c < r->ncol; c++) {
            const char *fe = memchr(p, ',', (size_t)(le - p));
            if (!fe) fe = le;
            if (fe == p) {
                row[c] = NAN;
            } else {
                char num[64];
                size_t n = (size_t)(fe - p);
                char *q;
                if (n >= sizeof num) n = sizeof num - 1;
                memcpy(num, p, n);
                num[n] = 0;
                row[c] = strtod(num, &q);
                if (*q) {
                    st = vt_fail(VT_ERR_CHECKPOINT, "%s: results history line %d: bad number '%s'",
                                 what, line, num);
                    break;
                }
            }
            if (c < r->ncol - 1 && fe == le) {
                st = vt_fail(VT_ERR_CHECKPOINT, "%s: results history line %d: %d fields, "
                             "expected %d", what, line, c + 1, r->ncol);
                break;
            }
            p = fe + 1;
        }
        if (!st) st = vt_results_append(r, row);
        p = le + 1;
        line++;
    }
    free(row);
    return st;
}

vt_status vt_results_plot(const char *path, const vt_results *r)
{
    const double *ys[32];
    const char *titles[32];
    int np = 0;
    double *x = vt_malloc(((size_t)r->n + 1) * (size_t)(r->ncol + 1) * sizeof(double));
    if (!x) return VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < r->n; i++) x[i] = r->v[(size_t)i * r->ncol];
    for (int k = 0; k < r->ncol && np < 32; k++) {
        if (!r->plot[k]) continue;
        double *y = x + (size_t)(np + 1) * ((size_t)r->n + 1);
        for (int i = 0; i < r->n; i++) y[i] = r->v[(size_t)i * r->ncol + k];
        ys[np] = y;
        titles[np++] = r->cols[k];
    }
    vt_status st = vt_plot_grid(path, x, r->n, ys, titles, np, "epoch");
    free(x);
    return st;
}
