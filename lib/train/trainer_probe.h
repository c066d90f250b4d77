/* Private: what the estimator's calibration may ask of a trainer besides the public API, to time
 * a step's parts (lib/estimate/calibrate.c); the trainer's insides stay in trainer_impl.h. */
#ifndef VT_TRAINER_PROBE_H
#define VT_TRAINER_PROBE_H

#include "core/core.h"

/* vt_trainer_step's input upload: `batch` NCHW images from the caller into the executor's CNHW
 * input (staged through the pinned batch by a few threads on a GPU; asynchronous there: the
 * next download or synchronize waits for it).  The trainer must be prepared for `batch`. */
vt_status vt_trainer_upload_images(vt_trainer *t, const float *images, int batch);
/* One training step of any task on caller images (batch x channels x imgsz x imgsz NCHW, as
 * vt_trainer_step's) with synthetic targets: a classifier's labels i % classes; the boxes,
 * masks or instances of vt_loader_fill_synthetic (data/loader.h), seeded by the iteration,
 * for the other tasks.  As vt_trainer_step otherwise (lr0, no schedule; the loss into *loss
 * when non-NULL); VT_ERR_INVALID_ARGUMENT for a batch under 2. */
vt_status vt_trainer_probe_step(vt_trainer *t, const float *images, int batch, float *loss);
/* Wait for the trainer's backend to finish what was queued (an upload, a step). */
vt_status vt_trainer_synchronize(vt_trainer *t);
/* Open the trainer's device (its device option as set) and, on the CPU, set its backend's
 * Winograd tile (vt_backend_cpu_set_winograd: 0 im2col, 2, 4); before the first step, which
 * plans the convolutions' columns by it.  A GPU: nothing. */
vt_status vt_trainer_set_cpu_winograd(vt_trainer *t, int tile);

#endif
