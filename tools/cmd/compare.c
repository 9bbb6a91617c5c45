/* tensormap compare: audit a conversion tensor by tensor, after decoding both sides to float32.
 * Same format: tensors pair by name. Safetensors (Hugging
 * Face names) against GGUF (llama.cpp names): names are mapped for the llama and qwen2
 * families, and for llama the row permutation llama.cpp's converter applies to the query and
 * key projections is undone. Decoding goes in bounded chunks, never a whole big tensor. */
#include "../cli/cli.h"
#include "../cli/dtype.h"
#include "../cli/shard_alone.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap compare [--tolerance X] [--json] A B\n"
    "\n"
    "Compare two checkpoints tensor by tensor after decoding both to float32. GGUF with GGUF and\n"
    "safetensors with safetensors pair tensors by name. Safetensors with GGUF (either order)\n"
    "maps Hugging Face names to llama.cpp's for the llama and qwen2 families\n"
    "(model.layers.N.self_attn.q_proj.weight is blk.N.attn_q.weight, model.embed_tokens is\n"
    "token_embd, lm_head is output, a missing lm_head or output is the tied embedding), and for\n"
    "llama undoes the converter's row permutation of attn_q and attn_k (n_head and n_head_kv\n"
    "from the GGUF's attention.head_count and head_count_kv). Shapes are compared row length\n"
    "first (ne), which is the safetensors shape reversed.\n"
    "\n"
    "Each pair prints whether it is exact, how many values differ, the largest absolute and\n"
    "relative difference (relative to A's value, over A's non-zero values), where the first\n"
    "difference is in each file's own indices, and when either side is quantized the RMSE and\n"
    "the largest error as a share of A's range. Two tensors of a type float32 cannot hold\n"
    "exactly (f64, 32- and 64-bit integers) or cannot decode at all compare as bytes. Tensors on\n"
    "one side only are listed. The result is match (exit status 0) only when every pair matched\n"
    "within the tolerance and every tensor of both files has its partner, but for the ones a\n"
    "conversion accounts for: a rope_freqs.weight only in the GGUF (the converter computes it)\n"
    "and a rotary_emb.inv_freq only in the safetensors (the converter drops it) are listed and\n"
    "do not count. MISMATCH when a pair differs (in values, shape, or could not be compared);\n"
    "INCOMPLETE when every pair matched but tensors are left without a partner (one shard of\n"
    "a checkpoint against the whole model, say, which is also said when a file is one shard\n"
    "opened alone). Both exit with status 1.\n"
    "\n"
    "  --tolerance X  largest absolute difference that still matches (default 0: exact; NaN\n"
    "                 matches NaN)\n"
    "  --json         one JSON object: the pairs, the one-sided tensors and the summary\n"
    "\n"
    "A or B may be a model.safetensors.index.json, or (with `tensormap --all-shards compare`)\n"
    "any one shard of a checkpoint.\n";

/* Floats decoded per side per step: 4 MiB each. */
#define CHUNK_FLOATS ((size_t)1 << 20)
/* A permuted tensor is decoded a whole head at a time; refuse heads larger than this. */
#define MAX_HEAD_FLOATS ((size_t)1 << 28)

/* ---- one pair --------------------------------------------------------------------------------- */

typedef struct pair {
    const tm_tensor *a, *b;
    uint64_t n_head;          /* 0, or the heads llama.cpp permuted the GGUF side's rows by */
    bool gguf_is_a;           /* which side holds the permuted rows */
    const char *note;         /* "tied embedding" or NULL */
} pair;

enum status { ST_EXACT, ST_WITHIN, ST_DIFFERS, ST_SHAPE, ST_ERROR };
static const char *const status_names[] = {"exact", "within", "differs", "shape", "error"};

typedef struct stats {
    uint64_t n, not_equal, differing;
    uint64_t first;           /* the first value that differs, in the converted order */
    uint64_t first_a, first_b; /* ... as an element of A and of B */
    bool as_bytes;            /* compared as bytes: no differences in value */
    double max_abs, max_rel, sum_sq, ref_min, ref_max;
    char why[TM_ERROR_MESSAGE_MAX + 64];
} stats;

/* One value; at is its position, kept when it is the first to differ. Values arrive as long
 * double, which holds every float, double, int64 and uint64 exactly, so equality here is
 * equality of the values the files hold. */
