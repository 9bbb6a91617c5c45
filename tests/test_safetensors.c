/* Safetensors through tm_open: every dtype, shapes, metadata, sharded checkpoints, and one test
 * per validation rule of the reference (Hugging Face safetensors), each checking the code and
 * that the message names the entry. Files are built here with tests/support/st_writer.c. */
#include "support/st_writer.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------ */

/* An image opened in place; the bytes must outlive the tm_file. */
typedef struct opened {
    uint8_t *img;
    size_t len;
    tm_file *f;
} opened;

static opened open_image(uint8_t *img, size_t len)
{
    opened o = {img, len, NULL};
    tm_error err = {0};
    tm_status s = tm_open_buffer(img, len, 0, &o.f, &err);
    cr_assert_eq(s, TM_OK, "open failed: %s: %s", tm_status_name(s), err.message);
    return o;
}

static void close_image(opened *o)
{
    tm_close(o->f);
    free(o->img);
}

/* header + data_len zero bytes must be refused with code, a message naming name and saying why,
 * and an offset. */
static void expect_refusal(const char *header, size_t data_len, tm_status code, const char *name,
                           const char *why)
{
    uint8_t *zeros = calloc(1, data_len + 1);
    size_t len;
    uint8_t *img = st_image_raw(header, zeros, data_len, &len);
    tm_file *f = NULL;
    tm_error err = {0};
    tm_status s = tm_open_buffer(img, len, 0, &f, &err);
    cr_expect_eq(s, code, "expected %s, got %s: %s", tm_status_name(code), tm_status_name(s),
                 err.message);
    cr_expect_null(f);
    if (name)
        cr_expect(strstr(err.message, name) != NULL, "the message should name %s: %s", name,
                  err.message);
    cr_expect(strstr(err.message, why) != NULL, "the message should say '%s': %s", why,
              err.message);
    cr_expect_neq(err.offset, TM_NO_OFFSET, "no offset: %s", err.message);
    tm_close(f);
    free(img);
    free(zeros);
}

/* ---- what opens ---------------------------------------------------------------------------- */

Test(safetensors, every_dtype)
{
    static const struct {
        const char *dtype;
        tm_type type;
        size_t size;
    } dt[] = {
        {"F64", TM_TYPE_F64, 8},   {"F32", TM_TYPE_F32, 4},         {"F16", TM_TYPE_F16, 2},
        {"BF16", TM_TYPE_BF16, 2}, {"I64", TM_TYPE_I64, 8},         {"I32", TM_TYPE_I32, 4},
        {"I16", TM_TYPE_I16, 2},   {"I8", TM_TYPE_I8, 1},           {"U8", TM_TYPE_U8, 1},
        {"BOOL", TM_TYPE_BOOL, 1}, {"F8_E4M3", TM_TYPE_F8_E4M3, 1}, {"F8_E5M2", TM_TYPE_F8_E5M2, 1},
        {"U16", TM_TYPE_U16, 2},   {"U32", TM_TYPE_U32, 4},         {"U64", TM_TYPE_U64, 8},
    };
    const size_t n = sizeof dt / sizeof dt[0];
    st_writer *w = st_writer_new();
    uint8_t bytes[6 * 8];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)(i * 7 + 1);
    const uint64_t shape[2] = {2, 3};
    for (size_t i = 0; i < n; i++)
        st_writer_add(w, dt[i].dtype, dt[i].dtype, 2, shape, bytes, 6 * dt[i].size);
    st_writer_meta(w, "format", "pt");
    size_t len;
    uint8_t *img = st_writer_image(w, &len);
    st_writer_free(w);
    opened o = open_image(img, len);

    const tm_layout *lay = tm_file_layout(o.f);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | img[i];
    cr_expect_eq(lay->format, TM_FORMAT_SAFETENSORS);
    cr_expect_eq(lay->head_end, 8);
    cr_expect_eq(lay->kv_end, 8 + header_len);
    cr_expect_eq(lay->infos_end, 8 + header_len);
    cr_expect_eq(lay->data_start, 8 + header_len);
    cr_expect_eq(lay->padding, 0);
    cr_expect_eq(lay->alignment, 1);
    cr_expect_eq(lay->file_size, len);
    cr_expect_eq(lay->data_size, len - 8 - header_len);
    cr_expect_eq(lay->tensors_end, lay->data_size);
    cr_expect_eq(lay->n_shards, 1);
    cr_expect_eq(tm_n_tensors(o.f), n);

    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_find(o.f, dt[i].dtype);
        cr_assert_not_null(t, "%s not found", dt[i].dtype);
        cr_expect_eq(t, tm_tensor_at(o.f, i), "file order is data order");
        cr_expect_eq(t->type, dt[i].type, "%s: type %d", dt[i].dtype, t->type);
        cr_expect_eq(t->n_dims, 2);
        cr_expect_eq(t->ne[0], 3, "ne[0] is the row length (the last PyTorch dimension)");
        cr_expect_eq(t->ne[1], 2);
        cr_expect_eq(t->ne[2], 1);
        cr_expect_eq(t->n_elements, 6);
        cr_expect_eq(t->n_bytes, 6 * dt[i].size);
        cr_expect_eq(t->offset, at);
        cr_expect_eq((const uint8_t *)t->data, img + 8 + header_len + at, "zero-copy");
        cr_expect_eq(memcmp(t->data, bytes, t->n_bytes), 0);
        uint64_t shp[4];
        cr_expect_eq(tm_tensor_shape(t, shp), 2);
        cr_expect(shp[0] == 2 && shp[1] == 3, "file-order shape");
        at += t->n_bytes;
    }
    close_image(&o);
}

