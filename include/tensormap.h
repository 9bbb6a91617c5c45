/*
 * tensormap — read GGUF and safetensors model files in place.
 *
 * A GGUF file, all integers little-endian:
 *
 *   head        "GGUF"  u32 version (2 or 3)  u64 n_tensors  u64 n_kv         (24 bytes)
 *   metadata    n_kv x { str key, u32 value_type, value }
 *                 str   = u64 length, bytes (no NUL)
 *                 array = u32 element_type, u64 count, count x element
 *   tensor info n_tensors x { str name, u32 n_dims, n_dims x u64 ne, u32 type, u64 offset }
 *   padding     zeros up to a multiple of general.alignment (u32, default 32)
 *   data        tensor bytes; each offset is relative to the data start and aligned
 *
 * A safetensors file: u64 header length N, N bytes of JSON, then the data section.
 *
 * tm_open maps the file once (read-only) and walks the header in place into an index. Every
 * pointer the library hands out (names, strings, tensor data, kv values) points into that
 * mapping or into memory owned by the tm_file, and stays valid until tm_close. Nothing is
 * copied: names are tm_str (pointer + length, not NUL-terminated).
 *
 * Thread safety: a tm_file is read-only after tm_open returns; any number of threads may call
 * the getters and the dequant and matvec functions on one tm_file at once. tm_close must not
 * race with them. A writer or an outfile (PART 5) is used by one thread at a time.
 *
 * Errors: every function that can fail returns a tm_status and, when err is not NULL, fills it
 * with the code, the byte offset in the file where reading stopped making sense, and a message
 * naming the entry (index, count, name) in words a person can act on. There is no global
 * "last error". The library never prints, logs or aborts on file contents.
 *
 * The header in five parts: PART 1 Basics (version, errors, element and value types) · PART 2
 * Reading (open, layout, tensors, metadata) · PART 3 Remote (URLs and hf:) · PART 4 Computing
 * (instruction sets, decoding, matvec, rounding) · PART 5 Writing (tm_outfile, the GGUF
 * writer, the safetensors writer). Each function says what it returns, every error it gives,
 * what it allocates and what a NULL argument does.
 */
#ifndef TENSORMAP_H
#define TENSORMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* =============================================================================================
 * PART 1  Basics: the version, errors, element types, value types
 * =========================================================================================== */

#define TM_VERSION_MAJOR 0
#define TM_VERSION_MINOR 1
#define TM_VERSION_PATCH 0
#define TM_VERSION_STRING "0.1.0"

#if defined(TM_BUILDING_LIBRARY) && defined(__GNUC__)
#define TM_API __attribute__((visibility("default")))
#else
#define TM_API
#endif

/* The library's version at run time, "MAJOR.MINOR.PATCH": the TM_VERSION_STRING of the library
 * loaded, which may differ from this header's. A static string, never NULL. */
TM_API const char *tm_version(void);

/* ---- Errors --------------------------------------------------------------------------------- */

/* X(NAME, value, short description). Values are pinned: they never change meaning. */
#define TM_STATUS_LIST(X)                                                         \
    X(OK, 0, "success")                                                           \
    X(IO, 1, "the file could not be opened, read or mapped")                      \
    X(NOMEM, 2, "out of memory")                                                  \
    X(NOT_MODEL, 3, "not a GGUF or safetensors file")                             \
    X(TRUNCATED, 4, "the file ends before a field it declares")                   \
    X(BAD_VERSION, 5, "unsupported format version or byte order")                 \
    X(BAD_VALUE, 6, "a field holds a value the format does not allow")            \
    X(LIMIT, 7, "a field exceeds a limit of the format or of this library")       \
    X(DUPLICATE, 8, "a key or tensor name appears twice")                         \
    X(LAYOUT, 9, "tensor data is misaligned, overlapping or outside the file")    \
    X(UNSUPPORTED, 10, "a type or feature this library does not handle")          \
    X(NOT_FOUND, 11, "no such tensor, key or file")                               \
    X(WRONG_TYPE, 12, "the value is not of the type asked for")                   \
    X(INVALID_ARG, 13, "invalid argument")                                        \
    X(ISA, 14, "the requested instruction set is unknown or not supported here")

typedef enum tm_status {
#define TM_STATUS_ENUM(name, value, text) TM_##name = value,
    TM_STATUS_LIST(TM_STATUS_ENUM)
#undef TM_STATUS_ENUM
} tm_status;

#define TM_ERROR_MESSAGE_MAX 512
#define TM_NO_OFFSET UINT64_MAX

/* Filled by a failing call when the caller passes one (err may always be NULL). */
typedef struct tm_error {
    tm_status code;
    uint64_t offset;                      /* byte offset in the file, or TM_NO_OFFSET */
    char message[TM_ERROR_MESSAGE_MAX];   /* NUL-terminated, names the entry and the offset */
} tm_error;

/* A static description of a status code ("success", "out of memory", ...); "unknown status"
 * for a value not in TM_STATUS_LIST. Never NULL. */
TM_API const char *tm_status_str(tm_status status);
/* The status's name without the prefix ("OK", "NOMEM", ...); "UNKNOWN" for a value not in
 * TM_STATUS_LIST. A static string, never NULL. */
TM_API const char *tm_status_name(tm_status status);

/* ---- Element types: ggml's ids, so that files and ggml agree on numbers. Ids >= 1024 are
 * safetensors storage types that ggml has no id for. ------------------------------------------ */

/* X(NAME, id, "name", elements per block, bytes per block): every type ggml defines today, in id
 * order, with ggml's names and block geometry (ggml.c, type_traits[]). Ids 4, 5 (q4_2, q4_3),
 * 31..33 (the q4_0_4_4 family) and 36..38 (the iq4_nl_4_4 family) were removed from ggml. */
#define TM_GGML_TYPE_LIST(X)                      \
    X(F32, 0, "f32", 1, 4)                        \
    X(F16, 1, "f16", 1, 2)                        \
    X(Q4_0, 2, "q4_0", 32, 18)                    \
    X(Q4_1, 3, "q4_1", 32, 20)                    \
    X(Q5_0, 6, "q5_0", 32, 22)                    \
    X(Q5_1, 7, "q5_1", 32, 24)                    \
    X(Q8_0, 8, "q8_0", 32, 34)                    \
    X(Q8_1, 9, "q8_1", 32, 36)                    \
    X(Q2_K, 10, "q2_K", 256, 84)                  \
    X(Q3_K, 11, "q3_K", 256, 110)                 \
    X(Q4_K, 12, "q4_K", 256, 144)                 \
    X(Q5_K, 13, "q5_K", 256, 176)                 \
    X(Q6_K, 14, "q6_K", 256, 210)                 \
    X(Q8_K, 15, "q8_K", 256, 292)                 \
    X(IQ2_XXS, 16, "iq2_xxs", 256, 66)            \
    X(IQ2_XS, 17, "iq2_xs", 256, 74)              \
    X(IQ3_XXS, 18, "iq3_xxs", 256, 98)            \
    X(IQ1_S, 19, "iq1_s", 256, 50)                \
    X(IQ4_NL, 20, "iq4_nl", 32, 18)               \
    X(IQ3_S, 21, "iq3_s", 256, 110)               \
    X(IQ2_S, 22, "iq2_s", 256, 82)                \
    X(IQ4_XS, 23, "iq4_xs", 256, 136)             \
    X(I8, 24, "i8", 1, 1)                         \
    X(I16, 25, "i16", 1, 2)                       \
    X(I32, 26, "i32", 1, 4)                       \
    X(I64, 27, "i64", 1, 8)                       \
    X(F64, 28, "f64", 1, 8)                       \
    X(IQ1_M, 29, "iq1_m", 256, 56)                \
    X(BF16, 30, "bf16", 1, 2)                     \
    X(TQ1_0, 34, "tq1_0", 256, 54)                \
    X(TQ2_0, 35, "tq2_0", 256, 66)                \
    X(MXFP4, 39, "mxfp4", 32, 17)                 \
    X(NVFP4, 40, "nvfp4", 64, 36)                 \
    X(Q1_0, 41, "q1_0", 128, 18)                  \
    X(Q2_0, 42, "q2_0", 64, 18)

/* safetensors storage types ggml has no id for, numbered on from 1024 without gaps. */
#define TM_ST_TYPE_LIST(X)                        \
    X(U8, 1024, "U8", 1, 1)                       \
    X(BOOL, 1025, "BOOL", 1, 1)                   \
    X(F8_E4M3, 1026, "F8_E4M3", 1, 1)             \
    X(F8_E5M2, 1027, "F8_E5M2", 1, 1)             \
    X(U16, 1028, "U16", 1, 2)                     \
    X(U32, 1029, "U32", 1, 4)                     \
    X(U64, 1030, "U64", 1, 8)

