/* tensormap header: everything in the file but the weights, as JSON. With --arrays the JSON is
 * complete enough for `tensormap write --from-header` to write the same header back byte for
 * byte; without, arrays are counted (and their byte size kept, so the header written back has
 * the same length and every offset still holds). */
#include "cli_util.h"

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
    "given. Numbers are exact: a u64 above 2^63-1 is written as a decimal string; a string that\n"
    "is not UTF-8 as {\"hex\": \"...\"}; an infinite or NaN float as \"inf\", \"-inf\" or\n"
    "\"nan:0xBITS\". `tensormap write --from-header` turns this back into a file.\n"
    "\n"
    "  --arrays  keep every array element (needed for a byte-identical header)\n"
    "  --json    accepted for symmetry: the output is always JSON\n";

static json_t *kv_json(const tm_kv *kv, bool arrays)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "key", cli_json_str(kv->key));
    json_object_set_new(o, "type", json_string(tm_vtype_name(kv->type)));
    if (kv->type != TM_V_ARRAY) {
        json_object_set_new(o, "value", cli_json_kv_value(kv));
        return o;
    }
    const char *et = tm_vtype_name(kv->elem_type);
    json_object_set_new(o, "elem_type", et ? json_string(et) : json_integer(kv->elem_type));
    json_object_set_new(o, "count", cli_json_u64(kv->count));
    json_object_set_new(o, "bytes", cli_json_u64(kv->data_bytes));
    if (arrays) {
        json_t *v = cli_json_kv_value(kv);
        if (!v) { /* nested arrays, which ggml never writes: say so rather than drop them */
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "values", v);
    }
    return o;
}

static json_t *tensor_json(const tm_tensor *t)
{
    const char *tn = tm_type_name(t->type);
    json_t *o = json_pack("{s:o, s:s, s:I, s:o, s:o, s:o}", "name", cli_json_str(t->name), "type",
                          tn ? tn : "unknown", "type_id", (json_int_t)t->type, "ne", cli_json_ne(t),
                          "offset", cli_json_u64(t->offset), "n_bytes", cli_json_u64(t->n_bytes));
    return o;
}

static json_t *header_json(const tm_file *f, bool arrays, const char *arg)
{
    const tm_layout *l = tm_file_layout(f);
    json_t *kvs = json_array(), *tensors = json_array();
    for (uint64_t i = 0; kvs && i < tm_n_kv(f); i++) {
        json_t *kv = kv_json(tm_kv_at(f, i), arrays);
        if (!kv) {
            tm_str k = tm_kv_at(f, i)->key;
            cli_errorf("%s: metadata entry %" PRIu64 " ('%.*s') cannot be written as JSON "
                       "(an array of arrays?)",
                       arg, i, (int)(k.len > 200 ? 200 : k.len), k.ptr);
            json_decref(kvs);
            json_decref(tensors);
            return NULL;
        }
        json_array_append_new(kvs, kv);
    }
    for (uint64_t i = 0; tensors && i < tm_n_tensors(f); i++)
        json_array_append_new(tensors, tensor_json(tm_tensor_at(f, i)));
    return json_pack("{s:s, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
                     " s:b, s:o, s:o}",
                     "format", l->format == TM_FORMAT_GGUF ? "gguf" : "safetensors", "version",
                     (json_int_t)l->version, "alignment", (json_int_t)l->alignment,
                     "alignment_declared", l->alignment_declared, "n_kv", cli_json_u64(l->n_kv),
                     "n_tensors", cli_json_u64(l->n_tensors), "head_end", cli_json_u64(l->head_end),
                     "kv_end", cli_json_u64(l->kv_end), "infos_end", cli_json_u64(l->infos_end),
                     "padding", cli_json_u64(l->padding), "data_start", cli_json_u64(l->data_start),
                     "data_size", cli_json_u64(l->data_size), "tensors_end",
                     cli_json_u64(l->tensors_end), "file_size", cli_json_u64(l->file_size),
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