Test(safetensors, values_decode_through_the_index)
{
    /* bit patterns whose values are known: 1.0 and -2.0 in each float format */
    const uint16_t bf16[2] = {0x3F80, 0xC000}, f16[2] = {0x3C00, 0xC000};
    const float f32[2] = {1.0f, -2.0f};
    const uint64_t shape[1] = {2};
    st_writer *w = st_writer_new();
    st_writer_add(w, "b", "BF16", 1, shape, bf16, sizeof bf16);
    st_writer_add(w, "h", "F16", 1, shape, f16, sizeof f16);
    st_writer_add(w, "f", "F32", 1, shape, f32, sizeof f32);
    size_t len;
    uint8_t *img = st_writer_image(w, &len);
    st_writer_free(w);
    opened o = open_image(img, len);
    for (const char *name = "bhf"; *name; name++) {
        float out[2] = {0};
        tm_error err = {0};
        const tm_tensor *t = tm_tensor_findn(o.f, name, 1);
        cr_assert_not_null(t);
        cr_assert_eq(tm_dequant_rows(t, 0, 1, out, &err), TM_OK, "%s", err.message);
        cr_expect(out[0] == 1.0f && out[1] == -2.0f, "%c: %g %g", *name, (double)out[0],
                  (double)out[1]);
    }
    close_image(&o);
}

Test(safetensors, scalar_and_zero_length)
{
    const float one = 1.0f;
    const uint64_t empty[2] = {0, 4};
    st_writer *w = st_writer_new();
    st_writer_add(w, "scalar", "F32", 0, NULL, &one, 4);
    st_writer_add(w, "empty", "F32", 2, empty, NULL, 0);
    size_t len;
    uint8_t *img = st_writer_image(w, &len);
    st_writer_free(w);
    opened o = open_image(img, len);
    const tm_tensor *s = tm_tensor_find(o.f, "scalar"), *e = tm_tensor_find(o.f, "empty");
    cr_assert(s && e);
    cr_expect_eq(s->n_dims, 0);
    cr_expect_eq(s->n_elements, 1);
    cr_expect_eq(s->n_bytes, 4);
    cr_expect_eq(e->n_dims, 2);
    cr_expect_eq(e->ne[0], 4);
    cr_expect_eq(e->ne[1], 0);
    cr_expect_eq(e->n_elements, 0);
    cr_expect_eq(e->n_bytes, 0);
    cr_expect_eq(e->offset, 4);
    close_image(&o);
}

