/* Private: the estimator handle's layout and the cost-model helpers shared by estimate.c
 * (the model, estimates, ranking, settings) and calibrate.c (measurement, calibration files). */
#ifndef VT_ESTIMATOR_IMPL_H
#define VT_ESTIMATOR_IMPL_H

#include "estimate/estimate.h"
#include "nn/graph.h"
#include "nn/train_memory.h"

#define NRES 32 /* result slots: bits of vt_est_out.have */
#define STR_MAX 64
#define H2D_BW 12e9
#define CKPT_BW 200e6
#define FWD_LAYER_SHARE 0.4
/* Seconds per SiLU value a thread evaluates (exp_s x threads) without a probe: AMD Zen 3,
 * AVX2 kernels, BN + SiLU forward + backward against BN + ReLU, 2 values each */
#define CPU_EXP_S 1.5e-9
#define CPU_BF16_RATE 1.0 /* the CPU's bf16 GEMM rate / fp32 without a measurement (estimate.c) */

/* What a calibration found; saved to and loaded from a text file. */
typedef struct vt_calib {
    int valid, on_gpu, device;
    char gpu[VT_GPU_NAME_MAX]; /* catalog name of the local GPU, "" if unknown or CPU */
    vt_prec prec;
    vt_devmodel dm;
    double k;
    int64_t verified_max_batch; /* 0 = none */
    char model[STR_MAX];
    int imgsz, nb;
    int batches[3];
    double seconds[3];
} vt_calib;

typedef struct vt_est_out {
    double v[NRES];
    uint32_t have; /* bit r: result r is known */
} vt_est_out;

struct vt_estimator {
    char err[VT_ERRMSG_MAX];
    vt_logger log;
    vt_catalog cat;
    vt_optvals opts; /* VT_SCOPE_ESTIMATOR: the VT_OPT_EST_* settings */
    int have_model, m_classes, m_channels;
    char m_arch[32];
    float m_dropout;
    vt_calib cal;
    int have_out;
    vt_est_out out;
    vt_est_out *rank_out;
    int rank_n;
    int rank_limit; /* the last ranking had a deadline or budget (for VT_PICK_WITHIN_LIMIT) */
    int rank_by;
};

#define OPT(e, id) vt_opt_num(&(e)->opts, id)
#define OSTR(e, id) vt_opt_str(&(e)->opts, id)


extern const char *const vt_est_prec_names[];

/* The precision a VT_OPT_EST_PRECISION value asks for (bf16 for "bf16" and "amp"). */
vt_prec vt_est_parse_prec(const char *s);
/* The precision the CPU runs when p is asked for: bf16 where it has AVX512-BF16
 * (vt_cpu_has_bf16), else fp32 (the trainer refuses bf16 there; tf32 and fp16 are fp32). */
vt_prec vt_est_cpu_precision(vt_prec p);
/* The CPU's wino_s at precision p for a model of streaming bandwidth bw where no probe measured
 * it (0 for bf16 or with VT_CPU_WINOGRAD=0). */
double vt_est_cpu_wino_prior(vt_prec p, double bw);

/* Graph of the estimator's model setting (caller frees with vt_graph_free). */
vt_status vt_est_build_graph(const vt_estimator *e, vt_graph *g);

/* Seconds of one training step's gradient all-reduces over n devices (0 for n < 2) of
 * `params` floats, on a link of bw bytes/s with hop_s seconds per ring hop (estimate.c). */
double vt_est_allreduce_seconds(int n, double params, double bw, double hop_s);

/* Calibration: R, s0 and row_s of dm from n (2 or 3) convolution probes, probe i taking t[i]
 * seconds for F[i] FLOPs at GEMM size d[i] over rows[i] im2col rows, as the formula has it:
 * t = F/R + (F/d)*(s0/R) + rows*row_s.  Three probes solve for all three; two (or three whose
 * answer is unphysical: R or row_s not positive, s0 negative) give R and s0 from the first
 * two, with row_s 0.  calibrate.c. */
void vt_est_solve_probes(int n, const double *t, const double *F, const double *d,
                         const double *rows, vt_devmodel *dm);

#endif
