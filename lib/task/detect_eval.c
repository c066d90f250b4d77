/* Detection post-processing (NMS, decoding) and evaluation (COCO-style mAP, P/R/F1, confusion
 * matrix).  Definitions are documented in detect_eval.h. */
#include "task/detect_eval.h"

#include "backend/det_loss_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- NMS, decoding ---------------------------------------------------------------------- */

/* A total order on content, so NMS output does not depend on the input order. */
static int cmp_det(const void *pa, const void *pb)
{
    const vt_det *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    const float va[4] = {a->x0, a->y0, a->x1, a->y1}, vb[4] = {b->x0, b->y0, b->x1, b->y1};
    for (int k = 0; k < 4; k++)
        if (va[k] != vb[k]) return va[k] < vb[k] ? -1 : 1;
    return 0;
}

int vt_det_nms(vt_det *d, int n, float conf, float iou, int max_det)
{
    int m = 0;
    for (int i = 0; i < n; i++) /* NaN scores fail the test and are dropped */
        if (d[i].score >= conf) d[m++] = d[i];
    if (m > 1) qsort(d, (size_t)m, sizeof *d, cmp_det);
    int kept = 0;
    for (int i = 0; i < m && (max_det <= 0 || kept < max_det); i++) {
        int keep = 1;
        for (int k = 0; k < kept && keep; k++)
            if (d[k].cls == d[i].cls && vt_det_iou(&d[k], &d[i]) > iou) keep = 0;
        if (keep) d[kept++] = d[i];
    }
    return kept;
}

