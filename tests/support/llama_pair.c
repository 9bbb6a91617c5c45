/* The llama-shaped checkpoint and its llama.cpp conversion (llama_pair.h). */
#include "llama_pair.h"
#include "st_writer.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

spec specs[64];
int n_specs;

static void add_spec(const char *hf, const char *gguf, uint64_t rows, uint64_t cols, int heads,
                     int is_norm)
{
    spec *s = &specs[n_specs++];
    snprintf(s->hf, sizeof s->hf, "%s", hf);
    snprintf(s->gguf, sizeof s->gguf, "%s", gguf);
    s->rows = rows;
    s->cols = cols;
    s->heads = heads;
    s->is_norm = is_norm;
}

static void make_specs(void)
{
    n_specs = 0;
    add_spec("model.embed_tokens.weight", "token_embd.weight", VOCAB, EMBD, 0, 0);
    for (int l = 0; l < LAYERS; l++) {
        char hf[96], gg[96];
#define LAYER(hfpart, ggpart, rows, cols, heads, norm)                                 \
        snprintf(hf, sizeof hf, "model.layers.%d.%s", l, hfpart);                       \
        snprintf(gg, sizeof gg, "blk.%d.%s", l, ggpart);                                \
        add_spec(hf, gg, rows, cols, heads, norm);
        LAYER("self_attn.q_proj.weight", "attn_q.weight", EMBD, EMBD, N_HEAD, 0)
        LAYER("self_attn.k_proj.weight", "attn_k.weight", N_HEAD_KV * HD, EMBD, N_HEAD_KV, 0)
        LAYER("self_attn.v_proj.weight", "attn_v.weight", N_HEAD_KV * HD, EMBD, 0, 0)
        LAYER("self_attn.o_proj.weight", "attn_output.weight", EMBD, EMBD, 0, 0)
        LAYER("mlp.gate_proj.weight", "ffn_gate.weight", FF, EMBD, 0, 0)
        LAYER("mlp.up_proj.weight", "ffn_up.weight", FF, EMBD, 0, 0)
        LAYER("mlp.down_proj.weight", "ffn_down.weight", EMBD, FF, 0, 0)
        LAYER("input_layernorm.weight", "attn_norm.weight", EMBD, 0, 0, 1)
        LAYER("post_attention_layernorm.weight", "ffn_norm.weight", EMBD, 0, 0, 1)
#undef LAYER
    }
    add_spec("model.norm.weight", "output_norm.weight", EMBD, 0, 0, 1);
}

/* Deterministic BF16 values in (-2, 2): the top half of a float's bits. */
static uint32_t rng = 12345;
void pair_rng_reset(void) { rng = 12345; }

uint16_t next_bf16(void)
{
    rng = rng * 1664525u + 1013904223u;
    float v = ((float)(rng >> 8) / 16777216.0f) * 4.0f - 2.0f;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return (uint16_t)(bits >> 16);
}

/* convert_hf_to_gguf.py permute(): w.reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)
 * .reshape(rows, cols): out[h][i][j] = in[h][j][i] over (head, half, pair) row coordinates. */
static void permute_rows(const uint16_t *in, uint16_t *out, uint64_t rows, uint64_t cols, int n_head)
{
    uint64_t half = rows / (uint64_t)n_head / 2;
    for (uint64_t h = 0; h < (uint64_t)n_head; h++)
        for (uint64_t i = 0; i < half; i++)
            for (uint64_t j = 0; j < 2; j++) {
                uint64_t out_row = (h * half + i) * 2 + j, in_row = (h * 2 + j) * half + i;
                memcpy(out + out_row * cols, in + in_row * cols, cols * sizeof *in);
            }
}

char dir[64], st_path[128], gguf_path[128];

