/* tensormap stats: decode tensors in bounded chunks and summarise them: the first values,
 * min, max, mean, standard deviation (accumulated in double), NaN and infinity counts, and a
 * histogram a person can read in a terminal. Integer, bool and f64 tensors are read in their
 * own type (tools/cli/dtype.h): their extremes and first values are the file's, exactly. */
#include "../cli/cli.h"
#include "../cli/dtype.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap stats [--json] FILE [TENSOR ...]\n"
    "\n"
    "Decode tensors to float32 (in chunks: memory stays bounded) and summarise each: the\n"
    "number of values, the first 8, min, max, mean and standard deviation (population, over the\n"
    "finite values, accumulated in double), how many are NaN or infinite, and a histogram of\n"
    "the finite values from min to max in 24 bins drawn with block characters. Integer, bool\n"
    "and f64 tensors are read as themselves, not through float32: their first values, min and\n"
    "max are exactly the file's (an i64 2^53 + 1 stays 9007199254740993, an f64 1e300 stays\n"
    "1e+300). With no TENSOR, every tensor on one line each (the first values left to --json);\n"
    "a tensor whose type has no decoder says so on its line. A named TENSOR that cannot be\n"
    "decoded (cut off, no decoder) is an error on standard error, and the exit status is 1.\n"
    "`floats` is another name for this command.\n"
    "\n"
    "  --json    the same as a JSON array (histogram bins as counts)\n";

enum { FIRST_SHOWN = 8, BINS = 24 };

/* Values of a tensor read in its own type, a chunk at a time (bytes fetched into a buffer of
 * this many values' worth for a remote file). */
#define OWN_CHUNK ((uint64_t)1 << 20)

typedef struct summary {
    const cli_dtype *dt;               /* the values' type: float32 decoded, or the file's own */
    uint64_t count, finite, nan, inf;
    uint8_t first[FIRST_SHOWN][8];     /* the first values' bytes, in dt */
    uint8_t min_at[8], max_at[8];      /* the extremes' bytes, in dt (printed from these) */
    long double min, max;              /* the extremes as numbers (exact for every dt) */
    /* Sums as each pass keeps them: in double for decoded floats, in long double for the
     * file's own values (an f64 near 1e300 squared overflows a double; a long double's range
     * holds it). */
    long double sum, mean, m2;
    uint64_t hist[BINS];
} summary;

/* A chunk's extremes into the summary; the first of equal values stays. */
static void take_extremes(summary *s, long double lo, const uint8_t *lo_at, long double hi,
                          const uint8_t *hi_at, uint64_t finite)
{
    if (!finite)
        return;
    if (s->finite == 0 || lo < s->min) {
        s->min = lo;
        memcpy(s->min_at, lo_at, s->dt->size);
    }
    if (s->finite == 0 || hi > s->max) {
        s->max = hi;
        memcpy(s->max_at, hi_at, s->dt->size);
    }
    s->finite += finite;
}

/* Value i of a chunk: a float32 the decoder wrote into the buffer, or one read from the file's
 * bytes in its own type. */
static inline float f32_at(const summary *s, const uint8_t *bytes, size_t i)
{
    (void)s;
    float v;
    memcpy(&v, bytes + 4 * i, 4);
    return v;
}

static inline long double own_at(const summary *s, const uint8_t *bytes, size_t i)
{
    return cli_dtype_value(s->dt, bytes + (size_t)s->dt->size * i);
}

/* The two passes over a chunk of n values whose bytes (in dt) start at bytes, value i being
 * AT(s, bytes, i) of type T, summed in type ACC: float and double for the decoder's values (so
 * that the loops stay in hardware floating point), long double for the file's own. Pass one:
 * the first values, the counts, the extremes and the sum; pass two: squared deviations from
 * the mean (no cancellation) and the histogram. */
