/* The GGUF walk: head, metadata, tensor infos, alignment, data start, in one forward pass.
 *
 * Every field is read once, through the bounds-checked cursor, into a local: the local is
 * checked and then used, so a writer changing the mapped file under us cannot make a checked
 * length differ from a used one. Nothing is cast into the mapping, nothing recurses on file
 * data, and no allocation is sized by a count before the walk has met that many entries. */
#include "gguf_walk.h"

#include <stdio.h>
#include <stdlib.h>

/* The smallest records the walk can meet: a count the remaining bytes cannot hold is refused
 * before anything is walked. A key or name is at least 1 byte (empty ones are refused). */
#define MIN_KV_BYTES (8u + 1u + 4u + 1u)            /* key length, key, value type, a u8 */
/* name length, name, n_dims, ne[0], type, offset */
#define MIN_INFO_BYTES (8u + 1u + 4u + 8u + 4u + 8u)
/* The index stores entry numbers in 32 bits. */
#define MAX_ENTRIES (UINT32_MAX - 1u)
#define ALIGNMENT_KEY "general.alignment"
#define GGUF_MAGIC 0x46554747u /* "GGUF" read as a little-endian u32 */

/* The walk's position and what it is reading, for messages. */
typedef struct walk {
    tm__cursor c;
    tm_error *err;
    const char *what;     /* "metadata entry", "tensor info", or NULL in the head */
    uint64_t i, n;        /* which entry of how many */
    tm_str name;          /* the entry's key or name once read, else {NULL, 0} */
    tm_str prev;          /* the previous entry's: damage there shows up as a bad next field */
    uint64_t want;        /* the furthest byte a read that ran out of bytes needed */
} walk;

#define TRY(expr)                      \
    do {                               \
        tm_status st_ = (expr);        \
        if (st_ != TM_OK)              \
            return st_;                \
    } while (0)

typedef unsigned long long ull; /* for printf */

/* The name this file has always used for tm__gguf_image. */
typedef tm__gguf_image image;

static uint64_t at(const walk *w) { return tm__cursor_offset(&w->c); }
static uint64_t left(const walk *w) { return tm__cursor_left(&w->c); }

