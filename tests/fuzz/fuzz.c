/* libFuzzer harness for the library's file readers: every input must give VT_OK or an error
 * status, never a crash, a sanitizer report, a leak or a hang.  One program, the target chosen
 * by $VT_FUZZ (see scripts/fuzz.sh, which builds it with clang and runs each target):
 *   catalog    GPU catalog CSV             (vt_catalog_load_csv)
 *   calib      estimator calibration file  (vt_estimator_load_calibration)
 *   image      PNG / JPEG bytes            (vt_image_decode, vt_image_decode_scaled)
 *   estimate   estimator settings, one "key=value" a line (vt_estimator_set), then
 *              vt_estimator_run, every result and every ranking
 *   yaml       a detection data.yaml       (vt_dataset_open and vt_dataset_validate, detect)
 *   labels     a YOLO label file           (the same)
 *   seglabels  a YOLO polygon label file   (the same, VT_TASK_SEGMENT)
 *   coco       a COCO instances JSON       (the same, detect)
 *   masks      a segmentation mask PNG     (the same, VT_TASK_SEGMENT with `masks: masks`,
 *              opened with decode=1, validated, vt_dataset_mask on each training image)
 *   model      a model / checkpoint file   (vt_model_load)
 *   modelsec   the sections of a model file, wrapped by the harness in a valid container (right
 *              CRCs) so that the fuzzer reaches what the checks guard: the input is records
 *              of a 4-byte tag, a u32 little-endian length and that many bytes
 *   resume     the same, read as a training checkpoint to resume (vt_train_load: the trainer
 *              state, arguments, optimiser moments, EMA and results history), for a cnn-small
 *              trainer on a synthetic dataset (scripts/fuzz.sh trains the seed checkpoint on the
 *              same dataset)
 * Inputs go to files under a private scratch folder (the readers take paths). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "image/image.h"
#include "train/trainer_impl.h"
#include "visiontrain/visiontrain.h"

static char root[256];
static const char *target;
static vt_dataset *resume_ds; /* "resume": the dataset and model every trainer is made of */
static vt_model *resume_model;

/* The synthetic dataset of the "resume" target; scripts/fuzz.sh makes its seed on the same. */
#define RESUME_SYNTH "classes=2 train=8 val=2 imgsz=16"

static void put(const char *rel, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "wb");
    if (!f) abort(); /* the harness's own failure, not the library's */
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
}

static const char *at(const char *rel)
{
    static char path[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof path[k], "%s/%s", root, rel);
    return path[k];
}

static void dir(const char *rel) { mkdir(at(rel), 0755); }

/* An 8x8 gray PNG, written through the library. */
static void png(const char *rel)
{
    uint8_t px[64];
    for (int i = 0; i < 64; i++) px[i] = (uint8_t)(i * 4);
    if (vt_image_save_png(at(rel), px, 8, 8, 1, 8)) abort();
}

/* v as `bytes` little-endian bytes at p (the container's integers). */
static void le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* "modelsec": the records of `data` as the sections of a checkpoint container (format 1,
 * uncompressed), written to m.vtm. */
