/* The segmentation models: the seg-n/s/m family, a short training run that must learn within
 * CI time, and mask prediction (file and pixels, save/load). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "testutil.h"
#include "visiontrain/visiontrain.h"

START_TEST(test_family)
{
    static const char *const names[3] = {"seg-n", "seg-s", "seg-m"};
    uint64_t prev = 0;
    for (int i = 0; i < 3; i++) {
        vt_model *m;
        ck_assert_msg(vt_model_create(&m, names[i], 4, "imgsz=64") == VT_OK, "%s: %s", names[i],
                      vt_last_error());
        ck_assert_int_eq(vt_model_task(m), VT_TASK_SEGMENT);
        ck_assert_msg(vt_model_num_params(m) > prev, "%s not larger", names[i]);
        prev = vt_model_num_params(m);
        const vt_node *o = &m->graph.nodes[m->output_node];
        ck_assert_int_eq(o->out.c, 4);
        ck_assert_int_eq(o->out.h, 64); /* full resolution */
        ck_assert_int_eq(o->out.w, 64);
        vt_model_destroy(m);
    }
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "seg-n", 2, NULL), VT_OK);
    ck_assert_int_eq(vt_model_imgsz(m), 512); /* segmentation default */
    uint8_t px[3 * 20 * 10] = {0}, mask[200];
    float s[2];
    int n = 0;
    ck_assert_int_eq(vt_model_predict_pixels(m, px, 20, 10, 3, 60, s, 2), VT_ERR_UNSUPPORTED);
    ck_assert_int_eq(vt_model_detect_pixels(m, px, 20, 10, 3, 60, 0.25f, 0.7f, 0, NULL, NULL,
                                            NULL, 0, &n), VT_ERR_UNSUPPORTED);
    vt_model_destroy(m);
    ck_assert_int_eq(vt_model_create(&m, "seg-s", 3, "imgsz=48"), VT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(vt_model_create(&m, "cls-n", 3, "imgsz=32"), VT_OK);
    ck_assert_int_eq(vt_model_segment_pixels(m, px, 20, 10, 3, 60, mask), VT_ERR_UNSUPPORTED);
    vt_model_destroy(m);
}
END_TEST

/* Foreground IoU of a predicted mask against the dataset's (class-agnostic: object vs
 * background). */
static double fg_iou(const uint8_t *a, const uint8_t *b, size_t n, int ignore)
{
    size_t inter = 0, uni = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == ignore) continue;
        int fa = a[i] != 0, fb = b[i] != 0;
        inter += fa && fb;
        uni += fa || fb;
    }
    return uni ? (double)inter / uni : 1.0;
}

