/* tensormap bytes: the header as bytes, with a name against every field. A format with no
 * delimiters is a format where position is meaning; this prints the positions. */
#include "../cli/cli.h"

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
    "  --json    a JSON array of {offset, size, hex, field}\n"
    "\n"
    "When the file is damaged, every field up to the one the reader refuses is shown, then\n"
    "that field with the reason (exit status 1).\n";

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

/* ---- a file the library refuses: walk what can be walked up to the refused field ---------- */

typedef struct walk {
    out *o;
    uint64_t at, stop; /* stop: the refused field's offset (nothing from there on is trusted) */
} walk;

static bool fits(const walk *w, uint64_t n) { return w->at <= w->stop && n <= w->stop - w->at; }

static uint64_t rd(const walk *w, uint64_t at, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)w->o->base[at + i] << (8 * i);
    return v;
}

/* One field of n bytes at w->at when it lies before the stop; false (nothing printed) if not. */
__attribute__((format(printf, 3, 4))) static bool step(walk *w, uint64_t n, const char *fmt, ...)
{
    if (!fits(w, n))
        return false;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    field(w->o, w->at, n, 0, "%s", what);
    w->at += n;
    return true;
}

/* A length-prefixed string as two fields; false at the stop. */
static bool walk_string(walk *w, const char *what, uint64_t i)
{
    if (!fits(w, 8))
        return false;
    uint64_t len = rd(w, w->at, 8);
    char text[128];
    if (!step(w, 8, "%s %" PRIu64 ": %" PRIu64 " bytes follow", what, i, len) || !fits(w, len))
        return false;
    return step(w, len, "%s %" PRIu64 ": \"%s\"", what, i,
                label((tm_str){(const char *)w->o->base + w->at, len}, text, sizeof text));
}

static bool walk_value(walk *w, uint64_t type, uint64_t i)
{
    if (type == TM_V_STRING)
        return walk_string(w, "value of metadata", i);
    if (type != TM_V_ARRAY) {
        uint32_t size = tm_vtype_size((tm_vtype)type);
        if (!size || !fits(w, size))
            return false;
        uint64_t bits = rd(w, w->at, size);
        tm_value v = {.type = (tm_vtype)type};
        if (type == TM_V_F32 || type == TM_V_F64) {
            float f32;
            uint32_t b32 = (uint32_t)bits;
            memcpy(&f32, &b32, 4);
            if (type == TM_V_F64)
                memcpy(&v.as.f, &bits, 8);
            else
                v.as.f = f32;
        } else if (type == TM_V_I8 || type == TM_V_I16 || type == TM_V_I32 || type == TM_V_I64) {
            unsigned shift = 64 - 8 * size; /* sign-extend */
            v.as.i = (int64_t)(bits << shift) >> shift;
        } else if (type == TM_V_BOOL) {
            v.as.b = bits != 0;
        } else {
            v.as.u = bits;
        }
        char text[64];
        cli_scalar_text(&v, text, sizeof text);
        return step(w, size, "metadata %" PRIu64 ": the value %s", i, text);
    }
    if (!fits(w, 12))
        return false;
    uint64_t et = rd(w, w->at, 4), count = rd(w, w->at + 4, 8);
    if (!step(w, 4, "metadata %" PRIu64 ": element type %" PRIu64, i, et) ||
        !step(w, 8, "metadata %" PRIu64 ": %" PRIu64 " elements", i, count))
        return false;
    uint32_t size = tm_vtype_size((tm_vtype)et);
    if (et == TM_V_STRING) {
        for (uint64_t k = 0; k < count; k++)
            if (!fits(w, 8) || !fits(w, 8 + rd(w, w->at, 8)))
                return false;
            else
                w->at += 8 + rd(w, w->at, 8); /* elements are not shown one by one here */
        return true;
    }
    return size && count <= UINT64_MAX / size && fits(w, count * size) &&
           (w->at += count * size, true);
}

