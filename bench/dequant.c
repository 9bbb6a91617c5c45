/* bench/dequant — how fast each block type decodes on each instruction-set path, every row
 * beside a ceiling measured in the same run, right before it.
 *
 *   dequant [--quick] [--cpu-time] [--type NAME] [--isa NAME] [--size L2|DRAM]
 *
 * The rules it follows (issue 11: a benchmark that cannot flatter):
 * - Inputs are realistic. Quantized types: the golden corpus' TYPE.rows.weight tensors (rows of
 *   gaussian-like weights at several scales, quantized by ggml itself), tiled to the size needed.
 *   f32, f16, bf16: gaussian rows of 4096 values, each row with its own scale drawn
 *   log-uniformly from 1e-3 to 1, rounded to nearest-even; at scale 1e-3 about 5% of the halves
 *   of a row are f16 subnormals, as in real weights.
 * - L2 rows: 65,536 weights (256 KiB of float32 output) per call; ceiling: memcpy of the same
 *   256 KiB (bytes copied per second), measured just before the row. Ratio = output bytes per
 *   second / memcpy bytes per second.
 * - DRAM rows: at least 256 MiB of INPUT per call (so gigabytes of output for the 2-bit types).
 *   Ceiling: the same-policy copy (ordinary stores, as the kernels do) of 256 MiB, bytes read +
 *   written per second; ratio = (input + output bytes) per second / that. Beside it the
 *   "shape" ceiling: a loop that reads this row's input and writes its output with no decoding
 *   (same bytes, same stores), the fastest any decoder could be; "shape-NT", the same loop with
 *   non-temporal stores (what a decoder with such stores could reach).
 * - The headline is the median of single timed calls after warm-up calls; the best call is
 *   printed beside it and is never the figure a target is judged by.
 * - Multi-thread rows (tm_dequant_tensor on every CPU) are divided by a copy ceiling measured on
 *   the same number of threads.
 * - Every path's output is checksummed against the scalar path's: a wrong kernel cannot post a
 *   time.
 * The CPU model, compiler, the library's flags and the load average are printed first. */
#include "bench.h"
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

/* Types are ggml's ids below this bound that the library decodes and that have realistic input
 * (see fill_input); paths are every one built in (tm_isa_built). No list of either to keep. */
#define MAX_GGML_ID 64u

enum { L2_WEIGHTS = 65536, ROW = 4096 };
static size_t dram_input_bytes = (size_t)256 << 20;
static int l2_calls = 301, l2_warmup = 30, dram_calls = 7;

static clockid_t bench_clock = CLOCK_MONOTONIC;

static void die(const char *what)
{
    fprintf(stderr, "dequant: %s\n", what);
    exit(1);
}

static void *alloc_or_die(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p)
        die("out of memory");
    return p;
}

/* ---- inputs -------------------------------------------------------------------------------- */

/* Gaussian rows of ROW values, each row scaled by 10^U(-3, 0). */
static void fill_float_rows(tm_type t, uint8_t *in, size_t weights)
{
    float scale = 1.0f;
    for (size_t i = 0; i < weights; i++) {
        if (i % ROW == 0)
            scale = (float)pow(10.0, -3.0 * bench_uniform());
        const float w = (float)bench_gaussian() * scale;
        if (t == TM_TYPE_F32) {
            memcpy(in + 4 * i, &w, 4);
        } else {
            uint16_t h; /* rounded to nearest even */
            (t == TM_TYPE_F16 ? tm_f32_to_f16 : tm_f32_to_bf16)(&w, &h, 1);
            memcpy(in + 2 * i, &h, 2);
        }
    }
}

/* The corpus' realistic rows of each quantized type, read once. */
static tm_file *corpus;

