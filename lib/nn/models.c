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
 *   conv3x3-64 BN ReLU maxpool2, conv3x3-128 BN ReLU, global average pool, linear).
 * det-{n,s,m}: an anchor-free single-stage detector (lib/backend/det_loss_math.h has its head
 *   layout, target assignment and loss); every conv BN and every residual add is followed by
 *   SiLU (mAP50-95 on the benchmark's set: 0.570 all ReLU, 0.675 SiLU but ReLU after the adds,
 *   0.689 all SiLU; det-n's neck and head 96 wide instead of 64: 0.683 -> 0.725 (seed 1),
 *   0.681 -> 0.712 (seed 2); bench/README.md):
 *   backbone  stem conv3x3/2 (c0), then stages i = 1..4: conv3x3/2 (c_i) BN ReLU + d_i basic
 *             blocks; stage outputs C3, C4, C5 at strides 8, 16, 32
 *   neck      FPN top-down: P5 = cbr1x1(C5, f); P4 = cbr3x3(concat(up(P5), C4), f);
 *             P3 = cbr3x3(concat(up(P4), C3), f)
 *   head      decoupled, at stride 8: box = conv1x1(cbr3x3(cbr3x3(P3, f), f)) -> 4 channels,
 *             cls = the same with its own weights -> nc channels, output concat(box, cls)
 *             (one grid level: objects of every size are predicted from P3, which sees C4
 *             and C5 through the top-down path; a three-level PAN head at strides 8/16/32
 *             measured worse on the benchmark's 128 px set, see bench/README.md)
 *   n: c 16/32/64/128/256, d 0/1/1/1, f 96;  s: 32/64/128/256/512, d 1/1/1/1, f 128;
 *   m: 48/96/192/384/576, d 1/2/2/1, f 192.  imgsz must be a multiple of 32.
 * seg-{n,s,m}: a U-Net-style semantic segmentation network on the same encoder (SiLU as det):
 *   encoder   stem conv3x3/2 (c0) = E1, then stages i = 1..4 as det (E2..E5 at strides 4..32)
 *   decoder   for i = 4, 3, 2, 1, starting from y = E5: t = up(cbs1x1(y, c_{i-1})) (the
 *             coarser map brought to E_i's width and size), then y = cbs3x3(t + E_i, c_{i-1})
 *             (feature-pyramid style), except at stride 8 (E3), where the class is decided:
 *             y = cbs3x3(concat(t, E3), c2)
 *   logits    conv1x1(y at stride 2) -> nc, upsampled x2 to the input size, plus conv1x1(y at
 *             stride 8) -> nc upsampled x8 (added: the class evidence of the coarse features;
 *             the 16..48-channel fine path places the boundaries).  No full-resolution
 *             convolution: 0.838 mIoU on the benchmark's set at 257 MFLOPs/image, against
 *             0.865 at 464 for the concatenating decoder with a full-resolution 3x3 conv
 *             (revision 2; bench/README.md)
 *   n: c 16/32/64/128/256, d 0/1/1/1;  s: 32/64/128/256/512, d 1/1/1/1;
 *   m: 48/96/192/384/576, d 1/2/2/1.  imgsz must be a multiple of 32.
 * det-r18, seg-r18: det's neck and head (128 wide) and seg's decoder (widths 64/64/128/256) on
 *   resnet18's backbone (its ReLUs kept), to start from an ImageNet ResNet-18
 *   (vt_model_import_onnx, then pretrained=): layer2..4 are C3..C5, the stem's activation and
 *   layer1..4 the decoder's E1..E5.
 * Every family marks where its backbone ends (vt_graph.backbone_end): the classifiers before
 * the global average pool, the detectors and segmenters after the encoder's last stage. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/model.h"

/* Mark node i as a per-class layer (re-created when the classes change). */
static int per_class(vt_graph *g, int i)
{
    if (i >= 0) g->nodes[i].per_class = 1;
    return i;
}

/* conv, batch norm, activation */
static int cba(vt_graph *g, int x, int c, int k, int s, vt_act act)
{
    x = vt_g_conv(g, x, c, k, s, k / 2, 1, 0);
    x = vt_g_bn(g, x);
    return vt_g_act(g, x, act, 0);
}

static int cbr(vt_graph *g, int x, int c, int k, int s) { return cba(g, x, c, k, s, VT_ACT_RELU); }
/* The detectors and segmenters use SiLU (as YOLOv5/v8 do): det-n's mAP50-95 on the benchmark's
 * set went from 0.570 with ReLU to 0.689 (bench/README.md). */
static int cbs(vt_graph *g, int x, int c, int k, int s) { return cba(g, x, c, k, s, VT_ACT_SILU); }

/* Basic block with `act` after its first convolution and after the residual add. */
static int basic_block_act(vt_graph *g, int x, int c, vt_act act)
{
    int y = cba(g, x, c, 3, 1, act);
    y = vt_g_conv(g, y, c, 3, 1, 1, 1, 0);
    y = vt_g_bn(g, y);
    y = vt_g_add(g, y, x);
    return vt_g_act(g, y, act, 0);
}

static int basic_block(vt_graph *g, int x, int c) { return basic_block_act(g, x, c, VT_ACT_RELU); }

int vt_build_cls(vt_graph *g, const void *cfg, int nc, int channels, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS])
{
    const int *widths = ((const vt_net_cfg *)cfg)->c, *depths = ((const vt_net_cfg *)cfg)->d;
    int x = vt_g_input(g, channels, imgsz, imgsz);
    x = cbr(g, x, widths[0], 3, imgsz >= 96 ? 2 : 1);
    for (int i = 0; i < 4; i++) {
        if (i > 0) x = cbr(g, x, widths[i], 3, 2);
        for (int d = 0; d < depths[i]; d++) x = basic_block(g, x, widths[i]);
    }
    g->backbone_end = g->n_nodes;
    x = vt_g_gap(g, x);
    if (dropout > 0) x = vt_g_dropout(g, x, dropout);
    return (out[0] = per_class(g, vt_g_linear(g, x, nc))) < 0 ? -1 : 1;
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

/* torchvision's ResNet-18 feature extractor; stage[i] (i = 1..4) gets the output of layer i
 * (strides 4, 8, 16, 32), stage[0] the stem's activation (stride 2). */
static int resnet18_backbone(vt_graph *g, int channels, int imgsz, int stage[5])
{
    int x = vt_g_input(g, channels, imgsz, imgsz);
    stage[0] = x = cbr(g, x, 64, 7, 2);
    x = vt_g_maxpool(g, x, 3, 2, 1);
    static const int w[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; i++) {
        x = res_block(g, x, w[i], i == 0 ? 1 : 2);
        stage[i + 1] = x = res_block(g, x, w[i], 1);
    }
    g->backbone_end = g->n_nodes;
    return x;
}

int vt_build_resnet18(vt_graph *g, const void *cfg, int nc, int channels, int imgsz,
                      float dropout, int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    int stage[5];
    int x = vt_g_gap(g, resnet18_backbone(g, channels, imgsz, stage));
    if (dropout > 0) x = vt_g_dropout(g, x, dropout);
    return (out[0] = per_class(g, vt_g_linear(g, x, nc))) < 0 ? -1 : 1;
}

int vt_build_cnn_small(vt_graph *g, const void *cfg, int nc, int channels, int imgsz,
                       float dropout, int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int x = vt_g_input(g, channels, imgsz, imgsz);
    x = cbr(g, x, 32, 3, 1);
    x = vt_g_maxpool(g, x, 2, 2, 0);
    x = cbr(g, x, 64, 3, 1);
    x = vt_g_maxpool(g, x, 2, 2, 0);
    x = cbr(g, x, 128, 3, 1);
    g->backbone_end = g->n_nodes;
    x = vt_g_gap(g, x);
    return (out[0] = per_class(g, vt_g_linear(g, x, nc))) < 0 ? -1 : 1;
}

/* The encoder of det-* and seg-*: stem conv3x3/2 (c0), then stages i = 1..4 (conv3x3/2 + d_i
 * basic blocks); e[i] gets stage i's output (e[0] the stem's). */
static void encoder(vt_graph *g, const int *c, const int *d, int channels, int imgsz, int e[5])
{
    int x = vt_g_input(g, channels, imgsz, imgsz);
    e[0] = x = cbs(g, x, c[0], 3, 2);
    for (int i = 1; i <= 4; i++) {
        x = cbs(g, x, c[i], 3, 2);
        for (int k = 0; k < d[i - 1]; k++) x = basic_block_act(g, x, c[i], VT_ACT_SILU);
        e[i] = x;
    }
    g->backbone_end = g->n_nodes;
}

/* FPN neck and decoupled head of f channels on C3, C4, C5 = stage[2..4] (strides 8, 16, 32). */
static int det_head(vt_graph *g, const int *stage, int f, int nc, int *p3_out)
{
    int p5 = cbs(g, stage[4], f, 1, 1);
    int cat[2] = {vt_g_upsample(g, p5), stage[3]};
    int p4 = cbs(g, vt_g_concat(g, cat, 2), f, 3, 1);
    cat[0] = vt_g_upsample(g, p4);
    cat[1] = stage[2];
    int p3 = cbs(g, vt_g_concat(g, cat, 2), f, 3, 1);
    if (p3_out) *p3_out = p3;
    /* decoupled: the box fields and the class logits from their own two convolutions */
    int hb = cbs(g, cbs(g, p3, f, 3, 1), f, 3, 1), hc = cbs(g, cbs(g, p3, f, 3, 1), f, 3, 1);
    int o[2] = {vt_g_conv(g, hb, 4, 1, 1, 0, 1, 1),
                per_class(g, vt_g_conv(g, hc, nc, 1, 1, 0, 1, 1))};
    return vt_g_concat(g, o, 2);
}

/* The segmenters' decoder on e[0..4] (strides 2..32) of widths c[0..3] (e[4] any width). */
static int seg_decoder(vt_graph *g, const int *e, const int *c, int nc)
{
    int y = e[4], coarse = -1;
    for (int i = 3; i >= 0; i--) {
        int t = vt_g_upsample(g, cbs(g, y, c[i], 1, 1));
        if (i == 2) {
            int cat[2] = {t, e[i]};
            y = cbs(g, vt_g_concat(g, cat, 2), c[i], 3, 1);
            coarse = per_class(g, vt_g_conv(g, y, nc, 1, 1, 0, 1, 1));
        } else {
            y = cbs(g, vt_g_add(g, t, e[i]), c[i], 3, 1);
        }
    }
    for (int k = 0; k < 3; k++) coarse = vt_g_upsample(g, coarse);
    return vt_g_add(g, vt_g_upsample(g, per_class(g, vt_g_conv(g, y, nc, 1, 1, 0, 1, 1))),
                    coarse);
}

int vt_build_det(vt_graph *g, const void *cfg, int nc, int channels, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)dropout;
    const vt_net_cfg *k = cfg;
    int stage[5];
    encoder(g, k->c, k->d, channels, imgsz, stage);
    return (out[0] = det_head(g, stage, k->head, nc, NULL)) < 0 ? -1 : 1;
}

/* iseg-*: det's network plus, from its P3 (stride 8), the mask coefficients (cbs3x3 twice at
 * max(f / 4, k) channels, conv1x1 -> k per anchor, the head's grid) and k prototype masks at
 * stride 4 (cbs3x3(P3, p), up x2, cbs3x3(p), cbs1x1(k)), as YOLOv8-seg's Segment head: outputs
 * head, coefficients, prototypes. */
int vt_build_iseg(vt_graph *g, const void *cfg, int nc, int channels, int imgsz, float dropout,
                  int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)dropout;
    const vt_net_cfg *k = cfg;
    int stage[5], p3;
    encoder(g, k->c, k->d, channels, imgsz, stage);
    out[0] = det_head(g, stage, k->head, nc, &p3);
    int cw = k->head / 4 > VT_ISEG_PROTOS ? k->head / 4 : VT_ISEG_PROTOS;
    out[1] = vt_g_conv(g, cbs(g, cbs(g, p3, cw, 3, 1), cw, 3, 1), VT_ISEG_PROTOS, 1, 1, 0, 1, 1);
    int pw = k->proto;
    int pr = vt_g_upsample(g, cbs(g, p3, pw, 3, 1));
    out[2] = cbs(g, cbs(g, pr, pw, 3, 1), VT_ISEG_PROTOS, 1, 1);
    return out[0] < 0 || out[1] < 0 || out[2] < 0 ? -1 : 3;
}

