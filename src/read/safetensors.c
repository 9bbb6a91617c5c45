/* The safetensors walk, into the same index as GGUF.
 *
 *   u64 N (little-endian)  |  N bytes of UTF-8 JSON, '{' first, may end in spaces  |  data
 *
 * The JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
 * from the start of the data section); the optional "__metadata__" maps strings to strings.
 * Validation follows the reference (Hugging Face safetensors, tensor.rs): N <= 100,000,000 and
 * 8 + N <= file size; the header valid UTF-8 JSON (jansson checks both, and with
 * JSON_REJECT_DUPLICATES refuses a repeated name); entries sorted by offsets must tile the data
 * section exactly: each begins where the previous ended, its length is product(shape) x dtype
 * size (overflow-checked), and the last ends at the end of the file ("MetadataIncompleteBuffer").
 *
 * A sharded checkpoint is a model.safetensors.index.json ({"metadata": {...}, "weight_map":
 * {tensor: shard file}}) beside its shards. Opening the index (or a shard with
 * TM_OPEN_ALL_SHARDS) maps every shard, in name order, and presents one index: tensor.shard is
 * the mapping its data lies in, and the layout's byte counts are totals over the shards
 * (tm_shard_layout has each shard's own). Every shard tensor must be where the weight map puts
 * it, and every weight-map entry must be in some shard.
 *
 * Names, metadata keys and values point into jansson's strings, kept alive in f->owned until
 * tm_close. */
#include "../common/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ST_INDEX_NAME "model.safetensors.index.json"

/* What f->owned holds for a safetensors file: the parsed JSON trees (names and strings point
 * into them) and the index's numeric metadata values. */
typedef struct st_owned {
    json_t **roots;
    size_t n_roots;
    uint64_t *numbers;
} st_owned;

static void st_owned_free(void *p)
{
    st_owned *o = p;
    if (!o)
        return;
    for (size_t i = 0; i < o->n_roots; i++)
        json_decref(o->roots[i]);
    free(o->roots);
    free(o->numbers);
    free(o);
}

/* f->owned, created on first use; NULL when out of memory. */
static st_owned *st_owned_get(tm_file *f)
{
    if (!f->owned) {
        f->owned = calloc(1, sizeof(st_owned));
        if (f->owned)
            f->free_owned = st_owned_free;
    }
    return f->owned;
}

static tm_status no_memory(tm_error *err)
{
    return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for the safetensors index");
}

/* Keep root alive until tm_close (takes the reference, also on failure). */
static tm_status st_keep(tm_file *f, json_t *root, tm_error *err)
{
    st_owned *o = st_owned_get(f);
    json_t **roots = o ? realloc(o->roots, (o->n_roots + 1) * sizeof *roots) : NULL;
    if (!roots) {
        json_decref(root);
        return no_memory(err);
    }
    roots[o->n_roots++] = root;
    o->roots = roots;
    return TM_OK;
}

/* ---- one safetensors image ---------------------------------------------------------------- */

/* Where a refusal points and what it names. */
typedef struct st_ctx {
    const char *what;          /* "" or "shard 'NAME': " */
    const uint8_t *header;     /* the JSON bytes, to find an entry's position */
    uint64_t header_len;
} st_ctx;

/* The file offset of "name" as a key in the header, or the header's start when the name is
 * written with escapes (jansson keeps no positions). A linear search: for messages only. */
static uint64_t entry_offset(const st_ctx *c, const char *name, size_t len)
{
    for (uint64_t i = 0; i + len + 2 <= c->header_len; i++)
        if (c->header[i] == '"' && c->header[i + len + 1] == '"' &&
            memcmp(c->header + i + 1, name, len) == 0)
            return 8 + i;
    return 8;
}

