/* tensormap layer N: one block taken apart tensor by tensor, then held against every other
 * block: a claim that N blocks are the same is a claim somebody should check. */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap layer [--json] FILE N\n"
    "\n"
    "Show block N (the tensors named blk.N.* or model.layers.N.*) tensor by tensor: name,\n"
    "shape, type, offset (from the data start) and bytes, sorted by name. Then how the other\n"
    "blocks compare with it: how many have the same names and shapes, how many of those have\n"
    "the same element types too, how many the same shapes with some other type, and which\n"
    "blocks differ in names or shapes.\n"
    "\n"
    "  --json    the same as one JSON object\n";

typedef struct entry {
    uint64_t block, tensor;
    const char *rest; /* the name after "blk.N." */
} entry;

static int by_block_rest(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->block != b->block)
        return a->block < b->block ? -1 : 1;
    return strcmp(a->rest, b->rest);
}

/* How block b (entries [b0, b1)) compares with the chosen one ([c0, c1)). */
enum likeness { SAME_TYPES, OTHER_TYPES, DIFFERENT };

static enum likeness compare(const tm_file *f, const entry *e, size_t c0, size_t c1, size_t b0,
                             size_t b1)
{
    if (c1 - c0 != b1 - b0)
        return DIFFERENT;
    bool types = true;
    for (size_t k = 0; k < c1 - c0; k++) {
        const tm_tensor *x = tm_tensor_at(f, e[c0 + k].tensor),
                        *y = tm_tensor_at(f, e[b0 + k].tensor);
        if (strcmp(e[c0 + k].rest, e[b0 + k].rest) != 0 || x->n_dims != y->n_dims ||
            memcmp(x->ne, y->ne, sizeof x->ne) != 0)
            return DIFFERENT;
        types &= x->type == y->type;
    }
    return types ? SAME_TYPES : OTHER_TYPES;
}

