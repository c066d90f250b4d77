/* The vt_model handle: creation, metadata, save/load, prediction. */
#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "image/image.h"
#include "image/letterbox.h"
#include "nn/exec.h"
#include "core/checkpoint.h"

#define TAG_META VT_TAG('M', 'E', 'T', 'A')
#define TAG_NAME VT_TAG('N', 'A', 'M', 'E')
#define TAG_PARM VT_TAG('P', 'A', 'R', 'M')
#define TAG_BUFS VT_TAG('B', 'U', 'F', 'S')

static void free_names(vt_model *m)
{
    if (m->class_names)
        for (int i = 0; i < m->num_classes; i++) free(m->class_names[i]);
    free(m->class_names);
    m->class_names = NULL;
}

VT_API void vt_model_destroy(vt_model *m)
{
    if (!m) return;
    vt_exec_destroy(m->pred_exec);
    vt_backend_destroy(m->pred_be);
    free(m->pred_probs);
    free_names(m);
    vt_graph_free(&m->graph);
    free(m->params);
    free(m->buffers);
    free(m);
}

vt_status vt_model_new(vt_model **out, const vt_arch_spec *s, int num_classes, int channels,
                       int imgsz, float dropout, uint64_t seed)
{
    *out = NULL;
    if (num_classes < s->min_classes || num_classes > 100000)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "num_classes=%d must be in %d..100000", num_classes,
                       s->min_classes);
    if (strlen(s->name) >= sizeof(((vt_model *)0)->arch))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown model '%.40s...'", s->name);
    vt_model *m = vt_calloc(1, sizeof *m);
    if (!m) return VT_ERR_OUT_OF_MEMORY;
    snprintf(m->arch, sizeof m->arch, "%s", s->name);
    m->spec = s;
    m->task = s->task;
    m->num_classes = num_classes;
    m->channels = channels;
    m->imgsz = imgsz;
    m->dropout = dropout;
    m->seed = seed;
    vt_status st = vt_arch_build(&m->graph, s, num_classes, channels, imgsz, dropout, m->outputs,
                                 &m->n_outputs);
    if (st) {
        free(m);
        return st;
    }
    m->output_node = m->outputs[0];
    m->params = vt_malloc((size_t)m->graph.n_params * sizeof(float));
    m->buffers = vt_malloc((size_t)(m->graph.n_buffers ? m->graph.n_buffers : 1) * sizeof(float));
    if (!m->params || !m->buffers) {
        vt_model_destroy(m);
        return VT_ERR_OUT_OF_MEMORY;
    }
    m->version = 1;
    *out = m;
    return VT_OK;
}

vt_status vt_model_create_spec(vt_model **out, const vt_arch_spec *s, int num_classes,
                               const char *options)
{
    *out = NULL;
    vt_optvals ov;
    vt_optvals_init(&ov, VT_SCOPE_MODEL);
    vt_status st = vt_optvals_set_list(&ov, options);
    if (st) return st;
    vt_model *m;
    /* Detectors default to 640 px (what detection datasets are made for), segmenters to 512,
     * classifiers to the option's default: the spec says. */
    int imgsz = (int)vt_opt_num(&ov, VT_OPT_MODEL_IMGSZ);
    if (!vt_opt_isset(&ov, VT_OPT_MODEL_IMGSZ) && s->default_imgsz) imgsz = s->default_imgsz;
    st = vt_model_new(&m, s, num_classes, (int)vt_opt_num(&ov, VT_OPT_CHANNELS), imgsz,
                      (float)vt_opt_num(&ov, VT_OPT_DROPOUT),
                      (uint64_t)vt_opt_num(&ov, VT_OPT_MODEL_SEED));
    if (st) return st;
    vt_model_init_weights(m);
    *out = m;
    return VT_OK;
}

VT_API vt_task vt_model_task(const vt_model *m) { return m ? m->task : (vt_task)0; }
VT_API const char *vt_model_arch(const vt_model *m) { return m ? m->arch : NULL; }
VT_API int vt_model_num_classes(const vt_model *m) { return m ? m->num_classes : 0; }
VT_API int vt_model_channels(const vt_model *m) { return m ? m->channels : 0; }
VT_API int vt_model_imgsz(const vt_model *m) { return m ? m->imgsz : 0; }
VT_API uint64_t vt_model_num_params(const vt_model *m) { return m ? (uint64_t)m->graph.n_params : 0; }
VT_API const char *vt_model_last_error(const vt_model *m) { return m ? m->err : ""; }

