/* Training checkpoints, resume, and the run folder.
 *
 * A training checkpoint is a checkpoint container (checkpoint.h) holding the model's sections
 * (META, NAME, PARM, BUFS: what vt_model_load reads) followed by the trainer's:
 *
 *   TRNR  text, "key=value" lines: format=1, task, the position (epoch, batch, nb, iteration),
 *         opt_t, partial-epoch sums, elapsed time, best fitness and epoch, EMA update count,
 *         the dataset hash and image counts, the dataset's absolute path (data=).  Doubles are written as C99 hex floats (%a) so
 *         they read back bit for bit.
 *   ARGS  text, "key=value" lines: every trainer option and its value.
 *   OPTM  float32[n_params]: SGD momentum buffer / AdamW first moment.
 *   OPTV  float32[n_params]: AdamW second moment (adamw only).
 *   TPRM  float32[n_params], TBUF float32[n_buffers]: the raw training weights when ema=1
 *         (PARM/BUFS then hold the EMA weights, the ones to use).
 *   HIST  text: the results table (results.csv with 17 significant digits).
 *
 * The full description, for users, is lib/train/CHECKPOINT_FORMAT.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/buffer.h"
#include "train/trainer_impl.h"

#define TAG_TRNR VT_TAG('T', 'R', 'N', 'R')
#define TAG_ARGS VT_TAG('A', 'R', 'G', 'S')
#define TAG_OPTM VT_TAG('O', 'P', 'T', 'M')
#define TAG_OPTV VT_TAG('O', 'P', 'T', 'V')
#define TAG_TPRM VT_TAG('T', 'P', 'R', 'M')
#define TAG_TBUF VT_TAG('T', 'B', 'U', 'F')
#define TAG_HIST VT_TAG('H', 'I', 'S', 'T')
#define TAG_PARM VT_TAG('P', 'A', 'R', 'M')
#define TAG_BUFS VT_TAG('B', 'U', 'F', 'S')

enum { TRNR_FORMAT = 1 };

/* ---- dataset hash ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t vt_dataset_hash(const vt_dataset *ds)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t rl = strlen(ds->root);
    for (int s = VT_SPLIT_TRAIN; s <= VT_SPLIT_VAL; s++) {
        const vt_split_list *l = &ds->split[s];
        char head[32];
        int k = snprintf(head, sizeof head, "split %d %d\n", s, l->n);
        h = fnv(h, head, (size_t)k);
        for (int i = 0; i < l->n; i++) {
            const char *p = l->paths[i];
            if (strncmp(p, ds->root, rl) == 0) p += rl; /* relative: the folder may move */
            while (*p == '/') p++;
            h = fnv(h, p, strlen(p));
            k = snprintf(head, sizeof head, "\t%d\n", l->labels ? l->labels[i] : -1);
            h = fnv(h, head, (size_t)k);
        }
    }
    return h;
}

/* ---- files ---- */

static vt_status mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) return vt_fail(VT_ERR_IO, "%s: path too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return vt_create_fail(buf, "folder", errno);
        buf[i] = c;
    }
    /* the status and message of every writer (lib/core/atomic_file.c): a file where a folder
     * is wanted is ENOTDIR, as for a path through that file */
    struct stat sb;
    if (stat(path, &sb) != 0) return vt_create_fail(path, "folder", errno);
    if (!S_ISDIR(sb.st_mode)) return vt_create_fail(path, "folder", ENOTDIR);
    return VT_OK;
}


/* ---- options as text ---- */

/* The shortest "%.Ng" that strtod reads back as x (args.yaml: 0.9, not 0.90000000000000002;
 * ARGS: the same value bit for bit). */
static void fmt_shortest(char *buf, size_t cap, double x)
{
    for (int p = 6; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return;
    }
    snprintf(buf, cap, "%.17g", x);
}

/* Every trainer option as "key<sep>value\n" (sep "=" for ARGS, ": " for args.yaml).  t non-NULL
 * (args.yaml): the options whose 0 means "derived" (imgsz, lr0) show the value the run uses. */