static void walk_gguf(walk *w)
{
    if (!step(w, 4, "magic") || !fits(w, 20))
        return;
    uint64_t n_tensors = rd(w, 8, 8), n_kv = rd(w, 16, 8);
    step(w, 4, "version %" PRIu64 ", a u32", rd(w, 4, 4));
    step(w, 8, "how many tensors, a u64: %" PRIu64, n_tensors);
    step(w, 8, "how many metadata entries, a u64: %" PRIu64, n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!walk_string(w, "key of metadata", i) || !fits(w, 4))
            return;
        uint64_t type = rd(w, w->at, 4);
        if (!step(w, 4, "metadata %" PRIu64 ": value type %" PRIu64 " = %s", i, type,
                  type <= TM_V_F64 ? tm_vtype_name((tm_vtype)type) : "unknown") ||
            !walk_value(w, type, i))
            return;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!walk_string(w, "name of tensor info", i) || !fits(w, 4))
            return;
        uint64_t dims = rd(w, w->at, 4);
        if (!step(w, 4, "tensor info %" PRIu64 ": %" PRIu64 " dimensions", i, dims))
            return;
        for (uint64_t d = 0; d < dims && d < 4; d++)
            if (!fits(w, 8) || !step(w, 8, "tensor info %" PRIu64 ": ne[%" PRIu64 "] = %" PRIu64,
                                     i, d, rd(w, w->at, 8)))
                return;
        if (dims > 4 || !fits(w, 12))
            return;
        uint64_t type = rd(w, w->at, 4);
        step(w, 4, "tensor info %" PRIu64 ": type %" PRIu64, i, type);
        step(w, 8, "tensor info %" PRIu64 ": offset %" PRIu64 " from the data start", i,
             rd(w, w->at, 8));
    }
}

/* The fields of a file tm_open refused, read from the file's first bytes (up to the refused
 * field), then the refusal at its offset. */
static int damaged(const char *arg, const tm_error *err, bool json)
{
    FILE *in = strcmp(arg, "-") == 0 || strncmp(arg, "ollama:", 7) == 0 ? NULL : fopen(arg, "rb");
    uint64_t want = err->offset + 16; /* the refused field's first bytes too */
    uint8_t *buf = in && err->offset != TM_NO_OFFSET && err->offset < ((uint64_t)1 << 30)
                       ? malloc((size_t)want) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)want, in) : 0;
    if (in)
        fclose(in);
    if (!buf || got < 4 || memcmp(buf, "GGUF", 4) != 0) { /* nothing to walk: the error alone */
        free(buf);
        cli_report(arg, err);
        return CLI_FAIL;
    }
    out o = {buf, got, json ? json_array() : NULL};
    walk w = {&o, 0, err->offset < got ? err->offset : got};
    if (!json)
        printf("%s: the header as bytes, up to the field the reader refuses\n\n%10s  %-*s  %s\n",
               arg, "offset", HEX_SHOWN * 3 + 3, "bytes", "field");
    walk_gguf(&w);
    field(&o, err->offset, got > err->offset ? got - err->offset : 0, 0, "refused here: %s",
          err->message[0] ? err->message : tm_status_str(err->code));
    if (json)
        cli_json_emit(o.json);
    free(buf);
    cli_report(arg, err);
    fflush(stdout);
    return CLI_FAIL;
}

static int run(int argc, char **argv)
{
    bool json = false, all = false;
    const cli_flag flags[] = {{"json", &json}, {"all", &all}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_bytes, flags, &arg);
    if (rc >= 0)
        return rc;
    tm_error err = {0};
    tm_file *f = cli_open_err(arg, 0, &err);
    if (!f)
        return err.code == TM_OK ? CLI_FAIL : damaged(arg, &err, json);
    const tm_layout *l = tm_shard_layout(f, 0);
    /* a remote file's head: at least its header, perhaps not the whole file */
    out o = {tm_file_bytes(f), tm_file_bytes_size(f), json ? json_array() : NULL};
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