static int report(const char *arg, const tm_file *f, entry *e, size_t n, uint64_t want, bool json)
{
    qsort(e, n, sizeof *e, by_block_rest);
    size_t c0 = 0;
    while (c0 < n && e[c0].block != want)
        c0++;
    size_t c1 = c0;
    while (c1 < n && e[c1].block == want)
        c1++;
    if (c0 == c1) {
        if (n == 0) {
            cli_errorf("%s: no tensor names a block (blk.N. or layers.N.)", arg);
            return CLI_FAIL;
        }
        /* a block the file does not have is a usage error, as a tensor name it lacks is */
        cli_errorf("%s: no block %" PRIu64 " (blocks run from %" PRIu64 " to %" PRIu64 ")", arg,
                   want, e[0].block, e[n - 1].block);
        return CLI_USAGE;
    }
    uint64_t counts[3] = {0, 0, 0}, bytes = 0;
    json_t *different = json_array();
    for (size_t b0 = 0, b1; b0 < n; b0 = b1) {
        for (b1 = b0; b1 < n && e[b1].block == e[b0].block;)
            b1++;
        if (e[b0].block == want)
            continue;
        enum likeness l = compare(f, e, c0, c1, b0, b1);
        counts[l]++;
        if (l == DIFFERENT)
            json_array_append_new(different, cli_json_u64(e[b0].block));
    }
    uint64_t others = counts[0] + counts[1] + counts[2];
    char shape[128];
    if (json) {
        json_t *tensors = json_array();
        for (size_t k = c0; k < c1; k++) {
            const tm_tensor *t = tm_tensor_at(f, e[k].tensor);
            json_t *o = cli_json_tensor(f, t);
            if (o)
                json_object_set_new(o, "short_name",
                                    cli_json_str((tm_str){e[k].rest, strlen(e[k].rest)}));
            json_array_append_new(tensors, o);
            bytes += t->n_bytes;
        }
        return cli_json_emit(json_pack(
            "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "block", cli_json_u64(want), "tensors",
            tensors, "bytes", cli_json_u64(bytes), "other_blocks", cli_json_u64(others),
            "same_names_and_shapes", cli_json_u64(counts[SAME_TYPES] + counts[OTHER_TYPES]),
            "same_types_too", cli_json_u64(counts[SAME_TYPES]), "other_types",
            cli_json_u64(counts[OTHER_TYPES]), "different_blocks", different));
    }
    printf("%s: block %" PRIu64 ", tensor by tensor\n\n", arg, want);
    int wname = 4;
    for (size_t k = c0; k < c1; k++)
        if ((int)strlen(e[k].rest) > wname && strlen(e[k].rest) < 80)
            wname = (int)strlen(e[k].rest);
    printf("%-*s  %-22s %-8s %16s %14s\n", wname, "name", "shape", "type", "offset", "bytes");
    for (size_t k = c0; k < c1; k++) {
        const tm_tensor *t = tm_tensor_at(f, e[k].tensor);
        cli_shape_of(f, t, shape, sizeof shape);
        const char *tn = tm_type_name(t->type);
        char name[256];
        cli_name((tm_str){e[k].rest, strlen(e[k].rest)}, 200, name, sizeof name);
        printf("%-*s  %-22s %-8s %16" PRIu64 " %14" PRIu64 "\n", wname, name, shape,
               tn ? tn : "unknown", t->offset, t->n_bytes);
        bytes += t->n_bytes;
    }
    printf("%zu tensor%s, %" PRIu64 " byte%s\n\n", c1 - c0, CLI_S(c1 - c0), bytes, CLI_S(bytes));
    printf("against the other %" PRIu64 " block%s\n", others, CLI_S(others));
    printf("  %-36s %" PRIu64 "\n", "same names and shapes",
           counts[SAME_TYPES] + counts[OTHER_TYPES]);
    printf("  %-36s %" PRIu64 "\n", "and the same element types too", counts[SAME_TYPES]);
    printf("  %-36s %" PRIu64 "\n", "same shapes, some type elsewhere", counts[OTHER_TYPES]);
    printf("  %-36s %" PRIu64, "other names or shapes", counts[DIFFERENT]);
    for (size_t k = 0; k < json_array_size(different) && k < 16; k++)
        printf("%s%" JSON_INTEGER_FORMAT, k ? ", " : " (blocks ",
               json_integer_value(json_array_get(different, k)));
    if (json_array_size(different) > 16)
        printf(", ...");
    printf("%s\n", json_array_size(different) ? ")" : "");
    json_decref(different);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    int first = 0;
    int rc = cli_flag_args(argc, argv, &cmd_layer, flags, 2, 2, &first);
    if (rc >= 0)
        return rc;
    uint64_t want;
    if (!cli_parse_u64(argv[first + 1], &want)) {
        cli_errorf("layer: N is a block number, not '%s'", argv[first + 1]);
        return cli_usage(&cmd_layer);
    }
    tm_file *f = cli_open(argv[first], 0);
    if (!f)
        return CLI_FAIL;
    uint64_t n = tm_n_tensors(f);
    cli_block_name *names = cli_block_names(f);
    entry *e = malloc((size_t)(n ? n : 1) * sizeof *e);
    if (!names || !e) {
        cli_errorf("%s: out of memory", argv[first]);
        rc = CLI_FAIL;
    } else {
        size_t m = 0;
        for (uint64_t i = 0; i < n; i++)
            if (names[i].in_block)
                e[m++] = (entry){names[i].block, i, names[i].generic + names[i].rest};
        rc = report(argv[first], f, e, m, want, json);
    }
    free(e);
    cli_block_names_free(names, n);
    tm_close(f);
    return rc;
}

const cli_command cmd_layer = {
    .name = "layer",
    .alias = NULL,
    .summary = "one block tensor by tensor, and how the other blocks compare with it",
    .help = help,
    .run = run,
};