static vt_status options_text(const vt_optvals *o, const vt_trainer *t, const char *sep,
                              int yaml, char **out, size_t *len)
{
    size_t cap = 256 * VT_OPT_SLOTS + (size_t)VT_OPT_STR_MAX * 8, k = 0;
    char *s = vt_malloc(cap);
    if (!s) return VT_ERR_OUT_OF_MEMORY;
    s[0] = 0;
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        const vt_optdef *d = vt_optdef_by_id(id);
        if (!(d->scope & VT_SCOPE_TRAINER) || k + VT_OPT_STR_MAX + 128 > cap) continue;
        if (d->type == VT_OPTION_STRING) {
            const char *v = vt_opt_str(o, id);
            k += (size_t)snprintf(s + k, cap - k, "%s%s%s\n", d->key, sep,
                                  yaml && !*v ? "''" : v);
        } else {
            double x = vt_opt_num(o, id);
            if (t && (id == VT_OPT_IMGSZ || id == VT_OPT_LR0))
                vt_trainer_get_float(t, (vt_option)id, &x);
            char num[64];
            fmt_shortest(num, sizeof num, x);
            k += (size_t)snprintf(s + k, cap - k, "%s%s%s\n", d->key, sep, num);
        }
    }
    /* where the run's weights came from (not an option: resume does not read it back) */
    if (t && yaml && t->xfer_n && k + 2 * sizeof t->xfer_note + 32 < cap) {
        k += (size_t)snprintf(s + k, cap - k, "transferred: '");
        for (const char *c = t->xfer_note; *c; c++) { /* YAML single quotes: ' as '' */
            if (*c == '\'') s[k++] = '\'';
            s[k++] = *c;
        }
        k += (size_t)snprintf(s + k, cap - k, "'\n");
    }
    *out = s;
    *len = k;
    return VT_OK;
}

static const vt_optdef *trainer_opt(const char *key, size_t len)
{
    return vt_optdef_in_scope(key, len, VT_SCOPE_TRAINER);
}

/* ---- run folder ---- */

vt_status vt_run_dir_create(vt_trainer *t, const char *reuse)
{
    char dir[4096];
    if (reuse) {
        snprintf(dir, sizeof dir, "%s", reuse);
    } else {
        char base[4096];
        int n = snprintf(base, sizeof base, "%s/%s", vt_opt_str(&t->opts, VT_OPT_PROJECT),
                         vt_task_dir_name(t->model->task));
        if (n >= (int)sizeof base - 64) return vt_fail(VT_ERR_IO, "%s: path too long", base);
        VT_TRY(mkdir_p(base));
        const char *name = vt_opt_str(&t->opts, VT_OPT_NAME);
        if (!*name || strchr(name, '/'))
            return vt_fail(VT_ERR_OPTION_VALUE, "name=%s: a run name must be a non-empty folder "
                           "name without '/'", name);
        int exist_ok = vt_opt_num(&t->opts, VT_OPT_EXIST_OK) != 0;
        for (int k = 1;; k++) {
            int len = k == 1 ? snprintf(dir, sizeof dir, "%s/%s", base, name)
                             : snprintf(dir, sizeof dir, "%s/%s%d", base, name, k);
            if (len >= (int)sizeof dir - 16) return vt_fail(VT_ERR_IO, "%s: path too long", dir);
            if (mkdir(dir, 0755) == 0) break;
            if (errno != EEXIST) return vt_create_fail(dir, "folder", errno);
            if (exist_ok) break;
            if (k > 100000) return vt_fail(VT_ERR_IO, "%s: too many runs named %s", base, name);
        }
    }
    char w[4200];
    snprintf(w, sizeof w, "%s/weights", dir);
    VT_TRY(mkdir_p(w));
    snprintf(t->run_dir, sizeof t->run_dir, "%s", dir);
    char *txt;
    size_t len;
    VT_TRY(options_text(&t->opts, t, ": ", 1, &txt, &len));
    snprintf(w, sizeof w, "%s/args.yaml", dir);
    vt_status st = vt_write_file_atomic(w, txt, len);
    free(txt);
    return st;
}

