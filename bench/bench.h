/* What the benchmark programs share: a monotonic clock, the median of samples, the header line
 * naming the CPU and compiler that every figure must carry, and the generator of their inputs.
 * Header-only: each bench/ file is a program of its own. */
#ifndef TM_BENCH_H
#define TM_BENCH_H

#include "tensormap.h"

#include <math.h>
#include <stdbool.h>
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

/* A weight matrix's bytes, realistic: the golden corpus' ggml-quantized rows of type t tiled
 * (whole blocks, so any width), or for f16/bf16 gaussian halves whose scale changes every row of
 * row_len values (down to 10^-3: real weights have subnormal halves). False when the corpus has
 * no rows of the type. */
static inline bool bench_fill_w(const tm_file *corpus, tm_type t, uint8_t *w, size_t n_bytes,
                                size_t row_len)
{
    if (t == TM_TYPE_F16 || t == TM_TYPE_BF16) {
        float scale = 1.0f;
        for (size_t i = 0; i < n_bytes / 2; i++) {
            if (i % row_len == 0)
                scale = (float)pow(10.0, -3.0 * bench_uniform());
            const float v = (float)bench_gaussian() * scale;
            uint16_t h; /* rounded to nearest even */
            (t == TM_TYPE_F16 ? tm_f32_to_f16 : tm_f32_to_bf16)(&v, &h, 1);
            memcpy(w + 2 * i, &h, 2);
        }
        return true;
    }
    char name[64];
    snprintf(name, sizeof name, "%s.rows.weight", tm_type_name(t));
    const tm_tensor *src = tm_tensor_find(corpus, name);
    if (!src || src->type != t)
        return false;
    for (size_t off = 0; off < n_bytes; off += src->n_bytes)
        memcpy(w + off, src->data, n_bytes - off < src->n_bytes ? n_bytes - off : src->n_bytes);
    return true;
}

/* A plain read of n bytes at p, eight 64-bit lanes a cache line (the ceiling a product that
 * reads W is held to); the sum keeps the compiler from dropping the loads. */
static inline uint64_t bench_read_sum(const uint8_t *p, size_t n)
{
    uint64_t s[8] = { 0 };
    for (size_t i = 0; i + 64 <= n; i += 64)
        for (int k = 0; k < 8; k++) {
            uint64_t v;
            memcpy(&v, p + i + 8 * k, 8);
            s[k] += v;
        }
    return s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7];
}

/* Row r of W (a 2-D tensor of rows of at most 65,536) times x in double from the decoded
 * weights (tm_dequant_rows, bit-exact with ggml); NAN when the row cannot be decoded. */
static inline double bench_row_ref(const tm_tensor *w, uint64_t r, const float *x)
{
    static float row[65536];
    tm_error err;
    if (w->ne[0] > 65536 || tm_dequant_rows(w, r, r + 1, row, &err) != TM_OK)
        return NAN;
    double ref = 0;
    for (uint64_t c = 0; c < w->ne[0]; c++)
        ref += (double)row[c] * (double)x[c];
    return ref;
}

/* max |y - W x| / max |W x| over n_rows (>= 2) rows spread evenly over W; -1 when a row cannot
 * be decoded. */
static inline double bench_error(const tm_tensor *w, const float *x, const float *y, int n_rows)
{
    const uint64_t rows = tm_tensor_rows(w);
    double max_err = 0, max_ref = 0;
    for (int k = 0; k < n_rows; k++) {
        const uint64_t r = (uint64_t)k * (rows - 1) / (uint64_t)(n_rows - 1);
        const double ref = bench_row_ref(w, r, x);
        if (isnan(ref))
            return -1;
        max_err = fmax(max_err, fabs((double)y[r] - ref));
        max_ref = fmax(max_ref, fabs(ref));
    }
    return max_err / max_ref;
}

#endif
