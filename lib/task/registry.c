/* The task registry: one line per task (task.h), and what the library says about tasks,
 * their models and their metrics through the public header.  The model calls that resolve an
 * architecture name (create, load, import) are here too: the names are the tasks' (their
 * tables list their architectures), the models' code is lib/nn's. */
#include <stdio.h>
#include <string.h>

#include "core/checkpoint.h"
#include "task/task.h"

static const vt_task_iface *const registry[] = {
    &vt_task_classify,
    &vt_task_detect,
    &vt_task_segment,
    &vt_task_instance,
};
enum { NTASK = sizeof registry / sizeof registry[0] };

const vt_task_iface *vt_task_at(int i) { return i >= 0 && i < NTASK ? registry[i] : NULL; }

const vt_task_iface *vt_task_find(vt_task id)
{
    for (int i = 0; i < NTASK; i++)
        if (registry[i]->id == id) return registry[i];
    return NULL;
}

const char *vt_task_dir_name(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->name : "task";
}

const vt_arch_spec *vt_arch_find(const char *name)
{
    for (int i = 0; name && i < NTASK; i++)
        for (const vt_arch_spec *const *a = registry[i]->archs; a && *a; a++)
            if (!strcmp((*a)->name, name)) return *a;
    return NULL;
}

vt_status vt_arch_unknown(const char *name)
{
    char known[512] = "";
    size_t k = 0;
    for (int i = 0; i < NTASK; i++)
        for (const vt_arch_spec *const *a = registry[i]->archs; a && *a; a++)
            if (k < sizeof known)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "",
                                      (*a)->name);
    return vt_fail(VT_ERR_INVALID_ARGUMENT, "unknown model '%.60s'; known models: %s", name,
                   known);
}

/* ---- the public description of tasks ---- */

VT_API vt_task vt_task_next(vt_task prev)
{
    if (!prev) return registry[0]->id;
    for (int i = 0; i + 1 < NTASK; i++)
        if (registry[i]->id == prev) return registry[i + 1]->id;
    return (vt_task)0;
}

VT_API const char *vt_task_name(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->name : NULL;
}

VT_API const char *vt_task_title(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->title : NULL;
}

VT_API vt_task vt_task_parse(const char *name)
{
    for (int i = 0; name && i < NTASK; i++)
        if (!strcmp(registry[i]->name, name) || !strcmp(registry[i]->title, name))
            return registry[i]->id;
    return (vt_task)0;
}

VT_API const char *vt_task_model_prefix(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->model_prefix : NULL;
}

VT_API const char *vt_task_default_model(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->default_model : NULL;
}

VT_API vt_task vt_arch_task(const char *arch)
{
    const vt_arch_spec *s = vt_arch_find(arch);
    return s ? s->task : (vt_task)0;
}

VT_API const char *vt_arch_name(int i)
{
    for (int t = 0; i >= 0 && t < NTASK; t++)
        for (const vt_arch_spec *const *a = registry[t]->archs; a && *a; a++)
            if (i-- == 0) return (*a)->name;
    return NULL;
}

VT_API int vt_task_metrics(vt_task task, vt_metric *out, int cap)
{
    const vt_task_iface *ti = vt_task_find(task);
    if (!ti) return 0;
    for (int i = 0; out && i < ti->n_metrics && i < cap; i++) out[i] = ti->metrics[i];
    return ti->n_metrics;
}

VT_API vt_metric vt_task_fitness(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->fitness : (vt_metric)0;
}

/* Whether key is a word of the space-separated list. */
static int in_list(const char *list, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = list; p && *p;) {
        while (*p == ' ') p++;
        size_t w = strcspn(p, " ");
        if (w == n && !strncmp(p, key, n)) return 1;
        p += w;
    }
    return 0;
}

VT_API int vt_task_option_applies(vt_task task, const char *key)
{
    const vt_task_iface *ti = vt_task_find(task);
    if (!ti || !key) return -1;
    int trainer_key = 0;
    for (int o = vt_option_next(0); o && !trainer_key; o = vt_option_next(o)) {
        const char *k;
        trainer_key = (vt_option_scopes((vt_option)o) & VT_SCOPE_TRAINER) &&
                      vt_option_info((vt_option)o, &k, NULL, NULL, NULL, NULL) == VT_OK &&
                      !strcmp(k, key);
    }
    if (!trainer_key) return -1;
    return !in_list(ti->ignored_options, key);
}

