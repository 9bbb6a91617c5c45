/* tensormap dump: a tensor's values on disk, as raw little-endian values, as a .npy array
 * numpy.load reads with the right shape and dtype, or as a standard LZ4 frame: decoded float32,
 * or for integer, bool and f64 tensors their own values exactly (tools/cli/dtype.h). Written in
 * chunks, so memory stays bounded however large the tensor. */
#include "../cli/cli.h"
#include "../cli/dtype.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
    "usage: tensormap dump [--format raw|npy|lz4] [--rows A:B] FILE TENSOR -o OUT\n"
    "       tensormap dump [--format raw|npy|lz4] FILE --all -o DIR\n"
    "\n"
    "Decode a tensor to float32 and write it: raw (little-endian floats, nothing else), npy\n"
    "(NumPy format 1.0, '<f4', shape in numpy's order: ne reversed, so numpy.load gives the\n"
    "right array) or lz4 (raw floats in one standard LZ4 frame; `lz4 -d` decompresses it).\n"
    "Integer, bool and f64 tensors, which float32 would round, are written exactly in their\n"
    "own type instead: npy with their dtype ('<f8', '<i8', '<i4', '<i2', '|i1', '<u8', '<u4',\n"
    "'<u2', '|u1', '|b1'), raw and lz4 as their little-endian values (a bool one byte, 0 or\n"
    "1). The format comes from --format, else from OUT's extension (.npy, .lz4,\n"
    ".raw/.f32/.bin); -o - writes to standard output (raw unless --format says otherwise),\n"
    "which is refused when it is a terminal (values are bytes, not text: redirect it). Values\n"
    "are written in chunks, so memory stays bounded; progress goes to stderr when it is a\n"
    "terminal and the dump is large.\n"
    "\n"
    "  -o, --output OUT   the file to write, or - for standard output (not a terminal)\n"
    "  --format FMT       raw, npy or lz4\n"
    "  --rows A:B         only rows A to B-1 (a row is ne[0] values); npy shape (B-A, ne[0])\n"
    "  --all              every tensor into the directory OUT, one file per tensor named after\n"
    "                     it, npy unless --format says otherwise (a raw file's extension is its\n"
    "                     dtype: .f32, or .i64, .f64, .bool ...); a tensor whose type has no\n"
    "                     decoder is skipped with a note on stderr. A file name is the tensor's\n"
    "                     name with '/', '%', control bytes and a leading '.' written as %XX\n"
    "                     (so that a/b and a_b stay two files, and percent-decoding gives the\n"
    "                     name back); a name too long for a file name is cut at 200 bytes and\n"
    "                     followed by ~ and 16 hex digits of a hash of the whole name\n";

typedef enum { FMT_NONE, FMT_RAW, FMT_NPY, FMT_LZ4 } format;

/* Progress is shown when stderr is a terminal and the dump is at least this large. */

static format format_named(const char *s)
{
    return strcmp(s, "raw") == 0   ? FMT_RAW
           : strcmp(s, "npy") == 0 ? FMT_NPY
           : strcmp(s, "lz4") == 0 ? FMT_LZ4
                                   : FMT_NONE;
}

static format format_of_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return FMT_NONE;
    if (strcmp(dot, ".f32") == 0 || strcmp(dot, ".bin") == 0)
        return FMT_RAW;
    return format_named(dot + 1);
}

/* Where the values go: a FILE, through an LZ4 frame or not. */
typedef struct sink {
    FILE *out;
    const char *name;
    LZ4F_cctx *lz4;
    void *lz4_buf;
    size_t lz4_cap;
    uint64_t total; /* value bytes, for the progress line */
    cli_progress progress;
} sink;

/* dump --all draws one progress line over the tensors, not one per tensor */
static bool progress_per_tensor = true;

static bool put(sink *s, const void *p, size_t n)
{
    if (fwrite(p, 1, n, s->out) == n)
        return true;
    cli_errorf("%s: %s", s->name, strerror(errno));
    return false;
}

/* Bytes of values into the sink: 1 (said) when that fails. */
static int put_bytes(sink *s, const void *v, size_t bytes)
{
    if (s->lz4) {
        size_t got = LZ4F_compressUpdate(s->lz4, s->lz4_buf, s->lz4_cap, v, bytes, NULL);
        if (LZ4F_isError(got)) {
            cli_errorf("%s: lz4: %s", s->name, LZ4F_getErrorName(got));
            return 1;
        }
        if (!put(s, s->lz4_buf, got))
            return 1;
    } else if (!put(s, v, bytes)) {
        return 1;
    }
    if (progress_per_tensor)
        cli_progress_add(&s->progress, bytes);
    return 0;
}