int vt_build_seg(vt_graph *g, const void *cfg, int nc, int channels, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)dropout;
    const vt_net_cfg *k = cfg;
    int e[5];
    encoder(g, k->c, k->d, channels, imgsz, e);
    return (out[0] = seg_decoder(g, e, k->c, nc)) < 0 ? -1 : 1;
}

/* det-r18 / seg-r18: the same neck and head (det: 128 wide) or decoder on ResNet-18's stages,
 * so that an ImageNet ResNet-18 (vt_model_import_onnx) starts them. */
int vt_build_det_r18(vt_graph *g, const void *cfg, int nc, int channels, int imgsz,
                     float dropout, int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    int stage[5];
    resnet18_backbone(g, channels, imgsz, stage);
    return (out[0] = det_head(g, stage, 128, nc, NULL)) < 0 ? -1 : 1;
}

int vt_build_seg_r18(vt_graph *g, const void *cfg, int nc, int channels, int imgsz,
                     float dropout, int out[VT_MODEL_MAX_OUTPUTS])
{
    (void)cfg;
    (void)dropout;
    static const int c[4] = {64, 64, 128, 256};
    int e[5];
    resnet18_backbone(g, channels, imgsz, e);
    return (out[0] = seg_decoder(g, e, c, nc)) < 0 ? -1 : 1;
}

