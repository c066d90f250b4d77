/* Model families.  A family is a function that emits graph nodes; sizes differ in widths and
 * depths only.
 *
 * cls-{n,s,m}: a residual CNN classifier (ResNet-style basic blocks):
 *   stem   conv3x3(c0, stride s0) BN ReLU           s0 = 2 when imgsz >= 96, else 1
 *   stage  i = 0..3: [down] conv3x3(c_i, stride 2 for i > 0) BN ReLU, then d_i basic blocks
 *          (conv3x3 BN ReLU conv3x3 BN + identity, ReLU)
 *   head   global average pool, dropout, linear(num_classes)
 *   n: widths 16/32/64/128, depths 1/1/1/1;  s: 32/64/128/256, 1/1/1/1;
 *   m: 48/96/192/384, 1/2/2/1.
 * resnet18: torchvision's ResNet-18 layout (7x7/2 stem, 3x3/2 max pool, 2 basic blocks per stage
 *   at widths 64/128/256/512, 1x1/2 projection shortcuts), for benchmarks against PyTorch.
 * cnn-small: the yardstick network of the benchmarks (conv3x3-32 BN ReLU maxpool2,
 *   conv3x3-64 BN ReLU maxpool2, conv3x3-128 BN ReLU, global average pool, linear). */
#include <math.h>
#include <string.h>

#include "nn/model.h"

const char *const vt_arch_names[] = {"cls-n", "cls-s", "cls-m", "cnn-small", "resnet18", NULL};

static int cbr(vt_graph *g, int x, int c, int k, int s)
{
    x = vt_g_conv(g, x, c, k, s, k / 2, 1, 0);
    x = vt_g_bn(g, x);
    return vt_g_act(g, x, VT_ACT_RELU, 0);
}

static int basic_block(vt_graph *g, int x, int c)
{
    int y = cbr(g, x, c, 3, 1);
    y = vt_g_conv(g, y, c, 3, 1, 1, 1, 0);
    y = vt_g_bn(g, y);
    y = vt_g_add(g, y, x);
    return vt_g_act(g, y, VT_ACT_RELU, 0);
}

static int build_cls(vt_graph *g, const int *widths, const int *depths, int nc, int channels,
                     int imgsz, float dropout)
{
    int x = vt_g_input(g, channels, imgsz, imgsz);
    x = cbr(g, x, widths[0], 3, imgsz >= 96 ? 2 : 1);
    for (int i = 0; i < 4; i++) {
        if (i > 0) x = cbr(g, x, widths[i], 3, 2);
        for (int d = 0; d < depths[i]; d++) x = basic_block(g, x, widths[i]);
    }
    x = vt_g_gap(g, x);
    if (dropout > 0) x = vt_g_dropout(g, x, dropout);
    return vt_g_linear(g, x, nc);
}

/* Basic block with a projection shortcut when the shape changes (ResNet "option B"). */
static int res_block(vt_graph *g, int x, int c, int stride)
{
    int y = cbr(g, x, c, 3, stride);
    y = vt_g_bn(g, vt_g_conv(g, y, c, 3, 1, 1, 1, 0));
    int sc = x;
    if (stride != 1 || g->nodes[x].out.c != c) sc = vt_g_bn(g, vt_g_conv(g, x, c, 1, stride, 0, 1, 0));
    return vt_g_act(g, vt_g_add(g, y, sc), VT_ACT_RELU, 0);
}

static int build_resnet18(vt_graph *g, int nc, int channels, int imgsz, float dropout)
{
    int x = vt_g_input(g, channels, imgsz, imgsz);
    x = cbr(g, x, 64, 7, 2);
    x = vt_g_maxpool(g, x, 3, 2, 1);
    static const int w[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; i++) {
        x = res_block(g, x, w[i], i == 0 ? 1 : 2);
        x = res_block(g, x, w[i], 1);
    }
    x = vt_g_gap(g, x);
    if (dropout > 0) x = vt_g_dropout(g, x, dropout);
    return vt_g_linear(g, x, nc);
}

