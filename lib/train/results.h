/* The per-epoch results table of a run: what results.csv holds, what results.png draws and
 * what a checkpoint carries (section HIST) so both continue after a resume.  The columns
 * depend on the task; classification's are listed in results.c.  A task plugs in by adding
 * its column list there and filling rows in the trainer. */
#ifndef VT_RESULTS_H
#define VT_RESULTS_H

#include "core/core.h"

typedef struct vt_results {
    int ncol;
    const char *const *cols;     /* static column names; column 0 is "epoch" */
    const unsigned char *plot;   /* per column: 1 = one panel of results.png */
    double *v;                   /* n rows x ncol, NaN = no value (e.g. no validation) */
    int n, cap;
} vt_results;

/* Column indices of the classification table. */
enum {
    VT_RC_EPOCH = 0,
    VT_RC_TRAIN_LOSS,
    VT_RC_VAL_LOSS,
    VT_RC_TOP1,
    VT_RC_TOP5,
    VT_RC_LR,
    VT_RC_EPOCH_TIME,  /* seconds of the epoch: training + validation */
    VT_RC_DATA_WAIT,   /* seconds of the epoch spent waiting for the loader */
    VT_RC_ELAPSED,     /* seconds since the start of the run (all sessions) */
    VT_RC_NCLS
};

/* Column indices of the detection table. */
enum {
    VT_RD_EPOCH = 0,
    VT_RD_TRAIN_LOSS,  /* box + class terms */
    VT_RD_VAL_LOSS,
    VT_RD_PRECISION,
    VT_RD_RECALL,
    VT_RD_MAP50,
    VT_RD_MAP50_95,
    VT_RD_LR,
    VT_RD_EPOCH_TIME,
    VT_RD_DATA_WAIT,
    VT_RD_ELAPSED,
    VT_RD_NCOLS
};

/* Column indices of the segmentation table. */
enum {
    VT_RS_EPOCH = 0,
    VT_RS_TRAIN_LOSS,
    VT_RS_VAL_LOSS,
    VT_RS_MIOU,
    VT_RS_PIXEL_ACC,
    VT_RS_LR,
    VT_RS_EPOCH_TIME,
    VT_RS_DATA_WAIT,
    VT_RS_ELAPSED,
    VT_RS_NCOLS
};

/* An empty table with the task's columns. */
void vt_results_init(vt_results *r, vt_task task);
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
