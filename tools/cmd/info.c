/* tensormap info: the header of a model file in the words a person reads it in: the front of
 * the file, what the metadata says the model is, the numbers people ask first (parameters,
 * bits per weight, the KV cache at a context), and where the header stops and the data starts.
 * Every number is a field of the file, the library's layout, or counted from them. */
#include "../cli/cli.h"
#include "../cli/memory.h"
#include "../cli/shard_alone.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

static const char help[] =
    "usage: tensormap info [--json] [--context N | --fit BYTES] [--kv-type TYPE] [--parallel N]\n"
    "                      [--gpu-layers N] FILE\n"
    "\n"
    "Show what a GGUF or safetensors file holds: its size; for GGUF the magic, version, tensor\n"
    "and metadata counts, the architecture and its dimensions (blocks, embedding width,\n"
    "attention heads, key/value heads, feed-forward width, trained context, vocabulary size,\n"
    "merges) and the head width; then the parameter count (exact and in words, 7.62 B), the\n"
    "bits per weight over the whole file and per tensor type, and the memory llama.cpp\n"
    "allocates at a context (the trained context unless --context says otherwise): its KV\n"
    "cache and recurrent state, cell for cell as llama.cpp pads and splits them; then where the\n"
    "header ends and the tensor data starts. For safetensors: the header's length, the tensor\n"
    "and __metadata__ counts, the parameters and bits per weight, and where the data starts.\n"
    "The memory is worked out for the architectures whose layout is modelled (plain attention,\n"
    "sliding windows, MLA, recurrent and hybrid models; docs/memory.md lists them) and said to\n"
    "be unknown, by name, for any other. FILE - reads standard input.\n"
    "\n"
    "  --context N       the memory at N tokens (llama.cpp allocates a multiple of 256)\n"
    "  --kv-type TYPE    the type K and V are cached in: f16 (default), bf16, f32, q8_0, q4_0,\n"
    "                    q4_1, q5_0, q5_1 or iq4_nl\n"
    "  --type-k TYPE, --type-v TYPE  K or V alone (llama.cpp's -ctk, -ctv)\n"
    "  --parallel N      N sequences, each with its own cells (llama.cpp's -np)\n"
    "  --ubatch N        the micro-batch (512), which sliding-window caches hold extra\n"
    "  --swa-full        sliding-window layers hold the whole context (llama.cpp's --swa-full)\n"
    "  --kv-unified      the sequences share one stream of cells (llama.cpp's --kv-unified)\n"
    "  --gpu-layers N    the plan with the last N layers (and the output) on a GPU (-ngl)\n"
    "  --fit BYTES       the largest context whose plan fits BYTES (8GiB, 512MiB, 12GB, or\n"
    "                    bytes; read as every size: see tensormap help split): on the GPU\n"
    "                    with --gpu-layers, over everything without\n"
    "  --json            the same as one JSON object (a dimension the file lacks is null)\n";

/* The architecture's dimensions, as `<arch>.<suffix>` keys. */
static const struct dim {
    const char *suffix, *label, *json;
} dims[] = {
    {"block_count", "blocks in the stack", "block_count"},
    {"embedding_length", "embedding width", "embedding_length"},
    {"attention.head_count", "attention heads", "head_count"},
    {"attention.head_count_kv", "key and value heads", "head_count_kv"},
    {"feed_forward_length", "feed-forward width", "feed_forward_length"},
    {"context_length", "trained context", "context_length"},
};
enum { N_DIMS = sizeof dims / sizeof dims[0], DIM_EMBD = 1, DIM_HEADS = 2 };

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

/* The element count of an array entry (the vocabulary is the token array's count). */
static bool array_count(const tm_file *f, const char *key, uint64_t *n)
{
    const tm_kv *kv = tm_kv_find(f, key);
    if (!kv || kv->type != TM_V_ARRAY)
        return false;
    *n = kv->count;
    return true;
}

/* A dimension as text: its number, or what the entry is instead (some architectures store a
 * per-layer array of head counts). */
static void print_dim(const tm_kv *kv, const char *label)
{
    uint64_t v;
    if (!kv)
        row(label, "(not in the file)");
    else if (tm_kv_get_uint(kv, &v) == TM_OK)
        row(label, "%" PRIu64, v);
    else if (kv->type == TM_V_ARRAY)
        row(label, "one per layer: an array of %" PRIu64 " %s", kv->count,
            tm_vtype_name(kv->elem_type));
    else
        row(label, "(a %s, not a count)", tm_vtype_name(kv->type));
}