static tm_status entry_fail(tm_error *err, tm_status code, const st_ctx *c, size_t index,
                            size_t count, const char *name, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static tm_status entry_fail(tm_error *err, tm_status code, const st_ctx *c, size_t index,
                            size_t count, const char *name, size_t len, const char *fmt, ...)
{
    char why[TM_ERROR_MESSAGE_MAX], quoted[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    tm__quote(quoted, sizeof quoted, name, len);
    uint64_t off = entry_offset(c, name, len);
    /* entries counted from 0, as the GGUF walk counts them */
    return tm__fail(err, code, off, "%sheader entry %zu of %zu (%s) at byte %llu: %s", c->what,
                    index, count, quoted, (unsigned long long)off, why);
}

/* A header entry on its way to a tm_tensor. */
typedef struct st_entry {
    tm_tensor t;
    uint64_t begin, end;
    size_t index;              /* position in the JSON object, for messages */
} st_entry;

static int entry_cmp(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static bool get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* dtype, shape and data_offsets of one entry into e (everything but the offsets' order). */
static tm_status read_entry(const st_ctx *c, const char *name, size_t len, json_t *v,
                            size_t index, size_t count, st_entry *e, tm_error *err)
{
#define FAIL(code, ...) entry_fail(err, code, c, index, count, name, len, __VA_ARGS__)
    if (len > TM_MAX_NAME_LEN)
        return FAIL(TM_LIMIT, "the name is %zu bytes, over the limit of %u", len, TM_MAX_NAME_LEN);
    if (!json_is_object(v))
        return FAIL(TM_BAD_VALUE, "the value is not an object with dtype, shape and data_offsets");
    json_t *dtype = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    json_t *offs = json_object_get(v, "data_offsets");
    if (!json_is_string(dtype))
        return FAIL(TM_BAD_VALUE, "\"dtype\" is %s", dtype ? "not a string" : "missing");
    if (!json_is_array(shape))
        return FAIL(TM_BAD_VALUE, "\"shape\" is %s", shape ? "not an array" : "missing");
    if (!json_is_array(offs) || json_array_size(offs) != 2)
        return FAIL(TM_BAD_VALUE, "\"data_offsets\" is %s",
                    offs ? "not an array of two integers [begin, end]" : "missing");
    /* other fields are ignored, as the reference (serde, without deny_unknown_fields) does */

    const tm__st_dtype *dt = tm__st_dtype_named(json_string_value(dtype));
    if (!dt) {
        char q[64];
        tm__quote(q, sizeof q, json_string_value(dtype), json_string_length(dtype));
        return FAIL(TM_UNSUPPORTED, "dtype %s is not a safetensors dtype this library knows", q);
    }

    size_t n_dims = json_array_size(shape);
    if (n_dims > TM_MAX_DIMS)
        return FAIL(TM_LIMIT, "%zu dimensions; this library handles at most %u", n_dims, TM_MAX_DIMS);
    memset(e, 0, sizeof *e);
    e->index = index;
    e->t.name = (tm_str){name, len};
    e->t.type = dt->type;
    e->t.n_dims = (uint32_t)n_dims;
    e->t.n_elements = 1;
    for (size_t d = 0; d < 4; d++)
        e->t.ne[d] = 1;
    for (size_t d = 0; d < n_dims; d++) {
        uint64_t n;
        if (!get_u64(json_array_get(shape, d), &n))
            return FAIL(TM_BAD_VALUE, "shape[%zu] is not a non-negative integer", d);
        e->t.ne[n_dims - 1 - d] = n; /* the file's order is slowest first; ne[0] is the row */
        if (!tm__mul_u64(e->t.n_elements, n, &e->t.n_elements))
            return FAIL(TM_LIMIT, "the shape's element count overflows 64 bits");
    }
    if (!tm__mul_u64(e->t.n_elements, tm_type_block_bytes(dt->type), &e->t.n_bytes))
        return FAIL(TM_LIMIT, "%llu elements of %s overflow 64 bits of bytes",
                    (unsigned long long)e->t.n_elements, dt->name);
    if (!get_u64(json_array_get(offs, 0), &e->begin) || !get_u64(json_array_get(offs, 1), &e->end))
        return FAIL(TM_BAD_VALUE, "\"data_offsets\" are not two non-negative integers");
    if (e->end < e->begin)
        return FAIL(TM_LAYOUT, "data_offsets [%llu, %llu] end before they begin",
                    (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != e->t.n_bytes)
        return FAIL(TM_LAYOUT, "data_offsets [%llu, %llu] hold %llu bytes, but shape and %s make %llu",
                    (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)(e->end - e->begin), dt->name,
                    (unsigned long long)e->t.n_bytes);
    return TM_OK;
#undef FAIL
}

/* Append n entries to f->tensors (grown as shards arrive). */
static tm_status append_tensors(tm_file *f, const st_entry *e, size_t n, tm_error *err)
{
    uint64_t have = f->layout.n_tensors;
    tm_tensor *t = realloc(f->tensors, (size_t)(have + n) * sizeof *t + 1);
    if (!t)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %zu tensors", n);
    f->tensors = t;
    for (size_t i = 0; i < n; i++)
        t[have + i] = e[i].t;
    f->layout.n_tensors = have + n;
    return TM_OK;
}

/* Room in f->kvs for n more entries (once per metadata object, not once per entry). */
static tm_status reserve_kvs(tm_file *f, size_t n, tm_error *err)
{
    tm_kv *kv = realloc(f->kvs, (size_t)(f->layout.n_kv + n) * sizeof *kv + 1);
    if (!kv)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %zu metadata entries", n);
    f->kvs = kv;
    return TM_OK;
}

/* Append a metadata entry (room reserved), unless seen (the keys so far, across shards) already
 * holds the key: shards repeat their __metadata__ ({"format": "pt"} in each); the first stays. */
static tm_status append_kv(tm_file *f, json_t *seen, const char *key, size_t key_len,
                           tm_vtype type, const void *data, uint64_t n_bytes, uint64_t offset,
                           tm_error *err)
{
    if (seen) {
        if (json_object_getn(seen, key, key_len))
            return TM_OK;
        if (json_object_setn_new_nocheck(seen, key, key_len, json_null()) != 0)
            return no_memory(err);
    }
    f->kvs[f->layout.n_kv++] = (tm_kv){.key = {key, key_len}, .type = type, .count = 1,
                                       .data = data, .data_bytes = n_bytes, .offset = offset};
    return TM_OK;
}

/* "__metadata__": string -> string only, as the reference requires. */
static tm_status read_metadata(tm_file *f, const st_ctx *c, json_t *meta, size_t index,
                               size_t count, json_t *seen, tm_error *err)
{
    static const char name[] = "__metadata__";
    if (json_is_null(meta)) /* the reference reads it as an Option: null is none */
        return TM_OK;
    if (!json_is_object(meta))
        return entry_fail(err, TM_BAD_VALUE, c, index, count, name, sizeof name - 1,
                          "__metadata__ is not an object of strings");
    tm_status s = reserve_kvs(f, json_object_size(meta), err);
    if (s != TM_OK)
        return s;
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        size_t key_len = strlen(key); /* jansson refuses NUL in keys without JSON_ALLOW_NUL */
        if (!json_is_string(v)) {
            char q[160];
            tm__quote(q, sizeof q, key, key_len);
            return entry_fail(err, TM_BAD_VALUE, c, index, count, name, sizeof name - 1,
                              "the value of %s is not a string (the format allows only strings)", q);
        }
        s = append_kv(f, seen, key, key_len, TM_V_STRING, json_string_value(v),
                      json_string_length(v), 8, err);
        if (s != TM_OK)
            return s;
    }
    return TM_OK;
}

/* A jansson refusal of the JSON starting at file byte base, in our words. jansson's text ends
 * "near 'TOKEN'" with the token as the file spells it (a key may hold DEL or a C1 control): the
 * token is quoted again, as every string from a file is. */
static tm_status json_fail(tm_error *err, const json_error_t *je, uint64_t base, const char *what,
                           const char *noun)
{
    uint64_t at = base + (uint64_t)je->position;
    enum json_error_code code = json_error_code(je);
    const char *near = strstr(je->text, " near '");
    const size_t len = strlen(je->text);
    int words = (int)len;
    char token[160] = "";
    if (near && near + 7 < je->text + len && je->text[len - 1] == '\'') {
        words = (int)(near - je->text);
        tm__quote(token, sizeof token, near + 7, (uint64_t)(je->text + len - 1 - (near + 7)));
    }
    return tm__fail(err, code == json_error_duplicate_key ? TM_DUPLICATE : TM_BAD_VALUE, at,
                    "%s%s is not valid at byte %llu: %s%.*s%s%s", what, noun,
                    (unsigned long long)at,
                    code == json_error_duplicate_key ? "a name appears twice: "
                    : code == json_error_invalid_utf8 ? "invalid UTF-8: " : "",
                    words, je->text, token[0] ? " near " : "", token);
}

/* Walk one mapped safetensors image into f (appending tensors and metadata); fill lay. */
static tm_status parse_image(tm_file *f, uint32_t shard, const char *what, json_t *seen,
                             unsigned flags, tm_layout *lay, tm_error *err)
{
    tm__source *m = &f->maps[shard];
    if (m->size < 8)
        return tm__fail(err, TM_TRUNCATED, 0, "%sthe file is %llu bytes; a safetensors file "
                        "starts with an 8-byte header length", what, (unsigned long long)m->size);
    /* A shard is named by an index, and may be a link to any file at all (/etc/passwd): its
     * first bytes are not quoted, not even as a header length, unless they start a header. */
    if (what[0] && !tm__safetensors_looks_like_file(m->base, m->avail))
        return tm__fail(err, TM_NOT_MODEL, 0, "%snot a safetensors file (no header length "
                        "followed by '{')", what);
    uint64_t n = tm__load_le(m->base, 8);
    if (n > TM_SAFETENSORS_MAX_HEADER)
        return tm__fail(err, TM_LIMIT, 0, "%sheader length %llu at byte 0 is over the format's "
                        "limit of %u bytes", what, (unsigned long long)n, TM_SAFETENSORS_MAX_HEADER);
    if (n > m->size - 8)
        return tm__fail(err, TM_TRUNCATED, 0, "%sheader length %llu at byte 0 runs past the end "
                        "of the file (%llu bytes)", what, (unsigned long long)n,
                        (unsigned long long)m->size);
    tm_status s = tm__source_need(m, 8 + n, err); /* a remote file's head: fetch the header */
    if (s != TM_OK)
        return s;
    if (n == 0 || m->base[8] != '{')
        return tm__fail(err, TM_BAD_VALUE, 8, "%sthe header at byte 8 does not start with '{'", what);

    json_error_t je;
    json_t *root = json_loadb((const char *)m->base + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return json_fail(err, &je, 8, what, "the JSON header");
    s = st_keep(f, root, err);
    if (s != TM_OK)
        return s;
    if (!json_is_object(root))
        return tm__fail(err, TM_BAD_VALUE, 8, "%sthe JSON header at byte 8 is not an object", what);

    st_ctx c = {what, m->base + 8, n};
    size_t count = json_object_size(root), n_tensors = 0;
    st_entry *entries = malloc(count * sizeof *entries + 1);
    if (!entries)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %zu header entries", count);
    const char *name;
    json_t *v;
    size_t index = 0, n_meta = 0;
    json_object_foreach(root, name, v) {
        size_t len = strlen(name);
        if (strcmp(name, "__metadata__") == 0) {
            s = read_metadata(f, &c, v, index, count, seen, err);
            n_meta = json_object_size(v);
        } else
            s = read_entry(&c, name, len, v, index, count, &entries[n_tensors++], err);
        if (s != TM_OK)
            goto out;
        index++;
    }

    /* The reference sorts by offsets and requires the entries to tile the data section. */
    uint64_t data_start = 8 + n, data_size = m->size - data_start, at = 0;
    qsort(entries, n_tensors, sizeof *entries, entry_cmp);
    for (size_t i = 0; i < n_tensors; i++) {
        st_entry *e = &entries[i];
        if (e->begin != at) {
            s = entry_fail(err, TM_LAYOUT, &c, e->index, count, e->t.name.ptr, e->t.name.len,
                           "data_offsets begin at %llu but %s at %llu (data must be "
                           "contiguous: %s)", (unsigned long long)e->begin,
                           i ? "the tensor before it in the data ends" : "the data section starts",
                           (unsigned long long)at, e->begin > at ? "a gap" : "an overlap");
            goto out;
        }
        /* past the end, a file cut off (a download that stopped): opened with
         * TM_OPEN_TRUNCATED, its header reads and a tensor the end cuts has no data */
        if (e->end > data_size && !(flags & TM_OPEN_TRUNCATED)) {
            s = entry_fail(err, TM_LAYOUT, &c, e->index, count, e->t.name.ptr, e->t.name.len,
                           "data_offsets end at %llu (file byte %llu), past the end of the data "
                           "section (%llu bytes)", (unsigned long long)e->end,
                           (unsigned long long)(data_start + e->end), (unsigned long long)data_size);
            goto out;
        }
        e->t.offset = e->begin;
        /* NULL when the source cannot view them (a remote file's are fetched instead) or the
         * file is cut off before their end */
        e->t.data = e->end > data_size ? NULL
                                       : tm__source_view(m, data_start + e->begin, e->end - e->begin);
        e->t.info_offset = 8; /* the header's offset: finding the entry's own costs a search */
        e->t.shard = shard;
        at = e->end;
    }
    if (at < data_size) {
        s = tm__fail(err, TM_LAYOUT, data_start + at, "%sthe tensors end at data byte %llu (file "
                     "byte %llu) but the file goes on for %llu more bytes: the offsets must cover "
                     "the data section exactly", what, (unsigned long long)at,
                     (unsigned long long)(data_start + at), (unsigned long long)(data_size - at));
        goto out;
    }
    s = append_tensors(f, entries, n_tensors, err);
    *lay = (tm_layout){.format = TM_FORMAT_SAFETENSORS, .n_kv = n_meta, .n_tensors = n_tensors,
                       .alignment = 1, .head_end = 8, .kv_end = data_start,
                       .infos_end = data_start, .data_start = data_start, .data_size = data_size,
                       .tensors_end = at, .file_size = m->size, .n_shards = 1};
out:
    free(entries);
    return s;
}

/* ---- sharded checkpoints --------------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A shard name must name a file in the index's directory, nothing above or below it. */
static bool shard_name_ok(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* The index's "metadata": strings as strings, non-negative integers (total_size) as u64. */
static tm_status read_index_metadata(tm_file *f, const char *what, json_t *meta, json_t *seen,
                                     tm_error *err)
{
    if (!meta)
        return TM_OK;
    if (!json_is_object(meta))
        return tm__fail(err, TM_BAD_VALUE, 0, "%s\"metadata\" is not an object", what);
    st_owned *o = st_owned_get(f);
    if (!o || !(o->numbers = malloc(json_object_size(meta) * sizeof *o->numbers + 1)))
        return no_memory(err);
    tm_status s = reserve_kvs(f, json_object_size(meta), err);
    if (s != TM_OK)
        return s;
    size_t n_numbers = 0;
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (json_is_string(v)) {
            s = append_kv(f, seen, key, strlen(key), TM_V_STRING, json_string_value(v),
                          json_string_length(v), TM_NO_OFFSET, err);
        } else if (get_u64(v, &o->numbers[n_numbers])) {
            s = append_kv(f, seen, key, strlen(key), TM_V_U64, &o->numbers[n_numbers], 8,
                          TM_NO_OFFSET, err);
            n_numbers++;
        } else {
            char q[160];
            tm__quote(q, sizeof q, key, strlen(key));
            s = tm__fail(err, TM_BAD_VALUE, 0, "%s\"metadata\" entry %s is neither a string nor "
                         "a non-negative integer", what, q);
        }
        if (s != TM_OK)
            return s;
    }
    return TM_OK;
}

/* Open every shard the index at index_path names, replacing f->maps. index_root is kept. */
static tm_status open_shards(tm_file *f, const char *index_path, json_t *index_root,
                             json_t *seen, unsigned flags, tm_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "%s: ", index_path);
    json_t *wm = json_object_get(index_root, "weight_map");
    if (!json_is_object(wm))
        return tm__fail(err, TM_BAD_VALUE, 0, "%s\"weight_map\" is %s", what,
                        wm ? "not an object of tensor name -> shard file" : "missing");

    /* The distinct shard names, sorted. */
    size_t n_names = json_object_size(wm), n_shards = 0;
    const char **shards = malloc(n_names * sizeof *shards + 1);
    char **paths = NULL;
    tm_status s = TM_OK;
    if (!shards)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for the weight map");
    const char *name;
    json_t *v;
    json_object_foreach(wm, name, v) {
        char q[160];
        tm__quote(q, sizeof q, name, strlen(name));
        if (!json_is_string(v)) {
            s = tm__fail(err, TM_BAD_VALUE, 0, "%sweight_map entry %s is not a shard file name",
                         what, q);
            goto out;
        }
        if (!shard_name_ok(json_string_value(v)) || strlen(json_string_value(v)) != json_string_length(v)) {
            char qs[160];
            tm__quote(qs, sizeof qs, json_string_value(v), json_string_length(v));
            s = tm__fail(err, TM_BAD_VALUE, 0, "%sweight_map entry %s names shard %s, which is not "
                         "a plain file name in the index's directory", what, q, qs);
            goto out;
        }
        shards[n_shards++] = json_string_value(v);
    }
    qsort(shards, n_shards, sizeof *shards, str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n_shards; i++)
        if (u == 0 || strcmp(shards[u - 1], shards[i]) != 0)
            shards[u++] = shards[i];
    n_shards = u;
    if (n_shards == 0) {
        s = tm__fail(err, TM_BAD_VALUE, 0, "%sthe weight map names no shards", what);
        goto out;
    }
    if (!tm__shard_has_dir(&f->maps[0])) {
        s = tm__fail(err, TM_UNSUPPORTED, 0, "%san index read from a buffer or standard input "
                     "has no directory to find its shards in", what);
        goto out;
    }

    if (n_shards > UINT32_MAX - 1 || !(paths = calloc(n_shards, sizeof *paths))) {
        s = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %zu shards", n_shards);
        goto out;
    }
    for (size_t i = 0; i < n_shards && s == TM_OK; i++)
        if (!(paths[i] = tm__shard_sibling(index_path, shards[i])))
            s = no_memory(err);
    if (s == TM_OK)
        s = tm__shards_open(f, paths, (uint32_t)n_shards, -1, flags, err);
    if (s != TM_OK)
        goto out;

    for (uint32_t i = 0; i < n_shards; i++) {
        char shard[200], swhat[220];
        tm__quote(shard, sizeof shard, shards[i], strlen(shards[i]));
        snprintf(swhat, sizeof swhat, "shard %s: ", shard);
        uint64_t first = f->layout.n_tensors;
        s = parse_image(f, i, swhat, seen, flags, &f->shard_layouts[i], err);
        if (s != TM_OK)
            goto out;
        for (uint64_t t = first; t < f->layout.n_tensors; t++) {
            const tm_tensor *tt = &f->tensors[t];
            const char *want = json_string_value(json_object_getn(wm, tt->name.ptr, (size_t)tt->name.len));
            if (!want || strcmp(want, shards[i]) != 0) {
                char q[160], qwant[200];
                tm__quote(q, sizeof q, tt->name.ptr, tt->name.len);
                tm__quote(qwant, sizeof qwant, want ? want : "", want ? strlen(want) : 0);
                s = tm__fail(err, TM_BAD_VALUE, tt->info_offset, "%stensor %s %s%s", swhat, q,
                             want ? "is placed by the index in "
                                  : "is not in the index's weight map",
                             want ? qwant : "");
                goto out;
            }
        }
    }
    /* Every name the index lists was found where it says (checked above), so equal counts mean
     * none is missing; otherwise find one to name. */
    if (f->layout.n_tensors != json_object_size(wm)) {
        json_t *held = json_object(); /* the names the shards hold, as a hash set */
        for (uint64_t t = 0; held && t < f->layout.n_tensors; t++)
            if (json_object_setn_new_nocheck(held, f->tensors[t].name.ptr,
                                             (size_t)f->tensors[t].name.len, json_null()) != 0)
                json_decref(held), held = NULL;
        if (!held) {
            s = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory checking the weight map");
            goto out;
        }
        const char *missing = NULL, *where = NULL;
        json_object_foreach(wm, name, v) {
            if (!missing && !json_object_get(held, name)) {
                missing = name;
                where = json_string_value(v);
            }
        }
        json_decref(held);
        if (missing) {
            char q[160], qwhere[200];
            tm__quote(q, sizeof q, missing, strlen(missing));
            tm__quote(qwhere, sizeof qwhere, where, strlen(where));
            s = tm__fail(err, TM_NOT_FOUND, 0, "%sthe weight map puts tensor %s in %s, but "
                         "that shard does not hold it", what, q, qwhere);
            goto out;
        }
    }
out:
    for (size_t i = 0; paths && i < n_shards; i++)
        free(paths[i]);
    free(paths);
    free(shards);
    return s;
}

/* An index's JSON (bounded like a header: a weight map of 100 MB would be absurd). */
static tm_status parse_index_json(tm__source *m, const char *label, json_t **out, tm_error *err)
{
    json_error_t je;
    char what[300];
    snprintf(what, sizeof what, "%s: ", label);
    if (m->size > TM_SAFETENSORS_MAX_HEADER)
        return tm__fail(err, TM_LIMIT, 0, "%s: a safetensors index of %llu bytes is over the "
                        "limit of %u", label, (unsigned long long)m->size, TM_SAFETENSORS_MAX_HEADER);
    tm_status s = tm__source_need(m, m->size, err); /* a remote index: all of it */
    if (s != TM_OK)
        return s;
    *out = json_loadb((const char *)m->base, (size_t)m->size, JSON_REJECT_DUPLICATES, &je);
    if (!*out)
        return json_fail(err, &je, 0, what, "the safetensors index");
    return TM_OK;
}

/* The sibling model.safetensors.index.json of a shard, parsed. */
static tm_status load_index(tm_file *f, const char *path, unsigned flags, json_t **out,
                            tm_error *err)
{
    tm__source m = {0};
    tm_status s = tm__shard_map(&m, path, flags, &f->head_budget, err);
    if (s != TM_OK)
        return s;
    s = parse_index_json(&m, path, out, err);
    tm__source_close(&m);
    return s;
}

tm_status tm__safetensors_parse(tm_file *f, unsigned flags, tm_error *err)
{
    tm__source *m0 = &f->maps[0];
    tm_status s = TM_OK;
    f->layout.n_shards = 1;
    const bool is_file = tm__safetensors_looks_like_file(m0->base, m0->avail);
    /* A shard opened with TM_OPEN_ALL_SHARDS brings its checkpoint in through the sibling
     * index; a file with no index beside it is a checkpoint of its own. */
    char *index_path = NULL;
    if (is_file && (flags & TM_OPEN_ALL_SHARDS) && tm__shard_has_dir(m0) &&
        !tm__source_is_remote(m0)) { /* a remote shard opens alone: name its index instead */
        index_path = tm__shard_sibling(m0->path, ST_INDEX_NAME);
        if (!index_path)
            return no_memory(err);
        if (access(index_path, F_OK) != 0) {
            free(index_path);
            index_path = NULL;
        }
    }
    if (!is_file || index_path) {
        json_t *index = NULL;
        const char *label = m0->path ? m0->path : "buffer";
        if (index_path) {
            s = load_index(f, index_path, flags, &index, err);
        } else {
            s = parse_index_json(m0, label, &index, err);
        }
        if (s == TM_OK)
            s = st_keep(f, index, err);
        if (s == TM_OK && !json_is_object(index))
            s = tm__fail(err, TM_BAD_VALUE, 0, "%s: a safetensors index is a JSON object",
                         index_path ? index_path : label);
        if (s == TM_OK && index_path) {
            /* the shard must be one the index names, so that one checkpoint is presented */
            const char *base = strrchr(m0->path, '/') ? strrchr(m0->path, '/') + 1 : m0->path;
            json_t *wm = json_object_get(index, "weight_map"), *v;
            const char *k;
            bool named = false;
            json_object_foreach(wm, k, v)
                named = named || (json_is_string(v) && strcmp(json_string_value(v), base) == 0);
            char qbase[200];
            tm__quote(qbase, sizeof qbase, base, strlen(base));
            if (json_is_object(wm) && !named)
                s = tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET, "%s: the index %s names no shard %s",
                             m0->path, index_path, qbase);
        }
        json_t *seen = json_object(); /* metadata keys so far */
        if (s == TM_OK && !seen)
            s = no_memory(err);
        if (s == TM_OK)
            s = read_index_metadata(f, index_path ? index_path : label,
                                    json_object_get(index, "metadata"), seen, err);
        if (s == TM_OK) {
            char *copy = index_path ? index_path : strdup(label);
            index_path = NULL;
            s = copy ? open_shards(f, copy, index, seen, flags & ~(unsigned)TM_OPEN_ALL_SHARDS, err)
                     : no_memory(err);
            free(copy);
        }
        json_decref(seen);
        free(index_path);
        if (s != TM_OK)
            return s;
        tm__shards_sum(f);
        return TM_OK;
    }

    tm_layout lay;
    s = parse_image(f, 0, "", NULL, flags, &lay, err);
    if (s == TM_OK)
        f->layout = lay;
    return s;
}
