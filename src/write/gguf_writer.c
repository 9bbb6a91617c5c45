/* A GGUF writer. The header is built in memory as two growable byte buffers, the metadata
 * (after the 24-byte head) and the tensor infos, because the infos must land after every key
 * whatever order the caller adds them in. tm_writer_finish writes head + metadata + infos +
 * padding in one writev, each tensor's bytes at data_start + offset with pwrite, then extends
 * the file to its final size with ftruncate, so a tensor without data is a hole (sparse: a
 * 4.7 GB benchmark file costs no disk). Tensor data is referenced, never copied. The file is
 * written through tm_outfile (outfile.c): a temporary file renamed into place on success, by
 * tm_writer_finish or, after tm_writer_write_to, by the caller. */
#include "../common/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define GGUF_HEAD_BYTES 24u

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

typedef struct wtensor {
    const void *data;     /* NULL: a hole, unless src is set */
    uint64_t offset, n_bytes;
    const tm__source *src; /* the source the bytes lie in, when taken from an open file (which
                            * may hold no view of them: data NULL, read through it) */
    uint64_t src_offset;  /* their offset in src's file */
} wtensor;

struct tm_writer {
    uint32_t version, alignment;
    buf kv, info;
    uint64_t n_kv;
    wtensor *tensors;
    uint64_t n_tensors;
    size_t tensors_cap;
    uint64_t data_end;       /* max over tensors of offset + n_bytes */
    uint64_t min_data_size;  /* tm_writer_set_data_size */
    wtensor section;         /* a one-file source's whole data section, when every tensor is
                              * one of its tensors copied at its own offset (kept_section) */
    uint64_t section_tensors; /* the source's tensor count */
    uint64_t n_kept;         /* tensors copied at their own offset from section's source */
    size_t *kv_at;           /* where each entry starts in kv, so one can be deleted */
    size_t kv_at_cap;
    bool verify;             /* tm_writer_set_verify */
    tm_writer_progress progress;
    void *progress_ctx;
};

/* ---- byte buffers ---------------------------------------------------------------------------
 * An entry's size is worked out first and reserved in one step, so that a failed add leaves
 * the buffer exactly as it was: the writer never holds half an entry. */

static bool buf_reserve(buf *b, uint64_t more)
{
    if (more > SIZE_MAX - b->len)
        return false;
    size_t need = b->len + (size_t)more;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return false;
    b->p = p;
    b->cap = cap;
    return true;
}

static void put_bytes(buf *b, const void *p, size_t n)
{
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* size bytes of a native-endian value, stored little-endian. */
static void put_native(buf *b, const void *value, uint32_t size)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const uint8_t *v = value;
    for (uint32_t i = size; i-- > 0;)
        b->p[b->len++] = v[i];
#else
    put_bytes(b, value, size);
#endif
}

static void put_u32(buf *b, uint32_t v) { put_native(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put_native(b, &v, 8); }

static void put_str(buf *b, const char *s, uint64_t len)
{
    put_u64(b, len);
    put_bytes(b, s, (size_t)len);
}

/* ---- lifetime and settings ------------------------------------------------------------------ */

tm_status tm_writer_new(tm_writer **out, tm_error *err)
{
    if (!out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_new: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory creating a writer");
    (*out)->version = 3;
    (*out)->alignment = TM_DEFAULT_ALIGNMENT;
    return TM_OK;
}

void tm_writer_free(tm_writer *w)
{
    if (!w)
        return;
    free(w->kv.p);
    free(w->info.p);
    free(w->tensors);
    free(w->kv_at);
    free(w);
}

static tm_status no_writer(tm_error *err, const char *fn)
{
    return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s: the writer is NULL", fn);
}

tm_status tm_writer_set_version(tm_writer *w, uint32_t version, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    /* Versions 2 and 3 lay a file out identically (3 only allowed big-endian files); version 1
     * had 32-bit counts, which this writer does not produce. */
    if (version != 2 && version != 3)
        return tm__fail(err, TM_BAD_VERSION, TM_NO_OFFSET,
                        "the writer writes GGUF versions 2 and 3, not %u", version);
    w->version = version;
    return TM_OK;
}

tm_status tm_writer_set_alignment(tm_writer *w, uint32_t alignment, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "alignment %u is not a power of two", alignment);
    /* Offsets are fixed as tensors are added; a new alignment would leave them misaligned. */
    if (w->n_tensors)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "set the alignment before adding tensors (%" PRIu64 " added already)",
                        (uint64_t)w->n_tensors);
    w->alignment = alignment;
    return TM_OK;
}

tm_status tm_writer_set_data_size(tm_writer *w, uint64_t n, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    w->min_data_size = n;
    return TM_OK;
}

uint64_t tm_writer_header_bytes(const tm_writer *w)
{
    return w ? GGUF_HEAD_BYTES + w->kv.len + w->info.len : 0;
}

/* ---- metadata ------------------------------------------------------------------------------- */

