/* One shard opened alone says it is one: info (text and --json) names the file that opens the
 * whole model, and compare never calls a part of a model a match for the whole (its verdict is
 * INCOMPLETE while tensors are left without a partner). On llama_pair.h's checkpoint and its
 * conversion, the checkpoint cut here into two safetensors shards with an index, and a GGUF
 * cut into a split set by `tensormap split`. */
#include "support/llama_pair.h"
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fini(void)
{
    pair_teardown();
    test_cleanup();
}

TestSuite(one_shard, .init = pair_setup, .fini = fini);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

/* st_path's tensors in two shards, part-1 and part-2 (the first half, the rest), and the
 * index naming them; returns the index's path. shard[k] gets each shard's path. */
static const char *shard_checkpoint(char shard[2][256])
{
    tm_file *f;
    tm_error err;
    ok(tm_open(st_path, 0, &f, &err), &err);
    const uint64_t n = tm_n_tensors(f);
    st_writer *w[2] = {st_writer_new(), st_writer_new()};
    json_t *map = json_object();
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        cr_assert_eq(t->type, TM_TYPE_BF16);
        uint64_t shape[4];
        uint32_t nd = tm_tensor_shape(t, shape);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const int k = i >= n / 2;
        st_writer_add(w[k], name, "BF16", nd, shape, t->data, (size_t)t->n_bytes);
        json_object_set_new(map, name, json_sprintf("part-%d.safetensors", k + 1));
    }
    tm_close(f);
    for (int k = 0; k < 2; k++) {
        snprintf(shard[k], 256, "%s", test_path(k ? "part-2.safetensors" : "part-1.safetensors"));
        cr_assert_eq(st_writer_write(w[k], shard[k]), 0);
        st_writer_free(w[k]);
    }
    const char *index = test_path("model.safetensors.index.json");
    json_t *root = json_pack("{s:{}, s:o}", "metadata", "weight_map", map);
    cr_assert_eq(json_dump_file(root, index, 0), 0);
    json_decref(root);
    return index;
}

static const json_t *summary_of(const json_t *j)
{
    const json_t *s = json_object_get(j, "summary");
    cr_assert_not_null(s);
    return s;
}

/* The case: a safetensors shard against the whole conversion. Every pair matches, and
 * half the GGUF's tensors have no partner: not a match. */
Test(one_shard, compare_of_a_shard_with_the_whole_model_is_incomplete_not_a_match)
{
    write_pair(&(variant){0});
    char shard[2][256];
    shard_checkpoint(shard);

    tool_result r = tool_run("compare", shard[0], gguf_path, NULL);
    cr_expect_eq(r.status, 1, "exit %d:\n%s", r.status, r.out);
    cr_expect_null(strstr(r.out, " match\n"), "a part called a match:\n%s", r.out);
    cr_expect(strstr(r.out, "result                               INCOMPLETE\n"), "%s", r.out);
    cr_expect(strstr(r.out, "unpaired tensors"), "%s", r.out);
    cr_expect(strstr(r.out, "one shard (1 of 2) opened alone: open "), "%s", r.out);
    tool_result_free(&r);

    json_t *j = tool_json(1, "compare", "--json", shard[0], gguf_path, NULL);
    const json_t *s = summary_of(j);
    cr_expect_str_eq(json_string_value(json_object_get(s, "result")), "incomplete");
    cr_expect(json_is_false(json_object_get(s, "match")));
    cr_expect_eq(json_u64(s, "differing"), 0);
    cr_expect_gt(json_u64(s, "unpaired"), 0);
    const json_t *alone = json_object_get(s, "shard_alone_a");
    cr_assert(json_is_object(alone), "no shard_alone_a: %s", json_dumps(s, 0));
    cr_expect_eq(json_u64(alone, "shard"), 1);
    cr_expect_eq(json_u64(alone, "shards"), 2);
    cr_expect(json_is_null(json_object_get(s, "shard_alone_b")));
    json_decref(j);

    /* the same shard with --all-shards is the whole checkpoint again: a match */
    j = tool_json(0, "--all-shards", "compare", "--json", shard[0], gguf_path, NULL);
    s = summary_of(j);
    cr_expect_str_eq(json_string_value(json_object_get(s, "result")), "match");
    cr_expect(json_is_true(json_object_get(s, "match")));
    cr_expect_eq(json_u64(s, "unpaired"), 0);
    cr_expect(json_is_null(json_object_get(s, "shard_alone_a")));
    json_decref(j);

    /* a conversion's own extras do not make it incomplete: the faithful pair still matches,
     * rope_freqs.weight listed as computed by the converter */
    j = tool_json(0, "compare", "--json", st_path, gguf_path, NULL);
    s = summary_of(j);
    cr_expect_str_eq(json_string_value(json_object_get(s, "result")), "match");
    cr_expect_eq(json_u64(s, "only_b"), 1);
    const json_t *rope = json_array_get(json_object_get(j, "only_b"), 0);
    cr_expect(json_is_true(json_object_get(rope, "generated_by_converter")));
    json_decref(j);
}

