/* Prediction with a segmentation model: letterbox, forward on the model's CPU predictor, the
 * best class of every canvas pixel, sampled back (nearest) at the image's own pixels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "image/image.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "image/letterbox.h"

static vt_status segment_image(vt_model *m, const vt_image *img, uint8_t *mask)
{
    if (m->task != VT_TASK_SEGMENT)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s is not a segmentation model", m->arch);
    vt_letterbox lb;
    vt_status st = vt_model_forward_letterbox(m, img, &lb);
    if (st) return st;
    vt_exec *e = m->pred_exec;
    int W = lb.dst_w, H = lb.dst_h, K = m->num_classes; /* the canvas */
    size_t hw = (size_t)W * H;
    float *logits = vt_malloc((size_t)K * hw * sizeof(float));
    uint8_t *best = vt_malloc(hw);
    if (!logits || !best) st = VT_ERR_OUT_OF_MEMORY;
    if (!st)
        st = m->pred_be->ops->download(m->pred_be, logits,
                                        e->g->nodes[m->output_node].y, (size_t)K * hw * sizeof(float));
    if (!st) {
        for (size_t i = 0; i < hw; i++) {
            int b = 0;
            float bv = logits[i];
            for (int k = 1; k < K; k++)
                if (logits[(size_t)k * hw + i] > bv) bv = logits[(size_t)k * hw + i], b = k;
            best[i] = (uint8_t)b;
        }
        for (int y = 0; y < img->h; y++) {
            int cy = lb.pad_y + (int)floor((y + 0.5) * lb.new_h / (double)img->h);
            cy = cy < 0 ? 0 : cy >= H ? H - 1 : cy;
            for (int x = 0; x < img->w; x++) {
                int cx = lb.pad_x + (int)floor((x + 0.5) * lb.new_w / (double)img->w);
                cx = cx < 0 ? 0 : cx >= W ? W - 1 : cx;
                mask[(size_t)y * img->w + x] = best[(size_t)cy * W + cx];
            }
        }
    }
    free(logits);
    free(best);
    return st;
}

VT_API vt_status vt_model_segment_file(vt_model *m, const char *path, uint8_t *mask, size_t cap,
                                       int *width, int *height)
{
    static const char call[] = "vt_model_segment_file";
    if (!m || !path || !width || !height)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: NULL argument", call);
    *width = *height = 0;
    vt_status st = vt_buffer_args(call, mask, cap);
    if (st) return vt_err_capture(m->err, st);
    if (m->task != VT_TASK_SEGMENT)
        return vt_err_capture(m->err, vt_fail(VT_ERR_UNSUPPORTED,
                                              "%s is not a segmentation model", m->arch));
    vt_image img;
    if ((st = vt_image_load(path, &img))) return vt_err_capture(m->err, st);
    *width = img.w;
    *height = img.h;
    st = vt_buffer_fits(call, mask, cap, (size_t)img.w * img.h, "bytes");
    if (st) vt_fail_context("%s (%dx%d)", path, img.w, img.h);
    else if (mask) st = segment_image(m, &img, mask);
    vt_image_free(&img);
    return vt_err_capture(m->err, st);
}

VT_API vt_status vt_model_segment_pixels(vt_model *m, const uint8_t *pixels, int width,
                                         int height, int channels, size_t stride, uint8_t *mask)
{
    if (!m || !pixels || !mask)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_segment_pixels: NULL argument");
    vt_image img;
    vt_status st = vt_model_pixels_image(pixels, width, height, channels, stride, &img);
    if (!st) {
        st = segment_image(m, &img, mask);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}