Test(safetensors, metadata_as_strings)
{
    st_writer *w = st_writer_new();
    st_writer_meta(w, "format", "pt");
    st_writer_meta(w, "note", "caf\xc3\xa9 \"quoted\"");
    size_t len;
    uint8_t *img = st_writer_image(w, &len);
    st_writer_free(w);
    opened o = open_image(img, len);
    cr_expect_eq(tm_n_kv(o.f), 2);
    cr_expect_eq(tm_n_tensors(o.f), 0);
    tm_str s = {0};
    cr_assert_eq(tm_kv_get_str(tm_kv_find(o.f, "format"), &s), TM_OK);
    cr_expect(s.len == 2 && memcmp(s.ptr, "pt", 2) == 0);
    cr_assert_eq(tm_kv_get_str(tm_kv_find(o.f, "note"), &s), TM_OK);
    cr_expect(s.len == 14 && memcmp(s.ptr, "caf\xc3\xa9 \"quoted\"", 14) == 0, "escapes decoded");
    close_image(&o);
}

/* The reference sorts entries by offset: header order is not data order. */
Test(safetensors, entries_in_any_order)
{
    const char *h = "{\"second\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[2,5]},"
                    "\"first\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    size_t len;
    uint8_t *img = st_image_raw(h, "abcde", 5, &len);
    opened o = open_image(img, len);
    cr_assert_eq(tm_n_tensors(o.f), 2);
    cr_expect_eq(tm_tensor_at(o.f, 0)->name.len, 5, "first in data order");
    cr_expect_eq(memcmp(tm_tensor_find(o.f, "second")->data, "cde", 3), 0);
    close_image(&o);
}

Test(safetensors, trailing_spaces_in_header)
{
    size_t len;
    uint8_t *img = st_image_raw("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}   ",
                                "z", 1, &len);
    opened o = open_image(img, len);
    cr_expect_eq(tm_n_tensors(o.f), 1);
    close_image(&o);
}

/* ---- every refusal ------------------------------------------------------------------------- */

#define T_A(dtype, shape, offs) "{\"a\":{\"dtype\":" dtype ",\"shape\":" shape ",\"data_offsets\":" offs "}}"

Test(safetensors_bad, header_too_large)
{
    uint8_t img[16] = {0};
    uint64_t n = 100000001;
    for (int i = 0; i < 8; i++)
        img[i] = (uint8_t)(n >> (8 * i));
    img[8] = '{';
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_open_buffer(img, sizeof img, 0, &f, &err), TM_LIMIT, "%s", err.message);
    cr_expect(strstr(err.message, "100000001") && strstr(err.message, "limit"), "%s", err.message);
    cr_expect_eq(err.offset, 0);
}

Test(safetensors_bad, header_past_end_of_file)
{
    uint8_t img[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_open_buffer(img, sizeof img, 0, &f, &err), TM_TRUNCATED, "%s", err.message);
    cr_expect(strstr(err.message, "past the end"), "%s", err.message);
}

Test(safetensors_bad, header_not_an_object)
{
    /* the reference requires '{' first; such bytes are not recognised as safetensors at all */
    size_t len;
    uint8_t *img = st_image_raw("[1, 2, 3]", NULL, 0, &len);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_neq(tm_open_buffer(img, len, 0, &f, &err), TM_OK);
    cr_expect_null(f);
    free(img);
}

Test(safetensors_bad, invalid_json)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",}}", 0, TM_BAD_VALUE, NULL, "not valid at byte");
}

Test(safetensors_bad, invalid_utf8)
{
    expect_refusal("{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                   TM_BAD_VALUE, NULL, "invalid UTF-8");
}

Test(safetensors_bad, duplicate_name)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                   "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                   2, TM_DUPLICATE, "\"a\"", "a name appears twice");
}

Test(safetensors_bad, missing_dtype)
{
    expect_refusal("{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, TM_BAD_VALUE, "'a'",
                   "\"dtype\" is missing");
}

Test(safetensors_bad, missing_shape)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, TM_BAD_VALUE, "'a'",
                   "\"shape\" is missing");
}

Test(safetensors_bad, missing_data_offsets)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, TM_BAD_VALUE, "'a'",
                   "\"data_offsets\" is missing");
}

Test(safetensors_bad, entry_not_an_object)
{
    expect_refusal("{\"a\":[1,2]}", 0, TM_BAD_VALUE, "'a'", "not an object");
}

Test(safetensors_bad, dtype_not_a_string)
{
    expect_refusal(T_A("4", "[1]", "[0,1]"), 1, TM_BAD_VALUE, "'a'", "\"dtype\" is not a string");
}

