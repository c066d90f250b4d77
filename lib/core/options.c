/* The option table and the typed / key=value setters built on it.  One table serves every
 * handle and every call that takes an options string: each option belongs to the scopes (a
 * vt_option_scope bit set) of the handles or calls that take it, and the same key may exist in
 * several scopes (imgsz, seed).  A new option is one line here plus its vt_option value. */
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const optimizer_choices[] = {"sgd", "adamw", NULL};
static const char *const precision_choices[] = {"tf32", "fp32", "bf16", NULL};
static const char *const cache_choices[] = {"none", "ram", NULL};
static const char *const dist_choices[] = {"auto", "off", NULL};
static const char *const est_precision_choices[] = {"fp32", "tf32", "bf16", "fp16", "amp", NULL};
static const char *const policy_choices[] = {"drop", "skip", "fail", NULL};
static const char *const synth_sizes_choices[] = {"linear", "log", NULL};

#define SEED_MAX 9007199254740991.0 /* 2^53 - 1: every seed is exact in a double */
#define EST_NAME_MAX 63             /* the estimator's names (model, gpu) */

#define T VT_SCOPE_TRAINER
#define M VT_SCOPE_MODEL
#define I VT_OPTION_INT
#define F VT_OPTION_FLOAT
#define S VT_OPTION_STRING
#define E VT_SCOPE_ESTIMATOR
#define DS (VT_SCOPE_DATASET_OPEN | VT_SCOPE_DATASET_VALIDATE)
#define SYC VT_SCOPE_SYNTH_CLASSIFY
#define SYD VT_SCOPE_SYNTH_DETECT
#define CAL VT_SCOPE_CALIBRATE
#define X VT_SCOPE_EXPORT
#define AUTO VT_OPTF_ZERO_AUTO

