/* The GPU catalog: the built-in table (catalog_data.h, generated from the shared CSV) plus the
 * user's overrides from CSV files, because prices change faster than releases. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"

#include "estimate/catalog_data.h"

/* CSV column -> where it goes.  field > 0: numeric slot; field < 0: a string. */
enum { COL_NAME = -1, COL_ARCH = -2, COL_TIER = -3 };
static const struct {
    const char *key;
    int field;
} csv_cols[] = {
    {"name", COL_NAME},
    {"arch", COL_ARCH},
    {"cc", VT_GPU_COMPUTE_CAPABILITY},
    {"memory_gb", VT_GPU_MEMORY_GB},
    {"bandwidth_gbs", VT_GPU_BANDWIDTH_GBS},
    {"fp32_tflops", VT_GPU_FP32_TFLOPS},
    {"tf32_tflops", VT_GPU_TF32_TFLOPS},
    {"bf16_tflops", VT_GPU_BF16_TFLOPS},
    {"tdp_w", VT_GPU_TDP_W},
    {"price_usd_h", VT_GPU_PRICE_USD_H},
    {"tier", COL_TIER},
};
#define N_COLS ((int)(sizeof csv_cols / sizeof csv_cols[0]))
#define CSV_MAX_BYTES (4 << 20)
#define CSV_MAX_LINE 4096

int vt_gpu_name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == ' ' || *a == '-' || *a == '_') a++;
        while (*b == ' ' || *b == '-' || *b == '_') b++;
        if (!*a || !*b) return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
        a++, b++;
    }
}

int vt_catalog_lookup(const vt_catalog *c, const char *name)
{
    if (!c || !name) return -1;
    for (int i = 0; i < c->n; i++)
        if (vt_gpu_name_eq(c->gpus[i].name, name)) return i;
    return -1;
}

/* Lower case without spaces, '-' and '_' (the vt_gpu_name_eq form); truncated at cap. */
static void name_key(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        if (*s != ' ' && *s != '-' && *s != '_') out[n++] = (char)tolower((unsigned char)*s);
    out[n] = '\0';
}

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int vt_catalog_resolve(const vt_catalog *c, const char *name)
{
    if (!c || !name) return -1;
    int i = vt_catalog_lookup(c, name);
    if (i >= 0) return i;
    char q[2 * VT_GPU_NAME_MAX], k[2 * VT_GPU_NAME_MAX];
    name_key(name, q, sizeof q);
    /* the vendor's words in front of a model name ("NVIDIA H100", "Tesla T4") */
    static const char *const vendor[] = {"nvidia", "tesla", "geforce", "quadro"};
    for (int pass = 0; pass < 2; pass++)
        for (int v = 0; v < 4; v++)
            if (has_prefix(q, vendor[v])) memmove(q, q + strlen(vendor[v]), strlen(q) - strlen(vendor[v]) + 1);
    if (!q[0]) return -1;
    /* a prefix of one name; of several, their SXM form if just one is (H200 -> H200 SXM, the
     * usual form in clouds, as the vt tool's guess of a local GPU); then the same with "RTX"
     * in front (A6000 -> RTX A6000) */
    for (int rtx = 0; rtx < 2; rtx++) {
        char want[2 * VT_GPU_NAME_MAX + 4];
        snprintf(want, sizeof want, "%s%s", rtx ? "rtx" : "", q);
        int hit = -1, hits = 0, sxm = -1, sxms = 0;
        for (int j = 0; j < c->n; j++) {
            name_key(c->gpus[j].name, k, sizeof k);
            if (strcmp(k, want) == 0) return j; /* vendor words removed: exact */
            if (!has_prefix(k, want)) continue;
            hit = j, hits++;
            if (strstr(k + strlen(want), "sxm")) sxm = j, sxms++;
        }
        if (hits == 1) return hit;
        if (hits > 1) return sxms == 1 ? sxm : -2;
    }
    return -1;
}

const vt_gpu *vt_catalog_entry(const vt_catalog *c, int i)
{
    return (c && i >= 0 && i < c->n) ? &c->gpus[i] : NULL;
}

