/* tensormap edit: change a GGUF file's metadata (and tensor names) without touching its tensor
 * data. The library writes the new file (metadata copied or set, tensors referenced at their
 * offsets and copied from the source file) to a temporary file beside the destination, reads it
 * back, and only then renames it into place: the source is never written, and an in-place edit
 * that fails at any step leaves the original byte for byte as it was. An in-place edit is
 * locked against another (cli/in_place.c), and one whose header keeps its size writes only the
 * bytes that change, over the old ones, under a rollback journal (cli_in_place_patch). */
#include "../cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char help[] =
    "usage: tensormap edit FILE [-o OUT] [--set KEY=VALUE]... [--set KEY:TYPE=VALUE]...\n"
    "                      [--set-file KEY=PATH]... [--delete KEY]... [--rename-tensor OLD=NEW]...\n"
    "\n"
    "Change the metadata of the GGUF file FILE (one shard of a split set alone). Tensor bytes are\n"
    "never changed. Without -o the file is edited in place. When the header keeps its size, only\n"
    "the bytes of it that change are written, where they lie, under a journal beside the file\n"
    "(.FILE.tm-journal) that the next tensormap command to open FILE rolls back if the edit was\n"
    "cut short. Otherwise (and with -o) the new file is written to a temporary file in the\n"
    "destination's directory, synced, read back, and renamed into place. Either way a failure at\n"
    "any point (a full disk, a file-size limit, a kill) leaves FILE as it was.\n"
    "When the new header fits before the data section, every tensor stays at its byte in the file.\n"
    "An in-place edit locks FILE (flock) while it runs: a second edit of the same file fails at\n"
    "once, and a FILE that another program replaces meanwhile is not written over.\n"
    "\n"
    "  -o, --output OUT        write OUT and leave FILE untouched (OUT may not be FILE)\n"
    "  --set KEY=VALUE         an existing key keeps its type: VALUE is read as that type\n"
    "                          (integers range-checked, floats, true/false, strings as given;\n"
    "                          an array from a JSON list of its element type)\n"
    "  --set KEY:TYPE=VALUE    a new key, or a new type: TYPE is u8 i8 u16 i16 u32 i32 u64 i64\n"
    "                          f32 f64 bool str, or arr[TYPE] with VALUE a JSON list, e.g.\n"
    "                          --set 'my.list:arr[str]=[\"a\",\"b\"]'  --set 'my.ids:arr[i32]=[1,-2]'\n"
    "  --set-file KEY=PATH     a string read from a file (a chat template)\n"
    "  --delete KEY            remove an entry\n"
    "  --rename-tensor OLD=NEW rename a tensor\n"
    "general.alignment cannot be set or deleted (it would move every tensor).\n";

/* One change asked for on the command line. */
typedef enum { OP_SET, OP_SET_FILE, OP_DELETE, OP_RENAME } op_kind;
typedef struct op {
    op_kind kind;
    char *key;          /* KEY, or OLD for a rename (malloc'd) */
    const char *value;  /* VALUE, PATH or NEW (in argv) */
    bool typed;         /* --set KEY:TYPE=VALUE */
    tm_vtype type, elem; /* the type asked for (elem for arrays) */
    const tm_kv *kv;    /* the existing entry, if any */
    bool done;
} op;

/* "u8" -> TM_V_U8 ... ; "arr[str]" -> TM_V_ARRAY with elem TM_V_STRING. */
static bool type_named(const char *s, size_t len, tm_vtype *type, tm_vtype *elem)
{
    if (len > 5 && memcmp(s, "arr[", 4) == 0 && s[len - 1] == ']') {
        *type = TM_V_ARRAY;
        return type_named(s + 4, len - 5, elem, elem) && *elem != TM_V_ARRAY;
    }
    for (int t = TM_V_U8; t <= TM_V_F64; t++) {
        const char *name = tm_vtype_name((tm_vtype)t);
        if (t != TM_V_ARRAY && strlen(name) == len && memcmp(name, s, len) == 0) {
            *type = *elem = (tm_vtype)t;
            return true;
        }
    }
    return false;
}

