/* JSON values for the tool's --json output and the header dump: exact numbers, every byte of
 * every string kept, and readers for what the writers here produce. */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Integers a double holds exactly (|v| <= 2^53) are JSON numbers; a reader that parses every
 * number as a double (JavaScript, many others) would round anything larger, so that is a
 * decimal string, for every integer in every command's output alike. */
#define JSON_EXACT_MAX (UINT64_C(1) << 53)

json_t *cli_json_u64(uint64_t v)
{
    if (v <= JSON_EXACT_MAX)
        return json_integer((json_int_t)v);
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return json_string(buf);
}

json_t *cli_json_i64(int64_t v)
{
    if (v >= -(int64_t)JSON_EXACT_MAX && v <= (int64_t)JSON_EXACT_MAX)
        return json_integer((json_int_t)v);
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
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

bool cli_json_get_i64(const json_t *j, int64_t *out)
{
    if (json_is_integer(j)) {
        *out = (int64_t)json_integer_value(j);
        return true;
    }
    const char *s = json_string_value(j);
    uint64_t mag;
    if (!s || !cli_parse_u64(s + (s[0] == '-'), &mag) || mag > (uint64_t)INT64_MAX + (s[0] == '-'))
        return false;
    *out = s[0] == '-' ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
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
    if (isfinite(v)) {
        /* the double nearest the shortest decimal of the f32: the emitter writes it back as
         * that decimal (1e-06, not the widened 9.999999974752427e-07) */
        char text[32];
        cli_float_text(v, is_f32, text, sizeof text);
        return json_real(is_f32 ? strtod(text, NULL) : v);
    }
    if (isnan(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, is_f32 ? "nan:0x%08" PRIx64 : "nan:0x%016" PRIx64, bits);
        return json_string(buf);
    }
    return json_string(v > 0 ? "inf" : "-inf");
}

json_t *cli_json_f32(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return cli_json_float(v, true, bits);
}

json_t *cli_json_f64(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return cli_json_float(v, false, bits);
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
        return cli_json_i64(v->as.i);
    case TM_V_F32:
        return cli_json_f32((float)v->as.f);
    case TM_V_F64:
        return cli_json_f64(v->as.f);
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

/* A string (or any leaf) as JSON, ASCII only and DEL escaped too: a control character inside
 * a string from the file would otherwise reach the terminal raw (JSON allows C1, bidi controls
 * and DEL unescaped); parsers read \uXXXX back as the same string. jansson leaves DEL raw; it
 * can only occur inside a string. */
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

static int dump_leaf(const json_t *j, FILE *out)
{
    return json_dump_callback(j, put_json, out, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) != 0;
}

json_t *cli_json_kv(const tm_kv *kv, bool values)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "key", cli_json_str(kv->key));
    bad |= json_object_set_new(o, "type", json_string(tm_vtype_name(kv->type)));
    if (kv->type != TM_V_ARRAY) {
        bad |= json_object_set_new(o, "value", cli_json_kv_value(kv));
    } else {
        const char *et = tm_vtype_name(kv->elem_type);
        bad |= json_object_set_new(o, "element_type",
                                   et ? json_string(et) : json_integer(kv->elem_type));
        bad |= json_object_set_new(o, "count", cli_json_u64(kv->count));
        bad |= json_object_set_new(o, "bytes", cli_json_u64(kv->data_bytes));
        /* NULL for nested arrays, which ggml never writes: fails rather than drop them */
        if (values)
            bad |= json_object_set_new(o, "values", cli_json_kv_value(kv));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cli_json_tensor(const tm_file *f, const tm_tensor *t)
{
    const tm_layout *l = tm_file_layout(f);
    const tm_layout *shard = l->n_shards > 1 ? tm_shard_layout(f, t->shard) : l;
    const char *tn = tm_type_name(t->type);
    json_t *o = json_pack("{s:o, s:s, s:I, s:o, s:o, s:o, s:o}", "name", cli_json_str(t->name),
                          "type", tn ? tn : "unknown", "type_id", (json_int_t)t->type, "ne",
                          cli_json_ne(t), "data_offset", cli_json_u64(t->offset), "file_offset",
                          cli_json_u64(shard->data_start + t->offset), "n_bytes",
                          cli_json_u64(t->n_bytes));
    if (o && l->n_shards > 1 && json_object_set_new(o, "shard", json_integer(t->shard)) != 0) {
        json_decref(o);
        return NULL;
    }
    if (o && l->format == TM_FORMAT_SAFETENSORS) {
        uint64_t shape[4];
        uint32_t n = tm_tensor_shape(t, shape);
        json_t *a = json_array();
        for (uint32_t d = 0; a && d < n; d++)
            if (json_array_append_new(a, cli_json_u64(shape[d])) != 0) {
                json_decref(a);
                a = NULL;
            }
        if (json_object_set_new(o, "shape", a) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* ---- the emitter: jansson's layout (2-space indent, keys in insertion order), but every real
 * in the fewest digits that read back as the same double (jansson writes 17 digits) ---------- */

static int emit(FILE *out, const json_t *j, int depth)
{
    int rc = 0;
    if (json_is_object(j) || json_is_array(j)) {
        bool obj = json_is_object(j);
        size_t n = obj ? json_object_size(j) : json_array_size(j);
        if (n == 0)
            return fputs(obj ? "{}" : "[]", out) < 0;
        fputc(obj ? '{' : '[', out);
        size_t i = 0;
        const char *key;
        const json_t *v;
        void *it = obj ? json_object_iter((json_t *)(uintptr_t)j) : NULL;
        for (; i < n; i++) {
            fprintf(out, "%s\n%*s", i ? "," : "", 2 * (depth + 1), "");
            if (obj) {
                key = json_object_iter_key(it);
                v = json_object_iter_value(it);
                it = json_object_iter_next((json_t *)(uintptr_t)j, it);
                json_t *k = json_string(key);
                rc |= !k || dump_leaf(k, out);
                json_decref(k);
                fputs(": ", out);
            } else {
                v = json_array_get(j, i);
            }
            rc |= emit(out, v, depth + 1);
        }
        fprintf(out, "\n%*s%c", 2 * depth, "", obj ? '}' : ']');
        return rc;
    }
    if (json_is_real(j)) {
        char text[40];
        cli_float_text(json_real_value(j), false, text, sizeof text);
        /* keep it a real for readers that tell 1 from 1.0 */
        return fprintf(out, "%s%s", text, strpbrk(text, ".e") ? "" : ".0") < 0;
    }
    return dump_leaf(j, out);
}

int cli_json_emit(json_t *root)
{
    if (!root) {
        cli_errorf("could not build the JSON output (out of memory)");
        return CLI_FAIL;
    }
    int rc = emit(stdout, root, 0);
    json_decref(root);
    fputc('\n', stdout);
    if (rc != 0 || fflush(stdout) != 0 || ferror(stdout)) {
        cli_errorf("could not write the JSON output");
        return CLI_FAIL;
    }
    return CLI_OK;
}
