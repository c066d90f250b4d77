/* CPU (or GPU) training throughput of a model through the public step API, on random data.
 *
 *   train_throughput [arch=cnn-small] [classes=10] [channels=1] [imgsz=28] [batch=64]
 *                    [steps=30] [warmup=5] [device=cpu] [optimizer=sgd] [precision=tf32]
 *
 * Prints one line: arch, batch, img/s, ms/step, achieved GFLOP/s (3x forward FLOPs per image).
 * The trainer's log goes to stderr (with VT_CUDNN set: what runs the GPU's convolutions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "visiontrain/visiontrain.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void log_line(void *user, vt_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    fprintf(stderr, "train_throughput: %s\n", msg);
}

int main(int argc, char **argv)
{
    const char *arch = "cnn-small", *device = "cpu", *optimizer = "sgd", *precision = "tf32";
    int classes = 10, channels = 1, imgsz = 28, batch = 64, steps = 30, warmup = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "arch=", 5)) arch = a + 5;
        else if (!strncmp(a, "classes=", 8)) classes = atoi(a + 8);
        else if (!strncmp(a, "channels=", 9)) channels = atoi(a + 9);
        else if (!strncmp(a, "imgsz=", 6)) imgsz = atoi(a + 6);
        else if (!strncmp(a, "batch=", 6)) batch = atoi(a + 6);
        else if (!strncmp(a, "steps=", 6)) steps = atoi(a + 6);
        else if (!strncmp(a, "warmup=", 7)) warmup = atoi(a + 7);
        else if (!strncmp(a, "device=", 7)) device = a + 7;
        else if (!strncmp(a, "optimizer=", 10)) optimizer = a + 10;
        else if (!strncmp(a, "precision=", 10)) precision = a + 10;
        else {
            fprintf(stderr, "unknown argument %s\n", a);
            return 2;
        }
    }
    char opts[128], kv[128];
    snprintf(opts, sizeof opts, "channels=%d imgsz=%d", channels, imgsz);
    vt_model *m;
    vt_trainer *t;
    if (vt_model_create(&m, arch, classes, opts) || vt_trainer_create(&t, m, NULL)) {
        fprintf(stderr, "%s\n", vt_last_error());
        return 1;
    }
    vt_trainer_set_log(t, log_line, NULL, VT_LOG_INFO);
    snprintf(kv, sizeof kv, "device=%s", device);
    vt_trainer_set(t, kv);
    snprintf(kv, sizeof kv, "optimizer=%s", optimizer);
    vt_trainer_set(t, kv);
    snprintf(kv, sizeof kv, "precision=%s", precision);
    vt_trainer_set(t, kv);
    vt_trainer_set(t, "lr0=0.01");
    size_t n = (size_t)batch * channels * imgsz * imgsz;
    float *x = malloc(n * sizeof *x);
    int32_t *y = malloc((size_t)batch * sizeof *y);
    srand(1);
    for (size_t i = 0; i < n; i++) x[i] = (float)rand() / RAND_MAX;
    for (int i = 0; i < batch; i++) y[i] = i % classes;
    float loss = 0;
    for (int s = 0; s < warmup + steps; s++) {
        static double t0;
        if (s == warmup) t0 = now();
        if (vt_trainer_step(t, x, y, batch, &loss)) {
            fprintf(stderr, "step: %s\n", vt_trainer_last_error(t));
            return 1;
        }
        if (s == warmup + steps - 1) {
            double dt = now() - t0;
            double ips = (double)steps * batch / dt;
            double gflops = ips * 3 * vt_model_flops(m, imgsz) / 1e9;
            double mem = 0;
            char peak[48] = "";
            if (strcmp(device, "cpu") != 0 &&
                vt_trainer_metric(t, VT_METRIC_DEVICE_MEMORY_BYTES, &mem) == VT_OK)
                snprintf(peak, sizeof peak, "  device memory %.0f MiB", mem / (1 << 20));
            printf("libvisiontrain %-10s batch %4d  %9.1f img/s  %8.2f ms/step  %6.1f GFLOP/s  "
                   "loss %.3f%s\n", arch, batch, ips, 1e3 * dt / steps, gflops, loss, peak);
        }
    }
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    free(x);
    free(y);
    return 0;
}
