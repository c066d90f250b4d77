/* Text on a canvas (see plot.h): UTF-8 strings drawn with a TrueType font through FreeType when
 * the build has it and a font file is found, else with the built-in bitmap font (font.c).
 *
 * One face is opened the first time text is drawn and kept for the process; FreeType faces are
 * not thread-safe, so every use of it holds one mutex (plots are small: the cost is nothing). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/plot.h"
#include "vt_config.h"

#if VT_HAVE_FREETYPE
#include <ft2build.h>
#include FT_FREETYPE_H
#endif

extern const unsigned short vt_font5x9_desc[5][5];

/* ---- UTF-8 ---- */

/* The code point at *s, advancing *s; a malformed sequence gives U+FFFD and skips one byte. */
static unsigned next_cp(const char **ps)
{
    const unsigned char *s = (const unsigned char *)*ps;
    unsigned c = s[0], cp;
    int n;
    if (c < 0x80) {
        *ps += 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07;
    else {
        *ps += 1;
        return 0xFFFD;
    }
    for (int i = 1; i <= n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *ps += 1;
            return 0xFFFD;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    /* overlong forms and surrogates are malformed too */
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF) {
        *ps += 1;
        return 0xFFFD;
    }
    *ps += n + 1;
    return cp;
}

/* ---- pixels ---- */

/* Blend rgb over the pixel at text-space (u, v) with coverage a (0..255). */
static void ink(vt_canvas *c, int x, int y, int u, int v, int vertical, uint32_t rgb, int a)
{
    int px = vertical ? x + v : x + u, py = vertical ? y - u : y + v;
    if (a <= 0 || px < 0 || py < 0 || px >= c->w || py >= c->h) return;
    uint8_t *p = c->px + ((size_t)py * c->w + px) * 3;
    int col[3] = {(int)(rgb >> 16 & 255), (int)(rgb >> 8 & 255), (int)(rgb & 255)};
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)(p[k] + ((col[k] - p[k]) * a + 127) / 255);
}

/* A glyph the font lacks: an empty box the size of a capital. */
static void missing_box(vt_canvas *c, int x, int y, int u0, int top, int w, int h, int vertical,
                        uint32_t rgb)
{
    for (int i = 0; i < w; i++) {
        ink(c, x, y, u0 + i, top, vertical, rgb, 255);
        ink(c, x, y, u0 + i, top + h - 1, vertical, rgb, 255);
    }
    for (int j = 0; j < h; j++) {
        ink(c, x, y, u0, top + j, vertical, rgb, 255);
        ink(c, x, y, u0 + w - 1, top + j, vertical, rgb, 255);
    }
}

/* ---- the built-in font ----
 * A cell 6 columns wide; rows 0..6 above the baseline, 7..8 below; scale s = size / 9. */

static int bitmap_scale(int size)
{
    int s = (size + 4) / 9;
    return s < 1 ? 1 : s;
}

static int bitmap_width(const char *s, int size)
{
    int n = 0;
    while (*s) {
        next_cp(&s);
        n++;
    }
    int sc = bitmap_scale(size);
    return n ? n * 6 * sc - sc : 0;
}

static void bitmap_text(vt_canvas *c, int x, int y, const char *s, int size, uint32_t rgb,
                        int vertical)
{
    int sc = bitmap_scale(size);
    /* the glyph block (9 rows) centred in the line box */
    int top = (size - 9 * sc) / 2;
    if (top < 0) top = 0;
    for (int n = 0; *s; n++) {
        unsigned cp = next_cp(&s);
        int u0 = n * 6 * sc;
        if (cp < 32 || cp > 126) {
            missing_box(c, x, y, u0, top, 5 * sc, 7 * sc, vertical, rgb);
            continue;
        }
        static const char hanging[] = "gjpqy";
        const char *desc = strchr(hanging, (int)cp);
        for (int col = 0; col < 5; col++) {
            unsigned bits = desc ? vt_font5x9_desc[desc - hanging][col] : vt_font5x7[cp - 32][col];
            for (int row = 0; row < 9; row++) {
                if (!(bits >> row & 1)) continue;
                for (int j = 0; j < sc; j++)
                    for (int i = 0; i < sc; i++)
                        ink(c, x, y, u0 + col * sc + i, top + row * sc + j, vertical, rgb, 255);
            }
        }
    }
}

/* ---- FreeType ---- */

static pthread_mutex_t font_mu = PTHREAD_MUTEX_INITIALIZER;
static int font_state;          /* 0: not tried yet, 1: a face is open, -1: the built-in font */
static char font_choice[1024];  /* vt_font_use's path; "" = the standard places */
static int font_builtin_forced;

#if VT_HAVE_FREETYPE
static FT_Library ft_lib;
static FT_Face ft_face;
static int ft_size;             /* the line height the face is set to, 0 = none yet */
static char font_file[1024];

/* DejaVu Sans (Debian/Ubuntu fonts-dejavu-core, Fedora, Arch, FreeBSD), then a few other
 * families with wide Unicode coverage. */
static const char *const font_paths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/local/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/Library/Fonts/Arial Unicode.ttf",
    "/System/Library/Fonts/Supplemental/Arial Unicode.ttf",
};

static void ft_close(void)
{
    if (ft_face) FT_Done_Face(ft_face);
    if (ft_lib) FT_Done_FreeType(ft_lib);
    ft_face = NULL;
    ft_lib = NULL;
    ft_size = 0;
    font_file[0] = 0;
}

