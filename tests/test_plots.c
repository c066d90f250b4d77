/* The plots a person reads: text (TrueType through FreeType and the built-in fallback: letters
 * with descenders below the baseline, UTF-8 names, a box for a missing glyph), chart axes and
 * legends, the confusion matrix's shares, the PR / F1 curves of detect_eval.c (of boxes and of
 * masks), the instance masks of the validation mosaics, and the figures of detection,
 * segmentation and instance segmentation run folders (present with plots=1, absent with
 * plots=0). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/seg_mask.h"
#include "image/image.h"
#include "image/plot.h"
#include "testutil.h"
#include "task/detect_eval.h"
#include "task/detect_task.h"
#include "task/instance.h"
#include "task/task.h"
#include "visiontrain/visiontrain.h"

#define INK_RGB 0x000000u

/* Rows and columns of the canvas with dark ink (any channel < 128). */
static int ink_at(const vt_canvas *c, int x, int y)
{
    const uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    return p[0] < 128 && p[1] < 128 && p[2] < 128;
}

static void ink_rows(const vt_canvas *c, int *top, int *bottom)
{
    *top = -1;
    *bottom = -1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++)
            if (ink_at(c, x, y)) {
                if (*top < 0) *top = y;
                *bottom = y;
                break;
            }
}

static long ink_count(const vt_canvas *c)
{
    long n = 0;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) n += ink_at(c, x, y);
    return n;
}

/* s drawn black at size 20 on a fresh white canvas. */
static void draw(vt_canvas *c, const char *s)
{
    ck_assert_int_eq(vt_canvas_init(c, 400, 40), VT_OK);
    vt_canvas_text(c, 4, 8, s, 20, INK_RGB, 0);
}

/* Letters with descenders reach lower than the baseline that "xaeon" sit on; capitals and
 * x-height letters do not. */
static void check_descenders(const char *font)
{
    vt_canvas a, b;
    draw(&a, "xaeon");
    int top, base;
    ink_rows(&a, &top, &base);
    ck_assert_msg(base > 0, "%s: no ink for xaeon", font);
    for (const char *ch = "gjpqy"; *ch; ch++) {
        char s[2] = {*ch, 0};
        draw(&b, s);
        int t2, low;
        ink_rows(&b, &t2, &low);
        ck_assert_msg(low >= base + 2, "%s: '%c' ends at row %d, the baseline row is %d", font,
                      *ch, low, base);
        vt_canvas_free(&b);
    }
    draw(&b, "Epoch");
    int t3, low;
    ink_rows(&b, &t3, &low);
    /* 'p' hangs: "Epoch" reaches below the baseline; "Eoch" does not */
    vt_canvas_free(&b);
    draw(&b, "Eoch");
    int t4, low2;
    ink_rows(&b, &t4, &low2);
    ck_assert_msg(low > low2 + 1 && low2 <= base + 1, "%s: Epoch to row %d, Eoch to row %d", font,
                  low, low2);
    vt_canvas_free(&b);
    vt_canvas_free(&a);
}

/* A UTF-8 name draws ink, and not the ink of '?' (nor of '???'). */
static void check_utf8(const char *font, const char *name)
{
    vt_canvas a, q;
    draw(&a, name);
    ck_assert_msg(ink_count(&a) > 20, "%s: %s drew no ink", font, name);
    draw(&q, "?");
    int same = 1;
    for (size_t i = 0; i < (size_t)a.w * a.h * 3; i++) same &= a.px[i] == q.px[i];
    ck_assert_msg(!same, "%s: %s drawn as '?'", font, name);
    vt_canvas_free(&q);
    char three[64];
    snprintf(three, sizeof three, "???");
    draw(&q, three);
    same = 1;
    for (size_t i = 0; i < (size_t)a.w * a.h * 3; i++) same &= a.px[i] == q.px[i];
    ck_assert_msg(!same, "%s: %s drawn as three question marks", font, name);
    vt_canvas_free(&q);
    vt_canvas_free(&a);
}

START_TEST(test_text_builtin)
{
    ck_assert_int_eq(vt_font_use(""), 0);
    ck_assert_int_eq(vt_font_truetype(NULL, 0), 0);
    check_descenders("built-in");
    /* a character the bitmap font lacks is an empty box, not '?' */
    check_utf8("built-in", "\xC3\xA9"); /* é */
    vt_canvas a;
    draw(&a, "\xCE\xB1"); /* α: a hollow box, ink on its rim only */
    int top, bottom;
    ink_rows(&a, &top, &bottom);
    ck_assert_int_gt(bottom - top, 6);
    int mid = (top + bottom) / 2, x0 = -1, x1 = -1;
    for (int x = 0; x < a.w; x++)
        if (ink_at(&a, x, mid)) {
            if (x0 < 0) x0 = x;
            x1 = x;
        }
    ck_assert_msg(x1 - x0 > 4, "box too narrow");
    for (int x = x0 + 3; x < x1 - 2; x++) ck_assert_msg(!ink_at(&a, x, mid), "box not hollow");
    vt_canvas_free(&a);
    /* malformed UTF-8 draws boxes too, and widths count characters */
    ck_assert_int_eq(vt_text_width("ab", 18), vt_text_width("\xC3\xA9\xFF", 18));
    vt_font_use(NULL);
}
END_TEST

