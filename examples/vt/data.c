/* vt synth, vt check and the dataset tools (vt dataset split|subset|clone|stats). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cli.h"

/* ---- synth -------------------------------------------------------------------------------- */

/* Append " key=value" to an options string when the value is given. */
static void add_opt(char *opts, size_t cap, const char *key, const char *v)
{
    size_t used = strlen(opts);
    if (v && used < cap) snprintf(opts + used, cap - used, "%s%s=%s", used ? " " : "", key, v);
}


int cmd_synth(args *a)
{
    const char *data = take(a, "data"), *task_s = take(a, "task");
    vt_task task = VT_TASK_CLASSIFY;
    if (parse_task("synth", task_s, &task)) return EXIT_USAGE;
    /* the options of vt_synth_generate: an ImageFolder's, or the scenes' of the other tasks */
    char opts[512] = "", valid[512] = "data, task";
    take_scope(a, labels_per_image(task) ? VT_SCOPE_SYNTH_CLASSIFY : VT_SCOPE_SYNTH_DETECT,
               opts, sizeof opts, valid, sizeof valid);
    int rc;
    if ((rc = reject_unknown(a, valid))) return rc;
    if (!data) {
        fprintf(stderr, "vt synth: data=DIR is required (see 'vt help synth')\n");
        return EXIT_USAGE;
    }
    vt_status st = vt_synth_generate(data, task, opts);
    if (st) return fail(a->cmd, st, NULL);
    printf("wrote a synthetic %s dataset to %s\n", vt_task_title(task), data);
    return 0;
}

/* ---- check and dataset tools -------------------------------------------------------------- */

static const char *const split_names[3] = {"train", "val", "test"};

static const char *task_name(vt_task t)
{
    const char *title = vt_task_title(t);
    return title ? title : "?";
}

/* The class table: one row per class, a column per split ("-" for an absent split). */
static int print_class_table(int k, const char *(*name)(const void *, int), const void *h,
                              const int64_t *counts, const int64_t total[3], const char *what)
{
    int w = 11; /* "backgrounds" */
    for (int c = 0; c < k; c++) /* display columns, not bytes: names may be UTF-8 */
        if (display_width(name(h, c)) > w) w = display_width(name(h, c));
    if (w > 40) w = 40;
    printf("  %-*s %8s %8s %8s   (%s)\n", w, "class", "train", "val", "test", what);
    for (int c = 0; c < k; c++) {
        printf("  ");
        print_cell(name(h, c), w);
        for (int s = 0; s < 3; s++)
            if (total[s]) printf(" %8lld", (long long)counts[c * 3 + s]);
            else printf(" %8s", "-");
        printf("\n");
    }
    return (int)w;
}

static const char *report_class(const void *r, int c) { return vt_report_class_name(r, c); }
static const char *dataset_class(const void *d, int c) { return vt_dataset_class_name(d, c); }

