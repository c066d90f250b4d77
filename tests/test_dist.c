/* Distributed training (lib/train/dist.c, lib/dist/).
 *
 *   test_dist env   (one process, any build): a launch this build cannot join is refused with
 *                   a clear message (mpirun without MPI in the build; torchrun's RANK /
 *                   WORLD_SIZE), and dist=off trains alone whatever the environment says.
 *   test_dist mpi   (under `mpirun -np 2`, a build with MPI):
 *     1. equality: 2 ranks x batch 4 give the weights of 1 process x batch 8 (each rank also
 *        trains that reference alone, dist=off) after 3 epochs of 6 steps, the last step of
 *        each epoch a trailing one of 2 images a rank.  The model has no batch norm (its
 *        forward would differ: per-replica batch statistics); tolerance below.  Then the same
 *        for a detector (no batch norm either), whose loss is over each slice's target-score
 *        sum: the ranks weight their gradients by it (weighted by images instead, the weights
 *        differ by 0.019, by the clamped sums 0.0023; with it 7e-9).
 *     2. replicas: after each of 4 one-step runs the weights' checksums agree over the ranks
 *        bit for bit.
 *     3. a run of 2 epochs of cnn-small (batch norm) with validation, checkpoints and plots:
 *        it completes on both ranks, only rank 0 wrote a run folder, weights and BN running
 *        statistics are identical over the ranks, both report rank 0's top-1, and rank 0's
 *        log names "2 ranks".
 *     4. resume (test_resume): a 2-rank run cancelled inside an epoch, resumed on 2 ranks
 *        (the uninterrupted run's weights), and alone with batch 8 and with batch 4 (the
 *        epoch's remaining images re-sharded, each trained once; the learning rate goes on);
 *        the same checkpoint without the world fields (older libraries); an epoch-end one.
 * Each rank writes its own copy of the synthetic data set (they are the same bytes), so no
 * collective is needed before the first run starts MPI.  Exit status 0 pass, 1 fail, 77 skip. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_config.h"
#include "core/checkpoint.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "task/task.h"
#include "train/trainer_impl.h"
#include <visiontrain/visiontrain.h>

#if VT_HAVE_MPI
#include <mpi.h>
#endif

static int failures;
static int my_rank;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", my_rank, __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char *tmp_root(void)
{
    const char *t = getenv("VT_TEST_TMP");
    return t && *t ? t : "/tmp";
}

/* conv3x3(3->8, bias) + ReLU, maxpool 2, conv3x3(8->16, bias) + ReLU, global average pool,
 * linear: a classifier without batch norm, so that the forward of a rank's 4 images is the
 * forward of those images in a batch of 8. */
static int build_plain(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                       int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int x = vt_g_input(g, ch, imgsz, imgsz);
    x = vt_g_act(g, vt_g_conv(g, x, 8, 3, 1, 1, 1, 1), VT_ACT_RELU, 0);
    x = vt_g_maxpool(g, x, 2, 2, 0);
    x = vt_g_act(g, vt_g_conv(g, x, 16, 3, 1, 1, 1, 1), VT_ACT_RELU, 0);
    g->backbone_end = g->n_nodes;
    x = vt_g_gap(g, x);
    return (out[0] = vt_g_linear(g, x, nc)) < 0 ? -1 : 1;
}

static const vt_arch_spec plain_spec = {.name = "plain-test", .task = VT_TASK_CLASSIFY,
                                        .revision = 1, .min_classes = 2, .build = build_plain,
                                        .probs = 1};

/* A detector without batch norm: three conv3x3/2 + ReLU, then the head's 4 + nc channels per
 * cell of the stride-8 grid. */
static int build_plain_det(vt_graph *g, const void *cfg, int nc, int ch, int imgsz,
                           float dropout, int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int x = vt_g_input(g, ch, imgsz, imgsz);
    x = vt_g_act(g, vt_g_conv(g, x, 8, 3, 2, 1, 1, 1), VT_ACT_RELU, 0);
    x = vt_g_act(g, vt_g_conv(g, x, 16, 3, 2, 1, 1, 1), VT_ACT_RELU, 0);
    x = vt_g_act(g, vt_g_conv(g, x, 16, 3, 2, 1, 1, 1), VT_ACT_RELU, 0);
    g->backbone_end = g->n_nodes;
    return (out[0] = vt_g_conv(g, x, 4 + nc, 1, 1, 0, 1, 1)) < 0 ? -1 : 1;
}

static const vt_arch_spec plain_det_spec = {.name = "plain-det-test", .task = VT_TASK_DETECT,
                                            .revision = 1, .min_classes = 1, .multiple = 8,
                                            .build = build_plain_det, .init = vt_init_det_head};

/* With batch norm, for sync_bn: BN + ReLU + 2x2 max pool (one fused op), BN + SiLU, and a plain
 * BN before the global pool: each of the CPU backend's training BN ops. */
static int build_bn(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                    int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int x = vt_g_input(g, ch, imgsz, imgsz);
    x = vt_g_maxpool(g, vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 8, 3, 1, 1, 1, 0)), VT_ACT_RELU,
                                 0), 2, 2, 0);
    x = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 16, 3, 1, 1, 1, 0)), VT_ACT_SILU, 0);
    x = vt_g_bn(g, vt_g_conv(g, x, 16, 3, 2, 1, 1, 0));
    g->backbone_end = g->n_nodes;
    x = vt_g_gap(g, x);
    return (out[0] = vt_g_linear(g, x, nc)) < 0 ? -1 : 1;
}

static const vt_arch_spec bn_spec = {.name = "bn-test", .task = VT_TASK_CLASSIFY, .revision = 1,
                                     .min_classes = 2, .build = build_bn, .probs = 1};

/* A detector with BN + SiLU: its ranks' gradients are weighted by their target-score sums,
 * which sync_bn's backward sums follow. */
static int build_bn_det(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                        int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int x = vt_g_input(g, ch, imgsz, imgsz);
    for (int i = 0; i < 3; i++)
        x = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, i ? 16 : 8, 3, 2, 1, 1, 0)), VT_ACT_SILU, 0);
    g->backbone_end = g->n_nodes;
    return (out[0] = vt_g_conv(g, x, 4 + nc, 1, 1, 0, 1, 1)) < 0 ? -1 : 1;
}

static const vt_arch_spec bn_det_spec = {.name = "bn-det-test", .task = VT_TASK_DETECT,
                                         .revision = 1, .min_classes = 1, .multiple = 8,
                                         .build = build_bn_det, .init = vt_init_det_head};

static const char *const quiet_aug[] = {"fliplr=0", "hsv_h=0", "hsv_s=0", "hsv_v=0",
                                        "translate=0", "scale=0", "erasing=0", "crop_scale=1",
                                        NULL};

static vt_status make_task_data(char *path, size_t cap, const char *name, int rank, vt_task task,
                                const char *opts)
{
    snprintf(path, cap, "%s/dist_%s_r%d", tmp_root(), name, rank);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path); /* a run before this one left it */
    if (system(cmd) != 0) return vt_fail(VT_ERR_IO, "%s: cannot remove", path);
    return vt_synth_generate(path, task, opts);
}

static vt_status make_data(char *path, size_t cap, const char *name, int rank, const char *opts)
{
    return make_task_data(path, cap, name, rank, VT_TASK_CLASSIFY, opts);
}

static void set_all(vt_trainer *t, const char *const *s)
{
    for (; *s; s++) CHECK(vt_trainer_set(t, *s) == VT_OK, "%s: %s", *s, vt_trainer_last_error(t));
}

