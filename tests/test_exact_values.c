/* Integer, bool and f64 tensors leave dump and stats exactly, in their own type: float32 would
 * round I64 2^53 + 1 to 2^53 and F64 1e300 to infinity. A safetensors file and a GGUF file hold
 * values chosen to be ones float32 cannot (the extremes of each integer type, 2^53 + 1, 1e300,
 * 0.1); the .npy files dump writes are loaded back with numpy (Debian's python3), which must
 * see the dtype and every value the file holds, and the summaries stats prints are checked
 * against those values, written here. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(exact_values, .fini = test_cleanup);

#define P53 (INT64_C(1) << 53)

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

/* One tensor of the test file: its safetensors dtype, PyTorch shape, bytes; what numpy must
 * load (descr, shape and values as Python literals). */
typedef struct case_ {
    const char *name, *dtype;
    uint32_t n_dims;
    uint64_t shape[2];
    const void *data;
    size_t n_bytes;
    const char *npy, *py_shape, *py_values;
} case_;

static const int64_t i64s[4] = {P53 + 1, -(P53 + 1), INT64_MAX, INT64_MIN};
static const double f64s[3] = {1e300, -1e-300, 0.1};
static const int32_t i32s[2] = {INT32_MAX, INT32_MIN};
static const int16_t i16s[2] = {INT16_MAX, INT16_MIN};
static const int8_t i8s[2] = {INT8_MAX, INT8_MIN};
static const uint64_t u64s[2] = {UINT64_MAX, P53 + 1};
static const uint32_t u32s[2] = {UINT32_MAX, 16777217};
static const uint16_t u16s[2] = {UINT16_MAX, 1};
static const uint8_t u8s[4] = {0, 1, 200, 255};
static const uint8_t bools[3] = {0, 1, 7}; /* any byte but 0 is true */
static const float f32s[2] = {0.5f, -2.0f};

