/* vt info (version, devices, the GPU catalog, every option) and vt estimate (the time and cost
 * of a training run, one GPU in detail or the catalog ranked). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vt_cli.h"

/* ---- info ------------------------------------------------------------------------------- */

/* Every option of the library's one table, by the handle or call that takes it. */
static void print_options(void)
{
    static const struct {
        int scope;
        const char *title;
    } groups[] = {
        {VT_SCOPE_TRAINER, "training options (vt train/val key=value)"},
        {VT_SCOPE_MODEL, "model options (vt train, for a new model)"},
        {VT_SCOPE_ESTIMATOR, "estimator settings (vt estimate key=value, see 'vt help estimate')"},
        {VT_SCOPE_DATASET_OPEN, "opening a dataset (vt train/val; vt_dataset_open_ex)"},
        {VT_SCOPE_DATASET_VALIDATE, "validating a dataset (vt check; vt_dataset_validate)"},
        {VT_SCOPE_DATASET_SPLIT, "vt dataset split (vt_dataset_split)"},
        {VT_SCOPE_DATASET_SUBSET, "vt dataset subset (vt_dataset_subset)"},
        {VT_SCOPE_SYNTH_CLASSIFY, "vt synth task=classify (vt_synth_generate)"},
        {VT_SCOPE_SYNTH_DETECT, "vt synth task=detect|segment (vt_synth_generate)"},
        {VT_SCOPE_CALIBRATE, "calibration (vt estimate calibrate=1, local_gpu= for gpu=; "
                             "vt_estimator_calibrate)"},
        {VT_SCOPE_EXPORT, "vt export (vt_model_export)"},
    };
    printf("\noptions: key, type, range, default, meaning\n");
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        printf("%s:\n", groups[g].title);
        for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
            if (!(vt_option_scopes((vt_option)id) & groups[g].scope)) continue;
            const char *key, *help, *def_str;
            vt_option_type type;
            double lo, hi, def;
            if (vt_option_info((vt_option)id, &key, &type, &lo, &hi, &help) ||
                vt_option_default((vt_option)id, &def, &def_str))
                continue;
            char range[64] = "", dflt[64];
            if (type != VT_OPTION_STRING)
                snprintf(range, sizeof range, lo == floor(lo) && hi == floor(hi) && hi < 1e18
                         ? "%.0f..%.0f" : "%g..%g", lo, hi);
            if (type == VT_OPTION_STRING) snprintf(dflt, sizeof dflt, "%s", *def_str ? def_str : "''");
            else snprintf(dflt, sizeof dflt, "%.15g", def);
            printf("  %-18s %-6s %-20s %-8s %s\n", key,
                   type == VT_OPTION_INT ? "int" : type == VT_OPTION_FLOAT ? "float" : "string",
                   range, dflt, help);
        }
    }
}

static void print_catalog(const vt_catalog *cat)
{
    int n = vt_catalog_count(cat);
    printf("GPU catalog (%d GPUs; the estimator's; merge a CSV with catalog=FILE):\n", n);
    printf("  %-22s %-10s %-5s %4s %7s %8s %7s %7s %7s %6s\n", "name", "arch", "tier", "cc",
           "mem GB", "BW GB/s", "fp32", "tf32", "bf16", "USD/h");
    static const vt_gpu_field fields[] = {VT_GPU_MEMORY_GB, VT_GPU_BANDWIDTH_GBS,
                                          VT_GPU_FP32_TFLOPS, VT_GPU_TF32_TFLOPS,
                                          VT_GPU_BF16_TFLOPS, VT_GPU_PRICE_USD_H};
    static const int widths[] = {7, 8, 7, 7, 7, 6};
    static const char *const fmts[] = {"%.0f", "%.0f", "%.1f", "%.1f", "%.1f", "%.2f"};
    for (int i = 0; i < n; i++) {
        const char *arch = vt_catalog_gpu_arch(cat, i), *tier = vt_catalog_gpu_tier(cat, i);
        double cc;
        char ccb[16] = "-";
        if (vt_catalog_gpu_value(cat, i, VT_GPU_COMPUTE_CAPABILITY, &cc) == VT_OK)
            snprintf(ccb, sizeof ccb, "%.1f", cc);
        printf("  %-22s %-10s %-5s %4s", vt_catalog_gpu_name(cat, i), arch && *arch ? arch : "-",
               tier && *tier ? tier : "-", ccb);
        for (int f = 0; f < 6; f++) {
            double v;
            char b[32] = "-";
            if (vt_catalog_gpu_value(cat, i, fields[f], &v) == VT_OK) snprintf(b, sizeof b, fmts[f], v);
            printf(" %*s", widths[f], b);
        }
        printf("\n");
    }
    printf("  (TFLOPS are dense peaks; '-' where the catalog has no value)\n");
}