/* KEY=VALUE or KEY:TYPE=VALUE into o; false (with a message) when malformed. */
static bool parse_assignment(const char *arg, op *o, bool allow_type, const char *opt)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        cli_errorf("edit: %s wants KEY=%s, not '%s'", opt, o->kind == OP_RENAME ? "NEW" : "VALUE",
                   arg);
        return false;
    }
    size_t key_len = (size_t)(eq - arg);
    const char *colon = memchr(arg, ':', key_len);
    if (allow_type && colon) {
        while (memchr(colon + 1, ':', (size_t)(eq - colon - 1)))
            colon = memchr(colon + 1, ':', (size_t)(eq - colon - 1));
        if (type_named(colon + 1, (size_t)(eq - colon - 1), &o->type, &o->elem)) {
            o->typed = true;
            key_len = (size_t)(colon - arg);
        } else {
            cli_errorf("edit: %s '%s': '%.*s' is not a type (u8 i8 u16 i16 u32 i32 u64 i64 f32 "
                       "f64 bool str, arr[TYPE])", opt, arg, (int)(eq - colon - 1), colon + 1);
            return false;
        }
    }
    o->key = strndup(arg, key_len);
    o->value = eq + 1;
    return o->key != NULL;
}

/* ---- values ---------------------------------------------------------------------------------- */

/* A number or bool of a fixed-size type from text or a JSON value, into out (native bytes). */
typedef union scalar {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
} scalar;

static bool fits_signed(tm_vtype t, long long v)
{
    return t == TM_V_I8 ? v >= INT8_MIN && v <= INT8_MAX
         : t == TM_V_I16 ? v >= INT16_MIN && v <= INT16_MAX
         : t == TM_V_I32 ? v >= INT32_MIN && v <= INT32_MAX : true;
}

static bool fits_unsigned(tm_vtype t, unsigned long long v)
{
    return t == TM_V_U8 ? v <= UINT8_MAX : t == TM_V_U16 ? v <= UINT16_MAX
         : t == TM_V_U32 ? v <= UINT32_MAX : true;
}

static void store_int(tm_vtype t, long long sv, unsigned long long uv, scalar *out)
{
    switch (t) {
    case TM_V_U8: out->u8 = (uint8_t)uv; break;
    case TM_V_U16: out->u16 = (uint16_t)uv; break;
    case TM_V_U32: out->u32 = (uint32_t)uv; break;
    case TM_V_U64: out->u64 = uv; break;
    case TM_V_I8: out->i8 = (int8_t)sv; break;
    case TM_V_I16: out->i16 = (int16_t)sv; break;
    case TM_V_I32: out->i32 = (int32_t)sv; break;
    default: out->i64 = sv; break;
    }
}

static bool is_unsigned(tm_vtype t)
{
    return t == TM_V_U8 || t == TM_V_U16 || t == TM_V_U32 || t == TM_V_U64;
}

/* text as type t; why says what is wrong. */
static bool parse_scalar(tm_vtype t, const char *text, scalar *out, const char **why)
{
    char *end;
    errno = 0;
    if (t == TM_V_BOOL) {
        const bool yes = strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
        const bool no = strcmp(text, "false") == 0 || strcmp(text, "0") == 0;
        out->u8 = yes;
        *why = "is not true, false, 1 or 0";
        return yes || no;
    }
    if (t == TM_V_F32 || t == TM_V_F64) {
        const double v = strtod(text, &end);
        *why = "is not a number";
        if (end == text || *end)
            return false;
        *why = "is out of range for the type";
        if (!isfinite(v) || (t == TM_V_F32 && fabs(v) > 3.4028234663852886e38))
            return false;
        if (t == TM_V_F32)
            out->f32 = (float)v;
        else
            out->f64 = v;
        return true;
    }
    *why = "is not a whole number";
    if (!*text)
        return false;
    if (is_unsigned(t) && text[0] == '-') {
        *why = "is negative, for an unsigned type";
        return false;
    }
    if (is_unsigned(t)) {
        const unsigned long long v = strtoull(text, &end, 10);
        if (*end)
            return false;
        *why = "is out of range for the type";
        if (errno == ERANGE || !fits_unsigned(t, v))
            return false;
        store_int(t, 0, v, out);
    } else {
        const long long v = strtoll(text, &end, 10);
        if (*end)
            return false;
        *why = "is out of range for the type";
        if (errno == ERANGE || !fits_signed(t, v))
            return false;
        store_int(t, v, 0, out);
    }
    return true;
}

/* Element i of a JSON list as type t. */
static bool json_scalar(tm_vtype t, const json_t *v, scalar *out, const char **why)
{
    char text[64];
    if (t == TM_V_BOOL && json_is_boolean(v))
        snprintf(text, sizeof text, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_integer(v) && t != TM_V_BOOL)
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v) && (t == TM_V_F32 || t == TM_V_F64))
        snprintf(text, sizeof text, "%.17g", json_real_value(v));
    else {
        *why = "is not a JSON value of the element type";
        return false;
    }
    return parse_scalar(t, text, out, why);
}