typedef enum tm_type {
#define TM_TYPE_ENUM(name, id, text, block_elems, block_bytes) TM_TYPE_##name = id,
    TM_GGML_TYPE_LIST(TM_TYPE_ENUM)
    TM_ST_TYPE_LIST(TM_TYPE_ENUM)
#undef TM_TYPE_ENUM
} tm_type;

/* The type's name as ggml spells it ("q4_K", "f32") or safetensors does ("U8", "F8_E4M3"), a
 * static string; a removed id keeps its name ("q4_2"); NULL for an id this library has never
 * heard of. (Whether a type can be decoded: tm_type_can_dequant, PART 4.) */
TM_API const char *tm_type_name(tm_type type);
/* Elements per block and bytes per block; 0 for an unknown id or one ggml removed. */
TM_API uint32_t tm_type_block_elems(tm_type type);
TM_API uint32_t tm_type_block_bytes(tm_type type);

/* ---- Value types: what a GGUF metadata value holds --------------------------------------- */

/* X(NAME, id, "name", bytes of one value): GGUF's value types in id order, with ggml's names
 * (gguf.cpp, GGUF_TYPE_NAME); 0 bytes for the two that are not fixed-size. */
#define TM_VTYPE_LIST(X)                          \
    X(U8, 0, "u8", 1)                             \
    X(I8, 1, "i8", 1)                             \
    X(U16, 2, "u16", 2)                           \
    X(I16, 3, "i16", 2)                           \
    X(U32, 4, "u32", 4)                           \
    X(I32, 5, "i32", 4)                           \
    X(F32, 6, "f32", 4)                           \
    X(BOOL, 7, "bool", 1)                         \
    X(STRING, 8, "str", 0)                        \
    X(ARRAY, 9, "arr", 0)                         \
    X(U64, 10, "u64", 8)                          \
    X(I64, 11, "i64", 8)                          \
    X(F64, 12, "f64", 8)

typedef enum tm_vtype {
#define TM_VTYPE_ENUM(name, id, text, bytes) TM_V_##name = id,
    TM_VTYPE_LIST(TM_VTYPE_ENUM)
#undef TM_VTYPE_ENUM
} tm_vtype;

/* "u8", "i8", ..., "str", "arr", ..., "f64" (ggml's names), a static string; NULL for an unknown
 * id. */
TM_API const char *tm_vtype_name(tm_vtype type);
/* Bytes of one value of a fixed-size type; 0 for string, array and unknown ids. */
TM_API uint32_t tm_vtype_size(tm_vtype type);

/* =============================================================================================
 * PART 2  Reading: opening a file, its layout and shards, its tensors, its metadata
 *
 * The getters of this part (all but the openers) take NULL for the file, tensor or entry and
 * then return nothing: 0, NULL, false, or TM_NOT_FOUND where they return a status, so that a
 * lookup chains into a getter, tm_kv_get_uint(tm_arch_key(f, "block_count"), &n), without a
 * test in between. They allocate nothing (tm_arch_key excepted, as it says) and fill no
 * tm_error.
 * =========================================================================================== */

typedef struct tm_file tm_file;

typedef struct tm_str {
    const char *ptr; /* into the mapping (or tm_file-owned memory); NOT NUL-terminated */
    uint64_t len;
} tm_str;

/* ---- Open flags and limits ----------------------------------------------------------------- */

enum tm_open_flags {
    TM_OPEN_DEFAULT = 0,
    /* read the file with pread instead of mapping it: for pipes, /dev/stdin, and filesystems
     * that cannot map. A regular file of at most TM_DEFAULT_READ_WHOLE_LIMIT bytes (below),
     * standard input and a stream are read into memory whole, and are then immune to the file
     * changing under us. A larger regular file is read as it is needed: the header as the
     * walk asks for it, tensor bytes when they are decoded or fetched (its tensors have
     * data == NULL, as a remote file's do), so that opening it reads its header only; a read
     * that finds the file changed since it was opened (size or modification time) is
     * refused (TM_IO), never mixed. */
    TM_OPEN_NO_MMAP = 1u << 0,
    /* a safetensors shard: open every shard of its checkpoint (from the sibling
     * model.safetensors.index.json) and present one index; a file with no index beside it
     * opens alone, a file the index does not name is TM_NOT_FOUND. A shard of a split GGUF set
     * (split.count > 1): open every shard of the set (the first shard does so without the
     * flag). */
    TM_OPEN_ALL_SHARDS = 1u << 1,
    /* a shard of a split GGUF set opens alone, even the first (which otherwise opens the set) */
    TM_OPEN_ONE_SHARD = 1u << 2,
    /* a file cut off short (a download that stopped) whose header is whole opens instead of
     * being refused (TM_TRUNCATED): its header reads, tm_file_missing_bytes says how much is
     * missing, and the tensors the end cuts have data == NULL and cannot be decoded or fetched
     * (TM_TRUNCATED, naming the tensor) */
    TM_OPEN_TRUNCATED = 1u << 3,
};

/* Limits that are not the format's own. */
#define TM_MAX_NAME_LEN 65535u               /* key and tensor names */
#define TM_MAX_STRING_LEN (64u << 20)        /* a string value */
#define TM_MAX_DIMS 4u
#define TM_DEFAULT_ALIGNMENT 32u
#define TM_SAFETENSORS_MAX_HEADER (100u * 1000u * 1000u)
/* A stream (a pipe, standard input, a device, a file of unknown size such as procfs's) is read
 * into memory: its first 16 bytes must look like a model, and it may hold at most this many
 * bytes (TM_LIMIT beyond), unless the environment variable TM_STREAM_LIMIT says otherwise
 * (bytes, or with a K, M or G suffix for 2^10, 2^20, 2^30). */
#define TM_DEFAULT_STREAM_LIMIT (64ull << 30)
/* The largest regular file TM_OPEN_NO_MMAP reads whole, unless the environment variable
 * TM_READ_WHOLE_LIMIT says otherwise (bytes, with the same suffixes). */
#define TM_DEFAULT_READ_WHOLE_LIMIT (64ull << 20)

/* ---- Opening and closing ------------------------------------------------------------------- */

/* Open a GGUF file, a safetensors file or a model.safetensors.index.json, recognised by their
 * contents. path "-" reads standard input (TM_OPEN_NO_MMAP implied). path may also be a URL
 * (PART 3). On success *out is a new tm_file that the caller releases with tm_close. On failure
 * *out is NULL (when out is not), err is filled, and nothing is leaked.
 *
 * A split GGUF set (llama.cpp's gguf-split: PREFIX-00001-of-0000N.gguf ..., each shard carrying
 * split.no, split.count and split.tensors.count, or the older general.split* names) opens as
 * one model from its first shard, or from any shard with TM_OPEN_ALL_SHARDS: the metadata is
 * the first shard's, the tensors are every shard's in shard order (tm_tensor.shard,
 * tm_shard_path, tm_shard_layout), and tm_file_bytes is the first shard's. A buffer or standard
 * input opens alone.
 *
 * Returns TM_OK, or:
 *   TM_INVALID_ARG  path or out NULL; a flag bit this library does not know; TM_OPEN_ALL_SHARDS
 *                   with TM_OPEN_ONE_SHARD; an hf: name not of the form PART 3 gives
 *   TM_NOT_FOUND    no file at path; a shard of a set missing (naming the file expected); a
 *                   file its checkpoint's index does not name (TM_OPEN_ALL_SHARDS); a tensor the
 *                   index puts in a shard that does not hold it
 *   TM_IO           the file cannot be opened, read or mapped (with the system's reason); a
 *                   directory; a shard path that is not a regular file
 *   TM_NOMEM        out of memory (the index is proportional to the entries present)
 *   TM_NOT_MODEL    neither GGUF nor safetensors (the message shows the first bytes)
 *   TM_TRUNCATED    an empty file, or one that ends before a field it declares, or (without
 *                   TM_OPEN_TRUNCATED) before the data its tensors declare
 *   TM_BAD_VERSION  a GGUF version other than 2 or 3 (1, or a byte-swapped version, named so)
 *   TM_BAD_VALUE    a field the format does not allow; split.no or split.count disagreeing with
 *                   the file's name or the first shard; shard tensor counts not adding up to
 *                   split.tensors.count
 *   TM_LIMIT        a name, string, count or header over a limit above, or a stream over
 *                   TM_STREAM_LIMIT
 *   TM_DUPLICATE    a key or tensor name twice (both indices named; for a set, both files)
 *   TM_LAYOUT       tensor data misaligned, overlapping or outside the file
 *   TM_UNSUPPORTED  nested arrays; a tensor type that is unknown, removed from ggml, or not
 *                   one GGUF holds (the safetensors-only ids); a safetensors dtype this
 *                   library does not know; an index read from standard input (no directory to
 *                   find its shards in); a URL given to a library built without libcurl
 * and for a URL, the remote errors of PART 3. The checks: docs/library.md (GGUF) and
 * docs/safetensors.md. */
