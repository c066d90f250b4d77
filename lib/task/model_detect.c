/* Prediction with a detection model: letterbox, forward on the model's CPU predictor, decode
 * the head (lib/backend/det_loss_math.h layout), NMS, boxes back to the image's pixels. */
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "image/image.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "task/detect_eval.h"

/* The three arrays count as one buffer of detections: present when all three are. */
static vt_status detect_image(vt_model *m, const char *call, const vt_image *img, float conf,
                              float iou, int max_det, int *classes, float *scores, float *boxes,
                              int cap, int *count)
{
    if (m->task != VT_TASK_DETECT)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s is not a detection model: use "
                       "vt_model_predict_file / vt_model_predict_pixels", m->arch);
    void *buf = classes && scores && boxes ? (void *)classes : NULL;
    vt_status st = vt_buffer_args_int(call, buf, cap);
    if (st) return st;
    if (!(conf >= 0 && conf <= 1) || !(iou >= 0 && iou <= 1))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "detect: conf=%g and iou=%g must be in 0..1",
                       (double)conf, (double)iou);
    if (max_det <= 0) max_det = 300;
    vt_letterbox lb;
    if ((st = vt_model_forward_letterbox(m, img, &lb))) return st;
    vt_exec *e = m->pred_exec;
    const vt_node *out = &e->g->nodes[m->output_node];
    int nc = m->num_classes;
    vt_det_level lv[VT_DET_MAX_LEVELS];
    int nl = vt_det_head_levels(e->g, m->output_node, lb.dst_w, lv);
    size_t nv = (size_t)(4 + nc) * out->out.h * out->out.w;
    float *head = vt_malloc(nv * sizeof(float)), *scratch = vt_malloc(nv * sizeof(float));
    vt_det_list dets = {0};
    if (!head || !scratch) st = VT_ERR_OUT_OF_MEMORY;
    if (!st) st = m->pred_be->ops->download(m->pred_be, head, out->y, nv * sizeof(float));
    if (!st)
        st = vt_det_head_decode(head, 1, 0, nc, lv, nl, conf, iou, max_det, scratch, &dets);
    if (!st) {
        *count = dets.n;
        st = vt_buffer_fits_int(call, buf, cap, (size_t)dets.n, "detections");
    }
    if (!st && buf) {
        for (int k = 0; k < dets.n; k++) {
            const vt_det *d = &dets.v[k];
            float b[4] = {d->x0, d->y0, d->x1, d->y1};
            vt_letterbox_inverse(&lb, b);
            classes[k] = d->cls;
            scores[k] = d->score;
            memcpy(boxes + 4 * (size_t)k, b, sizeof b);
        }
    }
    free(head);
    free(scratch);
    vt_det_list_free(&dets);
    return st;
}

VT_API vt_status vt_model_detect_file(vt_model *m, const char *path, float conf, float iou,
                                      int max_det, int *classes, float *scores, float *boxes,
                                      int cap, int *count)
{
    if (!m || !path || !count)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_detect_file: NULL argument");
    *count = 0;
    vt_image img;
    vt_status st = vt_image_load(path, &img);
    if (!st) {
        st = detect_image(m, "vt_model_detect_file", &img, conf, iou, max_det, classes, scores,
                          boxes, cap, count);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}

VT_API vt_status vt_model_detect_pixels(vt_model *m, const uint8_t *pixels, int width,
                                        int height, int channels, size_t stride, float conf,
                                        float iou, int max_det, int *classes, float *scores,
                                        float *boxes, int cap, int *count)
{
    if (!m || !pixels || !count)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_detect_pixels: NULL argument");
    *count = 0;
    vt_image img;
    vt_status st = vt_model_pixels_image(pixels, width, height, channels, stride, &img);
    if (!st) {
        st = detect_image(m, "vt_model_detect_pixels", &img, conf, iou, max_det, classes, scores,
                          boxes, cap, count);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}