/* Add key = an array of elem from the JSON list text. */
static tm_status add_array(tm_writer *w, const char *key, tm_vtype elem, const char *text,
                           tm_error *err, bool *bad)
{
    json_error_t je;
    json_t *list = json_loads(text, JSON_DECODE_ANY, &je);
    const size_t n = json_is_array(list) ? json_array_size(list) : 0;
    tm_status st = TM_OK;
    *bad = true;
    if (!json_is_array(list)) {
        cli_errorf("edit: --set %s: '%s' is not a JSON list", key, text);
    } else if (elem == TM_V_STRING) {
        const char **strs = malloc(n * sizeof *strs + 1);
        size_t *lens = malloc(n * sizeof *lens + 1);
        size_t i = 0;
        for (; strs && lens && i < n && json_is_string(json_array_get(list, i)); i++) {
            strs[i] = json_string_value(json_array_get(list, i));
            lens[i] = json_string_length(json_array_get(list, i));
        }
        if (i < n)
            cli_errorf("edit: --set %s: element %zu is not a string", key, i);
        else if ((st = tm_writer_kv_str_array(w, key, strs, lens, n, err)) == TM_OK)
            *bad = false;
        free(strs);
        free(lens);
    } else {
        const uint32_t size = tm_vtype_size(elem);
        uint8_t *bytes = malloc(n * size + 1);
        size_t i = 0;
        const char *why = "";
        for (scalar s; bytes && i < n && json_scalar(elem, json_array_get(list, i), &s, &why); i++)
            memcpy(bytes + i * size, &s, size);
        if (i < n)
            cli_errorf("edit: --set %s: element %zu %s (%s)", key, i, why, tm_vtype_name(elem));
        else if ((st = tm_writer_kv_array(w, key, elem, bytes, n, err)) == TM_OK)
            *bad = false;
        free(bytes);
    }
    json_decref(list);
    return st;
}

/* A string value from a file, bounded as the format bounds strings. NULL after a message.
 * Only a regular file: a FIFO or a device could block the edit forever or never end (the open
 * does not wait for a FIFO's writer, and the file type is checked before anything is read). */
static char *read_text(const char *key, const char *path, size_t *len)
{
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *in = fd >= 0 ? fdopen(fd, "rb") : NULL;
    char *buf = NULL;
    struct stat sb;
    if (!in || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (uint64_t)sb.st_size > TM_MAX_STRING_LEN) {
        cli_errorf("edit: --set-file %s: %s: %s", key, path,
                   !in ? strerror(errno) : "not a regular file of at most 64 MiB");
    } else if (!(buf = malloc((size_t)sb.st_size + 1))) {
        cli_errorf("edit: --set-file %s: %s: out of memory", key, path);
    } else if ((*len = fread(buf, 1, (size_t)sb.st_size, in)) != (size_t)sb.st_size) {
        cli_errorf("edit: --set-file %s: %s: read failed", key, path);
        free(buf);
        buf = NULL;
    }
    if (in)
        fclose(in);
    else if (fd >= 0)
        close(fd);
    return buf;
}

/* Add o's new value to w. *bad: a value the type refuses (a usage error, said already). */
static tm_status add_value(tm_writer *w, const op *o, tm_error *err, bool *bad)
{
    *bad = false;
    const tm_vtype type = o->typed ? o->type : o->kv ? o->kv->type : TM_V_STRING;
    const tm_vtype elem = o->typed ? o->elem : o->kv ? o->kv->elem_type : TM_V_STRING;
    if (o->kind == OP_SET_FILE) {
        size_t len = 0;
        char *text = read_text(o->key, o->value, &len);
        if (!text)
            return *bad = true, TM_OK;
        tm_status st = tm_writer_kv_str(w, o->key, text, len, err);
        free(text);
        return st;
    }
    if (type == TM_V_STRING)
        return tm_writer_kv_str(w, o->key, o->value, strlen(o->value), err);
    if (type == TM_V_ARRAY)
        return add_array(w, o->key, elem, o->value, err, bad);
    scalar s;
    const char *why;
    if (!parse_scalar(type, o->value, &s, &why)) {
        cli_errorf("edit: --set %s: '%s' %s (%s)", o->key, o->value, why, tm_vtype_name(type));
        return *bad = true, TM_OK;
    }
    return tm_writer_kv_scalar(w, o->key, type, &s, err);
}

