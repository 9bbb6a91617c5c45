/* tensormap bytes: the header as bytes, with a name against every field. A format with no
 * delimiters is a format where position is meaning; this prints the positions. */
#include "cli_util.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap bytes [--all] [--json] FILE\n"
    "\n"
    "Print the header as bytes with a name against every field: the offset, the field's first\n"
    "bytes in hex, and what the field is (the magic, the version, the two counts, each metadata\n"
    "entry, each tensor info, the padding, the start of the tensor data). Arrays show their\n"
    "first elements, then a line saying how many were skipped.\n"
    "\n"
    "  --all     every field: each entry and tensor info taken apart (key length, key, value\n"
    "            type, value; name length, name, n_dims, ne, type, offset), and every element\n"
    "            of every array\n"
    "  --json    a JSON array of {offset, size, hex, field}\n";

enum { HEX_SHOWN = 12, ELEMS_SHOWN = 3 };

typedef struct out {
    const uint8_t *base;
    uint64_t file_size;
    json_t *json; /* NULL: text */
} out;

/* One field: offset, size, the first bytes in hex, a description. */
__attribute__((format(printf, 5, 6))) static void field(out *o, uint64_t at, uint64_t size,
                                                        int indent, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char hex[HEX_SHOWN * 3 + 8] = "";
    uint64_t shown = size < HEX_SHOWN ? size : HEX_SHOWN;
    if (at > o->file_size || shown > o->file_size - at)
        shown = at < o->file_size ? o->file_size - at : 0;
    for (uint64_t i = 0; i < shown; i++)
        snprintf(hex + 3 * i, 4, "%02x ", o->base[at + i]);
    if (shown)
        hex[3 * shown - 1] = '\0';
    if (size > shown)
        strcat(hex, " ...");
    if (o->json) {
        json_array_append_new(o->json,
                              json_pack("{s:o, s:o, s:s, s:s}", "offset", cli_json_u64(at), "size",
                                        cli_json_u64(size), "hex", hex, "field", what));
        return;
    }
    printf("%10" PRIu64 "  %-*s  %*s%s\n", at, HEX_SHOWN * 3 + 3, hex, indent, "", what);
}

/* The name of a key or tensor for a description: printable, cut at 80 bytes. */
static const char *label(tm_str s, char *buf, size_t size)
{
    return cli_name(s, 80, buf, size);
}

static void array_elements(out *o, const tm_kv *kv, bool all)
{
    uint64_t shown = all ? kv->count : (kv->count < ELEMS_SHOWN ? kv->count : ELEMS_SHOWN);
    uint64_t first_byte = (uint64_t)(kv->data - o->base), skipped_from = first_byte;
    if (kv->elem_type == TM_V_STRING) {
        tm_str_iter it;
        tm_str s;
        uint64_t i = 0;
        if (tm_kv_strings(kv, &it) != TM_OK)
            return;
        while (i < shown && tm_str_next(&it, &s)) {
            uint64_t at = (uint64_t)((const uint8_t *)s.ptr - o->base) - 8;
            char name[128];
            field(o, at, 8 + s.len, 2, "element %" PRIu64 ": \"%s\"", i,
                  label(s, name, sizeof name));
            skipped_from = at + 8 + s.len;
            i++;
        }
    } else {
        uint32_t size = tm_vtype_size(kv->elem_type);
        for (uint64_t i = 0; i < shown; i++)
            field(o, first_byte + i * size, size, 2, "element %" PRIu64, i);
        skipped_from = first_byte + shown * size;
    }
    if (shown < kv->count)
        field(o, skipped_from, first_byte + kv->data_bytes - skipped_from, 2,
              "... %" PRIu64 " more elements skipped (--all shows them)", kv->count - shown);
}

/* A scalar value in words, for --all. */
static void value_text(const tm_kv *kv, char *buf, size_t size)
{
    tm_value v;
    buf[0] = '\0';
    if (tm_kv_value(kv, &v) != TM_OK)
        return;
    cli_scalar_text(&v, buf, size);
}

/* --all: a metadata entry taken apart field by field: key length, key, value type, value. */
static void kv_parts(out *o, const tm_kv *kv)
{
    char text[128];
    uint64_t at = kv->offset;
    field(o, at, 8, 2, "the key is %" PRIu64 " bytes long", kv->key.len);
    field(o, at + 8, kv->key.len, 2, "\"%s\"", label(kv->key, text, sizeof text));
    at += 8 + kv->key.len;
    field(o, at, 4, 2, "value type %u = %s", (unsigned)kv->type, tm_vtype_name(kv->type));
    at += 4;
    if (kv->type == TM_V_STRING) {
        tm_str v = {(const char *)kv->data, kv->data_bytes};
        field(o, at, 8, 2, "the value is %" PRIu64 " bytes long", kv->data_bytes);
        field(o, at + 8, kv->data_bytes, 2, "\"%s\"", label(v, text, sizeof text));
    } else if (kv->type == TM_V_ARRAY) {
        field(o, at, 4, 2, "element type %u = %s", (unsigned)kv->elem_type,
              tm_vtype_name(kv->elem_type));
        field(o, at + 4, 8, 2, "%" PRIu64 " elements", kv->count);
    } else {
        value_text(kv, text, sizeof text);
        field(o, at, kv->data_bytes, 2, "the value: %s", text);
    }
}

