/* export on tensors at the edges of its buffers: a row longer than the decode chunk (32 MiB of
 * float32). The models are sparse files: a hole of f16 zeros with a few values planted where
 * the pieces meet, so every value that comes out is known without the code under test. */
#include "support/test_cli.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <fcntl.h>
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

TestSuite(export_bounds, .fini = test_cleanup);
