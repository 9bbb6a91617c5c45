/* Split GGUF sets (llama.cpp's gguf-split layout) through tm_open and the tool: sets written
 * here with the library's writer, a first shard without tensors, the old general.split* names,
 * and every refusal with its message. */
#include "support/test_cli.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SHARD_TENSORS 4

/* One shard as the test wants it written; the split keys are right unless overridden. */
typedef struct shard_spec {
    int n_tensors;
    const char *names[MAX_SHARD_TENSORS];
    int no, count;           /* split.no / split.count to write; -1: the right value */
    bool no_keys;            /* write no split.* keys */
} shard_spec;

/* Tensor k of a set is f32 [4] holding 100k, 100k+1, 100k+2, 100k+3: every byte known. */
static float values[64][4];

static void fill_values(void)
{
    for (int k = 0; k < 64; k++)
        for (int e = 0; e < 4; e++)
            values[k][e] = (float)(100 * k + e);
}

/* The path of shard i (from 1) of n. */
static const char *shard_path(const char *prefix, int i, int n)
{
    char name[128];
    snprintf(name, sizeof name, "%s-%05d-of-%05d.gguf", prefix, i, n);
    return test_path(name);
}

static void put_u16(tm_writer *w, const char *key, uint16_t v)
{
    tm_error err = {0};
    cr_assert_eq(tm_writer_kv_scalar(w, key, TM_V_U16, &v, &err), TM_OK, "%s", err.message);
}

/* Write the set: shard i as specs[i]; split.tensors.count = total; old: the general.split*
 * names. Tensors are numbered across the set in order. */
static void write_set(const char *prefix, int n, const shard_spec *specs, int32_t total, bool old)
{
    fill_values();
    int k = 0;
    for (int i = 0; i < n; i++) {
        tm_writer *w;
        tm_error err = {0};
        cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
        if (i == 0) {
            cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
            cr_assert_eq(tm_writer_kv_str(w, "general.name", "split test", 10, &err), TM_OK);
        }
        if (!specs[i].no_keys) {
            put_u16(w, old ? "general.split" : "split.no",
                    (uint16_t)(specs[i].no >= 0 ? specs[i].no : i));
            put_u16(w, old ? "general.split_count" : "split.count",
                    (uint16_t)(specs[i].count >= 0 ? specs[i].count : n));
            cr_assert_eq(tm_writer_kv_scalar(w, old ? "general.split_tensors_count"
                                                    : "split.tensors.count",
                                             TM_V_I32, &total, &err), TM_OK);
        }
        for (int t = 0; t < specs[i].n_tensors; t++, k++) {
            const uint64_t ne[1] = {4};
            cr_assert_eq(tm_writer_tensor(w, specs[i].names[t], TM_TYPE_F32, 1, ne, values[k],
                                          &err), TM_OK, "%s", err.message);
        }
        cr_assert_eq(tm_writer_finish(w, shard_path(prefix, i + 1, n), &err), TM_OK, "%s",
                     err.message);
    }
}

/* The usual set: a first shard with the metadata and no tensors, then a, b and c. */
static const shard_spec three[3] = {
    {0, {NULL}, -1, -1, false},
    {2, {"a", "b"}, -1, -1, false},
    {1, {"c"}, -1, -1, false},
};

static uint64_t size_of(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s", path);
    return (uint64_t)sb.st_size;
}

/* The set is one model: metadata from the first shard, tensors in shard order with their bytes,
 * each shard's own layout, totals in the file's layout. */
