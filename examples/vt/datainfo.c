/* How vt train and vt val open a dataset (policy=, min_size=, decode=) and the data summary
 * they print: the same checks as vt check (vt_dataset_open_ex with decode=1 finds what
 * vt_dataset_validate finds), so the commands agree on what is used and what is not. */
#include <stdio.h>
#include <string.h>

#include "vt_cli.h"

#define SUMMARY_EXAMPLES 3 /* listed of more than DATA_SUMMARY_ALL problems */

int take_data_keys(const char *cmd, args *a, data_info *info)
{
    const char *policy = take(a, "policy"), *min_size = take(a, "min_size");
    const char *decode = take(a, "decode");
    memset(info, 0, sizeof *info);
    info->decoded = 1;
    if (flag_value(cmd, "decode", decode, &info->decoded)) return EXIT_USAGE;
    if (policy && strcmp(policy, "drop") && strcmp(policy, "skip") && strcmp(policy, "fail")) {
        fprintf(stderr, "vt %s: policy=%s: valid values: drop, skip, fail\n", cmd, policy);
        return EXIT_USAGE;
    }
    snprintf(info->policy, sizeof info->policy, "%s", policy ? policy : "drop");
    snprintf(info->min_size, sizeof info->min_size, "%s", min_size ? min_size : "10");
    return 0;
}

int open_data(const char *cmd, const data_info *info, vt_task task, const char *data,
              vt_dataset **ds)
{
    char opts[256];
    snprintf(opts, sizeof opts, "policy=%s decode=%d min_size=%s", info->policy, info->decoded,
             info->min_size);
    vt_status st = vt_dataset_open_ex(ds, task, data, opts);
    return st ? fail(cmd, st, NULL) : 0;
}

enum { KIND_LABEL, KIND_IMAGE, KIND_OTHER };

static int kind_of(int code)
{
    switch (code) {
    case VT_PROBLEM_BAD_LINE: case VT_PROBLEM_CLASS_RANGE: case VT_PROBLEM_COORD_RANGE:
    case VT_PROBLEM_ZERO_SIZE: case VT_PROBLEM_DUPLICATE: case VT_PROBLEM_BAD_ANNOTATION:
    case VT_PROBLEM_POLYGON_POINTS:
        return KIND_LABEL;
    case VT_PROBLEM_MISSING_IMAGE: case VT_PROBLEM_IMAGE_UNREADABLE: case VT_PROBLEM_CORRUPT_IMAGE:
    case VT_PROBLEM_TRUNCATED_JPEG: case VT_PROBLEM_IMAGE_TOO_SMALL:
    case VT_PROBLEM_UNSUPPORTED_FORMAT: case VT_PROBLEM_MISSING_MASK: case VT_PROBLEM_BAD_MASK:
    case VT_PROBLEM_IMAGE_TOO_LARGE: case VT_PROBLEM_SYMLINK_LOOP: case VT_PROBLEM_BROKEN_LINK:
        return KIND_IMAGE;
    default:
        return KIND_OTHER;
    }
}

/* "bad_line 2, class_range 1" for the problems of one kind; the number of them. */
static int reasons(const vt_dataset *ds, int kind, char *buf, size_t cap)
{
    int per_code[64] = {0}, total = 0;
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        int code;
        vt_dataset_problem(ds, k, NULL, NULL, &code, NULL);
        if (kind_of(code) != kind) continue;
        total++;
        if (code > 0 && code < 64) per_code[code]++;
    }
    buf[0] = 0;
    for (int c = 1; c < 64; c++) {
        size_t used = strlen(buf);
        if (per_code[c] && used < cap)
            snprintf(buf + used, cap - used, "%s%s %d", used ? ", " : "", vt_problem_code_name(c),
                     per_code[c]);
    }
    return total;
}

void print_data_summary(const vt_dataset *ds, const char *data, const data_info *info,
                        const char *where)
{
    static const char *const split_names[] = {"train", "val", "test"};
    int np = vt_dataset_num_problems(ds);
    FILE *f = np ? stderr : stdout; /* problems are warnings: stderr, as every warning */
    fflush(stdout);
    fprintf(f, "data: %s (policy=%s%s):", data, info->policy, info->decoded ? "" : ", decode=0");
    for (int s = 0; s < 3; s++) {
        int64_t all = vt_dataset_count(ds, VT_COUNT_IMAGES, (vt_split)s);
        int64_t bad = vt_dataset_count(ds, VT_COUNT_CORRUPT, (vt_split)s);
        int64_t sized = vt_dataset_count(ds, VT_COUNT_SIZE, (vt_split)s);
        int64_t skip = vt_dataset_count(ds, VT_COUNT_SKIPPED, (vt_split)s);
        if (!all && s == VT_SPLIT_TEST) continue;
        fprintf(f, "%s %s %lld of %lld images used", s ? ";" : "", split_names[s],
                   (long long)vt_dataset_count(ds, VT_COUNT_USABLE, (vt_split)s), (long long)all);
        if (bad) fprintf(f, ", %lld unreadable", (long long)bad);
        if (sized) fprintf(f, ", %lld outside the size limits", (long long)sized);
        if (skip) fprintf(f, ", %lld skipped (label problems)", (long long)skip);
    }
    if (!np) {
        fprintf(f, "; no problems found\n");
        return;
    }
    char buf[1024];
    int nl = reasons(ds, KIND_LABEL, buf, sizeof buf);
    int is_box = !labels_per_image(vt_dataset_task(ds));
    if (nl && !strcmp(info->policy, "skip"))
        fprintf(f, ".  %d label problem%s, their images skipped: %s", nl, nl == 1 ? "" : "s",
                buf);
    else if (nl)
        fprintf(f, ".  %d %s dropped: %s", nl, is_box ? (nl == 1 ? "box" : "boxes")
                                                      : (nl == 1 ? "entry" : "entries"), buf);
    int ni = reasons(ds, KIND_IMAGE, buf, sizeof buf);
    if (ni) fprintf(f, ".  %d image%s left out: %s", ni, ni == 1 ? "" : "s", buf);
    int no = reasons(ds, KIND_OTHER, buf, sizeof buf);
    if (no) fprintf(f, ".  %d other warning%s: %s", no, no == 1 ? "" : "s", buf);
    int shown = np > DATA_SUMMARY_ALL ? SUMMARY_EXAMPLES : np;
    if (shown < np) fprintf(f, ".  The first %d:\n", shown);
    else fprintf(f, ".  %s:\n", np == 1 ? "The problem" : "The problems");
    for (int k = 0; k < shown; k++) {
        const char *msg;
        int code;
        vt_dataset_problem(ds, k, NULL, NULL, &code, &msg);
        fprintf(f, "  %.300s [%s]\n", msg, vt_problem_code_name(code));
    }
    if (where) fprintf(f, "  all %d problem%s: %s\n", np, np == 1 ? "" : "s", where);
    fflush(f);
}

int write_problems(const vt_dataset *ds, const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/problems.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int k = 0; k < vt_dataset_num_problems(ds); k++) {
        const char *msg;
        int code;
        vt_dataset_problem(ds, k, NULL, NULL, &code, &msg);
        fprintf(f, "%s [%s]\n", msg, vt_problem_code_name(code));
    }
    return fclose(f) ? -1 : 0;
}
