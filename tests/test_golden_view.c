/* The library's view of the golden files must equal ggml's own reader's, line for line: every
 * metadata key, type and value, every tensor's name, type, shape, offset and size
 * ($TM_CORPUS/golden/FILE.view.tsv, written by ggml; see the corpus README). Values are
 * compared as numbers parsed from ggml's text, never as text we format ourselves. */
#include <criterion/criterion.h>

#include "tensormap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 16

/* Split line (modified in place) at tabs; returns the number of fields. */
static int split(char *line, char **field)
{
    int n = 0;
    line[strcspn(line, "\n")] = '\0';
    for (char *p = line; n < MAX_FIELDS;) {
        field[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

static uint64_t num(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 10);
    cr_assert(*s && *end == '\0', "not a number: '%s'", s);
    return v;
}

/* One fixed-size value against ggml's text for it. */
static void check_value(const tm_value *v, const char *text, const char *key)
{
    char *end = NULL;
    switch (v->type) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        cr_assert_eq(v->as.u, strtoull(text, &end, 10), "%s: %" PRIu64 " vs %s", key, v->as.u,
                     text);
        break;
    case TM_V_I8:
    case TM_V_I16:
    case TM_V_I32:
    case TM_V_I64:
        cr_assert_eq(v->as.i, strtoll(text, &end, 10), "%s: %" PRId64 " vs %s", key, v->as.i, text);
        break;
    case TM_V_F32: {
        /* ggml prints 9 significant digits: enough to name one float exactly */
        const float want = strtof(text, &end), got = (float)v->as.f;
        cr_assert(memcmp(&want, &got, sizeof want) == 0, "%s: %.9g vs %s", key, v->as.f, text);
        break;
    }
    case TM_V_F64: {
        const double want = strtod(text, &end);
        cr_assert(memcmp(&want, &v->as.f, sizeof want) == 0, "%s: %.17g vs %s", key, v->as.f, text);
        break;
    }
    case TM_V_BOOL:
        cr_assert_str_eq(v->as.b ? "true" : "false", text, "%s", key);
        return;
    default:
        cr_assert_fail("%s: unexpected value type %d", key, (int)v->type);
    }
    cr_assert(end && *end == '\0', "%s: ggml's value '%s' did not parse", key, text);
}

static void check_kv(const tm_kv *kv, char **field, int n)
{
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
    cr_assert_str_eq(key, field[1]);
    cr_assert_str_eq(tm_vtype_name(kv->type), field[2], "%s", key);
    if (kv->type == TM_V_STRING) {
        tm_str s;
        cr_assert_eq(tm_kv_get_str(kv, &s), TM_OK);
        cr_assert_eq(s.len, num(field[3]), "%s", key);
        return;
    }
    if (kv->type != TM_V_ARRAY) {
        tm_value v;
        cr_assert_eq(tm_kv_value(kv, &v), TM_OK);
        check_value(&v, field[3], key);
        return;
    }
    cr_assert_str_eq(tm_vtype_name(kv->elem_type), field[3], "%s", key);
    cr_assert_eq(kv->count, num(field[4]), "%s", key);
    if (kv->elem_type == TM_V_STRING) {
        cr_assert_eq(strncmp(field[5], "bytes=", 6), 0);
        tm_str_iter it;
        tm_str s;
        uint64_t bytes = 0, count = 0;
        cr_assert_eq(tm_kv_strings(kv, &it), TM_OK);
        while (tm_str_next(&it, &s))
            bytes += s.len, count++;
        cr_assert_eq(count, kv->count, "%s", key);
        cr_assert_eq(bytes, num(field[5] + 6), "%s", key);
        return;
    }
    if (kv->count > 8) /* ggml lists the values of short arrays only */
        return;
    cr_assert_eq((uint64_t)(n - 5), kv->count, "%s: %d values listed", key, n - 5);
    for (uint64_t i = 0; i < kv->count; i++) {
        tm_value v;
        cr_assert_eq(tm_kv_elem(kv, i, &v), TM_OK);
        check_value(&v, field[5 + i], key);
    }
}

static void check_tensor(const tm_file *f, const tm_tensor *t, char **field, int n)
{
    cr_assert_eq(n, 9);
    cr_assert(t->name.len == strlen(field[1]) && memcmp(t->name.ptr, field[1], t->name.len) == 0,
              "tensor %.*s vs %s", (int)t->name.len, t->name.ptr, field[1]);
    cr_assert_eq(tm_tensor_find(f, field[1]), t, "%s: lookup", field[1]);
    cr_assert_str_eq(tm_type_name(t->type), field[2], "%s", field[1]);
    for (int d = 0; d < 4; d++)
        cr_assert_eq(t->ne[d], num(field[3 + d]), "%s: ne[%d]", field[1], d);
    cr_assert_eq(t->offset, num(field[7]), "%s: offset", field[1]);
    cr_assert_eq(t->n_bytes, num(field[8]), "%s: size", field[1]);
    cr_assert_eq((const uint8_t *)t->data,
                 tm_file_bytes(f) + tm_file_layout(f)->data_start + t->offset);
}

static void check_view(const char *stem, unsigned flags)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (make test sets it)");
    char path[512];
    snprintf(path, sizeof path, "%s/golden/%s.gguf", corpus, stem);
    tm_file *f = NULL;
    tm_error err;
    cr_assert_eq(tm_open(path, flags, &f, &err), TM_OK, "%s: %s", path, err.message);
    const tm_layout *L = tm_file_layout(f);

    snprintf(path, sizeof path, "%s/golden/%s.view.tsv", corpus, stem);
    FILE *view = fopen(path, "r");
    cr_assert_not_null(view, "%s", path);
    char line[4096], *field[MAX_FIELDS];
    uint64_t kvs = 0, tensors = 0;
    int headers = 0;
    while (fgets(line, sizeof line, view)) {
        const int n = split(line, field);
        const char *what = field[0];
        if (strcmp(what, "kv") == 0) {
            cr_assert_lt(kvs, tm_n_kv(f));
            check_kv(tm_kv_at(f, kvs++), field, n);
            continue;
        }
        if (strcmp(what, "tensor") == 0) {
            cr_assert_lt(tensors, tm_n_tensors(f));
            check_tensor(f, tm_tensor_at(f, tensors++), field, n);
            continue;
        }
        cr_assert_eq(n, 2, "line '%s'", what);
        const uint64_t v = num(field[1]);
        headers++;
        if (strcmp(what, "version") == 0)
            cr_assert_eq(L->version, v);
        else if (strcmp(what, "alignment") == 0)
            cr_assert_eq(L->alignment, v);
        else if (strcmp(what, "data_offset") == 0)
            cr_assert_eq(L->data_start, v);
        else if (strcmp(what, "n_kv") == 0)
            cr_assert_eq(L->n_kv, v);
        else if (strcmp(what, "n_tensors") == 0)
            cr_assert_eq(L->n_tensors, v);
        else
            cr_assert_fail("unknown line '%s' in %s", what, path);
    }
    fclose(view);
    cr_assert_eq(headers, 5);
    cr_assert_eq(kvs, L->n_kv, "the view lists %" PRIu64 " entries", kvs);
    cr_assert_eq(tensors, L->n_tensors, "the view lists %" PRIu64 " tensors", tensors);
    tm_close(f);
}

Test(golden_view, golden_a) { check_view("golden-a", TM_OPEN_DEFAULT); }
Test(golden_view, golden_b) { check_view("golden-b", TM_OPEN_DEFAULT); }
/* the same view from the pread copy */
Test(golden_view, golden_a_no_mmap) { check_view("golden-a", TM_OPEN_NO_MMAP); }
Test(golden_view, golden_b_no_mmap) { check_view("golden-b", TM_OPEN_NO_MMAP); }
