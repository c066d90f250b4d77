/* The exponential moving average of the weights (ema=1), kept in backend memory. */
#include <math.h>

#include "train/trainer_impl.h"

#define TRY VT_TRY

/* ---- EMA of the weights (backend memory) ---- */

vt_status vt_ema_prepare(vt_trainer *t, const float *ema_p_host, const float *ema_b_host)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    size_t np = (size_t)t->model->graph.n_params, nbuf = (size_t)t->model->graph.n_buffers;
    size_t nb1 = nbuf ? nbuf : 1;
    if (!t->ema_p && !(t->ema_p = be->ops->alloc(be, np * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    if (!t->tmp_p && !(t->tmp_p = be->ops->alloc(be, np * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    if (!t->ema_b && !(t->ema_b = be->ops->alloc(be, nb1 * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    if (!t->tmp_b && !(t->tmp_b = be->ops->alloc(be, nb1 * sizeof(float)))) return VT_ERR_OUT_OF_MEMORY;
    if (ema_p_host) {
        TRY(be->ops->upload(be, t->ema_p, ema_p_host, np * sizeof(float)));
        if (nbuf) TRY(be->ops->upload(be, t->ema_b, ema_b_host, nbuf * sizeof(float)));
    } else {
        TRY(be->ops->copy(be, t->ema_p, e->params, np * sizeof(float)));
        if (nbuf) TRY(be->ops->copy(be, t->ema_b, e->buffers, nbuf * sizeof(float)));
    }
    return VT_OK;
}

/* ema += (1 - d) * (x - ema) for params and buffers, d ramped up as in Ultralytics' ModelEMA. */
vt_status vt_ema_update(vt_trainer *t)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    size_t np = (size_t)t->model->graph.n_params, nbuf = (size_t)t->model->graph.n_buffers;
    t->pos.ema_updates++;
    double d = vt_opt_num(&t->opts, VT_OPT_EMA_DECAY) *
               (1.0 - exp(-(double)t->pos.ema_updates / 2000.0));
    float a = (float)(1.0 - d);
    TRY(be->ops->copy(be, t->tmp_p, e->params, np * sizeof(float)));
    TRY(be->ops->axpy(be, np, -1.0f, t->ema_p, t->tmp_p));
    TRY(be->ops->axpy(be, np, a, t->tmp_p, t->ema_p));
    if (nbuf) {
        TRY(be->ops->copy(be, t->tmp_b, e->buffers, nbuf * sizeof(float)));
        TRY(be->ops->axpy(be, nbuf, -1.0f, t->ema_b, t->tmp_b));
        TRY(be->ops->axpy(be, nbuf, a, t->tmp_b, t->ema_b));
    }
    return VT_OK;
}

/* Swap the executor's weights with the EMA (twice restores them). */
vt_status vt_ema_swap(vt_trainer *t)
{
    vt_backend *be = t->be;
    vt_exec *e = t->exec;
    size_t np = (size_t)t->model->graph.n_params * sizeof(float);
    size_t nbuf = (size_t)t->model->graph.n_buffers * sizeof(float);
    TRY(be->ops->copy(be, t->tmp_p, e->params, np));
    TRY(be->ops->copy(be, e->params, t->ema_p, np));
    TRY(be->ops->copy(be, t->ema_p, t->tmp_p, np));
    if (nbuf) {
        TRY(be->ops->copy(be, t->tmp_b, e->buffers, nbuf));
        TRY(be->ops->copy(be, e->buffers, t->ema_b, nbuf));
        TRY(be->ops->copy(be, t->ema_b, t->tmp_b, nbuf));
    }
    return VT_OK;
}