START_TEST(test_text_truetype)
{
    char file[1024];
    if (!vt_font_use(NULL)) {
        fprintf(stderr, "test_text_truetype: no FreeType or TrueType font here; skipped\n");
        return;
    }
    ck_assert_int_eq(vt_font_truetype(file, sizeof file), 1);
    ck_assert_msg(strstr(file, ".tt") != NULL, "font file %s", file);
    check_descenders(file);
    check_utf8(file, "Pullover \xC3\xA9t\xC3\xA9");                      /* Latin accents */
    check_utf8(file, "\xCE\xB1\xCE\xB2\xCE\xB3");                        /* Greek */
    check_utf8(file, "\xD0\x9A\xD0\xBE\xD1\x88\xD0\xBA\xD0\xB0");        /* Cyrillic */
    check_utf8(file, "\xF4\x8F\xBF\xBD");                                /* U+10FFFD: a box */
    /* a name cut to fit ends in an ellipsis and fits */
    char cut[256];
    const char *longname = "an extremely long class name \xC3\xA9\xC3\xA9\xC3\xA9 that goes on";
    vt_text_fit(cut, sizeof cut, longname, 15, 120);
    ck_assert_int_le(vt_text_width(cut, 15), 120);
    ck_assert_msg(strstr(cut, "\xE2\x80\xA6") != NULL, "no ellipsis: %s", cut);
    /* a font file that does not exist: the built-in font */
    ck_assert_int_eq(vt_font_use("/no/such/font.ttf"), 0);
    check_descenders("built-in (fallback)");
    ck_assert_int_eq(vt_font_use(NULL), 1);
}
END_TEST

START_TEST(test_counts_and_fit)
{
    char b[32];
    vt_fmt_count(b, sizeof b, 950);
    ck_assert_str_eq(b, "950");
    vt_fmt_count(b, sizeof b, 21473);
    ck_assert_str_eq(b, "21.5k");
    vt_fmt_count(b, sizeof b, 215000);
    ck_assert_str_eq(b, "215k");
    vt_fmt_count(b, sizeof b, 3200000);
    ck_assert_str_eq(b, "3.2M");
    /* cutting never splits a UTF-8 sequence */
    vt_font_use("");
    char cut[64];
    vt_text_fit(cut, sizeof cut, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 18, 30);
    ck_assert_int_le(vt_text_width(cut, 18), 30);
    for (size_t i = 0; cut[i]; i++)
        if ((unsigned char)cut[i] == 0xC3) ck_assert_int_eq((unsigned char)cut[i + 1], 0xA9);
    vt_font_use(NULL);
}
END_TEST

static int is_rgb(const vt_image *im, int x, int y, int r, int g, int b, int tol)
{
    const uint8_t *p = im->data + ((size_t)y * im->w + x) * 3;
    return abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol;
}

/* The longest horizontal run of one colour (a legend box's frame is a long run of grey). */
static int longest_run(const vt_image *im, int r, int g, int b)
{
    int best = 0;
    for (int y = 0; y < im->h; y++)
        for (int x = 0, n = 0; x < im->w; x++) {
            const uint8_t *p = im->data + ((size_t)y * im->w + x) * 3;
            n = p[0] == r && p[1] == g && p[2] == b ? n + 1 : 0;
            if (n > best) best = n;
        }
    return best;
}

/* The frame of the plot area: the first and last rows with a third of the axis colour (90, 90,
 * 90), the bottom one maybe under a curve at 0; its columns where the top row has that colour. */
static void plot_area(const vt_image *im, int *x0, int *y0, int *x1, int *y1)
{
    *x0 = *y0 = *x1 = *y1 = -1;
    for (int y = 0; y < im->h; y++) {
        int n = 0;
        for (int x = 0; x < im->w; x++) n += is_rgb(im, x, y, 90, 90, 90, 0);
        if (n > im->w / 3) {
            if (*y0 < 0) *y0 = y;
            *y1 = y;
        }
    }
    ck_assert_int_ge(*y0, 0);
    int mid = *y0;
    for (int x = 0; x < im->w; x++)
        if (is_rgb(im, x, mid, 90, 90, 90, 0)) {
            if (*x0 < 0) *x0 = x;
            *x1 = x;
        }
}