VT_API const char *vt_model_class_name(const vt_model *m, int i)
{
    if (!m || !m->class_names || i < 0 || i >= m->num_classes) return NULL;
    return m->class_names[i];
}

VT_API double vt_model_flops(const vt_model *m, int imgsz)
{
    if (!m || imgsz < 1) return 0;
    vt_layer_cost *c = vt_malloc((size_t)m->graph.n_nodes * sizeof *c);
    if (!c) return 0;
    double total = 0;
    int n = vt_graph_costs(&m->graph, imgsz, imgsz, c, m->graph.n_nodes);
    for (int i = 0; i < n; i++) total += c[i].flops_fwd;
    free(c);
    return n < 0 ? 0 : total;
}

vt_status vt_model_set_class_names(vt_model *m, const char *const *names, int n)
{
    free_names(m);
    if (!names) return VT_OK;
    if (n != m->num_classes)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%d class names for a model of %d classes", n,
                       m->num_classes);
    m->class_names = vt_calloc((size_t)n, sizeof(char *));
    if (!m->class_names) return VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++)
        if (!(m->class_names[i] = vt_strdup(names[i] ? names[i] : ""))) {
            free_names(m);
            return VT_ERR_OUT_OF_MEMORY;
        }
    return VT_OK;
}

static int same_names(const vt_model *m, const char *const *names, int n)
{
    if (!m->class_names || !names) return 1; /* unknown on either side: nothing says they differ */
    for (int i = 0; i < n; i++)
        if (strcmp(m->class_names[i], names[i] ? names[i] : "") != 0) return 0;
    return 1;
}

static void drop_predictor(vt_model *m)
{
    vt_exec_destroy(m->pred_exec);
    vt_backend_destroy(m->pred_be);
    free(m->pred_probs);
    m->pred_exec = NULL;
    m->pred_be = NULL;
    m->pred_probs = NULL;
    m->pred_version = 0; /* none: a model's versions start at 1 */
}

VT_API vt_status vt_model_set_classes(vt_model *m, int num_classes, const char *const *names,
                                      int *transferred, int *total)
{
    if (transferred) *transferred = 0;
    if (total) *total = 0;
    if (!m) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_set_classes: NULL model");
    vt_status st;
    if (num_classes == m->num_classes && same_names(m, names, num_classes)) {
        if (names && (st = vt_model_set_class_names(m, names, num_classes)))
            return vt_err_capture(m->err, st);
        int all = vt_model_tensors(m);
        if (transferred) *transferred = all;
        if (total) *total = all;
        return VT_OK;
    }
    if ((st = vt_model_pull(m))) return vt_err_capture(m->err, st);
    if (m->pull) /* a trainer that holds newer weights could not hand them back */
        return vt_err_capture(m->err, vt_fail(VT_ERR_BAD_STATE, "vt_model_set_classes: a "
                                              "trainer holds this model's weights"));
    vt_model *n;
    if ((st = vt_model_new(&n, m->spec, num_classes, m->channels, m->imgsz, m->dropout, m->seed)))
        return vt_err_capture(m->err, st);
    vt_model_init_weights(n);
    if (!st) st = vt_model_transfer_ex(n, m, 1, transferred, total);
    if (!st && names) st = vt_model_set_class_names(n, names, num_classes);
    if (st) {
        vt_model_destroy(n);
        return vt_err_capture(m->err, st);
    }
    /* n's layers and weights move into m; m's old ones leave with n */
    drop_predictor(m);
    vt_graph tg = m->graph;
    m->graph = n->graph;
    n->graph = tg;
    float *tp = m->params, *tb = m->buffers;
    m->params = n->params;
    m->buffers = n->buffers;
    n->params = tp;
    n->buffers = tb;
    char **tn = m->class_names;
    int tc = m->num_classes;
    m->class_names = n->class_names;
    m->num_classes = num_classes;
    n->class_names = tn;
    n->num_classes = tc;
    m->output_node = n->output_node;
    memcpy(m->outputs, n->outputs, sizeof m->outputs);
    m->n_outputs = n->n_outputs;
    m->version++;
    vt_model_destroy(n);
    return VT_OK;
}

/* ---- serialisation ---- */

