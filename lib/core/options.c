/* The option table and the typed / key=value setters built on it.  One table serves every
 * handle; each option belongs to one scope (trainer or model), and the same key may exist in
 * two scopes (imgsz, seed). */
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const optimizer_choices[] = {"sgd", "adamw", NULL};
static const char *const precision_choices[] = {"tf32", "fp32", NULL};
static const char *const cache_choices[] = {"none", "ram", NULL};

#define T VT_SCOPE_TRAINER
#define M VT_SCOPE_MODEL
#define I VT_OPTION_INT
#define F VT_OPTION_FLOAT
#define S VT_OPTION_STRING

static const vt_optdef table[] = {
    {VT_OPT_EPOCHS, "epochs", I, 1, 100000, 10, NULL, NULL, T, "number of training epochs"},
    {VT_OPT_BATCH, "batch", I, -1, 65536, 32, NULL, NULL, T,
     "images per training step (-1 = the largest that fits autobatch_fraction of the memory)"},
    {VT_OPT_IMGSZ, "imgsz", I, 8, 4096, 0, NULL, NULL, T,
     "training image size in pixels (0 = the model's)"},
    {VT_OPT_OPTIMIZER, "optimizer", S, 0, 0, 0, "sgd", optimizer_choices, T,
     "optimizer: sgd or adamw"},
    {VT_OPT_LR0, "lr0", F, 1e-8, 10, 0, NULL, NULL, T,
     "initial learning rate (0 = 0.01 for sgd, 0.001 for adamw)"},
    {VT_OPT_LRF, "lrf", F, 0, 1, 0.01, NULL, NULL, T, "final learning rate as a fraction of lr0"},
    {VT_OPT_MOMENTUM, "momentum", F, 0, 0.9999, 0.9, NULL, NULL, T,
     "SGD momentum / AdamW beta1"},
    {VT_OPT_WEIGHT_DECAY, "weight_decay", F, 0, 1, 5e-4, NULL, NULL, T,
     "weight decay (not applied to biases and batch-norm)"},
    {VT_OPT_NESTEROV, "nesterov", I, 0, 1, 1, NULL, NULL, T, "Nesterov momentum for SGD (0/1)"},
    {VT_OPT_WARMUP_EPOCHS, "warmup_epochs", F, 0, 1000, 1, NULL, NULL, T,
     "epochs of linear learning-rate warm-up"},
    {VT_OPT_COS_LR, "cos_lr", I, 0, 1, 1, NULL, NULL, T,
     "cosine (1) or linear (0) learning-rate decay"},
    {VT_OPT_LABEL_SMOOTHING, "label_smoothing", F, 0, 0.99, 0, NULL, NULL, T,
     "label smoothing of the classification loss"},
    {VT_OPT_SEED, "seed", I, 0, 9007199254740991.0, 0, NULL, NULL, T,
     "seed for shuffling, augmentation and dropout"},
    {VT_OPT_DEVICE, "device", S, 0, 0, 0, "cpu", NULL, T, "cpu, or a GPU index (0, 1, ...)"},
    {VT_OPT_WORKERS, "workers", I, 0, 64, 2, NULL, NULL, T,
     "image decoding threads (0 = in the training thread)"},
    {VT_OPT_FLIPLR, "fliplr", F, 0, 1, 0.5, NULL, NULL, T, "probability of a horizontal flip"},
    {VT_OPT_VAL, "val", I, 0, 1, 1, NULL, NULL, T, "validate after every epoch (0/1)"},
    {VT_OPT_PRECISION, "precision", S, 0, 0, 0, "tf32", precision_choices, T,
     "GPU matrix math: tf32 (tensor cores) or fp32"},
    {VT_OPT_PROJECT, "project", S, 0, 0, 0, "runs", NULL, T,
     "folder holding the run folders (<project>/<task>/<name>)"},
    {VT_OPT_NAME, "name", S, 0, 0, 0, "train", NULL, T,
     "run folder name (name2, name3... when it exists, unless exist_ok=1)"},
    {VT_OPT_EXIST_OK, "exist_ok", I, 0, 1, 0, NULL, NULL, T, "reuse an existing run folder (0/1)"},
    {VT_OPT_SAVE, "save", I, 0, 1, 1, NULL, NULL, T,
     "write the run folder: checkpoints, args, results, plots (0/1)"},
    {VT_OPT_SAVE_PERIOD, "save_period", I, -1, 100000, -1, NULL, NULL, T,
     "also keep a checkpoint every N epochs (-1 = off)"},
    {VT_OPT_RESUME, "resume", S, 0, 0, 0, "", NULL, T,
     "checkpoint to continue training from (weights/last.vtm)"},
    {VT_OPT_PATIENCE, "patience", I, 1, 1000000, 100, NULL, NULL, T,
     "stop after this many epochs without a better fitness"},
    {VT_OPT_TIME, "time", F, 0, 1e6, 0, NULL, NULL, T,
     "time budget in hours (0 = none); stops and saves before exceeding it"},
    {VT_OPT_EMA, "ema", I, 0, 1, 0, NULL, NULL, T,
     "exponential moving average of the weights (0/1)"},
    {VT_OPT_EMA_DECAY, "ema_decay", F, 0, 0.999999, 0.9999, NULL, NULL, T,
     "EMA decay (ramped up over the first ~2000 steps)"},
    {VT_OPT_PRICE, "price", F, 0, 1e6, 0, NULL, NULL, T,
     "USD per device-hour, for the cost shown in progress"},
    {VT_OPT_PLOTS, "plots", I, 0, 1, 1, NULL, NULL, T,
     "draw results.png and confusion_matrix.png (0/1)"},
    /* augmentation (Ultralytics names and defaults; lib/data/augment.h has the details) */
    {VT_OPT_HSV_H, "hsv_h", F, 0, 1, 0.015, NULL, NULL, T,
     "hue shift, fraction of the colour circle"},
    {VT_OPT_HSV_S, "hsv_s", F, 0, 1, 0.7, NULL, NULL, T, "saturation gain range"},
    {VT_OPT_HSV_V, "hsv_v", F, 0, 1, 0.4, NULL, NULL, T, "value (brightness) gain range"},
    {VT_OPT_DEGREES, "degrees", F, 0, 180, 0, NULL, NULL, T, "rotation range in degrees (detect)"},
    {VT_OPT_TRANSLATE, "translate", F, 0, 1, 0.1, NULL, NULL, T,
     "translation range, fraction of the image (detect)"},
    {VT_OPT_SCALE, "scale", F, 0, 0.99, 0.5, NULL, NULL, T, "scale gain range (detect)"},
    {VT_OPT_SHEAR, "shear", F, 0, 89, 0, NULL, NULL, T, "shear range in degrees (detect)"},
    {VT_OPT_PERSPECTIVE, "perspective", F, 0, 0.001, 0, NULL, NULL, T,
     "perspective range (detect)"},
    {VT_OPT_FLIPUD, "flipud", F, 0, 1, 0, NULL, NULL, T, "probability of a vertical flip"},
    {VT_OPT_MOSAIC, "mosaic", F, 0, 1, 1, NULL, NULL, T,
     "probability of a 4-image mosaic (detect)"},
    {VT_OPT_MIXUP, "mixup", F, 0, 1, 0, NULL, NULL, T,
     "probability of mixing in a second image (detect)"},
    {VT_OPT_CLOSE_MOSAIC, "close_mosaic", I, 0, 100000, 10, NULL, NULL, T,
     "last epochs trained without mosaic (detect)"},
    {VT_OPT_ERASING, "erasing", F, 0, 1, 0, NULL, NULL, T,
     "probability of random erasing (classify)"},
    {VT_OPT_CROP_SCALE, "crop_scale", F, 0.01, 1, 1, NULL, NULL, T,
     "random resized crop: smallest area fraction, 1 = off (classify)"},
    /* data loading */
    {VT_OPT_PREFETCH, "prefetch", I, 0, 8, 2, NULL, NULL, T,
     "training batches loaded ahead while one trains (0 = none)"},
    {VT_OPT_CACHE, "cache", S, 0, 0, 0, "none", cache_choices, T,
     "keep decoded training images in RAM: none or ram"},
    {VT_OPT_CACHE_BYTES, "cache_bytes", I, 0, 9007199254740991.0, 4294967296.0, NULL, NULL, T,
     "byte cap of cache=ram (images beyond it are read again each epoch)"},
    {VT_OPT_FRACTION, "fraction", F, 0, 1, 1, NULL, NULL, T,
     "fraction of the training images to train on (a seeded subset, at least 2)"},
    /* logging */
    {VT_OPT_TENSORBOARD, "tensorboard", I, 0, 1, 1, NULL, NULL, T,
     "write a TensorBoard events file in the run folder (0/1)"},
    {VT_OPT_DICE, "dice", F, 0, 10, 1, NULL, NULL, T,
     "weight of the soft Dice term of the segmentation loss (0 = cross-entropy only)"},
    {VT_OPT_AUTOBATCH_FRACTION, "autobatch_fraction", F, 0.1, 0.95, 0.6, NULL, NULL, T,
     "share of the device's memory (available host memory on the CPU) that batch=-1 fills"},
    {VT_OPT_CHANNELS, "channels", I, 1, 3, 3, NULL, NULL, M, "input channels (1 or 3)"},
    {VT_OPT_MODEL_IMGSZ, "imgsz", I, 8, 4096, 224, NULL, NULL, M, "the model's image size"},
    {VT_OPT_DROPOUT, "dropout", F, 0, 0.99, 0, NULL, NULL, M,
     "dropout probability before the classifier"},
    {VT_OPT_MODEL_SEED, "seed", I, 0, 9007199254740991.0, 0, NULL, NULL, M,
     "weight initialisation seed"},
};
#undef T
#undef M
#undef I
#undef F
#undef S