TM_API tm_status tm_open(const char *path, unsigned flags, tm_file **out, tm_error *err);

/* Walk a GGUF or safetensors image already in memory. The buffer is not copied: it must stay
 * valid and unchanged until tm_close. (Used by the fuzzers and by tools that hold a buffer.)
 * buf may be NULL when len is 0 (then TM_TRUNCATED: an empty file). Returns what tm_open
 * returns, less the errors of files and URLs: TM_INVALID_ARG for out NULL, buf NULL with len > 0,
 * or an unknown flag bit; TM_UNSUPPORTED for an index (it has no directory to find its shards
 * in); the format's errors as tm_open. The image opens alone, whatever the flags say about
 * shards. */
TM_API tm_status tm_open_buffer(const void *buf, size_t len, unsigned flags, tm_file **out,
                                tm_error *err);

/* Release the mapping and the index: every pointer the file handed out is then invalid.
 * tm_close(NULL) does nothing. */
TM_API void tm_close(tm_file *file);

/* ---- The layout and the shards: computed once at the end of the walk. No caller computes an
 * offset. ----------------------------------------------------------------------------------- */

typedef enum tm_format { TM_FORMAT_GGUF = 1, TM_FORMAT_SAFETENSORS = 2 } tm_format;

typedef struct tm_layout {
    tm_format format;
    uint32_t version;            /* GGUF version; 0 for safetensors */
    uint64_t n_kv;               /* metadata entries (safetensors: __metadata__ entries) */
    uint64_t n_tensors;
    uint32_t alignment;          /* GGUF: general.alignment or 32; safetensors: 1 */
    bool alignment_declared;     /* GGUF: general.alignment present */
    uint64_t head_end;           /* GGUF: 24; safetensors: 8 */
    uint64_t kv_end;             /* GGUF: end of the metadata; safetensors: 8 + header length */
    uint64_t infos_end;          /* GGUF: end of the last tensor info; safetensors: = kv_end */
    uint64_t padding;            /* data_start - infos_end */
    uint64_t data_start;         /* tensor offsets count from here */
    uint64_t data_size;          /* file_size - data_start (0 if a file cut off ends sooner) */
    uint64_t tensors_end;        /* max over tensors of offset + n_bytes, from data_start */
    uint64_t file_size;
    uint32_t n_shards;           /* files behind this index: 1 unless a sharded checkpoint */
} tm_layout;

/* The file's layout, owned by the file; NULL for NULL. */
TM_API const tm_layout *tm_file_layout(const tm_file *file);

/* How many bytes the file lacks: 0 for a whole file. A file cut off short (a download that
 * stopped) whose header is whole opens with TM_OPEN_TRUNCATED, header and all: its layout says
 * what the header declares (data_start, tensors_end) and what the file holds (file_size, and
 * data_size, which may then be 0). This is data_start + tensors_end - file_size, summed over
 * the shards of a set that are short (saturating at UINT64_MAX). A tensor the end cuts has
 * data == NULL, and decoding it (tm_dequant_*, tm_matvec*), fetching its bytes
 * (tm_tensor_fetch) or copying it into a new file (tm_writer_tensor_copy) fails with
 * TM_TRUNCATED, naming it; the tensors before the cut decode as usual. 0 for NULL. */
TM_API uint64_t tm_file_missing_bytes(const tm_file *file);

/* The first bytes of the file as mapped (or read): for tools that show the header as bytes.
 * For a sharded checkpoint, shard 0. tm_file_bytes_size says how many there are: the file's
 * size, or for a remote file (or one read as needed, TM_OPEN_NO_MMAP) the head fetched (at
 * least the whole header). NULL and 0 for NULL. */
TM_API const uint8_t *tm_file_bytes(const tm_file *file);
TM_API uint64_t tm_file_bytes_size(const tm_file *file);

/* Sharded checkpoints: the path of shard i (i < layout.n_shards), NUL-terminated, as opened
 * ("-" for standard input, the URL for a remote file); NULL for a file opened with
 * tm_open_buffer, for NULL, and for i out of range. */
TM_API const char *tm_shard_path(const tm_file *file, uint32_t shard);
/* Shard i's own layout (i < layout.n_shards; NULL otherwise). For a sharded checkpoint,
 * tm_file_layout's byte counts (kv_end, data_start, data_size, tensors_end, file_size) are totals
 * over the shards, and a tensor's bytes lie at tm_shard_layout(f, t->shard)->data_start +
 * t->offset in its shard. For one file, the same as tm_file_layout. */
TM_API const tm_layout *tm_shard_layout(const tm_file *file, uint32_t shard);

/* ---- Tensors ------------------------------------------------------------------------------- */

typedef struct tm_tensor {
    tm_str name;
    tm_type type;
    uint32_t n_dims;        /* 1..4 for GGUF; 0..4 for safetensors (0 = a scalar) */
    uint64_t ne[4];         /* ne[0] is the row length (fastest-varying), as GGUF stores it;
                             * 1 past n_dims. For safetensors, ne[] is the file's shape REVERSED:
                             * the PyTorch shape is ne[n_dims-1], ..., ne[0] (tm_tensor_shape). */
    uint64_t n_elements;
    uint64_t offset;        /* from the start of the data section, as in the file */
    uint64_t n_bytes;       /* computed from ne and type, never from the next offset */
    const void *data;       /* = mapping + data_start + offset: zero-copy; NULL for a remote
                             * file (tm_tensor_fetch) and for a tensor cut off
                             * (tm_tensor_is_cut) */
    uint64_t info_offset;   /* GGUF: file offset of this tensor's info record; safetensors: of
                             * the header */
    uint64_t info_bytes;    /* GGUF: bytes of the info record */
    uint32_t shard;         /* which shard's mapping data points into (0 unless sharded) */
    const tm_file *file;    /* the file the tensor belongs to */
} tm_tensor;

/* Tensors in the file (every shard's); 0 for NULL. */
TM_API uint64_t tm_n_tensors(const tm_file *file);
/* The i-th tensor in file order (GGUF: info order; safetensors: data order), NULL if i is out
 * of range. */
TM_API const tm_tensor *tm_tensor_at(const tm_file *file, uint64_t i);
/* Lookup by name (compared by length and bytes; findn takes len bytes of name, which need not
 * be NUL-terminated) in O(1) expected time; NULL when absent or when file or name is NULL. */
TM_API const tm_tensor *tm_tensor_find(const tm_file *file, const char *name);
TM_API const tm_tensor *tm_tensor_findn(const tm_file *file, const char *name, size_t len);
/* Rows of the tensor: n_elements / ne[0] (0 when n_elements is 0, or for NULL). */
TM_API uint64_t tm_tensor_rows(const tm_tensor *t);
/* The shape in the file's own order for safetensors (PyTorch: slowest first), which is ne[]
 * reversed; writes n_dims values to shape and returns n_dims (0 for NULL t). shape must not be
 * NULL unless n_dims is 0. */
TM_API uint32_t tm_tensor_shape(const tm_tensor *t, uint64_t shape[4]);
/* True when some of t's bytes lie past the end of a file opened with TM_OPEN_TRUNCATED (see
 * tm_file_missing_bytes): its data is NULL and its bytes cannot be read. False for NULL. */
TM_API bool tm_tensor_is_cut(const tm_tensor *t);

/* ---- Metadata: entries, their values, string arrays ----------------------------------------- */

typedef struct tm_kv {
    tm_str key;
    tm_vtype type;
    tm_vtype elem_type;     /* TM_V_ARRAY only */
    uint64_t count;         /* TM_V_ARRAY: number of elements; otherwise 1 */
    const uint8_t *data;    /* the value's bytes, unaligned little-endian (read with memcpy or
                             * the getters): a scalar's bytes; a string's bytes (after its
                             * length); an array's first element (after element type and count) */
    uint64_t data_bytes;    /* bytes at data: scalar size, string length, or all elements of an
                             * array (string elements with their length prefixes) */
    uint64_t offset;        /* GGUF: file offset of the entry (its key length field) */
    uint64_t n_bytes;       /* GGUF: bytes of the whole entry */
} tm_kv;

/* A scalar value, widened. */
typedef struct tm_value {
    tm_vtype type;
    union {
        uint64_t u;  /* u8, u16, u32, u64 */
        int64_t i;   /* i8, i16, i32, i64 */
        double f;    /* f32 (exactly), f64 */
        bool b;
        tm_str s;
    } as;
} tm_value;

/* Metadata entries; 0 for NULL. */
TM_API uint64_t tm_n_kv(const tm_file *file);
/* The i-th entry in file order, NULL if out of range. */
TM_API const tm_kv *tm_kv_at(const tm_file *file, uint64_t i);
/* Lookup by key (compared by length and bytes; findn takes len bytes of key, which need not be
 * NUL-terminated) in O(1) expected time; NULL when absent or when file or key is NULL. */
