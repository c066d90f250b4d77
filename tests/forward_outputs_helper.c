/* Helper of tests/python/onnx_parity.py: every output of a model for given inputs, where
 * vt_model_forward gives output 0 only (an instance segmenter's mask coefficients and
 * prototypes are outputs 1 and 2), so the Python side can compare each with the ONNX file.
 *   usage: forward_outputs_helper MODEL.vtm INPUT.f32 N DIR
 * INPUT.f32: N x channels x imgsz x imgsz float32 (NCHW).  Writes DIR/out<j>.f32 (N images of
 * output j, NCHW) and prints "out<j> N C H W" for each.  Exit status 0; 1 with a message on
 * stderr; 2 for bad usage. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "nn/exec.h"
#include "nn/model.h"
#include "visiontrain/visiontrain.h"

static int fail(const char *what, vt_model *m)
{
    fprintf(stderr, "forward_outputs_helper: %s: %s\n", what,
            m ? vt_model_last_error(m) : vt_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5 || atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: %s MODEL.vtm INPUT.f32 N DIR\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[3]);
    vt_model *m;
    if (vt_model_load(&m, argv[1])) return fail(argv[1], NULL);
    size_t in_n = (size_t)m->channels * m->imgsz * m->imgsz;
    float *in = malloc((size_t)n * in_n * sizeof *in);
    FILE *f = fopen(argv[2], "rb");
    int ok = in && f && fread(in, sizeof *in, (size_t)n * in_n, f) == (size_t)n * in_n;
    if (f) fclose(f);
    if (!ok) {
        fprintf(stderr, "forward_outputs_helper: %s: cannot read %d images\n", argv[2], n);
        return 1;
    }
    if (vt_model_predict_ready(m) || vt_exec_prepare(m->pred_exec, 1, m->imgsz, m->imgsz))
        return fail("vt_model_predict_ready", m);
    vt_exec *e = m->pred_exec;
    const vt_backend_ops *ops = m->pred_be->ops;
    FILE *out[VT_MODEL_MAX_OUTPUTS] = {NULL};
    for (int j = 0; j < m->n_outputs; j++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out%d.f32", argv[4], j);
        if (!(out[j] = fopen(path, "wb"))) {
            perror(path);
            return 1;
        }
    }
    /* the predictor runs one image at a time: its CNHW is NCHW */
    for (int i = 0; i < n; i++) {
        if (ops->upload(m->pred_be, vt_exec_input(e), in + (size_t)i * in_n,
                        in_n * sizeof *in) ||
            vt_exec_forward(e, 0))
            return fail("forward", NULL);
        for (int j = 0; j < m->n_outputs; j++) {
            vt_shape s = e->g->nodes[m->outputs[j]].out;
            size_t cnt = (size_t)s.c * s.h * s.w;
            float *y = malloc(cnt * sizeof *y);
            if (!y || ops->download(m->pred_be, y, e->g->nodes[m->outputs[j]].y,
                                    cnt * sizeof *y) ||
                fwrite(y, sizeof *y, cnt, out[j]) != cnt)
                return fail("output", NULL);
            free(y);
        }
    }
    for (int j = 0; j < m->n_outputs; j++) {
        vt_shape s = e->g->nodes[m->outputs[j]].out;
        if (fclose(out[j])) return fail("writing", NULL);
        printf("out%d %d %d %d %d\n", j, n, s.c, s.h, s.w);
    }
    free(in);
    vt_model_destroy(m);
    return 0;
}