static const vt_optdef table[] = {
    {VT_OPT_EPOCHS, "epochs", I, 1, 100000, 10, NULL, NULL, T, "number of training epochs", 0},
    {VT_OPT_BATCH, "batch", I, -1, 65536, 32, NULL, NULL, T,
     "images per training step (-1 = the largest that fits autobatch_fraction of the memory)", 0},
    {VT_OPT_IMGSZ, "imgsz", I, 8, 4096, 0, NULL, NULL, T,
     "training image size in pixels (0 = the model's)", AUTO},
    {VT_OPT_OPTIMIZER, "optimizer", S, 0, 0, 0, "sgd", optimizer_choices, T,
     "optimizer: sgd or adamw", 0},
    {VT_OPT_LR0, "lr0", F, 1e-8, 10, 0, NULL, NULL, T,
     "initial learning rate (0 = 0.01 for sgd, 0.001 for adamw)", AUTO},
    {VT_OPT_LRF, "lrf", F, 0, 1, 0.01, NULL, NULL, T, "final learning rate as a fraction of lr0", 0},
    {VT_OPT_MOMENTUM, "momentum", F, 0, 0.9999, 0.9, NULL, NULL, T,
     "SGD momentum / AdamW beta1", 0},
    {VT_OPT_WEIGHT_DECAY, "weight_decay", F, 0, 1, 5e-4, NULL, NULL, T,
     "weight decay (not applied to biases and batch-norm)", 0},
    {VT_OPT_NESTEROV, "nesterov", I, 0, 1, 1, NULL, NULL, T, "Nesterov momentum for SGD (0/1)", 0},
    {VT_OPT_WARMUP_EPOCHS, "warmup_epochs", F, 0, 1000, 1, NULL, NULL, T,
     "epochs of linear learning-rate warm-up (detect, instance: 3)", 0},
    {VT_OPT_COS_LR, "cos_lr", I, 0, 1, 1, NULL, NULL, T,
     "cosine (1) or linear (0) learning-rate decay (detect, instance: 0)", 0},
    {VT_OPT_LABEL_SMOOTHING, "label_smoothing", F, 0, 0.99, 0, NULL, NULL, T,
     "label smoothing of the classification loss", 0},
    {VT_OPT_SEED, "seed", I, 0, SEED_MAX, 0, NULL, NULL, T,
     "seed for shuffling, augmentation and dropout", 0},
    {VT_OPT_DEVICE, "device", S, 0, 0, 0, "cpu", NULL, T, "cpu, a GPU index, or a GPU per rank (0,1,2,3)", 0},
    {VT_OPT_WORKERS, "workers", I, 0, 64, 2, NULL, NULL, T,
     "image decoding threads (0 = in the training thread)", 0},
    {VT_OPT_FLIPLR, "fliplr", F, 0, 1, 0.5, NULL, NULL, T, "probability of a horizontal flip", 0},
    {VT_OPT_VAL, "val", I, 0, 1, 1, NULL, NULL, T, "validate after every epoch (0/1)", 0},
    {VT_OPT_PRECISION, "precision", S, 0, 0, 0, "tf32", precision_choices, T,
     "matrix math: tf32 (GPU tensor cores; fp32 on the CPU), fp32, or bf16 (CPU with "
     "AVX512-BF16: bf16 operands, fp32 accumulation)", 0},
    {VT_OPT_PROJECT, "project", S, 0, 0, 0, "runs", NULL, T,
     "folder holding the run folders (<project>/<task>/<name>)", 0},
    {VT_OPT_NAME, "name", S, 0, 0, 0, "train", NULL, T,
     "run folder name (name2, name3... when it exists, unless exist_ok=1)", 0},
    {VT_OPT_EXIST_OK, "exist_ok", I, 0, 1, 0, NULL, NULL, T, "reuse an existing run folder (0/1)", 0},
    {VT_OPT_SAVE, "save", I, 0, 1, 1, NULL, NULL, T,
     "write the run folder: checkpoints, args, results, plots (0/1)", 0},
    {VT_OPT_SAVE_PERIOD, "save_period", I, -1, 100000, -1, NULL, NULL, T,
     "also keep a checkpoint every N epochs (-1 = off)", 0},
    {VT_OPT_RESUME, "resume", S, 0, 0, 0, "", NULL, T,
     "checkpoint to continue training from (weights/last.vtm)", 0},
    {VT_OPT_PATIENCE, "patience", I, 1, 1000000, 100, NULL, NULL, T,
     "stop after this many epochs without a better fitness", 0},
    {VT_OPT_TIME, "time", F, 0, 1e6, 0, NULL, NULL, T,
     "time budget in hours (0 = none); stops and saves before exceeding it", 0},
    {VT_OPT_EMA, "ema", I, 0, 1, 0, NULL, NULL, T,
     "exponential moving average of the weights (0/1)", 0},
    {VT_OPT_EMA_DECAY, "ema_decay", F, 0, 0.999999, 0.9999, NULL, NULL, T,
     "EMA decay (ramped up over the first ~2000 steps)", 0},
    {VT_OPT_PRICE, "price", F, 0, 1e6, 0, NULL, NULL, T,
     "USD per device-hour, for the cost shown in progress", 0},
    {VT_OPT_PLOTS, "plots", I, 0, 1, 1, NULL, NULL, T,
     "draw the run's figures: results.png, confusion_matrix.png, curves, mosaics (0/1)", 0},
    /* augmentation (Ultralytics names and defaults; lib/data/augment.h has the details) */
    {VT_OPT_HSV_H, "hsv_h", F, 0, 1, 0.015, NULL, NULL, T,
     "hue shift, fraction of the colour circle", 0},
    {VT_OPT_HSV_S, "hsv_s", F, 0, 1, 0.7, NULL, NULL, T, "saturation gain range", 0},
    {VT_OPT_HSV_V, "hsv_v", F, 0, 1, 0.4, NULL, NULL, T, "value (brightness) gain range", 0},
    {VT_OPT_DEGREES, "degrees", F, 0, 180, 0, NULL, NULL, T, "rotation range in degrees (detect)", 0},
    {VT_OPT_TRANSLATE, "translate", F, 0, 1, 0.1, NULL, NULL, T,
     "translation range, fraction of the image (detect)", 0},
    {VT_OPT_SCALE, "scale", F, 0, 0.99, 0.5, NULL, NULL, T, "scale gain range (detect)", 0},
    {VT_OPT_SHEAR, "shear", F, 0, 89, 0, NULL, NULL, T, "shear range in degrees (detect)", 0},
    {VT_OPT_PERSPECTIVE, "perspective", F, 0, 0.001, 0, NULL, NULL, T,
     "perspective range (detect)", 0},
    {VT_OPT_FLIPUD, "flipud", F, 0, 1, 0, NULL, NULL, T, "probability of a vertical flip", 0},
    {VT_OPT_MOSAIC, "mosaic", F, 0, 1, 1, NULL, NULL, T,
     "probability of a 4-image mosaic (detect)", 0},
    {VT_OPT_MIXUP, "mixup", F, 0, 1, 0, NULL, NULL, T,
     "probability of mixing in a second image (detect)", 0},
    {VT_OPT_CLOSE_MOSAIC, "close_mosaic", I, 0, 100000, 10, NULL, NULL, T,
     "last epochs trained without mosaic (detect)", 0},
    {VT_OPT_ERASING, "erasing", F, 0, 1, 0, NULL, NULL, T,
     "probability of random erasing (classify)", 0},
    {VT_OPT_CROP_SCALE, "crop_scale", F, 0.01, 1, 1, NULL, NULL, T,
     "random resized crop: smallest area fraction, 1 = off (classify)", 0},
    /* data loading */
    {VT_OPT_PREFETCH, "prefetch", I, 0, 8, 2, NULL, NULL, T,
     "training batches loaded ahead while one trains (0 = none)", 0},
    {VT_OPT_CACHE, "cache", S, 0, 0, 0, "none", cache_choices, T,
     "keep decoded training images in RAM: none or ram", 0},
    {VT_OPT_CACHE_BYTES, "cache_bytes", I, 0, 9007199254740991.0, 4294967296.0, NULL, NULL, T,
     "byte cap of cache=ram (images beyond it are read again each epoch)", 0},
    {VT_OPT_FRACTION, "fraction", F, 0, 1, 1, NULL, NULL, T,
     "fraction of the training images to train on (a seeded subset, at least 2)", 0},
    /* logging */
    {VT_OPT_TENSORBOARD, "tensorboard", I, 0, 1, 1, NULL, NULL, T,
     "write a TensorBoard events file in the run folder (0/1)", 0},
    {VT_OPT_DICE, "dice", F, 0, 10, 1, NULL, NULL, T,
     "weight of the soft Dice term of the segmentation loss (0 = cross-entropy only)", 0},
    {VT_OPT_AUTOBATCH_FRACTION, "autobatch_fraction", F, 0.1, 0.95, 0.6, NULL, NULL, T,
     "share of the device's memory (available host memory on the CPU) that batch=-1 fills", 0},
    /* transfer learning */
    {VT_OPT_PRETRAINED, "pretrained", S, 0, 0, 0, "", NULL, T,
     "a saved model (.vtm) whose matching tensors start the run", 0},
    {VT_OPT_FREEZE, "freeze", S, 0, 0, 0, "", NULL, T,
     "layers not trained: N (the first N of 'vt info model=' list) or backbone", 0},
    /* distributed training */
    {VT_OPT_DIST, "dist", S, 0, 0, 0, "auto", dist_choices, T,
     "data-parallel over the ranks of a launch (mpirun -np N, or GPU ranks): auto or off", 0},
    {VT_OPT_SYNC_BN, "sync_bn", I, 0, 1, 0, NULL, NULL, T,
     "batch norm over every rank's images of a step (0/1; distributed CPU training)", 0},
    {VT_OPT_BUCKET_MB, "bucket_mb", F, 0, 1024, 25, NULL, NULL, T,
     "distributed: gradients summed in buckets of this many MB during the backward (0: after)",
     0},
    {VT_OPT_CHANNELS, "channels", I, 1, 3, 3, NULL, NULL, M, "input channels (1 or 3)", 0},
    {VT_OPT_MODEL_IMGSZ, "imgsz", I, 8, 4096, 224, NULL, NULL, M, "the model's image size", 0},
    {VT_OPT_DROPOUT, "dropout", F, 0, 0.99, 0, NULL, NULL, M,
     "dropout probability before the classifier", 0},
    {VT_OPT_MODEL_SEED, "seed", I, 0, SEED_MAX, 0, NULL, NULL, M,
     "weight initialisation seed", 0},
    /* the estimator (vt_estimator_set) */
    {VT_OPT_EST_MODEL, "model", S, 1, EST_NAME_MAX, 0, "cls-n", NULL, E,
     "architecture to estimate when no model is given (cls-n, det-s, seg-m...)", 0},
    {VT_OPT_EST_CLASSES, "classes", I, 2, 100000, 10, NULL, NULL, E, "number of classes", 0},
    {VT_OPT_EST_TRAIN_IMAGES, "train", I, 1, 1e12, 1000, NULL, NULL, E, "training images", 0},
    {VT_OPT_EST_VAL_IMAGES, "val", I, 0, 1e12, 0, NULL, NULL, E, "validation images", 0},
    {VT_OPT_EST_EPOCHS, "epochs", I, 1, 1e6, 100, NULL, NULL, E, "training epochs", 0},
    {VT_OPT_EST_BATCH, "batch", I, 1, 1e6, 16, NULL, NULL, E, "total batch over all GPUs", 0},
    {VT_OPT_EST_IMGSZ, "imgsz", I, 8, 4096, 640, NULL, NULL, E, "image size in pixels", 0},
    {VT_OPT_EST_PRECISION, "precision", S, 0, 0, 0, "tf32", est_precision_choices, E,
     "precision asked for: fp32, tf32, bf16, fp16 or amp (= bf16)", 0},
    {VT_OPT_EST_MOSAIC, "mosaic", F, 0, 1, 0, NULL, NULL, E,
     "probability of a 4-image mosaic (loading cost)", 0},
    {VT_OPT_EST_VAL_EACH, "val_each", I, 0, 1, 1, NULL, NULL, E,
     "validate after every epoch (0/1)", 0},
    {VT_OPT_EST_WORKERS, "workers", I, 0, 256, 8, NULL, NULL, E, "image loading threads", 0},
    {VT_OPT_EST_GPU, "gpu", S, 1, EST_NAME_MAX, 0, "local", NULL, E,
     "catalog GPU name or abbreviation, local (the calibrated device) or cpu", 0},
    {VT_OPT_EST_NUM_GPUS, "gpus", I, 1, 64, 1, NULL, NULL, E, "data-parallel GPUs", 0},
    {VT_OPT_EST_CHANNELS, "channels", I, 1, 3, 3, NULL, NULL, E, "input channels (1 or 3)", 0},
    {VT_OPT_EST_LOAD_MS, "load_ms", F, 0, 1e6, 0, NULL, NULL, E,
     "one worker's milliseconds to load one image (0 = the built-in model)", 0},
    {VT_OPT_EST_STARTUP_S, "startup", F, -1, 1e9, -1, NULL, NULL, E,
     "start-up seconds (< 0 = 30 on a GPU, 1 on the CPU)", 0},
    {VT_OPT_EST_DEADLINE_H, "deadline_h", F, 0, 1e9, 0, NULL, NULL, E,
     "deadline in hours for ranking by cost within it (0 = none)", 0},
    {VT_OPT_EST_BUDGET_USD, "budget_usd", F, 0, 1e12, 0, NULL, NULL, E,
     "budget in USD for ranking by time within it (0 = none)", 0},
    {VT_OPT_EST_LOCAL_PRICE, "local_price", F, 0, 1e6, 0, NULL, NULL, E,
     "USD per hour of the local device", 0},
    {VT_OPT_EST_OPTIMIZER, "optimizer", S, 0, 0, 0, "sgd", optimizer_choices, E,
     "optimizer whose state is counted: sgd or adamw", 0},
    {VT_OPT_EST_MEMORY_FRACTION, "memory_fraction", F, 0.1, 1, 0.9, NULL, NULL, E,
     "fraction of device memory usable", 0},
    {VT_OPT_EST_LINK_GBS, "link_gbs", F, 0, 1e6, 0, NULL, NULL, E,
     "GB/s of a device's link in the gradient all-reduce of gpus > 1 (0 = by interconnect: "
     "the catalog GPU's NVLink or PCIe, shared memory on the CPU)", 0},
    /* vt_dataset_open_ex / vt_dataset_validate */
    {VT_OPT_DS_POLICY, "policy", S, 0, 0, 0, "drop", policy_choices, DS,
     "an image with a problem: drop it, skip its bad labels, or fail", 0},
    {VT_OPT_DS_DECODE, "decode", I, 0, 1, 0, NULL, NULL, VT_SCOPE_DATASET_OPEN,
     "decode every image while opening (0/1)", 0},
    {VT_OPT_DS_MIN_SIZE, "min_size", I, 1, 65535, 10, NULL, NULL, DS,
     "smallest image side in pixels", 0},
    {VT_OPT_DS_WORKERS, "workers", I, 0, 64, 4, NULL, NULL, DS, "image decoding threads", 0},
    /* vt_dataset_split / vt_dataset_subset */
    {VT_OPT_SPLIT_VAL, "val", F, 0, 1, 0.2, NULL, NULL, VT_SCOPE_DATASET_SPLIT,
     "share of the training images moved to val", 0},
    {VT_OPT_SUBSET_FRACTION, "fraction", F, 0, 1, 0, NULL, NULL, VT_SCOPE_DATASET_SUBSET,
     "share of each split's images to keep (0 = use count)", 0},
    {VT_OPT_SUBSET_COUNT, "count", I, 1, 2147483647.0, 0, NULL, NULL, VT_SCOPE_DATASET_SUBSET,
     "images to keep per split (0 = use fraction)", AUTO},
    {VT_OPT_SPLIT_SEED, "seed", I, 0, SEED_MAX, 0, NULL, NULL,
     VT_SCOPE_DATASET_SPLIT | VT_SCOPE_DATASET_SUBSET, "seed of the random choice", 0},
    /* vt_synth_generate, classification */
    {VT_OPT_SYNTH_CLASSES, "classes", I, 2, 8, 4, NULL, NULL, SYC, "shape classes", 0},
    {VT_OPT_SYNTH_TRAIN, "train", I, 1, 1e6, 100, NULL, NULL, SYC, "training images per class", 0},
    {VT_OPT_SYNTH_VAL, "val", I, 0, 1e6, 40, NULL, NULL, SYC, "validation images per class", 0},
    {VT_OPT_SYNTH_IMGSZ, "imgsz", I, 16, 512, 32, NULL, NULL, SYC, "image size in pixels", 0},
    {VT_OPT_SYNTH_SEED, "seed", I, 0, SEED_MAX, 0, NULL, NULL, SYC, "seed of the images", 0},
    /* vt_synth_generate, detection and segmentation */
    {VT_OPT_SYNTH_DET_CLASSES, "classes", I, 3, 8, 3, NULL, NULL, SYD, "shape classes", 0},
    {VT_OPT_SYNTH_DET_TRAIN, "train", I, 1, 1e6, 200, NULL, NULL, SYD, "training images", 0},
    {VT_OPT_SYNTH_DET_VAL, "val", I, 0, 1e6, 50, NULL, NULL, SYD, "validation images", 0},
    {VT_OPT_SYNTH_DET_IMGSZ, "imgsz", I, 32, 1024, 160, NULL, NULL, SYD, "image size in pixels", 0},
    {VT_OPT_SYNTH_DET_SEED, "seed", I, 0, SEED_MAX, 0, NULL, NULL, SYD, "seed of the images", 0},
    {VT_OPT_SYNTH_DET_MAX_OBJECTS, "max_objects", I, 0, 64, 6, NULL, NULL, SYD,
     "most shapes in one image", 0},
    {VT_OPT_SYNTH_DET_MIN_SIZE, "min_size", I, 0, 1024, 0, NULL, NULL, SYD,
     "smallest shape's longer side in pixels (0 = 5% of imgsz)", AUTO},
    {VT_OPT_SYNTH_DET_MAX_SIZE, "max_size", I, 0, 1024, 0, NULL, NULL, SYD,
     "largest shape's longer side in pixels (0 = 50% of imgsz)", AUTO},
    {VT_OPT_SYNTH_DET_SIZES, "sizes", S, 0, 0, 0, "linear", synth_sizes_choices, SYD,
     "shape sizes uniform (linear) or log-uniform (log) between min_size and max_size", 0},
    /* vt_estimator_calibrate */
    {VT_OPT_CAL_BATCHES, "batches", S, 0, 0, 0, "", NULL, CAL,
     "1 to 3 batch sizes >= 2, B1,B2[,B3] (empty = batch/4, batch/2, batch)", 0},
    {VT_OPT_CAL_SECONDS, "seconds", F, 0.1, 3600, 10, NULL, NULL, CAL, "measurement budget", 0},
    {VT_OPT_CAL_GPU, "gpu", S, 0, 0, 0, "", NULL, CAL,
     "catalog name of the local GPU (empty = the estimator's gpu if it names one)", 0},
    {VT_OPT_CAL_PROBE_MAX, "probe_max", I, 0, 1, 1, NULL, NULL, CAL,
     "verify the largest batch predicted to fit with one step (GPU, 0/1)", 0},
    /* vt_model_export */
    {VT_OPT_EXPORT_OPSET, "opset", I, 13, 21, 17, NULL, NULL, X, "ONNX opset", 0},
    {VT_OPT_EXPORT_BATCH, "batch", I, 1, 65536, 1, NULL, NULL, X,
     "batch dimension of the exported graph (or dynamic)", 0},
    {VT_OPT_EXPORT_NMS, "nms", I, 0, 1, 0, NULL, NULL, X,
     "detectors, instance segmenters: decoded, NMS'd detections as outputs (batch=1, 0/1)", 0},
    {VT_OPT_EXPORT_CONF, "conf", F, 0, 1, 0.25, NULL, NULL, X,
     "with nms=1: lowest detection confidence", 0},
    {VT_OPT_EXPORT_IOU, "iou", F, 0, 1, 0.7, NULL, NULL, X, "with nms=1: NMS IoU threshold", 0},
    {VT_OPT_EXPORT_MAX_DET, "max_det", I, 1, 100000, 300, NULL, NULL, X,
     "with nms=1: most detections per image", 0},
    {VT_OPT_EXPORT_HALF, "half", I, 0, 1, 0, NULL, NULL, X,
     "float16 export (not supported yet: 0 only)", 0},
    {VT_OPT_EXPORT_FOLD, "fold", I, 0, 1, 1, NULL, NULL, X,
     "fold batch norms into the convolutions (0: BatchNormalization nodes)", 0},
};
#undef T
#undef M
#undef I
#undef F
#undef S
#undef E
#undef DS
#undef SYC
#undef SYD
#undef CAL
#undef X
#undef AUTO

