/* Every layer's backward against a finite-difference gradient.
 *
 * For a graph input -> LAYER(s) -> output, the loss is L = sum(y * r) with a fixed random r,
 * accumulated in double.  The analytic gradients (input and every parameter) from the executor
 * are compared with central differences (x +- h) of L.  The comparison is on the whole vector:
 * ||analytic - numeric|| / max(||numeric||, tiny) must be below the tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/seg_loss_math.h"
#include "core/core.h"
#include "nn/exec.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "visiontrain/visiontrain.h"
#include "testutil.h"

typedef int (*build_fn)(vt_graph *g, int in);

typedef struct {
    const char *name;
    int c, h, w, n;
    build_fn build;
    double tol;
} gcase;

static double loss_of(vt_exec *e, int out, const float *r)
{
    ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
    vt_node *o = &e->g->nodes[out];
    size_t ne = (size_t)o->out.c * o->out.h * o->out.w * e->n;
    double L = 0;
    for (size_t i = 0; i < ne; i++) L += (double)o->y[i] * r[i];
    return L;
}

/* Numeric gradient of L w.r.t. the floats at p (count n), compared with `analytic`. */
static double check_vector(vt_exec *e, int out, const float *r, float *p, size_t n,
                           const float *analytic, double h, const float *buffers_init,
                           size_t nbuf)
{
    double num2 = 0, diff2 = 0;
    /* Check at most 200 entries, spread over the vector. */
    size_t step = n > 200 ? n / 200 : 1;
    for (size_t i = 0; i < n; i += step) {
        float save = p[i];
        p[i] = save + (float)h;
        memcpy(e->buffers, buffers_init, nbuf * sizeof(float));
        double lp = loss_of(e, out, r);
        p[i] = save - (float)h;
        memcpy(e->buffers, buffers_init, nbuf * sizeof(float));
        double lm = loss_of(e, out, r);
        p[i] = save;
        double num = (lp - lm) / (2 * h);
        num2 += num * num;
        diff2 += (num - analytic[i]) * (num - analytic[i]);
    }
    return sqrt(diff2) / fmax(sqrt(num2), 1e-6);
}

static void run_case(const gcase *c, size_t conv_cap)
{
    vt_graph g;
    vt_graph_init(&g);
    int in = vt_g_input(&g, c->c, c->h, c->w);
    int out = c->build(&g, in);
    ck_assert_msg(out > 0, "%s: build failed: %s", c->name, vt_last_error());
    vt_graph_finalize(&g);
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    if (conv_cap) vt_backend_cpu_set_conv_cap(be, conv_cap);
    vt_exec *e;
    ck_assert_int_eq(vt_exec_create(&e, &g, be), VT_OK);
    e->input_grad = 1;
    ck_assert_int_eq(vt_exec_prepare(e, c->n, c->h, c->w), VT_OK);
    vt_rng rng;
    vt_rng_seed(&rng, 42);
    /* random parameters (BN gamma around 1), inputs and loss weights */
    for (int64_t i = 0; i < g.n_params; i++) e->params[i] = (float)(vt_rng_normal(&rng) * 0.5);
    for (int i = 0; i < g.n_nodes; i++)
        if (g.nodes[i].op == VT_OP_BN)
            for (int64_t j = 0; j < g.nodes[i].w_n; j++) e->params[g.nodes[i].w_off + j] += 1.0f;
    size_t nbuf = (size_t)g.n_buffers;
    float *buf0 = calloc(nbuf + 1, sizeof(float));
    for (size_t i = 0; i < nbuf; i++) buf0[i] = (i % 2) ? 1.0f : 0.0f;
    memcpy(e->buffers, buf0, nbuf * sizeof(float));
    float *x = vt_exec_input(e);
    size_t nx = (size_t)c->c * c->h * c->w * c->n;
    for (size_t i = 0; i < nx; i++) x[i] = (float)vt_rng_normal(&rng);
    vt_node *o = &e->g->nodes[out];
    size_t ny = (size_t)o->out.c * o->out.h * o->out.w * c->n;
    float *r = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) r[i] = (float)vt_rng_normal(&rng);

    loss_of(e, out, r);
    memcpy(o->dy, r, ny * sizeof(float));
    ck_assert_int_eq(vt_exec_backward(e, out), VT_OK);
    float *dx = malloc(nx * sizeof(float));
    memcpy(dx, e->g->nodes[0].dy, nx * sizeof(float));
    float *dp = malloc((size_t)(g.n_params + 1) * sizeof(float));
    memcpy(dp, e->grads, (size_t)g.n_params * sizeof(float));

    double h = 1e-3;
    double ex = check_vector(e, out, r, x, nx, dx, h, buf0, nbuf);
    ck_assert_msg(ex < c->tol, "%s: input gradient relative error %.3g > %.3g", c->name, ex,
                  c->tol);
    if (g.n_params) {
        double ep = check_vector(e, out, r, e->params, (size_t)g.n_params, dp, h, buf0, nbuf);
        ck_assert_msg(ep < c->tol, "%s: parameter gradient relative error %.3g > %.3g", c->name,
                      ep, c->tol);
    }
    free(dx);
    free(dp);
    free(r);
    free(buf0);
    vt_exec_destroy(e);
    vt_backend_destroy(be);
    vt_graph_free(&g);
}