TM_API const tm_kv *tm_kv_find(const tm_file *file, const char *key);
TM_API const tm_kv *tm_kv_findn(const tm_file *file, const char *key, size_t len);
/* general.architecture as a string, or {NULL, 0} when absent or not a string. */
TM_API tm_str tm_architecture(const tm_file *file);
/* The entry "<general.architecture>.<suffix>", e.g. tm_arch_key(f, "block_count"); NULL when
 * the architecture or the entry is absent, suffix is NULL, or the key would be longer than
 * TM_MAX_NAME_LEN. A key over 255 bytes is built in a heap buffer, freed before the call
 * returns (NULL when that allocation fails). */
TM_API const tm_kv *tm_arch_key(const tm_file *file, const char *suffix);

/* A scalar or string entry as a tm_value (a string's tm_str points into the file). Returns
 * TM_OK, or TM_NOT_FOUND (kv NULL), TM_INVALID_ARG (out NULL), TM_WRONG_TYPE (an array). */
TM_API tm_status tm_kv_value(const tm_kv *kv, tm_value *out);
/* Element i of an array of a fixed-size type. Returns TM_OK, or TM_NOT_FOUND (kv NULL),
 * TM_INVALID_ARG (out NULL, or i >= count), TM_WRONG_TYPE (a string array or a scalar). */
TM_API tm_status tm_kv_elem(const tm_kv *kv, uint64_t i, tm_value *out);
/* Convenience: an unsigned integer entry of any width (u8..u64, or a non-negative signed one),
 * a float entry (f32 or f64; an integer entry is not widened), a string entry. Returns TM_OK,
 * or TM_NOT_FOUND (kv NULL), TM_INVALID_ARG (out NULL), TM_WRONG_TYPE (any other type, a
 * negative signed integer, an array). *out is set only on TM_OK. */
TM_API tm_status tm_kv_get_uint(const tm_kv *kv, uint64_t *out);
TM_API tm_status tm_kv_get_float(const tm_kv *kv, double *out);
TM_API tm_status tm_kv_get_str(const tm_kv *kv, tm_str *out);

/* Walk a string array without allocating:
 *     tm_str_iter it; tm_str s;
 *     if (tm_kv_strings(kv, &it) == TM_OK) while (tm_str_next(&it, &s)) ...
 * The iterator is bounded by the array's bytes, so it cannot run outside them. tm_kv_strings
 * returns TM_OK, or TM_NOT_FOUND (kv NULL), TM_INVALID_ARG (it NULL), TM_WRONG_TYPE (not an
 * array of strings). tm_str_next sets *out to the next string and returns true, or returns
 * false at the end (and for it or out NULL). */
typedef struct tm_str_iter {
    const uint8_t *p, *end;
    uint64_t left;
} tm_str_iter;
TM_API tm_status tm_kv_strings(const tm_kv *kv, tm_str_iter *it);
TM_API bool tm_str_next(tm_str_iter *it, tm_str *out);

/* =============================================================================================
 * PART 3  Remote files: URLs and hf:
 *
 * When the library is built with libcurl (tm_remote_supported), tm_open takes "http://..." and
 * "https://..." URLs and "hf:OWNER/REPO/FILE[@REVISION]", which is
 * $HF_ENDPOINT/OWNER/REPO/resolve/REVISION/FILE (HF_ENDPOINT defaults to https://huggingface.co,
 * REVISION to main), with "Authorization: Bearer $HF_TOKEN" sent to that origin (its scheme,
 * host and port: never over plain HTTP for an https endpoint) when HF_TOKEN is set; and
 * "s3://BUCKET/KEY", an object of S3 or an S3-compatible store, signed with AWS Signature V4 from
 * the AWS variables and profile files as the AWS tools read them (unsigned without any;
 * docs/remote.md). The header is fetched by HTTP range requests and walked with the same checks as a local file: a
 * first range of TM_HTTP_CHUNK bytes (environment; default 2 MiB, with a K or M suffix),
 * then further ranges as far as the walk needs (at most TM_HTTP_HEAD_LIMIT bytes of header,
 * default 256 MiB, for all the files of a set together: TM_LIMIT beyond). A split GGUF set
 * opens from its first shard's URL and a safetensors checkpoint from its index's URL, the
 * shards being found beside them.
 *
 * An hf: name whose file is in the Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub,
 * else ~/.cache/huggingface/hub: refs/REVISION, snapshots/COMMIT/FILE) is opened there as a
 * local file, its shards beside it in the snapshot, without a request. With HF_HUB_OFFLINE=1
 * (or true, yes, on) nothing goes to the network: a file not cached is TM_NOT_FOUND, the
 * message naming the path looked for; a ref file that is not a commit hash is TM_IO.
 *
 * A remote file's tensors have data == NULL: their bytes are fetched by tm_tensor_fetch, or
 * transparently by tm_dequant_* and tm_matvec*, which fetch exactly the blocks they decode
 * (several ranges at once for large reads) and decode each piece as it arrives. Redirects are
 * followed, TLS is verified (CURL_CA_BUNDLE names a CA file to use instead of the system's),
 * transient failures (connection errors, HTTP 429 and 5xx) are retried, and each step of a read
 * (a request, or 16 MiB of tensor bytes) must end within TM_HTTP_TIMEOUT seconds (environment;
 * default 120, 0 for none). Errors, with the URL and the HTTP status in the message:
 *   TM_NOT_FOUND    HTTP 404 (or 410)
 *   TM_IO           any other HTTP error (401 and 403 mention HF_TOKEN); DNS, connection, TLS
 *                   and timeout failures (TM_HTTP_TIMEOUT named); a Content-Range that does
 *                   not fit the request or its own total; a server that ignores Range when
 *                   tensor bytes are asked for (the head is still read, and the rest never
 *                   downloaded); the file changing on the server between requests (size, ETag
 *                   or Last-Modified)
 *   TM_LIMIT        a header (a set's headers together) longer than TM_HTTP_HEAD_LIMIT
 *   TM_INVALID_ARG  an hf: name that is not hf:OWNER/REPO/FILE or hf:OWNER/REPO/FILE@REVISION
 *   TM_NOMEM        out of memory for the head or a request
 *   TM_UNSUPPORTED  a URL given to a library built without libcurl
 * tm_writer_tensor_copy (and so tm_writer_new_from) refuses a remote file's tensors. Outputs
 * are local files only: tm_outfile_open refuses a URL.
 * =========================================================================================== */

/* Whether this library was built with libcurl, and so opens URLs. */
TM_API bool tm_remote_supported(void);
/* True when the file (any of its shards) is remote; false for NULL. */
TM_API bool tm_file_is_remote(const tm_file *file);
/* What was downloaded for the file so far (every shard): body bytes and HTTP requests. Both 0
 * for a local file and for NULL. Either pointer may be NULL. */
TM_API void tm_file_fetched(const tm_file *file, uint64_t *bytes, uint64_t *requests);

/* Copy bytes [offset, offset + len) of the tensor's data into buf: from the mapping for a local
 * file, by HTTP range requests for a remote one. Returns TM_OK (len 0 copies nothing, and buf
 * may then be NULL), or TM_INVALID_ARG (t NULL; buf NULL with len > 0; a range outside n_bytes;
 * a tensor with neither data nor a file), TM_TRUNCATED (a tensor cut off: tm_tensor_is_cut),
 * or for a remote file the errors above. Allocates
 * nothing for a local tensor. Safe from several threads (a remote file's requests then take
 * turns). */
TM_API tm_status tm_tensor_fetch(const tm_tensor *t, uint64_t offset, uint64_t len, void *buf,
                                 tm_error *err);

