/* A mosaic of images with their boxes or masks drawn over them (see plot.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "image/plot.h"

#define RGB(r, g, b) ((uint32_t)(r) << 16 | (uint32_t)(g) << 8 | (uint32_t)(b))
enum { CELL = 256, GAP = 4, LABEL = 13, CAPTION = 14 };

/* Blend colour rgb over the pixel with weight a/256. */
static void blend(uint8_t *p, uint32_t rgb, int a)
{
    int col[3] = {(int)(rgb >> 16 & 255), (int)(rgb >> 8 & 255), (int)(rgb & 255)};
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)(p[k] + ((col[k] - p[k]) * a >> 8));
}

/* White text on dark colours, dark text on light ones. */
static uint32_t text_on(uint32_t bg)
{
    double l = 0.299 * (bg >> 16 & 255) + 0.587 * (bg >> 8 & 255) + 0.114 * (bg & 255);
    return l > 150 ? RGB(20, 20, 20) : RGB(255, 255, 255);
}

/* One tile into the cell at (ox, oy): the image scaled to fit, its mask (nearest) over it, the
 * boxes with their labels, the caption under it. */
static vt_status draw_tile(vt_canvas *c, int ox, int oy, const vt_mosaic_tile *t,
                           const char *const *names, int nc, int mask_skip)
{
    double s = fmin((double)CELL / t->w, (double)CELL / t->h);
    int w = (int)lround(t->w * s), h = (int)lround(t->h * s);
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    vt_image src = {t->w, t->h, t->c, (uint8_t *)t->px}, dst = {0};
    vt_status st = vt_image_resize(&src, w, h, &dst);
    if (st) return st;
    int x0 = ox + (CELL - w) / 2, y0 = oy + (CELL - h) / 2;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *q = dst.data + ((size_t)y * w + x) * dst.c;
            uint8_t *p = c->px + ((size_t)(y0 + y) * c->w + x0 + x) * 3;
            p[0] = q[0];
            p[1] = q[dst.c == 3 ? 1 : 0];
            p[2] = q[dst.c == 3 ? 2 : 0];
            if (!t->mask) continue;
            int mx = (int)((x + 0.5) / s), my = (int)((y + 0.5) / s);
            if (mx >= t->w) mx = t->w - 1;
            if (my >= t->h) my = t->h - 1;
            int k = t->mask[(size_t)my * t->w + mx];
            if (k != mask_skip && k < nc) blend(p, vt_class_rgb(k), 170);
        }
    vt_image_free(&dst);
    /* the boxes, then their labels over every box line */
    for (int i = 0; i < t->nbox; i++) {
        const vt_mosaic_box *b = &t->box[i];
        uint32_t col = vt_class_rgb(b->cls);
        int bx0 = x0 + (int)lround(b->x0 * s), by0 = y0 + (int)lround(b->y0 * s);
        int bx1 = x0 + (int)lround(b->x1 * s), by1 = y0 + (int)lround(b->y1 * s);
        vt_canvas_line(c, bx0, by0, bx1, by0, col, 2, 0);
        vt_canvas_line(c, bx0, by1, bx1, by1, col, 2, 0);
        vt_canvas_line(c, bx0, by0, bx0, by1, col, 2, 0);
        vt_canvas_line(c, bx1, by0, bx1, by1, col, 2, 0);
    }
    for (int i = 0; i < t->nbox; i++) {
        const vt_mosaic_box *b = &t->box[i];
        uint32_t col = vt_class_rgb(b->cls);
        int bx0 = x0 + (int)lround(b->x0 * s), by0 = y0 + (int)lround(b->y0 * s);
        char idx[16], lab[160], fit[160];
        snprintf(idx, sizeof idx, "%d", b->cls);
        const char *nm = names && b->cls >= 0 && b->cls < nc && names[b->cls] ? names[b->cls] : idx;
        if (b->score >= 0) snprintf(lab, sizeof lab, "%s %.2f", nm, b->score);
        else snprintf(lab, sizeof lab, "%s", nm);
        vt_text_fit(fit, sizeof fit, lab, LABEL, CELL / 2); /* long names would cover the tile */
        int tw = vt_text_width(fit, LABEL) + 6;
        /* the label above the box, inside it when the box touches the tile's top */
        int lx = bx0 - 1, ly = by0 - LABEL - 1 < y0 ? by0 + 1 : by0 - LABEL - 1;
        if (lx + tw > x0 + w) lx = x0 + w - tw;
        if (lx < x0) lx = x0;
        vt_canvas_rect(c, lx, ly, tw, LABEL + 1, col);
        vt_canvas_text(c, lx + 3, ly, fit, LABEL, text_on(col), 0);
    }
    if (t->caption) {
        char fit[256];
        vt_text_fit(fit, sizeof fit, t->caption, CAPTION, CELL);
        vt_canvas_text(c, ox + (CELL - vt_text_width(fit, CAPTION)) / 2, oy + CELL + 2, fit,
                       CAPTION, RGB(40, 40, 40), 0);
    }
    return VT_OK;
}

