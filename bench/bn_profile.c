/* Batch norm + activation (+ 2x2 max pool) through the CPU backend, forward and backward timed
 * apart, on the shapes of the small CNN at batch 256 (BN + ReLU + pool) and of det-n at 128 px
 * batch 16 (BN + SiLU), with the element-wise kernels the CPU runs (AVX2 where it has it) and
 * the baseline ones taking turns in the same run.  Figures in bench/README.md.
 *
 *   bn_profile [reps=40] [rounds=3] [threads=2]
 *
 * Prints the fastest of `reps` calls of each (the machine's other load only slows calls
 * down), per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu_impl.h"
#include "bench_args.h"

typedef struct {
    int c, n, h, w, pool;
    vt_act act;
    const char *what;
} shape;

static const shape SHAPES[] = {
    {32, 256, 28, 28, 1, VT_ACT_RELU, "cnn-small b256 layer 1: BN + ReLU + pool"},
    {64, 256, 14, 14, 1, VT_ACT_RELU, "cnn-small b256 layer 2: BN + ReLU + pool"},
    {16, 16, 64, 64, 0, VT_ACT_SILU, "det-n 128 px b16 stem: BN + SiLU"},
    {96, 16, 16, 16, 0, VT_ACT_SILU, "det-n 128 px b16 head: BN + SiLU"},
};

/* Fastest forward and backward of reps calls, ms */
static int run(vt_backend *be, const shape *s, int reps, float *x, float *y, float *dy,
               float *dx, int32_t *idx, double *fwd, double *bwd)
{
    const vt_backend_ops *o = be->ops;
    size_t m = (size_t)s->n * s->h * s->w;
    float g[128], b[128], rm[128], rv[128], sm[128], si[128], dg[128], db[128];
    for (int c = 0; c < s->c; c++) g[c] = 1.0f + 0.01f * (float)c, b[c] = 0.1f, rm[c] = 0,
                                    rv[c] = 1;
    vt_pool_desc d = {s->c * s->n, s->h, s->w, s->h / 2, s->w / 2, 2, 2, 0};
    *fwd = *bwd = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        vt_status st = s->pool ? o->bn_act_pool_forward_train(be, s->act, s->c, m, x, g, b, 1e-5f,
                                                              0.1f, rm, rv, sm, si, &d, y, idx)
                               : o->bn_act_forward_train(be, s->act, s->c, m, x, g, b, 1e-5f,
                                                         0.1f, rm, rv, sm, si, y);
        double t1 = bench_now();
        if (!st)
            st = s->pool ? o->bn_act_pool_backward(be, s->act, s->c, m, x, g, b, sm, si, &d, idx,
                                                   dy, dx, 0, dg, db)
                         : o->bn_act_backward(be, s->act, s->c, m, x, y, g, b, sm, si, dy, dx,
                                              0, dg, db);
        double t2 = bench_now();
        if (st) return 1;
        if (t1 - t0 < *fwd) *fwd = t1 - t0;
        if (t2 - t1 < *bwd) *bwd = t2 - t1;
    }
    *fwd *= 1e3, *bwd *= 1e3;
    return 0;
}

int main(int argc, char **argv)
{
    int reps = bench_arg(argc, argv, "reps", 40), rounds = bench_arg(argc, argv, "rounds", 3);
    vt_backend *be;
    if (vt_backend_cpu_create(&be, bench_arg(argc, argv, "threads", 2))) return 1;
    cpu_backend *cb = (cpu_backend *)be;
    const vt_cpu_vec_kernels *kinds[2] = {cb->k, vt_cpu_vec_kernels_baseline()};
    const char *names[2] = {cb->k == kinds[1] ? "baseline (widest here)" : "widest", "baseline"};
    printf("%s, fastest of %d calls, ms (forward / backward)\n", vt_cpu_kernels(), reps);
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *s = &SHAPES[i];
        size_t n = (size_t)s->c * s->n * s->h * s->w;
        float *x = malloc(n * 4), *y = malloc(n * 4), *dy = malloc(n * 4), *dx = malloc(n * 4);
        int32_t *idx = malloc(n * 4);
        if (!x || !y || !dy || !dx || !idx) return 1;
        for (size_t j = 0; j < n; j++) {
            x[j] = (float)((j * 2654435761u) % 1000) / 500.0f - 1.0f;
            dy[j] = (float)((j * 40503u) % 777) / 777.0f - 0.5f;
        }
        printf("%s (%d channels, %d x %dx%d)\n", s->what, s->c, s->n, s->h, s->w);
        for (int r = 0; r < rounds; r++)
            for (int k = 0; k < 2; k++) {
                double f, b;
                cb->k = kinds[k];
                if (run(be, s, reps, x, y, dy, dx, idx, &f, &b)) return 1;
                printf("  round %d %-24s %7.3f / %7.3f\n", r + 1, names[k], f, b);
            }
        cb->k = kinds[0];
        free(x), free(y), free(dy), free(dx), free(idx);
    }
    vt_backend_destroy(be);
    return 0;
}
