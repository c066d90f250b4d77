/*
 * libvisiontrain: train image classification (and, later, detection and segmentation) models
 * from C, C++ or Python, on the CPU or a GPU.
 *
 * API RULES (they hold for every function below)
 *
 * Handles.  Every object is an opaque handle (vt_dataset, vt_model, vt_trainer).  No struct of
 *   the library is public, so the ABI does not change when the library grows.  Each handle has a
 *   xxx_create / xxx_open / xxx_load function that returns it through an out-pointer and an xxx_destroy
 *   function; xxx_destroy(NULL) does nothing.
 *
 * Errors.  Every call that can fail returns a vt_status (VT_OK == 0).  A human-readable message
 *   for the last failure is kept (a) in the handle the call was made on (vt_model_last_error(),
 *   ...) and (b) for the calling thread (vt_last_error()), which is the only place to look when a
 *   handle could not be created.  Messages name the file, line and problem where there is one.
 *   The returned strings stay valid until the next failing call on the same handle / thread.
 *   Numeric values of vt_status and of every other enum are fixed forever; new ones are appended.
 *
 * Behaviour.  The library never exits, aborts, asserts on input or prints: problems come back as
 *   a vt_status, and diagnostics go through the log callback a caller sets on a handle.  Memory
 *   allocation failures return VT_ERR_OUT_OF_MEMORY.  The library never modifies a user's dataset.
 *
 * Threads.  The library has no mutable process-wide state.  A handle may be used by one thread at
 *   a time; different handles may be used from different threads at the same time.  A vt_model
 *   that a vt_trainer uses must not be used elsewhere while that trainer runs.  The exception is
 *   vt_trainer_cancel(), which may be called from any thread or from a signal handler.
 *
 * Ownership.  Strings passed in are copied when the library keeps them.  Strings returned are
 *   owned by the handle that returned them (valid until it is destroyed unless stated otherwise).
 *   A vt_trainer borrows its model and dataset: both must outlive it.
 *
 * Buffers.  A call that fills a caller's buffer ("fills per the buffer rule") takes the buffer,
 *   its capacity (elements, or bytes for text) and an out-size pointer, and works as "size
 *   query, then fill":
 *   - the out-size, when non-NULL, is always set to the full size of the result (elements, or
 *     bytes with the NUL for text), whatever the call returns; 0 when the call fails before it
 *     knows the size (a bad argument, a file that cannot be read);
 *   - buffer NULL with capacity 0 is a size query: VT_OK, nothing written;
 *   - a buffer too small for the whole result: VT_ERR_BUFFER_TOO_SMALL and nothing written
 *     (except that a text buffer of capacity >= 1 gets "", so it is never left unterminated),
 *     the message naming the call, the size needed and the capacity given;
 *   - buffer NULL with a capacity > 0, or a negative capacity: VT_ERR_INVALID_ARGUMENT.
 *   On success exactly the result is written; elements past it are left as they were.  A call
 *   whose result has a size fixed in advance, given by another call (vt_model_predict_*: the
 *   class count; vt_dataset_class_histogram; vt_model_forward: vt_model_output_shape), has no
 *   out-size and no size query (a NULL buffer is VT_ERR_INVALID_ARGUMENT); the rest holds.
 *   The one exception is vt_device_info(), whose GPU name is a display string truncated to fit.
 *   Buffers sized by the call's own arguments (vt_dataset_mask, vt_model_segment_pixels,
 *   vt_dataset_box_histogram) have no capacity.  The library keeps no pointer to a buffer.
 *
 * Options.  Settings are typed and enum-keyed (vt_option), in the style of zstd: set through
 *   vt_trainer_set_int/_float/_string, or in "key=value" form through vt_trainer_set(), which
 *   the CLI and the Python bindings use.  Unknown keys fail with VT_ERR_UNKNOWN_OPTION, bad or out
 *   of range values with VT_ERR_OPTION_VALUE; the message lists what is valid.
 *
 * Tensors exchanged with the caller are float32, NCHW, row-major.
 */
#ifndef VISIONTRAIN_H
#define VISIONTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version and export ---------------------------------------------------------------- */

#define VT_VERSION_MAJOR 0
#define VT_VERSION_MINOR 1
#define VT_VERSION_PATCH 0
/* Encoded as MAJOR*10000 + MINOR*100 + PATCH. */
#define VT_VERSION_NUMBER (VT_VERSION_MAJOR * 10000 + VT_VERSION_MINOR * 100 + VT_VERSION_PATCH)
/* The ABI version is the SONAME suffix: libvisiontrain.so.<VT_ABI_VERSION>. */
#define VT_ABI_VERSION 0

#if defined(VT_STATIC_DEFINE)
#define VT_API
#elif defined(_WIN32)
#if defined(VT_BUILDING_LIBRARY)
#define VT_API __declspec(dllexport)
#else
#define VT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && defined(VT_BUILDING_LIBRARY)
#define VT_API __attribute__((visibility("default")))
#else
#define VT_API
#endif

/* Version of the library actually loaded (VT_VERSION_NUMBER encoding), its text form
 * ("0.1.0"), and its ABI version.  Thread-safe, cannot fail. */
VT_API unsigned vt_version(void);
VT_API const char *vt_version_string(void);
VT_API unsigned vt_abi_version(void);

/* ---- status ----------------------------------------------------------------------------- */

typedef enum vt_status {
    VT_OK = 0,
    VT_ERR_INVALID_ARGUMENT = 1, /* NULL where a pointer is required, bad enum value, ...  */
    VT_ERR_OUT_OF_MEMORY = 2,    /* host memory                                            */
    VT_ERR_IO = 3,               /* a file could not be read or written                    */
    VT_ERR_NOT_FOUND = 4,        /* a file or folder does not exist                        */
    VT_ERR_FORMAT = 5,           /* a file exists but is corrupt or of an unsupported kind */
    VT_ERR_UNKNOWN_OPTION = 6,   /* an option key the handle does not know                 */
    VT_ERR_OPTION_VALUE = 7,     /* a value of the wrong type or out of range              */
    VT_ERR_DATASET = 8,          /* the dataset's layout or labels are unusable            */
    VT_ERR_UNSUPPORTED = 9,      /* valid request this build or model cannot do            */
    VT_ERR_BAD_STATE = 10,       /* handle unusable after an earlier failure / wrong order  */
    VT_ERR_CANCELLED = 11,       /* vt_trainer_cancel() or a callback stopped the run       */
    VT_ERR_DEVICE = 12,          /* GPU missing or a GPU call failed                        */
    VT_ERR_DEVICE_OOM = 13,      /* GPU out of memory                                       */
    VT_ERR_CHECKPOINT = 14,      /* checkpoint truncated, corrupt, foreign or too new       */
    VT_ERR_BUFFER_TOO_SMALL = 15,/* the caller's buffer cannot hold the result              */
    VT_ERR_INTERNAL = 16,        /* a bug in the library; please report it                  */
    VT_ERR_NUMERIC = 17          /* training diverged (loss became NaN or infinite)         */
} vt_status;

/* A static English description of a status ("invalid argument", ...).  Never NULL. */
VT_API const char *vt_status_string(vt_status status);

/* The message of the last failure in the calling thread, "" when there was none.  The string
 * is owned by the library and valid until the next failing call in this thread. */
VT_API const char *vt_last_error(void);

/* ---- logging ---------------------------------------------------------------------------- */

typedef enum vt_log_level {
    VT_LOG_ERROR = 1,
    VT_LOG_WARNING = 2,
    VT_LOG_INFO = 3,
    VT_LOG_DEBUG = 4
} vt_log_level;

/* Called from the thread running the call that logs; `message` is valid during the call only
 * and has no trailing newline. */
typedef void (*vt_log_fn)(void *user, vt_log_level level, const char *message);

/* ---- enums ------------------------------------------------------------------------------ */

typedef enum vt_task {
    VT_TASK_CLASSIFY = 1,
    VT_TASK_DETECT = 2,
    VT_TASK_SEGMENT = 3,     /* semantic: a class per pixel                               */
    VT_TASK_INSTANCE = 4     /* instance segmentation: per object a box, class and mask     */
} vt_task;

typedef enum vt_split {
    VT_SPLIT_TRAIN = 0,
    VT_SPLIT_VAL = 1,
    VT_SPLIT_TEST = 2
} vt_split;

/* Option keys: one table describes every setting of every handle and of every call that takes
 * a "key=value" options string, with its type, range, default and help (vt_option_info,
 * vt_option_default); vt_option_scopes tells which handle or call takes it.  Values are grouped
 * by that handle or call and never renumbered:
 *   100..299  vt_trainer (vt_trainer_set*, vt_trainer_set)
 *   300..399  vt_model_create's options string
 *   500..599  vt_estimator (vt_estimator_set*, vt_estimator_set); once an enum of its own
 *             (vt_est_option, now a name of this type)
 *   600..699  vt_dataset_open_ex and vt_dataset_validate's options strings
 *   700..799  vt_dataset_split and vt_dataset_subset's options strings
 *   800..899  vt_synth_generate's options string (800.. classification, 820.. detection and
 *             segmentation: the ranges differ)
 *   900..999  vt_estimator_calibrate's options string
 *   1000..1099 vt_model_export's options string
 * A key may exist in several groups ("imgsz", "seed", "epochs"); within one handle or call a
 * key is unique.  Ranges below are inclusive; "0 = ..." marks a 0 accepted outside the range. */