static vt_status reserve(vt_catalog *c, int n)
{
    if (n <= c->cap) return VT_OK;
    int cap = c->cap ? c->cap * 2 : 32;
    while (cap < n) cap *= 2;
    vt_gpu *p = vt_realloc(c->gpus, (size_t)cap * sizeof *p);
    if (!p) return VT_ERR_OUT_OF_MEMORY;
    c->gpus = p;
    c->cap = cap;
    return VT_OK;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

vt_status vt_catalog_init_builtin(vt_catalog *c)
{
    int n = (int)(sizeof vt_builtin_gpus / sizeof vt_builtin_gpus[0]);
    if (reserve(c, n) != VT_OK) return VT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++) {
        const vt_gpu_spec *s = &vt_builtin_gpus[i];
        vt_gpu *g = &c->gpus[i];
        memset(g, 0, sizeof *g);
        copy_str(g->name, sizeof g->name, s->name);
        copy_str(g->arch, sizeof g->arch, s->arch);
        copy_str(g->tier, sizeof g->tier, s->tier);
        g->v[VT_GPU_MEMORY_GB] = s->memory_gb;
        g->v[VT_GPU_BANDWIDTH_GBS] = s->bandwidth_gbs;
        g->v[VT_GPU_FP32_TFLOPS] = s->fp32_tflops;
        g->v[VT_GPU_TF32_TFLOPS] = s->tf32_tflops;
        g->v[VT_GPU_BF16_TFLOPS] = s->bf16_tflops;
        g->v[VT_GPU_PRICE_USD_H] = s->price_usd_h;
        g->v[VT_GPU_TDP_W] = s->tdp_w;
        g->v[VT_GPU_COMPUTE_CAPABILITY] = s->cc;
    }
    c->n = n;
    return VT_OK;
}

void vt_catalog_clear(vt_catalog *c)
{
    free(c->gpus);
    c->gpus = NULL;
    c->n = c->cap = 0;
}

VT_API vt_status vt_catalog_create(vt_catalog **out)
{
    if (!out) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_catalog_create: out is NULL");
    *out = NULL;
    vt_catalog *c = vt_calloc(1, sizeof *c);
    if (!c) return VT_ERR_OUT_OF_MEMORY;
    if (vt_catalog_init_builtin(c) != VT_OK) {
        free(c);
        return VT_ERR_OUT_OF_MEMORY;
    }
    *out = c;
    return VT_OK;
}

VT_API void vt_catalog_destroy(vt_catalog *c)
{
    if (!c) return;
    vt_catalog_clear(c);
    free(c);
}

VT_API int vt_catalog_count(const vt_catalog *c)
{
    return c ? c->n : 0;
}

/* The message for an unknown name lists the catalog, so a typo is fixed in one go. */
static vt_status unknown_gpu(const vt_catalog *c, const char *name)
{
    char list[VT_ERRMSG_MAX / 2];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < c->n && len + 4 < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", c->gpus[i].name);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    return vt_fail(VT_ERR_NOT_FOUND, "unknown GPU '%s'; the catalog has: %s", name ? name : "",
                   list);
}

/* A prefix of several names: list them, so the user picks one. */
static vt_status ambiguous_gpu(const vt_catalog *c, const char *name)
{
    char list[VT_ERRMSG_MAX / 2], q[2 * VT_GPU_NAME_MAX], k[2 * VT_GPU_NAME_MAX];
    size_t len = 0;
    list[0] = '\0';
    name_key(name, q, sizeof q);
    for (int i = 0; i < c->n && len + 4 < sizeof list; i++) {
        name_key(c->gpus[i].name, k, sizeof k);
        if (!strstr(k, q)) continue;
        int w = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", c->gpus[i].name);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    return vt_fail(VT_ERR_NOT_FOUND, "GPU '%s' is ambiguous: it starts %s; give more of the name",
                   name, list);
}

VT_API int vt_catalog_find(const vt_catalog *c, const char *name)
{
    if (!c || !name) {
        vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_catalog_find: NULL argument");
        return -1;
    }
    int i = vt_catalog_resolve(c, name);
    if (i == -2) ambiguous_gpu(c, name);
    else if (i < 0) unknown_gpu(c, name);
    return i < 0 ? -1 : i;
}

VT_API const char *vt_catalog_gpu_name(const vt_catalog *c, int i)
{
    const vt_gpu *g = vt_catalog_entry(c, i);
    return g ? g->name : NULL;
}

VT_API const char *vt_catalog_gpu_arch(const vt_catalog *c, int i)
{
    const vt_gpu *g = vt_catalog_entry(c, i);
    return g ? g->arch : NULL;
}

VT_API const char *vt_catalog_gpu_tier(const vt_catalog *c, int i)
{
    const vt_gpu *g = vt_catalog_entry(c, i);
    return g ? g->tier : NULL;
}

VT_API vt_status vt_catalog_gpu_value(const vt_catalog *c, int i, vt_gpu_field field, double *value)
{
    const vt_gpu *g = vt_catalog_entry(c, i);
    if (!g || !value || field < VT_GPU_MEMORY_GB || field > VT_GPU_COMPUTE_CAPABILITY)
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_catalog_gpu_value: bad index %d or field %d",
                       i, (int)field);
    if (g->v[field] < 0) return vt_fail(VT_ERR_NOT_FOUND, "%s: value %d not listed", g->name,
                                        (int)field);
    *value = g->v[field];
    return VT_OK;
}

VT_API const char *vt_catalog_last_error(const vt_catalog *c)
{
    return c ? c->err : "";
}

