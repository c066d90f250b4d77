/* vt_model_import_onnx: a model's weights from an ONNX file (torchvision's resnet18 so far).
 *
 * The file is parsed with the protobuf-c code of lib/nn/onnx_ir.proto (the exporter's; the
 * importer's fields are in it too).  The graph is not interpreted: its nodes are walked in order
 * beside the library's layers, and each compute node must be the next layer, with the same
 * attributes, weight shapes and inputs (the layer that produced each input is tracked by
 * tensor name, so a graph wired differently is refused too).  Nodes that only move shapes
 * (Flatten, Reshape, Identity, Constant, Shape, Gather, ...) match nothing.
 *
 * A Conv whose batch norm was folded into it by the exporter (a Conv with a bias and no
 * BatchNormalization after it, where the library has conv + BN) gives the BN gamma 1, beta the
 * bias, running mean 0 and a running variance v with v + eps == 1 in float, so that the
 * library's eval-mode forward computes exactly what the graph does.
 *
 * mean= / std= (normalize=imagenet) fold an input normalisation the graph does not contain
 * into the first convolution (fold_normalization), so that the model takes the library's
 * pixels / 255 where the graph took (pixels / 255 - mean) / std. */
#include "vt_config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nn/model.h"

/* The options: imgsz=N, and the input normalisation folded into the first convolution:
 * mean=R,G,B std=R,G,B or normalize=imagenet|none (the other model options would change the
 * layer list). */
enum { NORM_UNSET, NORM_NONE, NORM_IMAGENET };

typedef struct import_opts {
    int imgsz;
    int normalize;               /* NORM_*: the normalize= key */
    int n_mean, n_std;           /* values of mean= and std= (0: not given) */
    double mean[3], std[3];
    char mean_text[64], std_text[64]; /* as given, for messages */
} import_opts;

static const double imagenet_mean[3] = {0.485, 0.456, 0.406};
static const double imagenet_std[3] = {0.229, 0.224, 0.225};

/* "a,b,c": 1..3 finite numbers (std: > 0) into v; the count into *n. */
static vt_status parse_floats(const char *key, const char *value, int positive, double *v,
                              int *n)
{
    const char *p = value;
    int k = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (k == 3)
            return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s: more than 3 values (%s=R,G,B: one "
                           "number per input channel, 1 or 3)", key, value, key);
        char tok[64];
        char *stop;
        double x = 0;
        int ok = len > 0 && len < sizeof tok;
        if (ok) {
            memcpy(tok, p, len);
            tok[len] = 0;
            errno = 0;
            x = strtod(tok, &stop);
            ok = !*stop && !errno && isfinite(x);
        }
        if (!ok)
            return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s: '%.*s' is not a finite number (%s=R,G,B: "
                           "1 or 3 comma-separated numbers, one per input channel)", key, value,
                           (int)(len < 40 ? len : 40), p, key);
        if (positive && !(x > 0))
            return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s: %g is not > 0 (the input is divided by "
                           "it)", key, value, x);
        v[k++] = x;
        if (!end) break;
        p = end + 1;
    }
    *n = k;
    return VT_OK;
}

static vt_status import_pair(void *ctx, const char *key, const char *value)
{
    import_opts *o = ctx;
    if (!strcmp(key, "imgsz")) {
        const vt_optdef *d = vt_optdef_by_id(VT_OPT_MODEL_IMGSZ);
        long long v;
        vt_status st = vt_parse_int(key, value, d ? (long long)d->min : 8,
                                    d ? (long long)d->max : 4096, &v);
        if (!st) o->imgsz = (int)v;
        return st;
    }
    if (!strcmp(key, "mean") || !strcmp(key, "std")) {
        int is_std = key[0] == 's';
        vt_status st = parse_floats(key, value, is_std, is_std ? o->std : o->mean,
                                    is_std ? &o->n_std : &o->n_mean);
        if (!st) snprintf(is_std ? o->std_text : o->mean_text, sizeof o->mean_text, "%s", value);
        return st;
    }
    if (!strcmp(key, "normalize")) {
        if (!strcmp(value, "imagenet")) o->normalize = NORM_IMAGENET;
        else if (!strcmp(value, "none")) o->normalize = NORM_NONE;
        else
            return vt_fail(VT_ERR_OPTION_VALUE, "normalize=%s: valid values: imagenet "
                           "(torchvision's mean 0.485,0.456,0.406 and std 0.229,0.224,0.225), "
                           "none", value);
        return VT_OK;
    }
    return vt_fail(VT_ERR_UNKNOWN_OPTION, "unknown option '%s' of the ONNX import; valid keys: "
                   "imgsz, mean, std, normalize", key);
}

/* After the list: normalize= and mean=/std= are two ways of saying the same thing. */
static vt_status check_opts(import_opts *o)
{
    if (o->normalize != NORM_UNSET && (o->n_mean || o->n_std))
        return vt_fail(VT_ERR_OPTION_VALUE, "normalize=%s with %s%s%s%s%s: give either normalize= "
                       "or mean=/std=, not both", o->normalize == NORM_IMAGENET ? "imagenet"
                                                                                : "none",
                       o->n_mean ? "mean=" : "", o->n_mean ? o->mean_text : "",
                       o->n_mean && o->n_std ? " " : "", o->n_std ? "std=" : "",
                       o->n_std ? o->std_text : "");
    if (o->normalize == NORM_IMAGENET) {
        memcpy(o->mean, imagenet_mean, sizeof o->mean);
        memcpy(o->std, imagenet_std, sizeof o->std);
        o->n_mean = o->n_std = 3;
    }
    return VT_OK;
}

#if VT_HAVE_ONNX

#include "nn/onnx_ir.pb-c.h"

/* ---- tensor names ------------------------------------------------------------------------- */

