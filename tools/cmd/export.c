/* tensormap export: a model back to a safetensors checkpoint that PyTorch, training and
 * conversion tools load. Every tensor is decoded to float32 by the library's threaded kernels
 * in bounded chunks, rounded to the chosen dtype and streamed into the file (the safetensors
 * writer puts the header first, so nothing is held but one chunk). With --names hf, the llama
 * and qwen2 names go back to Hugging Face's and llama's query/key rows are un-permuted. */
#include "../cli/cli.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help[] =
    "usage: tensormap export [--dtype f32|f16|bf16] [--names gguf|hf] [--max-shard-size SIZE]\n"
    "                        [--tensors PATTERN] [--skip-undecodable] FILE OUT\n"
    "\n"
    "Write the model's tensors as a safetensors checkpoint: each tensor decoded to float32 and\n"
    "stored in the chosen dtype, its shape in PyTorch's order (slowest first, GGUF's ne\n"
    "reversed). The header's __metadata__ holds {\"format\": \"pt\"} and the file's general.*\n"
    "strings. OUT appears only once it is complete; an existing OUT is replaced then, and left\n"
    "as it was if the export fails (with --max-shard-size, every file of it at once, the index\n"
    "last). OUT may not be the model itself. Progress goes to stderr when it is a terminal.\n"
    "\n"
    "  --dtype T             f32 (exact; the default), or f16 / bf16: rounded to nearest, ties\n"
    "                        to even, as PyTorch's .to() rounds\n"
    "  --names N             gguf (the file's names; the default) or hf: Hugging Face's names\n"
    "                        for llama and qwen2 files, llama's attn_q/attn_k rows put back in\n"
    "                        Hugging Face's order; a tensor with no Hugging Face name (such as\n"
    "                        rope_freqs.weight) is left out and listed\n"
    "  --max-shard-size SIZE OUT is a directory of model-0000K-of-0000N.safetensors files of at\n"
    "                        most SIZE bytes each (a larger tensor gets a file of its own) and\n"
    "                        model.safetensors.index.json, as save_pretrained writes them. SIZE\n"
    "                        is bytes, or a number (1.5 too) with KB/MB/GB/TB as Hugging Face's\n"
    "                        max_shard_size (10^3 ... 10^12; K/M/G/T the same), or KiB/MiB/GiB/\n"
    "                        TiB (2^10 ... 2^40); units in any case\n"
    "  --tensors PATTERN     only tensors whose name in FILE matches the shell pattern\n"
    "  --skip-undecodable    leave out (and list) tensors of a type with no decoder, instead of\n"
    "                        refusing the export\n";

/* Floats decoded per step: 32 MiB of float32 (a permuted tensor takes whole heads). */
#define CHUNK_FLOATS ((uint64_t)8 << 20)
#define INDEX_NAME "model.safetensors.index.json"

typedef struct item {
    const tm_tensor *t;
    char *name;           /* the name written (owned) */
    uint64_t heads;       /* > 0: llama's q/k rows to un-permute in this many heads */
    uint32_t shard;       /* output file, from 0 */
} item;

typedef struct plan {
    item *items;
    size_t n;
    tm_type dtype;
    uint64_t max_shard;   /* 0: one file */
    uint32_t n_shards;
    uint64_t total_bytes;
} plan;

static bool parse_dtype(const char *s, tm_type *t)
{
    static const tm_type dtypes[] = {TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(s, tm_type_name(dtypes[i])) == 0)
            return *t = dtypes[i], true;
    return false;
}

static uint64_t out_bytes(const plan *p, const tm_tensor *t)
{
    return t->n_elements * tm_type_block_bytes(p->dtype);
}

/* ---- which tensors, under which names ---------------------------------------------------- */

typedef struct naming {
    bool hf;
    bool permute;         /* llama: undo the converter's q/k row permutation */
    uint64_t n_head, n_head_kv;
} naming;

