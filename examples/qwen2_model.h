/* A qwen2-shaped GGUF written with tm_writer: the 34 metadata entries of a llama.cpp qwen2
 * conversion (dimensions, a byte-level BPE tokenizer with tokens, token types and merges), and
 * the tensors in llama.cpp's order: token_embd, twelve per block, output, output_norm.
 * Shared by examples/mkdemo.c (a few MB, with data) and bench/open.c (the 7B shape, data left as
 * holes), so both write the same kind of file. Header-only: each program includes it once. */
#ifndef TM_QWEN2_MODEL_H
#define TM_QWEN2_MODEL_H

#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct qwen2_model {
    const char *name, *size_label;
    uint32_t n_block, n_embd, n_head, n_head_kv, n_ff, n_ctx;
    uint32_t n_vocab;    /* 256 byte tokens + n_merges merged tokens + special tokens */
    uint32_t n_merges;
    uint32_t file_type;  /* llama.cpp's general.file_type: 15 = mostly q4_K_M */
    /* Element types. [1] is used in the blocks llama.cpp gives more bits (qwen2_more_bits). */
    tm_type embd, output, attn, attn_v[2], ffn_gate_up, ffn_down[2];
    uint64_t seed;       /* the tokenizer's (and the caller's data's) pseudo-random stream */
} qwen2_model;

/* What a tensor is, so that a data source can give it values that look the part. */
typedef enum qwen2_kind { QWEN2_NORM, QWEN2_BIAS, QWEN2_WEIGHT } qwen2_kind;

/* Bytes for one tensor (n_bytes of type), or NULL for a hole. The bytes must stay valid until
 * tm_writer_finish. */
typedef const void *(*qwen2_data_fn)(void *ctx, qwen2_kind kind, tm_type type,
                                     uint64_t n_elements, uint64_t n_bytes);

/* splitmix64: small, fixed, and the same on every machine. */
static inline uint64_t qwen2_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* llama.cpp's use_more_bits() for q4_K_M: the first and last eighth of the blocks and every
 * third one between them get the wider type for attn_v and ffn_down (14 of 28 in a 7B). */
static inline int qwen2_more_bits(uint32_t i, uint32_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* Byte token i in GPT-2's byte-level alphabet, in GPT-2's order: first the 188 printable
 * bytes standing for themselves ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF), then the other 68
 * (space, control bytes, ...) moved to U+0100 and up, so that space is U+0120 'Ġ'. UTF-8 into
 * out; returns its length. */
