/* info's numbers: parameters, bits per weight, the KV cache. The expected values are worked out
 * by hand from the shapes below (a Qwen2-7B layout: 28 blocks, width 3584, 28 heads, 4 KV
 * heads of 128, feed-forward 18944, vocabulary 152064, output not tied) and from llama.cpp's
 * cache layout: layers x context x KV heads x (key + value width) x bytes per value. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(cli_model, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err) { cr_assert_eq(s, TM_OK, "%s", err->message); }

static void u32(tm_writer *w, const char *key, uint32_t v)
{
    tm_error err;
    ok(tm_writer_kv_scalar(w, key, TM_V_U32, &v, &err), &err);
}

/* Every tensor a hole (no data written): the file is sparse, 4.3 GB long on paper. Matrices
 * are q4_K (144 bytes per 256 weights), norms and biases f32. */
static const char *write_qwen2_7b(void)
{
    enum { H = 3584, V = 152064, FF = 18944, L = 28, KV = 4 * 128 };
    const char *path = test_path("qwen2-7b.gguf");
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "qwen2", 5, &err), &err);
    u32(w, "qwen2.block_count", L);
    u32(w, "qwen2.context_length", 32768);
    u32(w, "qwen2.embedding_length", H);
    u32(w, "qwen2.feed_forward_length", FF);
    u32(w, "qwen2.attention.head_count", 28);
    u32(w, "qwen2.attention.head_count_kv", 4);
#define T(name, type, ...)                                                                         \
    do {                                                                                           \
        const uint64_t ne[] = {__VA_ARGS__};                                                       \
        ok(tm_writer_tensor(w, name, type, sizeof ne / sizeof ne[0], ne, NULL, &err), &err);       \
    } while (0)
    T("token_embd.weight", TM_TYPE_Q4_K, H, V);
    for (int b = 0; b < L; b++) {
        char n[64];
#define B(what, type, ...)                                                                         \
    do {                                                                                           \
        snprintf(n, sizeof n, "blk.%d." what, b);                                                  \
        T(n, type, __VA_ARGS__);                                                                   \
    } while (0)
        B("attn_norm.weight", TM_TYPE_F32, H);
        B("attn_q.weight", TM_TYPE_Q4_K, H, H);
        B("attn_q.bias", TM_TYPE_F32, H);
        B("attn_k.weight", TM_TYPE_Q4_K, H, KV);
        B("attn_k.bias", TM_TYPE_F32, KV);
        B("attn_v.weight", TM_TYPE_Q4_K, H, KV);
        B("attn_v.bias", TM_TYPE_F32, KV);
        B("attn_output.weight", TM_TYPE_Q4_K, H, H);
        B("ffn_norm.weight", TM_TYPE_F32, H);
        B("ffn_gate.weight", TM_TYPE_Q4_K, H, FF);
        B("ffn_up.weight", TM_TYPE_Q4_K, H, FF);
        B("ffn_down.weight", TM_TYPE_Q4_K, FF, H);
#undef B
    }
    T("output_norm.weight", TM_TYPE_F32, H);
    T("output.weight", TM_TYPE_Q4_K, H, V);
#undef T
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

/* f32 weights: per block 3 x 3584 + 2 x 512 norms and biases, and output_norm */
#define SMALL (28ull * (3 * 3584 + 2 * 512) + 3584)
#define PARAMS 7615616512ull

