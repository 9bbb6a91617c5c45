/* tensormap write --from-header: a GGUF file with exactly the header a JSON dump describes and
 * a data section of the declared size, left as a hole (ftruncate: sparse, nothing written). A
 * 45 KB header then stands in for a multi-gigabyte model in tests and arithmetic. */
#include "../cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap write --from-header HEADER.json OUT\n"
    "\n"
    "Write the GGUF file that `tensormap header` described: the same version, alignment,\n"
    "metadata (in order, with the same types) and tensor infos (names, types, shapes, offsets),\n"
    "then a data section of the declared data_size, left as a hole in the file (sparse: nothing\n"
    "is written there, and it reads back as zeros). A header dumped with --arrays comes back\n"
    "byte for byte up to the end of the tensor infos; the padding after them is written as\n"
    "zeros, as GGUF writers write it (a file whose padding held other bytes does not keep\n"
    "them). Without --arrays, each array is filled with placeholders (zeros, or strings of '?')\n"
    "of the same count and byte size, so the header keeps its length and every offset holds.\n"
    "A value its type cannot hold (an integer past its range, an f32 of 1e300, which would\n"
    "become an infinity) is refused, naming the entry; \"inf\", \"-inf\" and \"nan:0xBITS\" write\n"
    "those values. OUT must be a file or a device: a GGUF file is written by offset, so a FIFO\n"
    "is refused before it is opened.\n"
    "The new file is opened again and its layout compared with the JSON's before it replaces\n"
    "OUT: on any mismatch or failure OUT is left as it was and nothing else is left behind.\n";

/* Arrays written as placeholders are bounded, all of them together: the JSON is input like any
 * other, and a few bytes of it must not stand for gigabytes of memory and disk. */
#define MAX_PLACEHOLDER_BYTES (1ull << 30)

typedef struct ctx {
    const char *json_path;
    char where[320];
    uint64_t placeholder_bytes; /* so far, against MAX_PLACEHOLDER_BYTES */
} ctx;

__attribute__((format(printf, 2, 3))) static bool fail(const ctx *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_errorf("%s: %s%s%s", c->json_path, c->where, c->where[0] ? ": " : "", msg);
    return false;
}

/* Count bytes of placeholders against the total; false (with a message) past it. */
static bool take_placeholders(ctx *c, uint64_t bytes)
{
    if (bytes > MAX_PLACEHOLDER_BYTES - c->placeholder_bytes)
        return fail(c, "%llu bytes of placeholder arrays in all is more than this tool writes "
                    "(at most %llu; dump the header with --arrays)",
                    (unsigned long long)c->placeholder_bytes + (unsigned long long)bytes,
                    MAX_PLACEHOLDER_BYTES);
    c->placeholder_bytes += bytes;
    return true;
}

static bool vtype_of(const char *name, tm_vtype *out)
{
    for (int t = TM_V_U8; name && t <= TM_V_F64; t++) {
        const char *n = tm_vtype_name((tm_vtype)t);
        if (n && strcmp(n, name) == 0) {
            *out = (tm_vtype)t;
            return true;
        }
    }
    return false;
}

