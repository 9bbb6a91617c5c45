/* What the benchmark programs share: a monotonic clock, the median of samples, the header line
 * naming the CPU and compiler that every figure must carry, and the generator of their inputs.
 * Header-only: each bench/ file is a program of its own. */
#ifndef TM_BENCH_H
#define TM_BENCH_H

#include "tensormap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* clock's time in seconds (CLOCK_MONOTONIC: wall time; CLOCK_THREAD_CPUTIME_ID: this thread's) */
static inline double bench_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double bench_now_s(void) { return bench_seconds(CLOCK_MONOTONIC); }

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

/* For a header line: the 1-, 5- and 15-minute load averages (-1 when /proc/loadavg cannot be
 * read) and the date, "YYYY-MM-DD HH:MM UTC". */
static inline void bench_load_and_date(double load[3], char date[32])
{
    load[0] = load[1] = load[2] = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(f);
    }
    const time_t t = time(NULL);
    strftime(date, 32, "%Y-%m-%d %H:%M UTC", gmtime(&t));
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

/* ---- inputs: one fixed-seed generator (splitmix64) per program, so every run measures the
 * same data --------------------------------------------------------------------------------- */

static inline uint64_t bench_next_u64(void)
{
    static uint64_t state = 0x243f6a8885a308d3u;
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* uniform in (0, 1) */
static inline double bench_uniform(void)
{
    return ((double)(bench_next_u64() >> 11) + 0.5) * 0x1p-53;
}

/* standard normal (Box-Muller) */
static inline double bench_gaussian(void)
{
    return sqrt(-2.0 * log(bench_uniform())) * cos(6.283185307179586 * bench_uniform());
}

#endif
