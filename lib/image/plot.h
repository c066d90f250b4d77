/* A small plotting module: an RGB canvas with lines, rectangles and text from a built-in 5x7
 * bitmap font, line-chart panels (axes, ticks with numeric labels, grid, legend, title), and
 * the figures of a run folder (a grid of metric panels, a confusion matrix). */
#ifndef VT_PLOT_H
#define VT_PLOT_H

#include <stdint.h>

#include "core/core.h"

extern const unsigned char vt_font5x7[95][5];

typedef struct vt_canvas {
    int w, h;
    uint8_t *px; /* w*h*3, RGB */
} vt_canvas;

vt_status vt_canvas_init(vt_canvas *c, int w, int h);
void vt_canvas_free(vt_canvas *c);
void vt_canvas_rect(vt_canvas *c, int x, int y, int w, int h, uint32_t rgb);
void vt_canvas_line(vt_canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, int thick,
                    int dash);
/* Text with its top-left corner at (x, y); each character is 6*scale wide, 8*scale tall.
 * vertical != 0 writes bottom-to-top with (x, y) the bottom-left corner. */
void vt_canvas_text(vt_canvas *c, int x, int y, const char *s, int scale, uint32_t rgb,
                    int vertical);
static inline int vt_text_width(const char *s, int scale)
{
    int n = 0;
    while (s[n]) n++;
    return n * 6 * scale - scale;
}

typedef struct vt_series {
    const char *label;
    const double *x, *y; /* n points; NaN y = gap */
    int n;
    uint32_t rgb;
    int marker;          /* draw a dot at each point */
    int dash;            /* dashed line */
} vt_series;

/* One chart in the rectangle (x, y, w, h) of the canvas. */
void vt_plot_panel(vt_canvas *c, int x, int y, int w, int h, const char *title,
                   const char *xlabel, const vt_series *s, int ns);

/* Grouped bar chart in the rectangle (x, y, w, h): n groups (category labels under the
 * x axis, written upwards when they do not fit across; NULL labels: none), one bar per series
 * in each group, values[k][i] of series k (k < ns <= 8) with the colours rgb[k] and a legend
 * of series_names (may be NULL).  The y axis starts at 0. */
void vt_plot_bars(vt_canvas *c, int x, int y, int w, int h, const char *title,
                  const char *const *labels, int n, const double *const *values,
                  const char *const *series_names, const uint32_t *rgb, int ns);

/* A PNG of np line-chart panels sharing the x values x[0..n): panel p draws ys[p][0..n) (NaN =
 * gap) with a smoothed curve once it has 5 finite points, titled titles[p]. */
vt_status vt_plot_grid(const char *path, const double *x, int n, const double *const *ys,
                       const char *const *titles, int np, const char *xlabel);
/* confusion_matrix.png: counts[true*k + predicted], colours normalised per true class, counts
 * written in the cells when they fit, class names on the axes. */
vt_status vt_plot_confusion(const char *path, int k, const int64_t *counts,
                            const char *const *names);

#endif