/* The key's length, or an error naming the entry that would have been added. */
static tm_status check_key(const tm_writer *w, const char *key, uint64_t *len, tm_error *err)
{
    if (!key)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 ": the key is NULL", (uint64_t)w->n_kv);
    *len = strlen(key);
    if (*len == 0 || *len > TM_MAX_NAME_LEN)
        return tm__fail(err, *len ? TM_LIMIT : TM_BAD_VALUE, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 ": the key is %" PRIu64
                        " bytes long; it must be 1 to %u",
                        (uint64_t)w->n_kv, (uint64_t)*len, TM_MAX_NAME_LEN);
    return TM_OK;
}

/* A key or name as messages show it: quoted and escaped as the readers do (tm__quote), since
 * it may come straight from another file (an edit or a merge). */
typedef struct quoted_name {
    char s[96];
} quoted_name;

static quoted_name quoted(const char *name)
{
    quoted_name q;
    tm__quote(q.s, sizeof q.s, name, strlen(name));
    return q;
}

static tm_status no_room(tm_error *err, const char *what, const char *name)
{
    return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory adding %s %s", what,
                    quoted(name).s);
}

/* Reserve a whole entry: key, value type, and extra bytes of value. */
static tm_status begin_kv(tm_writer *w, const char *key, uint64_t key_len, uint64_t extra,
                          tm_vtype type, tm_error *err)
{
    if (w->n_kv == w->kv_at_cap) {
        size_t cap = w->kv_at_cap ? w->kv_at_cap * 2 : 64;
        size_t *at = cap < SIZE_MAX / sizeof *at ? realloc(w->kv_at, cap * sizeof *at) : NULL;
        if (!at)
            return no_room(err, "metadata entry", key);
        w->kv_at = at;
        w->kv_at_cap = cap;
    }
    if (extra > UINT64_MAX - 12 - key_len || !buf_reserve(&w->kv, 12 + key_len + extra))
        return no_room(err, "metadata entry", key);
    w->kv_at[w->n_kv] = w->kv.len;
    put_str(&w->kv, key, key_len);
    put_u32(&w->kv, (uint32_t)type);
    w->n_kv++;
    return TM_OK;
}

/* Bytes of count elements of a fixed-size type; the error names the key. */
static tm_status fixed_bytes(const tm_writer *w, const char *key, tm_vtype type, uint64_t count,
                             uint64_t *out, tm_error *err)
{
    uint32_t size = tm_vtype_size(type);
    if (size == 0) {
        const char *name = tm_vtype_name(type);
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "metadata entry %" PRIu64
                        " (%s): value type %u%s%s%s is not a fixed-size type",
                        (uint64_t)w->n_kv, quoted(key).s, (unsigned)type, name ? " (" : "",
                        name ? name : "", name ? ")" : "");
    }
    if (!tm__mul_u64(count, size, out))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 " (%s): %" PRIu64
                        " elements of %u bytes overflow",
                        (uint64_t)w->n_kv, quoted(key).s, (uint64_t)count, size);
    return TM_OK;
}

/* GGUF's bool is one byte holding 0 or 1; anything else would read back as a different value
 * in different readers. */
static tm_status check_bools(const tm_writer *w, const char *key, const uint8_t *v,
                             uint64_t count, tm_error *err)
{
    for (uint64_t i = 0; i < count; i++)
        if (v[i] > 1)
            return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                            "metadata entry %" PRIu64 " (%s): bool %" PRIu64
                            " holds %u, not 0 or 1",
                            (uint64_t)w->n_kv, quoted(key).s, (uint64_t)i, v[i]);
    return TM_OK;
}

static tm_status put_fixed_array(tm_writer *w, const char *key, tm_vtype type,
                                 const void *elems, uint64_t count, bool is_array, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    uint64_t key_len, n_bytes = 0;
    tm_status st = check_key(w, key, &key_len, err);
    if (st == TM_OK)
        st = fixed_bytes(w, key, type, count, &n_bytes, err);
    if (st == TM_OK && count && !elems)
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                      "metadata entry %" PRIu64 " (%s): the value is NULL", (uint64_t)w->n_kv,
                      quoted(key).s);
    if (st == TM_OK && type == TM_V_BOOL)
        st = check_bools(w, key, elems, count, err);
    if (st == TM_OK)
        st = begin_kv(w, key, key_len, (is_array ? 12 : 0) + n_bytes,
                      is_array ? TM_V_ARRAY : type, err);
    if (st != TM_OK)
        return st;
    if (is_array) {
        put_u32(&w->kv, (uint32_t)type);
        put_u64(&w->kv, count);
    }
    uint32_t size = tm_vtype_size(type);
    for (uint64_t i = 0; i < count; i++)
        put_native(&w->kv, (const uint8_t *)elems + i * size, size);
    return TM_OK;
}

tm_status tm_writer_kv_scalar(tm_writer *w, const char *key, tm_vtype type, const void *value,
                              tm_error *err)
{
    return put_fixed_array(w, key, type, value, 1, false, err);
}

tm_status tm_writer_kv_array(tm_writer *w, const char *key, tm_vtype elem_type,
                             const void *elems, uint64_t count, tm_error *err)
{
    return put_fixed_array(w, key, elem_type, elems, count, true, err);
}

