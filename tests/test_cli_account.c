/* The tool's accounting commands (check/account, stack, layer, bytes) on files built here with
 * tm_writer_*: every expected number below is worked out by hand from the shapes and the types'
 * block sizes, never taken from the tool or the library. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(cli, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (uint64_t)st.st_size;
}

/* A model of four blocks: token_embd in front, blk.N.attn_q (q8_0 in blocks 0 and 1, f16 in
 * 2 and 3) and blk.N.ffn_norm, output.weight behind. Sizes by hand:
 *   token_embd.weight  f32  5 x 7          35 * 4              = 140
 *   blk.N.attn_q       q8_0 32 x 3         3 blocks * 34 bytes = 102   (f16: 96 * 2 = 192)
 *   blk.N.ffn_norm     f32  3              3 * 4               = 12
 *   output.weight      f32  5 x 2          10 * 4              = 40
 * The name entry is sized so that the tensor infos end 3 bytes past a multiple of 4: the
 * padding before the data is not a multiple of 4. */
#define FRONT_BYTES 140u
#define STACK_BYTES (2u * (102u + 12u) + 2u * (192u + 12u))
#define BEHIND_BYTES 40u
static const char *write_stack_model(const char *name)
{
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    uint32_t blocks = 4;
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "toy", 3, &err), &err);
    ok(tm_writer_kv_scalar(w, "toy.block_count", TM_V_U32, &blocks, &err), &err);
    ok(tm_writer_kv_str(w, "general.name", "x", 1, &err), &err);
    const uint64_t embd[2] = {5, 7}, q[2] = {32, 3}, norm[1] = {3}, out[2] = {5, 2};
    ok(tm_writer_tensor(w, "token_embd.weight", TM_TYPE_F32, 2, embd, NULL, &err), &err);
    for (int b = 0; b < 4; b++) {
        char n[64];
        snprintf(n, sizeof n, "blk.%d.attn_q.weight", b);
        ok(tm_writer_tensor(w, n, b < 2 ? TM_TYPE_Q8_0 : TM_TYPE_F16, 2, q, NULL, &err), &err);
        snprintf(n, sizeof n, "blk.%d.ffn_norm.weight", b);
        ok(tm_writer_tensor(w, n, TM_TYPE_F32, 1, norm, NULL, &err), &err);
    }
    ok(tm_writer_tensor(w, "output.weight", TM_TYPE_F32, 2, out, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

Test(cli, check_adds_up_to_the_file_size)
{
    const char *path = write_stack_model("stack.gguf");
    json_t *j = tool_json(0, "check", "--json", path, NULL);
    uint64_t data_start = json_u64(j, "data_start"), padding = json_u64(j, "padding");
    cr_assert(json_is_true(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "tensor_bytes"), FRONT_BYTES + STACK_BYTES + BEHIND_BYTES);
    cr_assert_eq(json_u64(j, "weights"), 35 + 4 * (96 + 3) + 10);
    cr_assert_neq(padding % 4, 0, "the fixture should pad by a non-multiple of 4, got %llu",
                  (unsigned long long)padding);
    cr_assert_eq(data_start % 32, 0);
    cr_assert_eq(json_u64(j, "head_bytes") + json_u64(j, "metadata_bytes") +
                     json_u64(j, "info_bytes") + padding,
                 data_start);
    /* header + tensors + the alignment padding between them = the size stat() reports */
    cr_assert_eq(data_start + json_u64(j, "tensor_bytes") + json_u64(j, "alignment_padding"),
                 file_size(path));
    cr_assert_eq(json_u64(j, "contiguous"), 10);
    cr_assert_eq(json_u64(j, "gap_bytes") + json_u64(j, "after_bytes"), 0);
    const json_t *types = json_object_get(j, "types");
    cr_assert_eq(json_array_size(types), 3); /* f32, f16, q8_0: by type id */
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(types, 2), "type")), "q8_0");
    cr_assert_eq(json_u64(json_array_get(types, 2), "bytes"), 2 * 102);
    json_decref(j);

    tool_result r = tool_run("account", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "consistent:"), "%s", r.out);
    char want[64];
    snprintf(want, sizeof want, "%llu", (unsigned long long)file_size(path));
    cr_assert(strstr(r.out, want), "the file size %s is not in:\n%s", want, r.out);
    tool_result_free(&r);
}

