/* Helper of tests/coco_metrics.py: scores a text file of ground truths and detections with the
 * library's evaluator (lib/task/detect_eval.c) and prints the metrics, so the Python side can
 * compare them with pycocotools on the same boxes or masks.
 *   usage: coco_eval_helper FILE
 * FILE: a first line "classes NC", then one object a line, grouped by image (the evaluator takes
 * one image at a time; an image's lines are contiguous).  Boxes (vt_det_eval_add):
 *   gt  IMAGE CLASS X0 Y0 X1 Y1
 *   det IMAGE CLASS X0 Y0 X1 Y1 SCORE
 * or masks (vt_det_eval_add_masks; one file holds one kind), a W x H bitmap given as N run
 * lengths over its row-major pixels, alternately background and foreground, background first
 * (they sum to W * H; every mask of an image has the same W and H):
 *   mgt  IMAGE CLASS W H N RUN...
 *   mdet IMAGE CLASS SCORE W H N RUN...
 * Output: "map50 V", "map50_95 V", "classes_with_gt N", then "class C AP50 AP50_95 NUM_GT" per
 * class (AP -1 without ground truth).  Exit status 0, or 1 with a message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task/detect_eval.h"
#include "visiontrain/visiontrain.h"

static int fail(const char *what, long line)
{
    fprintf(stderr, "coco_eval_helper: %s (line %ld): %s\n", what, line, vt_last_error());
    return 1;
}

/* The bitmaps of one image's detections and ground truths, appended plane by plane. */
typedef struct planes {
    uint8_t *v;
    size_t n, cap; /* bytes */
} planes;

static uint8_t *planes_add(planes *p, size_t bytes)
{
    if (p->n + bytes > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->n + bytes) cap *= 2;
        uint8_t *v = realloc(p->v, cap);
        if (!v) return NULL;
        p->v = v;
        p->cap = cap;
    }
    p->n += bytes;
    return p->v + p->n - bytes;
}

/* Reads "N RUN..." into a w x h plane; 0 on success. */
static int read_runs(FILE *f, uint8_t *m, int w, int h)
{
    long n, at = 0, total = (long)w * h;
    if (fscanf(f, "%ld", &n) != 1 || n < 0) return 1;
    for (long k = 0; k < n; k++) {
        long run;
        if (fscanf(f, "%ld", &run) != 1 || run < 0 || run > total - at) return 1;
        memset(m + at, (int)(k & 1), (size_t)run);
        at += run;
    }
    return at != total;
}

/* Hands the objects gathered for one image to the evaluator and empties the lists. */
static vt_status flush(vt_det_eval *ev, vt_det_list *det, vt_det_list *gt, int masks,
                       planes *dm, planes *gm, int w, int h)
{
    vt_status st = VT_OK;
    if (det->n || gt->n)
        st = masks ? vt_det_eval_add_masks(ev, det->v, det->n, dm->v, gt->v, gt->n, gm->v, w, h)
                   : vt_det_eval_add(ev, det->v, det->n, gt->v, gt->n);
    det->n = gt->n = 0;
    dm->n = gm->n = 0;
    return st;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int nc = 0;
    if (fscanf(f, " classes %d", &nc) != 1) {
        fprintf(stderr, "coco_eval_helper: %s: no 'classes NC' line\n", argv[1]);
        fclose(f);
        return 1;
    }
    vt_det_eval ev;
    vt_det_list det = {0}, gt = {0};
    planes dm = {0}, gm = {0};
    vt_status st = vt_det_eval_init(&ev, nc);
    long line = 1, image = -1;
    int masks = -1, w = 0, h = 0; /* masks: -1 until the first object says which kind */
    char kind[8];
    int rc = st ? fail("init", line) : 0;
    while (!rc && fscanf(f, " %7s", kind) == 1) {
        line++;
        long img;
        vt_det d = {0};
        int is_det = strcmp(kind, "det") == 0 || strcmp(kind, "mdet") == 0;
        int is_mask = kind[0] == 'm', ok, mw = 0, mh = 0;
        if (!is_det && strcmp(kind, is_mask ? "mgt" : "gt") != 0) ok = 0;
        else if (is_mask)
            ok = fscanf(f, "%ld %d", &img, &d.cls) == 2 &&
                 (!is_det || fscanf(f, "%f", &d.score) == 1) &&
                 fscanf(f, "%d %d", &mw, &mh) == 2 && mw > 0 && mh > 0;
        else
            ok = fscanf(f, "%ld %d %f %f %f %f", &img, &d.cls, &d.x0, &d.y0, &d.x1, &d.y1) == 6 &&
                 (!is_det || fscanf(f, "%f", &d.score) == 1);
        if (ok && masks >= 0 && masks != is_mask) ok = 0; /* boxes and masks mixed */
        if (!ok) {
            fprintf(stderr, "coco_eval_helper: %s: bad line %ld\n", argv[1], line);
            rc = 1;
            break;
        }
        masks = is_mask;
        if (img != image && (st = flush(&ev, &det, &gt, masks, &dm, &gm, w, h)))
            rc = fail("add", line);
        if (!rc && is_mask && img == image && (mw != w || mh != h)) {
            fprintf(stderr, "coco_eval_helper: line %ld: mask size changes in an image\n", line);
            rc = 1;
        }
        image = img;
        w = mw, h = mh;
        if (!rc && (st = vt_det_list_push(is_det ? &det : &gt, &d))) rc = fail("push", line);
        if (!rc && is_mask) {
            uint8_t *m = planes_add(is_det ? &dm : &gm, (size_t)w * (size_t)h);
            if (!m || read_runs(f, m, w, h)) {
                fprintf(stderr, "coco_eval_helper: line %ld: bad or unstored mask runs\n", line);
                rc = 1;
            }
        }
    }
    if (!rc && (st = flush(&ev, &det, &gt, masks, &dm, &gm, w, h))) rc = fail("add", line);
    vt_det_metrics m;
    if (!rc && (st = vt_det_eval_compute(&ev, -1, &m))) rc = fail("compute", line);
    if (!rc) {
        printf("map50 %.17g\nmap50_95 %.17g\nclasses_with_gt %d\n", m.map50, m.map50_95,
               m.classes_with_gt);
        for (int c = 0; c < nc; c++)
            printf("class %d %.17g %.17g %lld\n", c, m.ap50[c], m.ap50_95[c],
                   (long long)m.num_gt[c]);
    }
    vt_det_list_free(&det);
    vt_det_list_free(&gt);
    free(dm.v);
    free(gm.v);
    vt_det_eval_free(&ev);
    fclose(f);
    return rc;
}
