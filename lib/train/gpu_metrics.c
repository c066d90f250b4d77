/* The training GPU's live figures in the progress record (gpu_metrics.h). */
#include "train/gpu_metrics.h"

#include "core/core.h"

vt_status vt_train_gpu_begin(vt_trainer *t)
{
    t->gpu_sampled_at = -1e300;
    return t->be && vt_device_is_gpu(&t->dev) ? vt_results_add_gpu(&t->results) : VT_OK;
}

void vt_train_gpu_sample(vt_trainer *t)
{
    if (!t->be || !vt_device_is_gpu(&t->dev)) return;
    double now = vt_now();
    if (now - t->gpu_sampled_at < 1.0) return;
    t->gpu_sampled_at = now;
    vt_gpu_metrics g;
    unsigned have = vt_device_metrics(&t->dev, &g);
    static const struct {
        unsigned bit;
        vt_metric metric;
    } fig[5] = {{VT_GPU_HAVE_UTIL, VT_METRIC_GPU_UTIL},
                {VT_GPU_HAVE_MEMORY, VT_METRIC_GPU_MEMORY_USED_BYTES},
                {VT_GPU_HAVE_MEMORY, VT_METRIC_GPU_MEMORY_TOTAL_BYTES},
                {VT_GPU_HAVE_POWER, VT_METRIC_GPU_POWER_W},
                {VT_GPU_HAVE_TEMP, VT_METRIC_GPU_TEMP_C}};
    const double v[5] = {g.util_pct, g.mem_used_bytes, g.mem_total_bytes, g.power_w, g.temp_c};
    for (int i = 0; i < 5; i++) {
        if (have & fig[i].bit) vt_progress_set(&t->prog, fig[i].metric, v[i]);
        else t->prog.has[fig[i].metric] = 0;
    }
}