typedef enum vt_option {
    /* vt_trainer: schedule and optimisation */
    VT_OPT_EPOCHS = 100,          /* int   >= 1, default 10                                   */
    VT_OPT_BATCH = 101,           /* int   >= 1, default 32; -1 = automatic: the largest batch
                                     whose training fits autobatch_fraction of the device's
                                     memory (available host memory on the CPU) by the
                                     estimator's memory model, capped at the training images
                                     and at 1024 (512 on the CPU), then checked by one real
                                     training step and halved while that step runs out of
                                     memory.  The run logs the choice and the option then holds
                                     it (args.yaml, vt_trainer_get_float)                       */
    VT_OPT_IMGSZ = 102,           /* int   8..4096, default: the model's image size            */
    VT_OPT_OPTIMIZER = 103,       /* string "sgd" | "adamw", default "sgd"                   */
    VT_OPT_LR0 = 104,             /* float > 0, initial learning rate, default 0.01 (adamw: 0.001) */
    VT_OPT_LRF = 105,             /* float 0..1, final lr = lr0*lrf, default 0.01              */
    VT_OPT_MOMENTUM = 106,        /* float 0..1, SGD momentum / Adam beta1, default 0.9        */
    VT_OPT_WEIGHT_DECAY = 107,    /* float >= 0, default 5e-4 (not applied to biases and BN)   */
    VT_OPT_NESTEROV = 108,        /* int 0|1, default 1                                        */
    VT_OPT_WARMUP_EPOCHS = 109,   /* float >= 0, linear LR warm-up, default 1 (detection and
                                   * instance segmentation: 3)                                  */
    VT_OPT_COS_LR = 110,          /* int 0|1: cosine (1) or linear (0) decay, default 1
                                   * (detection and instance segmentation: 0)                   */
    VT_OPT_LABEL_SMOOTHING = 111, /* float 0..<1, default 0                                     */
    VT_OPT_SEED = 112,            /* int >= 0, default 0: same seed => same run on the CPU      */
    VT_OPT_DEVICE = 113,          /* string "cpu" | "0" | "1" ..., default "cpu"                */
    VT_OPT_WORKERS = 114,         /* int 0..64 decoding threads, 0 = decode in the caller, default 2 */
    VT_OPT_FLIPLR = 115,          /* float 0..1 probability of a horizontal flip, default 0.5
                                     (training augmentation, see VT_OPT_HSV_H below)             */
    VT_OPT_VAL = 116,             /* int 0|1: validate after each epoch, default 1             */
    VT_OPT_PRECISION = 117,       /* string "tf32" | "fp32" | "bf16": matrix math, default
                                     "tf32" (TF32 tensor cores where the GPU has them; fp32 on
                                     the CPU).  "bf16": the convolutions' and linear layers'
                                     products with bf16 operands and fp32 accumulation, weights,
                                     optimiser state, batch norm and losses in fp32; on a CPU
                                     with AVX512-BF16 only (VT_ERR_UNSUPPORTED elsewhere and on
                                     GPUs, where it has not run yet) */

    /* vt_trainer: run folder, checkpoints and run control (see vt_trainer_run) */
    VT_OPT_PROJECT = 118,         /* string, default "runs": parent of the run folders           */
    VT_OPT_NAME = 119,            /* string, default "train": the run folder is
                                     <project>/<task>/<name>, or <name>2, <name>3... when it
                                     exists and exist_ok=0                                       */
    VT_OPT_EXIST_OK = 120,        /* int 0|1, default 0: reuse an existing run folder            */
    VT_OPT_SAVE = 121,            /* int 0|1, default 1: write the run folder (checkpoints,
                                     args.yaml, results.csv, plots); 0 writes nothing at all     */
    VT_OPT_SAVE_PERIOD = 122,     /* int -1 | >= 1, default -1: also keep weights/epochN.vtm
                                     every N epochs                                               */
    VT_OPT_RESUME = 123,          /* string, default "": a checkpoint (weights/last.vtm) to
                                     continue from; see vt_trainer_run                          */
    VT_OPT_PATIENCE = 124,        /* int >= 1, default 100: stop after this many epochs without
                                     a better fitness                                             */
    VT_OPT_TIME = 125,            /* float hours >= 0, default 0 (none): time budget of one
                                     vt_trainer_run call                                         */
    VT_OPT_EMA = 126,             /* int 0|1, default 0: keep an exponential moving average of
                                     the weights; it is validated, saved and given to the model */
    VT_OPT_EMA_DECAY = 127,       /* float 0..<1, default 0.9999 (ramped up over the first
                                     ~2000 steps as decay*(1-exp(-updates/2000)))                */
    VT_OPT_PRICE = 128,           /* float >= 0 USD per device-hour, default 0: for
                                     VT_METRIC_COST_USD                                          */
    VT_OPT_PLOTS = 129,           /* int 0|1, default 1: results.png and confusion_matrix.png   */
    /* Augmentation of training images (Ultralytics names and defaults; see the README's
     * "Augmentation" table).  Detection: mosaic or letterbox, random affine, mixup, HSV, flips;
     * classification: random resized crop (off unless crop_scale < 1), HSV, flips, erasing. */
    VT_OPT_HSV_H = 130,           /* float 0..1, default 0.015                                  */
    VT_OPT_HSV_S = 131,           /* float 0..1, default 0.7                                    */
    VT_OPT_HSV_V = 132,           /* float 0..1, default 0.4                                    */
    VT_OPT_DEGREES = 133,         /* float 0..180, default 0                                    */
    VT_OPT_TRANSLATE = 134,       /* float 0..1, default 0.1                                    */
    VT_OPT_SCALE = 135,           /* float 0..0.99, default 0.5                                 */
    VT_OPT_SHEAR = 136,           /* float 0..89 degrees, default 0                             */
    VT_OPT_PERSPECTIVE = 137,     /* float 0..0.001, default 0                                  */
    VT_OPT_FLIPUD = 138,          /* float 0..1, default 0                                      */
    VT_OPT_MOSAIC = 139,          /* float 0..1, default 1                                      */
    VT_OPT_MIXUP = 140,           /* float 0..1, default 0                                      */
    VT_OPT_CLOSE_MOSAIC = 141,    /* int >= 0, default 10: the last N epochs without mosaic      */
    VT_OPT_ERASING = 142,         /* float 0..1, default 0 (Ultralytics: 0.4)                   */
    VT_OPT_CROP_SCALE = 143,      /* float 0.01..1, default 1 = no random resized crop
                                     (Ultralytics: 0.08)                                        */
    /* Data loading (see vt_trainer_run and the README's "Data loading") */
    VT_OPT_PREFETCH = 144,        /* int 0..8, default 2: training batches decoded ahead by the
                                     loader threads while the current one trains; 0 = load each
                                     batch when needed (also when workers=0).  Results do not
                                     depend on it                                               */
    VT_OPT_CACHE = 145,           /* string "none" | "ram", default "none": keep decoded training
                                     images (resized to the training size) in memory for the
                                     next epochs; augmentation still runs on every use          */
    VT_OPT_CACHE_BYTES = 146,     /* int >= 0 bytes, default 4294967296 (4 GiB): cap of
                                     cache=ram (pixel bytes); images beyond it are not cached   */
    VT_OPT_FRACTION = 147,        /* float 0..1, default 1: train on a subset of this fraction
                                     of the training images (at least 2), the same for the same
                                     seed; validation uses the whole split                       */
    VT_OPT_TENSORBOARD = 148,     /* int 0|1, default 1: write the run's TensorBoard log,
                                     <run>/events.out.tfevents.<time>.<host> (needs save=1)      */
    VT_OPT_DICE = 149,            /* float 0..10, default 1: weight of the soft Dice term added to
                                     the segmentation loss (per-pixel cross-entropy + dice *
                                     (1 - mean per-class soft Dice)); 0 = cross-entropy only   */
    VT_OPT_AUTOBATCH_FRACTION = 150, /* float 0.1..0.95, default 0.6: share of the device's
                                     memory (of the available host memory on the CPU) that
                                     batch=-1 fills                                              */
    VT_OPT_PRETRAINED = 151,      /* string, default "" ("pretrained"): a saved model (.vtm) whose
                                     matching tensors start the run (vt_model_transfer): the
                                     same architecture, or one with the same backbone
                                     (resnet18 -> det-r18, seg-r18); not applied when resuming */
    VT_OPT_FREEZE = 152,          /* string, default "" ("freeze"): layers that are not trained:
                                     N (an integer: the first N layers of vt_model_layer's list)
                                     or "backbone" (the first vt_model_backbone_layers()).  Their
                                     parameters get no update and no weight decay, their batch
                                     norms keep their running statistics (eval mode), and no
                                     gradient is computed below the first trained layer */
    VT_OPT_DIST = 153,            /* string "auto" | "off", default "auto" ("dist"): data-parallel
                                     training when the process is one rank of several
                                     (`mpirun -np N ...` in a build with MPI; GPU ranks also
                                     torchrun-style: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
                                     MASTER_PORT; `vt train device=0,1` starts them): each rank
                                     trains batch images of every step (the step's batch is
                                     batch x ranks), gradients are averaged over the ranks,
                                     only rank 0 writes the run folder and calls the progress
                                     callback, the other ranks log warnings and errors only.
                                     "off": each process trains on its own */
    VT_OPT_SYNC_BN = 154,         /* int 0|1, default 0 ("sync_bn"): in data-parallel training
                                     (dist) on CPU ranks, batch norm normalises with the
                                     statistics of the whole step's images (every rank's) and
                                     differentiates through them, as one process with the
                                     whole batch; 0: each rank's own batch.  Costs two small
                                     all-reduces per batch-norm layer and step */
    VT_OPT_BUCKET_MB = 155,       /* float 0..1024, default 25 ("bucket_mb"): in data-parallel
                                     training, the gradients are summed over the ranks in
                                     buckets of about this many MB, each as soon as the backward
                                     has computed it (on GPU ranks while the backward goes on);
                                     0: one all-reduce after the backward */

    /* vt_model_create() options ("key=value" in its options string) */
    VT_OPT_CHANNELS = 300,        /* int 1|3 input channels, default 3                          */
    VT_OPT_MODEL_IMGSZ = 301,     /* int 8..4096, the model's image size, default 224 ("imgsz") */
    VT_OPT_DROPOUT = 302,         /* float 0..<1 before the classifier, default 0               */
    VT_OPT_MODEL_SEED = 303,      /* int >= 0, weight initialisation seed, default 0 ("seed")   */

    /* vt_estimator settings (the key in parentheses where it differs from the name) */
    VT_OPT_EST_MODEL = 500,       /* string architecture ("cls-n"...) when no model handle is set,
                                   * default "cls-n" ("model")                                  */
    VT_OPT_EST_CLASSES = 501,     /* int 2..100000, default 10 ("classes")                      */
    VT_OPT_EST_TRAIN_IMAGES = 502,/* int >= 1, default 1000 ("train")                           */
    VT_OPT_EST_VAL_IMAGES = 503,  /* int >= 0, default 0 ("val")                                */
    VT_OPT_EST_EPOCHS = 504,      /* int >= 1, default 100 ("epochs")                           */
    VT_OPT_EST_BATCH = 505,       /* int >= 1, total over all GPUs, default 16 ("batch")         */
    VT_OPT_EST_IMGSZ = 506,       /* int 8..4096, default 640 ("imgsz")                          */
    VT_OPT_EST_PRECISION = 507,   /* string "fp32" | "tf32" | "bf16" | "fp16" | "amp" (= bf16),
                                   * default "tf32" like the trainer's VT_OPT_PRECISION.  Each
                                   * GPU runs the nearest precision it has: tf32 -> fp32 without
                                   * TF32 (before Ampere); bf16 -> fp16 on Volta/Turing (their
                                   * tensor cores have fp16, not bf16), else fp32; the CPU bf16
                                   * for bf16/amp with AVX512-BF16, else fp32.
                                   * VT_EST_PRECISION says which one an estimate used
                                   * ("precision")                                              */
    VT_OPT_EST_MOSAIC = 508,      /* float 0..1 probability of a 4-image mosaic, default 0       */
    VT_OPT_EST_VAL_EACH = 509,    /* int 0|1 validate after each epoch, default 1 ("val_each")   */
    VT_OPT_EST_WORKERS = 510,     /* int 0..256 loader threads, default 8 ("workers")            */
    VT_OPT_EST_GPU = 511,         /* string: a catalog name or abbreviation (vt_catalog_find),
                                   * "local" (the calibrated device) or "cpu", default "local"
                                   * ("gpu")                                                    */
    VT_OPT_EST_NUM_GPUS = 512,    /* int 1..64 data-parallel GPUs, default 1 ("gpus"); with
                                   * VT_OPT_EST_GPU "cpu" (or a CPU calibration) N MPI ranks on
                                   * this host, sharing its cores and memory                    */
    VT_OPT_EST_CHANNELS = 513,    /* int 1|3, default 3 ("channels")                             */
    VT_OPT_EST_LOAD_MS = 514,     /* float >= 0: one worker's milliseconds to decode and augment
                                   * one image; 0 = the built-in model (see estimate.c)         */
    VT_OPT_EST_STARTUP_S = 515,   /* float >= 0 seconds of start-up; < 0 (default) = 30 on a GPU,
                                   * 1 on the CPU ("startup")                                   */
    VT_OPT_EST_DEADLINE_H = 516,  /* float >= 0 hours, 0 = none; for VT_RANK_COST_WITHIN_DEADLINE */
    VT_OPT_EST_BUDGET_USD = 517,  /* float >= 0, 0 = none; for VT_RANK_TIME_WITHIN_BUDGET       */
    VT_OPT_EST_LOCAL_PRICE = 518, /* float >= 0 USD per hour of the local device, default 0     */
    VT_OPT_EST_OPTIMIZER = 519,   /* string "sgd" | "adamw" (optimiser state memory), default sgd */
    VT_OPT_EST_MEMORY_FRACTION = 520, /* float 0.1..1 of device memory usable, default 0.9       */
    VT_OPT_EST_LINK_GBS = 521,    /* float >= 0 GB/s one device's link reaches in the gradient
                                   * all-reduce of VT_OPT_EST_NUM_GPUS > 1; 0 (default) = by
                                   * interconnect: NVLink or PCIe from the catalog GPU, shared
                                   * memory for ranks on the CPU (docs/estimator.md) ("link_gbs";
                                   * added after 520, ABI-compatible)                           */

    /* vt_dataset_open_ex / vt_dataset_validate options */
    VT_OPT_DS_POLICY = 600,       /* string "drop" | "skip" | "fail", default "drop" ("policy"):
                                   * what an image with a problem does (see vt_dataset_open_ex) */
    VT_OPT_DS_DECODE = 601,       /* int 0|1, default 0 ("decode"): decode every image while
                                   * opening; vt_dataset_open_ex only (validation always does) */
    VT_OPT_DS_MIN_SIZE = 602,     /* int 1..65535 pixels, default 10 ("min_size")               */
    VT_OPT_DS_WORKERS = 603,      /* int 0..64 decoding threads, default 4 ("workers")          */

    /* vt_dataset_split / vt_dataset_subset options */
    VT_OPT_SPLIT_VAL = 700,       /* float 0..1, default 0.2 ("val"): split's share of val      */
    VT_OPT_SUBSET_FRACTION = 701, /* float 0..1, default 0 = use count ("fraction")             */
    VT_OPT_SUBSET_COUNT = 702,    /* int 1..2147483647 images per split, default 0 = use
                                   * fraction ("count")                                        */
    VT_OPT_SPLIT_SEED = 703,      /* int 0..2^53-1, default 0 ("seed"): both calls              */

    /* vt_synth_generate options, VT_TASK_CLASSIFY */
    VT_OPT_SYNTH_CLASSES = 800,   /* int 2..8, default 4 ("classes")                           */
    VT_OPT_SYNTH_TRAIN = 801,     /* int 1..1000000 images per class, default 100 ("train")    */
    VT_OPT_SYNTH_VAL = 802,       /* int 0..1000000 images per class, default 40 ("val")       */
    VT_OPT_SYNTH_IMGSZ = 803,     /* int 16..512, default 32 ("imgsz")                          */
    VT_OPT_SYNTH_SEED = 804,      /* int 0..2^53-1, default 0 ("seed")                          */
    /* vt_synth_generate options, VT_TASK_DETECT and VT_TASK_SEGMENT */
    VT_OPT_SYNTH_DET_CLASSES = 820,     /* int 3..8, default 3 ("classes")                     */
    VT_OPT_SYNTH_DET_TRAIN = 821,       /* int 1..1000000 images, default 200 ("train")        */
    VT_OPT_SYNTH_DET_VAL = 822,         /* int 0..1000000 images, default 50 ("val")           */
    VT_OPT_SYNTH_DET_IMGSZ = 823,       /* int 32..1024, default 160 ("imgsz")                 */
    VT_OPT_SYNTH_DET_SEED = 824,        /* int 0..2^53-1, default 0 ("seed")                   */
    VT_OPT_SYNTH_DET_MAX_OBJECTS = 825, /* int 0..64 shapes per image, default 6 ("max_objects") */
    VT_OPT_SYNTH_DET_MIN_SIZE = 826,    /* int 0..1024 px, the smallest shape's longer side,
                                         * default 0 = 5% of imgsz ("min_size")                 */
    VT_OPT_SYNTH_DET_MAX_SIZE = 827,    /* int 0..1024 px, the largest, default 0 = 50% of
                                         * imgsz ("max_size")                                   */
    VT_OPT_SYNTH_DET_SIZES = 828,       /* string "linear" (default: sizes uniform between the
                                         * two) or "log" (log-uniform: as many objects per
                                         * octave of size) ("sizes")                            */

    /* vt_estimator_calibrate options */
    VT_OPT_CAL_BATCHES = 900,     /* string "B1,B2[,B3]", 1 to 3 batch sizes >= 2, default ""
                                   * = batch/4, batch/2, batch of VT_OPT_EST_BATCH ("batches") */
    VT_OPT_CAL_SECONDS = 901,     /* float 0.1..3600, measurement budget, default 10 ("seconds") */
    VT_OPT_CAL_GPU = 902,         /* string, catalog name of the local GPU, default "" =
                                   * VT_OPT_EST_GPU if it names one ("gpu")                     */
    VT_OPT_CAL_PROBE_MAX = 903,   /* int 0|1, default 1 ("probe_max")                            */

    /* vt_model_export options */
    VT_OPT_EXPORT_OPSET = 1000,   /* int 13..21, default 17 ("opset")                            */
    VT_OPT_EXPORT_BATCH = 1001,   /* int 1..65536, default 1 ("batch"); the word "dynamic" is
                                   * also accepted (a batch dimension of any size)              */
    VT_OPT_EXPORT_NMS = 1002,     /* int 0|1, default 0 ("nms")                                  */
    VT_OPT_EXPORT_CONF = 1003,    /* float 0..1, default 0.25 ("conf")                           */
    VT_OPT_EXPORT_IOU = 1004,     /* float 0..1, default 0.7 ("iou")                             */
    VT_OPT_EXPORT_MAX_DET = 1005, /* int 1..100000, default 300 ("max_det")                      */
    VT_OPT_EXPORT_HALF = 1006,    /* int 0|1, default 0 ("half"; 1 is not supported yet)         */
    VT_OPT_EXPORT_FOLD = 1007     /* int 0|1, default 1 ("fold")                                 */
} vt_option;

typedef enum vt_option_type {
    VT_OPTION_INT = 1,
    VT_OPTION_FLOAT = 2,
    VT_OPTION_STRING = 3
} vt_option_type;

