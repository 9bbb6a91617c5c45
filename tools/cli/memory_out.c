/* The memory at a context in words (info's rows) and as JSON (info --json's `memory`). */
#include "memory.h"

#include <inttypes.h>
#include <stdarg.h>

static void row(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row(const char *label, const char *fmt, ...)
{
    printf("  %-26s", label);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* "4,194,304 bytes (4 MiB)" */
static const char *bytes_text(uint64_t n, char *buf, size_t size)
{
    char exact[32], words[32];
    cli_grouped(n, exact, sizeof exact);
    cli_bytes_words(n, words, sizeof words);
    snprintf(buf, size, "%s bytes (%s)", exact, words);
    return buf;
}

static void print_types(const cli_memory_t *m, char *buf, size_t size)
{
    if (m->mla)
        snprintf(buf, size, "K in %s (MLA: no V)", tm_type_name(m->type_k));
    else if (m->type_k == m->type_v)
        snprintf(buf, size, "K and V in %s", tm_type_name(m->type_k));
    else
        snprintf(buf, size, "K in %s, V in %s", tm_type_name(m->type_k), tm_type_name(m->type_v));
}

void cli_memory_print(const cli_memory_t *m, bool context_given)
{
    char ctx[32], cells[32], b[96], types[96];
    cli_grouped(m->known ? m->context : m->asked, ctx, sizeof ctx);
    if (!m->known) {
        if (m->asked)
            row("KV cache", "at %s tokens: %s", ctx, m->why);
        else
            row("KV cache", "%s", m->why);
        return;
    }
    cli_grouped(m->n_ctx, cells, sizeof cells);
    char at[160];
    int n = snprintf(at, sizeof at, "at %s tokens%s", ctx,
                     context_given ? "" : " (the trained context)");
    if (m->n_ctx != m->context || m->n_seq > 1)
        snprintf(at + n, sizeof at - (size_t)n, " (%s cells%s)", cells,
                 m->streams > 1 ? ", split between the sequences"
                 : m->n_seq > 1 ? ", shared by the sequences" : "");
    print_types(m, types, sizeof types);
    if (m->kv_layers) {
        row("KV cache", "%s %s, %s", bytes_text(m->k_bytes + m->v_bytes, b, sizeof b), at, types);
        if (m->uneven)
            row("", "%" PRIu64 " layer%s, heads and widths differing between them", m->kv_layers,
                CLI_S(m->kv_layers));
        else if (m->mla)
            row("", "%" PRIu64 " layer%s x %" PRIu64 " values per token (the compressed latent "
                "and the rope part)", m->kv_layers, CLI_S(m->kv_layers),
                m->kv_heads * m->key_length);
        else
            row("", "%" PRIu64 " layer%s x %" PRIu64 " key/value head%s x (%" PRIu64 " + %" PRIu64
                ") values per token", m->kv_layers, CLI_S(m->kv_layers), m->kv_heads,
                CLI_S(m->kv_heads), m->key_length, m->value_length);
        if (m->swa_layers)
            row("", "%" PRIu64 " of them slide over a window of %" PRIu64 " tokens: %" PRIu64
                " cells each%s", m->swa_layers, m->window, m->swa_cells,
                m->streams > 1 ? " per sequence" : "");
        if (m->shared_layers)
            row("", "%" PRIu64 " more layer%s reuse an earlier layer's cache", m->shared_layers,
                CLI_S(m->shared_layers));
        if (m->streams > 1)
            row("", "%" PRIu32 " sequences of %" PRIu64 " cells each", m->n_seq, m->cells);
    } else if (m->layout[0] != 'r') {
        row("KV cache", "none %s: no layer attends", at);
    }
    if (m->recr_layers) {
        row("recurrent state", "%s for %" PRIu32 " sequence%s, the same at any context",
            bytes_text(m->r_bytes + m->s_bytes, b, sizeof b), m->n_seq, CLI_S(m->n_seq));
        row("", "%" PRIu64 " layer%s in f32: %s of convolution or token shift, %s of state",
            m->recr_layers, CLI_S(m->recr_layers), bytes_text(m->r_bytes, b, sizeof b),
            bytes_text(m->s_bytes, types, sizeof types));
    }
    if (m->recr_layers && m->kv_layers)
        row("memory", "%s in all", bytes_text(m->bytes, b, sizeof b));
}

json_t *cli_memory_kv_json(const cli_memory_t *m)
{
    if (!m->known)
        return json_pack("{s:b, s:o, s:s, s:s}", "known", 0, "context", cli_json_u64(m->asked),
                         "type", tm_type_name(m->type_k), "why", m->why);
    return json_pack("{s:b, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o}", "known", 1,
                     "context", cli_json_u64(m->context), "type", tm_type_name(m->type_k),
                     "bytes", cli_json_u64(m->k_bytes + m->v_bytes), "layers",
                     cli_json_u64(m->kv_layers), "kv_heads", cli_json_u64(m->kv_heads),
                     "key_length", cli_json_u64(m->key_length), "value_length",
                     cli_json_u64(m->value_length), "uneven_layers", m->uneven,
                     "sliding_window_layers", cli_json_u64(m->swa_layers), "sliding_window",
                     m->swa_layers ? cli_json_u64(m->window) : json_null());
}

json_t *cli_memory_json(const cli_memory_t *m)
{
    if (!m->known)
        return json_pack("{s:b, s:o, s:s, s:s, s:s}", "known", 0, "context",
                         cli_json_u64(m->asked), "type_k", tm_type_name(m->type_k), "type_v",
                         tm_type_name(m->type_v), "why", m->why);
    json_t *kv = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b}", "layers",
        cli_json_u64(m->kv_layers), "k_bytes", cli_json_u64(m->k_bytes), "v_bytes",
        cli_json_u64(m->v_bytes), "sliding_window_layers", cli_json_u64(m->swa_layers),
        "sliding_window", m->swa_layers ? cli_json_u64(m->window) : json_null(),
        "sliding_window_cells", m->swa_layers ? cli_json_u64(m->swa_cells) : json_null(),
        "shared_layers", cli_json_u64(m->shared_layers), "kv_heads", cli_json_u64(m->kv_heads),
        "key_length", cli_json_u64(m->key_length), "uneven_layers", m->uneven, "mla", m->mla);
    json_t *rs = json_pack("{s:o, s:o, s:o}", "layers", cli_json_u64(m->recr_layers), "r_bytes",
                           cli_json_u64(m->r_bytes), "s_bytes", cli_json_u64(m->s_bytes));
    return json_pack("{s:b, s:s, s:o, s:o, s:o, s:o, s:i, s:i, s:o, s:s, s:s, s:o, s:o, s:o, "
                     "s:o}",
                     "known", 1, "layout", m->layout, "context", cli_json_u64(m->context),
                     "n_ctx", cli_json_u64(m->n_ctx), "cells_per_stream",
                     cli_json_u64(m->cells), "n_ubatch", cli_json_u64(m->n_ubatch), "n_seq",
                     (int)m->n_seq, "streams", (int)m->streams, "layers", cli_json_u64(m->layers), "type_k",
                     tm_type_name(m->type_k), "type_v", tm_type_name(m->type_v), "kv", kv,
                     "recurrent", rs, "nextn_layers", cli_json_u64(m->nextn_layers), "bytes",
                     cli_json_u64(m->bytes));
}

