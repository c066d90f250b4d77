/* The vt_model handle: an architecture (graph), its weights in host memory, and metadata. */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include "nn/graph.h"

/* What an ONNX export of an architecture's graph writes (nn/export_onnx.c), as the task that
 * trains it describes it. */
typedef struct vt_onnx_spec {
    const char *task;        /* metadata "task" */
    int letterbox;           /* preprocess: 1 letterbox to imgsz, 0 resize to imgsz */
    int softmax;             /* output 0's logits go through a Softmax into "probs" */
    const char *out_name;    /* the name of output 0 otherwise ("logits", "head") */
    const char *outputs;     /* metadata "outputs" */
    int det_head;            /* output 0 is a detector head: "strides" metadata, nms=1 offered */
    const char *nms_outputs; /* metadata "outputs" with nms=1 */
    /* The graph outputs for the model's outputs 1.. in order (NULL-terminated; NULL: output 0
     * alone).  Their count must be the model's. */
    const char *const *more_outputs;
    /* nms=1: bit i - 1 for an output i with one column per anchor of the head, in its order
     * ([N, c, H, W] as the head, or [N, c, 1, A]): it is given as the kept detections' rows
     * [K, c]; the other outputs as they are. */
    unsigned nms_rows;
    int mask_output;         /* > 0: that output is prototype masks, metadata "mask_stride" */
} vt_onnx_spec;

enum { VT_MODEL_MAX_OUTPUTS = 4 };

/* An architecture, as the table of the task that trains it lists it (lib/task/): everything
 * nn needs to build, initialise, save, run and export it.  nn stores `task` in the model and
 * never interprets it. */
typedef struct vt_arch_spec {
    const char *name;          /* "det-n" */
    vt_task task;
    int revision;              /* layout revision: a checkpoint of another is refused */
    const char *backbone;      /* architectures with the same key share their backbone
                                * (vt_model_transfer); NULL: the name */
    int default_imgsz;         /* vt_model_create's imgsz without the option; 0: the option's */
    int min_classes;
    int multiple;              /* imgsz must be a multiple of it (0: any) */
    /* The graph for these settings (not finalized): its output nodes into out (output 0 the
     * one a task's loss and vt_model_forward read first) and their count, or -1 with the error
     * set. */
    int (*build)(vt_graph *g, const void *cfg, int nc, int channels, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS]);
    const void *cfg;
    /* After the default initialisation of vt_model_init_weights, the family's own (NULL:
     * none), e.g. a detector head's prior. */
    void (*init)(struct vt_model *m);
    int probs;                 /* output 0 is per-image class logits: prediction gives softmax
                                * probabilities */
    const vt_onnx_spec *onnx;
} vt_arch_spec;

struct vt_model {
    char err[VT_ERRMSG_MAX];
    char arch[32];        /* "cls-n", ... */
    vt_task task;
    int num_classes;
    int channels;         /* input channels */
    int imgsz;            /* the size the model was built/trained for */
    float dropout;
    uint64_t seed;        /* initialisation seed */
    char **class_names;   /* num_classes strings or NULL */
    vt_graph graph;
    float *params;        /* host copy of graph.n_params trainable floats */
    float *buffers;       /* host copy of graph.n_buffers floats (BN running stats) */
    const vt_arch_spec *spec;
    int output_node;      /* output 0: the node whose output is the logits / head */
    int outputs[VT_MODEL_MAX_OUTPUTS]; /* every output node, outputs[0] == output_node */
    int n_outputs;
    uint64_t version;     /* bumped whenever params/buffers change (predictor re-uploads) */
    /* Set while a trainer holds newer weights on its device: called before the host copy is
     * read (save, predict) to bring them back.  Cleared by the trainer. */
    vt_status (*pull)(void *ctx);
    void *pull_ctx;
    struct vt_backend *pred_be;   /* lazily created CPU predictor */
    int pred_threads;             /* its threads (vt_model_set_threads; 0: every processor) */
    struct vt_exec *pred_exec;
    uint64_t pred_version;
    float *pred_probs;
};

/* Build the graph of spec s (finalized) for these settings, checking imgsz against the
 * spec; outputs and their count set. */
vt_status vt_arch_build(vt_graph *g, const vt_arch_spec *s, int num_classes, int channels,
                        int imgsz, float dropout, int out[VT_MODEL_MAX_OUTPUTS], int *n_out);
/* A new model of spec s (weights allocated, not initialised: vt_model_init_weights). */
vt_status vt_model_new(vt_model **out, const vt_arch_spec *s, int num_classes, int channels,
                       int imgsz, float dropout, uint64_t seed);
/* vt_model_create's work once the name is resolved (options: the model scope's). */
vt_status vt_model_create_spec(vt_model **out, const vt_arch_spec *s, int num_classes,
                               const char *options);
/* vt_model_import_onnx once the architecture is resolved (NULL: an unknown name). */
vt_status vt_model_import_onnx_spec(vt_model **out, const char *path, const vt_arch_spec *arch,
                                    const char *options);