START_TEST(test_flat_series_and_legend)
{
    /* all-zero metric over 3 epochs: drawn on the bottom edge of a 0..1 axis, no legend */
    double x[3] = {1, 2, 3}, z[3] = {0, 0, 0};
    const double *ys[1] = {z};
    const char *titles[1] = {"metrics/mAP50"};
    const char *path = vt_test_path("flat.png");
    ck_assert_int_eq(vt_plot_grid(path, x, 3, ys, titles, 1, "epoch"), VT_OK);
    vt_image im;
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    int x0, y0, x1, y1;
    plot_area(&im, &x0, &y0, &x1, &y1);
    int lo = im.h, hi = -1; /* rows of the series' blue */
    for (int y = 0; y < im.h; y++)
        for (int x = 0; x < im.w; x++)
            if (is_rgb(&im, x, y, 31, 119, 180, 0)) {
                if (y < lo) lo = y;
                if (y > hi) hi = y;
            }
    ck_assert_msg(hi >= 0 && lo >= y1 - 4, "zero series at rows %d..%d, plot area %d..%d", lo, hi,
                  y0, y1);
    int frame = longest_run(&im, 200, 200, 200);
    ck_assert_msg(frame < 20, "a legend for a single series (a frame %d pixels long)", frame);
    vt_image_free(&im);
    /* 6 points: values and smoothed, so a legend */
    double x6[6] = {1, 2, 3, 4, 5, 6}, y6[6] = {5, 4, 3, 3, 2, 1};
    ys[0] = y6;
    ck_assert_int_eq(vt_plot_grid(path, x6, 6, ys, titles, 1, "epoch"), VT_OK);
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    ck_assert_msg(longest_run(&im, 200, 200, 200) > 40, "no legend for values + smoothed");
    vt_image_free(&im);
}
END_TEST

/* Where the text (at one of the cell sizes 15..9, colour fg on bg) stands inside the square
 * (x, y, size) of the image: its top row, or -1. */
static int find_text(const vt_image *im, int x, int y, int size, const char *text, uint32_t fg,
                     uint32_t bg)
{
    for (int sz = 15; sz >= 9; sz -= 1) {
        vt_canvas t;
        int tw = vt_text_width(text, sz) + 2;
        ck_assert_int_eq(vt_canvas_init(&t, tw, sz), VT_OK);
        vt_canvas_rect(&t, 0, 0, tw, sz, bg);
        vt_canvas_text(&t, 0, 0, text, sz, fg, 0);
        for (int ty = y; ty + sz <= y + size && ty + sz <= im->h; ty++)
            for (int tx = x; tx + tw <= x + size && tx + tw <= im->w; tx++) {
                int ok = 1;
                for (int j = 0; j < sz && ok; j++)
                    ok = memcmp(im->data + ((size_t)(ty + j) * im->w + tx) * 3,
                                t.px + (size_t)j * tw * 3, (size_t)tw * 3) == 0;
                if (ok) {
                    vt_canvas_free(&t);
                    return ty;
                }
            }
        vt_canvas_free(&t);
    }
    return -1;
}

START_TEST(test_confusion_shares)
{
    /* rows of very different sizes: the colours are the shares of each row, so the 21473-pixel
     * row's diagonal and the 10-pixel row's half cells are as dark as their shares say */
    int64_t counts[9] = {21473, 0, 0, 5, 5, 0, 0, 0, 0};
    const char *names[3] = {"background",
                            "a very long class name that would run into the axis title", "\xCE\xB1"};
    const char *path = vt_test_path("cm.png");
    ck_assert_int_eq(vt_plot_confusion(path, 3, counts, names, "pixels"), VT_OK);
    vt_image im;
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    int x0, y0, x1, y1;
    plot_area(&im, &x0, &y0, &x1, &y1);
    int cell = (x1 - x0 - 1) / 3;
    /* near each cell's top-left corner, away from the numbers */
#define CELL_AT(r, c) x0 + 1 + (c) * cell + 4, y0 + 1 + (r) * cell + 4
    ck_assert_msg(is_rgb(&im, CELL_AT(0, 0), 8, 48, 107, 2), "share 1.0 not darkest");
    ck_assert_msg(is_rgb(&im, CELL_AT(1, 0), 107, 174, 214, 2), "share 0.5 (row 1, col 0)");
    ck_assert_msg(is_rgb(&im, CELL_AT(1, 1), 107, 174, 214, 2), "share 0.5 (row 1, col 1)");
    ck_assert_msg(is_rgb(&im, CELL_AT(0, 1), 247, 251, 255, 2), "share 0");
    ck_assert_msg(is_rgb(&im, CELL_AT(2, 2), 235, 235, 235, 2), "an empty row is grey");
#undef CELL_AT
    /* the long name is cut: the figure stays narrow */
    ck_assert_int_lt(im.w, 1100);
    vt_image_free(&im);

    /* what the cells say is what the title says: the share of the row ("0.75", in white on
     * the cell's colour), the count ("3") under it, not the count alone */
    int64_t two[4] = {3, 1, 0, 0};
    ck_assert_int_eq(vt_plot_confusion(path, 2, two, NULL, "images"), VT_OK);
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    plot_area(&im, &x0, &y0, &x1, &y1);
    cell = (x1 - x0 - 1) / 2;
    const uint8_t *bg = im.data + ((size_t)(y0 + 5) * im.w + x0 + 5) * 3;
    uint32_t bgc = (uint32_t)bg[0] << 16 | (uint32_t)bg[1] << 8 | bg[2];
    int fy = find_text(&im, x0, y0, cell, "0.75", 0xFFFFFFu, bgc);
    ck_assert_msg(fy >= 0, "the share 0.75 is not written in its cell");
    int cy = find_text(&im, x0, fy + 10, cell, "3", 0xFFFFFFu, bgc);
    ck_assert_msg(cy > fy, "the count is not written under the share");
    vt_image_free(&im);
}
END_TEST

