/* The plot module (see plot.h). */
#include "image/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

#define RGB(r, g, b) ((uint32_t)(r) << 16 | (uint32_t)(g) << 8 | (uint32_t)(b))
static const uint32_t INK = RGB(30, 30, 30), GRID = RGB(228, 228, 228), AXIS = RGB(90, 90, 90);
static const uint32_t BLUE = RGB(31, 119, 180), ORANGE = RGB(255, 127, 14);

vt_status vt_canvas_init(vt_canvas *c, int w, int h)
{
    c->w = w;
    c->h = h;
    c->px = vt_malloc((size_t)w * h * 3);
    if (!c->px) return VT_ERR_OUT_OF_MEMORY;
    memset(c->px, 255, (size_t)w * h * 3);
    return VT_OK;
}

void vt_canvas_free(vt_canvas *c)
{
    free(c->px);
    c->px = NULL;
}

static inline void put(vt_canvas *c, int x, int y, uint32_t rgb)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    p[0] = (uint8_t)(rgb >> 16);
    p[1] = (uint8_t)(rgb >> 8);
    p[2] = (uint8_t)rgb;
}

void vt_canvas_rect(vt_canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) put(c, i, j, rgb);
}

static void frame(vt_canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    vt_canvas_rect(c, x, y, w, 1, rgb);
    vt_canvas_rect(c, x, y + h - 1, w, 1, rgb);
    vt_canvas_rect(c, x, y, 1, h, rgb);
    vt_canvas_rect(c, x + w - 1, y, 1, h, rgb);
}

void vt_canvas_line(vt_canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, int thick,
                    int dash)
{
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy, k = 0, lo = -(thick - 1) / 2;
    for (;;) {
        if (!dash || (k / 6) % 2 == 0)
            for (int j = 0; j < thick; j++)
                for (int i = 0; i < thick; i++) put(c, x0 + lo + i, y0 + lo + j, rgb);
        k++;
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

void vt_canvas_text(vt_canvas *c, int x, int y, const char *s, int scale, uint32_t rgb,
                    int vertical)
{
    for (int n = 0; s[n]; n++) {
        unsigned ch = (unsigned char)s[n];
        if (ch < 32 || ch > 126) ch = '?';
        const unsigned char *g = vt_font5x7[ch - 32];
        /* the font has no descender rows: lower the letters that have one */
        int drop = ch == 'p' || ch == 'q' || ch == 'y' || ch == 'g' || ch == 'j' ? 1 : 0;
        for (int col = 0; col < 5; col++)
            for (int row = 0; row < 7; row++) {
                if (!(g[col] >> row & 1)) continue;
                int u = n * 6 + col, v = row + drop; /* glyph-space position */
                for (int j = 0; j < scale; j++)
                    for (int i = 0; i < scale; i++) {
                        if (vertical)
                            put(c, x + v * scale + j, y - u * scale - i, rgb);
                        else
                            put(c, x + u * scale + i, y + v * scale + j, rgb);
                    }
            }
    }
}

/* ---- ticks ---- */

static double nice_step(double range, int target)
{
    double raw = range / (target > 0 ? target : 1);
    if (!(raw > 0)) return 1;
    double p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

static void fmt_tick(char *buf, size_t cap, double v, double step)
{
    if (fabs(v) < step * 1e-6) v = 0;
    double a = fabs(v);
    if (v != 0 && (a >= 1e6 || a < 1e-4 || step < 1e-5)) {
        snprintf(buf, cap, "%.1e", v);
        return;
    }
    int dec = (int)ceil(-log10(step) - 1e-9);
    if (dec < 0) dec = 0;
    if (dec > 6) dec = 6;
    snprintf(buf, cap, "%.*f", dec, v);
}

void vt_plot_panel(vt_canvas *c, int x, int y, int w, int h, const char *title,
                   const char *xlabel, const vt_series *s, int ns)
{
    const int fs = 2;                      /* font scale of every text */
    const int ch = 8 * fs, cw = 6 * fs;    /* text cell */
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i])) continue;
            xmin = fmin(xmin, s[k].x[i]);
            xmax = fmax(xmax, s[k].x[i]);
            ymin = fmin(ymin, s[k].y[i]);
            ymax = fmax(ymax, s[k].y[i]);
        }
    int has_data = isfinite(xmin);
    if (!has_data) {
        xmin = 0;
        xmax = 1;
        ymin = 0;
        ymax = 1;
    }
    if (xmax - xmin < 1) {
        xmin -= 0.5;
        xmax += 0.5;
    }
    if (ymax - ymin < 1e-12 * fmax(1, fabs(ymax))) {
        double pad = fabs(ymax) > 0 ? fabs(ymax) * 0.1 : 1;
        ymin -= pad;
        ymax += pad;
    } else {
        double pad = (ymax - ymin) * 0.06;
        ymin -= pad;
        ymax += pad;
    }
    double ystep = nice_step(ymax - ymin, 5);
    double xstep = nice_step(xmax - xmin, 6);
    if (xstep < 1) xstep = 1;
    /* left margin from the widest y label */
    char lab[64];
    int maxw = 0;
    for (double v = ceil(ymin / ystep) * ystep; v <= ymax + ystep * 1e-9; v += ystep) {
        fmt_tick(lab, sizeof lab, v, ystep);
        int tw = vt_text_width(lab, fs);
        if (tw > maxw) maxw = tw;
    }
    int px0 = x + maxw + 14, py0 = y + ch + 14;                    /* plot area top-left */
    int pw = x + w - 14 - px0, ph = y + h - (2 * ch + 22) - py0;  /* plot area size */
    if (pw < 20 || ph < 20) return;
    /* title */
    vt_canvas_text(c, x + (w - vt_text_width(title, fs)) / 2, y + 6, title, fs, INK, 0);