/* Two files of one format: any tensor left over is unpaired, a differing pair still wins. */
Test(one_shard, compare_of_a_gguf_shard_with_the_whole_file)
{
    write_pair(&(variant){0});
    const char *prefix = test_path("set");
    tool_result r = tool_run("split", "--max-tensors", "10", gguf_path, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    char second[300];
    snprintf(second, sizeof second, "%s-00002-of-00003.gguf", prefix);
    json_t *j = tool_json(1, "compare", "--json", gguf_path, second, NULL);
    const json_t *s = summary_of(j);
    cr_expect_str_eq(json_string_value(json_object_get(s, "result")), "incomplete");
    cr_expect_eq(json_u64(s, "unpaired"), json_u64(s, "only_a"));
    cr_expect_eq(json_u64(json_object_get(s, "shard_alone_b"), "shard"), 2);
    json_decref(j);
}

/* info on each kind of shard alone, and on the whole model (no note). */
Test(one_shard, info_says_which_shard_and_what_opens_the_whole_model)
{
    write_pair(&(variant){0});
    char shard[2][256];
    const char *index = shard_checkpoint(shard);

    tool_result r = tool_run("info", shard[1], NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char want[600];
    snprintf(want, sizeof want,
             "\n  this file is              one shard (2 of 2) opened alone: open %s for the "
             "whole model\n", index);
    cr_expect(strstr(r.out, want), "info lacks\n%s\nin\n%s", want, r.out);
    tool_result_free(&r);
    json_t *j = tool_json(0, "info", "--json", shard[1], NULL);
    const json_t *alone = json_object_get(j, "shard_alone");
    cr_assert(json_is_object(alone), "%s", json_dumps(j, 0));
    cr_expect_eq(json_u64(alone, "shard"), 2);
    cr_expect_eq(json_u64(alone, "shards"), 2);
    cr_expect_str_eq(json_string_value(json_object_get(alone, "whole_model")), index);
    json_decref(j);
    /* the index itself, and a single file, are whole */
    static const char *const whole[] = {"index", "single"};
    for (int k = 0; k < 2; k++) {
        j = tool_json(0, "info", "--json", k ? st_path : index, NULL);
        cr_expect(json_is_null(json_object_get(j, "shard_alone")), "%s", whole[k]);
        json_decref(j);
        r = tool_run("info", k ? st_path : index, NULL);
        cr_expect_null(strstr(r.out, "opened alone"), "%s: %s", whole[k], r.out);
        tool_result_free(&r);
    }

    /* a split GGUF set: a later shard, and the first with --one-shard */
    const char *prefix = test_path("set");
    r = tool_run("split", "--max-tensors", "10", gguf_path, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    char first[300], third[300];
    snprintf(first, sizeof first, "%s-00001-of-00003.gguf", prefix);
    snprintf(third, sizeof third, "%s-00003-of-00003.gguf", prefix);
    r = tool_run("info", third, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    snprintf(want, sizeof want, "one shard (3 of 3) opened alone: open %s for the whole model\n",
             first);
    cr_expect(strstr(r.out, want), "info lacks\n%s\nin\n%s", want, r.out);
    tool_result_free(&r);
    j = tool_json(0, "info", "--json", third, NULL);
    alone = json_object_get(j, "shard_alone");
    cr_expect_eq(json_u64(alone, "shard"), 3);
    cr_expect_eq(json_u64(alone, "shards"), 3);
    cr_expect_str_eq(json_string_value(json_object_get(alone, "whole_model")), first);
    json_decref(j);

    r = tool_run("--one-shard", "info", first, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "one shard (1 of 3) opened alone by --one-shard: open it without "
                            "--one-shard for the whole model\n"),
              "%s", r.out);
    tool_result_free(&r);
    j = tool_json(0, "info", "--json", first, NULL); /* the set, whole */
    cr_expect(json_is_null(json_object_get(j, "shard_alone")));
    cr_expect_eq(json_integer_value(json_object_get(j, "n_shards")), 3);
    json_decref(j);
}