#define SUMMARY_PASSES(T, ACC, AT)                                                              \
    static void pass_one_##AT(summary *s, const uint8_t *bytes, size_t n)                      \
    {                                                                                           \
        const size_t size = s->dt->size;                                                        \
        T lo = 0, hi = 0;                                                                       \
        size_t lo_i = 0, hi_i = 0;                                                              \
        uint64_t finite = 0;                                                                    \
        ACC sum = (ACC)s->sum;                                                                  \
        for (size_t i = 0; i < n; i++, s->count++) {                                            \
            const T v = AT(s, bytes, i);                                                        \
            if (s->count < FIRST_SHOWN)                                                         \
                memcpy(s->first[s->count], bytes + i * size, size);                             \
            if (isnan(v)) {                                                                     \
                s->nan++;                                                                       \
            } else if (isinf(v)) {                                                              \
                s->inf++;                                                                       \
            } else {                                                                            \
                if (finite == 0 || v < lo)                                                      \
                    lo = v, lo_i = i;                                                           \
                if (finite == 0 || v > hi)                                                      \
                    hi = v, hi_i = i;                                                           \
                sum += (ACC)v;                                                                  \
                finite++;                                                                       \
            }                                                                                   \
        }                                                                                       \
        s->sum = sum;                                                                           \
        take_extremes(s, lo, bytes + lo_i * size, hi, bytes + hi_i * size, finite);             \
    }                                                                                           \
    static void pass_two_##AT(summary *s, const uint8_t *bytes, size_t n)                      \
    {                                                                                           \
        const ACC lo = (ACC)s->min, width = ((ACC)s->max - lo) / BINS, mean = (ACC)s->mean;     \
        ACC m2 = (ACC)s->m2;                                                                    \
        for (size_t i = 0; i < n; i++) {                                                        \
            const T v = AT(s, bytes, i);                                                        \
            if (!isfinite(v))                                                                   \
                continue;                                                                       \
            const ACC x = (ACC)v, d = x - mean;                                                 \
            m2 += d * d;                                                                        \
            size_t bin = width > 0 ? (size_t)((x - lo) / width) : 0;                            \
            s->hist[bin < BINS ? bin : BINS - 1]++;                                             \
        }                                                                                       \
        s->m2 = m2;                                                                             \
    }
SUMMARY_PASSES(float, double, f32_at)
SUMMARY_PASSES(long double, long double, own_at)
#undef SUMMARY_PASSES

/* cli_decode_chunks' callbacks: the decoder's chunks of float32. */
static int decoded_one(const float *v, size_t n, void *s)
{
    pass_one_f32_at(s, (const uint8_t *)v, n);
    return 0;
}

static int decoded_two(const float *v, size_t n, void *s)
{
    pass_two_f32_at(s, (const uint8_t *)v, n);
    return 0;
}

/* One pass over a tensor read in its own type: its bytes where they lie, or fetched a chunk at
 * a time into scratch (OWN_CHUNK values). */
static bool own_pass(const tm_tensor *t, summary *s, bool second, uint8_t *scratch, tm_error *err)
{
    const uint64_t size = s->dt->size, n = t->n_elements;
    for (uint64_t e0 = 0; e0 < n; e0 += OWN_CHUNK) {
        const uint64_t k = n - e0 < OWN_CHUNK ? n - e0 : OWN_CHUNK;
        const uint8_t *p = cli_tensor_bytes(t, e0 * size, k * size, scratch, err);
        if (!p)
            return false;
        (second ? pass_two_own_at : pass_one_own_at)(s, p, (size_t)k);
    }
    return true;
}

/* Buffers reused from tensor to tensor: decoded floats (the largest cli_chunk_elems of them)
 * and fetched bytes. */
typedef struct buffers {
    float *floats;
    uint8_t *scratch; /* OWN_CHUNK values of 8 bytes */
} buffers;

static bool one_pass(const tm_tensor *t, summary *s, bool second, const buffers *b, tm_error *err)
{
    if (s->dt->own)
        return own_pass(t, s, second, b->scratch, err);
    return cli_decode_chunks(t, 0, t->n_elements, b->floats, cli_chunk_elems(t),
                             second ? decoded_two : decoded_one, s, err) == 0;
}

