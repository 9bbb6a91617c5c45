/* The numbers people ask of a model first: how many parameters, how many bits a weight takes,
 * and how much memory the KV cache needs at a given context. Everything is counted from the
 * file (tensor shapes and types, the architecture's metadata); an architecture whose cache
 * layout is not known here is said to be unknown, never guessed. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

void cli_count_weights(const tm_file *f, cli_weights *w)
{
    memset(w, 0, sizeof *w);
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        w->params += t->n_elements;
        w->bytes += t->n_bytes;
        size_t k = 0;
        while (k < w->n_types && w->types[k].type != t->type)
            k++;
        if (k == w->n_types) {
            if (k == CLI_MAX_TYPES)
                continue; /* more distinct types than any file has: the total still counts */
            w->types[w->n_types++].type = t->type;
        }
        w->types[k].tensors++;
        w->types[k].weights += t->n_elements;
        w->types[k].bytes += t->n_bytes;
    }
}

void cli_grouped(uint64_t n, char *buf, size_t size)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n);
    size_t at = 0;
    for (int i = 0; i < len && at + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
}

void cli_count_words(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"K", "M", "B", "T"};
    if (n < 1000) {
        snprintf(buf, size, "%" PRIu64, n);
        return;
    }
    double v = (double)n;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        v /= 1000;
        /* three significant digits; 999.6 K rounds to 1e+03 and is said as 1 M instead */
        snprintf(buf, size, "%.3g %s", v, units[u]);
        if (!strchr(buf, 'e'))
            return;
    }
    snprintf(buf, size, "%.3g T", (double)n / 1e12);
}

void cli_bytes_words(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%" PRIu64 " byte%s", n, CLI_S(n));
        return;
    }
    double v = (double)n;
    size_t u = 0;
    for (v /= 1024; v >= 1023.5 && u + 1 < sizeof units / sizeof units[0]; u++)
        v /= 1024;
    snprintf(buf, size, "%.3g %s", v, units[u]);
}

/* ---- the KV cache ------------------------------------------------------------------------ */

/* The architectures whose cache is known here. swa_pattern: of every swa_pattern layers the
 * last attends to the whole context and the others to a sliding window (llama.cpp's
 * set_swa_pattern); 0 for none. */
static const struct known_arch {
    const char *name;
    uint32_t swa_pattern;
} known_archs[] = {
    {"llama", 0}, {"mistral", 0}, {"qwen2", 0},  {"qwen3", 0},
    {"gemma", 0}, {"gemma2", 2},  {"gemma3", 6},
};

const char *cli_kv_known_archs(void)
{
    return "llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3";
}

/* The per-layer value of an entry that is a count or an array of counts (one per layer). */
static bool per_layer(const tm_kv *kv, uint64_t layer, uint64_t *v)
{
    if (kv && kv->type == TM_V_ARRAY) {
        tm_value e;
        if (layer >= kv->count || tm_kv_elem(kv, layer, &e) != TM_OK)
            return false;
        if (e.type == TM_V_I8 || e.type == TM_V_I16 || e.type == TM_V_I32 || e.type == TM_V_I64) {
            if (e.as.i < 0)
                return false;
            *v = (uint64_t)e.as.i;
            return true;
        }
        *v = e.as.u;
        return e.type == TM_V_U8 || e.type == TM_V_U16 || e.type == TM_V_U32 ||
               e.type == TM_V_U64;
    }
    return tm_kv_get_uint(kv, v) == TM_OK;
}

/* Bytes of n values of type t in whole blocks; false when n is not a whole number of blocks
 * (llama.cpp refuses such a cache type for the model). */
static bool row_bytes(tm_type t, uint64_t n, uint64_t *out)
{
    uint32_t be = tm_type_block_elems(t), bb = tm_type_block_bytes(t);
    if (be == 0 || n % be != 0)
        return false;
    *out = n / be * bb;
    return true;
}

#define WHY(...) (snprintf(c->why, sizeof c->why, __VA_ARGS__), false)