/* One class, 4 objects, detections by score: TP, FP, TP, TP (and nothing for the fourth):
 * precision envelope 1 up to recall 0.25, then 0.75 up to 0.75, then nothing. */
static void known_eval(vt_det_eval *ev)
{
    ck_assert_int_eq(vt_det_eval_init(ev, 2), VT_OK);
    vt_det gt[4] = {{0, 0, 10, 10, 1, 0}, {20, 0, 30, 10, 1, 0}, {40, 0, 50, 10, 1, 0},
                    {60, 0, 70, 10, 1, 0}};
    vt_det pred[4] = {{0, 0, 10, 10, 0.9f, 0}, {80, 80, 90, 90, 0.8f, 0},
                      {20, 0, 30, 10, 0.7f, 0}, {40, 0, 50, 10, 0.6f, 0}};
    ck_assert_int_eq(vt_det_eval_add(ev, pred, 4, gt, 4), VT_OK);
}

/* The PNG at path: w x h (w > 0: checked), and its thick mean curve (the colour 31, 119, 180)
 * at y = want[i] (the plot area's 0..ylim_top) where x = at[i] (0..1). */
static void check_mean_curve(const char *path, double ylim_top, int n, const double *at,
                             const double *want)
{
    vt_image im;
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    int x0, y0, x1, y1;
    plot_area(&im, &x0, &y0, &x1, &y1);
    for (int i = 0; i < n; i++) {
        int x = x0 + (int)lround(at[i] * (x1 - x0)), lo = im.h, hi = -1;
        for (int y = 0; y < im.h; y++)
            if (is_rgb(&im, x, y, 31, 119, 180, 0)) {
                if (y < lo) lo = y;
                if (y > hi) hi = y;
            }
        int wy = y1 - (int)lround(want[i] / ylim_top * (y1 - y0));
        ck_assert_msg(hi >= 0 && abs((lo + hi) / 2 - wy) <= 3,
                      "%s: x %.2f: curve at rows %d..%d, want about %d", path, at[i], lo, hi, wy);
    }
    vt_image_free(&im);
}

START_TEST(test_pr_f1_curves)
{
    vt_det_eval ev;
    known_eval(&ev);
    vt_det_metrics mt;
    ck_assert_int_eq(vt_det_eval_compute(&ev, -1, &mt), VT_OK);
    double pr[2 * 101], f1[2 * 101], p[2 * 101], r[2 * 101];
    ck_assert_int_eq(vt_det_eval_curves(&ev, pr, 101, p, r, f1), VT_OK);
    double sum = 0;
    for (int k = 0; k <= 100; k++) {
        double want = k <= 25 ? 1.0 : k <= 75 ? 0.75 : 0.0;
        ck_assert_msg(fabs(pr[k] - want) < 1e-12, "precision at recall %d%%: %g, want %g", k,
                      pr[k], want);
        ck_assert_msg(k == 0 || pr[k] <= pr[k - 1], "PR curve rises at %d", k);
        ck_assert_double_eq(pr[101 + k], -1); /* class 1 has no ground truth */
        sum += pr[k];
    }
    ck_assert_double_eq_tol(sum / 101, mt.map50, 1e-12);
    /* at conf 0.65: 3 detections, 2 TP -> P 2/3, R 1/2; at 0.55: P 3/4, R 3/4, F1 3/4 */
    ck_assert_double_eq_tol(p[65], 2.0 / 3, 1e-12);
    ck_assert_double_eq_tol(r[65], 0.5, 1e-12);
    ck_assert_double_eq_tol(f1[55], 0.75, 1e-12);
    ck_assert_double_eq_tol(f1[95], 0, 1e-12);
    /* the metrics of the compute are left as they were */
    ck_assert_double_eq_tol(mt.f1, 0.75, 1e-12);
    ck_assert_double_eq_tol(ev.f1[0], 0.75, 1e-12);

    /* drawn: the thick mean curve's pixels follow the known steps (1 up to recall 0.25, 0.75
     * up to 0.75, then 0) */
    double xs[101];
    for (int k = 0; k <= 100; k++) xs[k] = k / 100.0;
    vt_series s = {"mean", xs, pr, 101, 0x1F77B4u, 0, 0, 4};
    vt_axes ax = {.title = "PR", .xlabel = "Recall", .ylabel = "Precision", .xlim = {0, 1},
                  .ylim = {0, 1}};
    const char *path = vt_test_path("pr.png");
    ck_assert_int_eq(vt_plot_figure(path, 600, 500, &ax, &s, 1), VT_OK);
    const double at[3] = {0.12, 0.5, 0.9}, want[3] = {1.0, 0.75, 0.0};
    check_mean_curve(path, 1, 3, at, want);
    vt_det_eval_free(&ev);
    vt_image im;

    /* many classes: grey curves without legend entries, the mean's entry (its mAP) beside */
    vt_series many[13];
    for (int i = 0; i < 12; i++) many[i] = (vt_series){NULL, xs, pr, 101, 0xB4B4B4u, 0, 0, 1};
    many[12] = (vt_series){"all classes 0.630 mAP@0.5", xs, pr, 101, 0x1F77B4u, 0, 0, 4};
    ax.legend_right = 1;
    ck_assert_int_eq(vt_plot_figure(path, 800, 500, &ax, many, 13), VT_OK);
    ck_assert_int_eq(vt_image_load(path, &im), VT_OK);
    ck_assert_msg(longest_run(&im, 200, 200, 200) > 100, "no legend for the mean curve");
    vt_image_free(&im);
}
END_TEST

