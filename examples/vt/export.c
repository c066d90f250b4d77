/* vt export: a saved model's inference graph as an ONNX file (vt_model_export). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cli.h"

int cmd_export(args *a)
{
    const char *model = take(a, "model"), *format = take(a, "format"), *out = take(a, "out");
    if (!model) {
        fprintf(stderr, "vt export: model=FILE is required (see 'vt help export')\n");
        return EXIT_USAGE;
    }
    if (format && strcmp(format, "onnx")) {
        fprintf(stderr, "vt export: format=%s: the formats are: onnx\n", format);
        return EXIT_USAGE;
    }
    /* every other key is an export option; the library checks keys and values */
    char opts[2048] = "";
    size_t used = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        int k = snprintf(opts + used, sizeof opts - used, "%s%s", used ? " " : "", a->kv[i].arg);
        if (k < 0 || (size_t)k >= sizeof opts - used) {
            fprintf(stderr, "vt export: too many options\n");
            return EXIT_USAGE;
        }
        used += (size_t)k;
    }
    /* default out: the model file's name with .onnx for its extension */
    char path[4096];
    if (!out) {
        const char *base = strrchr(model, '/');
        const char *dot = strrchr(base ? base : model, '.');
        int stem = dot ? (int)(dot - model) : (int)strlen(model);
        if (snprintf(path, sizeof path, "%.*s.onnx", stem, model) >= (int)sizeof path) {
            fprintf(stderr, "vt export: model path too long\n");
            return EXIT_USAGE;
        }
        out = path;
    }
    vt_model *m;
    vt_status st = vt_model_load(&m, model);
    if (st) return fail(a->cmd, st, NULL);
    st = vt_model_export(m, out, VT_EXPORT_ONNX, opts);
    int rc = st ? fail(a->cmd, st, vt_model_last_error(m)) : 0;
    if (!st) printf("%s -> %s (%s, %d classes, imgsz %d)\n", model, out, vt_model_arch(m),
                    vt_model_num_classes(m), vt_model_imgsz(m));
    vt_model_destroy(m);
    return rc;
}