void pair_setup(void)
{
    strcpy(dir, "/tmp/tm_cmp_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    snprintf(gguf_path, sizeof gguf_path, "%s/model.gguf", dir);
    make_specs();
}

void pair_teardown(void)
{
    unlink(st_path);
    unlink(gguf_path);
    rmdir(dir);
}

void write_pair(const variant *v)
{
    pair_rng_reset();
    st_writer *sw = st_writer_new();
    st_writer_meta(sw, "format", "pt");
    tm_writer *gw = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&gw, &err), TM_OK, "%s", err.message);
    const char *arch = v->arch ? v->arch : "llama";
    char key[64];
    uint32_t u;
    cr_assert_eq(tm_writer_kv_str(gw, "general.architecture", arch, strlen(arch), &err), TM_OK);
    if (!v->no_heads) {
        snprintf(key, sizeof key, "%s.attention.head_count", arch);
        u = N_HEAD;
        cr_assert_eq(tm_writer_kv_scalar(gw, key, TM_V_U32, &u, &err), TM_OK);
        snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
        u = N_HEAD_KV;
        cr_assert_eq(tm_writer_kv_scalar(gw, key, TM_V_U32, &u, &err), TM_OK);
    }

    /* buffers stay alive until tm_writer_finish (the writer references them) */
    void *keep[128];
    int n_keep = 0;
    for (int i = 0; i < n_specs; i++) {
        const spec *s = &specs[i];
        uint64_t n = s->rows * (s->cols ? s->cols : 1);
        uint16_t *hf = malloc(n * 2), *conv = malloc(n * 2);
        for (uint64_t k = 0; k < n; k++)
            hf[k] = next_bf16();
        uint64_t shape[2] = {s->rows, s->cols};
        st_writer_add(sw, s->hf, "BF16", s->cols ? 2 : 1, shape, hf, n * 2);
        if (s->heads)
            permute_rows(hf, conv, s->rows, s->cols, s->heads);
        else
            memcpy(conv, hf, n * 2);
        uint64_t ne[2] = {s->cols ? s->cols : s->rows, s->rows};
        if (v->transpose && strcmp(v->transpose, s->gguf) == 0) {
            ne[0] = s->rows;
            ne[1] = s->cols;
        }
        void *data = conv;
        tm_type type = TM_TYPE_BF16;
        if (s->is_norm) { /* the converter stores norms as F32: BF16 widened exactly */
            uint32_t *f = malloc(n * 4);
            for (uint64_t k = 0; k < n; k++)
                f[k] = (uint32_t)conv[k] << 16;
            data = f;
            type = TM_TYPE_F32;
            keep[n_keep++] = f;
        }
        if (v->poke && strcmp(v->poke, s->gguf) == 0) {
            cr_assert(!s->is_norm);
            conv[v->poke_at] ^= 0x0001; /* one ulp of bf16 */
        }
        cr_assert_eq(tm_writer_tensor(gw, s->gguf, type, s->cols ? 2 : 1, ne, data, &err), TM_OK,
                     "%s", err.message);
        if (strcmp(s->gguf, "token_embd.weight") == 0 && !v->drop_output)
            cr_assert_eq(tm_writer_tensor(gw, "output.weight", type, 2, ne, data, &err), TM_OK);
        if (strcmp(s->gguf, "token_embd.weight") == 0 && v->lm_head)
            st_writer_add(sw, "lm_head.weight", "BF16", 2, shape, hf, n * 2);
        keep[n_keep++] = hf;
        keep[n_keep++] = conv;
    }
    static const float rope[HD / 2] = {1.0f, 0.5f};
    if (v->inv_freq) {
        const uint64_t s1[1] = {HD / 2};
        st_writer_add(sw, "model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 1, s1, rope,
                      sizeof rope);
    }
    const uint64_t rope_ne[1] = {HD / 2};
    cr_assert_eq(tm_writer_tensor(gw, "rope_freqs.weight", TM_TYPE_F32, 1, rope_ne, rope, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(gw, gguf_path, &err), TM_OK, "%s", err.message);
    cr_assert_eq(st_writer_write(sw, st_path), 0);
    st_writer_free(sw);
    for (int i = 0; i < n_keep; i++)
        free(keep[i]);
}

