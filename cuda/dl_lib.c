/* dlopen and dlsym for the module's optional libraries (dl_lib.h). */
#include "dl_lib.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

void vt_dl_say(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

void *vt_dl_open(const char *path, const char *what, const char *const *names,
                 void **const *slots, size_t n, const char *hint, char *why, size_t cap)
{
    if (why && cap) why[0] = 0;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        vt_dl_say(why, cap, "%s could not be loaded: %s", what, err ? err : path);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        /* POSIX's sanctioned way to turn dlsym's object pointer into a function pointer */
        *slots[i] = dlsym(lib, names[i]);
        if (!*slots[i]) {
            vt_dl_say(why, cap, "%s has no %s (%s)", path, names[i], hint);
            dlclose(lib);
            return NULL;
        }
    }
    return lib;
}
