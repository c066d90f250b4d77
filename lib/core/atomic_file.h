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

/* The status of a failure to create a file or folder at `path` (errno e), one per cause for
 * every writer of the library (this one, the run folder, the ONNX export):
 *   ENOENT, ENOTDIR (a parent folder is missing, or is a file)      VT_ERR_NOT_FOUND
 *   anything else (EACCES, EPERM, EROFS: no permission; ENOSPC ...) VT_ERR_IO */
vt_status vt_create_status(int e);
/* Record that failure: "<path>: cannot create <what>: <strerror(e)>", and for ENOENT/ENOTDIR
 * the parent at fault ("; <dir> is a file, not a folder" or "; <dir> does not exist").
 * `what`: "file" or "folder".  Returns vt_create_status(e). */
vt_status vt_create_fail(const char *path, const char *what, int e);
/* Create the temporary file ("<path>.tmp.<pid>.<n>").  Fails as vt_create_fail(path, "file"):
 * VT_ERR_NOT_FOUND when the folder does not exist (or is a file), VT_ERR_IO otherwise. */
vt_status vt_afile_open(vt_afile *a, const char *path);
/* Flush, fsync, close and rename into place (then fsync the folder).  On any failure the
 * temporary file is removed and the target is untouched.  Always releases `a`. */
vt_status vt_afile_commit(vt_afile *a);
/* Give up: close and remove the temporary file.  Safe on a zeroed or released vt_afile. */
void vt_afile_abort(vt_afile *a);
/* The whole cycle for data already in memory. */
vt_status vt_write_file_atomic(const char *path, const void *data, size_t n);

#endif