static bool float_of(const json_t *j, bool is_f32, double *d, uint64_t *bits, bool *raw)
{
    *raw = false;
    if (json_is_number(j)) {
        *d = json_number_value(j);
        return true;
    }
    const char *s = json_string_value(j);
    if (!s)
        return false;
    if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0) {
        *d = s[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    char *end;
    if (strncmp(s, "nan:0x", 6) != 0 || !isxdigit((unsigned char)s[6]))
        return false;
    errno = 0;
    *bits = strtoull(s + 6, &end, 16);
    *raw = true;
    /* the bits must fit the field (no 65-bit payload saturated to 2^64-1) and be a NaN */
    const uint64_t exp = is_f32 ? 0x7f800000u : 0x7ff0000000000000u;
    const uint64_t frac = is_f32 ? 0x007fffffu : 0x000fffffffffffffu;
    return *end == '\0' && errno != ERANGE && (!is_f32 || *bits <= UINT32_MAX) &&
           (*bits & exp) == exp && (*bits & frac) != 0;
}

/* One fixed-size value of type t from JSON into out (native endianness, tm_vtype_size bytes). */
static bool scalar_of(const ctx *c, tm_vtype t, const json_t *j, void *out)
{
    static const uint64_t umax[] = {[TM_V_U8] = UINT8_MAX,
                                    [TM_V_U16] = UINT16_MAX,
                                    [TM_V_U32] = UINT32_MAX,
                                    [TM_V_U64] = UINT64_MAX};
    static const int64_t imin[] = {[TM_V_I8] = INT8_MIN,
                                   [TM_V_I16] = INT16_MIN,
                                   [TM_V_I32] = INT32_MIN,
                                   [TM_V_I64] = INT64_MIN};
    static const int64_t imax[] = {[TM_V_I8] = INT8_MAX,
                                   [TM_V_I16] = INT16_MAX,
                                   [TM_V_I32] = INT32_MAX,
                                   [TM_V_I64] = INT64_MAX};
    uint64_t u, bits = 0;
    int64_t i;
    double d = 0;
    bool raw;
    switch (t) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        if (!cli_json_get_u64(j, &u) || u > umax[t])
            return fail(c, "not a %s", tm_vtype_name(t));
        if (t == TM_V_U8)
            *(uint8_t *)out = (uint8_t)u;
        else if (t == TM_V_U16)
            *(uint16_t *)out = (uint16_t)u;
        else if (t == TM_V_U32)
            *(uint32_t *)out = (uint32_t)u;
        else
            *(uint64_t *)out = u;
        return true;
    case TM_V_I8:
    case TM_V_I16:
    case TM_V_I32:
    case TM_V_I64:
        if (!cli_json_get_i64(j, &i) || i < imin[t] || i > imax[t])
            return fail(c, "not an %s", tm_vtype_name(t));
        if (t == TM_V_I8)
            *(int8_t *)out = (int8_t)i;
        else if (t == TM_V_I16)
            *(int16_t *)out = (int16_t)i;
        else if (t == TM_V_I32)
            *(int32_t *)out = (int32_t)i;
        else
            *(int64_t *)out = (int64_t)i;
        return true;
    case TM_V_F32:
    case TM_V_F64:
        if (!float_of(j, t == TM_V_F32, &d, &bits, &raw))
            return fail(c, "not an %s (a number, \"inf\", \"-inf\" or \"nan:0xBITS\")",
                        tm_vtype_name(t));
        /* a finite number beyond f32's range would be stored as an infinity the JSON never
         * said: refused (an infinity is written "inf") */
        if (t == TM_V_F32 && !raw && isfinite(d) && isinf((float)d))
            return fail(c, "%g is out of f32's range (at most %.9g in magnitude; \"inf\" for an "
                        "infinity)", d, (double)FLT_MAX);
        if (t == TM_V_F32) {
            float f = (float)d;
            uint32_t b = (uint32_t)bits;
            memcpy(out, raw ? (const void *)&b : (const void *)&f, 4);
        } else {
            memcpy(out, raw ? (const void *)&bits : (const void *)&d, 8);
        }
        return true;
    case TM_V_BOOL:
        if (!json_is_boolean(j))
            return fail(c, "not a bool (true or false)");
        *(uint8_t *)out = json_is_true(j);
        return true;
    case TM_V_STRING:
    case TM_V_ARRAY:
    default:
        return fail(c, "not a fixed-size type");
    }
}

