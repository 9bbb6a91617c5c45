/* bench/dequant — how fast each block type decodes, against this machine's own ceilings.
 *
 *   dequant [--quick] [--json] [--type NAME] [--isa NAME]
 *
 * For each type x each available instruction-set path x output sizes that live in L1, L2, the
 * last-level cache and DRAM: the time of one tm_dequant_raw call over the whole buffer, as the
 * minimum and median of repeated samples after a warm-up (each sample repeats the call until it
 * lasts long enough to time). Reported as GB/s of float32 output, GB/s of quantized input and
 * weights per second; 1 GB = 10^9 bytes. In the same run, on the same sizes, the ceilings:
 * single-thread store bandwidth (memset) and copy bandwidth (memcpy, read + write bytes), and
 * each kernel as a fraction of them (DRAM: input + output bytes against the copy ceiling).
 *
 * Inputs are realistic: random quantized bits with sane scales (halves around 0.01), floats
 * drawn around zero; never zeros. The output is touched before timing, and every path's output
 * is checksummed against the scalar path's, so a wrong kernel cannot post a time. Finally the
 * whole-tensor call on 1 thread and on all threads, at the DRAM size. */
#include "tensormap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const tm_type types[] = {
    TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16, TM_TYPE_Q8_0, TM_TYPE_Q5_0, TM_TYPE_Q4_K,
    TM_TYPE_Q6_K, TM_TYPE_Q4_0, TM_TYPE_Q4_1, TM_TYPE_Q5_1, TM_TYPE_Q2_K, TM_TYPE_Q3_K,
    TM_TYPE_Q5_K,
};
#define N_TYPES (sizeof types / sizeof types[0])
static const char *const isas[] = { "scalar", "avx2", "avx512", "neon" };
#define N_ISAS (sizeof isas / sizeof isas[0])

typedef struct size_class {
    const char *name;
    size_t weights;
} size_class;

/* Output sizes: 16 KiB (L1), 256 KiB (L2: the "about 64K weights"), 16 MiB (last level
 * cache), 256 MiB (DRAM). --quick keeps the first two and a 64 MiB "DRAM". */
static const size_class sizes_full[] = {
    { "L1", 4096 }, { "L2", 65536 }, { "LLC", 4u << 20 }, { "DRAM", 64u << 20 },
};
static const size_class sizes_quick[] = {
    { "L1", 4096 }, { "L2", 65536 }, { "DRAM", 16u << 20 },
};

static bool quick, json;
static double sample_seconds = 0.02;
static int n_samples = 7;

/* Wall-clock time by default. --cpu-time counts only the time this thread ran (single-thread
 * measurements): on a shared, oversubscribed machine it separates "the kernel is slow" from
 * "the kernel was descheduled"; caches and memory bandwidth are still shared. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x243f6a8885a308d3u;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A float in (-1, 1), roughly bell-shaped: what weights look like. */
static float weight(void)
{
    double a = (double)(next() >> 11) * 0x1p-53, b = (double)(next() >> 11) * 0x1p-53;
    return (float)(a + b - 1.0);
}

