/* The task registry: one line per task the trainer can run (lib/task/task.h). */
#include "train/trainer_impl.h"

static const vt_task_iface *const registry[] = {
    &vt_task_classify,
    &vt_task_detect,
    &vt_task_segment,
};

const vt_task_iface *vt_task_find(vt_task id)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (registry[i]->id == id) return registry[i];
    return NULL;
}

const char *vt_task_dir_name(vt_task task)
{
    const vt_task_iface *ti = vt_task_find(task);
    return ti ? ti->name : "task";
}
