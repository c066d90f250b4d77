/* A small plotting module: an RGB canvas with lines, rectangles and UTF-8 text (a TrueType font
 * through FreeType, or the built-in bitmap font of font.c; text.c), line charts (axes, ticks
 * with numeric labels, grid, legend, title), bar charts, and the figures of a run folder (a
 * grid of metric panels, a confusion matrix, curves, mosaics of images with boxes or masks). */
#ifndef VT_PLOT_H
#define VT_PLOT_H

#include <stddef.h>
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
/* Text (UTF-8) with the top-left corner of its line box at (x, y); size is the line height in
 * pixels (ascent + descent: letters like g, p, y hang below the baseline inside it).  Drawn
 * with a TrueType font through FreeType when the build has FreeType and a font is found (DejaVu
 * Sans at the usual places), else with the built-in bitmap font; a character the font lacks is
 * drawn as an empty box.  vertical != 0 writes bottom-to-top with (x, y) the bottom-left
 * corner.  Thread-safe. */
void vt_canvas_text(vt_canvas *c, int x, int y, const char *s, int size, uint32_t rgb,
                    int vertical);
/* The advance width in pixels of s at this size. */
int vt_text_width(const char *s, int size);
/* Which font text uses: 1 a TrueType font (its path copied to file when file != NULL), 0 the
 * built-in one. */
int vt_font_truetype(char *file, size_t cap);
/* Choose the font: NULL the first of the standard places, "" the built-in font, else that
 * TrueType file (the built-in font when it cannot be opened).  Returns vt_font_truetype's
 * answer.  For tests and embedders that ship their own font. */
int vt_font_use(const char *path);

/* s cut to at most maxw pixels at this size, an ellipsis marking the cut (UTF-8 safe). */
void vt_text_fit(char *out, size_t cap, const char *s, int size, int maxw);
/* A count in few characters: 950, 21.5k, 3.2M. */
void vt_fmt_count(char *buf, size_t cap, int64_t n);
/* The colour of class k (a palette of 20, cycling), shared by boxes, masks and curves. */
uint32_t vt_class_rgb(int k);

typedef struct vt_series {
    const char *label;   /* NULL: not in the legend */
    const double *x, *y; /* n points; NaN = gap */
    int n;
    uint32_t rgb;
    int marker;          /* draw a dot at each point (a larger one for a single point) */
    int dash;            /* dashed line */
    int thick;           /* line width in pixels; 0 = 2 */
} vt_series;

typedef struct vt_axes {
    const char *title, *xlabel, *ylabel; /* each may be NULL */
    double xlim[2], ylim[2];             /* fixed limits when [0] < [1], else from the data */
    int integer_x;                       /* x ticks at whole numbers (epochs) */
    int legend_right;                    /* the legend beside the plot area, not inside it,
                                            also for a single labelled series */
} vt_axes;

/* One chart in the rectangle (x, y, w, h) of the canvas: grid, ticks with numeric labels, the
 * series in order, and a legend only when 2 or more series have a label (or legend_right).  A flat series whose
 * value lies in 0..1 gets the axis 0..1. */
void vt_plot_axes(vt_canvas *c, int x, int y, int w, int h, const vt_axes *ax, const vt_series *s,
                  int ns);
/* A PNG of one w x h chart. */
vt_status vt_plot_figure(const char *path, int w, int h, const vt_axes *ax, const vt_series *s,
                         int ns);

/* Grouped bar chart in the rectangle (x, y, w, h): n groups (category labels under the
 * x axis, cut to 140 pixels, written upwards when they do not fit across; NULL labels: none),
 * one bar per series in each group, values[k][i] of series k (k < ns <= 8) with the colours
 * rgb[k] and a legend of series_names when ns >= 2 (may be NULL).  The y axis starts at 0. */
void vt_plot_bars(vt_canvas *c, int x, int y, int w, int h, const char *title,
                  const char *const *labels, int n, const double *const *values,
                  const char *const *series_names, const uint32_t *rgb, int ns);

/* A PNG of np line-chart panels sharing the x values x[0..n): panel p draws ys[p][0..n) (NaN =
 * gap) with a smoothed curve once it has 5 finite points, titled titles[p]. */
vt_status vt_plot_grid(const char *path, const double *x, int n, const double *const *ys,
                       const char *const *titles, int np, const char *xlabel);
/* confusion_matrix.png: counts[true*k + predicted]; colours and the numbers in the cells are
 * the shares of each true class (rows sum to 1), the counts (21.5k) below them when the cell
 * is tall enough; unit names what is counted ("images", "pixels", "objects").  Class names on
 * the axes, cut with an ellipsis beyond 160 pixels. */
vt_status vt_plot_confusion(const char *path, int k, const int64_t *counts,
                            const char *const *names, const char *unit);

/* ---- mosaics (mosaic.c) ---- */
typedef struct vt_mosaic_box {
    float x0, y0, x1, y1; /* corners in the image's pixels */
    float score;          /* < 0: none shown (a ground truth) */
    int cls;
} vt_mosaic_box;

typedef struct vt_mosaic_tile {
    const uint8_t *px;    /* w x h, c = 1 or 3 interleaved, rows packed */
    int w, h, c;
    const vt_mosaic_box *box;
    int nbox;
    const uint8_t *mask;  /* NULL, or w x h class ids painted in the class colours */
    const char *caption;  /* under the tile, may be NULL */
} vt_mosaic_tile;

/* A PNG grid of n tiles (each scaled to fit 256 x 256) with their boxes (class colour, name and
 * score) and masks (class colours at 2/3 opacity, but class mask_skip, e.g. a background; -1 paints
 * every class; ids >= nc are left unpainted), and under it a key of the colours of the classes
 * the masks paint. */
vt_status vt_plot_mosaic(const char *path, const char *title, const vt_mosaic_tile *tiles, int n,
                         const char *const *names, int nc, int mask_skip);

#endif