#define N_OPTS ((int)(sizeof table / sizeof table[0]))
_Static_assert(sizeof table / sizeof table[0] <= VT_OPT_SLOTS, "vt_optvals holds VT_OPT_SLOTS options");

const vt_optdef *vt_optdef_by_id(int id)
{
    for (int i = 0; i < N_OPTS; i++)
        if (table[i].id == id) return &table[i];
    return NULL;
}

static const vt_optdef *by_key_scope(const char *key, size_t len, int scope)
{
    for (int i = 0; i < N_OPTS; i++)
        if ((table[i].scope & scope) && strlen(table[i].key) == len &&
            memcmp(table[i].key, key, len) == 0)
            return &table[i];
    return NULL;
}

const vt_optdef *vt_optdef_by_key(const char *key, size_t keylen)
{
    return by_key_scope(key, keylen, ~0);
}

int vt_opt_index(const vt_optdef *d) { return (int)(d - table); }

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
    for (int i = 0; i < N_OPTS; i++) {
        v->num[i] = table[i].def_num;
        if (table[i].def_str) snprintf(v->str[i], VT_OPT_STR_MAX, "%s", table[i].def_str);
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
        return vt_fail(VT_ERR_OPTION_VALUE, "%s=%g is out of range [%g, %g]", d->key, value,
                       d->min, d->max);
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
    /* lr0 uses 0 as "the optimizer's default" */
    if (!(d->id == VT_OPT_LR0 && value == 0) && !(d->id == VT_OPT_IMGSZ && value == 0)) {
        st = check_range(d, value);
        if (st) return st;
    }
    if (d->id == VT_OPT_BATCH && value == 0)
        return vt_fail(VT_ERR_OPTION_VALUE, "batch=0 is not valid; use -1 (automatic) or N >= 1");
    if (d->id == VT_OPT_SAVE_PERIOD && value == 0)
        return vt_fail(VT_ERR_OPTION_VALUE, "save_period=0 is not valid; use -1 (off) or N >= 1");
    /* the range 1..3 admits 2, which no image has */
    if (d->id == VT_OPT_CHANNELS && value != 1 && value != 3)
        return vt_fail(VT_ERR_OPTION_VALUE, "channels=%g is not valid; use 1 (gray) or 3 (RGB)",
                       value);
    int i = vt_opt_index(d);
    v->num[i] = value;
    v->set[i] = 1;
    return VT_OK;
}