/* cli_decode_chunks' callback: a chunk of decoded floats. */
static int put_floats(const float *v, size_t n, void *s)
{
    return put_bytes(s, v, n * sizeof *v);
}

/* A tensor of its own dtype is copied in pieces of this many bytes. */
#define OWN_PIECE ((size_t)16 << 20)

/* Values [first, first + n) of a tensor of its own dtype, as the file holds them (a bool as 0
 * or 1), a chunk of cap bytes at a time: -1 with err filled when fetching fails, 1 when writing
 * does. */
static int put_own(const tm_tensor *t, const cli_dtype *d, uint64_t first, uint64_t n,
                   uint8_t *scratch, size_t cap, sink *s, tm_error *err)
{
    const uint64_t per = cap / d->size;
    for (uint64_t done = 0; done < n;) {
        const uint64_t k = n - done < per ? n - done : per;
        const uint8_t *p = cli_tensor_bytes(t, (first + done) * d->size, k * d->size, scratch, err);
        if (!p)
            return -1;
        if (d->kind == CLI_DT_BOOL) { /* numpy's bool is the byte 0 or 1; any other is true */
            for (uint64_t i = 0; i < k; i++)
                scratch[i] = p[i] != 0;
            p = scratch;
        }
        if (put_bytes(s, p, (size_t)(k * d->size)) != 0)
            return 1;
        done += k;
    }
    return 0;
}

/* The NumPy 1.0 header: magic, version, u16 length, a dict literal padded with spaces and a
 * newline so that the data starts at a multiple of 64. */
static bool npy_header(sink *s, const char *descr, const uint64_t *shape, uint32_t n_dims)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (uint32_t d = 0; d < n_dims; d++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRIu64 "%s", shape[d],
                      n_dims == 1      ? ","
                      : d + 1 < n_dims ? ", "
                                       : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1, padded = (total + 63) / 64 * 64;
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    size_t hlen = padded - 10;
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memset(dict + n, ' ', padded - total);
    dict[padded - 10 - 1] = '\n';
    return put(s, head, 10) && put(s, dict, hlen);
}

/* Dump rows [r0, r1) of t to out in fmt. */
static int dump_tensor(const tm_tensor *t, uint64_t r0, uint64_t r1, format fmt, FILE *out,
                       const char *name, bool whole)
{
    uint64_t row = t->n_dims ? t->ne[0] : 1, first = r0 * row, n = (r1 - r0) * row;
    if (!tm_type_can_dequant(t->type)) {
        const char *tn = tm_type_name(t->type);
        char nm[256];
        cli_errorf("%s: type %s has no decoder", cli_name(t->name, 200, nm, sizeof nm),
                   tn ? tn : "unknown");
        return CLI_FAIL;
    }
    const cli_dtype *d = cli_dtype_of(t->type);
    sink s = {.out = out, .name = name, .total = n * d->size};
    cli_progress_start(&s.progress, name, "bytes", s.total);
    if (fmt == FMT_NPY) {
        uint64_t shape[4];
        uint32_t nd = t->n_dims;
        for (uint32_t k = 0; k < nd; k++)
            shape[k] = t->ne[nd - 1 - k];
        if (!whole) { /* a slice of rows is (rows, ne[0]) */
            shape[0] = r1 - r0;
            shape[1] = row;
            nd = 2;
        }
        if (!npy_header(&s, d->npy, shape, nd)) {
            cli_progress_end(&s.progress);
            return CLI_FAIL;
        }
    }
    /* the most bytes one write takes: a chunk of decoded floats, or of the file's own values */
    const size_t chunk = cli_chunk_elems(t), piece = d->own ? OWN_PIECE : chunk * sizeof(float);
    void *buf = malloc(piece);
    LZ4F_preferences_t prefs = {.frameInfo = {.contentSize = s.total, .blockSizeID = LZ4F_max4MB}};
    int rc = CLI_FAIL;
    if (!buf) {
        cli_errorf("out of memory");
        goto done;
    }
    if (fmt == FMT_LZ4) {
        s.lz4_cap = LZ4F_compressBound(piece, &prefs);
        s.lz4_buf = malloc(s.lz4_cap < LZ4F_HEADER_SIZE_MAX ? LZ4F_HEADER_SIZE_MAX : s.lz4_cap);
        if (!s.lz4_buf || LZ4F_isError(LZ4F_createCompressionContext(&s.lz4, LZ4F_VERSION))) {
            cli_errorf("out of memory");
            goto done;
        }
        size_t got = LZ4F_compressBegin(s.lz4, s.lz4_buf, s.lz4_cap, &prefs);
        if (LZ4F_isError(got) || !put(&s, s.lz4_buf, got))
            goto done;
    }
    tm_error err = {0};
    int walk = d->own ? put_own(t, d, first, n, buf, piece, &s, &err)
                      : cli_decode_chunks(t, first, n, buf, chunk, put_floats, &s, &err);
    if (walk < 0) {
        char tname[256];
        cli_report(cli_name(t->name, 200, tname, sizeof tname), &err);
    }
    if (walk != 0)
        goto done;
    if (s.lz4) {
        size_t got = LZ4F_compressEnd(s.lz4, s.lz4_buf, s.lz4_cap, NULL);
        if (LZ4F_isError(got) || !put(&s, s.lz4_buf, got))
            goto done;
    }
    rc = CLI_OK;
done:
    cli_progress_end(&s.progress);
    LZ4F_freeCompressionContext(s.lz4);
    free(s.lz4_buf);
    free(buf);
    return rc;
}

