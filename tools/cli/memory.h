/* The memory llama.cpp allocates for a context (tools/cli/memory.c), and the whole plan around
 * it (tools/cli/plan.c): weights by placement, the cache, a compute-buffer estimate. */
#ifndef TENSORMAP_CLI_MEMORY_H
#define TENSORMAP_CLI_MEMORY_H

#include "cli_util.h"

enum { CLI_MEMORY_MAX_LAYERS = 512 }; /* llama.cpp's LLAMA_MAX_LAYERS */

/* What llama.cpp is asked for: its llama_context_params, as llama-server defaults them. */
typedef struct cli_memory_opts {
    uint64_t context;  /* tokens; 0: the trained context */
    uint32_t n_seq;    /* --parallel: sequences, each with its own cells */
    uint32_t n_ubatch; /* the micro-batch (512), which the sliding-window cache holds extra */
    tm_type type_k, type_v;
    bool swa_full;     /* sliding-window layers hold the whole context */
} cli_memory_opts;

typedef struct cli_memory_t {
    bool known;        /* false: why says so (an architecture not modelled, a refused type) */
    char why[512];
    const char *layout; /* "attention", "sliding window", "recurrent", "hybrid" */
    uint64_t asked, context; /* the context asked (0: trained) and the one taken */
    uint64_t n_ctx, cells;   /* llama.cpp's padded n_ctx, and the cells of each sequence */
    uint32_t n_seq;
    uint64_t n_ubatch;       /* as llama.cpp clamps it: at most the context */
    tm_type type_k, type_v;
    uint64_t layers, nextn_layers;
    /* the KV cache */
    uint64_t kv_layers, swa_layers, shared_layers, window, swa_cells;
    uint64_t kv_heads, key_length, value_length; /* the first cached layer's */
    bool uneven, mla;
    uint64_t k_bytes, v_bytes;
    /* the recurrent state (f32) */
    uint64_t recr_layers, r_bytes, s_bytes;
    uint64_t bytes; /* all of it */
} cli_memory_t;

bool cli_memory_plan(const tm_file *f, const cli_memory_opts *o, cli_memory_t *m);
/* "llama, qwen2, ...": the architectures cli_memory_plan models. */
const char *cli_memory_known_archs(void);

/* info's rows for it (context_given: the context was asked, not the trained one), and its
 * JSON: the `memory` object, and the older `kv_cache` object (K and V only). */
void cli_memory_print(const cli_memory_t *m, bool context_given);
json_t *cli_memory_json(const cli_memory_t *m);
json_t *cli_memory_kv_json(const cli_memory_t *m);

#endif