#define MAPX(v) (px0 + (int)lround(((v) - xmin) / (xmax - xmin) * (pw - 1)))
#define MAPY(v) (py0 + ph - 1 - (int)lround(((v) - ymin) / (ymax - ymin) * (ph - 1)))
    /* grid and ticks */
    for (double v = ceil(ymin / ystep) * ystep; v <= ymax + ystep * 1e-9; v += ystep) {
        int py = MAPY(v);
        vt_canvas_rect(c, px0, py, pw, 1, GRID);
        vt_canvas_rect(c, px0 - 5, py, 5, 1, AXIS);
        fmt_tick(lab, sizeof lab, v, ystep);
        vt_canvas_text(c, px0 - 8 - vt_text_width(lab, fs), py - ch / 2 + fs, lab, fs, INK, 0);
    }
    for (double v = ceil(xmin / xstep) * xstep; v <= xmax + 1e-9; v += xstep) {
        int px = MAPX(v);
        vt_canvas_rect(c, px, py0, 1, ph, GRID);
        vt_canvas_rect(c, px, py0 + ph, 1, 5, AXIS);
        fmt_tick(lab, sizeof lab, v, xstep);
        vt_canvas_text(c, px - vt_text_width(lab, fs) / 2, py0 + ph + 8, lab, fs, INK, 0);
    }
    frame(c, px0, py0, pw, ph, AXIS);
    if (xlabel)
        vt_canvas_text(c, px0 + (pw - vt_text_width(xlabel, fs)) / 2, py0 + ph + ch + 14, xlabel,
                       fs, INK, 0);
    /* series */
    for (int k = 0; k < ns; k++) {
        int have = 0, lx = 0, ly = 0;
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i])) {
                have = 0;
                continue;
            }
            int qx = MAPX(s[k].x[i]), qy = MAPY(s[k].y[i]);
            if (have) vt_canvas_line(c, lx, ly, qx, qy, s[k].rgb, 2, s[k].dash);
            if (s[k].marker) vt_canvas_rect(c, qx - 2, qy - 2, 5, 5, s[k].rgb);
            have = 1;
            lx = qx;
            ly = qy;
        }
    }