static bool string_array(tm_writer *w, ctx *c, const char *key, const json_t *kv,
                         uint64_t count, tm_error *err)
{
    const json_t *values = json_object_get(kv, "values");
    uint64_t bytes = 0;
    if (!values && (!cli_json_get_u64(json_object_get(kv, "bytes"), &bytes) || bytes / 8 < count ||
                    bytes > MAX_PLACEHOLDER_BYTES))
        return fail(c,
                    "a string array without values needs \"bytes\" (at least 8 per string, at "
                    "most %llu)",
                    MAX_PLACEHOLDER_BYTES);
    if (values && (!json_is_array(values) || json_array_size(values) != count))
        return fail(c, "\"values\" is not an array of %" PRIu64 " strings", count);
    if (!values && count == 0 && bytes != 0)
        return fail(c, "an empty string array has 0 bytes, not %" PRIu64, bytes);
    if (!values && !take_placeholders(c, bytes))
        return false;
    char **strs = calloc((size_t)(count ? count : 1), sizeof *strs);
    size_t *lens = calloc((size_t)(count ? count : 1), sizeof *lens);
    char *fill = NULL;
    bool ok = strs && lens;
    if (ok && !values) {
        /* placeholders: the same count and the same bytes, spread evenly */
        uint64_t payload = bytes - 8 * count;
        fill = malloc((size_t)(payload / (count ? count : 1) + 2));
        ok = fill != NULL;
        if (ok)
            memset(fill, '?', (size_t)(payload / (count ? count : 1) + 1));
        for (uint64_t i = 0; ok && i < count; i++) {
            strs[i] = fill;
            lens[i] = (size_t)(payload / count + (i < payload % count));
        }
    }
    for (uint64_t i = 0; ok && values && i < count; i++)
        ok = cli_json_get_bytes(json_array_get(values, i), &strs[i], &lens[i]) ||
             fail(c, "element %" PRIu64 " is not a string", i);
    if (ok)
        ok = tm_writer_kv_str_array(w, key, (const char *const *)strs, lens, count, err) == TM_OK;
    for (uint64_t i = 0; values && strs && i < count; i++)
        free(strs[i]);
    free(strs);
    free(lens);
    free(fill);
    return ok;
}

static bool fixed_array(tm_writer *w, ctx *c, const char *key, const json_t *kv, tm_vtype et,
                        uint64_t count, tm_error *err)
{
    const json_t *values = json_object_get(kv, "values");
    uint32_t size = tm_vtype_size(et);
    if (values && (!json_is_array(values) || json_array_size(values) != count))
        return fail(c, "\"values\" is not an array of %" PRIu64 " elements", count);
    if (count > MAX_PLACEHOLDER_BYTES / size)
        return fail(c, "%" PRIu64 " elements is more than this tool writes", count);
    if (!values && !take_placeholders(c, count * size))
        return false;
    uint8_t *buf = calloc((size_t)(count ? count : 1), size);
    if (!buf)
        return fail(c, "out of memory");
    bool ok = true;
    for (uint64_t i = 0; ok && values && i < count; i++)
        ok = scalar_of(c, et, json_array_get(values, i), buf + i * size);
    if (ok)
        ok = tm_writer_kv_array(w, key, et, buf, count, err) == TM_OK;
    free(buf);
    return ok;
}

static bool add_kv(tm_writer *w, ctx *c, const json_t *kv, size_t i, tm_error *err)
{
    char *key = NULL;
    size_t key_len;
    tm_vtype t, et;
    snprintf(c->where, sizeof c->where, "kv %zu", i);
    if (!cli_json_get_bytes(json_object_get(kv, "key"), &key, &key_len))
        return fail(c, "no \"key\"");
    snprintf(c->where, sizeof c->where, "kv %zu ('%.200s')", i, key);
    bool ok = false;
    uint64_t count = 0;
    if (strlen(key) != key_len) {
        fail(c, "a key with a NUL byte cannot be written");
    } else if (!vtype_of(json_string_value(json_object_get(kv, "type")), &t)) {
        fail(c, "\"type\" is not one of u8 i8 u16 i16 u32 i32 f32 bool str arr u64 i64 f64");
    } else if (t == TM_V_STRING) {
        char *s;
        size_t len;
        ok = cli_json_get_bytes(json_object_get(kv, "value"), &s, &len) ||
             fail(c, "\"value\" is not a string");
        if (ok) {
            ok = tm_writer_kv_str(w, key, s, len, err) == TM_OK;
            free(s);
        }
    } else if (t != TM_V_ARRAY) {
        uint64_t v = 0;
        ok = scalar_of(c, t, json_object_get(kv, "value"), &v) &&
             tm_writer_kv_scalar(w, key, t, &v, err) == TM_OK;
    } else if (!vtype_of(json_string_value(json_object_get(kv, "element_type")), &et) ||
               et == TM_V_ARRAY) {
        fail(c, "\"element_type\" is not a scalar type or str");
    } else if (!cli_json_get_u64(json_object_get(kv, "count"), &count)) {
        fail(c, "no \"count\"");
    } else {
        ok = et == TM_V_STRING ? string_array(w, c, key, kv, count, err)
                               : fixed_array(w, c, key, kv, et, count, err);
    }
    free(key);
    return ok;
}