/* "4,194,304 bytes (4 MiB): weights 1, cache 2, compute 3 (an estimate)" */
static void device_row(const char *label, const cli_plan_t *p, int d, bool compute_here)
{
    char b[96], w[32], c[32], e[32];
    cli_grouped(p->weights[d], w, sizeof w);
    cli_grouped(p->cache[d], c, sizeof c);
    cli_grouped(compute_here ? p->compute : 0, e, sizeof e);
    row(label, "%s: weights %s, cache %s%s%s%s", bytes_text(p->total[d], b, sizeof b), w, c,
        compute_here ? ", compute ~" : "", compute_here ? e : "",
        compute_here ? " (an estimate)" : "");
}

void cli_plan_print(const cli_plan_t *p, const cli_memory_t *m)
{
    char b[96];
    uint64_t blocks = m->layers, on_gpu = blocks > p->gpu_start ? blocks - p->gpu_start : 0;
    /* rows of "what it takes to hold it": where llama.cpp would place it all */
    if (p->gpu_layers == 0)
        row("placement", "everything on the CPU (--gpu-layers 0)");
    else
        row("placement", "%" PRIu64 " of %" PRIu64 " blocks and the output layer "
            "on the GPU (--gpu-layers %" PRIu32 "); the input embedding stays on the CPU", on_gpu,
            blocks, p->gpu_layers);
    for (size_t i = 0; p->gpu_layers && i < p->n_types; i++) {
        const char *tn = tm_type_name(p->types[i].type);
        char label[40], cpu[32], gpu[32];
        snprintf(label, sizeof label, "  %s", tn ? tn : "unknown");
        cli_grouped(p->types[i].bytes[0], cpu, sizeof cpu);
        cli_grouped(p->types[i].bytes[1], gpu, sizeof gpu);
        row(label, "%s bytes on the CPU, %s on the GPU", cpu, gpu);
    }
    if (p->tied_copy)
        row("", "the output reuses token_embd: the GPU holds a copy of it");
    device_row("on the CPU", p, 0, p->gpu_layers == 0);
    if (p->gpu_layers)
        device_row("on the GPU", p, 1, true);
    row("total", "%s", bytes_text(p->total[0] + p->total[1], b, sizeof b));
}

json_t *cli_plan_json(const cli_plan_t *p)
{
    json_t *types = json_array();
    for (size_t i = 0; types && i < p->n_types; i++) {
        const char *tn = tm_type_name(p->types[i].type);
        json_array_append_new(types, json_pack("{s:s, s:o, s:o}", "type", tn ? tn : "unknown",
                                               "cpu_bytes", cli_json_u64(p->types[i].bytes[0]),
                                               "gpu_bytes", cli_json_u64(p->types[i].bytes[1])));
    }
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o, s:o}",
                     "gpu_layers", (int)p->gpu_layers, "types", types, "cpu_weights",
                     cli_json_u64(p->weights[0]), "gpu_weights", cli_json_u64(p->weights[1]),
                     "cpu_cache", cli_json_u64(p->cache[0]), "gpu_cache",
                     cli_json_u64(p->cache[1]), "compute_estimate", cli_json_u64(p->compute),
                     "compute_on", json_string(p->gpu_layers ? "gpu" : "cpu"), "estimate", 1,
                     "cpu_total", cli_json_u64(p->total[0]), "gpu_total",
                     cli_json_u64(p->total[1]), "total",
                     cli_json_u64(p->total[0] + p->total[1]));
}
