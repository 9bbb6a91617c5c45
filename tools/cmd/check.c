/* tensormap check (alias account): the file added up out of its own header. Sizes (from each
 * tensor's shape and type) and offsets (as the file wrote them) are two accounts of one layout;
 * where they disagree the file is not consistent, and the exit status says so. */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap check [--json] FILE\n"
    "\n"
    "Add the file up out of its own header: the head, the metadata, the tensor infos, the\n"
    "padding and where the data starts; the tensors gathered by element type (count, weights,\n"
    "bytes); header + tensor bytes against the file size and what is left over; how many\n"
    "tensors start exactly where the one before them ended (rounded up to the alignment), with\n"
    "every gap beyond that padding named; offsets aligned, inside the file, not overlapping, and\n"
    "the bytes after the last tensor. A file cut off after its header (a download that\n"
    "stopped) is not consistent: the size its header needs, how much is missing and every\n"
    "tensor the end cuts are named. A file the library refuses to open is reported as not\n"
    "consistent with the library's reason. `account` is another name for this command.\n"
    "\n"
    "  --json    the same as one JSON object\n"
    "\n"
    "Exit status: 0 when the file is consistent, 1 when it is not, 2 for bad usage.\n";

/* One run of tensors of one element type. */
typedef struct type_sum {
    tm_type type;
    uint64_t count, weights, bytes;
} type_sum;

/* A place where the offsets and the sizes disagree. */
typedef struct finding {
    const char *what;      /* "gap", "overlap", "misaligned", "outside" (cut off: past the end
                            * of its file) */
    uint64_t prev, next;   /* tensor indices (prev = UINT64_MAX: the start of the data) */
    uint64_t expected, at; /* where next should start, where it does (from the data start) */
} finding;

typedef struct account {
    type_sum types[64];
    size_t n_types;
    uint64_t tensor_bytes, weights;
    uint64_t align_padding; /* padding the alignment asks for, between and after tensors */
    uint64_t gap_bytes;     /* bytes between tensors beyond that padding */
    uint64_t after_bytes;   /* bytes after the last tensor and its padding */
    uint64_t contiguous;    /* tensors that start where the one before them ended */
    finding *findings;
    size_t n_findings;
    bool ok;
} account;

static void add_type(account *a, const tm_tensor *t)
{
    size_t i = 0;
    while (i < a->n_types && a->types[i].type != t->type)
        i++;
    if (i == a->n_types) {
        if (a->n_types == sizeof a->types / sizeof a->types[0])
            i--; /* more distinct types than exist: fold the rest into the last row */
        else
            a->types[a->n_types++] = (type_sum){.type = t->type};
    }
    a->types[i].count++;
    a->types[i].weights += t->n_elements;
    a->types[i].bytes += t->n_bytes;
}

static int by_type(const void *x, const void *y)
{
    const type_sum *a = x, *b = y;
    return (a->type > b->type) - (a->type < b->type);
}

/* The bytes of a shard's data after its last tensor (which ends at end, at address at; none: 0
 * and NULL): the alignment padding ggml writes after it, then anything else. Padding is zeros:
 * bytes there that are not are data nobody described, and counted with what follows. */
static void add_tail(account *a, uint64_t data_size, uint64_t end, const uint8_t *at,
                     uint64_t align)
{
    uint64_t padded = end;
    if (end > 0 && !cli_align_up(end, align, &padded))
        padded = end;
    if (data_size > end) {
        uint64_t tail = data_size - end;
        uint64_t pad = padded - end < tail ? padded - end : tail;
        for (uint64_t i = 0; at && i < pad; i++)
            if (at[i] != 0) {
                pad = 0;
                break;
            }
        a->align_padding += pad;
        a->after_bytes += tail - pad;
    }
}

/* Where tensor i's bytes end in the mapping (NULL for none). */
static const uint8_t *end_of(const tm_file *f, uint64_t i)
{
    const tm_tensor *t = i == UINT64_MAX ? NULL : tm_tensor_at(f, i);
    return t && t->data ? (const uint8_t *)t->data + t->n_bytes : NULL;
}

