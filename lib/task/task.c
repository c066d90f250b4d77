/* What the tasks share (task.h). */
#include "task/task.h"

#include <stdlib.h>
#include <string.h>

vt_status vt_task_confusion(vt_task_ctx *c, int k)
{
    if (*c->confusion_k != k) {
        free(*c->confusion);
        *c->confusion = k > 0 ? vt_calloc((size_t)k * k, sizeof(int64_t)) : NULL;
        *c->confusion_k = *c->confusion ? k : 0;
    }
    if (k <= 0) return VT_OK;
    if (!*c->confusion) return VT_ERR_OUT_OF_MEMORY;
    memset(*c->confusion, 0, (size_t)k * k * sizeof(int64_t));
    return VT_OK;
}
