/* bench/matmul — Y = W X with tm_matmul for n = 8, 32, 128, 512 columns, beside n calls of
 * tm_matvec and a plain read of W measured in the same run, per type and mode.
 *
 *   matmul [--quick] [--cpu-time] [--threads N] [--type NAME] [--mode f32|q8] [--max-n N]
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
 *   (1 unless given; tm_matvec on as many); --cpu-time (one thread only) times every call and
 *   the read by the thread's CPU time instead, for a machine shared with other jobs.
 *   --max-n N leaves out the batches of more than N columns (the F32 mode's n = 512 takes
 *   minutes a type).
 * - err: max |Y[:,0] - W x0| / max |W x0| over 64 rows spread over W, W x0 in double from the
 *   decoded weights (bit-exact with ggml's).
 * - Built with ggml (`make bench GGML=DIR`, bench/ggml_side.h): ggml's mul_mat of the same W
 *   and X in a graph on its CPU backend with as many threads, timed the same way ("ggml ms",
 *   its err beside it), and "x ggml" = ggml's time / tm_matmul's (above 1: tensormap faster).
 * The CPU, compiler, the library's path and the load average are printed first. */
#include "bench.h"
#include "ggml_side.h"
#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const tm_type types[] = { TM_TYPE_Q4_0, TM_TYPE_Q8_0, TM_TYPE_Q4_K, TM_TYPE_Q5_K,
                                 TM_TYPE_Q6_K, TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_F16,
                                 TM_TYPE_BF16 };
static const uint64_t batch[] = { 8, 32, 128, 512 };
#define N_BATCH (sizeof batch / sizeof batch[0])
enum { COLS = 4096, CALLS = 3, READS = 5, MAX_N = 512, ERROR_ROWS = 64 };

static clockid_t timer = CLOCK_MONOTONIC;

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
        const double t0 = bench_seconds(timer);
        sink += bench_read_sum(p, n);
        t[c] = bench_seconds(timer) - t0;
    }
    (void)sink;
    return bench_median(t + 1, READS, NULL);
}

/* One product to time: tm_matmul of n columns, or (n == 0) tm_matvec; or (ggml not NULL)
 * ggml's mul_mat graph. */
typedef struct product {
    const tm_tensor *w;
    const float *X;
    uint64_t n;
    float *Y;
    unsigned mode, threads;
#ifdef TM_BENCH_GGML
    ggml_side_matmul *ggml;
#endif
} product;

static void run_product(const product *p)
{
#ifdef TM_BENCH_GGML
    if (p->ggml) {
        if (!ggml_side_matmul_run(p->ggml))
            die("ggml's graph failed");
        return;
    }
#endif
    tm_error err;
    const tm_status st = p->n ? tm_matmul(p->w, p->X, COLS, p->n, p->Y, p->mode, p->threads, &err)
                              : tm_matvec(p->w, p->X, p->Y, p->mode, p->threads, &err);
    if (st != TM_OK)
        die(err.message);
}

/* median seconds of CALLS calls after a warm-up */
static double timed(const product *p)
{
    double t[CALLS + 1];
    for (int c = 0; c <= CALLS; c++) {
        const double t0 = bench_seconds(timer);
        run_product(p);
        t[c] = bench_seconds(timer) - t0;
    }
    return bench_median(t + 1, CALLS, NULL);
}

/* ggml's mul_mat of n columns: its median seconds and (*err) its column 0's error; 0 when not
 * built with ggml or ggml refuses the type */
static double ggml_timed(const tm_tensor *w, float *X, uint64_t n, float *Y, unsigned threads,
                         double *err)
{
#ifdef TM_BENCH_GGML
    ggml_side_matmul m;
    if (!ggml_side_matmul_init(&m, w->type, (uint8_t *)(uintptr_t)w->data, w->n_bytes, COLS,
                               (int64_t)w->ne[1], X, (int64_t)n, Y, (int)threads))
        return 0;
    const product p = { .w = w, .ggml = &m };
    const double t = timed(&p);
    ggml_side_matmul_free(&m);
    *err = bench_error(w, X, Y, ERROR_ROWS);
    return t;
#else
    (void)w, (void)X, (void)n, (void)Y, (void)threads, (void)err;
    return 0;
#endif
}