/* What the model needs: parameters, bits per weight, the KV cache (GGUF only). */
typedef struct numbers {
    cli_weights w;
    bool has_kv;
    cli_memory_opts mo;
    cli_memory_t mem;
    cli_plan_t plan;
    uint32_t gpu_layers;
    bool fit;             /* --fit: the context is the largest that fits `budget` */
    bool fit_known;
    uint64_t budget, fit_context; /* 0: not even 256 cells fit */
    bool from_config;     /* a safetensors checkpoint's dimensions came from its config.json */
    bool context_given;
} numbers;

static double bits_per_weight(uint64_t bytes, uint64_t weights)
{
    return weights ? (double)bytes * 8 / (double)weights : 0;
}

static void print_numbers(const numbers *nb)
{
    char exact[32], words[32], bpw[32];
    printf("what it takes to hold it\n");
    cli_grouped(nb->w.params, exact, sizeof exact);
    cli_count_words(nb->w.params, words, sizeof words);
    row("parameters", "%s (%s)", exact, words);
    snprintf(bpw, sizeof bpw, "%.2f", bits_per_weight(nb->w.bytes, nb->w.params));
    cli_grouped(nb->w.bytes, exact, sizeof exact);
    row("bits per weight", "%s over all %s bytes of tensors", bpw, exact);
    for (size_t i = 0; i < nb->w.n_types; i++) {
        const char *tn = tm_type_name(nb->w.types[i].type);
        char label[40];
        snprintf(label, sizeof label, "  %s", tn ? tn : "unknown");
        cli_float_text(bits_per_weight(nb->w.types[i].bytes, nb->w.types[i].weights), false, bpw,
                       sizeof bpw);
        cli_count_words(nb->w.types[i].weights, words, sizeof words);
        row(label, "%s bits, %s weights in %" PRIu64 " tensor%s", bpw, words,
            nb->w.types[i].tensors, CLI_S(nb->w.types[i].tensors));
    }
    if (!nb->has_kv)
        return;
    if (nb->fit) {
        char b[32], c[32];
        cli_grouped(nb->budget, b, sizeof b);
        cli_grouped(nb->mem.context, c, sizeof c);
        if (!nb->fit_known)
            row("fit", "in %s bytes: %s", b, nb->mem.why);
        else if (nb->fit_context == 0)
            row("fit", "in %s bytes: not even 256 tokens", b);
        else
            row("fit", "in %s bytes%s: at most %s tokens", b,
                nb->gpu_layers ? " of GPU memory" : "", c);
        if (!nb->fit_known || nb->fit_context == 0)
            return;
    }
    cli_memory_print(&nb->mem, nb->context_given || nb->fit);
    if (nb->from_config && nb->mem.known)
        row("", "the dimensions from config.json, as llama.cpp's converter maps them");
    if (nb->mem.known)
        cli_plan_print(&nb->plan, &nb->mem);
}

static json_t *numbers_json(const numbers *nb)
{
    char words[32];
    cli_count_words(nb->w.params, words, sizeof words);
    json_t *types = json_array();
    for (size_t i = 0; types && i < nb->w.n_types; i++) {
        const char *tn = tm_type_name(nb->w.types[i].type);
        json_array_append_new(
            types, json_pack("{s:s, s:o, s:o, s:o, s:o}", "type", tn ? tn : "unknown", "tensors",
                             cli_json_u64(nb->w.types[i].tensors), "weights",
                             cli_json_u64(nb->w.types[i].weights), "bytes",
                             cli_json_u64(nb->w.types[i].bytes), "bits_per_weight",
                             cli_json_f64(bits_per_weight(nb->w.types[i].bytes,
                                                          nb->w.types[i].weights))));
    }
    json_t *kv = nb->has_kv ? cli_memory_kv_json(&nb->mem) : json_null();
    json_t *mem = nb->has_kv ? cli_memory_json(&nb->mem) : json_null();
    if (json_is_object(mem) && nb->mem.known)
        json_object_set_new(mem, "plan", cli_plan_json(&nb->plan));
    if (json_is_object(mem) && nb->fit)
        json_object_set_new(mem, "fit", json_pack("{s:o, s:o}", "budget", cli_json_u64(nb->budget),
                                                  "context", nb->fit_known
                                                      ? cli_json_u64(nb->fit_context)
                                                      : json_null()));
    return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o}", "parameters", cli_json_u64(nb->w.params),
                     "parameters_in_words", words, "bits_per_weight",
                     cli_json_f64(bits_per_weight(nb->w.bytes, nb->w.params)), "types", types,
                     "kv_cache", kv, "memory", mem);
}