/* What a name of the graph stands for: a constant tensor (an initializer, a Constant node's
 * value or an Identity of one), the output of a library layer, or a shape computation. */
enum { V_TENSOR = -1, V_SHAPE = -2 };

typedef struct ent {
    const char *name; /* NULL: a free slot */
    const Vtonnx__TensorProto *t;
    int layer;        /* >= 0: the library layer whose output this is; V_TENSOR, V_SHAPE */
} ent;

typedef struct nmap {
    ent *e;
    size_t mask;
} nmap;

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static ent *nmap_find(const nmap *m, const char *s)
{
    if (!s || !*s) return NULL;
    for (size_t i = name_hash(s) & m->mask;; i = (i + 1) & m->mask) {
        if (!m->e[i].name) return NULL;
        if (!strcmp(m->e[i].name, s)) return &m->e[i];
    }
}

/* The entry of s, added if new (the table is sized for every name of the file, so there is
 * always a free slot); NULL for an empty name. */
static ent *nmap_put(nmap *m, const char *s)
{
    if (!s || !*s) return NULL;
    size_t i = name_hash(s) & m->mask;
    while (m->e[i].name && strcmp(m->e[i].name, s)) i = (i + 1) & m->mask;
    if (!m->e[i].name) {
        m->e[i].name = s;
        m->e[i].t = NULL;
        m->e[i].layer = V_SHAPE;
    }
    return &m->e[i];
}

/* ---- the walk ------------------------------------------------------------------------------ */

typedef struct ictx {
    const char *path;
    const Vtonnx__GraphProto *g;
    vt_model *m;
    nmap names;
    int i;           /* the ONNX node being matched */
    int L;           /* the library layer it is compared with */
} ictx;

static const char *str(const char *s) { return s ? s : ""; }

static const char *kind_name(vt_op op)
{
    static const char *const k[] = {"input", "conv",  "bn",     "act",      "maxpool",
                                    "avgpool", "gap",  "linear", "dropout",  "add",
                                    "concat", "upsample", "flatcat"};
    return (unsigned)op < sizeof k / sizeof k[0] ? k[op] : "?";
}

/* What the ONNX graph has for a layer of this kind. */
static const char *onnx_for(const vt_node *nd)
{
    switch (nd->op) {
    case VT_OP_CONV: return "Conv";
    case VT_OP_BN: return "BatchNormalization (or a Conv with a bias, the norm folded in)";
    case VT_OP_ACT: return nd->act == VT_ACT_RELU ? "Relu" : "an activation";
    case VT_OP_MAXPOOL: return "MaxPool";
    case VT_OP_GAP: return "GlobalAveragePool";
    case VT_OP_LINEAR: return "Gemm";
    case VT_OP_ADD: return "Add";
    default: return kind_name(nd->op);
    }
}

/* VT_ERR_INVALID_ARGUMENT naming the node, the layer and what differs. */
static vt_status mismatch(const ictx *c, const char *fmt, ...) VT_PRINTF(2, 3);
static vt_status mismatch(const ictx *c, const char *fmt, ...)
{
    char what[512], layer[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const vt_graph *lg = &c->m->graph;
    if (c->L < lg->n_nodes)
        snprintf(layer, sizeof layer, "layer %d (%s) of %s", c->L, kind_name(lg->nodes[c->L].op),
                 c->m->arch);
    else
        snprintf(layer, sizeof layer, "the end of %s's %d layers", c->m->arch, lg->n_nodes);
    if (c->i < (int)c->g->n_node) {
        const Vtonnx__NodeProto *n = c->g->node[c->i];
        return vt_fail(VT_ERR_INVALID_ARGUMENT,
                       "%s: the graph does not match %s: ONNX node %d '%.160s' (%.40s), compared "
                       "with %s: %s", c->path, c->m->arch, c->i, str(n->name), str(n->op_type),
                       layer, what);
    }
    return vt_fail(VT_ERR_INVALID_ARGUMENT,
                   "%s: the graph does not match %s: its %zu nodes end before %s: %s", c->path,
                   c->m->arch, c->g->n_node, layer, what);
}

static const Vtonnx__AttributeProto *attr(const Vtonnx__NodeProto *n, const char *name)
{
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k] && n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
            return n->attribute[k];
    return NULL;
}

