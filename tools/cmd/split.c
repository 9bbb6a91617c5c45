/* tensormap split: one GGUF file into a split set in llama.cpp's gguf-split layout. The first
 * shard holds split.no (u16), split.count (u16) and split.tensors.count (i32), then the
 * source's metadata; the others hold the split.* keys alone (and general.alignment when the
 * source declares one, so that every shard reads with the source's alignment). Tensors keep
 * their order and their bytes, which the library copies from the source file. */
#include "../cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap split [--max-tensors N | --max-size SIZE] FILE PREFIX\n"
    "\n"
    "Write the GGUF file FILE as a split set PREFIX-00001-of-0000K.gguf ... in llama.cpp's\n"
    "gguf-split layout: every shard a complete GGUF file with split.no (u16, from 0),\n"
    "split.count (u16) and split.tensors.count (i32); the metadata in the first shard only; the\n"
    "source's version and alignment in every shard; the tensors in order, their bytes\n"
    "unchanged. A shard ends before the tensor that would pass --max-tensors (128 unless\n"
    "--max-size is given) or --max-size bytes of tensor data (a larger tensor gets a shard of\n"
    "its own). A set is at most 65,535 shards (split.count is a u16). Each shard is written\n"
    "whole and read back under a hidden name, and the set is renamed into place only when every\n"
    "shard is complete, the first shard last. Another set named PREFIX-*-of-*.gguf (of another\n"
    "count) is refused rather than left beside the new one. tensormap merge undoes it.\n"
    "\n"
    "  --max-tensors N   at most N tensors per shard\n"
    "  --max-size SIZE   at most SIZE bytes of tensor data per shard (soft, as in gguf-split):\n"
    "                    bytes, or a number (1.5 too) with K/M/G/T or KB/MB/GB/TB (10^3 ...\n"
    "                    10^12, as gguf-split and Hugging Face count), or KiB/MiB/GiB/TiB\n"
    "                    (2^10 ... 2^40); units in any case\n";

/* Shard k (from 0) of n: its metadata, its tensors [first, end), written as write_to (its
 * staged name: the set goes into place whole) for path. */
static int write_shard(const tm_file *f, uint32_t k, uint32_t n, uint64_t first, uint64_t end,
                       const char *path, const char *write_to)
{
    const tm_layout *l = tm_file_layout(f);
    tm_writer *w = NULL;
    tm_error err = {0};
    const uint16_t no = (uint16_t)k, count = (uint16_t)n;
    if (!cli_output_allowed(path))
        return CLI_FAIL;
    const int32_t total = (int32_t)l->n_tensors;
    tm_status st = cli_model_writer(f, &w, &err);
    if (st == TM_OK)
        st = tm_writer_kv_scalar(w, "split.no", TM_V_U16, &no, &err);
    if (st == TM_OK)
        st = tm_writer_kv_scalar(w, "split.count", TM_V_U16, &count, &err);
    if (st == TM_OK)
        st = tm_writer_kv_scalar(w, "split.tensors.count", TM_V_I32, &total, &err);
    for (uint64_t i = 0; st == TM_OK && i < l->n_kv; i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        const bool alignment = kv->key.len == 17 && memcmp(kv->key.ptr, "general.alignment", 17) == 0;
        if (!cli_split_key(kv->key) && (k == 0 || alignment))
            st = tm_writer_kv_copy(w, kv, &err);
    }
    for (uint64_t i = first; st == TM_OK && i < end; i++)
        st = tm_writer_tensor_copy(w, f, tm_tensor_at(f, i), NULL, false, &err);
    if (cli_model_finish(w, st, &err, write_to) != CLI_OK)
        return CLI_FAIL;
    printf("%s: %" PRIu64 " tensor%s\n", path, end - first, end - first == 1 ? "" : "s");
    return CLI_OK;
}

/* Where each shard starts, into *starts (malloc'ed, *n + 1 entries; the last is the tensor
 * count): a shard ends before the tensor that would pass a limit. Everything that would make
 * the set unwritable is refused here, before any shard is written. */
