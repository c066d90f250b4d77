/* Loading a library the module never links (NVML, cuDNN) with dlopen: the file, then each
 * function by name, with a sentence for the log when something is missing.  Plain C without
 * CUDA headers (nvml.c, cudnn_load.c; the tests link those directly). */
#ifndef VT_CUDA_DL_LIB_H
#define VT_CUDA_DL_LIB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* printf into why[cap] (nothing when why is NULL or cap 0). */
__attribute__((format(printf, 3, 4))) void vt_dl_say(char *why, size_t cap, const char *fmt,
                                                      ...);

/* dlopen(path) and every names[i] into *slots[i], i < n.  Returns the handle, or NULL with why
 * saying "<what> could not be loaded: ..." or "<path> has no <name> (<hint>)". */
void *vt_dl_open(const char *path, const char *what, const char *const *names,
                 void **const *slots, size_t n, const char *hint, char *why, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
