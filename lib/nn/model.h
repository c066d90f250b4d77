/* The vt_model handle: an architecture (graph), its weights in host memory, and metadata. */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include "nn/graph.h"

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
    int output_node;      /* node whose output is the logits */
    uint64_t version;     /* bumped whenever params/buffers change (predictor re-uploads) */
    /* Set while a trainer holds newer weights on its device: called before the host copy is
     * read (save, predict) to bring them back.  Cleared by the trainer. */
    vt_status (*pull)(void *ctx);
    void *pull_ctx;
    struct vt_backend *pred_be;   /* lazily created CPU predictor */
    struct vt_exec *pred_exec;
    uint64_t pred_version;
    float *pred_probs;
};

/* Build the graph of an architecture name (lib/nn/models.c).  On success g is finalized and
 * *task and *output_node set; VT_ERR_INVALID_ARGUMENT for an unknown name (message lists the
 * known ones). */
vt_status vt_arch_build(vt_graph *g, const char *arch, int num_classes, int channels, int imgsz,
                        float dropout, vt_task *task, int *output_node);
/* 1 for the detector family names ("det-..."). */
int vt_arch_is_detector(const char *arch);
/* 1 for the segmentation family names ("seg-..."). */
int vt_arch_is_segmenter(const char *arch);
/* The layout revision of a family: a checkpoint records it (meta "rev", absent = 1) and one of
 * another revision is refused, since the same parameters would compute something else. */
int vt_arch_revision(const char *arch);
/* The grid levels of a detector's head (output node `out` of g, input imgsz x imgsz): their
 * sizes and strides in anchor order (lib/backend/det_loss_math.h).  Returns the level count. */
int vt_det_head_levels(const vt_graph *g, int out, int imgsz, vt_det_level lv[VT_DET_MAX_LEVELS]);
/* The backbone an architecture shares with others ("resnet18" for resnet18, det-r18, seg-r18;
 * "encoder-n" for det-n and seg-n; else its own name): vt_model_transfer between two
 * architectures moves the backbone when this is the same. */
void vt_arch_backbone(const char *arch, char *out, size_t cap);
/* vt_model_transfer; keep_class_layers: dst's per-class layers (vt_node.per_class) keep their
 * values even where the shapes match (the same count of other classes). */
vt_status vt_model_transfer_ex(vt_model *dst, const vt_model *src, int keep_class_layers,
                               int *transferred, int *total);
/* The model's tensor count, as vt_model_transfer counts them. */
int vt_model_tensors(const vt_model *m);
/* Names of the known architectures, NULL-terminated. */
extern const char *const vt_arch_names[];

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
vt_status vt_model_from_checkpoint(vt_model **out, struct vt_ckpt *c);

/* The lazily created CPU predictor, sized for one image at imgsz, holding the current weights. */
vt_status vt_model_predict_ready(vt_model *m);
/* Copy caller pixels (1, 3 or 4 channels, any stride) into a gray or RGB image (malloc'd);
 * VT_ERR_INVALID_ARGUMENT for a bad geometry. */
struct vt_image;
vt_status vt_model_pixels_image(const uint8_t *pixels, int width, int height, int channels,
                                size_t stride, struct vt_image *img);

/* Replace class names (copied).  names may be NULL to clear. */
vt_status vt_model_set_class_names(vt_model *m, const char *const *names, int n);

#endif
