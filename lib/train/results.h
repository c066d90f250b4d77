/* The per-epoch results table of a run: what results.csv holds, what results.png draws and
 * what a checkpoint carries (section HIST) so both continue after a resume.  The columns
 * depend on the task: its metric columns (vt_task_iface) between the common ones. */
#ifndef VT_RESULTS_H
#define VT_RESULTS_H

#include "core/core.h"
#include "task/task.h"

/* Every task's table: these three columns, the task's metric columns (vt_task_iface), then
 * the four below. */
enum { VT_RESULTS_HEAD = 3, VT_RESULTS_TAIL = 4, VT_RESULTS_GPU = 5, VT_RESULTS_MAXCOL = 32 };

typedef struct vt_results {
    int ncol;
    const char *cols[VT_RESULTS_MAXCOL]; /* static column names; column 0 is "epoch" */
    unsigned char plot[VT_RESULTS_MAXCOL]; /* per column: 1 = one panel of results.png */
    int gpu_col;                 /* first of the VT_RESULTS_GPU columns, 0 = none (CPU) */
    double *v;                   /* n rows x ncol, NaN = no value (e.g. no validation) */
    int n, cap;
} vt_results;

/* An empty table with the task's columns. */
void vt_results_init(vt_results *r, const vt_task_iface *task);
/* One epoch's row: epoch (1-based), the mean training loss, the validation's values from
 * prog (NaN when validated is 0: no validation), the learning rate and the times. */
void vt_results_row(const vt_task_iface *task, int epoch, double train_loss, int validated,
                    const vt_progress *prog, double epoch_time, double data_wait, double elapsed,
                    double row[VT_RESULTS_MAXCOL]);
/* A run on a GPU: the GPU's figures as columns after the others (gpu/util_pct,
 * gpu/mem_used_gb, gpu/mem_total_gb, gpu/power_w, gpu/temp_c), not plotted; rows already
 * there get NaN.  Nothing when r has them. */
vt_status vt_results_add_gpu(vt_results *r);
/* The GPU columns of a row from prog's VT_METRIC_GPU_* (NaN when absent); nothing when r has
 * no GPU columns. */
void vt_results_row_gpu(const vt_results *r, const vt_progress *prog,
                        double row[VT_RESULTS_MAXCOL]);
void vt_results_free(vt_results *r);
/* Append a row of r->ncol values. */
vt_status vt_results_append(vt_results *r, const double *row);
/* Drop rows whose epoch is > epoch (used when a resumed run replays epochs). */
void vt_results_truncate(vt_results *r, int epoch);
/* CSV text (header + rows).  exact != 0 prints every value with 17 significant digits (the
 * checkpoint's copy, read back bit for bit); otherwise 6.  Empty fields are NaN. */
vt_status vt_results_to_csv(const vt_results *r, int exact, char **text, size_t *len);
/* Parse CSV text written by vt_results_to_csv into r (initialised for the task), checking the
 * header against r's columns; errors name `what`. */
vt_status vt_results_from_csv(vt_results *r, const char *text, size_t len, const char *what);
/* results.png: one panel per plotted column (values and a smoothed curve). */
vt_status vt_results_plot(const char *path, const vt_results *r);

#endif
