/* vt_model_export: the model's inference graph as an ONNX file.
 *
 * The graph is walked in its (topological) order and each node becomes one or two ONNX nodes.
 * A batch norm that reads a convolution nobody else reads is folded into that convolution's
 * weights and bias (the running statistics the predictor uses), so the file holds what the
 * predictor computes and nothing a runtime would have to fuse; any other batch norm (every one
 * with fold=0) becomes a BatchNormalization in inference mode.  Dropout is the identity at
 * inference and emits nothing.  Every output of the model is a graph output, named by the
 * spec.  Models with a detection head may get the decoding and NMS of vt_model_detect_*
 * appended (nms=1); per-anchor outputs (an instance segmenter's mask coefficients) then give
 * the kept detections' rows.
 *
 * The protobuf is written by protobuf-c from lib/nn/onnx_ir.proto.  Every message, string and
 * array of the file is allocated in an arena that is freed at the end, so one failure path
 * releases everything; weights that need no change point into the model's own arrays. */
#include "vt_config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"

typedef struct xopts {
    long long opset, batch, nms, half, max_det, fold; /* batch 0: dynamic */
    double conf, iou;
} xopts;

/* The keys, ranges and defaults are the VT_OPT_EXPORT_* lines of the option table; the word
 * batch=dynamic is this call's own. */
typedef struct xparse {
    vt_optvals *v;
    int dynamic;
} xparse;

static vt_status export_pair(void *ctx, const char *key, const char *value)
{
    xparse *p = ctx;
    int is_batch = !strcmp(key, "batch");
    if (is_batch) p->dynamic = !strcmp(value, "dynamic");
    if (p->dynamic && is_batch) return VT_OK;
    char kv[VT_OPT_STR_MAX + 160];
    snprintf(kv, sizeof kv, "%s=%s", key, value);
    return vt_optvals_set_kv(p->v, kv);
}

static vt_status parse_export_opts(const char *options, xopts *x)
{
    xparse p = {vt_malloc(sizeof(vt_optvals)), 0};
    if (!p.v) return VT_ERR_OUT_OF_MEMORY;
    vt_optvals_init(p.v, VT_SCOPE_EXPORT);
    vt_status st = vt_parse_kv_list(options, export_pair, &p);
    x->opset = (long long)vt_opt_num(p.v, VT_OPT_EXPORT_OPSET);
    x->batch = p.dynamic ? 0 : (long long)vt_opt_num(p.v, VT_OPT_EXPORT_BATCH);
    x->nms = (long long)vt_opt_num(p.v, VT_OPT_EXPORT_NMS);
    x->half = (long long)vt_opt_num(p.v, VT_OPT_EXPORT_HALF);
    x->max_det = (long long)vt_opt_num(p.v, VT_OPT_EXPORT_MAX_DET);
    x->fold = (long long)vt_opt_num(p.v, VT_OPT_EXPORT_FOLD);
    x->conf = vt_opt_num(p.v, VT_OPT_EXPORT_CONF);
    x->iou = vt_opt_num(p.v, VT_OPT_EXPORT_IOU);
    free(p.v);
    return st;
}

#if VT_HAVE_ONNX

#include "backend/det_loss_math.h"
#include "core/atomic_file.h"
#include "nn/onnx_ir.pb-c.h"

/* ---- building the messages ---------------------------------------------------------------- */

typedef struct ox {
    vt_status st;                  /* the first failure; afterwards every helper does nothing */
    void **owned;                  /* the arena: every allocation, freed together */
    size_t n_owned, cap_owned;
    Vtonnx__NodeProto **node;
    size_t n_node, cap_node;
    Vtonnx__TensorProto **init;
    size_t n_init, cap_init;
    Vtonnx__StringStringEntryProto **meta;
    size_t n_meta, cap_meta;
} ox;

