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


/* ---- text helpers ---- */

/* s cut to at most maxw pixels at this size, an ellipsis marking the cut (UTF-8 safe). */
void vt_text_fit(char *out, size_t cap, const char *s, int size, int maxw)
{
    if (!cap) return;
    snprintf(out, cap, "%s", s ? s : "");
    if (vt_text_width(out, size) <= maxw) return;
    /* the built-in font has no ellipsis glyph */
    const char *ell = vt_font_truetype(NULL, 0) ? "\xE2\x80\xA6" : "..";
    size_t el = strlen(ell), n = strlen(out);
    char *full = vt_malloc(n + 1);
    if (!full) {
        out[0] = 0;
        return;
    }
    memcpy(full, out, n + 1);
    while (n > 0) {
        do n--; /* back to the start of a UTF-8 sequence */
        while (n > 0 && ((unsigned char)full[n] & 0xC0) == 0x80);
        size_t m = n;
        while (m > 0 && full[m - 1] == ' ') m--; /* "long…", not "long …" */
        if (m + el + 1 > cap) continue;
        memcpy(out, full, m);
        memcpy(out + m, ell, el + 1);
        if (vt_text_width(out, size) <= maxw) break;
    }
    if (n == 0) snprintf(out, cap, "%s", ell);
    free(full);
}

/* Compact count: 950, 21.5k, 215k, 3.2M. */
void vt_fmt_count(char *buf, size_t cap, int64_t n)
{
    double a = (double)(n < 0 ? -n : n);
    if (a < 1000) snprintf(buf, cap, "%lld", (long long)n);
    else if (a < 999.5e3) snprintf(buf, cap, a < 99950 ? "%.1fk" : "%.0fk", (double)n / 1e3);
    else if (a < 999.5e6) snprintf(buf, cap, a < 99950e3 ? "%.1fM" : "%.0fM", (double)n / 1e6);
    else snprintf(buf, cap, "%.1fG", (double)n / 1e9);
}

/* A palette of 20 colours told apart easily, the first ten matplotlib's tab10. */
uint32_t vt_class_rgb(int k)
{
    static const uint32_t pal[20] = {
        RGB(31, 119, 180), RGB(255, 127, 14),  RGB(44, 160, 44),   RGB(214, 39, 40),
        RGB(148, 103, 189), RGB(140, 86, 75),  RGB(227, 119, 194), RGB(127, 127, 127),
        RGB(188, 189, 34), RGB(23, 190, 207),  RGB(0, 0, 128),     RGB(255, 215, 0),
        RGB(0, 128, 128),  RGB(255, 99, 71),   RGB(128, 0, 0),     RGB(60, 180, 75),
        RGB(70, 240, 240), RGB(240, 50, 230),  RGB(170, 110, 40),  RGB(0, 0, 0)};
    return pal[(k < 0 ? -k : k) % 20];
}

/* ---- line charts ---- */

enum { TXT = 15, TITLE = 17 }; /* text line heights in pixels */

static int finite_range(const vt_series *s, int ns, double *x0, double *x1, double *y0,
                        double *y1)
{
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i]) || !isfinite(s[k].x[i])) continue;
            *x0 = fmin(*x0, s[k].x[i]);
            *x1 = fmax(*x1, s[k].x[i]);
            *y0 = fmin(*y0, s[k].y[i]);
            *y1 = fmax(*y1, s[k].y[i]);
        }
    return isfinite(*x0);
}

/* The legend's entries: a line (and marker) of the series' style, then its label. */
static void legend_box(vt_canvas *c, int bx, int by, int bw, const vt_series *s, int ns, int rows)
{
    int bh = rows * (TXT + 5) + 8, row = 0;
    vt_canvas_rect(c, bx, by, bw, bh, RGB(255, 255, 255));
    frame(c, bx, by, bw, bh, RGB(200, 200, 200));
    for (int k = 0; k < ns && row < rows; k++) {
        if (!s[k].label) continue;
        int ty = by + 5 + row * (TXT + 5), mid = ty + TXT / 2;
        if (s[k].n > 1 || !s[k].marker)
            vt_canvas_line(c, bx + 6, mid, bx + 30, mid, s[k].rgb, s[k].thick ? s[k].thick : 2,
                           s[k].dash);
        if (s[k].marker) vt_canvas_rect(c, bx + 16, mid - 3, 7, 7, s[k].rgb);
        char lab[256];
        vt_text_fit(lab, sizeof lab, s[k].label, TXT, bw - 44);
        vt_canvas_text(c, bx + 38, ty, lab, TXT, INK, 0);
        row++;
    }
}

