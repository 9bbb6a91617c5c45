/* bench/matvec — y = W x with tm_matvec straight from quantized blocks in DRAM, per type, path
 * and mode, each row beside a memory read ceiling measured in the same run, right before it.
 *
 *   matvec [--quick] [--cpu-time] [--type NAME] [--isa NAME] [--error-x N]
 *
 * - W: 4096-wide rows, at least 256 MiB of them (64 MiB with --quick), so every call streams W
 *   from DRAM. Quantized types: the golden corpus' TYPE.rows.weight bytes (rows of realistic
 *   weights quantized by ggml) tiled; f16/bf16: gaussian rows, each with its own scale drawn
 *   log-uniformly from 1e-3 to 1. x: gaussian.
 * - Ceiling: a plain read of the same bytes (eight 64-bit sums per 64-byte line), median of 5.
 *   Ratio = W bytes/s of the product / that. Two threads: tm_matvec on 2 threads against a read
 *   of the same bytes split over 2 threads.
 * - Time: the median of 7 calls after 1 warm-up call, wall clock; --cpu-time times the
 *   one-thread rows (product and ceiling alike) by the thread's CPU time instead, for a machine
 *   shared with other jobs (two-thread rows stay on the wall clock).
 * - Error: max |y - W x| / max |W x| over 64 rows spread over W, W x taken in double from the
 *   decoded weights (tm_dequant_rows, bit-exact with ggml), for each of 256 gaussian x
 *   (--error-x N: N of them), the same for every product, ggml's too; the column is the sum
 *   of the x's max |y - W x| over the sum of their max |W x|. From one x to the next the max
 *   moves by more than two products of the same error differ by: it takes hundreds of x to
 *   tell apart errors 2 % apart.
 * - Built with ggml (`make bench GGML=DIR`, bench/ggml_side.h): before the type's own rows, a
 *   "ggml" row — ggml's from_float of x (to q8_0, q8_K, f16 or bf16 as ggml pairs them) and
 *   vec_dot row by row, one thread, the same W and x, its own ceiling and error measured the
 *   same way — and each one-thread row of tensormap's gets "x ggml": ggml's time over its own,
 *   the two products alternated call by call (a shared machine's bandwidth drifts over
 *   seconds; alternated, both see the same), the median of the 7 calls' ratios.
 * The CPU, compiler, the library's flags and the load average are printed first. */
#include "bench.h"
#include "ggml_side.h"
#include "tensormap.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef TM_BENCH_LIB_FLAGS
#define TM_BENCH_LIB_FLAGS "(not given to this build)"
#endif

/* the targets: Q8 and F32 single-thread fractions of the read ceiling (0 = none); two
 * threads: 0.9 in Q8 for the same four types */
static const struct {
    tm_type type;
    double q8, f32;
} types[] = {
    { TM_TYPE_Q4_K, 0.71, 0.50 }, { TM_TYPE_Q6_K, 0.77, 0.50 }, { TM_TYPE_Q8_0, 0.77, 0.75 },
    { TM_TYPE_F16, 0.87, 0.75 },  { TM_TYPE_Q4_0, 0, 0 },       { TM_TYPE_BF16, 0, 0 },
    { TM_TYPE_Q5_K, 0, 0 },       { TM_TYPE_Q3_K, 0, 0 },       { TM_TYPE_Q2_K, 0, 0 },
    { TM_TYPE_IQ4_XS, 0, 0 },     { TM_TYPE_IQ4_NL, 0, 0 },     { TM_TYPE_MXFP4, 0, 0 },
    { TM_TYPE_Q5_0, 0, 0 },       { TM_TYPE_Q5_1, 0, 0 },       { TM_TYPE_Q4_1, 0, 0 },
    { TM_TYPE_IQ2_XXS, 0, 0 },    { TM_TYPE_IQ3_S, 0, 0 },      { TM_TYPE_TQ2_0, 0, 0 },
    { TM_TYPE_IQ2_XS, 0, 0 },     { TM_TYPE_IQ2_S, 0, 0 },      { TM_TYPE_IQ3_XXS, 0, 0 },
    { TM_TYPE_IQ1_S, 0, 0 },      { TM_TYPE_IQ1_M, 0, 0 },      { TM_TYPE_TQ1_0, 0, 0 },
    { TM_TYPE_NVFP4, 0, 0 },      { TM_TYPE_Q1_0, 0, 0 },       { TM_TYPE_Q2_0, 0, 0 },
    { TM_TYPE_F32, 0, 0 },
};
#define N_TYPES (sizeof types / sizeof types[0])

