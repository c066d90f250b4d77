/* Letterbox geometry and resize (letterbox.h). */
#include "image/letterbox.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

vt_status vt_letterbox_geometry(int src_w, int src_h, int dst_w, int dst_h, int scaleup,
                                vt_letterbox *lb)
{
    if (!lb || src_w < 1 || src_h < 1 || dst_w < 1 || dst_h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "letterbox: bad sizes %dx%d -> %dx%d", src_w,
                       src_h, dst_w, dst_h);
    double r = fmin((double)dst_w / src_w, (double)dst_h / src_h);
    if (!scaleup && r > 1.0) r = 1.0;
    int nw = (int)lround(src_w * r), nh = (int)lround(src_h * r);
    nw = nw < 1 ? 1 : nw > dst_w ? dst_w : nw;
    nh = nh < 1 ? 1 : nh > dst_h ? dst_h : nh;
    lb->src_w = src_w;
    lb->src_h = src_h;
    lb->dst_w = dst_w;
    lb->dst_h = dst_h;
    lb->new_w = nw;
    lb->new_h = nh;
    lb->pad_x = (dst_w - nw) / 2; /* the odd pixel goes right/bottom, as in Ultralytics */
    lb->pad_y = (dst_h - nh) / 2;
    lb->sx = (float)nw / (float)src_w;
    lb->sy = (float)nh / (float)src_h;
    return VT_OK;
}

vt_status vt_letterbox_fit(int src_w, int src_h, int size, int multiple, int scaleup,
                           vt_letterbox *lb)
{
    vt_status st = vt_letterbox_geometry(src_w, src_h, size, size, scaleup, lb);
    if (st) return st;
    if (multiple < 1) multiple = 1;
    lb->dst_w = (lb->new_w + multiple - 1) / multiple * multiple;
    lb->dst_h = (lb->new_h + multiple - 1) / multiple * multiple;
    if (lb->dst_w > size) lb->dst_w = size; /* size is a multiple of it */
    if (lb->dst_h > size) lb->dst_h = size;
    lb->pad_x = (lb->dst_w - lb->new_w) / 2;
    lb->pad_y = (lb->dst_h - lb->new_h) / 2;
    return VT_OK;
}

void vt_letterbox_forward(const vt_letterbox *lb, float box[4])
{
    box[0] = box[0] * lb->sx + lb->pad_x;
    box[2] = box[2] * lb->sx + lb->pad_x;
    box[1] = box[1] * lb->sy + lb->pad_y;
    box[3] = box[3] * lb->sy + lb->pad_y;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

void vt_letterbox_inverse(const vt_letterbox *lb, float box[4])
{
    box[0] = clampf((box[0] - lb->pad_x) / lb->sx, 0, (float)lb->src_w);
    box[2] = clampf((box[2] - lb->pad_x) / lb->sx, 0, (float)lb->src_w);
    box[1] = clampf((box[1] - lb->pad_y) / lb->sy, 0, (float)lb->src_h);
    box[3] = clampf((box[3] - lb->pad_y) / lb->sy, 0, (float)lb->src_h);
}

vt_status vt_letterbox_image(const vt_image *src, int dst_w, int dst_h, int scaleup,
                             uint8_t pad, vt_image *dst, vt_letterbox *lb)
{
    if (!src || !dst || !lb) return vt_fail(VT_ERR_INVALID_ARGUMENT, "letterbox: NULL argument");
    vt_status st = vt_letterbox_geometry(src->w, src->h, dst_w, dst_h, scaleup, lb);
    return st ? st : vt_letterbox_apply(src, lb, pad, dst);
}

vt_status vt_letterbox_apply(const vt_image *src, const vt_letterbox *lb, uint8_t pad,
                             vt_image *dst)
{
    int dst_w = lb->dst_w, dst_h = lb->dst_h;
    vt_image rs = {0, 0, 0, NULL};
    vt_status st = vt_image_resize(src, lb->new_w, lb->new_h, &rs);
    if (st) return st;
    int c = src->c;
    uint8_t *out = vt_malloc((size_t)dst_w * dst_h * c);
    if (!out) {
        vt_image_free(&rs);
        return VT_ERR_OUT_OF_MEMORY;
    }
    memset(out, pad, (size_t)dst_w * dst_h * c);
    for (int y = 0; y < lb->new_h; y++)
        memcpy(out + ((size_t)(y + lb->pad_y) * dst_w + lb->pad_x) * c,
               rs.data + (size_t)y * lb->new_w * c, (size_t)lb->new_w * c);
    vt_image_free(&rs);
    dst->w = dst_w;
    dst->h = dst_h;
    dst->c = c;
    dst->data = out;
    return VT_OK;
}