/* Describe an option: its key as used in "key=value" form, its type, numeric bounds (for
 * strings: 0), and a one-line help text.  Any out-pointer may be NULL.  Returned strings are
 * static.  Thread-safe. */
VT_API vt_status vt_option_info(vt_option option, const char **key, vt_option_type *type,
                                double *min_value, double *max_value, const char **help);

/* Iterate over all options: pass 0 to get the first, then the previous result; returns 0 after
 * the last.  Thread-safe. */
VT_API int vt_option_next(int previous);

/* Which handles and calls take an option (a bit set: an option may serve two calls). */
typedef enum vt_option_scope {
    VT_SCOPE_TRAINER = 1,           /* vt_trainer_set_int/_float/_string, vt_trainer_set       */
    VT_SCOPE_MODEL = 2,             /* vt_model_create's options string                        */
    VT_SCOPE_ESTIMATOR = 4,         /* vt_estimator_set_int/_float/_string, vt_estimator_set   */
    VT_SCOPE_DATASET_OPEN = 8,      /* vt_dataset_open_ex's options string                     */
    VT_SCOPE_DATASET_VALIDATE = 16, /* vt_dataset_validate's options string                    */
    VT_SCOPE_DATASET_SPLIT = 32,    /* vt_dataset_split's options string                       */
    VT_SCOPE_DATASET_SUBSET = 64,   /* vt_dataset_subset's options string                      */
    VT_SCOPE_SYNTH_CLASSIFY = 128,  /* vt_synth_generate with VT_TASK_CLASSIFY                 */
    VT_SCOPE_SYNTH_DETECT = 256,    /* vt_synth_generate with VT_TASK_DETECT or VT_TASK_SEGMENT */
    VT_SCOPE_CALIBRATE = 512,       /* vt_estimator_calibrate's options string                 */
    VT_SCOPE_EXPORT = 1024          /* vt_model_export's options string                        */
} vt_option_scope;

/* The vt_option_scope bits of an option: where its key is accepted; 0 for an unknown option.
 * Thread-safe. */
VT_API int vt_option_scopes(vt_option option);

/* The default of an option: *number for int and float options (0 for strings), *string for
 * string options ("" for numbers; static).  An int or float default of 0 may lie outside
 * [min, max]: 0 then means "chosen by the library" (the help text says how), e.g. lr0, imgsz.
 * Any out-pointer may be NULL.  VT_ERR_INVALID_ARGUMENT for an unknown option.  Thread-safe. */
VT_API vt_status vt_option_default(vt_option option, double *number, const char **string);

/* ---- devices ---------------------------------------------------------------------------- */

/* What runs the CPU's matrix products, e.g. "BLIS 0.9.0 skx (own packing) (small products:
 * haswell) (AVX-512; BLIS alone picks haswell here); precision=bf16: AMX 32x32", or "portable
 * ..." without a BLAS.  After "precision=bf16: " the bf16 kernel ("AMX 32x32", "AVX512_BF16
 * 14x32", or "none (needs AVX512-BF16)": precision=bf16 is then refused), followed by " (slower
 * than fp32 here)" where it is measured so on this kind of processor (AVX512_BF16 on Intel).  The
 * library chooses once per process, at the first product, the fastest kernels the processor
 * runs, and packs their operands itself.  The environment variable VT_CPU_GEMM overrides the
 * choice for benchmarks and tests: "portable" (the built-in kernel), a BLIS sub-configuration
 * the processor can run ("generic", "sandybridge", "haswell", "zen", "zen2", "zen3", "skx"), or
 * "auto"; one it cannot run is ignored and the string says so.  VT_CPU_GEMM_PACK=blis leaves
 * the packing to BLIS (for comparison).  The string also says how the 3x3 stride-1 convolutions
 * run: Winograd F(4x4, 3x3) and F(2x2, 3x3) with fp32 products, F(2x2, 3x3) alone with
 * VT_CPU_WINOGRAD=2, or im2col with VT_CPU_WINOGRAD=0; and which build of the element-wise
 * loops (activations, batch norm, pooling) runs: "element-wise: AVX2" where the CPU and the
 * OS allow it, else "element-wise: baseline".  The library only reads the variables.  Static
 * string.
 * Thread-safe. */
VT_API const char *vt_cpu_kernels(void);

/* Number of CUDA GPUs usable by this build: 0 when the library was built without CUDA, its
 * CUDA module (libvisiontrain-cuda.so, looked for beside the library, or at $VT_CUDA_PLUGIN)
 * cannot be loaded, or there is no driver or no GPU (never an error).  The first call (or the
 * first use of a GPU) loads the module and initialises the CUDA runtime; a program that never
 * asks for a GPU never loads either.  Thread-safe. */
VT_API int vt_device_count(void);

/* Describe GPU `device` (0-based): its name, compute capability and total/free memory in bytes.
 * The name is the one exception to the buffer rule (see top): it is truncated to name_cap-1
 * bytes and NUL-terminated (name NULL with name_cap 0 skips it; NULL with name_cap > 0 is
 * VT_ERR_INVALID_ARGUMENT).  Any other out-pointer may be NULL.
 * VT_ERR_DEVICE when the device does not exist or the driver fails; when there is no GPU at
 * all, the message says why (no CUDA in this build, the module or a CUDA library missing, no
 * driver).  Thread-safe. */
VT_API vt_status vt_device_info(int device, char *name, size_t name_cap, int *cc_major,
                                int *cc_minor, uint64_t *total_bytes, uint64_t *free_bytes);

/* ---- datasets --------------------------------------------------------------------------- */

typedef struct vt_dataset vt_dataset;

/* Open a dataset.  For VT_TASK_DETECT see "detection datasets" below (data.yaml or COCO
 * JSON), for VT_TASK_SEGMENT and VT_TASK_INSTANCE "segmentation datasets".  For VT_TASK_CLASSIFY the ImageFolder layout is expected:
 *   path/train/<class>/<name>.png|jpg|jpeg   path/val/<class>/...   (also "valid", optional "test")
 * Class names are the sorted sub-folder names of train/.  Only file names are read here; images
 * are decoded when training.  Fails with VT_ERR_NOT_FOUND (no such folder / no train split) or
 * VT_ERR_DATASET (fewer than 2 class folders, no train image at all), the message naming the
 * folder.  An empty class folder (VT_PROBLEM_EMPTY_SPLIT; it keeps its class id), a val class
 * not present in train (VT_PROBLEM_CLASS_COUNT; its images are not used) and a missing or empty
 * val/ are recorded problems (vt_dataset_problem), as vt_dataset_validate() reports them, as is
 * a symbolic link (class folder or image) that cannot be followed: a loop
 * (VT_PROBLEM_SYMLINK_LOOP) or a missing target (VT_PROBLEM_BROKEN_LINK), skipped.  On
 * failure *out is NULL and vt_last_error() has the message. */
VT_API vt_status vt_dataset_open(vt_dataset **out, vt_task task, const char *path);
VT_API void vt_dataset_destroy(vt_dataset *dataset);

VT_API vt_task vt_dataset_task(const vt_dataset *dataset);
VT_API int vt_dataset_num_classes(const vt_dataset *dataset);
/* Class name i (0-based), or NULL when i is out of range.  Owned by the dataset. */
VT_API const char *vt_dataset_class_name(const vt_dataset *dataset, int i);
/* Number of images of a split (0 when the split is absent). */
VT_API int vt_dataset_num_images(const vt_dataset *dataset, vt_split split);
/* Path and class of image i of a split; NULL / -1 when out of range. */
VT_API const char *vt_dataset_image_path(const vt_dataset *dataset, vt_split split, int i);
VT_API int vt_dataset_image_class(const vt_dataset *dataset, vt_split split, int i);
VT_API const char *vt_dataset_last_error(const vt_dataset *dataset);

/* ---- detection datasets ----------------------------------------------------------------- *
 *
 * vt_dataset_open(&ds, VT_TASK_DETECT, path) accepts (semantic and instance segmentation: see
 * "segmentation datasets" below):
 *
 *  - an Ultralytics YOLO data.yaml (a path ending in .yaml or .yml), or a folder holding
 *    data.yaml.  Keys: `path` (dataset root; relative to the folder of the yaml file, which is
 *    also the default), `train`, `val` (optional), `test` (optional), and `names` (a list, or a
 *    map 0..n-1 -> name) and/or `nc`.  Without `names` the classes are named class_0, class_1...
 *    Each split is a folder (searched recursively for .png/.jpg/.jpeg, sorted), a .txt file
 *    listing image paths (one a line; relative lines are relative to the .txt's folder; order
 *    kept), a single image, or a YAML list of those (concatenated in order).  The label of an
 *    image is the image path with the last "/images/" replaced by "/labels/" and the extension
 *    by ".txt"; one box a line, "class cx cy w h", normalised to 0..1.  An image without a
 *    label file, or with an empty one, is a background image.
 *
 *  - a COCO instances JSON (a path ending in .json).  It is the train split; when its file
 *    name contains "train" and the same name with the last "train" replaced by "val" exists
 *    next to it, that file is the val split (its categories must be the train file's).  Image
 *    files are looked up, first match wins: an absolute `file_name` as it is; else
 *    <json folder>/images/<file_name> (when that folder exists), <json folder>/<file_name>,
 *    and for a JSON in a folder named "annotations" <parent>/images/<file_name> and
 *    <parent>/<file_name>.  An image found nowhere is VT_PROBLEM_MISSING_IMAGE, naming the
 *    paths tried and the rule.  Categories sorted by id become classes 0..n-1
 *    with their names; `iscrowd` annotations are skipped; `bbox` [x,y,w,h] in pixels is
 *    converted with the image's `width`/`height` and clipped to the image.
 *
 * Errors that make the dataset unusable fail the call: VT_ERR_FORMAT for YAML or JSON syntax
 * ("file:line:column: ..."), VT_ERR_DATASET for a missing `train` or a train split without
 * images, VT_ERR_NOT_FOUND for a split path that does not exist.  A `names` count that differs
 * from `nc` is recorded (VT_PROBLEM_CLASS_COUNT, the `names` list wins), as is a val or test
 * split without images (VT_PROBLEM_EMPTY_SPLIT).  Problems in single labels do not fail either:
 * the bad box (or entry) is dropped, the rest of the image is kept, and the problem is recorded
 * (vt_dataset_problem) for the caller to report.  Also recorded, as warnings: a `train`/`val`/
 * `test` entry or a COCO `file_name` that resolves (by its text: absolute, or `..` climbing
 * out; links are not followed) outside the dataset folder, which is `path:` when given, else
 * the yaml's folder, and for COCO the JSON's folder (its parent when it is "annotations"):
 * VT_PROBLEM_OUTSIDE_ROOT, the path still used; symbolic links found while listing images
 * that cannot be followed (VT_PROBLEM_SYMLINK_LOOP, VT_PROBLEM_BROKEN_LINK; a folder link back
 * to a folder being searched is a loop and not followed), skipped. */

/* Kinds of recorded dataset problems.  Values are fixed. */
typedef enum vt_problem_code {
    VT_PROBLEM_BAD_LINE = 1,         /* label line without 5 columns, or not numbers          */
    VT_PROBLEM_CLASS_RANGE = 2,      /* class id outside 0..num_classes-1 (or unknown COCO
                                        category)                                             */
    VT_PROBLEM_COORD_RANGE = 3,      /* coordinate outside 0..1 (COCO: box outside the image)  */
    VT_PROBLEM_ZERO_SIZE = 4,        /* width or height <= 0                                  */
    VT_PROBLEM_DUPLICATE = 5,        /* same class and box as an earlier line of the image    */
    VT_PROBLEM_MISSING_SPLIT = 6,    /* no `val`, or a `test` path that does not exist        */
    VT_PROBLEM_MISSING_IMAGE = 7,    /* a list or COCO entry names an image that is not there  */
    VT_PROBLEM_LABEL_UNREADABLE = 8, /* a label file exists but cannot be read                */
    VT_PROBLEM_BAD_ANNOTATION = 9,   /* COCO entry malformed (bbox not 4 numbers, unknown or
                                        duplicate image id, image without width/height)       */
    VT_PROBLEM_TRUNCATED = 10,       /* the list is full (10000); later problems not recorded  */
    /* Found by vt_dataset_validate() (and vt_dataset_open_ex() with decode=1): */
    VT_PROBLEM_IMAGE_UNREADABLE = 11,/* an image file cannot be opened or read                  */
    VT_PROBLEM_CORRUPT_IMAGE = 12,   /* PNG/JPEG data that does not decode (or an empty file)   */
    VT_PROBLEM_TRUNCATED_JPEG = 13,  /* a JPEG whose data ends early                            */
    VT_PROBLEM_IMAGE_TOO_SMALL = 14, /* width or height below min_size (default 10 pixels)      */
    VT_PROBLEM_UNSUPPORTED_FORMAT = 15, /* not a PNG or JPEG by its content (e.g. a text file
                                        named .jpg), or a kind not supported (CMYK JPEG)      */
    VT_PROBLEM_POLYGON_POINTS = 16,  /* segmentation polygon with fewer than 3 points          */
    VT_PROBLEM_EMPTY_SPLIT = 17,     /* a split (or classification class folder) without images */
    VT_PROBLEM_CLASS_COUNT = 18,     /* `names` and `nc` disagree; classification: a val class
                                        folder that train does not have                        */
    VT_PROBLEM_MISSING_MASK = 19,    /* segmentation mask layout: an image without its mask PNG
                                        (the image is dropped)                                 */
    VT_PROBLEM_BAD_MASK = 20,        /* a mask PNG that does not decode, is not 8-bit gray, or
                                        differs in size from its image (validation, decode=1)  */
    VT_PROBLEM_OUTSIDE_ROOT = 21,    /* a split path or COCO file_name outside the dataset
                                        folder (a warning; still used)                         */
    VT_PROBLEM_SYMLINK_LOOP = 22,    /* a symbolic link loop, or a folder link back to a
                                        searched folder (skipped / not followed)               */
    VT_PROBLEM_BROKEN_LINK = 23,     /* a symbolic link whose target does not exist (skipped)   */
    VT_PROBLEM_IMAGE_TOO_LARGE = 24  /* over the decoder's limits: 32768 pixels a side, 2^28
                                        pixels, a 2 GiB file (validation, decode=1)            */
} vt_problem_code;

/* A short static name of a problem code ("truncated_jpeg"), "unknown" for other values. */
VT_API const char *vt_problem_code_name(int code);

