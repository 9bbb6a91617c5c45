/* A Hugging Face checkpoint's config.json in GGUF's words: the dimensions the memory needs,
 * under the keys llama.cpp's converter (convert_hf_to_gguf.py) gives them, written into a
 * header-only GGUF in memory so that the one set of rules in memory.c reads both. Only the
 * model types whose mapping is written here are read; any other is said by name. */
#include "memory.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* model_type -> the GGUF architecture convert_hf_to_gguf.py writes for it */
static const struct hf_arch {
    const char *model_type, *arch;
} hf_archs[] = {
    {"llama", "llama"},       {"mistral", "llama"},         {"qwen2", "qwen2"},
    {"qwen3", "qwen3"},       {"qwen2_moe", "qwen2moe"},    {"qwen3_moe", "qwen3moe"},
    {"gemma", "gemma"},       {"gemma2", "gemma2"},         {"gemma3", "gemma3"},
    {"gemma3_text", "gemma3"}, {"cohere2", "cohere2"},      {"gpt_oss", "gpt-oss"},
    {"deepseek_v2", "deepseek2"}, {"deepseek_v3", "deepseek2"},
};

#define WHY(...) (snprintf(why, why_size, __VA_ARGS__), false)

/* A member that is a whole number >= 0. */
static bool count_of(const json_t *o, const char *name, uint64_t *v)
{
    const json_t *j = json_object_get(o, name);
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return false;
    *v = (uint64_t)json_integer_value(j);
    return true;
}

typedef struct builder {
    tm_writer *w;
    const char *arch;
    bool ok;
    tm_error err;
} builder;

static void put(builder *b, const char *suffix, uint64_t v)
{
    char key[128];
    uint32_t u = (uint32_t)v;
    snprintf(key, sizeof key, "%s.%s", b->arch, suffix);
    if (b->ok && v <= UINT32_MAX)
        b->ok = tm_writer_kv_scalar(b->w, key, TM_V_U32, &u, &b->err) == TM_OK;
    else if (b->ok)
        b->ok = tm_writer_kv_scalar(b->w, key, TM_V_U64, &v, &b->err) == TM_OK;
}

/* config member -> GGUF key, when present */
static void copy(builder *b, const json_t *c, const char *member, const char *suffix)
{
    uint64_t v;
    if (count_of(c, member, &v))
        put(b, suffix, v);
}

static bool fill(builder *b, const json_t *c, char *why, size_t why_size)
{
    uint64_t layers, embd, heads, v;
    if (!count_of(c, "num_hidden_layers", &layers) || !count_of(c, "hidden_size", &embd) ||
        !count_of(c, "num_attention_heads", &heads))
        return WHY("config.json lacks num_hidden_layers, hidden_size or num_attention_heads");
    put(b, "block_count", layers);
    put(b, "embedding_length", embd);
    put(b, "attention.head_count", heads);
    copy(b, c, "max_position_embeddings", "context_length");
    copy(b, c, "intermediate_size", "feed_forward_length");
    copy(b, c, "vocab_size", "vocab_size");
    if (!strcmp(b->arch, "deepseek2") && count_of(c, "kv_lora_rank", &v)) {
        /* MLA as the converter writes it: one head of the latent and the rope part is K, the
         * latent is V's width; the _mla keys keep the decompressed head widths */
        uint64_t rope, nope, vdim;
        if (!count_of(c, "qk_rope_head_dim", &rope) || !count_of(c, "qk_nope_head_dim", &nope) ||
            !count_of(c, "v_head_dim", &vdim))
            return WHY("config.json has kv_lora_rank without qk_rope_head_dim, "
                       "qk_nope_head_dim and v_head_dim");
        put(b, "attention.head_count_kv", 1);
        put(b, "attention.key_length", v + rope);
        put(b, "attention.value_length", v);
        put(b, "attention.key_length_mla", nope + rope);
        put(b, "attention.value_length_mla", vdim);
        copy(b, c, "num_nextn_predict_layers", "nextn_predict_layers");
        return true;
    }
    copy(b, c, "num_key_value_heads", "attention.head_count_kv");
    if (count_of(c, "head_dim", &v)) {
        put(b, "attention.key_length", v);
        put(b, "attention.value_length", v);
    }
    /* a window the model uses: qwen2's use_sliding_window false means none */
    const json_t *use = json_object_get(c, "use_sliding_window");
    if (!json_is_false(use))
        copy(b, c, "sliding_window", "attention.sliding_window");
    copy(b, c, "sliding_window_pattern", "attention.sliding_window_pattern");
    return true;
}

tm_file *cli_config_model(const char *model_path, char *why, size_t why_size)
{
    char path[4096];
    const char *slash = strrchr(model_path, '/');
    snprintf(path, sizeof path, "%.*sconfig.json", slash ? (int)(slash - model_path + 1) : 0,
             model_path);
    json_error_t jerr;
    json_t *c = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!c) {
        if (access(path, F_OK) != 0)
            snprintf(why, why_size, "unknown: no config.json beside the checkout to take the "
                     "dimensions from");
        else
            snprintf(why, why_size, "unknown: config.json line %d: %s", jerr.line, jerr.text);
        return NULL;
    }
    /* multimodal configs keep the language model's dimensions in text_config */
    const json_t *text = json_object_get(c, "text_config");
    const json_t *cfg = json_is_object(text) ? text : c;
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    if (!type)
        type = json_string_value(json_object_get(c, "model_type"));
    const struct hf_arch *a = NULL;
    for (size_t i = 0; type && i < sizeof hf_archs / sizeof hf_archs[0]; i++)
        if (!strcmp(type, hf_archs[i].model_type))
            a = &hf_archs[i];
    tm_file *f = NULL;
    builder b = {.arch = a ? a->arch : NULL, .ok = true};
    char dir[4096], file[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tensormap-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!a) {
        char shown[96];
        tm_str s = {type ? type : "", type ? strlen(type) : 0};
        snprintf(why, why_size, "unknown: config.json's model_type '%s' is not mapped to "
                 "llama.cpp's dimensions here", cli_name(s, 60, shown, sizeof shown));
    } else if (tm_writer_new(&b.w, &b.err) != TM_OK) {
        snprintf(why, why_size, "unknown: %s", b.err.message);
    } else {
        b.ok = tm_writer_kv_str(b.w, "general.architecture", a->arch, strlen(a->arch),
                                &b.err) == TM_OK;
        if (fill(&b, cfg, why, why_size)) {
            /* the header goes through a file of our own, opened and removed at once */
            if (b.ok && !mkdtemp(dir))
                snprintf(why, why_size, "unknown: a directory for the header: %s",
                         strerror(errno));
            else if (b.ok) {
                snprintf(file, sizeof file, "%s/config.gguf", dir);
                b.ok = tm_writer_finish(b.w, file, &b.err) == TM_OK; /* frees the writer */
                b.w = NULL;
                b.ok = b.ok && tm_open(file, 0, &f, &b.err) == TM_OK;
                unlink(file);
                rmdir(dir);
            }
            if (!b.ok)
                snprintf(why, why_size, "unknown: %s", b.err.message);
        }
        tm_writer_free(b.w);
    }
    json_decref(c);
    return f;
}
