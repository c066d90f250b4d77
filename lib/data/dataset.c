/* ImageFolder classification datasets: root/{train,val|valid,test}/<class>/<image>. */
#include "data/dataset.h"
#include "data/detect_data.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || name[0] == '.') return 0;
    return strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0 ||
           strcasecmp(dot, ".jpeg") == 0;
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = vt_malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

typedef struct {
    char **v;
    int n, cap;
} strvec;

static void strvec_free(strvec *s)
{
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static vt_status strvec_push(strvec *s, char *str)
{
    if (!str) return VT_ERR_OUT_OF_MEMORY;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        char **v = vt_realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(str);
            return VT_ERR_OUT_OF_MEMORY;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    return VT_OK;
}

/* Sorted names of the entries of dir that are folders (want_dirs) or image files.  A symbolic
 * link that cannot be followed (a loop, a missing target) where a class folder or an image
 * could be is recorded as a problem of ds and skipped; entries are visited in name order, so
 * the problems come out in the same order on every file system. */
static vt_status list_dir(vt_dataset *ds, const char *dir, int want_dirs, strvec *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open folder: %s",
                       dir, strerror(errno));
    struct dirent *ent;
    strvec names = {0};
    vt_status st = VT_OK;
    while (!st && (ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        if (!want_dirs && !is_image_name(ent->d_name)) continue;
        st = strvec_push(&names, vt_strdup(ent->d_name));
    }
    closedir(d);
    if (!st && names.n) qsort(names.v, (size_t)names.n, sizeof(char *), cmp_str);
    for (int i = 0; !st && i < names.n; i++) {
        char *full = join(dir, names.v[i]);
        if (!full) {
            st = VT_ERR_OUT_OF_MEMORY;
            break;
        }
        /* only folders are classes, and only regular files (not a folder "x.png") images */
        int kind = vt_det_entry(full, NULL);
        if (kind == VT_ENT_LOOP || kind == VT_ENT_BROKEN) st = vt_det_link_problem(ds, full, kind);
        else if (kind == (want_dirs ? VT_ENT_DIR : VT_ENT_FILE))
            st = strvec_push(out, vt_strdup(names.v[i]));
        free(full);
    }
    strvec_free(&names);
    return st;
}

/* Whether dir resolves to split_dir or one of its parents (a symbolic link loop). */
static int links_back(const char *dir, const char *split_dir)
{
    char *a = realpath(dir, NULL), *b = realpath(split_dir, NULL);
    int loop = 0;
    if (a && b) {
        size_t n = strlen(a);
        loop = !strncmp(b, a, n) && (b[n] == 0 || b[n] == '/' || n == 1);
    }
    free(a);
    free(b);
    return loop;
}

static vt_status load_split(vt_dataset *ds, const char *split_dir, vt_split_list *sl, int is_train)
{
    strvec classes = {0}, paths = {0};
    int *labels = NULL, nlab = 0;
    vt_status st = list_dir(ds, split_dir, 1, &classes);
    if (st) goto done;
    if (is_train) {
        if (classes.n < 2) {
            st = vt_fail(VT_ERR_DATASET,
                         "%s: found %d class folder%s; classification needs at least 2 "
                         "(expected %s/<class>/<image>.jpg|png)",
                         split_dir, classes.n, classes.n == 1 ? "" : "s", split_dir);
            goto done;
        }
        ds->num_classes = classes.n;
        ds->class_names = classes.v;
        classes.v = NULL;
        classes.n = classes.cap = 0;
    }
    const char *const *names = (const char *const *)(is_train ? ds->class_names : classes.v);
    int ncls = is_train ? ds->num_classes : classes.n;
    for (int c = 0; c < ncls; c++) {
        int id = c;
        if (!is_train) {
            id = -1;
            for (int k = 0; k < ds->num_classes; k++)
                if (strcmp(ds->class_names[k], names[c]) == 0) id = k;
            /* opening and validation alike: recorded, the folder's images not used (policy=fail
             * makes it fatal) */
            if (id < 0) {
                st = vt_ds_problem_add(ds, split_dir, 0, VT_PROBLEM_CLASS_COUNT,
                                       "class folder '%s' is not among the %d train classes; "
                                       "its images are not used", names[c], ds->num_classes);
                if (st) goto done;
                continue;
            }
        }
        char *cdir = join(split_dir, names[c]);
        strvec files = {0};
        st = cdir ? list_dir(ds, cdir, 0, &files) : VT_ERR_OUT_OF_MEMORY;
        /* A class without images keeps its id (ids follow the folder order), so it is a
         * warning for opening and validation alike; a link back into the split is named. */
        if (!st && files.n == 0) {
            int loop = links_back(cdir, split_dir);
            st = vt_ds_problem_add(ds, cdir, 0, VT_PROBLEM_EMPTY_SPLIT,
                                   loop ? "class folder is a symbolic link back to %s (a loop); "
                                          "it has no images of its own"
                                        : "class folder has no images (.png, .jpg, .jpeg)%s",
                                   loop ? split_dir : "");
        }
        if (!st && files.n) {
            int *nl = vt_realloc(labels, (size_t)(nlab + files.n) * sizeof *nl);
            if (!nl) st = VT_ERR_OUT_OF_MEMORY;
            else labels = nl;
        }
        for (int f = 0; !st && f < files.n; f++) {
            st = strvec_push(&paths, join(cdir, files.v[f]));
            if (!st) labels[nlab++] = id;
        }
        strvec_free(&files);
        free(cdir);
        if (st) goto done;
    }
    sl->n = paths.n;
    sl->paths = paths.v;
    sl->labels = labels;
    memset(&paths, 0, sizeof paths);
    labels = NULL;
done:
    strvec_free(&classes);
    strvec_free(&paths);
    free(labels);
    return st;
}

VT_API void vt_dataset_destroy(vt_dataset *ds)
{
    if (!ds) return;
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < ds->split[s].n; i++) free(ds->split[s].paths[i]);
        free(ds->split[s].paths);
        free(ds->split[s].labels);
        free(ds->split[s].box_start);
        free(ds->split[s].boxes);
        free(ds->split[s].polys);
        free(ds->split[s].poly_xy);
        free(ds->split[s].part_start);
        free(ds->split[s].parts);
        for (int i = 0; ds->split[s].mask_paths && i < ds->split[s].n; i++)
            free(ds->split[s].mask_paths[i]);
        free(ds->split[s].mask_paths);
    }
    free(ds->masks_name);
    for (int i = 0; i < ds->num_problems; i++) {
        free(ds->problems[i].file);
        free(ds->problems[i].message);
    }
    free(ds->problems);
    for (int i = 0; i < ds->num_classes; i++) free(ds->class_names[i]);
    free(ds->class_names);
    free(ds->root);
    free(ds);
}