int vt_det_head_levels(const vt_graph *g, int out, int imgsz, vt_det_level lv[VT_DET_MAX_LEVELS])
{
    const vt_node *o = &g->nodes[out];
    int n = o->op == VT_OP_FLATCAT ? o->n_in : 1;
    for (int l = 0; l < n && l < VT_DET_MAX_LEVELS; l++) {
        const vt_node *s = o->op == VT_OP_FLATCAT ? &g->nodes[o->in[l]] : o;
        lv[l].h = s->out.h;
        lv[l].w = s->out.w;
        lv[l].stride = (float)imgsz / (float)s->out.w;
    }
    return n < VT_DET_MAX_LEVELS ? n : VT_DET_MAX_LEVELS;
}

/* The classifiers' widths and depths (cls-n/s/m) and the detectors' and segmenters' encoder
 * (det/seg-n/s/m) with the detector's neck and head width. */
const vt_net_cfg vt_cls_n = {{16, 32, 64, 128}, {1, 1, 1, 1}, 0, 0};
const vt_net_cfg vt_cls_s = {{32, 64, 128, 256}, {1, 1, 1, 1}, 0, 0};
const vt_net_cfg vt_cls_m = {{48, 96, 192, 384}, {1, 2, 2, 1}, 0, 0};
const vt_net_cfg vt_net_n = {{16, 32, 64, 128, 256}, {0, 1, 1, 1}, 96, 64};
const vt_net_cfg vt_net_s = {{32, 64, 128, 256, 512}, {1, 1, 1, 1}, 128, 128};
const vt_net_cfg vt_net_m = {{48, 96, 192, 384, 576}, {1, 2, 2, 1}, 192, 192};