Test(cli, check_names_a_gap_between_tensors)
{
    const char *path = test_path("gap.gguf");
    tm_writer *w;
    tm_error err;
    const uint64_t ne[1] = {8}; /* 32 bytes: b should start at 32 and starts at 96 */
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor_at(w, "a", TM_TYPE_F32, 1, ne, 0, NULL, &err), &err);
    ok(tm_writer_tensor_at(w, "b", TM_TYPE_F32, 1, ne, 96, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    json_t *j = tool_json(1, "check", "--json", path, NULL);
    cr_assert(json_is_false(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "gap_bytes"), 64);
    const json_t *f = json_array_get(json_object_get(j, "findings"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(f, "kind")), "gap");
    cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "b");
    cr_assert_eq(json_u64(f, "offset"), 96);
    cr_assert_eq(json_u64(f, "expected"), 32);
    json_decref(j);
    tool_result r = tool_run("check", path, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.out, "gap of 64 bytes between tensor 0 'a' and tensor 1 'b'"), "%s", r.out);
    cr_assert(strstr(r.out, "NOT consistent"), "%s", r.out);
    tool_result_free(&r);
}

Test(cli, check_reports_bytes_after_the_last_tensor)
{
    const char *path = test_path("tail.gguf");
    tm_writer *w;
    tm_error err;
    const uint64_t ne[1] = {8};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "a", TM_TYPE_F32, 1, ne, NULL, &err), &err);
    ok(tm_writer_set_data_size(w, 32 + 100, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    json_t *j = tool_json(1, "check", "--json", path, NULL);
    cr_assert_eq(json_u64(j, "after_bytes"), 100);
    cr_assert(json_is_false(json_object_get(j, "consistent")));
    json_decref(j);
}

/* After the last tensor, zeros up to the alignment are padding; anything else there is not,
 * and is counted as bytes after the last tensor. */
Test(cli, check_calls_non_zero_bytes_after_the_last_tensor_what_they_are)
{
    const uint64_t ne[1] = {4}; /* 16 bytes, then 16 up to the alignment of 32 */
    for (int dirty = 0; dirty < 2; dirty++) {
        const char *path = test_path(dirty ? "dirty.gguf" : "clean.gguf");
        tm_writer *w;
        tm_error err;
        ok(tm_writer_new(&w, &err), &err);
        ok(tm_writer_tensor(w, "a", TM_TYPE_F32, 1, ne, NULL, &err), &err);
        ok(tm_writer_set_data_size(w, 32, &err), &err);
        ok(tm_writer_finish(w, path, &err), &err);
        if (dirty) {
            FILE *f = fopen(path, "r+b");
            cr_assert_not_null(f);
            cr_assert_eq(fseek(f, (long)file_size(path) - 3, SEEK_SET), 0);
            cr_assert_eq(fputc(0xab, f), 0xab);
            cr_assert_eq(fclose(f), 0);
        }
        json_t *j = tool_json(dirty, "check", "--json", path, NULL);
        cr_expect_eq(json_u64(j, "after_bytes"), dirty ? 16 : 0, "%s", path);
        cr_expect_eq(json_u64(j, "alignment_padding"), dirty ? 0 : 16, "%s", path);
        json_decref(j);
    }
}

Test(cli, check_calls_a_refused_file_inconsistent)
{
    const char *path = test_path("ggml.bin");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite("GGML\3\0\0\0", 1, 8, f);
    fwrite((char[64]){0}, 1, 64, f);
    fclose(f);
    tool_result r = tool_run("check", path, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.out, "NOT consistent") && strstr(r.out, "GGUF"), "%s", r.out);
    tool_result_free(&r);
}

