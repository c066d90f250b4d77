/* The training GPU's live figures (NVML, through the device layer) in the trainer's progress
 * record, its results table and its TensorBoard log.  A run on the CPU has none of them: its
 * progress, results.csv and events file are those of a build without this. */
#ifndef VT_TRAIN_GPU_METRICS_H
#define VT_TRAIN_GPU_METRICS_H

#include "train/trainer_impl.h"

/* At the start of a run, once the device is open: a GPU run's results table gets the GPU
 * columns (vt_results_add_gpu) and the next sample is taken at once. */
vt_status vt_train_gpu_begin(vt_trainer *t);
/* After a step: VT_METRIC_GPU_* from the device, at most once a second (NVML answers in
 * microseconds to milliseconds; a second is what a progress bar shows).  A figure the device
 * does not give is left absent. */
void vt_train_gpu_sample(vt_trainer *t);

#endif