static tm_status check_string(const tm_writer *w, const char *key, uint64_t i, bool in_array,
                              const char *s, uint64_t len, tm_error *err)
{
    char where[32] = "";
    if (in_array)
        snprintf(where, sizeof where, " string %" PRIu64, (uint64_t)i);
    if (!s && len)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 " (%s):%s is NULL", (uint64_t)w->n_kv,
                        quoted(key).s, where);
    if (len > TM_MAX_STRING_LEN)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 " (%s):%s is %" PRIu64
                        " bytes long; the limit is %u",
                        (uint64_t)w->n_kv, quoted(key).s, where, (uint64_t)len, TM_MAX_STRING_LEN);
    return TM_OK;
}

tm_status tm_writer_kv_str(tm_writer *w, const char *key, const char *s, size_t len,
                           tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    uint64_t key_len;
    tm_status st = check_key(w, key, &key_len, err);
    if (st == TM_OK)
        st = check_string(w, key, 0, false, s, len, err);
    if (st == TM_OK)
        st = begin_kv(w, key, key_len, 8 + (uint64_t)len, TM_V_STRING, err);
    if (st != TM_OK)
        return st;
    put_str(&w->kv, s, len);
    return TM_OK;
}

tm_status tm_writer_kv_str_array(tm_writer *w, const char *key, const char *const *strs,
                                 const size_t *lens, uint64_t count, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    uint64_t key_len;
    tm_status st = check_key(w, key, &key_len, err);
    if (st != TM_OK)
        return st;
    if (count && !strs)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "metadata entry %" PRIu64 " (%s): the strings are NULL", (uint64_t)w->n_kv,
                        quoted(key).s);
    /* Two passes: sizes first (so the entry is reserved whole), then the bytes. */
    uint64_t n_bytes = 12;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t len = lens ? lens[i] : strs[i] ? strlen(strs[i]) : 0;
        st = check_string(w, key, i, true, strs[i], len, err);
        if (st != TM_OK)
            return st;
        if (!tm__add_u64(n_bytes, 8 + len, &n_bytes))
            return no_room(err, "metadata entry", key);
    }
    st = begin_kv(w, key, key_len, n_bytes, TM_V_ARRAY, err);
    if (st != TM_OK)
        return st;
    put_u32(&w->kv, TM_V_STRING);
    put_u64(&w->kv, count);
    for (uint64_t i = 0; i < count; i++)
        put_str(&w->kv, strs[i], lens ? lens[i] : strs[i] ? strlen(strs[i]) : 0);
    return TM_OK;
}

/* ---- tensors -------------------------------------------------------------------------------- */

/* What the reader checks about one tensor info (name length, dimensions, type, whole blocks,
 * sizes without overflow), checked before it is written, so that the writer does not produce
 * a file its own reader refuses for a tensor's name, shape or type. (Duplicate names and
 * overlapping explicit offsets are refused by tm_writer_finish, check_whole.) */
static tm_status check_tensor(const tm_writer *w, const char *name, uint64_t name_len,
                              tm_type type, uint32_t n_dims, const uint64_t *ne,
                              uint64_t *n_bytes, tm_error *err)
{
    const uint64_t idx = w->n_tensors;
    char q[96];
    tm__quote(q, sizeof q, name, name_len);
    if (name_len == 0 || name_len > TM_MAX_NAME_LEN)
        return tm__fail(err, name_len ? TM_LIMIT : TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %" PRIu64 ": the name is %" PRIu64
                        " bytes long; it must be 1 to %u",
                        idx, (uint64_t)name_len, TM_MAX_NAME_LEN);
    if (n_dims < 1 || n_dims > TM_MAX_DIMS || !ne)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %" PRIu64 " (%s): %u dimensions; a GGUF tensor has 1 to %u", idx, q,
                        n_dims, TM_MAX_DIMS);
    const uint32_t block = tm_type_block_elems(type);
    const char *tname = tm_type_name(type);
    if (block == 0 || (unsigned)type >= (unsigned)TM_TYPE_U8)
        return tm__fail(
            err, TM_UNSUPPORTED, TM_NO_OFFSET,
            "tensor %" PRIu64 " (%s): type %u%s%s%s is not a GGUF type this library knows", idx, q,
            (unsigned)type, tname ? " (" : "", tname ? tname : "", tname ? ")" : "");
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0)
            return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                            "tensor %" PRIu64
                            " (%s): dimension %u is 0; every dimension is at least 1",
                            idx, q, d);
        if (ne[d] >= (UINT64_C(1) << 63) || !tm__mul_u64(n, ne[d], &n))
            return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                            "tensor %" PRIu64 " (%s): dimension %u (%" PRIu64
                            ") makes the element count "
                            "overflow",
                            idx, q, d, (uint64_t)ne[d]);
    }
    if (ne[0] % block)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %" PRIu64 " (%s): a row of %" PRIu64
                        " elements is not a whole number of %s "
                        "blocks of %u",
                        idx, q, (uint64_t)ne[0], tname, block);
    if (!tm__mul_u64(n / block, tm_type_block_bytes(type), n_bytes))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %" PRIu64 " (%s): its size overflows",
                        idx, q);
    return TM_OK;
}