static int build_cnn_small(vt_graph *g, int nc, int channels, int imgsz)
{
    int x = vt_g_input(g, channels, imgsz, imgsz);
    x = cbr(g, x, 32, 3, 1);
    x = vt_g_maxpool(g, x, 2, 2, 0);
    x = cbr(g, x, 64, 3, 1);
    x = vt_g_maxpool(g, x, 2, 2, 0);
    x = cbr(g, x, 128, 3, 1);
    x = vt_g_gap(g, x);
    return vt_g_linear(g, x, nc);
}

vt_status vt_arch_build(vt_graph *g, const char *arch, int num_classes, int channels, int imgsz,
                        float dropout, vt_task *task, int *output_node)
{
    static const int wn[] = {16, 32, 64, 128}, dn[] = {1, 1, 1, 1};
    static const int ws[] = {32, 64, 128, 256}, ds[] = {1, 1, 1, 1};
    static const int wm[] = {48, 96, 192, 384}, dm[] = {1, 2, 2, 1};
    vt_graph_init(g);
    int out;
    if (strcmp(arch, "cls-n") == 0) out = build_cls(g, wn, dn, num_classes, channels, imgsz, dropout);
    else if (strcmp(arch, "cls-s") == 0) out = build_cls(g, ws, ds, num_classes, channels, imgsz, dropout);
    else if (strcmp(arch, "cls-m") == 0) out = build_cls(g, wm, dm, num_classes, channels, imgsz, dropout);
    else if (strcmp(arch, "cnn-small") == 0) out = build_cnn_small(g, num_classes, channels, imgsz);
    else if (strcmp(arch, "resnet18") == 0) out = build_resnet18(g, num_classes, channels, imgsz, dropout);
    else {
        vt_graph_free(g);
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "unknown model '%s'; known models: cls-n, cls-s, cls-m, cnn-small, resnet18",
                       arch);
    }
    if (out < 0) {
        vt_status st = vt_fail(VT_ERR_INVALID_ARGUMENT, "cannot build %s at imgsz=%d: %s", arch,
                               imgsz, vt_last_error());
        vt_graph_free(g);
        return st;
    }
    vt_graph_finalize(g);
    *task = VT_TASK_CLASSIFY;
    *output_node = out;
    return VT_OK;
}

void vt_model_init_weights(vt_model *m)
{
    vt_rng r;
    vt_rng_seed(&r, m->seed * 0x5851F42D4C957F2Dull + 12345);
    const vt_graph *g = &m->graph;
    memset(m->params, 0, (size_t)g->n_params * sizeof(float));
    for (int i = 0; i < g->n_nodes; i++) {
        const vt_node *nd = &g->nodes[i];
        if (nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR) {
            /* He (Kaiming) normal for ReLU networks: std = sqrt(2 / fan_in). */
            double fan_in = (double)nd->w_n / nd->cout;
            double std = sqrt(2.0 / fan_in);
            if (nd->op == VT_OP_LINEAR) std = sqrt(1.0 / fan_in);
            for (int64_t j = 0; j < nd->w_n; j++)
                m->params[nd->w_off + j] = (float)(vt_rng_normal(&r) * std);
        } else if (nd->op == VT_OP_BN) {
            for (int64_t j = 0; j < nd->w_n; j++) m->params[nd->w_off + j] = 1.0f;
            for (int j = 0; j < nd->out.c; j++) {
                m->buffers[nd->buf_off + j] = 0.0f;
                m->buffers[nd->buf_off + nd->out.c + j] = 1.0f;
            }
        }
    }
    /* Zero-init the last BN of each residual branch (the one feeding an add) so blocks start as
     * identities: faster, steadier early training. */
    for (int i = 0; i < g->n_nodes; i++) {
        const vt_node *nd = &g->nodes[i];
        if (nd->op == VT_OP_ADD) {
            const vt_node *a = &g->nodes[nd->in[0]];
            if (a->op == VT_OP_BN)
                for (int64_t j = 0; j < a->w_n; j++) m->params[a->w_off + j] = 0.0f;
        }
    }
}
