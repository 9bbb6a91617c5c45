/* tensormap merge: a split GGUF set back into one file. The library opens the set as one model
 * (the first shard's metadata, every shard's tensors in order); the file written holds that
 * metadata without the split.* keys and every tensor with its bytes unchanged. */
#include "../cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap merge FIRST_SHARD OUT\n"
    "\n"
    "Write the split GGUF set whose first shard is FIRST_SHARD (PREFIX-00001-of-0000K.gguf; any\n"
    "shard with --all-shards) as one file OUT: the first shard's metadata without the split.*\n"
    "keys (nor the older general.split* ones), the first shard's version and alignment, every\n"
    "tensor in order with its bytes unchanged. OUT is written to a temporary file, read back,\n"
    "and renamed into place; it may not be one of the shards. Refused, before anything is\n"
    "written: a file that is not a split set (it is one model already), and a shard other\n"
    "than the first opened alone (the message names the first shard).\n";

/* The set's split.no and split.count, by the names the library reads (the older
 * general.split_no / general.split / general.split_count too); false for a file with none. */
static bool split_numbers(const tm_file *f, uint64_t *no, uint64_t *count)
{
    static const char *const no_keys[] = {"split.no", "general.split_no", "general.split"};
    static const char *const count_keys[] = {"split.count", "general.split_count"};
    bool have_no = false, have_count = false;
    for (size_t i = 0; i < sizeof no_keys / sizeof no_keys[0] && !have_no; i++)
        have_no = tm_kv_get_uint(tm_kv_find(f, no_keys[i]), no) == TM_OK;
    for (size_t i = 0; i < sizeof count_keys / sizeof count_keys[0] && !have_count; i++)
        have_count = tm_kv_get_uint(tm_kv_find(f, count_keys[i]), count) == TM_OK;
    return have_no && have_count;
}

/* The name the set's naming gives its first shard: PREFIX-00002-of-00003.gguf becomes
 * PREFIX-00001-of-00003.gguf (malloc'ed); NULL when path is not named so. */
static char *first_shard_name(const char *path)
{
    const size_t len = strlen(path);
    size_t end = len >= 5 && strcmp(path + len - 5, ".gguf") == 0 ? len - 5 : 0, at = end;
    while (at > 0 && path[at - 1] >= '0' && path[at - 1] <= '9')
        at--; /* the count */
    if (at == end || at < 4 || memcmp(path + at - 4, "-of-", 4) != 0)
        return NULL;
    end = at -= 4;
    while (at > 0 && path[at - 1] >= '0' && path[at - 1] <= '9')
        at--; /* this shard's number */
    if (at == end || at == 0 || path[at - 1] != '-')
        return NULL;
    char *first;
    return asprintf(&first, "%.*s%0*d%s", (int)at, path, (int)(end - at), 1, path + end) < 0
               ? NULL : first;
}

/* What merge takes: a whole split set (from its first shard, or any with --all-shards). */
static int check_whole_set(const tm_file *f, const char *arg)
{
    uint64_t no, count;
    const uint32_t open = tm_file_layout(f)->n_shards;
    if (!split_numbers(f, &no, &count)) {
        cli_errorf("%s: not a split set (no split.count): merge joins the shards of one, and "
                   "this file is one model already", arg);
        return CLI_USAGE;
    }
    if (no != 0) {
        char *first = first_shard_name(arg);
        cli_errorf("%s: shard %" PRIu64 " of %" PRIu64 ", opened alone: merge the set from its "
                   "first shard, %s (or this one with --all-shards)", arg, no + 1, count,
                   first ? first : "the one with split.no = 0");
        free(first);
        return CLI_USAGE;
    }
    if (open != count) {
        cli_errorf("%s: %" PRIu32 " of the set's %" PRIu64 " shards open (--one-shard?): merge "
                   "needs every shard", arg, open, count);
        return CLI_USAGE;
    }
    return CLI_OK;
}

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
    if ((rc = check_whole_set(f, arg)) != CLI_OK) {
        tm_close(f);
        return rc;
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
