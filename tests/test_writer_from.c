/* A writer seeded from an open file (tm_writer_new_from, tm_writer_kv_copy, tm_writer_kv_delete,
 * tm_writer_tensor_copy, verification): what it writes is compared with the source byte for
 * byte, never with what the code under test says. */
#include "support/test_cli.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OK(call)                                                                               \
    do {                                                                                       \
        tm_error err_ = {0};                                                                   \
        tm_status st_ = (call);                                                                \
        (void)err_;                                                                            \
        cr_assert_eq(st_, TM_OK, "%s", #call);                                                 \
    } while (0)

static uint8_t q8_bytes[2 * 34], f32_bytes[3 * 16];

/* A file with a value of every type, alignment 64 (declared), a q8_0 and an f32 tensor with a
 * gap between them (an explicit offset), written by the library's writer. */
static void write_source(const char *path, uint8_t seed)
{
    for (size_t i = 0; i < sizeof q8_bytes; i++)
        q8_bytes[i] = (uint8_t)(i * 7 + seed);
    for (size_t i = 0; i < sizeof f32_bytes; i++)
        f32_bytes[i] = (uint8_t)(i * 13 + seed);
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_set_alignment(w, 64, &err), TM_OK);
    const uint32_t align = 64;
    const uint8_t u8 = 200, b = 1;
    const int8_t i8 = -100;
    const uint16_t u16 = 60000;
    const int16_t i16 = -30000;
    const uint32_t u32 = 4000000000u;
    const int32_t i32 = -2000000000;
    const float f32 = 0.1f;
    const uint64_t u64 = UINT64_MAX - 1;
    const int64_t i64 = INT64_MIN + 1;
    const double f64 = -1e300;
    const int32_t arr[3] = {1, -2, 3};
    const char *strs[2] = {"a", "\xc3\xa9t\xc3\xa9"};
    cr_assert_eq(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &align, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "source", 6, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.u8", TM_V_U8, &u8, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.i8", TM_V_I8, &i8, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.u16", TM_V_U16, &u16, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.i16", TM_V_I16, &i16, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.u32", TM_V_U32, &u32, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.i32", TM_V_I32, &i32, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.f32", TM_V_F32, &f32, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.bool", TM_V_BOOL, &b, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.u64", TM_V_U64, &u64, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.i64", TM_V_I64, &i64, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.f64", TM_V_F64, &f64, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_array(w, "v.arr_i32", TM_V_I32, arr, 3, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str_array(w, "v.arr_str", strs, NULL, 2, &err), TM_OK);
    const uint64_t ne_q[2] = {32, 2}, ne_f[2] = {4, 3};
    cr_assert_eq(tm_writer_tensor(w, "q", TM_TYPE_Q8_0, 2, ne_q, q8_bytes, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor_at(w, "f", TM_TYPE_F32, 2, ne_f, 256, f32_bytes, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *pa = read_all(a, &na), *pb = read_all(b, &nb);
    bool same = na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

Test(writer_from, reproduces_the_source_byte_for_byte, .fini = test_cleanup)
{
    char src[256], out[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(out, sizeof out, "%s", test_path("out.gguf"));
    write_source(src, 1);
    tm_file *f = NULL;
    tm_writer *w = NULL;
    OK(tm_open(src, 0, &f, &err_));
    OK(tm_writer_new_from(f, &w, &err_));
    OK(tm_writer_finish(w, out, &err_));
    tm_close(f);
    cr_assert(same_file(src, out), "every entry and every tensor where it was");
}

Test(writer_from, a_tensor_of_another_file_is_refused, .fini = test_cleanup)
{
    char src[256], other[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(other, sizeof other, "%s", test_path("other.gguf"));
    write_source(src, 1);
    write_source(other, 2);
    tm_file *f = NULL, *g = NULL;
    tm_writer *w = NULL;
    OK(tm_open(src, 0, &f, &err_));
    OK(tm_open(other, 0, &g, &err_));
    OK(tm_writer_new(&w, &err_));
    tm_error err = {0};
    /* g's tensor with f: its shard index and offsets are g's, its bytes g's mapping */
    cr_expect_eq(tm_writer_tensor_copy(w, f, tm_tensor_at(g, 0), NULL, true, &err),
                 TM_INVALID_ARG);
    cr_expect(strstr(err.message, "another file's"), "%s", err.message);
    cr_expect_eq(tm_writer_tensor_copy(w, f, tm_tensor_at(f, 0), NULL, true, &err), TM_OK, "%s",
                 err.message);
    tm_writer_free(w);
    tm_close(g);
    tm_close(f);
}

Test(writer_from, delete_add_and_rename, .fini = test_cleanup)
{
    char src[256], out[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(out, sizeof out, "%s", test_path("out.gguf"));
    write_source(src, 2);
    tm_file *f = NULL;
    tm_writer *w = NULL;
    tm_error err = {0};
    OK(tm_open(src, 0, &f, &err_));
    OK(tm_writer_new(&w, &err_));
    OK(tm_writer_set_alignment(w, 64, &err_));
    for (uint64_t i = 0; i < tm_n_kv(f); i++)
        OK(tm_writer_kv_copy(w, tm_kv_at(f, i), &err_));
    OK(tm_writer_kv_delete(w, "v.u8", &err_));
    cr_assert_eq(tm_writer_kv_delete(w, "v.u8", &err), TM_NOT_FOUND);
    cr_assert(strstr(err.message, "'v.u8'"), "%s", err.message);
    OK(tm_writer_kv_delete(w, "general.name", &err_));
    OK(tm_writer_kv_str(w, "general.name", "edited", 6, &err_));
    OK(tm_writer_tensor_copy(w, f, tm_tensor_find(f, "f"), "f.renamed", false, &err_));
    OK(tm_writer_tensor_copy(w, f, tm_tensor_find(f, "q"), NULL, false, &err_));
    OK(tm_writer_finish(w, out, &err_));

    tm_file *g = NULL;
    OK(tm_open(out, 0, &g, &err_));
    cr_assert_eq(tm_n_kv(g), tm_n_kv(f) - 1);
    cr_assert_null(tm_kv_find(g, "v.u8"));
    tm_str name;
    OK(tm_kv_get_str(tm_kv_at(g, tm_n_kv(g) - 1), &name));
    cr_assert(name.len == 6 && memcmp(name.ptr, "edited", 6) == 0, "added again, last");
    /* every other entry byte for byte */
    for (uint64_t i = 0; i < tm_n_kv(f); i++) {
        const tm_kv *a = tm_kv_at(f, i);
        const tm_kv *c = tm_kv_findn(g, a->key.ptr, (size_t)a->key.len);
        if (!c || memcmp(a->key.ptr, "general.name", 12) == 0)
            continue;
        cr_assert_eq(c->n_bytes, a->n_bytes);
        cr_assert_eq(memcmp(tm_file_bytes(g) + c->offset, tm_file_bytes(f) + a->offset,
                            (size_t)a->n_bytes), 0);
    }
    /* tensors in the new order, renamed, bytes unchanged, packed at the alignment */
    const tm_tensor *t0 = tm_tensor_at(g, 0), *t1 = tm_tensor_at(g, 1);
    cr_assert(t0->name.len == 9 && memcmp(t0->name.ptr, "f.renamed", 9) == 0);
    cr_assert_eq(t0->offset, 0);
    cr_assert_eq(t1->offset, 64);
    cr_assert_eq(memcmp(t0->data, f32_bytes, sizeof f32_bytes), 0);
    cr_assert_eq(memcmp(t1->data, q8_bytes, sizeof q8_bytes), 0);
    tm_close(g);
    tm_close(f);
}

/* The source renamed over while the writer holds its tensors: the bytes written are the ones
 * mapped (what the reader saw), not the new file's. */
Test(writer_from, a_replaced_source_is_copied_from_the_mapping, .fini = test_cleanup)
{
    char src[256], other[256], out[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(other, sizeof other, "%s", test_path("other.gguf"));
    snprintf(out, sizeof out, "%s", test_path("out.gguf"));
    write_source(src, 3);
    size_t n;
    char *before = read_all(src, &n);
    tm_file *f = NULL;
    tm_writer *w = NULL;
    OK(tm_open(src, 0, &f, &err_));
    OK(tm_writer_new_from(f, &w, &err_));
    write_source(other, 99); /* same layout, other tensor bytes */
    cr_assert_eq(rename(other, src), 0);
    OK(tm_writer_finish(w, out, &err_));
    tm_close(f);
    size_t m;
    char *after = read_all(out, &m);
    cr_assert_eq(m, n);
    cr_assert_eq(memcmp(before, after, n), 0);
    free(before);
    free(after);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.' || strncmp(e->d_name, ".out", 4) == 0;
    closedir(d);
    return n;
}

/* Verification: a file the reader refuses (two tensors of one name) never replaces anything. */
Test(writer_from, verify_keeps_the_destination_when_the_reader_refuses, .fini = test_cleanup)
{
    char out[256];
    snprintf(out, sizeof out, "%s", test_path("out.gguf"));
    FILE *o = fopen(out, "w");
    fputs("what was here", o);
    fclose(o);
    tm_writer *w = NULL;
    tm_error err = {0};
    const float v[4] = {1, 2, 3, 4};
    const uint64_t ne[1] = {4};
    OK(tm_writer_new(&w, &err_));
    OK(tm_writer_set_verify(w, true, &err_));
    OK(tm_writer_tensor(w, "x", TM_TYPE_F32, 1, ne, v, &err_));
    OK(tm_writer_tensor(w, "x", TM_TYPE_F32, 1, ne, v, &err_));
    /* refused by the writer itself now, before the file exists (issue 13 item 6) */
    cr_assert_eq(tm_writer_finish(w, out, &err), TM_DUPLICATE, "%s", err.message);
    cr_assert(strstr(err.message, "tensors 0 and 1 are both named 'x'"), "%s", err.message);
    size_t n;
    char *kept = read_all(out, &n);
    cr_assert(n == 13 && memcmp(kept, "what was here", 13) == 0);
    free(kept);
    cr_assert_eq(count_entries(test_dir()), 1, "no temporary file left");
}