static int plan_shards(const tm_file *f, const char *arg, uint64_t max_tensors, uint64_t max_size,
                       uint64_t **starts, uint64_t *n)
{
    const tm_layout *l = tm_file_layout(f);
    if (l->format != TM_FORMAT_GGUF) {
        cli_errorf("%s: split writes GGUF sets; this is not a GGUF file", arg);
        return CLI_FAIL;
    }
    if (l->n_tensors > INT32_MAX) { /* split.tensors.count is an i32 */
        cli_errorf("%s: %" PRIu64 " tensors are more than a split set counts", arg, l->n_tensors);
        return CLI_FAIL;
    }
    /* at most as many shards as tensors, and one (the metadata alone) for a file of none,
     * such as a vocabulary */
    const uint64_t max_shards = l->n_tensors > 0 ? l->n_tensors : 1;
    uint64_t *s = *starts = malloc(((size_t)max_shards + 1) * sizeof *s);
    if (!s) {
        cli_errorf("split: out of memory");
        return CLI_FAIL;
    }
    uint64_t k = 0, in_shard = 0, bytes = 0;
    s[k++] = 0;
    for (uint64_t i = 0; i < l->n_tensors; i++) {
        uint64_t size;
        if (!cli_align_up(tm_tensor_at(f, i)->n_bytes, l->alignment, &size))
            size = UINT64_MAX;
        if (in_shard > 0 && ((max_tensors && in_shard >= max_tensors) ||
                             (max_size && (size > max_size - bytes || bytes > max_size)))) {
            s[k++] = i;
            in_shard = 0;
            bytes = 0;
        }
        in_shard++;
        bytes = size > UINT64_MAX - bytes ? UINT64_MAX : bytes + size;
    }
    s[*n = k] = l->n_tensors;
    /* split.no and split.count are u16s: shard 65,537 would say it is shard 1 of a set of 1 */
    if (k > UINT16_MAX) {
        cli_errorf("%s: %" PRIu64 " shards are more than a split set counts (split.count is a "
                   "u16: at most %u); allow more tensors or bytes a shard", arg, k, UINT16_MAX);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* The set PREFIX-NNNNN-of-NNNNN.gguf, in PREFIX's directory. NULL after a message. */
static cli_output_set *new_set(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    char *dir = slash ? strndup(prefix, slash == prefix ? 1 : (size_t)(slash - prefix))
                      : strdup(".");
    cli_output_set *set = dir ? cli_output_set_new(dir, slash ? slash + 1 : prefix, ".gguf") : NULL;
    free(dir);
    return set;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"max-tensors", required_argument, NULL, 't'},
                                         {"max-size", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    uint64_t max_tensors = 0, max_size = 0;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "h", opts, &cmd_split)) != -1) {
        if (c == 't' && !(cli_parse_u64(optarg, &max_tensors) && max_tensors > 0)) {
            cli_errorf("split: --max-tensors wants a whole number above 0, not '%s'", optarg);
            return CLI_USAGE;
        } else if (c == 's' && !cli_parse_size(optarg, &max_size)) {
            cli_errorf("split: --max-size %s: " CLI_SIZE_FORMS, optarg);
            return CLI_USAGE;
        } else if (c == 'h') {
            return fputs(help, stdout), CLI_OK;
        } else if (c != 't' && c != 's') {
            return cli_usage(&cmd_split);
        }
    }
    if (max_tensors && max_size) {
        cli_errorf("split: --max-tensors and --max-size: one or the other");
        return CLI_USAGE;
    }
    if (argc - optind != 2) {
        cli_errorf("split: FILE and PREFIX");
        return cli_usage(&cmd_split);
    }
    if (!max_tensors && !max_size)
        max_tensors = 128;
    const char *arg = argv[optind], *prefix = argv[optind + 1];
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    uint64_t *starts = NULL, n = 0;
    int rc = plan_shards(f, arg, max_tensors, max_size, &starts, &n);
    /* every shard named and staged first: the set is put in place whole, the first shard last */
    cli_output_set *set = rc == CLI_OK ? new_set(prefix) : NULL;
    char **paths = rc == CLI_OK ? calloc((size_t)n, sizeof *paths) : NULL;
    const char **to = rc == CLI_OK ? calloc((size_t)n, sizeof *to) : NULL;
    if (rc == CLI_OK && (!set || !paths || !to))
        rc = CLI_FAIL;
    for (uint64_t k = 0; rc == CLI_OK && k < n; k++)
        if (asprintf(&paths[k], "%s-%05u-of-%05u.gguf", prefix, (unsigned)k + 1, (unsigned)n) < 0)
            paths[k] = NULL, rc = (cli_errorf("out of memory"), CLI_FAIL);
        else if (!(to[k] = cli_output_set_add(set, paths[k])))
            rc = CLI_FAIL;
    if (rc == CLI_OK && !cli_output_set_ready(set))
        rc = CLI_FAIL;
    for (uint64_t k = 0; rc == CLI_OK && k < n; k++)
        rc = write_shard(f, (uint32_t)k, (uint32_t)n, starts[k], starts[k + 1], paths[k], to[k]);
    rc = cli_output_set_finish(set, rc, paths ? paths[0] : NULL);
    for (uint64_t k = 0; paths && k < n; k++)
        free(paths[k]);
    free(paths);
    free(to);
    free(starts);
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_split = {
    .name = "split",
    .alias = NULL,
    .summary = "write a GGUF file as a split set (gguf-split's layout), tensor bytes unchanged",
    .help = help,
    .run = run,
};
