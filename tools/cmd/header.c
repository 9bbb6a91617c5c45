/* tensormap header: everything in the file but the weights, as JSON. With --arrays the JSON is
 * complete enough for `tensormap write --from-header` to write the same header back byte for
 * byte; without, arrays are counted (and their byte size kept, so the header written back has
 * the same length and every offset still holds). */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap header [--arrays] [--json] FILE\n"
    "\n"
    "Print the header as JSON: format, version, alignment, the layout (where the metadata, the\n"
    "tensor infos, the padding and the data start and end), every metadata entry with its type\n"
    "and value, and every tensor info (name, type name and id, ne, offset, bytes). Arrays are\n"
    "counted (count, element type, bytes) but their elements are left out unless --arrays is\n"
    "given. Numbers are exact: an integer past 2^53 is written as a decimal string; a string that\n"
    "is not UTF-8 as {\"hex\": \"...\"}; an infinite or NaN float as \"inf\", \"-inf\" or\n"
    "\"nan:0xBITS\". `tensormap write --from-header` turns this back into a file.\n"
    "\n"
    "  --arrays  keep every array element (needed for a byte-identical header)\n"
    "  --json    accepted for symmetry: the output is always JSON\n";

static json_t *header_json(const tm_file *f, bool arrays, const char *arg)
{
    const tm_layout *l = tm_file_layout(f);
    json_t *kvs = json_array(), *tensors = json_array();
    for (uint64_t i = 0; kvs && i < tm_n_kv(f); i++) {
        json_t *kv = cli_json_kv(tm_kv_at(f, i), arrays);
        if (!kv) {
            char key[256];
            cli_errorf("%s: metadata entry %" PRIu64 " ('%s') cannot be written as JSON "
                       "(an array of arrays?)",
                       arg, i, cli_name(tm_kv_at(f, i)->key, 200, key, sizeof key));
            json_decref(kvs);
            json_decref(tensors);
            return NULL;
        }
        json_array_append_new(kvs, kv);
    }
    for (uint64_t i = 0; tensors && i < tm_n_tensors(f); i++)
        json_array_append_new(tensors, cli_json_tensor(f, tm_tensor_at(f, i)));
    return json_pack("{s:s, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
                     " s:b, s:o, s:o}",
                     "format", l->format == TM_FORMAT_GGUF ? "gguf" : "safetensors", "version",
                     (json_int_t)l->version, "alignment", (json_int_t)l->alignment,
                     "alignment_declared", l->alignment_declared, "n_kv", cli_json_u64(l->n_kv),
                     "n_tensors", cli_json_u64(l->n_tensors), "head_end", cli_json_u64(l->head_end),
                     "kv_end", cli_json_u64(l->kv_end), "infos_end", cli_json_u64(l->infos_end),
                     "padding", cli_json_u64(l->padding), "data_start", cli_json_u64(l->data_start),
                     "data_size", cli_json_u64(l->data_size), "tensors_end",
                     cli_json_u64(l->data_start + l->tensors_end), "file_size", cli_json_u64(l->file_size),
                     "arrays_kept", arrays, "kv", kvs, "tensors", tensors);
}

static int run(int argc, char **argv)
{
    bool json = false, arrays = false;
    const cli_flag flags[] = {{"json", &json}, {"arrays", &arrays}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_header, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    json_t *h = header_json(f, arrays, arg);
    rc = h ? cli_json_emit(h) : CLI_FAIL;
    tm_close(f);
    return rc;
}

const cli_command cmd_header = {
    .name = "header",
    .alias = NULL,
    .summary = "the header as JSON: everything but the weights (write turns it back into a file)",
    .help = help,
    .run = run,
};