static tm_status add_tensor(tm_writer *w, const char *name, tm_type type, uint32_t n_dims,
                            const uint64_t *ne, bool placed, uint64_t offset, const void *data,
                            tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!name)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tensor %" PRIu64 ": the name is NULL",
                        (uint64_t)w->n_tensors);
    const uint64_t name_len = strlen(name);
    uint64_t n_bytes = 0, end;
    tm_status st = check_tensor(w, name, name_len, type, n_dims, ne, &n_bytes, err);
    if (st != TM_OK)
        return st;
    const uint64_t a = w->alignment;
    if (!placed) {
        if (w->data_end > UINT64_MAX - (a - 1))
            return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                            "tensor %" PRIu64 ": the data section is full", (uint64_t)w->n_tensors);
        offset = (w->data_end + a - 1) & ~(a - 1);
    } else if (offset % a) {
        return tm__fail(err, TM_LAYOUT, TM_NO_OFFSET,
                        "tensor %" PRIu64 " (%s): offset %" PRIu64
                        " is not a multiple of the alignment %u",
                        (uint64_t)w->n_tensors, quoted(name).s, (uint64_t)offset, w->alignment);
    }
    if (!tm__add_u64(offset, n_bytes, &end))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %" PRIu64 ": offset + size overflows",
                        (uint64_t)w->n_tensors);
    if (w->n_tensors == w->tensors_cap) {
        size_t cap = w->tensors_cap ? w->tensors_cap * 2 : 64;
        wtensor *t = cap < SIZE_MAX / sizeof *t ? realloc(w->tensors, cap * sizeof *t) : NULL;
        if (!t)
            return no_room(err, "tensor", name);
        w->tensors = t;
        w->tensors_cap = cap;
    }
    if (!buf_reserve(&w->info, 8 + name_len + 4 + 8 * (uint64_t)n_dims + 4 + 8))
        return no_room(err, "tensor", name);
    put_str(&w->info, name, name_len);
    put_u32(&w->info, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        put_u64(&w->info, ne[d]);
    put_u32(&w->info, (uint32_t)type);
    put_u64(&w->info, offset);
    w->tensors[w->n_tensors++] = (wtensor){data, offset, n_bytes, NULL, 0};
    if (end > w->data_end)
        w->data_end = end;
    return TM_OK;
}

tm_status tm_writer_tensor(tm_writer *w, const char *name, tm_type type, uint32_t n_dims,
                           const uint64_t *ne, const void *data, tm_error *err)
{
    return add_tensor(w, name, type, n_dims, ne, false, 0, data, err);
}

tm_status tm_writer_tensor_at(tm_writer *w, const char *name, tm_type type, uint32_t n_dims,
                              const uint64_t *ne, uint64_t offset, const void *data,
                              tm_error *err)
{
    return add_tensor(w, name, type, n_dims, ne, true, offset, data, err);
}

/* ---- taken from an open file ----------------------------------------------------------------
 * Entries are copied as bytes (a file's values are little-endian already); tensors are
 * referenced in the source's mapping and copied at finish, from the source file itself where
 * it is still the file that was mapped. */

/* A tm_str as a C string for the adders and messages (keys and names hold no NUL: the readers
 * refuse one). NULL when out of memory. */
static char *cstr(tm_str s)
{
    char *c = malloc((size_t)s.len + 1);
    if (c) {
        if (s.len)
            memcpy(c, s.ptr, (size_t)s.len);
        c[s.len] = '\0';
    }
    return c;
}

tm_status tm_writer_kv_copy(tm_writer *w, const tm_kv *kv, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!kv || (!kv->data && kv->data_bytes) || kv->type > TM_V_F64)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_kv_copy: not an entry");
    char *key = cstr(kv->key);
    if (!key)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory copying an entry");
    uint64_t key_len;
    tm_status st = check_key(w, key, &key_len, err);
    /* what follows the value type: a string's length, an array's element type and count */
    const uint64_t lead = kv->type == TM_V_STRING ? 8 : kv->type == TM_V_ARRAY ? 12 : 0;
    if (st == TM_OK && kv->data_bytes > UINT64_MAX - lead)
        st = no_room(err, "metadata entry", key);
    if (st == TM_OK)
        st = begin_kv(w, key, key_len, lead + kv->data_bytes, kv->type, err);
    free(key);
    if (st != TM_OK)
        return st;
    if (kv->type == TM_V_STRING)
        put_u64(&w->kv, kv->data_bytes);
    if (kv->type == TM_V_ARRAY) {
        put_u32(&w->kv, (uint32_t)kv->elem_type);
        put_u64(&w->kv, kv->count);
    }
    put_bytes(&w->kv, kv->data, (size_t)kv->data_bytes);
    return TM_OK;
}

/* Entry i's key, as stored (u64 length, bytes). */
static tm_str entry_key(const tm_writer *w, uint64_t i)
{
    const uint8_t *p = w->kv.p + w->kv_at[i];
    return (tm_str){(const char *)p + 8, tm__load_le(p, 8)};
}