static int64_t attr_int(const Vtonnx__NodeProto *n, const char *name, int64_t def)
{
    const Vtonnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static double attr_float(const Vtonnx__NodeProto *n, const char *name, double def)
{
    const Vtonnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* 1 when the INTS attribute is absent (the default `def` in every place) or has n values all
 * equal to want. */
static int ints_are(const Vtonnx__NodeProto *n, const char *name, size_t count, int64_t want)
{
    const Vtonnx__AttributeProto *a = attr(n, name);
    if (!a) return 1;
    if (a->n_ints != count) return 0;
    for (size_t k = 0; k < count; k++)
        if (a->ints[k] != want) return 0;
    return 1;
}

/* "[a, b, ...]" of an INTS attribute, for messages. */
static const char *ints_text(const Vtonnx__NodeProto *n, const char *name, char *buf, size_t cap)
{
    const Vtonnx__AttributeProto *a = attr(n, name);
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t k = 0; a && k < a->n_ints && k < 8 && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", k ? ", " : "",
                                 (long long)a->ints[k]);
    if (used < cap) snprintf(buf + used, cap - used, "%s]", a && a->n_ints > 8 ? ", ..." : "");
    return buf;
}

/* The window of a Conv or MaxPool against the layer's k, s, p (the kernel only when the
 * attribute is there: a Conv's comes from its weight). */
static vt_status check_window(const ictx *c, const Vtonnx__NodeProto *n, const vt_node *nd,
                              int need_kernel)
{
    char b[96];
    const Vtonnx__AttributeProto *ks = attr(n, "kernel_shape");
    if ((need_kernel && !ks) || !ints_are(n, "kernel_shape", 2, nd->k))
        return mismatch(c, "kernel_shape %s, the layer's kernel is %dx%d",
                        ints_text(n, "kernel_shape", b, sizeof b), nd->k, nd->k);
    if (!ints_are(n, "strides", 2, nd->s) || (!attr(n, "strides") && nd->s != 1))
        return mismatch(c, "strides %s, the layer's stride is %d",
                        ints_text(n, "strides", b, sizeof b), nd->s);
    if (!ints_are(n, "pads", 4, nd->p) || (!attr(n, "pads") && nd->p != 0))
        return mismatch(c, "pads %s, the layer pads %d on each side",
                        ints_text(n, "pads", b, sizeof b), nd->p);
    if (!ints_are(n, "dilations", 2, 1))
        return mismatch(c, "dilations %s; the layer has none",
                        ints_text(n, "dilations", b, sizeof b));
    const Vtonnx__AttributeProto *ap = attr(n, "auto_pad");
    if (ap && ap->has_s && !(ap->s.len == 6 && !memcmp(ap->s.data, "NOTSET", 6)))
        return mismatch(c, "auto_pad %.*s; only explicit pads are read",
                        (int)(ap->s.len < 20 ? ap->s.len : 20), (const char *)ap->s.data);
    return VT_OK;
}

/* The layer a name stands for, through the library's dropouts (identities at inference). */
static int base_layer(const vt_graph *g, int x)
{
    while (x > 0 && g->nodes[x].op == VT_OP_DROPOUT) x = g->nodes[x].in[0];
    return x;
}

/* Input k of node n must be the output of layer `want`. */
static vt_status check_input(const ictx *c, const Vtonnx__NodeProto *n, size_t k, int want)
{
    const vt_graph *lg = &c->m->graph;
    want = base_layer(lg, want);
    if (k >= n->n_input || !n->input[k] || !*n->input[k])
        return mismatch(c, "input %zu is missing", k);
    const ent *e = nmap_find(&c->names, n->input[k]);
    if (!e || e->layer < 0)
        return mismatch(c, "input '%.120s' is %s, not the output of layer %d (%s)", n->input[k],
                        !e ? "not defined before it" : e->layer == V_TENSOR ? "a constant"
                                                                            : "a shape value",
                        want, kind_name(lg->nodes[want].op));
    if (e->layer != want)
        return mismatch(c, "input '%.120s' is the output of layer %d (%s), not of layer %d (%s)",
                        n->input[k], e->layer, kind_name(lg->nodes[e->layer].op), want,
                        kind_name(lg->nodes[want].op));
    return VT_OK;
}

/* The layer an input stands for (>= 0), or -1. */
static int input_layer(const ictx *c, const Vtonnx__NodeProto *n, size_t k)
{
    if (k >= n->n_input) return -1;
    const ent *e = nmap_find(&c->names, n->input[k]);
    return e && e->layer >= 0 ? e->layer : -1;
}

/* The constant tensor of input k, or NULL (absent or not a constant). */
static const Vtonnx__TensorProto *input_tensor(const ictx *c, const Vtonnx__NodeProto *n,
                                               size_t k)
{
    if (k >= n->n_input) return NULL;
    const ent *e = nmap_find(&c->names, n->input[k]);
    return e && e->layer == V_TENSOR ? e->t : NULL;
}

static const char *dims_text(const Vtonnx__TensorProto *t, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t k = 0; k < t->n_dims && k < 8 && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", k ? ", " : "",
                                 (long long)t->dims[k]);
    if (used < cap) snprintf(buf + used, cap - used, "%s]", t->n_dims > 8 ? ", ..." : "");
    return buf;
}

/* The constant input k of node n, of the shape dims[0..nd-1] (what: its role, for messages),
 * copied into dst as floats; transpose: a 2-D [a][b] stored into dst as [b][a].  Shape errors
 * are mismatches; external, non-float or short data VT_ERR_FORMAT. */
