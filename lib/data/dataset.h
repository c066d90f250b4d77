/* The vt_dataset handle: an index of image paths and labels (no pixels). */
#ifndef VT_DATASET_H
#define VT_DATASET_H

#include "core/core.h"

/* One ground-truth box: class id and centre/size normalised to 0..1 of the image. */
typedef struct vt_det_box {
    int cls;
    float cx, cy, w, h;
} vt_det_box;

/* One segmentation polygon: its class (a dataset class id: object class + 1, since class 0 is
 * "background"), npts >= 3 points at poly_xy[2*off .. 2*(off+npts)) as x, y pairs normalised
 * to 0..1 of the image. */
typedef struct vt_seg_poly {
    int cls;
    int npts;
    int off; /* in points */
} vt_seg_poly;

typedef struct vt_split_list {
    int n;
    char **paths;
    int *labels;       /* classification: class id per image; NULL for detection */
    /* Detection: image i owns boxes[box_start[i] .. box_start[i+1]); box_start has n+1
     * entries.  Both NULL for classification. */
    int *box_start;
    vt_det_box *boxes;
    /* Semantic segmentation polygon datasets (YOLO-seg, COCO; labels->masks): polys[j] is the
     * outline of boxes[j] (one polygon per box, same order, so image i owns
     * polys[box_start[i] .. box_start[i+1])), its points in poly_xy.  NULL otherwise. */
    vt_seg_poly *polys;
    float *poly_xy;
    /* Instance segmentation datasets (labels->instances): object j (boxes[j]) is the union of
     * its parts parts[part_start[j] .. part_start[j+1]) (at least one each: a YOLO-seg line is
     * one part, a COCO annotation one part per polygon or per traced RLE region), polygons
     * whose cls is the object's class (not shifted) and whose points are in poly_xy; boxes[j]
     * is the bounding box of all its parts.  part_start has box_start[n] + 1 entries.  Both
     * NULL in other datasets; polys is NULL in instance datasets. */
    int *part_start;
    vt_seg_poly *parts;
    /* Segmentation mask layout (data.yaml `masks:`): the class-id PNG of each image; NULL
     * otherwise (and then boxes are empty). */
    char **mask_paths;
} vt_split_list;

/* A problem found while opening (bad label line, missing image, ...); see "detection datasets" in visiontrain.h. */
typedef struct vt_ds_problem {
    char *file;
    int line;
    int code; /* vt_problem_code */
    char *message;
} vt_ds_problem;

/* What happens to a problem (vt_dataset_open_ex's policy=). */
enum { VT_DS_POLICY_DROP = 0, VT_DS_POLICY_SKIP = 1, VT_DS_POLICY_FAIL = 2 };

/* What a task's dataset is labelled with.  The format readers, the tools and the loader test
 * these, never the task: vt_task_labels (dataset.c) is the one place lib/data maps a task to
 * its labels, so a new task that labels like an existing one (or combines them: instance
 * segmentation = boxes + instances) is one line there. */
typedef struct vt_labels {
    vt_task task;
    unsigned char image_class; /* one class per image: the ImageFolder layout */
    unsigned char boxes;       /* objects' boxes: data.yaml / COCO layouts */
    unsigned char masks;       /* semantic segmentation: a per-pixel class map, from polygons
                                * (class 0 is the added "background", object classes shift by
                                * one) or from mask PNGs; `masks:`/`ignore:` in data.yaml */
    unsigned char instances;   /* instance segmentation: each object (box) has its own outline
                                * of one or more polygon parts (split_list.parts), classes as
                                * detection's (no background, no shift); COCO RLE decoded */
} vt_labels;

/* Whether a dataset's labels are polygons read from YOLO-seg lines or COCO `segmentation`
 * (semantic polygon datasets and instance datasets alike). */
static inline int vt_labels_polygons(const vt_labels *l) { return l->masks || l->instances; }

/* The labels of a task's datasets, NULL for an unknown task. */
const vt_labels *vt_task_labels(vt_task task);

struct vt_dataset {
    char err[VT_ERRMSG_MAX];
    vt_task task;
    const vt_labels *labels; /* vt_task_labels(task), never NULL once opened */
    char *root;
    int num_classes;
    char **class_names;
    vt_split_list split[3]; /* VT_SPLIT_TRAIN, VAL, TEST */
    vt_ds_problem *problems;
    int num_problems, cap_problems;
    int policy;     /* VT_DS_POLICY_*, set before loading */
    int lenient;    /* validation: an empty train split becomes a problem, not a failure */
    int skipped[3]; /* images of each split left out by policy=skip for a label problem */
    int corrupt[3]; /* images of each split left out by decode=1 (unreadable, corrupt, ...) */
    int size_limited[3]; /* ... and those left out for their size (too small or too large) */
    /* Segmentation: 1 for the mask-PNG layout, 0 for polygons; the mask value that marks
     * pixels excluded from loss and metrics (255 unless data.yaml says `ignore:`). */
    int seg_masks;
    int ignore_value;
    char *masks_name; /* the `masks:` folder name of the mask layout, else NULL */
};

/* Options of vt_dataset_open_ex / vt_dataset_validate (validate.c). */
typedef struct vt_ds_options {
    int policy;
    int decode;
    int min_size;
    int workers;
} vt_ds_options;
vt_status vt_ds_options_parse(const char *options, vt_ds_options *o, int allow_decode);

/* Allocate a dataset handle with task, root, policy and lenient set, then load it (ImageFolder
 * or detection); on failure *out is NULL. */
vt_status vt_dataset_load(vt_dataset **out, vt_task task, const char *path, int policy,
                          int lenient);

/* Detection loader (detect_data.c): `ds` is allocated with task and root set; fills classes,
 * splits and problems. */
vt_status vt_detect_load(vt_dataset *ds, const char *path);

#endif