#define N_OPTS ((int)(sizeof table / sizeof table[0]))
_Static_assert(sizeof table / sizeof table[0] <= VT_OPT_SLOTS, "vt_optvals holds VT_OPT_SLOTS options");

const vt_optdef *vt_optdef_by_id(int id)
{
    for (int i = 0; i < N_OPTS; i++)
        if (table[i].id == id) return &table[i];
    return NULL;
}

const vt_optdef *vt_optdef_in_scope(const char *key, size_t len, int scope)
{
    for (int i = 0; i < N_OPTS; i++)
        if ((table[i].scope & scope) && strlen(table[i].key) == len &&
            memcmp(table[i].key, key, len) == 0)
            return &table[i];
    return NULL;
}

int vt_opt_index(const vt_optdef *d) { return (int)(d - table); }

/* Index of a string option among the table's string options (vt_optvals.str). */
static int str_slot(const vt_optdef *d)
{
    int k = 0;
    for (const vt_optdef *o = table; o < d; o++) k += o->type == VT_OPTION_STRING;
    return k;
}

VT_API vt_status vt_option_info(vt_option option, const char **key, vt_option_type *type,
                                double *min_value, double *max_value, const char **help)
{
    const vt_optdef *d = vt_optdef_by_id(option);
    if (!d) return vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown option id %d", (int)option);
    if (key) *key = d->key;
    if (type) *type = (vt_option_type)d->type;
    if (min_value) *min_value = d->type == VT_OPTION_STRING ? 0 : d->min;
    if (max_value) *max_value = d->type == VT_OPTION_STRING ? 0 : d->max;
    if (help) *help = d->help;
    return VT_OK;
}

