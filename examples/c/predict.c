/* Classify images with a trained model.
 *
 *   predict MODEL.vtm IMAGE [IMAGE ...]
 *
 * Prints the three most likely classes of each PNG or JPEG image.  The model comes from
 * train_classifier (or `vt train`).
 *
 * Build: cc predict.c $(pkg-config --cflags --libs visiontrain) */
#include <stdio.h>
#include <stdlib.h>

#include <visiontrain/visiontrain.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.vtm IMAGE [IMAGE ...]\n", argv[0]);
        return 2;
    }

    /* Load the model: weights, architecture, image size and class names. */
    vt_model *model = NULL;
    vt_status st = vt_model_load(&model, argv[1]);
    if (st != VT_OK) {
        fprintf(stderr, "%s\n", vt_last_error()); /* names the file and the problem */
        return 3;
    }
    int k = vt_model_num_classes(model);
    printf("%s: %s, %d classes, %dx%d input\n", argv[1], vt_model_arch(model), k,
           vt_model_imgsz(model), vt_model_imgsz(model));

    float *scores = malloc((size_t)k * sizeof *scores);
    if (!scores) {
        vt_model_destroy(model);
        return 1;
    }
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        /* Decode, resize to the model's size, run the network: one probability per class.
         * (vt_model_predict_pixels() takes pixels already in memory.) */
        st = vt_model_predict_file(model, argv[i], scores, k);
        if (st != VT_OK) {
            fprintf(stderr, "%s\n", vt_model_last_error(model)); /* names the file */
            rc = 3;
            continue;
        }
        printf("%s:", argv[i]);
        for (int rank = 0; rank < 3 && rank < k; rank++) { /* the 3 best, best first */
            int best = 0;
            for (int c = 1; c < k; c++)
                if (scores[c] > scores[best]) best = c;
            const char *name = vt_model_class_name(model, best); /* NULL if never trained */
            printf("  %s %.1f%%", name ? name : "?", 100.0 * scores[best]);
            scores[best] = -1.0f;
        }
        printf("\n");
    }
    free(scores);
    vt_model_destroy(model);
    return rc;
}