VT_API vt_status vt_catalog_set_price(vt_catalog *c, const char *name, double usd_per_hour)
{
    if (!c || !name) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_catalog_set_price: NULL argument");
    if (!(usd_per_hour >= 0) || !isfinite(usd_per_hour))
        return vt_err_capture(c->err, vt_fail(VT_ERR_OPTION_VALUE,
                                              "price %g for '%s': must be finite and >= 0",
                                              usd_per_hour, name));
    int i = vt_catalog_lookup(c, name);
    if (i < 0) return vt_err_capture(c->err, unknown_gpu(c, name));
    c->gpus[i].v[VT_GPU_PRICE_USD_H] = usd_per_hour;
    return VT_OK;
}

/* ---- CSV ---------------------------------------------------------------------------------- */

/* Split one line into at most max fields in place (quotes removed, "" inside quotes is a
 * quote).  Returns the field count, or -1 for an unterminated quote. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *r = line, *w = line;
    for (;;) {
        if (n == max) return max + 1;
        fields[n++] = w;
        while (*r == ' ' || *r == '\t') r++;
        if (*r == '"') {
            r++;
            for (;;) {
                if (!*r) return -1;
                if (*r == '"' && r[1] == '"') { *w++ = '"'; r += 2; continue; }
                if (*r == '"') { r++; break; }
                *w++ = *r++;
            }
            while (*r == ' ' || *r == '\t') r++;
            if (*r && *r != ',') return -1;
        } else {
            while (*r && *r != ',') *w++ = *r++;
            while (w > fields[n - 1] && (w[-1] == ' ' || w[-1] == '\t')) w--;
        }
        if (!*r) { *w = '\0'; return n; }
        r++; /* the comma */
        *w++ = '\0';
    }
}

static vt_status csv_number(const char *path, int line, const char *col, const char *s,
                            double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return vt_fail(VT_ERR_FORMAT, "%s:%d: column '%s': bad number '%s'", path, line, col, s);
    if (v < 0)
        return vt_fail(VT_ERR_FORMAT, "%s:%d: column '%s': negative number '%s'", path, line,
                       col, s);
    *out = v;
    return VT_OK;
}

static vt_status read_all(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return vt_fail(errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO, "%s: cannot open: %s",
                       path, strerror(errno));
    char *buf = vt_malloc(CSV_MAX_BYTES + 1);
    if (!buf) { fclose(f); return VT_ERR_OUT_OF_MEMORY; }
    size_t n = fread(buf, 1, CSV_MAX_BYTES + 1, f);
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return vt_fail(VT_ERR_IO, "%s: read error", path); }
    if (n > CSV_MAX_BYTES) {
        free(buf);
        return vt_fail(VT_ERR_FORMAT, "%s: larger than %d bytes; not a GPU catalog", path,
                       CSV_MAX_BYTES);
    }
    if (memchr(buf, '\0', n)) {
        free(buf);
        return vt_fail(VT_ERR_FORMAT, "%s: contains NUL bytes; not a CSV text file", path);
    }
    buf[n] = '\0';
    *out = buf;
    return VT_OK;
}

/* Parses into a scratch copy of the catalog and swaps it in at the end, so a bad line in the
 * middle of a file leaves the catalog as it was. */