static bool head_width(const tm_file *f, uint64_t *embd, uint64_t *heads)
{
    return tm_kv_get_uint(tm_arch_key(f, dims[DIM_EMBD].suffix), embd) == TM_OK &&
           tm_kv_get_uint(tm_arch_key(f, dims[DIM_HEADS].suffix), heads) == TM_OK && *heads;
}

/* A sharded checkpoint or split set: every shard's own numbers (the file layout holds totals).
 * Header bytes are the JSON's for safetensors, everything before the data for GGUF. */
static void print_shards(const tm_file *f, const tm_layout *l)
{
    printf("every shard\n  %-5s %14s %8s %14s %14s  %s\n", "shard", "header bytes", "tensors",
           "data bytes", "file bytes", "path");
    for (uint32_t i = 0; i < l->n_shards; i++) {
        const tm_layout *s = tm_shard_layout(f, i);
        printf("  %-5" PRIu32 " %14" PRIu64 " %8" PRIu64 " %14" PRIu64 " %14" PRIu64 "  ", i,
               s->format == TM_FORMAT_SAFETENSORS ? s->kv_end - 8 : s->data_start, s->n_tensors,
               s->data_size, s->file_size);
        cli_print_text(stdout, tm_shard_path(f, i)); /* named by an index or a file name */
        putchar('\n');
    }
}

static void print_gguf(const tm_file *f, const tm_layout *l, const numbers *nb)
{
    printf("the four numbers at the front\n");
    row("magic", "%.4s", (const char *)tm_file_bytes(f));
    row("version", "%" PRIu32, l->version);
    row("tensors", "%" PRIu64, l->n_tensors);
    row("metadata entries", "%" PRIu64, l->n_kv);

    printf("what the metadata says the model is\n");
    tm_str arch = tm_architecture(f), name;
    if (arch.ptr) {
        printf("  %-26s", "architecture");
        cli_print_str(stdout, arch, 200);
        putchar('\n');
    } else {
        row("architecture", "(none: general.architecture is absent or not a string)");
    }
    if (tm_kv_get_str(tm_kv_find(f, "general.name"), &name) == TM_OK) {
        printf("  %-26s", "name");
        cli_print_str(stdout, name, 200);
        putchar('\n');
    }
    if (arch.ptr)
        for (int i = 0; i < N_DIMS; i++)
            print_dim(tm_arch_key(f, dims[i].suffix), dims[i].label);
    uint64_t n;
    if (array_count(f, "tokenizer.ggml.tokens", &n))
        row("vocabulary", "%" PRIu64 " tokens", n);
    if (array_count(f, "tokenizer.ggml.merges", &n))
        row("merges", "%" PRIu64, n);
    uint64_t embd, heads;
    if (arch.ptr && head_width(f, &embd, &heads)) {
        if (embd % heads == 0)
            row("head width", "%" PRIu64 " (embedding width / attention heads)", embd / heads);
        else
            row("head width", "none: %" PRIu64 " / %" PRIu64 " leaves %" PRIu64, embd, heads,
                embd % heads);
    }
    print_numbers(nb);
    printf("where the header stops\n");
    row("alignment", "%" PRIu32 "%s", l->alignment,
        l->alignment_declared ? ", declared in general.alignment"
                              : ", not declared: the format's default");
    if (l->n_shards > 1) {
        row("shards", "%" PRIu32 " files of a split set; the counts above are totals over them",
            l->n_shards);
        row("tensor data", "%" PRIu64 " bytes", l->data_size);
        print_shards(f, l);
        return;
    }
    row("metadata ends at", "%" PRIu64, l->kv_end);
    row("last tensor info ends at", "%" PRIu64, l->infos_end);
    row("padding", "%" PRIu64, l->padding);
    row("tensor data starts at", "%" PRIu64, l->data_start);
    row("tensor data", "%" PRIu64 " bytes; the last tensor ends at %" PRIu64, l->data_size,
        l->data_start + l->tensors_end);
}

