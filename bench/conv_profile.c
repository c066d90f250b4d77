/* CPU convolution profile: forward and backward of one convolution shape through the CPU
 * backend (lib/backend/cpu_conv.c), timed separately, next to the same GEMMs (the same m, n, k
 * per thread share) called straight on BLIS/the fallback with hot operands.  The gap between
 * the two is what im2col/col2im, cache misses and thread imbalance cost.  For tuning the
 * convolution path; figures in bench/README.md.
 *
 *   conv_profile [n=64] [cin=32] [h=14] [w=14] [cout=64] [k=3] [s=1] [p=1] [threads=2]
 *                [keep=1] [reps=20] [cap=FLOATS of an im2col tile; 0: the backend's default]
 *                [bf16=0 (1: precision=bf16's products, the bare GEMMs too)]
 *                [tile=-1 (the backend's rule; 0: im2col; 2 or 4: Winograd in that tile
 *                 where it can take the shape at all, vt_backend_cpu_force_winograd; with
 *                 bf16=1, 2x2 tiles take bf16 products and 4x4 ones fp32)]
 *                [bare=1 (0: leave out the bare GEMMs)]
 *
 * The first line says which way the convolution ran (im2col, or Winograd's tile) and the
 * rule's tile for the shape under that precision (vt_cpu_wino_tile of a default backend, 0:
 * im2col); bench/winograd_rule.sh compares
 * the three on a list of shapes.
 * The defaults are the small CNN's second convolution at batch 64 (GUIDE.md section 4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu_impl.h"
#include "bench_args.h"
#include "backend/gemm.h"

static float *randf(vt_backend *b, size_t n)
{
    float *p = b->ops->alloc(b, n * sizeof(float));
    if (!p) return NULL;
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (float)((s >> 9) & 0xFFFF) / 65536.0f - 0.5f;
    }
    return p;
}

int main(int argc, char **argv)
{
    vt_conv_desc d = {0};
    d.n = bench_arg(argc, argv, "n", 64);
    d.cin = bench_arg(argc, argv, "cin", 32);
    d.h = bench_arg(argc, argv, "h", 14);
    d.w = bench_arg(argc, argv, "w", 14);
    d.cout = bench_arg(argc, argv, "cout", 64);
    d.kh = d.kw = bench_arg(argc, argv, "k", 3);
    d.sh = d.sw = bench_arg(argc, argv, "s", 1);
    d.ph = d.pw = bench_arg(argc, argv, "p", 1);
    d.groups = 1;
    d.ho = (d.h + 2 * d.ph - d.kh) / d.sh + 1;
    d.wo = (d.w + 2 * d.pw - d.kw) / d.sw + 1;
    int threads = bench_arg(argc, argv, "threads", 2), reps = bench_arg(argc, argv, "reps", 20);
    vt_backend *b = NULL;
    if (vt_backend_cpu_create(&b, threads) != VT_OK) return 1;
    int bf16 = bench_arg(argc, argv, "bf16", 0);
    if (bf16) vt_backend_cpu_set_bf16(b, 1);
    void (*gemm)(vt_pool *, int, int, int, int, int, float, const float *, int, const float *,
                 int, float, float *, int) = bf16 ? vt_gemm_bf16 : vt_sgemm;
    if (bench_arg(argc, argv, "cap", 0) > 0) vt_backend_cpu_set_conv_cap(b, (size_t)bench_arg(argc, argv, "cap", 0));
    int tile = bench_arg(argc, argv, "tile", -1), rule = vt_cpu_wino_tile(b, &d);
    if (bf16 && tile > 0) vt_backend_cpu_set_winograd_bf16(b, 1);
    if (tile == 0) vt_backend_cpu_set_winograd(b, 0);
    if (tile == 2 || tile == 4) {
        vt_backend_cpu_set_winograd(b, 4);
        vt_backend_cpu_force_winograd(b, tile);
    }
    size_t ws_bytes = b->ops->conv_workspace(b, &d), keep_bytes = 0;
    if (bench_arg(argc, argv, "keep", 1) && b->ops->conv_columns) keep_bytes = b->ops->conv_columns(b, &d);
    d.keep_columns = keep_bytes > 0;
    size_t nx = (size_t)d.cin * d.n * d.h * d.w, ny = (size_t)d.cout * d.n * d.ho * d.wo,
           nw = (size_t)d.cout * d.cin * d.kh * d.kw;
    float *x = randf(b, nx), *w = randf(b, nw), *y = randf(b, ny), *dy = randf(b, ny),
          *dx = randf(b, nx), *dw = randf(b, nw);
    void *ws = b->ops->alloc(b, (keep_bytes ? keep_bytes : ws_bytes) + 64);
    if (!x || !w || !y || !dy || !dx || !dw || !ws) return 1;
    double tf = 1e9, tb = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        b->ops->conv_forward(b, &d, x, w, NULL, y, ws);
        double t1 = bench_now();
        b->ops->conv_backward(b, &d, x, w, dy, dx, dw, NULL, ws);
        double t2 = bench_now();
        if (t1 - t0 < tf) tf = t1 - t0;
        if (t2 - t1 < tb) tb = t2 - t1;
    }
    /* the same GEMMs on hot operands, one thread, the whole batch's columns as one matrix
     * split into `threads` equal column blocks (what each thread's share multiplies) */
    int K = d.cin * d.kh * d.kw, N = d.n * d.ho * d.wo, Nt = (N + threads - 1) / threads;
    int bare = bench_arg(argc, argv, "bare", 1);
    float *col = randf(b, (size_t)K * Nt), *ys = randf(b, (size_t)d.cout * Nt);
    double g[3] = {1e9, 1e9, 1e9};
    for (int r = 0; r < (bare ? reps : 0); r++) {
        double t0 = bench_now();
        gemm(NULL, 0, 0, d.cout, Nt, K, 1.0f, w, K, col, Nt, 0.0f, ys, Nt);
        double t1 = bench_now();
        gemm(NULL, 0, 1, d.cout, K, Nt, 1.0f, ys, Nt, col, Nt, 0.0f, dw, K);
        double t2 = bench_now();
        gemm(NULL, 1, 0, K, Nt, d.cout, 1.0f, w, K, ys, Nt, 0.0f, col, Nt);
        double t3 = bench_now();
        if (t1 - t0 < g[0]) g[0] = t1 - t0;
        if (t2 - t1 < g[1]) g[1] = t2 - t1;
        if (t3 - t2 < g[2]) g[2] = t3 - t2;
    }
    double fl = 2.0 * d.cout * K * (double)N;
    int ran = vt_cpu_wino_applies(b, &d) ? vt_cpu_wino_tile(b, &d) : 0;
    char how[32] = "im2col";
    if (ran) snprintf(how, sizeof how, "winograd %dx%d", ran, ran);
    printf("conv n%d %dx%dx%d -> %d k%d s%d p%d, %d threads, keep %d, %s, ran %s (rule's tile "
           "%d)\n", d.n, d.cin, d.h, d.w, d.cout, d.kh, d.sh, d.ph, threads, d.keep_columns,
           bf16 ? "bf16" : "fp32", how, rule);
    if (!bare) {
        printf("  forward   %8.3f ms  %6.1f GFLOP/s\n", tf * 1e3, fl / tf * 1e-9);
        printf("  backward  %8.3f ms  %6.1f GFLOP/s\n", tb * 1e3, 2 * fl / tb * 1e-9);
    } else {
        printf("  forward   %8.3f ms  %6.1f GFLOP/s   bare GEMM share %8.3f ms\n", tf * 1e3,
               fl / tf * 1e-9, g[0] * 1e3);
        printf("  backward  %8.3f ms  %6.1f GFLOP/s   bare GEMMs share %8.3f ms (dW %.3f, "
               "dcol %.3f)\n", tb * 1e3, 2 * fl / tb * 1e-9, (g[1] + g[2]) * 1e3, g[1] * 1e3,
               g[2] * 1e3);
    }
    b->ops->free(b, x), b->ops->free(b, w), b->ops->free(b, y), b->ops->free(b, dy);
    b->ops->free(b, dx), b->ops->free(b, dw), b->ops->free(b, ws), b->ops->free(b, col);
    b->ops->free(b, ys);
    vt_backend_destroy(b);
    return 0;
}