static void histogram_text(const summary *s, char *buf, size_t size)
{
    static const char *const levels[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    uint64_t top = 0;
    for (size_t b = 0; b < BINS; b++)
        if (s->hist[b] > top)
            top = s->hist[b];
    buf[0] = '\0';
    for (size_t b = 0; b < BINS && top; b++) {
        /* any non-empty bin shows at least the lowest bar */
        uint64_t level = s->hist[b] ? (s->hist[b] * 8 + top - 1) / top : 0;
        strncat(buf, levels[level], size - strlen(buf) - 1);
    }
}

/* A remote tensor of at most this many bytes is fetched once and held for both passes; a larger
 * one streams through each pass (fetched twice), so that memory never grows with the size a
 * server declares. */
#define HOLD_BYTES ((uint64_t)64 << 20)

/* Decode and summarise t; false with err filled when it cannot be decoded. Two passes over the
 * values, each in chunks. */
static bool summarise(const tm_tensor *t, const buffers *b, summary *s, tm_error *err)
{
    memset(s, 0, sizeof *s);
    s->dt = cli_dtype_of(t->type);
    tm_tensor copy;
    void *bytes = NULL;
    const tm_tensor *u =
        t->n_bytes <= HOLD_BYTES ? cli_tensor_in_memory(t, &copy, &bytes, err) : t;
    bool ok = u && one_pass(u, s, false, b, err);
    /* in the precision the sum was kept in (a double's quotient for decoded floats) */
    if (s->finite)
        s->mean = s->dt->own ? s->sum / (long double)s->finite
                             : (long double)((double)s->sum / (double)s->finite);
    if (ok && s->finite)
        ok = one_pass(u, s, true, b, err);
    free(bytes);
    return ok;
}

static double std_of(const summary *s)
{
    if (!s->finite)
        return 0;
    return s->dt->own ? (double)sqrtl(s->m2 / (long double)s->finite)
                      : sqrt((double)s->m2 / (double)s->finite);
}

static json_t *summary_json(const tm_tensor *t, const summary *s, const tm_error *err, bool ok)
{
    const char *tn = tm_type_name(t->type);
    json_t *o = json_pack("{s:o, s:s}", "name", cli_json_str(t->name), "type", tn ? tn : "unknown");
    if (!ok) {
        json_object_set_new(o, "error", json_string(err->message));
        return o;
    }
    json_t *first = json_array(), *hist = json_array();
    for (uint64_t i = 0; i < s->count && i < FIRST_SHOWN; i++)
        json_array_append_new(first, cli_dtype_json(s->dt, s->first[i]));
    for (size_t b = 0; b < BINS; b++)
        json_array_append_new(hist, cli_json_u64(s->hist[b]));
    /* no finite value, no min, max, mean or std: null in all four, as in the text's "-" */
    json_t *rest = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "count", cli_json_u64(s->count),
        "first", first, "min", s->finite ? cli_dtype_json(s->dt, s->min_at) : json_null(), "max",
        s->finite ? cli_dtype_json(s->dt, s->max_at) : json_null(), "mean",
        s->finite ? cli_json_f64((double)s->mean) : json_null(), "std",
        s->finite ? cli_json_f64(std_of(s)) : json_null(), "nan", cli_json_u64(s->nan), "inf",
        cli_json_u64(s->inf), "finite", cli_json_u64(s->finite), "histogram", hist);
    json_object_update(o, rest);
    json_decref(rest);
    return o;
}

static void print_one_line(const tm_tensor *t, const summary *s, const tm_error *err, bool ok,
                           int wname)
{
    const char *tn = tm_type_name(t->type);
    char name[256];
    printf("%-*s %-8s ", wname, cli_name(t->name, 200, name, sizeof name), tn ? tn : "unknown");
    if (!ok) {
        cli_print_text(stdout, err->message);
        putchar('\n');
        return;
    }
    char hist[BINS * 4 + 1];
    histogram_text(s, hist, sizeof hist);
    /* min and max as the values they are; mean and std are shown here as the f32 nearest them
     * for a float32 tensor (the one-tensor view and --json give them whole), as doubles for a
     * tensor of its own type (an f64's 1e300 would be an f32's infinity) */
    char num[4][32] = {"-", "-", "-", "-"};
    if (s->finite) {
        cli_dtype_text(s->dt, s->min_at, num[0], sizeof num[0]);
        cli_dtype_text(s->dt, s->max_at, num[1], sizeof num[1]);
        cli_float_text((double)s->mean, !s->dt->own, num[2], sizeof num[2]);
        cli_float_text(std_of(s), !s->dt->own, num[3], sizeof num[3]);
    }
    printf("%10" PRIu64 " %15s %15s %15s %15s %5" PRIu64 " %5" PRIu64 "  |%s|\n", s->count,
           num[0], num[1], num[2], num[3], s->nan, s->inf, hist);
}

