/* info's plan around the memory: where llama.cpp would place the weights and the cache with
 * --gpu-layers N, the largest context --fit finds, and what is said instead of a number. The
 * expected values are worked out here from llama.cpp's rules (llama-model.cpp load_tensors:
 * the last N of the block_count layers and the output layer go to the GPU, the input layer
 * stays; llama-context.cpp: the context padded to 256), never read back from the tool. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(memory_plan, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err) { cr_assert_eq(s, TM_OK, "%s", err->message); }

static void u32(tm_writer *w, const char *key, uint32_t v)
{
    tm_error err;
    ok(tm_writer_kv_scalar(w, key, TM_V_U32, &v, &err), &err);
}

/* A header-only model of `arch`: 4 blocks of width 64, 4 heads over 2 key/value heads of 16;
 * per block one 64 x 64 f16 matrix (8192 bytes), the embedding 64 x 32 f16 (4096 bytes), an
 * f32 output_norm (256 bytes), and an output 64 x 32 f16 unless tied. */
static const char *write_model(const char *arch, const char *name, bool tied, uint32_t blocks)
{
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    char key[80];
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", arch, strlen(arch), &err), &err);
#define A(k, v) (snprintf(key, sizeof key, "%s." k, arch), u32(w, key, v))
    A("block_count", blocks);
    A("context_length", 2048);
    A("embedding_length", 64);
    A("feed_forward_length", 128);
    A("attention.head_count", 4);
    A("attention.head_count_kv", 2);
#undef A
    const uint64_t mat[2] = {64, 64}, emb[2] = {64, 32}, norm[1] = {64};
    ok(tm_writer_tensor(w, "token_embd.weight", TM_TYPE_F16, 2, emb, NULL, &err), &err);
    for (uint32_t i = 0; i < blocks && i < 8; i++) {
        snprintf(key, sizeof key, "blk.%u.attn_q.weight", i);
        ok(tm_writer_tensor(w, key, TM_TYPE_F16, 2, mat, NULL, &err), &err);
    }
    ok(tm_writer_tensor(w, "output_norm.weight", TM_TYPE_F32, 1, norm, NULL, &err), &err);
    if (!tied)
        ok(tm_writer_tensor(w, "output.weight", TM_TYPE_F16, 2, emb, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

static const json_t *plan_of(const json_t *j)
{
    const json_t *p = json_object_get(json_object_get(j, "memory"), "plan");
    cr_assert(json_is_object(p), "no memory.plan");
    return p;
}

/* per layer and cell: 2 heads x 16 values x 2 bytes, for K and for V */
#define LAYER_CELL (2 * 16 * 2 * 2)

Test(memory_plan, gpu_layers_take_the_last_blocks_and_the_output_and_never_the_embedding)
{
    const char *f = write_model("llama", "l.gguf", false, 4);
    /* --gpu-layers 3: the first offloaded block is 4 + 1 - 3 = 2: blocks 2 and 3, the output */
    json_t *j = tool_json(0, "info", "--json", "--context", "1000", "--gpu-layers", "3", f, NULL);
    const json_t *p = plan_of(j);
    cr_assert_eq(json_u64(p, "gpu_weights"), 2 * 8192 + 256 + 4096);
    cr_assert_eq(json_u64(p, "cpu_weights"), 4096 + 2 * 8192);
    /* 1,000 tokens are 1,024 cells; two layers' cache on each side */
    cr_assert_eq(json_u64(p, "gpu_cache"), 2ull * 1024 * LAYER_CELL);
    cr_assert_eq(json_u64(p, "cpu_cache"), 2ull * 1024 * LAYER_CELL);
    cr_assert(json_is_true(json_object_get(p, "estimate")), "the compute buffer is an estimate");
    json_decref(j);

    /* more layers than there are: everything but the input layer */
    j = tool_json(0, "info", "--json", "--gpu-layers", "99", f, NULL);
    p = plan_of(j);
    cr_assert_eq(json_u64(p, "cpu_weights"), 4096);
    cr_assert_eq(json_u64(p, "cpu_cache"), 0);
    cr_assert_eq(json_u64(p, "gpu_cache"), 4ull * 2048 * LAYER_CELL);
    json_decref(j);

    /* --gpu-layers 1: the output layer alone */
    j = tool_json(0, "info", "--json", "--gpu-layers", "1", f, NULL);
    p = plan_of(j);
    cr_assert_eq(json_u64(p, "gpu_weights"), 256 + 4096);
    cr_assert_eq(json_u64(p, "gpu_cache"), 0);
    json_decref(j);
}

Test(memory_plan, a_tied_output_puts_a_copy_of_the_embedding_on_the_gpu)
{
    const char *f = write_model("llama", "t.gguf", true, 4);
    json_t *j = tool_json(0, "info", "--json", "--gpu-layers", "1", f, NULL);
    const json_t *p = plan_of(j);
    cr_assert_eq(json_u64(p, "gpu_weights"), 256 + 4096, "output_norm and the copy");
    cr_assert_eq(json_u64(p, "cpu_weights"), 4096 + 4 * 8192);
    json_decref(j);
    tool_result r = tool_run("info", "--gpu-layers", "1", f, NULL);
    cr_assert(strstr(r.out, "the output reuses token_embd: the GPU holds a copy of it"), "%s",
              r.out);
    cr_assert(strstr(r.out, "(an estimate)"), "%s", r.out);
    tool_result_free(&r);
}

static uint64_t budgeted(const char *f, const char *context, const char *gpu)
{
    json_t *j = tool_json(0, "info", "--json", "--context", context, "--gpu-layers", gpu, f, NULL);
    const json_t *p = plan_of(j);
    uint64_t v = strcmp(gpu, "0") ? json_u64(p, "gpu_total") : json_u64(p, "total");
    json_decref(j);
    return v;
}

Test(memory_plan, fit_finds_the_largest_context_of_whole_256_cells_within_the_budget)
{
    const char *f = write_model("llama", "f.gguf", false, 4);
    const char *gpus[] = {"0", "3"};
    for (int g = 0; g < 2; g++) {
        /* a budget between the plans at 3,072 and 3,328 tokens: the answer is 3,072 */
        uint64_t lo = budgeted(f, "3072", gpus[g]), hi = budgeted(f, "3328", gpus[g]);
        cr_assert_lt(lo, hi);
        char budget[32];
        snprintf(budget, sizeof budget, "%llu", (unsigned long long)(lo + (hi - lo) / 2));
        json_t *j = tool_json(0, "info", "--json", "--fit", budget, "--gpu-layers", gpus[g], f,
                              NULL);
        const json_t *fit = json_object_get(json_object_get(j, "memory"), "fit");
        cr_assert_eq(json_u64(fit, "context"), 3072, "--gpu-layers %s", gpus[g]);
        json_decref(j);
    }
    /* too small for 256 cells: said, not a context of 0 tokens sized */
    tool_result r = tool_run("info", "--fit", "1000", f, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "in 1,000 bytes: not even 256 tokens"), "%s", r.out);
    tool_result_free(&r);
    r = tool_run("info", "--fit", "12XB", f, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--fit wants a number of bytes"), "%s", r.err);
    tool_result_free(&r);
    json_t *j = tool_json(0, "info", "--json", "--fit", "1GiB", f, NULL);
    cr_assert_eq(json_u64(json_object_get(json_object_get(j, "memory"), "fit"), "budget"),
                 1ull << 30);
    json_decref(j);
    /* read as every command reads a size (tools/cli/size.c): 1G is 10^9, as 1GB */
    j = tool_json(0, "info", "--json", "--fit", "1G", f, NULL);
    cr_assert_eq(json_u64(json_object_get(json_object_get(j, "memory"), "fit"), "budget"),
                 1000000000ull);
    json_decref(j);
}

Test(memory_plan, a_thousand_tokens_are_1024_cells_and_sequences_get_their_own)
{
    const char *f = write_model("llama", "c.gguf", false, 4);
    json_t *j = tool_json(0, "info", "--json", "--context", "1000", f, NULL);
    const json_t *m = json_object_get(j, "memory");
    cr_assert_eq(json_u64(m, "n_ctx"), 1024);
    cr_assert_eq(json_u64(m, "bytes"), 4ull * 1024 * LAYER_CELL);
    cr_assert_eq(json_u64(json_object_get(j, "kv_cache"), "bytes"), 4ull * 1024 * LAYER_CELL);
    json_decref(j);
    /* 100 tokens: 256 cells */
    j = tool_json(0, "info", "--json", "--context", "100", f, NULL);
    cr_assert_eq(json_u64(json_object_get(j, "memory"), "bytes"), 4ull * 256 * LAYER_CELL);
    json_decref(j);
    /* 1,000 tokens for 3 sequences: 1,024 / 3 = 341 padded to 512 cells each */
    j = tool_json(0, "info", "--json", "--context", "1000", "--parallel", "3", f, NULL);
    m = json_object_get(j, "memory");
    cr_assert_eq(json_u64(m, "cells_per_stream"), 512);
    cr_assert_eq(json_u64(m, "bytes"), 4ull * 3 * 512 * LAYER_CELL);
    json_decref(j);
    tool_result r = tool_run("info", "--context", "1000", f, NULL);
    cr_assert(strstr(r.out, "at 1,000 tokens (1,024 cells), K and V in f16"), "%s", r.out);
    tool_result_free(&r);
    r = tool_run("info", "--parallel", "0", f, NULL);
    cr_assert_eq(r.status, 2);
    tool_result_free(&r);
}

Test(memory_plan, encoders_encoder_decoders_and_unmodelled_layouts_are_said_by_name)
{
    struct {
        const char *arch, *said;
    } cases[] = {
        {"bert", "none: 'bert' is an encoder or a diffusion model"},
        {"t5", "unknown for 't5': an encoder-decoder"},
        {"phi3", "unknown for architecture 'phi3': its memory layout is not modelled here"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *f = write_model(cases[i].arch, "e.gguf", false, 4);
        json_t *j = tool_json(0, "info", "--json", f, NULL);
        const json_t *m = json_object_get(j, "memory");
        cr_assert(json_is_false(json_object_get(m, "known")), "%s", cases[i].arch);
        cr_assert_null(json_object_get(m, "bytes"), "no number for %s", cases[i].arch);
        cr_assert(strstr(json_string_value(json_object_get(m, "why")), cases[i].said), "%s: %s",
                  cases[i].arch, json_string_value(json_object_get(m, "why")));
        json_decref(j);
    }
}

Test(memory_plan, numbers_past_what_llama_cpp_holds_are_said_not_sized)
{
    /* 100,000 blocks: past llama.cpp's 512 layers; the message names the entry */
    const char *f = write_model("llama", "big.gguf", false, 100000);
    tool_result r = tool_run("info", f, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "block_count 100000 is past llama.cpp's 512 layers"), "%s", r.out);
    tool_result_free(&r);
    /* a context past 32 bits */
    f = write_model("llama", "ctx.gguf", false, 4);
    r = tool_run("info", "--context", "99999999999", f, NULL);
    cr_assert(strstr(r.out, "llama.cpp holds the context in 32 bits"), "%s", r.out);
    tool_result_free(&r);
}

Test(memory_plan, a_split_set_is_planned_like_the_file_it_was_split_from)
{
    const char *f = write_model("llama", "whole.gguf", false, 4);
    char prefix[4200], first[4300];
    snprintf(prefix, sizeof prefix, "%s/part", test_dir());
    tool_result r = tool_run("split", "--max-tensors", "3", f, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    snprintf(first, sizeof first, "%s-00001-of-00003.gguf", prefix);
    json_t *whole = tool_json(0, "info", "--json", "--context", "1000", "--gpu-layers", "3", f,
                              NULL);
    json_t *set = tool_json(0, "info", "--json", "--context", "1000", "--gpu-layers", "3", first,
                            NULL);
    cr_assert_eq(json_integer_value(json_object_get(set, "n_shards")), 3);
    const json_t *a = json_object_get(whole, "memory"), *b = json_object_get(set, "memory");
    cr_assert_eq(json_u64(b, "bytes"), json_u64(a, "bytes"));
    cr_assert_eq(json_u64(b, "bytes"), 4ull * 1024 * LAYER_CELL);
    const char *keys[] = {"cpu_weights", "gpu_weights", "cpu_cache", "gpu_cache", "total"};
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(json_u64(json_object_get(b, "plan"), keys[i]),
                     json_u64(json_object_get(a, "plan"), keys[i]), "%s", keys[i]);
    json_decref(whole);
    json_decref(set);
}

Test(memory_plan, an_entry_the_memory_cannot_use_is_named_with_its_index_and_offset)
{
    const char *path = test_path("bad.gguf");
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "gemma2", 6, &err), &err);
    u32(w, "gemma2.block_count", 4);
    u32(w, "gemma2.context_length", 2048);
    u32(w, "gemma2.embedding_length", 64);
    u32(w, "gemma2.attention.head_count", 4);
    /* entry 5: three counts for four layers */
    const uint32_t kv[3] = {2, 2, 2};
    ok(tm_writer_kv_array(w, "gemma2.attention.head_count_kv", TM_V_U32, kv, 3, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    tm_file *f;
    ok(tm_open(path, 0, &f, &err), &err);
    char want[160];
    snprintf(want, sizeof want, "gemma2.attention.head_count_kv (entry 5, at byte %llu) is not "
             "one count per layer", (unsigned long long)tm_kv_at(f, 5)->offset);
    tm_close(f);
    tool_result r = tool_run("info", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    tool_result_free(&r);

    /* a window that is a string, not a count */
    path = test_path("bad2.gguf");
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "gemma2", 6, &err), &err);
    u32(w, "gemma2.block_count", 4);
    u32(w, "gemma2.context_length", 2048);
    u32(w, "gemma2.embedding_length", 64);
    ok(tm_writer_kv_str(w, "gemma2.attention.sliding_window", "wide", 4, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    r = tool_run("info", path, NULL);
    cr_assert(strstr(r.out, "gemma2.attention.sliding_window (entry 4, at byte "), "%s", r.out);
    cr_assert(strstr(r.out, ") is not a count"), "%s", r.out);
    tool_result_free(&r);
}