static void open_corpus(void)
{
    const char *dir = getenv("TM_CORPUS");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", dir ? dir : "../shared/corpus");
    tm_error err;
    if (tm_open(path, 0, &corpus, &err) != TM_OK) {
        fprintf(stderr, "dequant: %s: %s\n(the quantized inputs are the golden corpus' rows; set "
                        "TM_CORPUS to the corpus directory)\n", path, err.message);
        exit(1);
    }
}

static bool is_float(tm_type t) { return t == TM_TYPE_F32 || t == TM_TYPE_F16 || t == TM_TYPE_BF16; }

static const tm_tensor *corpus_rows(tm_type t)
{
    char name[64];
    snprintf(name, sizeof name, "%s.rows.weight", tm_type_name(t));
    const tm_tensor *src = tm_tensor_find(corpus, name);
    return src && src->type == t ? src : NULL;
}

/* A type is measured when the library decodes it and there is realistic input for it: the
 * float types, and every quantized type the corpus has rows of (all that ggml decodes; the
 * integer storage types have none). */
static bool measured(tm_type t)
{
    return tm_type_name(t) && tm_type_can_dequant(t) && (is_float(t) || corpus_rows(t));
}

static void fill_input(tm_type t, uint8_t *in, size_t weights)
{
    if (is_float(t)) {
        fill_float_rows(t, in, weights);
        return;
    }
    const tm_tensor *src = corpus_rows(t);
    if (!src)
        die("the corpus has no rows of this type");
    const size_t n = weights / tm_type_block_elems(t) * tm_type_block_bytes(t);
    for (size_t off = 0; off < n; off += src->n_bytes)
        memcpy(in + off, src->data, n - off < src->n_bytes ? n - off : src->n_bytes);
}

/* ---- timing -------------------------------------------------------------------------------- */

typedef struct timing {
    double median, best; /* seconds per call */
} timing;

typedef void (*bench_fn)(void *ctx);

/* warmup untimed calls, then calls timed one by one: the median and the fastest. */
static timing measure(bench_fn fn, void *ctx, int warmup, int calls)
{
    for (int i = 0; i < warmup; i++)
        fn(ctx);
    double *s = alloc_or_die((size_t)calls * sizeof *s);
    for (int i = 0; i < calls; i++) {
        const double t0 = bench_seconds(bench_clock);
        fn(ctx);
        s[i] = bench_seconds(bench_clock) - t0;
    }
    timing t;
    t.median = bench_median(s, calls, &t.best);
    free(s);
    return t;
}

typedef struct decode_ctx {
    tm_type type;
    const uint8_t *in;
    float *out;
    size_t weights;
    unsigned threads; /* 0: tm_dequant_raw on this thread; else tm_dequant_tensor on these */
} decode_ctx;

static void run_decode(void *p)
{
    decode_ctx *c = p;
    tm_error err;
    tm_status st;
    if (c->threads) {
        tm_tensor t;
        memset(&t, 0, sizeof t);
        t.name.ptr = "bench";
        t.name.len = 5;
        t.type = c->type;
        t.n_dims = 1;
        t.ne[0] = c->weights;
        t.ne[1] = t.ne[2] = t.ne[3] = 1;
        t.n_elements = c->weights;
        t.data = c->in;
        st = tm_dequant_tensor(&t, c->out, c->threads, &err);
    } else {
        st = tm_dequant_raw(c->type, c->in, c->weights, c->out, &err);
    }
    if (st != TM_OK)
        die(err.message);
}

/* ---- ceilings ------------------------------------------------------------------------------ */

/* The stores of a copy must happen: the compiler cannot see who reads dst. */
static void clobber(void *p) { __asm__ volatile("" ::"r"(p) : "memory"); }

typedef struct copy_ctx {
    uint8_t *dst;
    const uint8_t *src;
    size_t in_bytes, out_bytes; /* equal for a copy; out > in for a decoder's shape */
    size_t in_block, out_block; /* shape: bytes read, bytes written per block */
    bool nontemporal;
} copy_ctx;