void vt_plot_axes(vt_canvas *c, int x, int y, int w, int h, const vt_axes *ax, const vt_series *s,
                  int ns)
{
    double xmin, xmax, ymin, ymax;
    int has_data = finite_range(s, ns, &xmin, &xmax, &ymin, &ymax);
    if (!has_data) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
    if (ax->xlim[0] < ax->xlim[1]) {
        xmin = ax->xlim[0];
        xmax = ax->xlim[1];
    } else if (xmax - xmin < 1 && ax->integer_x) {
        xmin -= 0.5;
        xmax += 0.5;
    } else if (xmax - xmin < 1e-12) {
        xmin -= 0.5;
        xmax += 0.5;
    }
    if (ax->ylim[0] < ax->ylim[1]) {
        ymin = ax->ylim[0];
        ymax = ax->ylim[1];
    } else if (ymax - ymin < 1e-12 * fmax(1, fabs(ymax))) {
        /* a flat series: 0..1 for a value in it (a metric that stayed 0, or 1), else +-10% */
        if (ymin >= 0 && ymax <= 1) {
            ymin = 0;
            ymax = 1;
        } else {
            double pad = fabs(ymax) * 0.1;
            ymin -= pad;
            ymax += pad;
        }
    } else {
        double pad = (ymax - ymin) * 0.06;
        /* a non-negative quantity keeps a non-negative axis */
        ymin = ymin >= 0 && ymin - pad < 0 ? 0 : ymin - pad;
        ymax += pad;
    }
    double ystep = nice_step(ymax - ymin, h < 260 ? 4 : 5);
    double xstep = nice_step(xmax - xmin, w < 450 ? 5 : 8);
    if (ax->integer_x && xstep < 1) xstep = 1;
    int nlab = 0, lw = 0;
    for (int k = 0; k < ns; k++)
        if (s[k].label) {
            nlab++;
            int tw = vt_text_width(s[k].label, TXT);
            if (tw > lw) lw = tw;
        }
    /* a legend tells series apart: none for a single one, unless it stands beside the plot
     * (where it also carries a value, e.g. the mAP of a mean among unlabelled curves) */
    int legend = (nlab >= 2 || (nlab == 1 && ax->legend_right)) && has_data;
    int right = legend && ax->legend_right ? (lw + 50 < 300 ? lw + 50 : 300) + 12 : 0;
    char lab[64];
    int maxw = 0;
    for (double v = ceil(ymin / ystep - 1e-9) * ystep; v <= ymax + ystep * 1e-9; v += ystep) {
        fmt_tick(lab, sizeof lab, v, ystep);
        int tw = vt_text_width(lab, TXT);
        if (tw > maxw) maxw = tw;
    }
    int ylab = ax->ylabel ? TXT + 8 : 0;
    int px0 = x + ylab + maxw + 14, py0 = y + (ax->title ? TITLE + 14 : 10);
    int pw = x + w - 16 - right - px0, ph = y + h - (ax->xlabel ? 2 * TXT + 20 : TXT + 14) - py0;
    if (pw < 20 || ph < 20) return;
    if (ax->title) {
        char t[256];
        vt_text_fit(t, sizeof t, ax->title, TITLE, w - 10);
        vt_canvas_text(c, x + (w - vt_text_width(t, TITLE)) / 2, y + 6, t, TITLE, INK, 0);
    }
#define MAPX(v) (px0 + (int)lround(((v) - xmin) / (xmax - xmin) * (pw - 1)))
#define MAPY(v) (py0 + ph - 1 - (int)lround(((v) - ymin) / (ymax - ymin) * (ph - 1)))
    for (double v = ceil(ymin / ystep - 1e-9) * ystep; v <= ymax + ystep * 1e-9; v += ystep) {
        int py = MAPY(v);
        vt_canvas_rect(c, px0, py, pw, 1, GRID);
        vt_canvas_rect(c, px0 - 5, py, 5, 1, AXIS);
        fmt_tick(lab, sizeof lab, v, ystep);
        vt_canvas_text(c, px0 - 8 - vt_text_width(lab, TXT), py - TXT / 2, lab, TXT, INK, 0);
    }
    for (double v = ceil(xmin / xstep - 1e-9) * xstep; v <= xmax + xstep * 1e-9; v += xstep) {
        int px = MAPX(v);
        vt_canvas_rect(c, px, py0, 1, ph, GRID);
        vt_canvas_rect(c, px, py0 + ph, 1, 5, AXIS);
        fmt_tick(lab, sizeof lab, v, xstep);
        vt_canvas_text(c, px - vt_text_width(lab, TXT) / 2, py0 + ph + 7, lab, TXT, INK, 0);
    }
    frame(c, px0, py0, pw, ph, AXIS);
    if (ax->xlabel)
        vt_canvas_text(c, px0 + (pw - vt_text_width(ax->xlabel, TXT)) / 2, py0 + ph + TXT + 12,
                       ax->xlabel, TXT, INK, 0);
    if (ax->ylabel)
        vt_canvas_text(c, x + 4, py0 + (ph + vt_text_width(ax->ylabel, TXT)) / 2, ax->ylabel, TXT,
                       INK, 1);
    /* series, in order (the last on top) */
    for (int k = 0; k < ns; k++) {
        int have = 0, lx = 0, ly = 0, th = s[k].thick ? s[k].thick : 2;
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i]) || !isfinite(s[k].x[i])) {
                have = 0;
                continue;
            }
            int qx = MAPX(s[k].x[i]), qy = MAPY(s[k].y[i]);
            if (have) vt_canvas_line(c, lx, ly, qx, qy, s[k].rgb, th, s[k].dash);
            if (s[k].marker) {
                int r = s[k].n == 1 ? 5 : 2;
                vt_canvas_rect(c, qx - r, qy - r, 2 * r + 1, 2 * r + 1, s[k].rgb);
            }
            have = 1;
            lx = qx;
            ly = qy;
        }
    }
    if (!has_data) {
        const char *msg = "no data";
        vt_canvas_text(c, px0 + (pw - vt_text_width(msg, TXT)) / 2, py0 + ph / 2 - TXT / 2, msg,
                       TXT, AXIS, 0);
        return;
    }
    if (!legend) return;
    if (right) { /* beside the plot area, as many entries as fit */
        int rows = (ph - 8) / (TXT + 5);
        legend_box(c, px0 + pw + 12, py0, right - 12, s, ns, nlab < rows ? nlab : rows);
        return;
    }
    int bw = lw + 50, bh = nlab * (TXT + 5) + 8;
    if (bw > pw - 12) bw = pw - 12;
    /* the corner whose box covers the fewest points of the curves (segments sampled) */
    int bx = 0, by = 0, fewest = -1;
    for (int corner = 0; corner < 4; corner++) {
        int cx = corner & 1 ? px0 + 6 : px0 + pw - bw - 6;
        int cy = corner & 2 ? py0 + ph - bh - 6 : py0 + 6;
        int hits = 0;
        for (int k = 0; k < ns; k++)
            for (int i = 0; i < s[k].n; i++) {
                if (!isfinite(s[k].y[i])) continue;
                int qx = MAPX(s[k].x[i]), qy = MAPY(s[k].y[i]);
                for (int sub = 0; sub < 8; sub++) {
                    int rx = qx, ry = qy;
                    if (i + 1 < s[k].n && isfinite(s[k].y[i + 1])) {
                        int nx = MAPX(s[k].x[i + 1]), ny = MAPY(s[k].y[i + 1]);
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
#undef MAPX
#undef MAPY
    legend_box(c, bx, by, bw, s, ns, nlab);
}

static vt_status save(const char *path, vt_canvas *c)
{
    vt_status st = vt_image_save_png(path, c->px, c->w, c->h, 3, (size_t)c->w * 3);
    vt_canvas_free(c);
    return st;
}

vt_status vt_plot_figure(const char *path, int w, int h, const vt_axes *ax, const vt_series *s,
                         int ns)
{
    vt_canvas c;
    vt_status st = vt_canvas_init(&c, w, h);
    if (st) return st;
    vt_plot_axes(&c, 0, 0, w, h, ax, s, ns);
    return save(path, &c);
}

/* ---- bar charts ---- */

void vt_plot_bars(vt_canvas *c, int x, int y, int w, int h, const char *title,
                  const char *const *labels, int n, const double *const *values,
                  const char *const *series_names, const uint32_t *rgb, int ns)
{
    if (n < 1 || ns < 1 || ns > 8) return;
    double ymax = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < n; i++)
            if (isfinite(values[k][i])) ymax = fmax(ymax, values[k][i]);
    if (!(ymax > 0)) ymax = 1;
    double ystep = nice_step(ymax * 1.06, 5);
    ymax = ceil(ymax * 1.06 / ystep) * ystep;
    char lab[64];
    int maxw = 0;
    for (double v = 0; v <= ymax + ystep * 1e-9; v += ystep) {
        fmt_tick(lab, sizeof lab, v, ystep);
        if (vt_text_width(lab, TXT) > maxw) maxw = vt_text_width(lab, TXT);
    }
    int px0 = x + maxw + 14, py0 = y + TITLE + 14, pw = x + w - 14 - px0;
    int group = pw / n;
    if (group < 1) return;
    /* category names at most 140 pixels (an ellipsis marks a cut); across when they fit in a
     * group, else upwards (then they take vertical room) */
    char (*cut)[160] = labels ? vt_calloc((size_t)n, sizeof *cut) : NULL;
    int maxlab = 0;
    for (int i = 0; cut && i < n; i++) {
        vt_text_fit(cut[i], sizeof cut[i], labels[i] ? labels[i] : "", TXT, 140);
        if (vt_text_width(cut[i], TXT) > maxlab) maxlab = vt_text_width(cut[i], TXT);
    }
    int upright = maxlab + 4 > group;
    int below = cut ? (upright ? maxlab : TXT) + 12 : 4;
    int ph = y + h - below - 6 - py0;
    if (pw < 20 || ph < 20) {
        free(cut);
        return;
    }
    vt_canvas_text(c, x + (w - vt_text_width(title, TITLE)) / 2, y + 6, title, TITLE, INK, 0);
    for (double v = 0; v <= ymax + ystep * 1e-9; v += ystep) {
        int yy = py0 + ph - 1 - (int)lround(v / ymax * (ph - 1));
        vt_canvas_rect(c, px0, yy, pw, 1, GRID);
        fmt_tick(lab, sizeof lab, v, ystep);
        vt_canvas_text(c, px0 - 6 - vt_text_width(lab, TXT), yy - TXT / 2, lab, TXT, INK, 0);
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
        if (!cut || !cut[i][0]) continue;
        int tw = vt_text_width(cut[i], TXT);
        if (upright)
            vt_canvas_text(c, px0 + i * group + (group - TXT) / 2, py0 + ph + 8 + tw, cut[i], TXT,
                           INK, 1);
        else
            vt_canvas_text(c, px0 + i * group + (group - tw) / 2, py0 + ph + 8, cut[i], TXT, INK,
                           0);
    }
    free(cut);
    frame(c, px0 - 1, py0 - 1, pw + 2, ph + 2, AXIS);
    /* legend, top right: only when there are series to tell apart */
    int ly = py0 + 6;
    for (int k = 0; series_names && ns >= 2 && k < ns; k++) {
        if (!series_names[k]) continue;
        int tw = vt_text_width(series_names[k], TXT);
        int lx = px0 + pw - tw - 30;
        vt_canvas_rect(c, lx, ly + 2, 12, 12, rgb[k]);
        vt_canvas_text(c, lx + 18, ly, series_names[k], TXT, INK, 0);
        ly += TXT + 4;
    }
}

/* Gaussian smoothing (sigma in points) over the finite values, as a guide to the eye. */
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
        /* the values alone carry no legend; with the smoothed curve beside them, both do */
        vt_series s[2] = {{NULL, x, y, n, BLUE, 1, 0, 0}, {"smoothed", x, sm, n, ORANGE, 0, 1, 0}};
        int ns = 1;
        if (finite >= 5) {
            smooth(y, n, fmax(1.0, finite / 15.0), sm);
            s[0].label = "values";
            ns = 2;
        }
        vt_axes ax = {.title = titles[p], .xlabel = xlabel, .integer_x = 1};
        vt_plot_axes(&c, (p % cols) * pw, (p / cols) * ph, pw, ph, &ax, s, ns);
    }
    free(sm);
    return save(path, &c);
}