/* Resolves an architecture name to its spec (the task registry's vt_arch_find, passed down so
 * that nn does not call up); NULL for an unknown name. */
typedef const vt_arch_spec *(*vt_arch_lookup)(const char *name);
/* The backbone key of a spec (its `backbone`, else its name). */
static inline const char *vt_arch_backbone_of(const vt_arch_spec *s)
{
    return s->backbone ? s->backbone : s->name;
}
/* The grid levels of a detector's head (output node `out` of g, as g is shaped now, for an
 * input `imgsz` pixels wide): their sizes and strides (imgsz / the level's width) in anchor
 * order (lib/backend/det_loss_math.h).  Returns the level count. */
int vt_det_head_levels(const vt_graph *g, int out, int imgsz, vt_det_level lv[VT_DET_MAX_LEVELS]);
/* vt_model_transfer; keep_class_layers: dst's per-class layers (vt_node.per_class) keep their
 * values even where the shapes match (the same count of other classes). */
vt_status vt_model_transfer_ex(vt_model *dst, const vt_model *src, int keep_class_layers,
                               int *transferred, int *total);
/* The model's tensor count, as vt_model_transfer counts them. */
int vt_model_tensors(const vt_model *m);

/* The model families' builders and settings (lib/nn/models.c), for the tasks' tables.
 * cls/det/seg-n/s/m: encoder widths c, stage depths d, the detector neck/head width. */
typedef struct vt_net_cfg {
    int c[5], d[4], head;
    int proto; /* iseg: the prototype branch's width */
} vt_net_cfg;
/* iseg: prototype masks per image (and coefficients per anchor). */
enum { VT_ISEG_PROTOS = 32 };
extern const vt_net_cfg vt_cls_n, vt_cls_s, vt_cls_m, vt_net_n, vt_net_s, vt_net_m;
int vt_build_cls(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_cnn_small(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                       int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_resnet18(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                      int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_det(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_det_r18(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                     int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_iseg(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                  int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_seg(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                 int out[VT_MODEL_MAX_OUTPUTS]);
int vt_build_seg_r18(vt_graph *g, const void *cfg, int nc, int ch, int imgsz, float dropout,
                     int out[VT_MODEL_MAX_OUTPUTS]);
/* A detector's output convolutions start near zero with the class logits at a prior of 0.01. */
void vt_init_det_head(vt_model *m);

/* Deterministic initialisation of params/buffers from the model's seed: PyTorch's defaults
 * (conv/linear weights and biases uniform in +-1/sqrt(fan_in), BN gamma 1 beta 0, running
 * mean 0 and var 1), a detector's output convs at std 0.01 with the 0.01 class prior. */
void vt_model_init_weights(vt_model *m);

/* Bring weights held by a trainer back into params/buffers (no-op when none). */
static inline vt_status vt_model_pull(vt_model *m) { return m->pull ? m->pull(m->pull_ctx) : VT_OK; }

/* Internal accessor used by the estimator and the checkpoint code. */
static inline const vt_graph *vt_model_graph(const vt_model *m) { return &m->graph; }

/* Serialise the model's configuration, class names, weights and buffers into checkpoint
 * sections (lib/nn/model.c); read them back into a new model. */
struct vt_ckpt_writer;
struct vt_ckpt;
vt_status vt_model_write_sections(const vt_model *m, struct vt_ckpt_writer *w);
vt_status vt_model_from_checkpoint(vt_model **out, struct vt_ckpt *c, vt_arch_lookup find);

/* The lazily created CPU predictor holding the current weights; its callers size it
 * (vt_exec_prepare: the batch and the input's height and width). */
vt_status vt_model_predict_ready(vt_model *m);
/* The predictors of the letterboxing tasks: vt_model_predict_ready, img letterboxed to fit
 * imgsz x imgsz onto the smallest canvas of multiples of the network's stride (gray 114
 * padding; vt_letterbox_fit, as Ultralytics' predictor does: a 4:3 image at 640 runs 640 x
 * 480) into the predictor's input, sized for it, one forward; *lb gets the geometry (the
 * canvas: lb->dst_w x dst_h, the predictor's e->w x e->h). */
struct vt_image;
struct vt_letterbox;
vt_status vt_model_forward_letterbox(vt_model *m, const struct vt_image *img,
                                     struct vt_letterbox *lb);

/* Copy caller pixels (1, 3 or 4 channels, any stride) into a gray or RGB image (malloc'd);
 * VT_ERR_INVALID_ARGUMENT for a bad geometry. */
struct vt_image;
vt_status vt_model_pixels_image(const uint8_t *pixels, int width, int height, int channels,
                                size_t stride, struct vt_image *img);

/* Replace class names (copied).  names may be NULL to clear. */
vt_status vt_model_set_class_names(vt_model *m, const char *const *names, int n);

#endif