/* ---- the command ----------------------------------------------------------------------------- */

static op *find_op(op *ops, size_t n, op_kind kind, const char *key, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if ((ops[i].kind == OP_RENAME) == (kind == OP_RENAME) && strlen(ops[i].key) == len &&
            memcmp(ops[i].key, key, len) == 0)
            return &ops[i];
    return NULL;
}

/* Every change names something the file has (or may have), once. */
static bool check_ops(const tm_file *f, const char *arg, op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        op *o = &ops[i];
        if (find_op(ops, i, o->kind, o->key, strlen(o->key))) {
            cli_errorf("edit: %s '%s' is named twice", o->kind == OP_RENAME ? "tensor" : "key",
                       o->key);
            return false;
        }
        if (o->kind == OP_RENAME) {
            if (!cli_find_tensor(f, arg, o->key))
                return false;
            if (!o->value[0] || tm_tensor_find(f, o->value) ||
                find_op(ops + i + 1, n - i - 1, OP_RENAME, o->value, strlen(o->value))) {
                cli_errorf("edit: --rename-tensor %s=%s: %s", o->key, o->value,
                           o->value[0] ? "the file has a tensor of that name already"
                                       : "the new name is empty");
                return false;
            }
            continue;
        }
        if (strcmp(o->key, "general.alignment") == 0) {
            cli_errorf("edit: general.alignment places every tensor: it cannot be edited");
            return false;
        }
        o->kv = tm_kv_find(f, o->key);
        if (o->kind == OP_DELETE && !o->kv) {
            cli_errorf("%s: --delete %s: no such key", arg, o->key);
            return false;
        }
        if (o->kind == OP_SET && !o->kv && !o->typed) {
            cli_errorf("%s: --set %s: a new key names its type: --set %s:TYPE=VALUE", arg, o->key,
                       o->key);
            return false;
        }
        if (o->kind == OP_SET_FILE && o->kv && o->kv->type != TM_V_STRING) {
            cli_errorf("%s: --set-file %s: the key holds a %s, not a string", arg, o->key,
                       tm_vtype_name(o->kv->type));
            return false;
        }
    }
    return true;
}

/* The new file: the source's entries in order (set or deleted as asked), new keys after them in
 * the order given, every tensor at its offset under its (new) name. */
static tm_status build(tm_writer *w, const tm_file *f, op *ops, size_t n, tm_error *err,
                       bool *bad)
{
    tm_status st = TM_OK;
    *bad = false;
    for (uint64_t i = 0; st == TM_OK && !*bad && i < tm_n_kv(f); i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        op *o = find_op(ops, n, OP_SET, kv->key.ptr, (size_t)kv->key.len);
        if (!o)
            st = tm_writer_kv_copy(w, kv, err);
        else if (o->kind != OP_DELETE)
            st = add_value(w, o, err, bad);
        if (o)
            o->done = true;
    }
    for (size_t i = 0; st == TM_OK && !*bad && i < n; i++)
        if (!ops[i].done && ops[i].kind != OP_RENAME && ops[i].kind != OP_DELETE)
            st = add_value(w, &ops[i], err, bad);
    for (uint64_t i = 0; st == TM_OK && !*bad && i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        const op *o = find_op(ops, n, OP_RENAME, t->name.ptr, (size_t)t->name.len);
        st = tm_writer_tensor_copy(w, f, t, o ? o->value : NULL, true, err);
    }
    return st;
}

