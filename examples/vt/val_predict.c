/* vt val and vt predict (classification, detection, segmentation and instance segmentation). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_cli.h"

/* ---- val ---------------------------------------------------------------------------------- */

/* The trainer options validation uses (vt_trainer_validate: the batch, image size, device,
 * precision and loader threads); any other training key would be accepted and do nothing. */
static const char *const val_trainer_keys[] = {"batch", "imgsz", "device", "precision", "workers"};
#define VAL_KEYS \
    "model, data, split, policy, min_size, decode, quiet, batch, imgsz, device, precision, " \
    "workers"

int cmd_val(args *a)
{
    const char *cmd = a->cmd;
    const char *model = take(a, "model"), *data = take(a, "data"), *split = take(a, "split");
    int quiet = 0; /* quiet=1: nothing but errors (the exit status says how it went) */
    if (flag_value(cmd, "quiet", take(a, "quiet"), &quiet)) return EXIT_USAGE;
    if (!model || !data) {
        fprintf(stderr, "vt val: model=FILE and data=DIR are required (see 'vt help val')\n");
        return EXIT_USAGE;
    }
    vt_split sp = VT_SPLIT_VAL;
    if (split) {
        if (!strcmp(split, "train")) sp = VT_SPLIT_TRAIN;
        else if (!strcmp(split, "val")) sp = VT_SPLIT_VAL;
        else if (!strcmp(split, "test")) sp = VT_SPLIT_TEST;
        else {
            fprintf(stderr, "vt val: split=%s: valid values: train, val, test\n", split);
            return EXIT_USAGE;
        }
    }
    vt_model *m = NULL;
    vt_dataset *ds = NULL;
    vt_trainer *t = NULL;
    int rc;
    data_info di;
    if (take_data_keys(cmd, a, &di)) return EXIT_USAGE;
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        int used = 0;
        for (size_t k = 0; k < sizeof val_trainer_keys / sizeof *val_trainer_keys; k++)
            used |= key_is(&a->kv[i], val_trainer_keys[k]);
        if (!used) {
            fprintf(stderr, "vt val: key '%.*s' does not apply to validation (the whole %s split "
                    "is evaluated); valid keys: %s\n", (int)a->kv[i].klen, a->kv[i].arg,
                    split ? split : "val", VAL_KEYS);
            return EXIT_USAGE;
        }
    }
    if ((rc = check_trainer_keys(a, VAL_KEYS))) return rc;
    vt_status st = vt_model_load(&m, model);
    if (st) return fail(cmd, st, NULL);
    if ((rc = open_data(cmd, &di, vt_model_task(m), data, &ds))) goto out;
    if (vt_dataset_num_problems(ds) && !quiet) { /* to stderr: the problems are warnings */
        char where[4300];
        snprintf(where, sizeof where, "'vt check data=%s' lists them", data);
        int np = vt_dataset_num_problems(ds);
        print_data_summary(ds, data, &di, np > DATA_SUMMARY_ALL ? where : NULL);
    }
    if (vt_dataset_num_images(ds, sp) == 0) {
        fprintf(stderr, "vt val: %s has no %s split\n", data, split ? split : "val");
        rc = EXIT_DATA;
        goto out;
    }
    if ((rc = make_trainer(cmd, m, ds, a, VAL_KEYS, &t))) goto out;
    vt_trainer_set_log(t, log_cb, NULL, quiet ? VT_LOG_ERROR : VT_LOG_WARNING);
    double t0 = now_s();
    if ((st = vt_trainer_validate(t, sp))) {
        rc = fail(cmd, st, vt_trainer_last_error(t));
        goto out;
    }
    if (quiet) goto out;
    /* loss and the task's metrics (vt_task_metrics), then the per-class AP of a task that has
     * them (detection) */
    double v = NAN;
    vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &v);
    printf("%s (%d images): loss %.4f", split ? split : "val", vt_dataset_num_images(ds, sp), v);
    vt_metric ms[16];
    int nm = vt_task_metrics(vt_model_task(m), ms, 16);
    for (int i = 0; i < nm && i < 16; i++) {
        v = NAN;
        vt_trainer_metric(t, ms[i], &v);
        printf("  %s %.4f", metric_words(ms[i]), v);
    }
    printf("  (%.1fs)\n", now_s() - t0);
    if (vt_model_num_classes(m) > 0 && vt_trainer_class_ap(t, 0, NULL, NULL, NULL) == VT_OK) {
        /* per class: boxes, AP50, AP50-95 */
        printf("  %-20s %8s %8s %9s\n", "class", "boxes", "AP50", "AP50-95");
        for (int c = 0; c < vt_model_num_classes(m); c++) {
            double a50, ap;
            int64_t ngt;
            if (vt_trainer_class_ap(t, c, &a50, &ap, &ngt)) break;
            const char *name = vt_model_class_name(m, c);
            printf("  ");
            print_cell(name ? name : "?", 20); /* display columns: names may be UTF-8 */
            if (ngt == 0) printf(" %8d %8s %9s\n", 0, "-", "-");
            else printf(" %8lld %8.4f %9.4f\n", (long long)ngt, a50, ap);
        }
    }