static void put_container(const uint8_t *data, size_t size)
{
    size_t cap = 16 + 4 + size + 32 * (size / 8 + 1), n = 16;
    uint8_t *out = malloc(cap);
    if (!out) abort();
    memcpy(out, "VTCKPT\r\n", 8);
    le(out + 8, 1, 4);
    uint32_t count = 0;
    size_t i = 0;
    while (i + 8 <= size) {
        uint32_t len = (uint32_t)data[i + 4] | (uint32_t)data[i + 5] << 8 |
                       (uint32_t)data[i + 6] << 16 | (uint32_t)data[i + 7] << 24;
        if (len > size - i - 8) len = (uint32_t)(size - i - 8);
        const uint8_t *d = data + i + 8;
        memcpy(out + n, data + i, 4);
        le(out + n + 4, 0, 4);
        le(out + n + 8, len, 8);
        le(out + n + 16, len, 8);
        le(out + n + 24, (uint32_t)crc32(crc32(0L, Z_NULL, 0), d, len), 4);
        memcpy(out + n + 28, d, len);
        n += 28 + len;
        i += 8 + len;
        count++;
    }
    le(out + 12, count, 4);
    le(out + n, (uint32_t)crc32(crc32(0L, Z_NULL, 0), out, (uInt)n), 4);
    put("m.vtm", out, n + 4);
    free(out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    target = getenv("VT_FUZZ");
    if (!target) {
        fprintf(stderr, "fuzz: set VT_FUZZ to catalog, calib, image, yaml, labels, seglabels, "
                        "coco, masks, estimate, model, modelsec or resume\n");
        exit(2);
    }
    snprintf(root, sizeof root, "/tmp/vt-fuzz-%s-%d", target, (int)getpid());
    mkdir(root, 0755);
    /* a detection / segmentation dataset around the fuzzed file */
    dir("images"), dir("images/train"), dir("labels"), dir("labels/train");
    png("images/train/a.png");
    png("images/train/b.png");
    png("images/a.png"); /* the COCO file's images: images/ beside instances_train.json */
    png("images/b.png");
    static const char yaml[] = "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n";
    static const char lab[] = "0 0.5 0.5 0.2 0.2\n";
    if (!strcmp(target, "masks")) { /* a mask-PNG segmentation dataset: b's mask is valid */
        static const char seg[] = "path: .\ntrain: images/train\nval: images/train\n"
                                  "masks: masks\nnames: [background, a]\n";
        put("data.yaml", seg, sizeof seg - 1);
        dir("masks"), dir("masks/train");
        uint8_t m[64];
        for (int i = 0; i < 64; i++) m[i] = (uint8_t)(i < 60 ? i % 2 : 255);
        if (vt_image_save_png(at("masks/train/b.png"), m, 8, 8, 1, 8)) abort();
    } else if (strcmp(target, "yaml")) {
        put("data.yaml", yaml, sizeof yaml - 1);
    }
    put("labels/train/b.txt", lab, sizeof lab - 1);
    if (!strcmp(target, "resume")) {
        const char *cls = at("cls");
        if (vt_synth_generate(cls, VT_TASK_CLASSIFY, RESUME_SYNTH) ||
            vt_dataset_open(&resume_ds, VT_TASK_CLASSIFY, cls) ||
            vt_model_create(&resume_model, "cnn-small", 2, "imgsz=16")) {
            fprintf(stderr, "fuzz: resume set-up: %s\n", vt_last_error());
            exit(2);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!strcmp(target, "catalog")) {
        put("c.csv", data, size);
        vt_catalog *c;
        if (vt_catalog_create(&c) == VT_OK) {
            vt_catalog_load_csv(c, at("c.csv"));
            vt_catalog_destroy(c);
        }
    } else if (!strcmp(target, "calib")) {
        put("cal.txt", data, size);
        vt_estimator *e;
        if (vt_estimator_create(&e) == VT_OK) {
            vt_estimator_load_calibration(e, at("cal.txt"));
            vt_estimator_destroy(e);
        }
    } else if (!strcmp(target, "estimate")) {
        char *text = malloc(size + 1);
        vt_estimator *e;
        if (!text) abort();
        memcpy(text, data, size);
        text[size] = 0;
        if (vt_estimator_create(&e) == VT_OK) {
            for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next) *next++ = 0;
                vt_estimator_set(e, line);
            }
            double v;
            if (vt_estimator_run(e) == VT_OK)
                for (int r = VT_EST_STEP_SECONDS; r <= VT_EST_USD_PER_HOUR; r++)
                    vt_estimator_result(e, (vt_est_result)r, &v);
            int order[64], count;
            for (int by = VT_RANK_COST; by <= VT_RANK_TIME_WITHIN_BUDGET; by++)
                if (vt_estimator_rank(e, (vt_rank_by)by, order, 64, &count) == VT_OK)
                    for (int k = 0; k < count && k < 64; k++)
                        vt_estimator_rank_result(e, order[k], VT_EST_COST_USD, &v);
            vt_estimator_destroy(e);
        }
        free(text);
    } else if (!strcmp(target, "image")) {
        vt_image img;
        memset(&img, 0, sizeof img);
        if (vt_image_decode(data, size, "fuzz", &img) == VT_OK) vt_image_free(&img);
        memset(&img, 0, sizeof img);
        if (vt_image_decode_scaled(data, size, "fuzz", 16, 16, 1, &img) == VT_OK)
            vt_image_free(&img);
    } else if (!strcmp(target, "resume")) {
        put_container(data, size);
        vt_trainer *t;
        if (vt_trainer_create(&t, resume_model, resume_ds) == VT_OK) {
            vt_trainer_set(t, "workers=0");
            vt_results_free(&t->results); /* as vt_trainer_run does before loading */
            vt_results_init(&t->results, vt_task_find(VT_TASK_CLASSIFY));
            vt_resume_state rs;
            memset(&rs, 0, sizeof rs);
            vt_status st = vt_train_load(t, at("m.vtm"), &rs);
            if (getenv("VT_FUZZ_VERBOSE")) /* to check that a seed loads */
                fprintf(stderr, "resume: %s\n", st ? vt_last_error() : "loaded");
            vt_resume_state_free(&rs);
            vt_trainer_destroy(t);
        }
    } else if (!strcmp(target, "model") || !strcmp(target, "modelsec")) {
        if (target[5]) put_container(data, size);
        else put("m.vtm", data, size);
        vt_model *m;
        if (vt_model_load(&m, at("m.vtm")) == VT_OK) vt_model_destroy(m);
    } else {
        vt_task task = VT_TASK_DETECT;
        const char *open = at("data.yaml");
        if (!strcmp(target, "yaml")) put("data.yaml", data, size);
        else if (!strcmp(target, "labels")) put("labels/train/a.txt", data, size);
        else if (!strcmp(target, "seglabels")) {
            put("labels/train/a.txt", data, size);
            task = VT_TASK_SEGMENT;
        } else if (!strcmp(target, "coco")) {
            put("instances_train.json", data, size);
            open = at("instances_train.json");
        } else if (!strcmp(target, "masks")) {
            put("masks/train/a.png", data, size);
            task = VT_TASK_SEGMENT;
        } else {
            fprintf(stderr, "fuzz: unknown VT_FUZZ=%s\n", target);
            exit(2);
        }
        vt_dataset *ds;
        /* masks: decode=1 decodes every mask on opening (policy drop keeps a bad one's image) */
        const char *how = strcmp(target, "masks") ? NULL : "decode=1 policy=drop min_size=1";
        vt_status st = vt_dataset_open_ex(&ds, task, open, how);
        if (getenv("VT_FUZZ_VERBOSE")) /* to check that a seed opens */
            fprintf(stderr, "%s: %s\n", target, st ? vt_last_error() : "opened");
        if (st == VT_OK) {
            if (task == VT_TASK_SEGMENT) { /* the masks as the loader reads them */
                for (int i = 0; i < vt_dataset_num_images(ds, VT_SPLIT_TRAIN); i++) {
                    int w, h;
                    if (vt_dataset_image_size(ds, VT_SPLIT_TRAIN, i, &w, &h)) continue;
                    uint8_t *m = malloc((size_t)w * h);
                    if (!m) abort();
                    st = vt_dataset_mask(ds, VT_SPLIT_TRAIN, i, m, w, h);
                    if (getenv("VT_FUZZ_VERBOSE"))
                        fprintf(stderr, "mask %d: %s\n", i, st ? vt_last_error() : "read");
                    free(m);
                }
            }
            vt_dataset_destroy(ds);
        }
        /* the validator goes on past problems that stop opening, and reports each (min_size=1:
         * the harness's images are 8x8, under the default 10) */
        vt_report *r;
        if (vt_dataset_validate(&r, task, open, "workers=1 min_size=1") == VT_OK) {
            for (int k = 0; k < vt_report_num_problems(r); k++) {
                const char *file, *msg;
                int line, code;
                if (vt_report_problem(r, k, &file, &line, &code, &msg) == VT_OK &&
                    strlen(file) + strlen(msg) == (size_t)-1)
                    abort();
            }
            for (int i = 0; i < vt_report_num_classes(r); i++) (void)vt_report_class_name(r, i);
            vt_report_destroy(r);
        }
    }
    return 0;
}
