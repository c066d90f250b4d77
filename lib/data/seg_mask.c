/* Class masks of semantic segmentation datasets: the polygon rasteriser, the overlap order,
 * mask PNG reading, and the public segmentation accessors.  See seg_mask.h and
 * include/visiontrain/visiontrain.h ("segmentation datasets") for the rules.
 *
 * Why scanlines at pixel centres: it is exact (no supersampling, no anti-aliasing that would
 * invent class mixtures), it is what GPU rasterisers do, and its tie rule (left/top edges in,
 * right/bottom edges out) makes two polygons that share an edge cover disjoint pixels. */
#include "data/seg_mask.h"

#include "core/buffer.h"
#include "data/augment.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rasteriser ----------------------------------------------------------------------------- */

static void sort_floats(double *v, int n)
{
    /* insertion sort: a row of a real outline crosses few edges */
    for (int i = 1; i < n; i++) {
        double x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The fill of both mask widths: 8-bit class maps and 16-bit instance maps (wide). */
static vt_status rasterize(const float *xy, int npts, int w, int h, unsigned value, void *mask,
                           int wide)
{
    if (!xy || !mask || npts < 3 || w < 1 || h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_seg_rasterize: bad argument (%d points, %dx%d)",
                       npts, w, h);
    double ymin = INFINITY, ymax = -INFINITY;
    for (int k = 0; k < npts; k++) {
        if (!isfinite(xy[2 * k]) || !isfinite(xy[2 * k + 1]))
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_seg_rasterize: point %d is not finite", k);
        ymin = fmin(ymin, xy[2 * k + 1]);
        ymax = fmax(ymax, xy[2 * k + 1]);
    }
    /* rows whose centre y + 0.5 lies in [ymin, ymax) */
    double fy0 = fmax(ceil(ymin - 0.5), 0), fy1 = fmin(ceil(ymax - 0.5), h);
    if (fy0 >= fy1) return VT_OK;
    double *xs = vt_malloc((size_t)npts * sizeof *xs);
    if (!xs) return VT_ERR_OUT_OF_MEMORY;
    for (int y = (int)fy0; y < (int)fy1; y++) {
        double yc = y + 0.5;
        int nx = 0;
        for (int i = 0, j = npts - 1; i < npts; j = i++) {
            double ay = xy[2 * j + 1], by = xy[2 * i + 1];
            if ((ay > yc) == (by > yc)) continue; /* half-open: min <= yc < max */
            /* Order the end points by y so an edge traversed both ways (a bridge between an
             * outline and its hole) gives bit-identical crossings that cancel. */
            double x0 = xy[2 * j], y0 = ay, x1 = xy[2 * i], y1 = by;
            if (y0 > y1) {
                double t = x0;
                x0 = x1;
                x1 = t;
                t = y0;
                y0 = y1;
                y1 = t;
            }
            xs[nx++] = x0 + (yc - y0) * (x1 - x0) / (y1 - y0);
        }
        if (nx > 32) qsort(xs, (size_t)nx, sizeof *xs, cmp_double);
        else sort_floats(xs, nx);
        for (int k = 0; k + 1 < nx; k += 2) {
            /* columns whose centre x + 0.5 lies in [xs[k], xs[k+1]) */
            double a = fmax(ceil(xs[k] - 0.5), 0), b = fmin(ceil(xs[k + 1] - 0.5), w);
            if (!(a < b)) continue;
            if (wide) {
                uint16_t *row = (uint16_t *)mask + (size_t)y * w;
                for (int x = (int)a; x < (int)b; x++) row[x] = (uint16_t)value;
            } else {
                memset((uint8_t *)mask + (size_t)y * w + (int)a, (int)value,
                       (size_t)((int)b - (int)a));
            }
        }
    }
    free(xs);
    return VT_OK;
}

vt_status vt_seg_rasterize(const float *xy, int npts, int w, int h, uint8_t value,
                           uint8_t *mask)
{
    return rasterize(xy, npts, w, h, value, mask, 0);
}

vt_status vt_seg_rasterize16(const float *xy, int npts, int w, int h, uint16_t value,
                             uint16_t *mask)
{
    return rasterize(xy, npts, w, h, value, mask, 1);
}

/* ---- polygons of an image --------------------------------------------------------------------- */

typedef struct area_key {
    double area;
    int index;
} area_key;

static int cmp_area(const void *pa, const void *pb)
{
    const area_key *a = pa, *b = pb;
    if (a->area != b->area) return a->area > b->area ? -1 : 1; /* larger first */
    return a->index - b->index;                                 /* stable */
}

double vt_seg_poly_area(const float *xy, int n)
{
    double s = 0;
    for (int i = 0, j = n - 1; i < n; j = i++)
        s += (double)xy[2 * j] * xy[2 * i + 1] - (double)xy[2 * i] * xy[2 * j + 1];
    return fabs(s) / 2;
}

vt_status vt_seg_draw_polygons(const vt_seg_poly *polys, int n, const float *xy_norm, int w,
                               int h, uint8_t *mask)
{
    if (n <= 0) return VT_OK;
    int maxp = 0;
    for (int k = 0; k < n; k++) maxp = polys[k].npts > maxp ? polys[k].npts : maxp;
    area_key *order = vt_malloc((size_t)n * sizeof *order);
    float *px = vt_malloc((size_t)maxp * 2 * sizeof *px);
    vt_status st = order && px ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    for (int k = 0; !st && k < n; k++) {
        order[k].area = vt_seg_poly_area(xy_norm + 2 * (size_t)polys[k].off, polys[k].npts);
        order[k].index = k;
    }
    if (!st) qsort(order, (size_t)n, sizeof *order, cmp_area);
    for (int k = 0; !st && k < n; k++) {
        const vt_seg_poly *p = &polys[order[k].index];
        const float *src = xy_norm + 2 * (size_t)p->off;
        for (int q = 0; q < p->npts; q++) {
            px[2 * q] = src[2 * q] * (float)w;
            px[2 * q + 1] = src[2 * q + 1] * (float)h;
        }
        st = vt_seg_rasterize(px, p->npts, w, h, (uint8_t)p->cls, mask);
    }
    free(order);
    free(px);
    return st;
}

vt_status vt_seg_draw_aug_labels(const vt_aug_labels *l, int w, int h, uint8_t *mask)
{
    if (!l || !mask || w < 1 || h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_seg_draw_aug_labels: bad argument");
    if (l->n <= 0) return VT_OK;
    area_key *order = vt_malloc((size_t)l->n * sizeof *order);
    if (!order) return VT_ERR_OUT_OF_MEMORY;
    int m = 0;
    for (int k = 0; k < l->n; k++) {
        int n;
        const float *xy = vt_aug_labels_poly(l, k, &n);
        if (n < 3) continue;
        order[m].area = vt_seg_poly_area(xy, n);
        order[m++].index = k;
    }
    qsort(order, (size_t)m, sizeof *order, cmp_area);
    vt_status st = VT_OK;
    for (int k = 0; !st && k < m; k++) {
        int n;
        const float *xy = vt_aug_labels_poly(l, order[k].index, &n);
        st = vt_seg_rasterize(xy, n, w, h, (uint8_t)l->box[order[k].index].cls, mask);
    }
    free(order);
    return st;
}

vt_status vt_seg_draw_instance_map(const vt_aug_labels *l, const int *objs, int n, float scale,
                                   int w, int h, uint16_t *map)
{
    if (!l || (n > 0 && !objs) || n < 0 || n > 65535 || !map || w < 1 || h < 1 ||
        !(scale > 0) || !isfinite(scale))
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_seg_draw_instance_map: bad argument");
    if (n == 0) return VT_OK;
    int maxp = 0;
    for (int k = 0; k < n; k++) {
        if (objs[k] < 0 || objs[k] >= l->n)
            return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_seg_draw_instance_map: no object %d",
                           objs[k]);
        for (int q = 0; q < vt_aug_labels_num_parts(l, objs[k]); q++) {
            int np;
            vt_aug_labels_part(l, objs[k], q, &np);
            maxp = np > maxp ? np : maxp;
        }
    }
    area_key *order = vt_malloc((size_t)n * sizeof *order);
    float *px = vt_malloc(((size_t)maxp + 1) * 2 * sizeof *px);
    vt_status st = order && px ? VT_OK : VT_ERR_OUT_OF_MEMORY;
    int m = 0;
    for (int k = 0; !st && k < n; k++) {
        /* the object's area: its parts' (in label pixels; the scale keeps the order) */
        double a = 0;
        int nparts = vt_aug_labels_num_parts(l, objs[k]);
        for (int q = 0; q < nparts; q++) {
            int np;
            const float *xy = vt_aug_labels_part(l, objs[k], q, &np);
            a += vt_seg_poly_area(xy, np);
        }
        if (!nparts) continue; /* a box without an outline paints nothing */
        order[m].area = a;
        order[m++].index = k;
    }
    if (!st) qsort(order, (size_t)m, sizeof *order, cmp_area);
    for (int k = 0; !st && k < m; k++) {
        int o = objs[order[k].index];
        for (int q = 0; !st && q < vt_aug_labels_num_parts(l, o); q++) {
            int np;
            const float *xy = vt_aug_labels_part(l, o, q, &np);
            for (int p = 0; p < 2 * np; p++) px[p] = xy[p] * scale;
            st = vt_seg_rasterize16(px, np, w, h, (uint16_t)(order[k].index + 1), map);
        }
    }
    free(order);
    free(px);
    return st;
}

/* ---- mask files -------------------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/* The first 26 bytes of a PNG: signature, IHDR length and type, width, height, depth, type. */
static vt_status read_head(const char *path, FILE **fp, uint8_t head[26], size_t *got)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open: %s",
                       path, strerror(errno));
    *got = fread(head, 1, 26, f);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        return vt_fail(VT_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    *fp = f;
    return VT_OK;
}

static int is_png_head(const uint8_t *head, size_t got)
{
    return got >= 26 && !memcmp(head, png_sig, 8) && !memcmp(head + 12, "IHDR", 4);
}

vt_status vt_seg_probe_size(const char *path, int *w, int *h)
{
    FILE *f;
    uint8_t head[26];
    size_t got;
    vt_status st = read_head(path, &f, head, &got);
    if (st) return st;
    uint32_t W = 0, H = 0;
    if (is_png_head(head, got)) {
        W = be32(head + 16);
        H = be32(head + 20);
    } else if (got >= 2 && head[0] == 0xFF && head[1] == 0xD8) {
        /* JPEG: walk the marker segments to the first start-of-frame */
        fseek(f, 2, SEEK_SET);
        for (;;) {
            int c = fgetc(f);
            if (c != 0xFF) break;
            int m;
            while ((m = fgetc(f)) == 0xFF) {
            }
            if (m == EOF || m == 0xD9 || m == 0xDA) break;
            if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) continue; /* no length */
            int l1 = fgetc(f), l2 = fgetc(f);
            if (l2 == EOF) break;
            long len = (long)l1 << 8 | l2;
            if (len < 2) break;
            if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
                uint8_t sof[5];
                if (fread(sof, 1, 5, f) == 5) {
                    H = (uint32_t)sof[1] << 8 | sof[2];
                    W = (uint32_t)sof[3] << 8 | sof[4];
                }
                break;
            }
            if (fseek(f, len - 2, SEEK_CUR)) break;
        }
    }
    fclose(f);
    if (W == 0 || H == 0 || W > INT32_MAX || H > INT32_MAX)
        return vt_fail(VT_ERR_FORMAT, "%s: not a PNG or JPEG image with a readable size", path);
    *w = (int)W;
    *h = (int)H;
    return VT_OK;
}

