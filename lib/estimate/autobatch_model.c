/* The estimator's training-memory model, given to the trainer's batch=-1 (train/autobatch.h):
 * the trainer's layer comes before this one, so it declares what it needs and this file
 * provides it. */
#include "estimate/estimate.h"
#include "train/autobatch.h"

double vt_autobatch_memory(const vt_graph *g, int h, int w, int batch, int states, int on_gpu)
{
    return vt_est_train_memory(g, h, w, batch, (int)sizeof(float), states, on_gpu);
}