/* Walk the tensors in offset order (shard by shard for a sharded checkpoint), comparing each
 * start with where the previous one ended. */
static bool add_up(const tm_file *f, account *a)
{
    const tm_layout *l = tm_file_layout(f);
    uint64_t n = tm_n_tensors(f), align = l->alignment ? l->alignment : 1;
    uint64_t *order = cli_offset_order(f);
    /* at most three findings a tensor: misaligned, outside, and a gap or an overlap */
    a->findings = calloc((size_t)n * 3 + 1, sizeof *a->findings);
    if (!order || !a->findings) {
        free(order);
        return false;
    }
    uint64_t prev_end = 0, prev = UINT64_MAX;
    uint32_t shard = 0;
    for (uint64_t k = 0; k < n; k++) {
        const tm_tensor *t = tm_tensor_at(f, order[k]);
        for (; shard < t->shard; shard++, prev_end = 0, prev = UINT64_MAX)
            add_tail(a, tm_shard_layout(f, shard)->data_size, prev_end, end_of(f, prev), align);
        uint64_t data_size = tm_shard_layout(f, shard)->data_size;
        add_type(a, t);
        a->tensor_bytes += t->n_bytes;
        a->weights += t->n_elements;
        uint64_t expected = prev_end;
        if (prev != UINT64_MAX && !cli_align_up(prev_end, align, &expected))
            expected = UINT64_MAX;
        if (t->offset % align != 0)
            a->findings[a->n_findings++] =
                (finding){"misaligned", prev, order[k], expected, t->offset};
        if (t->offset > data_size || t->n_bytes > data_size - t->offset)
            a->findings[a->n_findings++] =
                (finding){"outside", prev, order[k], expected, t->offset};
        if (t->offset == expected) {
            a->contiguous++;
            a->align_padding += expected - prev_end;
        } else if (t->offset < prev_end) {
            a->findings[a->n_findings++] =
                (finding){"overlap", prev, order[k], expected, t->offset};
        } else {
            /* between prev_end and expected is padding; anything past expected is a gap */
            uint64_t pad = t->offset < expected ? t->offset - prev_end : expected - prev_end;
            a->align_padding += pad;
            a->gap_bytes += t->offset - prev_end - pad;
            if (t->offset > expected)
                a->findings[a->n_findings++] =
                    (finding){"gap", prev, order[k], expected, t->offset};
        }
        uint64_t end = t->offset + t->n_bytes;
        if (end > prev_end || prev == UINT64_MAX) {
            prev_end = end;
            prev = order[k];
        }
    }
    for (; shard < (l->n_shards ? l->n_shards : 1); shard++, prev_end = 0, prev = UINT64_MAX)
        add_tail(a, tm_shard_layout(f, shard)->data_size, prev_end, end_of(f, prev), align);
    qsort(a->types, a->n_types, sizeof a->types[0], by_type);
    a->ok = a->n_findings == 0 && a->after_bytes == 0 && a->gap_bytes == 0 &&
            l->data_start + l->data_size == l->file_size;
    free(order);
    return true;
}

static void name_of(const tm_file *f, uint64_t i, char *buf, size_t size)
{
    if (i == UINT64_MAX) {
        snprintf(buf, size, "the start of the data");
        return;
    }
    tm_str s = tm_tensor_at(f, i)->name;
    char name[256];
    snprintf(buf, size, "tensor %" PRIu64 " '%s'", i, cli_name(s, 200, name, sizeof name));
}

static const char *type_label(tm_type t)
{
    const char *n = tm_type_name(t);
    return n ? n : "unknown";
}

static size_t count_kind(const account *a, const char *what)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n_findings; i++)
        n += strcmp(a->findings[i].what, what) == 0;
    return n;
}

