/* The memory llama.cpp allocates for a context, worked out from the metadata alone: the KV
 * cache of the attention layers and the fixed state of the recurrent ones, cell for cell and
 * byte for byte as llama.cpp (node-llama-cpp 3.21.1's build, release v0.4.0) makes them.
 *
 * What each rule follows, in llama.cpp's source:
 *   - the context: llama-context.cpp's constructor (0 is the trained context; padded to 256;
 *     with several sequences each gets n_ctx / n_seq padded to 256, and a stream of its own,
 *     unless the cache is unified: one stream for all);
 *   - which layers hold what: llama-model.cpp's create_memory and each src/models/ARCH.cpp's
 *     load_arch_hparams (sliding-window patterns, recurrent layers, layers without a cache);
 *   - the per-layer widths: llama-hparams.cpp (n_embd_k_gqa, n_embd_v_gqa, n_embd_r, n_embd_s);
 *   - the sliding-window cache: llama-kv-cache-iswa.cpp (window x sequences + micro-batch,
 *     padded to 256, capped at the full cache);
 *   - the tensors: llama-kv-cache.cpp (K [n_embd_k_gqa, cells, streams], V alike, none for
 *     MLA) and llama-memory-recurrent.cpp (r and s in f32, one row per sequence).
 * An architecture not listed here is said to be unknown by name; nothing is guessed. */
#include "memory.h"

#include <inttypes.h>
#include <string.h>

/* How an architecture lays its memory out. */
enum layout {
    PLAIN,     /* one KV cache over every layer (llama_kv_cache) */
    ISWA,      /* a full cache and a sliding-window one (llama_kv_cache_iswa) */
    RECURRENT, /* state only (llama_memory_recurrent) */
    HYBRID,    /* KV for the attention layers, state for the recurrent ones */
    NO_MEMORY, /* encoders and diffusion models: llama.cpp makes no memory */
    ENCDEC,    /* encoder-decoder: said plainly, not worked out */
};

/* Which layers are recurrent in a hybrid. */
enum recr_rule {
    RECR_NONE,
    RECR_ALL,          /* falcon-h1: every layer has both attention and state */
    RECR_NO_KV_HEADS,  /* jamba, granitehybrid, lfm2: head_count_kv[il] == 0 */
    RECR_INTERVAL,     /* qwen3next: all but every full_attention_interval-th */
};

/* How the sliding window is read. */
enum swa_rule {
    SWA_NONE,
    SWA_ALWAYS,        /* gemma2: the window defaults to 4096 */
    SWA_REQUIRED,      /* cohere2, gpt-oss, gemma3n: the window must be in the file */
    SWA_IF_POSITIVE,   /* gemma3: no window (or 0), no sliding */
    SWA_CHUNKED_8192,  /* llama4: chunks of 8192 whatever the key says, unless it is 0 */
    SWA_ATTN_LAYERS,   /* lfm2: a window above 0 makes every attention layer slide */
};