vt_status vt_arch_build(vt_graph *g, const vt_arch_spec *s, int num_classes, int channels,
                        int imgsz, float dropout, int out[VT_MODEL_MAX_OUTPUTS], int *n_out)
{
    *n_out = 0;
    vt_graph_init(g);
    if (s->multiple > 1 && imgsz % s->multiple)
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "%s: imgsz=%d must be a multiple of %d (the network's coarsest stride)",
                       s->name, imgsz, s->multiple);
    int n = s->build(g, s->cfg, num_classes, channels, imgsz, dropout, out);
    for (int i = 0; i < n; i++)
        if (out[i] < 0) n = -1;
    if (n < 1) {
        vt_status st = vt_fail(VT_ERR_INVALID_ARGUMENT, "cannot build %s at imgsz=%d: %s",
                               s->name, imgsz, vt_last_error());
        vt_graph_free(g);
        return st;
    }
    vt_graph_finalize(g);
    *n_out = n;
    return VT_OK;
}

/* Convolutions and linear layers start as PyTorch's (and so Ultralytics') default: weights and
 * biases uniform in +-1/sqrt(fan_in) (kaiming_uniform with a = sqrt(5)).  He-normal weights
 * (sqrt(6) times larger) trained slower behind batch norm at the same learning rate, the norm
 * of a weight vector dividing its effective step; means of three seeds or sets: cnn-small on
 * real digits 0.854 -> 0.912 top-1, det-n 0.703 -> 0.736 mAP50-95, seg-n 0.835 -> 0.846 mIoU
 * (bench/README.md, "Classification on real images, and the initialisation"). */
