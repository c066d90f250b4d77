/* batch=-1: the largest batch that fits a share of the device's memory (autobatch.c).
 *
 * 1. The memory: a GPU's total x autobatch_fraction, no more than what is free now; on the CPU
 *    the host's available memory (MemAvailable) x autobatch_fraction.
 * 2. The estimator's memory model of training (vt_train_memory, nn/train_memory.h: weights, gradients,
 *    optimiser state, activations by liveness, im2col scratch, a GPU's context) gives the
 *    largest batch within it, capped at the training images and at 1024 (512 on the CPU).
 * 3. One real training step at that batch (real images, forward and backward, no update)
 *    checks it; a step that runs out of memory (VT_ERR_OUT_OF_MEMORY from the backend) halves
 *    the batch and tries again, so the batch chosen is one a step was measured to fit.  The
 *    device's weights are restored from the model afterwards: the run is the one it would be
 *    with that batch given.
 * The choice is logged and written into the trainer's batch option. */
#ifndef VT_TRAIN_AUTOBATCH_H
#define VT_TRAIN_AUTOBATCH_H

#include <stddef.h>

#include "nn/graph.h"
#include "train/trainer_impl.h"

/* The largest batch chosen: a bigger one leaves too few steps an epoch to train well (the
 * CPU gains no speed beyond a few hundred images). */
enum { VT_AUTOBATCH_GPU_MAX = 1024, VT_AUTOBATCH_CPU_MAX = 512, VT_AUTOBATCH_MAX_TRIES = 24 };

/* For tests: a fake memory size and a fake allocation limit, and what was tried. */
typedef struct vt_autobatch_test {
    double memory_bytes; /* > 0: the available memory (instead of the device's) */
    size_t alloc_limit;  /* > 0: backend allocations made during the checks fail beyond this
                            many bytes held (as a device out of memory would) */
    int modelled;        /* out: the memory model's batch (before any check) */
    int ntried;          /* out: the batches stepped, in order, and whether each fitted */
    int tried[VT_AUTOBATCH_MAX_TRIES];
    unsigned char fitted[VT_AUTOBATCH_MAX_TRIES];
    size_t peak[VT_AUTOBATCH_MAX_TRIES]; /* with alloc_limit: the most bytes each step held */
} vt_autobatch_test;

/* Choose the batch for training the first ntrain images of `subset` (the run's training
 * images): *batch >= 2, also set as the batch option.  test: NULL in a run.  Errors: the
 * device's memory unknown, not even 2 images fit (VT_ERR_OUT_OF_MEMORY), what a step returns
 * other than out-of-memory. */
vt_status vt_autobatch(vt_trainer *t, const int *subset, int ntrain, vt_autobatch_test *test,
                       int *batch);

/* trainer.c: the device, activations and host buffers for `batch` and the optimiser's state,
 * as a run's first step has them (the weights uploaded when the device's are stale). */
vt_status vt_trainer_prepare_step(vt_trainer *t, int batch);


#endif