/* vt info model=FILE|ARCH: the model's layer list, the one freeze=N counts in. */
static int print_layers(const char *model, const char *classes, const char *imgsz)
{
    vt_model *m = NULL;
    vt_status st;
    if (names_file(model)) {
        if (classes || imgsz) {
            fprintf(stderr, "vt info: classes= and imgsz= apply to a new model, not to %s\n",
                    model);
            return EXIT_USAGE;
        }
        st = vt_model_load(&m, model);
    } else {
        /* without classes=: a model of boxes with COCO's 80 classes, another one of 10 */
        int det = (vt_task_label_kinds(vt_arch_task(model)) & VT_LABELS_BOXES) != 0;
        char opts[64] = "";
        if (imgsz) snprintf(opts, sizeof opts, "imgsz=%s", imgsz);
        st = vt_model_create(&m, model, classes ? atoi(classes) : det ? 80 : 10, opts);
    }
    if (st) return fail("info", st, NULL);
    int n = vt_model_num_layers(m), bb = vt_model_backbone_layers(m);
    printf("%s: %d classes, %d input channels, imgsz %d, %llu parameters, %.2f GFLOPs/image, "
           "%d layers (0..%d the backbone: freeze=backbone)\n", vt_model_arch(m),
           vt_model_num_classes(m), vt_model_channels(m), vt_model_imgsz(m),
           (unsigned long long)vt_model_num_params(m),
           vt_model_flops(m, vt_model_imgsz(m)) / 1e9, n, bb - 1);
    printf("  %5s  %-9s %-16s %10s\n", "layer", "kind", "output", "params");
    for (int i = 0; i < n; i++) {
        const char *kind;
        int c, h, w;
        uint64_t p;
        if (vt_model_layer(m, i, &kind, &c, &h, &w, &p)) continue;
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", c, h, w);
        printf("  %5d  %-9s %-16s %10llu%s\n", i, kind, shape, (unsigned long long)p,
               i == bb - 1 ? "   <- end of the backbone" : "");
    }
    vt_model_destroy(m);
    return 0;
}

int cmd_info(args *a)
{
    const char *csv = take(a, "catalog"), *model = take(a, "model");
    const char *classes = take(a, "classes"), *imgsz = take(a, "imgsz");
    int rc;
    if ((rc = reject_unknown(a, "catalog, model, classes, imgsz"))) return rc;
    if (model) return print_layers(model, classes, imgsz);
    if (classes || imgsz) {
        fprintf(stderr, "vt info: classes= and imgsz= go with model=\n");
        return EXIT_USAGE;
    }
    vt_catalog *cat = NULL;
    vt_status st = vt_catalog_create(&cat);
    if (st) return fail(a->cmd, st, NULL);
    if (csv && (st = vt_catalog_load_csv(cat, csv))) {
        rc = fail(a->cmd, st, vt_catalog_last_error(cat));
        vt_catalog_destroy(cat);
        return rc;
    }
    printf("libvisiontrain %s (ABI %u)\n", vt_version_string(), vt_abi_version());
    printf("cpu kernels: %s\n", vt_cpu_kernels());
    int ngpu = vt_device_count();
    if (ngpu == 0) {
        /* device 0's error says why: no CUDA in this build, no CUDA module, no driver, ... */
        vt_device_info(0, NULL, 0, NULL, NULL, NULL, NULL);
        printf("devices: cpu (no GPU: %s)\n", vt_last_error());
    }
    else {
        printf("devices: cpu, %d GPU%s\n", ngpu, ngpu == 1 ? "" : "s");
        for (int i = 0; i < ngpu; i++) {
            char name[256];
            int ma = 0, mi = 0;
            uint64_t total = 0, freeb = 0;
            if (vt_device_info(i, name, sizeof name, &ma, &mi, &total, &freeb))
                printf("  device=%d: %s\n", i, vt_last_error());
            else
                printf("  device=%d: %s, compute capability %d.%d, %.1f GB (%.1f GB free)\n", i,
                       name, ma, mi, total / 1e9, freeb / 1e9);
        }
    }
    /* the experimental cuDNN convolutions: the module decides when a backend is made */
    const char *dnn = getenv("VT_CUDNN");
    if (dnn && *dnn)
        printf("cuDNN convolutions: VT_CUDNN=%s%s (EXPERIMENTAL, not yet run on a GPU); a GPU "
               "run logs whether libcudnn.so.9 loaded (\"GPU convolutions: ...\")\n", dnn,
               strcmp(dnn, "1") == 0 ? " asks for them" : ": off (only VT_CUDNN=1 turns them on)");
    /* precision=bf16 and the step's CUDA graphs on a GPU: experimental, off unless asked for */
    if (ngpu > 0 || getenv("VT_CUDA_BF16") || getenv("VT_CUDA_GRAPHS")) {
        const char *bf = getenv("VT_CUDA_BF16"), *gr = getenv("VT_CUDA_GRAPHS");
        int bf_on = bf && !strcmp(bf, "1"), gr_on = gr && !strcmp(gr, "1");
        printf("GPU precision=bf16: EXPERIMENTAL, not yet run on a GPU; %s\n",
               bf_on ? "VT_CUDA_BF16=1 accepts it" : "refused unless VT_CUDA_BF16=1");
        printf("GPU CUDA graphs of the training step: EXPERIMENTAL, not yet run on a GPU; %s\n",
               gr_on ? "VT_CUDA_GRAPHS=1 turns them on" : "off (VT_CUDA_GRAPHS=1 turns them on)");
    }
    printf("\n");
    print_catalog(cat);
    vt_catalog_destroy(cat);
    print_options();
    return 0;
}

/* ---- estimate ----------------------------------------------------------------------------- */

static void est_log(void *user, vt_log_level level, const char *msg)
{
    (void)user;
    fprintf(stderr, "vt estimate: %s%s\n", level == VT_LOG_ERROR ? "error: " :
                    level == VT_LOG_WARNING ? "warning: " : "", msg);
}