static void run_memcpy(void *p)
{
    copy_ctx *c = p;
    memcpy(c->dst, c->src, c->out_bytes);
    clobber(c->dst);
}

/* A copy with a chosen store policy (glibc's memcpy switches to non-temporal stores above a
 * size of its own choosing, so it is not the same policy as a decoder's ordinary stores).
 * Blocks of in_block bytes are read; each becomes out_block bytes of stores (the block's
 * vectors repeated): with in_block == out_block it is a copy, otherwise it moves exactly the
 * bytes of a decoder of that block shape, with no decoding. 32-byte AVX stores as the AVX2
 * kernels make, four per step; out_block must be a multiple of 128 and in_bytes of in_block. */
#if defined(__x86_64__)
#include <immintrin.h>
#define SHAPE_TARGET __attribute__((target("avx2")))
SHAPE_TARGET static __m256i load_block(const uint8_t *s, size_t n)
{
    __m256i v = _mm256_setzero_si256();
    size_t k = 0;
    for (; k + 32 <= n; k += 32)
        v = _mm256_or_si256(v, _mm256_loadu_si256((const __m256i *)(const void *)(s + k)));
    if (k < n) /* the block's last bytes, so every input byte is read */
        v = _mm256_or_si256(v, _mm256_castsi128_si256(
                                   _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16))));
    return v;
}

#define SHAPE_COPY(name, store)                                                               \
    SHAPE_TARGET static void name(const uint8_t *s, uint8_t *d, const copy_ctx *c)            \
    {                                                                                         \
        if (c->in_block == c->out_block) {                                                    \
            for (size_t k = 0; k < c->in_bytes; k += 128)                                     \
                for (size_t j = 0; j < 128; j += 32)                                          \
                    store((__m256i *)(void *)(d + k + j),                                     \
                          _mm256_loadu_si256((const __m256i *)(const void *)(s + k + j)));    \
            return;                                                                           \
        }                                                                                     \
        for (size_t done = 0; done < c->in_bytes; done += c->in_block, s += c->in_block) {    \
            const __m256i v = load_block(s, c->in_block);                                     \
            for (size_t k = 0; k < c->out_block; k += 128, d += 128) {                        \
                store((__m256i *)(void *)d, v);                                               \
                store((__m256i *)(void *)(d + 32), v);                                        \
                store((__m256i *)(void *)(d + 64), v);                                        \
                store((__m256i *)(void *)(d + 96), v);                                        \
            }                                                                                 \
        }                                                                                     \
    }
SHAPE_COPY(shape_copy_stores, _mm256_storeu_si256)
SHAPE_COPY(shape_copy_stream, _mm256_stream_si256) /* needs 32-byte aligned d */
#undef SHAPE_COPY
#endif

static void run_shape_copy(void *p)
{
    copy_ctx *c = p;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        if (c->nontemporal)
            shape_copy_stream(c->src, c->dst, c);
        else
            shape_copy_stores(c->src, c->dst, c);
        _mm_sfence();
        clobber(c->dst);
        return;
    }
#endif
    const uint8_t *s = c->src;
    uint8_t *d = c->dst;
    for (size_t done = 0; done < c->in_bytes; done += c->in_block, s += c->in_block)
        for (size_t k = 0; k < c->out_block; k += c->in_block, d += c->in_block)
            memcpy(d, s, c->out_block - k < c->in_block ? c->out_block - k : c->in_block);
    clobber(c->dst);
}

/* Bytes per second of a plain copy of n bytes (memcpy; in L2) or of a same-policy copy of n
 * bytes counted read + write (DRAM). */
static double memcpy_gbs(uint8_t *dst, const uint8_t *src, size_t n, int warmup, int calls)
{
    copy_ctx c = { dst, src, n, n, 0, 0, false };
    return (double)n / measure(run_memcpy, &c, warmup, calls).median / 1e9;
}

