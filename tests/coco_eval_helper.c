/* Helper of tests/coco_metrics.py: scores a text file of ground truths and detections with the
 * library's evaluator (lib/train/detect_eval.c) and prints the metrics, so the Python side can
 * compare them with pycocotools on the same boxes.
 *   usage: coco_eval_helper FILE
 * FILE: a first line "classes NC", then one box per line, grouped by image (the evaluator takes
 * one image at a time; an image's lines are contiguous):
 *   gt  IMAGE CLASS X0 Y0 X1 Y1
 *   det IMAGE CLASS X0 Y0 X1 Y1 SCORE
 * Output: "map50 V", "map50_95 V", "classes_with_gt N", then "class C AP50 AP50_95 NUM_GT" per
 * class (AP -1 without ground truth).  Exit status 0, or 1 with a message on stderr. */
#include <stdio.h>
#include <string.h>

#include "task/detect_eval.h"
#include "visiontrain/visiontrain.h"

static int fail(const char *what, long line)
{
    fprintf(stderr, "coco_eval_helper: %s (line %ld): %s\n", what, line, vt_last_error());
    return 1;
}

/* Hands the boxes gathered for one image to the evaluator and empties the lists. */
static vt_status flush(vt_det_eval *ev, vt_det_list *det, vt_det_list *gt)
{
    vt_status st = VT_OK;
    if (det->n || gt->n) st = vt_det_eval_add(ev, det->v, det->n, gt->v, gt->n);
    det->n = gt->n = 0;
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
    vt_status st = vt_det_eval_init(&ev, nc);
    long line = 1, image = -1;
    char kind[8];
    int rc = st ? fail("init", line) : 0;
    while (!rc && fscanf(f, " %7s", kind) == 1) {
        line++;
        long img;
        vt_det d = {0};
        int is_det = strcmp(kind, "det") == 0;
        int n = fscanf(f, "%ld %d %f %f %f %f", &img, &d.cls, &d.x0, &d.y0, &d.x1, &d.y1);
        if (n == 6 && is_det) n += fscanf(f, "%f", &d.score);
        if (n != (is_det ? 7 : 6) || (!is_det && strcmp(kind, "gt") != 0)) {
            fprintf(stderr, "coco_eval_helper: %s: bad line %ld\n", argv[1], line);
            rc = 1;
            break;
        }
        if (img != image && (st = flush(&ev, &det, &gt))) rc = fail("add", line);
        image = img;
        if (!rc && (st = vt_det_list_push(is_det ? &det : &gt, &d))) rc = fail("push", line);
    }
    if (!rc && (st = flush(&ev, &det, &gt))) rc = fail("add", line);
    vt_det_metrics m;
    if (!rc && (st = vt_det_eval_compute(&ev, -1, &m))) rc = fail("compute", line);
    if (!rc) {
        printf("map50 %.10f\nmap50_95 %.10f\nclasses_with_gt %d\n", m.map50, m.map50_95,
               m.classes_with_gt);
        for (int c = 0; c < nc; c++)
            printf("class %d %.10f %.10f %lld\n", c, m.ap50[c], m.ap50_95[c],
                   (long long)m.num_gt[c]);
    }
    vt_det_list_free(&det);
    vt_det_list_free(&gt);
    vt_det_eval_free(&ev);
    fclose(f);
    return rc;
}
