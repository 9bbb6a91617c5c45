/* tensormap tensors: every tensor in file order, with its shape, element type, offset from the
 * data start and size (computed from shape and type, never from the next offset). */
#include "../cli/cli.h"

#include <inttypes.h>
#include <string.h>

static const char help[] =
    "usage: tensormap tensors [--json] FILE\n"
    "\n"
    "List every tensor in file order: name, shape, element type, offset from the start of the\n"
    "data section, and size in bytes. A GGUF shape is written as the file stores it, row length\n"
    "first (\"ne0 x ne1 ...\", so a 3584 x 152064 embedding has rows of 3584); a safetensors\n"
    "shape is written in the file's own (PyTorch) order, in brackets. The last line adds them\n"
    "up. In a sharded checkpoint each offset counts from its own shard's data, and a last\n"
    "column says which shard.\n"
    "\n"
    "  --json    a JSON array of {\"name\", \"type\", \"type_id\", \"ne\": [...], \"data_offset\",\n"
    "            \"file_offset\" (from the start of the file), \"n_bytes\"}, plus \"shape\" in\n"
    "            the file's order for safetensors and \"shard\" when sharded; a name that is not\n"
    "            valid UTF-8 is {\"hex\": \"...\"}\n";

static const char *type_name(tm_type type)
{
    const char *name = tm_type_name(type);
    return name ? name : "?";
}

static int print_text(const tm_file *f)
{
    const uint64_t n = tm_n_tensors(f);
    int name_w = 4, shape_w = 5, type_w = 4, off_w = 6, bytes_w = 5;
    char shape[96];
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        cli_shape_of(f, t, shape, sizeof shape);
        int w;
        if (t->name.len > (uint64_t)name_w)
            name_w = t->name.len > 64 ? 64 : (int)t->name.len;
        if ((w = (int)strlen(shape)) > shape_w)
            shape_w = w;
        if ((w = (int)strlen(type_name(t->type))) > type_w)
            type_w = w;
        if ((w = snprintf(NULL, 0, "%" PRIu64, t->offset)) > off_w)
            off_w = w;
        if ((w = snprintf(NULL, 0, "%" PRIu64, t->n_bytes)) > bytes_w)
            bytes_w = w;
    }
    /* offsets of a sharded checkpoint count from each shard's own data start */
    const bool sharded = tm_file_layout(f)->n_shards > 1;
    printf("%-*s  %-*s  %-*s  %*s  %*s%s\n", name_w, "name", shape_w, "shape", type_w, "type",
           off_w, "offset", bytes_w, "bytes", sharded ? "  shard" : "");
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        cli_shape_of(f, t, shape, sizeof shape);
        cli_print_str(stdout, t->name, UINT64_MAX);
        printf("%*s  %-*s  %-*s  %*" PRIu64 "  %*" PRIu64,
               t->name.len < (uint64_t)name_w ? name_w - (int)t->name.len : 0, "", shape_w,
               shape, type_w, type_name(t->type), off_w, t->offset, bytes_w, t->n_bytes);
        if (sharded)
            printf("  %5" PRIu32, t->shard);
        putchar('\n');
        total += t->n_bytes; /* cannot overflow: the library checked every tensor is in the file */
    }
    printf("%" PRIu64 " tensor%s, %" PRIu64 " bytes\n", n, n == 1 ? "" : "s", total);
    return CLI_OK;
}

static json_t *to_json(const tm_file *f)
{
    json_t *a = json_array();
    for (uint64_t i = 0; a && i < tm_n_tensors(f); i++) {
        if (json_array_append_new(a, cli_json_tensor(f, tm_tensor_at(f, i))) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static int run(int argc, char **argv)
{
    bool json = false;
    const cli_flag flags[] = {{"json", &json}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_tensors, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    rc = json ? cli_json_emit(to_json(f)) : print_text(f);
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_tensors = {
    .name = "tensors",
    .alias = NULL,
    .summary = "every tensor: name, shape, type, offset, bytes",
    .help = help,
    .run = run,
};