static bool arch_is(const tm_file *f, const char *name)
{
    tm_str a = tm_architecture(f);
    return a.len == strlen(name) && memcmp(a.ptr, name, a.len) == 0;
}

/* A tensor name or key from the file as a C string (malloc'ed; NULL when out of memory),
 * whatever its length (the readers take up to TM_MAX_NAME_LEN bytes). Neither reader lets one
 * hold a NUL byte, so the copy is the whole name. */
static char *name_string(tm_str name)
{
    return strndup(name.ptr, (size_t)name.len);
}

typedef enum named { NAMED, NO_HF_NAME, NO_MEMORY } named;

/* The name written for t into it->name (malloc'ed), and its permutation. */
static named name_item(const naming *nm, const tm_tensor *t, item *it)
{
    int perm = CLI_PERM_NONE;
    char hf[128]; /* the map's names are short: model.layers.N.self_attn.q_proj.weight */
    if (nm->hf && !cli_gguf_to_hf(t->name, hf, sizeof hf, &perm))
        return NO_HF_NAME;
    if (!(it->name = nm->hf ? strdup(hf) : name_string(t->name)))
        return NO_MEMORY;
    it->heads = !nm->permute ? 0 : perm == CLI_PERM_Q ? nm->n_head
              : perm == CLI_PERM_K ? nm->n_head_kv : 0;
    return NAMED;
}

/* A head of a permuted tensor is decoded whole: its rows must split into n heads of an even
 * number of rows, and one head must fit a chunk. */
static bool check_heads(const item *it, const char *file)
{
    const uint64_t rows = tm_tensor_rows(it->t), hd = rows / it->heads;
    if (rows % it->heads == 0 && hd % 2 == 0 && hd * it->t->ne[0] <= CHUNK_FLOATS)
        return true;
    cli_errorf("%s: %s: %" PRIu64 " rows of %" PRIu64 " do not split into %" PRIu64
               " heads of an even number of rows that fit %" PRIu64 " values: cannot undo the "
               "q/k permutation", file, it->name, rows, it->t->ne[0], it->heads, CHUNK_FLOATS);
    return false;
}

static int build_plan(tm_file *f, const char *file, const naming *nm, const char *pattern,
                      bool skip_undecodable, plan *p)
{
    const uint64_t n = tm_n_tensors(f);
    p->items = calloc(n ? n : 1, sizeof *p->items);
    if (!p->items) {
        cli_errorf("export: out of memory");
        return CLI_FAIL;
    }
    char shown[160];
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        char *plain = pattern ? name_string(t->name) : NULL;
        if (pattern && !plain)
            return cli_errorf("export: out of memory"), CLI_FAIL;
        const bool left_out = pattern && fnmatch(pattern, plain, 0) != 0;
        free(plain);
        if (left_out)
            continue;
        cli_name(t->name, 120, shown, sizeof shown);
        if (!tm_type_can_dequant(t->type)) {
            const char *type = tm_type_name(t->type) ? tm_type_name(t->type) : "?";
            if (!skip_undecodable) {
                cli_errorf("%s: tensor %" PRIu64 " '%s' is %s, which has no decoder (use "
                           "--skip-undecodable to leave it out)", file, i, shown, type);
                return CLI_FAIL;
            }
            printf("left out: %s (%s has no decoder)\n", shown, type);
            continue;
        }
        item *it = &p->items[p->n];
        it->t = t;
        const named got = name_item(nm, t, it);
        if (got == NO_HF_NAME) {
            printf("left out: %s (no Hugging Face name)\n", shown);
            continue;
        }
        if (got == NO_MEMORY)
            return cli_errorf("export: out of memory"), CLI_FAIL;
        p->n++; /* the plan owns its name now */
        if (it->heads && !check_heads(it, file))
            return CLI_FAIL;
    }
    if (nm->hf && !tm_tensor_find(f, "output.weight"))
        printf("no lm_head.weight: the model ties its output to the token embedding\n");
    return CLI_OK;
}