static bool add_tensor(tm_writer *w, ctx *c, const json_t *t, size_t i, tm_error *err)
{
    char *name = NULL;
    size_t len;
    snprintf(c->where, sizeof c->where, "tensor %zu", i);
    if (!cli_json_get_bytes(json_object_get(t, "name"), &name, &len))
        return fail(c, "no \"name\"");
    snprintf(c->where, sizeof c->where, "tensor %zu ('%.200s')", i, name);
    const json_t *ne = json_object_get(t, "ne");
    uint64_t dims[4] = {1, 1, 1, 1}, offset = 0, type = 0;
    size_t n_dims = json_array_size(ne);
    bool ok = strlen(name) == len || fail(c, "a name with a NUL byte cannot be written");
    ok =
        ok && (cli_json_get_u64(json_object_get(t, "type_id"), &type) || fail(c, "no \"type_id\""));
    ok =
        ok && (cli_json_get_u64(json_object_get(t, "data_offset"), &offset) ||
              fail(c, "no \"data_offset\""));
    ok = ok && ((json_is_array(ne) && n_dims >= 1 && n_dims <= 4) ||
                fail(c, "\"ne\" is not 1 to 4 numbers"));
    for (size_t d = 0; ok && d < n_dims; d++)
        ok = cli_json_get_u64(json_array_get(ne, d), &dims[d]) ||
             fail(c, "ne[%zu] is not a number", d);
    ok = ok && (type <= UINT32_MAX || fail(c, "type_id %" PRIu64 " is out of range", type));
    if (ok)
        ok = tm_writer_tensor_at(w, name, (tm_type)type, (uint32_t)n_dims, dims, offset, NULL,
                                 err) == TM_OK;
    free(name);
    return ok;
}

/* Build the writer from the JSON; false with a message printed. */
static bool build(tm_writer *w, ctx *c, const json_t *h, uint64_t *data_size, tm_error *err)
{
    const char *format = json_string_value(json_object_get(h, "format"));
    uint64_t version = 3, alignment = TM_DEFAULT_ALIGNMENT;
    const json_t *kvs = json_object_get(h, "kv"), *tensors = json_object_get(h, "tensors");
    if (!json_is_object(h))
        return fail(c, "not a JSON object");
    if (format && strcmp(format, "gguf") != 0)
        return fail(c, "a %s header cannot be written as GGUF", format);
    if (json_object_get(h, "version") &&
        (!cli_json_get_u64(json_object_get(h, "version"), &version) || version > UINT32_MAX))
        return fail(c, "\"version\" is not a u32");
    if (json_object_get(h, "alignment") &&
        (!cli_json_get_u64(json_object_get(h, "alignment"), &alignment) || alignment > UINT32_MAX))
        return fail(c, "\"alignment\" is not a u32");
    if (!json_is_array(kvs) || !json_is_array(tensors))
        return fail(c, "\"kv\" and \"tensors\" must be arrays");
    if (!cli_json_get_u64(json_object_get(h, "data_size"), data_size))
        return fail(c, "no \"data_size\"");
    if (tm_writer_set_version(w, (uint32_t)version, err) != TM_OK ||
        tm_writer_set_alignment(w, (uint32_t)alignment, err) != TM_OK)
        return false;
    for (size_t i = 0; i < json_array_size(kvs); i++)
        if (!add_kv(w, c, json_array_get(kvs, i), i, err))
            return false;
    for (size_t i = 0; i < json_array_size(tensors); i++)
        if (!add_tensor(w, c, json_array_get(tensors, i), i, err))
            return false;
    c->where[0] = '\0';
    return tm_writer_set_data_size(w, *data_size, err) == TM_OK;
}

