/* Private helpers shared by the detection dataset loaders (detect_data.c: data.yaml and YOLO
 * label files; detect_coco.c: COCO instances JSON; detect_util.c: what they share). */
#ifndef VT_DETECT_DATA_H
#define VT_DETECT_DATA_H

#include "data/dataset.h"

#include <sys/stat.h>

/* The problem list is capped so that a binary file read as labels cannot exhaust memory. */
#define VT_DS_MAX_PROBLEMS 10000

/* Record a problem; the message is "file:line: <fmt>" (or "file: <fmt>" when line is 0).
 * Fails only on memory exhaustion. */
vt_status vt_ds_problem_add(vt_dataset *ds, const char *file, int line, int code,
                            const char *fmt, ...) VT_PRINTF(5, 6);

/* A split under construction: paths and per-image box ranges grow together. */
typedef struct vt_det_builder {
    int n, cap;
    char **paths;
    int *start;          /* cap+1 entries */
    vt_det_box *boxes;
    int nbox, capbox;
    /* Segmentation: one polygon per box (all boxes come from vt_det_builder_poly) */
    vt_seg_poly *polys;
    float *xy;
    int nxy, capxy; /* points */
    /* Instance segmentation (set inst before the first image): box j owns the parts
     * parts[part_start[j] .. part_start[j+1]) (all boxes come from vt_det_builder_instance);
     * part_start has capbox + 1 entries. */
    int inst;
    int *part_start;
    vt_seg_poly *parts;
    int npart, cappart;
    int capstart; /* entries of part_start */
} vt_det_builder;

/* Append an image (path is taken over, freed on failure) with no boxes yet. */
vt_status vt_det_builder_image(vt_det_builder *b, char *path);
/* Append a box to the last image. */
vt_status vt_det_builder_box(vt_det_builder *b, const vt_det_box *box);
/* Append a polygon of npts normalised points (x, y pairs, copied) and its bounding box to the
 * last image.  A builder takes either only boxes or only polygons. */
vt_status vt_det_builder_poly(vt_det_builder *b, const vt_det_box *box, const float *xy,
                              int npts);
/* Append an object of nparts >= 1 polygon parts and its bounding box to the last image of an
 * instance builder (inst = 1): part k has part_npts[k] >= 3 normalised points, the parts'
 * points one after the other in xy (copied). */
vt_status vt_det_builder_instance(vt_det_builder *b, const vt_det_box *box, const float *xy,
                                  const int *part_npts, int nparts);
/* Remove the last image and its boxes (policy=skip). */
void vt_det_builder_pop(vt_det_builder *b);
/* Move the result into a split list and reset the builder. */
void vt_det_builder_finish(vt_det_builder *b, vt_split_list *sl);
void vt_det_builder_free(vt_det_builder *b);

/* Drop exact duplicates among the last image's boxes (same class and coordinates), keeping
 * the first; lines[k] is the source line of box k of that image and is compacted alongside.
 * Each dropped box is recorded as VT_PROBLEM_DUPLICATE in `file`.  With entry_name (COCO:
 * "annotations") lines[] are entry indices, named "annotations[i]" with no line number. */
vt_status vt_det_builder_dedupe(vt_det_builder *b, vt_dataset *ds, const char *file,
                                int *lines, const char *entry_name);

/* COCO instances JSON (detect_coco.c). */
vt_status vt_coco_load(vt_dataset *ds, const char *json_path);

/* Segmentation: make class 0 "background" and shift the object classes up by one (the
 * convention of visiontrain.h, "segmentation datasets").  Fails on memory exhaustion or when
 * the classes would not fit 8-bit masks. */
vt_status vt_seg_add_background(vt_dataset *ds, const char *file);

/* Helpers of detect_data.c used by both loaders. */
int vt_det_is_file(const char *path);
int vt_det_is_dir(const char *path);
/* Read a whole file (NUL-terminated); errors name the file. */
vt_status vt_det_read_file(const char *path, char **out, size_t *size);

/* What a path is, following symbolic links; a link that cannot be followed is told apart from
 * a path that is not there at all. */
enum {
    VT_ENT_NONE = 0, /* not there (or not reachable) */
    VT_ENT_FILE,     /* a regular file */
    VT_ENT_DIR,      /* a folder */
    VT_ENT_OTHER,    /* a device, socket, fifo */
    VT_ENT_LOOP,     /* a symbolic link in a loop (ELOOP) */
    VT_ENT_BROKEN    /* a symbolic link whose target does not exist (or cannot be reached) */
};
/* The kind of path; *sb (may be NULL) holds stat's answer for FILE, DIR and OTHER. */
int vt_det_entry(const char *path, struct stat *sb);
/* Why a link of kind VT_ENT_LOOP / VT_ENT_BROKEN cannot be followed, e.g. "symbolic link loop
 * (a.png -> b.png -> a.png)" or "symbolic link to 'gone.png', which does not exist". */
void vt_det_link_why(const char *path, int kind, char *buf, size_t cap);
/* Record such a link as a problem of `path` (VT_PROBLEM_SYMLINK_LOOP or _BROKEN_LINK):
 * "<path>: <why>; skipped". */
vt_status vt_det_link_problem(vt_dataset *ds, const char *path, int kind);
/* The problem code of a link kind. */
int vt_det_link_code(int kind);

/* `path` made absolute (against the working folder) and cleaned of ".", ".." and repeated
 * slashes by its text alone: symbolic links are not followed, so a linked-in images folder
 * stays inside the dataset.  NULL on memory exhaustion. */
char *vt_det_abs_path(const char *path);
/* Whether the clean absolute path lies in the clean absolute folder root (or is it). */
int vt_det_path_within(const char *path, const char *root);
/* Whether a relative path can leave the folder it is joined to: it is absolute or has a ".."
 * component. */
int vt_det_path_may_escape(const char *rel);

#endif