vt_status vt_det_decode(const float *pred, int n, int nc, ptrdiff_t cand_stride,
                        ptrdiff_t field_stride, float conf, float iou, int max_det,
                        int multi_label, vt_det_list *out)
{
    if (!pred || !out || n < 0 || nc < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_det_decode: bad arguments");
    out->n = 0;
    vt_status st = VT_OK;
    for (int i = 0; i < n && !st; i++) {
        const float *p = pred + (ptrdiff_t)i * cand_stride;
        float cx = p[0], cy = p[field_stride], w = p[2 * field_stride], h = p[3 * field_stride];
        vt_det d = {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, 0.0f, -1};
        if (multi_label) {
            for (int c = 0; c < nc && !st; c++) {
                d.score = p[(4 + c) * field_stride];
                d.cls = c;
                if (d.score >= conf) st = vt_det_list_push(out, &d);
            }
        } else {
            for (int c = 0; c < nc; c++) {
                float s = p[(4 + c) * field_stride];
                if (d.cls < 0 || s > d.score) d.score = s, d.cls = c;
            }
            if (d.score >= conf) st = vt_det_list_push(out, &d);
        }
    }
    if (!st) out->n = vt_det_nms(out->v, out->n, conf, iou, max_det);
    return st;
}

vt_status vt_det_head_decode(const float *out, int n, int i, int nc, const vt_det_level *lv,
                             int n_levels, float conf, float iou, int max_det, float *scratch,
                             vt_det_list *dets)
{
    vt_det_loss_desc d = {.n = n, .nc = nc, .n_levels = n_levels};
    for (int l = 0; l < n_levels; l++) d.level[l] = lv[l];
    long A = vt_det_anchors(&d), fs = (long)n * A;
    const float *o = out + (size_t)i * A;
    for (long k = 0; k < A; k++) {
        const float *p = o + k;
        float *q = scratch + k * (4 + nc), box[4], cx, cy, s;
        vt_det_anchor(&d, k, &cx, &cy, &s);
        vt_det_decode_box(p, fs, cx, cy, s, box, NULL);
        q[0] = 0.5f * (box[0] + box[2]);
        q[1] = 0.5f * (box[1] + box[3]);
        q[2] = box[2] - box[0];
        q[3] = box[3] - box[1];
        for (int c = 0; c < nc; c++) q[4 + c] = 1.0f / (1.0f + expf(-p[(4 + c) * fs]));
    }
    return vt_det_decode(scratch, (int)A, nc, 4 + nc, 1, conf, iou, max_det, 0, dets);
}

/* ---- mask IoU ----------------------------------------------------------------------------
 * Each plane is packed into rows of 64-pixel words, with its pixel count and the span of rows
 * and of words where it has foreground; a pair's intersection is the popcount of the ANDed
 * words inside both spans only (instances are small next to the image, most pairs meet in a
 * few words or not at all). */

typedef struct mask_info {
    uint64_t area;
    int r0, r1; /* rows with foreground: [r0, r1) */
    int k0, k1; /* words with foreground in some row: [k0, k1) */
} mask_info;

static inline unsigned popcount64(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_popcountll(v);
#else
    v = v - ((v >> 1) & 0x5555555555555555u);
    v = (v & 0x3333333333333333u) + ((v >> 2) & 0x3333333333333333u);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (unsigned)((v * 0x0101010101010101u) >> 56);
#endif
}

/* 8 bytes to 8 bits, one per nonzero byte: the high bit of each byte is set where any bit is
 * ((low 7 bits + 0x7f) carries into it without reaching the next byte), moved to the low bit,
 * and the multiply gathers byte k's low bit into bit 56 + k (its partial products land on
 * distinct bits, so nothing carries).  Byte k is the k-th byte in memory on a little-endian
 * machine; on others the eight pixels are permuted within their byte of the word, which no
 * IoU can see as long as every plane is packed the same way. */
static inline uint64_t pack8(const uint8_t *p)
{
    uint64_t t;
    memcpy(&t, p, 8);
    t = ((((t & 0x7f7f7f7f7f7f7f7fu) + 0x7f7f7f7f7f7f7f7fu) | t) >> 7) & 0x0101010101010101u;
    return (t * 0x0102040810204080u) >> 56;
}

size_t vt_det_mask_iou_scratch(int na, int nb, int w, int h)
{
    if (na < 0 || nb < 0 || w < 1 || h < 1) return 0;
    size_t n = (size_t)na + (size_t)nb, words = ((size_t)w + 63) / 64;
    if (words > SIZE_MAX / 8 / (size_t)h) return 0;
    size_t per = words * (size_t)h * 8; /* bytes of one packed plane */
    if (per > SIZE_MAX - sizeof(mask_info)) return 0;
    per += sizeof(mask_info);
    if (n && per > (SIZE_MAX - 8) / n) return 0;
    return n * per + 8;
}

static void pack_masks(const uint8_t *m, int n, int w, int h, size_t words, uint64_t *bits,
                       mask_info *info)
{
    for (int i = 0; i < n; i++) {
        const uint8_t *p = m + (size_t)i * (size_t)w * (size_t)h;
        uint64_t *q = bits + (size_t)i * (size_t)h * words;
        mask_info mi = {0, h, 0, (int)words, 0};
        for (int y = 0; y < h; y++, p += w, q += words) {
            int any = 0;
            for (size_t k = 0; k < words; k++) {
                const uint8_t *pk = p + k * 64;
                int nx = (int)((size_t)w - k * 64 < 64 ? (size_t)w - k * 64 : 64);
                uint64_t v = 0;
                int x = 0;
                for (; x + 8 <= nx; x += 8) v |= pack8(pk + x) << x;
                for (; x < nx; x++) v |= (uint64_t)(pk[x] != 0) << x;
                q[k] = v;
                if (!v) continue;
                any = 1;
                mi.area += popcount64(v);
                if ((int)k < mi.k0) mi.k0 = (int)k;
                if ((int)k >= mi.k1) mi.k1 = (int)k + 1;
            }
            if (any) {
                if (y < mi.r0) mi.r0 = y;
                mi.r1 = y + 1;
            }
        }
        if (!mi.area) mi.r0 = mi.r1 = mi.k0 = mi.k1 = 0;
        info[i] = mi;
    }
}

void vt_det_mask_iou(const uint8_t *a, int na, const uint8_t *b, int nb, int w, int h,
                     void *scratch, float *iou)
{
    if (na <= 0 || nb <= 0) return;
    size_t words = ((size_t)w + 63) / 64, plane = words * (size_t)h;
    uint64_t *abits = scratch, *bbits = abits + (size_t)na * plane;
    mask_info *ai = (mask_info *)(bbits + (size_t)nb * plane), *bi = ai + na;
    pack_masks(a, na, w, h, words, abits, ai);
    pack_masks(b, nb, w, h, words, bbits, bi);
    for (int i = 0; i < na; i++) {
        const mask_info *mi = &ai[i];
        for (int j = 0; j < nb; j++) {
            const mask_info *mj = &bi[j];
            int r0 = mi->r0 > mj->r0 ? mi->r0 : mj->r0, r1 = mi->r1 < mj->r1 ? mi->r1 : mj->r1;
            int k0 = mi->k0 > mj->k0 ? mi->k0 : mj->k0, k1 = mi->k1 < mj->k1 ? mi->k1 : mj->k1;
            uint64_t inter = 0;
            const uint64_t *pa = abits + (size_t)i * plane, *pb = bbits + (size_t)j * plane;
            for (int y = r0; y < r1; y++)
                for (int k = k0; k < k1; k++)
                    inter += popcount64(pa[(size_t)y * words + k] & pb[(size_t)y * words + k]);
            uint64_t uni = mi->area + mj->area - inter;
            float v = 0.0f; /* no overlap, or both empty */
            if (inter) /* exact integers in float below 2^24: one correctly rounded division */
                v = uni < (1u << 24) ? (float)inter / (float)uni
                                     : (float)((double)inter / (double)uni);
            iou[(size_t)i * nb + j] = v;
        }
    }
}

/* ---- evaluator --------------------------------------------------------------------------- */

typedef struct score_idx {
    float score;
    int idx;
} score_idx;

typedef struct iou_pair {
    float iou;
    int d, g;
} iou_pair;

static int cmp_score_idx(const void *pa, const void *pb)
{
    const score_idx *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->idx - b->idx;
}

static int cmp_pair(const void *pa, const void *pb)
{
    const iou_pair *a = pa, *b = pb;
    if (a->iou != b->iou) return a->iou > b->iou ? -1 : 1;
    if (a->d != b->d) return a->d - b->d;
    return a->g - b->g;
}

static int cmp_record(const void *pa, const void *pb)
{
    const vt_det_record *a = pa, *b = pb;
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->image != b->image) return a->image < b->image ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

static double iou_threshold(int t) { return (50 + 5 * t) / 100.0; }

/* Grow a buffer to at least `bytes` (capacities are in bytes, so one scratch buffer can hold
 * arrays of different element types in turn). */
static vt_status grow_bytes(void **buf, size_t *cap, size_t bytes)
{
    if (bytes <= *cap) return VT_OK;
    size_t nc = *cap ? *cap : 256;
    while (nc < bytes) {
        if (nc > SIZE_MAX / 2) return vt_fail(VT_ERR_OUT_OF_MEMORY, "evaluation: too many boxes");
        nc *= 2;
    }
    void *p = vt_realloc(*buf, nc);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    *buf = p;
    *cap = nc;
    return VT_OK;
}

/* Typed wrapper: grows pointer `p` to hold `count` elements. */
#define GROW(st, p, cap, count)                                                                 \
    do {                                                                                        \
        void *tmp_ = (p);                                                                       \
        (st) = (count) > SIZE_MAX / sizeof *(p) ? VT_ERR_OUT_OF_MEMORY                          \
                                                : grow_bytes(&tmp_, &(cap), (count) * sizeof *(p)); \
        (p) = tmp_;                                                                             \
    } while (0)

vt_status vt_det_eval_init(vt_det_eval *ev, int nc)
{
    memset(ev, 0, sizeof *ev);
    if (nc < 1 || nc > 100000)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: bad class count %d", nc);
    ev->nc = nc;
    ev->cm_conf = 0.25f;
    ev->cm_iou = 0.5f;
    size_t k = (size_t)nc + 1;
    ev->num_gt = vt_calloc((size_t)nc, sizeof *ev->num_gt);
    ev->confusion = vt_calloc(k * k, sizeof *ev->confusion);
    ev->ap = vt_calloc((size_t)nc * VT_DET_NUM_IOU, sizeof *ev->ap);
    ev->ap50 = vt_calloc((size_t)nc * 5, sizeof(double));
    if (!ev->num_gt || !ev->confusion || !ev->ap || !ev->ap50) {
        vt_det_eval_free(ev);
        return VT_ERR_OUT_OF_MEMORY;
    }
    ev->ap50_95 = ev->ap50 + nc;
    ev->p = ev->ap50 + 2 * nc;
    ev->r = ev->ap50 + 3 * nc;
    ev->f1 = ev->ap50 + 4 * nc;
    return VT_OK;
}

void vt_det_eval_reset(vt_det_eval *ev)
{
    size_t k = (size_t)ev->nc + 1;
    ev->nrec = 0;
    ev->image = 0;
    memset(ev->num_gt, 0, (size_t)ev->nc * sizeof *ev->num_gt);
    memset(ev->confusion, 0, k * k * sizeof *ev->confusion);
}

void vt_det_eval_free(vt_det_eval *ev)
{
    free(ev->rec);
    free(ev->num_gt);
    free(ev->confusion);
    free(ev->iou);
    free(ev->order);
    free(ev->gt_used);
    free(ev->used);
    free(ev->mask_scratch);
    free(ev->ap);
    free(ev->ap50);
    memset(ev, 0, sizeof *ev);
}

/* Confusion matrix of one image: greedy one-to-one matching by IoU, class-agnostic. */
static vt_status confusion_add(vt_det_eval *ev, const vt_det *pred, int np, const vt_det *gt,
                               int ng)
{
    const int k = ev->nc + 1;
    vt_status st = grow_bytes(&ev->order, &ev->cap_order, ((size_t)np * ng + 1) * sizeof(iou_pair));
    if (!st) GROW(st, ev->used, ev->cap_used, (size_t)np + ng + 1);
    if (st) return st;
    iou_pair *pairs = ev->order;
    unsigned char *dused = ev->used, *gused = ev->used + np;
    memset(ev->used, 0, (size_t)np + ng);
    size_t npair = 0;
    for (int d = 0; d < np; d++) {
        if (!(pred[d].score >= ev->cm_conf)) {
            dused[d] = 2; /* below the threshold: not counted at all */
            continue;
        }
        for (int g = 0; g < ng; g++) {
            float v = ev->iou[(size_t)d * ng + g];
            if (v >= ev->cm_iou) pairs[npair++] = (iou_pair){v, d, g};
        }
    }
    if (npair > 1) qsort(pairs, npair, sizeof *pairs, cmp_pair);
    for (size_t i = 0; i < npair; i++) {
        int d = pairs[i].d, g = pairs[i].g;
        if (dused[d] || gused[g]) continue;
        dused[d] = gused[g] = 1;
        ev->confusion[(size_t)pred[d].cls * k + gt[g].cls]++;
    }
    for (int g = 0; g < ng; g++)
        if (!gused[g]) ev->confusion[(size_t)ev->nc * k + gt[g].cls]++;
    for (int d = 0; d < np; d++)
        if (!dused[d]) ev->confusion[(size_t)pred[d].cls * k + ev->nc]++;
    return VT_OK;
}

/* The arguments both add functions share: counts, arrays, classes, scores. */
static vt_status check_dets(const vt_det_eval *ev, const vt_det *pred, int np, const vt_det *gt,
                            int ng)
{
    if (np < 0 || ng < 0 || (np && !pred) || (ng && !gt))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: bad detection or label arrays");
    for (int i = 0; i < np; i++)
        if (pred[i].cls < 0 || pred[i].cls >= ev->nc || isnan(pred[i].score))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: detection %d has class %d "
                           "(0..%d) or a NaN score", i, pred[i].cls, ev->nc - 1);
    for (int i = 0; i < ng; i++)
        if (gt[i].cls < 0 || gt[i].cls >= ev->nc)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: label %d has class %d (0..%d)",
                           i, gt[i].cls, ev->nc - 1);
    return VT_OK;
}