vt_status vt_seg_load_mask(const char *path, int nc, int ignore, vt_image *out, int64_t *nbad,
                           int *first_bad)
{
    memset(out, 0, sizeof *out);
    if (nbad) *nbad = 0;
    if (first_bad) *first_bad = -1;
    FILE *f;
    uint8_t head[26];
    size_t got;
    vt_status st = read_head(path, &f, head, &got);
    if (st) return st;
    fclose(f);
    if (!is_png_head(head, got))
        return vt_fail(VT_ERR_FORMAT, "%s: mask is not a PNG file", path);
    /* Decoding would turn palette indices into colours and scale 16-bit values: the class ids
     * would be lost, so refuse rather than guess. */
    if (head[24] != 8 || (head[25] != 0 && head[25] != 4))
        return vt_fail(VT_ERR_FORMAT, "%s: mask must be an 8-bit grayscale PNG (this one has "
                       "bit depth %d, colour type %d%s)", path, head[24], head[25],
                       head[25] == 3 ? ", a palette" : "");
    if ((st = vt_image_load(path, out))) return st;
    if (out->c != 1) {
        vt_image_free(out);
        return vt_fail(VT_ERR_FORMAT, "%s: mask must be an 8-bit grayscale PNG", path);
    }
    int64_t bad = 0;
    size_t total = (size_t)out->w * out->h;
    for (size_t k = 0; k < total; k++) {
        int v = out->data[k];
        if (v >= nc && v != ignore) {
            if (bad++ == 0 && first_bad) *first_bad = v;
            out->data[k] = (uint8_t)ignore;
        }
    }
    if (nbad) *nbad = bad;
    return VT_OK;
}