static void tally(stats *s, long double ref, long double other, double tol, uint64_t at)
{
    s->n++;
    if (isnan(ref) || isnan(other)) {
        if (!(isnan(ref) && isnan(other))) {
            if (!s->differing++)
                s->first = at;
            s->not_equal++;
            s->max_abs = INFINITY;
        }
        return;
    }
    if (ref == other)
        return;
    double d = (double)fabsl(ref - other);
    s->not_equal++;
    if (!(d <= tol) && !s->differing++)
        s->first = at;
    if (d > s->max_abs)
        s->max_abs = d;
    if (ref != 0 && d / (double)fabsl(ref) > s->max_rel)
        s->max_rel = d / (double)fabsl(ref);
    s->sum_sq += d * d;
}

/* One chunk of A's values (ref) against B's. A faithful conversion is bit-identical nearly
 * everywhere, so identical chunks are only counted; the rest goes value by value. */
static void tally_chunk(stats *s, const float *ref, const float *other, uint64_t len,
                        uint64_t base, double tol)
{
    if (memcmp(ref, other, (size_t)len * sizeof *ref) != 0) {
        for (uint64_t k = 0; k < len; k++)
            tally(s, ref[k], other[k], tol, base + k);
        return;
    }
    s->n += len;
}

/* The same for values wider than float32 (compare_wide): every value goes through tally,
 * since two long doubles equal as values may differ in their unused bytes. */
static void tally_wide(stats *s, const long double *ref, const long double *other, uint64_t len,
                       uint64_t base, double tol)
{
    for (uint64_t k = 0; k < len; k++)
        tally(s, ref[k], other[k], tol, base + k);
}

static uint64_t gcd(uint64_t x, uint64_t y)
{
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return x;
}

/* Types without a float decoder (integers, bool) compare as bytes, element by element. */
static const char *type_str(tm_type t) { return tm_type_name(t) ? tm_type_name(t) : "?"; }

/* Types whose values float32 cannot all hold (f64; 32- and 64-bit integers) would hide a
 * difference in the low bits after decoding: between two tensors of such a type, bytes are
 * compared instead; against another type, values are compared exactly (compare_wide). */
static bool wider_than_f32(tm_type t)
{
    return t == TM_TYPE_F64 || t == TM_TYPE_I32 || t == TM_TYPE_I64 || t == TM_TYPE_U32 ||
           t == TM_TYPE_U64;
}

/* Bytes compared at a time (two buffers of this size for a remote file). */
#define BYTES_CHUNK ((uint64_t)1 << 22)

/* Block by block as bytes (a block is one value for the plain types): for types without a
 * float decoder and those wider than f32. Counts are of blocks; positions of their first
 * values. */
static enum status compare_bytes(const pair *p, stats *s)
{
    uint32_t size = tm_type_block_bytes(p->a->type), per = tm_type_block_elems(p->a->type);
    if (p->a->type != p->b->type || size == 0 || per == 0) {
        tm_type missing = tm_type_can_dequant(p->a->type) ? p->b->type : p->a->type;
        snprintf(s->why, sizeof s->why, "%s and %s: no float32 decoder for %s",
                 type_str(p->a->type), type_str(p->b->type), type_str(missing));
        return ST_ERROR;
    }
    s->as_bytes = true;
    /* a chunk of blocks at a time: where they lie, or fetched (a remote file) */
    const uint64_t n_blocks = p->a->n_elements / per, chunk = (BYTES_CHUNK + size - 1) / size;
    uint8_t *scratch = malloc(2 * (size_t)chunk * size);
    if (!scratch) {
        snprintf(s->why, sizeof s->why, "out of memory");
        return ST_ERROR;
    }
    for (uint64_t b0 = 0; b0 < n_blocks; b0 += chunk) {
        const uint64_t k = n_blocks - b0 < chunk ? n_blocks - b0 : chunk;
        tm_error err = {0};
        const uint8_t *x = cli_tensor_bytes(p->a, b0 * size, k * size, scratch, &err);
        const uint8_t *y = x ? cli_tensor_bytes(p->b, b0 * size, k * size,
                                                scratch + (size_t)chunk * size, &err)
                             : NULL;
        if (!y) {
            free(scratch);
            snprintf(s->why, sizeof s->why, "reading failed: %s", err.message);
            return ST_ERROR;
        }
        for (uint64_t i = 0; i < k; i++, s->n++)
            if (memcmp(x + i * size, y + i * size, size) != 0)
                if (s->not_equal++, !s->differing++)
                    s->first = s->first_a = s->first_b = (b0 + i) * per;
    }
    free(scratch);
    return s->differing ? ST_DIFFERS : ST_EXACT;
}

/* Decode and compare in chunks. For a permuted pair, chunks are whole heads, and converted
 * unit g is compared with source unit cli_permuted_source_unit(g). */
/* A's smallest and largest value (NaN skipped), for errors as a share of the range: a second
 * pass, taken only when something differs. */