/* ---- Downloading a whole file: tm_download ------------------------------------------------
 *
 * Fetches the file src names (a URL, or an hf: name) whole, by range requests (each piece of
 * TM_DOWNLOAD_CHUNK bytes, default 16 MiB, as four ranges at once), into dest, or, for an hf:
 * name with dest NULL, into the Hugging Face hub cache as huggingface_hub lays it out
 * (blobs/ETAG, snapshots/COMMIT/FILE a relative symlink to it, refs/REVISION), where tm_open
 * then finds it. While it runs the bytes go to DEST.incomplete (for the cache,
 * blobs/ETAG.incomplete), and what has been written so far is recorded beside it in
 * DEST.incomplete.tensormap (the URL, the size, the ETag, the pieces done): the same call after
 * an interruption, even a kill, fetches only the pieces missing, and a file that changed on the
 * server since starts again. Nothing takes the name dest until the whole file is there and
 * checked: its size, and when the Hub gives one (X-Linked-Etag, 64 hex digits) its SHA-256; a
 * mismatch is refused and the partial file removed. A dest that exists is replaced only then,
 * and a DEST.incomplete this call did not make is never touched.
 *
 * opts may be NULL (defaults); progress, when set, is called after each piece is written, with
 * the bytes in place and the file's size. out (may be NULL) receives where the file is, its
 * size and the bytes this call fetched. Returns TM_OK, or TM_INVALID_ARG (src or, without an
 * hf: name, dest NULL; an hf: name the cache cannot hold; dest not a regular file; a
 * DEST.incomplete not of this library), TM_BAD_VALUE (the SHA-256 does not match), TM_IO (the
 * network errors of tm_open, a server without X-Repo-Commit for the cache, the file changing
 * while it is fetched, a write that failed), TM_NOT_FOUND (HTTP 404; under HF_HUB_OFFLINE, a
 * file not in the cache), TM_LIMIT (a path longer than TM_DOWNLOAD_PATH_MAX), TM_NOMEM,
 * TM_UNSUPPORTED (built without libcurl). Under HF_HUB_OFFLINE an hf: name already in the
 * cache is TM_OK without a request. It blocks until done; two calls for one destination at
 * once are not supported (they would share its partial file). */
typedef struct tm_download_opts {
    size_t struct_size; /* sizeof(tm_download_opts) */
    void (*progress)(uint64_t done, uint64_t total, void *ctx);
    void *ctx;
} tm_download_opts;

#define TM_DOWNLOAD_PATH_MAX 4096

typedef struct tm_download_result {
    char path[TM_DOWNLOAD_PATH_MAX]; /* dest, or the file's snapshot path in the cache */
    uint64_t size;                   /* the file's bytes */
    uint64_t fetched;                /* body bytes this call fetched */
    bool sha256_checked;             /* the Hub's SHA-256 was there and matched */
} tm_download_result;

TM_API tm_status tm_download(const char *src, const char *dest, const tm_download_opts *opts,
                             tm_download_result *out, tm_error *err);

/* ---- Prefetch: saying which bytes come next, so that they are on their way before they are
 * decoded ------------------------------------------------------------------------------------ */

/* Bytes [offset, offset + n_bytes) of a tensor's data; n_bytes TM_PREFETCH_TO_END means to the
 * end of the tensor (a whole tensor is {t, 0, TM_PREFETCH_TO_END}). */
typedef struct tm_prefetch_range {
    const tm_tensor *tensor;
    uint64_t offset;
    uint64_t n_bytes;
} tm_prefetch_range;
#define TM_PREFETCH_TO_END UINT64_MAX
/* The most bytes a remote file holds prefetched and not yet read, unless the environment
 * variable TM_PREFETCH_LIMIT says otherwise (bytes, with a K, M or G suffix); and the most
 * ranges one call takes. */
#define TM_PREFETCH_DEFAULT_LIMIT (256ull << 20)
#define TM_PREFETCH_MAX_RANGES (1u << 20)

/* Start reading the ranges ahead of their decode, and return at once. For a local file, by
 * default (TM_PREFETCH_METHOD unset or "kernel") nothing is asked: the kernel's own readahead
 * was measured faster than any advice on top of it (BENCHMARKS.md, "Cold reads"). With the
 * environment variable TM_PREFETCH_METHOD=madvise a mapped file's pages are asked for with
 * madvise(MADV_WILLNEED), =fadvise with posix_fadvise(POSIX_FADV_WILLNEED) (also what a file
 * TM_OPEN_NO_MMAP reads as needed gets for madvise), =thread by a thread of the file's own
 * that touches them; for a file held in memory there is nothing to do. For a remote file the ranges are fetched in order, in pieces of at most
 * 16 MiB, on a thread of the file's own, into a buffer the file owns, and tm_tensor_fetch,
 * tm_dequant_* and tm_matvec* take the bytes from there (waiting for a piece still arriving)
 * instead of asking the server: each byte planned is fetched once (bytes the head fetched at
 * open are not planned), and freed once it has been read. The buffer holds at most
 * TM_PREFETCH_LIMIT bytes in at most 4096 pieces: a plan larger than what is left of it
 * prefetches what fits, in order, and the rest is fetched when it is read, as without a plan.
 * A piece that fails to arrive reports its error to the read that wants it, once (that read
 * fails as it would have without the plan). n_ranges 0 (ranges may then be NULL) drops what
 * the file holds prefetched and not read yet. TM_PREFETCH_METHOD=none makes every plan do
 * nothing. Everything is freed by tm_close, which waits for a piece in flight.
 *
 * *planned (when not NULL) is set to the bytes that will be read ahead: for a remote file those
 * that fit in the buffer, for a local one all of them when a method asks for them (0 by
 * default), 0 for a file held in memory (unless TM_PREFETCH_METHOD=thread, which touches its
 * pages all the same). Safe from
 * any number of threads at once, and beside the decoders. Returns TM_OK, or (nothing planned):
 *   TM_INVALID_ARG  file NULL; ranges NULL with n_ranges > 0; a range with a NULL tensor or one
 *                   that is not one of file's tensors (a copy is not); a range outside its
 *                   tensor (each named by its index in ranges); TM_PREFETCH_METHOD set to
 *                   another word than kernel, madvise, fadvise, thread or none
 *   TM_LIMIT        more than TM_PREFETCH_MAX_RANGES ranges
 *   TM_TRUNCATED    a range of a tensor cut off (tm_tensor_is_cut), naming it
 *   TM_NOMEM        out of memory for the plan or the thread */
TM_API tm_status tm_prefetch(const tm_file *file, const tm_prefetch_range *ranges,
                             size_t n_ranges, uint64_t *planned, tm_error *err);

/* =============================================================================================
 * PART 4  Computing: instruction sets, decoding to float32, matvec, rounding to f16/bf16
 *
 * Naming: the threading suffix is inverted between the two families, and stays so until an API
 * break aligns them: tm_dequant_rows runs on the calling thread and tm_dequant_rows_mt takes
 * n_threads, while tm_matvec takes n_threads and tm_matvec_rows runs on the calling thread.
 * A call given n_threads starts up to that many threads minus one (0 = one per online CPU, at
 * most 64 in all) and joins them before it returns; a thread that cannot be started is not an
 * error, the others do its share. The result never depends on the thread count.
 * =========================================================================================== */

/* ---- Instruction sets: one choice for every kernel family (decoding and matvec) ------------ */

/* The instruction-set path in use: "scalar", "avx2", "avx512", "avx512fp16" (AVX-512 with f16
 * arithmetic: only f16's TM_MATVEC_Q8 differs, docs/matvec.md) or "neon". Chosen once at first
 * use from cpuid/xgetbv, or from the environment variable TM_ISA. "none" when TM_ISA names a
 * path that is unknown or that this machine cannot run: every decode and matvec then fails with
 * TM_ISA saying why, until tm_set_isa chooses one. A static string, never NULL. */
TM_API const char *tm_isa(void);
/* Force a path by name, for the whole process: the calls that follow, on every thread, use
 * it. Returns TM_OK, or TM_INVALID_ARG
 * (name NULL), TM_ISA (the name is unknown, not built into this library for this architecture,
 * or the CPU/OS lacks it; the path in use is then unchanged). */
TM_API tm_status tm_set_isa(const char *name, tm_error *err);
/* Whether this machine can run a path built into this library ("scalar" always can); false for
 * NULL and unknown names. */
TM_API bool tm_isa_available(const char *name);
/* The i-th instruction-set path built into this library for this architecture (i = 0, 1, ...;
 * "scalar" first, the best last), whether or not this CPU can run it; NULL past the last. For
 * programs that try every path (tests, benchmarks) without keeping a list of names. */
TM_API const char *tm_isa_built(unsigned i);

/* ---- Decoding: blocks decoded where they lie in the mapping into the caller's float buffer --
 *
 * Every tm_dequant_* call returns TM_OK, or:
 *   TM_INVALID_ARG  t NULL; out NULL (or the tensor's data NULL) when there is something to
 *                   decode; a range outside the tensor; a tensor, range or row that is not a
 *                   whole number of blocks; an output too large to address
 *   TM_UNSUPPORTED  a type without a decoder (tm_type_can_dequant is false), naming the type
 *   TM_ISA          TM_ISA names a path this machine cannot run (tm_set_isa clears it)
 *   TM_TRUNCATED    a tensor cut off (tm_tensor_is_cut), naming it
 * and, for a tensor without data (remote, or in a file TM_OPEN_NO_MMAP reads as needed), the
 * errors of tm_tensor_fetch and TM_NOMEM. Nothing is allocated for a tensor with data, and on
 * failure out is untouched. A tensor without data has its blocks fetched into two buffers of
 * at most 16 MiB, piece by piece, each piece decoded as it arrives while the next is fetched on
 * a thread of its own; a failure then leaves the pieces before it decoded. Safe from any number
 * of threads on one tm_file. */