static vt_status read_weight(const ictx *c, const Vtonnx__NodeProto *n, size_t k,
                             const char *what, int nd, const int64_t *dims, float *dst,
                             int transpose)
{
    char b1[96], b2[96];
    const Vtonnx__TensorProto *t = input_tensor(c, n, k);
    if (!t)
        return mismatch(c, "its %s (input %zu%s%.120s) is not a constant tensor", what, k,
                        k < n->n_input ? " '" : "", k < n->n_input ? n->input[k] : "");
    int same = (int)t->n_dims == nd;
    for (int j = 0; same && j < nd; j++) same = t->dims[j] == dims[j];
    /* a [1, c] bias reads as [c] */
    if (!same && nd == 1 && t->n_dims == 2 && t->dims[0] == 1 && t->dims[1] == dims[0]) same = 1;
    if (!same) {
        Vtonnx__TensorProto want = VTONNX__TENSOR_PROTO__INIT;
        want.dims = (int64_t *)dims;
        want.n_dims = (size_t)nd;
        return mismatch(c, "its %s '%.120s' is %s, the layer's is %s", what, str(t->name),
                        dims_text(t, b1, sizeof b1), dims_text(&want, b2, sizeof b2));
    }
    size_t count = 1;
    for (int j = 0; j < nd; j++) count *= (size_t)dims[j];
    if (t->data_location == VTONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL || t->n_external_data)
        return vt_fail(VT_ERR_FORMAT, "%s: tensor '%.120s' (node %d's %s) keeps its data in "
                       "another file (external data), which is not read: save the model with "
                       "its data inside (onnx.save_model(m, path, save_as_external_data=False))",
                       c->path, str(t->name), c->i, what);
    if (!t->has_data_type || t->data_type != VTONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return vt_fail(VT_ERR_FORMAT, "%s: tensor '%.120s' (node %d's %s) is of ONNX data type "
                       "%d, not float32 (1)", c->path, str(t->name), c->i, what,
                       t->has_data_type ? (int)t->data_type : 0);
    const uint8_t *raw = NULL;
    if (t->has_raw_data && t->raw_data.len) {
        if (t->raw_data.len / 4 != count || t->raw_data.len % 4)
            return vt_fail(VT_ERR_FORMAT, "%s: tensor '%.120s' has %zu bytes of raw_data for "
                           "%zu floats", c->path, str(t->name), t->raw_data.len, count);
        raw = t->raw_data.data;
    } else if (t->n_float_data != count) {
        return vt_fail(VT_ERR_FORMAT, "%s: tensor '%.120s' has %zu values for its %s shape",
                       c->path, str(t->name), t->n_float_data, dims_text(t, b1, sizeof b1));
    }
    size_t rows = transpose ? (size_t)dims[0] : 1, cols = transpose ? (size_t)dims[1] : count;
    for (size_t r = 0; r < rows; r++)
        for (size_t q = 0; q < cols; q++) {
            size_t j = r * cols + q;
            float v;
            if (raw) {
                const uint8_t *p = raw + 4 * j; /* little-endian on every host */
                uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24;
                memcpy(&v, &u, sizeof v);
            } else {
                v = t->float_data[j];
            }
            dst[transpose ? q * rows + r : j] = v;
        }
    return VT_OK;
}

/* The values of a small int64 constant (ReduceMean's axes in opset 18); -1 when it is not one. */
static int read_ints(const Vtonnx__TensorProto *t, int64_t *out, int cap)
{
    if (!t || t->data_type != VTONNX__TENSOR_PROTO__DATA_TYPE__INT64) return -1;
    if (t->has_raw_data && t->raw_data.len) {
        if (t->raw_data.len % 8 || t->raw_data.len / 8 > (size_t)cap) return -1;
        int n = (int)(t->raw_data.len / 8);
        for (int j = 0; j < n; j++) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--) u = u << 8 | t->raw_data.data[8 * j + b];
            memcpy(&out[j], &u, sizeof u);
        }
        return n;
    }
    if (t->n_int64_data > (size_t)cap) return -1;
    for (size_t j = 0; j < t->n_int64_data; j++) out[j] = t->int64_data[j];
    return (int)t->n_int64_data;
}

/* The folded form of a conv + BN: the BN is the identity plus `bias` (NULL: 0). */
static void identity_bn(vt_model *m, const vt_node *bn, const float *bias)
{
    int c = bn->out.c;
    float eps = bn->bn_eps, v = 1.0f - eps;
    /* the variance whose v + eps rounds to exactly 1: invstd 1, scale gamma = 1 */
    for (int k = 0; k < 64 && v + eps != 1.0f; k++) v = nextafterf(v, v + eps < 1.0f ? 2.0f : 0.0f);
    for (int j = 0; j < c; j++) {
        m->params[bn->w_off + j] = 1.0f;
        m->params[bn->b_off + j] = bias ? bias[j] : 0.0f;
        m->buffers[bn->buf_off + j] = 0.0f;
        m->buffers[bn->buf_off + c + j] = v;
    }
}

typedef struct walk {
    /* a conv matched whose BN layer (conv + 1) is still to be filled: by the next node when it
     * is a BatchNormalization, else folded */
    int conv;
    ent *conv_out;
    float *conv_bias;   /* the Conv's bias (scratch), or NULL */
    /* a MatMul matched to a linear layer whose bias may be the next node's Add */
    int mm;
    ent *mm_out;
} walk;

static vt_status match_conv(ictx *c, walk *w, const Vtonnx__NodeProto *n, float *scratch)
{
    vt_model *m = c->m;
    const vt_graph *lg = &m->graph;
    const vt_node *nd = &lg->nodes[c->L];
    int cin = lg->nodes[nd->in[0]].out.c;
    vt_status st = check_input(c, n, 0, nd->in[0]);
    if (st) return st;
    int64_t group = attr_int(n, "group", 1);
    if (group != nd->groups)
        return mismatch(c, "group %lld, the layer's is %d", (long long)group, nd->groups);
    if ((st = check_window(c, n, nd, 0))) return st;
    int64_t wd[4] = {nd->cout, cin / nd->groups, nd->k, nd->k}, bd[1] = {nd->cout};
    if ((st = read_weight(c, n, 1, "weight", 4, wd, m->params + nd->w_off, 0))) return st;
    int has_bias = n->n_input > 2 && n->input[2] && *n->input[2];
    int bn_next = c->L + 1 < lg->n_nodes && lg->nodes[c->L + 1].op == VT_OP_BN &&
                  lg->nodes[c->L + 1].in[0] == c->L;
    if (nd->has_bias) {
        if (has_bias) st = read_weight(c, n, 2, "bias", 1, bd, m->params + nd->b_off, 0);
        else memset(m->params + nd->b_off, 0, (size_t)nd->cout * sizeof(float));
        if (st) return st;
    } else if (has_bias) {
        if (!bn_next) return mismatch(c, "it has a bias; the layer has none and no batch norm");
        if ((st = read_weight(c, n, 2, "bias", 1, bd, scratch, 0))) return st;
    }
    w->conv_out = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
    if (!w->conv_out) return mismatch(c, "it has no output");
    w->conv_out->layer = c->L;
    w->conv_out->t = NULL;
    if (bn_next) {
        w->conv = c->L;
        w->conv_bias = has_bias && !nd->has_bias ? scratch : NULL;
    }
    c->L++;
    return VT_OK;
}

