/* Atomic file replacement, the one mechanism behind every file the library writes (checkpoints,
 * PNGs, results, calibration files): write a temporary file beside the target, flush and fsync
 * it, rename it over the target, fsync the folder.  A crash or kill at any moment leaves either
 * the old file or the complete new one, never a torn file. */
#ifndef VT_ATOMIC_FILE_H
#define VT_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "core/core.h"

typedef struct vt_afile {
    FILE *f;   /* write through this between open and commit/abort */
    char *path;
    char *tmp;
} vt_afile;

/* Create the temporary file ("<path>.tmp.<pid>.<n>").  VT_ERR_NOT_FOUND when the folder does
 * not exist, VT_ERR_IO otherwise; the message names the path. */
vt_status vt_afile_open(vt_afile *a, const char *path);
/* Flush, fsync, close and rename into place (then fsync the folder).  On any failure the
 * temporary file is removed and the target is untouched.  Always releases `a`. */
vt_status vt_afile_commit(vt_afile *a);
/* Give up: close and remove the temporary file.  Safe on a zeroed or released vt_afile. */
void vt_afile_abort(vt_afile *a);
/* The whole cycle for data already in memory. */
vt_status vt_write_file_atomic(const char *path, const void *data, size_t n);

#endif
