/* Helpers the inspecting commands share: names, shapes, block numbers, offset order, and
 * decoding a tensor in bounded chunks. */
#include "cli_util.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

bool cli_utf8_valid(const char *s, uint64_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    uint64_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        uint64_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1, cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2, cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3, cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        for (uint64_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3fu);
        }
        /* overlong forms, surrogates and code points past U+10FFFF are not UTF-8 */
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

int cli_usage(const cli_command *cmd)
{
    const char *nl = strchr(cmd->help, '\n');
    int len = nl ? (int)(nl - cmd->help) : (int)strlen(cmd->help);
    fprintf(stderr, "%.*s\n(tensormap help %s for more)\n", len, cmd->help, cmd->name);
    return CLI_USAGE;
}

/* Edit distance (insert, delete, replace, swap two neighbours) between a and b, stopping at
 * 9: a suggestion is only worth making for a near miss. */
static size_t edit_distance(const char *a, const char *b)
{
    enum { MAX = 40 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return 9;
    size_t d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb] < 9 ? d[la][lb] : 9;
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = strlen(word) <= 3 ? 1 : 2; /* the most a near miss may differ by */
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d <= best_d && (!best || d < best_d)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

/* The option names of opts that start with s (s without dashes, up to '='). */
static size_t options_starting(const struct option *opts, const char *s, size_t len,
                               const char **names, size_t max)
{
    size_t n = 0;
    for (const struct option *o = opts; o->name; o++)
        if (strncmp(o->name, s, len) == 0 && n < max)
            names[n++] = o->name;
    return n;
}

/* Why argv's option at optind - 1 was refused, said once on stderr. */
static void option_error(const cli_command *cmd, const char *arg, int missing,
                         const struct option *opts)
{
    if (strncmp(arg, "--", 2) != 0) { /* a short option: "-x" or "-xVALUE" */
        const char o = optopt ? (char)optopt : arg[1];
        if (missing)
            cli_errorf("%s: -%c needs a value", cmd->name, o);
        else
            cli_errorf("%s: there is no option '-%c'", cmd->name, o);
        return;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const char *hits[8];
    size_t n_hits = options_starting(opts, name, len, hits, 8);
    const struct option *exact = NULL;
    for (const struct option *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            exact = o;
    if (missing) {
        cli_errorf("%s: --%.*s needs a value", cmd->name, (int)len, name);
    } else if (exact || (n_hits == 1 && name[len] == '=')) {
        cli_errorf("%s: --%.*s takes no value ('%s')", cmd->name, (int)len, name, arg);
    } else if (n_hits > 1) {
        char list[256] = "";
        for (size_t i = 0; i < n_hits; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s--%s",
                     i ? ", " : "", hits[i]);
        cli_errorf("%s: '%s' is short for more than one option: %s", cmd->name, arg, list);
    } else {
        const char *names[64];
        size_t n = 0;
        for (const struct option *o = opts; o->name && n < 64; o++)
            names[n++] = o->name;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
        const char *near = cli_nearest(word, names, n);
        if (near)
            cli_errorf("%s: there is no option '%s' (did you mean --%s?)", cmd->name, arg, near);
        else
            cli_errorf("%s: there is no option '%s' (tensormap help %s lists them)", cmd->name,
                       arg, cmd->name);
    }
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
               const cli_command *cmd)
{
    /* ':' first: a missing value is told apart from an unknown option; opterr off: the
     * messages are ours, with the reason and a suggestion */
    char shorts[32] = ":";
    snprintf(shorts + 1, sizeof shorts - 1, "%s", shortopts);
    opterr = 0;
    int c = getopt_long(argc, argv, shorts, opts, NULL);
    if (c == '?' || c == ':') {
        option_error(cmd, argv[optind - 1], c == ':', opts);
        return '?';
    }
    return c;
}

int cli_flag_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags, int min,
                  int max, int *first)
{
    int n = 0;
    while (flags && flags[n].name)
        n++;
    int help = n;
    struct option *opts = calloc((size_t)n + 2, sizeof *opts);
    if (!opts) {
        cli_errorf("out of memory");
        return CLI_FAIL;
    }
    for (int i = 0; i < n; i++)
        opts[i] = (struct option){flags[i].name, no_argument, NULL, i};
    opts[n] = (struct option){"help", no_argument, NULL, help};
    optind = 1;
    int c, rc = -1;
    while (rc < 0 && (c = cli_getopt(argc, argv, "h", opts, cmd)) != -1) {
        if (c == help || c == 'h')
            rc = (fputs(cmd->help, stdout), CLI_OK);
        else if (c >= 0 && c < n)
            *flags[c].set = true;
        else
            rc = cli_usage(cmd);
    }
    free(opts);
    if (rc >= 0)
        return rc;
    rc = cli_count_args(cmd, argc - optind, min, max);
    if (rc >= 0)
        return rc;
    *first = optind;
    return -1;
}

int cli_count_args(const cli_command *cmd, int have, int min, int max)
{
    if (have >= min && have <= max)
        return -1;
    if (have < min)
        cli_errorf("%s: %s", cmd->name,
                   have == 0 ? "no FILE given" : "an argument is missing (see the usage line)");
    else
        cli_errorf("%s: %d argument%s too many (see the usage line)", cmd->name, have - max,
                   have - max == 1 ? "" : "s");
    return cli_usage(cmd);
}

const tm_tensor *cli_find_tensor(const tm_file *f, const char *file, const char *name)
{
    const tm_tensor *t = tm_tensor_find(f, name);
    if (t)
        return t;
    /* the nearest name by edit distance, looked for among names of about the same length */
    const tm_str *near = NULL;
    size_t want = strlen(name), best = want <= 3 ? 1 : 3;
    char cand[128];
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_str *s = &tm_tensor_at(f, i)->name;
        if (s->len >= sizeof cand || s->len > want + best || want > s->len + best)
            continue;
        memcpy(cand, s->ptr, (size_t)s->len);
        cand[s->len] = '\0';
        size_t d = edit_distance(name, cand);
        if (d <= best && (!near || d < best)) {
            best = d;
            near = s;
        }
    }
    char shown[160];
    if (near)
        cli_errorf("%s: no tensor '%s' (did you mean '%s'?)", file, name,
                   cli_name(*near, 120, shown, sizeof shown));
    else
        cli_errorf("%s: no tensor '%s' (tensormap tensors %s lists them)", file, name, file);
    return NULL;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

const char *cli_name(tm_str s, uint64_t max, char *buf, size_t size)
{
    FILE *m = fmemopen(buf, size, "w");
    if (!m)
        return "?";
    cli_print_str(m, s, max);
    if (s.len > max)
        fputs("...", m);
    fclose(m);
    buf[size - 1] = '\0';
    return buf;
}

void cli_shape(const tm_tensor *t, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < t->n_dims && at < size; d++) {
        int n = snprintf(buf + at, size - at, d ? " x %" PRIu64 : "%" PRIu64, t->ne[d]);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    if (t->n_dims == 0)
        snprintf(buf, size, "scalar");
}

void cli_shape_of(const tm_file *f, const tm_tensor *t, char *buf, size_t size)
{
    if (tm_file_layout(f)->format != TM_FORMAT_SAFETENSORS) {
        cli_shape(t, buf, size);
        return;
    }
    uint64_t shape[4];
    uint32_t n = tm_tensor_shape(t, shape);
    size_t at = (size_t)snprintf(buf, size, "[");
    for (uint32_t d = 0; d < n && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, d ? ", %" PRIu64 : "%" PRIu64, shape[d]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

/* Where "MARK" followed by digits and '.' starts a component of name, or -1. */
static int64_t find_block_mark(tm_str name, const char *mark, uint64_t *digits)
{
    uint64_t m = strlen(mark);
    for (uint64_t i = 0; i + m < name.len; i++) {
        if ((i > 0 && name.ptr[i - 1] != '.') || memcmp(name.ptr + i, mark, m) != 0)
            continue;
        uint64_t d = 0;
        while (i + m + d < name.len && name.ptr[i + m + d] >= '0' && name.ptr[i + m + d] <= '9')
            d++;
        if (d > 0 && d <= 18 && i + m + d < name.len && name.ptr[i + m + d] == '.') {
            *digits = d;
            return (int64_t)(i + m);
        }
    }
    return -1;
}

static bool block_of(tm_str name, cli_block_name *out)
{
    static const char *const marks[] = {"blk.", "layers.", "h."};
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
        uint64_t digits = 0;
        int64_t at = find_block_mark(name, marks[k], &digits);
        if (at < 0)
            continue;
        uint64_t n = 0;
        for (uint64_t i = 0; i < digits; i++)
            n = n * 10 + (uint64_t)(name.ptr[(uint64_t)at + i] - '0');
        size_t len = (size_t)(name.len - digits + 1);
        char *g = malloc(len + 1);
        if (!g)
            return false;
        memcpy(g, name.ptr, (size_t)at);
        g[at] = 'N';
        memcpy(g + at + 1, name.ptr + (uint64_t)at + digits,
               (size_t)(name.len - (uint64_t)at - digits));
        g[len] = '\0';
        *out = (cli_block_name){true, n, g, (size_t)at + 2};
        return true;
    }
    char *g = strndup(name.ptr, (size_t)name.len);
    *out = (cli_block_name){false, 0, g, 0};
    return g != NULL;
}

cli_block_name *cli_block_names(const tm_file *f)
{
    uint64_t n = tm_n_tensors(f);
    cli_block_name *names = calloc((size_t)(n ? n : 1), sizeof *names);
    for (uint64_t i = 0; names && i < n; i++) {
        if (!block_of(tm_tensor_at(f, i)->name, &names[i])) {
            cli_block_names_free(names, i);
            return NULL;
        }
    }
    return names;
}

void cli_block_names_free(cli_block_name *names, uint64_t n)
{
    for (uint64_t i = 0; names && i < n; i++)
        free(names[i].generic);
    free(names);
}

static const tm_file *sort_file; /* qsort has no context argument in C11 */

static int by_offset(const void *a, const void *b)
{
    uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;
    const tm_tensor *ti = tm_tensor_at(sort_file, i), *tj = tm_tensor_at(sort_file, j);
    if (ti->shard != tj->shard)
        return ti->shard < tj->shard ? -1 : 1;
    if (ti->offset != tj->offset)
        return ti->offset < tj->offset ? -1 : 1;
    return i < j ? -1 : i > j;
}

uint64_t *cli_offset_order(const tm_file *f)
{
    uint64_t n = tm_n_tensors(f);
    uint64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    sort_file = f;
    qsort(order, (size_t)n, sizeof *order, by_offset);
    return order;
}

bool cli_align_up(uint64_t n, uint64_t a, uint64_t *out)
{
    if (a <= 1) {
        *out = n;
        return true;
    }
    if (n > UINT64_MAX - (a - 1))
        return false;
    *out = (n + a - 1) & ~(a - 1);
    return true;
}

size_t cli_chunk_elems(const tm_tensor *t)
{
    size_t block = tm_type_block_elems(t->type);
    if (block == 0)
        block = 1;
    /* A remote tensor's chunk is one fetch: larger, so that its bytes come in several ranges
     * at once (the library splits a read of 8 MiB or more) rather than one small range at a
     * time, each waiting a round trip. */
    size_t want = tm_file_is_remote(t->file) ? (size_t)1 << 24 : (size_t)1 << 20;
    return want < block ? block : want / block * block;
}

const uint8_t *cli_tensor_bytes(const tm_tensor *t, uint64_t off, uint64_t len, uint8_t *scratch,
                                tm_error *err)
{
    if (t->data)
        return (const uint8_t *)t->data + off;
    return tm_tensor_fetch(t, off, len, scratch, err) == TM_OK ? scratch : NULL;
}

const tm_tensor *cli_tensor_in_memory(const tm_tensor *t, tm_tensor *copy, void **bytes,
                                     tm_error *err)
{
    *bytes = NULL;
    if (t->data || !tm_type_can_dequant(t->type))
        return t; /* mapped already, or never decoded (the decode says why) */
    if (!(*bytes = malloc(t->n_bytes ? (size_t)t->n_bytes : 1))) {
        snprintf(err->message, sizeof err->message, "out of memory for the tensor's %llu bytes",
                 (unsigned long long)t->n_bytes);
        err->code = TM_NOMEM;
        return NULL;
    }
    if (tm_tensor_fetch(t, 0, t->n_bytes, *bytes, err) != TM_OK) {
        free(*bytes);
        *bytes = NULL;
        return NULL;
    }
    *copy = *t;
    copy->data = *bytes;
    return copy;
}

int cli_decode_chunks(const tm_tensor *t, uint64_t first, uint64_t n, float *buf, size_t chunk,
                      cli_chunk_fn fn, void *ctx, tm_error *err)
{
    for (uint64_t done = 0; done < n;) {
        size_t take = n - done < chunk ? (size_t)(n - done) : chunk;
        if (tm_dequant_elements(t, first + done, take, buf, err) != TM_OK)
            return -1;
        int rc = fn(buf, take, ctx);
        if (rc != 0)
            return rc;
        done += take;
    }
    return 0;
}
