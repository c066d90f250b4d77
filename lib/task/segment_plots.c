/* Segmentation's tile of the validation mosaics (task.h): the dataset's class mask of the image
 * and the model's prediction, both at the image's own size. */
#include "data/seg_mask.h"
#include "task/task.h"

vt_status vt_task_segment_tile(const vt_task_ctx *c, int i, const vt_image *img,
                               vt_task_tile *gt, vt_task_tile *pred)
{
    size_t px = (size_t)img->w * img->h;
    gt->mask = vt_malloc(px);
    pred->mask = vt_malloc(px);
    if (!gt->mask || !pred->mask) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = vt_seg_image_mask(c->ds, VT_SPLIT_VAL, i, img->w, img->h, gt->mask);
    if (st) return st;
    return vt_model_segment_pixels(c->model, img->data, img->w, img->h, img->c,
                                   (size_t)img->w * img->c, pred->mask);
}
