/* Hugging Face tensor names and llama.cpp's, both ways, for the llama and qwen2 families
 * (compare pairs them; export writes them back), and the row permutation llama.cpp's converter
 * applies to llama's query and key projections. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const struct part {
    const char *hf, *gguf;
    int perm;
} layer_parts[] = {
    {"self_attn.q_proj", "attn_q", CLI_PERM_Q},  {"self_attn.k_proj", "attn_k", CLI_PERM_K},
    {"self_attn.v_proj", "attn_v", 0},           {"self_attn.o_proj", "attn_output", 0},
    {"mlp.gate_proj", "ffn_gate", 0},            {"mlp.up_proj", "ffn_up", 0},
    {"mlp.down_proj", "ffn_down", 0},            {"input_layernorm", "attn_norm", 0},
    {"post_attention_layernorm", "ffn_norm", 0},
}, top_parts[] = {
    {"model.embed_tokens", "token_embd", 0},
    {"model.norm", "output_norm", 0},
    {"lm_head", "output", 0},
};

/* One direction of the map: the names of side `from` (0: Hugging Face, 1: GGUF) become the
 * other side's. A block's tensors are "<prefix><N>.<part><suffix>". */
static const char *const block_prefix[2] = {"model.layers.", "blk."};

static const char *side(const struct part *p, int s) { return s ? p->gguf : p->hf; }

static bool map_name(tm_str name, int from, char *out, size_t cap, int *perm)
{
    char src[256];
    if (name.len >= sizeof src)
        return false;
    memcpy(src, name.ptr, (size_t)name.len);
    src[name.len] = 0;
    *perm = CLI_PERM_NONE;
    const char *suffix = strrchr(src, '.');
    if (!suffix || (strcmp(suffix, ".weight") != 0 && strcmp(suffix, ".bias") != 0))
        return false;
    size_t stem = (size_t)(suffix - src);
    for (size_t i = 0; i < sizeof top_parts / sizeof top_parts[0]; i++)
        if (strlen(side(&top_parts[i], from)) == stem &&
            strncmp(src, side(&top_parts[i], from), stem) == 0)
            return snprintf(out, cap, "%s%s", side(&top_parts[i], !from), suffix) < (int)cap;
    const char *prefix = block_prefix[from];
    if (strncmp(src, prefix, strlen(prefix)) != 0)
        return false;
    char *p = src + strlen(prefix), *end;
    if (*p < '0' || *p > '9')
        return false;
    unsigned long long block = strtoull(p, &end, 10);
    if (*end != '.')
        return false;
    const char *part = end + 1;
    size_t part_len = (size_t)(suffix - part);
    for (size_t i = 0; i < sizeof layer_parts / sizeof layer_parts[0]; i++) {
        const char *mine = side(&layer_parts[i], from);
        if (strlen(mine) != part_len || strncmp(part, mine, part_len) != 0)
            continue;
        *perm = layer_parts[i].perm;
        return snprintf(out, cap, "%s%llu.%s%s", block_prefix[!from], block,
                        side(&layer_parts[i], !from), suffix) < (int)cap;
    }
    return false;
}

bool cli_hf_to_gguf(tm_str name, char *out, size_t cap, int *perm)
{
    return map_name(name, 0, out, cap, perm);
}

bool cli_gguf_to_hf(tm_str name, char *out, size_t cap, int *perm)
{
    return map_name(name, 1, out, cap, perm);
}

/* convert_hf_to_gguf.py's permute(w, n_head): w.reshape(n_head, 2, R/n_head/2, ...)
 * .swapaxes(1, 2).reshape(w.shape), over the first (PyTorch) dimension of R units. Within a
 * head of hd units, converted unit 2i + j is source unit j * hd/2 + i. */
uint64_t cli_permuted_source_unit(uint64_t g, uint64_t hd)
{
    uint64_t head = g / hd, w = g % hd;
    return head * hd + (w % 2) * (hd / 2) + w / 2;
}

bool cli_llama_head_counts(const tm_file *gg, uint64_t *n_head, uint64_t *n_head_kv)
{
    if (tm_kv_get_uint(tm_arch_key(gg, "attention.head_count"), n_head) != TM_OK || !*n_head) {
        cli_errorf("the GGUF is llama but llama.attention.head_count is missing or not a count: "
                   "cannot undo the q/k permutation");
        return false;
    }
    if (tm_kv_get_uint(tm_arch_key(gg, "attention.head_count_kv"), n_head_kv) != TM_OK ||
        !*n_head_kv)
        *n_head_kv = *n_head; /* llama.cpp's default when the key is absent */
    return true;
}