static double init_bound(const vt_node *nd) { return 1.0 / sqrt((double)nd->w_n / nd->cout); }

/* The convolutions that produce a detector's head channels, found through the concats (channel
 * offsets add up) and flatcats (levels share the channels) between them and the output; c0 is
 * the head channel of node i's first channel: 0..3 box fields, then class logits. */
static void init_det_convs(vt_model *m, int i, int c0)
{
    const vt_node *o = &m->graph.nodes[i];
    if (o->op == VT_OP_CONCAT || o->op == VT_OP_FLATCAT) {
        for (int k = 0; k < o->n_in; k++) {
            init_det_convs(m, o->in[k], c0);
            if (o->op == VT_OP_CONCAT) c0 += m->graph.nodes[o->in[k]].out.c;
        }
        return;
    }
    if (o->op != VT_OP_CONV) return;
    /* the default's U(-b, b) has standard deviation b / sqrt(3): scaled to 0.01 */
    float to = 0.01f / (float)(init_bound(o) / sqrt(3.0));
    for (int64_t j = 0; j < o->w_n; j++) m->params[o->w_off + j] *= to;
    for (int j = 0; j < o->cout; j++) m->params[o->b_off + j] = c0 + j < 4 ? 0.0f : -4.595f;
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
            double b = init_bound(nd);
            for (int64_t j = 0; j < nd->w_n; j++)
                m->params[nd->w_off + j] = (float)((2.0 * vt_rng_uniform(&r) - 1.0) * b);
            for (int64_t j = 0; j < nd->b_n; j++)
                m->params[nd->b_off + j] = (float)((2.0 * vt_rng_uniform(&r) - 1.0) * b);
        } else if (nd->op == VT_OP_BN) {
            /* scale 1, shift 0 (zeroed with the params), the last of a residual branch too:
             * zero-initialising those, so that blocks start as identities, measured worse:
             * seg-n 0.846 vs 0.874 mIoU, cls-n on real digits 0.947 vs 0.976 top-1, det-n
             * 0.736 vs 0.733 mAP50-95 (bench/README.md) */
            for (int64_t j = 0; j < nd->w_n; j++) m->params[nd->w_off + j] = 1.0f;
            for (int j = 0; j < nd->out.c; j++) {
                m->buffers[nd->buf_off + j] = 0.0f;
                m->buffers[nd->buf_off + nd->out.c + j] = 1.0f;
            }
        }
    }
    if (m->spec->init) m->spec->init(m);
}

/* A detector's output convs start near zero with the class logits at a prior of 0.01 (as
 * RetinaNet does), so the first steps are not swamped by the many negative cells. */
void vt_init_det_head(vt_model *m) { init_det_convs(m, m->output_node, 0); }