tm_status tm_writer_kv_delete(tm_writer *w, const char *key, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!key)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_kv_delete: the key is NULL");
    const size_t len = strlen(key);
    for (uint64_t i = 0; i < w->n_kv; i++) {
        const tm_str k = entry_key(w, i);
        if (k.len != len || memcmp(k.ptr, key, len) != 0)
            continue;
        const size_t at = w->kv_at[i];
        const size_t end = i + 1 < w->n_kv ? w->kv_at[i + 1] : w->kv.len;
        memmove(w->kv.p + at, w->kv.p + end, w->kv.len - end);
        w->kv.len -= end - at;
        for (uint64_t j = i + 1; j < w->n_kv; j++)
            w->kv_at[j - 1] = w->kv_at[j] - (end - at);
        w->n_kv--;
        return TM_OK;
    }
    char q[96];
    tm__quote(q, sizeof q, key, len);
    return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET, "the writer holds no metadata entry %s", q);
}

tm_status tm_writer_tensor_copy(tm_writer *w, const tm_file *f, const tm_tensor *t,
                                const char *name, bool same_offset, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!f || !t || !tm__file_owns(f, t))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_tensor_copy: %s",
                        f && t ? "the tensor is another file's" :
                                 "a file and one of its tensors are needed");
    if (tm__source_is_remote(&f->maps[t->shard])) {
        char q[96];
        tm__quote(q, sizeof q, t->name.ptr, t->name.len);
        return tm__fail(err, TM_UNSUPPORTED, t->info_offset,
                        "tensor %s is in a remote file (%s): its bytes are not copied into a new "
                        "file from the network; download the file and use the local copy", q,
                        f->maps[t->shard].path);
    }
    tm_status st = tm__tensor_whole(t, err);
    if (st != TM_OK)
        return st;
    char *own = name ? NULL : cstr(t->name);
    if (!name && !own)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory copying a tensor");
    st = add_tensor(w, name ? name : own, t->type, t->n_dims, t->ne, same_offset,
                              t->offset, t->data, err);
    free(own);
    if (st != TM_OK)
        return st;
    wtensor *wt = &w->tensors[w->n_tensors - 1];
    const tm_layout *l = tm_shard_layout(f, t->shard);
    wt->src = &f->maps[t->shard];
    wt->src_offset = l->data_start + t->offset;
    if (same_offset && f->layout.n_shards == 1) {
        if (w->n_kept == 0)
            w->section = (wtensor){(const uint8_t *)t->data - t->offset, 0, l->data_size, wt->src,
                                   l->data_start};
        w->section_tensors = l->n_tensors;
        w->n_kept += w->section.src == wt->src;
    }
    return TM_OK;
}

/* Every tensor is one of a one-file source's tensors, each once (check_whole refuses overlaps)
 * and at its own offset: the data section is the source's, written whole, bytes between the
 * tensors and after the last (ggml pads the last tensor to the alignment) included, so that an
 * edit changes nothing it was not asked to change, the file's size included. */
static bool kept_section(const tm_writer *w)
{
    return w->n_tensors > 0 && w->n_kept == w->n_tensors && w->n_kept == w->section_tensors;
}

tm_status tm_writer_new_from(const tm_file *f, tm_writer **out, tm_error *err)
{
    if (out)
        *out = NULL;
    if (!f || !out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_new_from: f and out must "
                        "be set");
    const tm_layout *l = tm_file_layout(f);
    if (l->format != TM_FORMAT_GGUF)
        return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET, "tm_writer_new_from: the source is "
                        "not a GGUF file");
    tm_writer *w;
    tm_status st = tm_writer_new(&w, err);
    if (st == TM_OK)
        st = tm_writer_set_version(w, l->version, err);
    if (st == TM_OK)
        st = tm_writer_set_alignment(w, l->alignment, err);
    for (uint64_t i = 0; st == TM_OK && i < l->n_kv; i++)
        st = tm_writer_kv_copy(w, tm_kv_at(f, i), err);
    /* One file keeps every tensor where it was; the tensors of a set are laid out in order. */
    for (uint64_t i = 0; st == TM_OK && i < l->n_tensors; i++)
        st = tm_writer_tensor_copy(w, f, tm_tensor_at(f, i), NULL, l->n_shards == 1, err);
    if (st == TM_OK) {
        w->verify = true;
        *out = w;
    } else {
        tm_writer_free(w);
    }
    return st;
}

tm_status tm_writer_set_verify(tm_writer *w, bool verify, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    w->verify = verify;
    return TM_OK;
}

tm_status tm_writer_set_progress(tm_writer *w, tm_writer_progress fn, void *ctx, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    w->progress = fn;
    w->progress_ctx = ctx;
    return TM_OK;
}

/* ---- finish --------------------------------------------------------------------------------- */

/* writev until every byte is out (a regular file may still take a short write: a signal, a
 * quota, a full disk reported on the next call). */
static bool writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t k = writev(fd, iov, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        size_t done = (size_t)k;
        while (n > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return true;
}

static bool pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t at)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (uint64_t)k;
        at += (uint64_t)k;
    }
    return true;
}

/* Bytes moved per call: progress is reported between calls. */
#define COPY_CHUNK (64u << 20)