static vt_status check_string(const vt_optdef *d, const char *value)
{
    if (strlen(value) >= VT_OPT_STR_MAX)
        return vt_fail(VT_ERR_OPTION_VALUE, "%s: value too long (at most %d characters)", d->key,
                       VT_OPT_STR_MAX - 1);
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
    if (d->id == VT_OPT_DEVICE) {
        if (strcmp(value, "cpu") == 0) return VT_OK;
        char *end;
        errno = 0;
        long idx = strtol(value, &end, 10);
        if (*value && !*end && !errno && idx >= 0 && idx < 64) return VT_OK;
        return vt_fail(VT_ERR_OPTION_VALUE, "device=%s is not valid; use cpu or a GPU index 0..63",
                       value);
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
    int i = vt_opt_index(d);
    snprintf(v->str[i], VT_OPT_STR_MAX, "%s", value);
    v->set[i] = 1;
    return VT_OK;
}

vt_status vt_optvals_set_kv(vt_optvals *v, const char *kv)
{
    if (!kv) return vt_fail(VT_ERR_INVALID_ARGUMENT, "NULL option string");
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return vt_fail(VT_ERR_OPTION_VALUE, "'%s' is not of the form key=value", kv);
    const vt_optdef *d = by_key_scope(kv, (size_t)(eq - kv), v->scope);
    if (!d) {
        char keys[1024];
        list_keys(v->scope, keys, sizeof keys);
        return vt_fail(VT_ERR_UNKNOWN_OPTION, "unknown option '%.*s'; valid options: %s",
                       (int)(eq - kv), kv, keys);
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

double vt_opt_num(const vt_optvals *v, int id)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    return d ? v->num[vt_opt_index(d)] : 0;
}

const char *vt_opt_str(const vt_optvals *v, int id)
{
    const vt_optdef *d = vt_optdef_by_id(id);
    return d ? v->str[vt_opt_index(d)] : "";
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