static bool ref_range(const tm_tensor *a, float *buf, uint64_t step, stats *s)
{
    float lo = INFINITY, hi = -INFINITY;
    for (uint64_t e0 = 0; e0 < a->n_elements; e0 += step) {
        uint64_t len = a->n_elements - e0 < step ? a->n_elements - e0 : step;
        tm_error err = {0};
        if (tm_dequant_elements(a, e0, len, buf, &err) != TM_OK) {
            snprintf(s->why, sizeof s->why, "decoding failed: %s", err.message);
            return false;
        }
        for (uint64_t k = 0; k < len; k++) {
            lo = buf[k] < lo ? buf[k] : lo;
            hi = buf[k] > hi ? buf[k] : hi;
        }
    }
    s->ref_min = lo;
    s->ref_max = hi;
    return true;
}

/* Decode buffers, reused from pair to pair: A's values, B's, and the permuted side's values
 * put back in source order. */
typedef struct bufs {
    void *a, *b, *p;
    size_t cap; /* bytes */
} bufs;

/* n values of elem_size bytes in each buffer. */
static bool bufs_reserve(bufs *bf, uint64_t n, size_t elem_size)
{
    if (n > SIZE_MAX / elem_size)
        return false;
    if (n * elem_size <= bf->cap)
        return true;
    void **all[3] = {&bf->a, &bf->b, &bf->p};
    for (int i = 0; i < 3; i++) {
        void *grown = realloc(*all[i], (size_t)n * elem_size);
        if (!grown)
            return false;
        *all[i] = grown;
    }
    bf->cap = (size_t)n * elem_size;
    return true;
}

/* Elements [e0, e0 + len) of t, each exactly, as long double: a type of its own dtype
 * (tools/cli/dtype.h: integers, bool, f64) read from its bytes, where they lie or fetched into
 * scratch (len values' bytes), any other decoded to float into scratch (exact for those) and
 * widened. */
static bool wide_values(const tm_tensor *t, uint64_t e0, uint64_t len, long double *out,
                        void *scratch, tm_error *err)
{
    const cli_dtype *d = cli_dtype_of(t->type);
    if (d->own) {
        const uint8_t *p = cli_tensor_bytes(t, e0 * d->size, len * d->size, scratch, err);
        for (uint64_t k = 0; p && k < len; k++)
            out[k] = cli_dtype_value(d, p + k * d->size);
        return p != NULL;
    }
    float *f = scratch;
    if (tm_dequant_elements(t, e0, len, f, err) != TM_OK)
        return false;
    for (uint64_t k = 0; k < len; k++)
        out[k] = f[k];
    return true;
}

/* The next pair's tensors on their way while this pair is compared: when compare_pair will
 * decode them (the same shape, both with a decoder), and so read them whole. */
static void prefetch_pair(const pair *p)
{
    if (memcmp(p->a->ne, p->b->ne, sizeof p->a->ne) != 0 ||
        !tm_type_can_dequant(p->a->type) || !tm_type_can_dequant(p->b->type))
        return;
    cli_prefetch(p->a);
    cli_prefetch(p->b);
}

static enum status compare_pair(const pair *p, bufs *bf, double tol, stats *s)
{
    const tm_tensor *a = p->a, *b = p->b;
    memset(s, 0, sizeof *s);
    for (int d = 0; d < 4; d++)
        if (a->ne[d] != b->ne[d] || a->n_elements != b->n_elements) {
            char sa[96], sb[96];
            cli_shape(a, sa, sizeof sa);
            cli_shape(b, sb, sizeof sb);
            snprintf(s->why, sizeof s->why, "shape %s against %s", sa, sb);
            return ST_SHAPE;
        }
    if (!tm_type_can_dequant(a->type) || !tm_type_can_dequant(b->type) ||
        (a->type == b->type && wider_than_f32(a->type)))
        return compare_bytes(p, s);

