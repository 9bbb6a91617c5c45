/* A GGUF writer. The header is built in memory as two growable byte buffers, the metadata
 * (after the 24-byte head) and the tensor infos, because the infos must land after every key
 * whatever order the caller adds them in. tm_writer_finish writes head + metadata + infos +
 * padding in one writev, each tensor's bytes at data_start + offset with pwrite, then extends
 * the file to its final size with ftruncate, so a tensor without data is a hole (sparse: a
 * 4.7 GB benchmark file costs no disk). Tensor data is referenced, never copied. The file is
 * written through tm_outfile (outfile.c): a temporary file renamed into place on success. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#define GGUF_HEAD_BYTES 24u

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

typedef struct wtensor {
    const void *data; /* NULL: a hole */
    uint64_t offset, n_bytes;
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
                        "set the alignment before adding tensors (%llu added already)",
                        (unsigned long long)w->n_tensors);
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
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "metadata entry %llu: the key is NULL",
                        (unsigned long long)w->n_kv);
    *len = strlen(key);
    if (*len == 0 || *len > TM_MAX_NAME_LEN)
        return tm__fail(err, *len ? TM_LIMIT : TM_BAD_VALUE, TM_NO_OFFSET,
                        "metadata entry %llu: the key is %llu bytes long; it must be 1 to %u",
                        (unsigned long long)w->n_kv, (unsigned long long)*len, TM_MAX_NAME_LEN);
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
    if (extra > UINT64_MAX - 12 - key_len || !buf_reserve(&w->kv, 12 + key_len + extra))
        return no_room(err, "metadata entry", key);
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
                        "metadata entry %llu (%s): value type %u%s%s%s is not a fixed-size type",
                        (unsigned long long)w->n_kv, quoted(key).s, (unsigned)type, name ? " (" : "",
                        name ? name : "", name ? ")" : "");
    }
    if (!tm__mul_u64(count, size, out))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "metadata entry %llu (%s): %llu elements of %u bytes overflow",
                        (unsigned long long)w->n_kv, quoted(key).s, (unsigned long long)count, size);
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
                            "metadata entry %llu (%s): bool %llu holds %u, not 0 or 1",
                            (unsigned long long)w->n_kv, quoted(key).s, (unsigned long long)i, v[i]);
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
                      "metadata entry %llu (%s): the value is NULL",
                      (unsigned long long)w->n_kv, quoted(key).s);
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
        snprintf(where, sizeof where, " string %llu", (unsigned long long)i);
    if (!s && len)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "metadata entry %llu (%s):%s is NULL", (unsigned long long)w->n_kv,
                        quoted(key).s, where);
    if (len > TM_MAX_STRING_LEN)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "metadata entry %llu (%s):%s is %llu bytes long; the limit is %u",
                        (unsigned long long)w->n_kv, quoted(key).s, where, (unsigned long long)len,
                        TM_MAX_STRING_LEN);
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
                        "metadata entry %llu (%s): the strings are NULL",
                        (unsigned long long)w->n_kv, quoted(key).s);
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
 * overlapping explicit offsets are the caller's business: tests write such files on purpose.) */
static tm_status check_tensor(const tm_writer *w, const char *name, uint64_t name_len,
                              tm_type type, uint32_t n_dims, const uint64_t *ne,
                              uint64_t *n_bytes, tm_error *err)
{
    const unsigned long long idx = (unsigned long long)w->n_tensors;
    char q[96];
    tm__quote(q, sizeof q, name, name_len);
    if (name_len == 0 || name_len > TM_MAX_NAME_LEN)
        return tm__fail(err, name_len ? TM_LIMIT : TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %llu: the name is %llu bytes long; it must be 1 to %u", idx,
                        (unsigned long long)name_len, TM_MAX_NAME_LEN);
    if (n_dims < 1 || n_dims > TM_MAX_DIMS || !ne)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %llu (%s): %u dimensions; a GGUF tensor has 1 to %u", idx, q,
                        n_dims, TM_MAX_DIMS);
    const uint32_t block = tm_type_block_elems(type);
    const char *tname = tm_type_name(type);
    if (block == 0 || (unsigned)type >= (unsigned)TM_TYPE_U8)
        return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET,
                        "tensor %llu (%s): type %u%s%s%s is not a GGUF type this library knows",
                        idx, q, (unsigned)type, tname ? " (" : "", tname ? tname : "",
                        tname ? ")" : "");
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0)
            return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                            "tensor %llu (%s): dimension %u is 0; every dimension is at least 1",
                            idx, q, d);
        if (ne[d] >= (UINT64_C(1) << 63) || !tm__mul_u64(n, ne[d], &n))
            return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                            "tensor %llu (%s): dimension %u (%llu) makes the element count "
                            "overflow", idx, q, d, (unsigned long long)ne[d]);
    }
    if (ne[0] % block)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "tensor %llu (%s): a row of %llu elements is not a whole number of %s "
                        "blocks of %u", idx, q, (unsigned long long)ne[0], tname, block);
    if (!tm__mul_u64(n / block, tm_type_block_bytes(type), n_bytes))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %llu (%s): its size overflows", idx,
                        q);
    return TM_OK;
}