VT_API int vt_option_scopes(vt_option option)
{
    const vt_optdef *d = vt_optdef_by_id(option);
    return d ? d->scope : 0;
}

VT_API vt_status vt_option_default(vt_option option, double *number, const char **string)
{
    const vt_optdef *d = vt_optdef_by_id(option);
    if (!d) return vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown option id %d", (int)option);
    if (number) *number = d->type == VT_OPTION_STRING ? 0 : d->def_num;
    if (string) *string = d->type == VT_OPTION_STRING && d->def_str ? d->def_str : "";
    return VT_OK;
}

VT_API int vt_option_next(int previous)
{
    int best = 0;
    for (int i = 0; i < N_OPTS; i++)
        if (table[i].id > previous && (best == 0 || table[i].id < best)) best = table[i].id;
    return best;
}

void vt_optvals_init(vt_optvals *v, int scope)
{
    memset(v, 0, sizeof *v);
    v->scope = scope;
    for (int i = 0, k = 0; i < N_OPTS; i++) {
        v->num[i] = table[i].def_num;
        if (table[i].type != VT_OPTION_STRING) continue;
        /* the table has more string options than vt_optvals holds: a build-time mistake that
         * test_core's option walk catches (vt_opt_str returns "" for them) */
        if (k < VT_OPT_STR_SLOTS && table[i].def_str)
            snprintf(v->str[k], VT_OPT_STR_MAX, "%s", table[i].def_str);
        k++;
    }
}