Test(safetensors_bad, unknown_dtype)
{
    expect_refusal(T_A("\"F17\"", "[1]", "[0,1]"), 1, TM_UNSUPPORTED, "'a'", "'F17'");
}

Test(safetensors_bad, shape_not_an_array)
{
    expect_refusal(T_A("\"U8\"", "1", "[0,1]"), 1, TM_BAD_VALUE, "'a'", "\"shape\" is not an array");
}

Test(safetensors_bad, shape_negative)
{
    expect_refusal(T_A("\"U8\"", "[-1]", "[0,1]"), 1, TM_BAD_VALUE, "'a'",
                   "shape[0] is not a non-negative integer");
}

Test(safetensors_bad, shape_not_integer)
{
    expect_refusal(T_A("\"U8\"", "[2, 1.5]", "[0,3]"), 3, TM_BAD_VALUE, "'a'",
                   "shape[1] is not a non-negative integer");
}

Test(safetensors_bad, too_many_dims)
{
    expect_refusal(T_A("\"U8\"", "[1,1,1,1,1]", "[0,1]"), 1, TM_LIMIT, "'a'", "5 dimensions");
}

Test(safetensors_bad, element_count_overflow)
{
    expect_refusal(T_A("\"U8\"", "[4294967296, 4294967296]", "[0,1]"), 1, TM_LIMIT, "'a'",
                   "overflows");
}

Test(safetensors_bad, byte_count_overflow)
{
    expect_refusal(T_A("\"F64\"", "[4611686018427387904]", "[0,1]"), 1, TM_LIMIT, "'a'",
                   "overflow");
}

Test(safetensors_bad, offsets_not_two_integers)
{
    expect_refusal(T_A("\"U8\"", "[1]", "[0]"), 1, TM_BAD_VALUE, "'a'", "\"data_offsets\"");
    expect_refusal(T_A("\"U8\"", "[1]", "[0,\"1\"]"), 1, TM_BAD_VALUE, "'a'", "non-negative integers");
    expect_refusal(T_A("\"U8\"", "[1]", "[-1,0]"), 1, TM_BAD_VALUE, "'a'", "non-negative integers");
}

/* The reference ignores fields it does not know, and reads a null __metadata__ as none. */
Test(safetensors, extra_fields_and_null_metadata)
{
    size_t len;
    uint8_t *img = st_image_raw("{\"__metadata__\":null,\"a\":{\"dtype\":\"U8\",\"shape\":[1],"
                                "\"data_offsets\":[0,1],\"x\":1}}", "z", 1, &len);
    opened o = open_image(img, len);
    cr_expect_eq(tm_n_tensors(o.f), 1);
    cr_expect_eq(tm_n_kv(o.f), 0);
    close_image(&o);
}

Test(safetensors_bad, end_before_begin)
{
    expect_refusal(T_A("\"U8\"", "[0]", "[1,0]"), 1, TM_LAYOUT, "'a'", "end before they begin");
}

Test(safetensors_bad, size_differs_from_shape)
{
    expect_refusal(T_A("\"F32\"", "[2]", "[0,4]"), 4, TM_LAYOUT, "'a'",
                   "hold 4 bytes, but shape and F32 make 8");
}

Test(safetensors_bad, gap)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                   "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}",
                   3, TM_LAYOUT, "'b'", "a gap");
}

Test(safetensors_bad, overlap)
{
    expect_refusal("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                   "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}",
                   3, TM_LAYOUT, "'b'", "an overlap");
}

Test(safetensors_bad, first_tensor_not_at_zero)
{
    expect_refusal(T_A("\"U8\"", "[1]", "[1,2]"), 2, TM_LAYOUT, "'a'", "a gap");
}

Test(safetensors_bad, data_past_end_of_file)
{
    expect_refusal(T_A("\"U8\"", "[4]", "[0,4]"), 2, TM_LAYOUT, "'a'", "past the end");
}

Test(safetensors_bad, data_not_covered)
{
    /* the reference's MetadataIncompleteBuffer: bytes after the last tensor */
    expect_refusal(T_A("\"U8\"", "[1]", "[0,1]"), 3, TM_LAYOUT, NULL, "2 more bytes");
}