static int b_conv3(vt_graph *g, int x) { return vt_g_conv(g, x, 4, 3, 1, 1, 1, 1); }
static int b_conv_s2(vt_graph *g, int x) { return vt_g_conv(g, x, 5, 3, 2, 1, 1, 0); }
static int b_conv1x1(vt_graph *g, int x) { return vt_g_conv(g, x, 3, 1, 1, 0, 1, 1); }
static int b_conv_group(vt_graph *g, int x) { return vt_g_conv(g, x, 6, 3, 1, 1, 2, 1); }
static int b_conv_dw(vt_graph *g, int x) { return vt_g_conv(g, x, 4, 3, 1, 1, 4, 0); }
static int b_conv_5x5(vt_graph *g, int x) { return vt_g_conv(g, x, 2, 5, 2, 2, 1, 1); }
static int b_bn(vt_graph *g, int x) { return vt_g_bn(g, x); }
static int b_relu(vt_graph *g, int x) { return vt_g_act(g, vt_g_conv(g, x, 3, 1, 1, 0, 1, 1), VT_ACT_RELU, 0); }
static int b_silu(vt_graph *g, int x) { return vt_g_act(g, x, VT_ACT_SILU, 0); }
static int b_leaky(vt_graph *g, int x) { return vt_g_act(g, x, VT_ACT_LEAKY, 0.1f); }
static int b_sigmoid(vt_graph *g, int x) { return vt_g_act(g, x, VT_ACT_SIGMOID, 0); }
static int b_maxpool(vt_graph *g, int x) { return vt_g_maxpool(g, x, 2, 2, 0); }
static int b_maxpool3(vt_graph *g, int x) { return vt_g_maxpool(g, x, 3, 2, 1); }
static int b_avgpool(vt_graph *g, int x) { return vt_g_avgpool(g, x, 3, 2, 1); }
static int b_gap(vt_graph *g, int x) { return vt_g_gap(g, x); }
static int b_linear(vt_graph *g, int x) { return vt_g_linear(g, vt_g_gap(g, x), 5); }
static int b_dropout(vt_graph *g, int x) { return vt_g_dropout(g, x, 0.3f); }
static int b_add(vt_graph *g, int x) { return vt_g_add(g, vt_g_conv(g, x, 3, 3, 1, 1, 1, 0), x); }
static int b_concat(vt_graph *g, int x)
{
    int ins[2] = {vt_g_conv(g, x, 2, 1, 1, 0, 1, 0), x};
    return vt_g_concat(g, ins, 2);
}
static int b_upsample(vt_graph *g, int x) { return vt_g_upsample(g, x); }
/* three resolutions and the input itself (its gradient too) into one flattened output */
static int b_flatcat(vt_graph *g, int x)
{
    int a = vt_g_conv(g, x, 2, 3, 1, 1, 1, 1);
    int ins[4] = {a, vt_g_conv(g, x, 2, 3, 2, 1, 1, 0), x, vt_g_maxpool(g, a, 2, 2, 0)};
    return vt_g_flatcat(g, ins, 4);
}
/* conv -> BN -> ReLU (in place) -> residual add -> ReLU: the blocks the models use */
static int b_block(vt_graph *g, int x)
{
    int y = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 3, 3, 1, 1, 1, 0)), VT_ACT_RELU, 0);
    y = vt_g_bn(g, vt_g_conv(g, y, 3, 3, 1, 1, 1, 0));
    return vt_g_act(g, vt_g_add(g, y, x), VT_ACT_SILU, 0);
}

/* conv -> BN -> SiLU (fused into the BN) twice, one of them through a residual add: the det and
 * seg families' blocks; the BN's beta reaches the SiLU's derivative, so its gradient checks
 * the fused backward's recomputation */
static int b_block_silu(vt_graph *g, int x)
{
    int y = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 3, 3, 1, 1, 1, 0)), VT_ACT_SILU, 0);
    y = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, y, 3, 3, 1, 1, 1, 0)), VT_ACT_SILU, 0);
    return vt_g_act(g, vt_g_add(g, y, x), VT_ACT_SILU, 0);
}

/* conv -> BN -> ReLU / SiLU -> 2x2 max pool: the CPU runs the BN, the activation and the pool as
 * one op (bn_act_pool_forward_train), the activation never written */
static int b_bn_relu_pool(vt_graph *g, int x)
{
    int y = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 3, 3, 1, 1, 1, 0)), VT_ACT_RELU, 0);
    return vt_g_maxpool(g, y, 2, 2, 0);
}
static int b_bn_silu_pool(vt_graph *g, int x)
{
    int y = vt_g_act(g, vt_g_bn(g, vt_g_conv(g, x, 3, 3, 1, 1, 1, 0)), VT_ACT_SILU, 0);
    return vt_g_maxpool(g, y, 2, 2, 0);
}

