/* An edit changes the bytes it was asked to change and no others: the data section is the
 * source's byte for byte, with the padding ggml writes after the last tensor (golden-a.gguf is
 * 293,856 bytes, its last tensor ends at 293,836) and whatever lies between tensors, the file's
 * size included; when the header outgrows its padding, the same section moves whole. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(edit_bytes, .fini = test_cleanup);

static const tm_layout *layout_of(const char *path, tm_file **f)
{
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, f, &err), TM_OK, "%s: %s", path, err.message);
    return tm_file_layout(*f);
}

/* A copy of the golden file in the test's directory (the corpus is never written). */
static const char *golden_copy(void)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char src[512];
    snprintf(src, sizeof src, "%s/golden/golden-a.gguf", corpus);
    size_t n;
    char *bytes = read_all(src, &n);
    const char *path = test_path("golden-a.gguf");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    free(bytes);
    return path;
}

/* Edit path in place with args; the data section (from the old data start to the end) must be
 * found whole at the new data start, and nothing after it. */
static void expect_section_kept(const char *path, const char *const *args, bool moves)
{
    tm_file *f;
    const tm_layout *l = layout_of(path, &f);
    const uint64_t data_start = l->data_start, data_size = l->data_size;
    tm_close(f);
    size_t n_before;
    char *before = read_all(path, &n_before);
    tool_result r = tool_run_in(NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    l = layout_of(path, &f);
    const uint64_t new_start = l->data_start;
    tm_close(f);
    cr_expect_eq(new_start != data_start, moves, "the data section %s", moves ? "stayed" : "moved");
    size_t n_after;
    char *after = read_all(path, &n_after);
    cr_expect_eq(n_after, new_start + data_size, "%zu bytes, not %llu + %llu", n_after,
                 (unsigned long long)new_start, (unsigned long long)data_size);
    cr_expect(n_after >= new_start + data_size &&
                  memcmp(before + data_start, after + new_start, (size_t)data_size) == 0,
              "the data section's bytes changed");
    free(before);
    free(after);
}

Test(edit_bytes, golden_a_keeps_its_size_and_its_last_padding)
{
    const char *path = golden_copy();
    /* two bytes longer: the header still fits its 23 bytes of padding */
    const char *args[] = {"edit", path, "--set", "general.name=ggml-written golden tensors!!",
                          NULL};
    expect_section_kept(path, args, false);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_size, 293856);
}

Test(edit_bytes, golden_a_moves_its_data_section_whole)
{
    const char *path = golden_copy();
    const char *args[] = {"edit", path, "--set",
                          "my.note:str=a note long enough to push the data section along by a "
                          "block of the alignment or more",
                          NULL};
    expect_section_kept(path, args, true);
}

/* Bytes between tensors and after the last that are not zeros (another writer's padding) are
 * kept too, in place and with -o. */
Test(edit_bytes, bytes_between_and_after_tensors_are_kept)
{
    static const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const char *path = test_path("gaps.gguf");
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {8};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "gaps", 4, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor_at(w, "a", TM_TYPE_F32, 1, ne, 0, v, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor_at(w, "b", TM_TYPE_F32, 1, ne, 64, v, &err), TM_OK);
    cr_assert_eq(tm_writer_set_data_size(w, 160, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    tm_file *f;
    const uint64_t data_start = layout_of(path, &f)->data_start;
    tm_close(f);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, "GAPGAPGAP", 9, (off_t)(data_start + 40)), 9); /* between a and b */
    cr_assert_eq(pwrite(fd, "TAILTAIL", 8, (off_t)(data_start + 150)), 8); /* after b */
    close(fd);
    const char *out = test_path("out.gguf");
    const char *to_out[] = {"edit", path, "-o", out, "--set", "general.name=more gaps", NULL};
    tool_result r = tool_run_in(NULL, to_out);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    const uint64_t out_start = layout_of(out, &f)->data_start; /* the name moved it */
    tm_close(f);
    size_t n_src, n_out;
    char *src = read_all(path, &n_src), *got = read_all(out, &n_out);
    cr_expect_eq(n_out - out_start, n_src - data_start);
    cr_expect(n_out - out_start == n_src - data_start &&
                  memcmp(src + data_start, got + out_start, (size_t)(n_src - data_start)) == 0,
              "-o: the data section's bytes changed");
    free(got);
    const char *in_place[] = {"edit", path, "--set", "general.name=GAPS", NULL};
    expect_section_kept(path, in_place, false);
    free(src);
}