    uint64_t n = a->n_elements, ba = tm_type_block_elems(a->type), bb = tm_type_block_elems(b->type);
    uint64_t lcm = ba / gcd(ba, bb) * bb, unit = 1, hd = 0, step;
    if (p->n_head) {
        const tm_tensor *g = p->gguf_is_a ? a : b;
        uint64_t rows = g->n_dims ? g->ne[g->n_dims - 1] : 1;
        unit = rows ? n / rows : 1;
        hd = rows / p->n_head;
        if (rows % p->n_head || hd % 2) {
            snprintf(s->why, sizeof s->why, "%" PRIu64 " rows do not split into %" PRIu64
                     " heads of an even number of rows: cannot undo the q/k permutation",
                     rows, p->n_head);
            return ST_ERROR;
        }
        uint64_t head = hd * unit;
        if (head > MAX_HEAD_FLOATS || (head && head % lcm)) {
            snprintf(s->why, sizeof s->why, "a head of %" PRIu64 " values is too large or not a "
                     "whole number of blocks", head);
            return ST_ERROR;
        }
        step = head ? (CHUNK_FLOATS > head ? CHUNK_FLOATS / head * head : head) : 1;
    } else {
        step = CHUNK_FLOATS / lcm * lcm;
    }
    /* One side of a type float32 cannot hold (I64 against F32, F64 against F32): compared in
     * long double, so that 16777217 against 16777216.0f, or 1e300 against inf, differs. */
    const bool wide = wider_than_f32(a->type) || wider_than_f32(b->type);
    const size_t es = wide ? sizeof(long double) : sizeof(float);
    if (!bufs_reserve(bf, step, es)) {
        snprintf(s->why, sizeof s->why, "out of memory for %" PRIu64 " values", step);
        return ST_ERROR;
    }
    for (uint64_t e0 = 0; e0 < n; e0 += step) {
        uint64_t len = n - e0 < step ? n - e0 : step;
        void *va = bf->a, *vb = bf->b;
        tm_error err = {0};
        bool ok = wide ? wide_values(a, e0, len, va, bf->p, &err) &&
                             wide_values(b, e0, len, vb, bf->p, &err)
                       : tm_dequant_elements(a, e0, len, va, &err) == TM_OK &&
                             tm_dequant_elements(b, e0, len, vb, &err) == TM_OK;
        if (!ok) {
            snprintf(s->why, sizeof s->why, "decoding failed: %s", err.message);
            return ST_ERROR;
        }
        if (p->n_head) { /* the source's units in the converted order, then compare as is */
            const uint8_t *src = p->gguf_is_a ? vb : va;
            for (uint64_t g = 0; g < len / unit; g++)
                memcpy((uint8_t *)bf->p + g * unit * es,
                       src + cli_permuted_source_unit(g, hd) * unit * es, (size_t)unit * es);
            if (p->gguf_is_a)
                vb = bf->p;
            else
                va = bf->p;
        }
        if (wide)
            tally_wide(s, va, vb, len, e0, tol);
        else
            tally_chunk(s, va, vb, len, e0, tol);
    }
    if (s->max_abs > 0 && !ref_range(a, bf->a, step, s))
        return ST_ERROR;
    uint64_t src = p->n_head ? cli_permuted_source_unit(s->first / unit, hd) * unit + s->first % unit : s->first;
    s->first_a = p->n_head && !p->gguf_is_a ? src : s->first;
    s->first_b = p->n_head && p->gguf_is_a ? src : s->first;
    return s->differing ? ST_DIFFERS : s->not_equal ? ST_WITHIN : ST_EXACT;
}

/* ---- pairing ---------------------------------------------------------------------------------- */

typedef struct plan {
    pair *pairs;
    size_t n_pairs;
    bool *used_a, *used_b;
    bool cross;               /* safetensors against GGUF */
    bool a_is_st;
    uint64_t n_head, n_head_kv;
    bool permute;             /* llama: q/k rows were permuted by the converter */
} plan;

static void add_pair(plan *pl, const tm_file *fa, const tm_file *fb, const tm_tensor *a,
                     const tm_tensor *b, uint64_t n_head, const char *note)
{
    pl->pairs[pl->n_pairs++] = (pair){a, b, n_head, !pl->a_is_st, note};
    pl->used_a[a - tm_tensor_at(fa, 0)] = true;
    pl->used_b[b - tm_tensor_at(fb, 0)] = true;
}

/* Tensors of st paired with tensors of gg through the name map (one side is A, one is B). */
static void pair_cross(plan *pl, const tm_file *fa, const tm_file *fb)
{
    const tm_file *st = pl->a_is_st ? fa : fb, *gg = pl->a_is_st ? fb : fa;
    for (uint64_t i = 0; i < tm_n_tensors(st); i++) {
        const tm_tensor *s = tm_tensor_at(st, i), *g;
        char name[300];
        int perm;
        if (!cli_hf_to_gguf(s->name, name, sizeof name, &perm))
            continue;
        const char *note = NULL;
        g = tm_tensor_find(gg, name);
        if (!g && strcmp(name, "output.weight") == 0) {
            g = tm_tensor_find(gg, "token_embd.weight"); /* the GGUF ties the output */
            note = "tied embedding";
        }
        if (!g)
            continue;
        uint64_t heads = !pl->permute ? 0 : perm == CLI_PERM_Q ? pl->n_head : perm == CLI_PERM_K ? pl->n_head_kv : 0;
        if (pl->a_is_st)
            add_pair(pl, fa, fb, s, g, heads, note);
        else
            add_pair(pl, fa, fb, g, s, heads, note);
    }
    /* The checkpoint ties lm_head to the embedding; the GGUF stores output anyway. */
    const tm_tensor *out = tm_tensor_find(gg, "output.weight");
    const tm_tensor *emb = tm_tensor_find(st, "model.embed_tokens.weight");
    if (out && emb && !tm_tensor_find(st, "lm_head.weight")) {
        if (pl->a_is_st)
            add_pair(pl, fa, fb, emb, out, 0, "tied embedding");
        else
            add_pair(pl, fa, fb, out, emb, 0, "tied embedding");
    }
}