static int ft_open(void)
{
    if (font_builtin_forced || FT_Init_FreeType(&ft_lib)) return -1;
    size_t n = sizeof font_paths / sizeof *font_paths;
    for (size_t i = font_choice[0] ? n : 0; i <= n; i++) {
        const char *p = i < n ? font_paths[i] : font_choice;
        if (!*p) continue;
        if (FT_New_Face(ft_lib, p, 0, &ft_face) == 0) {
            if (FT_Select_Charmap(ft_face, FT_ENCODING_UNICODE) == 0) {
                snprintf(font_file, sizeof font_file, "%s", p);
                return 1;
            }
            FT_Done_Face(ft_face);
            ft_face = NULL;
        }
    }
    ft_close();
    return -1;
}

/* Set the face to a line height of `size` pixels (ascender + descender of the face). */
static void ft_set_size(int size)
{
    if (ft_size == size) return;
    double line = (double)(ft_face->ascender - ft_face->descender) / ft_face->units_per_EM;
    int em = (int)(size / (line > 0.5 ? line : 1.0) + 0.5);
    FT_Set_Pixel_Sizes(ft_face, 0, (FT_UInt)(em < 4 ? 4 : em));
    ft_size = size;
}

/* Width in pixels; when c != NULL, also draws (the face locked and sized by the caller). */
static int ft_run(vt_canvas *c, int x, int y, const char *s, int size, uint32_t rgb, int vertical)
{
    ft_set_size(size);
    FT_Size_Metrics *m = &ft_face->size->metrics;
    int asc = (int)(m->ascender >> 6), desc = (int)(-m->descender >> 6);
    int base = (size - (asc + desc)) / 2 + asc; /* the baseline row in the line box */
    long pen = 0;                                /* 26.6 */
    FT_UInt prev = 0;
    int kerning = FT_HAS_KERNING(ft_face);
    while (*s) {
        unsigned cp = next_cp(&s);
        FT_UInt gi = FT_Get_Char_Index(ft_face, cp);
        if (!gi) {
            /* missing glyph: a box of the width of 'H', whatever the font's .notdef looks like */
            FT_UInt h = FT_Get_Char_Index(ft_face, 'H');
            int bw = h && FT_Load_Glyph(ft_face, h, FT_LOAD_DEFAULT) == 0
                         ? (int)(ft_face->glyph->advance.x >> 6) : size / 2;
            int cap = asc * 3 / 4;
            if (c) missing_box(c, x, y, (int)(pen >> 6) + 1, base - cap, bw - 2, cap, vertical, rgb);
            pen += (long)bw << 6;
            prev = 0;
            continue;
        }
        if (kerning && prev) {
            FT_Vector k;
            if (FT_Get_Kerning(ft_face, prev, gi, FT_KERNING_DEFAULT, &k) == 0) pen += k.x;
        }
        prev = gi;
        if (FT_Load_Glyph(ft_face, gi, c ? FT_LOAD_RENDER : FT_LOAD_DEFAULT)) continue;
        FT_GlyphSlot g = ft_face->glyph;
        if (c) {
            const FT_Bitmap *b = &g->bitmap;
            int u0 = (int)((pen + 32) >> 6) + g->bitmap_left, v0 = base - g->bitmap_top;
            for (unsigned r = 0; r < b->rows; r++)
                for (unsigned q = 0; q < b->width; q++) {
                    int a;
                    if (b->pixel_mode == FT_PIXEL_MODE_MONO)
                        a = (b->buffer[r * b->pitch + q / 8] >> (7 - q % 8) & 1) ? 255 : 0;
                    else
                        a = b->buffer[r * b->pitch + q];
                    ink(c, x, y, u0 + (int)q, v0 + (int)r, vertical, rgb, a);
                }
        }
        pen += g->advance.x;
    }
    return (int)((pen + 63) >> 6);
}
#endif

/* Opens the face on first use; returns 1 with the lock held and a face to use, 0 (lock not
 * held) for the built-in font. */
static int lock_face(void)
{
    pthread_mutex_lock(&font_mu);
#if VT_HAVE_FREETYPE
    if (font_state == 0) font_state = ft_open();
    if (font_state == 1) return 1;
#else
    font_state = -1;
#endif
    pthread_mutex_unlock(&font_mu);
    return 0;
}

int vt_text_width(const char *s, int size)
{
    if (!s || !*s) return 0;
#if VT_HAVE_FREETYPE
    if (lock_face()) {
        int w = ft_run(NULL, 0, 0, s, size, 0, 0);
        pthread_mutex_unlock(&font_mu);
        return w;
    }
#endif
    return bitmap_width(s, size);
}

void vt_canvas_text(vt_canvas *c, int x, int y, const char *s, int size, uint32_t rgb,
                    int vertical)
{
    if (!s || !*s) return;
#if VT_HAVE_FREETYPE
    if (lock_face()) {
        ft_run(c, x, y, s, size, rgb, vertical);
        pthread_mutex_unlock(&font_mu);
        return;
    }
#endif
    bitmap_text(c, x, y, s, size, rgb, vertical);
}

int vt_font_use(const char *path)
{
    pthread_mutex_lock(&font_mu);
#if VT_HAVE_FREETYPE
    ft_close();
#endif
    font_builtin_forced = path && !*path;
    snprintf(font_choice, sizeof font_choice, "%s", path ? path : "");
    font_state = 0;
    pthread_mutex_unlock(&font_mu);
    return vt_font_truetype(NULL, 0);
}

int vt_font_truetype(char *file, size_t cap)
{
    int tt = lock_face();
    if (file && cap) file[0] = 0;
#if VT_HAVE_FREETYPE
    if (tt) {
        if (file && cap) snprintf(file, cap, "%s", font_file);
        pthread_mutex_unlock(&font_mu);
    }
#endif
    return tt;
}