/* The source file a tensor's bytes are copied from with copy_file_range (so that a filesystem
 * that can share extents does), while it is still the file that was opened: same device,
 * inode, size and modification time. Otherwise, or where the kernel cannot copy between the two
 * files, the bytes the reader saw are written: from the mapping, or read through a source that
 * holds no view of them (a large file opened with TM_OPEN_NO_MMAP). */
typedef struct source {
    const tm__source *map; /* the source fd belongs to */
    int fd;             /* -1: write what the reader sees */
    bool no_copy;       /* copy_file_range is not possible here: write what the reader sees */
    uint8_t *bounce;    /* READ_CHUNK bytes for reading through a source, once needed */
} source;

/* Bytes read through a source per write. */
#define READ_CHUNK (4u << 20)

static int source_fd(source *s, const tm__source *m)
{
    if (s->map == m || s->no_copy)
        return s->no_copy ? -1 : s->fd;
    if (s->fd >= 0)
        close(s->fd);
    s->map = m;
    s->fd = m ? tm__source_reopen(m) : -1;
    return s->fd;
}

/* n bytes of t from off, read through its source and written at file offset at + off; what
 * names t in messages. */
static tm_status write_through(int fd, source *src, const wtensor *t, const char *what,
                               uint64_t off, uint64_t at, size_t n, const char *path,
                               tm_error *err)
{
    if (!src->bounce && !(src->bounce = malloc(READ_CHUNK)))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory copying %s", what);
    tm_error inner = {0};
    tm_status st = tm__source_read(t->src, t->src_offset + off, n, src->bounce, &inner);
    if (st != TM_OK)
        return tm__fail(err, st, inner.offset, "%s: reading %s from %s: %s", path, what,
                        t->src->path, inner.message);
    if (!pwrite_all(fd, src->bounce, n, at + off))
        return tm__fail(err, TM_IO, at + off, "%s: writing %s at byte %" PRIu64 ": %s", path, what,
                        (uint64_t)(at + off), strerror(errno));
    return TM_OK;
}

/* t's bytes at file offset at, chunk by chunk, counting *done for the progress; what names t
 * in messages. */
static tm_status write_tensor(const tm_writer *w, int fd, source *src, const wtensor *t,
                              const char *what, uint64_t at, uint64_t *done, uint64_t total,
                              const char *path, tm_error *err)
{
    for (uint64_t off = 0; off < t->n_bytes;) {
        const size_t n = t->n_bytes - off < COPY_CHUNK ? (size_t)(t->n_bytes - off) : COPY_CHUNK;
        const int in = source_fd(src, t->src);
        ssize_t k;
        if (in >= 0) {
            loff_t from = (loff_t)(t->src_offset + off), to = (loff_t)(at + off);
            k = copy_file_range(in, &from, fd, &to, n, 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                          errno == EOPNOTSUPP || errno == EBADF)) {
                src->no_copy = true; /* not between these files: the mappings it is */
                continue;
            }
            if (k == 0)
                errno = EIO; /* the source ends sooner than when it was mapped */
        } else if (t->data) {
            k = pwrite_all(fd, (const uint8_t *)t->data + off, n, at + off) ? (ssize_t)n : -1;
        } else {
            tm_status st = write_through(fd, src, t, what, off, at,
                                         n < READ_CHUNK ? n : READ_CHUNK, path, err);
            if (st != TM_OK)
                return st;
            k = (ssize_t)(n < READ_CHUNK ? n : READ_CHUNK);
        }
        if (k <= 0)
            return tm__fail(err, TM_IO, at + off, "%s: writing %s at byte %" PRIu64 ": %s", path,
                            what, (uint64_t)(at + off), strerror(errno));
        off += (uint64_t)k;
        *done += (uint64_t)k;
        if (w->progress)
            w->progress(w->progress_ctx, *done, total);
    }
    return TM_OK;
}

/* The 24 bytes the file opens with: magic, version, tensor count, entry count. */
static void put_head(const tm_writer *w, uint8_t head[GGUF_HEAD_BYTES])
{
    buf h = {head, 0, GGUF_HEAD_BYTES};
    put_bytes(&h, "GGUF", 4);
    put_u32(&h, w->version);
    put_u64(&h, w->n_tensors);
    put_u64(&h, w->n_kv);
}