/* save_pretrained's sharding: tensors in order, a new file when the next tensor would make the
 * current one larger than the limit (a tensor larger than the limit gets a file of its own,
 * and the one after it a new file again). Written so that nothing wraps: in_shard passes the
 * limit after a large tensor. */
static void assign_shards(plan *p)
{
    uint64_t in_shard = 0;
    p->n_shards = 1;
    for (size_t i = 0; i < p->n; i++) {
        const uint64_t b = out_bytes(p, p->items[i].t);
        if (p->max_shard && in_shard > 0 && (b > p->max_shard || in_shard > p->max_shard - b)) {
            p->n_shards++;
            in_shard = 0;
        }
        in_shard += b;
        p->total_bytes += b;
        p->items[i].shard = p->n_shards - 1;
    }
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct buffers {
    float *f;             /* decoded rows */
    float *perm;          /* the same rows in Hugging Face's order */
    uint16_t *half;       /* f16 / bf16 out */
    cli_progress progress; /* bytes written, over every file */
} buffers;

/* Round n decoded values to dtype and write them. */
static tm_status write_values(const plan *p, const float *vals, uint64_t n, buffers *b,
                              tm_st_writer *w, tm_error *err)
{
    const void *bytes = vals;
    if (p->dtype != TM_TYPE_F32) {
        (p->dtype == TM_TYPE_F16 ? tm_f32_to_f16 : tm_f32_to_bf16)(vals, b->half, (size_t)n);
        bytes = b->half;
    }
    const size_t len = (size_t)n * tm_type_block_bytes(p->dtype);
    tm_status st = tm_st_writer_write(w, bytes, len, err);
    cli_progress_add(&b->progress, len);
    return st;
}

/* Decode it's rows [r0, r1) (whole heads when permuted) and write them in dtype. */
static tm_status write_rows(const plan *p, const item *it, uint64_t r0, uint64_t r1,
                            buffers *b, tm_st_writer *w, tm_error *err)
{
    const uint64_t ne0 = it->t->ne[0];
    tm_status st = tm_dequant_rows_mt(it->t, r0, r1, b->f, 0, err);
    if (st != TM_OK)
        return st;
    const float *vals = b->f;
    if (it->heads) {
        const uint64_t hd = tm_tensor_rows(it->t) / it->heads;
        for (uint64_t g = 0; g < r1 - r0; g++) /* row g of the file is source row ...(g) */
            memcpy(b->perm + cli_permuted_source_unit(g, hd) * ne0, b->f + g * ne0,
                   (size_t)ne0 * sizeof(float));
        vals = b->perm;
    }
    return write_values(p, vals, (r1 - r0) * ne0, b, w, err);
}

typedef struct piece_out {
    const plan *p;
    buffers *b;
    tm_st_writer *w;
    tm_error *err;
} piece_out;

static int write_piece(const float *v, size_t n, void *ctx)
{
    piece_out *o = ctx;
    return write_values(o->p, v, n, o->b, o->w, o->err) != TM_OK;
}

/* Decode and write it, at most a chunk at a time: whole rows (whole heads when permuted) on
 * every core, or, when a row is longer than the chunk (a 1-D tensor of 10 M elements), the
 * tensor's elements in pieces of whole blocks. A permuted tensor never has such rows:
 * check_heads wants a whole head in a chunk. */
static tm_status write_item(const plan *p, const item *it, buffers *b, tm_st_writer *w,
                            tm_error *err)
{
    const tm_tensor *t = it->t;
    const uint64_t rows = tm_tensor_rows(t), ne0 = t->ne[0];
    if (ne0 > CHUNK_FLOATS) {
        const size_t block = tm_type_block_elems(t->type);
        piece_out o = {p, b, w, err};
        return cli_decode_chunks(t, 0, t->n_elements, b->f, CHUNK_FLOATS / block * block,
                                 write_piece, &o, err) == 0 ? TM_OK : err->code;
    }
    uint64_t step = ne0 ? CHUNK_FLOATS / ne0 : rows;
    if (it->heads) /* whole heads per step (check_heads: at least one fits) */
        step = step / (rows / it->heads) * (rows / it->heads);
    for (uint64_t r = 0; r < rows; r += step) {
        tm_status st = write_rows(p, it, r, rows - r < step ? rows : r + step, b, w, err);
        if (st != TM_OK)
            return st;
    }
    return TM_OK;
}

static tm_status no_memory(tm_error *err)
{
    snprintf(err->message, sizeof err->message, "out of memory");
    return err->code = TM_NOMEM;
}

static bool add_metadata(const tm_file *f, tm_st_writer *w, tm_error *err)
{
    if (tm_st_writer_meta(w, "format", "pt", err) != TM_OK)
        return false;
    for (uint64_t i = 0; i < tm_n_kv(f); i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        tm_str s;
        if (kv->type != TM_V_STRING || kv->key.len < 8 ||
            memcmp(kv->key.ptr, "general.", 8) != 0 || tm_kv_get_str(kv, &s) != TM_OK ||
            memchr(s.ptr, 0, (size_t)s.len))
            continue;
        char *key = name_string(kv->key), *value = strndup(s.ptr, (size_t)s.len);
        bool ok = key && value && tm_st_writer_meta(w, key, value, err) == TM_OK;
        if (!key || !value)
            no_memory(err);
        free(key);
        free(value);
        if (!ok && err->code != TM_BAD_VALUE)
            return false;
        /* a value that is not UTF-8 cannot be a JSON string: it is left out */
    }
    return true;
}

static tm_status write_shard(const tm_file *f, const plan *p, uint32_t shard, const char *path,
                             buffers *b, tm_error *err)
{
    tm_st_writer *w;
    int guard = -1; /* the temporary file, removed if a signal ends the process */
    tm_status st = tm_st_writer_new(&w, err);
    if (st != TM_OK)
        return st;
    if (!add_metadata(f, w, err))
        goto fail;
    for (size_t i = 0; i < p->n; i++) {
        const item *it = &p->items[i];
        uint64_t shape[4];
        uint32_t nd = it->t->n_dims;
        for (uint32_t d = 0; d < nd; d++)
            shape[d] = it->t->ne[nd - 1 - d];
        if (it->shard == shard && tm_st_writer_tensor(w, it->name, p->dtype, nd, shape, err))
            goto fail;
    }
    if (cli_output_st_begin(w, path, &guard, err) != TM_OK)
        goto fail;
    for (size_t i = 0; i < p->n; i++) {
        if (p->items[i].shard != shard)
            continue;
        /* the next tensor written (the items of a shard are consecutive) is on its way */
        if (i + 1 < p->n && p->items[i + 1].shard == shard)
            cli_prefetch(p->items[i + 1].t);
        if (write_item(p, &p->items[i], b, w, err) != TM_OK)
            goto fail;
    }
    return cli_output_st_finish(w, guard, err);
fail:
    tm_st_writer_free(w);
    cli_signal_forget(guard);
    return err->code;
}

/* "DIR/NAME", malloc'ed (NULL when out of memory): a path of any length, never cut short into
 * the name of another file. */
static char *join_path(const char *dir, const char *name)
{
    char *path;
    return asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path;
}

/* model.safetensors.index.json: the total size and which file holds each tensor. */
static int write_index(const plan *p, const char *path, char **shard_names)
{
    json_t *map = json_object(), *root = json_pack("{s:{s:I}, s:o}", "metadata", "total_size",
                                                  (json_int_t)p->total_bytes, "weight_map", map);
    for (size_t i = 0; root && i < p->n; i++)
        if (json_object_set_new(map, p->items[i].name, json_string(shard_names[p->items[i].shard])))
            json_decref(root), root = NULL;
    cli_output *o = root ? cli_output_open(path) : NULL;
    int rc = root ? CLI_FAIL : (cli_errorf("export: out of memory"), CLI_FAIL);
    if (o) {
        rc = json_dumpf(root, cli_output_stream(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 &&
             fputc('\n', cli_output_stream(o)) != EOF ? CLI_OK : CLI_FAIL;
        rc = cli_output_close(o, rc);
    }
    json_decref(root);
    return rc;
}

/* The shards the checkpoint being replaced names in its index (a regular file: a FIFO planted
 * there must not hold the export up): the set removes those the new one does not name. */
static void claim_old_index(cli_output_set *set, const char *index)
{
    struct stat st;
    if (stat(index, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TM_MAX_STRING_LEN)
        return;
    json_t *old = json_load_file(index, JSON_REJECT_DUPLICATES, NULL), *v;
    const char *key;
    json_object_foreach(json_object_get(old, "weight_map"), key, v)
        if (json_is_string(v))
            cli_output_set_replaces(set, json_string_value(v));
    json_decref(old);
}

/* The files of --max-shard-size, named and staged before anything is written (cli_output_set:
 * put in place together, the index last): names[s] and to[s] for shard s, to[n_shards] and
 * *index (malloc'ed) for the index. NULL after a message. */
static cli_output_set *stage_set(const plan *p, const char *out, char **names, const char **to,
                                 char **index)
{
    cli_output_set *set = cli_output_set_new(out, "model", ".safetensors");
    bool ok = set != NULL && (*index = join_path(out, INDEX_NAME)) != NULL;
    if (ok)
        claim_old_index(set, *index);
    for (uint32_t s = 0; ok && s < p->n_shards; s++) {
        char *path = NULL;
        if ((ok = (names[s] = malloc(64)) != NULL)) { /* two u32s: at most 42 bytes */
            snprintf(names[s], 64, "model-%05u-of-%05u.safetensors", s + 1, p->n_shards);
            ok = (path = join_path(out, names[s])) != NULL &&
                 (to[s] = cli_output_set_add(set, path)) != NULL;
        }
        free(path);
    }
    if (ok && (to[p->n_shards] = cli_output_set_add(set, *index)) && cli_output_set_ready(set))
        return set;
    if (set && !ok && !*index)
        cli_errorf("export: out of memory");
    cli_output_set_finish(set, CLI_FAIL, NULL);
    return NULL;
}

static int write_all(const tm_file *f, const plan *p, const char *out)
{
    buffers b = {malloc(CHUNK_FLOATS * sizeof(float)), malloc(CHUNK_FLOATS * sizeof(float)),
                 malloc(CHUNK_FLOATS * sizeof(uint16_t)), {0}};
    char **names = calloc(p->n_shards, sizeof *names), *index = NULL;
    const char **to = calloc((size_t)p->n_shards + 1, sizeof *to); /* where each is written */
    cli_output_set *set = NULL;
    tm_error err = {0};
    int rc = CLI_OK;
    cli_progress_start(&b.progress, "export", "bytes", p->total_bytes);
    if (!b.f || !b.perm || !b.half || !names || !to) {
        cli_errorf("export: out of memory");
        rc = CLI_FAIL;
    } else if (p->max_shard && mkdir(out, 0777) != 0 && errno != EEXIST) {
        cli_errorf("%s: cannot make the directory: %s", out, strerror(errno));
        rc = CLI_FAIL;
    } else if (p->max_shard && !(set = stage_set(p, out, names, to, &index))) {
        rc = CLI_FAIL;
    }
    for (uint32_t s = 0; rc == CLI_OK && s < p->n_shards; s++) {
        char *path = p->max_shard ? join_path(out, names[s]) : strdup(out);
        if (!path) {
            cli_errorf("export: out of memory");
            rc = CLI_FAIL;
        } else if (!set && !cli_output_allowed(path)) {
            rc = CLI_FAIL;
        } else if (write_shard(f, p, s, set ? to[s] : path, &b, &err) != TM_OK) {
            cli_report(path, &err);
            rc = CLI_FAIL;
        }
        free(path);
    }
    if (rc == CLI_OK && set)
        rc = write_index(p, to[p->n_shards], names);
    rc = cli_output_set_finish(set, rc, index); /* every file in place, the index last */
    free(index);
    free(to);
    cli_progress_end(&b.progress);
    for (uint32_t s = 0; s < p->n_shards && names; s++)
        free(names[s]);
    free(names);
    free(b.f);
    free(b.perm);
    free(b.half);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"dtype", required_argument, NULL, 'd'},          {"names", required_argument, NULL, 'n'},
        {"max-shard-size", required_argument, NULL, 's'}, {"tensors", required_argument, NULL, 't'},
        {"skip-undecodable", no_argument, NULL, 'u'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    plan p = {.dtype = TM_TYPE_F32};
    naming nm = {0};
    const char *pattern = NULL;
    bool skip = false;
    optind = 1;
    for (int c; (c = cli_getopt(argc, argv, "h", opts, &cmd_export)) != -1;) {
        if (c == 'd' && !parse_dtype(optarg, &p.dtype)) {
            cli_errorf("export: --dtype %s: f32, f16 or bf16", optarg);
            return CLI_USAGE;
        } else if (c == 'n') {
            if (strcmp(optarg, "hf") != 0 && strcmp(optarg, "gguf") != 0) {
                cli_errorf("export: --names %s: gguf or hf", optarg);
                return CLI_USAGE;
            }
            nm.hf = strcmp(optarg, "hf") == 0;
        } else if (c == 's' && !cli_parse_size(optarg, &p.max_shard)) {
            cli_errorf("export: --max-shard-size %s: " CLI_SIZE_FORMS, optarg);
            return CLI_USAGE;
        } else if (c == 't') {
            pattern = optarg;
        } else if (c == 'u') {
            skip = true;
        } else if (c == 'h') {
            return fputs(help, stdout), CLI_OK;
        } else if (c == '?') {
            return cli_usage(&cmd_export);
        }
    }
    if (argc - optind != 2) {
        cli_errorf("export: FILE and OUT");
        return cli_usage(&cmd_export);
    }
    const char *file = argv[optind], *out = argv[optind + 1];
    tm_file *f = cli_open(file, 0);
    if (!f)
        return CLI_FAIL;
    int rc = CLI_FAIL;
    if (nm.hf) {
        if (!arch_is(f, "llama") && !arch_is(f, "qwen2")) {
            char arch[96];
            cli_errorf("%s: --names hf knows llama and qwen2 files; this one is '%s'", file,
                       cli_name(tm_architecture(f), 60, arch, sizeof arch));
            goto out;
        }
        nm.permute = arch_is(f, "llama");
        if (nm.permute && !cli_llama_head_counts(f, &nm.n_head, &nm.n_head_kv))
            goto out;
    }
    if ((rc = build_plan(f, file, &nm, pattern, skip, &p)) != CLI_OK)
        goto out;
    assign_shards(&p);
    if ((rc = write_all(f, &p, out)) == CLI_OK && p.max_shard)
        printf("%s: %zu tensor%s, %" PRIu64 " bytes of %s, in %u file%s and %s\n", out, p.n,
               p.n == 1 ? "" : "s", p.total_bytes, tm_type_name(p.dtype), p.n_shards,
               p.n_shards == 1 ? "" : "s", INDEX_NAME);
    else if (rc == CLI_OK)
        printf("%s: %zu tensor%s, %" PRIu64 " bytes of %s\n", out, p.n, p.n == 1 ? "" : "s",
               p.total_bytes, tm_type_name(p.dtype));
out:
    for (size_t i = 0; i < p.n; i++)
        free(p.items[i].name);
    free(p.items);
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_export = {
    .name = "export",
    .alias = NULL,
    .summary = "the model as a safetensors checkpoint (f32, f16 or bf16; Hugging Face names)",
    .help = help,
    .run = run,
};
