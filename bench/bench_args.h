/* The key=value arguments and the clock of the backend profiles (conv_profile, bn_profile). */
#ifndef VT_BENCH_ARGS_H
#define VT_BENCH_ARGS_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The integer of argument key=N, else def */
static inline int bench_arg(int argc, char **argv, const char *key, int def)
{
    size_t n = strlen(key);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], key, n) && argv[i][n] == '=') return atoi(argv[i] + n + 1);
    return def;
}

#endif