int cmd_check(args *a)
{
    const char *data = take(a, "data"), *task_s = take(a, "task"), *show_s = take(a, "show");
    char opts[256] = "", valid[256] = "data, task";
    take_scope(a, VT_SCOPE_DATASET_VALIDATE, opts, sizeof opts, valid, sizeof valid);
    strncat(valid, ", show", sizeof valid - strlen(valid) - 1);
    int rc;
    long show = 100;
    vt_task task;
    if ((rc = reject_unknown(a, valid))) return rc;
    if ((rc = int_value(a->cmd, "show", show_s, 0, 1000000000, &show))) return rc;
    if (!data) {
        fprintf(stderr, "vt check: data=PATH is required (see 'vt help check')\n");
        return EXIT_USAGE;
    }
    if ((rc = task_value(a->cmd, task_s, data, &task))) return rc;
    vt_report *r;
    vt_status st = vt_dataset_validate(&r, task, data, opts);
    if (st) return fail(a->cmd, st, NULL);
    int k = vt_report_num_classes(r);
    printf("dataset %s: %s, %d classes\n", data, task_name(task), k);
    int64_t *counts = calloc((size_t)k * 3 + 1, sizeof *counts), total[3];
    if (!counts) {
        vt_report_destroy(r);
        return fail(a->cmd, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int s = 0; s < 3; s++) {
        total[s] = vt_report_count(r, VT_COUNT_IMAGES, (vt_split)s);
        for (int c = 0; c < k; c++) counts[c * 3 + s] = vt_report_class_instances(r, (vt_split)s, c);
    }
    int w = print_class_table(k, report_class, r, counts, total,
                              labels_per_image(task) ? "usable images" : "instances");
    static const struct {
        vt_count what;
        const char *name;
    } rows[] = {{VT_COUNT_IMAGES, "images"},           {VT_COUNT_USABLE, "usable"},
                {VT_COUNT_CORRUPT, "corrupt"},
                {VT_COUNT_SIZE, "size limits"},
                {VT_COUNT_SKIPPED, "skipped"},
                {VT_COUNT_BACKGROUNDS, "backgrounds"}, {VT_COUNT_INSTANCES, "instances"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (labels_per_image(task) && rows[i].what == VT_COUNT_BACKGROUNDS) continue;
        printf("  %-*s", w, rows[i].name);
        for (int s = 0; s < 3; s++)
            printf(" %8lld", (long long)vt_report_count(r, rows[i].what, (vt_split)s));
        printf("\n");
    }
    int np = vt_report_num_problems(r);
    if (np) printf("problems (%d):\n", np);
    for (int i = 0; i < np && i < show; i++) {
        const char *msg;
        int code;
        vt_report_problem(r, i, NULL, NULL, &code, &msg);
        printf("  %s [%s]\n", msg, vt_problem_code_name(code));
    }
    if (np > show) printf("  ... and %ld more (show=N prints more)\n", np - show);
    int64_t corrupt = 0, images = 0, sized = 0;
    for (int s = 0; s < 3; s++) {
        corrupt += vt_report_count(r, VT_COUNT_CORRUPT, (vt_split)s);
        sized += vt_report_count(r, VT_COUNT_SIZE, (vt_split)s);
        images += vt_report_count(r, VT_COUNT_IMAGES, (vt_split)s);
    }
    printf("%lld images decoded: %lld unreadable", (long long)images, (long long)corrupt);
    if (sized) printf(", %lld outside the size limits", (long long)sized);
    printf("; %d problem%s\n", np, np == 1 ? "" : "s");
    printf("advice: %s\n", vt_estimate_dataset_advice(vt_report_count(r, VT_COUNT_USABLE,
                                                                       VT_SPLIT_TRAIN)));
    free(counts);
    vt_report_destroy(r);
    return corrupt || sized ? EXIT_DATA : 0;
}

/* Open data= for a dataset tool with its task= and policy= (as for check; taken by the caller
 * before it rejects unknown keys). */
static int open_for_tool(args *a, const char *data, const char *task_s, const char *policy,
                         vt_dataset **ds)
{
    vt_task task;
    int rc = task_value(a->cmd, task_s, data, &task);
    if (rc) return rc;
    char opts[128] = "";
    add_opt(opts, sizeof opts, "policy", policy);
    vt_status st = vt_dataset_open_ex(ds, task, data, opts);
    return st ? fail(a->cmd, st, NULL) : 0;
}

static int dataset_split_subset(args *a, int is_split)
{
    const char *data = take(a, "data"), *out = take(a, "out");
    const char *task_s = take(a, "task"), *policy = take(a, "policy");
    char opts[256] = "", valid[256] = "data, out, task, policy";
    take_scope(a, is_split ? VT_SCOPE_DATASET_SPLIT : VT_SCOPE_DATASET_SUBSET, opts, sizeof opts,
               valid, sizeof valid);
    vt_dataset *ds = NULL;
    int rc = reject_unknown(a, valid);
    if (rc) return rc;
    if (!data || !out) {
        fprintf(stderr, "%s: data=PATH and out=DIR are required (see 'vt help dataset')\n",
                a->cmd);
        return EXIT_USAGE;
    }
    if ((rc = open_for_tool(a, data, task_s, policy, &ds))) return rc;
    vt_status st = is_split ? vt_dataset_split(ds, out, opts) : vt_dataset_subset(ds, out, opts);
    if (st) {
        vt_dataset_destroy(ds);
        return fail(a->cmd, st, NULL);
    }
    vt_dataset *nd;
    st = vt_dataset_open(&nd, vt_dataset_task(ds), out);
    if (st) {
        vt_dataset_destroy(ds);
        return fail(a->cmd, st, NULL);
    }
    printf("wrote %s/data.yaml:", out);
    for (int s = 0; s < 3; s++)
        if (vt_dataset_num_images(nd, (vt_split)s))
            printf(" %s %d", split_names[s], vt_dataset_num_images(nd, (vt_split)s));
    printf(" images (the images and labels stay where they are)\n");
    vt_dataset_destroy(nd);
    vt_dataset_destroy(ds);
    return 0;
}

static int dataset_clone(args *a)
{
    const char *data = take(a, "data"), *out = take(a, "out");
    int rc = reject_unknown(a, "data, out");
    if (rc) return rc;
    if (!data || !out) {
        fprintf(stderr, "%s: data=DIR and out=DIR are required (see 'vt help dataset')\n", a->cmd);
        return EXIT_USAGE;
    }
    vt_status st = vt_dataset_clone(data, out);
    if (st) return fail(a->cmd, st, NULL);
    printf("copied %s to %s\n", data, out);
    return 0;
}

static int dataset_stats(args *a)
{
    const char *data = take(a, "data"), *plot = take(a, "plot"), *bins_s = take(a, "bins");
    const char *task_s = take(a, "task"), *policy = take(a, "policy");
    long bins = 10;
    vt_dataset *ds = NULL;
    int rc = reject_unknown(a, "data, plot, bins, task, policy");
    if (!rc) rc = int_value(a->cmd, "bins", bins_s, 1, 100, &bins);
    if (rc) return rc;
    if (!data) {
        fprintf(stderr, "%s: data=PATH is required (see 'vt help dataset')\n", a->cmd);
        return EXIT_USAGE;
    }
    if ((rc = open_for_tool(a, data, task_s, policy, &ds))) return rc;
    int k = vt_dataset_num_classes(ds);
    vt_task task = vt_dataset_task(ds);
    int64_t *counts = calloc((size_t)k * 3 + 1, sizeof *counts), *tmp = calloc((size_t)k + 1, 8);
    int64_t *h = calloc((size_t)bins * 3, sizeof *h), total[3];
    vt_status st = counts && tmp && h ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int s = 0; !st && s < 3; s++) {
        total[s] = vt_dataset_num_images(ds, (vt_split)s);
        st = vt_dataset_class_histogram(ds, (vt_split)s, tmp, k);
        for (int c = 0; !st && c < k; c++) counts[c * 3 + s] = tmp[c];
    }
    if (!st) {
        printf("dataset %s: %s, %d classes; images: train %lld, val %lld, test %lld\n", data,
               task_name(task), k, (long long)total[0], (long long)total[1], (long long)total[2]);
        print_class_table(k, dataset_class, ds, counts, total,
                          labels_per_image(task) ? "images" : "instances");
    }
    for (int s = 0; !st && !labels_per_image(task) && s < 3; s++) {
        if (!total[s]) continue;
        for (int m = 0; !st && m < 3; m++)
            st = vt_dataset_box_histogram(ds, (vt_split)s, (vt_box_measure)(m + 1), h + m * bins,
                                          (int)bins);
        if (st) break;
        printf("box sizes, %s (relative to the image; bins of %.3g):\n", split_names[s],
               1.0 / bins);
        printf("  %-11s %8s %8s %8s\n", "bin", "width", "height", "sqrt(w*h)");
        for (int b = 0; b < bins; b++)
            printf("  %.3f-%.3f %8lld %8lld %8lld\n", (double)b / bins, (double)(b + 1) / bins,
                   (long long)h[b], (long long)h[bins + b], (long long)h[2 * bins + b]);
    }
    if (!st && plot) {
        st = vt_dataset_plot_labels(ds, plot);
        if (!st) printf("wrote %s\n", plot);
    }
    free(counts);
    free(tmp);
    free(h);
    vt_dataset_destroy(ds);
    return st ? fail(a->cmd, st, NULL) : 0;
}

/* "vt dataset SUB": main() passes the sub-command as the command name "dataset SUB". */
int cmd_dataset(args *a)
{
    const char *sub = a->cmd + strlen("dataset ");
    if (!strcmp(sub, "split")) return dataset_split_subset(a, 1);
    if (!strcmp(sub, "subset")) return dataset_split_subset(a, 0);
    if (!strcmp(sub, "clone")) return dataset_clone(a);
    if (!strcmp(sub, "stats")) return dataset_stats(a);
    fprintf(stderr, "vt dataset: unknown sub-command '%s'; valid: split, subset, clone, stats\n",
            sub);
    return EXIT_USAGE;
}