/* True when tm_dequant_* (and tm_matvec*) can decode the type to float32: on every path alike
 * (a path without its own kernel for a type uses its fallback's). */
TM_API bool tm_type_can_dequant(tm_type type);

/* Decode n_blocks whole blocks starting at block first_block into out
 * (n_blocks * tm_type_block_elems(t->type) floats), on the calling thread. */
TM_API tm_status tm_dequant_blocks(const tm_tensor *t, uint64_t first_block, uint64_t n_blocks,
                                   float *out, tm_error *err);
/* Decode elements [first, first + n) (both on block boundaries: TM_INVALID_ARG otherwise), on
 * the calling thread. */
TM_API tm_status tm_dequant_elements(const tm_tensor *t, uint64_t first, uint64_t n, float *out,
                                     tm_error *err);
/* Decode rows [r0, r1) (a row is ne[0] elements) into out ((r1 - r0) * ne[0] floats), on the
 * calling thread. TM_INVALID_ARG for r0 > r1 or r1 > tm_tensor_rows(t). */
TM_API tm_status tm_dequant_rows(const tm_tensor *t, uint64_t r0, uint64_t r1, float *out,
                                 tm_error *err);
/* Decode the whole tensor (n_elements floats) on n_threads threads (0 = online CPUs); the
 * result is bit-identical to one thread. */
TM_API tm_status tm_dequant_tensor(const tm_tensor *t, float *out, unsigned n_threads,
                                   tm_error *err);
/* Rows [r0, r1) as tm_dequant_rows, on n_threads threads (0 = online CPUs) as
 * tm_dequant_tensor: bit-identical to one thread. */
TM_API tm_status tm_dequant_rows_mt(const tm_tensor *t, uint64_t r0, uint64_t r1, float *out,
                                    unsigned n_threads, tm_error *err);
/* Decode n_elements (a whole number of blocks) of type from raw block bytes, on the calling
 * thread. Errors as above, with blocks in t's place: TM_INVALID_ARG for a partial block, or
 * blocks or out NULL when n_elements > 0; TM_UNSUPPORTED for a type without a decoder. */
TM_API tm_status tm_dequant_raw(tm_type type, const void *blocks, uint64_t n_elements,
                                float *out, tm_error *err);

/* ---- Matrix-vector product on the blocks where they lie: y = W x, one token at a time,
 * without a float32 copy of W. The path is the one above (tm_isa, TM_ISA, tm_set_isa). Types
 * and modes per path, measured speed and error bounds: docs/matvec.md. ---------------------- */

/* x as float32: each block is decoded in registers and multiplied by x. Per row,
 * |y - W x| <= 2^-24 |W x| + 2^-20 sum_j |w_j x_j|, W x taken exactly (double) from the decoded
 * W: on rows whose terms do not cancel, within 1e-6 of max|y| over the rows (docs/matvec.md). */
#define TM_MATVEC_F32 0u
/* x quantized once per call to 8-bit blocks as ggml does (q8_0 for 32-element weight blocks,
 * q8_K for 256-element ones) and integer dot products, as ggml's vec_dot: ggml's speed and
 * accuracy (docs/matvec.md derives the bound). The plain types (f32, f64, fp8, the integers)
 * keep x in float32 and give TM_MATVEC_F32's result; so do f16 and bf16 on the scalar and NEON
 * paths. On the x86 paths f16 and bf16 take x rounded to their own type, as ggml's vec_dot
 * pairs them (f16 x scaled by a power of two), with float32 sums (avx512fp16: f16 summed in
 * half arithmetic; within a derived bound, and a non-finite y only where TM_MATVEC_F32's is).
 * x must be finite: a NaN or an infinity makes every y NaN. */
#define TM_MATVEC_Q8 1u

/* y[i] = sum over c < w->ne[0] of W[r0 + i][c] * x[c], for i < r1 - r0, on the calling thread.
 * x has ne[0] floats, y has r1 - r0. A row is ne[0] elements: a 1-D tensor is one row, a 3-D or
 * 4-D one is ne[1] * ne[2] * ne[3] rows (tm_tensor_rows). Each y depends only on its row, x and
 * the mode and path: never on r0, r1 or threads. TM_MATVEC_Q8 allocates one buffer of about
 * 1.14 ne[0] bytes per call (x quantized, freed before return; 2 ne[0] for f16, bf16 on x86);
 * TM_MATVEC_F32 allocates nothing for a local tensor. Safe on one tm_file from any number of
 * threads. Returns TM_OK, or (err filled, y untouched):
 *   TM_INVALID_ARG  w, x or y NULL; mode unknown; r0 > r1 or r1 > rows; a row that is not a
 *                   whole number of blocks; a local tensor without data
 *   TM_UNSUPPORTED  a type this library cannot decode (tm_type_can_dequant is false)
 *   TM_ISA          TM_ISA names a path this machine cannot run (tm_set_isa clears it)
 *   TM_NOMEM        TM_MATVEC_Q8's buffer for x could not be allocated
 *   TM_TRUNCATED    a tensor cut off (tm_tensor_is_cut), naming it
 * and, for a remote tensor, fetched in pieces as tm_dequant_* fetches it, the errors of
 * tm_tensor_fetch and TM_NOMEM for the pieces (the rows of the pieces before a failed one are
 * then written). */
TM_API tm_status tm_matvec_rows(const tm_tensor *w, uint64_t r0, uint64_t r1, const float *x,
                                float *y, unsigned mode, tm_error *err);
/* All rows (y has tm_tensor_rows(w) floats) on n_threads threads (0 = online CPUs), x quantized
 * once. The result is bit-identical to one thread's and to tm_matvec_rows'. Errors as
 * tm_matvec_rows. */
TM_API tm_status tm_matvec(const tm_tensor *w, const float *x, float *y, unsigned mode,
                           unsigned n_threads, tm_error *err);
/* Y = W X for n >= 1 columns at once (a prompt's tokens): the batched tm_matvec. Column-major:
 * column j of X is the k floats at X + j * k (k must be w->ne[0]; one token's activations, as a
 * row of a C array X[n][k] and as ggml's src1), column j of Y the tm_tensor_rows(w) floats at
 * Y + j * rows (Y[n][rows]); no other strides. W is walked in tiles of rows of about 128 KiB,
 * each multiplied by every column before the next, so W comes from memory once per call, not
 * once per column. Column j of Y is bit for bit tm_matvec(w, X + j * k, ...) in the same mode
 * on the same path, so it never depends on n, the other columns or n_threads (0 = online CPUs;
 * threads take tiles of rows). Allocates n plans of about 100 bytes and, in TM_MATVEC_Q8, each
 * column quantized (about 1.14 k bytes each, and a pointer to each), freed before returning.
 * Errors (err filled, Y untouched): those of tm_matvec_rows, and TM_INVALID_ARG for X or Y
 * NULL, n = 0, or k not w->ne[0]; TM_NOMEM for the plans. Modes, speed and bounds:
 * docs/matvec.md. */
TM_API tm_status tm_matmul(const tm_tensor *w, const float *X, uint64_t k, uint64_t n, float *Y,
                           unsigned mode, unsigned n_threads, tm_error *err);

/* ---- Rounding float32 to 16 bits -------------------------------------------------------------*/

/* Round float32 values to IEEE binary16 (f16) or bfloat16, to nearest with ties to even, as
 * PyTorch's Tensor.to(torch.float16 / torch.bfloat16) rounds: subnormal results are kept (no
 * flush to zero), values beyond the largest finite one become infinity, infinities stay, and NaN
 * stays NaN (quiet, its sign kept, its payload not). Integer arithmetic only: the result does
 * not depend on the FPU's mode. src and dst hold n values (either may be NULL only when n is 0)
 * and may not overlap. Cannot fail, allocates nothing, any thread. */
TM_API void tm_f32_to_f16(const float *src, uint16_t *dst, size_t n);
TM_API void tm_f32_to_bf16(const float *src, uint16_t *dst, size_t n);

/* =============================================================================================
 * PART 5  Writing: tm_outfile, the GGUF writer, the safetensors writer
 *
 * A writer or an outfile is one caller's: used by one thread at a time (different ones may be
 * used on different threads at once). Both writers write through tm_outfile, so what path named
 * before is replaced only by a whole new file, and left exactly as it was on any failure.
 * =========================================================================================== */

