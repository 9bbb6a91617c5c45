/* The whole plan for running a model as llama.cpp would place it: the weights by type and by
 * device (--gpu-layers N), the KV cache and recurrent state beside the layers they belong to,
 * an estimate of the compute buffer, the total; and the largest context that fits a budget.
 *
 * Placement follows llama-model.cpp's load_tensors: of the block_count repeating layers and
 * the output layer, the last N go to the GPU (i_gpu_start = block_count + 1 - N); the input
 * layer (token_embd, and position and token-type embeddings) always stays on the CPU. A model
 * without output.weight reuses token_embd for its output (TENSOR_DUPLICATED): the output's
 * device then holds a copy of it. A Hugging Face checkpoint's tensors are placed by the same
 * rule under their own names (model.layers.N., model.embed_tokens, lm_head). The cache of a
 * layer lives on that layer's device (offload_kqv, llama.cpp's default). The compute buffer
 * is not worked out from the graph; its estimate is said to be one. */
#include "memory.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "blk.N." (GGUF) or "model.layers.N." (a Hugging Face checkpoint) gives N; anything else is
 * not a repeating layer's. */
static bool block_of(tm_str name, uint64_t *n)
{
    static const char *const prefixes[] = {"blk.", "model.layers."};
    for (size_t k = 0; k < 2; k++) {
        size_t at = strlen(prefixes[k]), i = at;
        if (name.len <= at || memcmp(name.ptr, prefixes[k], at) != 0)
            continue;
        uint64_t v = 0;
        for (; i < name.len && name.ptr[i] >= '0' && name.ptr[i] <= '9' && v < 1000000; i++)
            v = v * 10 + (uint64_t)(name.ptr[i] - '0');
        if (i == at || i >= name.len || name.ptr[i] != '.')
            return false;
        *n = v;
        return true;
    }
    return false;
}

static bool named(tm_str s, const char *name)
{
    return s.len == strlen(name) && memcmp(s.ptr, name, s.len) == 0;
}

/* the input layer's tensors (the converter's token_embd is the checkpoint's embed_tokens) */
static bool is_embedding(tm_str s)
{
    return named(s, "token_embd.weight") || named(s, "model.embed_tokens.weight");
}

static bool is_input(tm_str s)
{
    return is_embedding(s) || named(s, "position_embd.weight") || named(s, "token_types.weight");
}

static bool is_output(tm_str s)
{
    return named(s, "output.weight") || named(s, "lm_head.weight");
}

static void add_weight(cli_plan_t *p, tm_type type, uint64_t bytes, bool gpu)
{
    size_t k = 0;
    while (k < p->n_types && p->types[k].type != type)
        k++;
    if (k == p->n_types) {
        if (k == CLI_MAX_TYPES)
            k = CLI_MAX_TYPES - 1; /* more distinct types than any file has: totals still count */
        else
            p->types[p->n_types++].type = type;
    }
    p->types[k].bytes[gpu] += bytes;
    p->weights[gpu] += bytes;
}

/* A compute buffer is the activations of one micro-batch in f32: the logits over the
 * vocabulary, and a layer's widest intermediates (the embedding four times over, the
 * feed-forward twice); with attention, the f16 masks of [cells x micro-batch], one for the
 * full cache and one for the sliding window's. A rough rule: within about 15% of what
 * llama.cpp reserved on a CPU for most recorded attention models from 1,000 to 32,768 tokens,
 * a quarter under for deepseek2's MLA, far under for gemma3n's per-layer embeddings and a
 * third to a half of it for the recurrent models (their scans need more); a GPU backend's
 * differs. */
static uint64_t compute_estimate(const tm_file *f, const tm_file *weights, const cli_memory_t *m)
{
    uint64_t embd = 0, ff = 0, vocab = 0, v;
    tm_kv_get_uint(tm_arch_key(f, "embedding_length"), &embd);
    const tm_kv *ffk = tm_arch_key(f, "feed_forward_length");
    for (uint64_t il = 0; ffk && il < m->layers; il++) {
        if (ffk->type != TM_V_ARRAY) {
            tm_kv_get_uint(ffk, &ff);
            break;
        }
        tm_value e;
        if (tm_kv_elem(ffk, il, &e) == TM_OK && e.type >= TM_V_U8 && e.type <= TM_V_U64 &&
            e.as.u > ff)
            ff = e.as.u;
    }
    /* the vocabulary: the tokenizer's, else the embedding's rows */
    const tm_kv *tokens = tm_kv_find(f, "tokenizer.ggml.tokens");
    const tm_tensor *embd_t = tm_tensor_find(weights, "token_embd.weight");
    if (tokens && tokens->type == TM_V_ARRAY)
        vocab = tokens->count;
    else if (tm_kv_get_uint(tm_arch_key(f, "vocab_size"), &v) == TM_OK)
        vocab = v;
    else if (embd_t && embd_t->n_dims == 2)
        vocab = embd_t->ne[1];
    /* the file's numbers: past 2^64 the estimate says so by saturating */
    if (vocab > UINT32_MAX || embd > UINT32_MAX || ff > UINT32_MAX)
        return UINT64_MAX;
    uint64_t per_token = 4 * (vocab + 4 * embd + 2 * ff);
    /* cells <= 2^32 x 256 sequences, masks of 2 bytes; a mask only where layers use it */
    if (m->kv_layers > m->swa_layers)
        per_token += 2 * m->cells;
    if (m->swa_layers)
        per_token += 2 * m->swa_cells;
    if (per_token > UINT64_MAX / (m->n_ubatch ? m->n_ubatch : 1))
        return UINT64_MAX;
    return m->n_ubatch * per_token;
}