static double policy_copy_gbs(uint8_t *dst, const uint8_t *src, size_t n, bool nt, int calls)
{
    copy_ctx c = { dst, src, n, n, 128, 128, nt };
    return 2.0 * (double)n / measure(run_shape_copy, &c, 1, calls).median / 1e9;
}

/* A decoder's bytes with no decoding, ordinary and non-temporal stores, (in+out) GB/s. */
static void shape_ceilings(const uint8_t *in, size_t in_bytes, float *out, size_t out_bytes,
                           size_t in_block, size_t out_block, double *ordinary, double *nt)
{
    copy_ctx c = { (uint8_t *)out, in, in_bytes, out_bytes, in_block, out_block, false };
    *ordinary = (double)(in_bytes + out_bytes) / measure(run_shape_copy, &c, 1, dram_calls).median / 1e9;
    c.nontemporal = true;
    *nt = (double)(in_bytes + out_bytes) / measure(run_shape_copy, &c, 1, dram_calls).median / 1e9;
}

/* The threaded copy ceiling: threads copy equal parts of the buffer at the same time. */
typedef struct part {
    copy_ctx c;
    pthread_barrier_t *start;
} part;

static void *copy_part(void *p)
{
    part *pt = p;
    pthread_barrier_wait(pt->start);
    run_shape_copy(&pt->c);
    return NULL;
}

typedef struct mt_copy {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
    unsigned threads;
} mt_copy;

static void run_mt_copy(void *p)
{
    mt_copy *m = p;
    pthread_t tid[64];
    part parts[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, m->threads);
    const size_t share = m->n / m->threads / 128 * 128;
    for (unsigned i = 0; i < m->threads; i++) {
        parts[i].c = (copy_ctx){ m->dst + i * share, m->src + i * share, share, share, 128, 128, false };
        parts[i].start = &start;
        if (i && pthread_create(&tid[i], NULL, copy_part, &parts[i]) != 0)
            die("cannot start a thread");
    }
    copy_part(&parts[0]);
    for (unsigned i = 1; i < m->threads; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
}

/* ---- reporting ----------------------------------------------------------------------------- */

static uint64_t checksum(const float *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n * sizeof(float); i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3u;
    }
    return h;
}

static void header(void)
{
    char cpu[128] = "unknown", line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, "model name", 10) == 0) {
            snprintf(cpu, sizeof cpu, "%s", colon + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    }
    if (f)
        fclose(f);
    double load[3];
    char date[32];
    bench_load_and_date(load, date);
    printf("tensormap %s dequant bench, %s\n"
           "CPU: %s, %ld online CPUs; load average %.2f %.2f %.2f at start\n"
           "compiler: gcc %s; library: %s\n"
           "GB = 10^9 bytes; %s clock; median of %d calls after %d warm-up calls (L2), "
           "median of %d calls after 1 (DRAM); best = fastest call, never a target\n"
           "L2: %d weights = 256 KiB of f32 output per call; ratio = output GB/s / same-run "
           "memcpy of 256 KiB\n"
           "DRAM: %zu MiB of input per call; ratio = (in+out) GB/s / same-run copy with "
           "ordinary stores (read+write); shape = same bytes, no decoding;\n"
           "      shape-NT = the same with non-temporal stores (what NT stores could give)\n",
           tm_version(), date, cpu, sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2],
           __VERSION__, TM_BENCH_LIB_FLAGS,
           bench_clock == CLOCK_MONOTONIC ? "wall" : "thread-CPU-time", l2_calls, l2_warmup,
           dram_calls, L2_WEIGHTS, dram_input_bytes >> 20);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: dequant [--quick] [--cpu-time] [--type NAME] [--isa NAME] [--size L2|DRAM]\n"
                 "  Decode speed of every block type on every instruction-set path, each row\n"
                 "  beside a ceiling measured in the same run (see the top of bench/dequant.c).\n"
                 "  --quick       64 MiB of input in the DRAM rows (not the rule's 256), fewer calls\n"
                 "  --cpu-time    time single-thread calls by this thread's CPU time (a busy shared\n"
                 "                machine); threaded rows stay wall-clock\n"
                 "  --type NAME   only this type (q4_K, f16, ...)\n"
                 "  --isa NAME    only this path (scalar, avx2, avx512, neon)\n"
                 "  --size L2|DRAM  only these rows (the threaded rows are DRAM rows)\n");
}

