/* tensormap compare, end to end, on the tiny llama-shaped checkpoint and its conversion of
 * llama_pair.h. */
#include "support/llama_pair.h"
#include "support/st_writer.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run the tool; its stdout into out (NUL-terminated); returns the exit status. */
static int run_tool(const char *args, char *out, size_t cap)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s", tool, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    cr_assert(WIFEXITED(st), "%s did not exit", cmd);
    return WEXITSTATUS(st);
}

/* extra: options of compare; global: options of tensormap before the command */
static json_t *run_json_in(const char *global, const char *a, const char *b, const char *extra,
                           int *rc)
{
    static char out[1 << 20];
    char args[512];
    snprintf(args, sizeof args, "%s compare --json %s %s %s", global, extra, a, b);
    *rc = run_tool(args, out, sizeof out);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    cr_assert_not_null(j, "not JSON (%s): %s", je.text, out);
    return j;
}

static json_t *run_json(const char *a, const char *b, const char *extra, int *rc)
{
    return run_json_in("", a, b, extra, rc);
}

static uint64_t summary(json_t *j, const char *key)
{
    json_t *v = json_object_get(json_object_get(j, "summary"), key);
    cr_assert(json_is_integer(v), "summary.%s missing", key);
    return (uint64_t)json_integer_value(v);
}

/* pairs: one per HF tensor plus the GGUF's output tied to the embedding */
#define N_PAIRS (1 + LAYERS * 9 + 1 + 1)

Test(compare, faithful_conversion_matches, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s", st_path, gguf_path);
    int rc = run_tool(args, out, sizeof out);
    cr_expect_eq(rc, 0, "%s", out);
    const char *line = strstr(out, "exact matches");
    int got = -1, of = -1;
    cr_assert_not_null(line, "%s", out);
    cr_expect_eq(sscanf(line + strlen("exact matches"), " %d / %d", &got, &of), 2, "%s", line);
    cr_expect(got == N_PAIRS && of == N_PAIRS, "%d / %d exact", got, of);
    cr_expect(strstr(out, "only in B: rope_freqs.weight"), "%s", out);
    cr_expect(strstr(out, "rows un-permuted"), "%s", out);

    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "differing"), 0);
    cr_expect_eq(summary(j, "only_a"), 0);
    cr_expect_eq(summary(j, "only_b"), 1);
    cr_expect_eq(summary(j, "rows_unpermuted"), 2 * LAYERS);
    json_t *only_b = json_array_get(json_object_get(j, "only_b"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(only_b, "name")), "rope_freqs.weight");
    json_decref(j);
}

Test(compare, either_order, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    int rc;
    json_t *j = run_json(gguf_path, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "only_a"), 1, "rope_freqs.weight is now on side A");
    json_decref(j);
}

Test(compare, tied_output_absent_from_gguf, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.drop_output = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    json_decref(j);
}

/* One planted difference: exactly one value of one tensor, in a permuted one (so the index
 * arithmetic of the un-permutation is checked too). */
Test(compare, one_changed_value_is_found, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.poke = "blk.1.attn_k.weight", .poke_at = 13});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), 1);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    size_t i;
    json_t *p;
    int seen = 0;
    json_array_foreach(json_object_get(j, "pairs"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "status")), "differs") != 0)
            continue;
        seen++;
        cr_expect_str_eq(json_string_value(json_object_get(p, "b")), "blk.1.attn_k.weight");
        cr_expect_eq(json_integer_value(json_object_get(p, "n_differing")), 1);
        /* element 13 of the converted [4, 8] is row 1, column 5; the converter took row 1 of a
         * 4-row head from source row 2 (it stores source rows 0 2 1 3): source element 21 */
        cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_b")), 13);
        cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_a")), 21);
        cr_expect(json_real_value(json_object_get(p, "max_abs")) > 0);
    }
    cr_expect_eq(seen, 1);
    json_decref(j);

    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s", st_path, gguf_path);
    cr_expect_eq(run_tool(args, out, sizeof out), 1);
    cr_expect(strstr(out, "DIFFERS  model.layers.1.self_attn.k_proj.weight = blk.1.attn_k.weight"),
              "%s", out);
    cr_expect(strstr(out, "1 of 32 values differ"), "%s", out);
    cr_expect(strstr(out, "first at A[2, 5] = B[1, 5]"), "%s", out);
    cr_expect(strstr(out, "MISMATCH"), "%s", out);
}