static void pair_by_name(plan *pl, const tm_file *fa, const tm_file *fb)
{
    for (uint64_t i = 0; i < tm_n_tensors(fa); i++) {
        const tm_tensor *a = tm_tensor_at(fa, i);
        const tm_tensor *b = tm_tensor_findn(fb, a->name.ptr, (size_t)a->name.len);
        if (b)
            add_pair(pl, fa, fb, a, b, 0, NULL);
    }
}

/* ---- output ----------------------------------------------------------------------------------- */

static bool quantized(const pair *p)
{
    return tm_type_block_elems(p->a->type) > 1 || tm_type_block_elems(p->b->type) > 1;
}

static double range_share(const stats *s)
{
    double range = s->ref_max - s->ref_min;
    return range > 0 ? s->max_abs / range : s->max_abs > 0 ? INFINITY : 0;
}

/* Element i of t as the file's own index: [row, column] of ne reversed (PyTorch order). */
static void print_position(const tm_tensor *t, uint64_t i)
{
    uint64_t shape[4], idx[4];
    uint32_t n = tm_tensor_shape(t, shape);
    for (uint32_t d = n; d-- > 0;) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
    putchar('[');
    for (uint32_t d = 0; d < n; d++)
        printf("%s%" PRIu64, d ? ", " : "", idx[d]);
    putchar(']');
}

static void print_pair(const pair *p, enum status st, const stats *s)
{
    char shape[96];
    cli_shape(p->a, shape, sizeof shape);
    printf("%-8s ", st == ST_DIFFERS ? "DIFFERS" : st == ST_SHAPE ? "SHAPE" : st == ST_ERROR ? "ERROR"
                                                                  : status_names[st]);
    cli_print_str(stdout, p->a->name, 200);
    if (p->a->name.len != p->b->name.len || memcmp(p->a->name.ptr, p->b->name.ptr, (size_t)p->a->name.len)) {
        fputs(" = ", stdout);
        cli_print_str(stdout, p->b->name, 200);
    }
    printf("  [%s / %s, %s%s%s]", type_str(p->a->type), type_str(p->b->type), shape,
           p->n_head ? ", rows un-permuted" : "", p->note ? ", tied embedding" : "");
    if (st == ST_SHAPE || st == ST_ERROR) {
        fputs(": ", stdout);
        cli_print_text(stdout, s->why); /* a library message */
    }
    else if (st != ST_EXACT && s->as_bytes)
        printf(": %" PRIu64 " of %" PRIu64 " %s differ (compared as bytes)", s->not_equal, s->n,
               tm_type_block_elems(p->a->type) > 1 ? "blocks" : "values");
    else if (st != ST_EXACT)
        printf(": %" PRIu64 " of %" PRIu64 " values differ%s, max abs %.6g, max rel %.6g",
               s->not_equal, s->n, st == ST_WITHIN ? " (within tolerance)" : "", s->max_abs,
               s->max_rel);
    if (st == ST_DIFFERS) {
        printf(", first at A");
        print_position(p->a, s->first_a);
        printf(" = B");
        print_position(p->b, s->first_b);
    }
    /* an exact match has no error to measure: nothing about rmse is said */
    if ((st == ST_WITHIN || st == ST_DIFFERS) && quantized(p))
        printf(", rmse %.6g, max error %.4g%% of range", s->n ? sqrt(s->sum_sq / (double)s->n) : 0.0,
               100 * range_share(s));
    putchar('\n');
}

