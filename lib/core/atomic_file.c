#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Distinguishes temporary files of threads of one process writing the same target. */
static atomic_uint tmp_counter;

static void release(vt_afile *a)
{
    free(a->path);
    free(a->tmp);
    memset(a, 0, sizeof *a);
}

vt_status vt_create_status(int e)
{
    return e == ENOENT || e == ENOTDIR ? VT_ERR_NOT_FOUND : VT_ERR_IO;
}

vt_status vt_create_fail(const char *path, const char *what, int e)
{
    vt_status st = vt_create_status(e);
    char why[4200] = "";
    if (st == VT_ERR_NOT_FOUND) {
        /* the first folder of the path that is missing or is a file (a folder's own path
         * last: a file of its name) */
        size_t n = strlen(path), last = strcmp(what, "folder") ? n - 1 : n;
        char *pre = malloc(n + 1);
        for (size_t i = 1; pre && n && i <= last; i++) {
            if (path[i] != '/' && path[i] != 0) continue;
            memcpy(pre, path, i);
            pre[i] = 0;
            struct stat sb;
            if (stat(pre, &sb) != 0) {
                if (errno == ENOENT) snprintf(why, sizeof why, "; %s does not exist", pre);
                break;
            }
            if (!S_ISDIR(sb.st_mode)) {
                snprintf(why, sizeof why, "; %s is a file, not a folder", pre);
                break;
            }
        }
        free(pre);
    }
    return vt_fail(st, "%s: cannot create %s: %s%s", path, what, strerror(e), why);
}

vt_status vt_afile_open(vt_afile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    size_t n = strlen(path) + 48;
    a->path = vt_strdup(path);
    a->tmp = vt_malloc(n);
    if (!a->path || !a->tmp) {
        release(a);
        return VT_ERR_OUT_OF_MEMORY;
    }
    snprintf(a->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(),
             atomic_fetch_add(&tmp_counter, 1u));
    int fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0 && !(a->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(a->tmp);
        errno = e;
    }
    if (!a->f) {
        int e = errno;
        release(a);
        return vt_create_fail(path, "file", e);
    }
    return VT_OK;
}

/* Make the rename itself durable.  Some filesystems refuse to fsync a folder; that does not
 * undo a write that already succeeded, so it is ignored. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = !slash ? strdup(".") : slash == path ? strdup("/")
                                                     : strndup(path, (size_t)(slash - path));
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

vt_status vt_afile_commit(vt_afile *a)
{
    if (!a->f) {
        release(a);
        return vt_fail(VT_ERR_INVALID_ARGUMENT, "atomic file not open");
    }
    /* fsync before rename: otherwise a crash can leave the new name pointing at a file whose
     * data never reached the disk. */
    int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    int e = errno;
    if (fclose(a->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->f = NULL;
    if (!bad && rename(a->tmp, a->path) != 0) {
        bad = 1;
        e = errno;
    }
    vt_status st = VT_OK;
    if (bad) {
        unlink(a->tmp);
        st = vt_fail(VT_ERR_IO, "%s: cannot write: %s", a->path, strerror(e ? e : EIO));
    } else {
        sync_parent(a->path);
    }
    release(a);
    return st;
}

void vt_afile_abort(vt_afile *a)
{
    if (a->f) {
        fclose(a->f);
        unlink(a->tmp);
    }
    release(a);
}

vt_status vt_write_file_atomic(const char *path, const void *data, size_t n)
{
    vt_afile a;
    vt_status st = vt_afile_open(&a, path);
    if (st) return st;
    if (n && fwrite(data, 1, n, a.f) != n) {
        st = vt_fail(VT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        vt_afile_abort(&a);
        return st;
    }
    return vt_afile_commit(&a);
}