static const gcase cases[] = {
    {"conv3x3", 3, 6, 5, 2, b_conv3, 1e-2},
    {"conv3x3-stride2", 3, 7, 7, 2, b_conv_s2, 1e-2},
    {"conv1x1", 4, 5, 5, 3, b_conv1x1, 1e-2},
    {"conv-groups2", 4, 5, 6, 2, b_conv_group, 1e-2},
    {"conv-depthwise", 4, 5, 5, 2, b_conv_dw, 1e-2},
    {"conv5x5-s2", 2, 9, 8, 2, b_conv_5x5, 1e-2},
    {"batchnorm", 3, 4, 4, 3, b_bn, 2e-2},
    {"relu", 2, 4, 4, 2, b_relu, 2e-2},
    {"silu", 2, 4, 4, 2, b_silu, 1e-2},
    {"leaky", 2, 4, 4, 2, b_leaky, 2e-2},
    {"sigmoid", 2, 4, 4, 2, b_sigmoid, 1e-2},
    {"maxpool2", 2, 6, 6, 2, b_maxpool, 2e-2},
    {"maxpool3-pad", 2, 7, 7, 2, b_maxpool3, 2e-2},
    {"avgpool3-pad", 2, 7, 6, 2, b_avgpool, 1e-2},
    {"global-avgpool", 3, 4, 5, 2, b_gap, 1e-2},
    {"linear", 4, 3, 3, 3, b_linear, 1e-2},
    {"dropout", 3, 4, 4, 2, b_dropout, 1e-2},
    {"residual-add", 3, 5, 5, 2, b_add, 1e-2},
    {"concat", 3, 4, 4, 2, b_concat, 1e-2},
    {"upsample2", 2, 3, 4, 2, b_upsample, 1e-2},
    {"flatcat", 2, 5, 6, 2, b_flatcat, 1e-2},
    {"conv-bn-relu-block", 3, 5, 5, 3, b_block, 3e-2},
    {"conv-bn-silu-block", 3, 5, 5, 3, b_block_silu, 3e-2},
    {"conv-bn-relu-maxpool2", 3, 7, 6, 3, b_bn_relu_pool, 3e-2},
    {"conv-bn-silu-maxpool2", 2, 6, 7, 3, b_bn_silu_pool, 3e-2},
};

START_TEST(test_gradcheck) { run_case(&cases[_i], 0); }
END_TEST

/* The same with a tiny im2col budget: every conv runs image by image (batch-chunked path). */
START_TEST(test_gradcheck_chunked) { run_case(&cases[_i], 50); }
END_TEST

/* Flatcat forward against values worked out here: x (1 channel, 4 x 6, 2 images) -> 1x1 conv
 * with weights (1, -2) -> y; b = 2x2 max pool of y (2 x 3); out = flatcat(b, y), 2 x 1 x 30:
 * row (c, n) = b's plane (c, n) then y's.  Then the gradient with x read directly:
 * flatcat(x, maxpool(x)) sends each dy slice back to its input, and without input_grad nothing
 * is written for the image batch (it has no gradient buffer). */
START_TEST(test_flatcat_values)
{
    enum { N = 2, H = 4, W = 6, A = 6 + 24 };
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    float xv[N * H * W];
    for (int i = 0; i < N * H * W; i++) xv[i] = (float)((i * 7) % 23) - 11.0f;

    vt_graph g;
    vt_graph_init(&g);
    int x = vt_g_input(&g, 1, H, W);
    int y = vt_g_conv(&g, x, 2, 1, 1, 0, 1, 0);
    int ins[2] = {vt_g_maxpool(&g, y, 2, 2, 0), y};
    int f = vt_g_flatcat(&g, ins, 2);
    ck_assert_msg(f > 0, "%s", vt_last_error());
    ck_assert_int_eq(g.nodes[f].out.c, 2);
    ck_assert_int_eq(g.nodes[f].out.h, 1);
    ck_assert_int_eq(g.nodes[f].out.w, A);
    vt_graph_finalize(&g);
    vt_exec *e;
    ck_assert_int_eq(vt_exec_create(&e, &g, be), VT_OK);
    ck_assert_int_eq(vt_exec_prepare(e, N, H, W), VT_OK);
    e->params[g.nodes[y].w_off] = 1.0f;
    e->params[g.nodes[y].w_off + 1] = -2.0f;
    memcpy(vt_exec_input(e), xv, sizeof xv);
    ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
    const float *out = e->g->nodes[f].y;
    for (int c = 0; c < 2; c++)
        for (int n = 0; n < N; n++) {
            const float *row = out + (size_t)(c * N + n) * A, *xp = xv + n * H * W;
            float wc = c ? -2.0f : 1.0f;
            for (int py = 0; py < 2; py++)
                for (int px = 0; px < 3; px++) {
                    float m = -INFINITY;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++)
                            m = fmaxf(m, wc * xp[(2 * py + dy) * W + 2 * px + dx]);
                    ck_assert_msg(row[py * 3 + px] == m, "c%d n%d pool (%d,%d): %g, want %g", c,
                                  n, py, px, (double)row[py * 3 + px], (double)m);
                }
            for (int i = 0; i < H * W; i++)
                ck_assert_msg(row[6 + i] == wc * xp[i], "c%d n%d cell %d: %g, want %g", c, n, i,
                              (double)row[6 + i], (double)(wc * xp[i]));
        }
    vt_exec_destroy(e);
    vt_graph_free(&g);

    for (int ig = 0; ig < 2; ig++) {
        vt_graph_init(&g);
        x = vt_g_input(&g, 1, H, W);
        int ins2[2] = {x, vt_g_maxpool(&g, x, 2, 2, 0)};
        f = vt_g_flatcat(&g, ins2, 2);
        ck_assert_int_eq(g.nodes[f].out.w, A);
        vt_graph_finalize(&g);
        ck_assert_int_eq(vt_exec_create(&e, &g, be), VT_OK);
        e->input_grad = ig;
        ck_assert_int_eq(vt_exec_prepare(e, N, H, W), VT_OK);
        memcpy(vt_exec_input(e), xv, sizeof xv);
        ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
        vt_node *o = &e->g->nodes[f];
        for (int i = 0; i < N * A; i++) o->dy[i] = (float)(i % 13) - 6.0f;
        ck_assert_int_eq(vt_exec_backward(e, f), VT_OK);
        if (ig) {
            const float *dx = e->g->nodes[0].dy;
            for (int n = 0; n < N; n++)
                for (int iy = 0; iy < H; iy++)
                    for (int ix = 0; ix < W; ix++) {
                        const float *xp = xv + n * H * W, *drow = o->dy + (size_t)n * A;
                        int py = iy / 2, px = ix / 2, best = -1;
                        for (int k = 0; k < 4; k++) { /* the window's first maximum */
                            int j = (2 * py + k / 2) * W + 2 * px + k % 2;
                            if (best < 0 || xp[j] > xp[best]) best = j;
                        }
                        int i = iy * W + ix;
                        float want = drow[i] + (best == i ? drow[24 + py * 3 + px] : 0.0f);
                        ck_assert_msg(dx[n * H * W + i] == want, "dx n%d (%d,%d): %g, want %g",
                                      n, iy, ix, (double)dx[n * H * W + i], (double)want);
                    }
        } else {
            ck_assert_ptr_null(e->g->nodes[0].dy);
        }
        vt_exec_destroy(e);
        vt_graph_free(&g);
    }
    vt_backend_destroy(be);
}
END_TEST