#define EST_TOOL_KEYS                                                                            \
    "model, data, task, budget, deadline, catalog, calibrate, calibration, device, seconds, batches, " \
    "local_gpu, price, by, top"

static int est_result(const vt_estimator *e, int gi, vt_est_result r, double *v)
{
    vt_status st = gi < 0 ? vt_estimator_result(e, r, v) : vt_estimator_rank_result(e, gi, r, v);
    return st == VT_OK;
}

static const char *prec_name(double p)
{
    static const char *const names[] = {"fp32", "tf32", "bf16", "fp16"};
    return p >= 0 && p < 4 ? names[(int)p] : "?";
}


static const char *asked_precision = "tf32"; /* the run's precision= (the estimator has no getter) */

/* "fp32 (no TF32)" when the device runs another precision than the one asked for, else "". */
static void prec_note(const vt_estimator *e, int gi, const char *asked, char *out, size_t cap)
{
    double p;
    out[0] = '\0';
    if (!asked) asked = asked_precision;
    if (!strcmp(asked, "amp")) asked = "bf16";
    if (!est_result(e, gi, VT_EST_PRECISION, &p) || !strcmp(prec_name(p), asked)) return;
    char up[8];
    size_t i = 0;
    for (; asked[i] && i + 1 < sizeof up; i++)
        up[i] = (char)(asked[i] >= 'a' && asked[i] <= 'z' ? asked[i] - 32 : asked[i]);
    up[i] = '\0';
    snprintf(out, cap, "%s (no %s)", prec_name(p), up);
}

/* What an estimate's range rests on, with the range as percentages: "not calibrated (catalog
 * peaks x efficiency guesses): -50 %/+100 %". */
static void basis_text(const vt_estimator *e, int gi, char *out, size_t cap)
{
    double basis = 0, t = 0, lo = 0, hi = 0;
    out[0] = '\0';
    if (!est_result(e, gi, VT_EST_BASIS, &basis) || !est_result(e, gi, VT_EST_TOTAL_SECONDS, &t) ||
        !est_result(e, gi, VT_EST_TOTAL_SECONDS_LOW, &lo) ||
        !est_result(e, gi, VT_EST_TOTAL_SECONDS_HIGH, &hi) || !(t > 0))
        return;
    const char *what = basis == VT_EST_BASIS_CALIBRATED ? "calibrated on this device"
                     : basis == VT_EST_BASIS_EXTRAPOLATED
                         ? "extrapolated from the GPU calibrated here by catalog rates"
                         : "not calibrated (catalog peaks x efficiency guesses; calibrate=1 on "
                           "a GPU narrows it)";
    double l = (1 - lo / t) * 100, h = (hi / t - 1) * 100;
    if (fabs(l - h) < 0.5) snprintf(out, cap, "%s: +-%.0f %%", what, h);
    else snprintf(out, cap, "%s: -%.0f %%/+%.0f %%", what, l, h);
}

/* "0:21 (0:11-0:42), 1.23 USD (0.62-2.46)" for GPU gi of the ranking (-1: the last run). */
static const char *time_cost_text(const vt_estimator *e, int gi, char *out, size_t cap)
{
    double t = 0, tl = 0, th = 0, c, cl, ch;
    char a[32], b[32], d[32];
    est_result(e, gi, VT_EST_TOTAL_SECONDS, &t);
    est_result(e, gi, VT_EST_TOTAL_SECONDS_LOW, &tl);
    est_result(e, gi, VT_EST_TOTAL_SECONDS_HIGH, &th);
    int n = snprintf(out, cap, "%s h:mm (%s-%s)", fmt_hmm(t, a, sizeof a), fmt_hmm(tl, b, sizeof b),
                     fmt_hmm(th, d, sizeof d));
    if (n > 0 && (size_t)n < cap && est_result(e, gi, VT_EST_COST_USD, &c) &&
        est_result(e, gi, VT_EST_COST_USD_LOW, &cl) && est_result(e, gi, VT_EST_COST_USD_HIGH, &ch))
        snprintf(out + n, cap - (size_t)n, ", %.2f USD (%.2f-%.2f)", c, cl, ch);
    return out;
}