/* What a scope's unknown-key message calls its options ("unknown export option 'x'"). */
static const char *scope_noun(int scope)
{
    switch (scope) {
    case VT_SCOPE_ESTIMATOR: return "estimator ";
    case VT_SCOPE_DATASET_OPEN:
    case VT_SCOPE_DATASET_VALIDATE: return "dataset ";
    case VT_SCOPE_DATASET_SPLIT: return "split ";
    case VT_SCOPE_DATASET_SUBSET: return "subset ";
    case VT_SCOPE_SYNTH_CLASSIFY:
    case VT_SCOPE_SYNTH_DETECT: return "synthetic dataset ";
    case VT_SCOPE_CALIBRATE: return "calibration ";
    case VT_SCOPE_EXPORT: return "export ";
    default: return ""; /* the trainer's and the model's: plain "option" */
    }
}

/* The list of keys valid in a scope, for error messages. */
static void list_keys(int scope, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < N_OPTS && used < cap; i++)
        if (table[i].scope & scope)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                                     table[i].key);
}

static const vt_optdef *scoped(const vt_optvals *v, int id, vt_status *st)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    if (!d || !(d->scope & v->scope)) {
        char keys[1024];
        list_keys(v->scope, keys, sizeof keys);
        *st = vt_fail(VT_ERR_UNKNOWN_OPTION, "option id %d does not apply here; valid options: %s",
                      id, keys);
        return NULL;
    }
    *st = VT_OK;
    return d;
}

