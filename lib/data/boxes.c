/* Detection boxes: lists and IoU (boxes.h). */
#include "data/boxes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

vt_status vt_det_list_push(vt_det_list *l, const vt_det *d)
{
    if (l->n == l->cap) {
        if (l->cap > (1 << 28)) return vt_fail(VT_ERR_OUT_OF_MEMORY, "too many detections");
        int cap = l->cap ? l->cap * 2 : 256;
        vt_det *v = vt_realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return VT_ERR_OUT_OF_MEMORY;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *d;
    return VT_OK;
}

void vt_det_list_free(vt_det_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

float vt_det_iou(const vt_det *a, const vt_det *b)
{
    float iw = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0);
    float ih = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
    if (!(iw > 0) || !(ih > 0)) return 0.0f;
    float inter = iw * ih;
    float ua = (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) - inter;
    return ua > 0 ? inter / ua : 0.0f;
}