static void expect_the_set(tm_file *f, const char *prefix)
{
    const tm_layout *l = tm_file_layout(f);
    cr_assert_eq(l->n_shards, 3);
    cr_assert_eq(tm_n_tensors(f), 3);
    tm_str arch;
    cr_assert_eq(tm_kv_get_str(tm_kv_find(f, "general.architecture"), &arch), TM_OK);
    cr_assert_eq(arch.len, 5);
    cr_assert_eq(memcmp(arch.ptr, "llama", 5), 0);
    static const char *const names[3] = {"a", "b", "c"};
    static const uint32_t shards[3] = {1, 1, 2};
    uint64_t total = 0;
    for (int k = 0; k < 3; k++) {
        const tm_tensor *t = tm_tensor_at(f, (uint64_t)k);
        cr_assert_eq(t->name.len, 1);
        cr_assert_eq(t->name.ptr[0], names[k][0]);
        cr_assert_eq(t->shard, shards[k], "tensor %s in shard %u", names[k], t->shard);
        cr_assert_eq(memcmp(t->data, values[k], 16), 0, "tensor %s's bytes", names[k]);
        cr_assert_eq(tm_tensor_find(f, names[k]), t);
    }
    for (uint32_t i = 0; i < 3; i++) {
        const char *want = shard_path(prefix, (int)i + 1, 3);
        cr_assert_str_eq(tm_shard_path(f, i), want);
        const tm_layout *s = tm_shard_layout(f, i);
        cr_assert_eq(s->file_size, size_of(want));
        cr_assert_eq(s->n_tensors, i == 0 ? 0u : i == 1 ? 2u : 1u);
        total += s->file_size;
    }
    cr_assert_null(tm_shard_layout(f, 3));
    cr_assert_eq(l->file_size, total, "the file size is the set's");
    cr_assert_eq(memcmp(tm_file_bytes(f), "GGUF", 4), 0);
}

Test(split, opens_from_the_first_shard, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(shard_path("m", 1, 3), 0, &f, &err), TM_OK, "%s", err.message);
    expect_the_set(f, "m");
    /* only the first shard's metadata: split.count once, no second shard's split.no */
    uint64_t no;
    cr_assert_eq(tm_kv_get_uint(tm_kv_find(f, "split.no"), &no), TM_OK);
    cr_assert_eq(no, 0);
    cr_assert_eq(tm_n_kv(f), 5);
    tm_close(f);
}

Test(split, old_general_split_names, .fini = test_cleanup)
{
    write_set("old", 3, three, 3, true);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(shard_path("old", 1, 3), 0, &f, &err), TM_OK, "%s", err.message);
    expect_the_set(f, "old");
    tm_close(f);
}

Test(split, any_shard_with_all_shards_and_one_shard_alone, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    tm_file *f = NULL;
    tm_error err = {0};
    /* a later shard alone by default: its own tensor and its split keys */
    cr_assert_eq(tm_open(shard_path("m", 3, 3), 0, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_file_layout(f)->n_shards, 1);
    cr_assert_eq(tm_n_tensors(f), 1);
    tm_close(f);
    /* ... and the whole set with TM_OPEN_ALL_SHARDS */
    cr_assert_eq(tm_open(shard_path("m", 3, 3), TM_OPEN_ALL_SHARDS, &f, &err), TM_OK, "%s",
                 err.message);
    expect_the_set(f, "m");
    tm_close(f);
    /* the first shard alone with TM_OPEN_ONE_SHARD: metadata, no tensors */
    cr_assert_eq(tm_open(shard_path("m", 1, 3), TM_OPEN_ONE_SHARD, &f, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_file_layout(f)->n_shards, 1);
    cr_assert_eq(tm_n_tensors(f), 0);
    tm_close(f);
    cr_assert_eq(tm_open(shard_path("m", 1, 3), TM_OPEN_ALL_SHARDS | TM_OPEN_ONE_SHARD, &f, &err),
                 TM_INVALID_ARG);
    cr_assert_null(f);
    /* a buffer has no directory to find shards in: the first shard opens alone */
    size_t len;
    char *bytes = read_all(shard_path("m", 1, 3), &len);
    cr_assert_eq(tm_open_buffer(bytes, len, 0, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_file_layout(f)->n_shards, 1);
    tm_close(f);
    free(bytes);
}

/* tm_open on path fails with code and a message holding both fragments. */
static void expect_refusal(const char *path, unsigned flags, tm_status code, const char *frag1,
                           const char *frag2)
{
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, flags, &f, &err), code, "%s", err.message);
    cr_assert_null(f);
    cr_assert(strstr(err.message, frag1), "'%s' lacks '%s'", err.message, frag1);
    cr_assert(strstr(err.message, frag2), "'%s' lacks '%s'", err.message, frag2);
}

Test(split_refused, a_missing_shard_names_the_file_expected, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    char gone[256];
    snprintf(gone, sizeof gone, "%s", shard_path("m", 2, 3));
    cr_assert_eq(unlink(gone), 0);
    expect_refusal(shard_path("m", 1, 3), 0, TM_NOT_FOUND, gone, "missing");
}

Test(split_refused, a_shard_that_is_not_a_regular_file, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    char odd[256];
    snprintf(odd, sizeof odd, "%s", shard_path("m", 3, 3));
    cr_assert_eq(unlink(odd), 0);
    cr_assert_eq(mkfifo(odd, 0600), 0); /* opening it would block: it must not be opened */
    expect_refusal(shard_path("m", 1, 3), 0, TM_IO, odd, "not a regular file");
    cr_assert_eq(unlink(odd), 0);
    cr_assert_eq(mkdir(odd, 0700), 0);
    expect_refusal(shard_path("m", 1, 3), 0, TM_IO, odd, "not a regular file");
    cr_assert_eq(rmdir(odd), 0);
}

Test(split_refused, split_no_disagreeing_with_the_name, .fini = test_cleanup)
{
    shard_spec s[3];
    memcpy(s, three, sizeof s);
    s[1].no = 2; /* shard 00002 says it is split.no 2 (the third) */
    write_set("m", 3, s, 3, false);
    char second[256];
    snprintf(second, sizeof second, "%s", shard_path("m", 2, 3));
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, second,
                   "split.no' = 2 (entry at byte ");
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, "name makes it shard 2 of 3",
                   "(split.no 1)");
}