vt_status vt_model_write_sections(const vt_model *m, vt_ckpt_writer *w)
{
    char meta[512];
    int len = snprintf(meta, sizeof meta,
                       "arch=%s\nrev=%d\ntask=%d\nnum_classes=%d\nchannels=%d\nimgsz=%d\n"
                       "dropout=%.9g\nseed=%llu\nparams=%lld\nbuffers=%lld\n",
                       m->arch, m->spec->revision, (int)m->task, m->num_classes,
                       m->channels, m->imgsz,
                       (double)m->dropout, (unsigned long long)m->seed,
                       (long long)m->graph.n_params, (long long)m->graph.n_buffers);
    vt_status st = vt_ckw_add(w, TAG_META, meta, (size_t)len, 0);
    if (!st && m->class_names) {
        size_t total = 0;
        for (int i = 0; i < m->num_classes; i++) total += strlen(m->class_names[i]) + 1;
        char *buf = vt_malloc(total);
        if (!buf) return VT_ERR_OUT_OF_MEMORY;
        size_t off = 0;
        for (int i = 0; i < m->num_classes; i++) {
            size_t k = strlen(m->class_names[i]);
            memcpy(buf + off, m->class_names[i], k);
            buf[off + k] = '\n';
            off += k + 1;
        }
        st = vt_ckw_add(w, TAG_NAME, buf, total, 1);
        free(buf);
    }
    if (!st)
        st = vt_ckw_add(w, TAG_PARM, m->params, (size_t)m->graph.n_params * sizeof(float), 1);
    if (!st)
        st = vt_ckw_add(w, TAG_BUFS, m->buffers, (size_t)m->graph.n_buffers * sizeof(float), 1);
    return st;
}