void cli_plan_make(const tm_file *f, const tm_file *meta, const cli_memory_t *m,
                   uint32_t gpu_layers, cli_plan_t *p)
{
    memset(p, 0, sizeof *p);
    p->gpu_layers = gpu_layers;
    uint64_t n_all = m->layers;
    if (n_all == 0)
        tm_kv_get_uint(tm_arch_key(meta, "block_count"), &n_all);
    uint64_t start = gpu_layers > n_all + 1 ? 0 : n_all + 1 - gpu_layers;
    p->gpu_start = start;
    bool output_on_gpu = gpu_layers > 0, has_output = false;
    const tm_tensor *embd = NULL;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        uint64_t il;
        bool gpu;
        if (block_of(t->name, &il))
            gpu = gpu_layers > 0 && il >= start;
        else if (is_input(t->name))
            gpu = false;
        else
            gpu = output_on_gpu;
        if (is_output(t->name))
            has_output = true;
        if (is_embedding(t->name))
            embd = t;
        add_weight(p, t->type, t->n_bytes, gpu);
    }
    if (!has_output && embd && output_on_gpu) {
        add_weight(p, embd->type, embd->n_bytes, true);
        p->tied_copy = embd->n_bytes;
    }
    if (m->known)
        for (uint64_t il = 0; il < m->layers && il < CLI_MEMORY_MAX_LAYERS; il++)
            p->cache[gpu_layers > 0 && il >= start] += m->layer_bytes[il];
    p->compute = m->known ? compute_estimate(meta, f, m) : 0;
    /* the compute buffer sits on the device that computes: the GPU when any layer is there;
     * sums saturate rather than wrap (a compute estimate of 2^64 - 1 is "past counting") */
    for (int d = 0; d < 2; d++) {
        uint64_t c = d == (gpu_layers > 0) ? p->compute : 0;
        if (__builtin_add_overflow(p->weights[d], p->cache[d], &p->total[d]) ||
            __builtin_add_overflow(p->total[d], c, &p->total[d]))
            p->total[d] = UINT64_MAX;
    }
}

/* The bytes a budget is held against: the GPU's with layers offloaded, else everything. */
static uint64_t budgeted(const cli_plan_t *p)
{
    return p->gpu_layers > 0 ? p->total[1] : p->total[0] + p->total[1];
}

bool cli_plan_fit(const tm_file *f, const tm_file *meta, const cli_memory_opts *o,
                  uint32_t gpu_layers, uint64_t budget, uint64_t *context, cli_memory_t *m)
{
    /* contexts are whole multiples of 256 cells to llama.cpp (per sequence), and memory grows
     * with them: the largest that fits is found by halving */
    uint64_t seqs = o->n_seq ? o->n_seq : 1, lo = 0, hi = UINT32_MAX / 256 / seqs;
    cli_memory_opts at = *o;
    at.context = 256 * seqs;
    *context = 0;
    if (!cli_memory_plan(meta, &at, m))
        return false; /* m->why says why */
    cli_plan_t *p = malloc(sizeof *p);
    if (!p)
        return false;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        at.context = mid * 256 * seqs;
        bool fits = cli_memory_plan(meta, &at, m); /* unknown past 2^64 bytes: does not fit */
        if (fits) {
            cli_plan_make(f, meta, m, gpu_layers, p);
            fits = budgeted(p) <= budget;
        }
        if (fits)
            lo = mid;
        else
            hi = mid - 1;
    }
    free(p);
    *context = lo * 256 * seqs;
    at.context = lo ? *context : 256 * seqs;
    cli_memory_plan(meta, &at, m); /* m: the memory at the answer */
    return true;
}