/* ---- dataset level ----------------------------------------------------------------------------- */

int vt_seg_ignore_value(const vt_dataset *ds)
{
    return ds && ds->labels->masks ? ds->ignore_value : -1;
}

static const vt_split_list *seg_split(const vt_dataset *ds, vt_split s, int i)
{
    if (!ds || (unsigned)s >= 3) return NULL;
    const vt_split_list *sl = &ds->split[s];
    return i >= 0 && i < sl->n ? sl : NULL;
}

vt_status vt_seg_image_mask(const vt_dataset *ds, vt_split split, int i, int w, int h,
                            uint8_t *mask)
{
    const vt_split_list *sl = seg_split(ds, split, i);
    if (!sl || !mask || w < 1 || h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "segmentation mask: no image %d, or a bad buffer "
                       "or size (%dx%d)", i, w, h);
    if (!ds->labels->masks)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: not a semantic segmentation dataset%s", ds->root,
                       ds->labels->instances ? " (instance datasets have one outline per object: "
                                               "vt_dataset_polygon)" : "");
    if (sl->mask_paths) {
        vt_image m;
        vt_status st = vt_seg_load_mask(sl->mask_paths[i], ds->num_classes, ds->ignore_value, &m,
                                        NULL, NULL);
        if (st) return st;
        if (m.w != w || m.h != h) {
            st = vt_fail(VT_ERR_DATASET, "%s: mask is %dx%d but %dx%d was asked (the image's "
                         "size)", sl->mask_paths[i], m.w, m.h, w, h);
        } else {
            memcpy(mask, m.data, (size_t)w * h);
        }
        vt_image_free(&m);
        return st;
    }
    memset(mask, 0, (size_t)w * h); /* background */
    if (!sl->polys) return VT_OK;
    int b0 = sl->box_start[i], b1 = sl->box_start[i + 1];
    return vt_seg_draw_polygons(sl->polys + b0, b1 - b0, sl->poly_xy, w, h, mask);
}