static void print_estimate_detail(const vt_estimator *e, const char *where)
{
    double v;
    char b[64];
    printf("estimate on %s:\n", where);
#define ROW(label, r, fmt, scale)                                                             \
    do {                                                                                      \
        if (est_result(e, -1, r, &v)) printf("  %-28s " fmt "\n", label, v * (scale));        \
        else printf("  %-28s -\n", label);                                                    \
    } while (0)
    ROW("parameters", VT_EST_PARAMS, "%.0f", 1);
    ROW("train GFLOPs / image", VT_EST_TRAIN_FLOPS_PER_IMAGE, "%.3f", 1e-9);
    ROW("step (s)", VT_EST_STEP_SECONDS, "%.4f", 1);
    ROW("  compute (s)", VT_EST_COMPUTE_SECONDS_PER_STEP, "%.4f", 1);
    ROW("  loader (s)", VT_EST_LOADER_SECONDS_PER_STEP, "%.4f", 1);
    if (est_result(e, -1, VT_EST_LOADER_BOUND, &v) && v > 0)
        printf("  %-28s %s\n", "", "loading bounds the step: add workers");
    if (est_result(e, -1, VT_EST_PRECISION, &v)) {
        char note[64];
        prec_note(e, -1, NULL, note, sizeof note);
        printf("  %-28s %s\n", "precision", *note ? note : prec_name(v));
    }
    ROW("steps / epoch", VT_EST_STEPS_PER_EPOCH, "%.0f", 1);
    ROW("train s / epoch", VT_EST_TRAIN_SECONDS_PER_EPOCH, "%.1f", 1);
    ROW("val s / epoch", VT_EST_VAL_SECONDS_PER_EPOCH, "%.1f", 1);
    ROW("s / epoch", VT_EST_EPOCH_SECONDS, "%.1f", 1);
    if (est_result(e, -1, VT_EST_TOTAL_SECONDS, &v))
        printf("  %-28s %s (h:mm, %.0f s)\n", "total time", fmt_hmm(v, b, sizeof b), v);
    {
        double lo, hi;
        if (est_result(e, -1, VT_EST_TOTAL_SECONDS_LOW, &lo) &&
            est_result(e, -1, VT_EST_TOTAL_SECONDS_HIGH, &hi)) {
            char b2[64];
            printf("  %-28s %s-", "total time range", fmt_hmm(lo, b, sizeof b));
            printf("%s\n", fmt_hmm(hi, b2, sizeof b2));
        }
    }
    ROW("price (USD/h)", VT_EST_USD_PER_HOUR, "%.2f", 1);
    ROW("cost (USD)", VT_EST_COST_USD, "%.2f", 1);
    {
        double lo, hi;
        if (est_result(e, -1, VT_EST_COST_USD_LOW, &lo) && est_result(e, -1, VT_EST_COST_USD_HIGH, &hi))
            printf("  %-28s %.2f-%.2f\n", "cost range (USD)", lo, hi);
        char basis[200];
        basis_text(e, -1, basis, sizeof basis);
        if (*basis) printf("  %-28s %s\n", "range", basis);
    }
    ROW("peak memory / device (GB)", VT_EST_PEAK_MEMORY_BYTES, "%.2f", 1e-9);
    ROW("usable memory / device (GB)", VT_EST_DEVICE_MEMORY_BYTES, "%.2f", 1e-9);
    if (est_result(e, -1, VT_EST_FITS, &v)) printf("  %-28s %s\n", "fits", v > 0 ? "yes" : "NO");
    ROW("largest batch that fits", VT_EST_MAX_BATCH, "%.0f", 1);
#undef ROW
}

/* The catalog entry of local GPU `device`, or -1: its CUDA name ("NVIDIA H100 80GB HBM3") as
 * is, else without a leading "NVIDIA "/"Tesla " word, else the catalog names that this name
 * starts with or that start with it, closest in memory first.  A guess: local_gpu= overrides. */
static int local_catalog_gpu(const vt_catalog *cat, int device)
{
    char name[256];
    uint64_t total = 0;
    if (vt_device_info(device, name, sizeof name, NULL, NULL, &total, NULL) != VT_OK) return -1;
    int gi = vt_catalog_find(cat, name);
    if (gi >= 0) return gi;
    const char *n = name;
    if (!strncasecmp(n, "NVIDIA ", 7)) n += 7;
    if (!strncasecmp(n, "Tesla ", 6)) n += 6;
    if (!strncasecmp(n, "GeForce ", 8)) n += 8;
    if ((gi = vt_catalog_find(cat, n)) >= 0) return gi;
    /* The first word (the model, "H100") must match the start of a catalog name; then the most
     * catalog words found in the CUDA name ("SXM" in "A100-SXM4-80GB"), then the nearest memory. */
    size_t w = strcspn(n, " -_");
    int best = -1, best_words = 0;
    double best_gap = 0;
    for (int i = 0; i < vt_catalog_count(cat); i++) {
        const char *c = vt_catalog_gpu_name(cat, i);
        if (strncasecmp(c, n, w) || (c[w] && c[w] != ' ' && c[w] != '-')) continue;
        int words = 0;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", c);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
            if (strcasestr(n, t)) words++;
        double mem = 0;
        vt_catalog_gpu_value(cat, i, VT_GPU_MEMORY_GB, &mem);
        double gap = fabs(mem * 1e9 - (double)total);
        /* a tie (H200 NVL / H200 SXM): the SXM form, the usual one in clouds */
        int tie = best >= 0 && words == best_words && fabs(gap - best_gap) < 1e9;
        if (best < 0 || words > best_words || (words == best_words && gap < best_gap - 1e9) ||
            (tie && strstr(c, "SXM") && !strstr(vt_catalog_gpu_name(cat, best), "SXM"))) {
            best = i;
            best_words = words;
            best_gap = gap;
        }
    }
    return best;
}

/* The recommendation under the table: best buy, fastest, cheapest, and the best within the
 * deadline or budget, or what comes nearest when nothing meets it (vt_estimator_pick). */