Test(compare, tolerance_accepts_a_small_difference, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.poke = "blk.0.ffn_up.weight", .poke_at = 5});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "--tolerance 0.05", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "within_tolerance"), 1);
    cr_expect_eq(summary(j, "differing"), 0);
    json_decref(j);
    j = run_json(st_path, gguf_path, "--tolerance 1e-9", &rc);
    cr_expect_eq(rc, 1);
    json_decref(j);
}

/* Without the llama permutation (qwen2 is converted without it), the permuted rows differ:
 * the un-permutation is what makes the faithful conversion match. */
Test(compare, permutation_is_needed, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.arch = "qwen2"});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), 2 * LAYERS, "attn_q and attn_k of each layer");
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 2 * LAYERS);
    json_decref(j);
}

Test(compare, same_format_by_name, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    int rc;
    json_t *j = run_json(st_path, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    cr_expect_eq(json_is_true(json_object_get(json_object_get(j, "summary"), "names_mapped")), 0);
    json_decref(j);
    j = run_json(gguf_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs + 2);
    json_decref(j);
}

Test(compare, usage_errors, .init = pair_setup, .fini = pair_teardown)
{
    static char out[4096];
    cr_expect_eq(run_tool("compare only_one_file 2>/dev/null", out, sizeof out), 2);
    cr_expect_eq(run_tool("compare --tolerance -1 a b 2>/dev/null", out, sizeof out), 2);
    cr_expect_eq(run_tool("compare /nonexistent/a /nonexistent/b 2>/dev/null", out, sizeof out), 1);
}

/* A quantized target: q8_0 blocks built by hand (half d, then 32 int8), so the decoded values
 * are known: qs[i] * d. The source holds the same values in F32, one of them off by 0.25. */
Test(compare, quantized_target_reports_rmse, .init = pair_setup, .fini = pair_teardown)
{
    uint8_t block[34];
    const uint16_t d = 0x3800; /* 0.5 in IEEE half */
    memcpy(block, &d, 2);
    float src[32];
    for (int i = 0; i < 32; i++) {
        block[2 + i] = (uint8_t)(int8_t)(i - 16);
        src[i] = (float)(i - 16) * 0.5f; /* -8 .. 7.5: range 15.5 */
    }
    src[3] += 0.25f;
    const uint64_t shape[1] = {32};
    st_writer *sw = st_writer_new();
    st_writer_add(sw, "model.norm.weight", "F32", 1, shape, src, sizeof src);
    cr_assert_eq(st_writer_write(sw, st_path), 0);
    st_writer_free(sw);
    tm_writer *gw = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&gw, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(gw, "general.architecture", "qwen2", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(gw, "output_norm.weight", TM_TYPE_Q8_0, 1, shape, block, &err),
                 TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(gw, gguf_path, &err), TM_OK, "%s", err.message);

    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    json_t *p = json_array_get(json_object_get(j, "pairs"), 0);
    cr_assert_not_null(p);
    cr_expect_str_eq(json_string_value(json_object_get(p, "type_b")), "q8_0");
    cr_expect_eq(json_integer_value(json_object_get(p, "n_differing")), 1);
    cr_expect_float_eq(json_real_value(json_object_get(p, "max_abs")), 0.25, 1e-12);
    cr_expect_float_eq(json_real_value(json_object_get(p, "rmse")), sqrt(0.25 * 0.25 / 32), 1e-12);
    /* the range is A's (the source's): -8 .. 7.5 */
    cr_expect_float_eq(json_real_value(json_object_get(p, "max_error_of_range")), 0.25 / 15.5, 1e-12);
    json_decref(j);
    j = run_json(st_path, gguf_path, "--tolerance 0.25", &rc);
    cr_expect_eq(rc, 0);
    json_decref(j);
}

/* The same checkpoint split into two shards with an index: it compares by name with the single
 * file, through the index or through one shard with --all-shards. */
Test(compare, sharded_checkpoint, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    char shard[2][160], index[160], sub[100];
    snprintf(sub, sizeof sub, "%s/sharded", dir); /* --all-shards applies to both files */
    cr_assert_eq(mkdir(sub, 0700), 0);
    st_writer *w[2] = {st_writer_new(), st_writer_new()};
    json_t *map = json_object();
    pair_rng_reset(); /* the values write_pair drew, in the same order */
    for (int i = 0; i < n_specs; i++) {
        const spec *s = &specs[i];
        uint64_t n = s->rows * (s->cols ? s->cols : 1), shape[2] = {s->rows, s->cols};
        uint16_t v[256];
        for (uint64_t k = 0; k < n; k++)
            v[k] = next_bf16();
        int which = i >= n_specs / 2;
        st_writer_add(w[which], s->hf, "BF16", s->cols ? 2 : 1, shape, v, n * 2);
        json_object_set_new(map, s->hf, json_sprintf("part-%d.safetensors", which + 1));
    }
    for (int k = 0; k < 2; k++) {
        snprintf(shard[k], sizeof shard[k], "%s/part-%d.safetensors", sub, k + 1);
        cr_assert_eq(st_writer_write(w[k], shard[k]), 0);
        st_writer_free(w[k]);
    }
    json_t *idx = json_pack("{s:{}, s:o}", "metadata", "weight_map", map);
    char *body = json_dumps(idx, JSON_INDENT(2));
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", sub);
    cr_assert_eq(st_write_file(index, body, strlen(body)), 0);
    free(body);
    json_decref(idx);

    int rc;
    json_t *j = run_json(index, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    json_decref(j);
    j = run_json_in("--all-shards", shard[1], st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    json_decref(j);
    j = run_json(shard[1], st_path, "", &rc);
    cr_expect_eq(rc, 1, "one shard alone leaves tensors of B unaccounted for");
    cr_expect_eq(summary(j, "only_b"), (uint64_t)(n_specs / 2));
    json_decref(j);
    /* the faithful GGUF against the sharded source */
    j = run_json(index, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    json_decref(j);
    unlink(shard[0]);
    unlink(shard[1]);
    unlink(index);
    rmdir(sub);
}

/* Every dtype against a copy whose first byte of each tensor is one bit off (3 -> 2): every
 * value changes except BOOL's (non-zero stays true). f64 and the 32- and 64-bit integers
 * would lose that bit in float32, so they must be compared as bytes to be caught. */
Test(compare, every_dtype_one_bit_off, .init = pair_setup, .fini = pair_teardown)
{
    static const struct {
        const char *name;
        size_t size;
        bool as_bytes, differs;
    } dt[] = {
        {"F64", 8, true, true},      {"F32", 4, false, true},     {"F16", 2, false, true},
        {"BF16", 2, false, true},    {"I64", 8, true, true},      {"I32", 4, true, true},
        {"I16", 2, false, true},     {"I8", 1, false, true},      {"U8", 1, false, true},
        {"BOOL", 1, false, false},   {"F8_E4M3", 1, false, true}, {"F8_E5M2", 1, false, true},
        {"U16", 2, false, true},     {"U32", 4, true, true},      {"U64", 8, true, true},
    };
    const size_t n = sizeof dt / sizeof dt[0];
    uint8_t bytes[6 * 8];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)((i * 5 + 3) & 0x3f);
    const uint64_t shape[2] = {2, 3};
    char other[160];
    snprintf(other, sizeof other, "%s/other.safetensors", dir);
    for (int copy = 0; copy < 2; copy++) {
        st_writer *w = st_writer_new();
        for (size_t i = 0; i < n; i++)
            st_writer_add(w, dt[i].name, dt[i].name, 2, shape, bytes, 6 * dt[i].size);
        cr_assert_eq(st_writer_write(w, copy ? other : st_path), 0);
        st_writer_free(w);
        bytes[0] ^= 1;
    }
    int rc;
    json_t *j = run_json(st_path, other, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), n - 1);
    cr_expect_eq(summary(j, "exact"), 1);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "pairs"), i, p) {
        cr_assert_lt(i, n);
        cr_expect_str_eq(json_string_value(json_object_get(p, "status")),
                         dt[i].differs ? "differs" : "exact", "%s", dt[i].name);
        cr_expect_eq(json_is_true(json_object_get(p, "compared_as_bytes")), dt[i].as_bytes, "%s",
                     dt[i].name);
        if (dt[i].differs)
            cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_a")), 0);
    }
    json_decref(j);
    unlink(other);
}

