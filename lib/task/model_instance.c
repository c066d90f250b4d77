/* Prediction with an instance segmentation model: letterbox, forward on the model's CPU
 * predictor, decode (instance.h), boxes back to the image's pixels and each mask sampled
 * (nearest) from the mask grid at the image's own pixels. */
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "image/image.h"
#include "image/letterbox.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "task/instance.h"

/* The four arrays count as one buffer of instances: present when all four are.  map: NULL, or
 * the masks painted into one image-sized class map instead of planes (masks unused; see
 * vt_iseg_tile_predict). */
static vt_status instance_image(vt_model *m, const char *call, const vt_image *img, float conf,
                                float iou, int max_det, int *classes, float *scores,
                                float *boxes, uint8_t *masks, uint8_t *map, int cap, int *count)
{
    if (m->task != VT_TASK_INSTANCE)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s is not an instance segmentation model", m->arch);
    void *buf = classes && scores && boxes && (masks || map) ? (void *)classes : NULL;
    vt_status st = vt_buffer_args_int(call, buf, cap);
    if (st) return st;
    if (!(conf >= 0 && conf <= 1) || !(iou >= 0 && iou <= 1))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: conf=%g and iou=%g must be in 0..1", call,
                       (double)conf, (double)iou);
    vt_letterbox lb;
    if ((st = vt_model_forward_letterbox(m, img, &lb))) return st;
    vt_exec *e = m->pred_exec;
    const vt_graph *g = e->g;
    const vt_node *o[3] = {&g->nodes[m->outputs[0]], &g->nodes[m->outputs[1]],
                           &g->nodes[m->outputs[2]]};
    float *host[3] = {0};
    for (int i = 0; i < 3 && !st; i++) {
        size_t nv = (size_t)o[i]->out.c * o[i]->out.h * o[i]->out.w;
        if (!(host[i] = vt_malloc(nv * sizeof(float)))) st = VT_ERR_OUT_OF_MEMORY;
        else st = m->pred_be->ops->download(m->pred_be, host[i], o[i]->y, nv * sizeof(float));
    }
    vt_iseg_heads h = {host[0], host[1], host[2], 1, m->num_classes, o[1]->out.c, o[2]->out.h,
                       o[2]->out.w, (float)lb.dst_w / (float)o[2]->out.w, 0, {{0}}};
    h.n_levels = vt_det_head_levels(g, m->output_node, lb.dst_w, h.level);
    vt_iseg_decoder dec = {0};
    int n = 0;
    if (!st) st = vt_iseg_decode(&h, 0, conf, iou, max_det, &dec, &n);
    if (!st) {
        *count = n;
        st = vt_buffer_fits_int(call, buf, cap, (size_t)n, "instances");
    }
    if (!st && buf) {
        size_t W = (size_t)img->w, H = (size_t)img->h, HW = (size_t)h.mh * h.mw;
        /* the worst first: in a class map the best one's mask lies on top */
        for (int k = n - 1; k >= 0; k--) {
            const vt_det *d = &dec.dets[k];
            float b[4] = {d->x0, d->y0, d->x1, d->y1};
            vt_letterbox_inverse(&lb, b);
            classes[k] = d->cls;
            scores[k] = d->score;
            memcpy(boxes + 4 * (size_t)k, b, sizeof b);
            /* image pixel (x, y) is canvas pixel (pad + (x + 0.5) * scale), then mask pixel */
            uint8_t *dst = map ? map : masks + (size_t)k * W * H;
            const uint8_t *src = dec.masks + (size_t)k * HW;
            if (map && d->cls >= 255) continue; /* not a class a byte holds */
            for (size_t y = 0; y < H; y++) {
                int my = (int)((lb.pad_y + (y + 0.5f) * lb.sy) / h.mstride);
                if (my >= h.mh) my = h.mh - 1;
                for (size_t x = 0; x < W; x++) {
                    int mx = (int)((lb.pad_x + (x + 0.5f) * lb.sx) / h.mstride);
                    if (mx >= h.mw) mx = h.mw - 1;
                    uint8_t v = src[(size_t)my * h.mw + mx];
                    if (!map) dst[y * W + x] = v;
                    else if (v) dst[y * W + x] = (uint8_t)d->cls;
                }
            }
        }
    }
    vt_iseg_decoder_free(&dec);
    for (int i = 0; i < 3; i++) free(host[i]);
    return st;
}

VT_API vt_status vt_model_instances_file(vt_model *m, const char *path, float conf, float iou,
                                         int max_det, int *width, int *height, int *classes,
                                         float *scores, float *boxes, uint8_t *masks, int cap,
                                         int *count)
{
    if (!m || !path || !count)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_instances_file: NULL argument");
    *count = 0;
    vt_image img;
    vt_status st = vt_image_load(path, &img);
    if (!st) {
        if (width) *width = img.w;
        if (height) *height = img.h;
        st = instance_image(m, "vt_model_instances_file", &img, conf, iou, max_det, classes,
                            scores, boxes, masks, NULL, cap, count);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}

VT_API vt_status vt_model_instances_pixels(vt_model *m, const uint8_t *pixels, int width,
                                           int height, int channels, size_t stride, float conf,
                                           float iou, int max_det, int *classes, float *scores,
                                           float *boxes, uint8_t *masks, int cap, int *count)
{
    if (!m || !pixels || !count)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_instances_pixels: NULL argument");
    *count = 0;
    vt_image img;
    vt_status st = vt_model_pixels_image(pixels, width, height, channels, stride, &img);
    if (!st) {
        st = instance_image(m, "vt_model_instances_pixels", &img, conf, iou, max_det, classes,
                            scores, boxes, masks, NULL, cap, count);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}

vt_status vt_iseg_tile_predict(vt_model *m, const vt_image *img, float conf, float iou, int cap,
                               int *classes, float *scores, float *boxes, int *count,
                               uint8_t *map)
{
    *count = 0;
    return instance_image(m, "validation mosaic", img, conf, iou, cap, classes, scores, boxes,
                          NULL, map, cap, count);
}