/* "metadata entry 9 of 22 ('llama.block_count'): <detail>" */
__attribute__((format(printf, 4, 5))) static tm_status fail(const walk *w, tm_status code,
                                                            uint64_t offset, const char *fmt, ...)
{
    char detail[TM_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (!w->what)
        return tm__fail(w->err, code, offset, "%s", detail);
    char q[160] = "";
    if (w->name.ptr || w->prev.ptr) {
        char quoted[140];
        const tm_str s = w->name.ptr ? w->name : w->prev;
        tm__quote(quoted, sizeof quoted, s.ptr, s.len);
        snprintf(q, sizeof q, w->name.ptr ? " (%s)" : " (after %s)", quoted);
    }
    return tm__fail(w->err, code, offset, "%s %llu of %llu%s: %s", w->what, (ull)w->i, (ull)w->n,
                    q, detail);
}

/* A field's name for messages, rendered only on failure: the walk meets millions of fields
 * and must not format a name for each. "string 3 length", "ne[1]", "value type". */
typedef struct field {
    const char *name;
    uint64_t index;  /* NO_INDEX, or printed after the name */
    bool length;     /* the u64 length of a string */
} field;
#define NO_INDEX UINT64_MAX
#define F(name) ((field){(name), NO_INDEX, false})

static const char *field_str(char *buf, size_t cap, field f)
{
    int n = snprintf(buf, cap, "%s", f.name);
    if (f.index != NO_INDEX && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " %llu", (ull)f.index);
    if (f.length && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " length");
    return buf;
}

/* A remote file's walk sees only the head fetched so far: note how far a read that ran out of
 * bytes needed to go, so that walk_image can fetch that much and walk again. */
static void wants(walk *w, uint64_t from, uint64_t n)
{
    uint64_t end;
    if (!tm__add_u64(from, n, &end))
        end = UINT64_MAX;
    if (end > w->want)
        w->want = end;
}

/* The failure paths stay out of line: the fast paths below run once per field of the header
 * (300,000 strings in a tokenizer) and are inlined into the walk. */
__attribute__((cold, noinline)) static tm_status truncated(walk *w, unsigned n, field f)
{
    char name[64];
    wants(w, at(w), n);
    return fail(w, TM_TRUNCATED, at(w),
                "the file ends at byte %llu, inside the %s at byte %llu (%u bytes)",
                (ull)(at(w) + left(w)), field_str(name, sizeof name, f), (ull)at(w), n);
}

__attribute__((cold, noinline)) static tm_status bad_length(walk *w, field f,
                                                            uint64_t len_at, uint64_t len,
                                                            uint64_t max)
{
    char name[64];
    field_str(name, sizeof name, f);
    if (len <= max)
        wants(w, len_at + 8, len);
    if (len > max)
        return fail(w, TM_LIMIT, len_at, "%s %llu at byte %llu is over the limit of %llu bytes",
                    name, (ull)len, (ull)len_at, (ull)max);
    return fail(w, TM_TRUNCATED, len_at,
                "%s %llu at byte %llu runs past the end of the file (%llu bytes left)", name,
                (ull)len, (ull)len_at, (ull)left(w));
}

/* An n-byte little-endian field; f names it in the message if the file ends inside it. */
static inline tm_status read_uint(walk *w, unsigned n, field f, uint64_t *out)
{
    *out = 0;
    if (left(w) < n)
        return truncated(w, n, f);
    *out = tm__load_le(w->c.p, n);
    w->c.p += n;
    return TM_OK;
}

/* A GGUF string: u64 length, then that many bytes, at most max. */
static inline tm_status read_str(walk *w, field f, uint64_t max, tm_str *out)
{
    const uint64_t len_at = at(w);
    uint64_t len;
    *out = (tm_str){NULL, 0};
    f.length = true;
    TRY(read_uint(w, 8, f, &len));
    if (len > max || len > left(w))
        return bad_length(w, f, len_at, len, max);
    out->ptr = (const char *)w->c.p;
    out->len = len;
    w->c.p += len;
    return TM_OK;
}

/* A key or tensor name: 1..TM_MAX_NAME_LEN bytes, no NUL (names are compared by length and
 * bytes, but a NUL would cut them short for every C caller). Becomes the entry's name. */
static tm_status read_name(walk *w, const char *what, tm_str *out)
{
    const uint64_t len_at = at(w);
    TRY(read_str(w, F(what), TM_MAX_NAME_LEN, out));
    if (out->len == 0)
        return fail(w, TM_BAD_VALUE, len_at, "empty %s (length 0 at byte %llu)", what,
                    (ull)len_at);
    w->name = *out;
    const char *nul = memchr(out->ptr, '\0', (size_t)out->len);
    if (nul)
        return fail(w, TM_BAD_VALUE, len_at + 8 + (uint64_t)(nul - out->ptr),
                    "the %s holds a NUL byte at byte %llu", what,
                    (ull)(len_at + 8 + (uint64_t)(nul - out->ptr)));
    return TM_OK;
}

/* count values of a type (never an array) starting at the cursor. count_at is where the count
 * was read (the scalar's type field for a single value), for messages. */
static tm_status walk_values(walk *w, tm_vtype type, uint64_t count, uint64_t count_at)
{
    if (type == TM_V_STRING) {
        if (count > left(w) / 8) { /* each string is at least its 8-byte length */
            wants(w, at(w), count > UINT64_MAX / 8 ? UINT64_MAX : count * 8);
            return fail(w, TM_TRUNCATED, count_at,
                        "%llu strings (count at byte %llu) cannot fit in the %llu bytes left",
                        (ull)count, (ull)count_at, (ull)left(w));
        }
        for (uint64_t j = 0; j < count; j++) {
            tm_str s;
            TRY(read_str(w, (field){"string", j, false}, TM_MAX_STRING_LEN, &s));
        }
        return TM_OK;
    }
    const uint32_t size = tm_vtype_size(type);
    uint64_t n_bytes;
    if (!tm__mul_u64(count, size, &n_bytes) || n_bytes > left(w)) {
        wants(w, at(w), tm__mul_u64(count, size, &n_bytes) ? n_bytes : UINT64_MAX);
        return fail(w, TM_TRUNCATED, count_at,
                    "%llu values of %s (count at byte %llu) need %llu x %u bytes, more than "
                    "the %llu bytes left",
                    (ull)count, tm_vtype_name(type), (ull)count_at, (ull)count, size,
                    (ull)left(w));
    }
    if (type == TM_V_BOOL) {
        for (uint64_t j = 0; j < n_bytes; j++) {
            const uint8_t b = w->c.p[j];
            if (b > 1)
                return fail(w, TM_BAD_VALUE, at(w) + j,
                            "bool value %u at byte %llu is neither 0 nor 1", b, (ull)(at(w) + j));
        }
    }
    w->c.p += n_bytes;
    return TM_OK;
}

static tm_status walk_kv(walk *w, tm_kv *kv)
{
    kv->offset = at(w);
    TRY(read_name(w, "key", &kv->key));

    const uint64_t type_at = at(w);
    uint64_t type;
    TRY(read_uint(w, 4, F("value type"), &type));
    if (type > TM_V_F64)
        return fail(w, TM_BAD_VALUE, type_at, "value type %llu at byte %llu is not a GGUF type",
                    (ull)type, (ull)type_at);
    kv->type = (tm_vtype)type;
    kv->elem_type = kv->type;
    kv->count = 1;
    uint64_t count_at = type_at;
    if (kv->type == TM_V_ARRAY) {
        const uint64_t elem_at = at(w);
        uint64_t elem;
        TRY(read_uint(w, 4, F("array element type"), &elem));
        if (elem == TM_V_ARRAY)
            return fail(w, TM_UNSUPPORTED, elem_at,
                        "an array of arrays (element type 9 at byte %llu): nested arrays are "
                        "not supported",
                        (ull)elem_at);
        if (elem > TM_V_F64)
            return fail(w, TM_BAD_VALUE, elem_at,
                        "array element type %llu at byte %llu is not a GGUF type", (ull)elem,
                        (ull)elem_at);
        kv->elem_type = (tm_vtype)elem;
        count_at = at(w);
        TRY(read_uint(w, 8, F("array count"), &kv->count));
    }

    const uint64_t value_at = at(w);
    if (kv->type == TM_V_STRING) {
        tm_str s;
        TRY(read_str(w, F("string"), TM_MAX_STRING_LEN, &s));
        kv->data = (const uint8_t *)s.ptr;
        kv->data_bytes = s.len;
    } else {
        TRY(walk_values(w, kv->elem_type, kv->count, count_at));
        kv->data = w->c.base + value_at;
        kv->data_bytes = at(w) - value_at;
    }
    kv->n_bytes = at(w) - kv->offset;
    return TM_OK;
}

/* general.alignment: a u32, non-zero, a power of two. */
static tm_status check_alignment(const walk *w, const tm_kv *kv, uint32_t *alignment)
{
    const uint64_t type_at = kv->offset + 8 + kv->key.len;
    if (kv->type != TM_V_U32)
        return fail(w, TM_BAD_VALUE, type_at,
                    ALIGNMENT_KEY " is stored as %s (type %u at byte %llu); it must be a u32",
                    tm_vtype_name(kv->type), (unsigned)kv->type, (ull)type_at);
    const uint32_t a = (uint32_t)tm__load_le(kv->data, 4);
    const uint64_t value_at = type_at + 4;
    if (a == 0 || (a & (a - 1)) != 0)
        return fail(w, TM_BAD_VALUE, value_at,
                    ALIGNMENT_KEY " = %u at byte %llu is not a power of two%s", a, (ull)value_at,
                    a == 0 ? " (it is zero)" : "");
    *alignment = a;
    return TM_OK;
}

static tm_status walk_info(walk *w, tm_tensor *t, uint32_t alignment)
{
    t->info_offset = at(w);
    TRY(read_name(w, "name", &t->name));

    const uint64_t dims_at = at(w);
    uint64_t n_dims;
    TRY(read_uint(w, 4, F("n_dims"), &n_dims));
    if (n_dims == 0)
        return fail(w, TM_BAD_VALUE, dims_at,
                    "n_dims 0 at byte %llu: zero-dimensional tensors are refused", (ull)dims_at);
    if (n_dims > TM_MAX_DIMS)
        return fail(w, TM_LIMIT, dims_at, "n_dims %llu at byte %llu: at most %u dimensions",
                    (ull)n_dims, (ull)dims_at, TM_MAX_DIMS);
    t->n_dims = (uint32_t)n_dims;
    t->n_elements = 1;
    for (uint32_t d = 0; d < TM_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= n_dims)
            continue;
        const uint64_t ne_at = at(w);
        static const char *const ne_names[TM_MAX_DIMS] = {"ne[0]", "ne[1]", "ne[2]", "ne[3]"};
        TRY(read_uint(w, 8, F(ne_names[d]), &t->ne[d]));
        if (t->ne[d] == 0)
            return fail(w, TM_BAD_VALUE, ne_at,
                        "ne[%u] = 0 at byte %llu: zero-length dimensions are refused", d,
                        (ull)ne_at);
        if (t->ne[d] > INT64_MAX)
            return fail(w, TM_LIMIT, ne_at, "ne[%u] = %llu at byte %llu is 2^63 or more", d,
                        (ull)t->ne[d], (ull)ne_at);
        if (!tm__mul_u64(t->n_elements, t->ne[d], &t->n_elements))
            return fail(w, TM_LIMIT, ne_at,
                        "the element count overflows 64 bits at ne[%u] = %llu (byte %llu)", d,
                        (ull)t->ne[d], (ull)ne_at);
    }

    const uint64_t type_at = at(w);
    uint64_t type;
    TRY(read_uint(w, 4, F("tensor type"), &type));
    const tm__type_info *info = type < TM_TYPE_U8 ? tm__type_get((tm_type)type) : NULL;
    if (!info) {
        const char *name = tm_type_name((tm_type)type);
        if (name && tm__type_removed_name((tm_type)type))
            return fail(w, TM_UNSUPPORTED, type_at,
                        "type %llu (%s) at byte %llu was removed from ggml and is not supported",
                        (ull)type, name, (ull)type_at);
        if (name)
            return fail(w, TM_UNSUPPORTED, type_at,
                        "type %llu (%s) at byte %llu is not supported in a GGUF file", (ull)type,
                        name, (ull)type_at);
        return fail(w, TM_UNSUPPORTED, type_at, "type %llu at byte %llu is not a ggml type",
                    (ull)type, (ull)type_at);
    }
    t->type = (tm_type)type;
    if (t->ne[0] % info->block_elems != 0)
        return fail(w, TM_BAD_VALUE, dims_at + 4,
                    "row length ne[0] = %llu at byte %llu is not a whole number of %s blocks "
                    "(%u elements each)",
                    (ull)t->ne[0], (ull)(dims_at + 4), info->name, info->block_elems);
    /* ne[0] is a whole number of blocks, so n_elements is too. */
    uint64_t padded;
    if (!tm__mul_u64(t->n_elements / info->block_elems, info->block_bytes, &t->n_bytes) ||
        !tm__add_u64(t->n_bytes, alignment - 1, &padded))
        return fail(w, TM_LIMIT, type_at,
                    "%llu elements of %s (type at byte %llu) overflow 64 bits of bytes",
                    (ull)t->n_elements, info->name, (ull)type_at);

    const uint64_t offset_at = at(w);
    TRY(read_uint(w, 8, F("tensor data offset"), &t->offset));
    if (t->offset % alignment != 0)
        return fail(w, TM_LAYOUT, offset_at,
                    "offset %llu at byte %llu is not a multiple of the alignment %u",
                    (ull)t->offset, (ull)offset_at, alignment);
    t->info_bytes = at(w) - t->info_offset;
    return TM_OK;
}