static vt_status match_bn(ictx *c, walk *w, const Vtonnx__NodeProto *n)
{
    vt_model *m = c->m;
    const vt_node *nd = &m->graph.nodes[c->L];
    vt_status st = check_input(c, n, 0, nd->in[0]);
    if (st) return st;
    double eps = attr_float(n, "epsilon", 1e-5);
    if (!(fabs(eps - nd->bn_eps) <= 1e-7))
        return mismatch(c, "epsilon %g, the layer's is %g", eps, (double)nd->bn_eps);
    if (attr_int(n, "spatial", 1) != 1) return mismatch(c, "spatial=0 (per-activation norm)");
    int64_t d[1] = {nd->out.c};
    float *mean = m->buffers + nd->buf_off, *var = mean + nd->out.c;
    if ((st = read_weight(c, n, 1, "scale", 1, d, m->params + nd->w_off, 0)) ||
        (st = read_weight(c, n, 2, "bias (B)", 1, d, m->params + nd->b_off, 0)) ||
        (st = read_weight(c, n, 3, "running mean", 1, d, mean, 0)) ||
        (st = read_weight(c, n, 4, "running variance", 1, d, var, 0)))
        return st;
    for (int j = 0; j < nd->out.c; j++) {
        if (!(var[j] >= 0) || !isfinite(var[j]) || !isfinite(mean[j]))
            return mismatch(c, "running variance %g / mean %g at channel %d", (double)var[j],
                            (double)mean[j], j);
        /* BN(conv + b) = BN with the mean moved by b */
        if (w->conv == c->L - 1 && w->conv_bias) mean[j] -= w->conv_bias[j];
    }
    ent *e = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
    if (!e) return mismatch(c, "it has no output");
    e->layer = c->L;
    e->t = NULL;
    w->conv = -1;
    c->L++;
    return VT_OK;
}

static vt_status match_linear(ictx *c, walk *w, const Vtonnx__NodeProto *n, int matmul)
{
    vt_model *m = c->m;
    const vt_graph *lg = &m->graph;
    const vt_node *nd = &lg->nodes[c->L];
    int cin = lg->nodes[nd->in[0]].out.c;
    vt_status st = check_input(c, n, 0, nd->in[0]);
    if (st) return st;
    float *wt = m->params + nd->w_off, *bias = m->params + nd->b_off;
    if (matmul) {
        int64_t d[2] = {cin, nd->cout};
        if ((st = read_weight(c, n, 1, "weight", 2, d, wt, 1))) return st;
        memset(bias, 0, (size_t)nd->cout * sizeof *bias);
    } else {
        if (attr_int(n, "transA", 0)) return mismatch(c, "transA=1");
        if (attr_float(n, "alpha", 1.0) != 1.0)
            return mismatch(c, "alpha %g; only 1 is read", attr_float(n, "alpha", 1.0));
        int tb = attr_int(n, "transB", 0) != 0;
        int64_t d[2] = {tb ? nd->cout : cin, tb ? cin : nd->cout}, bd[1] = {nd->cout};
        if ((st = read_weight(c, n, 1, "weight", 2, d, wt, !tb))) return st;
        if (n->n_input > 2 && n->input[2] && *n->input[2]) {
            if (attr_float(n, "beta", 1.0) != 1.0)
                return mismatch(c, "beta %g; only 1 is read", attr_float(n, "beta", 1.0));
            if ((st = read_weight(c, n, 2, "bias", 1, bd, bias, 0))) return st;
        } else {
            memset(bias, 0, (size_t)nd->cout * sizeof *bias);
        }
    }
    ent *e = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
    if (!e) return mismatch(c, "it has no output");
    e->layer = c->L;
    e->t = NULL;
    if (matmul) {
        w->mm = c->L;
        w->mm_out = e;
    }
    c->L++;
    return VT_OK;
}

/* Ops that only move shapes or are identities at inference: the output stands for what the
 * data input stands for. */
static int is_pass(const char *op)
{
    static const char *const p[] = {"Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze",
                                    "Dropout", NULL};
    for (int k = 0; p[k]; k++)
        if (!strcmp(op, p[k])) return 1;
    return 0;
}

/* Shape arithmetic: fine on shapes and constants, not on a layer's output (except Shape). */
static int is_shape_op(const char *op)
{
    static const char *const p[] = {"Constant", "Shape", "Gather", "Concat", "Cast", "Slice",
                                    "ConstantOfShape", "Range", NULL};
    for (int k = 0; p[k]; k++)
        if (!strcmp(op, p[k])) return 1;
    return 0;
}