/* The bytes every shard's header needs (its data start and the end of its last tensor), or
 * the file's size where that is more: the size the file must have to hold what it declares. */
static uint64_t size_needed(const tm_file *f)
{
    const tm_layout *l = tm_file_layout(f);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < (l->n_shards ? l->n_shards : 1); s++) {
        const tm_layout *sl = tm_shard_layout(f, s);
        const uint64_t need = sl->data_start + sl->tensors_end; /* below 2^64: the walk checks */
        sum += need > sl->file_size ? need : sl->file_size;
    }
    return sum;
}

/* A file cut off after its header: what it lacks, before the findings name each tensor cut. */
static void print_cut(const tm_file *f)
{
    const uint64_t missing = tm_file_missing_bytes(f);
    if (missing == 0)
        return;
    printf("the file is cut off (a truncated download?)\n");
    printf("  %-34s %" PRIu64 "\n", "the size its header needs", size_needed(f));
    printf("  %-34s %" PRIu64 "\n", "the file on disk", tm_file_layout(f)->file_size);
    printf("  %-34s %" PRIu64 "\n", "missing", missing);
    printf("  %-34s %" PRIu64 " of %" PRIu64 " (below: \"cut off\")\n\n", "tensors cut off",
           cli_cut_tensors(f), tm_n_tensors(f));
}

/* A tensor past the end of its file's data: the end of a file cut off cuts it. */
static void print_outside(const tm_file *f, uint64_t i, const char *name)
{
    const tm_tensor *t = tm_tensor_at(f, i);
    const uint64_t data_size = tm_shard_layout(f, t->shard)->data_size;
    const uint64_t have = t->offset < data_size ? data_size - t->offset : 0;
    printf("  cut off: %s at %" PRIu64 "..%" PRIu64 " runs past the data's %" PRIu64
           " bytes: %" PRIu64 " of its %" PRIu64 " bytes are missing\n",
           name, t->offset, t->offset + t->n_bytes, data_size, t->n_bytes - have, t->n_bytes);
}