/* Flatcat's shapes: channel counts must agree (refused with a message, the graph unchanged),
 * 1..VT_MAX_INPUTS inputs, and the output follows a reshape. */
START_TEST(test_flatcat_shapes)
{
    vt_graph g;
    vt_graph_init(&g);
    int x = vt_g_input(&g, 3, 16, 12);
    int a = vt_g_conv(&g, x, 4, 3, 2, 1, 1, 0);  /* 4 x 8 x 6 */
    int b = vt_g_conv(&g, a, 4, 3, 2, 1, 1, 0);  /* 4 x 4 x 3 */
    int n0 = g.n_nodes;
    int bad[2] = {x, a};
    ck_assert_int_eq(vt_g_flatcat(&g, bad, 2), -1);
    ck_assert_msg(strstr(vt_last_error(), "flatcat") && strstr(vt_last_error(), "channels"),
                  "message: %s", vt_last_error());
    ck_assert_int_eq(g.n_nodes, n0);
    int ab[3] = {a, b, a};
    ck_assert_int_eq(vt_g_flatcat(&g, ab, 0), -1);
    ck_assert_int_eq(g.n_nodes, n0);
    int f = vt_g_flatcat(&g, ab, 3);
    ck_assert_int_eq(f, n0);
    ck_assert_int_eq(g.nodes[f].out.c, 4);
    ck_assert_int_eq(g.nodes[f].out.h, 1);
    ck_assert_int_eq(g.nodes[f].out.w, 48 + 12 + 48);
    ck_assert_int_eq(vt_graph_reshape(&g, 32, 32), VT_OK); /* 16x16 and 8x8 */
    ck_assert_int_eq(g.nodes[f].out.w, 256 + 64 + 256);
    vt_layer_cost lc[8];
    ck_assert_int_eq(vt_graph_costs(&g, 32, 32, lc, 8), g.n_nodes);
    ck_assert(lc[f].op == VT_OP_FLATCAT && lc[f].flops_fwd == 0 && lc[f].params == 0);
    ck_assert_int_eq(lc[f].out_elems, 4 * 576);
    ck_assert_int_eq(lc[f].in_elems, 4 * 576);
    vt_graph_free(&g);
}
END_TEST

