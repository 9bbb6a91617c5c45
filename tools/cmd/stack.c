/* tensormap stack: every tensor with the block number taken out of its name, so that a model's
 * repeated blocks collapse into one row per name; then where the bytes are: in front of the
 * stack, in it, behind it, and the smallest and largest block. */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap stack [--json] FILE\n"
    "\n"
    "List every tensor with the block number taken out of its name (blk.N.ffn_up.weight,\n"
    "model.layers.N.mlp.up_proj.weight): one row per name with the count, the shape, the\n"
    "element type (with counts when blocks differ: q4_K x14 q6_K x14) and the bytes of all of\n"
    "them. Then the bytes in front of the stack, in it and behind it (by where the data lies),\n"
    "the total, and the smallest and largest block.\n"
    "\n"
    "  --json    the same as one JSON object\n";

#define MAX_ROW_TYPES 8

typedef struct row {
    const char *generic;
    uint64_t first; /* the first tensor of this name, in file order */
    uint64_t count, bytes;
    bool shapes_differ;
    size_t n_types;
    tm_type types[MAX_ROW_TYPES];
    uint64_t type_counts[MAX_ROW_TYPES];
} row;

typedef struct block_sum {
    uint64_t block, bytes;
} block_sum;

static const cli_block_name *cmp_names;

static int by_generic(const void *x, const void *y)
{
    uint64_t i = *(const uint64_t *)x, j = *(const uint64_t *)y;
    int c = strcmp(cmp_names[i].generic, cmp_names[j].generic);
    return c ? c : (i > j) - (i < j);
}

static int by_first(const void *x, const void *y)
{
    const row *a = x, *b = y;
    return (a->first > b->first) - (a->first < b->first);
}

static int by_block(const void *x, const void *y)
{
    const block_sum *a = x, *b = y;
    return (a->block > b->block) - (a->block < b->block);
}

static bool same_shape(const tm_tensor *a, const tm_tensor *b)
{
    return a->n_dims == b->n_dims && memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

typedef struct stack {
    row *rows;
    size_t n_rows, n_repeating;
    block_sum *blocks; /* one per distinct block, by block number */
    size_t n_blocks;
    uint64_t front, in, behind;
    size_t smallest, largest; /* indices into blocks */
} stack;

static void add_type(row *r, tm_type t)
{
    size_t k = 0;
    while (k < r->n_types && r->types[k] != t)
        k++;
    if (k == r->n_types && r->n_types < MAX_ROW_TYPES)
        r->types[r->n_types++] = t;
    if (k < MAX_ROW_TYPES)
        r->type_counts[k]++;
}

/* Group the tensors by generic name (sorted, so n log n for any file) and sum the blocks. */
static bool build(const tm_file *f, const cli_block_name *names, stack *s)
{
    uint64_t n = tm_n_tensors(f);
    uint64_t *idx = malloc((size_t)(n ? n : 1) * sizeof *idx);
    s->rows = calloc((size_t)(n ? n : 1), sizeof *s->rows);
    s->blocks = calloc((size_t)(n ? n : 1), sizeof *s->blocks);
    if (!idx || !s->rows || !s->blocks) {
        free(idx);
        return false;
    }
    for (uint64_t i = 0; i < n; i++)
        idx[i] = i;
    cmp_names = names;
    qsort(idx, (size_t)n, sizeof *idx, by_generic);
    uint64_t stack_start = UINT64_MAX;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = idx[k];
        const tm_tensor *t = tm_tensor_at(f, i);
        if (k == 0 || strcmp(names[idx[k - 1]].generic, names[i].generic) != 0)
            s->rows[s->n_rows++] = (row){.generic = names[i].generic, .first = i};
        row *r = &s->rows[s->n_rows - 1];
        r->count++;
        r->bytes += t->n_bytes;
        r->shapes_differ |= !same_shape(t, tm_tensor_at(f, r->first));
        add_type(r, t->type);
        if (names[i].in_block) {
            s->blocks[s->n_blocks++] = (block_sum){names[i].block, t->n_bytes};
            if (t->offset < stack_start)
                stack_start = t->offset;
        }
    }
    free(idx);
    qsort(s->rows, s->n_rows, sizeof *s->rows, by_first);
    for (size_t r = 0; r < s->n_rows; r++)
        s->n_repeating += names[s->rows[r].first].in_block && s->rows[r].count > 1;

    /* fold the per-tensor entries into one per block */
    qsort(s->blocks, s->n_blocks, sizeof *s->blocks, by_block);
    size_t nb = 0;
    for (size_t k = 0; k < s->n_blocks; k++) {
        if (nb > 0 && s->blocks[nb - 1].block == s->blocks[k].block)
            s->blocks[nb - 1].bytes += s->blocks[k].bytes;
        else
            s->blocks[nb++] = s->blocks[k];
    }
    s->n_blocks = nb;
    for (size_t k = 0; k < nb; k++) {
        s->in += s->blocks[k].bytes;
        if (s->blocks[k].bytes < s->blocks[s->smallest].bytes)
            s->smallest = k;
        if (s->blocks[k].bytes > s->blocks[s->largest].bytes)
            s->largest = k;
    }
    /* front and behind by where the data lies: before the first byte of the stack, or not */
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        if (!names[i].in_block)
            *(t->offset < stack_start ? &s->front : &s->behind) += t->n_bytes;
    }
    return true;
}

static void types_text(const row *r, char *buf, size_t size)
{
    const char *n0 = tm_type_name(r->types[0]);
    if (r->n_types == 1) {
        snprintf(buf, size, "%s", n0 ? n0 : "unknown");
        return;
    }
    size_t at = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < r->n_types && at < size; k++) {
        const char *tn = tm_type_name(r->types[k]);
        int w = snprintf(buf + at, size - at, "%s%s x%" PRIu64, k ? " " : "", tn ? tn : "unknown",
                         r->type_counts[k]);
        if (w < 0)
            return;
        at += (size_t)w;
    }
}