static json_t *pair_json(const pair *p, enum status st, const stats *s)
{
    json_t *j = json_pack("{s:o, s:o, s:s, s:s, s:s, s:o, s:b}", "a", cli_json_str(p->a->name),
                          "b", cli_json_str(p->b->name), "status", status_names[st], "type_a",
                          type_str(p->a->type), "type_b", type_str(p->b->type), "ne",
                          cli_json_ne(p->a), "rows_unpermuted", p->n_head != 0);
    if (p->note)
        json_object_set_new(j, "note", json_string(p->note));
    if (st == ST_SHAPE || st == ST_ERROR) {
        json_object_set_new(j, "error", json_string(s->why));
        return j;
    }
    json_object_set_new(j, "compared_as_bytes", json_boolean(s->as_bytes));
    /* what the counts count: blocks when whole blocks were compared as bytes */
    json_object_set_new(j, "unit", json_string(s->as_bytes && tm_type_block_elems(p->a->type) > 1
                                                   ? "block" : "value"));
    json_object_set_new(j, "n_values", cli_json_u64(s->n));
    json_object_set_new(j, "n_not_equal", cli_json_u64(s->not_equal));
    json_object_set_new(j, "n_differing", cli_json_u64(s->differing));
    if (s->differing) {
        json_object_set_new(j, "first_differing_a", cli_json_u64(s->first_a));
        json_object_set_new(j, "first_differing_b", cli_json_u64(s->first_b));
    }
    json_object_set_new(j, "max_abs", cli_json_f64(s->max_abs));
    json_object_set_new(j, "max_rel", cli_json_f64(s->max_rel));
    json_object_set_new(j, "rmse", cli_json_f64(s->n ? sqrt(s->sum_sq / (double)s->n) : 0.0));
    json_object_set_new(j, "max_error_of_range", cli_json_f64(range_share(s)));
    return j;
}

static const char *format_name(const tm_file *f)
{
    return tm_file_layout(f)->format == TM_FORMAT_GGUF ? "GGUF" : "safetensors";
}

static bool name_ends(tm_str name, const char *suffix)
{
    const uint64_t n = strlen(suffix);
    return name.len >= n && memcmp(name.ptr + name.len - n, suffix, (size_t)n) == 0;
}

/* Hugging Face tensors llama.cpp's converter leaves out on purpose (it computes them). */
static bool dropped_by_converter(tm_str name) { return name_ends(name, ".rotary_emb.inv_freq"); }

/* GGUF tensors the converter writes without a source tensor (from the rope scaling). */
static bool generated_by_converter(tm_str name)
{
    return name.len == 17 && memcmp(name.ptr, "rope_freqs.weight", 17) == 0;
}

/* Which side of a conversion f is: the one the converter drops tensors from (safetensors), the
 * one it adds tensors to (GGUF), or neither (both files of one format). */
enum side { SIDE_SAME, SIDE_SOURCE, SIDE_CONVERTED };

/* The one-sided tensors of f (used[i] false), printed or added to arr; their count, not
 * counting those the converter drops. *unpaired grows by those the conversion does not account
 * for (neither dropped nor generated). */
static uint64_t one_sided(const tm_file *f, const bool *used, enum side side, const char *label,
                          json_t *arr, uint64_t *unpaired)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        if (used[i])
            continue;
        const tm_tensor *t = tm_tensor_at(f, i);
        bool dropped = side == SIDE_SOURCE && dropped_by_converter(t->name);
        bool generated = side == SIDE_CONVERTED && generated_by_converter(t->name);
        n += !dropped;
        *unpaired += !dropped && !generated;
        if (arr) {
            json_array_append_new(arr, json_pack("{s:o, s:s, s:o, s:b, s:b}", "name",
                                                 cli_json_str(t->name), "type", type_str(t->type),
                                                 "ne", cli_json_ne(t), "dropped_by_converter",
                                                 dropped, "generated_by_converter", generated));
            continue;
        }
        char shape[96];
        cli_shape(t, shape, sizeof shape);
        printf("only in %s: ", label);
        cli_print_str(stdout, t->name, 200);
        printf("  [%s, %s]%s\n", type_str(t->type), shape,
               dropped     ? " (the converter drops it: computed at load time)"
               : generated ? " (the converter computes it: no source tensor)"
                           : "");
    }
    return n;
}

/* ---- the command ------------------------------------------------------------------------------ */

/* What the summary adds up. */
typedef struct totals {
    uint64_t count[5];        /* pairs by status */
    uint64_t n_permuted, n_a, n_b, only_a, only_b;
    uint64_t unpaired;        /* one-sided tensors the conversion does not account for */
    bool alone_a, alone_b;    /* A, B is one shard opened alone */
    cli_shard_alone shard_a, shard_b;
} totals;

/* The verdict: match only when every pair matched and nothing is left without a partner. */
enum verdict { V_MATCH, V_MISMATCH, V_INCOMPLETE };
static const char *const verdict_names[] = {"match", "mismatch", "incomplete"};

static enum verdict verdict_of(const totals *t)
{
    if (t->count[ST_DIFFERS] + t->count[ST_SHAPE] + t->count[ST_ERROR])
        return V_MISMATCH;
    return t->unpaired ? V_INCOMPLETE : V_MATCH;
}

