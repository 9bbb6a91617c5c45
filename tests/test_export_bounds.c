/* export on tensors at the edges of its buffers: a row longer than the decode chunk (32 MiB of
 * float32), names and keys longer than any fixed buffer. The long-row models are sparse files:
 * a hole of f16 zeros with a few values planted where the pieces meet, so every value that
 * comes out is known without the code under test. */
#include "support/st_writer.h"
#include "support/test_cli.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* export decodes 8 Mi floats at a time */
#define CHUNK ((uint64_t)8 << 20)

typedef struct planted {
    uint64_t at;      /* element index */
    uint16_t half;    /* its f16 bits */
    float value;      /* what they are */
} planted;

/* A GGUF file with one 1-D f16 tensor "long" of n elements: zeros but for the planted ones. */
static void write_long_gguf(const char *path, uint64_t n, const planted *p, size_t n_planted)
{
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "long", TM_TYPE_F16, 1, &n, NULL, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    tm_file *f;
    cr_assert_eq(tm_open(path, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    const uint64_t data = tm_file_layout(f)->data_start + tm_tensor_at(f, 0)->offset;
    tm_close(f);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    for (size_t i = 0; i < n_planted; i++)
        cr_assert_eq(pwrite(fd, &p[i].half, 2, (off_t)(data + 2 * p[i].at)), 2);
    close(fd);
}

/* The exported tensor "long" is n float32 values: the planted ones, zeros elsewhere. */
static void expect_long_values(const char *path, uint64_t n, const planted *p, size_t n_planted)
{
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(f, "long");
    cr_assert_not_null(t);
    cr_assert_eq(t->type, TM_TYPE_F32);
    cr_assert_eq(t->n_elements, n);
    const float *v = t->data;
    uint64_t wrong = 0, first_wrong = 0;
    for (uint64_t i = 0; i < n; i++) {
        float want = 0;
        for (size_t k = 0; k < n_planted; k++)
            if (p[k].at == i)
                want = p[k].value;
        if (memcmp(&v[i], &want, sizeof want) != 0 && wrong++ == 0)
            first_wrong = i;
    }
    cr_expect_eq(wrong, 0, "%" PRIu64 " values differ, the first at element %" PRIu64, wrong,
                 first_wrong);
    tm_close(f);
}

/* A row one element longer than the chunk (the shortest that overran the 32 MiB buffer, which
 * ASan sees), and one a chunk and a half long whose overrun the plain build feels too: values
 * planted at both ends of every piece. */
static void long_row(uint64_t n)
{
    const planted p[] = {
        {0, 0x3c00, 1.0f},            {CHUNK - 1, 0xc000, -2.0f},
        {CHUNK, 0x3800, 0.5f},        {n - 1, 0x4200, 3.0f},
    };
    const size_t np = sizeof p / sizeof p[0];
    const char *in = test_path("long.gguf"), *out = test_path("long.safetensors");
    write_long_gguf(in, n, p, np);
    tool_result r = tool_run("export", in, out, NULL);
    cr_assert_eq(r.status, 0, "export of a %" PRIu64 "-element row: %s", n, r.err);
    expect_long_values(out, n, p, np);
    tool_result_free(&r);
}

Test(export_bounds, a_row_one_element_longer_than_the_chunk) { long_row(CHUNK + 1); }
Test(export_bounds, a_row_of_a_chunk_and_a_half) { long_row(CHUNK + CHUNK / 2 + 3); }

/* ---- names of any length ------------------------------------------------------------------ */

/* A name of n bytes: prefix, then 'x' up to n. malloc'ed. */
static char *long_name(const char *prefix, size_t n)
{
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memset(s, 'x', n);
    memcpy(s, prefix, strlen(prefix));
    s[n] = 0;
    return s;
}

/* The exported file holds a tensor of this name, whose 4 values are want. */
static void expect_tensor(const tm_file *f, const char *name, const float *want)
{
    const tm_tensor *t = tm_tensor_find(f, name);
    cr_assert_not_null(t, "the %zu-byte name '%.40s...' is exported", strlen(name), name);
    cr_assert_eq(t->n_elements, 4);
    cr_expect_eq(memcmp(t->data, want, 16), 0, "its values");
}

static const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {9, 10, 11, 12};

/* A GGUF file of three tensors: "short" (a), a name of 320 bytes (b) and one of 65,535, the
 * most GGUF allows (c); and general.* keys of 300 bytes and of 65,535. Returns its path. */
static const char *write_long_names(char **n320, char **n_max, char **k300, char **k_max)
{
    *n320 = long_name("blk.0.", 320);
    *n_max = long_name("blk.1.", TM_MAX_NAME_LEN);
    *k300 = long_name("general.", 300);
    *k_max = long_name("general.", TM_MAX_NAME_LEN);
    const uint64_t ne[1] = {4};
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, *k300, "300", 3, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_kv_str(w, *k_max, "max", 3, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "short", TM_TYPE_F32, 1, ne, a, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, *n320, TM_TYPE_F32, 1, ne, b, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, *n_max, TM_TYPE_F32, 1, ne, c, &err), TM_OK, "%s", err.message);
    const char *in = test_path("names.gguf");
    cr_assert_eq(tm_writer_finish(w, in, &err), TM_OK, "%s", err.message);
    return in;
}

/* export, then open what it wrote */
static tm_file *export_and_open(const char *in, const char *pattern)
{
    const char *out = test_path("names.safetensors");
    tool_result r = pattern ? tool_run("export", "--tensors", pattern, in, out, NULL)
                            : tool_run("export", in, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(!strstr(r.out, "left out"), "nothing is left out: %s", r.out);
    tool_result_free(&r);
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(out, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    return f;
}

/* export dropped every tensor whose name was 320 bytes or longer, and exited 0. */
Test(export_bounds, gguf_tensor_names_of_any_length)
{
    char *n320, *n_max, *k300, *k_max;
    tm_file *f = export_and_open(write_long_names(&n320, &n_max, &k300, &k_max), NULL);
    cr_expect_eq(tm_n_tensors(f), 3);
    expect_tensor(f, "short", a);
    expect_tensor(f, n320, b);
    expect_tensor(f, n_max, c);
    tm_close(f);
    free(n320), free(n_max), free(k300), free(k_max);
}

/* --tensors never matched a name of 320 bytes or longer: blk.*x matches both long names. */
Test(export_bounds, tensors_pattern_on_long_names)
{
    char *n320, *n_max, *k300, *k_max;
    tm_file *f = export_and_open(write_long_names(&n320, &n_max, &k300, &k_max), "blk.*x");
    cr_expect_eq(tm_n_tensors(f), 2);
    expect_tensor(f, n320, b);
    expect_tensor(f, n_max, c);
    tm_close(f);
    free(n320), free(n_max), free(k300), free(k_max);
}

/* general.* strings go to __metadata__; a key of 256 bytes or longer was left out. */
Test(export_bounds, gguf_metadata_keys_of_any_length)
{
    char *n320, *n_max, *k300, *k_max;
    tm_file *f = export_and_open(write_long_names(&n320, &n_max, &k300, &k_max), NULL);
    tm_str v;
    cr_expect_eq(tm_kv_get_str(tm_kv_find(f, k300), &v), TM_OK, "the 300-byte key");
    cr_expect(v.len == 3 && memcmp(v.ptr, "300", 3) == 0);
    cr_expect_eq(tm_kv_get_str(tm_kv_find(f, k_max), &v), TM_OK, "the 65,535-byte key");
    cr_expect(v.len == 3 && memcmp(v.ptr, "max", 3) == 0);
    tm_close(f);
    free(n320), free(n_max), free(k300), free(k_max);
}

/* The format sets safetensors names no limit; the reader takes them up to TM_MAX_NAME_LEN
 * bytes, as GGUF's, and export writes back whatever it reads. */
Test(export_bounds, a_safetensors_name_as_long_as_the_reader_takes)
{
    static const float d[4] = {-1, 0.5f, 2, 1e30f};
    char *name = long_name("model.", TM_MAX_NAME_LEN);
    const uint64_t shape[1] = {4};
    st_writer *sw = st_writer_new();
    st_writer_add(sw, name, "F32", 1, shape, d, sizeof d);
    const char *in = test_path("long.safetensors"), *out = test_path("back.safetensors");
    cr_assert_eq(st_writer_write(sw, in), 0);
    st_writer_free(sw);
    tool_result r = tool_run("export", in, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(out, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), 1);
    expect_tensor(f, name, d);
    tm_close(f);
    free(name);
}

TestSuite(export_bounds, .fini = test_cleanup);