static vt_status check_range(const vt_optdef *d, double value)
{
    if (isnan(value) || value < d->min || value > d->max)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%.15g is out of range [%.15g, %.15g]", d->key,
                       value, d->min, d->max);
    if (d->type == VT_OPTION_INT && value != floor(value))
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%g must be an integer", d->key, value);
    return VT_OK;
}

vt_status vt_optvals_set_num(vt_optvals *v, int id, double value)
{
    vt_status st;
    const vt_optdef *d = scoped(v, id, &st);
    if (!d) return st;
    if (d->type == VT_OPTION_STRING)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s takes a string, not a number", d->key);
    /* 0 = "the library chooses" where the table says so (lr0: the optimizer's default) */
    if (!((d->flags & VT_OPTF_ZERO_AUTO) && value == 0)) {
        st = check_range(d, value);
        if (st) return st;
    }
    if (d->id == VT_OPT_BATCH && value == 0)
        return vt_fail(VT_ERR_OPTION_VALUE, "batch=0 is not valid; use -1 (automatic) or N >= 1");
    if (d->id == VT_OPT_SAVE_PERIOD && value == 0)
        return vt_fail(VT_ERR_OPTION_VALUE, "save_period=0 is not valid; use -1 (off) or N >= 1");
    /* the range 1..3 admits 2, which no image has */
    if ((d->id == VT_OPT_CHANNELS || d->id == VT_OPT_EST_CHANNELS) && value != 1 && value != 3)
        return vt_fail(VT_ERR_OPTION_VALUE, "channels=%g is not valid; use 1 (gray) or 3 (RGB)",
                       value);
    int i = vt_opt_index(d);
    v->num[i] = value;
    v->set[i] = 1;
    return VT_OK;
}

