/* vt_gemm_bf16 (bf16 operands, fp32 accumulation: lib/backend/gemm_bf16.c, gemm_bf16_amx.c)
 * against fp32 vt_sgemm, GFLOP/s (best of 5 windows), 1 and 2 threads, for each bf16 kernel
 * this machine runs (AVX512_BF16 14x32, AMX 32x32; "-" where it cannot), on the GEMM shapes
 * the CPU convolutions call for the small CNN at batch 256 (tiles as lib/backend/cpu_conv.c
 * cuts them, the library's leading dimensions: the shapes of bench/gemm_shapes.c), on
 * ResNet-like convolution shapes (a 3x3 convolution of 64 channels on 56x56, of 256 on 14x14:
 * forward, weight gradient, column gradient) and on a square product.
 *
 *   gemm_bf16 [seconds-per-measurement=0.1] [square=2048] [portable]
 *
 * "portable" adds a column for the portable reference (slow). */
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

/* bf16: 0 fp32 vt_sgemm, else vt_gemm_bf16 with the kernel as forced */
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
    int portable = argc > 3 && !strcmp(argv[3], "portable");
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
        {"conv 64ch 56x56 fwd", 0, 0, 64, 3136, 576, 576, 3136, 3136, 0},
        {"conv 64ch 56x56 dW", 0, 1, 64, 576, 3136, 3136, 3136, 576, 1},
        {"conv 64ch 56x56 dcol", 1, 0, 576, 3136, 64, 576, 3136, 3136, 0},
        {"conv 256ch 14x14 fwd", 0, 0, 256, 196, 2304, 2304, 196, 196, 0},
        {"conv 256ch 14x14 dW", 0, 1, 256, 2304, 196, 196, 196, 2304, 1},
        {"conv 256ch 14x14 dcol", 1, 0, 2304, 196, 256, 2304, 196, 196, 0},
        {"square", 0, 0, sq, sq, sq, sq, sq, sq, 0},
    };
    /* the kernels timed after fp32: name for vt_gemm_bf16_force, column title */
    const char *kname[3] = {"avx512", "amx", "portable"}, *ktitle[3] = {"avx512", "amx", "port."};
    int nk = portable ? 3 : 2, have[3];
    for (int q = 0; q < nk; q++) have[q] = vt_gemm_bf16_force(kname[q]);
    vt_pool *pools[2] = {NULL, NULL};
    if (vt_pool_create(&pools[1], 2)) return 2;
    printf("vt_sgemm: %s\nvt_gemm_bf16 kernels: AVX512_BF16 14x32 %s, AMX 32x32 %s\n",
           vt_sgemm_kernels(), have[0] ? "yes" : "no (not timed)",
           have[1] ? "yes" : "no (not timed)");
    printf("%-21s %4s %4s %4s %2s %2s |", "shape (GFLOP/s)", "m", "n", "k", "ta", "tb");
    for (int t = 0; t < 2; t++) {
        printf(" %6s%d", "fp32 ", t + 1);
        for (int q = 0; q < nk; q++) printf(" %7s", ktitle[q]);
        printf(" |");
    }
    printf(" amx/fp32 2t\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        double g[2][4] = {{0}};
        printf("%-21s %4d %4d %4d %2d %2d |", s->name, s->m, s->n, s->k, s->ta, s->tb);
        for (int t = 0; t < 2; t++) {
            g[t][0] = gflops(s, 0, pools[t], window);
            printf(" %7.1f", g[t][0]);
            for (int q = 0; q < nk; q++) {
                if (!have[q]) {
                    printf(" %7s", "-");
                    continue;
                }
                vt_gemm_bf16_force(kname[q]);
                g[t][q + 1] = gflops(s, 1, pools[t], window);
                printf(" %7.1f", g[t][q + 1]);
            }
            printf(" |");
            fflush(stdout);
        }
        if (have[1]) printf(" %6.2f", g[1][2] / g[1][0]);
        printf("\n");
        fflush(stdout);
    }
    vt_pool_destroy(pools[1]);
    return 0;
}