Test(cli, stack_collapses_blocks_and_adds_up)
{
    const char *path = write_stack_model("stack.gguf");
    json_t *j = tool_json(0, "stack", "--json", path, NULL);
    cr_assert_eq(json_u64(j, "blocks"), 4);
    cr_assert_eq(json_u64(j, "front_bytes"), FRONT_BYTES);
    cr_assert_eq(json_u64(j, "stack_bytes"), STACK_BYTES);
    cr_assert_eq(json_u64(j, "behind_bytes"), BEHIND_BYTES);
    cr_assert_eq(json_u64(j, "total_bytes"), FRONT_BYTES + STACK_BYTES + BEHIND_BYTES);
    const json_t *lo = json_object_get(j, "smallest_block"),
                 *hi = json_object_get(j, "largest_block");
    cr_assert_eq(json_u64(lo, "bytes"), 102 + 12);
    cr_assert_eq(json_u64(hi, "bytes"), 192 + 12);
    cr_assert_eq(json_u64(hi, "block"), 2);
    const json_t *rows = json_object_get(j, "rows");
    cr_assert_eq(json_array_size(rows), 4);
    const json_t *q = json_array_get(rows, 1);
    cr_assert_str_eq(json_string_value(json_object_get(q, "name")), "blk.N.attn_q.weight");
    cr_assert_eq(json_u64(q, "count"), 4);
    cr_assert_eq(json_u64(q, "bytes"), 2 * 102 + 2 * 192);
    cr_assert_eq(json_array_size(json_object_get(q, "types")), 2);
    json_decref(j);
    tool_result r = tool_run("stack", path, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "q8_0 x2 f16 x2"), "%s", r.out);
    tool_result_free(&r);
}

Test(cli, layer_compares_the_other_blocks)
{
    const char *path = write_stack_model("stack.gguf");
    json_t *j = tool_json(0, "layer", "--json", path, "1", NULL);
    const json_t *t = json_object_get(j, "tensors");
    cr_assert_eq(json_array_size(t), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 0), "short_name")),
                     "attn_q.weight");
    cr_assert_eq(json_u64(j, "bytes"), 102 + 12);
    cr_assert_eq(json_u64(j, "other_blocks"), 3);
    cr_assert_eq(json_u64(j, "same_names_and_shapes"), 3);
    cr_assert_eq(json_u64(j, "same_types_too"), 1); /* block 0 */
    cr_assert_eq(json_u64(j, "other_types"), 2);    /* blocks 2 and 3 hold f16 */
    json_decref(j);
    tool_result r = tool_run("layer", path, "9", NULL);
    cr_assert_eq(r.status, 2); /* a block the file lacks is a usage error */
    cr_assert(strstr(r.err, "no block 9"), "%s", r.err);
    tool_result_free(&r);
}

Test(cli, bytes_names_every_field)
{
    const char *path = test_path("sketch.gguf");
    tool_result r = tool_run("sketch", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    json_t *j = tool_json(0, "bytes", "--json", path, NULL);
    const json_t *first = json_array_get(j, 0);
    cr_assert_str_eq(json_string_value(json_object_get(first, "hex")), "47 47 55 46");
    /* the chapter's layout: the first key at 24, the array at 192, one info record at 268 */
    bool kv24 = false, skipped = false;
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e)
    {
        const char *what = json_string_value(json_object_get(e, "field"));
        kv24 |= json_u64(e, "offset") == 24 && strstr(what, "general.architecture");
        skipped |= strstr(what, "more elements skipped") != NULL;
        if (strstr(what, "info record"))
            cr_assert_eq(json_u64(e, "offset"), 268);
    }
    cr_assert(kv24);
    cr_assert(!skipped, "three tokens are all shown by default");
    json_decref(j);
}

Test(cli, every_command_has_help_and_usage)
{
    static const char *const cmds[] = {"stack",  "layer", "check",  "account", "bytes", "stats",
                                       "floats", "dump",  "tokens", "header",  "write", "sketch"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tool_result r = tool_run("help", cmds[i], NULL);
        cr_assert_eq(r.status, 0, "help %s", cmds[i]);
        cr_assert(strncmp(r.out, "usage: tensormap ", 17) == 0, "%s", r.out);
        tool_result h = tool_run(cmds[i], "--help", NULL);
        cr_assert_eq(h.status, 0);
        cr_assert_str_eq(h.out, r.out);
        tool_result bad = tool_run(cmds[i], "--no-such-option", NULL);
        cr_assert_eq(bad.status, 2, "%s --no-such-option exits %d", cmds[i], bad.status);
        tool_result_free(&r);
        tool_result_free(&h);
        tool_result_free(&bad);
    }
}

