/* bench/matmul — Y = W X with tm_matmul for n = 8, 32, 128, 512 columns, beside n calls of
 * tm_matvec and a plain read of W measured in the same run, per type and mode.
 *
 *   matmul [--quick] [--threads N] [--type NAME] [--mode f32|q8]
 *
 * - W: 4096-wide rows, at least 256 MiB of them (32 MiB with --quick), so W streams from DRAM.
 *   Quantized types: the golden corpus' TYPE.rows.weight bytes (realistic rows quantized by
 *   ggml) tiled; f16/bf16: gaussian rows, each with its own scale drawn log-uniformly from 1e-3
 *   to 1. X: gaussian.
 * - Ceiling: the time of one plain read of W (eight 64-bit sums per 64-byte line, one thread),
 *   median of 5, just before the type's rows. "of read" = that time / tm_matmul's: 1.0 is
 *   tm_matmul taking as long as reading W once, whatever n.
 * - n x matvec: n times the median time of one tm_matvec call (a call's time does not depend
 *   on x, and 512 timed calls per row would take minutes); "speedup" = that / tm_matmul's time.
 * - Time: the median of 3 tm_matmul calls after 1 warm-up, wall clock, on --threads threads
 *   (1 unless given; tm_matvec on as many).
 * The CPU, compiler, the library's path and the load average are printed first. */
#include "bench.h"
#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const tm_type types[] = { TM_TYPE_Q4_0, TM_TYPE_Q8_0, TM_TYPE_Q4_K, TM_TYPE_Q5_K,
                                 TM_TYPE_Q6_K, TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_F16,
                                 TM_TYPE_BF16 };
static const uint64_t batch[] = { 8, 32, 128, 512 };
enum { COLS = 4096, CALLS = 3, READS = 5, MAX_N = 512 };

static void die(const char *what)
{
    fprintf(stderr, "matmul bench: %s\n", what);
    exit(1);
}


/* seconds of one plain read of n bytes at p, median of READS after a warm-up */
static double read_time(const uint8_t *p, size_t n)
{
    double t[READS + 1];
    volatile uint64_t sink = 0;
    for (int c = 0; c <= READS; c++) {
        const double t0 = bench_now_s();
        sink += bench_read_sum(p, n);
        t[c] = bench_now_s() - t0;
    }
    (void)sink;
    return bench_median(t + 1, READS, NULL);
}

/* median seconds of CALLS calls after a warm-up: tm_matmul of n columns, or (n == 0) tm_matvec */
static double timed(const tm_tensor *w, const float *X, uint64_t n, float *Y, unsigned mode,
                    unsigned threads)
{
    double t[CALLS + 1];
    tm_error err;
    for (int c = 0; c <= CALLS; c++) {
        const double t0 = bench_now_s();
        const tm_status st = n ? tm_matmul(w, X, COLS, n, Y, mode, threads, &err)
                               : tm_matvec(w, X, Y, mode, threads, &err);
        if (st != TM_OK)
            die(err.message);
        t[c] = bench_now_s() - t0;
    }
    return bench_median(t + 1, CALLS, NULL);
}

int main(int argc, char **argv)
{
    const char *only_type = NULL, *only_mode = NULL;
    size_t w_bytes_min = (size_t)256 << 20;
    unsigned threads = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            w_bytes_min = (size_t)32 << 20;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
            only_type = argv[++i];
        else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
            only_mode = argv[++i];
        else {
            fprintf(stderr, "usage: matmul [--quick] [--threads N] [--type NAME] [--mode f32|q8]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    const char *dir = getenv("TM_CORPUS");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", dir ? dir : "../shared/corpus");
    tm_file *corpus;
    tm_error err;
    if (tm_open(path, 0, &corpus, &err) != TM_OK) {
        fprintf(stderr, "matmul bench: %s: %s (set TM_CORPUS to the corpus directory)\n", path,
                err.message);
        return 1;
    }
    double load[3];
    char date[32];
    bench_load_and_date(load, date);
    printf("tensormap matmul bench, %s\n", date);
    bench_print_cpu();
    printf("load      %.2f %.2f %.2f at start, %ld online CPUs; %u thread(s)\n"
           "W: rows of %d, >= %zu MiB; times: median of %d calls after 1 warm-up, wall clock\n"
           "of read: one plain read of W (median of %d) / tm_matmul's time; n x matvec: n times "
           "one tm_matvec call's median\n\n"
           "type    mode    n   matmul ms  n x matvec ms  speedup  of read\n",
           load[0], load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN), threads, COLS,
           w_bytes_min >> 20, CALLS, READS);
    float *X = malloc((size_t)COLS * MAX_N * sizeof *X);
    if (!X)
        die("out of memory");
    for (size_t i = 0; i < (size_t)COLS * MAX_N; i++)
        X[i] = (float)bench_gaussian();
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const tm_type type = types[ti];
        if (only_type && strcmp(only_type, tm_type_name(type)) != 0)
            continue;
        const size_t row_bytes = COLS / tm_type_block_elems(type) * tm_type_block_bytes(type);
        const size_t rows = (w_bytes_min + row_bytes - 1) / row_bytes;
        uint8_t *wb = aligned_alloc(64, (rows * row_bytes + 63) / 64 * 64);
        float *Y = malloc(rows * MAX_N * sizeof *Y);
        if (!wb || !Y)
            die("out of memory");
        if (!bench_fill_w(corpus, type, wb, rows * row_bytes, COLS)) {
            printf("%-7s skipped: the corpus has no rows of it\n", tm_type_name(type));
            free(wb);
            free(Y);
            continue;
        }
        tm_tensor w;
        memset(&w, 0, sizeof w);
        w.name.ptr = "W";
        w.name.len = 1;
        w.type = type;
        w.n_dims = 2;
        w.ne[0] = COLS;
        w.ne[1] = rows;
        w.ne[2] = w.ne[3] = 1;
        w.n_elements = (uint64_t)COLS * rows;
        w.n_bytes = rows * row_bytes;
        w.data = wb;
        const double read = read_time(wb, w.n_bytes);
        for (unsigned mode = 0; mode < 2; mode++) {
            if (only_mode && strcmp(only_mode, mode == TM_MATVEC_Q8 ? "q8" : "f32") != 0)
                continue;
            const double one = timed(&w, X, 0, Y, mode, threads);
            for (size_t b = 0; b < sizeof batch / sizeof batch[0]; b++) {
                const double t = timed(&w, X, batch[b], Y, mode, threads);
                printf("%-7s %-4s %4llu  %10.1f  %13.1f  %7.2f  %7.2f\n", tm_type_name(type),
                       mode == TM_MATVEC_Q8 ? "q8" : "f32", (unsigned long long)batch[b],
                       t * 1e3, one * (double)batch[b] * 1e3, one * (double)batch[b] / t,
                       read / t);
                fflush(stdout);
            }
        }
        free(wb);
        free(Y);
    }
    free(X);
    tm_close(corpus);
    return 0;
}