static uint16_t to_half(float f)
{
    /* round to nearest half for |f| < 2 (no overflow here): enough for realistic inputs */
    if (f == 0.0f)
        return 0;
    int e;
    double m = frexp(fabs((double)f), &e); /* f = m * 2^e, m in [0.5, 1) */
    uint16_t s = f < 0 ? 0x8000 : 0;
    if (e - 1 < -14) /* subnormal half */
        return (uint16_t)(s | (uint16_t)lround(fabs((double)f) * 0x1p24));
    uint32_t man = (uint32_t)lround((m * 2.0 - 1.0) * 1024.0);
    uint32_t ex = (uint32_t)(e - 1 + 15);
    if (man == 1024) {
        man = 0;
        ex++;
    }
    return (uint16_t)(s | ex << 10 | man);
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Where each type keeps its half-float scales inside a block (FORMATS.md). */
static void sane_scales(tm_type t, uint8_t *b)
{
    const uint16_t d = to_half(0.005f + 0.01f * fabsf(weight()));
    const uint16_t m = to_half(-0.05f * fabsf(weight()));
    switch (t) {
    case TM_TYPE_Q4_0: case TM_TYPE_Q5_0: case TM_TYPE_Q8_0: put16(b, d); break;
    case TM_TYPE_Q4_1: case TM_TYPE_Q5_1: put16(b, d); put16(b + 2, m); break;
    case TM_TYPE_Q4_K: case TM_TYPE_Q5_K: put16(b, d); put16(b + 2, (uint16_t)(m & 0x7fff)); break;
    case TM_TYPE_Q2_K: put16(b + 80, d); put16(b + 82, (uint16_t)(m & 0x7fff)); break;
    case TM_TYPE_Q3_K: put16(b + 108, d); break;
    case TM_TYPE_Q6_K: put16(b + 208, d); break;
    default: break;
    }
}

static void fill_input(tm_type t, uint8_t *in, size_t weights)
{
    const size_t be = tm_type_block_elems(t), bb = tm_type_block_bytes(t), nb = weights / be;
    if (t == TM_TYPE_F32 || t == TM_TYPE_F16 || t == TM_TYPE_BF16) {
        for (size_t i = 0; i < weights; i++) {
            float w = weight();
            uint32_t u;
            memcpy(&u, &w, 4);
            if (t == TM_TYPE_F32)
                memcpy(in + 4 * i, &w, 4);
            else
                put16(in + 2 * i, t == TM_TYPE_F16 ? to_half(w) : (uint16_t)(u >> 16));
        }
        return;
    }
    for (size_t i = 0; i < nb * bb; i += 8) {
        uint64_t r = next();
        memcpy(in + i, &r, nb * bb - i < 8 ? nb * bb - i : 8);
    }
    for (size_t k = 0; k < nb; k++)
        sane_scales(t, in + k * bb);
}

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

typedef struct timing {
    double min, median; /* seconds per call, over samples of many calls */
    double best;        /* the fastest single call timed alone: what the kernel does when
                         * nothing else on the machine gets in its way */
} timing;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Time fn(ctx): warm up, find a repeat count whose sample lasts sample_seconds, then take
 * n_samples samples; then time single calls for one more sample's length, keeping the best. */
typedef void (*bench_fn)(void *ctx);
static timing measure(bench_fn fn, void *ctx)
{
    fn(ctx); /* warm-up: caches, page tables, the ISA choice */
    size_t reps = 1;
    for (;;) {
        double t0 = now();
        for (size_t r = 0; r < reps; r++)
            fn(ctx);
        double dt = now() - t0;
        if (dt >= sample_seconds || reps >= (1u << 24))
            break;
        reps = dt <= 0 ? reps * 16 : (size_t)((double)reps * sample_seconds / dt * 1.2) + 1;
    }
    double s[16];
    for (int k = 0; k < n_samples; k++) {
        double t0 = now();
        for (size_t r = 0; r < reps; r++)
            fn(ctx);
        s[k] = (now() - t0) / (double)reps;
    }
    qsort(s, (size_t)n_samples, sizeof s[0], cmp_double);
    double best = s[0];
    for (size_t r = 0; r < reps; r++) {
        double t0 = now();
        fn(ctx);
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    return (timing){ s[0], s[n_samples / 2], best };
}

typedef struct decode_ctx {
    tm_type type;
    const uint8_t *in;
    float *out;
    size_t weights;
    unsigned threads; /* 0 = tm_dequant_raw; otherwise tm_dequant_tensor on threads - 1 */
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
        st = tm_dequant_tensor(&t, c->out, c->threads - 1, &err);
    } else {
        st = tm_dequant_raw(c->type, c->in, c->weights, c->out, &err);
    }
    if (st != TM_OK) {
        fprintf(stderr, "dequant: %s\n", err.message);
        exit(1);
    }
}

typedef struct copy_ctx {
    void *dst;
    const void *src;
    size_t n;
} copy_ctx;

static void run_memset(void *p)
{
    copy_ctx *c = p;
    memset(c->dst, 0x3f, c->n);
    __asm__ volatile("" ::"r"(c->dst) : "memory"); /* the stores are observable */
}

static void run_memcpy(void *p)
{
    copy_ctx *c = p;
    memcpy(c->dst, c->src, c->n);
    __asm__ volatile("" ::"r"(c->dst) : "memory");
}

/* Single-thread store (memset) and copy (memcpy, read + write bytes) bandwidth on n bytes. */
static void ceilings(void *dst, const void *src, size_t n, double *store_gbs, double *copy_gbs)
{
    copy_ctx c = { dst, src, n };
    const timing ts = measure(run_memset, &c), tc = measure(run_memcpy, &c);
    *store_gbs = (double)n / ts.median / 1e9;
    *copy_gbs = 2.0 * (double)n / tc.median / 1e9;
}

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, "model name", 10) == 0) {
            snprintf(buf, cap, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    }
    fclose(f);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: dequant [--quick] [--json] [--cpu-time] [--type NAME] [--isa NAME]\n"
                 "  Decode throughput of every block type on every instruction-set path, against\n"
                 "  the machine's store and copy bandwidth measured in the same run.\n"
                 "  --quick       fewer sizes and samples (seconds, not a minute)\n"
                 "  --json        one JSON document on stdout instead of the table\n"
                 "  --cpu-time    time single-thread runs by this thread's CPU time, not the wall\n"
                 "                clock (for a busy shared machine; threaded runs stay wall-clock)\n"
                 "  --type NAME   only this type (q4_K, f16, ...)\n"
                 "  --isa NAME    only this path (scalar, avx2, avx512, neon)\n");
}