/* Room for one image: its records, its np x ng IoU matrix (ev->iou) and its ground-truth
 * flags. */
static vt_status reserve_image(vt_det_eval *ev, int np, int ng)
{
    vt_status st;
    GROW(st, ev->rec, ev->caprec, ev->nrec + (size_t)np + 1);
    if (!st) GROW(st, ev->iou, ev->cap_iou, (size_t)np * ng + 1);
    if (!st) GROW(st, ev->gt_used, ev->cap_gt, (size_t)ng + 1);
    return st;
}

/* Everything after the IoUs, whichever kind ev->iou holds: the ground-truth counts, the
 * confusion matrix, and the COCO matching into records. */
static vt_status match_image(vt_det_eval *ev, const vt_det *pred, int np, const vt_det *gt,
                             int ng)
{
    vt_status st;
    for (int g = 0; g < ng; g++) ev->num_gt[gt[g].cls]++;

    if ((st = confusion_add(ev, pred, np, gt, ng))) return st;

    /* COCO matching: detections by descending score (the order scratch is free again). */
    if ((st = grow_bytes(&ev->order, &ev->cap_order, ((size_t)np + 1) * sizeof(score_idx))))
        return st;
    score_idx *order = ev->order;
    for (int d = 0; d < np; d++) order[d] = (score_idx){pred[d].score, d};
    if (np > 1) qsort(order, (size_t)np, sizeof *order, cmp_score_idx);
    memset(ev->gt_used, 0, (size_t)ng * sizeof *ev->gt_used);
    for (int o = 0; o < np; o++) {
        int d = order[o].idx;
        uint16_t tp = 0;
        for (int t = 0; t < VT_DET_NUM_IOU; t++) {
            float best = (float)iou_threshold(t);
            int m = -1;
            for (int g = 0; g < ng; g++) {
                if (gt[g].cls != pred[d].cls || (ev->gt_used[g] >> t & 1)) continue;
                float v = ev->iou[(size_t)d * ng + g];
                /* equal IoUs: the later ground truth, as pycocotools' evaluateImg picks */
                if (v >= best) best = v, m = g;
            }
            if (m >= 0) {
                ev->gt_used[m] |= (uint16_t)(1u << t);
                tp |= (uint16_t)(1u << t);
            }
        }
        ev->rec[ev->nrec] = (vt_det_record){pred[d].score, pred[d].cls, ev->image, (uint32_t)o,
                                            tp};
        ev->nrec++;
    }
    ev->image++;
    return VT_OK;
}