static void print_block(const tm_file *f, const tm_tensor *t, const summary *s)
{
    const char *tn = tm_type_name(t->type);
    char shape[128];
    cli_shape_of(f, t, shape, sizeof shape);
    char name[256];
    printf("%s (%s, %s)\n", cli_name(t->name, 200, name, sizeof name), tn ? tn : "unknown", shape);
    printf("  %-24s %" PRIu64 "\n  %-24s", "values", s->count, "the first of them");
    char num[32], lo[32] = "-", hi[32] = "-", mean[32] = "-", sd[32] = "-";
    for (uint64_t i = 0; i < s->count && i < FIRST_SHOWN; i++) {
        cli_dtype_text(s->dt, s->first[i], num, sizeof num);
        printf(" %s", num);
    }
    char hist[BINS * 4 + 1];
    histogram_text(s, hist, sizeof hist);
    if (s->finite) {
        cli_dtype_text(s->dt, s->min_at, lo, sizeof lo);
        cli_dtype_text(s->dt, s->max_at, hi, sizeof hi);
        cli_float_text((double)s->mean, false, mean, sizeof mean);
        cli_float_text(std_of(s), false, sd, sizeof sd);
    }
    printf("\n  %-24s %s\n  %-24s %s\n  %-24s %s\n  %-24s %s\n", "smallest", lo, "largest", hi,
           "mean", mean, "standard deviation", sd);
    printf("  %-24s %" PRIu64 "\n  %-24s %" PRIu64 "\n  %-24s |%s|  %s .. %s\n\n",
           "not a number", s->nan, "infinite", s->inf, "histogram", hist, lo, hi);
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    int first = 0;
    int rc = cli_flag_args(argc, argv, &cmd_stats, flags, 1, INT_MAX, &first);
    if (rc >= 0)
        return rc;
    const char *arg = argv[first];
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    char **want = argv + first + 1;
    uint64_t n_want = (uint64_t)(argc - first - 1);
    uint64_t n = n_want ? n_want : tm_n_tensors(f);
    for (uint64_t i = 0; i < n_want; i++)
        if (!cli_find_tensor(f, arg, want[i])) {
            tm_close(f);
            return CLI_USAGE;
        }
    size_t chunk = 0;
    int wname = 4;
    bool failed = false;
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = n_want ? tm_tensor_find(f, want[i]) : tm_tensor_at(f, i);
        size_t ce = cli_chunk_elems(t);
        chunk = ce > chunk ? ce : chunk;
        char shown[256]; /* the name as printed (escaped, cut at 200 bytes) */
        int w = (int)strlen(cli_name(t->name, 200, shown, sizeof shown));
        wname = w > wname ? w : wname;
    }
    buffers b = {malloc((chunk ? chunk : 1) * sizeof *b.floats), malloc(OWN_CHUNK * 8)};
    json_t *all = json ? json_array() : NULL;
    if (!b.floats || !b.scratch || (json && !all)) {
        free(b.floats);
        free(b.scratch);
        tm_close(f);
        cli_errorf("out of memory");
        return CLI_FAIL;
    }
    if (!json && !n_want)
        printf("%-*s %-8s %10s %15s %15s %15s %15s %5s %5s  histogram, min to max\n", wname, "name",
               "type", "values", "min", "max", "mean", "std", "nan", "inf");
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = n_want ? tm_tensor_find(f, want[i]) : tm_tensor_at(f, i);
        summary s;
        tm_error err = {0};
        if (!n_want)
            cli_prefetch(tm_tensor_at(f, i + 1)); /* on its way while this one is summarised */
        bool ok = summarise(t, &b, &s, &err);
        /* a type without a decoder is a finding about that line; anything else (a path that
         * cannot run, a named tensor that cannot be decoded) fails the command */
        if (!ok && (n_want || err.code != TM_UNSUPPORTED))
            failed = true;
        if (json)
            json_array_append_new(all, summary_json(t, &s, &err, ok));
        else if (n_want && ok)
            print_block(f, t, &s);
        else if (n_want) /* a named tensor the command fails on: an error, said as errors are */
            cli_report(arg, &err);
        else
            print_one_line(t, &s, &err, ok, wname);
    }
    free(b.floats);
    free(b.scratch);
    tm_close(f);
    int out = json ? cli_json_emit(all) : cli_finish_output(CLI_OK);
    return failed ? CLI_FAIL : out;
}

const cli_command cmd_stats = {
    .name = "stats",
    .alias = "floats",
    .summary = "decode tensors and summarise them: min, max, mean, std, NaN/inf, histogram",
    .help = help,
    .run = run,
};