int main(int argc, char **argv)
{
    const char *only_type = NULL, *only_isa = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--cpu-time") == 0)
            bench_clock = CLOCK_THREAD_CPUTIME_ID;
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
            only_type = argv[++i];
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
            only_isa = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (quick) {
        sample_seconds = 0.005;
        n_samples = 3;
    }
    const size_class *sizes = quick ? sizes_quick : sizes_full;
    const size_t n_sizes = quick ? sizeof sizes_quick / sizeof sizes_quick[0]
                                 : sizeof sizes_full / sizeof sizes_full[0];
    const size_t max_w = sizes[n_sizes - 1].weights;

    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    if (json)
        printf("{\"date\": \"%s\", \"cpu\": \"%s\", \"compiler\": \"%s\", \"library\": \"%s\",\n"
               " \"units\": \"GB = 1e9 bytes\", \"clock\": \"%s\", \"results\": [\n",
               date, cpu, __VERSION__, tm_version(),
               bench_clock == CLOCK_MONOTONIC ? "wall" : "thread-cpu");
    else
        printf("tensormap %s dequant bench, %s\nCPU: %s\ncompiler: gcc %s\n"
               "GB = 10^9 bytes; out = float32 output, in = quantized input; median (min) of %d "
               "samples; best = fastest single call; %s time\n",
               tm_version(), date, cpu, __VERSION__, n_samples,
               bench_clock == CLOCK_MONOTONIC ? "wall-clock" : "thread CPU");

    float *out = aligned_alloc(64, max_w * sizeof(float));
    uint8_t *in = aligned_alloc(64, max_w * sizeof(float) + 64);
    float *copy_src = aligned_alloc(64, max_w * sizeof(float));
    if (!out || !in || !copy_src) {
        fprintf(stderr, "dequant: out of memory\n");
        return 1;
    }
    memset(out, 0, max_w * sizeof(float)); /* touched: no page faults inside the timing */
    memset(copy_src, 1, max_w * sizeof(float));

    /* ceilings per size; measured again beside every type (below), because on a shared
     * machine the load changes over a run and a ratio is only fair against a ceiling measured
     * at the same moment */
    double store_gbs[8], copy_gbs[8];
    for (size_t s = 0; s < n_sizes; s++) {
        ceilings(out, copy_src, sizes[s].weights * sizeof(float), &store_gbs[s], &copy_gbs[s]);
        const size_t bytes = sizes[s].weights * sizeof(float);
        if (json)
            printf("  {\"kind\": \"ceiling\", \"size\": \"%s\", \"bytes\": %zu, "
                   "\"store_gbs\": %.2f, \"copy_gbs\": %.2f},\n",
                   sizes[s].name, bytes, store_gbs[s], copy_gbs[s]);
        else
            printf("ceiling %-4s %9zu bytes: store (memset) %7.1f GB/s, copy (memcpy, read+write) "
                   "%7.1f GB/s\n",
                   sizes[s].name, bytes, store_gbs[s], copy_gbs[s]);
    }
    if (!json)
        printf("\n%-6s %-7s %-5s %10s %16s %7s %10s %10s %8s %8s\n", "type", "isa", "size",
               "Mw/s", "out GB/s (min)", "best", "in GB/s", "in+out", "/store", "/copy");

    int failures = 0;
    bool first_json = true;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const tm_type type = types[ti];
        if (only_type && strcmp(only_type, tm_type_name(type)) != 0)
            continue;
        const size_t bb = tm_type_block_bytes(type), be = tm_type_block_elems(type);
        for (size_t s = 0; s < n_sizes; s++) {
            const size_t w = sizes[s].weights, in_bytes = w / be * bb;
            fill_input(type, in, w);
            ceilings(out, copy_src, w * sizeof(float), &store_gbs[s], &copy_gbs[s]);
            uint64_t ref = 0;
            for (size_t ii = 0; ii < N_ISAS; ii++) {
                tm_error err;
                if (!tm_isa_available(isas[ii]) || tm_set_isa(isas[ii], &err) != TM_OK)
                    continue;
                decode_ctx c = { type, in, out, w, 0 };
                if (ii == 0) { /* scalar first: the reference checksum */
                    run_decode(&c);
                    ref = checksum(out, w);
                }
                if (only_isa && strcmp(only_isa, isas[ii]) != 0)
                    continue;
                memset(out, 0xff, w * sizeof(float));
                timing tm = measure(run_decode, &c);
                const bool ok = checksum(out, w) == ref;
                failures += !ok;
                const double out_gbs = (double)w * 4 / tm.median / 1e9;
                const double out_min = (double)w * 4 / tm.min / 1e9;
                const double out_best = (double)w * 4 / tm.best / 1e9;
                const double in_gbs = (double)in_bytes / tm.median / 1e9;
                const double moved = out_gbs + in_gbs;
                if (json)
                    printf("%s  {\"kind\": \"dequant\", \"type\": \"%s\", \"isa\": \"%s\", "
                           "\"size\": \"%s\", \"weights\": %zu, \"median_s\": %.9f, "
                           "\"min_s\": %.9f, \"best_call_s\": %.9f, \"out_gbs\": %.2f, \"in_gbs\": %.2f, "
                           "\"weights_per_s\": %.4g, \"of_store\": %.3f, \"of_copy\": %.3f, "
                           "\"checksum_ok\": %s}",
                           first_json ? "" : ",\n", tm_type_name(type), isas[ii],
                           sizes[s].name, w, tm.median, tm.min, tm.best, out_gbs, in_gbs,
                           (double)w / tm.median, out_gbs / store_gbs[s], moved / copy_gbs[s],
                           ok ? "true" : "false");
                else
                    printf("%-6s %-7s %-5s %10.0f %7.1f (%6.1f) %7.1f %10.1f %10.1f %7.2fx %7.2fx%s\n",
                           tm_type_name(type), isas[ii], sizes[s].name,
                           (double)w / tm.median / 1e6, out_gbs, out_min, out_best, in_gbs, moved,
                           out_gbs / store_gbs[s], moved / copy_gbs[s],
                           ok ? "" : "  WRONG OUTPUT (checksum differs from scalar)");
                first_json = false;
                fflush(stdout);
            }
        }
    }

    /* whole-tensor decode on 1 and on all threads, best path, at the sizes of 1M weights and
     * more (smaller ones get one thread: at least 256 KiB of output per thread) */
    tm_set_isa(isas[0], NULL);
    for (size_t ii = N_ISAS; ii-- > 0;)
        if (tm_isa_available(isas[ii]) && tm_set_isa(isas[ii], NULL) == TM_OK)
            break;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const tm_type mt_types[] = { TM_TYPE_Q4_K, TM_TYPE_Q8_0, TM_TYPE_F16 };
    bench_clock = CLOCK_MONOTONIC; /* threads: only the wall clock means anything */
    if (!json)
        printf("\nwhole tensor (tm_dequant_tensor, wall-clock), %s\n", tm_isa());
    for (size_t s = 0; s < n_sizes; s++) {
        const size_t w = sizes[s].weights;
        if (w < (1u << 20))
            continue;
        for (size_t k = 0; k < sizeof mt_types / sizeof mt_types[0]; k++) {
            if (only_type && strcmp(only_type, tm_type_name(mt_types[k])) != 0)
                continue;
            fill_input(mt_types[k], in, w);
            ceilings(out, copy_src, w * sizeof(float), &store_gbs[s], &copy_gbs[s]);
            const size_t in_bytes = w / tm_type_block_elems(mt_types[k]) *
                                    tm_type_block_bytes(mt_types[k]);
            for (unsigned th = 1; th <= 2; th++) {
                const unsigned n = th == 1 ? 1u : (unsigned)cpus;
                decode_ctx c = { mt_types[k], in, out, w, n + 1 };
                timing tm = measure(run_decode, &c);
                const double out_gbs = (double)w * 4 / tm.median / 1e9;
                const double moved = out_gbs + (double)in_bytes / tm.median / 1e9;
                if (json)
                    printf("%s  {\"kind\": \"tensor\", \"type\": \"%s\", \"isa\": \"%s\", "
                           "\"size\": \"%s\", \"threads\": %u, \"weights\": %zu, "
                           "\"median_s\": %.9f, \"out_gbs\": %.2f, \"of_copy\": %.3f}",
                           first_json ? "" : ",\n", tm_type_name(mt_types[k]), tm_isa(),
                           sizes[s].name, n, w, tm.median, out_gbs, moved / copy_gbs[s]);
                else
                    printf("%-6s %-5s %u thread%s  %7.1f GB/s out, in+out %6.1f GB/s = %5.2fx copy\n",
                           tm_type_name(mt_types[k]), sizes[s].name, n, n == 1 ? " " : "s",
                           out_gbs, moved, moved / copy_gbs[s]);
                first_json = false;
                if (cpus <= 1)
                    break;
            }
        }
    }
    if (json)
        printf("\n], \"failures\": %d}\n", failures);
    else if (failures)
        printf("\n%d kernel(s) produced output that differs from scalar\n", failures);
    free(out);
    free(in);
    free(copy_src);
    return failures ? 1 : 0;
}