enum { COLS = 4096, CALLS = 7, CEILING_CALLS = 5, ERROR_ROWS = 64 };
/* the error column's x (--error-x of them, COLS floats each), and W x in double for its rows
 * (the type's W) */
static int error_trials = 256;
static float (*trial_x)[COLS];
static double (*trial_ref)[ERROR_ROWS];
static size_t w_bytes_min = (size_t)256 << 20;

static clockid_t one_thread_clock = CLOCK_MONOTONIC;

static void die(const char *what)
{
    fprintf(stderr, "matvec bench: %s\n", what);
    exit(1);
}

/* ---- inputs -------------------------------------------------------------------------------- */

static tm_file *corpus;


/* ---- the read ceiling ---------------------------------------------------------------------- */

typedef struct read_part {
    const uint8_t *p;
    size_t n;
    uint64_t sum;
} read_part;

static void *read_bytes(void *arg)
{
    read_part *r = arg;
    r->sum = bench_read_sum(r->p, r->n);
    return NULL;
}

/* bytes/s of a plain read of n bytes at p on n_threads (1 or 2) threads, median of calls */
static double read_ceiling(const uint8_t *p, size_t n, unsigned n_threads)
{
    double t[CEILING_CALLS + 1];
    volatile uint64_t sink = 0;
    for (int c = 0; c <= CEILING_CALLS; c++) {
        read_part parts[2] = { { p, n / n_threads, 0 }, { p + n / 2, n - n / 2, 0 } };
        pthread_t tid;
        const clockid_t clock = n_threads == 1 ? one_thread_clock : CLOCK_MONOTONIC;
        const double t0 = bench_seconds(clock);
        if (n_threads == 2 && pthread_create(&tid, NULL, read_bytes, &parts[1]) != 0)
            die("cannot start a thread");
        read_bytes(&parts[0]);
        if (n_threads == 2)
            pthread_join(tid, NULL);
        t[c] = bench_seconds(clock) - t0;
        sink += parts[0].sum ^ parts[1].sum;
    }
    (void)sink;
    return (double)n / bench_median(t + 1, CEILING_CALLS, NULL); /* call 0 was the warm-up */
}

/* ---- one row of the table ------------------------------------------------------------------ */

/* One product to time: tm_matvec in mode on n_threads, or (dot not NULL) ggml's vec_dot. */
typedef struct product {
    const tm_tensor *w;
    const float *x;
    float *y;
    unsigned mode, n_threads;
#ifdef TM_BENCH_GGML
    const ggml_side_dot *dot;
#endif
} product;

static void run_product(const product *p)
{
#ifdef TM_BENCH_GGML
    if (p->dot) {
        const uint64_t rows = tm_tensor_rows(p->w);
        ggml_side_matvec(p->dot, p->w->data, rows, p->w->n_bytes / rows, COLS, p->x, p->y);
        return;
    }
#endif
    tm_error err;
    if (tm_matvec(p->w, p->x, p->y, p->mode, p->n_threads, &err) != TM_OK)
        die(err.message);
}

/* Row r of p's W times x, as p computes it */
static float one_row(const product *p, uint64_t r, const float *x)
{
    float y;
#ifdef TM_BENCH_GGML
    if (p->dot) {
        const size_t row_bytes = p->w->n_bytes / tm_tensor_rows(p->w);
        ggml_side_matvec(p->dot, (const uint8_t *)p->w->data + r * row_bytes, 1, row_bytes, COLS, x, &y);
        return y;
    }
#endif
    tm_error err;
    if (tm_matvec_rows(p->w, r, r + 1, x, &y, p->mode, &err) != TM_OK)
        die(err.message);
    return y;
}

/* the row of W that is the error column's k-th */
static uint64_t error_row(const tm_tensor *w, int k)
{
    return (uint64_t)k * (tm_tensor_rows(w) - 1) / (ERROR_ROWS - 1);
}

/* trial_ref for W; false when a row cannot be decoded */
static bool error_refs(const tm_tensor *w)
{
    for (int t = 0; t < error_trials; t++)
        for (int k = 0; k < ERROR_ROWS; k++)
            if (isnan(trial_ref[t][k] = bench_row_ref(w, error_row(w, k), trial_x[t])))
                return false;
    return true;
}