static int exists(const char *dir, const char *name)
{
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0 && sb.st_size > 0;
}

/* A PNG's size: 1 when it is one of w x h. */
static int png_size(const char *dir, const char *name, int w, int h)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    vt_image im;
    if (vt_image_load(p, &im) != VT_OK) return 0;
    int ok = im.w == w && im.h == h && im.c == 3;
    vt_image_free(&im);
    return ok;
}

/* The box curves and the mask curves of an instance segmenter: known_eval's detections with
 * their boxes on the objects' and masks of which the third misses its object, so that mask
 * AP50 (TP, FP, FP, TP: precision 1 up to recall 0.25, 0.5 up to 0.5) is below box AP50. */
START_TEST(test_box_mask_curves)
{
    enum { W = 20, H = 4 };
    vt_det_eval box, mask;
    known_eval(&box);
    ck_assert_int_eq(vt_det_eval_init(&mask, 2), VT_OK);
    vt_det gt[4] = {{0, 0, 10, 10, 1, 0}, {20, 0, 30, 10, 1, 0}, {40, 0, 50, 10, 1, 0},
                    {60, 0, 70, 10, 1, 0}};
    vt_det pred[4] = {{0, 0, 10, 10, 0.9f, 0}, {80, 80, 90, 90, 0.8f, 0},
                      {20, 0, 30, 10, 0.7f, 0}, {40, 0, 50, 10, 0.6f, 0}};
    static uint8_t gm[4][H][W], pm[4][H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < 4; x++) {
            for (int j = 0; j < 4; j++) gm[j][y][4 * j + x] = 1; /* object j: columns 4j.. */
            pm[0][y][x] = pm[3][y][8 + x] = 1;                   /* objects 0 and 2 */
            pm[1][y][16 + x] = pm[2][y][16 + x] = 1;             /* on no object */
        }
    ck_assert_int_eq(vt_det_eval_add_masks(&mask, pred, 4, &pm[0][0][0], gt, 4, &gm[0][0][0], W,
                                           H), VT_OK);
    vt_det_metrics bm, mm;
    ck_assert_int_eq(vt_det_eval_compute(&box, -1, &bm), VT_OK);
    ck_assert_int_eq(vt_det_eval_compute(&mask, -1, &mm), VT_OK);
    ck_assert_double_lt(mm.map50, bm.map50 - 0.1);

    static vt_dataset ds;
    ds.num_classes = 2;
    vt_task_ctx c = {.ds = &ds};
    const char *dir = vt_test_path("curves");
    vt_test_mkdirs(dir);
    ck_assert_int_eq(vt_det_curves(&c, &box, dir, "Box", "box IoU"), VT_OK);
    ck_assert_int_eq(vt_det_curves(&c, &mask, dir, "Mask", "mask IoU"), VT_OK);
    ck_assert_int_eq(vt_det_curves(&c, NULL, dir, "None", "IoU"), VT_OK);
    ck_assert(!exists(dir, "NonePR_curve.png")); /* no evaluator: no figure */
    static const char *const files[4] = {"BoxPR_curve.png", "BoxF1_curve.png", "MaskPR_curve.png",
                                         "MaskF1_curve.png"};
    for (int i = 0; i < 4; i++) ck_assert_msg(png_size(dir, files[i], 1000, 640), "%s", files[i]);
    /* each PR curve follows its evaluator's steps, the F1 curves their own values */
    char p[4400];
    const double at[3] = {0.12, 0.4, 0.6}, box_pr[3] = {1, 0.75, 0.75}, mask_pr[3] = {1, 0.5, 0};
    snprintf(p, sizeof p, "%s/BoxPR_curve.png", dir);
    check_mean_curve(p, 1.02, 3, at, box_pr);
    snprintf(p, sizeof p, "%s/MaskPR_curve.png", dir);
    check_mean_curve(p, 1.02, 3, at, mask_pr);
    /* F1 (the mean over the classes with ground truth: class 0's) at conf 0.65: box TP 2 of 3
     * detections for 4 objects (F1 4/7), mask TP 1 of 3 (F1 2/7) */
    const double c65[1] = {0.65}, box_f1[1] = {4.0 / 7}, mask_f1[1] = {2.0 / 7};
    snprintf(p, sizeof p, "%s/BoxF1_curve.png", dir);
    check_mean_curve(p, 1.02, 1, c65, box_f1);
    snprintf(p, sizeof p, "%s/MaskF1_curve.png", dir);
    check_mean_curve(p, 1.02, 1, c65, mask_f1);
    vt_det_eval_free(&box);
    vt_det_eval_free(&mask);
}
END_TEST