static vt_status check_string(const vt_optdef *d, const char *value)
{
    size_t len = strlen(value), most = d->max > 0 ? (size_t)d->max : VT_OPT_STR_MAX - 1;
    if (len > most)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s: value too long (at most %zu characters)", d->key,
                       most);
    if (len < (size_t)d->min)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s: value too short (at least %.0f characters)",
                       d->key, d->min);
    if (d->choices) {
        for (const char *const *c = d->choices; *c; c++)
            if (strcmp(*c, value) == 0) return VT_OK;
        char list[256];
        size_t used = 0;
        list[0] = 0;
        for (const char *const *c = d->choices; *c; c++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *c);
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s is not valid; choose one of: %s", d->key, value,
                       list);
    }
    if (d->id == VT_OPT_FREEZE && *value && strcmp(value, "backbone") != 0) {
        char *end;
        errno = 0;
        long n = strtol(value, &end, 10);
        if (*end || errno || n < 0 || n > 1000000 || !isdigit((unsigned char)*value))
            return vt_fail(VT_ERR_OPTION_VALUE, "freeze=%s is not valid; use a layer count "
                           "N >= 0 or backbone", value);
        return VT_OK;
    }
    if (d->id == VT_OPT_DEVICE) {
        if (strcmp(value, "cpu") == 0) return VT_OK;
        /* a GPU index, or a list of distinct ones: one GPU per rank on a host */
        unsigned long long seen = 0;
        const char *p = value;
        for (;;) {
            char *end;
            errno = 0;
            long idx = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
            if (idx < 0 || idx >= 64 || errno || (*end && *end != ','))
                return vt_fail(VT_ERR_OPTION_VALUE, "device=%s is not valid; use cpu, a GPU "
                               "index 0..63, or a list of GPU indices (0,1,2,3: one rank each)",
                               value);
            if (seen >> idx & 1)
                return vt_fail(VT_ERR_OPTION_VALUE, "device=%s names GPU %ld twice; each rank "
                               "needs a GPU of its own", value, idx);
            seen |= 1ull << idx;
            if (!*end) return VT_OK;
            p = end + 1;
        }
    }
    return VT_OK;
}