static const struct arch {
    const char *name;
    enum layout layout;
    enum swa_rule swa;
    uint32_t period;        /* of every `period` layers the last is full (set_swa_pattern) */
    uint32_t window;        /* the default window for SWA_ALWAYS */
    int32_t kv_from_start;  /* layers from here on reuse an earlier layer's cache; -1 none */
    enum recr_rule recr;
    bool trunk_only;        /* the nextn/MTP layers get no memory in the main context */
} archs[] = {
#define NOT_CACHED(name, layout) {name, layout, SWA_NONE, 0, 0, -1, RECR_NONE, false}
    {"llama", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"qwen2", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"qwen2moe", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"qwen3", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"qwen3moe", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"mistral3", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"gemma", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"openelm", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"deepseek2", PLAIN, SWA_NONE, 0, 0, -1, RECR_NONE, false},
    {"gemma2", ISWA, SWA_ALWAYS, 2, 4096, -1, RECR_NONE, false},
    {"gemma3", ISWA, SWA_IF_POSITIVE, 6, 0, -1, RECR_NONE, false},
    {"gemma3n", ISWA, SWA_REQUIRED, 5, 0, 20, RECR_NONE, false},
    {"cohere2", ISWA, SWA_REQUIRED, 4, 0, -1, RECR_NONE, false},
    {"gpt-oss", ISWA, SWA_REQUIRED, 2, 0, -1, RECR_NONE, false},
    {"llama4", ISWA, SWA_CHUNKED_8192, 4, 8192, -1, RECR_NONE, false},
    {"mamba", RECURRENT, SWA_NONE, 0, 0, -1, RECR_ALL, false},
    {"mamba2", RECURRENT, SWA_NONE, 0, 0, -1, RECR_ALL, false},
    {"rwkv6", RECURRENT, SWA_NONE, 0, 0, -1, RECR_ALL, false},
    {"rwkv7", RECURRENT, SWA_NONE, 0, 0, -1, RECR_ALL, false},
    {"jamba", HYBRID, SWA_NONE, 0, 0, -1, RECR_NO_KV_HEADS, false},
    {"granitehybrid", HYBRID, SWA_NONE, 0, 0, -1, RECR_NO_KV_HEADS, false},
    {"lfm2", HYBRID, SWA_ATTN_LAYERS, 0, 0, -1, RECR_NO_KV_HEADS, false},
    {"falcon-h1", HYBRID, SWA_NONE, 0, 0, -1, RECR_ALL, false},
    {"qwen3next", HYBRID, SWA_NONE, 0, 0, -1, RECR_INTERVAL, true},
    NOT_CACHED("bert", NO_MEMORY),
    NOT_CACHED("modern-bert", NO_MEMORY),
    NOT_CACHED("nomic-bert", NO_MEMORY),
    NOT_CACHED("nomic-bert-moe", NO_MEMORY),
    NOT_CACHED("neo-bert", NO_MEMORY),
    NOT_CACHED("jina-bert-v2", NO_MEMORY),
    NOT_CACHED("jina-bert-v3", NO_MEMORY),
    NOT_CACHED("eurobert", NO_MEMORY),
    NOT_CACHED("gemma-embedding", NO_MEMORY),
    NOT_CACHED("wavtokenizer-dec", NO_MEMORY),
    NOT_CACHED("dream", NO_MEMORY),
    NOT_CACHED("llada", NO_MEMORY),
    NOT_CACHED("llada-moe", NO_MEMORY),
    NOT_CACHED("rnd1", NO_MEMORY),
    NOT_CACHED("t5", ENCDEC),
#undef NOT_CACHED
};

/* llama.cpp's GGML_PAD: up to a multiple of n (a power of two here) */
static uint64_t pad(uint64_t x, uint64_t n)
{
    return (x + n - 1) / n * n;
}

const char *cli_memory_known_archs(void)
{
    return "llama, qwen2, qwen2moe, qwen3, qwen3moe, mistral3, gemma, openelm, deepseek2 (MLA), "
           "gemma2, gemma3, gemma3n, cohere2, gpt-oss, llama4 (sliding windows), mamba, mamba2, "
           "rwkv6, rwkv7 (recurrent), jamba, granitehybrid, lfm2, falcon-h1, qwen3next (hybrid)";
}

#define WHY(...) (snprintf(m->why, sizeof m->why, __VA_ARGS__), false)

/* A count from a scalar entry, or element il of an array entry (one per layer). */
static bool count_at(const tm_kv *kv, uint64_t il, uint64_t *v)
{
    if (!kv || kv->type != TM_V_ARRAY)
        return tm_kv_get_uint(kv, v) == TM_OK;
    tm_value e;
    if (il >= kv->count || tm_kv_elem(kv, il, &e) != TM_OK)
        return false;
    switch (e.type) {
    case TM_V_I8: case TM_V_I16: case TM_V_I32: case TM_V_I64:
        *v = (uint64_t)e.as.i;
        return e.as.i >= 0;
    case TM_V_U8: case TM_V_U16: case TM_V_U32: case TM_V_U64:
        *v = e.as.u;
        return true;
    case TM_V_BOOL:
        *v = e.as.b;
        return true;
    default:
        return false;
    }
}

/* Where an entry is, for a message: "entry 12, at byte 345". */
static const char *where(const tm_file *f, const tm_kv *kv, char *buf, size_t size)
{
    uint64_t i = 0;
    while (i < tm_n_kv(f) && tm_kv_at(f, i) != kv)
        i++;
    snprintf(buf, size, "entry %" PRIu64 ", at byte %" PRIu64, i, kv->offset);
    return buf;
}