/* The predictions' class map of the instance mosaics is vt_model_instances_pixels' masks, each
 * pixel the class of the best instance covering it (an untrained iseg-n at a low threshold
 * has plenty), VT_TILE_NONE elsewhere; the boxes are the same. */
START_TEST(test_instance_tile_map)
{
    enum { W = 40, H = 30, CAP = 50 };
    vt_model *m;
    ck_assert_int_eq(vt_model_create(&m, "iseg-n", 3, "imgsz=32"), VT_OK);
    static uint8_t px[W * H * 3], map[W * H], masks[CAP][W * H];
    for (int i = 0; i < W * H * 3; i++) px[i] = (uint8_t)(i * 37 % 251);
    vt_image img = {W, H, 3, px};
    int cls[CAP], cls2[CAP], n = 0, n2 = 0;
    float sc[CAP], sc2[CAP], box[4 * CAP], box2[4 * CAP];
    memset(map, VT_TILE_NONE, sizeof map);
    ck_assert_int_eq(vt_iseg_tile_predict(m, &img, 0.01f, 0.7f, CAP, cls, sc, box, &n, map),
                     VT_OK);
    ck_assert_int_eq(vt_model_instances_pixels(m, px, W, H, 3, W * 3, 0.01f, 0.7f, CAP, cls2, sc2,
                                               box2, &masks[0][0], CAP, &n2), VT_OK);
    ck_assert_int_eq(n, n2);
    ck_assert_int_gt(n, 0);
    ck_assert_mem_eq(cls, cls2, (size_t)n * sizeof *cls);
    ck_assert_mem_eq(box, box2, (size_t)n * 4 * sizeof *box);
    int painted = 0;
    for (int p = 0; p < W * H; p++) {
        int want = VT_TILE_NONE;
        for (int k = 0; k < n && want == VT_TILE_NONE; k++)
            if (masks[k][p]) want = cls[k];
        ck_assert_msg(map[p] == want, "pixel %d: class %d, want %d", p, map[p], want);
        painted += want != VT_TILE_NONE;
    }
    ck_assert_int_gt(painted, 0);
    vt_model_destroy(m);
}
END_TEST

/* A short run of a detector, segmenter or instance segmenter with plots on or off. */
static void short_run(vt_task task, int plots, char *run_dir, size_t cap)
{
    const char *data = vt_test_path(task == VT_TASK_DETECT    ? "det"
                                    : task == VT_TASK_SEGMENT ? "seg"
                                                              : "iseg");
    struct stat sb;
    if (stat(data, &sb) != 0)
        ck_assert_int_eq(vt_synth_generate(data, task, "classes=3 train=16 val=6 imgsz=32 seed=2"),
                         VT_OK);
    vt_dataset *ds;
    ck_assert_int_eq(vt_dataset_open(&ds, task, data), VT_OK);
    vt_model *m;
    int nc = vt_dataset_num_classes(ds);
    const char *arch = task == VT_TASK_DETECT    ? "det-n"
                       : task == VT_TASK_SEGMENT ? "seg-n"
                                                 : "iseg-n";
    ck_assert_int_eq(vt_model_create(&m, arch, nc, "imgsz=32"), VT_OK);
    vt_trainer *t;
    ck_assert_int_eq(vt_trainer_create(&t, m, ds), VT_OK);
    char proj[4200], pl[32];
    snprintf(proj, sizeof proj, "project=%s", vt_test_path("runs"));
    snprintf(pl, sizeof pl, "plots=%d", plots);
    const char *opts[] = {"epochs=1", "batch=8", "workers=0", "seed=1", proj, pl,
                          plots ? "name=on" : "name=off"};
    for (int i = 0; i < 7; i++) ck_assert_int_eq(vt_trainer_set(t, opts[i]), VT_OK);
    ck_assert_msg(vt_trainer_run(t) == VT_OK, "%s", vt_trainer_last_error(t));
    snprintf(run_dir, cap, "%s", vt_trainer_run_dir(t));
    vt_trainer_destroy(t);
    vt_model_destroy(m);
    vt_dataset_destroy(ds);
}