static const case_ cases[] = {
    {"i64", "I64", 2, {2, 2}, i64s, sizeof i64s, "<i8", "(2, 2)",
     "[[9007199254740993, -9007199254740993], [9223372036854775807, -9223372036854775808]]"},
    {"f64", "F64", 1, {3}, f64s, sizeof f64s, "<f8", "(3,)", "[1e300, -1e-300, 0.1]"},
    {"i32", "I32", 1, {2}, i32s, sizeof i32s, "<i4", "(2,)", "[2147483647, -2147483648]"},
    {"i16", "I16", 1, {2}, i16s, sizeof i16s, "<i2", "(2,)", "[32767, -32768]"},
    {"i8", "I8", 1, {2}, i8s, sizeof i8s, "|i1", "(2,)", "[127, -128]"},
    {"u64", "U64", 1, {2}, u64s, sizeof u64s, "<u8", "(2,)",
     "[18446744073709551615, 9007199254740993]"},
    {"u32", "U32", 1, {2}, u32s, sizeof u32s, "<u4", "(2,)", "[4294967295, 16777217]"},
    {"u16", "U16", 1, {2}, u16s, sizeof u16s, "<u2", "(2,)", "[65535, 1]"},
    {"u8", "U8", 2, {2, 2}, u8s, sizeof u8s, "|u1", "(2, 2)", "[[0, 1], [200, 255]]"},
    {"bool", "BOOL", 1, {3}, bools, sizeof bools, "|b1", "(3,)", "[False, True, True]"},
    {"f32", "F32", 1, {2}, f32s, sizeof f32s, "<f4", "(2,)", "[0.5, -2.0]"},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* (test_path's slots are reused: the paths of the two models are kept here) */
static char st_file[300], gguf_file[300];

static const char *write_safetensors(void)
{
    st_writer *w = st_writer_new();
    for (size_t i = 0; i < N_CASES; i++)
        st_writer_add(w, cases[i].name, cases[i].dtype, cases[i].n_dims, cases[i].shape,
                      cases[i].data, cases[i].n_bytes);
    const char *path = strcpy(st_file, test_path("exact.safetensors"));
    cr_assert_eq(st_writer_write(w, path), 0);
    st_writer_free(w);
    return path;
}

/* The GGUF types ggml has: i64 and f64 (ne is the PyTorch shape reversed), and i32. */
static const char *write_gguf(void)
{
    const char *path = strcpy(gguf_file, test_path("exact.gguf"));
    tm_writer *w;
    tm_error err;
    const uint64_t ne_i64[2] = {2, 2}, ne_f64[1] = {3}, ne_i32[1] = {2};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "i64", TM_TYPE_I64, 2, ne_i64, i64s, &err), &err);
    ok(tm_writer_tensor(w, "f64", TM_TYPE_F64, 1, ne_f64, f64s, &err), &err);
    ok(tm_writer_tensor(w, "i32", TM_TYPE_I32, 1, ne_i32, i32s, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

/* numpy.load(path) has dtype descr, shape and values (Python literals), or the test fails
 * with what numpy saw. */
static void numpy_sees(const char *path, const char *descr, const char *shape, const char *values)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import numpy, sys\n"
             "a = numpy.load(sys.argv[1])\n"
             "got = (a.dtype.str, a.shape, a.tolist())\n"
             "want = (sys.argv[2], eval(sys.argv[3]), eval(sys.argv[4]))\n"
             "print(\"same\" if got == want else \"numpy sees %%r, not %%r\" %% (got, want))' "
             "'%s' '%s' '%s' '%s' 2>&1",
             path, descr, shape, values);
    int st;
    char *out = shell_output(cmd, &st);
    cr_expect(st == 0 && strcmp(out, "same\n") == 0, "%s: %s", path, out);
    free(out);
}

Test(exact_values, dump_npy_loads_in_numpy_with_the_files_own_dtype_and_values)
{
    const char *st = write_safetensors();
    for (size_t i = 0; i < N_CASES; i++) {
        char out[300];
        snprintf(out, sizeof out, "%s", test_path(cases[i].name));
        strcat(out, ".npy");
        tool_result r = tool_run("dump", st, cases[i].name, "-o", out, NULL);
        cr_assert_eq(r.status, 0, "%s: %s", cases[i].name, r.err);
        tool_result_free(&r);
        numpy_sees(out, cases[i].npy, cases[i].py_shape, cases[i].py_values);
    }
    /* the GGUF's: the same values, numpy's shape being ne reversed */
    const char *gg = write_gguf();
    static const char *const names[] = {"i64", "f64", "i32"};
    for (size_t i = 0; i < 3; i++) {
        const char *out = test_path("gguf.npy");
        tool_result r = tool_run("dump", gg, names[i], "-o", out, NULL);
        cr_assert_eq(r.status, 0, "%s: %s", names[i], r.err);
        tool_result_free(&r);
        numpy_sees(out, cases[i].npy, cases[i].py_shape, cases[i].py_values);
    }
    /* a slice of rows keeps the dtype: (rows, row length) */
    const char *out = test_path("rows.npy");
    tool_result r = tool_run("dump", st, "i64", "--rows", "1:2", "-o", out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    numpy_sees(out, "<i8", "(1, 2)", "[[9223372036854775807, -9223372036854775808]]");
}

/* raw and lz4 are the file's little-endian values (a bool 0 or 1); dump --all names a raw file
 * by its dtype. */
Test(exact_values, raw_and_lz4_are_the_values_as_the_file_holds_them)
{
    const char *st = write_safetensors();
    for (size_t i = 0; i < N_CASES; i++) {
        tool_result r = tool_run("dump", st, cases[i].name, "-o", "-", NULL);
        cr_assert_eq(r.status, 0, "%s: %s", cases[i].name, r.err);
        cr_assert_eq(r.out_len, cases[i].n_bytes, "%s: %zu bytes", cases[i].name, r.out_len);
        if (strcmp(cases[i].name, "bool") == 0)
            cr_expect(r.out[0] == 0 && r.out[1] == 1 && r.out[2] == 1, "a bool is 0 or 1");
        else
            cr_expect_eq(memcmp(r.out, cases[i].data, cases[i].n_bytes), 0, "%s", cases[i].name);
        tool_result_free(&r);
    }
    char lz[300], back[300];
    snprintf(lz, sizeof lz, "%s", test_path("i64.lz4"));
    snprintf(back, sizeof back, "%s", test_path("i64.back"));
    tool_result r = tool_run("dump", st, "i64", "-o", lz, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "lz4 -d -c -q '%s' > '%s'", lz, back);
    cr_assert_eq(system(cmd), 0, "lz4 -d failed on the dump");
    size_t n;
    char *got = read_all(back, &n);
    cr_expect(n == sizeof i64s && memcmp(got, i64s, n) == 0, "the lz4 frame holds other bytes");
    free(got);

    const char *dir = test_path("all");
    r = tool_run("dump", "--all", "--format", "raw", st, "-o", dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    static const char *const files[] = {"i64.i64", "f64.f64", "u8.u8", "bool.bool", "f32.f32"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        free(read_all(path, NULL)); /* fails the test when absent */
    }
}

static const json_t *stats_of(json_t *j, size_t i)
{
    const json_t *s = json_array_get(j, i);
    cr_assert_not_null(s);
    return s;
}

/* stats: min, max and the first values are the file's, exactly; no infinity appears that the
 * file does not hold. */
Test(exact_values, stats_reports_the_files_own_values)
{
    const char *st = write_safetensors();
    json_t *j = tool_json(0, "stats", "--json", st, "i64", "f64", "u64", "u32", "bool", NULL);
    const json_t *s = stats_of(j, 0); /* i64 */
    cr_expect_str_eq(json_string_value(json_object_get(s, "min")), "-9223372036854775808");
    cr_expect_str_eq(json_string_value(json_object_get(s, "max")), "9223372036854775807");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(s, "first"), 0)),
                     "9007199254740993");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(s, "first"), 1)),
                     "-9007199254740993");
    s = stats_of(j, 1); /* f64 */
    cr_expect_eq(json_u64(s, "inf"), 0, "stats found an infinity the file does not hold");
    cr_expect_eq(json_u64(s, "finite"), 3);
    cr_expect_eq(json_real_value(json_object_get(s, "max")), 1e300);
    cr_expect_eq(json_real_value(json_object_get(s, "min")), -1e-300);
    cr_expect_eq(json_real_value(json_array_get(json_object_get(s, "first"), 2)), 0.1);
    cr_expect_eq(json_real_value(json_object_get(s, "mean")), (1e300 - 1e-300 + 0.1) / 3);
    s = stats_of(j, 2); /* u64 */
    cr_expect_str_eq(json_string_value(json_object_get(s, "max")), "18446744073709551615");
    cr_expect_str_eq(json_string_value(json_object_get(s, "min")), "9007199254740993");
    s = stats_of(j, 3); /* u32: 16777217 is not an f32 */
    cr_expect_eq(json_integer_value(json_object_get(s, "min")), 16777217);
    cr_expect_eq(json_integer_value(json_object_get(s, "max")), 4294967295);
    s = stats_of(j, 4); /* bool: 0 or 1 */
    cr_expect_eq(json_integer_value(json_object_get(s, "max")), 1);
    cr_expect_eq(json_integer_value(json_array_get(json_object_get(s, "first"), 2)), 1);
    json_decref(j);

    /* the text says the same */
    tool_result r = tool_run("stats", st, "f64", "i64", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "  largest                  1e+300\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  infinite                 0\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  the first of them        9007199254740993 -9007199254740993 "
                            "9223372036854775807 -9223372036854775808\n"),
              "%s", r.out);
    tool_result_free(&r);
    r = tool_run("stats", st, NULL); /* one line each: no inf where the file has none */
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *at = strstr(r.out, "\nf64 ");
    cr_assert_not_null(at, "%s", r.out);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
    cr_expect(strstr(line, " 1e+300 ") && !strstr(line, "inf"), "%s", line);
    tool_result_free(&r);
}