static void print_recommendation(const vt_estimator *e, vt_rank_by by, const char *deadline,
                                 const char *budget)
{
    const vt_catalog *cat = vt_estimator_catalog((vt_estimator *)e); /* read only */
    int best = -1, fast = -1, cheap = -1, within = -1;
    char tc[160], basis[200];
    vt_estimator_pick(e, VT_PICK_BEST_BUY, &best);
    vt_estimator_pick(e, VT_PICK_FASTEST, &fast);
    vt_estimator_pick(e, VT_PICK_CHEAPEST, &cheap);
    int limit = (deadline || budget) && by >= VT_RANK_COST_WITHIN_DEADLINE;
    if (limit) vt_estimator_pick(e, VT_PICK_WITHIN_LIMIT, &within);
    if (fast < 0) {
        printf("recommendation: none: the run fits no GPU at this batch (lower batch= or imgsz=)\n");
        return;
    }
    printf("recommendation:\n");
    if (limit && within >= 0)
        printf("  %-17s %s: %s\n", deadline ? "within deadline" : "within budget",
               vt_catalog_gpu_name(cat, within), time_cost_text(e, within, tc, sizeof tc));
    if (best >= 0)
        printf("  %-17s %s: %s\n", "best buy", vt_catalog_gpu_name(cat, best),
               time_cost_text(e, best, tc, sizeof tc));
    printf("  %-17s %s: %s\n", "fastest", vt_catalog_gpu_name(cat, fast),
           time_cost_text(e, fast, tc, sizeof tc));
    if (cheap >= 0)
        printf("  %-17s %s: %s\n", "cheapest", vt_catalog_gpu_name(cat, cheap),
               time_cost_text(e, cheap, tc, sizeof tc));
    if (limit && within < 0) {
        char t1[32];
        double c = 0, t = 0;
        printf("  nothing fits the %s of %s %s:", deadline ? "deadline" : "budget",
               deadline ? deadline : budget, deadline ? "h" : "USD");
        if (cheap >= 0 && est_result(e, cheap, VT_EST_COST_USD, &c))
            printf(" the cheapest is %s at %.2f USD,", vt_catalog_gpu_name(cat, cheap), c);
        est_result(e, fast, VT_EST_TOTAL_SECONDS, &t);
        printf(" the fastest is %s in %s h:mm\n", vt_catalog_gpu_name(cat, fast),
               fmt_hmm(t, t1, sizeof t1));
    }
    basis_text(e, best >= 0 ? best : fast, basis, sizeof basis);
    if (*basis) printf("  ranges: %s\n", basis);
}

/* The estimator's keys and values of the arguments, each set on a throw-away estimator before
 * any work (as check_trainer_keys does for training): every bad one is reported, with the
 * name given (price=, not the estimator's local_price=).  The number of bad ones. */
static int probe_estimator_values(const args *a)
{
    static const char *const alias[][2] = {{"budget", "budget_usd"}, {"deadline", "deadline_h"},
                                           {"price", "local_price"}};
    vt_estimator *p = NULL;
    if (vt_estimator_create(&p)) return 0; /* cannot check here: the real estimator will */
    int bad = 0, unknown = 0;
    for (int i = 0; i < a->n; i++) {
        const kv *k = &a->kv[i];
        const char *name = NULL; /* the estimator's key of a CLI name */
        for (size_t j = 0; j < sizeof alias / sizeof *alias; j++)
            if (key_is(k, alias[j][0])) name = alias[j][1];
        if (k->tool && !name) continue;
        char kvb[512];
        snprintf(kvb, sizeof kvb, "%s=%s", name ? name : "", k->val);
        vt_status st = vt_estimator_set(p, name ? kvb : k->arg);
        if (!st) continue;
        bad++;
        unknown |= st == VT_ERR_UNKNOWN_OPTION;
        const char *msg = vt_estimator_last_error(p);
        size_t nl = name ? strlen(name) : 0;
        if (name && !strncmp(msg, name, nl) && msg[nl] == '=')
            fprintf(stderr, "vt %s: %.*s%s (%s)\n", a->cmd, (int)k->klen, k->arg, msg + nl,
                    vt_status_string(st));
        else
            fail(a->cmd, st, msg);
    }
    if (unknown) fprintf(stderr, "vt %s also takes: gpu, %s\n", a->cmd, EST_TOOL_KEYS);
    vt_estimator_destroy(p);
    return bad;
}

