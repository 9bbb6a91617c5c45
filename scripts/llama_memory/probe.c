/* What llama.cpp allocates for a context, tensor by tensor. Built by scripts/llama_memory.py
 * against a prebuilt libllama (node-llama-cpp's), never by the project's build.
 *
 *   probe MODEL [N_CTX N_SEQ TYPE_K TYPE_V N_UBATCH SWA_FULL KV_UNIFIED] ...
 *
 * Loads MODEL once (no weights on a GPU), then for each group of seven creates a context
 * and prints a JSON line: the bytes of every cache tensor llama.cpp made for it, summed by
 * kind (cache_k_*, cache_v_*, cache_r_*, cache_s_*, and any other cache_*), and the cells and
 * layers its log reports; then, once the context is made, a line with the compute buffer it
 * reserved (or a line with the error that stopped it). The byte counts are ggml_nbytes
 * of the tensors themselves, taken as llama.cpp hands them to the allocator, so they are exact
 * where the log's "%.2f MiB" is not. A model that does not load prints {"error": ...}. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

static unsigned long long k_bytes, v_bytes, r_bytes, s_bytes, other_bytes, n_tensors;
static char log_lines[1 << 16];
static int cache_printed;
static size_t log_len;

/* Every cache tensor passes through here on its way to a buffer; the model's own weights do
 * too (when not mapped) and are told apart by name. */
ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context *ctx,
                                                               ggml_backend_buffer_type_t buft)
{
    static ggml_backend_buffer_t (*real)(struct ggml_context *, ggml_backend_buffer_type_t);
    if (!real)
        real = (ggml_backend_buffer_t (*)(struct ggml_context *, ggml_backend_buffer_type_t))
            dlsym(RTLD_NEXT, "ggml_backend_alloc_ctx_tensors_from_buft");
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (strncmp(t->name, "cache_", 6) != 0 || t->view_src)
            continue;
        unsigned long long n = ggml_nbytes(t);
        const char *kind = t->name + 6;
        n_tensors++;
        if (kind[0] == 'k' && kind[1] == '_')
            k_bytes += n;
        else if (kind[0] == 'v' && kind[1] == '_')
            v_bytes += n;
        else if (kind[0] == 'r' && kind[1] == '_')
            r_bytes += n;
        else if (kind[0] == 's' && kind[1] == '_')
            s_bytes += n;
        else
            other_bytes += n;
        fprintf(stderr, "probe: %s %s %lld %lld %lld %llu\n", t->name, ggml_type_name(t->type),
                (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], n);
    }
    return real(ctx, buft);
}

static void json_log_line(const char *key);

/* The cache as allocated so far, as the rest of one JSON line. */
static void print_cache(void)
{
    cache_printed = 1;
    printf(", \"k\": %llu, \"v\": %llu, \"r\": %llu, \"s\": %llu, \"other\": %llu, "
           "\"tensors\": %llu, \"kv_log\": ", k_bytes, v_bytes, r_bytes, s_bytes, other_bytes,
           n_tensors);
    json_log_line("llama_kv_cache: size =");
    printf(", \"rs_log\": ");
    json_log_line("llama_memory_recurrent: size =");
    printf("}\n");
    fflush(stdout);
}

/* The memory is whole when llama.cpp starts reserving its graphs: the cache is printed then,
 * so that a model whose graph cannot be built here (an optional tensor this file lacks) still
 * tells what its cache took. */
static void on_log(enum ggml_log_level level, const char *text, void *data)
{
    (void)level, (void)data;
    fputs(text, stderr);
    size_t n = strlen(text);
    if (log_len + n < sizeof log_lines) {
        memcpy(log_lines + log_len, text, n);
        log_len += n;
        log_lines[log_len] = '\0';
    }
    if (strstr(text, "sched_reserve: reserving ..."))
        print_cache();
}

static enum ggml_type type_named(const char *name)
{
    for (int t = 0; t < GGML_TYPE_COUNT; t++)
        if (ggml_type_name((enum ggml_type)t) && strcmp(ggml_type_name((enum ggml_type)t), name) == 0)
            return (enum ggml_type)t;
    fprintf(stderr, "probe: no type %s\n", name);
    exit(2);
}

/* The last line of the log that starts with key (after the function name), printed as a JSON
 * string, or null. */
static void json_log_line(const char *key)
{
    const char *hit = NULL;
    for (const char *p = log_lines; (p = strstr(p, key)); p++)
        hit = p;
    if (!hit) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *hit && *hit != '\n'; hit++)
        if (*hit == '"' || *hit == '\\')
            printf("\\%c", *hit);
        else if ((unsigned char)*hit >= 0x20)
            putchar(*hit);
    putchar('"');
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc - 2) % 7 != 0) {
        fprintf(stderr, "usage: probe MODEL [N_CTX N_SEQ TYPE_K TYPE_V N_UBATCH SWA_FULL "
                        "KV_UNIFIED]...\n");
        return 2;
    }
    llama_log_set(on_log, NULL);
    llama_backend_init();
    /* the CPU backend is a plugin beside the library (one per instruction set) */
    ggml_backend_load_all_from_path(getenv("PROBE_BACKENDS"));
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        printf("{\"error\": ");
        json_log_line("error loading model");
        printf("}\n");
        return 1;
    }
    for (int i = 2; i < argc; i += 7) {
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = (uint32_t)strtoul(argv[i], NULL, 10);
        cp.n_seq_max = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        cp.type_k = type_named(argv[i + 2]);
        cp.type_v = type_named(argv[i + 3]);
        cp.n_ubatch = (uint32_t)strtoul(argv[i + 4], NULL, 10);
        cp.n_batch = cp.n_ubatch > 2048 ? cp.n_ubatch : 2048;
        cp.swa_full = atoi(argv[i + 5]) != 0;
        cp.kv_unified = atoi(argv[i + 6]) != 0;
        cp.n_threads = cp.n_threads_batch = 1;
        k_bytes = v_bytes = r_bytes = s_bytes = other_bytes = n_tensors = 0;
        log_len = 0;
        log_lines[0] = '\0';
        cache_printed = 0;
        printf("{\"n_ctx\": %s, \"n_seq\": %s, \"type_k\": \"%s\", \"type_v\": \"%s\", "
               "\"n_ubatch\": %s, \"swa_full\": %s, \"kv_unified\": %s", argv[i], argv[i + 1],
               argv[i + 2], argv[i + 3], argv[i + 4], atoi(argv[i + 5]) ? "true" : "false",
               atoi(argv[i + 6]) ? "true" : "false");
        fflush(stdout);
        struct llama_context *ctx = llama_init_from_model(model, cp);
        if (!ctx) {
            printf("%s\"error\": ", cache_printed ? "{" : ", ");
            json_log_line("llama_init_from_model");
            printf("}\n");
            continue;
        }
        if (!cache_printed)
            printf(", \"no_memory\": true}\n");
        printf("{\"n_ctx_allocated\": %u, \"compute_log\": ", llama_n_ctx(ctx));
        json_log_line("compute buffer size =");
        printf("}\n");
        fflush(stdout);
        llama_free(ctx);
    }
    llama_model_free(model);
    return 0;
}
