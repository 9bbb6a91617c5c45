/* What the library's files share and nothing else sees. Cross-file internals are tm__*. */
#ifndef TM_INTERNAL_H
#define TM_INTERNAL_H

#include "tensormap.h"

#include <inttypes.h> /* PRIu64: the one way uint64_t is printed */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* ---- error.c ---- */

/* Fill err (when not NULL) with code, offset and a printf-style message; returns code. */
tm_status tm__fail(tm_error *err, tm_status code, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Write s as a printable, quoted, length-bounded excerpt into buf (for names in messages). */
void tm__quote(char *buf, size_t cap, const char *s, uint64_t len);

/* ---- util.c ---- */

/* The environment variable name as a byte count (decimal, with an optional K, M or G for 2^10,
 * 2^20, 2^30); dflt when unset or not such a number. */
uint64_t tm__env_bytes(const char *name, uint64_t dflt);

/* ---- io/source.c: where one file's bytes come from ----
 * A source holds the file's first avail bytes at base. A mapped file, a file or stream read
 * whole, and a borrowed buffer hold all of it (avail == size), and any range of it is a view
 * (tm__source_view). A remote file, and a large file read without mmap, hold only the head
 * read so far (avail <= size): the walkers read the head through a cursor that ends at avail
 * and ask for more with tm__source_need; tensor bytes are read into a caller's buffer with
 * tm__source_read, never viewed. Which backend holds the bytes is io's business alone
 * (io/source.h). */

typedef struct tm__source_ops tm__source_ops;

typedef struct tm__source {
    const uint8_t *base;
    uint64_t size;              /* the whole file's size */
    uint64_t avail;             /* bytes at base: size, except for a head read so far */
    char *path;                 /* owned, NUL-terminated; NULL for a buffer */
    const tm__source_ops *ops;  /* the backend's functions; NULL when not open */
    void *impl;                 /* the backend's own state */
} tm__source;

/* The header bytes the remote files of one tm_file have fetched, together: TM_HTTP_HEAD_LIMIT
 * bounds their sum, whatever the number of shards. files_to_open is how many files its owner
 * is about to open (0: one), so that each first request leaves the others their share. Its
 * owner zeroes it; http.c counts into it. */
typedef struct tm__head_budget {
    uint64_t spent;
    uint32_t files_to_open;
} tm__head_budget;

typedef struct tm__source_opts {
    unsigned flags;             /* TM_OPEN_NO_MMAP: read the file instead of mapping it */
    bool regular_only;          /* refuse anything but a regular file, checked on the
                                 * descriptor opened (a shard) */
    /* whether the first bytes of a stream are worth reading on (NULL: any are) */
    bool (*accept)(const uint8_t *p, uint64_t n);
    /* a remote file's head counts into it (NULL: a budget of the file's own) */
    tm__head_budget *budget;
} tm__source_opts;

/* path may be a local path, "-" (standard input), or a URL (tm__is_url). On failure s is
 * zeroed. */
tm_status tm__source_open(tm__source *s, const char *path, const tm__source_opts *o,
                          tm_error *err);
/* A caller's buffer of len bytes, borrowed: it must outlive the source. */
void tm__source_buffer(tm__source *s, const void *buf, uint64_t len);
/* "http://", "https://", "hf:" or "s3://" */
bool tm__is_url(const char *path);
/* Make at least min(end, size) bytes available at base (a head fetches or reads more of
 * itself, and base may move: nothing may point into it across this call). Free for a source
 * that holds the whole file. */
tm_status tm__source_need(tm__source *s, uint64_t end, tm_error *err);
/* Copy bytes [offset, offset + len) of the file into buf (the range must lie inside size). */
tm_status tm__source_read(const tm__source *s, uint64_t offset, uint64_t len, void *buf,
                          tm_error *err);
/* Bytes [offset, offset + len) in place, or NULL for a source that cannot view them (a head:
 * they are read with tm__source_read instead). */
const uint8_t *tm__source_view(const tm__source *s, uint64_t offset, uint64_t len);
/* Whether the bytes come over the network. */
bool tm__source_is_remote(const tm__source *s);
/* How a local file's pages are asked for ahead of their reading (tm_prefetch). */
typedef enum tm__advice { TM__ADVISE_MADVISE, TM__ADVISE_FADVISE } tm__advice;
/* Ask the kernel to start reading bytes [offset, offset + len) of a file that is read from
 * disk: a mapped one (madvise, or posix_fadvise on a descriptor of it, as how says) or one read
 * as needed (posix_fadvise, whatever how says). False for a source with nothing to ask for (a
 * file held in memory, a remote one). Advice only: a kernel that refuses it is not an error. */
bool tm__source_advise(const tm__source *s, uint64_t offset, uint64_t len, tm__advice how);
/* Bytes and requests fetched over the network so far (0 for a local file). */
void tm__source_fetched(const tm__source *s, uint64_t *bytes, uint64_t *requests);
/* A new descriptor (the caller closes it) of the file at path while it is still the file the
 * source holds (same device, inode, size and modification time), so that its bytes can be
 * copied by descriptor; -1 otherwise, or when the source holds no such file. */
int tm__source_reopen(const tm__source *s);
void tm__source_close(tm__source *s);

/* ---- the bounds-checked cursor every parser reads through ---- */

typedef struct tm__cursor {
    const uint8_t *base; /* start of the file, for offsets in messages */
    const uint8_t *p;
    const uint8_t *end;
} tm__cursor;

static inline uint64_t tm__cursor_offset(const tm__cursor *c) { return (uint64_t)(c->p - c->base); }
static inline uint64_t tm__cursor_left(const tm__cursor *c) { return (uint64_t)(c->end - c->p); }

/* ---- index.c: open-addressing hash of names -> index, built once at open ---- */

/* ---- readahead.c: a remote file's bytes fetched ahead into a bounded buffer, on a thread of
 * the file's own (tm_prefetch) ---- */
typedef struct tm__readahead tm__readahead;

typedef struct tm__hash {
    uint32_t *slots;          /* entry index + 1; 0 = empty */
    uint64_t mask;            /* capacity - 1 (capacity a power of two) */
} tm__hash;

uint64_t tm__hash_bytes(const char *s, uint64_t len);
/* Capacity for n entries, allocated once; fails only on NOMEM. */
tm_status tm__hash_init(tm__hash *h, uint64_t n, tm_error *err);
void tm__hash_free(tm__hash *h);

/* ---- the open file ---- */

struct tm_file {
    tm_layout layout;
    tm__source *maps;         /* layout.n_shards sources; maps[0] is the file opened, or the
                               * first shard of a set */
    tm_layout *shard_layouts; /* each shard's own layout when layout.n_shards > 1, else NULL */
    tm_kv *kvs;               /* layout.n_kv, file order */
    tm_tensor *tensors;       /* layout.n_tensors, file order */
    tm__hash kv_index;
    tm__hash tensor_index;
    void *owned;              /* format-specific memory (e.g. the parsed safetensors JSON) */
    uint64_t fetched_bytes;   /* downloaded for remote maps closed since (an index whose */
    uint64_t fetched_requests; /* shards replaced it), for tm_file_fetched */
    tm__head_budget head_budget; /* what its remote files' heads fetched, together */
    tm__readahead *readahead; /* what tm_prefetch planned, fetched or fetching */
    void (*free_owned)(void *owned);
};

/* gguf.c / safetensors.c: walk maps[0] (already set) into kvs, tensors and layout; a file that
 * belongs to a set may replace maps[0] by the set's shards (shard.c). */
tm_status tm__gguf_parse(tm_file *f, unsigned flags, tm_error *err);
tm_status tm__safetensors_parse(tm_file *f, unsigned flags, tm_error *err);

/* ---- sniff.c: a model by its first bytes ---- */

/* Whether the first n bytes could start a model this library reads (GGUF, safetensors, an
 * index): the opener hands it to the byte source, whose stream reader stops on a false. */
bool tm__looks_like_model(const uint8_t *p, uint64_t n);
/* True when the bytes look like a safetensors file (u64 length then '{') or index ('{'). */
bool tm__safetensors_sniff(const uint8_t *p, uint64_t size);
/* True when they look like a safetensors file (u64 length then '{'). */
bool tm__safetensors_looks_like_file(const uint8_t *p, uint64_t size);

/* ---- shard.c: the files of a sharded checkpoint or split set, whatever their format ---- */

/* Whether the file has a directory its siblings are in (not a buffer, not standard input). */
bool tm__shard_has_dir(const tm__source *m);
/* name in the directory of path (malloc'd; NULL when out of memory). */
char *tm__shard_sibling(const char *path, const char *name);
/* The last component of path. */
const char *tm__shard_basename(const char *path);
/* Map one shard by name: a regular file, or an error whose message starts with the path. A
 * remote shard's head counts into budget. */
tm_status tm__shard_map(tm__source *m, const char *path, unsigned flags, tm__head_budget *budget,
                        tm_error *err);
/* Map the n files of a set and make them f's maps (n_shards = n, shard_layouts zeroed for the
 * walker to fill). paths[keep] is the file already in maps[0], which is moved rather than mapped
 * again (keep < 0: none is). On failure f is unchanged. */
tm_status tm__shards_open(tm_file *f, char *const *paths, uint32_t n, int keep, unsigned flags,
                          tm_error *err);
/* Once every shard is walked: f->layout becomes the set's, the first shard's fields with byte
 * counts summed over the shards (n_kv and n_tensors are the index's). */
void tm__shards_sum(tm_file *f);

/* index.c: build both hashes from f->kvs and f->tensors, refusing duplicates with a message
 * naming both entries. */
tm_status tm__index_build(tm_file *f, tm_error *err);

/* types.c */
typedef struct tm__type_info {
    const char *name;
    uint32_t block_elems;
    uint32_t block_bytes;
} tm__type_info;
const tm__type_info *tm__type_get(tm_type type); /* NULL if unknown or removed */
/* The name of an id ggml removed (4 -> "q4_2"), NULL otherwise. */
const char *tm__type_removed_name(tm_type type);
/* A safetensors dtype: its name as the format spells it ("BF16") and its type id. */
typedef struct tm__st_dtype {
    const char *name;
    tm_type type;
} tm__st_dtype;
/* The dtype a name spells, NULL when the library knows none by it. */
const tm__st_dtype *tm__st_dtype_named(const char *name);
/* The dtype name of a type, NULL when it has none. */
const char *tm__st_dtype_name(tm_type type);

/* ---- fetch.c: a remote tensor's bytes ---- */

/* True when t has bytes in a file but no view of them: they are fetched or read on demand. */
bool tm__tensor_is_remote(const tm_tensor *t);
/* TM_OK, or TM_TRUNCATED naming t when the end of a file cut off short (a truncated download
 * whose header is whole) cuts t's bytes: the reason every reader of a tensor's bytes gives. */
tm_status tm__tensor_whole(const tm_tensor *t, tm_error *err);
/* read/file.c: whether t is one of f's own tensors (not a copy of one, not another file's). */
bool tm__file_owns(const tm_file *f, const tm_tensor *t);
/* Called with each piece of a remote tensor: a tensor of its own whose data is the fetched
 * bytes of blocks [first + done, first + done + piece->n_bytes / block bytes). */
typedef tm_status (*tm__piece_fn)(const tm_tensor *piece, uint64_t done, void *ctx,
                                  tm_error *err);
/* Fetch blocks [first, first + n) of t (in bounds, n a multiple of granule) in pieces of whole
 * granules of blocks (a piece has rows of granule blocks) of at most 16 MiB, and call fn on
 * each as it arrives. */
tm_status tm__remote_pieces(const tm_tensor *t, uint64_t first, uint64_t n, uint64_t granule,
                            tm__piece_fn fn, void *ctx, tm_error *err);

/* ---- readahead.c ---- */

/* The prefetch state of f (nothing planned, no thread yet): into f->readahead by the openers. */
tm_status tm__readahead_new(tm_file *f, tm_error *err);
/* Stop the thread (waiting for a piece in flight) and free every piece; NULL is a no-op. */
void tm__readahead_free(tm__readahead *ra);
/* What a piece of a plan is: bytes to fetch into the buffer (a remote file), or pages of a
 * mapping to touch (TM_PREFETCH_METHOD=thread). */
typedef enum tm__ahead_kind { TM__AHEAD_FETCH, TM__AHEAD_TOUCH } tm__ahead_kind;
/* Queue bytes [offset, offset + len) of shard for the thread, in pieces of at most 16 MiB, as
 * far as limit (bytes held fetched or planned, not yet read) allows; adds the bytes queued to
 * *planned. TM_NOMEM when a piece or the thread cannot be had (what was queued stays). */
tm_status tm__readahead_queue(const tm_file *f, uint32_t shard, uint64_t offset, uint64_t len,
                              tm__ahead_kind kind, uint64_t limit, uint64_t *planned,
                              tm_error *err);
/* Drop what is held and not read yet (a piece in flight is freed when it arrives). */
void tm__readahead_drop(const tm_file *f);
/* Bytes [offset, offset + len) of shard into buf: from the pieces fetched ahead where they
 * cover them (waiting for one still arriving; a piece that failed gives its error), from the
 * source elsewhere. */
tm_status tm__readahead_read(const tm_file *f, uint32_t shard, uint64_t offset, uint64_t len,
                             void *buf, tm_error *err);

/* threads.c: run worker(arg) on n_threads threads (0 = online CPUs), the caller's included, never
 * more than chunks of them; returns when every worker has returned. */
void tm__run_workers(void *(*worker)(void *), void *arg, unsigned n_threads, uint64_t chunks);

/* Checked arithmetic (false on overflow). */
static inline bool tm__mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool tm__add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* An n-byte (n <= 8) little-endian unsigned integer at p, which may be unaligned: one memcpy
 * (a single load for a constant n) on little-endian hosts, byte by byte elsewhere. */
static inline uint64_t tm__load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, n);
#else
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
#endif
    return v;
}

/* ---- outfile.c ---- */

/* The path an outfile was opened with, for messages about writing it. */
const char *tm__outfile_name(const tm_outfile *o);

#endif /* TM_INTERNAL_H */