int cmd_estimate(args *a)
{
    const char *cmd = a->cmd;
    const char *model = take(a, "model"), *data = take(a, "data"), *budget = take(a, "budget");
    const char *deadline = take(a, "deadline"), *csv = take(a, "catalog");
    const char *calib_s = take(a, "calibrate"), *calib_file = take(a, "calibration");
    const char *device = take(a, "device"), *seconds = take(a, "seconds");
    const char *batches = take(a, "batches"), *price = take(a, "price"), *by_s = take(a, "by");
    const char *top_s = take(a, "top"), *gpu = take(a, "gpu"), *local_gpu = take(a, "local_gpu");
    const char *task_s = take(a, "task");
    int rc, calibrate = 0;
    long top = 0;
    double tmp;
    /* every bad value is reported, then one exit */
    int bad = 0;
    bad += flag_value(cmd, "calibrate", calib_s, &calibrate) != 0;
    bad += int_value(cmd, "top", top_s, 1, 100000, &top) != 0;
    bad += num_value(cmd, "seconds", seconds, 0.1, &tmp) != 0;
    if (!gpu) gpu = "all";
    int all = !strcmp(gpu, "all");
    vt_rank_by by = VT_RANK_COST;
    if (by_s) {
        if (!strcmp(by_s, "cost")) by = VT_RANK_COST;
        else if (!strcmp(by_s, "time")) by = VT_RANK_TIME;
        else {
            fprintf(stderr, "vt estimate: by=%s: valid values: cost, time\n", by_s);
            bad++;
        }
    }
    if (budget && deadline) {
        fprintf(stderr, "vt estimate: give deadline= (cheapest within it) or budget= (fastest "
                        "within it), not both\n");
        bad++;
    }
    vt_task tk0;
    if (task_s) bad += task_value(cmd, task_s, data ? data : "", &tk0) != 0;
    bad += probe_estimator_values(a);
    if (bad) {
        if (bad > 1) fprintf(stderr, "vt estimate: %d bad values; nothing estimated\n", bad);
        return EXIT_USAGE;
    }
    if (deadline) by = VT_RANK_COST_WITHIN_DEADLINE;
    if (budget) by = VT_RANK_TIME_WITHIN_BUDGET;

    vt_estimator *e = NULL;
    vt_model *m = NULL;
    vt_dataset *ds = NULL;
    int *order = NULL;
    vt_status st = vt_estimator_create(&e);
    if (st) return fail(cmd, st, NULL);
    vt_estimator_set_log(e, est_log, NULL, VT_LOG_WARNING);
#define EST_FAIL(s)                                                                              \
    do {                                                                                         \
        rc = fail(cmd, (s), vt_estimator_last_error(e));                                         \
        goto out;                                                                                \
    } while (0)
    char kvb[512];
    if (csv && (st = vt_catalog_load_csv(vt_estimator_catalog(e), csv))) {
        rc = fail(cmd, st, vt_catalog_last_error(vt_estimator_catalog(e)));
        goto out;
    }
    if (model && names_file(model)) {
        if ((st = vt_model_load(&m, model))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
        if ((st = vt_estimator_set_model(e, m))) EST_FAIL(st);
    } else if (model) {
        snprintf(kvb, sizeof kvb, "model=%s", model);
        if ((st = vt_estimator_set(e, kvb))) EST_FAIL(st);
    }
    if (data) {
        /* the task as vt train guesses it: the model's (a saved model's, or a name's as
         * model_task_or says), else the data's layout (a .yaml/.yml/.json or a folder holding
         * data.yaml: detection) */
        vt_task tk;
        if (task_value(cmd, task_s, data, &tk)) {
            rc = EXIT_USAGE;
            goto out;
        }
        if (!task_s && m) tk = vt_model_task(m);
        else if (!task_s) tk = model_task_or(model, tk);
        if (!model) { /* the default model of that task, as vt train's */
            static char dm[80];
            const char *def = vt_task_default_model(tk);
            snprintf(dm, sizeof dm, "model=%s", def ? def : "");
            if ((st = vt_estimator_set(e, dm))) EST_FAIL(st);
            model = dm + 6;
        }
        if ((st = vt_dataset_open(&ds, tk, data))) {
            rc = fail(cmd, st, NULL);
            goto out;
        }
        if ((st = vt_estimator_set_dataset(e, ds))) EST_FAIL(st);
        if (!m && (st = vt_estimator_set_int(e, VT_OPT_EST_CLASSES, vt_dataset_num_classes(ds))))
            EST_FAIL(st);
    }
    /* CLI names of estimator keys */
    const char *alias[][2] = {{"budget_usd", budget}, {"deadline_h", deadline},
                              {"local_price", price}};
    for (int i = 0; i < 3; i++) {
        if (!alias[i][1]) continue;
        snprintf(kvb, sizeof kvb, "%s=%s", alias[i][0], alias[i][1]);
        if ((st = vt_estimator_set(e, kvb))) EST_FAIL(st);
    }
    for (int i = 0; i < a->n; i++) {
        if (a->kv[i].tool) continue;
        if ((st = vt_estimator_set(e, a->kv[i].arg))) {
            rc = fail(cmd, st, vt_estimator_last_error(e));
            if (st == VT_ERR_UNKNOWN_OPTION) fprintf(stderr, "vt estimate also takes: gpu, %s\n",
                                                     EST_TOOL_KEYS);
            goto out;
        }
    }
    if (!all && (st = vt_estimator_set_string(e, VT_OPT_EST_GPU, gpu))) EST_FAIL(st);
    for (int i = 0; i < a->n; i++)
        if (key_is(&a->kv[i], "precision")) asked_precision = a->kv[i].val;

    /* calibration: load a saved one, or measure */
    if (calib_file && !calibrate) {
        if ((st = vt_estimator_load_calibration(e, calib_file))) EST_FAIL(st);
        printf("loaded the calibration %s\n", calib_file);
    }
    if (calibrate) {
        char dev[32], opts[256] = "";
        size_t used = 0;
        if (device) snprintf(dev, sizeof dev, "%s", device);
        else snprintf(dev, sizeof dev, "%s", vt_device_count() > 0 ? "0" : "cpu");
        if (seconds) used += (size_t)snprintf(opts + used, sizeof opts - used, "seconds=%s ", seconds);
        if (batches) used += (size_t)snprintf(opts + used, sizeof opts - used, "batches=%s ", batches);
        else { /* the library's default batch/4 can be 1, which cannot train (batch-norm) */
            long bsz = 16;
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], "batch")) bsz = atol(a->kv[i].val);
            long b[3] = {bsz / 4, bsz / 2, bsz};
            int nb = 0;
            char list[64] = "";
            for (int i = 0; i < 3; i++) {
                if (b[i] < 2) b[i] = 2;
                if (nb && b[i] == b[nb - 1]) continue;
                b[nb] = b[i];
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%ld", nb ? "," : "", b[i]);
                nb++;
            }
            used += (size_t)snprintf(opts + used, sizeof opts - used, "batches=%s ", list);
        }
        if (strcmp(dev, "cpu") != 0) { /* name the local GPU in the catalog, if it is there */
            const vt_catalog *cat = vt_estimator_catalog(e);
            int gi = local_gpu ? vt_catalog_find(cat, local_gpu) : local_catalog_gpu(cat, atoi(dev));
            if (local_gpu && gi < 0) {
                rc = fail(cmd, VT_ERR_OPTION_VALUE, NULL);
                goto out;
            }
            if (gi >= 0) {
                /* the options list is space-separated: catalog names match without spaces */
                char gname[128];
                snprintf(gname, sizeof gname, "%s", vt_catalog_gpu_name(cat, gi));
                for (char *c = gname; *c; c++)
                    if (*c == ' ') *c = '-';
                snprintf(opts + used, sizeof opts - used, "gpu=%s", gname);
                printf("the local GPU is the catalog's %s (local_gpu=NAME to say otherwise)\n",
                       vt_catalog_gpu_name(cat, gi));
            } else
                fprintf(stderr, "vt estimate: the local GPU is not in the catalog (local_gpu=NAME "
                                "names it): its measurements are not extrapolated to other GPUs\n");
        }
        /* vt_estimator_calibrate blocks for up to about 1.5 x seconds */
        printf("calibrating on device %s (up to about %.0f s) ...\n", dev,
               1.5 * (seconds ? atof(seconds) : 10.0));
        fflush(stdout);
        if ((st = vt_estimator_calibrate(e, dev, opts))) EST_FAIL(st);
        if (calib_file) {
            if ((st = vt_estimator_save_calibration(e, calib_file))) EST_FAIL(st);
            printf("saved the calibration to %s\n", calib_file);
        }
    }

    char b1[32];

    /* what is estimated (the estimator has no getters: the arguments, else the defaults) */
    {
        const char *keys[] = {"epochs", "imgsz", "batch", "gpus", "precision", "optimizer"};
        const char *dflt[] = {"100", "640", "16", "1", "tf32", "sgd"};
        const char *est_model = NULL; /* the estimator's default model */
        if (!m && !model) vt_option_default(VT_OPT_EST_MODEL, NULL, &est_model);
        printf("run: %s", m ? vt_model_arch(m) : model ? model : est_model ? est_model : "?");
        if (ds)
            printf(", %d classes, %d train / %d val images", vt_dataset_num_classes(ds),
                   vt_dataset_num_images(ds, VT_SPLIT_TRAIN), vt_dataset_num_images(ds, VT_SPLIT_VAL));
        else {
            const char *c = NULL, *tr = NULL, *va = NULL;
            for (int i = 0; i < a->n; i++) {
                if (key_is(&a->kv[i], "classes")) c = a->kv[i].val;
                if (key_is(&a->kv[i], "train")) tr = a->kv[i].val;
                if (key_is(&a->kv[i], "val")) va = a->kv[i].val;
            }
            if (m) printf(", %d classes", vt_model_num_classes(m));
            else printf(", %s classes", c ? c : "10");
            printf(", %s train / %s val images", tr ? tr : "1000", va ? va : "0");
        }
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *val = dflt[k];
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], keys[k])) val = a->kv[i].val;
            printf(", %s %s", keys[k], val);
        }
        printf("\n");
    }
    if (!all) {
        if ((st = vt_estimator_run(e))) {
            rc = fail(cmd, st, vt_estimator_last_error(e));
            if (st == VT_ERR_NOT_FOUND) rc = EXIT_USAGE; /* an unknown GPU name */
            goto out;
        }
        char where[300];
        int gi = vt_catalog_find(vt_estimator_catalog(e), gpu); /* "H200" -> "H200 SXM" */
        snprintf(where, sizeof where, "%s%s", gi >= 0 ? vt_catalog_gpu_name(vt_estimator_catalog(e), gi) : gpu,
                 !strcmp(gpu, "local") && !vt_estimator_is_calibrated(e)
                     ? " (not calibrated: the CPU's built-in guesses; add calibrate=1)"
                     : "");
        print_estimate_detail(e, where);
    } else {
        int count = 0;
        if ((st = vt_estimator_rank(e, by, NULL, 0, &count))) EST_FAIL(st);
        order = calloc((size_t)(count > 0 ? count : 1), sizeof *order);
        if (!order) EST_FAIL(VT_ERR_OUT_OF_MEMORY);
        if ((st = vt_estimator_rank(e, by, order, count, &count))) EST_FAIL(st);
        const vt_catalog *cat = vt_estimator_catalog(e);
        static const char *const by_text[] = {"", "cost", "time", "cost within the deadline",
                                              "time within the budget"};
        printf("%d GPUs ranked by %s", count, by_text[by]);
        if (deadline) printf(" of %s h", deadline);
        if (budget) printf(" of %s USD", budget);
        printf(":\n");
        printf("%4s  %-15s %6s %4s %9s %8s %6s %11s %6s %8s %11s  %s\n", "rank", "GPU", "mem GB",
               "fits", "max batch", "s/epoch", "total", "time range", "USD/h", "cost USD",
               "cost range", "note");
        int shown_n = 0, limit = by >= VT_RANK_COST_WITHIN_DEADLINE;
        for (int r = 0; r < count; r++) {
            if (top && shown_n >= top) break;
            int gi = order[r];
            double fits = 0, maxb = 0, epoch = 0, total = 0, usdh, cost, mem, meets = 1, lb = 0;
            est_result(e, gi, VT_EST_FITS, &fits);
            est_result(e, gi, VT_EST_MAX_BATCH, &maxb);
            est_result(e, gi, VT_EST_EPOCH_SECONDS, &epoch);
            est_result(e, gi, VT_EST_TOTAL_SECONDS, &total);
            est_result(e, gi, VT_EST_MEETS_LIMIT, &meets);
            est_result(e, gi, VT_EST_LOADER_BOUND, &lb);
            char memb[16] = "-", usdb[16] = "-", costb[16] = "-", epb[24], maxbb[16];
            if (vt_catalog_gpu_value(cat, gi, VT_GPU_MEMORY_GB, &mem) == VT_OK)
                snprintf(memb, sizeof memb, "%.0f", mem);
            if (est_result(e, gi, VT_EST_USD_PER_HOUR, &usdh)) snprintf(usdb, sizeof usdb, "%.2f", usdh);
            if (est_result(e, gi, VT_EST_COST_USD, &cost))
                snprintf(costb, sizeof costb, cost < 0.005 ? "<0.01" : "%.2f", cost);
            snprintf(epb, sizeof epb, epoch < 10 ? "%.2f" : "%.1f", epoch);
            snprintf(maxbb, sizeof maxbb, "%.0f", maxb);
            char note[96] = "";
            if (!(fits > 0)) snprintf(note, sizeof note, "out of memory at this batch");
            else if (limit && !(meets > 0))
                snprintf(note, sizeof note, "%s", deadline ? "misses the deadline" : "over budget");
            else if (lb > 0) snprintf(note, sizeof note, "loader-bound");
            char pn[32];
            prec_note(e, gi, NULL, pn, sizeof pn);
            if (*pn) /* the precision the GPU runs, when not the one asked for */
                snprintf(note + strlen(note), sizeof note - strlen(note), "%s%s", *note ? "; " : "", pn);
            char trange[40] = "-", crange[40] = "-", tl[16], th[16];
            double lo, hi;
            if (fits > 0 && est_result(e, gi, VT_EST_TOTAL_SECONDS_LOW, &lo) &&
                est_result(e, gi, VT_EST_TOTAL_SECONDS_HIGH, &hi))
                snprintf(trange, sizeof trange, "%s-%s", fmt_hmm(lo, tl, sizeof tl),
                         fmt_hmm(hi, th, sizeof th));
            if (fits > 0 && est_result(e, gi, VT_EST_COST_USD_LOW, &lo) &&
                est_result(e, gi, VT_EST_COST_USD_HIGH, &hi))
                snprintf(crange, sizeof crange, hi < 0.005 ? "<0.01" : "%.2f-%.2f", lo, hi);
            printf("%4d  %-15.15s %6s %4s %9s %8s %6s %11s %6s %8s %11s  %s\n", r + 1,
                   vt_catalog_gpu_name(cat, gi), memb, fits > 0 ? "yes" : "no", maxbb,
                   fits > 0 ? epb : "-", fits > 0 ? fmt_hmm(total, b1, sizeof b1) : "-", trange,
                   usdb, fits > 0 ? costb : "-", crange, note);
            shown_n++;
        }
        if (top && count > top) printf("  ... %d more (top=%ld shown)\n", count - (int)top, top);
        printf("  total time is h:mm; cost '-': the catalog has no price for the GPU\n");
        print_recommendation(e, by, deadline, budget);
        if (vt_estimator_is_calibrated(e)) {
            /* the measured local device, too */
            if ((st = vt_estimator_set_string(e, VT_OPT_EST_GPU, "local"))) EST_FAIL(st);
            if ((st = vt_estimator_run(e)) == VT_OK) {
                double epoch = 0, total = 0;
                vt_estimator_result(e, VT_EST_EPOCH_SECONDS, &epoch);
                vt_estimator_result(e, VT_EST_TOTAL_SECONDS, &total);
                printf("local device (calibrated): %.2f s/epoch, total %s\n", epoch,
                       fmt_hmm(total, b1, sizeof b1));
            }
        }
    }
    /* the run's sizes, and the dataset advice */
    {
        double train_n = 0;
        if (ds) train_n = vt_dataset_num_images(ds, VT_SPLIT_TRAIN);
        else {
            /* read back what vt_estimator_set got: the estimator has no getter, so parse args */
            train_n = 1000;
            for (int i = 0; i < a->n; i++)
                if (key_is(&a->kv[i], "train")) train_n = atof(a->kv[i].val);
        }
        printf("advice: %s\n", vt_estimate_dataset_advice((int64_t)train_n));
    }
    rc = 0;
out:
#undef EST_FAIL
    free(order);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
    vt_estimator_destroy(e);
    return rc;
}
