/* Helper of tests/onnx_ops.py: builds a small graph of ops that no model family uses yet (the
 * model families are covered by tests/python/onnx_parity.py), runs it with vt_model_forward and
 * exports it, so the Python side can run the file in onnxruntime and compare.
 *   usage: onnx_op_helper DIR
 * Writes DIR/model.onnx (batch=dynamic), DIR/input.f32 (N x 3 x 32 x 32 NCHW, float32) and
 * DIR/output.f32 (the library's output, NCHW), and prints "input N C H W" and "output N C H W".
 * The graph: images -> conv s2 -> BN -> SiLU (a, 16x16) -> conv s2 (b, 8x8) -> maxpool (c, 4x4);
 * out = flatcat(images, a, b, c): 3 x 1 x (1024 + 256 + 64 + 16).
 * Exit status 0; 77 when the build has no ONNX export; 1 with a message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "visiontrain/visiontrain.h"
#include "vt_config.h"

enum { N = 2, C = 3, S = 32 };

static int fail(const char *what)
{
    fprintf(stderr, "onnx_op_helper: %s: %s\n", what, vt_last_error());
    return 1;
}

static int write_f32(const char *dir, const char *name, const float *v, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(v, sizeof *v, n, f) == n;
    if (f && fclose(f)) ok = 0;
    if (!ok) perror(path);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
#if !VT_HAVE_ONNX
    printf("SKIP: this build has no ONNX export\n");
    return 77;
#endif
    vt_model *m;
    /* a model's handle and metadata, its graph replaced by the one under test */
    if (vt_model_create(&m, "seg-n", C, "imgsz=32")) return fail("vt_model_create");
    vt_graph *g = &m->graph;
    vt_graph_free(g);
    vt_graph_init(g);
    int x = vt_g_input(g, C, S, S);
    int a = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, C, 3, 2, 1, 1, 0)), VT_ACT_SILU, 0);
    int b = vt_g_conv(g, a, C, 3, 2, 1, 1, 1);
    int ins[4] = {x, a, b, vt_g_maxpool(g, b, 2, 2, 0)};
    int f = vt_g_flatcat(g, ins, 4);
    if (f < 0) return fail("building the graph");
    vt_graph_finalize(g);
    m->output_node = m->outputs[0] = f;
    free(m->params);
    free(m->buffers);
    m->params = malloc((size_t)g->n_params * sizeof(float));
    m->buffers = malloc((size_t)g->n_buffers * sizeof(float));
    if (!m->params || !m->buffers) return fail("out of memory");
    vt_model_init_weights(m);
    /* running statistics that are not 0 / 1, so the folded batch norm does something */
    for (int64_t i = 0; i < g->n_buffers; i++)
        m->buffers[i] = i < C ? 0.1f * (float)i - 0.1f : 0.5f + 0.25f * (float)(i - C);
    m->version++;

    vt_shape os = g->nodes[f].out;
    size_t in_n = (size_t)N * C * S * S, out_n = (size_t)N * os.c * os.h * os.w;
    float *in = malloc(in_n * sizeof *in), *out = malloc(out_n * sizeof *out);
    if (!in || !out) return fail("out of memory");
    for (size_t i = 0; i < in_n; i++) in[i] = (float)((i * 2654435761u) % 1000) / 999.0f;
    if (vt_model_forward(m, in, N, out, out_n)) return fail("vt_model_forward");
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", argv[1]);
    if (vt_model_export(m, path, VT_EXPORT_ONNX, "batch=dynamic")) return fail("vt_model_export");
    if (write_f32(argv[1], "input.f32", in, in_n) || write_f32(argv[1], "output.f32", out, out_n))
        return 1;
    printf("input %d %d %d %d\noutput %d %d %d %d\n", N, C, S, S, N, os.c, os.h, os.w);
    free(in);
    free(out);
    vt_model_destroy(m);
    return 0;
}