Test(safetensors_bad, metadata_not_strings)
{
    expect_refusal("{\"__metadata__\":{\"format\":\"pt\",\"n\":3}}", 0, TM_BAD_VALUE, "'n'",
                   "not a string");
    expect_refusal("{\"__metadata__\":[\"pt\"]}", 0, TM_BAD_VALUE, "__metadata__", "not an object");
}

Test(safetensors_bad, name_too_long)
{
    size_t n = TM_MAX_NAME_LEN + 1;
    char *h = malloc(n + 100);
    strcpy(h, "{\"");
    memset(h + 2, 'x', n);
    strcpy(h + 2 + n, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
    expect_refusal(h, 1, TM_LIMIT, "'xxxx", "over the limit");
    free(h);
}

Test(safetensors_bad, error_offset_points_at_the_entry)
{
    const char *h = "{\"ok\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"bad\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[1,2]}}";
    size_t len;
    uint8_t *img = st_image_raw(h, "xy", 2, &len);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_open_buffer(img, len, 0, &f, &err), TM_UNSUPPORTED);
    cr_expect_eq(err.offset, 8 + (uint64_t)(strstr(h, "\"bad\"") - h), "%llu: %s",
                 (unsigned long long)err.offset, err.message);
    cr_expect(strstr(err.message, "entry 1 of 2"), "%s", err.message); /* counted from 0 */
    free(img);
}

/* ---- sharded checkpoints ------------------------------------------------------------------- */

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tm_st_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    static const char *names[] = {"model-00001-of-00002.safetensors",
                                  "model-00002-of-00002.safetensors",
                                  "model.safetensors.index.json", "lonely.safetensors"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void write_in_dir(const char *name, const void *bytes, size_t len)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(st_write_file(p, bytes, len), 0);
}

static const float w1[4] = {1, 2, 3, 4}, w2[2] = {5, 6}, w3[3] = {7, 8, 9};

/* Two shards: a (2x2) and b (2) in the first, c (3) in the second; index from weight_map. */
static void write_checkpoint(const char *weight_map)
{
    const uint64_t s22[2] = {2, 2}, s2[1] = {2}, s3[1] = {3};
    st_writer *w = st_writer_new();
    st_writer_meta(w, "format", "pt");
    st_writer_add(w, "a", "F32", 2, s22, w1, sizeof w1);
    st_writer_add(w, "b", "F32", 1, s2, w2, sizeof w2);
    char p[128];
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    cr_assert_eq(st_writer_write(w, p), 0);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_meta(w, "format", "pt");
    st_writer_add(w, "c", "F32", 1, s3, w3, sizeof w3);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    cr_assert_eq(st_writer_write(w, p), 0);
    st_writer_free(w);
    char index[1024];
    snprintf(index, sizeof index, "{\"metadata\": {\"total_size\": 36}, \"weight_map\": %s}\n",
             weight_map);
    write_in_dir("model.safetensors.index.json", index, strlen(index));
}

#define GOOD_MAP "{\"a\": \"model-00001-of-00002.safetensors\", " \
                 "\"c\": \"model-00002-of-00002.safetensors\", " \
                 "\"b\": \"model-00001-of-00002.safetensors\"}"

static void check_checkpoint(tm_file *f)
{
    const tm_layout *lay = tm_file_layout(f);
    cr_expect_eq(lay->n_shards, 2);
    cr_expect_eq(lay->n_tensors, 3);
    cr_expect_eq(lay->data_size, sizeof w1 + sizeof w2 + sizeof w3);
    const tm_layout *l0 = tm_shard_layout(f, 0), *l1 = tm_shard_layout(f, 1);
    cr_assert(l0 && l1);
    cr_expect_null(tm_shard_layout(f, 2));
    cr_expect_eq(lay->file_size, l0->file_size + l1->file_size, "totals over the shards");
    cr_expect_eq(lay->data_start + lay->data_size, lay->file_size);
    cr_expect_eq(l1->data_size, sizeof w3);
    cr_expect(strstr(tm_shard_path(f, 1), "model-00002-of-00002.safetensors"), "%s",
              tm_shard_path(f, 1));
    const tm_tensor *c = tm_tensor_find(f, "c"), *b = tm_tensor_find(f, "b");
    cr_assert(c && b && tm_tensor_find(f, "a"));
    cr_expect_eq(c->shard, 1);
    cr_expect_eq(b->shard, 0);
    cr_expect_eq(memcmp(c->data, w3, sizeof w3), 0);
    cr_expect_eq(memcmp(b->data, w2, sizeof w2), 0);
    /* metadata: total_size from the index, "format" once although both shards carry it */
    uint64_t total = 0;
    cr_expect_eq(tm_kv_get_uint(tm_kv_find(f, "total_size"), &total), TM_OK);
    cr_expect_eq(total, 36);
    cr_expect_not_null(tm_kv_find(f, "format"));
    cr_expect_eq(tm_n_kv(f), 2);
}