out:
    vt_trainer_destroy(t);
    vt_dataset_destroy(ds);
    vt_model_destroy(m);
    return rc;
}

/* ---- predict ---------------------------------------------------------------------------- */

/* "path: N <what>s", then one line per object: class, score, box corners in the image's pixels. */
static void print_objects(vt_model *m, const char *path, const char *what, int n, const int *cls,
                          const float *sc, const float *box)
{
    printf("%s: %d %s%s\n", path, n, what, n == 1 ? "" : "s");
    for (int k = 0; k < n; k++) {
        const char *name = vt_model_class_name(m, cls[k]);
        char idx[16];
        snprintf(idx, sizeof idx, "class%d", cls[k]);
        printf("  ");
        print_cell(name ? name : idx, display_width(name ? name : idx) > 12
                                          ? display_width(name ? name : idx) : 12);
        printf(" %.4f  %.1f %.1f %.1f %.1f\n", sc[k], box[4 * k], box[4 * k + 1],
               box[4 * k + 2], box[4 * k + 3]);
    }
}

/* The colours of the run folder's val_batch pictures (class k: entry k % 20). */
static const uint8_t palette[20][3] = {
    {31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
    {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
    {0, 0, 128},    {255, 215, 0},  {0, 128, 128},  {255, 99, 71},  {128, 0, 0},
    {60, 180, 75},  {70, 240, 240}, {240, 50, 230}, {170, 110, 40}, {0, 0, 0}};

/* file = <out>/<stem of path><suffix> ("_mask.png"); creates the folder out. */
static void out_file(const char *out, const char *path, const char *suffix, char *file,
                     size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char stem[1024];
    snprintf(stem, sizeof stem, "%s", base);
    char *dot = strrchr(stem, '.');
    if (dot) *dot = 0;
    mkdir(out, 0777);
    snprintf(file, cap, "%s/%s%s", out, stem, suffix);
}

/* One line per detection: path, class, score, box corners in the image's pixels. */
static int detect_one(vt_model *m, const char *path, float conf, float iou, int max_det)
{
    int n = 0, cap = 64, *cls = NULL;
    float *sc = NULL, *box = NULL;
    vt_status st;
    for (;;) {
        cls = malloc((size_t)cap * sizeof *cls);
        sc = malloc((size_t)cap * sizeof *sc);
        box = malloc((size_t)cap * 4 * sizeof *box);
        if (!cls || !sc || !box) {
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        st = vt_model_detect_file(m, path, conf, iou, max_det, cls, sc, box, cap, &n);
        if (st != VT_ERR_BUFFER_TOO_SMALL) break;
        free(cls);
        free(sc);
        free(box);
        cap = n;
    }
    int rc = 0;
    if (st) rc = fail("predict", st, vt_model_last_error(m));
    else print_objects(m, path, "detection", n, cls, sc, box);
    free(cls);
    free(sc);
    free(box);
    return rc;
}

/* Segmentation: <out>/<stem>_mask.png (one byte a pixel: the class id) and, unless color=0,
 * <stem>_color.png (the class colour per pixel, for viewing). */
static int segment_one(vt_model *m, const char *path, const char *out, int color)
{
    int w = 0, h = 0;
    vt_status st = vt_model_segment_file(m, path, NULL, 0, &w, &h); /* the size */
    if (st) return fail("predict", st, vt_model_last_error(m));
    uint8_t *mask = malloc((size_t)w * h);
    if (!mask) return fail("predict", VT_ERR_OUT_OF_MEMORY, "out of memory");
    st = vt_model_segment_file(m, path, mask, (size_t)w * h, &w, &h);
    if (st) {
        free(mask);
        return fail("predict", st, vt_model_last_error(m));
    }
    char file[4096];
    out_file(out, path, "_mask.png", file, sizeof file);
    long counts[256] = {0};
    for (size_t i = 0; i < (size_t)w * h; i++) counts[mask[i]]++;
    st = vt_png_save(file, mask, w, h, 1, (size_t)w);
    int rc = st ? fail("predict", st, NULL) : 0;
    if (!rc) {
        printf("%s: %dx%d -> %s", path, w, h, file);
        for (int c = 0; c < vt_model_num_classes(m) && c < 256; c++)
            if (counts[c]) {
                const char *name = vt_model_class_name(m, c);
                printf("  %s %.1f%%", name ? name : "?", 100.0 * counts[c] / ((double)w * h));
            }
        printf("\n");
    }
    if (!rc && color) {
        /* the palette, a class named "background" black */
        uint8_t lut[256][3];
        for (int c = 0; c < 256; c++) {
            const char *name = c < vt_model_num_classes(m) ? vt_model_class_name(m, c) : NULL;
            int bg = c >= vt_model_num_classes(m) || (name && strcmp(name, "background") == 0);
            for (int k = 0; k < 3; k++) lut[c][k] = bg ? 0 : palette[c % 20][k];
        }
        uint8_t *rgb = malloc((size_t)w * h * 3);
        if (!rgb) st = VT_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; rgb && i < (size_t)w * h; i++) memcpy(rgb + 3 * i, lut[mask[i]], 3);
        out_file(out, path, "_color.png", file, sizeof file);
        if (rgb) st = vt_png_save(file, rgb, w, h, 3, (size_t)w * 3);
        if (st) rc = fail("predict", st, NULL);
        else printf("  colours: %s\n", file);
        free(rgb);
    }
    free(mask);
    return rc;
}

/* Instance segmentation: one line per object as for detection and, with out=DIR,
 * <out>/<stem>_instances.png (8-bit gray: 0 background, k + 1 object k, best score first, ids
 * capped at 255; where objects overlap the better one's id) and <stem>_overlay.png (the image,
 * each object's pixels blended half and half with its class's colour). */
static int instances_one(vt_model *m, const char *path, float conf, float iou, int max_det,
                         const char *out)
{
    int n = 0, cap = 16, w = 0, h = 0, *cls = NULL;
    float *sc = NULL, *box = NULL;
    uint8_t *masks = NULL;
    vt_status st = vt_model_instances_file(m, path, conf, iou, max_det, &w, &h, NULL, NULL, NULL,
                                           NULL, 0, &n); /* the image's size */
    for (; !st;) {
        size_t plane = (size_t)w * h;
        cls = malloc((size_t)cap * sizeof *cls);
        sc = malloc((size_t)cap * sizeof *sc);
        box = malloc((size_t)cap * 4 * sizeof *box);
        masks = malloc((size_t)cap * (plane ? plane : 1));
        if (!cls || !sc || !box || !masks) {
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        st = vt_model_instances_file(m, path, conf, iou, max_det, &w, &h, cls, sc, box, masks,
                                     cap, &n);
        if (st != VT_ERR_BUFFER_TOO_SMALL) break;
        free(cls);
        free(sc);
        free(box);
        free(masks);
        masks = NULL;
        cap = n;
        st = VT_OK;
    }
    int rc = 0;
    if (st) rc = fail("predict", st, st == VT_ERR_OUT_OF_MEMORY ? "out of memory"
                                                              : vt_model_last_error(m));
    else print_objects(m, path, "instance", n, cls, sc, box);
    uint8_t *ids = NULL, *rgb = NULL;
    size_t plane = (size_t)w * h;
    if (!rc && out) {
        char file[4096];
        if (!(ids = calloc(plane ? plane : 1, 1))) st = VT_ERR_OUT_OF_MEMORY;
        for (int k = n - 1; ids && k >= 0; k--) /* the best object last: on top */
            for (size_t i = 0; i < plane; i++)
                if (masks[(size_t)k * plane + i]) ids[i] = (uint8_t)(k + 1 < 255 ? k + 1 : 255);
        if (!st) {
            out_file(out, path, "_instances.png", file, sizeof file);
            st = vt_png_save(file, ids, w, h, 1, (size_t)w);
        }
        if (!st) printf("  instances: %s\n", file);
        int iw = 0, ih = 0;
        if (!st && !(rgb = malloc(plane ? plane * 3 : 1))) st = VT_ERR_OUT_OF_MEMORY;
        if (!st) st = vt_image_read(path, rgb, plane * 3, &iw, &ih);
        /* each pixel in the colour of its top object (id 255: the best one covering it) */
        for (size_t i = 0; !st && i < plane; i++) {
            int k = ids[i];
            if (!k) continue;
            for (int j = 0; j < n && k == 255; j++) /* find the best object covering it */
                if (masks[(size_t)j * plane + i]) k = j + 1;
            const uint8_t *col = palette[cls[k - 1] % 20];
            for (int c = 0; c < 3; c++)
                rgb[3 * i + c] = (uint8_t)((rgb[3 * i + c] + col[c] + 1) / 2);
        }
        if (!st) {
            out_file(out, path, "_overlay.png", file, sizeof file);
            st = vt_png_save(file, rgb, w, h, 3, (size_t)w * 3);
        }
        if (!st) printf("  overlay: %s\n", file);
        if (st) rc = fail("predict", st, st == VT_ERR_OUT_OF_MEMORY ? "out of memory" : NULL);
    }
    free(ids);
    free(rgb);
    free(cls);
    free(sc);
    free(box);
    free(masks);
    return rc;
}

static int predict_one(vt_model *m, const char *path, float *scores, int k, int top)
{
    vt_status st = vt_model_predict_file(m, path, scores, k);
    if (st) return fail("predict", st, vt_model_last_error(m));
    printf("%s:", path);
    for (int r = 0; r < top; r++) { /* selection of the r-th best */
        int best = -1;
        for (int c = 0; c < k; c++)
            if (scores[c] >= 0 && (best < 0 || scores[c] > scores[best])) best = c;
        if (best < 0) break;
        const char *name = vt_model_class_name(m, best);
        char idx[16];
        snprintf(idx, sizeof idx, "class%d", best);
        printf(" %s %.4f", name ? name : idx, scores[best]);
        scores[best] = -1;
    }
    printf("\n");
    return 0;
}

/* What `vt predict` does with each image, by the model's task. */
typedef struct predict_job {
    vt_model *m;
    vt_task task;
    const char *out; /* segmentation, instances: the folder of the mask files (NULL: none) */
    int color;
    float conf, iou;
    int max_det, top;
    float *scores;   /* classification: k floats */
    int k;
} predict_job;

static int predict_image(const predict_job *j, const char *path)
{
    switch (j->task) {
    case VT_TASK_CLASSIFY: return predict_one(j->m, path, j->scores, j->k, j->top);
    case VT_TASK_DETECT: return detect_one(j->m, path, j->conf, j->iou, j->max_det);
    case VT_TASK_SEGMENT: return segment_one(j->m, path, j->out, j->color);
    case VT_TASK_INSTANCE:
        return instances_one(j->m, path, j->conf, j->iou, j->max_det, j->out);
    default: return fail("predict", VT_ERR_UNSUPPORTED, "no prediction for this task");
    }
}

/* The keys of each task's prediction (what predict_image does with them). */
static const struct {
    vt_task task;
    const char *keys[5]; /* NULL-terminated */
} predict_keys[] = {{VT_TASK_CLASSIFY, {"top"}},
                    {VT_TASK_DETECT, {"conf", "iou", "max_det"}},
                    {VT_TASK_SEGMENT, {"out", "color"}},
                    {VT_TASK_INSTANCE, {"conf", "iou", "max_det", "out"}}};
enum { N_PREDICT_KEYS = sizeof predict_keys / sizeof predict_keys[0] };

/* Whether the prediction of task takes key. */
static int predict_takes(vt_task task, const char *key)
{
    for (int i = 0; i < N_PREDICT_KEYS; i++)
        for (int k = 0; predict_keys[i].task == task && predict_keys[i].keys[k]; k++)
            if (!strcmp(predict_keys[i].keys[k], key)) return 1;
    return 0;
}

/* The first task whose prediction takes key; 0 when none does. */
static vt_task predict_key_task(const char *key)
{
    for (int i = 0; i < N_PREDICT_KEYS; i++)
        if (predict_takes(predict_keys[i].task, key)) return predict_keys[i].task;
    return (vt_task)0;
}

/* Whether vt predict shows the results of a task's models (predict_image). */
static int predicts(vt_task task)
{
    for (int i = 0; i < N_PREDICT_KEYS; i++)
        if (predict_keys[i].task == task) return 1;
    return 0;
}

/* "conf, iou, max_det": the prediction keys of a task, "none" for a task without. */
static const char *predict_keys_of(vt_task task, char *buf, size_t cap)
{
    size_t used = 0;
    snprintf(buf, cap, "none");
    for (int i = 0; i < N_PREDICT_KEYS; i++)
        for (int k = 0; predict_keys[i].task == task && predict_keys[i].keys[k]; k++)
            if (used < cap)
                used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                                         predict_keys[i].keys[k]);
    return buf;
}

int cmd_predict(args *a)
{
    const char *model = take(a, "model"), *top_s = take(a, "top");
    const char *conf_s = take(a, "conf"), *iou_s = take(a, "iou"), *maxdet_s = take(a, "max_det");
    const char *out_s = take(a, "out"), *color_s = take(a, "color");
    const char *threads_s = take(a, "threads");
    take(a, "source");
    int rc, color = 1;
    if ((rc = reject_unknown(a, "model, source, top, conf, iou, max_det, out, color, threads")))
        return rc;
    if ((rc = flag_value(a->cmd, "color", color_s, &color))) return rc;
    if (!model || a->nsources == 0) {
        fprintf(stderr, "vt predict: model=FILE and source=IMAGE|DIR are required (see 'vt help "
                        "predict')\n");
        return EXIT_USAGE;
    }
    long top = 1, max_det = 300, threads = 0;
    double conf = 0.25, iou = 0.7;
    if ((rc = int_value(a->cmd, "top", top_s, 1, 1000, &top)) ||
        (rc = int_value(a->cmd, "threads", threads_s, 0, 256, &threads)) ||
        (rc = int_value(a->cmd, "max_det", maxdet_s, 1, 100000, &max_det)) ||
        (rc = num_value(a->cmd, "conf", conf_s, 0, &conf)) ||
        (rc = num_value(a->cmd, "iou", iou_s, 0, &iou)))
        return rc;
    vt_model *m;
    vt_status st = vt_model_load(&m, model);
    if (!st && (st = vt_model_set_threads(m, (int)threads))) vt_model_destroy(m);
    if (st) return fail(a->cmd, st, NULL);
    /* a key of another task's prediction would be accepted and do nothing: refuse it */
    vt_task task = vt_model_task(m);
    char keys[64];
    const struct {
        const char *key, *val;
    } given[] = {{"top", top_s}, {"conf", conf_s}, {"iou", iou_s}, {"max_det", maxdet_s},
                 {"out", out_s}, {"color", color_s}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
        vt_task owner = given[i].val ? predict_key_task(given[i].key) : (vt_task)0;
        if (!owner || predict_takes(task, given[i].key)) continue;
        const char *title = vt_task_title(task);
        fprintf(stderr, "vt predict: %s= applies to %s models; %s is a%s %s model (its keys: "
                "%s)\n", given[i].key, vt_task_title(owner), model,
                title && strchr("aeiou", title[0]) ? "n" : "", title ? title : "?",
                predict_keys_of(task, keys, sizeof keys));
        vt_model_destroy(m);
        return EXIT_USAGE;
    }
    if (!predicts(task)) { /* a task the library added since */
        char msg[256];
        const char *title = vt_task_title(task);
        snprintf(msg, sizeof msg, "%s is a%s %s model: vt predict does not show its results yet",
                 model, title && strchr("aeiou", title[0]) ? "n" : "", title ? title : "?");
        vt_model_destroy(m);
        return fail(a->cmd, VT_ERR_UNSUPPORTED, msg);
    }
    predict_job job = {m, task, out_s ? out_s : task == VT_TASK_SEGMENT ? "predictions" : NULL,
                       color, (float)conf,
                       (float)iou, (int)max_det, (int)top, NULL, vt_model_num_classes(m)};
    if (job.top > job.k) job.top = job.k;
    if (!(job.scores = malloc((size_t)(job.k > 0 ? job.k : 1) * sizeof(float)))) {
        vt_model_destroy(m);
        return fail(a->cmd, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* each source is an image, or a folder standing for the images directly in it */
    for (int i = 0; i < a->nsources; i++) {
        const char *src = a->sources[i];
        int n = 1;
        char **files = is_dir(src) ? list_images(src, &n) : NULL;
        if (is_dir(src) && n == 0) {
            fprintf(stderr, "vt predict: no .png/.jpg/.jpeg images in %s\n", src);
            rc = EXIT_DATA;
        }
        for (int j = 0; j < n; j++) {
            int r = predict_image(&job, files ? files[j] : src);
            if (r) rc = r;
            if (files) free(files[j]);
        }
        free(files);
    }
    free(job.scores);
    vt_model_destroy(m);
    return rc;
}