vt_status vt_plot_mosaic(const char *path, const char *title, const vt_mosaic_tile *tiles, int n,
                         const char *const *names, int nc, int mask_skip)
{
    if (n < 1) return VT_OK;
    int cols = (int)ceil(sqrt((double)n)), rows = (n + cols - 1) / cols;
    int pitch_y = CELL + CAPTION + 6, top = title ? 17 + 14 : GAP;
    /* a key of the class colours under the grid, for the classes the masks show (boxes carry
     * their names) */
    unsigned char *shown = nc > 0 ? vt_calloc((size_t)nc, 1) : NULL;
    if (nc > 0 && !shown) return VT_ERR_OUT_OF_MEMORY;
    int nkey = 0;
    for (int i = 0; i < n; i++)
        for (size_t p = 0; tiles[i].mask && p < (size_t)tiles[i].w * tiles[i].h; p++) {
            int k = tiles[i].mask[p];
            if (k < nc && k != mask_skip && !shown[k]) {
                shown[k] = 1;
                nkey++;
            }
        }
    const int key_w = 150;
    int per_row = (cols * (CELL + GAP)) / key_w;
    if (per_row < 1) per_row = 1;
    int key_rows = (nkey + per_row - 1) / per_row;
    vt_canvas c;
    int W = cols * (CELL + GAP) + GAP, H = top + rows * pitch_y + GAP + key_rows * 20;
    vt_status st = vt_canvas_init(&c, W, H);
    if (st) {
        free(shown);
        return st;
    }
    if (title) vt_canvas_text(&c, (W - vt_text_width(title, 17)) / 2, 7, title, 17, RGB(30, 30, 30), 0);
    for (int i = 0; i < n && !st; i++) {
        int ox = GAP + (i % cols) * (CELL + GAP), oy = top + (i / cols) * pitch_y;
        vt_canvas_rect(&c, ox, oy, CELL, CELL, RGB(235, 235, 235));
        st = draw_tile(&c, ox, oy, &tiles[i], names, nc, mask_skip);
    }
    for (int k = 0, j = 0; k < nc; k++) {
        if (!shown[k]) continue;
        int kx = GAP + (j % per_row) * key_w, ky = top + rows * pitch_y + (j / per_row) * 20;
        vt_canvas_rect(&c, kx, ky + 3, 14, 14, vt_class_rgb(k));
        char idx[16], fit[160];
        snprintf(idx, sizeof idx, "%d", k);
        vt_text_fit(fit, sizeof fit, names && names[k] ? names[k] : idx, CAPTION, key_w - 26);
        vt_canvas_text(&c, kx + 20, ky + 2, fit, CAPTION, RGB(30, 30, 30), 0);
        j++;
    }
    free(shown);
    if (!st) st = vt_image_save_png(path, c.px, c.w, c.h, 3, (size_t)c.w * 3);
    vt_canvas_free(&c);
    return st;
}