/* --all: a tensor info taken apart: name length, name, n_dims, each ne, type, offset. */
static void info_parts(out *o, const tm_tensor *t)
{
    char text[128];
    uint64_t at = t->info_offset;
    field(o, at, 8, 2, "the name is %" PRIu64 " bytes long", t->name.len);
    field(o, at + 8, t->name.len, 2, "\"%s\"", label(t->name, text, sizeof text));
    at += 8 + t->name.len;
    field(o, at, 4, 2, "%" PRIu32 " dimensions", t->n_dims);
    at += 4;
    for (uint32_t d = 0; d < t->n_dims; d++, at += 8)
        field(o, at, 8, 2, "ne[%" PRIu32 "] = %" PRIu64, d, t->ne[d]);
    const char *tn = tm_type_name(t->type);
    field(o, at, 4, 2, "type %u = %s", (unsigned)t->type, tn ? tn : "unknown");
    field(o, at + 4, 8, 2, "offset %" PRIu64 " from the data start", t->offset);
}

static void gguf_fields(out *o, const tm_file *f, bool all)
{
    const tm_layout *l = tm_file_layout(f);
    char name[128];
    field(o, 0, 4, 0, "magic: the four bytes GGUF");
    field(o, 4, 4, 0, "version %" PRIu32 ", a u32", l->version);
    field(o, 8, 8, 0, "how many tensors, a u64: %" PRIu64, l->n_tensors);
    field(o, 16, 8, 0, "how many metadata entries, a u64: %" PRIu64, l->n_kv);
    for (uint64_t i = 0; i < tm_n_kv(f); i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        if (kv->type == TM_V_ARRAY)
            field(o, kv->offset, kv->n_bytes, 0,
                  "metadata %" PRIu64 ": %s (array of %" PRIu64 " %s)", i,
                  label(kv->key, name, sizeof name), kv->count, tm_vtype_name(kv->elem_type));
        else
            field(o, kv->offset, kv->n_bytes, 0, "metadata %" PRIu64 ": %s (%s)", i,
                  label(kv->key, name, sizeof name), tm_vtype_name(kv->type));
        if (all)
            kv_parts(o, kv);
        if (kv->type == TM_V_ARRAY && kv->elem_type != TM_V_ARRAY)
            array_elements(o, kv, all);
    }
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        field(o, t->info_offset, t->info_bytes, 0, "info record %" PRIu64 ": %s", i,
              label(t->name, name, sizeof name));
        if (all)
            info_parts(o, t);
    }
    field(o, l->infos_end, l->padding, 0, "padding up to the %s alignment of %" PRIu32,
          l->alignment_declared ? "declared" : "default", l->alignment);
    field(o, l->data_start, l->data_size, 0, "tensor data: %" PRIu64 " tensor%s, %" PRIu64 " byte%s",
          l->n_tensors, CLI_S(l->n_tensors), l->data_size, CLI_S(l->data_size));
}

/* A sharded checkpoint shows its first file: tm_file_bytes maps shard 0 and no other. */
static void safetensors_fields(out *o, const tm_file *f)
{
    const tm_layout *l = tm_shard_layout(f, 0);
    field(o, 0, 8, 0, "header length, a u64: %" PRIu64, l->kv_end - l->head_end);
    field(o, 8, l->kv_end - 8, 0,
          "the JSON header: %" PRIu64 " tensor%s, %" PRIu64 " metadata entr%s", l->n_tensors,
          CLI_S(l->n_tensors), l->n_kv, l->n_kv == 1 ? "y" : "ies");
    field(o, l->data_start, l->data_size, 0, "tensor data: %" PRIu64 " byte%s", l->data_size,
          CLI_S(l->data_size));
}

static int run(int argc, char **argv)
{
    bool json = false, all = false;
    const cli_flag flags[] = {{"json", &json}, {"all", &all}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_bytes, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    const tm_layout *l = tm_shard_layout(f, 0);
    out o = {tm_file_bytes(f), l->file_size, json ? json_array() : NULL};
    if (!json && tm_file_layout(f)->n_shards > 1) {
        printf("%s: the first of %" PRIu32 " shards, ", arg, tm_file_layout(f)->n_shards);
        cli_print_text(stdout, tm_shard_path(f, 0));
        putchar('\n');
    }
    if (!json)
        printf("%s: the header as bytes, with a name against every field\n\n%10s  %-*s  %s\n", arg,
               "offset", HEX_SHOWN * 3 + 3, "bytes", "field");
    if (l->format == TM_FORMAT_GGUF)
        gguf_fields(&o, f, all);
    else
        safetensors_fields(&o, f);
    if (json) {
        rc = cli_json_emit(o.json);
    } else {
        printf("%10" PRIu64 "  bytes in the file\n", l->file_size);
        rc = cli_finish_output(CLI_OK);
    }
    tm_close(f);
    return rc;
}

const cli_command cmd_bytes = {
    .name = "bytes",
    .alias = NULL,
    .summary = "the header as bytes, with a name against every field",
    .help = help,
    .run = run,
};
