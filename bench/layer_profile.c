/* Where a training step's time goes, layer by layer, next to what the estimator's cost model
 * predicts for the same layers (after calibrating it on this machine as `vt estimate
 * calibrate=1` does).  For tuning the cost model (lib/estimate/estimate.c).
 *
 *   layer_profile [arch=cls-s] [imgsz=48] [batch=8] [steps=10] [calib=cls-n,32,16] [detail=0]
 *                 [device=cpu|0|1...] [precision=tf32|fp32|bf16 (bf16: CPU)] [channels=3]
 *                 [classes=10] [forward=0]
 *
 * Prints, per layer kind (conv by GEMM size, BN, activation, ...): measured milliseconds per
 * step (median over steps of forward + backward), predicted milliseconds, and the ratio; with
 * detail=1 every layer.  Then the whole step as predicted (with its loss term) against the
 * median of real training steps (vt_trainer_probe_step: the task's own loss on made-up boxes
 * or masks, and the optimiser).  forward=1 profiles inference instead: the forward alone, in
 * eval mode, planned as the predictor plans it (no gradients), against the estimator's forward
 * terms, and no whole step.  On a GPU (device=N) the backend is synchronised around every
 * layer, so each is charged its own kernels (plus one synchronisation).  Uses the library's
 * internals (built against its objects). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "estimate/estimate.h"
#include "estimate/estimator_impl.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "backend/cuda_device.h"
#include "train/trainer_probe.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *kind(const vt_graph *g, int i, char *buf, size_t cap)
{
    static const char *const names[] = {"input", "conv", "bn", "act", "maxpool", "avgpool",
                                        "gap", "linear", "dropout", "add", "concat", "upsample",
                                        "flatcat"};
    const vt_node *nd = &g->nodes[i];
    if (nd->op == VT_OP_CONV)
        snprintf(buf, cap, "conv%dx%d/%d c%d", nd->k, nd->k, nd->s, nd->cout);
    else
        snprintf(buf, cap, "%s", names[nd->op]);
    return buf;
}

int main(int argc, char **argv)
{
    const char *arch = "cls-s", *calib = "cls-n,32,16", *device = "cpu", *precision = "tf32";
    int imgsz = 48, batch = 8, steps = 10, detail = 0, channels = 3, classes = 10, fwd = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "arch=", 5)) arch = a + 5;
        else if (!strncmp(a, "imgsz=", 6)) imgsz = atoi(a + 6);
        else if (!strncmp(a, "batch=", 6)) batch = atoi(a + 6);
        else if (!strncmp(a, "steps=", 6)) steps = atoi(a + 6);
        else if (!strncmp(a, "calib=", 6)) calib = a + 6;
        else if (!strncmp(a, "detail=", 7)) detail = atoi(a + 7);
        else if (!strncmp(a, "device=", 7)) device = a + 7;
        else if (!strncmp(a, "precision=", 10)) precision = a + 10;
        else if (!strncmp(a, "channels=", 9)) channels = atoi(a + 9);
        else if (!strncmp(a, "classes=", 8)) classes = atoi(a + 8);
        else if (!strncmp(a, "forward=", 8)) fwd = atoi(a + 8);
        else {
            fprintf(stderr, "unknown argument %s\n", a);
            return 2;
        }
    }
    /* Calibrate the estimator on this machine. */
    char carch[32];
    int cimg = 32, cbatch = 16;
    if (sscanf(calib, "%31[^,],%d,%d", carch, &cimg, &cbatch) != 3) return 2;
    vt_estimator *est;
    char kv[64];
    if (vt_estimator_create(&est)) return 1;
    snprintf(kv, sizeof kv, "model=%s", carch);
    vt_estimator_set(est, kv);
    snprintf(kv, sizeof kv, "imgsz=%d", cimg);
    vt_estimator_set(est, kv);
    snprintf(kv, sizeof kv, "batch=%d", cbatch);
    vt_estimator_set(est, kv);
    int gpu = strcmp(device, "cpu") != 0;
    snprintf(kv, sizeof kv, "precision=%s", gpu ? precision : "fp32");
    if (vt_estimator_set(est, kv)) return 2;
    if (vt_estimator_calibrate(est, device, gpu ? "seconds=3 gpu=H200-SXM" : "seconds=5")) {
        fprintf(stderr, "calibrate: %s\n", vt_last_error());
        return 1;
    }
    const vt_devmodel *dm = &est->cal.dm;
    printf("calibrated on %s %d px batch %d: R %.1f GFLOP/s, BW %.1f GB/s, s0 %.1f, L %.1f us\n",
           carch, cimg, cbatch, dm->rate / 1e9, dm->bw / 1e9, dm->s0, dm->layer_s * 1e6);

    vt_model *m;
    char mopt[64];
    snprintf(mopt, sizeof mopt, "imgsz=%d channels=%d", imgsz, channels);
    if (vt_model_create(&m, arch, classes, mopt)) {
        fprintf(stderr, "%s\n", vt_last_error());
        return 1;
    }
    vt_backend *be;
    vt_exec *e;
    vt_status st;
    if (gpu) {
        st = vt_backend_cuda_create(&be, atoi(device));
        if (st == VT_OK) vt_backend_cuda_set_fp32(be, strcmp(precision, "fp32") == 0);
    } else {
        st = vt_backend_cpu_create(&be, 0);
        if (st == VT_OK && !strcmp(precision, "bf16")) vt_backend_cpu_set_bf16(be, 1);
    }
    if (!st && !(st = vt_exec_create(&e, &m->graph, be)) && fwd)
        vt_exec_forward_only(e); /* planned as the predictor plans it */
    if (st || vt_exec_prepare(e, batch, imgsz, imgsz) ||
        vt_exec_set_params(e, m->params, m->buffers)) {
        fprintf(stderr, "%s\n", vt_last_error());
        return 1;
    }
    const vt_graph *g = e->g;
    int n = g->n_nodes;
    double *prof = calloc((size_t)n, sizeof *prof), *samples = calloc((size_t)n * steps, sizeof *samples);
    size_t nin = (size_t)batch * m->channels * imgsz * imgsz;
    float *img = malloc(nin * sizeof *img);
    int32_t *lab = malloc((size_t)batch * sizeof *lab);
    for (size_t i = 0; i < nin; i++) img[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (int i = 0; i < batch; i++) lab[i] = i % classes;
    if (be->ops->upload(be, vt_exec_input(e), img, nin * sizeof *img) ||
        be->ops->upload(be, e->labels, lab, (size_t)batch * sizeof *lab))
        return 1;
    for (int s = -2; s < steps; s++) {
        memset(prof, 0, (size_t)n * sizeof *prof);
        e->prof = s >= 0 ? prof : NULL;
        vt_node *out = &e->g->nodes[m->output_node];
        if (fwd) {
            if (vt_exec_forward(e, 0)) return 1;
        } else if (vt_exec_forward(e, 1) ||
                   be->ops->softmax_xent(be, classes, batch, out->y, e->labels, 0, 1.0f / batch, e->loss,
                                         out->dy, NULL) ||
                   vt_exec_backward(e, m->output_node))
            return 1;
        for (int i = 0; s >= 0 && i < n; i++) samples[(size_t)i * steps + s] = prof[i];
    }
    vt_layer_cost *lc = calloc((size_t)n, sizeof *lc);
    vt_graph_costs(g, imgsz, imgsz, lc, n);
    /* aggregate by kind */
    char names[256][40];
    double meas[256] = {0}, pred[256] = {0}, flops[256] = {0};
    int nk = 0;
    double tm = 0, tp = 0;
    for (int i = 0; i < n; i++) {
        qsort(samples + (size_t)i * steps, (size_t)steps, sizeof(double), cmp_d);
        double mi = samples[(size_t)i * steps + steps / 2];
        double pi = vt_est_layer_seconds(g, i, &lc[i], batch, dm, !fwd);
        char kb[40];
        kind(g, i, kb, sizeof kb);
        if (detail) {
            printf("%3d %-20s %9.3f ms  pred %9.3f ms  x%.2f", i, kb, mi * 1e3, pi * 1e3,
                   mi > 0 ? pi / mi : 0);
            if (vt_est_is_gemm_op(lc[i].op)) { /* GEMM shape at this batch, GFLOP/s */
                double gm, gk, gn;
                int groups;
                vt_est_gemm_dims(g, i, &lc[i], &gm, &gk, &gn, &groups);
                printf("  m %g k %g n %g  %.1f GFLOP/s", gm, gk, gn * batch,
                       mi > 0 ? (lc[i].flops_fwd + (fwd ? 0 : lc[i].flops_bwd)) * batch / mi *
                                    1e-9
                              : 0);
            }
            printf("\n");
        }
        int k = 0;
        while (k < nk && strcmp(names[k], kb)) k++;
        if (k == nk && nk < 256) snprintf(names[nk++], 40, "%s", kb);
        meas[k] += mi;
        pred[k] += pi;
        flops[k] += (lc[i].flops_fwd + (fwd ? 0 : lc[i].flops_bwd)) * batch;
        tm += mi;
        tp += pi;
    }
    printf("%s %d px batch %d%s: layer kind, measured ms/step, predicted ms/step, "
           "predicted/measured, measured GFLOP/s\n", arch, imgsz, batch,
           fwd ? " (forward only, eval)" : "");
    for (int k = 0; k < nk; k++)
        printf("  %-20s %9.3f %9.3f  x%.2f  %7.1f\n", names[k], meas[k] * 1e3, pred[k] * 1e3,
               meas[k] > 0 ? pred[k] / meas[k] : 0, meas[k] > 0 ? flops[k] / meas[k] / 1e9 : 0);
    printf("  %-20s %9.3f %9.3f  x%.2f\n", "total (layers)", tm * 1e3, tp * 1e3, tp / tm);
    if (fwd) return 0;
    double pstep = vt_est_graph_seconds(g, imgsz, imgsz, batch, dm, 1, 1);
    printf("  step as the estimator predicts it (layers + loss + optimiser + fixed terms): %.3f ms"
           " (its loss term %.3f ms)\n", pstep * 1e3,
           vt_est_loss_seconds((double)batch * lc[n - 1].out_elems, dm, 1) * 1e3);
    /* the whole step as training runs it: the task's own loss (on made-up targets) and the
     * optimiser, through a trainer (CPU at fp32, or the GPU at the profile's precision) */
    vt_trainer *t = NULL;
    float *nchw = malloc(nin * sizeof *nchw);
    for (size_t i = 0; nchw && i < nin; i++) nchw[i] = img[i];
    snprintf(kv, sizeof kv, "batch=%d", batch);
    st = nchw ? vt_trainer_create(&t, m, NULL) : VT_ERR_OUT_OF_MEMORY;
    if (!st) st = vt_trainer_set(t, kv);
    if (!st) snprintf(kv, sizeof kv, "imgsz=%d", imgsz), st = vt_trainer_set(t, kv);
    if (!st) snprintf(kv, sizeof kv, "device=%s", device), st = vt_trainer_set(t, kv);
    const char *tprec = gpu || !strcmp(precision, "bf16") ? precision : "fp32";
    if (!st) snprintf(kv, sizeof kv, "precision=%s", tprec), st = vt_trainer_set(t, kv);
    double *ts = calloc((size_t)steps + 2, sizeof *ts);
    for (int s = -2; s < steps && !st && ts; s++) {
        double t0 = now();
        st = vt_trainer_probe_step(t, nchw, batch, NULL);
        if (!st) st = vt_trainer_synchronize(t);
        if (s >= 0) ts[s] = now() - t0;
    }
    if (st || !ts) {
        fprintf(stderr, "whole step: %s\n", vt_last_error());
        return 1;
    }
    qsort(ts, (size_t)steps, sizeof *ts, cmp_d);
    printf("  whole training step (vt_trainer_probe_step: the task's loss on made-up targets, the "
           "optimiser), median: %.3f ms measured, x%.2f\n", ts[steps / 2] * 1e3,
           pstep / ts[steps / 2]);
    vt_trainer_destroy(t);
    return 0;
}