/* What the file written reads back as, against the JSON's own numbers. */
typedef struct readback {
    const json_t *h;
    const char *out;
    bool done;   /* false for a device, which is not read back */
    tm_layout l; /* when done */
} readback;

/* Open the file written (before it replaces OUT) and hold its layout against the JSON's: a
 * mismatch leaves OUT as it was. */
static tm_status check_written(void *arg, const char *written, tm_error *err)
{
    readback *rb = arg;
    if (!written)
        return TM_OK;
    tm_file *f = NULL;
    tm_error inner = {0};
    if (tm_open(written, 0, &f, &inner) != TM_OK) {
        *err = inner;
        snprintf(err->message, sizeof err->message, "the file written does not read back: %.*s",
                 (int)sizeof err->message - 40, inner.message);
        return err->code;
    }
    const tm_layout *l = tm_file_layout(f);
    static const char *const fields[] = {"data_start", "file_size", "infos_end", "kv_end"};
    const uint64_t got[] = {l->data_start, l->file_size, l->infos_end, l->kv_end};
    for (size_t i = 0; i < sizeof got / sizeof got[0] && err->code == TM_OK; i++) {
        uint64_t want;
        if (cli_json_get_u64(json_object_get(rb->h, fields[i]), &want) && want != got[i]) {
            err->code = TM_IO;
            err->offset = TM_NO_OFFSET;
            snprintf(err->message, sizeof err->message,
                     "%s is %" PRIu64 " where the header says %" PRIu64 "; not written",
                     fields[i], got[i], want);
        }
    }
    rb->l = *l;
    rb->done = true;
    tm_close(f);
    return err->code;
}

static void say_written(const readback *rb)
{
    const tm_layout *l = &rb->l;
    if (!rb->done)
        printf("%s: written (a device: not read back)\n", rb->out);
    else
        printf("%s: %" PRIu64 " bytes, %" PRIu64 " of header and padding, %" PRIu64
               " metadata entries, %" PRIu64 " tensors, data left as a hole of %" PRIu64
               " bytes\n", rb->out, l->file_size, l->data_start, l->n_kv, l->n_tensors,
               l->data_size);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"from-header", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *from = NULL;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "f:h", opts, &cmd_write)) != -1) {
        if (c == 'f')
            from = optarg;
        else if (c == 'h')
            return fputs(help, stdout), CLI_OK;
        else
            return cli_usage(&cmd_write);
    }
    if (!from) {
        cli_errorf("write: --from-header HEADER.json is required");
        return cli_usage(&cmd_write);
    }
    if ((c = cli_count_args(&cmd_write, argc - optind, 1, 1)) >= 0)
        return c;
    const char *out = argv[optind];
    cli_output_protect_path(from);
    if (!cli_output_allowed(out))
        return CLI_FAIL;
    json_error_t jerr;
    json_t *h = strcmp(from, "-") == 0
                    ? json_loadf(stdin, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr)
                    : json_load_file(from, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!h) {
        if (jerr.line < 0) /* not a parse error: the file could not be read at all */
            cli_errorf("%s: %s", from, jerr.text);
        else
            cli_errorf("%s: line %d, column %d: %s", from, jerr.line, jerr.column, jerr.text);
        return CLI_FAIL;
    }
    tm_writer *w = NULL;
    tm_error err = {0};
    ctx cx = {.json_path = from};
    readback rb = {.h = h, .out = out};
    uint64_t data_size = 0;
    int rc = CLI_FAIL;
    if (tm_writer_new(&w, &err) != TM_OK) {
        cli_report(out, &err);
    } else if (!build(w, &cx, h, &data_size, &err)) {
        if (err.code != TM_OK)
            cli_report(from, &err);
        tm_writer_free(w);
    } else if (cli_output_model(w, out, check_written, &rb, &err) != TM_OK) {
        cli_report(out, &err);
    } else {
        say_written(&rb);
        rc = CLI_OK;
    }
    json_decref(h);
    return rc;
}

const cli_command cmd_write = {
    .name = "write",
    .alias = NULL,
    .summary = "write a GGUF file from a header JSON, its data a sparse hole",
    .help = help,
    .run = run,
};
