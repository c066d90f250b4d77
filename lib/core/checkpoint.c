#include "core/checkpoint.h"

#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const unsigned char MAGIC[8] = {'V', 'T', 'C', 'K', 'P', 'T', '\r', '\n'};
enum { HDR = 16, SEC_HDR = 28 };

typedef struct {
    uint32_t tag, flags;
    uint64_t raw, stored;
    uint32_t crc;
    unsigned char *bytes; /* writer: owned stored bytes; reader: points into the file */
} section;

struct vt_ckpt_writer {
    section *s;
    int n, cap;
};

struct vt_ckpt {
    unsigned char *file;
    size_t size;
    section *s;
    int n;
    char *path;
};

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static uint32_t crc(const void *d, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *p = d;
    while (n) { /* crc32 takes a uInt length */
        uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

static void tagstr(uint32_t tag, char out[5])
{
    for (int i = 0; i < 4; i++) {
        char ch = (char)(tag >> (8 * i));
        out[i] = (ch >= 32 && ch < 127) ? ch : '?';
    }
    out[4] = 0;
}

vt_status vt_ckw_create(vt_ckpt_writer **out)
{
    *out = vt_calloc(1, sizeof **out);
    return *out ? VT_OK : VT_ERR_OUT_OF_MEMORY;
}

void vt_ckw_destroy(vt_ckpt_writer *w)
{
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->s[i].bytes);
    free(w->s);
    free(w);
}

vt_status vt_ckw_add(vt_ckpt_writer *w, uint32_t tag, const void *data, size_t n, int compress)
{
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        section *s = vt_realloc(w->s, (size_t)cap * sizeof *s);
        if (!s) return VT_ERR_OUT_OF_MEMORY;
        w->s = s;
        w->cap = cap;
    }
    section sec = {tag, 0, n, n, crc(data, n), NULL};
    if (compress && n > 64) {
        uLongf bound = compressBound((uLong)n);
        unsigned char *z = malloc(bound);
        if (z && compress2(z, &bound, data, (uLong)n, Z_BEST_SPEED) == Z_OK && bound < n) {
            sec.flags = 1;
            sec.stored = bound;
            sec.bytes = z;
        } else {
            free(z);
        }
    }
    if (!sec.bytes) {
        sec.bytes = vt_malloc(n ? n : 1);
        if (!sec.bytes) return VT_ERR_OUT_OF_MEMORY;
        if (n) memcpy(sec.bytes, data, n);
    }
    w->s[w->n++] = sec;
    return VT_OK;
}

vt_status vt_ckw_write(vt_ckpt_writer *w, const char *path)
{
    vt_afile af;
    vt_status st = vt_afile_open(&af, path);
    if (st) return st;
    uLong total = crc32(0L, Z_NULL, 0);
    unsigned char hdr[HDR], sh[SEC_HDR];
    memcpy(hdr, MAGIC, 8);
    put32(hdr + 8, VT_CKPT_VERSION);
    put32(hdr + 12, (uint32_t)w->n);
    int bad = fwrite(hdr, 1, HDR, af.f) != HDR;
    total = crc32(total, hdr, HDR);
    for (int i = 0; i < w->n && !bad; i++) {
        section *s = &w->s[i];
        put32(sh, s->tag);
        put32(sh + 4, s->flags);
        put64(sh + 8, s->raw);
        put64(sh + 16, s->stored);
        put32(sh + 24, s->crc);
        bad = fwrite(sh, 1, SEC_HDR, af.f) != SEC_HDR ||
              fwrite(s->bytes, 1, s->stored, af.f) != s->stored;
        total = crc32(total, sh, SEC_HDR);
        for (uint64_t off = 0; off < s->stored;) {
            uInt k = s->stored - off > 0x40000000u ? 0x40000000u : (uInt)(s->stored - off);
            total = crc32(total, s->bytes + off, k);
            off += k;
        }
    }
    unsigned char tr[4];
    put32(tr, (uint32_t)total);
    if (!bad) bad = fwrite(tr, 1, 4, af.f) != 4;
    if (bad) {
        st = vt_fail(VT_ERR_IO, "%s: cannot write checkpoint: %s", path, strerror(errno));
        vt_afile_abort(&af);
        return st;
    }
    return vt_afile_commit(&af);
}