/* A file nobody may write (mode a-w) is not replaced in place, even by root, who could. */
static bool read_only(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && (sb.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0;
}

static int edit(const char *arg, const char *out, op *ops, size_t n)
{
    /* in place: locked before it is read, replaced only while it is still the file read */
    cli_in_place *ip = out == arg ? cli_in_place_begin(arg) : NULL;
    tm_file *f = out != arg || ip ? cli_open(arg, TM_OPEN_ONE_SHARD) : NULL;
    tm_error err = {0};
    if (!f || (ip && !cli_in_place_still(ip, &err))) {
        if (err.code != TM_OK)
            cli_report(arg, &err);
        tm_close(f);
        cli_in_place_end(ip);
        return CLI_FAIL;
    }
    const tm_layout *l = tm_file_layout(f);
    int rc = CLI_USAGE;
    if (l->format != TM_FORMAT_GGUF) {
        cli_errorf("%s: edit changes GGUF files; this is not one", arg);
        rc = CLI_FAIL;
    } else if (out != arg && !cli_output_allowed(out)) {
        rc = CLI_FAIL;
    } else if (out == arg && read_only(arg)) {
        cli_errorf("%s: the file is read-only (no write permission bits): edit will not replace "
                   "it; write a copy with -o OUT", arg);
        rc = CLI_FAIL;
    } else if (check_ops(f, arg, ops, n)) {
        tm_writer *w = NULL;
        bool bad = false;
        tm_status st = cli_model_writer(f, &w, &err);
        if (st == TM_OK)
            st = build(w, f, ops, n, &err, &bad);
        const uint64_t header = tm_writer_header_bytes(w);
        uint64_t start = 0;
        cli_align_up(header, l->alignment, &start);
        uint64_t at = 0, n_changed = 0;
        if (bad) {
            tm_writer_free(w);
        } else if (ip && st == TM_OK && header == l->infos_end) {
            /* the same size: the changed bytes are written over the old ones, not a new file */
            rc = cli_in_place_patch(ip, w, &at, &n_changed, &err) == TM_OK ? CLI_OK : CLI_FAIL;
            if (rc != CLI_OK)
                cli_report(arg, &err);
            else if (n_changed == 0)
                printf("%s: the file holds these values already: nothing was written\n", arg);
            else
                printf("%s: header %" PRIu64 " bytes, as before: %" PRIu64 " byte%s at byte %" PRIu64
                       " rewritten in place; every tensor byte stays where it was\n", arg, header,
                       n_changed, n_changed == 1 ? "" : "s", at);
        } else if ((rc = cli_model_finish_checked(w, st, &err, out,
                                                  ip ? cli_in_place_check : NULL, ip)) == CLI_OK) {
            printf("%s: header %" PRIu64 " -> %" PRIu64 " bytes; ", out, l->infos_end, header);
            if (start == l->data_start)
                printf("it fits before the data: every tensor byte stays where it was\n");
            else
                printf("the data section moves from byte %" PRIu64 " to %" PRIu64 "\n",
                       l->data_start, start);
        }
    }
    tm_close(f);
    cli_in_place_end(ip);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},       {"set", required_argument, NULL, 's'},
        {"set-file", required_argument, NULL, 'f'},     {"delete", required_argument, NULL, 'd'},
        {"rename-tensor", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    op *ops = calloc((size_t)argc, sizeof *ops);
    size_t n = 0;
    const char *out = NULL;
    int c, rc = -1;
    optind = 1;
    while (ops && rc < 0 && (c = cli_getopt(argc, argv, "o:h", opts, &cmd_edit)) != -1) {
        op *o = &ops[n];
        if (c == 'o') {
            out = optarg;
        } else if (c == 'h') {
            rc = (fputs(help, stdout), CLI_OK);
        } else if (c == 'd') {
            *o = (op){.kind = OP_DELETE, .key = strdup(optarg)};
            rc = o->key ? -1 : CLI_FAIL;
            n++;
        } else if (c == 's' || c == 'f' || c == 'r') {
            o->kind = c == 's' ? OP_SET : c == 'f' ? OP_SET_FILE : OP_RENAME;
            if (!parse_assignment(optarg, o, c == 's',
                                  c == 's' ? "--set" : c == 'f' ? "--set-file" : "--rename-tensor"))
                rc = CLI_USAGE;
            n++;
        } else {
            rc = cli_usage(&cmd_edit);
        }
    }
    if (!ops) {
        cli_errorf("out of memory");
        rc = CLI_FAIL;
    } else if (rc < 0 && argc - optind != 1) {
        cli_errorf("edit: one FILE");
        rc = cli_usage(&cmd_edit);
    } else if (rc < 0 && n == 0) {
        cli_errorf("edit: nothing to change (--set, --set-file, --delete or --rename-tensor)");
        rc = cli_usage(&cmd_edit);
    } else if (rc < 0) {
        rc = edit(argv[optind], out ? out : argv[optind], ops, n);
    }
    for (size_t i = 0; ops && i < n; i++)
        free(ops[i].key);
    free(ops);
    return cli_finish_output(rc);
}

const cli_command cmd_edit = {
    .name = "edit",
    .alias = NULL,
    .summary = "change metadata or tensor names; the original is never half-written",
    .help = help,
    .run = run,
};