int main(int argc, char **argv)
{
    const char *only_type = NULL, *only_isa = NULL, *only_size = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            dram_input_bytes = (size_t)64 << 20;
            l2_calls = 101;
            dram_calls = 3;
        } else if (strcmp(argv[i], "--cpu-time") == 0) {
            bench_clock = CLOCK_THREAD_CPUTIME_ID;
        } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            only_type = argv[++i];
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            only_isa = argv[++i];
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            only_size = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    open_corpus();
    header();

    /* the DRAM copy ceilings of both store policies and glibc's memcpy, once, for the record */
    const size_t copy_n = (size_t)256 << 20;
    uint8_t *copy_src = alloc_or_die(copy_n), *copy_dst = alloc_or_die(copy_n);
    memset(copy_src, 1, copy_n);
    memset(copy_dst, 0, copy_n);
    printf("DRAM copy of %zu MiB, read+write GB/s: ordinary stores %.1f, non-temporal stores "
           "%.1f, glibc memcpy %.1f\n",
           copy_n >> 20, policy_copy_gbs(copy_dst, copy_src, copy_n, false, dram_calls),
           policy_copy_gbs(copy_dst, copy_src, copy_n, true, dram_calls),
           2.0 * memcpy_gbs(copy_dst, copy_src, copy_n, 1, dram_calls));

    printf("\n%-6s %-7s %-5s %11s %9s %9s %9s %7s %9s %7s %9s\n", "type", "isa", "size", "weights",
           "GB/s", "best", "ceiling", "ratio", "shape", "ratio", "shape-NT");
    int failures = 0;
    for (unsigned id = 0; id < MAX_GGML_ID; id++) {
        const tm_type type = (tm_type)id;
        if (!measured(type) || (only_type && strcmp(only_type, tm_type_name(type)) != 0))
            continue;
        const size_t bb = tm_type_block_bytes(type), be = tm_type_block_elems(type);
        for (int dram = 0; dram < 2; dram++) {
            if (only_size && strcmp(only_size, dram ? "DRAM" : "L2") != 0)
                continue;
            const size_t w = dram ? (dram_input_bytes + bb - 1) / bb * be : L2_WEIGHTS;
            const size_t in_bytes = w / be * bb, out_bytes = w * sizeof(float);
            uint8_t *in = alloc_or_die(in_bytes);
            float *out = alloc_or_die(out_bytes);
            fill_input(type, in, w);
            memset(out, 0, out_bytes); /* touched: no page faults inside the timing */
            decode_ctx dc = { type, in, out, w, 0 };
            tm_set_isa("scalar", NULL);
            run_decode(&dc);
            const uint64_t ref = checksum(out, w);
            double shape = 0, shape_nt = 0;
            for (unsigned ii = 0; tm_isa_built(ii); ii++) {
                const char *isa = tm_isa_built(ii);
                if (!tm_isa_available(isa) || (only_isa && strcmp(only_isa, isa) != 0))
                    continue;
                tm_error err;
                if (tm_set_isa(isa, &err) != TM_OK)
                    die(err.message);
                double ceiling;
                if (dram) {
                    ceiling = policy_copy_gbs(copy_dst, copy_src, copy_n, false, dram_calls);
                    if (shape == 0) { /* once per type: it does not depend on the path */
                        /* whole blocks of at least 128 bytes of output (f32, f16, bf16: 32) */
                        const size_t k = be * 4 >= 128 ? 1 : 128 / (be * 4);
                        shape_ceilings(in, in_bytes, out, out_bytes, k * bb, k * be * 4, &shape, &shape_nt);
                    }
                } else {
                    ceiling = memcpy_gbs(copy_dst, copy_src, out_bytes, l2_warmup, l2_calls);
                }
                memset(out, 0xff, out_bytes);
                const timing tm = measure(run_decode, &dc, dram ? 1 : l2_warmup,
                                          dram ? dram_calls : l2_calls);
                const bool ok = checksum(out, w) == ref;
                failures += !ok;
                const double bytes = (double)(dram ? in_bytes + out_bytes : out_bytes);
                const double gbs = bytes / tm.median / 1e9, best = bytes / tm.best / 1e9;
                printf("%-6s %-7s %-5s %11zu %9.1f %9.1f %9.1f %7.2f", tm_type_name(type),
                       isa, dram ? "DRAM" : "L2", w, gbs, best, ceiling, gbs / ceiling);
                if (dram)
                    printf(" %9.1f %7.2f %9.1f", shape, gbs / shape, shape_nt);
                printf("%s\n", ok ? "" : "  WRONG OUTPUT (checksum differs from scalar)");
                fflush(stdout);
            }
            free(in);
            free(out);
        }
    }

    /* whole tensors on every CPU, against a copy on as many threads */
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const unsigned nt = cpus < 1 ? 1u : cpus > 64 ? 64u : (unsigned)cpus;
    for (unsigned ii = 0; tm_isa_built(ii); ii++) /* --isa's path, or the last that runs: the best */
        if ((!only_isa || strcmp(only_isa, tm_isa_built(ii)) == 0) && tm_isa_available(tm_isa_built(ii)))
            tm_set_isa(tm_isa_built(ii), NULL);
    bench_clock = CLOCK_MONOTONIC;
    printf("\nwhole tensor, tm_dequant_tensor on %u threads, %s path, wall clock, DRAM; "
           "ratio = (in+out) GB/s / copy on %u threads\n", nt, tm_isa(), nt);
    mt_copy mc = { copy_dst, copy_src, copy_n, nt };
    const tm_type mt_types[] = { TM_TYPE_Q4_K, TM_TYPE_Q8_0, TM_TYPE_F16 };
    for (size_t k = 0; k < sizeof mt_types / sizeof mt_types[0]; k++) {
        const tm_type type = mt_types[k];
        if ((only_type && strcmp(only_type, tm_type_name(type)) != 0) ||
            (only_size && strcmp(only_size, "DRAM") != 0))
            continue;
        const size_t bb = tm_type_block_bytes(type), be = tm_type_block_elems(type);
        const size_t w = (dram_input_bytes + bb - 1) / bb * be, in_bytes = w / be * bb;
        uint8_t *in = alloc_or_die(in_bytes);
        float *out = alloc_or_die(w * sizeof(float));
        fill_input(type, in, w);
        memset(out, 0, w * sizeof(float));
        const double ceiling = 2.0 * (double)copy_n / measure(run_mt_copy, &mc, 1, dram_calls).median / 1e9;
        decode_ctx dc = { type, in, out, w, nt };
        const timing tm = measure(run_decode, &dc, 1, dram_calls);
        const double gbs = (double)(in_bytes + w * sizeof(float)) / tm.median / 1e9;
        printf("%-6s %-7s %-5s %11zu %9.1f %9.1f %9.1f %7.2f\n", tm_type_name(type), tm_isa(),
               "DRAM", w, gbs, (double)(in_bytes + w * sizeof(float)) / tm.best / 1e9, ceiling,
               gbs / ceiling);
        free(in);
        free(out);
    }
    if (failures)
        printf("\n%d kernel(s) produced output that differs from scalar\n", failures);
    free(copy_src);
    free(copy_dst);
    tm_close(corpus);
    return failures ? 1 : 0;
}