Test(safetensors_shards, open_the_index, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint(GOOD_MAP);
    char p[128];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(p, 0, &f, &err), TM_OK, "%s", err.message);
    check_checkpoint(f);
    tm_close(f);
}

Test(safetensors_shards, open_a_shard_with_all_shards, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint(GOOD_MAP);
    char p[128];
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(p, TM_OPEN_ALL_SHARDS, &f, &err), TM_OK, "%s", err.message);
    check_checkpoint(f);
    tm_close(f);
    /* without the flag, the shard alone */
    cr_assert_eq(tm_open(p, 0, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), 1);
    cr_expect_eq(tm_file_layout(f)->n_shards, 1);
    tm_close(f);
}

static void expect_index_refusal(tm_status code, const char *what1, const char *what2)
{
    char p[128];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    tm_file *f = NULL;
    tm_error err = {0};
    tm_status s = tm_open(p, 0, &f, &err);
    cr_expect_eq(s, code, "expected %s, got %s: %s", tm_status_name(code), tm_status_name(s),
                 err.message);
    cr_expect_null(f);
    cr_expect(strstr(err.message, what1), "should say %s: %s", what1, err.message);
    cr_expect(strstr(err.message, what2), "should say %s: %s", what2, err.message);
}

Test(safetensors_shards, index_names_a_missing_tensor, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint("{\"a\": \"model-00001-of-00002.safetensors\", "
                     "\"b\": \"model-00001-of-00002.safetensors\", "
                     "\"c\": \"model-00002-of-00002.safetensors\", "
                     "\"d\": \"model-00002-of-00002.safetensors\"}");
    expect_index_refusal(TM_NOT_FOUND, "'d'", "does not hold it");
}

Test(safetensors_shards, tensor_placed_elsewhere, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint("{\"a\": \"model-00001-of-00002.safetensors\", "
                     "\"b\": \"model-00002-of-00002.safetensors\", "
                     "\"c\": \"model-00002-of-00002.safetensors\"}");
    expect_index_refusal(TM_BAD_VALUE, "'b'", "is placed by the index in 'model-00002");
}

Test(safetensors_shards, tensor_not_in_the_index, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint("{\"a\": \"model-00001-of-00002.safetensors\", "
                     "\"c\": \"model-00002-of-00002.safetensors\"}");
    expect_index_refusal(TM_BAD_VALUE, "'b'", "not in the index's weight map");
}

Test(safetensors_shards, shard_names_stay_in_the_directory, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint("{\"a\": \"../model-00001-of-00002.safetensors\"}");
    expect_index_refusal(TM_BAD_VALUE, "'a'", "not a plain file name");
    write_checkpoint("{\"a\": \"..\"}");
    expect_index_refusal(TM_BAD_VALUE, "'..'", "not a plain file name");
}

Test(safetensors_shards, missing_shard_file, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint("{\"a\": \"model-00003-of-00002.safetensors\"}");
    expect_index_refusal(TM_NOT_FOUND, "model-00003-of-00002.safetensors", "");
}

Test(safetensors_shards, all_shards_without_an_index, .init = make_dir, .fini = remove_dir)
{
    const uint64_t s1[1] = {1};
    st_writer *w = st_writer_new();
    st_writer_add(w, "x", "U8", 1, s1, "x", 1);
    char p[128];
    snprintf(p, sizeof p, "%s/lonely.safetensors", dir);
    cr_assert_eq(st_writer_write(w, p), 0);
    st_writer_free(w);
    /* a file with no index beside it is a checkpoint of its own */
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(p, TM_OPEN_ALL_SHARDS, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), 1);
    cr_expect_eq(tm_file_layout(f)->n_shards, 1);
    tm_close(f);
}