static inline size_t qwen2_byte_token(unsigned i, char out[2])
{
    const unsigned cp = i < 94 ? 33 + i : i < 106 ? 161 + (i - 94) : i < 188 ? 174 + (i - 106)
                                                                           : 256 + (i - 188);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

/* A token a word can grow from: a letter, 'Ġ' (a space), or a merged token. */
static inline int qwen2_wordlike(const char *s, size_t len, size_t index)
{
    return index >= 256 || (len == 1 && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) ||
           (len == 2 && memcmp(s, "\xc4\xa0", 2) == 0);
}

/* The tokenizer: 256 byte tokens; then merged tokens, each an earlier word-like token (a
 * letter, 'Ġ', or a merged token) plus one lowercase letter, chosen pseudo-randomly, so that
 * every merge "LEFT RIGHT" names two existing tokens and no token repeats; then special tokens
 * (token type 3, control). */
typedef struct qwen2_vocab {
    char *tok, *mrg;               /* arenas */
    const char **tok_p, **mrg_p;
    size_t *tok_len, *mrg_len;
    int32_t *types;
} qwen2_vocab;

static inline void qwen2_vocab_free(qwen2_vocab *v)
{
    free(v->tok), free(v->mrg), free(v->tok_p), free(v->mrg_p), free(v->tok_len);
    free(v->mrg_len), free(v->types);
}

enum { QWEN2_MAX_TOKEN = 32 }; /* bytes; a merged token longer than this is not extended */

static inline int qwen2_vocab_make(qwen2_vocab *v, const qwen2_model *m)
{
    const size_t n = m->n_vocab;
    memset(v, 0, sizeof *v);
    v->tok = malloc(n * (QWEN2_MAX_TOKEN + 1));
    v->mrg = malloc((size_t)m->n_merges * (QWEN2_MAX_TOKEN + 3));
    v->tok_p = malloc(n * sizeof *v->tok_p);
    v->mrg_p = malloc(((size_t)m->n_merges + 1) * sizeof *v->mrg_p);
    v->tok_len = malloc(n * sizeof *v->tok_len);
    v->mrg_len = malloc(((size_t)m->n_merges + 1) * sizeof *v->mrg_len);
    v->types = malloc(n * sizeof *v->types);
    if (!v->tok || !v->mrg || !v->tok_p || !v->mrg_p || !v->tok_len || !v->mrg_len || !v->types ||
        n < 256 + (size_t)m->n_merges) {
        qwen2_vocab_free(v);
        return -1;
    }
    size_t t = 0, tok_at = 0, mrg_at = 0;
    for (; t < 256; t++) {
        v->tok_p[t] = v->tok + tok_at;
        v->tok_len[t] = qwen2_byte_token((unsigned)t, v->tok + tok_at);
        tok_at += v->tok_len[t];
        v->types[t] = 1;
    }
    uint64_t rng = m->seed;
    /* One forward pass over the parents: each (parent, letter) pair is taken at most once, so
     * no token repeats, and every new token is itself a parent further on. */
    for (size_t parent = 0; t < 256 + (size_t)m->n_merges; parent++) {
        if (parent == t) { /* every parent used up: cannot happen at 26/11 children a parent */
            qwen2_vocab_free(v);
            return -1;
        }
        if (!qwen2_wordlike(v->tok_p[parent], v->tok_len[parent], parent) ||
            v->tok_len[parent] >= QWEN2_MAX_TOKEN)
            continue;
        for (unsigned c = 'a'; c <= 'z' && t < 256 + (size_t)m->n_merges; c++) {
            if (qwen2_rand(&rng) % 11 != 0) /* 26/11 children a parent: words of 8-13 */
                continue;
            const size_t pl = v->tok_len[parent];
            char *s = v->tok + tok_at;
            memcpy(s, v->tok_p[parent], pl);
            s[pl] = (char)c;
            v->tok_p[t] = s, v->tok_len[t] = pl + 1, v->types[t] = 1;
            tok_at += pl + 1;
            char *mg = v->mrg + mrg_at;
            memcpy(mg, v->tok_p[parent], pl);
            mg[pl] = ' ', mg[pl + 1] = (char)c;
            v->mrg_p[t - 256] = mg, v->mrg_len[t - 256] = pl + 2;
            mrg_at += pl + 2;
            t++;
        }
    }
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    for (size_t k = 0; t < n; t++, k++) {
        char *s = v->tok + tok_at;
        int len = k < 3 ? snprintf(s, QWEN2_MAX_TOKEN + 1, "%s", specials[k])
                        : snprintf(s, QWEN2_MAX_TOKEN + 1, "<|extra_%zu|>", k - 3);
        v->tok_p[t] = s, v->tok_len[t] = (size_t)len, v->types[t] = 3;
        tok_at += (size_t)len;
    }
    return 0;
}

static inline tm_status qwen2_write_kv(tm_writer *w, const qwen2_model *m, tm_error *err)
{
    static const char chat_template[] =
        "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + "
        "message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt "
        "%}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
    static const char *const tags[] = {"chat", "text-generation"};
    static const char *const languages[] = {"en"};
    const uint32_t eos = 256 + m->n_merges + 2, pad = 256 + m->n_merges;
    const float freq_base = 1e6f, eps = 1e-6f;
    const uint8_t no = 0;
    qwen2_vocab v;
    if (qwen2_vocab_make(&v, m) != 0) {
        if (err) {
            err->code = TM_NOMEM;
            snprintf(err->message, sizeof err->message, "out of memory making the vocabulary");
        }
        return TM_NOMEM;
    }
#define STR(k, s) tm_writer_kv_str(w, k, s, strlen(s), err)
#define U32(k, x) tm_writer_kv_scalar(w, k, TM_V_U32, &(uint32_t){x}, err)
    tm_status st = TM_OK;
    if (st == TM_OK) st = STR("general.architecture", "qwen2");
    if (st == TM_OK) st = STR("general.type", "model");
    if (st == TM_OK) st = STR("general.name", m->name);
    if (st == TM_OK) st = STR("general.finetune", "Instruct");
    if (st == TM_OK) st = STR("general.basename", "Qwen2.5");
    if (st == TM_OK) st = STR("general.size_label", m->size_label);
    if (st == TM_OK) st = STR("general.license", "apache-2.0");
    if (st == TM_OK) st = STR("general.license.link", "https://www.apache.org/licenses/LICENSE-2.0");
    if (st == TM_OK) st = U32("general.base_model.count", 1);
    if (st == TM_OK) st = STR("general.base_model.0.name", "Qwen2.5");
    if (st == TM_OK) st = STR("general.base_model.0.organization", "Qwen");
    if (st == TM_OK) st = STR("general.base_model.0.repo_url", "https://huggingface.co/Qwen");
    if (st == TM_OK) st = tm_writer_kv_str_array(w, "general.tags", tags, NULL, 2, err);
    if (st == TM_OK) st = tm_writer_kv_str_array(w, "general.languages", languages, NULL, 1, err);
    if (st == TM_OK) st = U32("qwen2.block_count", m->n_block);
    if (st == TM_OK) st = U32("qwen2.context_length", m->n_ctx);
    if (st == TM_OK) st = U32("qwen2.embedding_length", m->n_embd);
    if (st == TM_OK) st = U32("qwen2.feed_forward_length", m->n_ff);
    if (st == TM_OK) st = U32("qwen2.attention.head_count", m->n_head);
    if (st == TM_OK) st = U32("qwen2.attention.head_count_kv", m->n_head_kv);
    if (st == TM_OK) st = tm_writer_kv_scalar(w, "qwen2.rope.freq_base", TM_V_F32, &freq_base, err);
    if (st == TM_OK)
        st = tm_writer_kv_scalar(w, "qwen2.attention.layer_norm_rms_epsilon", TM_V_F32, &eps, err);
    if (st == TM_OK) st = U32("general.file_type", m->file_type);
    if (st == TM_OK) st = STR("tokenizer.ggml.model", "gpt2");
    if (st == TM_OK) st = STR("tokenizer.ggml.pre", "qwen2");
    if (st == TM_OK)
        st = tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", v.tok_p, v.tok_len, m->n_vocab, err);
    if (st == TM_OK)
        st = tm_writer_kv_array(w, "tokenizer.ggml.token_type", TM_V_I32, v.types, m->n_vocab, err);
    if (st == TM_OK)
        st = tm_writer_kv_str_array(w, "tokenizer.ggml.merges", v.mrg_p, v.mrg_len, m->n_merges, err);
    if (st == TM_OK) st = U32("tokenizer.ggml.eos_token_id", eos);
    if (st == TM_OK) st = U32("tokenizer.ggml.padding_token_id", pad);
    if (st == TM_OK) st = U32("tokenizer.ggml.bos_token_id", pad);
    if (st == TM_OK) st = tm_writer_kv_scalar(w, "tokenizer.ggml.add_bos_token", TM_V_BOOL, &no, err);
    if (st == TM_OK) st = STR("tokenizer.chat_template", chat_template);
    if (st == TM_OK) st = U32("general.quantization_version", 2);
#undef STR
#undef U32
    qwen2_vocab_free(&v);
    return st;
}

/* One tensor of ne0 x ne1 (ne1 = 1: a vector), its bytes asked of data (NULL: a hole). */
static inline tm_status qwen2_add(tm_writer *w, const char *name, qwen2_kind kind, tm_type type,
                                  uint64_t ne0, uint64_t ne1, qwen2_data_fn data, void *ctx,
                                  tm_error *err)
{
    const uint64_t ne[2] = {ne0, ne1}, n = ne0 * ne1;
    const uint32_t block = tm_type_block_elems(type);
    const void *bytes = data && block ? data(ctx, kind, type, n, n / block * tm_type_block_bytes(type))
                                      : NULL;
    return tm_writer_tensor(w, name, type, ne1 == 1 ? 1 : 2, ne, bytes, err);
}

static inline tm_status qwen2_write_tensors(tm_writer *w, const qwen2_model *m,
                                            qwen2_data_fn data, void *ctx, tm_error *err)
{
    const uint64_t E = m->n_embd, KV = (uint64_t)m->n_embd / m->n_head * m->n_head_kv;
    const struct {
        const char *name;
        qwen2_kind kind;
        uint64_t ne0, ne1; /* ne1 = 1: a vector */
        int type;          /* index into types[] below */
    } block[] = {
        {"attn_norm.weight", QWEN2_NORM, E, 1, 0},
        {"ffn_down.weight", QWEN2_WEIGHT, m->n_ff, E, 1},
        {"ffn_gate.weight", QWEN2_WEIGHT, E, m->n_ff, 2},
        {"ffn_up.weight", QWEN2_WEIGHT, E, m->n_ff, 2},
        {"ffn_norm.weight", QWEN2_NORM, E, 1, 0},
        {"attn_k.bias", QWEN2_BIAS, KV, 1, 0},
        {"attn_k.weight", QWEN2_WEIGHT, E, KV, 3},
        {"attn_output.weight", QWEN2_WEIGHT, E, E, 3},
        {"attn_q.bias", QWEN2_BIAS, E, 1, 0},
        {"attn_q.weight", QWEN2_WEIGHT, E, E, 3},
        {"attn_v.bias", QWEN2_BIAS, KV, 1, 0},
        {"attn_v.weight", QWEN2_WEIGHT, E, KV, 4},
    };
    tm_status st = TM_OK;
    char name[64];
    st = qwen2_add(w, "token_embd.weight", QWEN2_WEIGHT, m->embd, E, m->n_vocab, data, ctx, err);
    for (uint32_t i = 0; i < m->n_block && st == TM_OK; i++) {
        const int more = qwen2_more_bits(i, m->n_block);
        const tm_type types[] = {TM_TYPE_F32, m->ffn_down[more], m->ffn_gate_up, m->attn,
                                 m->attn_v[more]};
        for (size_t k = 0; k < sizeof block / sizeof block[0] && st == TM_OK; k++) {
            snprintf(name, sizeof name, "blk.%u.%s", i, block[k].name);
            st = qwen2_add(w, name, block[k].kind, types[block[k].type], block[k].ne0,
                           block[k].ne1, data, ctx, err);
        }
    }
    if (st == TM_OK)
        st = qwen2_add(w, "output.weight", QWEN2_WEIGHT, m->output, E, m->n_vocab, data, ctx, err);
    if (st == TM_OK)
        st = qwen2_add(w, "output_norm.weight", QWEN2_NORM, TM_TYPE_F32, E, 1, data, ctx, err);
    return st;
}

#endif