/* The error column: over the error_trials x, max |y - W x| over ERROR_ROWS rows spread over W,
 * summed, over max |W x| over the rows, summed. Not the mean of the x's ratios: a few x whose
 * max |W x| comes out small would make that mean their own (its spread from x to x is larger
 * than the mean). */
static double error_column(const product *p)
{
    double sum_err = 0, sum_ref = 0;
    for (int t = 0; t < error_trials; t++) {
        double max_err = 0, max_ref = 0;
        for (int k = 0; k < ERROR_ROWS; k++) {
            const double ref = trial_ref[t][k];
            max_err = fmax(max_err, fabs((double)one_row(p, error_row(p->w, k), trial_x[t]) - ref));
            max_ref = fmax(max_ref, fabs(ref));
        }
        sum_err += max_err, sum_ref += max_ref;
    }
    return sum_err / sum_ref;
}

/* Prints the product's row of the table ("what" names it: its path, or ggml) and returns its
 * GB/s of W. versus: ggml's product of the same W and x (NULL: none), for the "x ggml" column;
 * it is timed call by call alternated with p's, and the column is the median of the calls'
 * time ratios, so that a shared machine's bandwidth drifting over seconds moves both alike. */
static double bench_row(const product *p, const char *what, const char *mode_name,
                        double target, const product *versus)
{
    const tm_tensor *w = p->w;
    const double ceiling = read_ceiling(w->data, w->n_bytes, p->n_threads);
    double t[CALLS + 1], pair_ratio[CALLS + 1];
    const clockid_t clock = p->n_threads == 1 ? one_thread_clock : CLOCK_MONOTONIC;
    for (int c = 0; c <= CALLS; c++) {
        double t_versus = 0;
        if (versus) {
            const double t0 = bench_seconds(clock);
            run_product(versus);
            t_versus = bench_seconds(clock) - t0;
        }
        const double t0 = bench_seconds(clock);
        run_product(p);
        t[c] = bench_seconds(clock) - t0;
        pair_ratio[c] = t_versus / t[c];
    }
    const double gbs = (double)w->n_bytes / bench_median(t + 1, CALLS, NULL);
    const double ratio = gbs / ceiling;
    char verdict[48] = "", versus_column[16] = "";
    if (target > 0)
        snprintf(verdict, sizeof verdict, "%.2f %s", target, ratio >= target ? "met" : "MISSED");
    if (versus)
        snprintf(versus_column, sizeof versus_column, "  %6.2f",
                 bench_median(pair_ratio + 1, CALLS, NULL));
    printf("%-6s %-10s %-4s %u  %7.2f  %7.2f  %5.2f  %-10s %9.2e%s\n", tm_type_name(w->type),
           what, mode_name, p->n_threads, gbs * 1e-9, ceiling * 1e-9, ratio, verdict,
           error_column(p), versus_column);
    fflush(stdout);
    return gbs;
}

#ifdef TM_BENCH_GGML
/* ggml's row for w (before tensormap's), and in *g its product (dot set up in *dot, to be
 * freed by the caller) for the "x ggml" column; false when ggml has no vec_dot for the type */
static bool ggml_row(const tm_tensor *w, const float *x, float *y, product *g,
                     ggml_side_dot *dot)
{
    if (!ggml_side_dot_init(dot, w->type, COLS)) {
        printf("%-6s ggml       has no one-row vec_dot for this type\n", tm_type_name(w->type));
        return false;
    }
    *g = (product){ w, x, y, 0, 1, dot };
    bench_row(g, "ggml", ggml_type_name(dot->x_type), 0, NULL);
    return true;
}
#endif

#ifdef TM_BENCH_GGML
#define GGML_NOTE "ggml: from_float of x + vec_dot row by row, one thread (bench/ggml_side.h); " \
                  "x ggml: ggml's time / ours, the two alternated call by call, median\n"
#define GGML_COLUMNS "  x ggml"
#else
#define GGML_NOTE ""
#define GGML_COLUMNS ""
#endif