vt_status vt_train_write_results(vt_trainer *t)
{
    char *txt, path[4200];
    size_t len;
    VT_TRY(vt_results_to_csv(&t->results, 0, &txt, &len));
    snprintf(path, sizeof path, "%s/results.csv", t->run_dir);
    vt_status st = vt_write_file_atomic(path, txt, len);
    free(txt);
    return st;
}

/* ---- save ---- */

static vt_status add_text(vt_ckpt_writer *w, uint32_t tag, const char *s, size_t n)
{
    return vt_ckw_add(w, tag, s, n, 1);
}

vt_status vt_train_save(vt_trainer *t, const char *const *paths, int npaths)
{
    vt_model *m = t->model;
    VT_TRY(vt_trainer_pull_weights(t));
    vt_backend *be = t->be;
    size_t np = (size_t)m->graph.n_params, nbuf = (size_t)m->graph.n_buffers;
    int adamw = strcmp(vt_opt_str(&t->opts, VT_OPT_OPTIMIZER), "adamw") == 0;
    int ema = t->ema_p && vt_opt_num(&t->opts, VT_OPT_EMA) != 0;
    float *om = NULL, *ov = NULL, *ep = NULL, *eb = NULL;
    char *args = NULL, *hist = NULL;
    size_t args_n = 0, hist_n = 0;
    vt_ckpt_writer *w = NULL;
    vt_status st = VT_OK;
    om = vt_malloc(np * sizeof(float));
    if (adamw) ov = vt_malloc(np * sizeof(float));
    if (ema) {
        ep = vt_malloc(np * sizeof(float));
        eb = vt_malloc((nbuf ? nbuf : 1) * sizeof(float));
    }
    if (!om || (adamw && !ov) || (ema && (!ep || !eb))) {
        st = VT_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if ((st = be->ops->download(be, om, t->opt_m, np * sizeof(float)))) goto out;
    if (adamw && (st = be->ops->download(be, ov, t->opt_v, np * sizeof(float)))) goto out;
    if (ema) {
        if ((st = be->ops->download(be, ep, t->ema_p, np * sizeof(float)))) goto out;
        if (nbuf && (st = be->ops->download(be, eb, t->ema_b, nbuf * sizeof(float)))) goto out;
    }
    if ((st = vt_ckw_create(&w))) goto out;
    /* The model's sections: what vt_model_load gives (the EMA weights when ema=1). */
    if (ema) {
        vt_model view = *m;
        view.params = ep;
        view.buffers = eb;
        st = vt_model_write_sections(&view, w);
    } else {
        st = vt_model_write_sections(m, w);
    }
    if (st) goto out;
    const vt_train_pos *p = &t->pos;
    /* the dataset as an absolute path, so that resume=PATH alone can reopen it from anywhere */
    char *data_abs = realpath(t->ds->root, NULL);
    const char *data = data_abs ? data_abs : t->ds->root;
    char trnr[2048 + 4200];
    int tn = snprintf(trnr, sizeof trnr,
                      "format=%d\ntask=%d\nepoch=%d\nbatch=%d\nnb=%d\niteration=%lld\nopt_t=%lld\n"
                      "loss_sum=%a\nimages=%ld\ndata_wait=%a\nepoch_time=%a\nelapsed=%a\n"
                      "best_fitness=%a\nbest_epoch=%d\nema_updates=%lld\nema=%d\n"
                      "dataset_hash=%016llx\ntrain_images=%d\nval_images=%d\nworld=%d\n"
                      "global_batch=%d\nepoch_nb=%d\nseen=%ld\nlr_shift=%a\ndata=%s\n",
                      TRNR_FORMAT, (int)m->task, p->epoch, p->batch, p->nb,
                      (long long)p->iteration, (long long)t->opt_t, p->loss_sum, p->images,
                      p->data_wait, p->epoch_time, p->elapsed, p->best_fitness, p->best_epoch,
                      (long long)p->ema_updates, ema, (unsigned long long)vt_dataset_hash(t->ds),
                      t->ds->split[VT_SPLIT_TRAIN].n, t->ds->split[VT_SPLIT_VAL].n,
                      p->world > 0 ? p->world : 1, p->global_batch, p->epoch_nb, p->seen,
                      p->lr_shift, strchr(data, '\n') ? "" : data);
    free(data_abs);
    if (tn >= (int)sizeof trnr) tn = (int)sizeof trnr - 1;
    if ((st = add_text(w, TAG_TRNR, trnr, (size_t)tn))) goto out;
    if ((st = options_text(&t->opts, NULL, "=", 0, &args, &args_n)) ||
        (st = add_text(w, TAG_ARGS, args, args_n)))
        goto out;
    if ((st = vt_ckw_add(w, TAG_OPTM, om, np * sizeof(float), 1))) goto out;
    if (adamw && (st = vt_ckw_add(w, TAG_OPTV, ov, np * sizeof(float), 1))) goto out;
    if (ema && ((st = vt_ckw_add(w, TAG_TPRM, m->params, np * sizeof(float), 1)) ||
                (st = vt_ckw_add(w, TAG_TBUF, m->buffers, nbuf * sizeof(float), 1))))
        goto out;
    if ((st = vt_results_to_csv(&t->results, 1, &hist, &hist_n)) ||
        (st = add_text(w, TAG_HIST, hist, hist_n)))
        goto out;
    for (int i = 0; i < npaths && !st; i++) st = vt_ckw_write(w, paths[i]);
out:
    vt_ckw_destroy(w);
    free(om);
    free(ov);
    free(ep);
    free(eb);
    free(args);
    free(hist);
    return st;
}

/* ---- load ---- */

void vt_resume_state_free(vt_resume_state *rs)
{
    free(rs->opt_m);
    free(rs->opt_v);
    free(rs->ema_p);
    free(rs->ema_b);
    memset(rs, 0, sizeof *rs);
}

static vt_status need_ll(const char *path, const char *txt, size_t n, const char *key,
                         long long min, long long max, long long *out)
{
    char v[128];
    if (!vt_ckpt_kv(txt, n, key, v, sizeof v))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: trainer state lacks '%s'", path, key);
    if (vt_parse_int(key, v, min, max, out))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: bad trainer state: %s", path, vt_last_error());
    return VT_OK;
}

static vt_status need_d(const char *path, const char *txt, size_t n, const char *key, double *out)
{
    char v[128], *end;
    if (!vt_ckpt_kv(txt, n, key, v, sizeof v))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: trainer state lacks '%s'", path, key);
    *out = strtod(v, &end);
    if (!*v || *end || isnan(*out))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: bad trainer state: %s=%s", path, key, v);
    return VT_OK;
}

/* A key that older checkpoints lack: *out = def when it is absent. */
static vt_status opt_ll(const char *path, const char *txt, size_t n, const char *key,
                        long long min, long long max, long long def, long long *out)
{
    char v[128];
    *out = def;
    if (!vt_ckpt_kv(txt, n, key, v, sizeof v)) return VT_OK;
    return need_ll(path, txt, n, key, min, max, out);
}

static vt_status opt_d(const char *path, const char *txt, size_t n, const char *key, double def,
                       double *out)
{
    char v[128];
    *out = def;
    if (!vt_ckpt_kv(txt, n, key, v, sizeof v)) return VT_OK;
    return need_d(path, txt, n, key, out);
}

/* Get a section that must be there, of exactly `size` bytes when size != (size_t)-1. */
static vt_status need_sec(vt_ckpt *c, uint32_t tag, size_t size, void **data, size_t *n)
{
    vt_status st = vt_ckpt_get(c, tag, data, n);
    if (st == VT_ERR_NOT_FOUND)
        return vt_fail(VT_ERR_CHECKPOINT, "%s (not a training checkpoint: saved by vt_model_save?)",
                       vt_last_error());
    if (st) return st;
    if (size != (size_t)-1 && *n != size) {
        char t[5];
        for (int i = 0; i < 4; i++) t[i] = (char)(tag >> (8 * i));
        t[4] = 0;
        free(*data);
        *data = NULL;
        return vt_fail(VT_ERR_CHECKPOINT, "%s: section '%s' has %zu bytes, expected %zu",
                       vt_ckpt_path(c), t, *n, size);
    }
    return VT_OK;
}

/* Apply the checkpoint's options to every option not set explicitly on this trainer. */
static vt_status merge_options(vt_trainer *t, const char *path, const char *txt, size_t n)
{
    vt_optvals merged = t->opts;
    for (const char *p = txt, *end = txt + n; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            const vt_optdef *d = trainer_opt(p, (size_t)(eq - p));
            if (!d) {
                vt_log(&t->log, VT_LOG_WARNING, "%s: ignoring unknown option '%.*s'", path,
                       (int)(eq - p), p);
            } else if (!t->opts.set[vt_opt_index(d)] && d->id != VT_OPT_RESUME) {
                char kv[VT_OPT_STR_MAX + 64];
                snprintf(kv, sizeof kv, "%.*s", (int)len, p);
                if (vt_optvals_set_kv(&merged, kv))
                    return vt_fail(VT_ERR_CHECKPOINT, "%s: bad option in checkpoint: %s", path,
                                   vt_last_error());
            }
        }
        p = nl ? nl + 1 : end;
    }
    memcpy(merged.set, t->opts.set, sizeof merged.set);
    t->opts = merged;
    return VT_OK;
}