/* ggml's own golden file against itself: every one of its 58 tensors, of every type, whether
 * or not this library decodes it, is an exact match. */
Test(compare, golden_file_against_itself)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char path[512];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", corpus);
    int rc;
    json_t *j = run_json(path, path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), 58);
    cr_expect_eq(summary(j, "pairs"), 58);
    json_decref(j);
}

Test(compare, tensors_the_converter_drops_do_not_fail, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.inv_freq = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "only_a"), 0);
    json_t *o = json_array_get(json_object_get(j, "only_a"), 0);
    cr_assert_not_null(o, "the dropped tensor is still listed");
    cr_expect_str_eq(json_string_value(json_object_get(o, "name")),
                     "model.layers.0.self_attn.rotary_emb.inv_freq");
    cr_expect(json_is_true(json_object_get(o, "dropped_by_converter")));
    json_decref(j);
}

/* The checkpoint stores lm_head, the GGUF ties it to token_embd: they are compared. */
Test(compare, lm_head_tied_in_gguf, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.lm_head = 1, .drop_output = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "only_a"), 0);
    json_decref(j);
}

Test(compare, shape_mismatch, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.transpose = "blk.0.ffn_up.weight"});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "shape_mismatch"), 1);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    json_decref(j);
}

Test(compare, llama_without_head_counts, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.no_heads = 1});
    static char out[4096];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s 2>&1", st_path, gguf_path);
    cr_expect_eq(run_tool(args, out, sizeof out), 1);
    cr_expect(strstr(out, "llama.attention.head_count is missing"), "%s", out);
}

