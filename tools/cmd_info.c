/* tensormap info: the header of a model file in the words a person reads it in (the seed
 * chapter's `head`): the head, what the metadata says the model is, and where the header stops
 * and the data starts. Every number is a field of the file or the library's layout. */
#include "cli_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

static const char help[] =
    "usage: tensormap info [--json] FILE\n"
    "\n"
    "Show the header of a GGUF or safetensors file: its size; for GGUF the magic, version,\n"
    "tensor and metadata counts, the architecture and its dimensions (blocks, embedding width,\n"
    "attention heads, key/value heads, feed-forward width, trained context, vocabulary size from\n"
    "the token array, merges), the head width that follows from them, the alignment and whether\n"
    "the file declares it, where the metadata ends, where the last tensor info ends, the\n"
    "padding and where the tensor data starts. For safetensors: the JSON header's length, the\n"
    "tensor and __metadata__ counts and where the data starts. FILE - reads standard input.\n"
    "\n"
    "  --json    the same as one JSON object (integers exact; a dimension the file lacks is\n"
    "            null)\n";

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
        printf("  %-5" PRIu32 " %14" PRIu64 " %8" PRIu64 " %14" PRIu64 " %14" PRIu64 "  %s\n", i,
               s->format == TM_FORMAT_SAFETENSORS ? s->kv_end - 8 : s->data_start, s->n_tensors,
               s->data_size, s->file_size, tm_shard_path(f, i));
    }
}

static void print_gguf(const tm_file *f, const tm_layout *l)
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
        printf("and what falls out of those two lines\n");
        if (embd % heads == 0)
            printf("  one head is %" PRIu64 " wide: %" PRIu64 " / %" PRIu64 "\n", embd / heads,
                   embd, heads);
        else
            printf("  no whole head width: %" PRIu64 " / %" PRIu64 " leaves %" PRIu64 "\n", embd,
                   heads, embd % heads);
    }

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
    row("tensor data", "%" PRIu64 " bytes; the last tensor ends %" PRIu64 " bytes in",
        l->data_size, l->tensors_end);
}

static void print_safetensors(const tm_file *f, const tm_layout *l)
{
    printf("safetensors\n");
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
    row("tensor data", "%" PRIu64 " bytes; the last tensor ends %" PRIu64 " bytes in",
        l->data_size, l->tensors_end);
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

static json_t *to_json(const tm_file *f, const char *arg, const tm_layout *l)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "path", json_string(arg));
    bad |= json_object_set_new(o, "file_size", cli_json_u64(l->file_size));
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
    bad |= json_object_set_new(o, "tensors_end", cli_json_u64(l->tensors_end));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_info, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    const tm_layout *l = tm_file_layout(f);
    if (json) {
        rc = cli_json_emit(to_json(f, arg, l));
    } else {
        printf("the file\n");
        row("path", "%s", strcmp(arg, "-") == 0 ? "(standard input)" : arg);
        row("bytes", "%" PRIu64, l->file_size);
        if (l->format == TM_FORMAT_SAFETENSORS)
            print_safetensors(f, l);
        else
            print_gguf(f, l);
        rc = CLI_OK;
    }
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_info = {
    .name = "info",
    .alias = "head",
    .summary = "the header: counts, architecture, dimensions, alignment, where the data starts",
    .help = help,
    .run = run,
};