/* safetensors: 8 + header length + data = the file, each tensor's bytes from shape and dtype
 * (F32 2x3 = 24, BF16 2x3 = 12, F16 4x2 = 16), and model.layers.N. as the block number. */
Test(cli, check_and_stack_on_safetensors)
{
    const char *path = test_path("m.safetensors");
    st_writer *w = st_writer_new();
    static const uint8_t zeros[24];
    const uint64_t s23[2] = {2, 3}, s42[2] = {4, 2};
    st_writer_add(w, "model.embed_tokens.weight", "F16", 2, s42, zeros, 16);
    st_writer_add(w, "model.layers.0.mlp.up_proj.weight", "F32", 2, s23, zeros, 24);
    st_writer_add(w, "model.layers.1.mlp.up_proj.weight", "BF16", 2, s23, zeros, 12);
    cr_assert_eq(st_writer_write(w, path), 0);
    st_writer_free(w);
    json_t *j = tool_json(0, "check", "--json", path, NULL);
    cr_assert(json_is_true(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "tensor_bytes"), 16 + 24 + 12);
    cr_assert_eq(json_u64(j, "data_start"), 8 + json_u64(j, "metadata_bytes"));
    cr_assert_eq(json_u64(j, "data_start") + 16 + 24 + 12, file_size(path));
    json_decref(j);
    json_t *s = tool_json(0, "stack", "--json", path, NULL);
    cr_assert_eq(json_u64(s, "blocks"), 2);
    cr_assert_eq(json_u64(s, "stack_bytes"), 24 + 12);
    cr_assert_eq(json_u64(s, "front_bytes"), 16);
    const json_t *row = json_array_get(json_object_get(s, "rows"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(row, "name")),
                     "model.layers.N.mlp.up_proj.weight");
    json_decref(s);
}

/* golden.arr_i32 holds 5 elements: the default shows 3 and says 2 were skipped; --all shows
 * every one, each at its own offset 4 bytes after the last. */
Test(cli, bytes_cuts_long_arrays_unless_all)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char path[512];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", corpus);
    tool_result r = tool_run("bytes", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *arr = strstr(r.out, "golden.arr_i32 (array of 5 i32)");
    cr_assert_not_null(arr, "%s", r.out);
    cr_assert(strstr(arr, "... 2 more elements skipped (--all shows them)"), "%s", arr);
    tool_result_free(&r);
    json_t *j = tool_json(0, "bytes", "--all", "--json", path, NULL);
    size_t i, seen = 0;
    uint64_t prev = 0;
    json_t *e;
    bool in_array = false;
    json_array_foreach(j, i, e)
    {
        const char *what = json_string_value(json_object_get(e, "field"));
        cr_assert_null(strstr(what, "skipped"), "--all skipped something: %s", what);
        if (strstr(what, "metadata "))
            in_array = strstr(what, "golden.arr_i32") != NULL;
        else if (in_array && strncmp(what, "element ", 8) == 0 && isdigit((unsigned char)what[8])) {
            if (seen > 0)
                cr_assert_eq(json_u64(e, "offset"), prev + 4);
            cr_assert_eq(json_u64(e, "size"), 4);
            prev = json_u64(e, "offset");
            seen++;
        }
    }
    cr_assert_eq(seen, 5);
    json_decref(j);
}

/* A checkpoint in two shards: the walk starts again at each shard's data, and the totals are
 * the two files together (F32 2x3 = 24 bytes in each, F16 4 = 8 in the first). */