/* Train a fresh model of spec (seed 3) on data; its weights into *w (malloc'd, n floats). */
static vt_status train_spec(const vt_arch_spec *spec, const char *data, const char *model_opts,
                            const char *const *settings, float **w, int *n)
{
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    *w = NULL;
    vt_status st = vt_dataset_open(&ds, spec->task, data);
    if (st) return st;
    if ((st = vt_model_create_spec(&m, spec, vt_dataset_num_classes(ds), model_opts))) {
        vt_dataset_destroy(ds);
        return st;
    }
    if ((st = vt_trainer_create(&t, m, ds))) {
        vt_model_destroy(m);
        vt_dataset_destroy(ds);
        return st;
    }
    set_all(t, quiet_aug);
    set_all(t, settings);
    st = vt_trainer_run(t);
    if (st) fprintf(stderr, "rank %d: run: %s\n", my_rank, vt_trainer_last_error(t));
    vt_trainer_destroy(t); /* hands the weights to the model */
    if (!st) {
        *n = (int)m->graph.n_params;
        *w = malloc((size_t)*n * sizeof(float));
        memcpy(*w, m->params, (size_t)*n * sizeof(float));
    }
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return st;
}

static vt_status train_plain(const char *data, const char *const *settings, float **w, int *n)
{
    return train_spec(&plain_spec, data, "imgsz=16 seed=3", settings, w, n);
}

/* ---- one process ---- */