VT_API vt_status vt_model_save(vt_model *m, const char *path)
{
    if (!m || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_save: NULL argument");
    vt_status st = vt_model_pull(m);
    if (st) return vt_err_capture(m->err, st);
    vt_ckpt_writer *w;
    st = vt_ckw_create(&w);
    if (!st) st = vt_model_write_sections(m, w);
    if (!st) st = vt_ckw_write(w, path);
    vt_ckw_destroy(w);
    return vt_err_capture(m->err, st);
}

vt_status vt_model_from_checkpoint(vt_model **out, vt_ckpt *c, vt_arch_lookup find)
{
    *out = NULL;
    void *meta_raw;
    size_t meta_n;
    vt_status st = vt_ckpt_get(c, TAG_META, &meta_raw, &meta_n);
    if (st) return st == VT_ERR_NOT_FOUND ? vt_fail(VT_ERR_CHECKPOINT, "%s", vt_last_error()) : st;
    char *meta = vt_realloc(meta_raw, meta_n + 1);
    if (!meta) {
        free(meta_raw);
        return VT_ERR_OUT_OF_MEMORY;
    }
    meta[meta_n] = 0;
    char arch[64], v[5][64], rev[16] = "1";
    const char *path = vt_ckpt_path(c);
    static const char *const keys[5] = {"num_classes", "channels", "imgsz", "dropout", "seed"};
    int complete = vt_ckpt_kv(meta, meta_n, "arch", arch, sizeof arch) != NULL;
    for (int i = 0; i < 5 && complete; i++)
        complete = vt_ckpt_kv(meta, meta_n, keys[i], v[i], sizeof v[i]) != NULL;
    if (!complete) {
        free(meta);
        return vt_fail(VT_ERR_CHECKPOINT, "%s: checkpoint metadata incomplete", path);
    }
    vt_ckpt_kv(meta, meta_n, "rev", rev, sizeof rev); /* absent: revision 1 */
    const vt_arch_spec *spec = find(arch);
    if (!spec) {
        free(meta);
        return vt_fail(VT_ERR_CHECKPOINT, "%s: a model of an unknown architecture '%s'", path,
                       arch);
    }
    if (atoi(rev) != spec->revision) {
        free(meta);
        return vt_fail(VT_ERR_CHECKPOINT,
                       "%s: a %s of layout revision %s (an earlier release); this library's %s "
                       "is revision %d: train it again",
                       path, arch, rev, arch, spec->revision);
    }
    free(meta);
    /* Strictly, with the ranges vt_model_create() enforces: the CRCs only say the file is
     * what some writer wrote, not that its values make a model we can run. */
    long long nc, ch, sz, seed;
    double dropout;
    if ((st = vt_parse_int("num_classes", v[0], 1, 100000, &nc)) ||
        (st = vt_parse_int("channels", v[1], 1, 3, &ch)) ||
        (ch == 2 && (st = vt_fail(VT_ERR_OPTION_VALUE, "channels=2 is not 1 or 3"))) ||
        (st = vt_parse_int("imgsz", v[2], 8, 4096, &sz)) ||
        (st = vt_parse_double("dropout", v[3], 0, 0.999, &dropout)) ||
        (st = vt_parse_int("seed", v[4], 0, INT64_MAX, &seed)))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: bad checkpoint metadata: %s", path, vt_last_error());
    vt_model *m;
    st = vt_model_new(&m, spec, (int)nc, (int)ch, (int)sz, (float)dropout, (uint64_t)seed);
    if (st) return vt_fail(VT_ERR_CHECKPOINT, "%s: %s", path, vt_last_error());
    void *data;
    size_t n;
    st = vt_ckpt_get(c, TAG_PARM, &data, &n);
    if (!st && n != (size_t)m->graph.n_params * sizeof(float))
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: %zu parameter bytes for a %s that has %lld", path, n,
                     arch, (long long)m->graph.n_params * 4);
    if (!st) memcpy(m->params, data, n);
    free(data);
    if (!st) {
        st = vt_ckpt_get(c, TAG_BUFS, &data, &n);
        if (!st && n != (size_t)m->graph.n_buffers * sizeof(float))
            st = vt_fail(VT_ERR_CHECKPOINT, "%s: buffer section of %zu bytes, expected %lld", path,
                         n, (long long)m->graph.n_buffers * 4);
        if (!st) memcpy(m->buffers, data, n);
        free(data);
    }
    if (!st && vt_ckpt_has(c, TAG_NAME)) {
        st = vt_ckpt_get(c, TAG_NAME, &data, &n);
        if (!st) {
            const char **names = vt_calloc((size_t)m->num_classes, sizeof(char *));
            char *txt = data;
            int k = 0;
            for (size_t i = 0, start = 0; names && i < n; i++)
                if (txt[i] == '\n') {
                    txt[i] = 0;
                    if (k < m->num_classes) names[k] = txt + start;
                    k++;
                    start = i + 1;
                }
            if (!names) st = VT_ERR_OUT_OF_MEMORY;
            else if (k != m->num_classes)
                st = vt_fail(VT_ERR_CHECKPOINT, "%s: %d class names for %d classes", path, k,
                             m->num_classes);
            else
                st = vt_model_set_class_names(m, names, k);
            free(names);
            free(data);
        }
    }
    if (st) {
        vt_model_destroy(m);
        return st == VT_ERR_NOT_FOUND ? vt_fail(VT_ERR_CHECKPOINT, "%s", vt_last_error()) : st;
    }
    *out = m;
    return VT_OK;
}

/* ---- prediction ---- */

/* vt_model_forward's batches: up to PRED_BATCH_MAX images at once, within PRED_BATCH_BYTES of
 * activations (the predictor's forward-only plan: det-n at 640 px 18 MB an image) */
enum { PRED_BATCH_MAX = 16 };
#define PRED_BATCH_BYTES ((size_t)256 << 20)

vt_status vt_model_predict_ready(vt_model *m)
{
    vt_status st = vt_model_pull(m);
    if (st) return st;
    if (!m->pred_be && (st = vt_backend_cpu_create(&m->pred_be, m->pred_threads))) return st;
    if (!m->pred_exec) {
        if ((st = vt_exec_create(&m->pred_exec, &m->graph, m->pred_be))) return st;
        vt_exec_forward_only(m->pred_exec);
    }
    if (!m->pred_probs &&
        !(m->pred_probs = vt_malloc((size_t)m->num_classes * PRED_BATCH_MAX * sizeof(float))))
        return VT_ERR_OUT_OF_MEMORY;
    if (m->pred_version != m->version) {
        if ((st = vt_exec_set_params(m->pred_exec, m->params, m->buffers))) return st;
        m->pred_version = m->version;
    }
    return VT_OK;
}