/* Softmax cross-entropy with label smoothing: gradient vs finite differences. */
START_TEST(test_xent_grad)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    enum { K = 5, N = 3 };
    float logits[K * N], d[K * N], loss;
    int32_t labels[N] = {0, 3, 4};
    vt_rng r;
    vt_rng_seed(&r, 7);
    for (int i = 0; i < K * N; i++) logits[i] = (float)vt_rng_normal(&r) * 2;
    for (int s = 0; s < 2; s++) {
        float sm = s ? 0.1f : 0.0f;
        ck_assert_int_eq(be->ops->softmax_xent(be, K, N, logits, labels, sm, 1.0f, &loss, d, NULL), VT_OK);
        for (int i = 0; i < K * N; i++) {
            float save = logits[i], lp, lm;
            logits[i] = save + 1e-2f;
            be->ops->softmax_xent(be, K, N, logits, labels, sm, 1.0f, &lp, NULL, NULL);
            logits[i] = save - 1e-2f;
            be->ops->softmax_xent(be, K, N, logits, labels, sm, 1.0f, &lm, NULL, NULL);
            logits[i] = save;
            ck_assert_msg(fabs((lp - lm) / 2e-2 - d[i]) < 2e-3, "xent smoothing %.1f: d[%d]=%g "
                          "numeric %g", sm, i, d[i], (lp - lm) / 2e-2);
        }
    }
    /* a label out of range is an error, not a crash */
    labels[1] = 9;
    ck_assert_int_eq(be->ops->softmax_xent(be, K, N, logits, labels, 0, 1, &loss, d, NULL),
                     VT_ERR_INVALID_ARGUMENT);
    vt_backend_destroy(be);

    /* Many samples (pixels of a segmentation batch: several chunks over two threads, a partial
     * block, ignored labels, large logits) against the formula in double. */
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    enum { K2 = 7, N2 = 5003 };
    float *lg = malloc(sizeof(float) * K2 * N2), *pr = malloc(sizeof(float) * K2 * N2),
          *dl = malloc(sizeof(float) * K2 * N2);
    int32_t *lb = malloc(sizeof(int32_t) * N2);
    for (int i = 0; i < K2 * N2; i++) lg[i] = (float)vt_rng_normal(&r) * 8;
    for (int n = 0; n < N2; n++) lb[n] = n % 11 == 0 ? -1 : (int32_t)(vt_rng_next(&r) % K2);
    ck_assert_int_eq(be->ops->softmax_xent(be, K2, N2, lg, lb, 0.1f, 0.5f, &loss, dl, pr), VT_OK);
    double want = 0;
    for (int n = 0; n < N2; n++) {
        double mx = -1e30, se = 0;
        for (int k = 0; k < K2; k++) mx = fmax(mx, lg[k * N2 + n]);
        for (int k = 0; k < K2; k++) se += exp(lg[k * N2 + n] - mx);
        for (int k = 0; k < K2; k++) {
            double p = exp(lg[k * N2 + n] - mx) / se, q = (k == lb[n] ? 0.9 : 0.0) + 0.1 / K2;
            ck_assert_msg(fabs(pr[k * N2 + n] - p) < 1e-6, "p[%d][%d] = %g, want %g", k, n,
                          (double)pr[k * N2 + n], p);
            double g = lb[n] < 0 ? 0 : (p - q) * 0.5;
            ck_assert_msg(fabs(dl[k * N2 + n] - g) < 1e-6, "d[%d][%d] = %g, want %g", k, n,
                          (double)dl[k * N2 + n], g);
            if (lb[n] >= 0) want -= q * (lg[k * N2 + n] - mx - log(se));
        }
    }
    ck_assert_msg(fabs(loss - want) < 1e-5 * want, "loss %g, want %g", (double)loss, want);
    free(lg), free(pr), free(dl), free(lb);
    vt_backend_destroy(be);
}
END_TEST

/* The soft Dice term through the softmax: its gradient w.r.t. the logits against finite
 * differences of the loss (probabilities recomputed by softmax_xent), an ignored pixel gets no
 * gradient, the value against the formula on a case worked out by hand, and the gradient is
 * added, not assigned. */
static float dice_of(vt_backend *be, int K, int N, const float *logits, const int32_t *labels,
                     float w, float *probs, float *d)
{
    float xl, loss;
    ck_assert_int_eq(be->ops->softmax_xent(be, K, N, logits, labels, 0, 1, &xl, NULL, probs),
                     VT_OK);
    ck_assert_int_eq(be->ops->softmax_dice(be, K, N, probs, labels, w, &loss, d), VT_OK);
    return loss;
}

