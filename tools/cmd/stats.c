/* tensormap stats: decode tensors in bounded chunks and summarise them: the first values,
 * min, max, mean, standard deviation (accumulated in double), NaN and infinity counts, and a
 * histogram a person can read in a terminal. */
#include "../cli/cli_util.h"

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
    "the finite values from min to max in 24 bins drawn with block characters. With no TENSOR,\n"
    "every tensor on one line each (the first values left to --json); a tensor whose type\n"
    "has no decoder says so on its line.\n"
    "`floats` is another name for this command.\n"
    "\n"
    "  --json    the same as a JSON array (histogram bins as counts)\n";

enum { FIRST_SHOWN = 8, BINS = 24 };

typedef struct summary {
    uint64_t count, finite, nan, inf;
    float first[FIRST_SHOWN];
    double min, max, sum, mean, m2;
    uint64_t hist[BINS];
} summary;

static int pass_one(const float *v, size_t n, void *p)
{
    summary *s = p;
    for (size_t i = 0; i < n; i++) {
        if (s->count < FIRST_SHOWN)
            s->first[s->count] = v[i];
        s->count++;
        if (isnan(v[i])) {
            s->nan++;
        } else if (isinf(v[i])) {
            s->inf++;
        } else {
            if (s->finite == 0 || v[i] < s->min)
                s->min = v[i];
            if (s->finite == 0 || v[i] > s->max)
                s->max = v[i];
            s->sum += v[i];
            s->finite++;
        }
    }
    return 0;
}

/* Second pass: squared deviations from the mean (no cancellation) and the histogram. */
static int pass_two(const float *v, size_t n, void *p)
{
    summary *s = p;
    double width = (s->max - s->min) / BINS;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        double d = v[i] - s->mean;
        s->m2 += d * d;
        size_t bin = width > 0 ? (size_t)((v[i] - s->min) / width) : 0;
        s->hist[bin < BINS ? bin : BINS - 1]++;
    }
    return 0;
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
static bool summarise(const tm_tensor *t, float *buf, size_t chunk, summary *s, tm_error *err)
{
    memset(s, 0, sizeof *s);
    tm_tensor copy;
    void *bytes = NULL;
    const tm_tensor *u =
        t->n_bytes <= HOLD_BYTES ? cli_tensor_in_memory(t, &copy, &bytes, err) : t;
    bool ok = u && cli_decode_chunks(u, 0, u->n_elements, buf, chunk, pass_one, s, err) == 0;
    s->mean = s->finite ? s->sum / (double)s->finite : 0;
    if (ok && s->finite)
        ok = cli_decode_chunks(u, 0, u->n_elements, buf, chunk, pass_two, s, err) == 0;
    free(bytes);
    return ok;
}

static double std_of(const summary *s)
{
    return s->finite ? sqrt(s->m2 / (double)s->finite) : 0;
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
        json_array_append_new(first, cli_json_f32(s->first[i]));
    for (size_t b = 0; b < BINS; b++)
        json_array_append_new(hist, cli_json_u64(s->hist[b]));
    /* no finite value, no min, max, mean or std: null in all four, as in the text's "-" */
    json_t *rest = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "count", cli_json_u64(s->count),
        "first", first, "min", s->finite ? cli_json_f32((float)s->min) : json_null(), "max",
        s->finite ? cli_json_f32((float)s->max) : json_null(), "mean",
        s->finite ? cli_json_f64(s->mean) : json_null(), "std",
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
    /* min and max are f32 values; mean and std are shown here as the f32 nearest them (the
     * one-tensor view and --json give them whole) */
    char num[4][32];
    const double v[4] = {s->min, s->max, s->mean, std_of(s)};
    for (int i = 0; i < 4; i++)
        if (s->finite)
            cli_float_text(v[i], true, num[i], sizeof num[i]);
        else
            snprintf(num[i], sizeof num[i], "-");
    printf("%10" PRIu64 " %15s %15s %15s %15s %5" PRIu64 " %5" PRIu64 "  |%s|\n", s->count,
           num[0], num[1], num[2], num[3], s->nan, s->inf, hist);
}

static void print_block(const tm_file *f, const tm_tensor *t, const summary *s, const tm_error *err,
                        bool ok)
{
    const char *tn = tm_type_name(t->type);
    char shape[128];
    cli_shape_of(f, t, shape, sizeof shape);
    char name[256];
    printf("%s (%s, %s)\n", cli_name(t->name, 200, name, sizeof name), tn ? tn : "unknown", shape);
    if (!ok) {
        fputs("  ", stdout);
        cli_print_text(stdout, err->message);
        fputs("\n\n", stdout);
        return;
    }
    printf("  %-24s %" PRIu64 "\n  %-24s", "values", s->count, "the first of them");
    char num[32], lo[32] = "-", hi[32] = "-", mean[32] = "-", sd[32] = "-";
    for (uint64_t i = 0; i < s->count && i < FIRST_SHOWN; i++) {
        cli_float_text(s->first[i], true, num, sizeof num);
        printf(" %s", num);
    }
    char hist[BINS * 4 + 1];
    histogram_text(s, hist, sizeof hist);
    if (s->finite) {
        cli_float_text(s->min, true, lo, sizeof lo);
        cli_float_text(s->max, true, hi, sizeof hi);
        cli_float_text(s->mean, false, mean, sizeof mean);
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
    float *buf = malloc((chunk ? chunk : 1) * sizeof *buf);
    json_t *all = json ? json_array() : NULL;
    if (!buf || (json && !all)) {
        free(buf);
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
        bool ok = summarise(t, buf, cli_chunk_elems(t), &s, &err);
        /* a type without a decoder is a finding about that line; anything else (a path that
         * cannot run, a named tensor that cannot be decoded) fails the command */
        if (!ok && (n_want || err.code != TM_UNSUPPORTED))
            failed = true;
        if (json)
            json_array_append_new(all, summary_json(t, &s, &err, ok));
        else if (n_want)
            print_block(f, t, &s, &err, ok);
        else
            print_one_line(t, &s, &err, ok, wname);
    }
    free(buf);
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
