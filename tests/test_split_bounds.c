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

TestSuite(split_bounds, .fini = test_cleanup);