START_TEST(test_dice_grad)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    enum { K = 4, N = 7 };
    float logits[K * N], probs[K * N], d[K * N];
    int32_t labels[N] = {0, 3, 3, -1, 1, 0, 3}; /* class 2 absent, pixel 3 ignored */
    vt_rng r;
    vt_rng_seed(&r, 11);
    for (int i = 0; i < K * N; i++) logits[i] = (float)vt_rng_normal(&r) * 1.5f;
    for (int i = 0; i < K * N; i++) d[i] = 0.5f;
    float w = 0.7f, loss = dice_of(be, K, N, logits, labels, w, probs, d);
    ck_assert_msg(loss > 0 && loss < w, "dice loss %g outside (0, %g)", loss, w);
    for (int i = 0; i < K * N; i++) {
        float save = logits[i], lp, lm, scratch[K * N];
        logits[i] = save + 1e-2f;
        lp = dice_of(be, K, N, logits, labels, w, scratch, NULL);
        logits[i] = save - 1e-2f;
        lm = dice_of(be, K, N, logits, labels, w, scratch, NULL);
        logits[i] = save;
        double num = (lp - lm) / 2e-2, got = d[i] - 0.5f;
        ck_assert_msg(fabs(num - got) < 1e-3, "dice d[%d] = %g, numeric %g", i, got, num);
        if (i % N == 3) ck_assert_msg(got == 0, "ignored pixel %d has gradient %g", i, got);
    }
    /* two pixels, two classes, probabilities (0.75, 0.25) and (0.25, 0.75), labels 0 and 0:
     * I = (0.75 + 0.25, 0), C = (1 + 2, 1 + 0), D = (3/4, 1/2), L = 1 - (0.75 + 0.5)/2 = 0.375 */
    float lg[4] = {logf(3.0f), 0, 0, logf(3.0f)}, pr[4];
    int32_t lb[2] = {0, 0};
    ck_assert_msg(fabsf(dice_of(be, 2, 2, lg, lb, 1, pr, NULL) - 0.375f) < 1e-6f,
                  "dice value on the hand case");
    lb[1] = 5;
    ck_assert_int_eq(be->ops->softmax_dice(be, 2, 2, pr, lb, 1, &loss, NULL),
                     VT_ERR_INVALID_ARGUMENT);
    /* many pixels (the backend works in blocks of them, over its threads): the gradient is the
     * per-pixel formula's (vt_dice_pixel_grad), every pixel of every class */
    enum { K2 = 5, N2 = 1301 };
    float *p2 = malloc(sizeof(float) * K2 * N2), *g2 = malloc(sizeof(float) * K2 * N2),
          *ref = malloc(sizeof(float) * K2 * N2);
    int32_t *y2 = malloc(sizeof(int32_t) * N2);
    for (int i = 0; i < N2; i++) {
        y2[i] = i % 11 == 4 ? -1 : (int32_t)vt_rng_below(&r, K2);
        float t = 0;
        for (int k = 0; k < K2; k++) t += p2[k * N2 + i] = 0.05f + (float)vt_rng_uniform(&r);
        for (int k = 0; k < K2; k++) p2[k * N2 + i] /= t;
    }
    for (int i = 0; i < K2 * N2; i++) g2[i] = ref[i] = 0.25f;
    ck_assert_int_eq(be->ops->softmax_dice(be, K2, N2, p2, y2, w, &loss, g2), VT_OK);
    float ab[2 * K2];
    for (int k = 0; k < K2; k++) {
        double inter = 0, card = 0;
        for (int i = 0; i < N2; i++)
            if (y2[i] >= 0) {
                card += p2[k * N2 + i] + (y2[i] == k);
                if (y2[i] == k) inter += p2[k * N2 + i];
            }
        vt_dice_coef(K2, w, inter, card, &ab[2 * k], &ab[2 * k + 1]);
    }
    for (int i = 0; i < N2; i++)
        if (y2[i] >= 0) vt_dice_pixel_grad(K2, p2 + i, N2, y2[i], ab, ref + i);
    for (int i = 0; i < K2 * N2; i++)
        ck_assert_msg(fabsf(g2[i] - ref[i]) <= 1e-7f, "dice d[%d] = %.9g, the pixel formula's "
                      "%.9g", i, (double)g2[i], (double)ref[i]);
    free(p2);
    free(g2);
    free(ref);
    free(y2);
    vt_backend_destroy(be);
}
END_TEST

/* Optimiser updates against their formulas on a few values. */
START_TEST(test_optimizers)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 1), VT_OK);
    float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f}, m[2] = {0.1f, 0.0f}, v[2] = {0.01f, 0.0f};
    be->ops->sgd_step(be, 2, p, g, m, 0.1f, 0.9f, 0.01f, 1);
    /* g' = 0.5 + 0.01 = 0.51; m = 0.09 + 0.51 = 0.6; p = 1 - 0.1*(0.51 + 0.9*0.6) */
    ck_assert_float_eq_tol(m[0], 0.6f, 1e-6);
    ck_assert_float_eq_tol(p[0], 1.0f - 0.1f * (0.51f + 0.54f), 1e-6);
    float q[1] = {1.0f}, gg[1] = {0.5f}, am[1] = {0.0f}, av[1] = {0.0f};
    (void)v;
    be->ops->adamw_step(be, 1, q, gg, am, av, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.001f);
    ck_assert_float_eq_tol(am[0], 0.05f, 1e-7);
    ck_assert_float_eq_tol(av[0], 0.00025f, 1e-8);
    /* p = 1*(1-0.001) = 0.999; m = 0.05; v = 0.00025; step = 0.1*(0.5)/(sqrt(0.25)+eps) = 0.1 */
    ck_assert_float_eq_tol(q[0], 0.999f - 0.1f, 1e-5);
    vt_backend_destroy(be);
}
END_TEST

/* Activations and their gradients share buffers by liveness over the step (vt_exec_plan): a
 * forward + backward from the same seed gradient gives bitwise the same output, parameter
 * gradients and input gradient as with a buffer per tensor, with less memory; and a second
 * step gives them again (every shared gradient buffer is zeroed before its first writer, every
 * activation rewritten).  Returns the buffers' memory, in elements per image. */