vt_status vt_train_load(vt_trainer *t, const char *path, vt_resume_state *rs)
{
    memset(rs, 0, sizeof *rs);
    vt_model *m = t->model;
    vt_ckpt *c = NULL;
    vt_model *cm = NULL;
    char *trnr = NULL, *args = NULL, *hist = NULL;
    void *tp = NULL, *tb = NULL;
    size_t trnr_n = 0, args_n = 0, hist_n = 0, n;
    vt_status st = vt_ckpt_open(&c, path);
    if (st) return st;
    if ((st = vt_model_from_checkpoint(&cm, c, vt_arch_find))) goto out;
    if (strcmp(cm->arch, m->arch) != 0 || cm->task != m->task ||
        cm->num_classes != m->num_classes || cm->channels != m->channels ||
        cm->imgsz != m->imgsz || cm->graph.n_params != m->graph.n_params ||
        cm->graph.n_buffers != m->graph.n_buffers) {
        st = vt_fail(VT_ERR_CHECKPOINT,
                     "%s: the checkpoint holds a %s with %d classes, %d channels, imgsz %d; the "
                     "trainer's model is a %s with %d classes, %d channels, imgsz %d",
                     path, cm->arch, cm->num_classes, cm->channels, cm->imgsz, m->arch,
                     m->num_classes, m->channels, m->imgsz);
        goto out;
    }
    if ((st = need_sec(c, TAG_TRNR, (size_t)-1, (void **)&trnr, &trnr_n))) goto out;
    long long v[10];
    double d[6];
    if ((st = need_ll(path, trnr, trnr_n, "format", 1, 1000000, &v[0]))) goto out;
    if (v[0] > TRNR_FORMAT) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: trainer state format %lld; this library reads up to "
                     "%d", path, v[0], TRNR_FORMAT);
        goto out;
    }
    int64_t np = m->graph.n_params, nbuf = m->graph.n_buffers;
    if ((st = need_ll(path, trnr, trnr_n, "epoch", 0, 100000, &v[1])) ||
        (st = need_ll(path, trnr, trnr_n, "batch", 0, INT32_MAX, &v[2])) ||
        (st = need_ll(path, trnr, trnr_n, "nb", 0, INT32_MAX, &v[3])) ||
        (st = need_ll(path, trnr, trnr_n, "iteration", 0, INT64_MAX, &v[4])) ||
        (st = need_ll(path, trnr, trnr_n, "opt_t", 0, INT64_MAX, &v[5])) ||
        (st = need_ll(path, trnr, trnr_n, "images", 0, INT64_MAX, &v[6])) ||
        (st = need_ll(path, trnr, trnr_n, "best_epoch", 0, 100000, &v[7])) ||
        (st = need_ll(path, trnr, trnr_n, "ema_updates", 0, INT64_MAX, &v[8])) ||
        (st = need_ll(path, trnr, trnr_n, "ema", 0, 1, &v[9])) ||
        (st = need_d(path, trnr, trnr_n, "loss_sum", &d[0])) ||
        (st = need_d(path, trnr, trnr_n, "data_wait", &d[1])) ||
        (st = need_d(path, trnr, trnr_n, "epoch_time", &d[2])) ||
        (st = need_d(path, trnr, trnr_n, "elapsed", &d[3])) ||
        (st = need_d(path, trnr, trnr_n, "best_fitness", &d[4])))
        goto out;
    /* the run's shape, absent before distributed checkpoints: one rank, the batch's images
     * not recorded (0), the epoch's batches those of the position, where in the epoch's
     * order unknown (-1: the resume needs the same batches per epoch) */
    long long w[4];
    double lr_shift;
    if ((st = opt_ll(path, trnr, trnr_n, "world", 1, 1 << 20, 1, &w[0])) ||
        (st = opt_ll(path, trnr, trnr_n, "global_batch", 0, INT32_MAX, 0, &w[1])) ||
        (st = opt_ll(path, trnr, trnr_n, "epoch_nb", 0, INT32_MAX, v[3], &w[2])) ||
        (st = opt_ll(path, trnr, trnr_n, "seen", -1, INT32_MAX, -1, &w[3])) ||
        (st = opt_d(path, trnr, trnr_n, "lr_shift", 0, &lr_shift)))
        goto out;
    if (v[2] > v[3]) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: bad trainer state: batch %lld of %lld", path, v[2],
                     v[3]);
        goto out;
    }
    char hv[64];
    if (!vt_ckpt_kv(trnr, trnr_n, "dataset_hash", hv, sizeof hv)) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: trainer state lacks 'dataset_hash'", path);
        goto out;
    }
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)vt_dataset_hash(t->ds));
    if (strcmp(hv, want) != 0) {
        st = vt_fail(VT_ERR_DATASET,
                     "%s: the dataset %s is not the one the checkpoint was trained on (file list "
                     "hash %s, checkpoint %s): images were added, removed or renamed",
                     path, t->ds->root, want, hv);
        goto out;
    }
    if ((st = need_sec(c, TAG_ARGS, (size_t)-1, (void **)&args, &args_n)) ||
        (st = merge_options(t, path, args, args_n)))
        goto out;
    if ((st = need_sec(c, TAG_OPTM, (size_t)np * 4, (void **)&rs->opt_m, &n))) goto out;
    if (strcmp(vt_opt_str(&t->opts, VT_OPT_OPTIMIZER), "adamw") == 0) {
        if (!vt_ckpt_has(c, TAG_OPTV)) {
            st = vt_fail(VT_ERR_CHECKPOINT, "%s: optimizer=adamw but the checkpoint has no "
                         "second moments (it was trained with sgd)", path);
            goto out;
        }
        if ((st = need_sec(c, TAG_OPTV, (size_t)np * 4, (void **)&rs->opt_v, &n))) goto out;
    }
    if (v[9]) { /* EMA run: PARM/BUFS are the EMA, TPRM/TBUF the training weights */
        if ((st = need_sec(c, TAG_TPRM, (size_t)np * 4, &tp, &n)) ||
            (st = need_sec(c, TAG_TBUF, (size_t)nbuf * 4, &tb, &n)))
            goto out;
    }
    if ((st = need_sec(c, TAG_HIST, (size_t)-1, (void **)&hist, &hist_n)) ||
        (st = vt_results_from_csv(&t->results, hist, hist_n, path)))
        goto out;
    /* Everything checked: take the weights.  Weights a trainer still holds on a device are
     * brought back first, so that they cannot overwrite these later. */
    if ((st = vt_model_pull(m))) goto out;
    memcpy(m->params, tp ? tp : cm->params, (size_t)np * sizeof(float));
    if (nbuf) memcpy(m->buffers, tb ? tb : cm->buffers, (size_t)nbuf * sizeof(float));
    m->version++;
    if (cm->class_names)
        vt_model_set_class_names(m, (const char *const *)cm->class_names, cm->num_classes);
    if (v[9] && vt_opt_num(&t->opts, VT_OPT_EMA) != 0) {
        rs->ema_p = cm->params; /* take ownership */
        rs->ema_b = cm->buffers;
        cm->params = NULL;
        cm->buffers = NULL;
    }
    rs->opt_t = v[5];
    vt_train_pos *p = &rs->pos;
    p->epoch = (int)v[1];
    p->batch = (int)v[2];
    p->nb = (int)v[3];
    p->iteration = v[4];
    p->images = (long)v[6];
    p->best_epoch = (int)v[7];
    p->ema_updates = v[8];
    p->loss_sum = d[0];
    p->data_wait = d[1];
    p->epoch_time = d[2];
    p->elapsed = d[3];
    p->best_fitness = d[4];
    p->world = (int)w[0];
    p->global_batch = (int)w[1];
    p->epoch_nb = (int)w[2];
    p->seen = (long)w[3];
    p->lr_shift = lr_shift;
    /* <run>/weights/<file>: continue in <run> */
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t dl = (size_t)(slash - path);
        if (dl >= 7 && memcmp(slash - 7, "weights", 7) == 0 && (dl == 7 || slash[-8] == '/') &&
            dl < sizeof rs->run_dir) {
            size_t rl = dl >= 8 ? dl - 8 : 0;
            if (rl == 0) snprintf(rs->run_dir, sizeof rs->run_dir, "%s", path[0] == '/' ? "/" : ".");
            else snprintf(rs->run_dir, sizeof rs->run_dir, "%.*s", (int)rl, path);
        }
    }