#ifdef TM_BENCH_GGML
#define GGML_NOTE "ggml: ggml_mul_mat in a graph on ggml's CPU backend, as many threads "          \
                  "(bench/ggml_side.h); x ggml: ggml's time / tm_matmul's\n"
#define GGML_COLUMNS "   ggml ms  ggml err  x ggml"
#else
#define GGML_NOTE ""
#define GGML_COLUMNS ""
#endif

int main(int argc, char **argv)
{
    const char *only_type = NULL, *only_mode = NULL;
    size_t w_bytes_min = (size_t)256 << 20;
    unsigned threads = 1;
    uint64_t max_n = MAX_N;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            w_bytes_min = (size_t)32 << 20;
        else if (strcmp(argv[i], "--cpu-time") == 0)
            timer = CLOCK_THREAD_CPUTIME_ID;
        else if (strcmp(argv[i], "--max-n") == 0 && i + 1 < argc)
            max_n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
            only_type = argv[++i];
        else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
            only_mode = argv[++i];
        else {
            fprintf(stderr, "usage: matmul [--quick] [--cpu-time] [--threads N] [--type NAME] "
                            "[--mode f32|q8] [--max-n N]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (timer != CLOCK_MONOTONIC && threads != 1) {
        fprintf(stderr, "matmul bench: --cpu-time times one thread: not with --threads %u\n",
                threads);
        return 2;
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
    ggml_side_print();
    printf("load      %.2f %.2f %.2f at start, %ld online CPUs; %u thread(s)\n"
           "W: rows of %d, >= %zu MiB; times: median of %d calls after 1 warm-up, %s\n"
           "of read: one plain read of W (median of %d) / tm_matmul's time; n x matvec: n times "
           "one tm_matvec call's median\n"
           "err: max|Y[:,0] - W x0| / max|W x0| over %d rows, W x0 in double from the decoded W\n" GGML_NOTE
           "\ntype    mode    n   matmul ms  n x matvec ms  speedup  of read       err" GGML_COLUMNS
           "\n",
           load[0], load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN), threads, COLS,
           w_bytes_min >> 20, CALLS,
           timer == CLOCK_MONOTONIC ? "wall clock" : "the thread's CPU time", READS, ERROR_ROWS);
    float *X = aligned_alloc(64, (size_t)COLS * MAX_N * sizeof *X); /* ggml's buffers: aligned */
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
        float *Y = aligned_alloc(64, rows * MAX_N * sizeof *Y);
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
        double ggml_t[N_BATCH], ggml_err[N_BATCH] = { 0 };
        for (size_t b = 0; b < N_BATCH && batch[b] <= max_n; b++)
            ggml_t[b] = ggml_timed(&w, X, batch[b], Y, threads, &ggml_err[b]);
        for (unsigned mode = 0; mode < 2; mode++) {
            if (only_mode && strcmp(only_mode, mode == TM_MATVEC_Q8 ? "q8" : "f32") != 0)
                continue;
            const product matvec = { .w = &w, .X = X, .n = 0, .Y = Y, .mode = mode,
                                     .threads = threads };
            const double one = timed(&matvec);
            for (size_t b = 0; b < N_BATCH && batch[b] <= max_n; b++) {
                product matmul = matvec;
                matmul.n = batch[b];
                const double t = timed(&matmul);
                char versus[48] = "";
                if (ggml_t[b] > 0)
                    snprintf(versus, sizeof versus, "  %8.1f  %8.2e  %6.2f", ggml_t[b] * 1e3,
                             ggml_err[b], ggml_t[b] / t);
                printf("%-7s %-4s %4llu  %10.1f  %13.1f  %7.2f  %7.2f  %8.2e%s\n",
                       tm_type_name(type), mode == TM_MATVEC_Q8 ? "q8" : "f32",
                       (unsigned long long)batch[b], t * 1e3, one * (double)batch[b] * 1e3,
                       one * (double)batch[b] / t, read / t, bench_error(&w, X, Y, ERROR_ROWS), versus);
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