static void header(void)
{
    double load[3];
    char date[32];
    bench_load_and_date(load, date);
    printf("tensormap matvec bench, %s\n", date);
    bench_print_cpu();
    ggml_side_print();
    printf("flags     %s\n"
           "load      %.2f %.2f %.2f at start, %ld online CPUs\n"
           "W: rows of %d, >= %zu MiB (streamed from DRAM); GB = 10^9 bytes of W; median of %d "
           "calls after 1 warm-up; one-thread rows timed by %s\n"
           "ceiling: plain read of the same bytes on the same number of threads, measured just "
           "before the row (median of %d)\n"
           "error: max|y - Wx| over %d rows, Wx in double from the decoded W, summed over %d "
           "gaussian x, / max|Wx| summed alike\n"
           GGML_NOTE "\ntype   path       mode thr   GB/s  ceiling  ratio  target        error" GGML_COLUMNS "\n",
           TM_BENCH_LIB_FLAGS, load[0], load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN), COLS,
           w_bytes_min >> 20, CALLS,
           one_thread_clock == CLOCK_MONOTONIC ? "the wall clock" : "the thread's CPU time",
           CEILING_CALLS, ERROR_ROWS, error_trials);
}

int main(int argc, char **argv)
{
    const char *only_type = NULL, *only_isa = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            w_bytes_min = (size_t)64 << 20;
        else if (strcmp(argv[i], "--cpu-time") == 0)
            one_thread_clock = CLOCK_THREAD_CPUTIME_ID;
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
            only_type = argv[++i];
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
            only_isa = argv[++i];
        else if (strcmp(argv[i], "--error-x") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            error_trials = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: matvec [--quick] [--cpu-time] [--type NAME] [--isa NAME] [--error-x N]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    const char *dir = getenv("TM_CORPUS");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", dir ? dir : "../shared/corpus");
    tm_error err;
    if (tm_open(path, 0, &corpus, &err) != TM_OK) {
        fprintf(stderr, "matvec bench: %s: %s (set TM_CORPUS to the corpus directory)\n", path,
                err.message);
        return 1;
    }
    header();
    float *x = malloc(COLS * sizeof *x);
    trial_x = malloc((size_t)error_trials * sizeof *trial_x);
    trial_ref = malloc((size_t)error_trials * sizeof *trial_ref);
    if (!x || !trial_x || !trial_ref)
        die("out of memory");
    for (int c = 0; c < COLS; c++)
        x[c] = (float)bench_gaussian();
    for (int t = 0; t < error_trials; t++)
        for (int c = 0; c < COLS; c++)
            trial_x[t][c] = (float)bench_gaussian();
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const tm_type type = types[ti].type;
        if (only_type && strcmp(only_type, tm_type_name(type)) != 0)
            continue;
        const size_t row_bytes = COLS / tm_type_block_elems(type) * tm_type_block_bytes(type);
        const size_t rows = (w_bytes_min + row_bytes - 1) / row_bytes;
        uint8_t *wb = aligned_alloc(64, rows * row_bytes);
        float *y = malloc(rows * sizeof *y);
        if (!wb || !y)
            die("out of memory");
        if (!bench_fill_w(corpus, type, wb, rows * row_bytes, COLS))
            die("the corpus has no rows of this type");
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
        if (!error_refs(&w))
            die("a row of W cannot be decoded");
        product ggml;
#ifdef TM_BENCH_GGML
        ggml_side_dot dot;
        const bool have_ggml = ggml_row(&w, x, y, &ggml, &dot);
#else
        const bool have_ggml = false;
#endif
        for (unsigned k = 0; tm_isa_built(k); k++) {
            const char *isa = tm_isa_built(k);
            if ((only_isa && strcmp(only_isa, isa) != 0) || !tm_isa_available(isa))
                continue;
            if (tm_set_isa(isa, &err) != TM_OK)
                die(err.message);
            for (unsigned mode = 0; mode < 2; mode++)
                for (unsigned thr = 1; thr <= 2; thr++) {
                    const product p = { .w = &w, .x = x, .y = y, .mode = mode, .n_threads = thr };
                    const double target = mode == TM_MATVEC_Q8
                        ? (thr == 2 && types[ti].q8 > 0 ? 0.9 : types[ti].q8)
                        : (thr == 2 ? 0 : types[ti].f32);
                    bench_row(&p, isa, mode == TM_MATVEC_Q8 ? "q8" : "f32", target,
                              thr == 1 && have_ggml ? &ggml : NULL);
                }
        }
#ifdef TM_BENCH_GGML
        ggml_side_dot_free(&dot);
#endif
        free(wb);
        free(y);
    }
    free(x);
    free(trial_x);
    free(trial_ref);
    tm_close(corpus);
    return 0;
}
