/* The shared library finds its CUDA module by itself, and only when a GPU is asked for: a
 * program linked with libvisiontrain.so (public API only, VT_CUDA_PLUGIN unset) trains on the
 * CPU with no CUDA library mapped; then vt_device_count() loads the module from the library's
 * own folder (a CUDA build) or answers "no CUDA support" (a build without).
 * With CUDA_BUILD 2 the CUDA libraries are expected to be missing (tests/hide_cuda_libs.sh runs
 * it so): CPU training works, and the module is found but cannot be loaded, which the message
 * says.  Usage: cuda_module_lookup CUDA_BUILD(0|1|2).  Exit 0 on success, 1 with a message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "visiontrain/visiontrain.h"

static int failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "cuda_module_lookup: " __VA_ARGS__);                                   \
            fputc('\n', stderr);                                                                   \
            failed = 1;                                                                            \
        }                                                                                          \
    } while (0)

/* The folder (with its '/') of the first mapped file whose path contains `part`; "" if none. */
static void mapped_folder(const char *part, char *dir, size_t cap)
{
    dir[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/'), *hit = strstr(line, part);
        if (!path || !hit || hit < path) continue;
        char *slash = strrchr(path, '/');
        size_t n = (size_t)(slash - path) + 1;
        if (n < cap) {
            memcpy(dir, path, n);
            dir[n] = 0;
        }
        break;
    }
    fclose(f);
}

static int mapped(const char *part)
{
    char d[4096];
    mapped_folder(part, d, sizeof d);
    return d[0] != 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cuda_module_lookup CUDA_BUILD(0|1|2)\n");
        return 2;
    }
    int cuda_build = atoi(argv[1]);
    /* The default search, as a user's program gets it.  The dynamic linker read
     * LD_LIBRARY_PATH (meson test sets it to the build folder) at start-up: run again without
     * it, so that only the library's own folder can supply the module. */
    if (getenv("LD_LIBRARY_PATH")) {
        unsetenv("LD_LIBRARY_PATH");
        execv("/proc/self/exe", argv);
        perror("cuda_module_lookup: execv");
        return 1;
    }
    unsetenv("VT_CUDA_PLUGIN");
    CHECK(!mapped("libcudart") && !mapped("libcublas"), "a CUDA library is mapped at start-up");

    /* CPU training: nothing of CUDA is loaded */
    char tmpl[] = "cuda_module_lookup.XXXXXX";
    char *dir = mkdtemp(tmpl);
    char ds_dir[256];
    if (!dir) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(ds_dir, sizeof ds_dir, "%s/ds", dir);
    vt_dataset *ds = NULL;
    vt_model *m = NULL;
    vt_trainer *t = NULL;
    vt_status st = vt_synth_generate(ds_dir, VT_TASK_CLASSIFY, "classes=2 train=4 val=0 imgsz=16");
    if (!st) st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, ds_dir);
    if (!st) st = vt_model_create(&m, "cnn-small", 2, "imgsz=16");
    if (!st) st = vt_trainer_create(&t, m, ds);
    const char *set[] = {"epochs=1", "batch=4", "workers=0", "imgsz=16", "device=cpu", "save=0"};
    for (int i = 0; !st && i < 6; i++) st = vt_trainer_set(t, set[i]);
    if (!st) st = vt_trainer_run(t);
    CHECK(st == VT_OK, "CPU training: %s", t ? vt_trainer_last_error(t) : vt_last_error());
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    CHECK(!mapped("libcudart") && !mapped("libcublas") && !mapped("libvisiontrain-cuda"),
          "CPU training mapped a CUDA library");

    /* asking for a GPU loads the module from the library's own folder */
    int n = vt_device_count();
    char lib_dir[4096], mod_dir[4096];
    mapped_folder("libvisiontrain.so", lib_dir, sizeof lib_dir);
    mapped_folder("libvisiontrain-cuda.so", mod_dir, sizeof mod_dir);
    vt_status info = vt_device_info(n, NULL, 0, NULL, NULL, NULL, NULL);
    const char *msg = vt_last_error();
    CHECK(info == VT_ERR_DEVICE, "vt_device_info(%d) with %d GPUs: status %d", n, n, info);
    if (cuda_build == 2) {
        CHECK(n == 0 && !mod_dir[0], "without the CUDA libraries: %d GPUs, module mapped from '%s'",
              n, mod_dir);
        CHECK(strstr(msg, "could not be loaded") && strstr(msg, "libcu"),
              "the message should name the missing CUDA library: '%s'", msg);
    } else if (cuda_build) {
        CHECK(lib_dir[0] && strcmp(lib_dir, mod_dir) == 0,
              "the module was not loaded from the library's folder '%s' (mapped from '%s'); "
              "vt_device_info: %s", lib_dir, mod_dir, msg);
        CHECK(strstr(msg, "CUDA device") && !strstr(msg, "CUDA backend"),
              "device %d's answer should come from the CUDA runtime: '%s'", n, msg);
    } else {
        CHECK(n == 0 && !mod_dir[0], "a build without CUDA: %d GPUs, module mapped from '%s'", n,
              mod_dir);
        CHECK(strstr(msg, "no CUDA support") != NULL, "no-CUDA message: '%s'", msg);
    }
    if (!failed) printf("cuda_module_lookup: ok (%d GPU%s; module %s)\n", n, n == 1 ? "" : "s",
                        mod_dir[0] ? mod_dir : "none");
    return failed;
}