vt_status vt_det_eval_add(vt_det_eval *ev, const vt_det *pred, int np, const vt_det *gt, int ng)
{
    vt_status st = check_dets(ev, pred, np, gt, ng);
    if (!st) st = reserve_image(ev, np, ng);
    if (st) return st;
    for (int d = 0; d < np; d++)
        for (int g = 0; g < ng; g++) ev->iou[(size_t)d * ng + g] = vt_det_iou(&pred[d], &gt[g]);
    return match_image(ev, pred, np, gt, ng);
}

vt_status vt_det_eval_add_masks(vt_det_eval *ev, const vt_det *pred, int np,
                                const uint8_t *pred_masks, const vt_det *gt, int ng,
                                const uint8_t *gt_masks, int w, int h)
{
    vt_status st = check_dets(ev, pred, np, gt, ng);
    if (st) return st;
    if (w < 1 || h < 1 || (np && !pred_masks) || (ng && !gt_masks))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "mask evaluation: bad masks (%d x %d)", w, h);
    size_t need = vt_det_mask_iou_scratch(np, ng, w, h);
    if (!need) return vt_fail(VT_ERR_OUT_OF_MEMORY, "mask evaluation: masks too large");
    if ((st = reserve_image(ev, np, ng))) return st;
    if (np && ng) {
        if ((st = grow_bytes(&ev->mask_scratch, &ev->cap_mask, need))) return st;
        vt_det_mask_iou(pred_masks, np, gt_masks, ng, w, h, ev->mask_scratch, ev->iou);
    }
    return match_image(ev, pred, np, gt, ng);
}