/* Number of boxes of image i of a split (0 for a background image, an index out of range or a
 * classification dataset). */
VT_API int vt_dataset_num_boxes(const vt_dataset *dataset, vt_split split, int i);

/* Box j of image i: class id and centre x, centre y, width, height normalised to 0..1 of the
 * image size.  Either out-pointer may be NULL.  VT_ERR_INVALID_ARGUMENT when out of range. */
VT_API vt_status vt_dataset_box(const vt_dataset *dataset, vt_split split, int i, int j,
                                int *cls, float xywh[4]);

/* Problems found while opening the dataset, in the order found. */
VT_API int vt_dataset_num_problems(const vt_dataset *dataset);

/* Problem k: the file it is in, its 1-based line (0 when the format has no usable line, e.g.
 * JSON), a vt_problem_code, and a message ("file:line: ..." form, complete on its own).  Any
 * out-pointer may be NULL; strings are owned by the dataset.  VT_ERR_INVALID_ARGUMENT when k is
 * out of range. */
VT_API vt_status vt_dataset_problem(const vt_dataset *dataset, int k, const char **file,
                                    int *line, int *code, const char **message);

/* ---- segmentation datasets -------------------------------------------------------------- *
 *
 * vt_dataset_open(&ds, VT_TASK_SEGMENT, path) opens a dataset for SEMANTIC segmentation: every
 * pixel gets a class, class 0 being "background".  Layouts:
 *
 *  - YOLO-seg: a data.yaml as for detection; each label line is a polygon
 *    "class x1 y1 x2 y2 ... xn yn" (n >= 3, normalised 0..1).  A bad polygon (fewer than 3
 *    points: VT_PROBLEM_POLYGON_POINTS; an odd coordinate count or a non-number: BAD_LINE; a
 *    coordinate outside 0..1: COORD_RANGE; an unknown class: CLASS_RANGE; zero width or height:
 *    ZERO_SIZE; an exact repeat: DUPLICATE) is recorded with file and line and dropped, the rest
 *    of the image kept.
 *  - COCO instances JSON (as for detection) whose annotations have `segmentation` polygons
 *    [[x1, y1, x2, y2, ...], ...] in pixels: each part of an object is one polygon (points more
 *    than a pixel outside the image: COORD_RANGE, dropped; nearer ones are clamped).  RLE
 *    segmentations are recorded ("RLE masks are not supported yet", VT_PROBLEM_BAD_ANNOTATION)
 *    and dropped (instance datasets decode them, see below); `iscrowd` annotations are
 *    skipped.
 *  - mask PNGs: a data.yaml with `masks: <folder>` (e.g. `masks: masks`).  The mask of an image
 *    is its path with the last "/images/" replaced by "/<folder>/" and the extension by ".png":
 *    an 8-bit grayscale PNG of the image's size whose pixel values are class ids.  `ignore: N`
 *    (0..255, default 255, not a class id) marks pixels excluded from loss and metrics.  An
 *    image without its mask is dropped (VT_PROBLEM_MISSING_MASK).  Masks are only read when
 *    used (vt_dataset_mask), validated, or opened with decode=1 (VT_PROBLEM_BAD_MASK for an
 *    undecodable, non-gray or wrongly sized mask; values >= num_classes other than the ignore
 *    value are VT_PROBLEM_CLASS_RANGE and read as ignore).
 *
 * Classes.  Polygon datasets (YOLO-seg, COCO) with nc object classes have nc + 1 classes:
 * 0 = "background" (every pixel no polygon covers), object class k -> k + 1, named after
 * data.yaml's `names` / the COCO categories.  Mask datasets have exactly the classes of `names`
 * (class 0 is whatever the dataset says).  At most 254 object classes (255 mask classes).
 *
 * Polygons are also boxes: vt_dataset_num_boxes / vt_dataset_box give each polygon's bounding
 * box (class k + 1) in the same order, so detection-style tools work unchanged.  Mask datasets
 * have no polygons and no boxes.
 *
 * Rasterisation (vt_dataset_mask).  A pixel (x, y) is inside a polygon when its centre
 * (x + 0.5, y + 0.5) is, by the even-odd rule; a centre exactly on a left or top edge is inside,
 * on a right or bottom edge outside, so polygons sharing an edge never share a pixel.  Where
 * polygons overlap, the smaller (by area) is drawn last and wins, as Ultralytics does; equal
 * areas keep label order (later on top).
 *
 * vt_dataset_open(&ds, VT_TASK_INSTANCE, path) opens a dataset for INSTANCE segmentation: each
 * object has a box, a class and its own outline.  The layouts are the polygon ones above, read
 * per object:
 *
 *  - YOLO-seg: one object a line, "class x1 y1 ... xn yn", with the problems above.  A
 *    detection line "class cx cy w h" is an object without an outline:
 *    VT_PROBLEM_POLYGON_POINTS with file and line, the object dropped.
 *  - COCO: one object per annotation.  Its `segmentation` is a list of polygons, each a part of
 *    that one object (a bad part is recorded and dropped, the others kept), or an RLE mask
 *    {"counts": [n0, n1, ...] or pycocotools' compressed string, "size": [height, width]} of
 *    the image's size, decoded and traced into polygon parts: one per 4-connected region, its
 *    outer boundary along pixel edges, so exact at the mask's resolution except that holes are
 *    filled.  A bad RLE (counts that do not add up to height x width, a bad character, another
 *    size) and an annotation without a `segmentation` (a bbox only) are
 *    VT_PROBLEM_BAD_ANNOTATION naming "annotations[i] (id N)", the object dropped; an RLE
 *    without a pixel is ZERO_SIZE.  `iscrowd` annotations are skipped, as Ultralytics' COCO
 *    converter skips them.
 *
 * Classes are the detection classes (no background, no shift; there is no `masks:` layout).
 * An object's box (vt_dataset_box) is the bounding box of all its parts (not COCO's `bbox`);
 * vt_dataset_num_polygons / vt_dataset_polygon list the parts of an image's objects in box
 * order, each with its object's class (>= 0 here).  vt_dataset_mask does not apply
 * (VT_ERR_UNSUPPORTED) and the ignore value is -1.  The policies, decode=1 and
 * vt_dataset_validate treat these problems as any other label problem. */

/* Number of polygons of image i (0 for an out-of-range index or a dataset without polygons). */
VT_API int vt_dataset_num_polygons(const vt_dataset *dataset, vt_split split, int i);

/* Polygon k of image i: its class (dataset class id, >= 1) into *cls, and its points as x, y
 * pairs normalised to 0..1 into xy, which fills per the buffer rule (see top): cap and *npts
 * count points (2 floats each).  cls and npts may be NULL.  VT_ERR_INVALID_ARGUMENT for an
 * index out of range. */
VT_API vt_status vt_dataset_polygon(const vt_dataset *dataset, vt_split split, int i, int k,
                                    int *cls, float *xy, int cap, int *npts);

/* The value of ignored pixels in masks (255 unless data.yaml says `ignore:`); -1 for a dataset
 * that is not a segmentation dataset. */
VT_API int vt_dataset_ignore_value(const vt_dataset *dataset);

/* Width and height of image i, read from the PNG / JPEG header (no decoding).  Errors:
 * VT_ERR_INVALID_ARGUMENT (index), VT_ERR_NOT_FOUND / VT_ERR_IO / VT_ERR_FORMAT for the file. */
VT_API vt_status vt_dataset_image_size(const vt_dataset *dataset, vt_split split, int i, int *w,
                                       int *h);

/* Write the class mask of image i into the caller's buffer `mask` (w*h bytes, row-major, one
 * class id per pixel; the library keeps no pointer to it).  w x h should be the image's own
 * size (vt_dataset_image_size): polygons are rasterised at that size from their normalised
 * points; a mask PNG must have exactly that size (VT_ERR_DATASET otherwise, naming both sizes),
 * and its values >= num_classes other than the ignore value are written as the ignore value.
 * Errors: VT_ERR_INVALID_ARGUMENT (NULL, index, w or h < 1), VT_ERR_UNSUPPORTED (not a
 * segmentation dataset), VT_ERR_NOT_FOUND / VT_ERR_IO / VT_ERR_FORMAT (mask file unreadable,
 * not a PNG, not 8-bit gray), VT_ERR_OUT_OF_MEMORY.  On failure the buffer's content is
 * unspecified.  Thread-safe on one dataset (the dataset is only read). */
VT_API vt_status vt_dataset_mask(const vt_dataset *dataset, vt_split split, int i,
                                 uint8_t *mask, int w, int h);

/* ---- dataset policies and validation ------------------------------------------------------ *
 *
 * vt_dataset_open_ex() opens a dataset as vt_dataset_open() does, with options (NULL or
 * space-separated key=value, the VT_OPT_DS_* options of vt_option; unknown keys:
 * VT_ERR_UNKNOWN_OPTION, bad values: VT_ERR_OPTION_VALUE):
 *   policy=drop  (default) a bad box or entry is dropped and the rest of its image kept: with
 *                no other option this is exactly vt_dataset_open().
 *   policy=skip  an image with any label problem is left out of its split altogether.
 *   policy=fail  the first recorded problem fails the call with VT_ERR_DATASET, the message
 *                naming file:line.  Every recorded problem counts, a missing `val` included.
 *   decode=0|1   (default 0) also decode every image; one that cannot be read or decoded, or is
 *                smaller than min_size, is recorded (VT_PROBLEM_IMAGE_UNREADABLE ..
 *                VT_PROBLEM_UNSUPPORTED_FORMAT) and left out (drop and skip alike: there is no
 *                annotation to drop), or fails the call (fail).
 *   min_size=10  (1..65535) the smallest width and height accepted by decode=1.
 *   workers=4    (0..64) decoding threads besides the caller's; records come out in the same
 *                order whatever the number.
 * Problems are read with vt_dataset_num_problems() / vt_dataset_problem().  For a
 * segmentation mask dataset decode=1 also decodes every mask: a bad one (VT_PROBLEM_BAD_MASK)
 * leaves its image out, class values out of range (VT_PROBLEM_CLASS_RANGE) count as label
 * problems (policy=skip leaves the image out, drop keeps it with those pixels ignored).  The
 * dataset's files are only read. */
VT_API vt_status vt_dataset_open_ex(vt_dataset **out, vt_task task, const char *path,
                                    const char *options);

typedef struct vt_report vt_report;

/* Per-split counts of a validation report (vt_report_count). */
typedef enum vt_count {
    VT_COUNT_IMAGES = 1,      /* image files the split lists (found on disk)                   */
    VT_COUNT_USABLE = 2,      /* of those, the images training would use under the policy      */
    VT_COUNT_CORRUPT = 3,     /* images with an image problem (unreadable, corrupt, truncated,
                                 unsupported format, bad mask): never usable; not those of
                                 VT_COUNT_SIZE                                                  */
    VT_COUNT_SKIPPED = 4,     /* images left out by policy=skip for a label problem            */
    VT_COUNT_BACKGROUNDS = 5, /* usable detection (or polygon segmentation) images without any
                                 box; 0 for segmentation mask datasets                         */
    VT_COUNT_INSTANCES = 6,   /* boxes (segmentation: polygons; none for masks) of the usable
                                 images (classification: usable images)                         */
    VT_COUNT_SIZE = 7         /* readable images left out for their size, smaller than min_size
                                 or over the decoder's limits (VT_PROBLEM_IMAGE_TOO_SMALL,
                                 VT_PROBLEM_IMAGE_TOO_LARGE): never usable.
                                 images = usable + corrupt + size + skipped.                    */
} vt_count;

/* Validate a dataset: open it (task and path as for vt_dataset_open; segmentation: see
 * "segmentation datasets"), decode every image (and every mask of a mask-layout segmentation
 * dataset, as decode=1 does; a bad mask counts as VT_COUNT_CORRUPT), and return a report of
 * every problem and summary counts.  Segmentation instances are polygons (none for masks).
 * options: NULL or space-separated key=value among policy=drop|skip|fail, min_size=10 and
 * workers=4, as for vt_dataset_open_ex (decoding is always on).  Validation finds the same
 * problems, with the same codes and messages, as vt_dataset_open_ex(..., "decode=1") with the
 * same options; the one difference is that a train split (or a COCO file) without usable
 * images is recorded (VT_PROBLEM_EMPTY_SPLIT) instead of failing the call.  Errors that leave
 * nothing to validate (no such
 * path, YAML/JSON syntax, no `train`) fail the call as vt_dataset_open does; with policy=fail
 * the first problem fails it with VT_ERR_DATASET ("file:line: ...").  On failure *out is NULL.
 * The records are ordered: problems of opening (in the order found), then image problems by
 * split (train, val, test) and image order.  The dataset's files are only read.  The report is
 * owned by the caller (vt_report_destroy). */
VT_API vt_status vt_dataset_validate(vt_report **out, vt_task task, const char *path,
                                     const char *options);
VT_API void vt_report_destroy(vt_report *report);

VT_API vt_task vt_report_task(const vt_report *report);
VT_API int vt_report_num_classes(const vt_report *report);
/* Class name i, or NULL when out of range.  Owned by the report. */
VT_API const char *vt_report_class_name(const vt_report *report, int i);
VT_API int vt_report_num_problems(const vt_report *report);
/* Problem k, as vt_dataset_problem(); strings owned by the report.  VT_ERR_INVALID_ARGUMENT
 * when k is out of range. */
VT_API vt_status vt_report_problem(const vt_report *report, int k, const char **file, int *line,
                                   int *code, const char **message);
/* A count of a split (see vt_count); 0 for a bad argument or an absent split. */
VT_API int64_t vt_report_count(const vt_report *report, vt_count what, vt_split split);
/* Boxes of class cls in the usable images of a split (classification: usable images of the
 * class); 0 for a bad argument. */
VT_API int64_t vt_report_class_instances(const vt_report *report, vt_split split, int cls);

/* The counts of vt_report_count for an opened dataset, so a caller that trains can say what
 * it uses: VT_COUNT_IMAGES (usable plus left out), VT_COUNT_USABLE (vt_dataset_num_images),
 * VT_COUNT_CORRUPT and VT_COUNT_SIZE (left out by decode=1: unreadable, and for their size),
 * VT_COUNT_SKIPPED (left out by policy=skip), VT_COUNT_BACKGROUNDS, VT_COUNT_INSTANCES.
 * Without decode=1 nothing is counted as corrupt (nor for its size).
 * 0 for a bad argument. */