static vt_status match_node(ictx *c, walk *w, const Vtonnx__NodeProto *n, float *scratch)
{
    vt_model *m = c->m;
    const vt_graph *lg = &m->graph;
    const char *op = str(n->op_type);
    vt_status st;
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
        return mismatch(c, "an operator of domain '%.60s'", n->domain);
    if (is_pass(op)) {
        int x = input_layer(c, n, 0);
        ent *e = x >= 0 ? nmap_put(&c->names, n->n_output ? n->output[0] : NULL) : NULL;
        if (e) e->layer = x, e->t = NULL;
        return VT_OK;
    }
    if (is_shape_op(op)) {
        for (size_t k = 0; strcmp(op, "Shape") && k < n->n_input; k++)
            if (input_layer(c, n, k) >= 0)
                return mismatch(c, "%s of a layer's output ('%.120s'): not a layer of %s", op,
                                n->input[k], m->arch);
        return VT_OK; /* its outputs stand for no layer (a Constant's: its tensor) */
    }
    /* the pending MatMul's bias */
    if (w->mm >= 0) {
        int mm = w->mm;
        w->mm = -1;
        if (!strcmp(op, "Add") && n->n_input == 2) {
            int a = input_layer(c, n, 0) == mm ? 1 : input_layer(c, n, 1) == mm ? 0 : -1;
            const vt_node *nd = &lg->nodes[mm];
            if (a >= 0 && input_tensor(c, n, (size_t)a)) {
                int64_t bd[1] = {nd->cout};
                if ((st = read_weight(c, n, (size_t)a, "bias", 1, bd, m->params + nd->b_off, 0)))
                    return st;
                ent *e = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
                if (e) e->layer = mm, e->t = NULL;
                return VT_OK;
            }
        }
    }
    /* the pending conv's batch norm: this node, or folded into the conv */
    if (w->conv >= 0 && strcmp(op, "BatchNormalization")) {
        identity_bn(m, &lg->nodes[w->conv + 1], w->conv_bias);
        w->conv_out->layer = w->conv + 1;
        w->conv = -1;
        c->L++;
    }
    while (c->L < lg->n_nodes && lg->nodes[c->L].op == VT_OP_DROPOUT) c->L++;
    if (!strcmp(op, "Softmax") && c->L == lg->n_nodes && input_layer(c, n, 0) == m->output_node) {
        /* the library's classifier output is the softmax already */
        ent *e = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
        if (e) e->layer = m->output_node, e->t = NULL;
        return VT_OK;
    }
    if (c->L >= lg->n_nodes) return mismatch(c, "a %s after the model's last layer", op);
    const vt_node *nd = &lg->nodes[c->L];
    int ok = 0;
    switch (nd->op) {
    case VT_OP_CONV: ok = !strcmp(op, "Conv"); break;
    case VT_OP_BN: ok = !strcmp(op, "BatchNormalization"); break;
    case VT_OP_ACT: ok = nd->act == VT_ACT_RELU && !strcmp(op, "Relu"); break;
    case VT_OP_MAXPOOL: ok = !strcmp(op, "MaxPool"); break;
    case VT_OP_GAP: ok = !strcmp(op, "GlobalAveragePool") || !strcmp(op, "ReduceMean"); break;
    case VT_OP_LINEAR: ok = !strcmp(op, "Gemm") || !strcmp(op, "MatMul"); break;
    case VT_OP_ADD: ok = !strcmp(op, "Add"); break;
    default: break;
    }
    if (!ok) return mismatch(c, "a %s where the model has %s", op, onnx_for(nd));
    switch (nd->op) {
    case VT_OP_CONV: return match_conv(c, w, n, scratch);
    case VT_OP_BN: return match_bn(c, w, n);
    case VT_OP_LINEAR: return match_linear(c, w, n, !strcmp(op, "MatMul"));
    case VT_OP_ADD: {
        int a = input_layer(c, n, 0), b = input_layer(c, n, 1);
        int x = base_layer(lg, nd->in[0]), y = base_layer(lg, nd->in[1]);
        if (n->n_input != 2 || !((a == x && b == y) || (a == y && b == x)))
            return mismatch(c, "it adds layers %d and %d, the layer adds %d (%s) and %d (%s)", a,
                            b, x, kind_name(lg->nodes[x].op), y, kind_name(lg->nodes[y].op));
        break;
    }
    case VT_OP_MAXPOOL:
        if ((st = check_input(c, n, 0, nd->in[0])) || (st = check_window(c, n, nd, 1))) return st;
        if (attr_int(n, "ceil_mode", 0)) return mismatch(c, "ceil_mode=1; the layer floors");
        if (n->n_output > 1 && n->output[1] && *n->output[1])
            return mismatch(c, "it has an Indices output; the layer gives none");
        break;
    case VT_OP_GAP:
        if ((st = check_input(c, n, 0, nd->in[0]))) return st;
        if (!strcmp(op, "ReduceMean")) {
            int64_t ax[8];
            const Vtonnx__AttributeProto *a = attr(n, "axes");
            int na = -1;
            if (a && a->n_ints <= 8) {
                na = (int)a->n_ints;
                memcpy(ax, a->ints, a->n_ints * sizeof *ax);
            } else if (!a) {
                na = read_ints(input_tensor(c, n, 1), ax, 8);
            }
            int h = 0, wd = 0;
            for (int k = 0; k < na; k++) {
                if (ax[k] == 2 || ax[k] == -2) h++;
                else if (ax[k] == 3 || ax[k] == -1) wd++;
                else h = 9;
            }
            if (na != 2 || h != 1 || wd != 1)
                return mismatch(c, "ReduceMean over other axes than 2 and 3 (height, width)");
        }
        break;
    case VT_OP_ACT:
        if ((st = check_input(c, n, 0, nd->in[0]))) return st;
        break;
    default: break;
    }
    ent *e = nmap_put(&c->names, n->n_output ? n->output[0] : NULL);
    if (!e) return mismatch(c, "it has no output");
    e->layer = c->L;
    e->t = NULL;
    c->L++;
    return VT_OK;
}

/* Before the walk: every name defined by an initializer, a Constant node or an Identity of
 * either, the graph's inputs (layer 0), and the first Conv's input channels and the last
 * Gemm's (MatMul's) output count, which the model is created with. */