Test(cli_model, a_qwen2_7b_layout_has_its_parameters_and_kv_cache)
{
    const char *f = write_qwen2_7b();
    json_t *j = tool_json(0, "info", "--json", "--context", "32768", f, NULL);
    cr_assert_eq(json_u64(j, "parameters"), PARAMS);
    cr_assert_str_eq(json_string_value(json_object_get(j, "parameters_in_words")), "7.62 B");
    const uint64_t bytes = (PARAMS - SMALL) / 256 * 144 + SMALL * 4;
    cr_assert_float_eq(json_real_value(json_object_get(j, "bits_per_weight")),
                       (double)bytes * 8 / (double)PARAMS, 1e-12);
    const json_t *types = json_object_get(j, "types");
    cr_assert_eq(json_array_size(types), 2);
    const json_t *q4k = json_array_get(types, 0);
    cr_assert_str_eq(json_string_value(json_object_get(q4k, "type")), "q4_K");
    cr_assert_eq(json_real_value(json_object_get(q4k, "bits_per_weight")), 4.5);
    cr_assert_eq(json_u64(q4k, "weights"), PARAMS - SMALL);
    const json_t *kv = json_object_get(j, "kv_cache");
    cr_assert(json_is_true(json_object_get(kv, "known")));
    /* 28 layers x 32768 tokens x 4 heads x (128 + 128) values x 2 bytes */
    cr_assert_eq(json_u64(kv, "bytes"), 1879048192ull);
    cr_assert_eq(1879048192ull, 28ull * 32768 * 4 * 256 * 2);
    json_decref(j);

    /* q8_0: 34 bytes for 32 values; 512 values per token and layer are 16 blocks */
    j = tool_json(0, "info", "--json", "--context", "32768", "--kv-type", "q8_0", f, NULL);
    cr_assert_eq(json_u64(json_object_get(j, "kv_cache"), "bytes"), 28ull * 32768 * 2 * 16 * 34);
    json_decref(j);

    tool_result r = tool_run("info", f, "--context", "32768", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "7,615,616,512 (7.62 B)"), "%s", r.out);
    cr_assert(strstr(r.out, "1,879,048,192 bytes (1.75 GiB) at 32,768 tokens, K and V in f16"),
              "%s", r.out);
    cr_assert(strstr(r.out, "    q4_K                    4.5 bits, 7.62 B weights in 198 tensors\n"),
              "%s", r.out);
    tool_result_free(&r);
}

static const char *write_arch(const char *arch, const char *name)
{
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    char key[64];
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", arch, strlen(arch), &err), &err);
#define A(k, v) (snprintf(key, sizeof key, "%s." k, arch), u32(w, key, v))
    A("block_count", 4);
    A("embedding_length", 64);
    A("attention.head_count", 2);
    A("attention.head_count_kv", 1);
    A("attention.key_length", 32);
    A("attention.value_length", 32);
    A("attention.sliding_window", 16);
#undef A
    const uint64_t ne[1] = {64};
    ok(tm_writer_tensor(w, "output_norm.weight", TM_TYPE_F32, 1, ne, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

Test(cli_model, gemma2_slides_every_other_layer_and_an_unknown_architecture_is_unknown)
{
    /* 64 tokens are 256 cells, as llama.cpp pads them; the micro-batch is then 64 (at most the
     * context), and a window of 16 + 64 padded to 256 is the whole cache: every layer 256 cells
     * of 1 head x (32 + 32) values x 2 bytes */
    json_t *j = tool_json(0, "info", "--json", "--context", "64",
                          write_arch("gemma2", "g2.gguf"), NULL);
    const json_t *kv = json_object_get(j, "kv_cache");
    cr_assert_eq(json_u64(kv, "bytes"), 4 * 256 * 64 * 2);
    cr_assert_eq(json_u64(kv, "sliding_window_layers"), 2);
    json_decref(j);
    /* at 4096 tokens the sliding layers hold 16 + 512 tokens padded to 768 cells */
    j = tool_json(0, "info", "--json", "--context", "4096", write_arch("gemma2", "g2.gguf"), NULL);
    cr_assert_eq(json_u64(json_object_get(j, "kv_cache"), "bytes"), (2 * 768 + 2 * 4096) * 64 * 2);
    json_decref(j);
    /* gemma3: five of every six slide; with 4 layers, all four */
    j = tool_json(0, "info", "--json", "--context", "4096", write_arch("gemma3", "g3.gguf"), NULL);
    cr_assert_eq(json_u64(json_object_get(j, "kv_cache"), "bytes"), 4 * 768 * 64 * 2);
    json_decref(j);
    /* llama: no window, every layer 256 cells */
    j = tool_json(0, "info", "--json", "--context", "64", write_arch("llama", "l.gguf"), NULL);
    cr_assert_eq(json_u64(json_object_get(j, "kv_cache"), "bytes"), 4 * 256 * 64 * 2);
    json_decref(j);

    const char *odd = write_arch("bloom", "b.gguf");
    j = tool_json(0, "info", "--json", "--context", "64", odd, NULL);
    kv = json_object_get(j, "kv_cache");
    cr_assert(json_is_false(json_object_get(kv, "known")));
    cr_assert_null(json_object_get(kv, "bytes"), "no number for an architecture not known");
    json_decref(j);
    tool_result r = tool_run("info", "--context", "64", odd, NULL);
    cr_assert(strstr(r.out, "unknown for architecture 'bloom'"), "%s", r.out);
    tool_result_free(&r);
    r = tool_run("info", "--kv-type", "q9_9", odd, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--kv-type: 'q9_9' is not a cache type"), "%s", r.err);
    tool_result_free(&r);
}