/* The mosaics' layout (lib/image/mosaic.c): cells of 256 pixels, 4 apart, under a title; a
 * tile's image scaled to fit its cell, centred. */
enum { MOS_CELL = 256, MOS_GAP = 4, MOS_TOP = 31, MOS_PITCH = 256 + 14 + 6 };

/* The size of a mosaic of n tiles whose masks show nk classes (a key of their colours). */
static void mosaic_size(int n, int nk, int *w, int *h)
{
    int cols = (int)ceil(sqrt((double)n)), rows = (n + cols - 1) / cols;
    int per_row = cols * (MOS_CELL + MOS_GAP) / 150;
    *w = cols * (MOS_CELL + MOS_GAP) + MOS_GAP;
    *h = MOS_TOP + rows * MOS_PITCH + MOS_GAP + (nk + per_row - 1) / per_row * 20;
}

/* How many classes the instance masks of the first n validation images of ds show. */
static int instance_classes_shown(const vt_dataset *ds, int n)
{
    int shown[256] = {0}, nk = 0;
    for (int i = 0; i < n; i++) {
        int w, h;
        ck_assert_int_eq(vt_dataset_image_size(ds, VT_SPLIT_VAL, i, &w, &h), VT_OK);
        uint8_t *cls = malloc((size_t)w * h);
        ck_assert_ptr_nonnull(cls);
        ck_assert_int_eq(vt_seg_instance_classes(ds, VT_SPLIT_VAL, i, w, h, VT_TILE_NONE, cls),
                         VT_OK);
        for (size_t p = 0; p < (size_t)w * h; p++)
            if (cls[p] != VT_TILE_NONE && !shown[cls[p]]) nk += shown[cls[p]] = 1;
        free(cls);
    }
    return nk;
}

/* The labels mosaic of an instance run: inside its objects' masks, tile 0 (val image 0) is the
 * image blended with the class colours at 170/256 (the mosaic's opacity), outside them the
 * plain image; box lines and labels cover some pixels of both. */
static void check_instance_labels(const char *rd, const vt_dataset *ds)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/val_batch0_labels.png", rd);
    vt_image mos, img, fit;
    ck_assert_int_eq(vt_image_load(p, &mos), VT_OK);
    ck_assert_int_eq(vt_image_load(ds->split[VT_SPLIT_VAL].paths[0], &img), VT_OK);
    uint8_t *cls = malloc((size_t)img.w * img.h);
    ck_assert_ptr_nonnull(cls);
    ck_assert_int_eq(vt_seg_instance_classes(ds, VT_SPLIT_VAL, 0, img.w, img.h, VT_TILE_NONE,
                                             cls), VT_OK);
    double s = fmin((double)MOS_CELL / img.w, (double)MOS_CELL / img.h);
    int w = (int)lround(img.w * s), h = (int)lround(img.h * s);
    ck_assert_int_eq(vt_image_resize(&img, w, h, &fit), VT_OK);
    int x0 = MOS_GAP + (MOS_CELL - w) / 2, y0 = MOS_TOP + (MOS_CELL - h) / 2;
    long in = 0, in_ok = 0, out = 0, out_ok = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int mx = (int)((x + 0.5) / s), my = (int)((y + 0.5) / s);
            if (mx >= img.w) mx = img.w - 1;
            if (my >= img.h) my = img.h - 1;
            int k = cls[(size_t)my * img.w + mx];
            const uint8_t *q = fit.data + ((size_t)y * w + x) * fit.c;
            const uint8_t *m = mos.data + ((size_t)(y0 + y) * mos.w + x0 + x) * 3;
            int same = 1, diff = 0;
            for (int ch = 0; ch < 3; ch++) {
                int v = q[fit.c == 3 ? ch : 0], want = v;
                if (k != VT_TILE_NONE) {
                    int col = (int)(vt_class_rgb(k) >> (16 - 8 * ch) & 255);
                    want = v + ((col - v) * 170 >> 8);
                }
                same &= abs(m[ch] - want) <= 1;
                diff |= m[ch] != v;
            }
            if (k != VT_TILE_NONE) in++, in_ok += same && diff;
            else out++, out_ok += same;
        }
    ck_assert_msg(in > 0 && out > 0, "val image 0: %ld mask pixels, %ld others", in, out);
    ck_assert_msg(in_ok >= in * 6 / 10, "%ld of %ld mask pixels in their class colour", in_ok, in);
    ck_assert_msg(out_ok >= out * 6 / 10, "%ld of %ld other pixels plain", out_ok, out);
    vt_image_free(&fit);
    vt_image_free(&img);
    vt_image_free(&mos);
    free(cls);
}