/* ---- tm_outfile: the one way to write a file, whole or not at all, never at the cost of what
 * path named before. ---------------------------------------------------------------------------
 *
 * For a regular file (or a path that does not exist yet), tm_outfile_open creates a new
 * temporary file in the same directory (O_EXCL; permissions 0666 less the umask, or the
 * existing file's). The caller writes to tm_outfile_fd; tm_outfile_commit fsyncs it, renames
 * it over path and fsyncs the directory. tm_outfile_abort, or a commit that fails, removes the
 * temporary file and nothing else. path itself is never opened for writing, truncated or
 * unlinked: until the rename it is untouched, and a process that has the old file open or
 * mapped keeps reading the old contents. A symlink at path that names a file is kept: the file
 * it names is the one replaced. A symlink anywhere on the path that another user owns in a
 * sticky world-writable directory (/tmp), unless that user owns the directory, is not followed
 * (TM_IO, naming it): the kernel's fs.protected_symlinks rule, applied whatever the sysctl
 * says, since such a link may have been planted to send the output over a file of the caller's.
 * A character device or a FIFO at path is opened and written directly (no O_TRUNC) and never
 * removed; a directory, block device or socket is refused (TM_IO). */

typedef struct tm_outfile tm_outfile;

/* Start writing path. Returns TM_OK with *out a new outfile, which tm_outfile_commit or
 * tm_outfile_abort frees; or TM_INVALID_ARG (out or path NULL, path empty, path a URL: write
 * ./NAME for a local file of that name), TM_IO (with the system's reason: the directory cannot
 * take a temporary file, path cannot be examined, path is a directory, block device or socket,
 * a planted symlink as above),
 * TM_NOMEM. On failure nothing is created and *out is NULL (when out and path are set). */
TM_API tm_status tm_outfile_open(tm_outfile **out, const char *path, tm_error *err);
/* The descriptor to write to (owned by the outfile; do not close it); -1 for NULL. */
TM_API int tm_outfile_fd(const tm_outfile *o);
/* The temporary file's path, or NULL when writing directly to a device or FIFO, and for NULL
 * (for a signal handler that must remove it before the process dies: unlink is
 * async-signal-safe). Owned by the outfile. */
TM_API const char *tm_outfile_temp_path(const tm_outfile *o);
/* Sync and rename into place; frees o, also on failure. Returns TM_OK, or TM_INVALID_ARG (o
 * NULL), or TM_IO with the system's reason: a sync, close or rename that failed (the temporary
 * file is then removed and path untouched), or a directory that could not be synced after the
 * rename (the new file is then in place, but the rename may not survive a crash). A device or
 * FIFO is closed (TM_IO when close fails). */
TM_API tm_status tm_outfile_commit(tm_outfile *o, tm_error *err);
/* Close, remove the temporary file, free o. NULL is a no-op. */
TM_API void tm_outfile_abort(tm_outfile *o);

/* ---- GGUF writer: the header is built in memory; tm_writer_finish writes header, padding and
 * data. Tensor data is referenced, not copied (keep it alive until finish); NULL data leaves a
 * hole (the file is extended with ftruncate: sparse, nothing written). ----------------------
 *
 * Every tm_writer_* call on a writer that returns a status gives TM_INVALID_ARG for w NULL
 * (tm_writer_free does nothing with NULL, tm_writer_header_bytes returns 0). The adders copy
 * keys, names and values into the writer (tensor data excepted) and check what the reader
 * checks of one entry or tensor; what the reader checks across them (duplicates, overlaps) is
 * refused by tm_writer_finish. An adder that fails adds nothing, and the writer stays usable.
 * Each may also give TM_NOMEM. */

typedef struct tm_writer tm_writer;

/* A writer for GGUF version 3 (tm_writer_set_version for 2), alignment 32 unless set, verify
 * off, no progress callback. Returns TM_OK with *out a new writer, which tm_writer_finish or
 * tm_writer_free frees; or TM_INVALID_ARG (out NULL), TM_NOMEM. */
TM_API tm_status tm_writer_new(tm_writer **out, tm_error *err);
/* Free the writer without writing anything (nothing is on disk before tm_writer_finish). NULL
 * is a no-op. */
TM_API void tm_writer_free(tm_writer *w);
/* TM_BAD_VERSION for a version other than 2 or 3. */
TM_API tm_status tm_writer_set_version(tm_writer *w, uint32_t version, tm_error *err);
/* The alignment used to place tensors and the data section (a power of two). It does NOT add a
 * general.alignment entry: add one with tm_writer_kv_scalar if the file should declare it.
 * TM_BAD_VALUE for 0 or not a power of two; TM_INVALID_ARG once a tensor has been added. */
TM_API tm_status tm_writer_set_alignment(tm_writer *w, uint32_t alignment, tm_error *err);

/* Metadata, in the order added. value points to one value of the type's size (native
 * endianness; the writer stores little-endian). The metadata adders refuse: TM_INVALID_ARG (key
 * NULL; value, elems or strs NULL when there is something to read there; a string NULL with a
 * length), TM_BAD_VALUE (an empty key; for kv_scalar and kv_array a type that is not
 * fixed-size, string and array included; a bool that is not 0 or 1), TM_LIMIT (a key over
 * TM_MAX_NAME_LEN bytes, a string over TM_MAX_STRING_LEN, a size that overflows). A key already
 * added is refused by tm_writer_finish (TM_DUPLICATE). */
TM_API tm_status tm_writer_kv_scalar(tm_writer *w, const char *key, tm_vtype type,
                                     const void *value, tm_error *err);
/* A string of len bytes at s (s may be NULL when len is 0). */
TM_API tm_status tm_writer_kv_str(tm_writer *w, const char *key, const char *s, size_t len,
                                  tm_error *err);
/* An array of a fixed-size element type: count elements at elems (native endianness). */
TM_API tm_status tm_writer_kv_array(tm_writer *w, const char *key, tm_vtype elem_type,
                                    const void *elems, uint64_t count, tm_error *err);
/* An array of strings (each NUL-terminated when lens is NULL; a NULL string is then empty). */
TM_API tm_status tm_writer_kv_str_array(tm_writer *w, const char *key, const char *const *strs,
                                        const size_t *lens, uint64_t count, tm_error *err);

/* A tensor placed after the previous one, rounded up to the alignment. n_bytes is computed
 * from ne and type. data may be NULL (a hole). The tensor adders refuse: TM_INVALID_ARG (name
 * NULL), TM_BAD_VALUE (an empty name; n_dims not 1..4 or ne NULL; a dimension of 0; a row that
 * is not a whole number of blocks), TM_LIMIT (a name over TM_MAX_NAME_LEN bytes; a dimension of
 * 2^63 or more; an element count, size or offset that overflows), TM_UNSUPPORTED (a type that is
 * not a GGUF type this library knows: unknown, removed, or a safetensors-only id). A name
 * already added is refused by tm_writer_finish (TM_DUPLICATE), overlapping tensors too
 * (TM_LAYOUT). */
TM_API tm_status tm_writer_tensor(tm_writer *w, const char *name, tm_type type, uint32_t n_dims,
                                  const uint64_t *ne, const void *data, tm_error *err);
/* A tensor at an explicit offset from the data start (for exact header round trips).
 * TM_LAYOUT for an offset that is not a multiple of the alignment. */
TM_API tm_status tm_writer_tensor_at(tm_writer *w, const char *name, tm_type type,
                                     uint32_t n_dims, const uint64_t *ne, uint64_t offset,
                                     const void *data, tm_error *err);
/* Bytes of header built so far: called before and after an add, it tells where that field
 * went (the chapter's "where every field went" comes from the writer's own counter). Tensor
 * infos are counted where they will land (after all metadata). 0 for NULL. */
TM_API uint64_t tm_writer_header_bytes(const tm_writer *w);
/* The data section's size is at least the end of the last tensor; make it at least n bytes
 * (a stand-in for a file whose tail is not described by its tensors). */
TM_API tm_status tm_writer_set_data_size(tm_writer *w, uint64_t n, tm_error *err);
/* ---- A writer seeded from an open file: editing, merging and splitting without copying ----
 * Entries are copied as bytes; tensors are referenced in the source's mapping (keep the source
 * open until tm_writer_finish) and copied at finish with copy_file_range from the source file
 * (so that a filesystem that can share extents does), or from the mapping when the file is no
 * longer the one mapped or the kernel cannot copy between the two files. Never through a copy
 * of the whole file in memory. */

/* A copy of entry kv of an open file, added after the entries so far (its bytes are copied:
 * the file may be closed after). TM_INVALID_ARG for kv NULL or not an entry; otherwise the
 * metadata adders' errors for its key. */
TM_API tm_status tm_writer_kv_copy(tm_writer *w, const tm_kv *kv, tm_error *err);
/* Remove the entry key from the writer (the first, if it was added twice). TM_INVALID_ARG for
 * key NULL, TM_NOT_FOUND when it holds none. To change a value, delete the key and add it again
 * (it then comes last). */
