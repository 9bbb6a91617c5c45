/* The memory llama.cpp allocates for a context (tools/cli/memory.c), and the whole plan around
 * it (tools/cli/plan.c): weights by placement, the cache, a compute-buffer estimate. */
#ifndef TENSORMAP_CLI_MEMORY_H
#define TENSORMAP_CLI_MEMORY_H

#include "cli.h"

enum { CLI_MEMORY_MAX_LAYERS = 512 }; /* llama.cpp's LLAMA_MAX_LAYERS */

/* What llama.cpp is asked for: its llama_context_params, as llama-server defaults them. */
typedef struct cli_memory_opts {
    uint64_t context;  /* tokens; 0: the trained context */
    uint32_t n_seq;    /* --parallel: sequences, each with its own cells */
    uint32_t n_ubatch; /* the micro-batch (512), which the sliding-window cache holds extra */
    tm_type type_k, type_v;
    bool swa_full;     /* sliding-window layers hold the whole context */
    bool kv_unified;   /* one stream of cells shared by the sequences (llama.cpp's --kv-unified) */
} cli_memory_opts;

typedef struct cli_memory_t {
    bool known;        /* false: why says so (an architecture not modelled, a refused type) */
    char why[512];
    const char *layout; /* "attention", "sliding window", "recurrent", "hybrid" */
    uint64_t asked, context; /* the context asked (0: trained) and the one taken */
    uint64_t n_ctx, cells;   /* llama.cpp's padded n_ctx, and the cells of each stream */
    uint32_t n_seq, streams; /* sequences; streams of cells: one, or one per sequence */
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
    uint64_t layer_bytes[CLI_MEMORY_MAX_LAYERS]; /* of it, each layer's (its device holds it) */
} cli_memory_t;

bool cli_memory_plan(const tm_file *f, const cli_memory_opts *o, cli_memory_t *m);
/* "llama, qwen2, ...": the architectures cli_memory_plan models. */
const char *cli_memory_known_archs(void);

/* A safetensors checkpoint's dimensions from the config.json beside it (tools/cli/hfconfig.c),
 * as a header-only GGUF for cli_memory_plan to read; NULL with why said when it is absent,
 * unreadable, or of a model type not mapped. Close it with tm_close. */
tm_file *cli_config_model(const char *model_path, char *why, size_t why_size);

/* The plan: [0] the CPU's bytes, [1] the GPU's, with the last gpu_layers of the block_count
 * repeating layers and the output layer offloaded, as llama.cpp places them. */
typedef struct cli_plan_t {
    uint32_t gpu_layers;
    uint64_t gpu_start;   /* the first offloaded block */
    struct {
        tm_type type;
        uint64_t bytes[2];
    } types[CLI_MAX_TYPES];
    size_t n_types;
    uint64_t weights[2], cache[2], total[2];
    uint64_t tied_copy;   /* token_embd copied for the output on the GPU */
    uint64_t compute;     /* an estimate, not worked out from the graph */
} cli_plan_t;
/* weights: the file whose tensors are placed; meta: the one whose metadata sized m (the same
 * file, or a safetensors checkpoint's config) */
void cli_plan_make(const tm_file *weights, const tm_file *meta, const cli_memory_t *m,
                   uint32_t gpu_layers, cli_plan_t *p);
/* The largest context (a multiple of 256 per sequence) whose plan fits budget bytes: on the
 * GPU with layers offloaded, over everything without; 0 when even 256 cells do not. False
 * when the memory is unknown (m->why). m is left the memory at the answer. */
bool cli_plan_fit(const tm_file *weights, const tm_file *meta, const cli_memory_opts *o,
                  uint32_t gpu_layers, uint64_t budget, uint64_t *context, cli_memory_t *m);

/* info's rows for it (context_given: the context was asked, not the trained one), and its
 * JSON: the `memory` object, and the older `kv_cache` object (K and V only). */
void cli_memory_print(const cli_memory_t *m, bool context_given);
void cli_plan_print(const cli_plan_t *p, const cli_memory_t *m);
json_t *cli_plan_json(const cli_plan_t *p);
json_t *cli_memory_json(const cli_memory_t *m);
json_t *cli_memory_kv_json(const cli_memory_t *m);

#endif