VT_API vt_status vt_model_set_threads(vt_model *m, int threads)
{
    if (!m) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_set_threads: NULL model");
    if (threads < 0 || threads > 256)
        return vt_err_capture(m->err, vt_fail(VT_ERR_INVALID_ARGUMENT,
                                              "vt_model_set_threads: %d threads (0..256; 0: "
                                              "every online processor)", threads));
    if (threads != m->pred_threads) drop_predictor(m); /* the next prediction builds it anew */
    m->pred_threads = threads;
    return VT_OK;
}

/* The softmax of the classifier predictor's logits after a forward of nb images, into scores
 * (host): image i's num_classes probabilities at scores + i * num_classes. */
static vt_status download_probs(vt_model *m, int nb, float *scores)
{
    vt_exec *e = m->pred_exec;
    vt_node *out = &e->g->nodes[m->output_node];
    int32_t zero[PRED_BATCH_MAX] = {0};
    const vt_backend_ops *o = m->pred_be->ops;
    size_t k = (size_t)m->num_classes;
    vt_status st;
    if ((st = o->upload(m->pred_be, e->labels, zero, (size_t)nb * sizeof *zero))) return st;
    if ((st = o->softmax_xent(m->pred_be, m->num_classes, nb, out->y, e->labels, 0.0f, 0.0f,
                              e->loss, NULL, m->pred_probs)))
        return st;
    /* probs are [classes][batch] */
    for (size_t c = 0; c < k && !st; c++)
        for (int i = 0; i < nb && !st; i++)
            st = o->download(m->pred_be, scores + i * k + c, m->pred_probs + c * nb + i,
                             sizeof(float));
    return st;
}

static vt_status predict_image(vt_model *m, const char *call, const vt_image *img, float *scores,
                               int n)
{
    vt_status st = vt_buffer_fits_int(call, scores, n, (size_t)m->num_classes, "class scores");
    if (st) return st;
    if (!m->spec->probs)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s is not a classification model: use its task's "
                       "prediction (vt_model_%s_file / _pixels)", m->arch,
                       m->spec->onnx ? m->spec->onnx->task : "detect");
    if ((st = vt_model_predict_ready(m)) ||
        (st = vt_exec_prepare(m->pred_exec, 1, m->imgsz, m->imgsz)))
        return st;
    vt_image rs = {0};
    const vt_image *src = img;
    if (img->w != m->imgsz || img->h != m->imgsz) {
        if ((st = vt_image_resize(img, m->imgsz, m->imgsz, &rs))) return st;
        src = &rs;
    }
    vt_exec *e = m->pred_exec;
    vt_image_to_float(src, m->channels, 0, vt_exec_input(e), (size_t)m->imgsz * m->imgsz);
    vt_image_free(&rs);
    if ((st = vt_exec_forward(e, 0))) return st;
    return download_probs(m, 1, scores);
}

vt_status vt_model_pixels_image(const uint8_t *pixels, int width, int height, int channels,
                                size_t stride, vt_image *img)
{
    if (width < 1 || height < 1 || width > 32768 || height > 32768 ||
        (channels != 1 && channels != 3 && channels != 4) ||
        stride < (size_t)width * (size_t)channels)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "bad image geometry %dx%d, %d channels, stride %zu",
                       width, height, channels, stride);
    /* Repack into the decoder's layout (gray or RGB, tight rows). */
    int c = channels == 1 ? 1 : 3;
    vt_image out = {width, height, c, vt_malloc((size_t)width * height * c)};
    if (!out.data) return VT_ERR_OUT_OF_MEMORY;
    for (int y = 0; y < height; y++) {
        const uint8_t *src = pixels + (size_t)y * stride;
        uint8_t *dst = out.data + (size_t)y * width * c;
        for (int x = 0; x < width; x++)
            for (int k = 0; k < c; k++) dst[x * c + k] = src[x * channels + k];
    }
    *img = out;
    return VT_OK;
}

VT_API vt_status vt_model_predict_file(vt_model *m, const char *path, float *scores, int n)
{
    if (!m || !path || !scores)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_predict_file: NULL argument");
    vt_image img;
    vt_status st = vt_image_load(path, &img);
    if (!st) {
        st = predict_image(m, "vt_model_predict_file", &img, scores, n);
        vt_image_free(&img);
    }
    return vt_err_capture(m->err, st);
}