static vt_status load_csv(vt_catalog *c, const char *path)
{
    char *text = NULL;
    vt_status st = read_all(path, &text);
    if (st != VT_OK) return st;

    vt_catalog tmp = {0};
    if (reserve(&tmp, c->n + 8) != VT_OK) { free(text); return VT_ERR_OUT_OF_MEMORY; }
    if (c->n > 0) memcpy(tmp.gpus, c->gpus, (size_t)c->n * sizeof *c->gpus);
    tmp.n = c->n;

    int colmap[N_COLS]; /* file column -> csv_cols index */
    int ncols = 0, have_header = 0, lineno = 0;
    char *save = NULL;
    for (char *line = text; line; line = save) {
        save = strchr(line, '\n');
        if (save) *save++ = '\0';
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (len > CSV_MAX_LINE) {
            st = vt_fail(VT_ERR_FORMAT, "%s:%d: line longer than %d characters", path, lineno,
                         CSV_MAX_LINE);
            goto done;
        }
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') continue;

        char *f[N_COLS + 1];
        int nf = split_csv(line, f, N_COLS);
        if (nf < 0) {
            st = vt_fail(VT_ERR_FORMAT, "%s:%d: unterminated quoted field", path, lineno);
            goto done;
        }
        if (!have_header) {
            if (nf > N_COLS) {
                st = vt_fail(VT_ERR_FORMAT, "%s:%d: more than %d columns in the header", path,
                             lineno, N_COLS);
                goto done;
            }
            int seen_name = 0;
            for (int j = 0; j < nf; j++) {
                int k = 0;
                while (k < N_COLS && strcmp(csv_cols[k].key, f[j]) != 0) k++;
                if (k == N_COLS) {
                    st = vt_fail(VT_ERR_FORMAT,
                                 "%s:%d: unknown column '%s' (valid: name, arch, cc, memory_gb, "
                                 "bandwidth_gbs, fp32_tflops, tf32_tflops, bf16_tflops, tdp_w, "
                                 "price_usd_h, tier)", path, lineno, f[j]);
                    goto done;
                }
                for (int q = 0; q < j; q++)
                    if (colmap[q] == k) {
                        st = vt_fail(VT_ERR_FORMAT, "%s:%d: column '%s' appears twice", path,
                                     lineno, f[j]);
                        goto done;
                    }
                colmap[j] = k;
                seen_name |= csv_cols[k].field == COL_NAME;
            }
            if (!seen_name) {
                st = vt_fail(VT_ERR_FORMAT, "%s:%d: the header has no 'name' column", path,
                             lineno);
                goto done;
            }
            ncols = nf;
            have_header = 1;
            continue;
        }
        if (nf != ncols) {
            st = vt_fail(VT_ERR_FORMAT, "%s:%d: %d fields, the header has %d", path, lineno,
                         nf > N_COLS ? N_COLS + 1 : nf, ncols);
            goto done;
        }

        vt_gpu row;
        memset(&row, 0, sizeof row);
        unsigned given = 0; /* bit per vt_gpu_field, plus bits 12..14 for strings */
        for (int j = 0; j < ncols; j++) {
            int fld = csv_cols[colmap[j]].field;
            const char *key = csv_cols[colmap[j]].key;
            if (!*f[j]) continue;
            if (fld > 0) {
                st = csv_number(path, lineno, key, f[j], &row.v[fld]);
                if (st != VT_OK) goto done;
                given |= 1u << fld;
                continue;
            }
            size_t cap = fld == COL_NAME ? sizeof row.name : fld == COL_ARCH ? sizeof row.arch
                                                                              : sizeof row.tier;
            if (strlen(f[j]) >= cap) {
                st = vt_fail(VT_ERR_FORMAT, "%s:%d: column '%s': longer than %d characters",
                             path, lineno, key, (int)cap - 1);
                goto done;
            }
            copy_str(fld == COL_NAME ? row.name : fld == COL_ARCH ? row.arch : row.tier, cap, f[j]);
            given |= 1u << (12 - fld - 1);
        }
        if (!row.name[0]) {
            st = vt_fail(VT_ERR_FORMAT, "%s:%d: empty GPU name", path, lineno);
            goto done;
        }
        int i = vt_catalog_lookup(&tmp, row.name);
        if (i < 0) {
            static const int need[] = {VT_GPU_MEMORY_GB, VT_GPU_BANDWIDTH_GBS, VT_GPU_FP32_TFLOPS};
            for (int q = 0; q < 3; q++)
                if (!(given & (1u << need[q]))) {
                    st = vt_fail(VT_ERR_FORMAT,
                                 "%s:%d: new GPU '%s' needs memory_gb, bandwidth_gbs and "
                                 "fp32_tflops (not in the built-in catalog)", path, lineno,
                                 row.name);
                    goto done;
                }
            if (reserve(&tmp, tmp.n + 1) != VT_OK) { st = VT_ERR_OUT_OF_MEMORY; goto done; }
            i = tmp.n++;
            vt_gpu *g = &tmp.gpus[i];
            memset(g, 0, sizeof *g);
            for (int q = 1; q < 9; q++) g->v[q] = -1;
            copy_str(g->name, sizeof g->name, row.name);
            copy_str(g->tier, sizeof g->tier, "free");
        }
        vt_gpu *g = &tmp.gpus[i];
        for (int q = 1; q < 9; q++)
            if (given & (1u << q)) g->v[q] = row.v[q];
        if (given & (1u << (12 - COL_ARCH - 1))) copy_str(g->arch, sizeof g->arch, row.arch);
        if (given & (1u << (12 - COL_TIER - 1))) copy_str(g->tier, sizeof g->tier, row.tier);
    }
    if (!have_header) st = vt_fail(VT_ERR_FORMAT, "%s: no header line (expected e.g. "
                                   "'name,price_usd_h')", path);
done:
    free(text);
    if (st == VT_OK) {
        free(c->gpus);
        c->gpus = tmp.gpus;
        c->n = tmp.n;
        c->cap = tmp.cap;
    } else {
        free(tmp.gpus);
    }
    return st;
}

VT_API vt_status vt_catalog_load_csv(vt_catalog *c, const char *path)
{
    if (!c || !path) return vt_fail(VT_ERR_INVALID_ARGUMENT, "vt_catalog_load_csv: NULL argument");
    return vt_err_capture(c->err, load_csv(c, path));
}
