/* JSON values for the tool's --json output and the header dump: exact numbers, every byte of
 * every string kept, and readers for what the writers here produce. */
#include "cli_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *cli_json_u64(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)v);
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return json_string(buf);
}

bool cli_json_get_u64(const json_t *j, uint64_t *out)
{
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        if (v < 0)
            return false;
        *out = (uint64_t)v;
        return true;
    }
    return json_is_string(j) && cli_parse_u64(json_string_value(j), out);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

json_t *cli_json_str(tm_str s)
{
    if (cli_utf8_valid(s.ptr, s.len))
        return json_stringn(s.ptr ? s.ptr : "", (size_t)s.len);
    char *hex = malloc((size_t)s.len * 2 + 1);
    if (!hex)
        return NULL;
    for (uint64_t i = 0; i < s.len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s.ptr[i]);
    hex[s.len * 2] = '\0';
    json_t *obj = json_pack("{s:s}", "hex", hex);
    free(hex);
    return obj;
}

bool cli_json_get_bytes(const json_t *j, char **bytes, size_t *len)
{
    if (json_is_string(j)) {
        size_t n = json_string_length(j);
        *bytes = malloc(n + 1);
        if (!*bytes)
            return false;
        memcpy(*bytes, json_string_value(j), n + 1);
        *len = n;
        return true;
    }
    const json_t *h = json_object_get(j, "hex");
    if (!json_is_string(h) || json_string_length(h) % 2 != 0)
        return false;
    const char *p = json_string_value(h);
    size_t n = json_string_length(h) / 2;
    *bytes = malloc(n + 1);
    if (!*bytes)
        return false;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit(p[2 * i]), lo = hex_digit(p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(*bytes);
            return false;
        }
        (*bytes)[i] = (char)(hi << 4 | lo);
    }
    (*bytes)[n] = '\0';
    *len = n;
    return true;
}

json_t *cli_json_ne(const tm_tensor *t)
{
    json_t *a = json_array();
    for (uint32_t d = 0; a && d < t->n_dims; d++)
        json_array_append_new(a, cli_json_u64(t->ne[d]));
    return a;
}

json_t *cli_json_float(double v, bool is_f32, uint64_t bits)
{
    if (isfinite(v))
        return json_real(v);
    if (isnan(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, is_f32 ? "nan:0x%08" PRIx64 : "nan:0x%016" PRIx64, bits);
        return json_string(buf);
    }
    return json_string(v > 0 ? "inf" : "-inf");
}

/* One scalar or string value (arrays are walked by the caller). */
static json_t *scalar_json(const tm_value *v)
{
    switch (v->type) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        return cli_json_u64(v->as.u);
    case TM_V_I8:
    case TM_V_I16:
    case TM_V_I32:
    case TM_V_I64:
        return json_integer((json_int_t)v->as.i);
    case TM_V_F32: {
        float f = (float)v->as.f;
        uint32_t b;
        memcpy(&b, &f, 4);
        return cli_json_float(v->as.f, true, b);
    }
    case TM_V_F64: {
        uint64_t b;
        memcpy(&b, &v->as.f, 8);
        return cli_json_float(v->as.f, false, b);
    }
    case TM_V_BOOL:
        return json_boolean(v->as.b);
    case TM_V_STRING:
        return cli_json_str(v->as.s);
    case TM_V_ARRAY:
    default:
        return NULL;
    }
}

json_t *cli_json_kv_value(const tm_kv *kv)
{
    tm_value v;
    if (kv->type != TM_V_ARRAY)
        return tm_kv_value(kv, &v) == TM_OK ? scalar_json(&v) : NULL;
    json_t *a = json_array();
    if (!a)
        return NULL;
    if (kv->elem_type == TM_V_STRING) {
        tm_str_iter it;
        tm_str s;
        if (tm_kv_strings(kv, &it) == TM_OK)
            while (tm_str_next(&it, &s))
                json_array_append_new(a, cli_json_str(s));
    } else {
        for (uint64_t i = 0; i < kv->count; i++) {
            json_t *e = tm_kv_elem(kv, i, &v) == TM_OK ? scalar_json(&v) : NULL;
            if (!e) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, e);
        }
    }
    if (json_array_size(a) != kv->count) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* jansson leaves DEL (0x7f) raw, as JSON allows; it can only occur inside a string. */
static int put_json(const char *buf, size_t size, void *out)
{
    for (const char *del; size && (del = memchr(buf, 0x7f, size)) != NULL;) {
        size_t n = (size_t)(del - buf);
        if (fwrite(buf, 1, n, out) != n || fputs("\\u007f", out) == EOF)
            return -1;
        buf += n + 1;
        size -= n + 1;
    }
    return fwrite(buf, 1, size, out) == size ? 0 : -1;
}

int cli_json_emit(json_t *root)
{
    if (!root) {
        cli_errorf("could not build the JSON output (out of memory)");
        return CLI_FAIL;
    }
    /* ASCII only, DEL escaped too: a control character inside a string from the file would
     * otherwise reach the terminal raw (JSON allows C1, bidi controls and DEL unescaped);
     * parsers read \uXXXX back as the same string. */
    int rc = json_dump_callback(root, put_json, stdout,
                                JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    json_decref(root);
    fputc('\n', stdout);
    if (rc != 0 || fflush(stdout) != 0) {
        cli_errorf("could not write the JSON output");
        return CLI_FAIL;
    }
    return CLI_OK;
}