static vt_status prepare(ictx *c, int *channels, int *classes)
{
    const Vtonnx__GraphProto *g = c->g;
    for (size_t k = 0; k < g->n_initializer; k++) {
        ent *e = g->initializer[k] ? nmap_put(&c->names, g->initializer[k]->name) : NULL;
        if (e) e->layer = V_TENSOR, e->t = g->initializer[k];
    }
    for (size_t k = 0; k < g->n_input; k++) {
        const char *nm = g->input[k] ? g->input[k]->name : NULL;
        if (nm && *nm && !nmap_find(&c->names, nm)) nmap_put(&c->names, nm)->layer = 0;
    }
    int conv = -1, lin = -1;
    for (size_t i = 0; i < g->n_node; i++) {
        const Vtonnx__NodeProto *n = g->node[i];
        if (!n) continue;
        const char *op = str(n->op_type);
        const char *out = n->n_output ? n->output[0] : NULL;
        if (!strcmp(op, "Constant")) {
            const Vtonnx__AttributeProto *a = attr(n, "value");
            ent *e = nmap_put(&c->names, out);
            if (e) e->layer = a && a->t ? V_TENSOR : V_SHAPE, e->t = a ? a->t : NULL;
        } else if (!strcmp(op, "Identity")) {
            const ent *s = n->n_input ? nmap_find(&c->names, n->input[0]) : NULL;
            if (s && s->layer == V_TENSOR) {
                const Vtonnx__TensorProto *t = s->t;
                ent *e = nmap_put(&c->names, out);
                if (e) e->layer = V_TENSOR, e->t = t;
            }
        } else if (!strcmp(op, "Conv") && conv < 0) {
            conv = (int)i;
        } else if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul")) {
            lin = (int)i;
        }
    }
    if (conv < 0 || lin < 0) {
        c->i = (int)g->n_node;
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: the graph (%zu nodes) has no %s: not a %s",
                       c->path, g->n_node, conv < 0 ? "Conv" : "Gemm or MatMul", "classifier");
    }
    const Vtonnx__NodeProto *n = g->node[conv];
    const Vtonnx__TensorProto *t = input_tensor(c, n, 1);
    if (!t || t->n_dims != 4 || attr_int(n, "group", 1) != 1 ||
        (t->dims[1] != 1 && t->dims[1] != 3))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: ONNX node %d '%.160s' (Conv), the first "
                       "convolution, has no constant 4-D weight of 1 or 3 input channels (the "
                       "models take gray or RGB images)", c->path, conv, str(n->name));
    *channels = (int)t->dims[1];
    n = g->node[lin];
    t = input_tensor(c, n, 1);
    int tb = !strcmp(str(n->op_type), "Gemm") && attr_int(n, "transB", 0);
    if (!t || t->n_dims != 2 || t->dims[tb ? 0 : 1] < 1 || t->dims[tb ? 0 : 1] > 100000)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: ONNX node %d '%.160s' (%s), the classifier, "
                       "has no constant 2-D weight of 1..100000 outputs", c->path, lin,
                       str(n->name), str(n->op_type));
    *classes = (int)t->dims[tb ? 0 : 1];
    return VT_OK;
}

/* The first convolution of the model (its input is the image), or -1. */
static int first_conv(const vt_graph *g)
{
    for (int i = 1; i < g->n_nodes; i++)
        if (g->nodes[i].op == VT_OP_CONV) return g->nodes[i].in[0] == 0 ? i : -1;
    return -1;
}

/* mean= and std= against the graph's input channels (before the model is created). */
static vt_status check_channels(const char *path, const import_opts *o, int channels)
{
    if (o->normalize == NORM_IMAGENET && channels != 3)
        return vt_fail(VT_ERR_OPTION_VALUE, "normalize=imagenet: torchvision's ImageNet mean and "
                       "std are per RGB channel, and the first convolution of %s takes %d input "
                       "channel%s: give mean=M std=S instead", path, channels,
                       channels == 1 ? "" : "s");
    for (int k = 0; k < 2; k++) {
        int n = k ? o->n_std : o->n_mean;
        if (n && n != channels)
            return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s: %d value%s, and the first convolution of "
                           "%s takes %d input channel%s: give one value per channel", k ? "std"
                           : "mean", k ? o->std_text : o->mean_text, n, n == 1 ? "" : "s", path,
                           channels, channels == 1 ? "" : "s");
    }
    return VT_OK;
}

/* The input normalisation (x - mean) / std folded into the first convolution, so that the
 * model computes on x what the graph does on (x - mean) / std: the weight W[o][i] becomes
 * W / std_i, and c_o = sum_i,k (W / std_i)[o][i][k] mean_i is subtracted from the conv's
 * output: added to the running mean of the batch norm after it (for the identity batch norm
 * of a folded graph, gamma 1 and invstd 1, the same as beta - c_o in eval mode; in training
 * mode the batch's statistics take out any constant shift, so the running mean is the place
 * that is exact in both modes), or taken from the conv's own bias.  Exact except where the
 * conv's zero padding reaches: the graph pads (x - mean) / std with 0, the model x. */
static vt_status fold_normalization(vt_model *m, const char *path, const import_opts *o)
{
    const vt_graph *g = &m->graph;
    int fc = first_conv(g);
    if (fc < 0)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: mean/std: the model has no convolution on its "
                       "input to fold the normalisation into", path);
    const vt_node *nd = &g->nodes[fc];
    int cin = g->nodes[0].out.c, kk = nd->k * nd->k;
    const vt_node *bn = fc + 1 < g->n_nodes && g->nodes[fc + 1].op == VT_OP_BN &&
                        g->nodes[fc + 1].in[0] == fc ? &g->nodes[fc + 1] : NULL;
    if (nd->groups != 1 || (!nd->has_bias && !bn))
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: mean/std: the first convolution (layer %d) is "
                       "grouped or has neither a bias nor a batch norm to take the mean", path,
                       fc);
    float *w = m->params + nd->w_off;
    for (int co = 0; co < nd->cout; co++) {
        double shift = 0;
        for (int i = 0; i < cin; i++) {
            double mu = o->n_mean ? o->mean[o->n_mean == 1 ? 0 : i] : 0.0;
            double sd = o->n_std ? o->std[o->n_std == 1 ? 0 : i] : 1.0;
            float *p = w + ((size_t)co * (size_t)cin + (size_t)i) * (size_t)kk;
            for (int t = 0; t < kk; t++) {
                float v = (float)(p[t] / sd);
                if (!isfinite(v))
                    return vt_fail(VT_ERR_OPTION_VALUE, "std=%s: the first convolution's "
                                   "weights divided by it overflow float32", o->std_text);
                p[t] = v;
                shift += (double)v * mu;
            }
        }
        if (nd->has_bias) m->params[nd->b_off + co] -= (float)shift;
        else m->buffers[bn->buf_off + co] += (float)shift;
    }
    return VT_OK;
}