#undef MAPX
#undef MAPY
    if (!has_data) {
        const char *msg = "no data";
        vt_canvas_text(c, px0 + (pw - vt_text_width(msg, fs)) / 2, py0 + ph / 2 - ch / 2, msg, fs,
                       AXIS, 0);
        return;
    }
    /* legend, top right inside the plot area */
    int lw = 0, nl = 0;
    for (int k = 0; k < ns; k++)
        if (s[k].label) {
            int tw = vt_text_width(s[k].label, fs);
            if (tw > lw) lw = tw;
            nl++;
        }
    if (!nl) return;
    int bw = lw + 3 * cw + 14, bh = nl * (ch + 6) + 8;
    /* the corner whose box covers the fewest points of the curves */
    int bx = px0 + pw - bw - 6, by = py0 + 6, fewest = -1;
    for (int corner = 0; corner < 4; corner++) {
        int cx = corner & 1 ? px0 + 6 : px0 + pw - bw - 6;
        int cy = corner & 2 ? py0 + ph - bh - 6 : py0 + 6;
        int hits = 0;
        for (int k = 0; k < ns; k++)
            for (int i = 0; i < s[k].n; i++) {
                if (!isfinite(s[k].y[i])) continue;
                int qx = px0 + (int)lround((s[k].x[i] - xmin) / (xmax - xmin) * (pw - 1));
                int qy = py0 + ph - 1 - (int)lround((s[k].y[i] - ymin) / (ymax - ymin) * (ph - 1));
                /* the segment to the next point counts too (sampled) */
                for (int sub = 0; sub < 8; sub++) {
                    int rx = qx, ry = qy;
                    if (i + 1 < s[k].n && isfinite(s[k].y[i + 1])) {
                        int nx = px0 + (int)lround((s[k].x[i + 1] - xmin) / (xmax - xmin) * (pw - 1));
                        int ny = py0 + ph - 1 -
                                 (int)lround((s[k].y[i + 1] - ymin) / (ymax - ymin) * (ph - 1));
                        rx = qx + (nx - qx) * sub / 8;
                        ry = qy + (ny - qy) * sub / 8;
                    } else if (sub) {
                        break;
                    }
                    hits += rx >= cx - 4 && rx < cx + bw + 4 && ry >= cy - 4 && ry < cy + bh + 4;
                }
            }
        if (fewest < 0 || hits < fewest) {
            fewest = hits;
            bx = cx;
            by = cy;
        }
    }
    vt_canvas_rect(c, bx, by, bw, bh, RGB(255, 255, 255));
    frame(c, bx, by, bw, bh, RGB(200, 200, 200));
    int row = 0;
    for (int k = 0; k < ns; k++) {
        if (!s[k].label) continue;
        int ty = by + 6 + row * (ch + 6);
        vt_canvas_line(c, bx + 6, ty + ch / 2, bx + 6 + 2 * cw, ty + ch / 2, s[k].rgb, 2,
                       s[k].dash);
        if (s[k].marker) vt_canvas_rect(c, bx + 6 + cw - 2, ty + ch / 2 - 2, 5, 5, s[k].rgb);
        vt_canvas_text(c, bx + 6 + 2 * cw + 8, ty + fs, s[k].label, fs, INK, 0);
        row++;
    }
}

/* Gaussian smoothing (sigma in points) over the finite values, as a guide to the eye. */
void vt_plot_bars(vt_canvas *c, int x, int y, int w, int h, const char *title,
                  const char *const *labels, int n, const double *const *values,
                  const char *const *series_names, const uint32_t *rgb, int ns)
{
    const int fs = 2, ch = 8 * fs;
    if (n < 1 || ns < 1 || ns > 8) return;
    double ymax = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < n; i++)
            if (isfinite(values[k][i])) ymax = fmax(ymax, values[k][i]);
    if (!(ymax > 0)) ymax = 1;
    double ystep = nice_step(ymax * 1.06, 5);
    ymax = ceil(ymax * 1.06 / ystep) * ystep;
    char lab[64];
    int maxw = 0, maxlab = 0;
    for (double v = 0; v <= ymax + ystep * 1e-9; v += ystep) {
        fmt_tick(lab, sizeof lab, v, ystep);
        if (vt_text_width(lab, fs) > maxw) maxw = vt_text_width(lab, fs);
    }
    for (int i = 0; labels && i < n; i++)
        if (labels[i] && vt_text_width(labels[i], fs) > maxlab) maxlab = vt_text_width(labels[i], fs);
    int px0 = x + maxw + 14, py0 = y + ch + 14, pw = x + w - 14 - px0;
    int group = pw / n;
    /* labels across when they fit in a group, else upwards (then they take vertical room) */
    int upright = maxlab + 4 > group;
    int below = labels ? (upright ? maxlab : ch) + 10 : 4;
    int ph = y + h - below - 6 - py0;
    if (pw < 20 || ph < 20 || group < 1) return;
    vt_canvas_text(c, x + (w - vt_text_width(title, fs)) / 2, y + 6, title, fs, INK, 0);
    for (double v = 0; v <= ymax + ystep * 1e-9; v += ystep) {
        int yy = py0 + ph - 1 - (int)lround(v / ymax * (ph - 1));
        vt_canvas_rect(c, px0, yy, pw, 1, GRID);
        fmt_tick(lab, sizeof lab, v, ystep);
        vt_canvas_text(c, px0 - 6 - vt_text_width(lab, fs), yy - 3 * fs, lab, fs, INK, 0);
    }
    int bw = (group - (group > 4 ? group / 5 : 0)) / ns;
    if (bw < 1) bw = 1;
    for (int i = 0; i < n; i++) {
        int gx = px0 + i * group + (group - bw * ns) / 2;
        for (int k = 0; k < ns; k++) {
            double v = isfinite(values[k][i]) ? fmax(values[k][i], 0) : 0;
            int bh = (int)lround(v / ymax * (ph - 1));
            vt_canvas_rect(c, gx + k * bw, py0 + ph - bh, bw, bh, rgb[k]);
        }
        if (!labels || !labels[i]) continue;
        int tw = vt_text_width(labels[i], fs);
        if (upright)
            vt_canvas_text(c, px0 + i * group + (group - 7 * fs) / 2, py0 + ph + 8 + tw, labels[i],
                           fs, INK, 1);
        else
            vt_canvas_text(c, px0 + i * group + (group - tw) / 2, py0 + ph + 8, labels[i], fs,
                           INK, 0);
    }
    frame(c, px0 - 1, py0 - 1, pw + 2, ph + 2, AXIS);
    /* legend, top right */
    int ly = py0 + 6;
    for (int k = 0; series_names && k < ns; k++) {
        if (!series_names[k]) continue;
        int tw = vt_text_width(series_names[k], fs);
        int lx = px0 + pw - tw - 30;
        vt_canvas_rect(c, lx, ly + 2, 12, 12, rgb[k]);
        vt_canvas_text(c, lx + 18, ly + 1, series_names[k], fs, INK, 0);
        ly += ch + 4;
    }
}

