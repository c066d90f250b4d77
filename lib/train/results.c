/* The per-epoch results table (see results.h). */
#include "train/results.h"

#include "image/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cls_cols[VT_RC_NCLS] = {
    "epoch", "train/loss", "val/loss", "metrics/top1", "metrics/top5", "lr",
    "time/epoch", "time/data_wait", "time/elapsed"};
static const unsigned char cls_plot[VT_RC_NCLS] = {0, 1, 1, 1, 1, 1, 1, 0, 0};

static const char *const det_cols[VT_RD_NCOLS] = {
    "epoch", "train/loss", "val/loss", "metrics/precision", "metrics/recall", "metrics/mAP50",
    "metrics/mAP50-95", "lr", "time/epoch", "time/data_wait", "time/elapsed"};
static const unsigned char det_plot[VT_RD_NCOLS] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};

static const char *const seg_cols[VT_RS_NCOLS] = {
    "epoch", "train/loss", "val/loss", "metrics/mIoU", "metrics/pixel_acc", "lr", "time/epoch",
    "time/data_wait", "time/elapsed"};
static const unsigned char seg_plot[VT_RS_NCOLS] = {0, 1, 1, 1, 1, 1, 1, 0, 0};

void vt_results_init(vt_results *r, vt_task task)
{
    memset(r, 0, sizeof *r);
    if (task == VT_TASK_SEGMENT) {
        r->ncol = VT_RS_NCOLS;
        r->cols = seg_cols;
        r->plot = seg_plot;
        return;
    }
    if (task == VT_TASK_DETECT) {
        r->ncol = VT_RD_NCOLS;
        r->cols = det_cols;
        r->plot = det_plot;
        return;
    }
    r->ncol = VT_RC_NCLS;
    r->cols = cls_cols;
    r->plot = cls_plot;
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