/* Grow an array to hold one more element, doubling, but never past the count the file
 * declared: memory follows the entries actually walked, not the count. */
static tm_status grow(void **arr, uint64_t *cap, uint64_t used, uint64_t declared, size_t elem,
                      tm_error *err)
{
    if (used < *cap)
        return TM_OK;
    uint64_t want = *cap ? *cap * 2 : 16;
    if (want > declared)
        want = declared;
    void *p = realloc(*arr, (size_t)want * elem);
    if (!p)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory after %llu entries", (ull)used);
    *arr = p;
    *cap = want;
    return TM_OK;
}

/* Whether the records the counts promise can fit in the bytes after the head. */
static bool counts_fit(const tm_layout *L)
{
    const uint64_t room = L->file_size - L->head_end;
    return L->n_kv <= room / MIN_KV_BYTES &&
           L->n_tensors <= (room - L->n_kv * MIN_KV_BYTES) / MIN_INFO_BYTES;
}

__attribute__((cold, noinline)) static tm_status counts_cannot_fit(tm_error *err,
                                                                   const tm_layout *L)
{
    const uint64_t room = L->file_size - L->head_end;
    if (L->n_kv > room / MIN_KV_BYTES)
        return tm__fail(err, TM_LIMIT, 16,
                        "metadata count %llu at byte 16 cannot fit: the %llu bytes after the "
                        "head hold at most %llu entries",
                        (ull)L->n_kv, (ull)room, (ull)(room / MIN_KV_BYTES));
    const uint64_t room_infos = room - L->n_kv * MIN_KV_BYTES;
    return tm__fail(err, TM_LIMIT, 8,
                    "tensor count %llu at byte 8 cannot fit: the %llu bytes after the head and "
                    "%llu metadata entries hold at most %llu tensor infos",
                    (ull)L->n_tensors, (ull)room, (ull)L->n_kv,
                    (ull)(room_infos / MIN_INFO_BYTES));
}