static void smooth(const double *y, int n, double sigma, double *out)
{
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) {
            out[i] = NAN;
            continue;
        }
        double sw = 0, s = 0;
        for (int j = 0; j < n; j++) {
            if (!isfinite(y[j])) continue;
            double d = (double)(i - j) / sigma, wgt = exp(-0.5 * d * d);
            sw += wgt;
            s += wgt * y[j];
        }
        out[i] = s / sw;
    }
}

static vt_status save(const char *path, vt_canvas *c)
{
    vt_status st = vt_image_save_png(path, c->px, c->w, c->h, 3, (size_t)c->w * 3);
    vt_canvas_free(c);
    return st;
}

vt_status vt_plot_grid(const char *path, const double *x, int n, const double *const *ys,
                       const char *const *titles, int np, const char *xlabel)
{
    if (np <= 0) return VT_OK;
    int cols = np <= 3 ? np : (np + 1) / 2;
    int rows = (np + cols - 1) / cols;
    int pw = 400, ph = 300;
    vt_canvas c;
    vt_status st = vt_canvas_init(&c, cols * pw, rows * ph);
    if (st) return st;
    double *sm = vt_malloc(((size_t)n + 1) * sizeof(double));
    if (!sm) {
        vt_canvas_free(&c);
        return VT_ERR_OUT_OF_MEMORY;
    }
    for (int p = 0; p < np; p++) {
        const double *y = ys[p];
        int finite = 0;
        for (int i = 0; i < n; i++) finite += isfinite(y[i]) != 0;
        vt_series s[2] = {{"results", x, y, n, BLUE, 1, 0}, {"smooth", x, sm, n, ORANGE, 0, 1}};
        int ns = 1;
        if (finite >= 5) {
            smooth(y, n, fmax(1.0, finite / 15.0), sm);
            ns = 2;
        }
        vt_plot_panel(&c, (p % cols) * pw, (p / cols) * ph, pw, ph, titles[p], xlabel, s, ns);
    }
    free(sm);
    return save(path, &c);
}

/* White -> blue, like matplotlib's "Blues". */
static uint32_t blues(double f)
{
    static const double stop[3][3] = {{247, 251, 255}, {107, 174, 214}, {8, 48, 107}};
    if (!(f > 0)) f = 0;
    if (f > 1) f = 1;
    int i = f < 0.5 ? 0 : 1;
    double u = f < 0.5 ? f * 2 : (f - 0.5) * 2;
    double r = stop[i][0] + (stop[i + 1][0] - stop[i][0]) * u;
    double g = stop[i][1] + (stop[i + 1][1] - stop[i][1]) * u;
    double b = stop[i][2] + (stop[i + 1][2] - stop[i][2]) * u;
    return RGB((int)r, (int)g, (int)b);
}