static vt_status import_graph(vt_model **out, const char *path, const vt_arch_spec *arch,
                              const import_opts *o, const Vtonnx__GraphProto *g)
{
    ictx c = {.path = path, .g = g};
    size_t names = g->n_initializer + g->n_input;
    for (size_t i = 0; i < g->n_node; i++) {
        if (!g->node[i])
            return vt_fail(VT_ERR_FORMAT, "%s: node %zu is empty", path, i);
        names += g->node[i]->n_output;
    }
    size_t cap = 64;
    while (cap < 2 * names + 2) {
        if (cap > SIZE_MAX / 4 / sizeof(ent))
            return vt_fail(VT_ERR_OUT_OF_MEMORY, "%s: %zu names", path, names);
        cap *= 2;
    }
    c.names.e = vt_calloc(cap, sizeof(ent));
    if (!c.names.e) return VT_ERR_OUT_OF_MEMORY;
    c.names.mask = cap - 1;
    int channels = 3, classes = 0;
    vt_model *m = NULL;
    float *scratch = NULL;
    vt_status st = prepare(&c, &channels, &classes);
    if (!st) st = check_channels(path, o, channels);
    if (!st) {
        char opts[64];
        snprintf(opts, sizeof opts, "imgsz=%d channels=%d", o->imgsz, channels);
        st = vt_model_create_spec(&m, arch, classes, opts);
        if (st) vt_fail_context("%s", path);
    }
    int maxc = 0;
    for (int i = 0; !st && i < m->graph.n_nodes; i++)
        if (m->graph.nodes[i].out.c > maxc) maxc = m->graph.nodes[i].out.c;
    if (!st && !(scratch = vt_malloc((size_t)(maxc ? maxc : 1) * sizeof *scratch)))
        st = VT_ERR_OUT_OF_MEMORY;
    c.m = m;
    walk w = {.conv = -1, .mm = -1};
    c.L = 1;
    for (size_t i = 0; !st && i < g->n_node; i++) {
        c.i = (int)i;
        st = match_node(&c, &w, g->node[i], scratch);
    }
    if (!st) {
        c.i = (int)g->n_node;
        if (w.conv >= 0) {
            identity_bn(m, &m->graph.nodes[w.conv + 1], w.conv_bias);
            w.conv_out->layer = w.conv + 1;
            c.L++;
        }
        while (c.L < m->graph.n_nodes && m->graph.nodes[c.L].op == VT_OP_DROPOUT) c.L++;
        if (c.L < m->graph.n_nodes)
            st = mismatch(&c, "no node for this layer (%s)", onnx_for(&m->graph.nodes[c.L]));
    }
    if (!st && g->n_output && g->output[0] && g->output[0]->name) {
        const ent *e = nmap_find(&c.names, g->output[0]->name);
        if (!e || e->layer != m->output_node)
            st = vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: the graph's output '%.120s' is not the "
                         "classifier's (the last Gemm's) output", path, g->output[0]->name);
    }
    if (!st && (o->n_mean || o->n_std)) st = fold_normalization(m, path, o);
    free(scratch);
    free(c.names.e);
    if (st) {
        vt_model_destroy(m);
        return st;
    }
    m->version++;
    *out = m;
    return VT_OK;
}

static vt_status import_onnx(vt_model **out, const char *path, const vt_arch_spec *arch,
                             const import_opts *o)
{
    void *buf;
    size_t n;
    /* protobuf's limit: larger models keep their weights as external data (refused below) */
    vt_status st = vt_read_regular_file(path, INT32_MAX, &buf, &n);
    if (st) return st;
    Vtonnx__ModelProto *mp = vtonnx__model_proto__unpack(NULL, n, buf);
    free(buf);
    if (!mp)
        return vt_fail(VT_ERR_FORMAT, "%s: not an ONNX model (%zu bytes that do not parse as an "
                       "ONNX ModelProto: truncated or another format)", path, n);
    if (!mp->graph || !mp->graph->n_node)
        st = vt_fail(VT_ERR_FORMAT, "%s: not an ONNX model (no graph, or a graph without nodes)",
                     path);
    else st = import_graph(out, path, arch, o, mp->graph);
    vtonnx__model_proto__free_unpacked(mp, NULL);
    return st;
}

#else

static vt_status import_onnx(vt_model **out, const char *path, const vt_arch_spec *arch,
                             const import_opts *o)
{
    (void)out, (void)arch, (void)o;
    return vt_fail(VT_ERR_UNSUPPORTED, "%s: this build of libvisiontrain has no ONNX import "
                   "(it was built without protobuf-c: install libprotobuf-c-dev and "
                   "protobuf-c-compiler, then rebuild)", path);
}

#endif

vt_status vt_model_import_onnx_spec(vt_model **out, const char *path, const vt_arch_spec *arch,
                                    const char *options)
{
    /* options and the architecture are checked in every build */
    import_opts o = {.imgsz = 224};
    vt_status st = vt_parse_kv_list(options, import_pair, &o);
    if (!st) st = check_opts(&o);
    if (st) return st;
    if (!arch || strcmp(arch->name, "resnet18"))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "no ONNX importer for architecture '%.40s'; the "
                       "architectures imported: resnet18", arch ? arch->name : "?");
    return import_onnx(out, path, arch, &o);
}