static void print_text(const char *arg, const tm_file *f, const account *a)
{
    const tm_layout *l = tm_file_layout(f);
    uint64_t n = tm_n_tensors(f);
    bool gguf = l->format == TM_FORMAT_GGUF;
    printf("%s, added up out of its own header\n\n", arg);
    printf("the header, in the pieces it is made of\n");
    if (gguf) {
        printf("  %-34s %" PRIu64 "\n", "the four numbers at the front", l->head_end);
        char lbl[64];
        snprintf(lbl, sizeof lbl, "%" PRIu64 " metadata entries", l->n_kv);
        printf("  %-34s %" PRIu64 "\n", lbl, l->kv_end - l->head_end);
        snprintf(lbl, sizeof lbl, "%" PRIu64 " tensor infos", n);
        printf("  %-34s %" PRIu64 "\n", lbl, l->infos_end - l->kv_end);
        snprintf(lbl, sizeof lbl, "padding to alignment %" PRIu32 "%s", l->alignment,
                 l->alignment_declared ? "" : " (default)");
        printf("  %-34s %" PRIu64 "\n", lbl, l->padding);
    } else {
        /* a sharded checkpoint: the layout's counts are totals over its files */
        uint64_t files = l->n_shards > 1 ? l->n_shards : 1;
        if (files > 1)
            printf("  %-34s %" PRIu64 "\n", "files (shards)", files);
        printf("  %-34s %" PRIu64 "\n",
               files > 1 ? "header lengths, a u64 each" : "the header length, a u64", 8 * files);
        printf("  %-34s %" PRIu64 "\n", files > 1 ? "the JSON headers" : "the JSON header",
               l->kv_end - 8 * files);
    }
    printf("  %-34s %" PRIu64 "\n\n", "tensor data starts at", l->data_start);
    print_cut(f);

    printf("the tensors, gathered by element type\n");
    printf("  %-10s %8s %16s %16s\n", "type", "tensors", "weights", "bytes");
    for (size_t i = 0; i < a->n_types; i++)
        printf("  %-10s %8" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", type_label(a->types[i].type),
               a->types[i].count, a->types[i].weights, a->types[i].bytes);
    printf("  %-10s %8" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n\n", "all", n, a->weights,
           a->tensor_bytes);

    uint64_t sum = l->data_start + a->tensor_bytes + a->align_padding;
    printf("  %-34s %" PRIu64 "\n", "header and padding", l->data_start);
    printf("  %-34s %" PRIu64 "\n", "every tensor's bytes", a->tensor_bytes);
    printf("  %-34s %" PRIu64 "\n", "alignment padding between them", a->align_padding);
    printf("  %-34s %" PRIu64 "\n", "added together", sum);
    printf("  %-34s %" PRIu64 "\n", "the file on disk", l->file_size);
    if (l->file_size >= sum)
        printf("  %-34s %" PRIu64 "\n\n", "left over", l->file_size - sum);
    else
        printf("  %-34s -%" PRIu64 "\n\n", "left over", sum - l->file_size);

    printf("%" PRIu64 " tensor%s start%s where the one before ended%s, and %" PRIu64 " do%s not\n",
           a->contiguous, CLI_S(a->contiguous), a->contiguous == 1 ? "s" : "",
           gguf ? " (rounded up to the alignment)" : "", n - a->contiguous,
           n - a->contiguous == 1 ? "es" : "");
    for (size_t i = 0; i < a->n_findings; i++) {
        const finding *fd = &a->findings[i];
        char p[256], q[256];
        name_of(f, fd->prev, p, sizeof p);
        name_of(f, fd->next, q, sizeof q);
        if (strcmp(fd->what, "gap") == 0)
            printf("  gap of %" PRIu64 " bytes between %s and %s: it starts at %" PRIu64
                   " and would start at %" PRIu64 "\n",
                   fd->at - fd->expected, p, q, fd->at, fd->expected);
        else if (strcmp(fd->what, "overlap") == 0)
            printf("  overlap: %s starts at %" PRIu64 ", inside %s\n", q, fd->at, p);
        else if (strcmp(fd->what, "misaligned") == 0)
            printf("  misaligned: %s starts at %" PRIu64 ", not a multiple of %" PRIu32 "\n", q,
                   fd->at, l->alignment);
        else
            print_outside(f, fd->next, q);
    }
    printf("\nchecks\n");
    printf("  %-34s %" PRIu64 "\n", "bytes between tensors (gaps)", a->gap_bytes);
    printf("  %-34s %" PRIu64 "\n", "bytes after the last tensor", a->after_bytes);
    printf("  %-34s %s\n", "header + data = file size",
           l->data_start + l->data_size == l->file_size ? "yes" : "NO");
    printf("  %-34s %s\n", "offsets aligned", count_kind(a, "misaligned") ? "NO" : "yes");
    printf("  %-34s %s\n", "every tensor inside the file", count_kind(a, "outside") ? "NO" : "yes");
    printf("  %-34s %s\n\n", "no two tensors overlap", count_kind(a, "overlap") ? "NO" : "yes");
    if (a->ok)
        printf("consistent: %" PRIu64 " + %" PRIu64 " + %" PRIu64 " = %" PRIu64
               ", the file's size, and every tensor starts where the one before it ended\n",
               l->data_start, a->tensor_bytes, a->align_padding, l->file_size);
    else
        printf("NOT consistent: %zu disagreements between offsets and sizes, %" PRIu64
               " bytes in gaps, %" PRIu64 " bytes after the last tensor\n",
               a->n_findings, a->gap_bytes, a->after_bytes);
}