vt_status vt_plot_confusion(const char *path, int k, const int64_t *counts,
                            const char *const *names)
{
    if (k < 1) return VT_OK;
    const int fs = 2, ch = 16;
    /* class names: at most 16 characters, shown when a cell is at least one text line tall */
    char (*lab)[20] = vt_calloc((size_t)k, sizeof *lab);
    if (!lab) return VT_ERR_OUT_OF_MEMORY;
    int maxlen = 1;
    for (int i = 0; i < k; i++) {
        const char *nm = names && names[i] ? names[i] : "";
        if (strlen(nm) > 16) snprintf(lab[i], sizeof lab[i], "%.14s..", nm);
        else if (*nm) snprintf(lab[i], sizeof lab[i], "%s", nm);
        else snprintf(lab[i], sizeof lab[i], "%d", i);
        int l = (int)strlen(lab[i]);
        if (l > maxlen) maxlen = l;
    }
    int W = 1000, H = 900;
    int area = 620;                      /* the matrix is at most area x area pixels */
    int cell = area / k;
    if (cell < 1) cell = 1;
    int show_names = cell >= ch;
    int name_px = show_names ? vt_text_width(lab[0], fs) : 0;
    for (int i = 0; show_names && i < k; i++)
        if (vt_text_width(lab[i], fs) > name_px) name_px = vt_text_width(lab[i], fs);
    int mx = 70 + name_px, my = 60;      /* matrix top-left */
    int msz = cell * k;
    W = mx + msz + 140;
    H = my + msz + 50 + name_px + 30;
    if (W < 600) W = 600;
    vt_canvas c;
    vt_status st = vt_canvas_init(&c, W, H);
    if (st) {
        free(lab);
        return st;
    }
    const char *title = "Confusion matrix (normalised per true class)";
    vt_canvas_text(&c, (W - vt_text_width(title, fs)) / 2, 18, title, fs, INK, 0);
    for (int t = 0; t < k; t++) {
        int64_t row = 0;
        for (int p = 0; p < k; p++) row += counts[(size_t)t * k + p];
        for (int p = 0; p < k; p++) {
            int64_t n = counts[(size_t)t * k + p];
            double f = row ? (double)n / (double)row : 0;
            int x0 = mx + p * cell, y0 = my + t * cell;
            vt_canvas_rect(&c, x0, y0, cell, cell, blues(f));
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)n);
            for (int sc = 2; sc >= 1; sc--) {
                int tw = vt_text_width(num, sc);
                if (tw + 4 <= cell && 8 * sc + 2 <= cell) {
                    vt_canvas_text(&c, x0 + (cell - tw) / 2, y0 + (cell - 7 * sc) / 2, num, sc,
                                   f > 0.5 ? RGB(255, 255, 255) : INK, 0);
                    break;
                }
            }
        }
    }
    if (cell >= 4)
        for (int i = 0; i <= k; i++) { /* cell borders */
            vt_canvas_rect(&c, mx + i * cell, my, 1, msz, RGB(255, 255, 255));
            vt_canvas_rect(&c, mx, my + i * cell, msz + 1, 1, RGB(255, 255, 255));
        }
    frame(&c, mx - 1, my - 1, msz + 2, msz + 2, AXIS);
    if (show_names)
        for (int i = 0; i < k; i++) {
            int tw = vt_text_width(lab[i], fs);
            /* true class names left of the rows, predicted ones below the columns, upwards */
            vt_canvas_text(&c, mx - 8 - tw, my + i * cell + (cell - 7 * fs) / 2, lab[i], fs, INK, 0);
            vt_canvas_text(&c, mx + i * cell + (cell - 7 * fs) / 2, my + msz + 8 + tw, lab[i], fs,
                           INK, 1);
        }
    const char *xl = "Predicted", *yl = "True";
    vt_canvas_text(&c, mx + (msz - vt_text_width(xl, fs)) / 2, my + msz + 20 + name_px, xl, fs,
                   INK, 0);
    vt_canvas_text(&c, 14, my + (msz + vt_text_width(yl, fs)) / 2, yl, fs, INK, 1);
    /* colour bar */
    int cbx = mx + msz + 30, cbh = msz < 200 ? msz : msz;
    for (int j = 0; j < cbh; j++) vt_canvas_rect(&c, cbx, my + j, 20, 1, blues(1.0 - (double)j / (cbh - 1 > 0 ? cbh - 1 : 1)));
    frame(&c, cbx - 1, my - 1, 22, cbh + 2, AXIS);
    vt_canvas_text(&c, cbx + 28, my, "1.0", fs, INK, 0);
    vt_canvas_text(&c, cbx + 28, my + cbh / 2 - ch / 2, "0.5", fs, INK, 0);
    vt_canvas_text(&c, cbx + 28, my + cbh - ch, "0.0", fs, INK, 0);
    free(lab);
    return save(path, &c);
}
