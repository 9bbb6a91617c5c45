/* The memory of a safetensors checkpoint, from the config.json beside it: the Hugging Face
 * dimensions mapped as llama.cpp's converter maps them (num_key_value_heads, head_dim,
 * sliding_window, kv_lora_rank...), then the same rules as a GGUF's. The expected bytes are
 * worked out here from the config (layers x cells x key/value heads x widths x 2 bytes). */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(memory_config, .fini = test_cleanup);

/* A two-layer checkpoint (f16, no data to speak of) in a directory of its own, with config
 * (a JSON object's text) beside it, or none when config is NULL. */
static const char *checkpoint(const char *dir, const char *config)
{
    char path[4200];
    snprintf(path, sizeof path, "mkdir -p '%s/%s'", test_dir(), dir);
    cr_assert_eq(system(path), 0);
    st_writer *w = st_writer_new();
    static const uint64_t emb[2] = {32, 64}, q[2] = {64, 64};
    static uint8_t zeros[64 * 64 * 2];
    st_writer_add(w, "model.embed_tokens.weight", "F16", 2, emb, zeros, 32 * 64 * 2);
    st_writer_add(w, "model.layers.0.self_attn.q_proj.weight", "F16", 2, q, zeros, 64 * 64 * 2);
    st_writer_add(w, "model.layers.1.self_attn.q_proj.weight", "F16", 2, q, zeros, 64 * 64 * 2);
    st_writer_add(w, "lm_head.weight", "F16", 2, emb, zeros, 32 * 64 * 2);
    static char model[4200];
    snprintf(model, sizeof model, "%s/%s/model.safetensors", test_dir(), dir);
    cr_assert_eq(st_writer_write(w, model), 0);
    st_writer_free(w);
    if (config) {
        snprintf(path, sizeof path, "%s/%s/config.json", test_dir(), dir);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(config, f);
        fclose(f);
    }
    return model;
}

static const json_t *memory_of(json_t *j)
{
    const json_t *m = json_object_get(j, "memory");
    cr_assert(json_is_object(m), "no memory object");
    return m;
}

Test(memory_config, a_qwen2_checkpoint_is_sized_from_its_config)
{
    const char *f = checkpoint("qwen2", "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, "
                               "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                               "\"num_key_value_heads\": 2, \"max_position_embeddings\": 2048, "
                               "\"sliding_window\": 64, \"use_sliding_window\": false}");
    /* 1,000 tokens: 1,024 cells x 2 layers x 2 heads x (16 + 16) x 2 bytes; no window */
    json_t *j = tool_json(0, "info", "--json", "--context", "1000", f, NULL);
    const json_t *m = memory_of(j);
    cr_assert(json_is_true(json_object_get(m, "known")), "%s",
              json_string_value(json_object_get(m, "why")));
    cr_assert_eq(json_u64(m, "bytes"), 1024ull * 2 * 2 * 32 * 2);
    cr_assert_eq(json_u64(json_object_get(m, "kv"), "sliding_window_layers"), 0);
    json_decref(j);
    /* the trained context from max_position_embeddings; the plan places HF names: layer 1 and
     * lm_head on the GPU with --gpu-layers 2, the embedding on the CPU */
    j = tool_json(0, "info", "--json", "--gpu-layers", "2", f, NULL);
    m = memory_of(j);
    cr_assert_eq(json_u64(m, "context"), 2048);
    const json_t *p = json_object_get(m, "plan");
    cr_assert_eq(json_u64(p, "gpu_weights"), 64 * 64 * 2 + 32 * 64 * 2);
    cr_assert_eq(json_u64(p, "cpu_weights"), 64 * 64 * 2 + 32 * 64 * 2);
    json_decref(j);
    tool_result r = tool_run("info", f, NULL);
    cr_assert(strstr(r.out, "the dimensions from config.json"), "%s", r.out);
    tool_result_free(&r);
}

Test(memory_config, gemma2_slides_and_deepseek_compresses_as_their_configs_say)
{
    /* gemma2: head_dim 32, window 64: at 4,096 tokens layer 0 holds 64 + 512 -> 768 cells */
    const char *f = checkpoint("gemma2", "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, "
                               "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                               "\"num_key_value_heads\": 2, \"head_dim\": 32, "
                               "\"sliding_window\": 64}");
    json_t *j = tool_json(0, "info", "--json", "--context", "4096", f, NULL);
    cr_assert_eq(json_u64(memory_of(j), "bytes"), (768ull + 4096) * 2 * 64 * 2);
    json_decref(j);
    /* deepseek_v3: one head of kv_lora_rank + qk_rope_head_dim = 64 + 32 values, no V */
    f = checkpoint("ds", "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, "
                   "\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
                   "\"kv_lora_rank\": 64, \"qk_rope_head_dim\": 32, \"qk_nope_head_dim\": 16, "
                   "\"v_head_dim\": 16, \"max_position_embeddings\": 4096}");
    j = tool_json(0, "info", "--json", f, NULL);
    const json_t *m = memory_of(j);
    cr_assert(json_is_true(json_object_get(json_object_get(m, "kv"), "mla")));
    cr_assert_eq(json_u64(m, "bytes"), 4096ull * 2 * 96 * 2);
    json_decref(j);
}

Test(memory_config, without_a_usable_config_it_says_why)
{
    struct {
        const char *dir, *config, *said;
    } cases[] = {
        {"none", NULL, "no config.json beside the checkout"},
        {"odd", "{\"model_type\": \"bloom\", \"num_hidden_layers\": 2}",
         "config.json's model_type 'bloom' is not mapped"},
        {"short", "{\"model_type\": \"llama\"}", "config.json lacks num_hidden_layers"},
        {"broken", "{\"model_type\": ", "config.json line 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *f = checkpoint(cases[i].dir, cases[i].config);
        json_t *j = tool_json(0, "info", "--json", f, NULL);
        const json_t *m = memory_of(j);
        cr_assert(json_is_false(json_object_get(m, "known")), "%s", cases[i].dir);
        cr_assert(strstr(json_string_value(json_object_get(m, "why")), cases[i].said), "%s: %s",
                  cases[i].dir, json_string_value(json_object_get(m, "why")));
        json_decref(j);
    }
}

Test(memory_config, a_piped_checkpoint_says_its_config_is_not_read)
{
    const char *f = checkpoint("piped", "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, "
                               "\"hidden_size\": 64, \"num_attention_heads\": 4}");
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' info --json - < '%s'", getenv("TM_TOOL"), f);
    int status;
    char *out = shell_output(cmd, &status);
    cr_assert_eq(status, 0, "%s", out);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    cr_assert(j, "%s: %s", jerr.text, out);
    const json_t *m = memory_of(j);
    cr_assert(json_is_false(json_object_get(m, "known")));
    cr_assert(strstr(json_string_value(json_object_get(m, "why")),
                     "the config.json of a piped checkpoint is not read"), "%s", out);
    json_decref(j);
    free(out);
}
