/* forward — greedy decoding with a llama- or qwen2-architecture GGUF, computed on tensormap.
 *
 * A reference forward pass, written to be read beside llama.cpp's (src/models/llama.cpp and
 * qwen2.cpp there), using nothing but include/tensormap.h:
 *   - the token's embedding is its row of token_embd, decoded alone (tm_dequant_rows);
 *   - each block: RMSNorm, q/k/v projections (plus qwen2's biases), rotary embeddings, grouped-
 *     query attention over a KV cache, the output projection, RMSNorm, SwiGLU feed-forward;
 *   - the final RMSNorm and the output projection (token_embd again when output.weight is
 *     absent, as llama.cpp ties them), then the next token is the argmax (greedy).
 * Every matrix product is computed on the blocks where they lie in the mapping: no weight
 * matrix is ever decoded whole. Only the 1-D tensors (norms, biases) are decoded, once. The
 * prompt goes through the model all its tokens at once (up to --batch of them, 512 unless
 * given), each projection one tm_matmul with the tokens as columns, so every weight is read
 * once per batch; each new token goes through tm_matvec. tm_matmul's columns are tm_matvec's
 * results bit for bit, so the batch changes the speed and nothing else.
 *
 * Rotary embeddings as llama.cpp applies them: qwen2 is NEOX-style (dimension i turns with
 * i + n_rot/2); llama is the "normal" style (2i with 2i + 1), since llama.cpp's converter
 * permutes the rows of attn_q and attn_k into that order. theta_i = pos * base^(-2i / n_rot),
 * divided by rope_freqs.weight[i] when the file has that tensor (llama 3's frequency factors).
 *
 * The model's numbers come from its metadata and its tensors' shapes, and every one is checked
 * before anything is sized by it: a file that does not fit says which entry or tensor. Token
 * text from the file is printed escaped. docs/forward.md has the checks against numpy and
 * llama.cpp. */
#include "tensormap.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum rope_style { ROPE_NORMAL, ROPE_NEOX };

typedef struct hparams {
    const char *arch; /* "llama" or "qwen2": the metadata keys' prefix */
    enum rope_style rope;
    uint64_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_rot, n_ff, n_vocab, n_ctx_train;
    double eps, freq_base;
} hparams;

/* One block's tensors; the biases are NULL when absent (llama has none, qwen2 has q, k, v). */
typedef struct layer {
    const tm_tensor *wq, *wk, *wv, *wo, *gate, *up, *down;
    float *attn_norm, *ffn_norm, *bq, *bk, *bv;
} layer;

typedef struct model {
    tm_file *f;
    const char *path;
    hparams hp;
    const tm_tensor *embd, *output;
    float *out_norm, *rope_freqs; /* rope_freqs: NULL unless the file has them */
    layer *layers;
    tm_str *tokens; /* token text for printing, NULL when the file has no usable vocabulary */
    uint64_t eos;   /* UINT64_MAX: none */
} model;

/* The activations of up to n_batch tokens, each buffer one column a token (as tm_matmul takes
 * them: column j of x is the n_embd floats at x + j * n_embd), and the KV cache of every
 * position so far, whose positions are columns too (a batch's k and v are written in place). */
typedef struct state {
    float *x, *h, *q, *att, *o, *g, *u;
    float *logits; /* n_logits columns of n_vocab (state_new) */
    double *scores;
    float *k_cache, *v_cache; /* [layer][pos][n_head_kv * head_dim] */
    uint64_t n_ctx;
} state;

static void fail(const model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "forward: %s: ", m->path);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- the model: hyperparameters and tensors, each checked ------------------------------ */

/* An unsigned "<arch>.<suffix>" entry in [1, max]; *out keeps its default when the entry is
 * absent and dflt_ok. */