static tm_status write_file(const tm_writer *w, int fd, const char *path, tm_error *err)
{
    uint8_t head[GGUF_HEAD_BYTES];
    put_head(w, head);

    const uint64_t a = w->alignment;
    const uint64_t infos_end = tm_writer_header_bytes(w);
    const uint64_t data_start = (infos_end + a - 1) & ~(a - 1);
    const bool whole = kept_section(w);
    uint64_t data_size = w->data_end > w->min_data_size ? w->data_end : w->min_data_size;
    if (whole && w->section.n_bytes > data_size)
        data_size = w->section.n_bytes;
    uint64_t file_size;
    if (!tm__add_u64(data_start, data_size, &file_size) || file_size > (uint64_t)INT64_MAX)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "%s: a file of %" PRIu64 " + %" PRIu64 " bytes is too big", path,
                        (uint64_t)data_start, (uint64_t)data_size);

    /* The padding is zeros: taken from a zeroed block (an alignment up to its size) or, for
     * larger alignments, left to the ftruncate below, which reads back as zeros too. */
    static const uint8_t zeros[4096];
    const uint64_t padding = data_start - infos_end;
    struct iovec iov[4] = {
        {head, sizeof head},
        {w->kv.p, w->kv.len},
        {w->info.p, w->info.len},
        {(void *)(uintptr_t)zeros, padding <= sizeof zeros ? (size_t)padding : 0},
    };
    if (!writev_all(fd, iov, 4))
        return tm__fail(err, TM_IO, 0, "%s: writing the header: %s", path, strerror(errno));
    uint64_t total = whole ? w->section.n_bytes : 0, done = 0;
    for (uint64_t i = 0; !whole && i < w->n_tensors; i++)
        total += w->tensors[i].data || w->tensors[i].src ? w->tensors[i].n_bytes : 0;
    source src = {NULL, -1, false, NULL};
    tm_status st = TM_OK;
    if (whole)
        st = write_tensor(w, fd, &src, &w->section, "the data section", data_start, &done, total,
                          path, err);
    for (uint64_t i = 0; !whole && i < w->n_tensors && st == TM_OK; i++) {
        char what[32];
        snprintf(what, sizeof what, "tensor %" PRIu64, (uint64_t)i);
        if (w->tensors[i].data || w->tensors[i].src)
            st = write_tensor(w, fd, &src, &w->tensors[i], what, data_start + w->tensors[i].offset,
                              &done, total, path, err);
    }
    if (src.fd >= 0)
        close(src.fd);
    free(src.bounce);
    if (st != TM_OK)
        return st;
    if (ftruncate(fd, (off_t)file_size) != 0)
        return tm__fail(err, TM_IO, file_size, "%s: setting the size to %" PRIu64 " bytes: %s",
                        path, (uint64_t)file_size, strerror(errno));
    return TM_OK;
}

/* The file just written, opened again as a reader opens it (tm_writer_set_verify). */
static tm_status verify_written(const tm_writer *w, const char *written, const char *path,
                                tm_error *err)
{
    tm_file *f = NULL;
    tm_error inner = {0};
    tm_status st = tm_open(written, TM_OPEN_ONE_SHARD, &f, &inner);
    if (st != TM_OK)
        return tm__fail(err, st, inner.offset, "%s: the file written does not read back: %s",
                        path, inner.message);
    const tm_layout *l = tm_file_layout(f);
    if (l->n_kv != w->n_kv || l->n_tensors != w->n_tensors ||
        l->infos_end != tm_writer_header_bytes(w))
        st = tm__fail(err, TM_IO, TM_NO_OFFSET,
                      "%s: the file written reads back as %" PRIu64 " entries "
                      "and %" PRIu64 " tensors in a %" PRIu64 "-byte header, not %" PRIu64
                      ", %" PRIu64 " and %" PRIu64,
                      path, (uint64_t)l->n_kv, (uint64_t)l->n_tensors, (uint64_t)l->infos_end,
                      (uint64_t)w->n_kv, (uint64_t)w->n_tensors,
                      (uint64_t)tm_writer_header_bytes(w));
    tm_close(f);
    return st;
}

/* ---- what the reader refuses across entries, refused before anything is written ---------- */

/* A name in one of the header buffers: where it starts (after its u64 length), how long, and
 * which entry or tensor it names. */
typedef struct named {
    const uint8_t *p;
    uint64_t len, index;
} named;