VT_API int64_t vt_dataset_count(const vt_dataset *dataset, vt_count what, vt_split split);

/* ---- dataset tools -------------------------------------------------------------------------- *
 *
 * The tools read a dataset and write new files only into an output folder the caller names,
 * which must not exist or be empty (VT_ERR_INVALID_ARGUMENT otherwise; missing parents are
 * created).  Images and labels are never copied or changed, except by vt_dataset_clone().
 *
 * vt_dataset_split and vt_dataset_subset write YOLO list files and a data.yaml that points at
 * them: out_dir/train.txt, val.txt (test.txt when there is a test split) with one absolute
 * image path a line, and out_dir/data.yaml ("train: train.txt", "val: val.txt", "names: [...]").
 * Labels are found as for any data.yaml: beside the images, by the /images/ -> /labels/ rule.
 * So they need a YOLO (data.yaml) detection dataset: list files are not part of the
 * ImageFolder layout, and COCO labels live in the JSON; those give VT_ERR_UNSUPPORTED.  Only the
 * images of `ds` are listed: a dataset opened with policy=skip or decode=1 yields clean lists. */

/* Split the train images of `ds` into a new train and val: options "val=0.2 seed=0" (val
 * fraction 0 < val < 1, at least one image each side; VT_OPT_SPLIT_VAL, VT_OPT_SPLIT_SEED).  The images are shuffled with the seed
 * (same dataset and seed => same lists), the first round(val*n) go to val; each list keeps the
 * dataset's order.  The original val split is not used; a test split is listed as is. */
VT_API vt_status vt_dataset_split(const vt_dataset *ds, const char *out_dir, const char *options);

/* A deterministic subset of every split: options "fraction=F" (0 < F <= 1, round(F*n) images,
 * at least 1 of a non-empty split) or "count=N" (N >= 1: min(N, n) images of each split), and
 * "seed=0" (VT_OPT_SUBSET_*, VT_OPT_SPLIT_SEED).  The same seed picks the same images; each list keeps the dataset's order. */
VT_API vt_status vt_dataset_subset(const vt_dataset *ds, const char *out_dir,
                                   const char *options);

/* Copy the folder src_dir (a whole dataset: images, labels, data.yaml, ...) to dst_dir:
 * folders are created, regular files copied (each atomically), symbolic links followed; files
 * other than folders and regular files are skipped.  dst_dir must not exist or be empty, nor lie
 * inside src_dir.  Paths written inside the files are copied as they are: an absolute `path:`
 * in a data.yaml still names the original.  The source is only read. */
VT_API vt_status vt_dataset_clone(const char *src_dir, const char *dst_dir);

/* What vt_dataset_box_histogram measures, relative to the image size. */
typedef enum vt_box_measure {
    VT_BOX_WIDTH = 1,
    VT_BOX_HEIGHT = 2,
    VT_BOX_SQRT_AREA = 3 /* sqrt(w*h): the side of the square of the same area */
} vt_box_measure;

/* Instances per class of a split: counts[c] for c < vt_dataset_num_classes (boxes for
 * detection, images for classification).  counts fills per the buffer rule (see top), with n
 * its capacity and the class count its fixed size. */
VT_API vt_status vt_dataset_class_histogram(const vt_dataset *ds, vt_split split, int64_t *counts,
                                            int n);
/* Histogram of a box measure over the boxes of a split: nbins (1..10000) equal bins over 0..1,
 * the last one closed.  VT_ERR_UNSUPPORTED for a classification dataset. */
VT_API vt_status vt_dataset_box_histogram(const vt_dataset *ds, vt_split split,
                                          vt_box_measure measure, int64_t *counts, int nbins);
/* Write a PNG (atomically) of the label distribution: instances per class for each split and,
 * for detection, the histogram of box sizes (sqrt of the relative area, 20 bins). */
VT_API vt_status vt_dataset_plot_labels(const vt_dataset *ds, const char *png_path);

/* Write a synthetic dataset under `dir` (created; must not already hold a dataset) for tests,
 * demos and benchmarks.  `options` is NULL or space-separated key=value pairs (the
 * VT_OPT_SYNTH_* options of vt_option):
 *   classes=4 (2..8)  train=100  val=40  (images per class)  imgsz=32 (16..512)  seed=0
 * Classification: ImageFolder layout with PNG images of coloured shapes on noisy backgrounds,
 * one shape kind per class.
 * Detection (VT_TASK_DETECT): the YOLO layout dir/images/{train,val}, dir/labels/{train,val}
 * and dir/data.yaml, 0..max_objects shapes per image (about 10% empty) with exact boxes;
 * options classes=3 (3..8) train=200 val=50 (images) imgsz=160 (32..1024) seed=0
 * max_objects=6 (0..64).
 * Segmentation (VT_TASK_SEGMENT), same options, and the detection set's scenes for the same
 * options (where shapes overlap the larger is drawn first, so the overlap rule of
 * "segmentation datasets" holds in the pixels too): the YOLO-seg layout (dir/labels/ hold the exact outline of each shape as a
 * polygon: corners of the polygonal shapes, 32-gons for circles, a ring as one polygon of its
 * outer and inner 32-gons joined by a doubled bridge edge, which the even-odd rule cancels),
 * plus dir/masks/{train,val}/NNNNN.png: 8-bit class-id masks rasterised from the same polygons
 * (0 background, shape class k -> k+1), so that a data.yaml with `masks: masks` and names
 * [background, <the shape names>] opens the same labels pixel for pixel.  The data.yaml written
 * uses the polygons.  Thread-safe. */
VT_API vt_status vt_synth_generate(const char *dir, vt_task task, const char *options);

/* Write 8-bit pixels (channels 1, 3 or 4, rows `stride` bytes apart) as a PNG file, atomically
 * (a temporary file then a rename: the file is either the old one or the new one), e.g. the
 * masks of vt_model_segment_file.  Errors: VT_ERR_INVALID_ARGUMENT, VT_ERR_IO (with the path). */
VT_API vt_status vt_png_save(const char *path, const uint8_t *pixels, int width, int height,
                             int channels, size_t stride);

/* Decode a PNG or JPEG file (recognised by its content) into 8-bit RGB, 3 bytes a pixel, rows
 * of width * 3 bytes (gray expanded, alpha dropped, 16-bit reduced), as the models see it.  rgb
 * fills per the buffer rule (see top) with cap bytes; *width and *height get the image's size,
 * also on a size query (rgb NULL, cap 0), so the bytes needed are width * height * 3.
 * Errors: VT_ERR_INVALID_ARGUMENT, VT_ERR_IO, VT_ERR_FORMAT (with the path). */
VT_API vt_status vt_image_read(const char *path, uint8_t *rgb, size_t cap, int *width,
                               int *height);

/* ---- models ----------------------------------------------------------------------------- */

typedef struct vt_model vt_model;

/* Build a freshly initialised model.
 *   arch: "cls-n" | "cls-s" | "cls-m"   residual CNN classifiers of growing size
 *         "cnn-small" | "resnet18"      the yardstick CNN of the benchmarks, ResNet-18's layout
 *         "det-n" | "det-s" | "det-m"   anchor-free object detectors (VT_TASK_DETECT)
 *         "seg-n" | "seg-s" | "seg-m"   U-Net-style semantic segmenters (VT_TASK_SEGMENT)
 *   num_classes: >= 2 for classifiers, >= 1 for detectors; for segmenters the dataset's class
 *            count, background included.
 *   options: NULL or space-separated key=value pairs among channels=, imgsz=, dropout=, seed=
 *            (the weight initialisation seed, default 0).  imgsz defaults to 224 for
 *            classifiers, 640 for detectors, 512 for segmenters; detectors and segmenters need
 *            a multiple of 32 (VT_ERR_INVALID_ARGUMENT otherwise).
 * Weights are initialised deterministically from the seed.  The model's task (vt_model_task)
 * follows from arch; a trainer needs a dataset of the same task. */
VT_API vt_status vt_model_create(vt_model **out, const char *arch, int num_classes,
                                 const char *options);
VT_API void vt_model_destroy(vt_model *model);

/* Save weights and configuration to `path` (atomically: a temporary file, fsync, rename, so the
 * file on disk is always either the old or the new one); load them back into a new model.
 * Loading a truncated, corrupt, foreign or newer file fails with VT_ERR_CHECKPOINT. */
VT_API vt_status vt_model_save(vt_model *model, const char *path);
VT_API vt_status vt_model_load(vt_model **out, const char *path);

VT_API vt_task vt_model_task(const vt_model *model);
/* The architecture name given to vt_model_create ("cls-n"), owned by the model. */
VT_API const char *vt_model_arch(const vt_model *model);
VT_API int vt_model_num_classes(const vt_model *model);
/* Class names come from the dataset the model was trained on; NULL when unknown. */
VT_API const char *vt_model_class_name(const vt_model *model, int i);
VT_API int vt_model_channels(const vt_model *model);
VT_API int vt_model_imgsz(const vt_model *model);
/* Number of trainable parameters. */
VT_API uint64_t vt_model_num_params(const vt_model *model);
/* Forward-pass floating-point operations for one image at `imgsz` (multiply and add counted as
 * two), computed from the model's layer list.  0 on a bad argument. */
VT_API double vt_model_flops(const vt_model *model, int imgsz);

/* Classify one image.  Writes the softmax probability of every class into scores, which fills
 * per the buffer rule (see top), with n its capacity and vt_model_num_classes() its fixed size.
 * _file decodes a PNG or JPEG; _pixels takes 8-bit interleaved pixels (channels 1, 3 or 4,
 * rows `stride` bytes apart).  The image is resized to the model's image size. */
VT_API vt_status vt_model_predict_file(vt_model *model, const char *path, float *scores, int n);
VT_API vt_status vt_model_predict_pixels(vt_model *model, const uint8_t *pixels, int width,
                                         int height, int channels, size_t stride, float *scores,
                                         int n);

/* Detect objects in one image with a detection model ("det-..."; VT_ERR_UNSUPPORTED for other
 * tasks).  The image is letterboxed to fit the model's image size (aspect ratio kept, gray
 * padding) on the smallest canvas whose sides are multiples of the network's stride (32), as
 * Ultralytics' predictor does: at imgsz 640 a 4:3 image runs on 640 x 480, a square one on 640
 * x 640 (the same for vt_model_segment_* and vt_model_instances_*); detections
 * with a score >= conf survive class-aware NMS at IoU threshold `iou`, at most max_det of them
 * (<= 0: 300), best score first.  Detection k is classes[k], scores[k] (0..1) and the corners
 * boxes[4k..4k+3] = x0, y0, x1, y1 in the image's own pixels.  Typical values: conf 0.25,
 * iou 0.7.  The three arrays fill as one buffer per the buffer rule (see top): cap and *count
 * count detections (count is required), the buffer is NULL unless all three arrays are given,
 * and a size query runs the model as a fill does.  _file decodes a PNG or JPEG; _pixels takes
 * 8-bit interleaved pixels like vt_model_predict_pixels. */
VT_API vt_status vt_model_detect_file(vt_model *model, const char *path, float conf, float iou,
                                      int max_det, int *classes, float *scores, float *boxes,
                                      int cap, int *count);
VT_API vt_status vt_model_detect_pixels(vt_model *model, const uint8_t *pixels, int width,
                                        int height, int channels, size_t stride, float conf,
                                        float iou, int max_det, int *classes, float *scores,
                                        float *boxes, int cap, int *count);

/* Instance segmentation ("iseg-..."; VT_ERR_UNSUPPORTED for other tasks): the objects as
 * vt_model_detect_* gives them (classes, scores, boxes, the same conf, iou and max_det), and
 * each one's mask: plane k of masks (width x height bytes of the image's own size, row-major,
 * cap planes) is 1 where object k is, 0 elsewhere.  The four arrays fill as one buffer per the
 * buffer rule (see top): cap and *count count objects, the buffer is NULL unless all four are
 * given.  _file decodes a PNG or JPEG and gives its size in *width, *height (each may be NULL)
 * so that a size query tells how large the masks are; _pixels takes 8-bit interleaved pixels
 * like vt_model_predict_pixels. */
VT_API vt_status vt_model_instances_file(vt_model *model, const char *path, float conf,
                                         float iou, int max_det, int *width, int *height,
                                         int *classes, float *scores, float *boxes,
                                         uint8_t *masks, int cap, int *count);
VT_API vt_status vt_model_instances_pixels(vt_model *model, const uint8_t *pixels, int width,
                                           int height, int channels, size_t stride, float conf,
                                           float iou, int max_det, int *classes, float *scores,
                                           float *boxes, uint8_t *masks, int cap, int *count);

/* Segment one image with a segmentation model ("seg-..."; VT_ERR_UNSUPPORTED for other tasks):
 * the class id of every pixel of the image at its own size, row-major, one byte a pixel.  The
 * image is letterboxed as vt_model_detect_* does; each pixel takes the best class of the
 * network's output pixel it falls on.  _file: mask fills per the buffer rule (see top), cap in
 * bytes; its out-size is *width x *height (both required), the image's size, read from the
 * file without running the model on a size query.  _pixels: mask holds width * height bytes. */
VT_API vt_status vt_model_segment_file(vt_model *model, const char *path, uint8_t *mask,
                                       size_t cap, int *width, int *height);
VT_API vt_status vt_model_segment_pixels(vt_model *model, const uint8_t *pixels, int width,
                                         int height, int channels, size_t stride,
                                         uint8_t *mask);
VT_API const char *vt_model_last_error(const vt_model *model);

/* The shape of one image's output of vt_model_forward (and of the exported ONNX graph without
 * NMS): classifiers (num_classes, 1, 1); detectors (4 + num_classes, imgsz / 8, imgsz / 8);
 * segmenters (num_classes, imgsz, imgsz).  VT_ERR_INVALID_ARGUMENT on NULL. */
VT_API vt_status vt_model_output_shape(const vt_model *model, int *c, int *h, int *w);

/* Run the inference network (batch norm with its running statistics, no dropout) on n images
 * the caller has prepared: input holds n x channels x imgsz x imgsz floats (NCHW), normally
 * 8-bit pixels / 255 after the resize or letterbox the predict functions do.  Writes n images
 * of vt_model_output_shape() into output, which fills per the buffer rule (see top) with cap
 * floats and n x c x h x w its fixed size: classifiers the softmax probabilities (as
 * vt_model_predict_*), detectors the raw head (per cell the log distances ll, lt, lr, lb of
 * the box's edges from the cell's centre and one logit per class; see docs/onnx.md), segmenters the per-pixel class logits.  These are exactly the
 * outputs of the model exported with vt_model_export (no NMS), which is how the export is
 * checked.  The images run in batches of up to 16 (fewer where a batch's activations would
 * pass 256 MiB; the model then keeps that memory until it is destroyed or
 * vt_model_set_threads changes its predictor): the outputs are those of one image at a time
 * up to float rounding, as a batch may take other convolution kernels.  Buffers are the
 * caller's; same threading rules as the predict functions. */
