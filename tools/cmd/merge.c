/* tensormap merge: a split GGUF set back into one file. The library opens the set as one model
 * (the first shard's metadata, every shard's tensors in order); the file written holds that
 * metadata without the split.* keys and every tensor with its bytes unchanged. */
#include "../cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

static const char help[] =
    "usage: tensormap merge FIRST_SHARD OUT\n"
    "\n"
    "Write the split GGUF set whose first shard is FIRST_SHARD (PREFIX-00001-of-0000K.gguf; any\n"
    "shard with --all-shards) as one file OUT: the first shard's metadata without the split.*\n"
    "keys (nor the older general.split* ones), the first shard's version and alignment, every\n"
    "tensor in order with its bytes unchanged. OUT is written to a temporary file, read back,\n"
    "and renamed into place; it may not be one of the shards.\n";

static int run(int argc, char **argv)
{
    const cli_flag flags[] = {{NULL, NULL}};
    int first;
    int rc = cli_flag_args(argc, argv, &cmd_merge, flags, 2, 2, &first);
    if (rc >= 0)
        return rc;
    const char *arg = argv[first], *out = argv[first + 1];
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    const tm_layout *l = tm_file_layout(f);
    rc = CLI_OK;
    if (!cli_output_allowed(out)) {
        tm_close(f);
        return CLI_FAIL;
    }
    if (l->format != TM_FORMAT_GGUF) {
        cli_errorf("%s: merge writes GGUF files; this is not a GGUF file", arg);
        tm_close(f);
        return CLI_FAIL;
    }
    tm_writer *w = NULL;
    tm_error err = {0};
    tm_status st = cli_model_writer(f, &w, &err);
    for (uint64_t i = 0; st == TM_OK && i < l->n_kv; i++)
        if (!cli_split_key(tm_kv_at(f, i)->key))
            st = tm_writer_kv_copy(w, tm_kv_at(f, i), &err);
    for (uint64_t i = 0; st == TM_OK && i < l->n_tensors; i++)
        st = tm_writer_tensor_copy(w, f, tm_tensor_at(f, i), NULL, false, &err);
    rc = cli_model_finish(w, st, &err, out);
    if (rc == CLI_OK)
        printf("%s: %" PRIu64 " tensors from %" PRIu32 " shard%s\n", out, l->n_tensors,
               l->n_shards, l->n_shards == 1 ? "" : "s");
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_merge = {
    .name = "merge",
    .alias = NULL,
    .summary = "write a split GGUF set as one file, tensor bytes unchanged",
    .help = help,
    .run = run,
};