vt_status vt_det_eval_absorb(vt_det_eval *ev, const vt_det_record *rec, size_t n,
                             const int64_t *num_gt, const int64_t *confusion)
{
    vt_status st;
    GROW(st, ev->rec, ev->caprec, ev->nrec + n + 1);
    if (st) return st;
    for (size_t i = 0; i < n; i++)
        if (rec[i].cls < 0 || rec[i].cls >= ev->nc)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: a merged record of class %d "
                           "(%d classes)", rec[i].cls, ev->nc);
    if (n) memcpy(ev->rec + ev->nrec, rec, n * sizeof *rec);
    ev->nrec += n;
    size_t k = (size_t)ev->nc + 1;
    for (int c = 0; num_gt && c < ev->nc; c++) ev->num_gt[c] += num_gt[c];
    for (size_t i = 0; confusion && i < k * k; i++) ev->confusion[i] += confusion[i];
    return VT_OK;
}

/* 101-point interpolated AP of one class at threshold bit t over records r[0..n) sorted by
 * descending score; pts (NULL or 101 values) receives the sampled precisions (0 past the
 * highest recall reached), whose mean the AP is. */
static double class_ap(const vt_det_record *r, size_t n, int64_t ngt, int t, double *prec,
                       double *pts)
{
    if (pts)
        for (int k = 0; k <= 100; k++) pts[k] = 0;
    if (n == 0) return 0.0;
    size_t tp = 0;
    for (size_t i = 0; i < n; i++) {
        tp += r[i].tp >> t & 1;
        prec[i] = (double)tp / (double)(i + 1);
    }
    for (size_t i = n - 1; i > 0; i--) /* precision envelope: max over higher recalls */
        if (prec[i] > prec[i - 1]) prec[i - 1] = prec[i];
    double sum = 0;
    size_t i = 0, ctp = r[0].tp >> t & 1;
    for (int k = 0; k <= 100; k++) {
        /* pycocotools' recall points are np.linspace(0, 1, 101): k * 0.01 in double, one ulp
         * above k / 100 for k = 35, 41, 47, 57, 69, 70, 82, 83, 94, 95, so a recall of exactly
         * 0.35 (7 of 20 objects) is sampled at the next detection there */
        double want = k * 0.01;
        /* first i whose recall reaches `want`; recall only grows with i */
        while (i < n && (double)ctp / (double)ngt < want) {
            i++;
            if (i < n) ctp += r[i].tp >> t & 1;
        }
        if (i >= n) break;
        sum += prec[i];
        if (pts) pts[k] = prec[i];
    }
    return sum / 101.0;
}