/* Through cli_output: a failed dump leaves whatever OUT was (a file, a device, nothing) as it
 * was, and an input is never the output. */
static int dump_to_path(const tm_tensor *t, uint64_t r0, uint64_t r1, format fmt, const char *path,
                        bool whole)
{
    cli_output *o = cli_output_open(path);
    if (!o)
        return CLI_FAIL;
    int rc = dump_tensor(t, r0, r1, fmt, cli_output_stream(o), cli_output_name(o), whole);
    return cli_output_close(o, rc);
}

/* A tensor's file name for dump --all: unique and reversible. Bytes a file name cannot hold
 * ('/'), that would hide or climb (a leading '.'), that reach a terminal (C0, DEL) and the
 * escape itself ('%') become %XX; everything else stays. A name that would not fit NAME_MAX
 * (with the extension) keeps its first CUT bytes and gets ~ and a 64-bit FNV-1a hash of the
 * whole name. */
enum { CUT = 200, FILE_NAME_CAP = CUT + 3 + 1 + 16 + 1 };

static void file_name(tm_str name, char out[FILE_NAME_CAP])
{
    size_t n = 0;
    bool cut = false;
    for (uint64_t i = 0; i < name.len; i++) {
        const unsigned char b = (unsigned char)name.ptr[i];
        const bool escape = b < 0x20 || b == 0x7f || b == '/' || b == '%' || (i == 0 && b == '.');
        if (n + (escape ? 3 : 1) > CUT) {
            cut = true;
            break;
        }
        if (escape) {
            snprintf(out + n, 4, "%%%02X", b);
            n += 3;
        } else {
            out[n++] = (char)b;
        }
    }
    out[n] = '\0';
    if (cut) {
        uint64_t h = 14695981039346656037ull;
        for (uint64_t i = 0; i < name.len; i++)
            h = (h ^ (unsigned char)name.ptr[i]) * 1099511628211ull;
        snprintf(out + n, FILE_NAME_CAP - n, "~%016" PRIx64, h);
    }
}

static int dump_all(const tm_file *f, format fmt, const char *dir)
{
    static const char *const ext[] = {[FMT_NPY] = "npy", [FMT_LZ4] = "lz4"};
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        cli_errorf("%s: %s", dir, strerror(errno));
        return CLI_FAIL;
    }
    uint64_t done = 0, skipped = 0;
    cli_progress pr;
    cli_progress_start(&pr, "dump --all", "tensors", tm_n_tensors(f));
    progress_per_tensor = false;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        cli_progress_add(&pr, i > 0);
        cli_prefetch(tm_tensor_at(f, i + 1)); /* on its way while this one is written */
        if (!tm_type_can_dequant(t->type)) {
            const char *tn = tm_type_name(t->type);
            char nm[256];
            cli_errorf("%s: skipped, type %s has no decoder", cli_name(t->name, 200, nm, sizeof nm),
                       tn ? tn : "unknown");
            skipped++;
            continue;
        }
        char file[FILE_NAME_CAP], *path = NULL;
        file_name(t->name, file);
        if (asprintf(&path, "%s/%s.%s", dir, file,
                     fmt == FMT_RAW ? cli_dtype_of(t->type)->ext : ext[fmt]) < 0)
            return CLI_FAIL;
        int rc = dump_to_path(t, 0, tm_tensor_rows(t), fmt, path, true);
        free(path);
        if (rc != CLI_OK) {
            cli_progress_end(&pr);
            return rc;
        }
        done++;
    }
    cli_progress_end(&pr);
    /* as stats does: a type without a decoder is said, not a failure of the rest */
    fprintf(stderr, "%s: %" PRIu64 " tensor%s dumped, %" PRIu64 " skipped (no decoder)\n", dir, done,
            CLI_S(done), skipped);
    return CLI_OK;
}