VT_API vt_status vt_dataset_open(vt_dataset **out, vt_task task, const char *path)
{
    if (out) *out = NULL;
    if (!out || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_open: NULL argument");
    return vt_dataset_load(out, task, path, VT_DS_POLICY_DROP, 0);
}

static const vt_labels task_labels[] = {
    {VT_TASK_CLASSIFY, .image_class = 1},
    {VT_TASK_DETECT, .boxes = 1},
    {VT_TASK_SEGMENT, .masks = 1},
    {VT_TASK_INSTANCE, .boxes = 1, .instances = 1},
};

const vt_labels *vt_task_labels(vt_task task)
{
    for (size_t i = 0; i < sizeof task_labels / sizeof task_labels[0]; i++)
        if (task_labels[i].task == task) return &task_labels[i];
    return NULL;
}

VT_API unsigned vt_task_label_kinds(vt_task task)
{
    const vt_labels *l = vt_task_labels(task);
    if (!l) return 0;
    return (l->image_class ? VT_LABELS_IMAGE_CLASS : 0u) | (l->boxes ? VT_LABELS_BOXES : 0u) |
           (l->masks ? VT_LABELS_CLASS_MAP : 0u) | (l->instances ? VT_LABELS_INSTANCES : 0u);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcasecmp(s + n - m, suf);
}

VT_API vt_task vt_dataset_guess_task(const char *path)
{
    int boxes = 0;
    if (path) {
        boxes = has_suffix(path, ".yaml") || has_suffix(path, ".yml") || has_suffix(path, ".json");
        if (!boxes) {
            size_t n = strlen(path) + sizeof "/data.yaml";
            char *f = vt_malloc(n);
            struct stat st;
            if (f) {
                snprintf(f, n, "%s/data.yaml", path);
                boxes = stat(f, &st) == 0 && S_ISREG(st.st_mode);
                free(f);
            }
        }
    }
    unsigned want = boxes ? VT_LABELS_BOXES : VT_LABELS_IMAGE_CLASS;
    for (size_t i = 0; i < sizeof task_labels / sizeof task_labels[0]; i++)
        if (vt_task_label_kinds(task_labels[i].task) == want) return task_labels[i].task;
    return (vt_task)0;
}

vt_status vt_dataset_load(vt_dataset **out, vt_task task, const char *path, int policy,
                          int lenient)
{
    *out = NULL;
    const vt_labels *labels = vt_task_labels(task);
    if (!labels) return vt_fail(VT_ERR_UNSUPPORTED, "%s: unknown task %d", path, (int)task);
    /* Boxes and masks share the detection layouts (data.yaml, COCO JSON). */
    if (!labels->image_class) {
        vt_dataset *ds = vt_calloc(1, sizeof *ds);
        if (!ds || !(ds->root = vt_strdup(path))) {
            free(ds);
            return VT_ERR_OUT_OF_MEMORY;
        }
        ds->task = task;
        ds->labels = labels;
        ds->policy = policy;
        ds->lenient = lenient;
        ds->ignore_value = 255;
        vt_status st = vt_detect_load(ds, path);
        if (st) {
            vt_dataset_destroy(ds);
            return st;
        }
        *out = ds;
        return VT_OK;
    }
    if (!is_dir(path)) {
        struct stat sb;
        if (stat(path, &sb) != 0)
            return vt_fail(VT_ERR_NOT_FOUND, "%s: no such dataset folder", path);
        return vt_fail(VT_ERR_DATASET, "%s: not a folder (expected an ImageFolder layout)", path);
    }
    vt_dataset *ds = vt_calloc(1, sizeof *ds);
    if (!ds || !(ds->root = vt_strdup(path))) {
        free(ds);
        return VT_ERR_OUT_OF_MEMORY;
    }
    ds->task = task;
    ds->labels = labels;
    ds->policy = policy;
    ds->lenient = lenient;
    char *train = join(path, "train");
    vt_status st = train ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    if (!st && !is_dir(train))
        st = vt_fail(VT_ERR_NOT_FOUND, "%s: no train/ folder (expected %s/train/<class>/<image>)",
                     path, path);
    if (!st) st = load_split(ds, train, &ds->split[VT_SPLIT_TRAIN], 1);
    if (!st && ds->split[VT_SPLIT_TRAIN].n == 0 && !ds->lenient)
        st = vt_fail(VT_ERR_DATASET, "%s: no class folder has images (.png, .jpg, .jpeg)", train);
    free(train);
    static const char *const val_names[] = {"val", "valid", "validation"};
    int val_found = -1;
    for (int i = 0; !st && i < 3; i++) {
        char *dir = join(path, val_names[i]);
        if (!dir) st = VT_ERR_OUT_OF_MEMORY;
        else if (is_dir(dir)) {
            st = load_split(ds, dir, &ds->split[VT_SPLIT_VAL], 0);
            val_found = i;
            i = 3;
        }
        free(dir);
    }
    /* ImageFolder has no file that declares a val split, so say when it is absent or empty,
     * as a data.yaml's missing `val` is (opening and validation alike) */
    if (!st && val_found < 0)
        st = vt_ds_problem_add(ds, path, 0, VT_PROBLEM_MISSING_SPLIT,
                               "no val/ (or valid/) split; training runs without validation");
    else if (!st && ds->split[VT_SPLIT_VAL].n == 0)
        st = vt_ds_problem_add(ds, path, 0, VT_PROBLEM_EMPTY_SPLIT,
                               "%s/ holds no images; training runs without validation",
                               val_names[val_found]);
    if (!st) {
        char *dir = join(path, "test");
        if (!dir) st = VT_ERR_OUT_OF_MEMORY;
        else if (is_dir(dir)) st = load_split(ds, dir, &ds->split[VT_SPLIT_TEST], 0);
        free(dir);
    }
    if (st) {
        vt_dataset_destroy(ds);
        return st;
    }
    *out = ds;
    return VT_OK;
}

VT_API vt_task vt_dataset_task(const vt_dataset *ds) { return ds ? ds->task : (vt_task)0; }
VT_API int vt_dataset_num_classes(const vt_dataset *ds) { return ds ? ds->num_classes : 0; }
VT_API const char *vt_dataset_last_error(const vt_dataset *ds) { return ds ? ds->err : ""; }

VT_API const char *vt_dataset_class_name(const vt_dataset *ds, int i)
{
    return ds && i >= 0 && i < ds->num_classes ? ds->class_names[i] : NULL;
}

static const vt_split_list *split_of(const vt_dataset *ds, vt_split s)
{
    return ds && (unsigned)s < 3 ? &ds->split[s] : NULL;
}

VT_API int vt_dataset_num_images(const vt_dataset *ds, vt_split s)
{
    const vt_split_list *sl = split_of(ds, s);
    return sl ? sl->n : 0;
}

VT_API const char *vt_dataset_image_path(const vt_dataset *ds, vt_split s, int i)
{
    const vt_split_list *sl = split_of(ds, s);
    return sl && i >= 0 && i < sl->n ? sl->paths[i] : NULL;
}

VT_API int vt_dataset_image_class(const vt_dataset *ds, vt_split s, int i)
{
    const vt_split_list *sl = split_of(ds, s);
    return sl && sl->labels && i >= 0 && i < sl->n ? sl->labels[i] : -1;
}