/* Per-class TP (at IoU 0.5) and detection counts at score >= conf; cum[i] = TPs among the
 * class's first i records. */
static void counts_at(const vt_det_record *r, const size_t *cum, size_t n, double conf,
                      size_t *ndet, size_t *ntp)
{
    size_t lo = 0, hi = n; /* records sorted by descending score: find the first below conf */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((double)r[mid].score >= conf) lo = mid + 1;
        else hi = mid;
    }
    *ndet = lo;
    *ntp = cum[lo] - cum[0];
}

/* Mean P, R, F1 over classes with ground truth at `conf`; per-class values into ev->p/r/f1. */
static double prf_at(vt_det_eval *ev, const size_t *start, const size_t *cum, double conf,
                     double *mp, double *mr)
{
    double sp = 0, sr = 0, sf = 0;
    int m = 0;
    for (int c = 0; c < ev->nc; c++) {
        size_t nd, ntp;
        counts_at(ev->rec + start[c], cum + start[c], start[c + 1] - start[c], conf, &nd, &ntp);
        double p = nd ? (double)ntp / (double)nd : 0.0;
        double r = ev->num_gt[c] ? (double)ntp / (double)ev->num_gt[c] : 0.0;
        double f = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
        ev->p[c] = p;
        ev->r[c] = r;
        ev->f1[c] = f;
        if (!ev->num_gt[c]) continue;
        sp += p;
        sr += r;
        sf += f;
        m++;
    }
    *mp = m ? sp / m : 0;
    *mr = m ? sr / m : 0;
    return m ? sf / m : 0;
}

/* Sort the records by class then score, and index them: class c owns rec[start[c] ..
 * start[c+1]); cum[i] = TPs at IoU 0.5 among rec[0..i); prec is scratch for class_ap.  The
 * caller frees the three arrays. */
static vt_status class_slices(vt_det_eval *ev, size_t **pstart, size_t **pcum, double **pprec)
{
    if (ev->nrec > 1) qsort(ev->rec, ev->nrec, sizeof *ev->rec, cmp_record);
    size_t *start = vt_malloc(((size_t)ev->nc + 1) * sizeof *start);
    double *prec = vt_malloc((ev->nrec + 1) * sizeof *prec);
    size_t *cum = vt_malloc((ev->nrec + 1) * sizeof *cum);
    if (!start || !prec || !cum) {
        free(start);
        free(prec);
        free(cum);
        return VT_ERR_OUT_OF_MEMORY;
    }
    cum[0] = 0; /* global prefix sums of TP@0.5; a class's slice differences give its counts */
    for (size_t i = 0; i < ev->nrec; i++) cum[i + 1] = cum[i] + (ev->rec[i].tp & 1);
    size_t j = 0;
    for (int c = 0; c <= ev->nc; c++) {
        while (j < ev->nrec && ev->rec[j].cls < c) j++;
        start[c] = j;
    }
    *pstart = start;
    *pcum = cum;
    *pprec = prec;
    return VT_OK;
}