VT_API vt_status vt_model_forward(vt_model *model, const float *input, int n, float *output,
                                  size_t cap);

/* The CPU threads a model's predictions run on (vt_model_predict_*, _detect_*, _segment_*,
 * vt_model_forward): 0, the default, is every online processor, as training takes; 1 runs them
 * on the calling thread alone (say, for an application that runs a model in each of its own
 * threads).  The results are the same up to float rounding whatever the count.  Takes effect
 * at the next prediction; VT_ERR_INVALID_ARGUMENT outside 0..256. */
VT_API vt_status vt_model_set_threads(vt_model *model, int threads);

/* ---- transfer learning ------------------------------------------------------------------- */

/* A model's tensors: each convolution's weight (and bias), each linear layer's weight and bias,
 * each batch norm's scale, shift, running mean and running variance.
 *
 * Copy into dst every tensor of src whose layer matches dst's at the same place of the layer
 * list (same kind and shape); dst's other tensors keep their values (a fresh model's: the
 * class-dependent layers when the class counts differ).  src and dst must have the same input
 * channel count and the same architecture, or architectures sharing a backbone (resnet18,
 * det-r18 and seg-r18 share resnet18's; det-* and seg-* of one size share their encoder): then
 * only backbone layers transfer.  *transferred and *total (each may be NULL) get the count of
 * tensors copied and dst's tensor count.  Errors: VT_ERR_INVALID_ARGUMENT (NULL, another
 * architecture or channel count: the message names both).  dst's class names are kept. */
VT_API vt_status vt_model_transfer(vt_model *dst, const vt_model *src, int *transferred,
                                   int *total);

/* Re-create the model for other classes: num_classes, and names (NULL, or num_classes strings,
 * copied).  When the class count or the names differ (both models' names known and not
 * equal), the model becomes a fresh one of the same architecture, image size and seed with
 * every matching tensor transferred (vt_model_transfer): the class-dependent layers (the
 * classifier, a detector's class convolution with its prior bias, a segmenter's logits) start
 * fresh.  Otherwise only the names are set and every tensor is kept (*transferred = *total).
 * *transferred, *total: as vt_model_transfer.  Not while a trainer created on the model is
 * running; a trainer created on it before picks up the new layers only if created again. */
VT_API vt_status vt_model_set_classes(vt_model *model, int num_classes,
                                      const char *const *names, int *transferred, int *total);

/* The model's layer list, the one VT_OPT_FREEZE counts in: layer i's kind ("input", "conv",
 * "bn", "act", "maxpool", "avgpool", "gap", "linear", "dropout", "add", "concat", "upsample",
 * "flatcat"; static strings), its output shape per image at the model's image size, and its
 * trainable parameter count.  Any output pointer may be NULL.  VT_ERR_INVALID_ARGUMENT for a
 * bad index. */
VT_API int vt_model_num_layers(const vt_model *model);
VT_API vt_status vt_model_layer(const vt_model *model, int index, const char **kind, int *c,
                                int *h, int *w, uint64_t *params);
/* Layers 0..N-1 are the backbone (the feature extractor before the neck or head): what
 * freeze=backbone freezes and what transfers between architectures sharing it. */
VT_API int vt_model_backbone_layers(const vt_model *model);

/* Read a model from an ONNX file: a new `arch` model (only "resnet18" so far: torchvision's
 * resnet18 layout) whose weights are the graph's initializers, mapped to the layers by graph
 * position: each Conv to a convolution, each BatchNormalization to a batch norm with its
 * running statistics, the final Gemm to the linear layer (its output count is the model's class
 * count).  A graph exported in eval mode (each batch norm folded into the convolution before
 * it: a Conv with a bias and no BatchNormalization) imports exactly: the batch norm becomes the
 * identity plus the bias (running mean 0, variance 1 - eps), so the model computes what the
 * graph does; a graph with BatchNormalization nodes (TrainingMode.PRESERVE) imports them.
 * options: NULL or space-separated imgsz=N (the model's image size, default 224), and an input
 * normalisation to fold in: mean=R,G,B std=R,G,B (comma-separated, one value per input channel
 * of the first Conv, 1 for a gray graph; std > 0; default none: mean 0, std 1) or
 * normalize=imagenet (torchvision's mean 0.485,0.456,0.406, std 0.229,0.224,0.225) |
 * normalize=none.  The graph then is taken to compute on (x - mean) / std, and the model
 * computes that on the library's x = pixels / 255: the first convolution's weight is divided by
 * std per input channel and sum(W / std * mean) added to the running mean of the batch norm
 * after it (exact in eval and training mode).  Exact except where the first convolution's zero
 * padding reaches (its outer 1-2 output rows and columns in resnet18): the graph pads the
 * normalised input with 0 (pixels at mean), the model pads pixels with 0; measured on random
 * images, max logit difference ~0.12 at 224 px (~0.3..0.6 at 64 px) against 7..9 without the
 * fold, and ~5e-6 against the graph padded like the model (docs/onnx.md).
 * Errors: VT_ERR_NOT_FOUND / VT_ERR_IO (the path), VT_ERR_FORMAT (not an ONNX model, external
 * data), VT_ERR_INVALID_ARGUMENT (an arch without an importer; a graph that does not match:
 * the message names the first ONNX node that differs and the layer it was compared with),
 * VT_ERR_UNKNOWN_OPTION, VT_ERR_OPTION_VALUE (a bad value, naming the key; a mean/std count
 * that is not the graph's channel count; normalize= with mean=/std=; normalize=imagenet of a
 * gray graph), VT_ERR_UNSUPPORTED (a build without protobuf-c), VT_ERR_OUT_OF_MEMORY. */
VT_API vt_status vt_model_import_onnx(vt_model **out, const char *path, const char *arch,
                                      const char *options);

/* ---- export ------------------------------------------------------------------------------ */

typedef enum vt_export_format {
    VT_EXPORT_ONNX = 1 /* ONNX (protobuf), opset 13..21 */
} vt_export_format;

/* Write the model's inference graph to `path` in another runtime's format, atomically (the
 * file on disk is the old one or the complete new one).  ONNX: batch norm folded into the
 * convolutions; input "images", float32 NCHW of the model's channels and imgsz, values in
 * [0, 1] as vt_model_forward takes them (resize or letterbox is the caller's); outputs as
 * vt_model_forward: "probs" [N, num_classes], "head" [N, 4 + num_classes, imgsz/8, imgsz/8],
 * "logits" [N, num_classes, imgsz, imgsz]; instance segmenters add "coefs" [N, k, imgsz/8,
 * imgsz/8] (k mask coefficients per anchor of the head) and "protos" [N, k, imgsz/4, imgsz/4].
 * The contract is also written into the file's metadata_props (docs/onnx.md).  options: NULL
 * or space-separated key=value (VT_OPT_EXPORT_*) among
 *   opset=13..21 (default 17)   batch=N (1..65536, default 1) | dynamic
 *   nms=0|1 (detectors and instance segmenters; 1: decoded, NMS'd detections "boxes" [K, 4]
 *            x0 y0 x1 y1 in input pixels, "scores" [K], "classes" [K] int64, best first, as
 *            vt_model_detect_*, and for instance segmenters "coefs" [K, k] and "protos";
 *            needs batch=1)
 *   conf=0.25 iou=0.7 max_det=300 (with nms=1, as vt_model_detect_*)   half=0 (fp32 only)
 *   fold=1 (0: batch norms as BatchNormalization nodes with their running statistics)
 * Errors: VT_ERR_INVALID_ARGUMENT (NULL, bad format), VT_ERR_UNKNOWN_OPTION,
 * VT_ERR_OPTION_VALUE, VT_ERR_UNSUPPORTED (a build without protobuf-c, half=1, nms=1 on a
 * model without a detection head or with batch != 1), VT_ERR_NOT_FOUND / VT_ERR_IO (with the path),
 * VT_ERR_OUT_OF_MEMORY.  The message is in vt_model_last_error(). */
VT_API vt_status vt_model_export(vt_model *model, const char *path, vt_export_format format,
                                 const char *options);

/* ---- training ---------------------------------------------------------------------------- */

typedef struct vt_trainer vt_trainer;
typedef struct vt_progress vt_progress;

typedef enum vt_metric {
    VT_METRIC_LOSS = 1,         /* mean training loss of the epoch (so far)                 */
    VT_METRIC_VAL_LOSS = 2,     /* mean validation loss                                      */
    VT_METRIC_TOP1 = 3,         /* validation top-1 accuracy, 0..1                           */
    VT_METRIC_TOP5 = 4,         /* validation top-5 accuracy, 0..1                           */
    VT_METRIC_LR = 5,           /* learning rate of the last step                            */
    VT_METRIC_IMAGES_PER_SEC = 6, /* training throughput of the epoch (so far)               */
    VT_METRIC_EPOCH_SECONDS = 7, /* wall time of the epoch (so far), validation excluded     */
    VT_METRIC_ETA_SECONDS = 8,  /* estimated seconds left: mean step time of this run x steps
                                   remaining + last validation time x validations remaining  */
    VT_METRIC_COST_USD = 9,     /* training hours so far (all sessions of the run) x price     */
    VT_METRIC_DATA_WAIT_SECONDS = 10, /* seconds of the epoch (so far) spent waiting for the
                                   loader to deliver batches: with prefetch > 0 only the time
                                   blocked on a batch not ready yet (0 when the loader keeps
                                   up); with prefetch=0 the whole loading time               */
    VT_METRIC_BEST_FITNESS = 11, /* best fitness so far: validation top-1, or minus the mean
                                   training loss when there is no validation                  */
    VT_METRIC_FITNESS = 12,     /* fitness of the last completed epoch (same definition)       */
    VT_METRIC_DEVICE_MEMORY_BYTES = 13, /* device memory held by the trainer (GPU only)        */
    /* Detection (validation, COCO-style; see "detection" below): */
    VT_METRIC_PRECISION = 14,   /* mean over classes, at the confidence maximising mean F1     */
    VT_METRIC_RECALL = 15,      /* same threshold                                              */
    VT_METRIC_MAP50 = 16,       /* mean AP at IoU 0.5                                          */
    VT_METRIC_MAP50_95 = 17,    /* mean AP over IoU 0.50:0.05:0.95 (the detection fitness)     */
    /* Segmentation (validation pixels, `ignore` pixels and letterbox padding excluded): */
    VT_METRIC_MIOU = 18,        /* mean over classes of TP / (TP + FP + FN) (the fitness)      */
    VT_METRIC_PIXEL_ACC = 19,   /* correctly classified pixels / pixels                        */
    VT_METRIC_F1 = 20,          /* detection: mean F1 over classes at the same threshold as P, R */
    /* The training GPU as NVML reports it (sampled at most once a second while training;
     * absent on the CPU and where NVML, libnvidia-ml.so.1, cannot be loaded): */
    VT_METRIC_GPU_UTIL = 21,    /* percent of the last sample period a kernel ran, 0..100      */
    VT_METRIC_GPU_MEMORY_USED_BYTES = 22, /* device memory in use by every process             */
    VT_METRIC_GPU_MEMORY_TOTAL_BYTES = 23,
    VT_METRIC_GPU_POWER_W = 24, /* board power draw, watts                                     */
    VT_METRIC_GPU_TEMP_C = 25,  /* GPU die temperature, degrees Celsius                        */
    VT_METRIC_TENSORS_TRANSFERRED = 26, /* the run started from another model's weights (a model
                                     with other classes, or VT_OPT_PRETRAINED): the tensors
                                     taken from it (vt_model_transfer) ...                      */
    VT_METRIC_TENSORS_TOTAL = 27, /* ... out of the model's tensors                              */
    /* instance segmentation: the box metrics are PRECISION .. MAP50_95 and F1, these the masks'
     * (COCO mask IoU), at the confidence maximising the masks' mean F1 */
    VT_METRIC_MASK_PRECISION = 28,
    VT_METRIC_MASK_RECALL = 29,
    VT_METRIC_MASK_MAP50 = 30,
    VT_METRIC_MASK_MAP50_95 = 31 /* the instance segmentation fitness                       */
} vt_metric;

/* ---- tasks, as the library describes them ------------------------------------------------
 * Everything a program shows about a task (its name, models, metrics) can come from here, so
 * a task a newer library adds shows up without changes.  Strings are static.  Thread-safe. */

/* The tasks this library trains, in order: vt_task_next(0) is the first, 0 after the last. */
VT_API vt_task vt_task_next(vt_task prev);
/* "classify" | "detect" | "segment" | "instance" (the run folder under a project); NULL for a
 * value that is not a task. */
VT_API const char *vt_task_name(vt_task task);
/* "classification" | "detection" | "segmentation" | "instance segmentation"; NULL as above. */
VT_API const char *vt_task_title(vt_task task);
/* The task of a name or title (case-sensitive), 0 when none. */
VT_API vt_task vt_task_parse(const char *name);
/* The model names of a task start with its prefix ("cls-", "det-", "seg-", "iseg-"); its
 * default model ("cls-n", ...).  NULL as above. */
VT_API const char *vt_task_model_prefix(vt_task task);
VT_API const char *vt_task_default_model(vt_task task);
/* The task of an architecture name of vt_model_create ("det-s" -> VT_TASK_DETECT; the
 * classifiers without the prefix, "cnn-small" and "resnet18", -> VT_TASK_CLASSIFY); 0 when
 * the name is not a known model. */
VT_API vt_task vt_arch_task(const char *arch);
/* The known architecture names, i = 0, 1, ... (NULL past the last). */
VT_API const char *vt_arch_name(int i);
/* The validation metrics a task reports, in the order of its results.csv columns: the count;
 * out (NULL, or cap entries) gets the first min(count, cap).  0 for an unknown task. */
VT_API int vt_task_metrics(vt_task task, vt_metric *out, int cap);
/* The metric a run keeps the best checkpoint by (top1, mAP50-95, mIoU, mask mAP50-95). */
VT_API vt_metric vt_task_fitness(vt_task task);
/* Whether a task's training reads the trainer option `key` (vt_trainer_create's keys): 1 it
 * does, 0 the task ignores it (e.g. mosaic= for classification, whose images are not scenes;
 * erasing= for detection), -1 for an unknown task or a key that is not a trainer option. */