VT_API vt_status vt_model_predict_pixels(vt_model *m, const uint8_t *pixels, int width, int height,
                                         int channels, size_t stride, float *scores, int n)
{
    if (!m || !pixels || !scores)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_predict_pixels: NULL argument");
    vt_image img;
    vt_status st = vt_model_pixels_image(pixels, width, height, channels, stride, &img);
    if (st) return vt_err_capture(m->err, st);
    st = predict_image(m, "vt_model_predict_pixels", &img, scores, n);
    vt_image_free(&img);
    return vt_err_capture(m->err, st);
}

VT_API vt_status vt_model_output_shape(const vt_model *m, int *c, int *h, int *w)
{
    if (!m || !c || !h || !w)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_output_shape: NULL argument");
    vt_shape s = m->graph.nodes[m->output_node].out;
    *c = s.c;
    *h = s.h;
    *w = s.w;
    return VT_OK;
}

vt_status vt_model_forward_letterbox(vt_model *m, const vt_image *img, vt_letterbox *lb)
{
    vt_status st = vt_model_predict_ready(m);
    if (st || (st = vt_letterbox_fit(img->w, img->h, m->imgsz, m->spec->multiple, 1, lb)))
        return st;
    /* the predictor's plan follows the canvas (re-planned where it changes) */
    vt_exec *e = m->pred_exec;
    if ((st = vt_exec_prepare(e, 1, lb->dst_h, lb->dst_w))) return st;
    vt_image lbimg = {0};
    if ((st = vt_letterbox_apply(img, lb, 114, &lbimg))) return st;
    vt_image_to_float(&lbimg, m->channels, 0, vt_exec_input(e), (size_t)lbimg.w * lbimg.h);
    vt_image_free(&lbimg);
    return vt_exec_forward(e, 0);
}

VT_API vt_status vt_model_forward(vt_model *m, const float *input, int n, float *output, size_t cap)
{
    if (!m || !input || !output || n < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_forward: NULL argument or n=%d < 1", n);
    vt_shape os = m->graph.nodes[m->output_node].out;
    size_t in_n = (size_t)m->channels * m->imgsz * m->imgsz, out_n = (size_t)os.c * os.h * os.w;
    vt_status st = vt_buffer_fits("vt_model_forward", output, cap, out_n * (size_t)n,
                                  "output floats");
    if (st) return vt_err_capture(m->err, st);
    if ((st = vt_model_predict_ready(m))) return vt_err_capture(m->err, st);
    /* The images in batches of nb: NCHW in and out, CNHW in the executor (planes moved one by
     * one).  The batch's size follows from one image's activations. */
    vt_exec *e = m->pred_exec;
    size_t per_image = e->arena_bytes / (size_t)(e->cap_n > 0 ? e->cap_n : 1);
    size_t fit = per_image ? PRED_BATCH_BYTES / per_image : PRED_BATCH_MAX;
    int batch = n < PRED_BATCH_MAX ? n : PRED_BATCH_MAX;
    if ((size_t)batch > fit) batch = fit > 1 ? (int)fit : 1;
    const vt_backend_ops *ops = m->pred_be->ops;
    size_t hw_in = (size_t)m->imgsz * m->imgsz, hw_out = (size_t)os.h * os.w;
    for (int i0 = 0; i0 < n && !st; i0 += batch) {
        int nb = n - i0 < batch ? n - i0 : batch;
        if ((st = vt_exec_prepare(e, nb, m->imgsz, m->imgsz))) break;
        float *x = vt_exec_input(e);
        for (int c = 0; c < m->channels && !st; c++)
            for (int i = 0; i < nb && !st; i++)
                st = ops->upload(m->pred_be, x + ((size_t)c * nb + i) * hw_in,
                                 input + (size_t)(i0 + i) * in_n + c * hw_in,
                                 hw_in * sizeof(float));
        if (!st) st = vt_exec_forward(e, 0);
        if (st) break;
        float *o = output + (size_t)i0 * out_n;
        if (m->spec->probs) {
            st = download_probs(m, nb, o);
            continue;
        }
        const float *y = e->g->nodes[m->output_node].y;
        for (int c = 0; c < os.c && !st; c++)
            for (int i = 0; i < nb && !st; i++)
                st = ops->download(m->pred_be, o + (size_t)i * out_n + c * hw_out,
                                   y + ((size_t)c * nb + i) * hw_out, hw_out * sizeof(float));
    }
    return vt_err_capture(m->err, st);
}