Test(split_refused, split_count_disagreeing_with_the_first_shard, .fini = test_cleanup)
{
    shard_spec s[3];
    memcpy(s, three, sizeof s);
    s[2].count = 4;
    write_set("m", 3, s, 3, false);
    char third[256];
    snprintf(third, sizeof third, "%s", shard_path("m", 3, 3));
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, third, "'split.count' = 4");
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, "the first shard and the file's name "
                   "say 3 shards", "");
}

Test(split_refused, split_keys_missing_from_a_later_shard, .fini = test_cleanup)
{
    shard_spec s[3];
    memcpy(s, three, sizeof s);
    s[1].no_keys = true;
    write_set("m", 3, s, 3, false);
    char second[256];
    snprintf(second, sizeof second, "%s", shard_path("m", 2, 3));
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, second, "split.no is missing");
}

Test(split_refused, the_first_shards_name_disagreeing_with_its_count, .fini = test_cleanup)
{
    shard_spec s[3];
    memcpy(s, three, sizeof s);
    s[0].count = 4; /* the name says of 00003 */
    write_set("m", 3, s, 3, false);
    expect_refusal(shard_path("m", 1, 3), 0, TM_BAD_VALUE, "'split.count' = 4",
                   "the file's name says shard 1 of 3");
}

Test(split_refused, a_first_shard_renamed_out_of_the_pattern, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    char renamed[256];
    snprintf(renamed, sizeof renamed, "%s", test_path("model.gguf"));
    cr_assert_eq(rename(shard_path("m", 1, 3), renamed), 0);
    expect_refusal(renamed, 0, TM_BAD_VALUE, renamed, "-NNNNN-of-NNNNN.gguf");
    /* alone, it opens */
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(renamed, TM_OPEN_ONE_SHARD, &f, &err), TM_OK, "%s", err.message);
    tm_close(f);
}

Test(split_refused, tensor_counts_not_adding_up, .fini = test_cleanup)
{
    write_set("m", 3, three, 5, false);
    char first[256];
    snprintf(first, sizeof first, "%s", shard_path("m", 1, 3));
    expect_refusal(first, 0, TM_BAD_VALUE, first,
                   "'split.tensors.count' = 5 (entry at byte ");
    expect_refusal(first, 0, TM_BAD_VALUE, "but the 3 shards hold 3 tensors (0 + 2 + 1)", "");
}

Test(split_refused, a_tensor_name_in_two_shards, .fini = test_cleanup)
{
    shard_spec s[3];
    memcpy(s, three, sizeof s);
    s[2].names[0] = "a"; /* shard 2 holds a and b, shard 3 another a */
    write_set("m", 3, s, 3, false);
    char second[256], third[256];
    snprintf(second, sizeof second, "%s", shard_path("m", 2, 3));
    snprintf(third, sizeof third, "%s", shard_path("m", 3, 3));
    char want[600];
    snprintf(want, sizeof want, "%s: tensor info at byte ", third);
    expect_refusal(second, TM_OPEN_ALL_SHARDS, TM_DUPLICATE, want, second);
    expect_refusal(second, TM_OPEN_ALL_SHARDS, TM_DUPLICATE, "names tensor 'a', which ", "");
}