static int by_name(const void *x, const void *y)
{
    const named *a = x, *b = y;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    int c = memcmp(a->p, b->p, (size_t)a->len);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

static int by_offset(const void *x, const void *y)
{
    const wtensor *a = *(const wtensor *const *)x, *b = *(const wtensor *const *)y;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* Two of n names alike: TM_DUPLICATE naming both indices. */
static tm_status no_duplicates(named *v, uint64_t n, const char *what, tm_error *err)
{
    qsort(v, (size_t)n, sizeof *v, by_name);
    for (uint64_t i = 1; i < n; i++)
        if (v[i].len == v[i - 1].len && memcmp(v[i].p, v[i - 1].p, (size_t)v[i].len) == 0) {
            char q[96];
            tm__quote(q, sizeof q, (const char *)v[i].p, v[i].len);
            return tm__fail(err, TM_DUPLICATE, TM_NO_OFFSET,
                            "%s %" PRIu64 " and %" PRIu64 " are both named %s", what,
                            (uint64_t)v[i - 1].index, (uint64_t)v[i].index, q);
        }
    return TM_OK;
}

/* Duplicate keys or tensor names, overlapping tensors, and a general.alignment that is not a
 * u32 equal to the alignment the data is laid out with: the reader refuses each, so the writer
 * does, before a file exists. */
static tm_status check_whole(const tm_writer *w, tm_error *err)
{
    uint64_t most = w->n_kv > w->n_tensors ? w->n_kv : w->n_tensors;
    named *v = malloc((size_t)(most ? most : 1) * sizeof *v);
    const wtensor **t = malloc((size_t)(w->n_tensors ? w->n_tensors : 1) * sizeof *t);
    tm_status st = v && t ? TM_OK : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; st == TM_OK && i < w->n_kv; i++) {
        const uint8_t *k = w->kv.p + w->kv_at[i];
        v[i] = (named){k + 8, tm__load_le(k, 8), i};
        if (v[i].len == 17 && memcmp(v[i].p, "general.alignment", 17) == 0 &&
            (tm__load_le(k + 8 + 17, 4) != TM_V_U32 ||
             tm__load_le(k + 8 + 17 + 4, 4) != w->alignment))
            st = tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                          "metadata entry %" PRIu64 ": general.alignment must be a u32 holding the "
                          "writer's alignment, %u (tm_writer_set_alignment)",
                          (uint64_t)i, w->alignment);
    }
    if (st == TM_OK)
        st = no_duplicates(v, w->n_kv, "metadata entries", err);
    /* the infos: u64 name length, name, u32 n_dims, n_dims u64, u32 type, u64 offset */
    const uint8_t *p = w->info.p;
    for (uint64_t i = 0; st == TM_OK && i < w->n_tensors; i++) {
        uint64_t len = tm__load_le(p, 8);
        v[i] = (named){p + 8, len, i};
        p += 8 + len;
        p += 4 + 8 * tm__load_le(p, 4) + 4 + 8;
        t[i] = &w->tensors[i];
    }
    if (st == TM_OK)
        st = no_duplicates(v, w->n_tensors, "tensors", err);
    if (st == TM_OK)
        qsort(t, (size_t)w->n_tensors, sizeof *t, by_offset);
    for (uint64_t i = 1; st == TM_OK && i < w->n_tensors; i++)
        if (t[i - 1]->offset + t[i - 1]->n_bytes > t[i]->offset)
            st = tm__fail(err, TM_LAYOUT, TM_NO_OFFSET,
                          "tensors %" PRIu64 " and %" PRIu64 " overlap: data bytes %" PRIu64
                          " to %" PRIu64 " and from %" PRIu64,
                          (uint64_t)(t[i - 1] - w->tensors), (uint64_t)(t[i] - w->tensors),
                          (uint64_t)t[i - 1]->offset,
                          (uint64_t)(t[i - 1]->offset + t[i - 1]->n_bytes), (uint64_t)t[i]->offset);
    free(v);
    free(t);
    return st;
}

/* A GGUF file is written by offset (tensors with pwrite, the size with ftruncate): an output
 * that cannot seek (a FIFO, a pipe, a socket) would take the header and then fail with "Illegal
 * seek", a partial file already sent. Refused before anything is written or, for a path, before
 * it is opened (opening a FIFO waits for its reader). */
static tm_status cannot_seek(const char *path, tm_error *err)
{
    return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s: cannot seek (a FIFO, pipe or socket), "
                    "and a GGUF file is written by offset: write it to a file", path);
}

tm_status tm_writer_write_to(tm_writer *w, tm_outfile *o, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!o)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_write_to: the output is "
                        "NULL");
    const char *path = tm__outfile_name(o);
    tm_status st = check_whole(w, err);
    if (st == TM_OK && lseek(tm_outfile_fd(o), 0, SEEK_CUR) < 0 && errno == ESPIPE)
        st = cannot_seek(path, err);
    /* A half-written file would open as a damaged model later: it stays a temporary file until
     * the caller commits it, and whatever path named is untouched. */
    if (st == TM_OK)
        st = write_file(w, tm_outfile_fd(o), path, err);
    /* read back before it replaces anything (a device or FIFO cannot be read back) */
    if (st == TM_OK && w->verify && tm_outfile_temp_path(o))
        st = verify_written(w, tm_outfile_temp_path(o), path, err);
    return st;
}

tm_status tm_writer_header(const tm_writer *w, void *out, uint64_t size, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    const uint64_t n = tm_writer_header_bytes(w);
    if (!out || size < n)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_writer_header: the header is "
                        "%" PRIu64 " bytes and the buffer %" PRIu64,
                        (uint64_t)n, (uint64_t)(out ? size : 0));
    tm_status st = check_whole(w, err);
    if (st != TM_OK)
        return st;
    uint8_t *p = out;
    put_head(w, p);
    if (w->kv.len)
        memcpy(p + GGUF_HEAD_BYTES, w->kv.p, w->kv.len);
    if (w->info.len)
        memcpy(p + GGUF_HEAD_BYTES + w->kv.len, w->info.p, w->info.len);
    return TM_OK;
}

tm_status tm_writer_finish(tm_writer *w, const char *path, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    tm_status st;
    tm_outfile *o = NULL;
    struct stat sb;
    if (!path) {
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_finish: the path is NULL");
    } else if ((st = check_whole(w, err)) != TM_OK) {
        /* nothing written, nothing created */
    } else if (stat(path, &sb) == 0 && (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
        st = cannot_seek(path, err);
    } else if ((st = tm_outfile_open(&o, path, err)) == TM_OK) {
        st = tm_writer_write_to(w, o, err);
        if (st == TM_OK)
            st = tm_outfile_commit(o, err);
        else
            tm_outfile_abort(o);
    }
    tm_writer_free(w);
    return st;
}