/* A value float32 cannot hold, against the float32 it rounds to, is a difference: compare works
 * in the wider type (I64 16777217 is not F32 16777216; F64 1e300 is not F32 infinity), and
 * values both types hold exactly still match. */
Test(compare, the_wider_type_decides, .init = pair_setup, .fini = pair_teardown)
{
    static const struct {
        const char *name, *wide_type;
        size_t wide_size;
        int64_t i;
        double d;
        float f;
        bool differs;
    } c[] = {
        {"i64_2p24_plus_1", "I64", 8, 16777217, 0, 16777216.0f, true},
        {"i64_2p24", "I64", 8, 16777216, 0, 16777216.0f, false},
        {"i64_minus_5", "I64", 8, -5, 0, -5.0f, false},
        {"f64_1e300", "F64", 8, 0, 1e300, INFINITY, true},
        {"f64_tenth", "F64", 8, 0, 0.1, 0.1f, true},
        {"f64_half", "F64", 8, 0, 0.5, 0.5f, false},
        {"i32_2p24_plus_1", "I32", 4, 16777217, 0, 16777216.0f, true},
    };
    const size_t n = sizeof c / sizeof c[0];
    const uint64_t shape[1] = {1};
    char other[160];
    snprintf(other, sizeof other, "%s/other.safetensors", dir);
    st_writer *wa = st_writer_new(), *wb = st_writer_new();
    for (size_t k = 0; k < n; k++) {
        uint8_t v[8];
        if (c[k].wide_type[0] == 'F')
            memcpy(v, &c[k].d, 8);
        else if (c[k].wide_size == 8)
            memcpy(v, &c[k].i, 8);
        else {
            int32_t i32 = (int32_t)c[k].i;
            memcpy(v, &i32, 4);
        }
        st_writer_add(wa, c[k].name, c[k].wide_type, 1, shape, v, c[k].wide_size);
        st_writer_add(wb, c[k].name, "F32", 1, shape, &c[k].f, 4);
    }
    cr_assert_eq(st_writer_write(wa, st_path), 0);
    cr_assert_eq(st_writer_write(wb, other), 0);
    st_writer_free(wa);
    st_writer_free(wb);
    for (int order = 0; order < 2; order++) {
        int rc;
        json_t *j = order ? run_json(other, st_path, "", &rc) : run_json(st_path, other, "", &rc);
        cr_expect_eq(rc, 1);
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(j, "pairs"), i, p) {
            const char *name = json_string_value(json_object_get(p, "a"));
            cr_assert_not_null(name);
            for (size_t k = 0; k < n; k++)
                if (strcmp(name, c[k].name) == 0)
                    cr_expect_str_eq(json_string_value(json_object_get(p, "status")),
                                     c[k].differs ? "differs" : "exact", "%s (%s first)", name,
                                     order ? "F32" : c[k].wide_type);
        }
        cr_expect_eq(json_array_size(json_object_get(j, "pairs")), n);
        json_decref(j);
    }
    unlink(other);
}