Test(split_refused, a_damaged_later_shard_names_its_file, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    char third[256];
    snprintf(third, sizeof third, "%s", shard_path("m", 3, 3));
    cr_assert_eq(truncate(third, 20), 0);
    char want[300];
    snprintf(want, sizeof want, "%s: ", third);
    expect_refusal(shard_path("m", 1, 3), 0, TM_TRUNCATED, want, "metadata count");
}

/* ---- the tool on a set --------------------------------------------------------------------- */


Test(split_tool, info_tensors_dump_stats_check_compare, .fini = test_cleanup)
{
    write_set("m", 3, three, 3, false);
    const char *first = shard_path("m", 1, 3);
    char first_copy[256];
    snprintf(first_copy, sizeof first_copy, "%s", first);

    tool_result r = tool_run("info", first_copy, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "3 files of a split set"), "%s", r.out);
    cr_assert(strstr(r.out, "m-00003-of-00003.gguf"), "%s", r.out);
    tool_result_free(&r);

    json_t *j = tool_json(0, "info", "--json", first_copy, NULL);
    cr_assert_eq(json_u64(j, "n_shards"), 3);
    cr_assert_eq(json_u64(j, "n_tensors"), 3);
    cr_assert_eq(json_array_size(json_object_get(j, "shards")), 3);
    cr_assert_eq(json_u64(json_array_get(json_object_get(j, "shards"), 1), "n_tensors"), 2);
    json_decref(j);

    j = tool_json(0, "tensors", "--json", first_copy, NULL);
    cr_assert_eq(json_array_size(j), 3);
    cr_assert_eq(json_u64(json_array_get(j, 0), "shard"), 1);
    cr_assert_eq(json_u64(json_array_get(j, 2), "shard"), 2);
    json_decref(j);

    /* a tensor of the last shard decodes from its shard's mapping: 200, 201, 202, 203 */
    j = tool_json(0, "stats", "--json", first_copy, "c", NULL);
    const json_t *c = json_array_get(j, 0);
    cr_assert_eq(json_real_value(json_object_get(c, "min")), 200.0);
    cr_assert_eq(json_real_value(json_object_get(c, "max")), 203.0);
    json_decref(j);

    const char *out = test_path("c.f32");
    char out_copy[256];
    snprintf(out_copy, sizeof out_copy, "%s", out);
    r = tool_run("dump", "--format", "raw", first_copy, "c", "-o", out_copy, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t len;
    char *bytes = read_all(out_copy, &len);
    cr_assert_eq(len, 16);
    cr_assert_eq(memcmp(bytes, values[2], 16), 0);
    free(bytes);

    j = tool_json(0, "check", "--json", first_copy, NULL);
    cr_assert(json_is_true(json_object_get(j, "consistent")), "%s", json_dumps(j, 0));
    json_decref(j);

    /* the same tensors in one file compare equal to the set */
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    const uint64_t ne[1] = {4};
    static const char *const names[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++)
        cr_assert_eq(tm_writer_tensor(w, names[k], TM_TYPE_F32, 1, ne, values[k], &err), TM_OK);
    char whole[256];
    snprintf(whole, sizeof whole, "%s", test_path("whole.gguf"));
    cr_assert_eq(tm_writer_finish(w, whole, &err), TM_OK, "%s", err.message);
    r = tool_run("compare", first_copy, whole, NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    tool_result_free(&r);

    /* --one-shard: the first shard alone has no tensors */
    j = tool_json(0, "--one-shard", "tensors", "--json", first_copy, NULL);
    cr_assert_eq(json_array_size(j), 0);
    json_decref(j);
    r = tool_run("--one-shard", "--all-shards", "info", first_copy, NULL);
    cr_assert_eq(r.status, 2);
    tool_result_free(&r);
}

/* ---- split and merge ------------------------------------------------------------------------ */

/* A model of five f32 [4] tensors (values[0..4]) with metadata, by the library's writer. */
static void write_model(const char *path)
{
    fill_values();
    tm_writer *w;
    tm_error err = {0};
    const uint32_t blocks = 2;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "llama.block_count", TM_V_U32, &blocks, &err), TM_OK);
    const char *toks[3] = {"<s>", "a", "b"};
    cr_assert_eq(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", toks, NULL, 3, &err), TM_OK);
    static const char *const names[5] = {"t0", "t1", "t2", "t3", "t4"};
    const uint64_t ne[1] = {4};
    for (int k = 0; k < 5; k++)
        cr_assert_eq(tm_writer_tensor(w, names[k], TM_TYPE_F32, 1, ne, values[k], &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

/* Entry i of f is key, of type, holding v (an integer). */
static void expect_entry(const tm_file *f, uint64_t i, const char *key, tm_vtype type, int64_t v)
{
    const tm_kv *kv = tm_kv_at(f, i);
    cr_assert_not_null(kv);
    cr_assert(kv->key.len == strlen(key) && memcmp(kv->key.ptr, key, kv->key.len) == 0,
              "entry %llu is not %s", (unsigned long long)i, key);
    cr_assert_eq(kv->type, type, "%s's type", key);
    tm_value val;
    cr_assert_eq(tm_kv_value(kv, &val), TM_OK);
    cr_assert_eq(type == TM_V_I32 ? val.as.i : (int64_t)val.as.u, v, "%s's value", key);
}

Test(split_tool, split_then_merge_gives_the_source_back, .fini = test_cleanup)
{
    char src[256], prefix[256], merged[256], first[256], second[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(prefix, sizeof prefix, "%s", test_path("p"));
    snprintf(merged, sizeof merged, "%s", test_path("merged.gguf"));
    snprintf(first, sizeof first, "%s", shard_path("p", 1, 3));
    snprintf(second, sizeof second, "%s", shard_path("p", 2, 3));
    write_model(src);
    tool_result r = tool_run("split", "--max-tensors", "2", src, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);

    /* gguf-split's layout: the split keys with their types first, then the model's metadata in
     * the first shard; the split keys alone in the others */
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(first, TM_OPEN_ONE_SHARD, &f, &err), TM_OK, "%s", err.message);
    expect_entry(f, 0, "split.no", TM_V_U16, 0);
    expect_entry(f, 1, "split.count", TM_V_U16, 3);
    expect_entry(f, 2, "split.tensors.count", TM_V_I32, 5);
    expect_entry(f, 4, "llama.block_count", TM_V_U32, 2);
    cr_assert_eq(tm_n_kv(f), 6);
    cr_assert_eq(tm_n_tensors(f), 2);
    tm_close(f);
    cr_assert_eq(tm_open(second, TM_OPEN_ONE_SHARD, &f, &err), TM_OK, "%s", err.message);
    expect_entry(f, 0, "split.no", TM_V_U16, 1);
    cr_assert_eq(tm_n_kv(f), 3);
    tm_close(f);

    /* merged: the source, byte for byte (metadata, tensor order, offsets and bytes) */
    r = tool_run("merge", first, merged, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_src, n_merged;
    char *a = read_all(src, &n_src), *b = read_all(merged, &n_merged);
    cr_assert_eq(n_src, n_merged);
    cr_assert_eq(memcmp(a, b, n_src), 0);
    free(b);

    /* by size: 16-byte tensors padded to 32, at most 64 bytes a shard: 2 + 2 + 1 again */
    r = tool_run("split", "--max-size", "64", src, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "p-00003-of-00003.gguf: 1 tensor\n"), "%s", r.out);
    tool_result_free(&r);

    /* merge never writes over a shard, which stays as it was */
    size_t n_before, n_after;
    char *before = read_all(second, &n_before);
    r = tool_run("merge", first, second, NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    tool_result_free(&r);
    char *after = read_all(second, &n_after);
    cr_assert(n_before == n_after && memcmp(before, after, n_before) == 0);
    free(before);
    free(after);
    free(a);

    r = tool_run("split", "--max-size", "1M", "--max-tensors", "3", src, prefix, NULL);
    cr_assert_eq(r.status, 2);
    tool_result_free(&r);
    r = tool_run("split", "--max-size", "12X", src, prefix, NULL);
    cr_assert_eq(r.status, 2);
    tool_result_free(&r);
}
