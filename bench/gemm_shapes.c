/* BLIS's two GEMM paths on the shapes the CPU convolutions call (one tile each, the library's
 * leading dimensions), single-threaded: "sup" (BLIS's small/unpacked kernels, which BLIS picks
 * by itself whenever a dimension is under a few hundred) and "packed" (its classic packed
 * path), each under the sub-configuration BLIS picks by itself and under 'skx' where the CPU
 * has AVX-512, and what vt_sgemm chooses (lib/backend/gemm.c).  Built only with BLIS.
 *
 *   gemm_shapes [seconds-per-measurement=0.06]
 *   gemm_shapes ceiling [threads=2] [size=2048]   large square SGEMM through vt_sgemm
 *   gemm_shapes pack                               vt_sgemm_pack_a on convolution weights,
 *                                                  untransposed (forward) and transposed (dX)
 *
 * Shapes: the small CNN of GUIDE.md section 4 at batch 256 (tiles of 784, 441 and 784 columns,
 * as lib/backend/cpu_conv.c cuts them with its 1 MiB tiles) and a 128->128 3x3 convolution of
 * 16x16 px at batch 16 (a tile is one image). */
#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gemm.h"
#include "core/threads.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct shape {
    const char *name;
    int ta, tb, m, n, k, lda, ldb, ldc;
    float beta;
} shape;

/* mode 0: sup, 1: packed (under ctx), 2: vt_sgemm over pool.  Best of 5 windows, GFLOP/s. */
static double gflops(const shape *s, int mode, cntx_t *ctx, vt_pool *pool, double window)
{
    size_t na = (size_t)(s->ta ? s->k : s->m) * s->lda, nb = (size_t)(s->tb ? s->n : s->k) * s->ldb,
           nc = (size_t)s->m * s->ldc;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
    if (!a || !b || !c) return 0;
    for (size_t i = 0; i < na; i++) a[i] = 1e-3f * (float)(i % 7);
    for (size_t i = 0; i < nb; i++) b[i] = 1e-3f * (float)(i % 5);
    for (size_t i = 0; i < nc; i++) c[i] = 0;
    rntm_t r;
    bli_rntm_init(&r);
    if (mode == 0) bli_rntm_enable_l3_sup(&r);
    else bli_rntm_disable_l3_sup(&r);
    float alpha = 1, beta = s->beta;
    double best = 1e30;
    for (int w = 0; w < 5; w++) {
        double t0 = now(), t;
        int it = 0;
        do {
            if (mode == 2)
                vt_sgemm(pool, s->ta, s->tb, s->m, s->n, s->k, alpha, a, s->lda, b, s->ldb, beta, c,
                         s->ldc);
            else
                bli_sgemm_ex(s->ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                             s->tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s->m, s->n, s->k, &alpha,
                             a, s->lda, 1, b, s->ldb, 1, &beta, c, s->ldc, 1, ctx, &r);
            it++;
        } while ((t = now() - t0) < window);
        if (t / it < best) best = t / it;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * s->m * s->n * s->k / best * 1e-9;
}

/* vt_sgemm_pack_a of an m x k operand (transa: stored k x m), best of 7 rounds of 50, us. */
static double pack_us(int m, int k, int transa)
{
    size_t n = (size_t)m * k, np = vt_sgemm_pack_a_floats(m, k);
    float *a = malloc(n * 4), *d = malloc((np ? np : 1) * 4);
    if (!a || !d) return 0;
    for (size_t i = 0; i < n; i++) a[i] = (float)(i % 11);
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < 50; i++) vt_sgemm_pack_a(transa, m, k, a, transa ? m : k, d);
        double t = (now() - t0) / 50;
        if (t < best) best = t;
    }
    free(a);
    free(d);
    return best * 1e6;
}

int main(int argc, char **argv)
{
    bli_init();
    if (argc > 1 && !strcmp(argv[1], "pack")) {
        static const int w[][2] = {{96, 864}, {128, 1152}, {256, 2304}, {32, 144}};
        printf("vt_sgemm_pack_a, %s: cout x K weights, us (best of 7 x 50)\n", vt_sgemm_kernels());
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            printf("  %4d x %4d  untransposed %8.1f  transposed %8.1f\n", w[i][0], w[i][1],
                   pack_us(w[i][0], w[i][1], 0), pack_us(w[i][1], w[i][0], 1));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "ceiling")) {
        int threads = argc > 2 ? atoi(argv[2]) : 2, n = argc > 3 ? atoi(argv[3]) : 2048;
        vt_pool *pool = NULL;
        if (threads < 1 || n < 64 || vt_pool_create(&pool, threads)) return 2;
        shape sq = {"square", 0, 0, n, n, n, n, n, n, 0};
        printf("SGEMM %dx%dx%d, %d threads, %s: %.1f GFLOP/s\n", n, n, n, threads,
               vt_sgemm_kernels(), gflops(&sq, 2, NULL, pool, 0.5));
        vt_pool_destroy(pool);
        return 0;
    }
    double window = argc > 1 ? atof(argv[1]) : 0.06;
    /* forward Y = W x col; dW += dY x col^T; dcol = W^T x dY (lib/backend/cpu_conv.c) */
    static const shape shapes[] = {
        {"cnn-small conv2 fwd", 0, 0, 64, 784, 288, 288, 784, 50176, 0},
        {"cnn-small conv2 dW", 0, 1, 64, 288, 784, 50176, 784, 288, 1},
        {"cnn-small conv2 dcol", 1, 0, 288, 784, 64, 288, 50176, 784, 0},
        {"cnn-small conv3 fwd", 0, 0, 128, 441, 576, 576, 441, 12544, 0},
        {"cnn-small conv3 dW", 0, 1, 128, 576, 441, 12544, 441, 576, 1},
        {"cnn-small conv3 dcol", 1, 0, 576, 441, 128, 576, 12544, 441, 0},
        {"cnn-small conv1 fwd", 0, 0, 32, 784, 9, 9, 784, 200704, 0},
        {"cnn-small conv1 dW", 0, 1, 32, 9, 784, 200704, 784, 9, 1},
        {"128->128 16px fwd", 0, 0, 128, 256, 1152, 1152, 256, 4096, 0},
        {"128->128 16px dcol", 1, 0, 1152, 256, 128, 1152, 4096, 256, 0},
    };
    arch_t own = bli_arch_query_id();
    /* skx only where the CPU runs it: vt_sgemm chose it (or was told to) */
    cntx_t *skx = strstr(vt_sgemm_kernels(), " skx") ? bli_gks_lookup_nat_cntx(BLIS_ARCH_SKX) : NULL;
    printf("BLIS picks '%s' by itself; vt_sgemm: %s\n", bli_arch_string(own), vt_sgemm_kernels());
    printf("%-22s %5s %5s %5s %3s %3s | %8s %8s %8s %8s  GFLOP/s, 1 thread\n", "shape", "m", "n",
           "k", "ta", "tb", "sup", "packed", skx ? "skx pack" : "-", "vt_sgemm");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        double g0 = gflops(s, 0, NULL, NULL, window), g1 = gflops(s, 1, NULL, NULL, window),
               g3 = skx ? gflops(s, 1, skx, NULL, window) : 0,
               g2 = gflops(s, 2, NULL, NULL, window);
        printf("%-22s %5d %5d %5d %3d %3d | %8.1f %8.1f %8.1f %8.1f\n", s->name, s->m, s->n, s->k,
               s->ta, s->tb, g0, g1, g3, g2);
    }
    return 0;
}