static void print_safetensors(const tm_file *f, const tm_layout *l, const numbers *nb)
{
    printf("safetensors\n");
    print_numbers(nb);
    if (l->n_shards > 1) {
        /* the file layout holds totals over the shards; each shard's own comes from its layout */
        row("shards", "%" PRIu32 " files; the numbers below are totals over them", l->n_shards);
        row("tensors", "%" PRIu64, l->n_tensors);
        row("metadata entries", "%" PRIu64, l->n_kv);
        row("tensor data", "%" PRIu64 " bytes", l->data_size);
        print_shards(f, l);
        return;
    }
    row("header length", "%" PRIu64 " bytes of JSON after the 8-byte length", l->kv_end - 8);
    row("tensors", "%" PRIu64, l->n_tensors);
    row("metadata entries", "%" PRIu64 " (in __metadata__)", l->n_kv);
    row("tensor data starts at", "%" PRIu64, l->data_start);
    row("tensor data", "%" PRIu64 " bytes; the last tensor ends at %" PRIu64, l->data_size,
        l->data_start + l->tensors_end);
}

static json_t *uint_or_null(const tm_kv *kv)
{
    uint64_t v;
    if (kv && kv->type == TM_V_ARRAY)
        return cli_json_kv_value(kv);
    return tm_kv_get_uint(kv, &v) == TM_OK ? cli_json_u64(v) : json_null();
}

static json_t *count_or_null(const tm_file *f, const char *key)
{
    uint64_t n;
    return array_count(f, key, &n) ? cli_json_u64(n) : json_null();
}

static json_t *to_json(const tm_file *f, const char *arg, const tm_layout *l, const numbers *nb)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "path", json_string(arg));
    bad |= json_object_set_new(o, "file_size", cli_json_u64(l->file_size));
    if (tm_file_is_remote(f)) {
        uint64_t got, requests;
        tm_file_fetched(f, &got, &requests);
        bad |= json_object_set_new(o, "fetched", json_pack("{s:o, s:o}", "bytes",
                                   cli_json_u64(got), "requests", cli_json_u64(requests)));
    }
    if (l->format == TM_FORMAT_SAFETENSORS) {
        bad |= json_object_set_new(o, "format", json_string("safetensors"));
        bad |= json_object_set_new(o, "header_bytes", cli_json_u64(l->kv_end - 8));
    } else {
        bad |= json_object_set_new(o, "format", json_string("gguf"));
        bad |= json_object_set_new(o, "version", json_integer(l->version));
    }
    bad |= json_object_set_new(o, "n_tensors", cli_json_u64(l->n_tensors));
    bad |= json_object_set_new(o, "n_kv", cli_json_u64(l->n_kv));
    if (l->format != TM_FORMAT_SAFETENSORS) {
        tm_str arch = tm_architecture(f), name;
        bad |= json_object_set_new(o, "architecture", arch.ptr ? cli_json_str(arch) : json_null());
        bad |= json_object_set_new(o, "name",
                                   tm_kv_get_str(tm_kv_find(f, "general.name"), &name) == TM_OK
                                       ? cli_json_str(name) : json_null());
        for (int i = 0; i < N_DIMS; i++)
            bad |= json_object_set_new(o, dims[i].json, uint_or_null(tm_arch_key(f, dims[i].suffix)));
        bad |= json_object_set_new(o, "vocab_size", count_or_null(f, "tokenizer.ggml.tokens"));
        bad |= json_object_set_new(o, "merges", count_or_null(f, "tokenizer.ggml.merges"));
        uint64_t embd, heads;
        bad |= json_object_set_new(o, "head_width",
                                   head_width(f, &embd, &heads) && embd % heads == 0
                                       ? cli_json_u64(embd / heads) : json_null());
        bad |= json_object_set_new(o, "alignment", json_integer(l->alignment));
        bad |= json_object_set_new(o, "alignment_declared", json_boolean(l->alignment_declared));
        bad |= json_object_set_new(o, "kv_end", cli_json_u64(l->kv_end));
        bad |= json_object_set_new(o, "infos_end", cli_json_u64(l->infos_end));
        bad |= json_object_set_new(o, "padding", cli_json_u64(l->padding));
    }
    bad |= json_object_set_new(o, "n_shards", json_integer(l->n_shards));
    cli_shard_alone alone;
    bad |= json_object_set_new(o, "shard_alone", cli_shard_alone_of(f, arg, &alone)
                                                     ? cli_shard_alone_json(&alone)
                                                     : json_null());
    if (l->n_shards > 1) {
        json_t *a = json_array();
        for (uint32_t i = 0; a && i < l->n_shards; i++) {
            const tm_layout *s = tm_shard_layout(f, i);
            json_t *e = json_pack("{s:s, s:I, s:I, s:I, s:I}", "path", tm_shard_path(f, i),
                                  "n_tensors", (json_int_t)s->n_tensors, "data_start",
                                  (json_int_t)s->data_start, "data_size", (json_int_t)s->data_size,
                                  "file_size", (json_int_t)s->file_size);
            if (!e || json_array_append_new(a, e) != 0)
                json_decref(a), a = NULL;
        }
        bad |= a ? json_object_set_new(o, "shards", a) : 1;
    }
    bad |= json_object_set_new(o, "data_start", cli_json_u64(l->data_start));
    bad |= json_object_set_new(o, "data_size", cli_json_u64(l->data_size));
    bad |= json_object_set_new(o, "tensors_end", cli_json_u64(l->data_start + l->tensors_end));
    json_t *n = numbers_json(nb);
    bad |= !n || json_object_update(o, n);
    json_decref(n);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The types llama.cpp can keep its KV cache in. */