START_TEST(test_run_figures)
{
    static const char *const det_files[] = {"results.png", "confusion_matrix.png", "PR_curve.png",
                                            "F1_curve.png", "val_batch0_labels.png",
                                            "val_batch0_pred.png"};
    static const char *const seg_files[] = {"results.png", "confusion_matrix.png",
                                            "val_batch0_labels.png", "val_batch0_pred.png"};
    static const char *const inst_files[] = {"results.png", "confusion_matrix.png",
                                             "BoxPR_curve.png", "BoxF1_curve.png",
                                             "MaskPR_curve.png", "MaskF1_curve.png",
                                             "val_batch0_labels.png", "val_batch0_pred.png"};
    static const vt_task tasks[3] = {VT_TASK_DETECT, VT_TASK_SEGMENT, VT_TASK_INSTANCE};
    static const char *const *const lists[3] = {det_files, seg_files, inst_files};
    static const int counts[3] = {6, 4, 8};
    char rd[4200];
    for (int task = 0; task < 3; task++) {
        vt_task tk = tasks[task];
        const char *const *files = lists[task];
        int nf = counts[task];
        short_run(tk, 1, rd, sizeof rd);
        for (int i = 0; i < nf; i++) ck_assert_msg(exists(rd, files[i]), "%s: no %s", rd, files[i]);
        if (tk == VT_TASK_SEGMENT) {
            /* the ground-truth mosaic shows the class colours of the shapes (classes 1..3) */
            char p[4400];
            snprintf(p, sizeof p, "%s/val_batch0_labels.png", rd);
            vt_image im;
            ck_assert_int_eq(vt_image_load(p, &im), VT_OK);
            int found[4] = {0};
            for (int k = 1; k <= 3; k++) {
                uint32_t c = vt_class_rgb(k);
                for (size_t i = 0; i < (size_t)im.w * im.h && !found[k]; i++)
                    found[k] = im.data[3 * i] == (c >> 16 & 255) &&
                               im.data[3 * i + 1] == (c >> 8 & 255) && im.data[3 * i + 2] == (c & 255);
                ck_assert_msg(found[k], "class %d's colour is not in the key", k);
            }
            vt_image_free(&im);
        }
        if (tk == VT_TASK_INSTANCE) {
            /* the box and mask curves instead of a detector's; the mosaics of the 6 validation
             * images with the key of the classes their masks show (the predictions' of a model
             * one epoch old: any of 0..3); the objects' masks in the labels mosaic */
            ck_assert(!exists(rd, "PR_curve.png") && !exists(rd, "F1_curve.png"));
            for (int i = 2; i < 6; i++)
                ck_assert_msg(png_size(rd, files[i], 1000, 640), "%s", files[i]);
            vt_dataset *ds;
            ck_assert_int_eq(vt_dataset_open(&ds, tk, vt_test_path("iseg")), VT_OK);
            int mw, mh, nk = instance_classes_shown(ds, 6), pred_ok = 0;
            ck_assert_int_gt(nk, 0);
            mosaic_size(6, nk, &mw, &mh);
            ck_assert(png_size(rd, "val_batch0_labels.png", mw, mh));
            for (int k = 0; k <= 3 && !pred_ok; k++) {
                mosaic_size(6, k, &mw, &mh);
                pred_ok = png_size(rd, "val_batch0_pred.png", mw, mh);
            }
            ck_assert_msg(pred_ok, "val_batch0_pred.png: not a mosaic of 6 images");
            check_instance_labels(rd, ds);
            vt_dataset_destroy(ds);
        }
        short_run(tk, 0, rd, sizeof rd);
        for (int i = 0; i < nf; i++) ck_assert_msg(!exists(rd, files[i]), "plots=0 wrote %s", files[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plots");
    TCase *tc = tcase_create("draw");
    tcase_add_checked_fixture(tc, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_add_test(tc, test_text_builtin);
    tcase_add_test(tc, test_text_truetype);
    tcase_add_test(tc, test_counts_and_fit);
    tcase_add_test(tc, test_flat_series_and_legend);
    tcase_add_test(tc, test_confusion_shares);
    tcase_add_test(tc, test_pr_f1_curves);
    tcase_add_test(tc, test_box_mask_curves);
    tcase_add_test(tc, test_instance_tile_map);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("runs");
    tcase_add_checked_fixture(tr, vt_test_scratch_setup, vt_test_scratch_teardown);
    tcase_set_timeout(tr, 240);
    tcase_add_test(tr, test_run_figures);
    suite_add_tcase(s, tr);
    return vt_test_run(s);
}