START_TEST(test_train_learns)
{
    const char *dir = vt_test_path("shapes");
    ck_assert_int_eq(vt_synth_generate(dir, VT_TASK_SEGMENT,
                                       "classes=3 train=200 val=40 imgsz=64 seed=4 max_objects=2"),
                     VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, VT_TASK_SEGMENT, dir), VT_OK);
    ck_assert_int_eq(vt_dataset_num_classes(ds), 4); /* background + 3 shapes */
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "seg-n", 4, "imgsz=64"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    static const char *const opts[] = {"epochs=10", "batch=16", "optimizer=adamw", "lr0=0.003",
                                       "save=0", "workers=2", "seed=0"};
    for (int i = 0; i < 7; i++) ck_assert_int_eq(vt_trainer_set(t, opts[i]), VT_OK);
    vt_test_learning_opts(t);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    double miou = 0, acc = 0, loss = 0;
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_MIOU, &miou), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_PIXEL_ACC, &acc), VT_OK);
    ck_assert_int_eq(vt_trainer_metric(t, VT_METRIC_VAL_LOSS, &loss), VT_OK);
    vt_test_learned("seg-n", "mIoU %.4f pixel-acc %.4f", miou, acc);
    /* All-background would give mIoU ~0.2 and pixel accuracy ~0.85 here. */
    ck_assert_msg(miou > 0.3 && acc > 0.88, "mIoU %.4f pixel accuracy %.4f (val loss %.4f)", miou,
                  acc, loss);
    /* Predicted masks find the objects of validation images. */
    int ignore = vt_dataset_ignore_value(ds);
    double sum = 0, agree[2] = {0, 0};
    int imgs = 0;
    for (int i = 0; i < vt_dataset_num_images(ds, VT_SPLIT_VAL) && imgs < 10; i++) {
        if (vt_dataset_num_polygons(ds, VT_SPLIT_VAL, i) == 0) continue;
        int w = 0, h = 0;
        const char *path = vt_dataset_image_path(ds, VT_SPLIT_VAL, i);
        ck_assert_int_eq(vt_model_segment_file(m, path, NULL, 0, &w, &h), VT_OK); /* size */
        ck_assert_int_eq(w, 64);
        ck_assert_int_eq(h, 64);
        uint8_t pred[64 * 64], gt[64 * 64];
        ck_assert_int_eq(vt_model_segment_file(m, path, pred, sizeof pred, &w, &h), VT_OK);
        ck_assert_int_eq(vt_dataset_mask(ds, VT_SPLIT_VAL, i, gt, 64, 64), VT_OK);
        for (int k = 0; k < 64 * 64; k++) ck_assert_int_lt(pred[k], 4);
        sum += fg_iou(pred, gt, sizeof pred, ignore);
        imgs++;
        /* The top half (64 x 32) and the left half (32 x 64) run on canvases of their own
         * size (the smallest of multiples of 32 at the model's scale); their masks are, but
         * near the cut, the whole image's there. */
        vt_image im;
        ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
        for (int o = 0; o < 2; o++) {
            int hw = o ? 32 : 64, hh = o ? 64 : 32, same = 0;
            uint8_t half[64 * 32];
            ck_assert_int_eq(vt_model_segment_pixels(m, im.data, hw, hh, 3, 64 * 3, half), VT_OK);
            ck_assert(m->pred_exec->w == hw && m->pred_exec->h == hh);
            for (int y = 0; y < hh; y++)
                for (int x = 0; x < hw; x++) same += half[y * hw + x] == pred[y * 64 + x];
            agree[o] += (double)same / (hw * hh);
        }
        vt_image_free(&im);
    }
    ck_assert_msg(imgs >= 5 && sum / imgs > 0.5, "mean foreground IoU %.3f over %d images",
                  sum / imgs, imgs);
    if (getenv("VT_TEST_PRINT_ERRORS"))
        printf("halves agree: top %.4f left %.4f\n", agree[0] / imgs, agree[1] / imgs);
    for (int o = 0; o < 2; o++)
        ck_assert_msg(agree[o] / imgs > 0.93, "the %s half's masks agree with the whole image's "
                      "on %.3f of their pixels", o ? "left" : "top", agree[o] / imgs);
    /* Reloaded, the model predicts the same mask. */
    const char *path = vt_test_path("seg.vtm");
    const char *img = vt_dataset_image_path(ds, VT_SPLIT_VAL, 0);
    uint8_t a[64 * 64], b[64 * 64];
    int w, h;
    ck_assert_int_eq(vt_model_segment_file(m, img, a, sizeof a, &w, &h), VT_OK);
    ck_assert_int_eq(vt_model_save(m, path), VT_OK);
    vt_model *m2;
    ck_assert_int_eq(vt_model_load(&m2, path), VT_OK);
    ck_assert_int_eq(vt_model_segment_file(m2, img, b, sizeof b, &w, &h), VT_OK);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    vt_model_destroy(m2);
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("segment_train");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_family);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("train");
    tcase_add_checked_fixture(tt, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tt, 600);
    tcase_add_test(tt, test_train_learns);
    suite_add_tcase(s, tt);
    return vt_test_run(s);
}