/* An entry that is not what the memory needs: its name, where it is, and what it should be. */
static bool bad_entry(const tm_file *f, const tm_kv *kv, const char *want, cli_memory_t *m)
{
    char at[64], name[96];
    return WHY("unknown: %s (%s) is not %s", cli_name(kv->key, 80, name, sizeof name),
               where(f, kv, at, sizeof at), want);
}

/* An optional count: absent gives the default; present but not a count is said (m->why). */
static bool opt_count(const tm_file *f, const char *suffix, uint64_t dflt, uint64_t *v,
                      cli_memory_t *m)
{
    const tm_kv *kv = tm_arch_key(f, suffix);
    if (!kv) {
        *v = dflt;
        return true;
    }
    return tm_kv_get_uint(kv, v) == TM_OK || bad_entry(f, kv, "a count", m);
}

/* Bytes of a row of n values of type t; false when n is not whole blocks. */
static bool row_bytes(tm_type t, uint64_t n, uint64_t *out)
{
    uint32_t be = tm_type_block_elems(t), bb = tm_type_block_bytes(t);
    if (be == 0 || n % be != 0)
        return false;
    *out = n / be * bb;
    return true;
}

/* a += b * c, false past 2^64 (every factor comes from the file) */
static bool add_product(uint64_t *a, uint64_t b, uint64_t c)
{
    uint64_t p;
    return !__builtin_mul_overflow(b, c, &p) && !__builtin_add_overflow(*a, p, a);
}

/* The per-layer facts llama.cpp's hparams hold. */
typedef struct layer_facts {
    uint64_t heads, kv_heads, head_k, head_v;
    bool swa, recr, has_kv;
} layer_facts;

static bool quantized(tm_type t)
{
    return tm_type_block_elems(t) > 1;
}