static bool parse_rows(const char *s, uint64_t *a, uint64_t *b)
{
    const char *colon = strchr(s, ':');
    if (!colon)
        return false;
    char left[32];
    size_t n = (size_t)(colon - s);
    if (n == 0 || n >= sizeof left)
        return false;
    memcpy(left, s, n);
    left[n] = '\0';
    return cli_parse_u64(left, a) && cli_parse_u64(colon + 1, b) && *a < *b;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'F'},
        {"rows", required_argument, NULL, 'r'},   {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *out = NULL, *rows = NULL;
    format fmt = FMT_NONE;
    bool all = false;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:h", opts, &cmd_dump)) != -1) {
        if (c == 'o') {
            out = optarg;
        } else if (c == 'F') {
            if ((fmt = format_named(optarg)) == FMT_NONE) {
                cli_errorf("dump: no format '%s' (raw, npy or lz4)", optarg);
                return CLI_USAGE;
            }
        } else if (c == 'r') {
            rows = optarg;
        } else if (c == 'a') {
            all = true;
        } else if (c == 'h') {
            return fputs(help, stdout), CLI_OK;
        } else {
            return cli_usage(&cmd_dump);
        }
    }
    if (!out || argc - optind != (all ? 1 : 2) || (all && rows)) {
        cli_errorf("dump: %s", !out          ? "no -o OUT given"
                               : all && rows ? "--rows is for one tensor"
                                             : "FILE and one TENSOR (or --all)");
        return cli_usage(&cmd_dump);
    }
    if (fmt == FMT_NONE)
        fmt = all ? FMT_NPY : strcmp(out, "-") == 0 ? FMT_RAW : format_of_path(out);
    if (fmt == FMT_NONE) {
        cli_errorf("dump: cannot tell the format from '%s': use --format raw|npy|lz4", out);
        return CLI_USAGE;
    }
    /* Values are bytes, not text: on a terminal they are noise, and can drive it. Refused
     * before any work, as lz4 and zstd refuse to write to a console. */
    if (strcmp(out, "-") == 0 && isatty(STDOUT_FILENO)) {
        cli_errorf("dump: standard output is a terminal: not writing binary values to it "
                   "(redirect it to a file or a pipe, or give -o FILE)");
        return CLI_USAGE;
    }
    uint64_t r0 = 0, r1 = 0;
    if (rows && !parse_rows(rows, &r0, &r1)) {
        cli_errorf("dump: --rows wants A:B with A < B, not '%s'", rows);
        return CLI_USAGE;
    }
    tm_file *f = cli_open(argv[optind], 0);
    if (!f)
        return CLI_FAIL;
    int rc;
    if (all) {
        rc = dump_all(f, fmt, out);
    } else {
        const tm_tensor *t = cli_find_tensor(f, argv[optind], argv[optind + 1]);
        uint64_t n_rows = t ? tm_tensor_rows(t) : 0;
        if (!t) {
            rc = CLI_USAGE;
        } else if (rows && r1 > n_rows) {
            cli_errorf("%s: --rows %s: the tensor has %" PRIu64 " rows", argv[optind], rows,
                       n_rows);
            rc = CLI_USAGE;
        } else {
            rc = dump_to_path(t, r0, rows ? r1 : n_rows, fmt, out, !rows);
        }
    }
    tm_close(f);
    return rc;
}

const cli_command cmd_dump = {
    .name = "dump",
    .alias = NULL,
    .summary = "a tensor's values (or all) as raw, .npy or .lz4: float32, integers and f64 exact",
    .help = help,
    .run = run,
};