static double run_shared(const vt_model *m, int private_bufs, int keep_columns, int imgsz,
                         float *grads, float *dx, float *yout)
{
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    /* keep_columns = 0: a backend like the CUDA one, whose conv backward reads its input (the
     * CPU one's kept columns would hide a conv input overwritten too early) */
    const vt_backend_ops *ops_saved = be->ops;
    vt_backend_ops ops = *be->ops;
    if (!keep_columns) {
        ops.conv_columns = NULL;
        be->ops = &ops;
    }
    vt_exec *e;
    ck_assert_int_eq(vt_exec_create(&e, &m->graph, be), VT_OK);
    e->private_bufs = private_bufs;
    e->input_grad = 1;
    const int n = 2;
    ck_assert_int_eq(vt_exec_prepare(e, n, imgsz, imgsz), VT_OK);
    ck_assert_int_eq(vt_exec_set_params(e, m->params, m->buffers), VT_OK);
    size_t nin = (size_t)n * m->channels * imgsz * imgsz;
    vt_node *out = &e->g->nodes[m->output_node];
    size_t nout = (size_t)out->out.c * out->out.h * out->out.w * n;
    /* callers read the output after forward: nobody may read it (so it keeps its buffer) */
    ck_assert_int_eq(e->consumers[m->output_node], 0);
    for (int rep = 0; rep < 2; rep++) {
        /* the input too: a buffer shared with it would show in the second step */
        for (size_t i = 0; i < nin; i++)
            vt_exec_input(e)[i] = (float)((i * 2654435761u) % 997) / 997.0f;
        ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
        if (rep == 0) memcpy(yout, out->y, nout * sizeof(float));
        else ck_assert_msg(memcmp(yout, out->y, nout * sizeof(float)) == 0,
                           "%s: a second forward differs", m->arch);
        for (size_t i = 0; i < nout; i++) out->dy[i] = (float)((i * 40503u) % 101) / 101.0f - 0.5f;
        ck_assert_int_eq(vt_exec_backward(e, m->output_node), VT_OK);
        ck_assert_msg(memcmp(yout, out->y, nout * sizeof(float)) == 0,
                      "%s: the output changed in backward", m->arch);
        if (rep == 0) {
            memcpy(grads, e->grads, (size_t)m->graph.n_params * sizeof(float));
            memcpy(dx, e->g->nodes[0].dy, nin * sizeof(float));
        } else {
            ck_assert_msg(memcmp(grads, e->grads, (size_t)m->graph.n_params * sizeof(float)) == 0,
                          "%s: a second backward differs", m->arch);
        }
    }
    /* the memory of the plan, in elements per image; each buffer holds its tensors, and no
     * node's output shares a buffer with an input it reads (but an in-place ReLU) */
    int N = e->g->n_nodes;
    double *el = malloc((size_t)N * sizeof *el), *yo = malloc((size_t)N * sizeof *yo),
           *dyo = malloc((size_t)N * sizeof *dyo), arena = 0;
    int *fw = malloc((size_t)N * sizeof *fw);
    for (int i = 0; i < N; i++)
        el[i] = (double)e->g->nodes[i].out.c * e->g->nodes[i].out.h * e->g->nodes[i].out.w;
    ck_assert_int_eq(vt_exec_plan(e->g, el, 1, 0, !private_bufs, yo, dyo, fw, &arena), 0);
    ck_assert_uint_eq(e->arena_bytes, (size_t)arena * n * sizeof(float));
    for (int i = 1; i < N; i++) {
        const vt_node *nd = &e->g->nodes[i];
        ck_assert(yo[i] + el[i] <= arena && dyo[i] + el[i] <= arena);
        ck_assert(nd->y == e->arena + (size_t)yo[i] * n);
        for (int k = 0; k < nd->n_in; k++) {
            const vt_node *in = &e->g->nodes[nd->in[k]];
            if (in->y == nd->y)
                ck_assert_msg(nd->op == VT_OP_ACT, "%s: node %d writes over its input", m->arch, i);
            int reads_x = nd->op == VT_OP_CONV || nd->op == VT_OP_LINEAR ||
                          nd->op == VT_OP_BN || nd->op == VT_OP_ACT;
            ck_assert_msg(!nd->dy || ((!reads_x || in->y != nd->dy) && in->dy != nd->dy),
                          "%s: node %d's backward reads and writes one buffer", m->arch, i);
        }
    }
    free(el);
    free(yo);
    free(dyo);
    free(fw);
    vt_exec_destroy(e);
    be->ops = ops_saved;
    vt_backend_destroy(be);
    return arena;
}

START_TEST(test_buffer_sharing)
{
    /* cnn-small: BN + ReLU + 2x2 max pool run as one op (the pool's gradient lives until the
     * BN's backward) */
    static const char *const archs[] = {"cls-n", "resnet18", "det-n", "seg-n", "cnn-small"};
    for (int a = 0; a < 5; a++) {
        int imgsz = 64;
        char opt[32];
        snprintf(opt, sizeof opt, "imgsz=%d", imgsz);
        vt_model *m;
        ck_assert_int_eq(vt_model_create(&m, archs[a], 3, opt), VT_OK);
        const vt_node *o = &m->graph.nodes[m->output_node];
        size_t np = (size_t)m->graph.n_params, nin = (size_t)2 * m->channels * imgsz * imgsz;
        size_t nout = (size_t)2 * o->out.c * o->out.h * o->out.w;
        float *g1 = malloc(np * sizeof(float)), *g2 = malloc(np * sizeof(float));
        float *d1 = malloc(nin * sizeof(float)), *d2 = malloc(nin * sizeof(float));
        float *y1 = calloc(nout, sizeof(float)), *y2 = calloc(nout, sizeof(float));
        double mem_private = 0, mem_shared = 0;
        for (int keep = 0; keep < 2; keep++) {
            mem_private = run_shared(m, 1, keep, imgsz, g1, d1, y1);
            mem_shared = run_shared(m, 0, keep, imgsz, g2, d2, y2);
            ck_assert_msg(memcmp(y1, y2, nout * sizeof(float)) == 0, "%s: outputs differ",
                          archs[a]);
            ck_assert_msg(memcmp(g1, g2, np * sizeof(float)) == 0,
                          "%s (kept columns %d): parameter gradients differ", archs[a], keep);
            ck_assert_msg(memcmp(d1, d2, nin * sizeof(float)) == 0,
                          "%s (kept columns %d): input gradients differ", archs[a], keep);
        }
        if (getenv("VT_TEST_VERBOSE"))
            fprintf(stderr, "%s: activations + gradients %g -> %g elements per image\n",
                    archs[a], mem_private, mem_shared);
        ck_assert_msg(mem_shared < 0.6 * mem_private, "%s: buffer memory %g vs %g elements",
                      archs[a], mem_shared, mem_private);
        free(g1);
        free(g2);
        free(d1);
        free(d2);
        free(y1);
        free(y2);
        vt_model_destroy(m);
    }
}
END_TEST