static int arch_uint(model *m, const char *suffix, uint64_t max, int dflt_ok, uint64_t *out)
{
    const tm_kv *kv = tm_arch_key(m->f, suffix);
    if (!kv && dflt_ok)
        return 0;
    uint64_t v;
    if (tm_kv_get_uint(kv, &v) != TM_OK || v == 0 || v > max) {
        fail(m, "metadata %s.%s is %s (wanted an integer from 1 to %llu)", m->hp.arch, suffix,
             kv ? "not such a number" : "missing", (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

static int arch_float(model *m, const char *suffix, double lo, double hi, double *out)
{
    const tm_kv *kv = tm_arch_key(m->f, suffix);
    if (!kv)
        return 0; /* llama.cpp's default stays */
    double v;
    if (tm_kv_get_float(kv, &v) != TM_OK || !(v > lo && v < hi)) {
        fail(m, "metadata %s.%s is not a number between %g and %g", m->hp.arch, suffix, lo,
             hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* ceilings far above any real model, so that no product of them overflows below */
#define MAX_DIM (UINT64_C(1) << 20)

static int read_hparams(model *m)
{
    hparams *hp = &m->hp;
    const tm_str arch = tm_architecture(m->f);
    if (arch.len == 5 && memcmp(arch.ptr, "qwen2", 5) == 0)
        hp->arch = "qwen2", hp->rope = ROPE_NEOX;
    else if (arch.len == 5 && memcmp(arch.ptr, "llama", 5) == 0)
        hp->arch = "llama", hp->rope = ROPE_NORMAL;
    else {
        fail(m, "general.architecture is not llama or qwen2: this example runs only those");
        return -1;
    }
    hp->eps = 1e-5, hp->freq_base = 10000.0, hp->n_ctx_train = UINT64_MAX;
    if (arch_uint(m, "block_count", 4096, 0, &hp->n_layer) ||
        arch_uint(m, "embedding_length", MAX_DIM, 0, &hp->n_embd) ||
        arch_uint(m, "feed_forward_length", MAX_DIM, 0, &hp->n_ff) ||
        arch_uint(m, "attention.head_count", 4096, 0, &hp->n_head) ||
        arch_uint(m, "context_length", UINT64_MAX, 1, &hp->n_ctx_train) ||
        arch_float(m, "attention.layer_norm_rms_epsilon", 0.0, 1.0, &hp->eps) ||
        arch_float(m, "rope.freq_base", 0.0, 1e30, &hp->freq_base))
        return -1;
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    if (arch_uint(m, "attention.head_count_kv", hp->n_head, 1, &hp->n_head_kv) ||
        arch_uint(m, "attention.key_length", 65536, 1, &hp->head_dim))
        return -1;
    hp->n_rot = hp->head_dim;
    if (arch_uint(m, "rope.dimension_count", hp->head_dim, 1, &hp->n_rot))
        return -1;
    const tm_kv *vlen = tm_arch_key(m->f, "attention.value_length");
    uint64_t v = hp->head_dim;
    if (hp->n_head % hp->n_head_kv || hp->n_rot % 2 || hp->head_dim == 0 ||
        hp->n_head * hp->head_dim > MAX_DIM ||
        (vlen && (tm_kv_get_uint(vlen, &v) != TM_OK || v != hp->head_dim))) {
        fail(m, "attention shape not handled: %llu heads, %llu kv heads, head size %llu, %llu "
                "rotated dimensions (heads must share kv heads evenly, keys and values be the "
                "same size, rotated dimensions even, heads times head size at most 2^20)",
             (unsigned long long)hp->n_head, (unsigned long long)hp->n_head_kv,
             (unsigned long long)hp->head_dim, (unsigned long long)hp->n_rot);
        return -1;
    }
    return 0;
}

/* The tensor name (rows of ne0 elements, ne1 rows; ne1 = 0: a vector of ne0), or NULL with the
 * reason printed. optional: absent is not an error (NULL, nothing printed). */
static const tm_tensor *need(model *m, const char *name, uint64_t ne0, uint64_t ne1,
                             int optional)
{
    const tm_tensor *t = tm_tensor_find(m->f, name);
    if (!t) {
        if (!optional)
            fail(m, "no tensor '%s'", name);
        return NULL;
    }
    const uint32_t dims = ne1 ? 2 : 1;
    if (t->n_dims != dims || t->ne[0] != ne0 || (ne1 && t->ne[1] != ne1)) {
        fail(m, "tensor '%s' has shape %llu x %llu (%u dimensions), not %llu x %llu", name,
             (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], t->n_dims,
             (unsigned long long)ne0, (unsigned long long)(ne1 ? ne1 : 1));
        return NULL;
    }
    if (!tm_type_can_dequant(t->type)) {
        fail(m, "tensor '%s' is of a type tensormap cannot decode", name);
        return NULL;
    }
    return t;
}

/* A vector tensor decoded to float32 (norms, biases: a few KB each). */
static int need_vector(model *m, const char *name, uint64_t n, int optional, float **out)
{
    const tm_tensor *t = need(m, name, n, 0, optional);
    *out = NULL;
    if (!t)
        return optional && !tm_tensor_find(m->f, name) ? 0 : -1;
    tm_error err;
    if (!(*out = malloc(n * sizeof **out))) {
        fail(m, "out of memory for tensor '%s'", name);
        return -1;
    }
    if (tm_dequant_tensor(t, *out, 1, &err) != TM_OK) {
        fail(m, "%s", err.message);
        return -1;
    }
    return 0;
}

static int read_layer(model *m, uint64_t i, layer *l)
{
    const hparams *hp = &m->hp;
    const uint64_t E = hp->n_embd, Q = hp->n_head * hp->head_dim,
                   KV = hp->n_head_kv * hp->head_dim;
    char name[64];
#define NAME(s) (snprintf(name, sizeof name, "blk.%llu.%s", (unsigned long long)i, s), name)
    if (!(l->wq = need(m, NAME("attn_q.weight"), E, Q, 0)) ||
        !(l->wk = need(m, NAME("attn_k.weight"), E, KV, 0)) ||
        !(l->wv = need(m, NAME("attn_v.weight"), E, KV, 0)) ||
        !(l->wo = need(m, NAME("attn_output.weight"), Q, E, 0)) ||
        !(l->gate = need(m, NAME("ffn_gate.weight"), E, hp->n_ff, 0)) ||
        !(l->up = need(m, NAME("ffn_up.weight"), E, hp->n_ff, 0)) ||
        !(l->down = need(m, NAME("ffn_down.weight"), hp->n_ff, E, 0)))
        return -1;
    return need_vector(m, NAME("attn_norm.weight"), E, 0, &l->attn_norm) ||
           need_vector(m, NAME("ffn_norm.weight"), E, 0, &l->ffn_norm) ||
           need_vector(m, NAME("attn_q.bias"), Q, 1, &l->bq) ||
           need_vector(m, NAME("attn_k.bias"), KV, 1, &l->bk) ||
           need_vector(m, NAME("attn_v.bias"), KV, 1, &l->bv);
#undef NAME
}

/* The vocabulary's text, when tokenizer.ggml.tokens holds one string per row of token_embd;
 * otherwise tokens print as ids alone. The table is n_vocab entries, n_vocab being
 * token_embd's row count (a tensor the file's size bounds). */
static int read_tokens(model *m)
{
    const tm_kv *kv = tm_kv_find(m->f, "tokenizer.ggml.tokens");
    tm_str_iter it;
    if (!kv || kv->count != m->hp.n_vocab || tm_kv_strings(kv, &it) != TM_OK)
        return 0;
    if (!(m->tokens = malloc(m->hp.n_vocab * sizeof *m->tokens))) {
        fail(m, "out of memory for the vocabulary");
        return -1;
    }
    for (uint64_t i = 0; i < m->hp.n_vocab; i++)
        if (!tm_str_next(&it, &m->tokens[i])) {
            free(m->tokens), m->tokens = NULL;
            return 0;
        }
    return 0;
}

static void model_free(model *m)
{
    if (m->layers)
        for (uint64_t i = 0; i < m->hp.n_layer; i++) {
            layer *l = &m->layers[i];
            free(l->attn_norm), free(l->ffn_norm), free(l->bq), free(l->bk), free(l->bv);
        }
    free(m->layers), free(m->out_norm), free(m->rope_freqs), free(m->tokens);
    tm_close(m->f);
}

static int model_load(model *m, const char *path)
{
    tm_error err;
    memset(m, 0, sizeof *m);
    m->path = path, m->eos = UINT64_MAX;
    if (tm_open(path, 0, &m->f, &err) != TM_OK) {
        fail(m, "%s", err.message);
        return -1;
    }
    if (read_hparams(m))
        return -1;
    hparams *hp = &m->hp;
    m->embd = tm_tensor_find(m->f, "token_embd.weight");
    if (!m->embd || m->embd->n_dims != 2 || m->embd->ne[1] == 0 || m->embd->ne[1] > UINT32_MAX) {
        fail(m, "token_embd.weight is missing or not a matrix of up to 2^32 tokens");
        return -1;
    }
    hp->n_vocab = m->embd->ne[1];
    if (!need(m, "token_embd.weight", hp->n_embd, hp->n_vocab, 0))
        return -1;
    m->output = need(m, "output.weight", hp->n_embd, hp->n_vocab, 1);
    if (!m->output && tm_tensor_find(m->f, "output.weight"))
        return -1;
    if (!m->output)
        m->output = m->embd; /* tied embeddings, as llama.cpp does without output.weight */
    if (need_vector(m, "output_norm.weight", hp->n_embd, 0, &m->out_norm) ||
        need_vector(m, "rope_freqs.weight", hp->n_rot / 2, 1, &m->rope_freqs))
        return -1;
    if (!(m->layers = calloc(hp->n_layer, sizeof *m->layers))) {
        fail(m, "out of memory for %llu blocks", (unsigned long long)hp->n_layer);
        return -1;
    }
    for (uint64_t i = 0; i < hp->n_layer; i++)
        if (read_layer(m, i, &m->layers[i]))
            return -1;
    uint64_t eos; /* generation stops there; an id past the vocabulary is no token */
    if (tm_kv_get_uint(tm_kv_find(m->f, "tokenizer.ggml.eos_token_id"), &eos) == TM_OK &&
        eos < hp->n_vocab)
        m->eos = eos;
    return read_tokens(m);
}

/* ---- the state: activations and the KV cache ------------------------------------------- */

static void state_free(state *s)
{
    free(s->x), free(s->h), free(s->q), free(s->att), free(s->o), free(s->g), free(s->u);
    free(s->logits), free(s->scores), free(s->k_cache), free(s->v_cache);
}

/* n_batch: the most tokens run at once (at most MAX_BATCH); n_logits: the columns of logits
 * kept (1, or n_batch for every position's) */
static int state_new(const model *m, uint64_t n_ctx, uint64_t n_batch, uint64_t n_logits,
                     state *s)
{
    const hparams *hp = &m->hp;
    const uint64_t Q = hp->n_head * hp->head_dim, KV = hp->n_head_kv * hp->head_dim;
    memset(s, 0, sizeof *s);
    s->n_ctx = n_ctx;
    /* every dimension (KV included) is at most 2^20 and n_layer 2^12 (read_hparams), n_ctx
     * 2^24 (main): the cache's element count, at most 2^56, fits in 64 bits; malloc says if it
     * fits in memory */
    const uint64_t cache = hp->n_layer * n_ctx * KV;
    if (cache > SIZE_MAX / sizeof(float)) {
        fail(m, "a KV cache of %llu positions does not fit in memory", (unsigned long long)n_ctx);
        return -1;
    }
    /* n_batch <= MAX_BATCH (main) times a dimension <= 2^20, or times n_vocab <= 2^32: no
     * overflow */
    s->x = malloc(n_batch * hp->n_embd * sizeof(float));
    s->h = malloc(n_batch * hp->n_embd * sizeof(float));
    s->q = malloc(n_batch * Q * sizeof(float));
    s->att = malloc(n_batch * Q * sizeof(float));
    s->o = malloc(n_batch * hp->n_embd * sizeof(float));
    s->g = malloc(n_batch * hp->n_ff * sizeof(float));
    s->u = malloc(n_batch * hp->n_ff * sizeof(float));
    s->logits = malloc(n_logits * hp->n_vocab * sizeof(float));
    s->scores = malloc(n_ctx * sizeof(double));
    s->k_cache = malloc((size_t)cache * sizeof(float));
    s->v_cache = malloc((size_t)cache * sizeof(float));
    if (!s->x || !s->h || !s->q || !s->att || !s->o || !s->g || !s->u || !s->logits ||
        !s->scores || !s->k_cache || !s->v_cache) {
        fail(m, "out of memory for a context of %llu positions", (unsigned long long)n_ctx);
        return -1;
    }
    return 0;
}

/* ---- the forward pass ------------------------------------------------------------------- */

typedef struct run {
    unsigned mode, threads;
} run;

/* Y = W X for n columns: tm_matvec for one, tm_matmul for more (the same numbers either way) */
static int product(const model *m, const run *r, const tm_tensor *w, const float *X, uint64_t n,
                   float *Y)
{
    tm_error err;
    const tm_status st = n == 1 ? tm_matvec(w, X, Y, r->mode, r->threads, &err)
                                : tm_matmul(w, X, w->ne[0], n, Y, r->mode, r->threads, &err);
    if (st != TM_OK) {
        fail(m, "%s", err.message);
        return -1;
    }
    return 0;
}

/* out = x / sqrt(mean(x^2) + eps) * weight, as llama.cpp's rms_norm then mul */
static void rms_norm(const float *x, const float *weight, uint64_t n, double eps, float *out)
{
    double ss = 0.0;
    for (uint64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const double scale = 1.0 / sqrt(ss / (double)n + eps);
    for (uint64_t i = 0; i < n; i++)
        out[i] = (float)(x[i] * scale) * weight[i];
}

static void add(float *y, const float *b, uint64_t n)
{
    for (uint64_t i = 0; b && i < n; i++)
        y[i] += b[i];
}

/* Rotate the first n_rot dimensions of each of n_heads heads by the position's angles. */
static void rope(const model *m, float *v, uint64_t n_heads, uint64_t pos)
{
    const hparams *hp = &m->hp;
    const uint64_t half = hp->n_rot / 2;
    for (uint64_t i = 0; i < half; i++) {
        double theta = (double)pos * pow(hp->freq_base, -2.0 * (double)i / (double)hp->n_rot);
        if (m->rope_freqs)
            theta /= m->rope_freqs[i];
        const double c = cos(theta), s = sin(theta);
        for (uint64_t h = 0; h < n_heads; h++) {
            float *head = v + h * hp->head_dim;
            /* NEOX pairs dimension i with i + n_rot/2; normal pairs 2i with 2i + 1 */
            float *a = hp->rope == ROPE_NEOX ? head + i : head + 2 * i;
            float *b = hp->rope == ROPE_NEOX ? head + i + half : head + 2 * i + 1;
            const double x0 = *a, x1 = *b;
            *a = (float)(x0 * c - x1 * s);
            *b = (float)(x0 * s + x1 * c);
        }
    }
}

/* Causal attention of the token at pos (its query heads at q_all, its output at out_all) over
 * positions 0..pos of one block's cache: query head h reads kv head h / (n_head / n_head_kv),
 * as ggml's broadcast in llama.cpp pairs them. */
static void attention(const model *m, state *s, const float *q_all, float *out_all,
                      const float *k_cache, const float *v_cache, uint64_t pos)
{
    const hparams *hp = &m->hp;
    const uint64_t hd = hp->head_dim, KV = hp->n_head_kv * hd, group = hp->n_head / hp->n_head_kv;
    const double scale = 1.0 / sqrt((double)hd);
    for (uint64_t h = 0; h < hp->n_head; h++) {
        const float *q = q_all + h * hd;
        const uint64_t kvh = h / group;
        double max = -INFINITY, sum = 0.0;
        for (uint64_t p = 0; p <= pos; p++) {
            const float *k = k_cache + p * KV + kvh * hd;
            double dot = 0.0;
            for (uint64_t i = 0; i < hd; i++)
                dot += (double)q[i] * k[i];
            s->scores[p] = dot * scale;
            if (s->scores[p] > max)
                max = s->scores[p];
        }
        for (uint64_t p = 0; p <= pos; p++)
            sum += s->scores[p] = exp(s->scores[p] - max);
        float *out = out_all + h * hd;
        for (uint64_t i = 0; i < hd; i++) {
            double acc = 0.0;
            for (uint64_t p = 0; p <= pos; p++)
                acc += s->scores[p] * v_cache[p * KV + kvh * hd + i];
            out[i] = (float)(acc / sum);
        }
    }
}

/* Run the n tokens at positions pos0.. through the model as n columns (n at most the state's
 * n_batch); logits: 0 none, 1 the last token's, n every token's (n at most the state's
 * n_logits), into s->logits. */
static int forward(const model *m, const run *r, state *s, const uint64_t *tokens, uint64_t n,
                   uint64_t pos0, uint64_t logits)
{
    const hparams *hp = &m->hp;
    const uint64_t E = hp->n_embd, Q = hp->n_head * hp->head_dim,
                   KV = hp->n_head_kv * hp->head_dim, F = hp->n_ff;
    tm_error err;
    for (uint64_t j = 0; j < n; j++)
        if (tm_dequant_rows(m->embd, tokens[j], tokens[j] + 1, s->x + j * E, &err) != TM_OK) {
            fail(m, "%s", err.message);
            return -1;
        }
    for (uint64_t li = 0; li < hp->n_layer; li++) {
        const layer *l = &m->layers[li];
        const float *k_layer = s->k_cache + li * s->n_ctx * KV,
                    *v_layer = s->v_cache + li * s->n_ctx * KV;
        float *k = s->k_cache + (li * s->n_ctx + pos0) * KV; /* the batch's positions */
        float *v = s->v_cache + (li * s->n_ctx + pos0) * KV;
        for (uint64_t j = 0; j < n; j++)
            rms_norm(s->x + j * E, l->attn_norm, E, hp->eps, s->h + j * E);
        if (product(m, r, l->wq, s->h, n, s->q) || product(m, r, l->wk, s->h, n, k) ||
            product(m, r, l->wv, s->h, n, v))
            return -1;
        for (uint64_t j = 0; j < n; j++) {
            add(s->q + j * Q, l->bq, Q), add(k + j * KV, l->bk, KV), add(v + j * KV, l->bv, KV);
            rope(m, s->q + j * Q, hp->n_head, pos0 + j);
            rope(m, k + j * KV, hp->n_head_kv, pos0 + j);
        }
        /* every k and v of the batch is in the cache: token j attends to positions <= its own */
        for (uint64_t j = 0; j < n; j++)
            attention(m, s, s->q + j * Q, s->att + j * Q, k_layer, v_layer, pos0 + j);
        if (product(m, r, l->wo, s->att, n, s->o))
            return -1;
        add(s->x, s->o, n * E);
        for (uint64_t j = 0; j < n; j++)
            rms_norm(s->x + j * E, l->ffn_norm, E, hp->eps, s->h + j * E);
        if (product(m, r, l->gate, s->h, n, s->g) || product(m, r, l->up, s->h, n, s->u))
            return -1;
        for (uint64_t i = 0; i < n * F; i++) /* SwiGLU: silu(gate) * up */
            s->g[i] = s->g[i] / (1.0f + expf(-s->g[i])) * s->u[i];
        if (product(m, r, l->down, s->g, n, s->o))
            return -1;
        add(s->x, s->o, n * E);
    }
    if (!logits)
        return 0;
    for (uint64_t j = n - logits; j < n; j++)
        rms_norm(s->x + j * E, m->out_norm, E, hp->eps, s->h + (j - (n - logits)) * E);
    return product(m, r, m->output, s->h, logits, s->logits);
}

static uint64_t argmax(const float *v, uint64_t n)
{
    uint64_t best = 0;
    for (uint64_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* ---- the program ------------------------------------------------------------------------ */

/* Token text from the file, escaped: printable ASCII as it is (backslash and quote escaped),
 * every other byte as \xNN, so that no byte of the file reaches the terminal raw. */
static void print_token(const model *m, uint64_t id)
{
    printf("%llu", (unsigned long long)id);
    if (!m->tokens)
        return;
    const tm_str t = m->tokens[id];
    fputs(" \"", stdout);
    for (uint64_t i = 0; i < t.len; i++) {
        const unsigned char c = (unsigned char)t.ptr[i];
        if (c == '\\' || c == '"')
            printf("\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            putchar(c);
        else
            printf("\\x%02x", c);
    }
    putchar('"');
}

static void print_logits(const model *m, const float *logits, uint64_t pos, uint64_t token)
{
    printf("logits %llu %llu", (unsigned long long)pos, (unsigned long long)token);
    for (uint64_t i = 0; i < m->hp.n_vocab; i++)
        printf(" %.9g", (double)logits[i]);
    putchar('\n');
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: forward MODEL [--prompt ID,ID,...] [-n N] [--q8] [--threads N] [--batch N]\n"
            "               [--logits]\n"
            "  Run a llama- or qwen2-architecture GGUF on tensormap (the prompt's projections\n"
            "  through tm_matmul, all its tokens at once; each new token's through tm_matvec)\n"
            "  and decode greedily: the prompt's token ids, then N new tokens (default 16;\n"
            "  fewer when the end-of-sequence token comes), each printed as its id and its text,\n"
            "  escaped; then tokens/second for the prompt and for the new tokens.\n"
            "  --prompt     token ids, comma-separated (default: 0)\n"
            "  --q8         x quantized to 8 bits as ggml does (TM_MATVEC_Q8); default float32\n"
            "  --threads N  threads for each product (default 1; 0: every online CPU)\n"
            "  --batch N    at most N prompt tokens a product (1 to 512, default 512; 1: the\n"
            "               prompt token by token through tm_matvec)\n"
            "  --logits     print each position's logits: 'logits POS TOKEN v0 v1 ...'\n"
            "  TM_ISA=scalar|avx2|avx512|avx512fp16|neon forces a decoding path.\n");
}

/* "12,7,40" into ids (at most max of them, each below n_vocab); the count, or -1. */
static long parse_ids(const char *s, uint64_t *ids, long max)
{
    long n = 0;
    while (*s) {
        char *end;
        errno = 0;
        const unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *s == '-' || *s == '+' || n == max || (*end && *end != ','))
            return -1;
        ids[n++] = v;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -1;
    }
    return n;
}

#define MAX_CTX (UINT64_C(1) << 24)
#define MAX_BATCH 512 /* llama.cpp's default micro-batch; the most tm_matmul is tested with */

int main(int argc, char **argv)
{
    const char *path = NULL, *prompt = "0";
    unsigned long n_gen = 16, threads = 1, batch = MAX_BATCH;
    int want_all_logits = 0;
    run r = {TM_MATVEC_F32, 1};
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) {
            prompt = argv[++i];
        } else if ((strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--threads") == 0 ||
                    strcmp(argv[i], "--batch") == 0) && i + 1 < argc) {
            /* -n: 0 to 2^20; --threads: 0 to 1024; --batch: 1 to MAX_BATCH */
            const char opt = argv[i][1] == 'n' ? 'n' : argv[i][2];
            const unsigned long lo = opt == 'b', hi = opt == 'n' ? 1u << 20
                                                     : opt == 't' ? 1024 : MAX_BATCH;
            errno = 0;
            const unsigned long v = strtoul(argv[++i], &end, 10);
            if (errno || *end || !*argv[i] || *argv[i] == '-' || v < lo || v > hi) {
                fprintf(stderr, "forward: %s wants a number from %lu to %lu, not '%s'\n",
                        argv[i - 1], lo, hi, argv[i]);
                return 2;
            }
            *(opt == 'n' ? &n_gen : opt == 't' ? &threads : &batch) = v;
        } else if (strcmp(argv[i], "--q8") == 0) {
            r.mode = TM_MATVEC_Q8;
        } else if (strcmp(argv[i], "--logits") == 0) {
            want_all_logits = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "forward: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    r.threads = (unsigned)threads;

    const long max_prompt = 1 << 20;
    uint64_t *ids = malloc(((size_t)max_prompt + n_gen) * sizeof *ids);
    const long n_prompt = ids ? parse_ids(prompt, ids, max_prompt) : -1;
    if (n_prompt < 1) {
        fprintf(stderr, "forward: --prompt wants 1 to %ld token ids separated by commas, not "
                        "'%s'\n", max_prompt, prompt);
        free(ids);
        return 2;
    }
    model m;
    state s = {0};
    int rc = 1;
    if (model_load(&m, path))
        goto out;
    const hparams *hp = &m.hp;
    for (long i = 0; i < n_prompt; i++)
        if (ids[i] >= hp->n_vocab) {
            fail(&m, "prompt token %ld is %llu, past the vocabulary's %llu tokens", i,
                 (unsigned long long)ids[i], (unsigned long long)hp->n_vocab);
            goto out;
        }
    const uint64_t n_ctx = (uint64_t)n_prompt + n_gen;
    if (n_ctx > MAX_CTX || n_ctx > hp->n_ctx_train) {
        fail(&m, "%llu positions are more than the model's context of %llu (or this example's "
                 "limit of %llu)", (unsigned long long)n_ctx,
             (unsigned long long)hp->n_ctx_train, (unsigned long long)MAX_CTX);
        goto out;
    }
    if (batch > (unsigned long)n_prompt)
        batch = (unsigned long)n_prompt;
    if (state_new(&m, n_ctx, batch, want_all_logits ? batch : 1, &s))
        goto out;
    printf("model: %s, %llu blocks, %llu wide, %llu heads (%llu kv) of %llu, ffn %llu, "
           "vocab %llu, rope %s\n",
           hp->arch,
           (unsigned long long)hp->n_layer, (unsigned long long)hp->n_embd,
           (unsigned long long)hp->n_head, (unsigned long long)hp->n_head_kv,
           (unsigned long long)hp->head_dim, (unsigned long long)hp->n_ff,
           (unsigned long long)hp->n_vocab, hp->rope == ROPE_NEOX ? "neox" : "normal");
    char n_threads[32];
    snprintf(n_threads, sizeof n_threads, threads == 0 ? "every CPU" : threads == 1 ? "1 thread"
                                                                     : "%lu threads", threads);
    char prompt_by[64] = "the prompt token by token too";
    if (batch > 1)
        snprintf(prompt_by, sizeof prompt_by, "the prompt by tm_matmul, %lu tokens at once",
                 batch);
    printf("products: tm_matvec, x in %s, on %s, %s; %s\n",
           r.mode == TM_MATVEC_Q8 ? "8 bits" : "float32", tm_isa(), n_threads, prompt_by);

    fputs("prompt tokens:", stdout);
    for (long i = 0; i < n_prompt; i++) {
        putchar(' ');
        print_token(&m, ids[i]);
    }
    putchar('\n');

    const double t0 = now();
    const float *next = s.logits; /* the logits the next token is picked from */
    for (uint64_t i = 0; i < (uint64_t)n_prompt; i += batch) {
        const uint64_t cols = (uint64_t)n_prompt - i < batch ? (uint64_t)n_prompt - i : batch;
        const int last = i + cols == (uint64_t)n_prompt;
        if (forward(&m, &r, &s, ids + i, cols, i, want_all_logits ? cols : (uint64_t)last))
            goto out;
        for (uint64_t j = 0; want_all_logits && j < cols; j++)
            print_logits(&m, s.logits + j * hp->n_vocab, i + j, ids[i + j]);
        if (last)
            next = s.logits + (want_all_logits ? cols - 1 : 0) * hp->n_vocab;
    }
    const double t1 = now();
    uint64_t n = (uint64_t)n_prompt;
    for (; n < n_ctx; n++) {
        ids[n] = argmax(next, hp->n_vocab);
        fputs("token ", stdout);
        print_token(&m, ids[n]);
        putchar('\n');
        if (ids[n] == m.eos || n + 1 == n_ctx) {
            n++;
            break;
        }
        if (forward(&m, &r, &s, ids + n, 1, n, 1))
            goto out;
        next = s.logits;
        if (want_all_logits)
            print_logits(&m, s.logits, n, ids[n]);
    }
    const double t2 = now();
    /* a generated token costs one step, but the first comes from the prompt's last logits */
    const uint64_t n_new = n - (uint64_t)n_prompt, n_steps = n_new ? n_new - 1 : 0;
    printf("prompt: %ld tokens in %.3f ms, %.1f tokens/s\n", n_prompt, 1e3 * (t1 - t0),
           (double)n_prompt / (t1 - t0));
    printf("generated: %llu tokens (%llu steps) in %.3f ms, %.1f tokens/s\n",
           (unsigned long long)n_new, (unsigned long long)n_steps, 1e3 * (t2 - t1),
           n_steps ? (double)n_steps / (t2 - t1) : 0.0);
    rc = 0;
out:
    state_free(&s);
    model_free(&m);
    free(ids);
    return rc;
}