bool cli_memory_plan(const tm_file *f, const cli_memory_opts *o, cli_memory_t *m)
{
    memset(m, 0, sizeof *m);
    m->asked = o->context;
    m->n_seq = o->n_seq ? o->n_seq : 1;
    m->type_k = o->type_k;
    m->type_v = o->type_v;
    tm_str name = tm_architecture(f);
    char shown[96];
    const struct arch *a = NULL;
    for (size_t i = 0; name.ptr && i < sizeof archs / sizeof archs[0]; i++)
        if (name.len == strlen(archs[i].name) && memcmp(name.ptr, archs[i].name, name.len) == 0)
            a = &archs[i];
    if (!name.ptr)
        return WHY("unknown for a file without general.architecture");
    cli_name(name, 60, shown, sizeof shown);
    if (!a)
        return WHY("unknown for architecture '%s': its memory layout is not modelled here "
                   "(modelled: %s)", shown, cli_memory_known_archs());
    if (a->layout == NO_MEMORY)
        return WHY("none: '%s' is an encoder or a diffusion model, for which llama.cpp makes no "
                   "KV cache", shown);
    if (a->layout == ENCDEC)
        return WHY("unknown for '%s': an encoder-decoder (the decoder's cache and the encoder's "
                   "output are not worked out here)", shown);
    m->layout = a->layout == PLAIN ? "attention" : a->layout == ISWA ? "sliding window"
              : a->layout == RECURRENT ? "recurrent" : "hybrid";

    /* ---- the context (llama-context.cpp) ---- */
    uint64_t n_ctx = o->context, train = 0;
    if (tm_kv_get_uint(tm_arch_key(f, "context_length"), &train) != TM_OK)
        train = 0;
    if (n_ctx == 0)
        n_ctx = train;
    if (n_ctx == 0)
        return WHY("unknown: no context asked and no context_length in the file");
    if (n_ctx > UINT32_MAX)
        return WHY("unknown: llama.cpp holds the context in 32 bits; %" PRIu64 " is past that",
                   n_ctx);
    m->context = n_ctx;
    uint64_t n_ubatch = o->n_ubatch ? o->n_ubatch : 512;
    uint64_t n_batch = n_ctx < 2048 ? n_ctx : 2048; /* causal: n_batch = min(n_ctx, 2048) */
    if (n_ubatch > n_batch)
        n_ubatch = n_batch;
    m->n_ubatch = n_ubatch;
    uint64_t padded = pad(n_ctx, 256);
    /* n_ctx_seq: unified, all of it in one stream; else each sequence its own, padded again */
    m->streams = o->kv_unified ? 1 : m->n_seq;
    m->cells = o->kv_unified ? padded : pad(padded / m->n_seq, 256);
    if (m->cells == 0)
        return WHY("unknown: %" PRIu32 " sequences leave no cells to each (llama.cpp refuses)",
                   m->n_seq);
    m->n_ctx = m->cells * m->streams;

    /* ---- the layers (llama-model.cpp load_hparams, src/models/ARCH.cpp) ---- */
    uint64_t n_all, n_nextn, embd;
    if (tm_kv_get_uint(tm_arch_key(f, "block_count"), &n_all) != TM_OK || n_all == 0)
        return WHY("unknown: no block_count in the file");
    if (n_all > CLI_MEMORY_MAX_LAYERS)
        return WHY("unknown: block_count %" PRIu64 " is past llama.cpp's %d layers", n_all,
                   CLI_MEMORY_MAX_LAYERS);
    if (!opt_count(f, "nextn_predict_layers", 0, &n_nextn, m))
        return false;
    if (n_nextn > n_all)
        return bad_entry(f, tm_arch_key(f, "nextn_predict_layers"), "a count up to block_count",
                         m);
    if (tm_kv_get_uint(tm_arch_key(f, "embedding_length"), &embd) != TM_OK)
        return WHY("unknown: no embedding_length in the file");
    uint64_t n_layer = n_all - n_nextn;
    m->layers = n_all;
    m->nextn_layers = n_nextn;
    const tm_kv *heads = tm_arch_key(f, "attention.head_count");
    const tm_kv *kv_heads = tm_arch_key(f, "attention.head_count_kv");
    if (heads && heads->type == TM_V_ARRAY && heads->count != n_all)
        return bad_entry(f, heads, "one count per layer (its length is not block_count)", m);
    if (kv_heads && kv_heads->type == TM_V_ARRAY && kv_heads->count != n_all)
        return bad_entry(f, kv_heads, "one count per layer (its length is not block_count)", m);
    uint64_t head0 = 0, head_k, head_v, head_k_swa, head_v_swa;
    if (heads && !count_at(heads, 0, &head0))
        return bad_entry(f, heads, "a count or an array of counts", m);
    /* non-transformer models have no heads, and so no head width */
    uint64_t dflt = head0 ? embd / head0 : 0;
    if (!opt_count(f, "attention.key_length", dflt, &head_k, m) ||
        !opt_count(f, "attention.value_length", dflt, &head_v, m))
        return false;
    if (!head0)
        head_k = head_v = 0;
    if (!opt_count(f, "attention.key_length_swa", head_k, &head_k_swa, m) ||
        !opt_count(f, "attention.value_length_swa", head_v, &head_v_swa, m))
        return false;
    uint64_t k_mla = 0, v_mla = 0;
    if (!strcmp(a->name, "deepseek2") &&
        (!opt_count(f, "attention.key_length_mla", 0, &k_mla, m) ||
         !opt_count(f, "attention.value_length_mla", 0, &v_mla, m)))
        return false;
    m->mla = k_mla && v_mla; /* the latent and the rope part are K; there is no V */
    if (m->mla && o->type_k != o->type_v)
        return WHY("none: llama.cpp refuses different K and V types for an MLA model");

    /* the sliding window */
    uint64_t period = a->period, window = a->window;
    bool swa = a->swa != SWA_NONE;
    const tm_kv *wkey = tm_arch_key(f, "attention.sliding_window");
    if (wkey && (tm_kv_get_uint(wkey, &window) != TM_OK || window > UINT32_MAX))
        return bad_entry(f, wkey, "a count of 32 bits (llama.cpp's n_swa)", m);
    if (a->swa == SWA_REQUIRED && !wkey)
        return WHY("unknown: no attention.sliding_window in the file (llama.cpp requires it)");
    if ((a->swa == SWA_IF_POSITIVE || a->swa == SWA_ATTN_LAYERS) && (!wkey || window == 0))
        swa = false;
    if (a->swa == SWA_CHUNKED_8192) {
        swa = !(wkey && window == 0);
        window = 8192; /* llama4.cpp: chunked attention of 8192, not the key's value */
    }
    if (swa && a->swa != SWA_ATTN_LAYERS &&
        !opt_count(f, "attention.sliding_window_pattern", period, &period, m))
        return bad_entry(f, tm_arch_key(f, "attention.sliding_window_pattern"),
                         "a count (a per-layer pattern is not modelled here)", m);

    /* the recurrent layers */
    uint64_t interval = 4;
    if (a->recr == RECR_INTERVAL) {
        if (tm_arch_key(f, "attention.recurrent_layers"))
            return WHY("unknown: attention.recurrent_layers (a per-layer list) is not modelled "
                       "here");
        if (!opt_count(f, "full_attention_interval", 4, &interval, m))
            return false;
        if (interval == 0)
            return bad_entry(f, tm_arch_key(f, "full_attention_interval"), "above 0", m);
    }

    /* ---- what llama.cpp refuses (llama_init_from_model) ---- */
    layer_facts lf[CLI_MEMORY_MAX_LAYERS];
    for (uint64_t il = 0; il < n_all; il++) {
        layer_facts *l = &lf[il];
        memset(l, 0, sizeof *l);
        if (heads && !count_at(heads, il, &l->heads))
            return bad_entry(f, heads, "a count for every layer", m);
        l->kv_heads = l->heads;
        if (kv_heads && !count_at(kv_heads, il, &l->kv_heads))
            return bad_entry(f, kv_heads, "a count for every layer", m);
        switch (a->recr) {
        case RECR_NONE: l->recr = false; break;
        case RECR_ALL: l->recr = il < n_layer; break;
        case RECR_NO_KV_HEADS: l->recr = il < n_layer && l->kv_heads == 0; break;
        case RECR_INTERVAL: l->recr = il < n_layer && (il + 1) % interval != 0; break;
        }
        if (a->swa == SWA_ATTN_LAYERS)
            l->swa = swa && il < n_layer && !l->recr;
        else
            l->swa = swa && il < n_layer && (period == 0 || il % period < period - 1);
        l->head_k = l->swa ? head_k_swa : head_k;
        l->head_v = l->swa ? head_v_swa : head_v;
        l->has_kv = a->kv_from_start < 0 || il < (uint64_t)a->kv_from_start;
        if (il < n_layer && quantized(o->type_k) && l->head_k % tm_type_block_elems(o->type_k))
            return WHY("none: llama.cpp refuses K in %s: its blocks of %" PRIu32 " do not divide "
                       "a head of %" PRIu64 " (layer %" PRIu64 ")", tm_type_name(o->type_k),
                       tm_type_block_elems(o->type_k), l->head_k, il);
        if (il < n_layer && quantized(o->type_v) && l->head_v % tm_type_block_elems(o->type_v))
            return WHY("none: llama.cpp refuses V in %s: its blocks of %" PRIu32 " do not divide "
                       "a head of %" PRIu64 " (layer %" PRIu64 ")", tm_type_name(o->type_v),
                       tm_type_block_elems(o->type_v), l->head_v, il);
    }

    /* ---- the KV cache (llama-kv-cache.cpp, llama-kv-cache-iswa.cpp) ---- */
    m->swa_cells = 0;
    if (swa) {
        m->window = window;
        /* the window for every sequence of a unified stream, or for its own; + a micro-batch */
        uint64_t s = window * (o->kv_unified ? m->n_seq : 1) + n_ubatch;
        m->swa_cells = o->swa_full || s >= m->cells ? m->cells : pad(s, 256);
    }
    bool attention = a->layout != RECURRENT;
    for (uint64_t il = 0; attention && il < n_all; il++) {
        const layer_facts *l = &lf[il];
        if (!l->has_kv) {
            m->shared_layers++;
            continue;
        }
        if (a->trunk_only && il >= n_layer)
            continue;
        if (a->layout == HYBRID && a->recr != RECR_ALL && l->recr)
            continue;
        uint64_t k_row, v_row = 0, kn, vn, cells = l->swa ? m->swa_cells : m->cells;
        if (__builtin_mul_overflow(l->kv_heads, l->head_k, &kn) ||
            __builtin_mul_overflow(l->kv_heads, l->head_v, &vn))
            return WHY("unknown: more than 2^64 values per token");
        if (!row_bytes(o->type_k, kn, &k_row) || (!m->mla && !row_bytes(o->type_v, vn, &v_row)))
            return WHY("none: %" PRIu64 " values per token in layer %" PRIu64 " are not whole "
                       "blocks of %s", kn, il, tm_type_name(o->type_k));
        if (!add_product(&m->k_bytes, k_row, cells * m->streams) ||
            !add_product(&m->v_bytes, v_row, cells * m->streams) ||
            !add_product(&m->layer_bytes[il], k_row + v_row, cells * m->streams))
            return WHY("unknown: more than 2^64 bytes");
        m->kv_layers++;
        m->swa_layers += l->swa;
        if (m->kv_layers == 1) {
            m->kv_heads = l->kv_heads;
            m->key_length = l->head_k;
            m->value_length = m->mla ? 0 : l->head_v;
        } else if (l->kv_heads != m->kv_heads || l->head_k != m->key_length ||
                   (!m->mla && l->head_v != m->value_length)) {
            m->uneven = true;
        }
    }

    /* ---- the recurrent state (llama-memory-recurrent.cpp, llama-hparams.cpp) ---- */
    if (a->layout == RECURRENT || a->layout == HYBRID) {
        uint64_t r = 0, s = 0, wkv, conv, inner, state, groups, shift, lcache;
        if (!opt_count(f, "wkv.head_size", 0, &wkv, m) ||
            !opt_count(f, "token_shift_count", 2, &shift, m) ||
            !opt_count(f, "shortconv.l_cache", 0, &lcache, m) ||
            !opt_count(f, "ssm.conv_kernel", 0, &conv, m) ||
            !opt_count(f, "ssm.inner_size", 0, &inner, m) ||
            !opt_count(f, "ssm.state_size", 0, &state, m) ||
            !opt_count(f, "ssm.group_count", 0, &groups, m))
            return false;
        /* every factor is the file's: a product past 2^64 is said, not wrapped */
        bool over;
        if (wkv) { /* rwkv: the token shifts, and the wkv state */
            over = __builtin_mul_overflow(shift, embd, &r) | __builtin_mul_overflow(embd, wkv, &s);
        } else if (lcache) { /* lfm2: the short convolution's history */
            over = __builtin_mul_overflow(embd, lcache - 1, &r) |
                   __builtin_mul_overflow(state, inner, &s);
        } else { /* mamba: the convolution's last d_conv - 1 columns, and the ssm state */
            uint64_t width = 0;
            over = __builtin_mul_overflow(2 * groups, state, &width) | (groups >> 62 != 0) |
                   __builtin_add_overflow(width, inner, &width) |
                   __builtin_mul_overflow(conv ? conv - 1 : 0, width, &r) |
                   __builtin_mul_overflow(state, inner, &s);
        }
        if (over || r >> 61 || s >> 61)
            return WHY("unknown: the recurrent state's dimensions are past 2^64 bytes");
        if (r == 0 && s == 0)
            return WHY("unknown: no recurrent state dimensions (ssm.*, wkv.head_size, "
                       "shortconv.l_cache) in the file");
        for (uint64_t il = 0; il < n_layer; il++) {
            if (!lf[il].recr)
                continue;
            m->recr_layers++;
            /* f32, one row per sequence (rs_size = max(1, n_seq_max)) */
            if (!add_product(&m->r_bytes, r * 4, m->n_seq) ||
                !add_product(&m->s_bytes, s * 4, m->n_seq) ||
                !add_product(&m->layer_bytes[il], (r + s) * 4, m->n_seq))
                return WHY("unknown: more than 2^64 bytes");
        }
    }
    m->bytes = m->k_bytes + m->v_bytes + m->r_bytes + m->s_bytes;
    if (m->bytes < m->k_bytes)
        return WHY("unknown: more than 2^64 bytes");
    m->known = true;
    return true;
}