vt_status vt_ckpt_open(vt_ckpt **out, const char *path)
{
    *out = NULL;
    vt_ckpt *c = vt_calloc(1, sizeof *c);
    if (!c) return VT_ERR_OUT_OF_MEMORY;
    void *file;
    vt_status st = vt_read_regular_file(path, SIZE_MAX, &file, &c->size);
    c->file = file;
    if (!st && !(c->path = vt_strdup(path))) st = VT_ERR_OUT_OF_MEMORY;
    if (st) goto fail;
    const unsigned char *p = c->file;
    if (c->size < 8 || memcmp(p, MAGIC, 8) != 0) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: not a libvisiontrain checkpoint (bad magic)", path);
        goto fail;
    }
    if (c->size < HDR + 4) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: truncated checkpoint (%zu bytes)", path, c->size);
        goto fail;
    }
    uint32_t ver = get32(p + 8), nsec = get32(p + 12);
    if (ver > VT_CKPT_VERSION || ver == 0) {
        st = vt_fail(VT_ERR_CHECKPOINT,
                     "%s: checkpoint format version %u; this library reads up to version %d",
                     path, ver, VT_CKPT_VERSION);
        goto fail;
    }
    if (nsec > 4096) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (section count %u)", path, nsec);
        goto fail;
    }
    c->s = vt_calloc(nsec ? nsec : 1, sizeof *c->s);
    if (!c->s) {
        st = VT_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    size_t off = HDR;
    for (uint32_t i = 0; i < nsec; i++) {
        if (c->size - 4 < off || c->size - 4 - off < SEC_HDR) {
            st = vt_fail(VT_ERR_CHECKPOINT, "%s: truncated checkpoint (in section %u of %u)", path,
                         i + 1, nsec);
            goto fail;
        }
        section *s = &c->s[i];
        s->tag = get32(p + off);
        s->flags = get32(p + off + 4);
        s->raw = get64(p + off + 8);
        s->stored = get64(p + off + 16);
        s->crc = get32(p + off + 24);
        off += SEC_HDR;
        if (s->stored > c->size - 4 - off) {
            char t[5];
            tagstr(s->tag, t);
            st = vt_fail(VT_ERR_CHECKPOINT, "%s: truncated checkpoint (section '%s')", path, t);
            goto fail;
        }
        s->bytes = c->file + off;
        off += s->stored;
        c->n++;
    }
    if (off + 4 != c->size) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (%zu unexpected bytes at the end)",
                     path, c->size - off - 4);
        goto fail;
    }
    if (crc(c->file, off) != get32(p + off)) {
        st = vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (file checksum mismatch)", path);
        goto fail;
    }
    *out = c;
    return VT_OK;
fail:
    vt_ckpt_close(c);
    return st;
}

static section *find(const vt_ckpt *c, uint32_t tag)
{
    for (int i = 0; i < c->n; i++)
        if (c->s[i].tag == tag) return &c->s[i];
    return NULL;
}

int vt_ckpt_has(const vt_ckpt *c, uint32_t tag) { return find(c, tag) != NULL; }
const char *vt_ckpt_path(const vt_ckpt *c) { return c->path; }

vt_status vt_ckpt_get(vt_ckpt *c, uint32_t tag, void **data, size_t *n)
{
    *data = NULL;
    *n = 0;
    char t[5];
    tagstr(tag, t);
    section *s = find(c, tag);
    if (!s) return vt_fail(VT_ERR_NOT_FOUND, "%s: checkpoint has no '%s' section", c->path, t);
    if (s->raw > ((uint64_t)1 << 40))
        return vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (section '%s' size)", c->path, t);
    unsigned char *buf = vt_malloc(s->raw ? (size_t)s->raw : 1);
    if (!buf) return VT_ERR_OUT_OF_MEMORY;
    if (s->flags & 1) {
        uLongf got = (uLongf)s->raw;
        if (uncompress(buf, &got, s->bytes, (uLong)s->stored) != Z_OK || got != s->raw) {
            free(buf);
            return vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (section '%s' does not "
                           "decompress)", c->path, t);
        }
    } else {
        if (s->stored != s->raw) {
            free(buf);
            return vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (section '%s' size)",
                           c->path, t);
        }
        memcpy(buf, s->bytes, (size_t)s->raw);
    }
    if (crc(buf, (size_t)s->raw) != s->crc) {
        free(buf);
        return vt_fail(VT_ERR_CHECKPOINT, "%s: corrupt checkpoint (section '%s' CRC mismatch)",
                       c->path, t);
    }
    *data = buf;
    *n = (size_t)s->raw;
    return VT_OK;
}

void vt_ckpt_close(vt_ckpt *c)
{
    if (!c) return;
    free(c->file);
    free(c->s);
    free(c->path);
    free(c);
}

const char *vt_ckpt_kv(const char *text, size_t n, const char *key, char *buf, size_t cap)
{
    size_t kl = strlen(key);
    if (!text || cap == 0) return NULL;
    for (const char *p = text, *end = text + n; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= cap) vl = cap - 1;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = 0;
            return buf;
        }
        p = nl ? nl + 1 : end;
    }
    return NULL;
}