static tm_status walk_head(walk *w, tm_layout *L)
{
    /* The caller checked the magic of the file it opened, but not of the other shards of a
     * set, which are found by name: a shard shorter than 4 bytes or of another format. */
    uint64_t magic, version, n_tensors, n_kv;
    TRY(read_uint(w, 4, F("magic"), &magic));
    if (magic != GGUF_MAGIC) {
        char q[32];
        tm__quote(q, sizeof q, (const char *)w->c.base, 4);
        return fail(w, TM_NOT_MODEL, 0, "this file opens %s and a GGUF file opens 'GGUF'", q);
    }
    TRY(read_uint(w, 4, F("version"), &version));
    if (version == 1)
        return fail(w, TM_BAD_VERSION, 4,
                    "version 1 (32-bit counts) is not supported (version at byte 4)");
    /* 0x03000000: version 3 written big-endian (any 1..3 swapped). */
    if (version > 3 && __builtin_bswap32((uint32_t)version) <= 3)
        return fail(w, TM_BAD_VERSION, 4,
                    "version reads 0x%08llx at byte 4: a big-endian GGUF file, which this "
                    "library does not read",
                    (ull)version);
    if (version != 2 && version != 3)
        return fail(w, TM_BAD_VERSION, 4, "version %llu at byte 4 is not 2 or 3", (ull)version);
    TRY(read_uint(w, 8, F("tensor count"), &n_tensors));
    TRY(read_uint(w, 8, F("metadata count"), &n_kv));
    L->version = (uint32_t)version;
    L->n_kv = n_kv;
    L->n_tensors = n_tensors;
    L->head_end = at(w);
    if (n_kv > MAX_ENTRIES || n_tensors > MAX_ENTRIES) {
        if (!counts_fit(L))
            return counts_cannot_fit(w->err, L);
        /* only a header of 60 GB or more gets here */
        return fail(w, TM_LIMIT, n_kv > MAX_ENTRIES ? 16 : 8,
                    "%s count %llu at byte %u is more than this library indexes (%u)",
                    n_kv > MAX_ENTRIES ? "metadata" : "tensor",
                    (ull)(n_kv > MAX_ENTRIES ? n_kv : n_tensors), n_kv > MAX_ENTRIES ? 16 : 8,
                    MAX_ENTRIES);
    }
    return TM_OK;
}

