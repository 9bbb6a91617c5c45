/* split and merge at their edges: a file with no tensors, more shards than split.count can
 * count, a set entered by another shard than the first, a file that is no set. Files are
 * written here with the library's writer; what each command must do is spelled out below, not
 * asked of the code under test. */
#include "support/test_cli.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tokens[3] = {"<s>", "</s>", "hello"};

/* A vocabulary with no tensors, as a tokenizer-only GGUF file holds it. */
static void write_vocabulary(const char *path)
{
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", tokens, NULL, 3, &err),
                 TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

/* The files in the test's directory whose name starts with prefix. */
static int files_named(const char *prefix)
{
    DIR *d = opendir(test_dir());
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* split.c sized its shard starts by the tensors (none here) and wrote one past them (ASan
 * sees the 8 bytes). The vocabulary becomes one shard of metadata, and merges back. */
Test(split_bounds, a_file_with_no_tensors_is_one_shard)
{
    const char *src = test_path("vocab.gguf"), *prefix = test_path("v");
    write_vocabulary(src);
    tool_result r = tool_run("split", src, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "v-00001-of-00001.gguf: 0 tensors\n"), "%s", r.out);
    cr_expect_eq(files_named("v-"), 1, "one shard");
    tool_result_free(&r);

    const char *first = test_path("v-00001-of-00001.gguf"), *merged = test_path("m.gguf");
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(first, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), 0);
    const tm_kv *kv = tm_kv_find(f, "tokenizer.ggml.tokens");
    cr_assert_not_null(kv, "the vocabulary is in the shard");
    cr_expect_eq(kv->type, TM_V_ARRAY);
    tm_close(f);

    r = tool_run("merge", first, merged, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_src, n_merged;
    char *a = read_all(src, &n_src), *b = read_all(merged, &n_merged);
    cr_expect(n_src == n_merged && memcmp(a, b, n_src) == 0, "merged back byte for byte");
    free(a);
    free(b);
}

/* split.count and split.no are u16s: 65,536 shards would write split.count = 0 (and 65,537,
 * split.count = 1: a set that merges back to one tensor). Refused before any shard is
 * written, naming the limit. */
Test(split_bounds, more_shards_than_a_u16_counts_are_refused_before_writing)
{
    enum { N = 65536 };
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    const uint64_t ne[1] = {1};
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        cr_assert_eq(tm_writer_tensor(w, name, TM_TYPE_F32, 1, ne, NULL, &err), TM_OK, "%s",
                     err.message);
    }
    const char *src = test_path("many.gguf"), *prefix = test_path("many");
    cr_assert_eq(tm_writer_finish(w, src, &err), TM_OK, "%s", err.message);
    tool_result r = tool_run("split", "--max-tensors", "1", src, prefix, NULL);
    cr_expect_eq(r.status, 1, "%s", r.out);
    cr_expect(strstr(r.err, "65536 shards") && strstr(r.err, "65535"), "%s", r.err);
    cr_expect_eq(files_named("many-"), 0, "no shard is written");
    tool_result_free(&r);
}

/* ---- merge takes a whole set, and only a set ------------------------------------------------ */

/* A model of three f32 tensors with metadata, split one tensor a shard: s-0000K-of-00003.gguf
 * in the test's directory. src gets the model's path. */
static void write_three_shards(char src[256])
{
    static const float v[3][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
    const uint64_t ne[1] = {4};
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    for (int i = 0; i < 3; i++) {
        const char name[2] = {(char)('a' + i), 0};
        cr_assert_eq(tm_writer_tensor(w, name, TM_TYPE_F32, 1, ne, v[i], &err), TM_OK);
    }
    snprintf(src, 256, "%s", test_path("src.gguf"));
    cr_assert_eq(tm_writer_finish(w, src, &err), TM_OK, "%s", err.message);
    tool_result r = tool_run("split", "--max-tensors", "1", src, test_path("s"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
}

/* merge from the second shard wrote the second shard's tensor alone, without the model's
 * metadata, and exited 0. Refused now, naming the first shard; nothing is written. */
Test(split_bounds, merge_from_a_later_shard_names_the_first)
{
    char src[256], second[256];
    write_three_shards(src);
    snprintf(second, sizeof second, "%s", test_path("s-00002-of-00003.gguf"));
    const char *out = test_path("merged.gguf");
    tool_result r = tool_run("merge", second, out, NULL);
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "shard 2 of 3") && strstr(r.err, "s-00001-of-00003.gguf"), "%s",
              r.err);
    cr_expect_eq(files_named("merged"), 0, "nothing written");
    tool_result_free(&r);

    /* the same shard under a name outside the set's pattern: the first is named by its number */
    const char *odd = test_path("odd.gguf");
    size_t n;
    char *bytes = read_all(second, &n);
    FILE *o = fopen(odd, "wb");
    cr_assert(o && fwrite(bytes, 1, n, o) == n);
    fclose(o);
    free(bytes);
    r = tool_run("merge", odd, out, NULL);
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "split.no = 0"), "%s", r.err);
    tool_result_free(&r);

    /* --all-shards opens the whole set from any shard: that merges, metadata and all */
    r = tool_run("--all-shards", "merge", second, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_src, n_out;
    char *a = read_all(src, &n_src), *b = read_all(out, &n_out);
    cr_expect(n_src == n_out && memcmp(a, b, n_src) == 0, "the source, byte for byte");
    free(a);
    free(b);
}

/* The first shard opened alone (--one-shard) is a third of the model: refused too. */
Test(split_bounds, merge_of_one_shard_alone_is_refused)
{
    char src[256];
    write_three_shards(src);
    tool_result r = tool_run("--one-shard", "merge", test_path("s-00001-of-00003.gguf"),
                             test_path("merged.gguf"), NULL);
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "1 of the set's 3 shards"), "%s", r.err);
    cr_expect_eq(files_named("merged"), 0, "nothing written");
    tool_result_free(&r);
}

/* merge of a file that is no split set copied it, exit 0. */
Test(split_bounds, merge_of_a_file_that_is_not_split_is_refused)
{
    char src[256];
    write_three_shards(src);
    tool_result r = tool_run("merge", src, test_path("merged.gguf"), NULL);
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "not a split set"), "%s", r.err);
    cr_expect_eq(files_named("merged"), 0, "nothing written");
    tool_result_free(&r);
}

TestSuite(split_bounds, .fini = test_cleanup);
