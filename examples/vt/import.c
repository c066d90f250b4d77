/* vt import: a model from an ONNX file (vt_model_import_onnx), saved as a .vtm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cli.h"

int cmd_import(args *a)
{
    const char *model = take(a, "model"), *arch = take(a, "arch"), *out = take(a, "out");
    const char *imgsz = take(a, "imgsz");
    /* the input normalisation: passed through, the library checks the values */
    const char *mean = take(a, "mean"), *sd = take(a, "std"), *norm = take(a, "normalize");
    if (!model && a->nsources == 1) model = a->sources[0];
    if (!model || a->nsources > 1) {
        fprintf(stderr, "vt import: one ONNX file is required: vt import FILE.onnx "
                        "[arch=resnet18 out=FILE.vtm imgsz=224 normalize=imagenet|none "
                        "mean=R,G,B std=R,G,B] (see 'vt help import')\n");
        return EXIT_USAGE;
    }
    int rc = reject_unknown(a, "model, arch, out, imgsz, normalize, mean, std");
    if (rc) return rc;
    long size = 224;
    if ((rc = int_value(a->cmd, "imgsz", imgsz, 8, 4096, &size))) return rc;
    if (!arch) arch = "resnet18";
    /* default out: the ONNX file's name with .vtm for its extension */
    char path[4096];
    if (!out) {
        const char *base = strrchr(model, '/');
        const char *dot = strrchr(base ? base : model, '.');
        int stem = dot ? (int)(dot - model) : (int)strlen(model);
        if (snprintf(path, sizeof path, "%.*s.vtm", stem, model) >= (int)sizeof path) {
            fprintf(stderr, "vt import: model path too long\n");
            return EXIT_USAGE;
        }
        out = path;
    }
    char opts[1024];
    if (snprintf(opts, sizeof opts, "imgsz=%ld%s%s%s%s%s%s", size, norm ? " normalize=" : "",
                 norm ? norm : "", mean ? " mean=" : "", mean ? mean : "", sd ? " std=" : "",
                 sd ? sd : "") >= (int)sizeof opts) {
        fprintf(stderr, "vt import: the values of normalize, mean and std are too long\n");
        return EXIT_USAGE;
    }
    vt_model *m;
    vt_status st = vt_model_import_onnx(&m, model, arch, opts);
    if (st) return fail(a->cmd, st, NULL);
    st = vt_model_save(m, out);
    rc = st ? fail(a->cmd, st, vt_model_last_error(m)) : 0;
    if (!st) {
        printf("imported %s as %s (%llu parameters, %d classes) -> %s\n", model, vt_model_arch(m),
               (unsigned long long)vt_model_num_params(m), vt_model_num_classes(m), out);
        /* what the library folded (it accepted the values, so they are as given) */
        int imagenet = norm && !strcmp(norm, "imagenet");
        if (imagenet || mean || sd)
            printf("input normalised (mean %s, std %s%s) folded into the first convolution: the "
                   "model takes pixels / 255\n", imagenet ? "0.485,0.456,0.406" : mean ? mean : "0",
                   imagenet ? "0.229,0.224,0.225" : sd ? sd : "1",
                   imagenet ? ", torchvision's ImageNet" : "");
    }
    vt_model_destroy(m);
    return rc;
}