VT_API int vt_task_option_applies(vt_task task, const char *key);

/* What a task's datasets label (vt_task_label_kinds: an OR of these). */
enum {
    VT_LABELS_IMAGE_CLASS = 1, /* one class per image (an ImageFolder)                      */
    VT_LABELS_BOXES = 2,       /* objects with boxes (a YOLO data.yaml, a COCO JSON)        */
    VT_LABELS_CLASS_MAP = 4,   /* a class per pixel (semantic: polygons or mask PNGs)        */
    VT_LABELS_INSTANCES = 8    /* each object its own outline (polygons, COCO RLE)           */
};
/* The label kinds of a task's datasets; 0 for an unknown task. */
VT_API unsigned vt_task_label_kinds(vt_task task);
/* The task a dataset's layout suggests when none is named: the first task (vt_task_next
 * order) labelling boxes only for a .yaml / .yml / .json file or a folder holding a
 * data.yaml, else the first labelling one class per image (an ImageFolder).  Looks at the
 * path's name and that one file only: it does not open the dataset. */
VT_API vt_task vt_dataset_guess_task(const char *path);
/* A metric's key ("loss", "top1", "map50_95", "mask_map50_95", ...: lower case, the Python
 * metrics dictionary's keys) and its label in tables ("mAP50-95", "mask mAP50-95"); NULL for
 * a value that is not a metric. */
VT_API const char *vt_metric_name(vt_metric metric);
VT_API const char *vt_metric_label(vt_metric metric);

typedef enum vt_event {
    VT_EVENT_BATCH_END = 1,
    VT_EVENT_EPOCH_END = 2,       /* after validation and after the epoch's checkpoints       */
    VT_EVENT_CHECKPOINT_SAVED = 3 /* a checkpoint file was written: vt_progress_checkpoint_path */
} vt_event;

/* Why the last vt_trainer_run() stopped (vt_trainer_stop_reason). */
typedef enum vt_stop_reason {
    VT_STOP_NONE = 0,             /* no run yet, or it failed                                  */
    VT_STOP_COMPLETED = 1,        /* all epochs done                                           */
    VT_STOP_EARLY = 2,            /* patience: no fitness improvement for `patience` epochs    */
    VT_STOP_TIME = 3,             /* the time budget would have been exceeded                  */
    VT_STOP_CANCELLED = 4         /* vt_trainer_cancel() or a callback                         */
} vt_stop_reason;

/* Progress callback: called from the thread running vt_trainer_run().  The progress handle is
 * read-only and valid during the call only.  Return 0 to go on, non-zero to cancel the run
 * (vt_trainer_run() then returns VT_ERR_CANCELLED).  After a cancel (by a callback or
 * vt_trainer_cancel) no further callback is made in that run, not even for the final save of
 * weights/last.vtm.  New event values may be added: ignore the ones you do not know. */
typedef int (*vt_progress_fn)(void *user, vt_event event, const vt_progress *progress);

VT_API int vt_progress_epoch(const vt_progress *p);      /* 1-based */
VT_API int vt_progress_epochs(const vt_progress *p);
VT_API int vt_progress_batch(const vt_progress *p);      /* 1-based within the epoch */
VT_API int vt_progress_batches(const vt_progress *p);    /* batches per epoch */
VT_API int64_t vt_progress_iteration(const vt_progress *p); /* optimiser steps so far */
/* VT_ERR_NOT_FOUND when the metric is not available at this point (e.g. TOP1 before the
 * first validation). */
VT_API vt_status vt_progress_metric(const vt_progress *p, vt_metric metric, double *value);
/* During VT_EVENT_CHECKPOINT_SAVED: the path of the file just written; otherwise NULL.
 * Owned by the trainer, valid during the callback only. */
VT_API const char *vt_progress_checkpoint_path(const vt_progress *p);

/* Create a trainer for `model` on `dataset` (dataset may be NULL when only vt_trainer_step() is
 * used).  Both are borrowed.  The dataset's task must be the model's.  When the dataset's
 * classes differ from the model's (in count, or in names where both have names), the model is
 * re-created for them first (vt_model_set_classes: every matching tensor transferred, the
 * class-dependent layers fresh), so fine-tuning to new classes is this call; the run reports
 * it (VT_METRIC_TENSORS_TRANSFERRED, an info line in the log, args.yaml).  Errors:
 * VT_ERR_INVALID_ARGUMENT (NULL, another task), VT_ERR_OUT_OF_MEMORY. */
VT_API vt_status vt_trainer_create(vt_trainer **out, vt_model *model, vt_dataset *dataset);
VT_API void vt_trainer_destroy(vt_trainer *trainer);

/* Options: see vt_option.  Settings take effect at the next vt_trainer_run()/step. */
VT_API vt_status vt_trainer_set_int(vt_trainer *trainer, vt_option option, int64_t value);
VT_API vt_status vt_trainer_set_float(vt_trainer *trainer, vt_option option, double value);
VT_API vt_status vt_trainer_set_string(vt_trainer *trainer, vt_option option, const char *value);
/* "key=value", e.g. "epochs=20" or "optimizer=adamw". */
VT_API vt_status vt_trainer_set(vt_trainer *trainer, const char *key_value);
/* Current value of a numeric option (int options are returned exactly as double).  For imgsz
 * and lr0, whose default 0 means "derived", the value a run would use is returned. */
VT_API vt_status vt_trainer_get_float(const vt_trainer *trainer, vt_option option, double *value);

VT_API void vt_trainer_set_log(vt_trainer *trainer, vt_log_fn fn, void *user,
                               vt_log_level max_level);
VT_API void vt_trainer_set_progress(vt_trainer *trainer, vt_progress_fn fn, void *user);

/* Train for the configured epochs: shuffled batches (seeded), LR warm-up then cosine/linear
 * decay, validation after each epoch when the dataset has a val split.  Returns VT_OK,
 * VT_ERR_CANCELLED (cancel or a callback), or an error (an image that fails to decode is
 * skipped with a warning in the log; a batch left with fewer than 2 readable images is not
 * trained, and the run fails only if no batch of an epoch is).  Batches need 2 images or more
 * (batch normalization; a trailing batch of one image is dropped): batch=1 fails with
 * VT_ERR_OPTION_VALUE.  The model keeps the trained weights (the EMA weights when ema=1) and the dataset's class
 * names.
 *
 * Run folder (save=1, the default): <project>/<task>/<name>/ (task "classify", ...) holding
 *   args.yaml            every trainer option and the value the run used (imgsz, lr0:
 *                        the derived value when 0), numbers in their shortest exact form
 *   weights/last.vtm     checkpoint after every epoch, and where a cancel or the time budget
 *                        stopped the run
 *   weights/best.vtm     checkpoint of the epoch with the best fitness
 *   weights/epochN.vtm   every save_period epochs
 *   results.csv          one row per epoch; results.png, confusion_matrix.png and the task's
 *                        curves and validation mosaics (plots=1; docs/training-runs.md)
 *   events.out.tfevents.<time>.<host>   TensorBoard log of the session (tensorboard=1): every
 *                        results.csv column each epoch, loss, img/s, data-wait share and memory
 *                        every 10 steps, the plots at the end (README, "TensorBoard")
 * Checkpoints are complete (weights, optimizer moments, schedule position, epoch, iteration,
 * best fitness, EMA, results history, options, a hash of the dataset's file list), written
 * atomically, and load with vt_model_load() too.  The format: lib/train/CHECKPOINT_FORMAT.md.
 *
 * Resume (resume=PATH): the model's weights and the trainer's state are replaced by the
 * checkpoint's (the model must be of the same architecture, classes, channels and image size,
 * and the dataset's file list must hash the same, else VT_ERR_CHECKPOINT / VT_ERR_DATASET).
 * Options saved in the checkpoint are applied unless set explicitly on this trainer, so a
 * raised `epochs` extends a finished run; left alone, the run continues exactly where it
 * stopped (bit for bit on the CPU), writing into the checkpoint's run folder when the file
 * lies in <run>/weights/.  A checkpoint written mid-epoch (cancel, time budget) holds the
 * position after the last completed batch; one written at an epoch end, the end of the epoch.
 *
 * Stopping: patience=N stops after N epochs without a better fitness (VT_OK, reason
 * VT_STOP_EARLY); time=H stops before the next batch or validation would exceed H hours of
 * this call, after saving last (VT_OK, VT_STOP_TIME); vt_trainer_cancel() or a callback
 * returning non-zero stops after the current batch, saves last and returns VT_ERR_CANCELLED
 * (VT_STOP_CANCELLED).  vt_trainer_stop_reason() tells which. */
VT_API vt_status vt_trainer_run(vt_trainer *trainer);

/* The run arguments a training checkpoint (weights/last.vtm, best.vtm) holds, as "key=value\n"
 * lines, so that a caller can resume from the file alone: first data (the dataset's absolute
 * path; absent in checkpoints written before it was recorded), task ("classify", "detect",
 * "segment"), model (the architecture), num_classes, channels, imgsz and dropout of the model,
 * then every trainer option saved in the checkpoint except imgsz and resume.  buf fills with
 * the NUL-terminated text per the buffer rule (see top), cap and *len in bytes with the NUL.
 * VT_ERR_CHECKPOINT for a file that is no training checkpoint (a vt_model_save file). */
VT_API vt_status vt_checkpoint_args(const char *path, char *buf, size_t cap, size_t *len);

/* The run folder of the current or last vt_trainer_run() ("" before one, or with save=0).
 * Owned by the trainer, valid until the next run or its destruction. */
VT_API const char *vt_trainer_run_dir(const vt_trainer *trainer);

/* Why the last vt_trainer_run() stopped (VT_STOP_NONE before a run or after a failure). */
VT_API vt_stop_reason vt_trainer_stop_reason(const vt_trainer *trainer);

/* This process's rank among the processes the trainer's runs train with, and (world, may be
 * NULL) how many there are: those of the last vt_trainer_run(), before one those it will use
 * (the launcher's, e.g. mpirun's, unless dist=off); 0 of 1 for a process training alone.  Only
 * rank 0 writes a run folder and calls the progress callback, so a program run as several
 * ranks prints and saves its own files on rank 0 only.  Reads the environment; starts
 * nothing. */
VT_API int vt_trainer_rank(const vt_trainer *trainer, int *world);

/* One optimisation step on caller data: `images` is batch x channels x imgsz x imgsz float32
 * NCHW (already normalised, typically pixel/255), `labels` holds class ids.  Uses the
 * learning rate lr0 (no schedule).  The mean loss of the batch is stored in *loss if non-NULL.
 * The updated weights stay on the trainer's device; the model's copy is refreshed when it is
 * next saved or used for prediction, or when the trainer is destroyed.  Classifiers only:
 * VT_ERR_UNSUPPORTED for detection and segmentation models (their labels are boxes and masks;
 * train them with vt_trainer_run). */
VT_API vt_status vt_trainer_step(vt_trainer *trainer, const float *images, const int32_t *labels,
                                 int batch, float *loss);

/* Evaluate the model on a split of the dataset; results through vt_trainer_metric(). */
VT_API vt_status vt_trainer_validate(vt_trainer *trainer, vt_split split);

/* The latest value of a metric (after run/validate/step). VT_ERR_NOT_FOUND if none yet. */
VT_API vt_status vt_trainer_metric(const vt_trainer *trainer, vt_metric metric, double *value);

/* Per-class results of the last detection validation (vt_trainer_validate or a run's last
 * epoch): AP at IoU 0.5 and over 0.50:0.05:0.95, and the number of ground-truth boxes of class
 * `cls` (AP is -1 for a class without ground truth).  Any out-pointer may be NULL.
 * VT_ERR_NOT_FOUND before any detection validation, VT_ERR_INVALID_ARGUMENT for a class out of
 * range. */
VT_API vt_status vt_trainer_class_ap(const vt_trainer *trainer, int cls, double *ap50,
                                     double *ap50_95, int64_t *num_gt);

/* Ask a running vt_trainer_run() to stop after the current batch.  Callable from any thread and
 * from a signal handler (it only stores to a lock-free atomic flag).  The run then saves
 * weights/last.vtm at the position reached (save=1) and returns VT_ERR_CANCELLED.  A cancel
 * before vt_trainer_run() starts is forgotten when it starts. */
VT_API void vt_trainer_cancel(vt_trainer *trainer);

VT_API const char *vt_trainer_last_error(const vt_trainer *trainer);

/* ---- GPU catalog ------------------------------------------------------------------------- */

typedef struct vt_catalog vt_catalog;

/* Numeric fields of a catalog entry. */
typedef enum vt_gpu_field {
    VT_GPU_MEMORY_GB = 1,      /* device memory, GB (1e9 bytes)                              */
    VT_GPU_BANDWIDTH_GBS = 2,  /* memory bandwidth, GB/s                                      */
    VT_GPU_FP32_TFLOPS = 3,    /* dense fp32 peak                                             */
    VT_GPU_TF32_TFLOPS = 4,    /* dense TF32 tensor-core peak (absent before Ampere)          */
    VT_GPU_BF16_TFLOPS = 5,    /* dense bf16/fp16 tensor-core peak                            */
    VT_GPU_PRICE_USD_H = 6,    /* hourly price of one GPU                                     */
    VT_GPU_TDP_W = 7,
    VT_GPU_COMPUTE_CAPABILITY = 8 /* e.g. 9.0                                                 */
} vt_gpu_field;

/* A new catalog holding the built-in GPUs (at least the 24 of the shared catalog, with the
 * hourly prices of the Ultralytics Platform list).  The catalog is a private copy: changing
 * it affects no other handle.  On failure *out is NULL and vt_last_error() has the message. */
VT_API vt_status vt_catalog_create(vt_catalog **out);
VT_API void vt_catalog_destroy(vt_catalog *catalog);