/* The data section is known only after the last info: place every tensor inside it. With
 * TM_OPEN_TRUNCATED, one that ends past the end of the file is cut off (a download that
 * stopped): the header still reads, and the tensor gets no data (fetch.c refuses its bytes).
 * Its end must still be a file offset below 2^64. */
static tm_status check_bounds(walk *w, const image *img, unsigned flags)
{
    const tm_layout *L = &img->lay;
    for (uint64_t i = 0; i < L->n_tensors; i++) {
        const tm_tensor *t = &img->tensors[i];
        uint64_t end;
        const bool wraps =
            !tm__add_u64(t->offset, t->n_bytes, &end) || !tm__add_u64(end, L->data_start, &end);
        if (wraps || (end > L->file_size && !(flags & TM_OPEN_TRUNCATED))) {
            w->i = i;
            w->name = t->name;
            const uint64_t offset_at = t->info_offset + t->info_bytes - 8;
            if (wraps)
                return fail(w, TM_LAYOUT, offset_at,
                            "offset %llu at byte %llu puts its %llu bytes past 2^64",
                            (ull)t->offset, (ull)offset_at, (ull)t->n_bytes);
            return fail(w, TM_TRUNCATED, offset_at,
                        "its %llu bytes at offset %llu (byte %llu) need the file to be %llu "
                        "bytes, but it has %llu (a truncated download?)",
                        (ull)t->n_bytes, (ull)t->offset, (ull)offset_at, (ull)end,
                        (ull)L->file_size);
        }
    }
    return TM_OK;
}