static json_t *to_json(const tm_file *f, const account *a)
{
    const tm_layout *l = tm_file_layout(f);
    json_t *types = json_array(), *findings = json_array();
    for (size_t i = 0; i < a->n_types; i++)
        json_array_append_new(types, json_pack("{s:s, s:I, s:o, s:o, s:o}", "type",
                                               type_label(a->types[i].type), "type_id",
                                               (json_int_t)a->types[i].type, "tensors",
                                               cli_json_u64(a->types[i].count), "weights",
                                               cli_json_u64(a->types[i].weights), "bytes",
                                               cli_json_u64(a->types[i].bytes)));
    for (size_t i = 0; i < a->n_findings; i++) {
        const finding *fd = &a->findings[i];
        json_t *o =
            json_pack("{s:s, s:o, s:o, s:o}", "kind", fd->what, "tensor", cli_json_u64(fd->next),
                      "offset", cli_json_u64(fd->at), "expected", cli_json_u64(fd->expected));
        json_object_set_new(o, "name", cli_json_str(tm_tensor_at(f, fd->next)->name));
        json_object_set_new(o, "previous",
                            fd->prev == UINT64_MAX ? json_null() : cli_json_u64(fd->prev));
        json_array_append_new(findings, o);
    }
    json_t *o = json_pack(
        "{s:b, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
        " s:o, s:o, s:o}",
        "consistent", a->ok, "format", l->format == TM_FORMAT_GGUF ? "gguf" : "safetensors",
        "head_bytes", cli_json_u64(l->head_end), "metadata_bytes",
        cli_json_u64(l->kv_end - l->head_end), "info_bytes", cli_json_u64(l->infos_end - l->kv_end),
        "padding", cli_json_u64(l->padding), "data_start", cli_json_u64(l->data_start), "alignment",
        (json_int_t)l->alignment, "alignment_declared", l->alignment_declared, "n_tensors",
        cli_json_u64(tm_n_tensors(f)), "tensor_bytes", cli_json_u64(a->tensor_bytes), "weights",
        cli_json_u64(a->weights), "alignment_padding", cli_json_u64(a->align_padding), "gap_bytes",
        cli_json_u64(a->gap_bytes), "after_bytes", cli_json_u64(a->after_bytes), "file_size",
        cli_json_u64(l->file_size), "contiguous", cli_json_u64(a->contiguous), "not_contiguous",
        cli_json_u64(tm_n_tensors(f) - a->contiguous), "types", types, "findings", findings);
    /* a file cut off after its header: what it must hold, what it lacks, the tensors cut */
    json_object_set_new(o, "size_needed", cli_json_u64(size_needed(f)));
    json_object_set_new(o, "missing_bytes", cli_json_u64(tm_file_missing_bytes(f)));
    json_object_set_new(o, "cut_tensors", cli_json_u64(cli_cut_tensors(f)));
    return o;
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_check, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_error err = {0};
    /* not cli_open: a refusal (an ollama: name that does not resolve too) is this command's
     * verdict, not just an error */
    tm_file *f = cli_open_quiet(arg, 0, &err, NULL);
    if (!f) {
        if (json) {
            cli_json_emit(json_pack("{s:b, s:s, s:s}", "consistent", 0, "refused", err.message,
                                    "status", tm_status_name(err.code)));
            return CLI_FAIL;
        }
        printf("%s: NOT consistent: the library refuses it: ", arg);
        cli_print_text(stdout, err.message);
        putchar('\n');
        return CLI_FAIL;
    }
    account a = {0};
    if (!add_up(f, &a)) {
        tm_close(f);
        cli_errorf("%s: out of memory", arg);
        return CLI_FAIL;
    }
    rc = CLI_OK;
    if (json)
        rc = cli_json_emit(to_json(f, &a));
    else
        print_text(arg, f, &a);
    if (rc == CLI_OK && !a.ok)
        rc = CLI_FAIL;
    free(a.findings);
    tm_close(f);
    return rc;
}

const cli_command cmd_check = {
    .name = "check",
    .alias = "account",
    .summary = "add the file up: header + tensors = file size, gaps, overlaps, alignment",
    .help = help,
    .run = run,
};