TM_API tm_status tm_writer_kv_delete(tm_writer *w, const char *key, tm_error *err);
/* Tensor t of the open file f, under name (NULL: t's own name), with t's type and shape; its
 * bytes are referenced. same_offset places it at t's own offset (the data section of a one-file
 * source kept as it is), else after the previous tensor. When every tensor of the writer is one
 * of a one-file source's tensors, all of them, each at its own offset, the source's whole data
 * section is written as it is: the bytes between tensors and after the last (ggml pads the
 * last tensor to the alignment) included, so the file keeps its size when its header does.
 * TM_INVALID_ARG for f or t NULL or t not one of f's tensors; TM_UNSUPPORTED for a remote file's tensor; TM_TRUNCATED for a tensor
 * cut off (tm_tensor_is_cut); otherwise the tensor adders' errors. */
TM_API tm_status tm_writer_tensor_copy(tm_writer *w, const tm_file *f, const tm_tensor *t,
                                       const char *name, bool same_offset, tm_error *err);
/* A writer holding f's version, alignment, every entry and every tensor (a one-file source
 * keeps every tensor's offset; a split set's tensors are laid out in order), with
 * verification on. Returns TM_OK with *out a new writer, or (*out NULL when out is set)
 * TM_INVALID_ARG (f or out NULL), TM_UNSUPPORTED (a safetensors source, a remote file's
 * tensors), TM_NOMEM, or the error of tm_writer_kv_copy or tm_writer_tensor_copy for an entry
 * or tensor of f (TM_TRUNCATED for a file cut off). */
TM_API tm_status tm_writer_new_from(const tm_file *f, tm_writer **out, tm_error *err);
/* With verify on, tm_writer_finish opens the file it wrote with tm_open before it replaces
 * anything, and fails (leaving path as it was) when the reader refuses it or reads other
 * counts or another header size. Off for tm_writer_new, on for tm_writer_new_from. */
TM_API tm_status tm_writer_set_verify(tm_writer *w, bool verify, tm_error *err);
/* Called during tm_writer_finish as tensor bytes are written (at least every 64 MiB), with
 * the bytes written so far and the total, on the thread that calls tm_writer_finish. fn NULL
 * calls nothing. */
typedef void (*tm_writer_progress)(void *ctx, uint64_t done, uint64_t total);
TM_API tm_status tm_writer_set_progress(tm_writer *w, tm_writer_progress fn, void *ctx,
                                        tm_error *err);

/* Write the file and free the writer (also on failure; w NULL is TM_INVALID_ARG). The file is
 * written through tm_outfile: an existing file at path is replaced only when the whole new file
 * is written and synced, and is left exactly as it was on any failure; no partial file is left.
 * A character device or FIFO at path is written directly and never removed.
 * Before anything is written, what the reader would refuse across entries is refused:
 * TM_DUPLICATE for two keys or two tensor names alike, TM_LAYOUT for overlapping tensors,
 * TM_BAD_VALUE for a general.alignment that is not a u32 equal to the writer's alignment.
 * Also TM_INVALID_ARG (path NULL, or what tm_outfile_open refuses), TM_IO (with the system's
 * reason; also a file written with verify on that reads back with other counts), TM_LIMIT (a
 * file too big), TM_NOMEM, and with verify on any error tm_open gives for the file written. */
TM_API tm_status tm_writer_finish(tm_writer *w, const char *path, tm_error *err);
/* tm_writer_finish in two halves, for a caller that must know the temporary file while it is
 * written (a signal handler removes it: tm_outfile_temp_path) or decide when it replaces path
 * (a set of files put in place together, a check made just before the rename): write the file
 * into o, opened by tm_outfile_open, and read it back when verify is on. o is left open, to be
 * committed (tm_outfile_commit) or removed (tm_outfile_abort) by the caller, and w is not freed
 * (tm_writer_free). Errors as tm_writer_finish; TM_INVALID_ARG when o or w is NULL. */
TM_API tm_status tm_writer_write_to(tm_writer *w, tm_outfile *o, tm_error *err);
/* The header the writer would write (the 24-byte head, the metadata, the tensor infos: the
 * tm_writer_header_bytes(w) bytes before the padding) into buf, which holds size bytes, after
 * the checks tm_writer_finish makes before writing anything (same errors). For a caller that
 * rewrites a file's header in place when it keeps its size (tensormap edit). TM_INVALID_ARG
 * when buf is NULL or smaller than the header. */
TM_API tm_status tm_writer_header(const tm_writer *w, void *buf, uint64_t size, tm_error *err);

/* ---- Safetensors writer, streamed: declare the metadata and every tensor first (the header
 * holds all offsets), then tm_st_writer_begin writes the header and the tensors' bytes follow
 * in the order declared, in pieces of any size. ----------------------------------------------
 *
 * Laid out as the reference writer (Hugging Face safetensors) lays it out: "__metadata__"
 * first, the JSON header padded with spaces to a multiple of 8 bytes, the tensors contiguous in
 * the order declared (declare larger element sizes first and every tensor is aligned to its
 * element size). The file is written through tm_outfile: nothing appears at path until
 * tm_st_writer_finish succeeds, and what path named before is untouched on any failure.
 * Errors: TM_INVALID_ARG (calls out of order, more or fewer data bytes than declared),
 * TM_DUPLICATE (a name or key twice), TM_BAD_VALUE (a name, key or value not valid UTF-8),
 * TM_UNSUPPORTED (a type with no safetensors dtype: the block-quantized ones), TM_LIMIT (more
 * than 4 dimensions, sizes past 2^63), TM_IO (with the system's reason), TM_NOMEM.
 * Unlike the GGUF writer's, these calls do not check their pointers: w, out, names, keys and
 * shape (when n_dims > 0) must not be NULL (tm_st_writer_free(NULL) alone is a no-op). After
 * TM_IO, free the writer: the file cannot be finished. */

typedef struct tm_st_writer tm_st_writer;

/* Every call that returns a status gives TM_INVALID_ARG for w NULL, and for a NULL key, name,
 * path, shape (n_dims > 0) or bytes (n > 0); tm_st_writer_data_size gives 0 and
 * tm_st_writer_temp_path NULL for w NULL. */

/* Returns TM_OK with *out a new writer, which tm_st_writer_finish or tm_st_writer_free frees;
 * or TM_INVALID_ARG (out NULL), TM_NOMEM. */
TM_API tm_status tm_st_writer_new(tm_st_writer **out, tm_error *err);
/* Frees the writer; a file begun and not finished is removed (only the temporary file). NULL
 * is a no-op. */
TM_API void tm_st_writer_free(tm_st_writer *w);
/* A "__metadata__" entry (string to string). All of them come before the first tensor.
 * TM_INVALID_ARG after a tensor or after tm_st_writer_begin; TM_DUPLICATE for a key twice;
 * TM_BAD_VALUE for a key or value not valid UTF-8 (value NULL included). */
TM_API tm_status tm_st_writer_meta(tm_st_writer *w, const char *key, const char *value,
                                   tm_error *err);
/* A tensor of dtype (f64, f32, f16, bf16, the integer types, bool, f8) and shape in PyTorch
 * order (slowest first; n_dims 0 is a scalar). TM_INVALID_ARG after tm_st_writer_begin;
 * TM_BAD_VALUE for a name not valid UTF-8; TM_UNSUPPORTED for a type with no dtype; TM_LIMIT for
 * more than 4 dimensions or a size past 2^63 bytes; TM_DUPLICATE for a name twice or
 * "__metadata__". */
TM_API tm_status tm_st_writer_tensor(tm_st_writer *w, const char *name, tm_type dtype,
                                     uint32_t n_dims, const uint64_t *shape, tm_error *err);
/* Bytes of tensor data declared so far. */
TM_API uint64_t tm_st_writer_data_size(const tm_st_writer *w);
/* Write the header to a temporary file beside path. TM_INVALID_ARG when called twice, or for
 * what tm_outfile_open refuses; TM_IO, TM_NOMEM. */
TM_API tm_status tm_st_writer_begin(tm_st_writer *w, const char *path, tm_error *err);
/* The temporary file being written (NULL before tm_st_writer_begin, or when writing directly
 * to a device or FIFO), for a signal handler that must remove it before the process dies. */
TM_API const char *tm_st_writer_temp_path(const tm_st_writer *w);
/* The next n bytes of tensor data, in declaration order. TM_INVALID_ARG before
 * tm_st_writer_begin or past the bytes declared (nothing is then written); TM_IO. */
TM_API tm_status tm_st_writer_write(tm_st_writer *w, const void *bytes, size_t n,
                                    tm_error *err);
/* Check every declared byte arrived, sync, rename into place; frees w, also on failure.
 * TM_INVALID_ARG before tm_st_writer_begin or when bytes are missing (the file is then
 * removed); otherwise the errors of tm_outfile_commit. */
TM_API tm_status tm_st_writer_finish(tm_st_writer *w, tm_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TENSORMAP_H */