/* ---- confusion matrix ---- */

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

/* The numbers of one cell, centred: the share of the row, and the count below it when the
 * cell is tall enough; nothing for an empty cell. */
static void cell_text(vt_canvas *c, int x0, int y0, int cell, int64_t n, double f)
{
    if (n == 0) return;
    char frac[16], cnt[32];
    snprintf(frac, sizeof frac, "%.2f", f);
    vt_fmt_count(cnt, sizeof cnt, n);
    uint32_t col = f > 0.5 ? RGB(255, 255, 255) : INK;
    for (int sz = TXT; sz >= 10; sz -= 2) {
        int two = 2 * sz + 4 <= cell && vt_text_width(cnt, sz - 2) + 4 <= cell;
        if (vt_text_width(frac, sz) + 4 > cell || sz + 2 > cell) continue;
        int top = y0 + (cell - (two ? 2 * sz : sz)) / 2;
        vt_canvas_text(c, x0 + (cell - vt_text_width(frac, sz)) / 2, top, frac, sz, col, 0);
        if (two)
            vt_canvas_text(c, x0 + (cell - vt_text_width(cnt, sz - 2)) / 2, top + sz + 1, cnt,
                           sz - 2, col, 0);
        return;
    }
}

vt_status vt_plot_confusion(const char *path, int k, const int64_t *counts,
                            const char *const *names, const char *unit)
{
    if (k < 1) return VT_OK;
    const int area = 640; /* the matrix is at most area x area pixels */
    int cell = area / k;
    if (cell < 1) cell = 1;
    int show_names = cell >= TXT - 1;
    /* class names at most 160 pixels: longer ones end in an ellipsis */
    char (*lab)[192] = vt_calloc((size_t)k, sizeof *lab);
    if (!lab) return VT_ERR_OUT_OF_MEMORY;
    int name_px = 0;
    for (int i = 0; i < k; i++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        const char *nm = names && names[i] && *names[i] ? names[i] : idx;
        vt_text_fit(lab[i], sizeof lab[i], nm, TXT, 160);
        if (show_names && vt_text_width(lab[i], TXT) > name_px) name_px = vt_text_width(lab[i], TXT);
    }
    int msz = cell * k;
    int mx = 12 + TXT + 12 + name_px + 8, my = 2 * TITLE + 30; /* matrix top-left */
    int W = mx + msz + 150, H = my + msz + 8 + name_px + 12 + TXT + 14;
    if (W < 640) W = 640;
    vt_canvas c;
    vt_status st = vt_canvas_init(&c, W, H);
    if (st) {
        free(lab);
        return st;
    }
    /* what the title says is what the cells show: colours and numbers are shares of the true
     * class (each row sums to 1), the counts below them */
    const char *title = "Confusion matrix, normalised per true class";
    char sub[160];
    snprintf(sub, sizeof sub, "cell: share of the true class's %s (rows sum to 1), count below",
             unit && *unit ? unit : "samples");
    vt_canvas_text(&c, (W - vt_text_width(title, TITLE)) / 2, 10, title, TITLE, INK, 0);
    vt_canvas_text(&c, (W - vt_text_width(sub, TXT)) / 2, 14 + TITLE, sub, TXT, AXIS, 0);
    for (int t = 0; t < k; t++) {
        int64_t row = 0;
        for (int p = 0; p < k; p++) row += counts[(size_t)t * k + p];
        for (int p = 0; p < k; p++) {
            int64_t n = counts[(size_t)t * k + p];
            double f = row ? (double)n / (double)row : 0;
            int x0 = mx + p * cell, y0 = my + t * cell;
            vt_canvas_rect(&c, x0, y0, cell, cell, row ? blues(f) : RGB(235, 235, 235));
            cell_text(&c, x0, y0, cell, n, f);
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
            int tw = vt_text_width(lab[i], TXT);
            /* true class names left of the rows, predicted ones below the columns, upwards */
            vt_canvas_text(&c, mx - 8 - tw, my + i * cell + (cell - TXT) / 2, lab[i], TXT, INK, 0);
            vt_canvas_text(&c, mx + i * cell + (cell - TXT) / 2, my + msz + 8 + tw, lab[i], TXT,
                           INK, 1);
        }
    const char *xl = "Predicted", *yl = "True";
    vt_canvas_text(&c, mx + (msz - vt_text_width(xl, TXT)) / 2, my + msz + 8 + name_px + 10, xl,
                   TXT, INK, 0);
    vt_canvas_text(&c, 12, my + (msz + vt_text_width(yl, TXT)) / 2, yl, TXT, INK, 1);
    /* colour bar: the share, 0 to 1 */
    int cbx = mx + msz + 30, cbh = msz > 60 ? msz : 60;
    for (int j = 0; j < cbh; j++)
        vt_canvas_rect(&c, cbx, my + j, 20, 1, blues(1.0 - (double)j / (cbh - 1)));
    frame(&c, cbx - 1, my - 1, 22, cbh + 2, AXIS);
    static const char *const ticks[3] = {"1.0", "0.5", "0.0"};
    for (int i = 0; i < 3; i++) {
        int ty = my + (cbh - 1) * i / 2;
        vt_canvas_rect(&c, cbx + 20, ty, 5, 1, AXIS);
        vt_canvas_text(&c, cbx + 30, ty - TXT / 2, ticks[i], TXT, INK, 0);
    }
    free(lab);
    return save(path, &c);
}