out:
    if (st) vt_resume_state_free(rs);
    free(trnr);
    free(args);
    free(hist);
    free(tp);
    free(tb);
    vt_model_destroy(cm);
    vt_ckpt_close(c);
    return st;
}

/* ---- the run arguments of a checkpoint ---- */

VT_API vt_status vt_checkpoint_args(const char *path, char *buf, size_t cap, size_t *len)
{
    static const char call[] = "vt_checkpoint_args";
    if (len) *len = 0;
    if (!path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: path is NULL", call);
    vt_status st = vt_buffer_args(call, buf, cap);
    if (st) return st;
    vt_ckpt *c = NULL;
    vt_model *cm = NULL;
    char *trnr = NULL, *args = NULL, *txt = NULL;
    size_t trnr_n = 0, args_n = 0;
    if ((st = vt_ckpt_open(&c, path))) return st;
    if ((st = vt_model_from_checkpoint(&cm, c, vt_arch_find)) ||
        (st = need_sec(c, TAG_TRNR, (size_t)-1, (void **)&trnr, &trnr_n)) ||
        (st = need_sec(c, TAG_ARGS, (size_t)-1, (void **)&args, &args_n)))
        goto out;
    size_t tcap = args_n + 4096 + 512, k = 0;
    if (!(txt = vt_malloc(tcap))) {
        st = VT_ERR_OUT_OF_MEMORY;
        goto out;
    }
    char data[4096], drop[64];
    fmt_shortest(drop, sizeof drop, (double)cm->dropout);
    k += (size_t)snprintf(txt, tcap, "%s%s%stask=%s\nmodel=%s\nnum_classes=%d\nchannels=%d\n"
                          "imgsz=%d\ndropout=%s\n",
                          vt_ckpt_kv(trnr, trnr_n, "data", data, sizeof data) ? "data=" : "",
                          vt_ckpt_kv(trnr, trnr_n, "data", data, sizeof data) ? data : "",
                          vt_ckpt_kv(trnr, trnr_n, "data", data, sizeof data) ? "\n" : "",
                          vt_task_dir_name(cm->task), cm->arch, cm->num_classes, cm->channels,
                          cm->imgsz, drop);
    /* then the trainer options, less those above (imgsz: the model's) and resume */
    for (const char *p = args, *end = args + args_n; p < end && k < tcap;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (l && !(l >= 6 && !memcmp(p, "imgsz=", 6)) && !(l >= 7 && !memcmp(p, "resume=", 7)))
            k += (size_t)snprintf(txt + k, tcap - k, "%.*s\n", (int)l, p);
        p = nl ? nl + 1 : end;
    }
    if (k >= tcap) k = tcap - 1;
    if (len) *len = k + 1;
    if (!(st = vt_buffer_fits_text(call, buf, cap, k + 1)) && buf) memcpy(buf, txt, k + 1);
out:
    free(txt);
    free(trnr);
    free(args);
    vt_model_destroy(cm);
    vt_ckpt_close(c);
    return st;
}