static json_t *block_json(const block_sum *b)
{
    return json_pack("{s:o, s:o}", "block", cli_json_u64(b->block), "bytes",
                     cli_json_u64(b->bytes));
}

static json_t *to_json(const tm_file *f, const stack *s, tm_str arch)
{
    json_t *rows = json_array();
    for (size_t r = 0; r < s->n_rows; r++) {
        const row *w = &s->rows[r];
        json_t *types = json_array();
        for (size_t k = 0; k < w->n_types; k++)
            json_array_append_new(
                types, json_pack("{s:s, s:o}", "type",
                                 tm_type_name(w->types[k]) ? tm_type_name(w->types[k]) : "unknown",
                                 "count", cli_json_u64(w->type_counts[k])));
        json_array_append_new(
            rows, json_pack("{s:o, s:o, s:o, s:b, s:o, s:o}", "count", cli_json_u64(w->count),
                            "name", cli_json_str((tm_str){w->generic, strlen(w->generic)}), "ne",
                            cli_json_ne(tm_tensor_at(f, w->first)), "shapes_differ",
                            w->shapes_differ, "types", types, "bytes", cli_json_u64(w->bytes)));
    }
    json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "architecture",
                          arch.ptr ? cli_json_str(arch) : json_null(), "blocks",
                          cli_json_u64(s->n_blocks), "n_tensors", cli_json_u64(tm_n_tensors(f)),
                          "rows", rows, "front_bytes", cli_json_u64(s->front), "stack_bytes",
                          cli_json_u64(s->in), "behind_bytes", cli_json_u64(s->behind),
                          "total_bytes", cli_json_u64(s->front + s->in + s->behind));
    if (o && s->n_blocks) {
        json_object_set_new(o, "smallest_block", block_json(&s->blocks[s->smallest]));
        json_object_set_new(o, "largest_block", block_json(&s->blocks[s->largest]));
    }
    return o;
}

static void print_text(const char *arg, const tm_file *f, const stack *s, tm_str arch)
{
    printf("%s: every tensor, with the block number taken out of the name\n", arg);
    if (arch.ptr) {
        fputs("architecture ", stdout);
        cli_print_str(stdout, arch, 200);
        fputs(", ", stdout);
    }
    printf("%zu block%s, %" PRIu64 " tensor%s in the file", s->n_blocks, CLI_S(s->n_blocks),
           tm_n_tensors(f), CLI_S(tm_n_tensors(f)));
    uint64_t declared;
    if (tm_kv_get_uint(tm_arch_key(f, "block_count"), &declared) == TM_OK &&
        declared != s->n_blocks)
        printf(" (but the metadata says %" PRIu64 " block%s)", declared, CLI_S(declared));
    printf("\n\n");
    int wname = 4;
    for (size_t r = 0; r < s->n_rows; r++) {
        int len = (int)strlen(s->rows[r].generic);
        if (len > wname && len < 80)
            wname = len;
    }
    char shape[128], types[256];
    printf("%6s  %-*s  %-22s %-24s %14s\n", "count", wname, "name", "shape", "type", "bytes");
    for (size_t r = 0; r < s->n_rows; r++) {
        const row *w = &s->rows[r];
        cli_shape_of(f, tm_tensor_at(f, w->first), shape, sizeof shape);
        if (w->shapes_differ)
            strncat(shape, " (varies)", sizeof shape - strlen(shape) - 1);
        types_text(w, types, sizeof types);
        char name[256];
        cli_name((tm_str){w->generic, strlen(w->generic)}, 200, name, sizeof name);
        printf("%6" PRIu64 "  %-*s  %-22s %-24s %14" PRIu64 "\n", w->count, wname, name, shape,
               types, w->bytes);
    }
    printf("\n%zu names, and %zu of them are the ones that repeat\n", s->n_rows, s->n_repeating);
    printf("  %-24s %16" PRIu64 " bytes\n", "in front of the stack", s->front);
    printf("  %-24s %16" PRIu64 " bytes, over %zu blocks\n", "the stack itself", s->in,
           s->n_blocks);
    printf("  %-24s %16" PRIu64 " bytes\n", "behind it", s->behind);
    printf("  %-24s %16" PRIu64 " bytes\n", "the three together", s->front + s->in + s->behind);
    if (s->n_blocks) {
        const block_sum *lo = &s->blocks[s->smallest], *hi = &s->blocks[s->largest];
        printf("  %-24s %16" PRIu64 " bytes (block %" PRIu64 ")\n", "the smallest block", lo->bytes,
               lo->block);
        printf("  %-24s %16" PRIu64 " bytes (block %" PRIu64 ")\n", "the largest block", hi->bytes,
               hi->block);
    }
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_stack, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    uint64_t n = tm_n_tensors(f);
    cli_block_name *names = cli_block_names(f);
    stack s = {0};
    rc = CLI_OK;
    if (!names || !build(f, names, &s)) {
        cli_errorf("%s: out of memory", arg);
        rc = CLI_FAIL;
    } else if (json) {
        rc = cli_json_emit(to_json(f, &s, tm_architecture(f)));
    } else {
        print_text(arg, f, &s, tm_architecture(f));
    }
    free(s.rows);
    free(s.blocks);
    cli_block_names_free(names, n);
    tm_close(f);
    return rc;
}

const cli_command cmd_stack = {
    .name = "stack",
    .alias = NULL,
    .summary = "the tensors with block numbers taken out: the repeating blocks, and their bytes",
    .help = help,
    .run = run,
};