static json_t *summary_json(const tm_file *fa, const tm_file *fb, const plan *pl,
                            const totals *t, double tol)
{
    const enum verdict v = verdict_of(t);
    return json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, "
                     "s:o, s:o, s:I, s:I, s:f, s:s, s:b}",
                     "format_a", format_name(fa), "format_b", format_name(fb), "names_mapped",
                     pl->cross, "tensors_a", cli_json_u64(t->n_a), "tensors_b",
                     cli_json_u64(t->n_b), "pairs", cli_json_u64(pl->n_pairs), "exact",
                     cli_json_u64(t->count[ST_EXACT]), "within_tolerance",
                     cli_json_u64(t->count[ST_WITHIN]), "differing",
                     cli_json_u64(t->count[ST_DIFFERS]), "shape_mismatch",
                     cli_json_u64(t->count[ST_SHAPE]), "errors", cli_json_u64(t->count[ST_ERROR]),
                     "only_a", cli_json_u64(t->only_a), "only_b", cli_json_u64(t->only_b),
                     "unpaired", cli_json_u64(t->unpaired), "shard_alone_a",
                     t->alone_a ? cli_shard_alone_json(&t->shard_a) : json_null(),
                     "shard_alone_b", t->alone_b ? cli_shard_alone_json(&t->shard_b) : json_null(),
                     "rows_unpermuted", cli_json_u64(t->n_permuted), "n_head",
                     (json_int_t)pl->n_head, "n_head_kv", (json_int_t)pl->n_head_kv, "tolerance",
                     tol, "result", verdict_names[v], "match", v == V_MATCH);
}

/* The audit's table, as the blog draws it. */
static void print_summary(const plan *pl, const totals *t, double tol)
{
    const uint64_t *c = t->count;
    printf("\nsummary\n");
    printf("  %-36s %" PRIu64 " / %" PRIu64 "\n", "tensors of A accounted for", t->n_a - t->only_a,
           t->n_a);
    printf("  %-36s %" PRIu64 " / %" PRIu64 "\n", "tensors of B accounted for", t->n_b - t->only_b,
           t->n_b);
    if (pl->cross)
        printf("  %-36s %zu pairs\n", "names mapped (Hugging Face to GGUF)", pl->n_pairs);
    if (pl->permute)
        printf("  %-36s undone for %" PRIu64 " tensors\n", "q/k row permutation", t->n_permuted);
    printf("  %-36s %" PRIu64 " / %zu\n", "exact matches", c[ST_EXACT], pl->n_pairs);
    if (tol > 0)
        printf("  %-36s %" PRIu64 " more\n", "within the tolerance", c[ST_WITHIN]);
    if (c[ST_DIFFERS] + c[ST_SHAPE] + c[ST_ERROR])
        printf("  %-36s %" PRIu64 " differ, %" PRIu64 " in shape, %" PRIu64 " not compared\n",
               "mismatches", c[ST_DIFFERS], c[ST_SHAPE], c[ST_ERROR]);
    if (t->unpaired)
        printf("  %-36s %" PRIu64 " without a partner, never compared\n", "unpaired tensors",
               t->unpaired);
    static const char *const words[] = {"match", "MISMATCH", "INCOMPLETE"};
    printf("  %-36s %s\n", "result", words[verdict_of(t)]);
}