static int run_env(void)
{
    char data[4096];
    if (make_data(data, sizeof data, "env", 0, "classes=2 train=4 val=0 imgsz=16 seed=2")) {
        fprintf(stderr, "synth: %s\n", vt_last_error());
        return 1;
    }
    const char *common[] = {"epochs=1", "batch=4", "save=0", "val=0", "workers=0", NULL};
    float *w;
    int n;
    /* an MPI launch's variables in a build without MPI: refused (a build with MPI would
     * start MPI on them, which only mpirun can answer: test_dist mpi covers it) */
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    if (!VT_HAVE_MPI) {
        vt_status st = train_plain(data, common, &w, &n);
        CHECK(st == VT_ERR_UNSUPPORTED && strstr(vt_last_error(), "no MPI") &&
              strstr(vt_last_error(), "dist=off"),
              "mpirun launch without MPI: status %d, '%s'", st, vt_last_error());
        free(w);
    }
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    /* torchrun's convention joins GPU ranks (NCCL); CPU ranks are told to use mpirun */
    setenv("WORLD_SIZE", "2", 1);
    setenv("RANK", "1", 1);
    vt_status st = train_plain(data, common, &w, &n);
    CHECK(st == VT_ERR_UNSUPPORTED && strstr(vt_last_error(), "WORLD_SIZE=2") &&
          strstr(vt_last_error(), "mpirun"),
          "RANK/WORLD_SIZE launch: status %d, '%s'", st, vt_last_error());
    free(w);
    /* device=0,1: the rank's entry is its LOCAL_RANK's (GPU 1 here: without that GPU its error
     * names it; with it, the rendezvous needs MASTER_ADDR, unset here) */
    setenv("LOCAL_RANK", "1", 1);
    const char *gpus[] = {"epochs=1", "batch=4", "save=0", "val=0", "workers=0", "device=0,1",
                          NULL};
    st = train_plain(data, gpus, &w, &n);
    CHECK((st == VT_ERR_DEVICE && strstr(vt_last_error(), "device=1")) ||
              (st == VT_ERR_UNSUPPORTED && strstr(vt_last_error(), "MASTER_ADDR")),
          "device=0,1 as LOCAL_RANK 1: status %d, '%s'", st, vt_last_error());
    free(w);
    setenv("LOCAL_RANK", "2", 1);
    st = train_plain(data, gpus, &w, &n);
    CHECK(st == VT_ERR_OPTION_VALUE && strstr(vt_last_error(), "past the list"),
          "device=0,1 as LOCAL_RANK 2: status %d, '%s'", st, vt_last_error());
    free(w);
    unsetenv("LOCAL_RANK");
    /* vt_trainer_rank before a run: the launcher's, unless dist=off */
    {
        vt_dataset *ds = NULL;
        vt_model *m = NULL;
        vt_trainer *t = NULL;
        CHECK(vt_dataset_open(&ds, VT_TASK_CLASSIFY, data) == VT_OK &&
                  vt_model_create(&m, "cnn-small", 2, "imgsz=16") == VT_OK &&
                  vt_trainer_create(&t, m, ds) == VT_OK,
              "trainer: %s", vt_last_error());
        int world = 0;
        CHECK(t && vt_trainer_rank(t, &world) == 1 && world == 2, "RANK=1 WORLD_SIZE=2: rank "
              "%d of %d", t ? vt_trainer_rank(t, NULL) : -1, world);
        CHECK(t && vt_trainer_set(t, "dist=off") == VT_OK && vt_trainer_rank(t, &world) == 0 &&
                  world == 1, "dist=off: rank of %d", world);
        CHECK(vt_trainer_rank(NULL, &world) == 0 && world == 1, "NULL trainer");
        /* device lists: distinct GPU indices */
        CHECK(t && vt_trainer_set(t, "device=3,0,2") == VT_OK, "device=3,0,2: %s",
              vt_last_error());
        CHECK(t && vt_trainer_set(t, "device=0,2,0") == VT_ERR_OPTION_VALUE &&
                  strstr(vt_last_error(), "GPU 0 twice"),
              "device=0,2,0: '%s'", vt_last_error());
        const char *bad[] = {"device=0,", "device=,1", "device=0,cpu", "device=0,64",
                             "device=0;1", "device=-1,0"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            CHECK(t && vt_trainer_set(t, bad[i]) == VT_ERR_OPTION_VALUE, "%s accepted", bad[i]);
        vt_trainer_destroy(t);
        vt_model_destroy(m);
        vt_dataset_destroy(ds);
    }
    /* dist=off: trains alone whatever the environment says */
    const char *off[] = {"epochs=1", "batch=4", "save=0", "val=0", "workers=0", "dist=off",
                         NULL};
    st = train_plain(data, off, &w, &n);
    CHECK(st == VT_OK && w, "dist=off under WORLD_SIZE=2: %s", vt_last_error());
    free(w);
    unsetenv("WORLD_SIZE");
    unsetenv("RANK");
    /* a GPU list in a process alone: told how to start the ranks */
    st = train_plain(data, gpus, &w, &n);
    CHECK(st == VT_ERR_OPTION_VALUE && strstr(vt_last_error(), "trains alone"),
          "device=0,1 alone: status %d, '%s'", st, vt_last_error());
    free(w);
    /* and an ordinary run is unchanged */
    st = train_plain(data, common, &w, &n);
    CHECK(st == VT_OK && w, "one process: %s", vt_last_error());
    free(w);
    printf("%s: env %s\n", VT_HAVE_MPI ? "MPI build" : "build without MPI",
           failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

#if VT_HAVE_MPI

static uint64_t checksum(const float *x, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* 1 when every rank holds the same checksum */
static int same_everywhere(uint64_t h)
{
    uint64_t lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

typedef struct log_seen {
    int ranks;
} log_seen;

static void on_log(void *user, vt_log_level level, const char *msg)
{
    (void)level;
    if (strstr(msg, "2 ranks")) ((log_seen *)user)->ranks++;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* 2 ranks x batch 4 against 1 process x batch 8 (each rank trains that reference alone too):
 * the same weights after 3 epochs of 6 steps, the last step of each a trailing one of 2 images
 * a rank.  extra: the task's settings on top of the common ones (NULL-terminated). */
static double equality_diff(int rank, const char *what, const vt_arch_spec *spec,
                            const char *data_opts, const char *model_opts,
                            const char *const *extra, int expect_equal);

/* `test_dist gpu`: the runs on GPUs 0 and 1 (NCCL) instead of the CPU (MPI). */
static int gpu_mode;

static void equality(int rank, const char *what, const vt_arch_spec *spec, const char *data_opts,
                     const char *model_opts, const char *const *extra)
{
    equality_diff(rank, what, spec, data_opts, model_opts, extra, 1);
}

/* The same, returning max |w(2 ranks x 4) - w(1 x 8)| (-1 when a run failed); expect_equal:
 * checked against the tolerance, else only reported. */
static double equality_diff(int rank, const char *what, const vt_arch_spec *spec,
                            const char *data_opts, const char *model_opts,
                            const char *const *extra, int expect_equal)
{
    double result = -1;
    char data[4096];
    CHECK(make_task_data(data, sizeof data, what, rank, spec->task, data_opts) == VT_OK,
          "synth: %s", vt_last_error());
    enum { MAXS = 32 };
    const char *dist[MAXS] = {"epochs=3", "batch=4", "momentum=0.9", "warmup_epochs=0", "seed=1",
                              "save=0", "val=0", "workers=0"};
    const char *ref[MAXS] = {"epochs=3", "batch=8", "momentum=0.9", "warmup_epochs=0", "seed=1",
                             "save=0", "val=0", "workers=0", "dist=off"};
    int nd = 8, nr = 9;
    for (int i = 0; extra[i] && nr < MAXS - 1; i++) dist[nd++] = ref[nr++] = extra[i];
    if (gpu_mode) { /* GPU ranks over NCCL against one process on GPU 0, both in plain fp32 */
        dist[nd++] = "device=0,1";
        ref[nr++] = "device=0";
        dist[nd++] = ref[nr++] = "precision=fp32";
    }
    float *wd = NULL, *wr = NULL, *w0 = NULL;
    double t0 = MPI_Wtime();
    vt_status st = train_spec(spec, data, model_opts, dist, &wd, &nd);
    double t_dist = MPI_Wtime() - t0;
    CHECK(st == VT_OK, "%s: 2-rank run: %s", what, vt_last_error());
    st = train_spec(spec, data, model_opts, ref, &wr, &nr);
    CHECK(st == VT_OK, "%s: 1-process run: %s", what, vt_last_error());
    /* the untrained weights, to see that training moved them */
    vt_model *m0 = NULL;
    vt_dataset *ds = NULL;
    CHECK(vt_dataset_open(&ds, spec->task, data) == VT_OK, "open");
    CHECK(ds && vt_model_create_spec(&m0, spec, vt_dataset_num_classes(ds), model_opts) == VT_OK,
          "model");
    vt_dataset_destroy(ds);
    if (m0) w0 = m0->params;
    if (wd && wr && w0 && nd == nr) {
        double maxd = 0, maxw = 0, moved = 0;
        for (int i = 0; i < nd; i++) {
            double d = fabs((double)wd[i] - wr[i]);
            if (d > maxd) maxd = d;
            if (fabs(wr[i]) > maxw) maxw = fabs(wr[i]);
            if (fabs((double)wr[i] - w0[i]) > moved) moved = fabs((double)wr[i] - w0[i]);
        }
        /* fp32: the GEMMs of 4 and of 8 images sum in other orders; 18 steps keep the
         * difference near 1e-6 of the weights' scale; 1e-4 leaves room, and a wrong shard,
         * weighting or missing all-reduce differs by about the update itself (`moved`) */
        double tol = 1e-4 * (maxw > 1 ? maxw : 1);
        result = maxd;
        CHECK(maxd <= tol || !expect_equal, "%s: 2 ranks x 4 vs 1 x 8: max |dw| %.3g > %.3g",
              what, maxd, tol);
        CHECK(moved > 100 * tol, "%s: training hardly moved the weights (%.3g)", what, moved);
        if (rank == 0)
            printf("equality (%s): %d weights, max |w(2 ranks x 4) - w(1 x 8)| = %.3g (max |w| "
                   "%.3g, moved up to %.3g; tolerance %.3g); 2-rank run %.2f s\n",
                   what, nd, maxd, maxw, moved, tol, t_dist);
        CHECK(same_everywhere(checksum(wd, (size_t)nd)), "%s: replicas differ after the run",
              what);
    }
    vt_model_destroy(m0);
    free(wd);
    free(wr);
    return result;
}

static void test_equality(int rank)
{
    /* 4 classes x 11 = 44 images: 5 steps of 8 and a trailing one of 4 (2 a rank) */
    const char *cls[] = {"lr0=0.05", NULL};
    equality(rank, "eq", &plain_spec, "classes=4 train=11 val=0 imgsz=16 seed=5",
             "imgsz=16 seed=3", cls);
    /* detection: the loss is over each batch's target-score sum, so the ranks weight their
     * gradients by theirs (dist.c); no mosaic (its partners come from the rank's own slice)
     * nor any other random augmentation */
    const char *det[] = {"lr0=0.01",   "optimizer=sgd", "mosaic=0", "mixup=0",   "degrees=0",
                         "translate=0", "scale=0",      "fliplr=0", "hsv_h=0",   "hsv_s=0",
                         "hsv_v=0",    "close_mosaic=0", NULL};
    equality(rank, "det", &plain_det_spec, "classes=3 train=44 val=0 imgsz=32 seed=5 "
             "max_objects=3", "imgsz=32 seed=3", det);
    /* batch norm: with sync_bn the ranks normalise over the whole step's 8 images, as the
     * single process; without it each over its own 4, a difference of about the update */
    const char *bn_sync[] = {"lr0=0.05", "sync_bn=1", NULL}, *bn_own[] = {"lr0=0.05", NULL};
    equality(rank, "sync_bn", &bn_spec, "classes=4 train=11 val=0 imgsz=16 seed=5",
             "imgsz=16 seed=3", bn_sync);
    double own = equality_diff(rank, "bn", &bn_spec, "classes=4 train=11 val=0 imgsz=16 seed=5",
                               "imgsz=16 seed=3", bn_own, 0);
    CHECK(own > 1e-3, "batch norm without sync_bn: 2 ranks x 4 vs 1 x 8 differ by %.3g only: "
          "the sync_bn check would not see a missing sync", own);
    if (rank == 0) printf("batch norm without sync_bn: max |dw| %.3g\n", own);
    const char *det_sync[] = {"lr0=0.01",   "optimizer=sgd", "mosaic=0", "mixup=0", "degrees=0",
                              "translate=0", "scale=0",      "fliplr=0", "hsv_h=0", "hsv_s=0",
                              "hsv_v=0",    "close_mosaic=0", "sync_bn=1", NULL};
    equality(rank, "sync_bn det", &bn_det_spec, "classes=3 train=44 val=0 imgsz=32 seed=5 "
             "max_objects=3", "imgsz=32 seed=3", det_sync);
    /* segmentation: seg-n itself (BN + SiLU, upsampling, concatenations), its loss a mean over
     * the step's pixels plus the soft Dice of them all (the ranks sum its per-class sums) */
    const vt_arch_spec *seg = vt_arch_find("seg-n");
    CHECK(seg != NULL, "no seg-n");
    const char *seg_sync[] = {"lr0=0.01", "optimizer=sgd", "mosaic=0",  "degrees=0", "translate=0",
                              "scale=0",  "fliplr=0",      "hsv_h=0",   "hsv_s=0",   "hsv_v=0",
                              "close_mosaic=0", "sync_bn=1", NULL};
    if (seg)
        equality(rank, "sync_bn seg-n", seg, "classes=3 train=15 val=0 imgsz=32 seed=5",
                 "imgsz=32 seed=3", seg_sync);
    /* instance segmentation: box terms over the positives' target-score sum, the mask term over
     * the positive anchors: each normaliser summed over the ranks (the mask outputs' gradient
     * rescaled to the box terms' units before the backward); iseg-n's batch norms with
     * sync_bn.  4.4e-5 on Zen 3 (the task-aligned assignment amplifies the float rounding of
     * the rescale over 18 steps); weighted by images as before: 0.27.  Bound between. */
    const vt_arch_spec *iseg = vt_arch_find("iseg-n");
    CHECK(iseg != NULL, "no iseg-n");
    if (iseg) {
        double d = equality_diff(rank, "sync_bn iseg-n", iseg, "classes=3 train=16 val=0 "
                                 "imgsz=32 seed=5 max_objects=3", "imgsz=32 seed=3", det_sync, 0);
        CHECK(d >= 0 && d < 5e-3, "sync_bn iseg-n: 2 ranks x 4 vs 1 x 8: max |dw| %.3g (bound "
              "5e-3)", d);
    }
    /* gradient buckets (bucket_mb): small ones, a bucket every layer or two, summed during the
     * backward; a range reduced twice or never would differ by about the update.  With a
     * frozen prefix (freeze=2: its gradients are not summed), with the detector, and with
     * sync_bn's collectives interleaved with the buckets' in seg-n's backward. */
    const char *cls_b[] = {"lr0=0.05", "bucket_mb=0.0002", NULL};
    equality(rank, "eq buckets", &plain_spec, "classes=4 train=11 val=0 imgsz=16 seed=5",
             "imgsz=16 seed=3", cls_b);
    const char *cls_fb[] = {"lr0=0.05", "bucket_mb=0.0002", "freeze=2", NULL};
    equality(rank, "eq buckets freeze=2", &plain_spec, "classes=4 train=11 val=0 imgsz=16 "
             "seed=5", "imgsz=16 seed=3", cls_fb);
    const char *det_b[] = {"lr0=0.01",   "optimizer=sgd", "mosaic=0", "mixup=0",   "degrees=0",
                           "translate=0", "scale=0",      "fliplr=0", "hsv_h=0",   "hsv_s=0",
                           "hsv_v=0",    "close_mosaic=0", "bucket_mb=0.001", NULL};
    equality(rank, "det buckets", &plain_det_spec, "classes=3 train=44 val=0 imgsz=32 seed=5 "
             "max_objects=3", "imgsz=32 seed=3", det_b);
    const char *seg_b[] = {"lr0=0.01", "optimizer=sgd", "mosaic=0",  "degrees=0", "translate=0",
                           "scale=0",  "fliplr=0",      "hsv_h=0",   "hsv_s=0",   "hsv_v=0",
                           "close_mosaic=0", "sync_bn=1", "bucket_mb=0.05", NULL};
    if (seg)
        equality(rank, "sync_bn seg-n buckets", seg, "classes=3 train=15 val=0 imgsz=32 seed=5",
                 "imgsz=32 seed=3", seg_b);
}

/* Ranks whose gradient buckets differ (another bucket_mb on rank 1) would issue all-reduces of
 * other sizes: every rank stops at the set-up's last agreement, saying why, instead. */
static void test_plan_mismatch(int rank)
{
    char data[4096];
    CHECK(make_data(data, sizeof data, "plan", rank, "classes=2 train=8 val=0 imgsz=16 seed=6") ==
              VT_OK, "synth: %s", vt_last_error());
    const char *s[] = {"epochs=1", "batch=4", "save=0", "val=0", "workers=0",
                       rank ? "bucket_mb=0.001" : "bucket_mb=25", NULL};
    float *w = NULL;
    int n = 0;
    vt_status st = train_plain(data, s, &w, &n);
    CHECK(st == VT_ERR_OPTION_VALUE && strstr(vt_last_error(), "bucket_mb="),
          "buckets differing between ranks: status %d, '%s'", st, vt_last_error());
    free(w);
}

/* Four runs of one step each on the same trainer: the replicas agree after every step. */
static void test_every_step(int rank)
{
    char data[4096];
    CHECK(make_data(data, sizeof data, "step", rank, "classes=2 train=4 val=0 imgsz=16 seed=6") ==
              VT_OK, "synth: %s", vt_last_error());
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    if (vt_dataset_open(&ds, VT_TASK_CLASSIFY, data)) {
        CHECK(0, "open: %s", vt_last_error());
        return;
    }
    CHECK(vt_model_create(&m, "cls-n", 2, "imgsz=16") == VT_OK, "model");
    CHECK(vt_trainer_create(&t, m, ds) == VT_OK, "trainer");
    const char *s[] = {"epochs=1", "batch=4", "lr0=0.05", "seed=1", "save=0", "val=0",
                       "workers=0", NULL};
    set_all(t, s);
    for (int k = 0; k < 4; k++) {
        CHECK(vt_trainer_run(t) == VT_OK, "run %d: %s", k, vt_trainer_last_error(t));
        CHECK(vt_model_pull(m) == VT_OK, "pull");
        int same = same_everywhere(checksum(m->params, (size_t)m->graph.n_params));
        int same_bn = same_everywhere(checksum(m->buffers, (size_t)m->graph.n_buffers));
        CHECK(same && same_bn, "after step %d: weights %s, BN statistics %s", k + 1,
              same ? "agree" : "DIFFER", same_bn ? "agree" : "DIFFER");
    }
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

static void test_full_run(int rank)
{
    char data[4096], project[4096];
    CHECK(make_data(data, sizeof data, "full", rank, "classes=3 train=12 val=4 imgsz=16 seed=7") ==
              VT_OK, "synth: %s", vt_last_error());
    snprintf(project, sizeof project, "%s/dist_runs", tmp_root());
    if (rank == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", project);
        CHECK(system(cmd) == 0, "rm");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    vt_dataset *ds;
    vt_model *m;
    vt_trainer *t;
    if (vt_dataset_open(&ds, VT_TASK_CLASSIFY, data)) {
        CHECK(0, "open: %s", vt_last_error());
        return;
    }
    CHECK(vt_model_create(&m, "cnn-small", 3, "imgsz=16") == VT_OK, "model");
    CHECK(vt_trainer_create(&t, m, ds) == VT_OK, "trainer");
    char proj_opt[4200];
    snprintf(proj_opt, sizeof proj_opt, "project=%s", project);
    const char *s[] = {"epochs=2", "batch=6", "seed=1", "workers=1", "name=bn", proj_opt,
                       "ema=1", NULL};
    set_all(t, s);
    log_seen seen = {0};
    vt_trainer_set_log(t, on_log, &seen, VT_LOG_INFO);
    int world = 0;
    CHECK(vt_trainer_rank(t, &world) == rank && world == 2, "before the run: rank %d of %d",
          vt_trainer_rank(t, NULL), world);
    double t0 = MPI_Wtime();
    vt_status st = vt_trainer_run(t);
    double secs = MPI_Wtime() - t0;
    CHECK(vt_trainer_rank(t, &world) == rank && world == 2, "after the run: rank %d of %d",
          vt_trainer_rank(t, NULL), world);
    CHECK(vt_trainer_set(t, "dist=off") == VT_OK, "dist=off");
    CHECK(vt_trainer_rank(t, &world) == rank && world == 2, "dist=off after a 2-rank run: "
          "rank %d of %d (still the last run's)", vt_trainer_rank(t, NULL), world);
    CHECK(vt_trainer_set(t, "dist=auto") == VT_OK, "dist=auto");
    CHECK(st == VT_OK, "2-epoch run: %s", vt_trainer_last_error(t));
    CHECK(vt_trainer_stop_reason(t) == VT_STOP_COMPLETED, "stop reason %d",
          vt_trainer_stop_reason(t));
    const char *dir = vt_trainer_run_dir(t);
    if (rank == 0) {
        CHECK(dir[0] != 0, "rank 0 has no run folder");
        char p[4400];
        struct stat sb;
        snprintf(p, sizeof p, "%s/weights/last.vtm", dir);
        CHECK(stat(p, &sb) == 0, "rank 0 wrote no %s", p);
        snprintf(p, sizeof p, "%s/results.csv", dir);
        CHECK(stat(p, &sb) == 0, "rank 0 wrote no %s", p);
        CHECK(seen.ranks >= 1, "rank 0's log does not name '2 ranks'");
        printf("full run: 2 epochs of cnn-small with validation, EMA, checkpoints and plots "
               "on 2 ranks in %.2f s\n", secs);
    } else {
        CHECK(dir[0] == 0, "rank %d has a run folder %s", rank, dir);
        CHECK(seen.ranks == 0, "rank %d logged the run", rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* one run folder in the project, the one rank 0 made */
    char pdir[4200];
    snprintf(pdir, sizeof pdir, "%s", project);
    CHECK(count_entries(pdir) == 1, "%d entries in %s, want rank 0's run folder only",
          count_entries(pdir), pdir);
    CHECK(vt_model_pull(m) == VT_OK, "pull");
    CHECK(same_everywhere(checksum(m->params, (size_t)m->graph.n_params)),
          "weights differ over the ranks after the run");
    CHECK(same_everywhere(checksum(m->buffers, (size_t)m->graph.n_buffers)),
          "BN statistics differ over the ranks after the run");
    double top1 = -1;
    CHECK(vt_trainer_metric(t, VT_METRIC_TOP1, &top1) == VT_OK, "rank %d has no top-1", rank);
    uint64_t h = checksum((const float *)(const void *)&(float){(float)top1}, 1);
    CHECK(same_everywhere(h), "top-1 differs over the ranks (%g here)", top1);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

/* ---- validation over the ranks ---- */

/* A run of 2 ranks validates its val split in shards (batch i on rank i % 2, the last batch
 * short, so the shards differ in size) and merges them; its last epoch's metrics must be
 * those of one process validating the trained weights alone (vt_trainer_validate, dist=off),
 * on every rank: counts exactly, losses to float rounding (the shards' sums add in another
 * order). */
static void val_equality(int rank, const char *what, vt_task task, const char *model,
                         const char *data_opts, const char *model_opts, const vt_metric *metric,
                         int nm)
{
    char data[4096];
    CHECK(make_task_data(data, sizeof data, what, rank, task, data_opts) == VT_OK, "synth: %s",
          vt_last_error());
    vt_dataset *ds;
    if (vt_dataset_open(&ds, task, data)) {
        CHECK(0, "%s: open: %s", what, vt_last_error());
        return;
    }
    vt_model *m;
    CHECK(vt_model_create(&m, model, vt_dataset_num_classes(ds), model_opts) == VT_OK,
          "%s: model: %s", what, vt_last_error());
    vt_trainer *t;
    CHECK(vt_trainer_create(&t, m, ds) == VT_OK, "%s: trainer", what);
    const char *s[] = {"epochs=2", "batch=4", "seed=1", "workers=0", "save=0", "ema=0",
                       "mosaic=0", "warmup_epochs=0", NULL};
    set_all(t, quiet_aug);
    set_all(t, s);
    double t0 = MPI_Wtime();
    CHECK(vt_trainer_run(t) == VT_OK, "%s: 2-rank run: %s", what, vt_trainer_last_error(t));
    double secs = MPI_Wtime() - t0;
    double dist[32] = {0}, alone[32] = {0};
    for (int i = 0; i < nm; i++)
        CHECK(vt_trainer_metric(t, metric[i], &dist[i]) == VT_OK, "%s: no metric %d", what,
              metric[i]);
    vt_trainer_destroy(t); /* the trained weights to the model */
    vt_trainer *one;
    CHECK(vt_trainer_create(&one, m, ds) == VT_OK, "%s: trainer", what);
    const char *s1[] = {"batch=4", "workers=0", "dist=off", NULL};
    set_all(one, s1);
    CHECK(vt_trainer_validate(one, VT_SPLIT_VAL) == VT_OK, "%s: validate: %s", what,
          vt_trainer_last_error(one));
    int nonzero = 0;
    for (int i = 0; i < nm; i++) {
        CHECK(vt_trainer_metric(one, metric[i], &alone[i]) == VT_OK, "%s: no metric", what);
        double tol = metric[i] == VT_METRIC_VAL_LOSS ? 1e-5 * (fabs(alone[i]) + 1e-3) : 1e-12;
        CHECK(fabs(dist[i] - alone[i]) <= tol, "%s: metric %d over 2 ranks %.9g, alone %.9g",
              what, metric[i], dist[i], alone[i]);
        nonzero += metric[i] != VT_METRIC_VAL_LOSS && alone[i] > 0;
    }
    CHECK(nonzero > 0, "%s: every metric is 0: the check would not see a lost shard", what);
    if (rank == 0) {
        printf("sharded validation (%s): 2 ranks = 1 process:", what);
        for (int i = 0; i < nm; i++) printf(" %.6g", dist[i]);
        printf(" (run %.2f s)\n", secs);
    }
    vt_trainer_destroy(one);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

static void test_sharded_val(int rank)
{
    const vt_metric cls[] = {VT_METRIC_VAL_LOSS, VT_METRIC_TOP1, VT_METRIC_TOP5};
    /* 3 x 7 = 21 val images: batches of 4, 4, 4, 4, 4, 1 (shards of 12 and 9) */
    val_equality(rank, "val_cls", VT_TASK_CLASSIFY, "cnn-small",
                 "classes=3 train=8 val=7 imgsz=16 seed=7", "imgsz=16", cls, 3);
    /* 3 val images, one batch: rank 1's shard is empty */
    val_equality(rank, "val_cls1", VT_TASK_CLASSIFY, "cnn-small",
                 "classes=3 train=8 val=1 imgsz=16 seed=7", "imgsz=16", cls, 3);
    const vt_metric det[] = {VT_METRIC_VAL_LOSS, VT_METRIC_PRECISION, VT_METRIC_RECALL,
                             VT_METRIC_MAP50, VT_METRIC_MAP50_95, VT_METRIC_F1};
    val_equality(rank, "val_det", VT_TASK_DETECT, "det-n",
                 "classes=3 train=24 val=11 imgsz=32 seed=5 max_objects=3", "imgsz=32", det, 6);
    const vt_metric seg[] = {VT_METRIC_VAL_LOSS, VT_METRIC_MIOU, VT_METRIC_PIXEL_ACC};
    val_equality(rank, "val_seg", VT_TASK_SEGMENT, "seg-n",
                 "classes=3 train=16 val=9 imgsz=32 seed=5", "imgsz=32", seg, 3);
    const vt_metric inst[] = {VT_METRIC_VAL_LOSS, VT_METRIC_MAP50_95, VT_METRIC_MASK_MAP50,
                              VT_METRIC_MASK_MAP50_95, VT_METRIC_MASK_RECALL};
    val_equality(rank, "val_iseg", VT_TASK_INSTANCE, "iseg-n",
                 "classes=3 train=10 val=7 imgsz=32 seed=5 max_objects=3", "imgsz=32", inst, 5);
}

/* ---- resume on another rank count ---- */

typedef struct resume_trace {
    vt_trainer *t;
    int64_t cancel_at;  /* cancel at this iteration's batch end; 0 = never */
    int steps;          /* batch ends seen */
    int64_t first, last; /* the iterations of the first and the last step seen */
    double lr[64];      /* the learning rate of iteration i (1-based) */
    long images, seen;  /* the epoch's images trained / of its order reached, at the last step */
    int log_lines;      /* "resuming a 2-rank checkpoint on 1 rank" / "on 2 ranks" */
    const char *want_log;
    char run_dir[4096]; /* the run's folder, "" when none */
    char line[512];     /* the first of those log lines */
} resume_trace;

static int on_resume_progress(void *user, vt_event ev, const vt_progress *p)
{
    resume_trace *r = user;
    if (ev != VT_EVENT_BATCH_END) return 0;
    int64_t it = vt_progress_iteration(p);
    double lr = 0;
    if (vt_progress_metric(p, VT_METRIC_LR, &lr) == VT_OK && it > 0 && it < 64) r->lr[it] = lr;
    if (!r->steps) r->first = it;
    r->last = it;
    r->steps++;
    r->images = r->t->pos.images; /* the trainer's position after the step (trainer_impl.h) */
    r->seen = r->t->pos.seen;
    return r->cancel_at && it == r->cancel_at;
}

static void on_resume_log(void *user, vt_log_level level, const char *msg)
{
    resume_trace *r = user;
    (void)level;
    if (r->want_log && strstr(msg, r->want_log) && !r->log_lines++)
        snprintf(r->line, sizeof r->line, "%s", msg);
}

/* A run of cls-n (imgsz 16, seed 3) traced by r; its status, and its weights into *w on
 * success.  A registered model: resume= finds its architecture by name. */
static vt_status train_traced(const char *data, const char *const *settings, resume_trace *r,
                              float **w, int *n)
{
    vt_dataset *ds;
    vt_model *m;
    *w = NULL;
    vt_status st = vt_dataset_open(&ds, VT_TASK_CLASSIFY, data);
    if (st) return st;
    if ((st = vt_model_create(&m, "cls-n", vt_dataset_num_classes(ds), "imgsz=16 seed=3"))) {
        vt_dataset_destroy(ds);
        return st;
    }
    if ((st = vt_trainer_create(&r->t, m, ds))) {
        vt_model_destroy(m);
        vt_dataset_destroy(ds);
        return st;
    }
    set_all(r->t, quiet_aug);
    set_all(r->t, settings);
    vt_trainer_set_progress(r->t, on_resume_progress, r);
    vt_trainer_set_log(r->t, on_resume_log, r, VT_LOG_INFO);
    st = vt_trainer_run(r->t);
    if (st && st != VT_ERR_CANCELLED)
        fprintf(stderr, "rank %d: run: %s\n", my_rank, vt_trainer_last_error(r->t));
    snprintf(r->run_dir, sizeof r->run_dir, "%s", vt_trainer_run_dir(r->t));
    vt_trainer_destroy(r->t);
    r->t = NULL;
    if (!st || st == VT_ERR_CANCELLED) {
        *n = (int)m->graph.n_params;
        *w = malloc((size_t)*n * sizeof(float));
        memcpy(*w, m->params, (size_t)*n * sizeof(float));
    }
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    return st;
}

static double max_diff(const float *a, const float *b, int n, double *maxw)
{
    double d = 0;
    *maxw = 0;
    for (int i = 0; i < n; i++) {
        if (fabs((double)a[i] - b[i]) > d) d = fabs((double)a[i] - b[i]);
        if (fabs(b[i]) > *maxw) *maxw = fabs(b[i]);
    }
    return d;
}

/* A copy of checkpoint `from` as a library before the world size was recorded wrote it: the
 * TRNR keys world, global_batch, epoch_nb, seen and lr_shift left out. */
static vt_status strip_world(const char *from, const char *to)
{
    static const char tags[][5] = {"META", "NAME", "PARM", "BUFS", "TRNR", "ARGS",
                                   "OPTM", "OPTV", "TPRM", "TBUF", "HIST"};
    static const char *const drop[] = {"world=", "global_batch=", "epoch_nb=", "seen=",
                                       "lr_shift="};
    vt_ckpt *c = NULL;
    vt_ckpt_writer *w = NULL;
    vt_status st = vt_ckpt_open(&c, from);
    if (!st) st = vt_ckw_create(&w);
    for (size_t i = 0; !st && i < sizeof tags / sizeof tags[0]; i++) {
        uint32_t tag = VT_TAG(tags[i][0], tags[i][1], tags[i][2], tags[i][3]);
        if (!vt_ckpt_has(c, tag)) continue;
        void *data = NULL;
        size_t n = 0;
        if ((st = vt_ckpt_get(c, tag, &data, &n))) break;
        if (!strcmp(tags[i], "TRNR")) { /* its lines less the new keys */
            char *txt = data, *out = malloc(n + 1);
            size_t k = 0;
            for (size_t p = 0; out && p < n;) {
                size_t e = p;
                while (e < n && txt[e] != '\n') e++;
                int keep = 1;
                for (size_t d = 0; d < sizeof drop / sizeof drop[0]; d++)
                    if (!strncmp(txt + p, drop[d], strlen(drop[d]))) keep = 0;
                if (keep) {
                    memcpy(out + k, txt + p, e - p + (e < n));
                    k += e - p + (e < n);
                }
                p = e + 1;
            }
            free(data);
            data = out;
            n = k;
            if (!out) st = VT_ERR_OUT_OF_MEMORY;
        }
        if (!st) st = vt_ckw_add(w, tag, data, n, 0);
        free(data);
    }
    if (!st) st = vt_ckw_write(w, to);
    vt_ckw_destroy(w);
    vt_ckpt_close(c);
    return st;
}

/* 44 images, 2 epochs of 6 steps of 4 x 2 ranks (the last a trailing one of 2 a rank), cls-n
 * (batch norm: resume= needs a registered model, and the plain test models are not):
 *   A  uninterrupted on 2 ranks;
 *   B  the same, cancelled after iteration 8 (epoch 2, step 2: 16 of its 44 images trained);
 *      its last.vtm is the mid-epoch checkpoint resumed below;
 *   C  B resumed on 2 ranks: steps 9..12 of A, the weights of A (the same computation);
 *   D  B resumed alone (dist=off on each rank) with batch 8: 4 steps of the remaining 28
 *      images (3 of 8, a trailing one of 4), A's learning rates; its weights are not A's
 *      (batch norm normalises over 8 images, not each rank's 4), the difference is printed;
 *   E  B resumed alone with batch 4: the remaining 28 images in 7 steps (11 an epoch now),
 *      each image of the epoch trained once (44 in all), the learning rate continuing at
 *      A's (epoch 1 + 2/6 of the schedule);
 *   F  B's checkpoint as older libraries wrote it (no world, seen, ...): read as one rank's; it
 *      resumes inside the epoch with the same batches per epoch (alone x 8: D's weights bit for
 *      bit) and is refused with another count (alone x 4, 11 an epoch) with a message;
 *   G  a 2-rank run cancelled at the last step of epoch 1 (it stops at the epoch end, all
 *      ranks together), resumed alone x 4: epoch 2 whole, its 44 images in 11 steps, the
 *      learning rate going on from A's epoch 1 end. */
static void test_resume(int rank)
{
    char data[4096], project[4096], ckpt[4400], cut[4400];
    CHECK(make_data(data, sizeof data, "res", rank, "classes=4 train=11 val=0 imgsz=16 seed=5") ==
              VT_OK, "synth: %s", vt_last_error());
    snprintf(project, sizeof project, "%s/dist_resume_runs", tmp_root());
    if (rank == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", project);
        CHECK(system(cmd) == 0, "rm");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char proj_opt[4200];
    snprintf(proj_opt, sizeof proj_opt, "project=%s", project);
    snprintf(cut, sizeof cut, "%s/cut.vtm", project);
    const char *common[] = {"epochs=2", "batch=4", "momentum=0.9", "warmup_epochs=0", "seed=1",
                            "lr0=0.05", "val=0", "workers=0", "save=0", NULL};
    const char *saving[] = {"epochs=2", "batch=4", "momentum=0.9", "warmup_epochs=0", "seed=1",
                            "lr0=0.05", "val=0", "workers=0", "plots=0", "name=cut", proj_opt,
                            NULL};
    float *wa = NULL, *wb = NULL, *wc = NULL, *wd = NULL, *we = NULL;
    int na = 0, nb = 0, nc = 0, nd = 0, ne = 0;
    resume_trace a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
    double t0 = MPI_Wtime();
    CHECK(train_traced(data, common, &a, &wa, &na) == VT_OK, "A: %s", vt_last_error());
    double t_a = MPI_Wtime() - t0;
    b.cancel_at = 8;
    vt_status st = train_traced(data, saving, &b, &wb, &nb);
    CHECK(st == VT_ERR_CANCELLED, "B: status %d (want cancelled): %s", st, vt_last_error());
    if (rank == 0) {
        CHECK(b.last == 8, "B: cancelled after iteration %lld, want 8", (long long)b.last);
        snprintf(ckpt, sizeof ckpt, "%s/weights/last.vtm", b.run_dir);
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", ckpt, cut);
        CHECK(system(cmd) == 0, "B: no checkpoint %s", ckpt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char res_opt[4500];
    snprintf(res_opt, sizeof res_opt, "resume=%s", cut);
    const char *on2[] = {res_opt, "save=0", "workers=0", NULL};
    c.want_log = "resuming a 2-rank"; /* must not appear: same world */
    t0 = MPI_Wtime();
    CHECK(train_traced(data, on2, &c, &wc, &nc) == VT_OK, "C: %s", vt_last_error());
    double t_c = MPI_Wtime() - t0;
    const char *alone8[] = {res_opt, "save=0", "workers=0", "dist=off", "batch=8", NULL};
    d.want_log = "resuming a 2-rank checkpoint on 1 rank";
    CHECK(train_traced(data, alone8, &d, &wd, &nd) == VT_OK, "D: %s", vt_last_error());
    const char *alone4[] = {res_opt, "save=0", "workers=0", "dist=off", "batch=4", NULL};
    e.want_log = "resuming a 2-rank checkpoint on 1 rank";
    CHECK(train_traced(data, alone4, &e, &we, &ne) == VT_OK, "E: %s", vt_last_error());
    /* F: the older checkpoint */
    char old[4500], old_opt[4600];
    snprintf(old, sizeof old, "%s/old_r%d.vtm", project, rank);
    snprintf(old_opt, sizeof old_opt, "resume=%s", old);
    CHECK(strip_world(cut, old) == VT_OK, "F: cannot write %s: %s", old, vt_last_error());
    const char *old8[] = {old_opt, "save=0", "workers=0", "dist=off", "batch=8", NULL};
    const char *old4[] = {old_opt, "save=0", "workers=0", "dist=off", "batch=4", NULL};
    resume_trace f8 = {0}, f4 = {0};
    float *wf = NULL, *wf4 = NULL;
    int nf = 0, nf4 = 0;
    CHECK(train_traced(data, old8, &f8, &wf, &nf) == VT_OK, "F x 8: %s", vt_last_error());
    CHECK(f8.steps == 4 && f8.first == 9 && f8.images == 44, "F x 8: %d steps from iteration "
          "%lld, %ld images", f8.steps, (long long)f8.first, f8.images);
    CHECK(wf && wd && nf == nd && !memcmp(wf, wd, (size_t)nf * sizeof(float)),
          "F x 8: the older checkpoint's resume differs from D's");
    st = train_traced(data, old4, &f4, &wf4, &nf4);
    CHECK(st == VT_ERR_CHECKPOINT && strstr(vt_last_error(), "inside an epoch of 6 batches") &&
          strstr(vt_last_error(), "11 batches per epoch"),
          "F x 4: status %d, '%s' (want a refusal: another batch count, no record)", st,
          vt_last_error());
    free(wf);
    free(wf4);
    /* G: an epoch-end checkpoint of 2 ranks resumed alone */
    const char *saving_g[] = {"epochs=2", "batch=4", "momentum=0.9", "warmup_epochs=0",
                              "seed=1", "lr0=0.05", "val=0", "workers=0", "plots=0",
                              "name=end", proj_opt, NULL};
    resume_trace g = {0}, g1 = {0};
    float *wg = NULL, *wg1 = NULL;
    int ng = 0, ng1 = 0;
    g.cancel_at = 6;
    st = train_traced(data, saving_g, &g, &wg, &ng);
    CHECK(st == VT_ERR_CANCELLED, "G: status %d (want cancelled): %s", st, vt_last_error());
    char end_ckpt[4600], end_opt[4700];
    if (rank == 0) {
        CHECK(g.last == 6, "G: cancelled after iteration %lld, want 6", (long long)g.last);
        snprintf(end_ckpt, sizeof end_ckpt, "%s/weights/last.vtm", g.run_dir);
    }
    MPI_Bcast(end_ckpt, sizeof end_ckpt, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(end_opt, sizeof end_opt, "resume=%s", end_ckpt);
    const char *end4[] = {end_opt, "save=0", "workers=0", "dist=off", "batch=4", NULL};
    g1.want_log = "resuming a 2-rank checkpoint on 1 rank";
    CHECK(train_traced(data, end4, &g1, &wg1, &ng1) == VT_OK, "G: resume: %s", vt_last_error());
    CHECK(g1.steps == 11 && g1.first == 7 && g1.last == 17 && g1.images == 44,
          "G: %d steps, iterations %lld..%lld, %ld images (want 11, 7..17, 44)", g1.steps,
          (long long)g1.first, (long long)g1.last, g1.images);
    CHECK(g1.log_lines == 1 && strstr(g1.line, "from an epoch end"), "G: log '%s'", g1.line);
    if (rank == 0)
        CHECK(fabs(g1.lr[7] - a.lr[7]) <= 1e-12, "G: lr %.17g at its first step, A's %.17g",
              g1.lr[7], a.lr[7]);
    free(wg);
    free(wg1);
    if (!wa || !wc || !wd || !we || na != nc || na != nd || na != ne) goto out;
    double maxw, dc = max_diff(wc, wa, na, &maxw), dd = max_diff(wd, wa, na, &maxw);
    double de = max_diff(we, wa, na, &maxw), tol = 1e-4 * (maxw > 1 ? maxw : 1);
    CHECK(dc <= tol, "C (2 ranks, resumed) vs A: max |dw| %.3g > %.3g", dc, tol);
    CHECK(isfinite(dd), "D: weights not finite");
    CHECK(same_everywhere(checksum(wc, (size_t)nc)), "C: replicas differ after the resume");
    /* E trains other steps (batch 4): its weights differ from A's by about an update */
    CHECK(de > 100 * tol && isfinite(de), "E (1 x 4) hardly differs from A (%.3g)", de);
    /* rank 0 reports the distributed runs (A, C); every rank its own D and E */
    if (rank == 0) {
        CHECK(a.steps == 12 && a.last == 12, "A: %d steps, last iteration %lld", a.steps,
              (long long)a.last);
        CHECK(c.steps == 4 && c.first == 9 && c.last == 12, "C: %d steps, iterations %lld..%lld",
              c.steps, (long long)c.first, (long long)c.last);
        CHECK(c.images == 44 && c.seen == 44, "C: epoch 2 trained %ld images (order reached %ld), "
              "want 44", c.images, c.seen);
        CHECK(c.log_lines == 0, "C: logged a rank-count change on the same world");
        for (int i = 9; i <= 12; i++)
            CHECK(c.lr[i] == a.lr[i], "C: lr at iteration %d %.17g, A's %.17g", i, c.lr[i],
                  a.lr[i]);
    }
    CHECK(d.steps == 4 && d.first == 9 && d.last == 12, "D: %d steps, iterations %lld..%lld",
          d.steps, (long long)d.first, (long long)d.last);
    CHECK(d.images == 44 && d.seen == 44, "D: epoch 2 trained %ld images, want 44", d.images);
    CHECK(d.log_lines == 1, "D: %d log lines '%s'", d.log_lines, d.want_log);
    CHECK(e.steps == 7 && e.first == 9 && e.last == 15, "E: %d steps, iterations %lld..%lld",
          e.steps, (long long)e.first, (long long)e.last);
    CHECK(e.images == 44 && e.seen == 44, "E: epoch 2 trained %ld images (order reached %ld), "
          "want 44", e.images, e.seen);
    CHECK(e.log_lines == 1, "E: %d log lines '%s'", e.log_lines, e.want_log);
    /* A's rates, every rank's own: the 1-process runs see no callback of the 2-rank ones on
     * ranks > 0, so the comparison is rank 0's */
    if (rank == 0) {
        for (int i = 9; i <= 12; i++)
            CHECK(fabs(d.lr[i] - a.lr[i]) <= 1e-12, "D: lr at iteration %d %.17g, A's %.17g",
                  i, d.lr[i], a.lr[i]);
        CHECK(fabs(e.lr[9] - a.lr[9]) <= 1e-12 && e.lr[15] < e.lr[9],
              "E: lr %.17g at its first step (A's %.17g), %.17g at its last", e.lr[9], a.lr[9],
              e.lr[15]);
        printf("resume: a 2-rank run cancelled mid-epoch (iteration 8, 16 of 44 images), "
               "resumed on 2 ranks: max |w - w(uninterrupted)| = %.3g; on 1 rank x batch 8: "
               "4 steps, %.3g (batch norm over 8; tolerance of the 2-rank one %.3g); on 1 rank "
               "x batch 4: 7 steps, 44 images, differs by %.3g; uninterrupted run %.2f s, "
               "2-rank resume %.2f s\n",
               dc, dd, tol, de, t_a, t_c);
        printf("resume: the log of E: %s\n", e.line);
    }
out:
    free(wa);
    free(wb);
    free(wc);
    free(wd);
    free(we);
}

static int run_mpi(void)
{
    vt_launch L;
    vt_comm_launch(&L);
    int size = L.size, rank = L.rank;
    if (size != 2 || !L.via_mpi) {
        fprintf(stderr, "test_dist mpi: run under 'mpirun -np 2' (world %d)\n", size);
        return 77;
    }
    my_rank = rank;
    test_equality(rank); /* the first run starts MPI */
    test_every_step(rank);
    test_plan_mismatch(rank);
    test_full_run(rank);
    test_sharded_val(rank);
    test_resume(rank);
    int bad = failures;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("dist: %s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0; /* MPI is finalized at exit by the library, which started it */
}

/* GPU ranks (NOT YET RUN: it needs a host with two GPUs): 2 ranks on GPUs 0 and 1 over NCCL,
 * NCCL's id handed out through MPI, train as one process on GPU 0 with the whole batch
 * (classification, detection), the replicas agree after every step, and sync_bn=1 is refused
 * on both ranks with the reason. */
static int run_gpu(void)
{
    vt_launch L;
    vt_comm_launch(&L);
    if (L.size != 2 || !L.via_mpi) {
        fprintf(stderr, "test_dist gpu: run under 'mpirun -np 2' (world %d)\n", L.size);
        return 77;
    }
    my_rank = L.rank;
    gpu_mode = 1;
    const char *cls[] = {"lr0=0.05", NULL};
    equality(L.rank, "gpu eq", &plain_spec, "classes=4 train=11 val=0 imgsz=16 seed=5",
             "imgsz=16 seed=3", cls);
    const char *det[] = {"lr0=0.01",   "optimizer=sgd", "mosaic=0", "mixup=0",   "degrees=0",
                         "translate=0", "scale=0",      "fliplr=0", "hsv_h=0",   "hsv_s=0",
                         "hsv_v=0",    "close_mosaic=0", NULL};
    equality(L.rank, "gpu det", &plain_det_spec, "classes=3 train=44 val=0 imgsz=32 seed=5 "
             "max_objects=3", "imgsz=32 seed=3", det);
    char data[4096];
    CHECK(make_data(data, sizeof data, "gpu_bn", L.rank, "classes=2 train=8 val=0 imgsz=16") ==
              VT_OK, "synth: %s", vt_last_error());
    const char *sbn[] = {"epochs=1", "batch=4", "save=0", "val=0", "workers=0", "device=0,1",
                         "sync_bn=1", NULL};
    float *w = NULL;
    int n = 0;
    vt_status st = train_plain(data, sbn, &w, &n);
    CHECK(st == VT_ERR_UNSUPPORTED && strstr(vt_last_error(), "sync_bn=1 runs on CPU ranks"),
          "sync_bn=1 on GPU ranks: status %d, '%s'", st, vt_last_error());
    free(w);
    int bad = failures;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (L.rank == 0) printf("dist gpu: %s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}

/* A rank that never joins a collective (here: rank 1 sleeps, then ends without it): rank 0's
 * all-reduce gives up after VT_DIST_TIMEOUT (set to 1.5 s by the caller) with a message
 * instead of waiting forever.  Prints "timeout: ok (...)" on rank 0; the job then ends with
 * mpirun's report (rank 0 leaves MPI unfinalized, by design), so the caller reads the output,
 * not the exit code (tests/meson.build: dist_timeout). */
static int run_timeout(void)
{
    vt_launch L;
    vt_comm_launch(&L);
    if (L.size != 2 || !L.via_mpi) return 77;
    vt_backend *be = NULL;
    vt_comm *c = NULL;
    if (vt_backend_cpu_create(&be, 1) || vt_comm_open(&c, be) || !c) {
        fprintf(stderr, "rank %d: %s\n", L.rank, vt_last_error());
        return 1;
    }
    double v[1] = {1};
    int bad = 0;
    if (c->ops->allreduce_host(c, v, 1, VT_COMM_SUM) || v[0] != 2) bad = 1; /* both join */
    if (L.rank == 1) {
        sleep(4); /* rank 0 gives up meanwhile */
        return bad;
    }
    double t0 = MPI_Wtime();
    vt_status st = c->ops->allreduce_host(c, v, 1, VT_COMM_SUM);
    double took = MPI_Wtime() - t0;
    char first[512];
    snprintf(first, sizeof first, "%s", vt_last_error());
    vt_status again = c->ops->allreduce_host(c, v, 1, VT_COMM_SUM); /* at once: dead */
    int dead = again == VT_ERR_IO && strstr(vt_last_error(), "earlier collective timed out");
    vt_comm *c2 = NULL; /* and no new communicator (MPI would wait for the pending one) */
    vt_status reopen = vt_comm_mpi_open(&c2);
    dead = dead && reopen == VT_ERR_BAD_STATE && !c2;
    if (!bad && st == VT_ERR_IO && strstr(first, "VT_DIST_TIMEOUT") && dead && took > 1.2 &&
        took < 4)
        printf("timeout: ok (gave up after %.2f s: %s)\n", took, first);
    else
        printf("timeout: FAILED (status %d after %.2f s: %s; then %d: %s)\n", st, took, first,
               again, vt_last_error());
    fflush(stdout);
    return 0;
}

#endif

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "env") == 0) return run_env();
    /* `test_dist gpus`: 0 when this host has the two GPUs `gpu` needs, else 77 (skipped) */
    if (argc > 1 && strcmp(argv[1], "gpus") == 0) {
        int n = vt_device_count();
        if (n < 2) printf("test_dist gpu: needs 2 GPUs, this host has %d: skipped\n", n);
        return n >= 2 ? 0 : 77;
    }
#if VT_HAVE_MPI
    if (argc > 1 && strcmp(argv[1], "mpi") == 0) return run_mpi();
    if (argc > 1 && strcmp(argv[1], "gpu") == 0) return run_gpu();
    if (argc > 1 && strcmp(argv[1], "timeout") == 0) return run_timeout();
#endif
    fprintf(stderr, "usage: test_dist env | gpus | mpi | gpu (mpi, gpu: under mpirun -np 2, a "
            "build with MPI)\n");
    return 77;
}