/* A graph of several outputs (the instance segmenter's head, mask coefficients and
 * prototypes, lib/nn/models.c): backward seeded on each output.  Backward is linear in the
 * seeds, so the parameter gradients of the three seeds at once equal the sum of each seed's
 * alone; a seed the executor wiped (as a single-output backward does to a leaf below its
 * output) would break the sum, and the prototype branch would get no gradient. */
static void backward_seeds(vt_exec *e, const vt_model *m, int which, float *grads)
{
    const int n = 2;
    ck_assert_int_eq(vt_exec_forward(e, 1), VT_OK);
    for (int k = 0; k < m->n_outputs; k++) {
        vt_node *o = &e->g->nodes[m->outputs[k]];
        size_t ne = (size_t)o->out.c * o->out.h * o->out.w * n;
        for (size_t i = 0; i < ne; i++)
            o->dy[i] = which < 0 || which == k ? (float)((i * 40503u + 7 * k) % 101) / 101.0f - 0.5f
                                               : 0.0f;
    }
    ck_assert_int_eq(vt_exec_backward_outputs(e, m->outputs, m->n_outputs), VT_OK);
    memcpy(grads, e->grads, (size_t)m->graph.n_params * sizeof(float));
}

START_TEST(test_multi_output_backward)
{
    static const vt_onnx_spec onnx = {.task = "test", .out_name = "head"};
    static const vt_arch_spec spec = {.name = "iseg-test", .revision = 1, .min_classes = 1,
                                      .multiple = 32, .build = vt_build_iseg, .cfg = &vt_net_n,
                                      .init = vt_init_det_head, .onnx = &onnx};
    vt_model *m;
    ck_assert_int_eq(vt_model_new(&m, &spec, 2, 3, 64, 0, 1), VT_OK);
    vt_model_init_weights(m);
    ck_assert_int_eq(m->n_outputs, 3);
    const vt_node *coef = &m->graph.nodes[m->outputs[1]], *proto = &m->graph.nodes[m->outputs[2]];
    ck_assert_int_eq(coef->out.c, VT_ISEG_PROTOS);
    ck_assert_int_eq(coef->out.w, 64 / 8); /* the head's grid */
    ck_assert_int_eq(proto->out.c, VT_ISEG_PROTOS);
    ck_assert_int_eq(proto->out.w, 64 / 4); /* the mask grid */
    vt_backend *be;
    ck_assert_int_eq(vt_backend_cpu_create(&be, 2), VT_OK);
    vt_exec *e;
    ck_assert_int_eq(vt_exec_create(&e, &m->graph, be), VT_OK);
    ck_assert_int_eq(vt_exec_prepare(e, 2, 64, 64), VT_OK);
    ck_assert_int_eq(vt_exec_set_params(e, m->params, m->buffers), VT_OK);
    size_t nin = (size_t)2 * 3 * 64 * 64, np = (size_t)m->graph.n_params;
    for (size_t i = 0; i < nin; i++) vt_exec_input(e)[i] = (float)((i * 2654435761u) % 997) / 997.0f;
    float *all = malloc(np * sizeof(float)), *one = malloc(np * sizeof(float)),
          *sum = calloc(np, sizeof(float));
    backward_seeds(e, m, -1, all);
    for (int k = 0; k < 3; k++) {
        backward_seeds(e, m, k, one);
        double nz = 0;
        for (size_t i = 0; i < np; i++) {
            sum[i] += one[i];
            nz += fabs(one[i]);
        }
        ck_assert_msg(nz > 0, "output %d's seed gave no gradient", k);
    }
    double err = 0, ref = 0;
    for (size_t i = 0; i < np; i++) {
        err = fmax(err, fabs(all[i] - sum[i]));
        ref = fmax(ref, fabs(sum[i]));
    }
    ck_assert_msg(err <= 1e-4 * ref, "gradients of the three seeds differ from their sum by %g "
                  "(of %g)", err, ref);
    /* an output read by another node is not a leaf: refused with several outputs */
    int bad[2] = {m->outputs[0], m->graph.nodes[m->outputs[2]].in[0]};
    ck_assert_int_eq(vt_exec_backward_outputs(e, bad, 2), VT_ERR_INVALID_ARGUMENT);
    free(all);
    free(one);
    free(sum);
    vt_exec_destroy(e);
    vt_backend_destroy(be);
    vt_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("gradcheck");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_gradcheck, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_loop_test(tc, test_gradcheck_chunked, 0, 6); /* the conv cases */
    tcase_add_test(tc, test_flatcat_values);
    tcase_add_test(tc, test_flatcat_shapes);
    tcase_add_test(tc, test_xent_grad);
    tcase_add_test(tc, test_dice_grad);
    tcase_add_test(tc, test_optimizers);
    tcase_add_test(tc, test_buffer_sharing);
    tcase_add_test(tc, test_multi_output_backward);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return vt_test_run(suite()); }