Test(cli, check_walks_each_shard_of_a_checkpoint)
{
    static const uint8_t zeros[24];
    const uint64_t s23[2] = {2, 3}, s4[1] = {4};
    char one[256], two[256], index[256];
    snprintf(one, sizeof one, "%s", test_path("model-00001-of-00002.safetensors"));
    snprintf(two, sizeof two, "%s", test_path("model-00002-of-00002.safetensors"));
    snprintf(index, sizeof index, "%s", test_path("model.safetensors.index.json"));
    st_writer *w = st_writer_new();
    st_writer_add(w, "model.layers.0.w", "F32", 2, s23, zeros, 24);
    st_writer_add(w, "model.embed.weight", "F16", 1, s4, zeros, 8);
    cr_assert_eq(st_writer_write(w, one), 0);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_add(w, "model.layers.1.w", "F32", 2, s23, zeros, 24);
    cr_assert_eq(st_writer_write(w, two), 0);
    st_writer_free(w);
    FILE *f = fopen(index, "w");
    cr_assert_not_null(f);
    fputs("{\"metadata\": {}, \"weight_map\": {"
          "\"model.layers.0.w\": \"model-00001-of-00002.safetensors\", "
          "\"model.embed.weight\": \"model-00001-of-00002.safetensors\", "
          "\"model.layers.1.w\": \"model-00002-of-00002.safetensors\"}}",
          f);
    fclose(f);
    json_t *j = tool_json(0, "check", "--json", index, NULL);
    cr_assert(json_is_true(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "contiguous"), 3);
    cr_assert_eq(json_u64(j, "tensor_bytes"), 24 + 8 + 24);
    cr_assert_eq(json_u64(j, "file_size"), file_size(one) + file_size(two));
    cr_assert_eq(json_u64(j, "data_start") + 56, file_size(one) + file_size(two));
    json_decref(j);
    /* tensors says which shard each offset counts in: written two in the first, one in the
     * second */
    j = tool_json(0, "tensors", "--json", index, NULL);
    cr_assert_eq(json_array_size(j), 3);
    uint64_t in_shard[2] = {0, 0};
    for (size_t i = 0; i < 3; i++) {
        uint64_t shard = json_u64(json_array_get(j, i), "shard");
        cr_assert_lt(shard, 2);
        in_shard[shard]++;
    }
    cr_assert_eq(in_shard[0], 2);
    cr_assert_eq(in_shard[1], 1);
    json_decref(j);
    /* bytes shows the first shard, and nothing past its end */
    j = tool_json(0, "bytes", "--json", index, NULL);
    const json_t *data = json_array_get(j, json_array_size(j) - 1);
    cr_assert_eq(json_u64(data, "offset") + json_u64(data, "size"), file_size(one));
    cr_assert_eq(json_u64(data, "size"), 24 + 8);
    json_decref(j);
}

/* bytes --all takes every entry apart, as the Dutch chapter does with its first entry: on the
 * sketch file (keys and values known) the offsets follow from the format by hand: key length
 * at 24, key (20 bytes) at 32, type at 52, value length at 56, "counts" at 64; the info record
 * at 268: name (19 bytes) at 276, n_dims at 295, ne at 299 and 307, type at 315, offset at 319. */
Test(cli, bytes_all_takes_every_field_apart)
{
    const char *path = test_path("sketch.gguf");
    tool_result r = tool_run("sketch", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    static const struct {
        uint64_t offset, size;
        const char *field;
    } want[] = {{52, 4, "value type 8 = str"},
                {56, 8, "the value is 6 bytes long"},
                {64, 6, "\"counts\""},
                {154, 4, "the value: 64"},
                {295, 4, "2 dimensions"},
                {299, 8, "ne[0] = 3"},
                {307, 8, "ne[1] = 2"},
                {315, 4, "type 0 = f32"},
                {319, 8, "offset 0 from the data start"}};
    json_t *j = tool_json(0, "bytes", "--all", "--json", path, NULL);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e)
        {
            /* the first field of that name: "value type 8 = str" comes back for each string */
            if (!found &&
                strcmp(json_string_value(json_object_get(e, "field")), want[k].field) == 0) {
                cr_assert_eq(json_u64(e, "offset"), want[k].offset, "%s", want[k].field);
                cr_assert_eq(json_u64(e, "size"), want[k].size, "%s", want[k].field);
                found = true;
            }
        }
        cr_assert(found, "no field '%s'", want[k].field);
    }
    json_decref(j);
}
