/* The checkpoint container: a versioned file of tagged, zlib-compressed, CRC32-checked sections,
 * written atomically.
 *
 * Layout (all integers little-endian):
 *   header   8 bytes magic "VTCKPT\r\n", u32 format version, u32 section count
 *   section  u32 tag (four ASCII bytes), u32 flags (bit 0: zlib), u64 raw size, u64 stored
 *            size, u32 CRC32 of the raw bytes, then the stored bytes
 *   trailer  u32 CRC32 of everything before it
 * Readers reject a wrong magic (foreign file), a version above theirs (newer file), sizes that
 * run past the end (truncated), and CRC mismatches (corrupt), each with its own message. */
#ifndef VT_CHECKPOINT_H
#define VT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define VT_CKPT_VERSION 1
#define VT_TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

typedef struct vt_ckpt_writer vt_ckpt_writer;
vt_status vt_ckw_create(vt_ckpt_writer **out);
/* Adds a copy of data (compressed when compress != 0 and it helps). */
vt_status vt_ckw_add(vt_ckpt_writer *w, uint32_t tag, const void *data, size_t n, int compress);
/* Writes path atomically (temporary file in the same folder, fsync, rename, fsync folder). */
vt_status vt_ckw_write(vt_ckpt_writer *w, const char *path);
void vt_ckw_destroy(vt_ckpt_writer *w);

typedef struct vt_ckpt vt_ckpt;
/* Reads and verifies the whole file (structure and every CRC). */
vt_status vt_ckpt_open(vt_ckpt **out, const char *path);
/* Inflated copy of a section (malloc'd, caller frees); VT_ERR_NOT_FOUND if absent. */
vt_status vt_ckpt_get(vt_ckpt *c, uint32_t tag, void **data, size_t *n);
int vt_ckpt_has(const vt_ckpt *c, uint32_t tag);
const char *vt_ckpt_path(const vt_ckpt *c);
void vt_ckpt_close(vt_ckpt *c);

/* Text sections hold "key=value" lines.  The value of `key` in such a text of n bytes (not
 * necessarily NUL-terminated), copied NUL-terminated into buf (cut to cap-1 bytes); NULL when
 * no line has that key.  The first such line wins. */
const char *vt_ckpt_kv(const char *text, size_t n, const char *key, char *buf, size_t cap);

#endif
