/* What the benchmark programs share: a monotonic clock, the median of samples, and the header
 * line naming the CPU and compiler that every figure must carry. Header-only: each bench/ file
 * is a program of its own. */
#ifndef TM_BENCH_H
#define TM_BENCH_H

#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts the n samples; returns the median (and the minimum, when min is not NULL). */
static inline double bench_median(double *v, int n, double *min)
{
    qsort(v, (size_t)n, sizeof *v, bench_by_value);
    if (min)
        *min = v[0];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "cpu ...", "compiler ...", "library ..." lines. */
static inline void bench_print_cpu(void)
{
    char line[256] = "model name: unknown\n";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0)
            break;
    if (f)
        fclose(f);
    const char *colon = strchr(line, ':');
    printf("cpu       %s", colon ? colon + 2 : "unknown\n");
    printf("compiler  %s\n", __VERSION__);
    printf("library   tensormap %s, kernels %s\n", tm_version(), tm_isa());
}

#endif