/* "A: PATH (FORMAT, N tensors)", and under it, for one shard opened alone, that it is one. */
static void print_side(const char *label, const char *arg, const tm_file *f,
                       const cli_shard_alone *alone)
{
    const uint64_t n = tm_n_tensors(f);
    printf("%s: %s (%s, %" PRIu64 " tensor%s)\n", label, arg, format_name(f), n, CLI_S(n));
    if (alone) {
        fputs("   ", stdout);
        cli_shard_alone_print(stdout, alone);
        putchar('\n');
    }
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tolerance", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double tol = 0;
    bool json = false;
    optind = 1;
    for (int c; (c = cli_getopt(argc, argv, "", opts, &cmd_compare)) != -1;) {
        char *end;
        switch (c) {
        case 't':
            tol = strtod(optarg, &end);
            if (*end || end == optarg || !(tol >= 0) || isinf(tol)) {
                cli_errorf("compare: --tolerance takes a number >= 0, not '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case 'j': json = true; break;
        case 'h': fputs(help, stdout); return CLI_OK;
        default: return cli_usage(&cmd_compare);
        }
    }
    if (argc - optind != 2) {
        cli_errorf("compare: needs two files, A and B");
        return cli_usage(&cmd_compare);
    }
    tm_file *fa = cli_open(argv[optind], 0);
    tm_file *fb = fa ? cli_open(argv[optind + 1], 0) : NULL;
    int rc = CLI_FAIL;
    plan pl = {0};
    bufs bf = {0};
    json_t *root = NULL, *jpairs = NULL;
    if (!fb)
        goto out;

    tm_format fmt_a = tm_file_layout(fa)->format, fmt_b = tm_file_layout(fb)->format;
    pl.cross = fmt_a != fmt_b;
    pl.a_is_st = fmt_a == TM_FORMAT_SAFETENSORS;
    if (pl.cross) {
        const tm_file *gg = pl.a_is_st ? fb : fa;
        tm_str arch = tm_architecture(gg);
        pl.permute = arch.len == 5 && memcmp(arch.ptr, "llama", 5) == 0;
        if (pl.permute && !cli_llama_head_counts(gg, &pl.n_head, &pl.n_head_kv))
            goto out;
    }
    uint64_t na = tm_n_tensors(fa), nb = tm_n_tensors(fb);
    totals t = {.n_a = na, .n_b = nb};
    t.alone_a = cli_shard_alone_of(fa, argv[optind], &t.shard_a);
    t.alone_b = cli_shard_alone_of(fb, argv[optind + 1], &t.shard_b);
    pl.pairs = calloc(na + nb + 1, sizeof *pl.pairs);
    pl.used_a = calloc(na + 1, 1);
    pl.used_b = calloc(nb + 1, 1);
    if (!pl.pairs || !pl.used_a || !pl.used_b) {
        cli_errorf("compare: out of memory");
        goto out;
    }
    if (pl.cross)
        pair_cross(&pl, fa, fb);
    else
        pair_by_name(&pl, fa, fb);

    if (json) {
        root = json_object();
        jpairs = json_array();
        json_object_set_new(root, "pairs", jpairs);
    } else {
        print_side("A", argv[optind], fa, t.alone_a ? &t.shard_a : NULL);
        print_side("B", argv[optind + 1], fb, t.alone_b ? &t.shard_b : NULL);
        if (pl.cross) {
            printf("names: Hugging Face to llama.cpp");
            if (pl.permute)
                printf("; llama: attn_q/attn_k rows un-permuted with n_head %" PRIu64
                       ", n_head_kv %" PRIu64, pl.n_head, pl.n_head_kv);
            printf("\n");
        }
        printf("\n");
    }

    cli_progress pr;
    cli_progress_start(&pr, "compare", "pairs", pl.n_pairs);
    for (size_t i = 0; i < pl.n_pairs; i++) {
        stats s;
        if (i + 1 < pl.n_pairs)
            prefetch_pair(&pl.pairs[i + 1]);
        enum status st = compare_pair(&pl.pairs[i], &bf, tol, &s);
        cli_progress_add(&pr, 1);
        cli_progress_end(&pr); /* wiped before a line is printed; drawn again after it */
        t.count[st]++;
        t.n_permuted += pl.pairs[i].n_head != 0;
        if (json)
            json_array_append_new(jpairs, pair_json(&pl.pairs[i], st, &s));
        else
            print_pair(&pl.pairs[i], st, &s);
    }
    json_t *only_a = json ? json_array() : NULL, *only_b = json ? json_array() : NULL;
    if (!json)
        printf("\n");
    const enum side side_a = !pl.cross ? SIDE_SAME : pl.a_is_st ? SIDE_SOURCE : SIDE_CONVERTED;
    const enum side side_b = !pl.cross ? SIDE_SAME : pl.a_is_st ? SIDE_CONVERTED : SIDE_SOURCE;
    t.only_a = one_sided(fa, pl.used_a, side_a, "A", only_a, &t.unpaired);
    t.only_b = one_sided(fb, pl.used_b, side_b, "B", only_b, &t.unpaired);
    if (json) {
        json_object_set_new(root, "only_a", only_a);
        json_object_set_new(root, "only_b", only_b);
        json_object_set_new(root, "summary", summary_json(fa, fb, &pl, &t, tol));
        rc = cli_json_emit(root);
        root = NULL;
    } else {
        print_summary(&pl, &t, tol);
        rc = cli_finish_output(CLI_OK);
    }
    if (rc == CLI_OK && verdict_of(&t) != V_MATCH)
        rc = CLI_FAIL;
out:
    json_decref(root);
    free(bf.a);
    free(bf.b);
    free(bf.p);
    free(pl.pairs);
    free(pl.used_a);
    free(pl.used_b);
    tm_close(fa);
    tm_close(fb);
    return rc;
}

const cli_command cmd_compare = {
    .name = "compare",
    .alias = NULL,
    .summary = "audit a conversion: decode two checkpoints and compare them tensor by tensor",
    .help = help,
    .run = run,
};