vt_status vt_optvals_set_str(vt_optvals *v, int id, const char *value)
{
    vt_status st;
    const vt_optdef *d = scoped(v, id, &st);
    if (!d) return st;
    if (!value) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: NULL value", d->key);
    if (d->type != VT_OPTION_STRING) {
        double x;
        st = vt_parse_double(d->key, value, -DBL_MAX, DBL_MAX, &x);
        return st ? st : vt_optvals_set_num(v, id, x);
    }
    st = check_string(d, value);
    if (st) return st;
    int i = vt_opt_index(d), k = str_slot(d);
    if (k >= VT_OPT_STR_SLOTS)
        return vt_fail(VT_ERR_INTERNAL, "%s: no room for string options (VT_OPT_STR_SLOTS)", d->key);
    snprintf(v->str[k], VT_OPT_STR_MAX, "%s", value);
    v->set[i] = 1;
    return VT_OK;
}

vt_status vt_optvals_set_kv(vt_optvals *v, const char *kv)
{
    if (!kv) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL option string");
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return vt_fail(VT_ERR_OPTION_VALUE, "'%s' is not of the form key=value", kv);
    const vt_optdef *d = vt_optdef_in_scope(kv, (size_t)(eq - kv), v->scope);
    if (!d) {
        char keys[1024];
        list_keys(v->scope, keys, sizeof keys);
        return vt_fail(VT_ERR_UNKNOWN_OPTION, "unknown %soption '%.*s'; valid options: %s",
                       scope_noun(v->scope), (int)(eq - kv), kv, keys);
    }
    return vt_optvals_set_str(v, d->id, eq + 1);
}

struct list_ctx {
    vt_optvals *v;
};

static vt_status set_pair(void *ctx, const char *key, const char *value)
{
    char buf[VT_OPT_STR_MAX * 3];
    snprintf(buf, sizeof buf, "%s=%s", key, value);
    return vt_optvals_set_kv(((struct list_ctx *)ctx)->v, buf);
}

vt_status vt_optvals_set_list(vt_optvals *v, const char *list)
{
    struct list_ctx c = {v};
    return vt_parse_kv_list(list, set_pair, &c);
}

vt_status vt_optvals_parse(vt_optvals *v, int scope, const char *list)
{
    vt_optvals_init(v, scope);
    return vt_optvals_set_list(v, list);
}

vt_status vt_optvals_parse_new(vt_optvals **out, int scope, const char *list)
{
    *out = vt_malloc(sizeof **out);
    if (!*out) return VT_ERR_OUT_OF_MEMORY;
    vt_status st = vt_optvals_parse(*out, scope, list);
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}

double vt_opt_num(const vt_optvals *v, int id)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    return d ? v->num[vt_opt_index(d)] : 0;
}

const char *vt_opt_str(const vt_optvals *v, int id)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    int k = d && d->type == VT_OPTION_STRING ? str_slot(d) : VT_OPT_STR_SLOTS;
    return k < VT_OPT_STR_SLOTS ? v->str[k] : "";
}

int vt_opt_isset(const vt_optvals *v, int id)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    return d ? v->set[vt_opt_index(d)] : 0;
}

vt_status vt_parse_kv_list(const char *list, vt_kv_fn fn, void *ctx)
{
    if (!list) return VT_OK;
    const char *p = list;
    char key[128], value[512];
    while (*p) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        size_t len = (size_t)(p - start);
        const char *eq = memchr(start, '=', len);
        if (!eq || eq == start)
            return vt_fail(VT_ERR_OPTION_VALUE, "'%.*s' is not of the form key=value", (int)len,
                           start);
        size_t kl = (size_t)(eq - start), vl = len - kl - 1;
        if (kl >= sizeof key || vl >= sizeof value)
            return vt_fail(VT_ERR_OPTION_VALUE, "'%.*s' is too long", (int)len, start);
        memcpy(key, start, kl);
        key[kl] = 0;
        memcpy(value, eq + 1, vl);
        value[vl] = 0;
        vt_status st = fn(ctx, key, value);
        if (st) return st;
    }
    return VT_OK;
}

vt_status vt_parse_int(const char *key, const char *s, long long min, long long max,
                       long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s is not an integer", key, s);
    if (x < min || x > max)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%lld is out of range [%lld, %lld]", key, x, min,
                       max);
    *out = x;
    return VT_OK;
}

vt_status vt_parse_double(const char *key, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!*s || *end || errno || isnan(x))
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%s is not a number", key, s);
    if (x < min || x > max)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%g is out of range [%g, %g]", key, x, min, max);
    *out = x;
    return VT_OK;
}