static tm_status add_tensor(tm_writer *w, const char *name, tm_type type, uint32_t n_dims,
                            const uint64_t *ne, bool placed, uint64_t offset, const void *data,
                            tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    if (!name)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tensor %llu: the name is NULL",
                        (unsigned long long)w->n_tensors);
    const uint64_t name_len = strlen(name);
    uint64_t n_bytes = 0, end;
    tm_status st = check_tensor(w, name, name_len, type, n_dims, ne, &n_bytes, err);
    if (st != TM_OK)
        return st;
    const uint64_t a = w->alignment;
    if (!placed) {
        if (w->data_end > UINT64_MAX - (a - 1))
            return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %llu: the data section is full",
                            (unsigned long long)w->n_tensors);
        offset = (w->data_end + a - 1) & ~(a - 1);
    } else if (offset % a) {
        return tm__fail(err, TM_LAYOUT, TM_NO_OFFSET,
                        "tensor %llu (%s): offset %llu is not a multiple of the alignment %u",
                        (unsigned long long)w->n_tensors, quoted(name).s, (unsigned long long)offset,
                        w->alignment);
    }
    if (!tm__add_u64(offset, n_bytes, &end))
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %llu: offset + size overflows",
                        (unsigned long long)w->n_tensors);
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
    w->tensors[w->n_tensors++] = (wtensor){data, offset, n_bytes};
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

static tm_status write_file(const tm_writer *w, int fd, const char *path, tm_error *err)
{
    uint8_t head[GGUF_HEAD_BYTES];
    buf h = {head, 0, sizeof head};
    put_bytes(&h, "GGUF", 4);
    put_u32(&h, w->version);
    put_u64(&h, w->n_tensors);
    put_u64(&h, w->n_kv);

    const uint64_t a = w->alignment;
    const uint64_t infos_end = tm_writer_header_bytes(w);
    const uint64_t data_start = (infos_end + a - 1) & ~(a - 1);
    const uint64_t data_size = w->data_end > w->min_data_size ? w->data_end : w->min_data_size;
    uint64_t file_size;
    if (!tm__add_u64(data_start, data_size, &file_size) || file_size > (uint64_t)INT64_MAX)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "%s: a file of %llu + %llu bytes is too big",
                        path, (unsigned long long)data_start, (unsigned long long)data_size);

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
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        if (t->data && !pwrite_all(fd, t->data, t->n_bytes, data_start + t->offset))
            return tm__fail(err, TM_IO, data_start + t->offset,
                            "%s: writing tensor %llu at byte %llu: %s", path,
                            (unsigned long long)i, (unsigned long long)(data_start + t->offset),
                            strerror(errno));
    }
    if (ftruncate(fd, (off_t)file_size) != 0)
        return tm__fail(err, TM_IO, file_size, "%s: setting the size to %llu bytes: %s", path,
                        (unsigned long long)file_size, strerror(errno));
    return TM_OK;
}

tm_status tm_writer_finish(tm_writer *w, const char *path, tm_error *err)
{
    if (!w)
        return no_writer(err, __func__);
    tm_status st;
    tm_outfile *o = NULL;
    if (!path) {
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_writer_finish: the path is NULL");
    } else if ((st = tm_outfile_open(&o, path, err)) == TM_OK) {
        /* A half-written file would open as a damaged model later: it stays a temporary file,
         * removed on failure, and whatever path named is untouched. */
        st = write_file(w, tm_outfile_fd(o), path, err);
        if (st == TM_OK)
            st = tm_outfile_commit(o, err);
        else
            tm_outfile_abort(o);
    }
    tm_writer_free(w);
    return st;
}