/* Room for one more element in the array *v (*n used of *cap); 0 when out of memory. */
static int grow(void **v, size_t *n, size_t *cap, size_t elem)
{
    if (*n < *cap) return 1;
    size_t nc = *cap ? 2 * *cap : 64;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return 0;
    *v = nv;
    *cap = nc;
    return 1;
}
#define PUSH(o, arr, p)                                                                         \
    do {                                                                                        \
        void *v_ = (o)->arr;                                                                    \
        if (grow(&v_, &(o)->n_##arr, &(o)->cap_##arr, sizeof *(o)->arr)) {                      \
            (o)->arr = v_;                                                                      \
            (o)->arr[(o)->n_##arr++] = (p);                                                     \
        } else if (!(o)->st) {                                                                  \
            (o)->st = vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory while exporting");           \
        }                                                                                       \
    } while (0)

static void *xalloc(ox *o, size_t n)
{
    if (o->st) return NULL;
    void *p = calloc(1, n ? n : 1);
    if (p) PUSH(o, owned, p);
    if (!p || o->st) {
        free(p);
        if (!o->st) o->st = vt_fail(VT_ERR_OUT_OF_MEMORY, "out of memory while exporting");
        return NULL;
    }
    return p;
}

static char *xstrf(ox *o, const char *fmt, ...) VT_PRINTF(2, 3);
static char *xstrf(ox *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len >= 0 ? xalloc(o, (size_t)len + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void *xdup(ox *o, const void *p, size_t n)
{
    void *q = xalloc(o, n);
    if (q && n) memcpy(q, p, n);
    return q;
}

/* A node "op" reading the n_in names that follow and writing `out`; returns the node (for its
 * attributes) or NULL after a failure.  A NULL input name is an absent optional input. */
static Vtonnx__NodeProto *node(ox *o, const char *op, const char *out, int n_in, ...)
{
    Vtonnx__NodeProto *nd = xalloc(o, sizeof *nd);
    char **in = xalloc(o, (size_t)n_in * sizeof(char *));
    char **outs = xalloc(o, sizeof(char *));
    if (!nd || !in || !outs || !out) return NULL;
    vtonnx__node_proto__init(nd);
    nd->op_type = (char *)op;
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++) {
        const char *s = va_arg(ap, const char *);
        in[i] = (char *)(s ? s : "");
    }
    va_end(ap);
    outs[0] = (char *)out;
    nd->input = in;
    nd->n_input = (size_t)n_in;
    nd->output = outs;
    nd->n_output = 1;
    nd->name = xstrf(o, "%s_%zu", op, o->n_node);
    PUSH(o, node, nd);
    return o->st ? NULL : nd;
}

static Vtonnx__AttributeProto *attr(ox *o, Vtonnx__NodeProto *nd, const char *name,
                                    Vtonnx__AttributeProto__AttributeType type)
{
    if (!nd) return NULL;
    Vtonnx__AttributeProto *a = xalloc(o, sizeof *a);
    Vtonnx__AttributeProto **v = xalloc(o, (nd->n_attribute + 1) * sizeof *v);
    if (!a || !v) return NULL;
    vtonnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    if (nd->n_attribute) memcpy(v, nd->attribute, nd->n_attribute * sizeof *v);
    v[nd->n_attribute++] = a;
    nd->attribute = v;
    return a;
}

static void attr_i(ox *o, Vtonnx__NodeProto *nd, const char *name, int64_t i)
{
    Vtonnx__AttributeProto *a = attr(o, nd, name, VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = i;
}

static void attr_f(ox *o, Vtonnx__NodeProto *nd, const char *name, float f)
{
    Vtonnx__AttributeProto *a = attr(o, nd, name, VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = f;
}

static void attr_s(ox *o, Vtonnx__NodeProto *nd, const char *name, const char *s)
{
    Vtonnx__AttributeProto *a = attr(o, nd, name, VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (a) a->has_s = 1, a->s.data = (uint8_t *)s, a->s.len = strlen(s);
}

/* Conv and pooling windows: square kernel k, stride s, padding p on every side. */
static void attr_window(ox *o, Vtonnx__NodeProto *nd, int k, int s, int p)
{
    int64_t *v = xalloc(o, 8 * sizeof *v);
    Vtonnx__AttributeProto *a[3];
    const char *names[3] = {"kernel_shape", "strides", "pads"};
    const size_t n[3] = {2, 2, 4};
    const int val[3] = {k, s, p};
    for (int j = 0; j < 3; j++) {
        a[j] = attr(o, nd, names[j], VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
        if (!a[j] || !v) return;
        int64_t *d = v + 2 * j;
        for (size_t t = 0; t < n[j]; t++) d[t] = val[j];
        a[j]->ints = d;
        a[j]->n_ints = n[j];
    }
}

/* An initializer; f32 borrows `f` (it must outlive the export), int64 is copied. */
static const char *tensor(ox *o, const char *name, const float *f, const int64_t *i64,
                          size_t count, int nd, const int64_t *dims)
{
    Vtonnx__TensorProto *t = xalloc(o, sizeof *t);
    int64_t *d = xdup(o, dims, (size_t)nd * sizeof *dims);
    int64_t *iv = i64 ? xdup(o, i64, count * sizeof *i64) : NULL;
    if (!t || !d || !name || (i64 && !iv)) return NULL;
    vtonnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->dims = d;
    t->n_dims = (size_t)nd;
    t->has_data_type = 1;
    if (f) {
        t->data_type = VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        t->float_data = (float *)f;
        t->n_float_data = count;
    } else {
        t->data_type = VTONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        t->int64_data = iv;
        t->n_int64_data = count;
    }
    PUSH(o, init, t);
    return o->st ? NULL : name;
}

static const char *const_f(ox *o, const char *name, float v)
{
    float *p = xdup(o, &v, sizeof v);
    return p ? tensor(o, name, p, NULL, 1, 0, NULL) : NULL;
}

/* A 1-D int64 constant of n values (nd 0: a scalar of one). */
static const char *const_i(ox *o, const char *name, int nd, int n, ...)
{
    int64_t v[8], dims[1] = {n};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n && i < 8; i++) v[i] = va_arg(ap, int64_t);
    va_end(ap);
    return tensor(o, name, NULL, v, (size_t)n, nd, dims);
}

static void meta(ox *o, const char *key, const char *value)
{
    Vtonnx__StringStringEntryProto *e = xalloc(o, sizeof *e);
    if (!e || !value) return;
    vtonnx__string_string_entry_proto__init(e);
    e->key = (char *)key;
    e->value = (char *)value;
    PUSH(o, meta, e);
}

/* A float or int64 tensor type of rank nd; dims < 0 are symbolic, named by params[i]. */
static Vtonnx__ValueInfoProto *value_info(ox *o, const char *name, int elem, int nd,
                                          const int64_t *dims, const char *const *params)
{
    Vtonnx__ValueInfoProto *vi = xalloc(o, sizeof *vi);
    Vtonnx__TypeProto *tp = xalloc(o, sizeof *tp);
    Vtonnx__TypeProto__Tensor *tt = xalloc(o, sizeof *tt);
    Vtonnx__TensorShapeProto *sh = xalloc(o, sizeof *sh);
    Vtonnx__TensorShapeProto__Dimension *dim = xalloc(o, (size_t)nd * sizeof *dim);
    Vtonnx__TensorShapeProto__Dimension **dimp = xalloc(o, (size_t)nd * sizeof *dimp);
    if (!vi || !tp || !tt || !sh || !dim || !dimp) return NULL;
    vtonnx__value_info_proto__init(vi);
    vtonnx__type_proto__init(tp);
    vtonnx__type_proto__tensor__init(tt);
    vtonnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < nd; i++) {
        vtonnx__tensor_shape_proto__dimension__init(&dim[i]);
        if (dims[i] >= 0) {
            dim[i].value_case = VTONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim[i].dim_value = dims[i];
        } else {
            dim[i].value_case = VTONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim[i].dim_param = (char *)params[i];
        }
        dimp[i] = &dim[i];
    }
    sh->dim = dimp;
    sh->n_dim = (size_t)nd;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tt->shape = sh;
    tp->value_case = VTONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* ---- the model's graph ---------------------------------------------------------------------- */

/* Conv weights and bias with the batch norm `bn` (or none) folded in:
 * w' = w * gamma / sqrt(var + eps), b' = beta + (b - mean) * gamma / sqrt(var + eps). */
static const char *conv_node(ox *o, const vt_model *m, int i, const vt_node *bn, const char *in,
                             const char *out)
{
    const vt_graph *g = &m->graph;
    const vt_node *nd = &g->nodes[i];
    int cout = nd->cout, cin = g->nodes[nd->in[0]].out.c / nd->groups;
    size_t per = (size_t)nd->w_n / (size_t)cout;
    const float *w = m->params + nd->w_off, *b = nd->has_bias ? m->params + nd->b_off : NULL;
    const float *wf = w, *bf = b;
    if (bn) {
        float *w2 = xalloc(o, (size_t)nd->w_n * sizeof *w2);
        float *b2 = xalloc(o, (size_t)cout * sizeof *b2);
        if (!w2 || !b2) return NULL;
        const float *gamma = m->params + bn->w_off, *beta = m->params + bn->b_off;
        const float *mean = m->buffers + bn->buf_off, *var = mean + cout;
        for (int c = 0; c < cout; c++) {
            double sc = gamma[c] / sqrt((double)var[c] + bn->bn_eps);
            for (size_t j = 0; j < per; j++) w2[c * per + j] = (float)(w[c * per + j] * sc);
            b2[c] = (float)(beta[c] + ((b ? b[c] : 0.0) - mean[c]) * sc);
        }
        wf = w2;
        bf = b2;
    }
    int64_t wd[4] = {cout, cin, nd->k, nd->k}, bd[1] = {cout};
    const char *wn = tensor(o, xstrf(o, "w%d", i), wf, NULL, (size_t)nd->w_n, 4, wd);
    const char *bname = bf ? tensor(o, xstrf(o, "b%d", i), bf, NULL, (size_t)cout, 1, bd) : NULL;
    Vtonnx__NodeProto *c = node(o, "Conv", out, bf ? 3 : 2, in, wn, bname);
    attr_window(o, c, nd->k, nd->s, nd->p);
    attr_i(o, c, "group", nd->groups);
    return c ? out : NULL;
}

static const char *bn_node(ox *o, const vt_model *m, int i, const char *in, const char *out)
{
    const vt_node *nd = &m->graph.nodes[i];
    int64_t d[1] = {nd->out.c};
    size_t c = (size_t)nd->out.c;
    const float *mean = m->buffers + nd->buf_off;
    const char *sc = tensor(o, xstrf(o, "bn%d_scale", i), m->params + nd->w_off, NULL, c, 1, d);
    const char *bi = tensor(o, xstrf(o, "bn%d_bias", i), m->params + nd->b_off, NULL, c, 1, d);
    const char *mu = tensor(o, xstrf(o, "bn%d_mean", i), mean, NULL, c, 1, d);
    const char *va = tensor(o, xstrf(o, "bn%d_var", i), mean + c, NULL, c, 1, d);
    Vtonnx__NodeProto *n = node(o, "BatchNormalization", out, 5, in, sc, bi, mu, va);
    attr_f(o, n, "epsilon", nd->bn_eps);
    return n ? out : NULL;
}

static const char *act_node(ox *o, const vt_node *nd, int i, const char *in, const char *out)
{
    Vtonnx__NodeProto *n = NULL;
    switch (nd->act) {
    case VT_ACT_NONE: return in;
    case VT_ACT_RELU: n = node(o, "Relu", out, 1, in); break;
    case VT_ACT_SIGMOID: n = node(o, "Sigmoid", out, 1, in); break;
    case VT_ACT_LEAKY:
        n = node(o, "LeakyRelu", out, 1, in);
        attr_f(o, n, "alpha", nd->alpha);
        break;
    case VT_ACT_SILU: {
        /* no SiLU operator in these opsets: x * sigmoid(x) */
        const char *sg = xstrf(o, "t%d_sigmoid", i);
        node(o, "Sigmoid", sg, 1, in);
        n = node(o, "Mul", out, 2, in, sg);
        break;
    }
    }
    return n ? out : NULL;
}

/* The output j whose node is i, or -1. */
static int output_of(const vt_model *m, int i)
{
    for (int j = 0; j < m->n_outputs; j++)
        if (m->outputs[j] == i) return j;
    return -1;
}

/* The tensor name node i writes: want[j] for output j, else "t<i>". */
static const char *tensor_name(ox *o, const vt_model *m, const char *const *want, int i)
{
    int j = output_of(m, i);
    return j >= 0 ? want[j] : xstrf(o, "t%d", i);
}

/* Emits the graph's nodes; got[j] gets the name of output j's tensor, want[j] where the node
 * writes one (an identity activation or dropout passes its input's on).  fold: batch norms
 * into their convolutions where they can be. */
static void emit_graph(ox *o, const vt_model *m, int fold, const char *const *want,
                       const char **got)
{
    const vt_graph *g = &m->graph;
    int n = g->n_nodes;
    const char **name = xalloc(o, (size_t)n * sizeof *name);
    int *readers = xalloc(o, (size_t)n * sizeof *readers);
    if (!name || !readers) return;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) readers[g->nodes[i].in[k]]++;
    for (int i = 0; i < n && !o->st; i++) {
        const vt_node *nd = &g->nodes[i];
        const char *in = nd->n_in ? name[nd->in[0]] : NULL;
        const char *out = tensor_name(o, m, want, i);
        Vtonnx__NodeProto *x = NULL;
        switch (nd->op) {
        case VT_OP_INPUT: name[i] = "images"; break;
        case VT_OP_CONV: {
            const vt_node *bn = NULL;
            if (fold && readers[i] == 1 && i + 1 < n && g->nodes[i + 1].op == VT_OP_BN &&
                g->nodes[i + 1].in[0] == i && output_of(m, i) < 0)
                bn = &g->nodes[i + 1];
            if (bn) out = tensor_name(o, m, want, i + 1);
            name[i] = conv_node(o, m, i, bn, in, out);
            if (bn) {
                name[i + 1] = name[i];
                i++;
            }
            break;
        }
        case VT_OP_BN: name[i] = bn_node(o, m, i, in, out); break;
        case VT_OP_ACT: name[i] = act_node(o, nd, i, in, out); break;
        case VT_OP_MAXPOOL:
        case VT_OP_AVGPOOL:
            x = node(o, nd->op == VT_OP_MAXPOOL ? "MaxPool" : "AveragePool", out, 1, in);
            attr_window(o, x, nd->k, nd->s, nd->p);
            /* the library divides by k * k at the borders too */
            if (nd->op == VT_OP_AVGPOOL) attr_i(o, x, "count_include_pad", 1);
            break;
        case VT_OP_GAP: x = node(o, "GlobalAveragePool", out, 1, in); break;
        case VT_OP_LINEAR: {
            const char *flat = xstrf(o, "t%d_flat", i);
            x = node(o, "Flatten", flat, 1, in);
            attr_i(o, x, "axis", 1);
            int cin = g->nodes[nd->in[0]].out.c;
            int64_t wd[2] = {nd->cout, cin}, bd[1] = {nd->cout};
            const char *wn = tensor(o, xstrf(o, "w%d", i), m->params + nd->w_off, NULL,
                                    (size_t)nd->w_n, 2, wd);
            const char *bname = tensor(o, xstrf(o, "b%d", i), m->params + nd->b_off, NULL,
                                       (size_t)nd->cout, 1, bd);
            x = node(o, "Gemm", out, 3, flat, wn, bname);
            attr_i(o, x, "transB", 1);
            break;
        }
        case VT_OP_DROPOUT: name[i] = in; break;
        case VT_OP_ADD: x = node(o, "Add", out, 2, in, name[nd->in[1]]); break;
        case VT_OP_CONCAT:
            x = node(o, "Concat", out, nd->n_in, in, nd->n_in > 1 ? name[nd->in[1]] : NULL,
                     nd->n_in > 2 ? name[nd->in[2]] : NULL, nd->n_in > 3 ? name[nd->in[3]] : NULL);
            attr_i(o, x, "axis", 1);
            break;
        case VT_OP_FLATCAT: {
            /* [N, c, h, w] -> [N, c, 1, h*w] each (0: the batch as it comes, -1: h*w), then
             * joined along the last axis: the library's CNHW row (c, n) is ONNX's [n, c, 0, :] */
            const char *sh = const_i(o, xstrf(o, "t%d_shape", i), 1, 4, (int64_t)0,
                                     (int64_t)nd->out.c, (int64_t)1, (int64_t)-1);
            const char *flat[VT_MAX_INPUTS] = {NULL};
            for (int j = 0; j < nd->n_in; j++) {
                flat[j] = xstrf(o, "t%d_flat%d", i, j);
                node(o, "Reshape", flat[j], 2, name[nd->in[j]], sh);
            }
            x = node(o, "Concat", out, nd->n_in, flat[0], flat[1], flat[2], flat[3]);
            attr_i(o, x, "axis", 3);
            break;
        }
        case VT_OP_UPSAMPLE: {
            static const float two[4] = {1, 1, 2, 2};
            int64_t d[1] = {4};
            const char *sc = tensor(o, xstrf(o, "t%d_scales", i), two, NULL, 4, 1, d);
            x = node(o, "Resize", out, 3, in, NULL, sc);
            /* nearest x2 as the library does it: output (y, x) reads input (y/2, x/2) */
            attr_s(o, x, "mode", "nearest");
            attr_s(o, x, "coordinate_transformation_mode", "asymmetric");
            attr_s(o, x, "nearest_mode", "floor");
            break;
        }
        }
        if (x) name[i] = out;
        if (!o->st && !name[i])
            o->st = vt_fail(VT_ERR_INTERNAL, "ONNX export: node %d not emitted", i);
    }
    for (int j = 0; j < m->n_outputs && !o->st; j++) got[j] = name[m->outputs[j]];
}

/* Decoding and NMS of the detection head, as vt_model_detect_* do them (batch 1): boxes from
 * the four log edge distances (det_loss_math.h), sigmoid scores, the best class of every cell, class-aware NMS, at most
 * max_det by score, boxes clipped to the input. */
static void emit_nms(ox *o, const vt_model *m, const char *head, const xopts *x)
{
    const vt_node *hn = &m->graph.nodes[m->output_node];
    int nc = m->num_classes, gh = hn->out.h, gw = hn->out.w;
    int64_t cells = (int64_t)gh * gw;
    vt_det_loss_desc lv = {.n = 1, .nc = nc};
    lv.n_levels = vt_det_head_levels(&m->graph, m->output_node, m->imgsz, lv.level);
    /* per anchor: its cell centre (2 planes) and its level's stride */
    float *grid = xalloc(o, 3 * (size_t)cells * sizeof *grid);
    if (!grid) return;
    for (int64_t a = 0; a < cells; a++)
        vt_det_anchor(&lv, a, &grid[a], &grid[cells + a], &grid[2 * cells + a]);
    int64_t gd[4] = {1, 2, gh, gw}, sd[4] = {1, 1, gh, gw};
    const char *gname = tensor(o, "nms_grid", grid, NULL, 2 * (size_t)cells, 4, gd);
    const char *sname = tensor(o, "nms_stride", grid + 2 * cells, NULL, (size_t)cells, 4, sd);
    const char *ax1 = const_i(o, "nms_axis1", 1, 1, (int64_t)1);
    const char *c0 = const_i(o, "nms_c0", 1, 1, (int64_t)0);
    const char *c2 = const_i(o, "nms_c2", 1, 1, (int64_t)2);
    const char *c4 = const_i(o, "nms_c4", 1, 1, (int64_t)4);
    const char *cend = const_i(o, "nms_cend", 1, 1, (int64_t)(4 + nc));
    node(o, "Slice", "nms_llt", 4, head, c0, c2, ax1);
    node(o, "Slice", "nms_lrb", 4, head, c2, c4, ax1);
    node(o, "Slice", "nms_logits", 4, head, c4, cend, ax1);
    /* the edges: cell centre -/+ stride * exp(clamped log distance) */
    const char *lmin = const_f(o, "nms_lmin", VT_DET_LOG_MIN);
    const char *lmax = const_f(o, "nms_lmax", VT_DET_LOG_MAX);
    node(o, "Clip", "nms_llt_c", 3, "nms_llt", lmin, lmax);
    node(o, "Clip", "nms_lrb_c", 3, "nms_lrb", lmin, lmax);
    node(o, "Exp", "nms_elt", 1, "nms_llt_c");
    node(o, "Exp", "nms_erb", 1, "nms_lrb_c");
    node(o, "Mul", "nms_dlt", 2, "nms_elt", sname);
    node(o, "Mul", "nms_drb", 2, "nms_erb", sname);
    node(o, "Sub", "nms_p0", 2, gname, "nms_dlt");
    node(o, "Add", "nms_p1", 2, gname, "nms_drb");
    attr_i(o, node(o, "Concat", "nms_corners", 2, "nms_p0", "nms_p1"), "axis", 1);
    node(o, "Reshape", "nms_boxes_t", 2, "nms_corners",
         const_i(o, "nms_shape_b", 1, 3, (int64_t)1, (int64_t)4, (int64_t)cells));
    Vtonnx__NodeProto *tr = node(o, "Transpose", "nms_boxes", 1, "nms_boxes_t");
    Vtonnx__AttributeProto *perm =
        attr(o, tr, "perm", VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static const int64_t perm_v[3] = {0, 2, 1};
    if (perm) perm->ints = (int64_t *)perm_v, perm->n_ints = 3;
    node(o, "Sigmoid", "nms_sig", 1, "nms_logits");
    node(o, "Reshape", "nms_scores_all", 2, "nms_sig",
         const_i(o, "nms_shape_s", 1, 3, (int64_t)1, (int64_t)nc, (int64_t)cells));
    /* one class per cell, the first best as the library picks it: zero the other scores */
    Vtonnx__NodeProto *am = node(o, "ArgMax", "nms_best", 1, "nms_scores_all");
    attr_i(o, am, "axis", 1);
    attr_i(o, am, "keepdims", 1);
    int64_t *cls = xalloc(o, (size_t)nc * sizeof *cls);
    if (!cls) return;
    for (int c = 0; c < nc; c++) cls[c] = c;
    int64_t cd[3] = {1, nc, 1};
    node(o, "Equal", "nms_is_best", 2, "nms_best",
         tensor(o, "nms_class_ids", NULL, cls, (size_t)nc, 3, cd));
    attr_i(o, node(o, "Cast", "nms_best_f", 1, "nms_is_best"), "to",
           VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    node(o, "Mul", "nms_scores", 2, "nms_scores_all", "nms_best_f");
    float iou = (float)x->iou, conf = (float)x->conf;
    int64_t one[1] = {1};
    node(o, "NonMaxSuppression", "nms_sel", 5, "nms_boxes", "nms_scores",
         const_i(o, "nms_max_det", 1, 1, (int64_t)x->max_det),
         tensor(o, "nms_iou", xdup(o, &iou, sizeof iou), NULL, 1, 1, one),
         tensor(o, "nms_conf", xdup(o, &conf, sizeof conf), NULL, 1, 1, one));
    /* selected rows are (batch, class, cell) */
    attr_i(o, node(o, "Gather", "nms_cls", 2, "nms_sel", const_i(o, "nms_i1", 0, 1, (int64_t)1)),
           "axis", 1);
    attr_i(o, node(o, "Gather", "nms_cell", 2, "nms_sel", const_i(o, "nms_i2", 0, 1, (int64_t)2)),
           "axis", 1);
    node(o, "GatherND", "nms_sel_scores", 2, "nms_scores", "nms_sel");
    node(o, "Reshape", "nms_boxes_2d", 2, "nms_boxes",
         const_i(o, "nms_shape_b2", 1, 2, (int64_t)-1, (int64_t)4));
    node(o, "Gather", "nms_sel_boxes", 2, "nms_boxes_2d", "nms_cell");
    /* NMS caps each class at max_det; the library caps the image: keep the best max_det */
    node(o, "Shape", "nms_count", 1, "nms_sel_scores");
    node(o, "Min", "nms_k", 2, "nms_count", "nms_max_det");
    Vtonnx__NodeProto *tk = node(o, "TopK", "scores", 2, "nms_sel_scores", "nms_k");
    if (tk) {
        char **outs = xalloc(o, 2 * sizeof *outs);
        if (!outs) return;
        outs[0] = "scores";
        outs[1] = "nms_order";
        tk->output = outs;
        tk->n_output = 2;
    }
    attr_i(o, tk, "axis", 0);
    node(o, "Gather", "nms_top_boxes", 2, "nms_sel_boxes", "nms_order");
    node(o, "Clip", "boxes", 3, "nms_top_boxes", const_f(o, "nms_zero", 0.0f),
         const_f(o, "nms_size", (float)m->imgsz));
    node(o, "Gather", "classes", 2, "nms_cls", "nms_order");
}

/* After emit_nms: output j, `in` ([1, c, h, w] or [1, c, 1, A], one column per anchor of the
 * head in its order), as `out` [K, c], the columns of the cells NMS kept in the order of
 * "scores". */
static void emit_nms_rows(ox *o, const vt_model *m, int j, const char *in, const char *out)
{
    const vt_node *hn = &m->graph.nodes[m->output_node], *nd = &m->graph.nodes[m->outputs[j]];
    int64_t cells = (int64_t)hn->out.h * hn->out.w, cols = (int64_t)nd->out.h * nd->out.w;
    if (cols != cells) {
        if (!o->st)
            o->st = vt_fail(VT_ERR_INTERNAL, "ONNX export of %s: output %d has %lld columns, "
                            "the head %lld anchors", m->arch, j, (long long)cols,
                            (long long)cells);
        return;
    }
    const char *flat = xstrf(o, "%s_flat", out), *rows = xstrf(o, "%s_rows", out),
               *cell = xstrf(o, "%s_cell", out);
    node(o, "Reshape", flat, 2, in,
         const_i(o, xstrf(o, "%s_shape", out), 1, 2, (int64_t)nd->out.c, cells));
    Vtonnx__NodeProto *tr = node(o, "Transpose", rows, 1, flat);
    Vtonnx__AttributeProto *perm =
        attr(o, tr, "perm", VTONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static const int64_t perm_v[2] = {1, 0};
    if (perm) perm->ints = (int64_t *)perm_v, perm->n_ints = 2;
    /* the kept detections' cells, best score first */
    node(o, "Gather", cell, 2, "nms_cell", "nms_order");
    node(o, "Gather", out, 2, rows, cell);
}

/* ---- the contract in metadata_props --------------------------------------------------------- */

/* The class names as a JSON list of strings. */
static char *names_json(ox *o, const vt_model *m)
{
    size_t cap = 3;
    for (int i = 0; i < m->num_classes; i++) cap += 6 * strlen(m->class_names[i]) + 3;
    char *s = xalloc(o, cap), *p = s;
    if (!s) return NULL;
    *p++ = '[';
    for (int i = 0; i < m->num_classes; i++) {
        if (i) *p++ = ',';
        *p++ = '"';
        for (const unsigned char *c = (const unsigned char *)m->class_names[i]; *c; c++) {
            if (*c == '"' || *c == '\\') *p++ = '\\', *p++ = (char)*c;
            else if (*c < 0x20) p += sprintf(p, "\\u%04x", *c);
            else *p++ = (char)*c;
        }
        *p++ = '"';
    }
    *p++ = ']';
    *p = 0;
    return s;
}

static void write_meta(ox *o, const vt_model *m, const xopts *x)
{
    const vt_onnx_spec *sp = m->spec->onnx;
    meta(o, "arch", m->arch);
    meta(o, "task", sp->task);
    meta(o, "imgsz", xstrf(o, "%d", m->imgsz));
    meta(o, "channels", xstrf(o, "%d", m->channels));
    meta(o, "num_classes", xstrf(o, "%d", m->num_classes));
    if (m->class_names) meta(o, "names", names_json(o, m));
    meta(o, "input", xstrf(o,
         "images: float32 NCHW [N, %d, %d, %d], %s, 8-bit pixel / 255 (0..1), no mean or std",
         m->channels, m->imgsz, m->imgsz,
         m->channels == 1 ? "gray (0.299 R + 0.587 G + 0.114 B)" : "RGB"));
    meta(o, "preprocess", !sp->letterbox
         ? "the caller resizes the image to imgsz x imgsz (aspect ratio not kept)"
         : "the caller letterboxes the image to imgsz x imgsz: scale by min(imgsz / w, "
           "imgsz / h), centre, pad with gray 114; map outputs back through it");
    meta(o, "outputs", x->nms ? sp->nms_outputs : sp->outputs);
    if (sp->det_head) {
        vt_det_level lv[VT_DET_MAX_LEVELS];
        int nl = vt_det_head_levels(&m->graph, m->output_node, m->imgsz, lv);
        char buf[64] = "";
        for (int l = 0; l < nl; l++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%g", l ? "," : "",
                     (double)lv[l].stride);
        meta(o, "strides", xstrf(o, "%s", buf));
        meta(o, "nms", x->nms ? "1" : "0");
        if (x->nms) {
            meta(o, "conf", xstrf(o, "%g", x->conf));
            meta(o, "iou", xstrf(o, "%g", x->iou));
            meta(o, "max_det", xstrf(o, "%lld", x->max_det));
        }
    }
    if (sp->mask_output > 0 && sp->mask_output < m->n_outputs) {
        const vt_node *pn = &m->graph.nodes[m->outputs[sp->mask_output]];
        meta(o, "mask_stride", xstrf(o, "%g", (double)m->imgsz / pn->out.w));
    }
}

/* ---- writing -------------------------------------------------------------------------------- */

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *f;
    int err;
} file_sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (!s->err && len && fwrite(data, 1, len, s->f) != len) s->err = errno ? errno : EIO;
}

/* The IR version that introduced each opset, so older runtimes read what they can. */
static int ir_version_for(int opset)
{
    return opset <= 14 ? 7 : opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

/* The count of outputs the spec names (output 0 and its more_outputs). */
static int spec_outputs(const vt_onnx_spec *sp)
{
    int n = 1;
    while (sp->more_outputs && sp->more_outputs[n - 1]) n++;
    return n;
}

static vt_status build_and_write(ox *o, vt_model *m, const char *path, const xopts *x)
{
    const vt_node *on = &m->graph.nodes[m->output_node];
    const char *bparam[4] = {"batch", NULL, NULL, NULL};
    int64_t b = x->batch ? x->batch : -1;
    int64_t in_d[4] = {b, m->channels, m->imgsz, m->imgsz};
    const vt_onnx_spec *sp = m->spec->onnx;
    int n_model = sp->more_outputs ? spec_outputs(sp) : 1;
    if (sp->more_outputs && n_model != m->n_outputs)
        return vt_fail(VT_ERR_INTERNAL, "ONNX export of %s: the model has %d outputs, its "
                       "export names %d", m->arch, m->n_outputs, n_model);
    /* with nms=1 a per-anchor output's own name is its gathered rows' */
    const char *want[VT_MODEL_MAX_OUTPUTS] = {sp->softmax ? "logits" : sp->out_name};
    const char *got[VT_MODEL_MAX_OUTPUTS] = {NULL};
    for (int j = 1; j < m->n_outputs; j++) {
        const char *nm = j < n_model ? sp->more_outputs[j - 1] : NULL;
        int rows = x->nms && (sp->nms_rows >> (j - 1) & 1u);
        /* outputs the spec leaves out are ordinary tensors */
        want[j] = !nm ? xstrf(o, "t%d", m->outputs[j]) : rows ? xstrf(o, "nms_%s_all", nm) : nm;
    }
    emit_graph(o, m, (int)x->fold, want, got);
    if (o->st) return o->st;
    const char *out = got[0];
    /* an output whose node wrote another tensor's name (it passed its input on) */
    for (int j = 1; j < n_model; j++)
        if (strcmp(got[j], want[j])) node(o, "Identity", want[j], 1, got[j]);
    Vtonnx__ValueInfoProto *outs[VT_MODEL_MAX_OUTPUTS + 2] = {0};
    size_t n_out = 1;
    if (sp->softmax) {
        attr_i(o, node(o, "Softmax", "probs", 1, out), "axis", 1);
        int64_t d[2] = {b, m->num_classes};
        outs[0] = value_info(o, "probs", VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d, bparam);
    } else if (sp->det_head && x->nms) {
        emit_nms(o, m, out, x);
        const char *k[2] = {"detections", NULL};
        int64_t d2[2] = {-1, 4}, d1[1] = {-1};
        outs[0] = value_info(o, "boxes", VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d2, k);
        outs[1] = value_info(o, "scores", VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1, k);
        outs[2] = value_info(o, "classes", VTONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, d1, k);
        n_out = 3;
    } else {
        int64_t d[4] = {b, on->out.c, on->out.h, on->out.w};
        outs[0] = value_info(o, out, VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d, bparam);
    }
    for (int j = 1; j < n_model; j++) {
        const vt_node *nd = &m->graph.nodes[m->outputs[j]];
        const char *nm = sp->more_outputs[j - 1];
        if (x->nms && (sp->nms_rows >> (j - 1) & 1u)) {
            emit_nms_rows(o, m, j, want[j], nm);
            const char *k[2] = {"detections", NULL};
            int64_t d[2] = {-1, nd->out.c};
            outs[n_out++] = value_info(o, nm, VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d, k);
        } else {
            int64_t d[4] = {b, nd->out.c, nd->out.h, nd->out.w};
            outs[n_out++] = value_info(o, nm, VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d,
                                       bparam);
        }
    }
    Vtonnx__ValueInfoProto *in = value_info(o, "images", VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                            4, in_d, bparam);
    write_meta(o, m, x);
    Vtonnx__OperatorSetIdProto opset = VTONNX__OPERATOR_SET_ID_PROTO__INIT;
    Vtonnx__OperatorSetIdProto *opsets[1] = {&opset};
    opset.domain = "";
    opset.has_version = 1;
    opset.version = x->opset;
    Vtonnx__GraphProto graph = VTONNX__GRAPH_PROTO__INIT;
    Vtonnx__ModelProto model = VTONNX__MODEL_PROTO__INIT;
    if (o->st) return o->st;
    graph.name = m->arch;
    graph.node = o->node;
    graph.n_node = o->n_node;
    graph.initializer = o->init;
    graph.n_initializer = o->n_init;
    graph.input = &in;
    graph.n_input = 1;
    graph.output = outs;
    graph.n_output = n_out;
    model.has_ir_version = 1;
    model.ir_version = ir_version_for((int)x->opset);
    model.opset_import = opsets;
    model.n_opset_import = 1;
    model.producer_name = "libvisiontrain";
    model.producer_version = (char *)vt_version_string();
    model.doc_string = (char *)"Exported by libvisiontrain; metadata_props hold the input and "
                               "output contract.";
    model.graph = &graph;
    model.metadata_props = o->meta;
    model.n_metadata_props = o->n_meta;
    size_t bytes = protobuf_c_message_get_packed_size(&model.base);
    if (bytes > (size_t)INT32_MAX) /* protobuf's limit; larger models need external data */
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: the ONNX file would be %zu bytes, over "
                       "protobuf's 2 GiB", path, bytes);
    vt_afile af;
    vt_status st = vt_afile_open(&af, path);
    if (st) return st;
    file_sink sink = {{sink_append}, af.f, 0};
    size_t written = protobuf_c_message_pack_to_buffer(&model.base, &sink.base);
    if (sink.err || written != bytes) {
        vt_afile_abort(&af);
        return vt_fail(VT_ERR_IO, "%s: cannot write: %s", path,
                       sink.err ? strerror(sink.err) : "short write");
    }
    return vt_afile_commit(&af);
}

static vt_status export_onnx(vt_model *m, const char *path, const xopts *x)
{
    vt_status st = vt_model_pull(m);
    if (st) return st;
    ox o = {0};
    st = build_and_write(&o, m, path, x);
    for (size_t i = 0; i < o.n_owned; i++) free(o.owned[i]);
    free(o.owned);
    free(o.node);
    free(o.init);
    free(o.meta);
    return st;
}

#else

static vt_status export_onnx(vt_model *m, const char *path, const xopts *x)
{
    (void)m, (void)x;
    return vt_fail(VT_ERR_UNSUPPORTED, "%s: this build of libvisiontrain has no ONNX export "
                   "(it was built without protobuf-c: install libprotobuf-c-dev and "
                   "protobuf-c-compiler, then rebuild)", path);
}

#endif

VT_API vt_status vt_model_export(vt_model *m, const char *path, vt_export_format format,
                                 const char *options)
{
    if (!m || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_export: NULL argument");
    if (format != VT_EXPORT_ONNX)
        return vt_err_capture(m->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                                              "vt_model_export: unknown format %d (known: 1 = "
                                              "VT_EXPORT_ONNX)", (int)format));
    /* options are checked in every build, so a bad one reads the same with or without ONNX */
    xopts x;
    vt_status st = parse_export_opts(options, &x);
    if (!st && x.half)
        st = vt_fail(VT_ERR_UNSUPPORTED, "half=1 (float16 export) is not supported yet; the "
                     "export is float32");
    if (!st && !m->spec->onnx)
        st = vt_fail(VT_ERR_UNSUPPORTED, "%s: the ONNX export of this architecture is not "
                     "supported yet", m->arch);
    if (!st && x.nms && !m->spec->onnx->det_head)
        st = vt_fail(VT_ERR_UNSUPPORTED, "nms=1 is for detection models (those with a "
                     "detection head); %s is a %s model",
                     m->arch, m->spec->onnx->task);
    if (!st && x.nms && x.batch != 1)
        st = vt_fail(VT_ERR_UNSUPPORTED, "nms=1 needs batch=1 (max_det is per image)");
    if (!st) st = export_onnx(m, path, &x);
    return vt_err_capture(m->err, st);
}
