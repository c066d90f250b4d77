/* vt_gemm_bf16 (bf16 operands, fp32 accumulation: lib/backend/gemm_bf16.c) against fp32
 * vt_sgemm, GFLOP/s (best of 5 windows), 1 and 2 threads, on the GEMM shapes the CPU
 * convolutions call for the small CNN at batch 256 (tiles as lib/backend/cpu_conv.c cuts them,
 * the library's leading dimensions: the shapes of bench/gemm_shapes.c) and a square product.
 *
 *   gemm_bf16 [seconds-per-measurement=0.1] [square=2048]
 *
 * VT_CPU_BF16=portable times the portable reference instead of the AVX512_BF16 kernel. */
#include <stdio.h>
#include <stdlib.h>
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

static double gflops(const shape *s, int bf16, vt_pool *pool, double window)
{
    size_t na = (size_t)(s->ta ? s->k : s->m) * s->lda, nb = (size_t)(s->tb ? s->n : s->k) * s->ldb,
           nc = (size_t)s->m * s->ldc;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
    if (!a || !b || !c) return 0;
    for (size_t i = 0; i < na; i++) a[i] = 1e-3f * (float)(i % 7);
    for (size_t i = 0; i < nb; i++) b[i] = 1e-3f * (float)(i % 5);
    for (size_t i = 0; i < nc; i++) c[i] = 0;
    double best = 1e30;
    for (int w = 0; w < 5; w++) {
        double t0 = now(), t;
        int it = 0;
        do {
            if (bf16)
                vt_gemm_bf16(pool, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, s->lda, b, s->ldb,
                             s->beta, c, s->ldc);
            else
                vt_sgemm(pool, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, s->lda, b, s->ldb,
                         s->beta, c, s->ldc);
            it++;
        } while ((t = now() - t0) < window);
        if (t / it < best) best = t / it;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * s->m * s->n * s->k / best * 1e-9;
}

int main(int argc, char **argv)
{
    double window = argc > 1 ? atof(argv[1]) : 0.1;
    int sq = argc > 2 ? atoi(argv[2]) : 2048;
    /* forward Y = W x col; dW += dY x col^T; dcol = W^T x dY (lib/backend/cpu_conv.c) */
    const shape shapes[] = {
        {"cnn-small conv2 fwd", 0, 0, 64, 784, 288, 288, 784, 50176, 0},
        {"cnn-small conv2 dW", 0, 1, 64, 288, 784, 50176, 784, 288, 1},
        {"cnn-small conv2 dcol", 1, 0, 288, 784, 64, 288, 50176, 784, 0},
        {"cnn-small conv3 fwd", 0, 0, 128, 441, 576, 576, 441, 12544, 0},
        {"cnn-small conv3 dW", 0, 1, 128, 576, 441, 12544, 441, 576, 1},
        {"cnn-small conv3 dcol", 1, 0, 576, 441, 128, 576, 12544, 441, 0},
        {"cnn-small conv1 fwd", 0, 0, 32, 784, 9, 9, 784, 200704, 0},
        {"cnn-small conv1 dW", 0, 1, 32, 9, 784, 200704, 784, 9, 1},
        {"square", 0, 0, sq, sq, sq, sq, sq, sq, 0},
    };
    vt_pool *pools[2] = {NULL, NULL};
    if (vt_pool_create(&pools[1], 2)) return 2;
    printf("vt_sgemm: %s; vt_gemm_bf16: %s\n", vt_sgemm_kernels(), vt_gemm_bf16_kernel());
    printf("%-22s %5s %5s %5s %2s %2s | %8s %8s %6s | %8s %8s %6s\n", "shape", "m", "n", "k", "ta",
           "tb", "fp32 1t", "bf16 1t", "x", "fp32 2t", "bf16 2t", "x");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        double g[2][2];
        for (int t = 0; t < 2; t++)
            for (int bf = 0; bf < 2; bf++) g[t][bf] = gflops(s, bf, pools[t], window);
        printf("%-22s %5d %5d %5d %2d %2d | %8.1f %8.1f %6.2f | %8.1f %8.1f %6.2f\n", s->name, s->m,
               s->n, s->k, s->ta, s->tb, g[0][0], g[0][1], g[0][1] / g[0][0], g[1][0], g[1][1],
               g[1][1] / g[1][0]);
        fflush(stdout);
    }
    vt_pool_destroy(pools[1]);
    return 0;
}