bool cli_kv_cache(const tm_file *f, uint64_t context, tm_type type, cli_kv_cache_t *c)
{
    memset(c, 0, sizeof *c);
    c->context = context;
    c->type = type;
    tm_str arch = tm_architecture(f);
    const struct known_arch *a = NULL;
    for (size_t i = 0; arch.ptr && i < sizeof known_archs / sizeof known_archs[0]; i++)
        if (arch.len == strlen(known_archs[i].name) &&
            memcmp(arch.ptr, known_archs[i].name, arch.len) == 0)
            a = &known_archs[i];
    if (!a) {
        char name[96];
        return WHY("unknown for %s%s%s (known: %s)", arch.ptr ? "architecture '" : "a file without",
                   arch.ptr ? cli_name(arch, 60, name, sizeof name) : " general.architecture",
                   arch.ptr ? "'" : "", cli_kv_known_archs());
    }
    uint64_t embd = 0, heads = 0;
    const tm_kv *n_heads = tm_arch_key(f, "attention.head_count");
    const tm_kv *n_kv_heads = tm_arch_key(f, "attention.head_count_kv");
    const tm_kv *klen = tm_arch_key(f, "attention.key_length");
    const tm_kv *vlen = tm_arch_key(f, "attention.value_length");
    if (tm_kv_get_uint(tm_arch_key(f, "block_count"), &c->layers) != TM_OK || c->layers == 0)
        return WHY("unknown: no block_count in the file");
    if (a->swa_pattern) {
        if (tm_kv_get_uint(tm_arch_key(f, "attention.sliding_window"), &c->window) != TM_OK)
            return WHY("unknown: no attention.sliding_window in the file");
        c->swa_pattern = a->swa_pattern;
    }
    for (uint64_t il = 0; il < c->layers; il++) {
        uint64_t hkv, k, v;
        if (!per_layer(n_kv_heads ? n_kv_heads : n_heads, il, &hkv))
            return WHY("unknown: no attention.head_count_kv or head_count for layer %" PRIu64, il);
        if (klen ? tm_kv_get_uint(klen, &k) != TM_OK : !per_layer(n_heads, il, &heads))
            return WHY("unknown: no attention.key_length or head_count");
        if (!klen) {
            if (tm_kv_get_uint(tm_arch_key(f, "embedding_length"), &embd) != TM_OK || heads == 0 ||
                embd % heads != 0)
                return WHY("unknown: no attention.key_length, and embedding_length / head_count "
                           "is not a whole head width");
            k = embd / heads;
        }
        if (vlen ? tm_kv_get_uint(vlen, &v) != TM_OK : false)
            return WHY("unknown: attention.value_length is not a count");
        if (!vlen)
            v = k;
        uint64_t kb, vb, kn, vn;
        if (__builtin_mul_overflow(hkv, k, &kn) || __builtin_mul_overflow(hkv, v, &vn))
            return WHY("unknown: more than 2^64 values per token");
        if (!row_bytes(type, kn, &kb) || !row_bytes(type, vn, &vb))
            return WHY("unknown: %" PRIu64 " values per token is not a whole number of %s blocks",
                       hkv * k, tm_type_name(type));
        bool swa = c->swa_pattern && il % c->swa_pattern < c->swa_pattern - 1;
        uint64_t tokens = swa && c->window < context ? c->window : context, layer;
        c->swa_layers += swa;
        /* numbers from the file: a product past 2^64 is said, not wrapped */
        if (__builtin_mul_overflow(tokens, kb + vb, &layer) || kb + vb < kb ||
            __builtin_add_overflow(c->bytes, layer, &c->bytes))
            return WHY("unknown: more than 2^64 bytes");
        if (il == 0) {
            c->kv_heads = hkv;
            c->key_length = k;
            c->value_length = v;
        } else if (hkv != c->kv_heads || k != c->key_length || v != c->value_length) {
            c->uneven = true;
        }
    }
    c->known = true;
    return true;
}