static const struct {
    const char *name, *label;
} metric_names[VT_NMETRIC] = {
    [VT_METRIC_LOSS] = {"loss", "loss"},
    [VT_METRIC_VAL_LOSS] = {"val_loss", "val loss"},
    [VT_METRIC_TOP1] = {"top1", "top1"},
    [VT_METRIC_TOP5] = {"top5", "top5"},
    [VT_METRIC_LR] = {"lr", "lr"},
    [VT_METRIC_IMAGES_PER_SEC] = {"images_per_sec", "img/s"},
    [VT_METRIC_EPOCH_SECONDS] = {"epoch_seconds", "epoch s"},
    [VT_METRIC_ETA_SECONDS] = {"eta_seconds", "ETA s"},
    [VT_METRIC_COST_USD] = {"cost_usd", "cost USD"},
    [VT_METRIC_DATA_WAIT_SECONDS] = {"data_wait_seconds", "data wait s"},
    [VT_METRIC_BEST_FITNESS] = {"best_fitness", "best fitness"},
    [VT_METRIC_FITNESS] = {"fitness", "fitness"},
    [VT_METRIC_DEVICE_MEMORY_BYTES] = {"device_memory_bytes", "device memory"},
    [VT_METRIC_PRECISION] = {"precision", "P"},
    [VT_METRIC_RECALL] = {"recall", "R"},
    [VT_METRIC_MAP50] = {"map50", "mAP50"},
    [VT_METRIC_MAP50_95] = {"map50_95", "mAP50-95"},
    [VT_METRIC_MIOU] = {"miou", "mIoU"},
    [VT_METRIC_PIXEL_ACC] = {"pixel_acc", "pixel_acc"},
    [VT_METRIC_F1] = {"f1", "F1"},
    [VT_METRIC_GPU_UTIL] = {"gpu_util", "GPU %"},
    [VT_METRIC_GPU_MEMORY_USED_BYTES] = {"gpu_memory_used_bytes", "GPU memory used"},
    [VT_METRIC_GPU_MEMORY_TOTAL_BYTES] = {"gpu_memory_total_bytes", "GPU memory"},
    [VT_METRIC_GPU_POWER_W] = {"gpu_power_w", "GPU W"},
    [VT_METRIC_GPU_TEMP_C] = {"gpu_temp_c", "GPU C"},
    [VT_METRIC_TENSORS_TRANSFERRED] = {"tensors_transferred", "tensors transferred"},
    [VT_METRIC_TENSORS_TOTAL] = {"tensors_total", "tensors"},
    [VT_METRIC_MASK_PRECISION] = {"mask_precision", "mask P"},
    [VT_METRIC_MASK_RECALL] = {"mask_recall", "mask R"},
    [VT_METRIC_MASK_MAP50] = {"mask_map50", "mask mAP50"},
    [VT_METRIC_MASK_MAP50_95] = {"mask_map50_95", "mask mAP50-95"},
};

VT_API const char *vt_metric_name(vt_metric m)
{
    return (int)m > 0 && (int)m < VT_NMETRIC ? metric_names[m].name : NULL;
}

VT_API const char *vt_metric_label(vt_metric m)
{
    return (int)m > 0 && (int)m < VT_NMETRIC ? metric_names[m].label : NULL;
}

/* ---- the model calls that resolve an architecture name ---- */

VT_API vt_status vt_model_create(vt_model **out, const char *arch, int num_classes,
                                 const char *options)
{
    if (out) *out = NULL;
    if (!out || !arch) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_create: NULL argument");
    const vt_arch_spec *s = vt_arch_find(arch);
    if (!s) return vt_arch_unknown(arch);
    return vt_model_create_spec(out, s, num_classes, options);
}

VT_API vt_status vt_model_load(vt_model **out, const char *path)
{
    if (out) *out = NULL;
    if (!out || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_load: NULL argument");
    vt_ckpt *c;
    vt_status st = vt_ckpt_open(&c, path);
    if (st) return st;
    st = vt_model_from_checkpoint(out, c, vt_arch_find);
    vt_ckpt_close(c);
    return st;
}

VT_API vt_status vt_model_import_onnx(vt_model **out, const char *path, const char *arch,
                                      const char *options)
{
    if (out) *out = NULL;
    if (!out || !path || !arch)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_model_import_onnx: NULL argument");
    const vt_arch_spec *s = vt_arch_find(arch);
    if (!s)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "no ONNX importer for architecture '%.40s'; the "
                       "architectures imported: resnet18", arch);
    return vt_model_import_onnx_spec(out, path, s, options);
}