Test(safetensors_shards, all_shards_from_a_file_the_index_does_not_name, .init = make_dir,
     .fini = remove_dir)
{
    write_checkpoint(GOOD_MAP);
    const uint64_t s1[1] = {1};
    st_writer *w = st_writer_new();
    st_writer_add(w, "x", "U8", 1, s1, "x", 1);
    char p[128];
    snprintf(p, sizeof p, "%s/lonely.safetensors", dir);
    cr_assert_eq(st_writer_write(w, p), 0);
    st_writer_free(w);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_open(p, TM_OPEN_ALL_SHARDS, &f, &err), TM_NOT_FOUND, "%s", err.message);
    cr_expect(strstr(err.message, "names no shard 'lonely.safetensors'"), "%s", err.message);
}

Test(safetensors_shards, index_without_a_directory)
{
    const char *idx = "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\"}}";
    tm_file *f = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_open_buffer(idx, strlen(idx), 0, &f, &err), TM_UNSUPPORTED, "%s", err.message);
    cr_expect(strstr(err.message, "no directory"), "%s", err.message);
}

Test(safetensors_shards, index_not_valid)
{
    static const struct {
        const char *json, *says;
        tm_status code;
    } bad[] = {
        {"{\"weight_map\": {\"a\": \"x\", \"a\": \"y\"}}", "a name appears twice", TM_DUPLICATE},
        {"{\"weight_map\": [\"x\"]}", "\"weight_map\" is not an object", TM_BAD_VALUE},
        {"{\"metadata\": {}}", "\"weight_map\" is missing", TM_BAD_VALUE},
        {"{\"weight_map\": {\"a\": 3}}", "'a' is not a shard file name", TM_BAD_VALUE},
        {"{\"metadata\": {\"total_size\": -1}, \"weight_map\": {}}", "'total_size' is neither",
         TM_BAD_VALUE},
        {"{\"weight_map\": {}}", "names no shards", TM_BAD_VALUE},
        {"{\"weight_map\": {\"a\": \"b\"}", "not valid at byte", TM_BAD_VALUE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tm_file *f = NULL;
        tm_error err = {0};
        tm_status s = tm_open_buffer(bad[i].json, strlen(bad[i].json), 0, &f, &err);
        cr_expect_eq(s, bad[i].code, "%s: got %s: %s", bad[i].json, tm_status_name(s), err.message);
        cr_expect(strstr(err.message, bad[i].says), "%s: should say %s: %s", bad[i].json,
                  bad[i].says, err.message);
    }
}

Test(safetensors_shards, shard_layouts, .init = make_dir, .fini = remove_dir)
{
    write_checkpoint(GOOD_MAP);
    char p[128];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(p, 0, &f, &err), TM_OK, "%s", err.message);
    uint64_t header_bytes = 0, file_bytes = 0;
    for (uint32_t i = 0; i < 2; i++) {
        const tm_layout *l = tm_shard_layout(f, i);
        const uint8_t *bytes = tm_file_bytes(f);
        FILE *fp = fopen(tm_shard_path(f, i), "rb");
        cr_assert_not_null(fp);
        uint8_t len8[8];
        cr_assert_eq(fread(len8, 1, 8, fp), 8);
        fseek(fp, 0, SEEK_END);
        uint64_t size = (uint64_t)ftell(fp), n = 0;
        fclose(fp);
        for (int k = 7; k >= 0; k--)
            n = n << 8 | len8[k];
        cr_expect_eq(l->data_start, 8 + n, "shard %u", i);
        cr_expect_eq(l->file_size, size);
        cr_expect_eq(l->n_tensors, i == 0 ? 2 : 1);
        cr_expect_eq(l->n_kv, 1, "each shard's own __metadata__");
        if (i == 0)
            cr_expect_eq(memcmp(bytes, len8, 8), 0, "tm_file_bytes is shard 0");
        header_bytes += 8 + n;
        file_bytes += size;
    }
    cr_expect_eq(tm_file_layout(f)->data_start, header_bytes);
    cr_expect_eq(tm_file_layout(f)->file_size, file_bytes);
    tm_close(f);
}