/* ---- public accessors -------------------------------------------------------------------------- */

/* Instance datasets: the parts of image i, all its objects' in box order. */
static void image_parts(const vt_split_list *sl, int i, int *first, int *count)
{
    *first = sl->part_start[sl->box_start[i]];
    *count = sl->part_start[sl->box_start[i + 1]] - *first;
}

vt_status vt_seg_instance_classes(const vt_dataset *ds, vt_split split, int i, int w, int h,
                                  uint8_t none, uint8_t *mask)
{
    const vt_split_list *sl = seg_split(ds, split, i);
    if (!sl || !mask || w < 1 || h < 1)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "instance class map: no image %d, or a bad "
                       "buffer or size (%dx%d)", i, w, h);
    if (!ds->labels->instances)
        return vt_fail(VT_ERR_UNSUPPORTED, "%s: not an instance segmentation dataset", ds->root);
    memset(mask, none, (size_t)w * h);
    if (!sl->part_start) return VT_OK;
    int first, n;
    image_parts(sl, i, &first, &n);
    vt_seg_poly *parts = vt_malloc(((size_t)n + 1) * sizeof *parts);
    if (!parts) return VT_ERR_OUT_OF_MEMORY;
    int m = 0;
    for (int k = 0; k < n; k++)
        if (sl->parts[first + k].cls >= 0 && sl->parts[first + k].cls < none)
            parts[m++] = sl->parts[first + k];
    vt_status st = vt_seg_draw_polygons(parts, m, sl->poly_xy, w, h, mask);
    free(parts);
    return st;
}

VT_API int vt_dataset_num_polygons(const vt_dataset *ds, vt_split split, int i)
{
    const vt_split_list *sl = seg_split(ds, split, i);
    if (sl && sl->part_start) {
        int first, count;
        image_parts(sl, i, &first, &count);
        return count;
    }
    return sl && sl->polys ? sl->box_start[i + 1] - sl->box_start[i] : 0;
}

VT_API vt_status vt_dataset_polygon(const vt_dataset *ds, vt_split split, int i, int k, int *cls,
                                    float *xy, int cap, int *npts)
{
    static const char call[] = "vt_dataset_polygon";
    if (npts) *npts = 0;
    const vt_split_list *sl = seg_split(ds, split, i);
    int first = 0, count = 0;
    if (sl && sl->part_start) image_parts(sl, i, &first, &count);
    else if (sl && sl->polys) first = sl->box_start[i], count = sl->box_start[i + 1] - first;
    if (!sl || k < 0 || k >= count)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "%s: no polygon %d of image %d", call, k, i);
    const vt_seg_poly *p = sl->part_start ? &sl->parts[first + k] : &sl->polys[first + k];
    if (cls) *cls = p->cls;
    if (npts) *npts = p->npts;
    vt_status st = vt_buffer_fits_int(call, xy, cap, (size_t)p->npts, "points");
    if (st || !xy) return st;
    memcpy(xy, sl->poly_xy + 2 * (size_t)p->off, (size_t)p->npts * 2 * sizeof *xy);
    return VT_OK;
}

VT_API int vt_dataset_ignore_value(const vt_dataset *ds) { return vt_seg_ignore_value(ds); }

VT_API vt_status vt_dataset_image_size(const vt_dataset *ds, vt_split split, int i, int *w,
                                       int *h)
{
    const vt_split_list *sl = seg_split(ds, split, i);
    if (!sl || !w || !h)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_dataset_image_size: no image %d, or NULL", i);
    return vt_seg_probe_size(sl->paths[i], w, h);
}

VT_API vt_status vt_dataset_mask(const vt_dataset *ds, vt_split split, int i, uint8_t *mask,
                                 int w, int h)
{
    return vt_seg_image_mask(ds, split, i, w, h, mask);
}