static bool kv_type_named(const char *name, tm_type *out)
{
    static const tm_type cache_types[] = {TM_TYPE_F16,  TM_TYPE_BF16, TM_TYPE_F32,
                                          TM_TYPE_Q8_0, TM_TYPE_Q4_0, TM_TYPE_Q4_1,
                                          TM_TYPE_Q5_0, TM_TYPE_Q5_1, TM_TYPE_IQ4_NL};
    for (size_t i = 0; i < sizeof cache_types / sizeof cache_types[0]; i++)
        if (strcmp(tm_type_name(cache_types[i]), name) == 0) {
            *out = cache_types[i];
            return true;
        }
    return false;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"context", required_argument, NULL, 'c'},
                                         {"kv-type", required_argument, NULL, 'k'},
                                         {"type-k", required_argument, NULL, 'K'},
                                         {"type-v", required_argument, NULL, 'V'},
                                         {"parallel", required_argument, NULL, 'p'},
                                         {"ubatch", required_argument, NULL, 'u'},
                                         {"swa-full", no_argument, NULL, 'S'},
                                         {"kv-unified", no_argument, NULL, 'U'},
                                         {"gpu-layers", required_argument, NULL, 'g'},
                                         {"fit", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool json = false;
    numbers nb = {.mo = {.type_k = TM_TYPE_F16, .type_v = TM_TYPE_F16, .n_seq = 1,
                         .n_ubatch = 512}};
    uint64_t context = 0;
    optind = 1;
    for (int c; (c = cli_getopt(argc, argv, "h", opts, &cmd_info)) != -1;) {
        if (c == 'j') {
            json = true;
        } else if (c == 'c') {
            if (!cli_parse_u64(optarg, &context) || context == 0) {
                cli_errorf("info: --context wants a number of tokens above 0, not '%s'", optarg);
                return cli_usage(&cmd_info);
            }
            nb.context_given = true;
        } else if (c == 'k' || c == 'K' || c == 'V') {
            tm_type t;
            if (!kv_type_named(optarg, &t)) {
                cli_errorf("info: --%s: '%s' is not a cache type (f16, bf16, f32, q8_0, q4_0, "
                           "q4_1, q5_0, q5_1, iq4_nl)", c == 'k' ? "kv-type" : c == 'K' ? "type-k"
                           : "type-v", optarg);
                return cli_usage(&cmd_info);
            }
            if (c != 'V')
                nb.mo.type_k = t;
            if (c != 'K')
                nb.mo.type_v = t;
        } else if (c == 'p' || c == 'u') {
            uint64_t n;
            if (!cli_parse_u64(optarg, &n) || n == 0 || n > (c == 'p' ? 256 : UINT32_MAX)) {
                cli_errorf("info: --%s wants a number from 1 to %s, not '%s'",
                           c == 'p' ? "parallel" : "ubatch", c == 'p' ? "256" : "4294967295",
                           optarg);
                return cli_usage(&cmd_info);
            }
            *(c == 'p' ? &nb.mo.n_seq : &nb.mo.n_ubatch) = (uint32_t)n;
        } else if (c == 'S') {
            nb.mo.swa_full = true;
        } else if (c == 'U') {
            nb.mo.kv_unified = true;
        } else if (c == 'g') {
            uint64_t n;
            if (!cli_parse_u64(optarg, &n) || n > 100000) {
                cli_errorf("info: --gpu-layers wants a number of layers, not '%s'", optarg);
                return cli_usage(&cmd_info);
            }
            nb.gpu_layers = (uint32_t)n;
        } else if (c == 'f') {
            if (!cli_parse_size(optarg, &nb.budget)) {
                cli_errorf("info: --fit wants a number of bytes, not '%s': " CLI_SIZE_FORMS,
                           optarg);
                return cli_usage(&cmd_info);
            }
            nb.fit = true;
        } else if (c == 'h') {
            return fputs(help, stdout), CLI_OK;
        } else {
            return cli_usage(&cmd_info);
        }
    }
    int rc = cli_count_args(&cmd_info, argc - optind, 1, 1);
    if (rc >= 0)
        return rc;
    const char *arg = argv[optind];
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    const tm_layout *l = tm_file_layout(f);
    cli_count_weights(f, &nb.w);
    /* the metadata the memory is sized from: the GGUF's own, or the config.json beside a
     * safetensors checkpoint (a piped or remote one has none at hand) */
    tm_file *config = NULL;
    const tm_file *meta = f;
    char why[sizeof nb.mem.why] = "";
    if (l->format == TM_FORMAT_SAFETENSORS) {
        if (strcmp(arg, "-") == 0 || tm_file_is_remote(f))
            snprintf(why, sizeof why, "unknown: the config.json of a %s checkpoint is not read",
                     tm_file_is_remote(f) ? "remote" : "piped");
        else
            config = cli_config_model(arg, why, sizeof why);
        meta = config;
        nb.from_config = config != NULL;
    }
    /* without --context, the trained context; without that either, no cache to size */
    if (meta && !nb.context_given &&
        tm_kv_get_uint(tm_arch_key(meta, "context_length"), &context) != TM_OK)
        context = 0;
    nb.has_kv = context > 0 || nb.fit || !meta;
    nb.mo.context = context;
    if (!meta) {
        nb.mem.asked = context;
        nb.mem.type_k = nb.mo.type_k;
        nb.mem.type_v = nb.mo.type_v;
        memcpy(nb.mem.why, why, sizeof why);
    } else if (nb.fit) {
        nb.fit_known = cli_plan_fit(f, meta, &nb.mo, nb.gpu_layers, nb.budget, &nb.fit_context,
                                    &nb.mem);
    } else if (nb.has_kv) {
        cli_memory_plan(meta, &nb.mo, &nb.mem);
    }
    if (nb.has_kv && nb.mem.known)
        cli_plan_make(f, meta, &nb.mem, nb.gpu_layers, &nb.plan);
    if (json) {
        rc = cli_json_emit(to_json(f, arg, l, &nb));
    } else {
        printf("the file\n");
        row("path", "%s", strcmp(arg, "-") == 0 ? "(standard input)" : arg);
        row("bytes", "%" PRIu64, l->file_size);
        if (tm_file_is_remote(f)) {
            uint64_t got, requests;
            tm_file_fetched(f, &got, &requests);
            row("fetched", "%" PRIu64 " bytes in %" PRIu64 " request%s", got, requests,
                requests == 1 ? "" : "s");
        }
        cli_shard_alone alone;
        if (cli_shard_alone_of(f, arg, &alone)) { /* the numbers below are the shard's alone */
            printf("  %-26s", "this file is");
            cli_shard_alone_print(stdout, &alone);
            putchar('\n');
        }
        if (l->format == TM_FORMAT_SAFETENSORS)
            print_safetensors(f, l, &nb);
        else
            print_gguf(f, l, &nb);
        rc = CLI_OK;
    }
    /* info says whether the file is sound: a file cut off is described, but not passed as one
     * (exit 1, as check gives it) */
    const bool cut = tm_file_missing_bytes(f) > 0;
    tm_close(config);
    tm_close(f);
    rc = cli_finish_output(rc);
    return cut && rc == CLI_OK ? CLI_FAIL : rc;
}

const cli_command cmd_info = {
    .name = "info",
    .alias = NULL,
    .summary = "what the file holds: architecture, dimensions, parameters, bits per weight, KV cache",
    .help = help,
    .run = run,
};