typedef struct span {
    uint64_t offset;
    uint64_t index;
} span;

static int by_offset(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Tensors in any order, but disjoint: sorted by offset, each must end before the next starts
 * (if no neighbours overlap, no two do). O(n log n). */
static tm_status check_overlap(walk *w, const image *img)
{
    const uint64_t n = img->lay.n_tensors;
    if (n < 2)
        return TM_OK;
    span *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return tm__fail(w->err, TM_NOMEM, TM_NO_OFFSET, "out of memory sorting %llu tensors",
                        (ull)n);
    for (uint64_t i = 0; i < n; i++)
        s[i] = (span){img->tensors[i].offset, i};
    qsort(s, (size_t)n, sizeof *s, by_offset);
    tm_status st = TM_OK;
    for (uint64_t k = 1; k < n && st == TM_OK; k++) {
        const tm_tensor *a = &img->tensors[s[k - 1].index], *b = &img->tensors[s[k].index];
        if (a->offset + a->n_bytes > b->offset) { /* no wrap: check_bounds came first */
            char qa[96];
            tm__quote(qa, sizeof qa, a->name.ptr, a->name.len);
            w->i = s[k].index;
            w->name = b->name;
            const uint64_t offset_at = b->info_offset + b->info_bytes - 8;
            st = fail(w, TM_LAYOUT, offset_at,
                      "its bytes %llu..%llu (offset at byte %llu) overlap tensor info %llu (%s) "
                      "at %llu..%llu",
                      (ull)b->offset, (ull)(b->offset + b->n_bytes), (ull)offset_at,
                      (ull)s[k - 1].index, qa, (ull)a->offset, (ull)(a->offset + a->n_bytes));
        }
    }
    free(s);
    return st;
}

/* Metadata, then tensor infos. Arrays grow as entries are met, never to a declared count. */
static tm_status walk_entries(walk *w, image *img)
{
    tm_layout *L = &img->lay;
    tm_error *err = w->err;
    uint64_t cap = 0;
    w->what = "metadata entry";
    w->n = L->n_kv;
    for (w->i = 0; w->i < L->n_kv; w->i++) {
        TRY(grow((void **)&img->kvs, &cap, w->i, L->n_kv, sizeof *img->kvs, err));
        tm_kv *kv = &img->kvs[w->i];
        w->prev = w->name;
        w->name = (tm_str){NULL, 0};
        TRY(walk_kv(w, kv));
        if (!L->alignment_declared && kv->key.len == strlen(ALIGNMENT_KEY) &&
            memcmp(kv->key.ptr, ALIGNMENT_KEY, strlen(ALIGNMENT_KEY)) == 0) {
            TRY(check_alignment(w, kv, &L->alignment));
            L->alignment_declared = true;
        }
    }
    L->kv_end = at(w);

    cap = 0;
    w->what = "tensor info";
    w->n = L->n_tensors;
    w->name = (tm_str){NULL, 0};
    for (w->i = 0; w->i < L->n_tensors; w->i++) {
        TRY(grow((void **)&img->tensors, &cap, w->i, L->n_tensors, sizeof *img->tensors, err));
        w->prev = w->name;
        w->name = (tm_str){NULL, 0};
        memset(&img->tensors[w->i], 0, sizeof img->tensors[w->i]);
        TRY(walk_info(w, &img->tensors[w->i], L->alignment));
    }
    L->infos_end = at(w);
    return TM_OK;
}

/* Walk the bytes of one GGUF image available so far (shard number shard of its set) into img;
 * *want says how far a read that ran out of them needed to go. */
static tm_status walk_once(const tm__source *m, uint32_t shard, unsigned flags, image *img,
                           uint64_t *want, tm_error *err)
{
    tm_layout *L = &img->lay;
    walk w = {.c = {m->base, m->base, m->base + m->avail}, .err = err};
    L->format = TM_FORMAT_GGUF;
    L->file_size = m->size;
    L->n_shards = 1;
    L->alignment = TM_DEFAULT_ALIGNMENT;
    tm_status st = walk_head(&w, L);
    *want = w.want;
    if (st != TM_OK)
        return st;
    /* Counts the file cannot back are refused when the walk runs out of file; an entry that
     * breaks sooner in another way (a key length of 2^64-1) names its own field, which says
     * more than the count does. Either way nothing was sized by the count. */
    st = walk_entries(&w, img);
    *want = w.want;
    if (st == TM_TRUNCATED && !counts_fit(L)) {
        *want = 0; /* no more bytes make these counts fit */
        return counts_cannot_fit(err, L);
    }
    if (st != TM_OK)
        return st;

    /* The data section starts at the next multiple of the alignment. A file without tensors
     * has no data section and may end before that point (ggml's writer stops right after the
     * infos then): its data start is the end of what is there. A file with tensors that ends
     * sooner is cut off, every tensor with it (opened only with TM_OPEN_TRUNCATED). */
    uint64_t start;
    if (!tm__add_u64(L->infos_end, L->alignment - 1, &start))
        return tm__fail(err, TM_LAYOUT, L->infos_end, "the data start overflows 64 bits");
    start &= ~(uint64_t)(L->alignment - 1);
    if (start > L->file_size) {
        if (L->n_tensors > 0 && !(flags & TM_OPEN_TRUNCATED))
            return tm__fail(err, TM_TRUNCATED, L->infos_end,
                            "the tensor infos end at byte %llu and the data would start at byte "
                            "%llu (alignment %u), past the end of the %llu-byte file",
                            (ull)L->infos_end, (ull)start, L->alignment, (ull)L->file_size);
        if (L->n_tensors == 0)
            start = L->file_size;
    }
    L->data_start = start;
    L->padding = start - L->infos_end;
    L->data_size = L->file_size > start ? L->file_size - start : 0;

    w.what = "tensor info";
    TRY(check_bounds(&w, img, flags));
    TRY(check_overlap(&w, img));
    for (uint64_t i = 0; i < L->n_tensors; i++) {
        tm_tensor *t = &img->tensors[i];
        /* NULL when the source cannot view them (a remote file's are fetched instead) or the
         * file is cut off before their end */
        const bool whole = t->offset + t->n_bytes <= L->data_size; /* no wrap: check_bounds */
        t->data = whole ? tm__source_view(m, start + t->offset, t->n_bytes) : NULL;
        t->shard = shard;
        if (t->offset + t->n_bytes > L->tensors_end)
            L->tensors_end = t->offset + t->n_bytes;
    }
    return TM_OK;
}

void tm__gguf_image_free(image *img)
{
    free(img->kvs);
    free(img->tensors);
    memset(img, 0, sizeof *img);
}

/* Walk one GGUF image into img. A remote file's walk that runs out of the head fetched so far
 * (and not out of the file) fetches as far as it needed and walks again: the checks are the
 * same as for a local file, and so are the messages once the whole file is there. */
tm_status tm__gguf_walk_image(tm__source *m, uint32_t shard, unsigned flags, image *img,
                              tm_error *err)
{
    for (;;) {
        uint64_t want = 0;
        tm_status st = walk_once(m, shard, flags, img, &want, err);
        if (st != TM_TRUNCATED || want <= m->avail || m->avail >= m->size)
            return st;
        tm__gguf_image_free(img);
        TRY(tm__source_need(m, want, err));
    }
}