/* Merge a CSV file into the catalog: prices change, and users rent GPUs we do not list.
 * Format: optional '#' comment lines and blank lines, one header line naming the columns, then
 * one GPU per line.  Columns (any order, any subset, but "name" is required):
 *   name,arch,cc,memory_gb,bandwidth_gbs,fp32_tflops,tf32_tflops,bf16_tflops,tdp_w,
 *   price_usd_h,tier
 * A row whose name matches an entry (case, spaces, '-' and '_' ignored: "h100-sxm" is
 * "H100 SXM") replaces the fields given and keeps blank ones; a new name adds a GPU and needs
 * memory_gb, bandwidth_gbs and fp32_tflops.  So "name,price_usd_h" + "H100 SXM,2.10" is a price
 * override.  Fields may be double-quoted.  The file is applied all or nothing.
 * Errors: VT_ERR_NOT_FOUND / VT_ERR_IO (cannot open/read), VT_ERR_FORMAT with "path:line: ..."
 * (unknown or duplicate column, missing name column, wrong field count, bad or negative number,
 * new GPU without its required fields).  Thread: one thread per catalog. */
VT_API vt_status vt_catalog_load_csv(vt_catalog *catalog, const char *path);

/* Set one GPU's hourly price (>= 0, finite); VT_ERR_NOT_FOUND for an unknown name (the message
 * lists the known names). */
VT_API vt_status vt_catalog_set_price(vt_catalog *catalog, const char *name, double usd_per_hour);

/* Number of GPUs, and the index of a name or -1 (with the thread's error set to a message
 * listing the known names, or the candidates of an ambiguous name).  The name matches as above,
 * else without a vendor word ("NVIDIA T4", "Tesla T4"), else as the start of exactly one
 * catalog name ("V100" -> "V100 SXM2"), where it starts several their one SXM form ("H200" ->
 * "H200 SXM", "H100" -> "H100 SXM", the usual form in clouds), else with "RTX " in front
 * ("A6000" -> "RTX A6000").  "RTX" alone is ambiguous.  vt_catalog_load_csv matches exactly. */
VT_API int vt_catalog_count(const vt_catalog *catalog);
VT_API int vt_catalog_find(const vt_catalog *catalog, const char *name);

/* Entry i (0-based): name ("H100 SXM"), architecture ("Hopper") and tier ("free" | "pro");
 * NULL when i is out of range.  Owned by the catalog, valid until it is destroyed or the entry
 * is changed by vt_catalog_load_csv(). */
VT_API const char *vt_catalog_gpu_name(const vt_catalog *catalog, int i);
VT_API const char *vt_catalog_gpu_arch(const vt_catalog *catalog, int i);
VT_API const char *vt_catalog_gpu_tier(const vt_catalog *catalog, int i);
/* A numeric field of entry i.  VT_ERR_NOT_FOUND when the catalog does not list it (e.g. no
 * price, or no TF32 on a Turing card), VT_ERR_INVALID_ARGUMENT for a bad index or field. */
VT_API vt_status vt_catalog_gpu_value(const vt_catalog *catalog, int i, vt_gpu_field field,
                                      double *value);
VT_API const char *vt_catalog_last_error(const vt_catalog *catalog);

/* ---- estimator ---------------------------------------------------------------------------- */

typedef struct vt_estimator vt_estimator;

/* Estimator settings are the vt_option values 500..521 (VT_OPT_EST_*, see vt_option);
 * vt_est_option is their former enum's name, kept so that existing sources compile
 * unchanged (the values and the setters' ABI are the same: an enum is an int). */
typedef vt_option vt_est_option;

/* Results of the last vt_estimator_run() (or, per GPU, of vt_estimator_rank()). */
typedef enum vt_est_result {
    VT_EST_STEP_SECONDS = 1,       /* one optimiser step, loader bound included                */
    VT_EST_STEPS_PER_EPOCH = 2,
    VT_EST_TRAIN_SECONDS_PER_EPOCH = 3,
    VT_EST_VAL_SECONDS_PER_EPOCH = 4, /* 0 when there is no validation                        */
    VT_EST_EPOCH_SECONDS = 5,      /* train + validation                                       */
    VT_EST_TOTAL_SECONDS = 6,      /* epochs * epoch + start-up                                */
    VT_EST_COST_USD = 7,           /* total hours * price * GPUs; VT_ERR_NOT_FOUND: no price   */
    VT_EST_PEAK_MEMORY_BYTES = 8,  /* per device                                               */
    VT_EST_DEVICE_MEMORY_BYTES = 9,/* usable capacity per device; VT_ERR_NOT_FOUND if unknown  */
    VT_EST_FITS = 10,              /* 1 if the peak fits the usable capacity, else 0           */
    VT_EST_MAX_BATCH = 11,         /* largest total batch that fits (0: not even batch 1)      */
    VT_EST_TRAIN_FLOPS_PER_IMAGE = 12, /* forward + backward                                   */
    VT_EST_FORWARD_FLOPS_PER_IMAGE = 13,
    VT_EST_PARAMS = 14,
    VT_EST_COMPUTE_SECONDS_PER_STEP = 15, /* device time of a step, without the loader bound  */
    VT_EST_LOADER_SECONDS_PER_STEP = 16,  /* time the loader needs for one step's images       */
    VT_EST_LOADER_BOUND = 17,      /* 1 when loading limits the step                           */
    VT_EST_MEETS_LIMIT = 18,       /* 1 within the deadline/budget of the ranking (1 if none)  */
    VT_EST_USD_PER_HOUR = 19,      /* price * GPUs; VT_ERR_NOT_FOUND when there is no price    */
    VT_EST_PRECISION = 20,         /* the precision the device runs, a vt_est_precision: the one
                                    * asked for (VT_OPT_EST_PRECISION) or the nearest it has   */
    /* The uncertainty range: the total time and cost at the ends of the cost model's measured
     * error for the estimate's basis (the figures are in the README and estimate.c). */
    VT_EST_TOTAL_SECONDS_LOW = 21,
    VT_EST_TOTAL_SECONDS_HIGH = 22,
    VT_EST_COST_USD_LOW = 23,      /* VT_ERR_NOT_FOUND: no price                               */
    VT_EST_COST_USD_HIGH = 24,
    VT_EST_BASIS = 25              /* what the estimate rests on, a vt_est_basis               */
} vt_est_result;

/* Values of VT_EST_BASIS, from the best-founded. */
typedef enum vt_est_basis {
    VT_EST_BASIS_CALIBRATED = 1,   /* measured on this device (vt_estimator_calibrate)         */
    VT_EST_BASIS_EXTRAPOLATED = 2, /* a calibration of another catalog GPU, scaled by the
                                    * catalog's rates                                          */
    VT_EST_BASIS_UNCALIBRATED = 3  /* catalog peaks times efficiency guesses (a GPU), or the
                                    * built-in CPU guesses                                     */
} vt_est_basis;

/* Values of VT_EST_PRECISION. */
typedef enum vt_est_precision {
    VT_EST_PREC_FP32 = 0,
    VT_EST_PREC_TF32 = 1,
    VT_EST_PREC_BF16 = 2,
    VT_EST_PREC_FP16 = 3
} vt_est_precision;

typedef enum vt_rank_by {
    VT_RANK_COST = 1,                  /* cheapest first                                       */
    VT_RANK_TIME = 2,                  /* fastest first                                        */
    VT_RANK_COST_WITHIN_DEADLINE = 3,  /* cheapest among those within VT_OPT_EST_DEADLINE_H    */
    VT_RANK_TIME_WITHIN_BUDGET = 4     /* fastest among those within VT_OPT_EST_BUDGET_USD     */
} vt_rank_by;

/* A new estimator with its own copy of the built-in catalog and default settings.  On failure
 * *out is NULL and vt_last_error() has the message. */
VT_API vt_status vt_estimator_create(vt_estimator **out);
VT_API void vt_estimator_destroy(vt_estimator *estimator);

/* The estimator's catalog, to override prices or load a CSV into.  Owned by the estimator. */
VT_API vt_catalog *vt_estimator_catalog(vt_estimator *estimator);

/* Settings: the VT_OPT_EST_* options (500..599, VT_SCOPE_ESTIMATOR), validated against the
 * option table like the trainer's.  Other options: VT_ERR_UNKNOWN_OPTION; bad values:
 * VT_ERR_OPTION_VALUE, the message naming the key and its valid range.  vt_estimator_set()
 * takes "key=value" with the keys given in vt_option ("epochs=100", "gpu=H100-SXM"). */
VT_API vt_status vt_estimator_set_int(vt_estimator *estimator, vt_option option,
                                      int64_t value);
VT_API vt_status vt_estimator_set_float(vt_estimator *estimator, vt_option option,
                                        double value);
VT_API vt_status vt_estimator_set_string(vt_estimator *estimator, vt_option option,
                                         const char *value);
VT_API vt_status vt_estimator_set(vt_estimator *estimator, const char *key_value);

/* Take the architecture, class count and channels of a model (copied: the model is not kept and
 * may be destroyed afterwards).  FLOPs and memory come from the model's own layer list.
 * NULL reverts to VT_OPT_EST_MODEL. */
VT_API vt_status vt_estimator_set_model(vt_estimator *estimator, const vt_model *model);
/* Take the image counts of the train and val splits (copied). */
VT_API vt_status vt_estimator_set_dataset(vt_estimator *estimator, const vt_dataset *dataset);

/* Estimate the configured run on the configured GPU (VT_OPT_EST_GPU).  Errors:
 * VT_ERR_NOT_FOUND for an unknown GPU name (the message lists the catalog),
 * VT_ERR_INVALID_ARGUMENT for an unknown model or an image size the model cannot take. */
VT_API vt_status vt_estimator_run(vt_estimator *estimator);
/* A result of the last successful vt_estimator_run(); VT_ERR_BAD_STATE before one. */
VT_API vt_status vt_estimator_result(const vt_estimator *estimator, vt_est_result result,
                                     double *value);

/* Estimate the run on every catalog GPU and rank them.  order fills with the catalog indices,
 * best first, per the buffer rule (see top): cap and *count (required) count GPUs, *count is the
 * catalog size, and a size query ranks as a fill does (vt_estimator_rank_result works after
 * either).  Ranking:
 * GPUs that fit and meet the deadline/budget, by the key; then those that fit but miss it; then
 * those where the run does not fit; GPUs without a price come after priced ones when ranking by
 * cost.  Those missing the limit are ordered by how near they come to it: by time for a
 * deadline, by cost for a budget.  Results per GPU through vt_estimator_rank_result(). */
VT_API vt_status vt_estimator_rank(vt_estimator *estimator, vt_rank_by by, int *order, int cap,
                                   int *count);
VT_API vt_status vt_estimator_rank_result(const vt_estimator *estimator, int gpu_index,
                                          vt_est_result result, double *value);

/* What vt_estimator_pick() picks from the last vt_estimator_rank(), among the GPUs where the
 * run fits. */
typedef enum vt_est_pick {
    VT_PICK_BEST_BUY = 1,     /* least cost x time (priced GPUs): a dollar saved weighs as much
                               * as the same share of time saved                              */
    VT_PICK_FASTEST = 2,      /* least total time                                            */
    VT_PICK_CHEAPEST = 3,     /* least cost (priced GPUs)                                     */
    VT_PICK_WITHIN_LIMIT = 4  /* the ranking's own: the cheapest within its deadline
                               * (VT_RANK_COST_WITHIN_DEADLINE) or the fastest within its budget
                               * (VT_RANK_TIME_WITHIN_BUDGET); the limits are met by the
                               * central estimate, not the whole range                       */
} vt_est_pick;

/* Write the catalog index of the GPU that `pick` chooses into *gpu_index (-1 when none), for
 * tools to recommend one; its results come from vt_estimator_rank_result().  Errors:
 * VT_ERR_BAD_STATE before a vt_estimator_rank(), and for VT_PICK_WITHIN_LIMIT after a ranking
 * without a deadline or budget (no limit set, or VT_RANK_COST / VT_RANK_TIME);
 * VT_ERR_NOT_FOUND when no GPU qualifies (nothing fits, no price, none meets the limit);
 * VT_ERR_INVALID_ARGUMENT for a bad pick.  Reads the estimator only: one thread per
 * estimator, as its other calls. */
VT_API vt_status vt_estimator_pick(const vt_estimator *estimator, vt_est_pick pick,
                                   int *gpu_index);

/* Measure a few real training steps of the configured model and image size (random images
 * with random class labels, boxes or masks, as the model's task takes them) at 2-3 batch
 * sizes, plus convolution and memory-bandwidth probes, on `device` ("cpu" or a CUDA index
 * "0", "1"...), and fit the efficiency terms of the cost model (the formula is in the
 * README).  On the CPU the batch sizes take turns, so their trainers are held at once; on a
 * GPU one at a time.
 * options: NULL or space-separated key=value (VT_OPT_CAL_*) among
 *   batches=B1,B2[,B3]  (default: batch/4, batch/2, batch of VT_OPT_EST_BATCH, at least 1)
 *   seconds=S           (measurement budget, default 10)
 *   gpu=NAME            (the catalog name of the local GPU, needed to extrapolate to others and
 *                        to know its memory; default: VT_OPT_EST_GPU if it names one)
 *   probe_max=0|1       (GPU only, default 1: verify the predicted largest batch with one step,
 *                        backing off on VT_ERR_DEVICE_OOM; estimates never exceed it)
 * Blocks for up to about 1.5 x `seconds` (the probes, a warm-up step per batch size, then
 * `seconds` of steps, fewer for a model fast enough to take 128 steps per batch size sooner).
 * Errors: VT_ERR_DEVICE when the device is missing, errors of the
 * trainer, VT_ERR_NUMERIC when the timings make no sense (e.g. a step taking no time). */
VT_API vt_status vt_estimator_calibrate(vt_estimator *estimator, const char *device,
                                        const char *options);
/* 1 when a calibration was measured or loaded, else 0. */
VT_API int vt_estimator_is_calibrated(const vt_estimator *estimator);
/* Save the calibration as a small text file (atomically) / load one.  Loading checks every
 * line: VT_ERR_FORMAT "path:line: ..." for a corrupt or foreign file, VT_ERR_NOT_FOUND for a
 * missing one; on failure the current calibration is kept. */
VT_API vt_status vt_estimator_save_calibration(vt_estimator *estimator, const char *path);
VT_API vt_status vt_estimator_load_calibration(vt_estimator *estimator, const char *path);

VT_API void vt_estimator_set_log(vt_estimator *estimator, vt_log_fn fn, void *user,
                                 vt_log_level max_level);
VT_API const char *vt_estimator_last_error(const vt_estimator *estimator);

/* One line of advice for a training set of n images (under 1,000; 1,000-10,000; over 10,000),
 * for tools to print beside an estimate.  Static string, thread-safe. */
VT_API const char *vt_estimate_dataset_advice(int64_t train_images);

#ifdef __cplusplus
}
#endif

#endif /* VISIONTRAIN_H */