vt_status vt_det_eval_compute(vt_det_eval *ev, double conf, vt_det_metrics *out)
{
    if (!ev || !out || !ev->num_gt)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation: not initialised");
    memset(out, 0, sizeof *out);
    size_t *start, *cum;
    double *prec;
    vt_status st = class_slices(ev, &start, &cum, &prec);
    if (st) return st;
    double s50 = 0, s5095 = 0;
    int m = 0;
    for (int c = 0; c < ev->nc; c++) {
        if (!ev->num_gt[c]) {
            ev->ap50[c] = ev->ap50_95[c] = -1;
            for (int t = 0; t < VT_DET_NUM_IOU; t++) ev->ap[c * VT_DET_NUM_IOU + t] = -1;
            continue;
        }
        double sum = 0;
        for (int t = 0; t < VT_DET_NUM_IOU; t++) {
            double ap = class_ap(ev->rec + start[c], start[c + 1] - start[c], ev->num_gt[c], t,
                                 prec, NULL);
            ev->ap[c * VT_DET_NUM_IOU + t] = ap;
            sum += ap;
        }
        ev->ap50[c] = ev->ap[c * VT_DET_NUM_IOU];
        ev->ap50_95[c] = sum / VT_DET_NUM_IOU;
        s50 += ev->ap50[c];
        s5095 += ev->ap50_95[c];
        m++;
    }
    out->classes_with_gt = m;
    out->map50 = m ? s50 / m : 0;
    out->map50_95 = m ? s5095 / m : 0;
    if (conf < 0) {
        double best = -1;
        conf = 0;
        for (int k = 0; k <= 1000; k++) {
            double mp, mr, f = prf_at(ev, start, cum, k / 1000.0, &mp, &mr);
            if (f > best) best = f, conf = k / 1000.0;
        }
    }
    out->f1 = prf_at(ev, start, cum, conf, &out->precision, &out->recall);
    out->conf = conf;
    out->ap50 = ev->ap50;
    out->ap50_95 = ev->ap50_95;
    out->class_p = ev->p;
    out->class_r = ev->r;
    out->class_f1 = ev->f1;
    out->num_gt = ev->num_gt;
    out->confusion = ev->confusion;
    free(start);
    free(prec);
    free(cum);
    return VT_OK;
}

vt_status vt_det_eval_curves(vt_det_eval *ev, double *pr, int nconf, double *p, double *r,
                             double *f1)
{
    if (!ev || !ev->num_gt || (nconf < 2 && (p || r || f1)))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "evaluation curves: bad arguments");
    size_t *start, *cum;
    double *prec;
    vt_status st = class_slices(ev, &start, &cum, &prec);
    if (st) return st;
    for (int c = 0; c < ev->nc; c++) {
        const vt_det_record *rc = ev->rec + start[c];
        size_t n = start[c + 1] - start[c];
        int64_t ngt = ev->num_gt[c];
        if (pr) {
            if (ngt) class_ap(rc, n, ngt, 0, prec, pr + (size_t)c * 101);
            else
                for (int k = 0; k <= 100; k++) pr[(size_t)c * 101 + k] = -1;
        }
        for (int k = 0; k < nconf && (p || r || f1); k++) {
            size_t nd, ntp;
            counts_at(rc, cum + start[c], n, k / (double)(nconf - 1), &nd, &ntp);
            double pv = nd ? (double)ntp / (double)nd : 0.0, rv = ngt ? (double)ntp / ngt : 0.0;
            double fv = pv + rv > 0 ? 2 * pv * rv / (pv + rv) : 0.0;
            size_t at = (size_t)c * nconf + k;
            if (p) p[at] = ngt ? pv : -1;
            if (r) r[at] = ngt ? rv : -1;
            if (f1) f1[at] = ngt ? fv : -1;
        }
    }
    free(start);
    free(cum);
    free(prec);
    return VT_OK;
}
