/* Hostile files: the shared corpus's crafted files get the verdict EXPECTED.tsv owes them, and
 * every class of issue 6's list is built here byte by byte (tests/support/helpers.h) and refused with
 * the right code, a message naming the field, and the byte offset where the builder put that
 * field. The expected offsets come from the builder, never from the parser.
 *
 * Each image is opened from an exactly sized heap copy, so that under `make SAN=1 test` a read
 * one byte past the end is an AddressSanitizer report, not a read of the builder's slack. Outside
 * the sanitizers the address space is capped (RLIMIT_AS), so an allocation sized by a number
 * the file cannot back fails as TM_NOMEM, which these tests refuse as a verdict. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "support/helpers.h"
#include "tensormap.h"

#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* "Opens quickly": a generous bound for a header walk that should take a few milliseconds,
 * loose enough for a loaded shared machine. The sanitizer build checks every access of that
 * walk (several times slower at -O1): there the bound only catches a quadratic walk, which
 * takes seconds. */
#if UNDER_ASAN
#define OPEN_BOUND_MS 1000.0
#else
#define OPEN_BOUND_MS 100.0
#endif

static void cap_address_space(void)
{
    if (UNDER_ASAN) /* ASan reserves terabytes of shadow: a cap would break it */
        return;
    struct rlimit r = {1ull << 30, 1ull << 30};
    setrlimit(RLIMIT_AS, &r);
}

/* ---- opening an image from an exact copy --------------------------------------------------- */

typedef struct opened {
    tm_file *f;
    uint8_t *copy;
} opened;

static tm_status open_exact(const tb *b, opened *o, tm_error *err)
{
    o->copy = malloc(b->len ? b->len : 1);
    cr_assert_not_null(o->copy);
    if (b->len)
        memcpy(o->copy, b->p, b->len);
    memset(err, 0, sizeof *err);
    return tm_open_buffer(o->copy, b->len, 0, &o->f, err);
}

static void close_exact(opened *o)
{
    tm_close(o->f);
    free(o->copy);
    *o = (opened){0};
}

/* field is a word, or words separated by '|' of which one must appear (case-insensitive). */
static bool names_field(const char *message, const char *field)
{
    char words[128];
    snprintf(words, sizeof words, "%s", field);
    for (char *save, *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
        if (strcasestr(message, w))
            return true;
    return false;
}

/* The refusal every hostile file is owed: the code, err filled to match, the offset where the
 * builder put the field, that offset in the message ("byte N"), and the field named. */
static void expect_refusal(const char *what, tm_status st, const tm_error *err, tm_status code,
                           uint64_t at, const char *field)
{
    char byte_n[40];
    snprintf(byte_n, sizeof byte_n, "byte %" PRIu64, at);
    cr_expect_eq(st, code, "%s: %s, wanted %s: %s", what, tm_status_name(st),
                 tm_status_name(code), err->message);
    cr_expect_eq(err->code, st, "%s: err.code disagrees with the return value", what);
    cr_expect_eq(err->offset, at, "%s: offset %" PRIu64 ", wanted %" PRIu64 ": %s", what,
                 err->offset, at, err->message);
    /* (at byte 0 the message shows the magic itself; the tool adds "at byte 0") */
    cr_expect(at == 0 || strstr(err->message, byte_n), "%s: the message does not say '%s': %s",
              what, byte_n, err->message);
    cr_expect(names_field(err->message, field), "%s: the message does not name '%s': %s", what,
              field, err->message);
}

/* ---- the classes, built ---------------------------------------------------------------------
 * Each builder writes one hostile image and returns the byte offset the refusal must name. */

typedef struct hostile_case {
    const char *name;
    size_t (*build)(tb *b);
    tm_status code;
    const char *field; /* a word the message must contain (case-insensitive) */
} hostile_case;

static const uint64_t ne_1x32[1] = {32};

/* A valid tail after a broken field so that "the file ended" is never the reason: enough
 * zero bytes for any count check to pass and the broken field to be reached. */
static void tail(tb *b) { tb_zeros(b, 256); }

/* head */
static size_t b_magic_ggml(tb *b) { tb_bytes(b, "GGML", 4); tb_u32(b, 3); tb_u64(b, 0); tb_u64(b, 0); return 0; }
static size_t b_empty(tb *b) { (void)b; return 0; }
static size_t b_three_bytes(tb *b) { tb_bytes(b, "GGU", 3); return 0; }
static size_t b_short_version(tb *b) { tb_bytes(b, "GGUF\x03\x00", 6); return 4; }
static size_t b_short_counts(tb *b) { tb_bytes(b, "GGUF", 4); tb_u32(b, 3); tb_u64(b, 0); tb_u32(b, 0); return 16; }
static size_t b_version_0(tb *b) { tb_head(b, 0, 0, 0); return 4; }
static size_t b_version_1(tb *b) { tb_head(b, 1, 0, 0); tail(b); return 4; }
static size_t b_version_4(tb *b) { tb_head(b, 4, 0, 0); return 4; }
static size_t b_big_endian(tb *b) { tb_head(b, 0x03000000u, 0, 0); return 4; }
static size_t b_n_kv_max(tb *b) { tb_head(b, 3, 0, UINT64_MAX); tail(b); return 16; }
static size_t b_n_tensors_max(tb *b) { tb_head(b, 3, UINT64_MAX, 0); tail(b); return 8; }
/* 2^59 records of >= 32 bytes: count x record size wraps to 0 */
static size_t b_n_tensors_wrap(tb *b) { tb_head(b, 3, UINT64_C(1) << 59, 0); tail(b); return 8; }
static size_t b_n_kv_wrap(tb *b) { tb_head(b, 3, 0, UINT64_C(1) << 60); tail(b); return 16; }

/* metadata */
static size_t b_key_len_max(tb *b) { tb_head(b, 3, 0, 1); tb_u64(b, UINT64_MAX); tail(b); return 24; }
static size_t b_key_len_past_end(tb *b) { tb_head(b, 3, 0, 1); tb_u64(b, 300); tb_zeros(b, 100); return 24; }
static size_t b_key_65536(tb *b)
{
    tb_head(b, 3, 0, 1);
    tb_u64(b, 65536);
    for (unsigned i = 0; i < 65536; i++)
        tb_u8(b, 'k');
    tb_u32(b, TM_V_U8);
    tb_u8(b, 0);
    return 24;
}
static size_t b_key_empty(tb *b) { tb_head(b, 3, 0, 1); tb_kv_u32(b, "", 1); tail(b); return 24; }
static size_t b_key_nul(tb *b) { tb_head(b, 3, 0, 1); tb_strn(b, "a\0b", 3); tb_u32(b, TM_V_U8); tb_u8(b, 0); tail(b); return 24 + 8 + 1; }
static size_t b_key_dup(tb *b) { tb_head(b, 3, 0, 2); tb_kv_u32(b, "a.b", 1); size_t at = tb_kv_u32(b, "a.b", 2); tail(b); return at; }
static size_t b_vtype_13(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_head(b, "k", 13); tail(b); return at; }
static size_t b_vtype_max(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_head(b, "k", UINT32_MAX); tail(b); return at; }
static size_t b_etype_13(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_arr_head(b, "k", 13, 1) - 4; tail(b); return at; }
static size_t b_array_wrap(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_arr_head(b, "k", TM_V_U64, UINT64_C(1) << 61); tail(b); return at; }
static size_t b_array_past_end(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_arr_head(b, "k", TM_V_U32, 1000); tail(b); return at; }
static size_t b_str_array_count(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_arr_head(b, "k", TM_V_STRING, UINT64_C(1) << 62); tail(b); return at; }
static size_t b_str_array_elem_past_end(tb *b)
{
    tb_head(b, 3, 0, 1);
    tb_kv_arr_head(b, "k", TM_V_STRING, 2);
    tb_str(b, "first");
    size_t at = tb_u64(b, 1000);
    tb_zeros(b, 20);
    return at;
}
static size_t b_str_len_max(tb *b) { tb_head(b, 3, 0, 1); tb_kv_head(b, "k", TM_V_STRING); size_t at = tb_u64(b, UINT64_MAX); tail(b); return at; }
static size_t b_str_len_past_end(tb *b) { tb_head(b, 3, 0, 1); tb_kv_head(b, "k", TM_V_STRING); size_t at = tb_u64(b, 1000); tb_zeros(b, 40); return at; }
static size_t b_nested_array(tb *b)
{
    tb_head(b, 3, 0, 1);
    size_t at = tb_kv_arr_head(b, "k", TM_V_ARRAY, 1) - 4;
    for (unsigned depth = 0; depth < 64; depth++) { /* arrays in arrays, all the way down */
        tb_u32(b, TM_V_ARRAY);
        tb_u64(b, 1);
    }
    tail(b);
    return at;
}
static size_t b_bool_2(tb *b) { tb_head(b, 3, 0, 1); tb_kv_head(b, "k", TM_V_BOOL); size_t at = tb_u8(b, 2); tail(b); return at; }
static size_t b_bool_array_ff(tb *b)
{
    tb_head(b, 3, 0, 1);
    tb_kv_arr_head(b, "k", TM_V_BOOL, 5);
    tb_bytes(b, "\x00\x01\x01", 3);
    size_t at = tb_u8(b, 0xff);
    tb_u8(b, 0);
    tail(b);
    return at;
}
static size_t b_align(tb *b, uint32_t a) { tb_head(b, 3, 0, 1); size_t at = tb_kv_u32(b, "general.alignment", a) + 8 + 17 + 4; tail(b); return at; }
static size_t b_align_0(tb *b) { return b_align(b, 0); }
static size_t b_align_48(tb *b) { return b_align(b, 48); }
static size_t b_align_max(tb *b) { return b_align(b, UINT32_MAX); }
static size_t b_align_u64(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_head(b, "general.alignment", TM_V_U64); tb_u64(b, 32); tail(b); return at; }
static size_t b_align_i32(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_head(b, "general.alignment", TM_V_I32); tb_u32(b, 32); tail(b); return at; }
static size_t b_align_str(tb *b) { tb_head(b, 3, 0, 1); size_t at = tb_kv_head(b, "general.alignment", TM_V_STRING); tb_str(b, "32"); tail(b); return at; }
/* An alignment of 2^31 puts the data start past the end of a small file with a tensor. */
static size_t b_align_past_end(tb *b)
{
    tb_head(b, 3, 1, 1);
    tb_kv_u32(b, "general.alignment", UINT32_C(1) << 31);
    tb_info(b, "t", 1, ne_1x32, TM_TYPE_F32, 0);
    size_t at = b->len;
    tb_zeros(b, 128);
    return at;
}

/* tensor infos: one info of one tensor, whose fields the builders break */
static size_t info_head(tb *b, uint32_t n_dims)
{
    tb_head(b, 3, 1, 0);
    tb_str(b, "t");
    return tb_u32(b, n_dims);
}
static void info_tail(tb *b, uint32_t type, uint64_t offset)
{
    tb_u32(b, type);
    tb_u64(b, offset);
    tb_pad(b, 32);
    tb_zeros(b, 4096);
}
static size_t b_n_dims(tb *b, uint32_t n)
{
    size_t at = info_head(b, n);
    for (uint32_t d = 0; d < n && d < 8; d++)
        tb_u64(b, 1);
    info_tail(b, TM_TYPE_F32, 0);
    return at;
}
static size_t b_n_dims_0(tb *b) { return b_n_dims(b, 0); }
static size_t b_n_dims_5(tb *b) { return b_n_dims(b, 5); }
static size_t b_n_dims_max(tb *b) { return b_n_dims(b, UINT32_MAX); }
static size_t b_dims(tb *b, uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t offset, size_t *ne_at)
{
    info_head(b, 2);
    ne_at[0] = tb_u64(b, ne0);
    ne_at[1] = tb_u64(b, ne1);
    size_t type_at = b->len;
    info_tail(b, type, offset);
    return type_at;
}
static size_t b_dim_0(tb *b) { size_t ne[2]; b_dims(b, 32, 0, TM_TYPE_F32, 0, ne); return ne[1]; }
static size_t b_dim_2p63(tb *b) { size_t ne[2]; b_dims(b, 32, UINT64_C(1) << 63, TM_TYPE_F32, 0, ne); return ne[1]; }
static size_t b_dim_max(tb *b) { size_t ne[2]; b_dims(b, UINT64_MAX, 1, TM_TYPE_F32, 0, ne); return ne[0]; }
static size_t b_elements_overflow(tb *b) { size_t ne[2]; b_dims(b, UINT64_C(1) << 32, UINT64_C(1) << 32, TM_TYPE_F32, 0, ne); return ne[1]; }
/* 2^62 f32 elements: 2^64 bytes, wrapped to 0 */
static size_t b_bytes_overflow(tb *b) { size_t ne[2]; return b_dims(b, UINT64_C(1) << 62, 1, TM_TYPE_F32, 0, ne); }
/* 2^62 - 1 f32 elements: 2^64 - 4 bytes, which the padding round-up wraps to 0 */
static size_t b_pad_wrap(tb *b) { size_t ne[2]; return b_dims(b, (UINT64_C(1) << 62) - 1, 1, TM_TYPE_F32, 0, ne); }
static size_t b_type(tb *b, uint32_t type) { size_t ne[2]; return b_dims(b, 256, 1, type, 0, ne); }
static size_t b_type_4(tb *b) { return b_type(b, 4); }
static size_t b_type_5(tb *b) { return b_type(b, 5); }
static size_t b_type_31(tb *b) { return b_type(b, 31); }
static size_t b_type_36(tb *b) { return b_type(b, 36); }
static size_t b_type_unknown(tb *b) { return b_type(b, 43); }
static size_t b_type_safetensors_only(tb *b) { return b_type(b, TM_TYPE_U8); }
static size_t b_type_max(tb *b) { return b_type(b, UINT32_MAX); }
static size_t b_part_block(tb *b) { size_t ne[2]; b_dims(b, 33, 1, TM_TYPE_Q4_0, 0, ne); return ne[0]; }
static size_t b_offset(tb *b, uint64_t offset) { size_t ne[2]; return b_dims(b, 32, 1, TM_TYPE_F32, offset, ne) + 4; }
static size_t b_offset_misaligned(tb *b) { return b_offset(b, 1); }
static size_t b_offset_past_end(tb *b) { return b_offset(b, UINT64_C(1) << 20); }
static size_t b_offset_wrap(tb *b) { return b_offset(b, UINT64_MAX - 31); }
/* b starts inside a: infos in file order, data overlapping */
static size_t b_overlap(tb *b)
{
    tb_head(b, 3, 2, 0);
    tb_info(b, "a", 1, (uint64_t[]){64}, TM_TYPE_F32, 0);
    size_t at = tb_info(b, "b", 1, (uint64_t[]){32}, TM_TYPE_F32, 128) + 8 + 1 + 4 + 8 + 4;
    tb_pad(b, 32);
    tb_zeros(b, 512);
    return at;
}
static size_t b_name_dup(tb *b)
{
    tb_head(b, 3, 2, 0);
    tb_info(b, "w", 1, ne_1x32, TM_TYPE_F32, 0);
    size_t at = tb_info(b, "w", 1, ne_1x32, TM_TYPE_F32, 128);
    tb_pad(b, 32);
    tb_zeros(b, 512);
    return at;
}
static size_t b_name_nul(tb *b)
{
    tb_head(b, 3, 1, 0);
    tb_strn(b, "w\0x", 3);
    tb_u32(b, 1);
    tb_u64(b, 32);
    info_tail(b, TM_TYPE_F32, 0);
    return 24 + 8 + 1;
}
static size_t b_name_65536(tb *b)
{
    tb_head(b, 3, 1, 0);
    tb_u64(b, 65536);
    for (unsigned i = 0; i < 65536; i++)
        tb_u8(b, 'n');
    tb_u32(b, 1);
    tb_u64(b, 32);
    info_tail(b, TM_TYPE_F32, 0);
    return 24;
}
/* three infos promised, one written, then zeros: info 1 is where the walk must stop */
static size_t b_fewer_infos(tb *b)
{
    tb_head(b, 3, 3, 0);
    tb_info(b, "w", 1, ne_1x32, TM_TYPE_F32, 0);
    size_t at = b->len;
    tb_pad(b, 32);
    tb_zeros(b, 256);
    return at;
}
/* a truncated download: 4 MiB promised, 64 bytes there */
static size_t b_data_past_end(tb *b)
{
    tb_head(b, 3, 1, 0);
    size_t at = tb_info(b, "big", 2, (uint64_t[]){1024, 1024}, TM_TYPE_F32, 0) + 8 + 3 + 4 + 16 + 4;
    tb_pad(b, 32);
    tb_zeros(b, 64);
    return at;
}

static hostile_case cases[] = {
    {"bad magic", b_magic_ggml, TM_NOT_MODEL, "GGML"},
    {"empty file", b_empty, TM_TRUNCATED, "empty"},
    {"three bytes", b_three_bytes, TM_TRUNCATED, "too short"},
    {"head cut in the version", b_short_version, TM_TRUNCATED, "version"},
    {"head cut in the metadata count", b_short_counts, TM_TRUNCATED, "count"},
    {"version 0", b_version_0, TM_BAD_VERSION, "version"},
    {"version 1", b_version_1, TM_BAD_VERSION, "version 1"},
    {"future version 4", b_version_4, TM_BAD_VERSION, "version"},
    {"big-endian", b_big_endian, TM_BAD_VERSION, "big-endian"},
    {"metadata count 2^64-1", b_n_kv_max, TM_LIMIT, "metadata count"},
    {"tensor count 2^64-1", b_n_tensors_max, TM_LIMIT, "tensor count"},
    {"tensor count x info size wraps", b_n_tensors_wrap, TM_LIMIT, "tensor count"},
    {"metadata count x entry size wraps", b_n_kv_wrap, TM_LIMIT, "metadata count"},
    {"key length 2^64-1", b_key_len_max, TM_LIMIT, "key length"},
    {"key length past the end", b_key_len_past_end, TM_TRUNCATED, "key length"},
    {"key of 65536 bytes", b_key_65536, TM_LIMIT, "key length"},
    {"empty key", b_key_empty, TM_BAD_VALUE, "empty key"},
    {"NUL in a key", b_key_nul, TM_BAD_VALUE, "NUL"},
    {"duplicate key", b_key_dup, TM_DUPLICATE, "same key"},
    {"value type 13", b_vtype_13, TM_BAD_VALUE, "value type 13"},
    {"value type 2^32-1", b_vtype_max, TM_BAD_VALUE, "value type 4294967295"},
    {"array element type 13", b_etype_13, TM_BAD_VALUE, "element type 13"},
    {"array byte size wraps", b_array_wrap, TM_TRUNCATED, "count"},
    {"array past the end", b_array_past_end, TM_TRUNCATED, "count"},
    {"string array count 2^62", b_str_array_count, TM_TRUNCATED, "count"},
    {"string array element past the end", b_str_array_elem_past_end, TM_TRUNCATED, "string 1"},
    {"string length 2^64-1", b_str_len_max, TM_LIMIT, "string length"},
    {"string length past the end", b_str_len_past_end, TM_TRUNCATED, "string length"},
    {"nested arrays", b_nested_array, TM_UNSUPPORTED, "nested"},
    {"bool 2", b_bool_2, TM_BAD_VALUE, "bool"},
    {"bool array with 0xff", b_bool_array_ff, TM_BAD_VALUE, "bool value 255"},
    {"alignment 0", b_align_0, TM_BAD_VALUE, "alignment"},
    {"alignment 48", b_align_48, TM_BAD_VALUE, "power of two"},
    {"alignment 2^32-1", b_align_max, TM_BAD_VALUE, "power of two"},
    {"alignment as u64", b_align_u64, TM_BAD_VALUE, "u32"},
    {"alignment as i32", b_align_i32, TM_BAD_VALUE, "u32"},
    {"alignment as a string", b_align_str, TM_BAD_VALUE, "u32"},
    {"alignment puts the data past the end", b_align_past_end, TM_TRUNCATED, "alignment"},
    {"n_dims 0", b_n_dims_0, TM_BAD_VALUE, "n_dims 0"},
    {"n_dims 5", b_n_dims_5, TM_LIMIT, "n_dims 5"},
    {"n_dims 2^32-1", b_n_dims_max, TM_LIMIT, "n_dims 4294967295"},
    {"dimension 0", b_dim_0, TM_BAD_VALUE, "ne[1] = 0"},
    {"dimension 2^63", b_dim_2p63, TM_LIMIT, "ne[1]"},
    {"dimension 2^64-1", b_dim_max, TM_LIMIT, "ne[0]"},
    {"element count overflows", b_elements_overflow, TM_LIMIT, "overflow"},
    {"byte size overflows", b_bytes_overflow, TM_LIMIT, "overflow"},
    {"padding round-up wraps to 0", b_pad_wrap, TM_LIMIT, "overflow"},
    {"removed type 4", b_type_4, TM_UNSUPPORTED, "type 4"},
    {"removed type 5", b_type_5, TM_UNSUPPORTED, "type 5"},
    {"removed type 31", b_type_31, TM_UNSUPPORTED, "type 31"},
    {"removed type 36", b_type_36, TM_UNSUPPORTED, "type 36"},
    {"unknown type 43", b_type_unknown, TM_UNSUPPORTED, "type 43"},
    {"safetensors-only type in GGUF", b_type_safetensors_only, TM_UNSUPPORTED, "type 1024"},
    {"type 2^32-1", b_type_max, TM_UNSUPPORTED, "type 4294967295"},
    {"row length not whole blocks", b_part_block, TM_BAD_VALUE, "ne[0] = 33"},
    {"offset misaligned", b_offset_misaligned, TM_LAYOUT, "alignment"},
    {"offset past the end", b_offset_past_end, TM_TRUNCATED, "offset"},
    {"offset wraps", b_offset_wrap, TM_LAYOUT, "offset"},
    {"tensors overlap", b_overlap, TM_LAYOUT, "overlap"},
    {"duplicate tensor name", b_name_dup, TM_DUPLICATE, "same name"},
    {"NUL in a tensor name", b_name_nul, TM_BAD_VALUE, "NUL"},
    {"tensor name of 65536 bytes", b_name_65536, TM_LIMIT, "name length"},
    {"fewer infos than the count", b_fewer_infos, TM_BAD_VALUE, "tensor info 1 of 3"},
    {"tensor data past the end", b_data_past_end, TM_TRUNCATED, "offset"},
};

/* The parameters are indices: Criterion copies them into a worker that is a new process
 * image, where the parent's pointers (names, builders) would point elsewhere. */
#define N_CASES (sizeof cases / sizeof cases[0])
ParameterizedTestParameters(hostile, built)
{
    static size_t index[N_CASES];
    for (size_t i = 0; i < N_CASES; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, N_CASES);
}

ParameterizedTest(size_t *i, hostile, built, .init = cap_address_space)
{
    const hostile_case *c = &cases[*i];
    tb b = {0};
    opened o;
    tm_error err;
    const uint64_t at = c->build(&b);
    tm_status st = open_exact(&b, &o, &err);
    expect_refusal(c->name, st, &err, c->code, at, c->field);
    cr_expect_null(o.f, "%s: a refused open handed out a file", c->name);
    close_exact(&o);
    tb_free(&b);
}

/* ---- what must open ---------------------------------------------------------------------- */

/* Decisions and edges that must NOT be refused, each checked for what it returns. */
Test(hostile, tensors_out_of_data_order_open)
{
    tb b = {0};
    opened o;
    tm_error err;
    tb_head(&b, 3, 2, 0);
    tb_info(&b, "second", 1, (uint64_t[]){16}, TM_TYPE_F32, 64);
    tb_info(&b, "first", 1, (uint64_t[]){16}, TM_TYPE_F32, 0);
    const size_t data_start = tb_pad(&b, 32);
    tb_zeros(&b, 128);
    b.p[data_start + 64] = 0x5a; /* first byte of "second" */
    cr_assert_eq(open_exact(&b, &o, &err), TM_OK, "%s", err.message);
    const tm_tensor *second = tm_tensor_find(o.f, "second");
    cr_assert_not_null(second);
    cr_expect_eq((const uint8_t *)second->data, o.copy + data_start + 64);
    cr_expect_eq(*(const uint8_t *)second->data, 0x5a);
    cr_expect_eq(tm_tensor_at(o.f, 0), second, "file order is info order");
    close_exact(&o);
    tb_free(&b);
}

Test(hostile, bytes_after_the_last_tensor_are_allowed)
{
    tb b = {0};
    opened o;
    tm_error err;
    tb_head(&b, 3, 1, 0);
    tb_info(&b, "w", 1, ne_1x32, TM_TYPE_F32, 0);
    const size_t data_start = tb_pad(&b, 32);
    tb_zeros(&b, 128 + 1000);
    cr_assert_eq(open_exact(&b, &o, &err), TM_OK, "%s", err.message);
    const tm_layout *l = tm_file_layout(o.f);
    cr_expect_eq(l->data_start, data_start);
    cr_expect_eq(l->tensors_end, 128);
    cr_expect_eq(l->data_size, 128 + 1000);
    close_exact(&o);
    tb_free(&b);
}

/* Names are compared by length and bytes: a key that is a prefix of another is another key,
 * and the longest allowed key and name (65535 bytes) open. */
Test(hostile, prefix_keys_and_longest_names_open)
{
    tb b = {0};
    opened o;
    tm_error err;
    char *longest = malloc(65536);
    cr_assert_not_null(longest);
    memset(longest, 'x', 65535);
    longest[65535] = '\0';
    tb_head(&b, 3, 1, 4);
    tb_kv_u32(&b, "a.b", 1);
    tb_kv_u32(&b, "a.bc", 2);
    tb_kv_u32(&b, "a", 3);
    tb_kv_u32(&b, longest, 4);
    tb_info(&b, longest, 1, ne_1x32, TM_TYPE_F32, 0);
    tb_pad(&b, 32);
    tb_zeros(&b, 128);
    cr_assert_eq(open_exact(&b, &o, &err), TM_OK, "%s", err.message);
    uint64_t v = 0;
    cr_expect_eq(tm_kv_get_uint(tm_kv_findn(o.f, "a.bc", 3), &v), TM_OK);
    cr_expect_eq(v, 1, "a.bc cut to 3 bytes is a.b");
    cr_expect_eq(tm_kv_get_uint(tm_kv_find(o.f, "a.bc"), &v), TM_OK);
    cr_expect_eq(v, 2);
    cr_expect_eq(tm_kv_get_uint(tm_kv_find(o.f, longest), &v), TM_OK);
    cr_expect_eq(v, 4);
    cr_expect_not_null(tm_tensor_findn(o.f, longest, 65535));
    cr_expect_null(tm_tensor_findn(o.f, longest, 65534));
    close_exact(&o);
    tb_free(&b);
    free(longest);
}

/* ---- the shared corpus -------------------------------------------------------------------- */

static const char *corpus_dir(void)
{
    const char *c = getenv("TM_CORPUS");
    cr_assert_not_null(c, "TM_CORPUS is not set (run the tests through make)");
    return c;
}

/* CPU time of this thread: the machine the suite runs on is shared and loaded, and wall time
 * would measure the other processes; a quadratic walk still shows as seconds of CPU. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The fastest of three opens, in milliseconds of CPU. */
static double open_ms(const char *path)
{
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        tm_file *f;
        tm_error err;
        double t0 = now_ms();
        tm_status st = tm_open(path, 0, &f, &err);
        double t = now_ms() - t0;
        cr_assert_eq(st, TM_OK, "%s: %s", path, err.message);
        tm_close(f);
        best = t < best ? t : best;
    }
    return best;
}

/* Run `tensormap info PATH`; returns the exit status (-1 for a signal) and its stderr. */
static int tool_info(const char *path, char *errbuf, size_t cap)
{
    const char *tool = getenv("TM_TOOL");
    int fds[2];
    cr_assert_not_null(tool, "TM_TOOL is not set");
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execl(tool, "tensormap", "info", path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], errbuf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    errbuf[len] = '\0';
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* REJECT: refused by the library with an offset inside the file that the message states, not
 * for want of memory, and by the tool with exit 1 and the library's message on stderr. */
static void expect_rejected_file(const char *path)
{
    tm_file *f = NULL;
    tm_error err;
    char byte_n[40], errbuf[4096];
    memset(&err, 0, sizeof err);
    tm_status st = tm_open(path, 0, &f, &err);
    cr_expect_neq(st, TM_OK, "%s opened", path);
    cr_expect_null(f);
    tm_close(f);
    if (st == TM_OK)
        return;
    cr_expect_neq(st, TM_NOMEM, "%s: refused for want of memory: %s", path, err.message);
    cr_expect_neq(err.offset, TM_NO_OFFSET, "%s: no offset: %s", path, err.message);
    tm_error heap_err; /* read into memory instead of mapped: the same verdict */
    cr_expect_eq(tm_open(path, TM_OPEN_NO_MMAP, &f, &heap_err), st, "%s with TM_OPEN_NO_MMAP",
                 path);
    cr_expect_eq(heap_err.offset, err.offset);
    cr_expect_str_eq(heap_err.message, err.message);
    tm_close(f);
    /* A truncated download whose header is whole: the library refuses it, but the tool opens
     * it with TM_OPEN_TRUNCATED to read its header, says it is cut off, and info exits 1, the
     * verdict EXPECTED.tsv gives it (its tensors are refused when read: tests/test_truncated.c). */
    if (st == TM_TRUNCATED && tm_open(path, TM_OPEN_TRUNCATED, &f, &heap_err) == TM_OK) {
        tm_close(f);
        int code = tool_info(path, errbuf, sizeof errbuf);
        cr_expect_eq(code, 1, "%s: tensormap info exits %d: %s", path, code, errbuf);
        cr_expect(strstr(errbuf, "the file is cut off"), "%s: %s", path, errbuf);
        return;
    }
    snprintf(byte_n, sizeof byte_n, "byte %" PRIu64, err.offset);
    int code = tool_info(path, errbuf, sizeof errbuf);
    cr_expect_eq(code, 1, "%s: tensormap info exits %d", path, code);
    cr_expect(strstr(errbuf, err.message), "%s: stderr lacks the library's message: %s", path,
              errbuf);
    cr_expect(strstr(errbuf, byte_n), "%s: stderr does not say '%s': %s", path, byte_n, errbuf);
}

/* The field a corpus file's refusal must name, where this test knows the file (EXPECTED.tsv
 * describes each in prose only); files it does not know are held to the offset alone. */
static const struct {
    const char *file, *field;
} corpus_fields[] = {
    {"bad_magic", "GGUF"},          {"version_0", "version"},
    {"big_endian", "big-endian"},   {"n_tensors_max", "tensor count"},
    {"key_len_max", "key length"},  {"string_len_2p40", "string length"},
    {"duplicate_key", "same key"},  {"array_count_2p62", "count"},
    {"alignment_0", "alignment"},   {"n_dims_5", "n_dims 5"},
    {"pad_wrap", "overflow"},       {"type_removed_4", "type 4"},
    {"data_past_eof", "offset"},    {"overlap", "overlap"},
};

Test(hostile, corpus_verdicts, .init = cap_address_space, .timeout = 120)
{
    char line[1024], path[4096];
    snprintf(path, sizeof path, "%s/hostile/EXPECTED.tsv", corpus_dir());
    FILE *tsv = fopen(path, "r");
    cr_assert_not_null(tsv, "cannot read %s", path);
    unsigned n_reject = 0, n_accept = 0;
    while (fgets(line, sizeof line, tsv)) {
        char *file = strtok(line, "\t\n"), *verdict = strtok(NULL, "\t\n");
        if (!file || !verdict || strcmp(file, "file") == 0)
            continue;
        snprintf(path, sizeof path, "%s/hostile/%s.gguf", corpus_dir(), file);
        if (strcmp(verdict, "ACCEPT") == 0) {
            double ms = open_ms(path);
            cr_expect_lt(ms, OPEN_BOUND_MS, "%s opens in %.1f ms", file, ms);
            char errbuf[4096];
            cr_expect_eq(tool_info(path, errbuf, sizeof errbuf), 0, "%s: %s", file, errbuf);
            n_accept++;
            continue;
        }
        cr_assert_str_eq(verdict, "REJECT", "unknown verdict for %s", file);
        expect_rejected_file(path);
        for (size_t i = 0; i < sizeof corpus_fields / sizeof corpus_fields[0]; i++) {
            tm_file *f;
            tm_error err;
            if (strcmp(corpus_fields[i].file, file) != 0 || tm_open(path, 0, &f, &err) == TM_OK)
                continue;
            cr_expect(names_field(err.message, corpus_fields[i].field),
                      "%s: the message does not name '%s': %s", file, corpus_fields[i].field,
                      err.message);
        }
        n_reject++;
    }
    fclose(tsv);
    cr_expect_geq(n_reject + n_accept, 15, "EXPECTED.tsv lists %u files", n_reject + n_accept);
}

Test(hostile, damaged_files_are_refused_with_entry_and_offset, .init = cap_address_space)
{
    static const char *const files[] = {"vocab-bert-bge", "vocab-llama-spm", "vocab-phi-3"};
    char path[4096];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tm_file *f;
        tm_error err;
        snprintf(path, sizeof path, "%s/damaged/%s.gguf", corpus_dir(), files[i]);
        expect_rejected_file(path);
        if (tm_open(path, 0, &f, &err) != TM_OK)
            cr_expect(strstr(err.message, "entry") || strstr(err.message, "tensor info"),
                      "%s: the message does not name the entry: %s", files[i], err.message);
    }
}

/* ---- scale: ggml's duplicate checks are quadratic (4.9 s for 80,000 keys) ---------------- */

static void write_image(const tb *b, char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/tm_hostile_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tb_write(b, path), 0);
}

Test(hostile, eighty_thousand_keys_open_fast)
{
    tb b = {0};
    char key[32], path[64];
    tb_head(&b, 3, 0, 80000);
    for (unsigned i = 0; i < 80000; i++) {
        snprintf(key, sizeof key, "k.%u", i * 2654435761u); /* distinct: an odd multiplier */
        tb_kv_u32(&b, key, i);
    }
    write_image(&b, path, sizeof path);
    double ms = open_ms(path);
    cr_expect_lt(ms, OPEN_BOUND_MS, "80,000 keys open in %.1f ms", ms);
    unlink(path);
    tb_free(&b);
}

Test(hostile, fifty_thousand_tensors_open_fast)
{
    tb b = {0};
    char name[32], path[64];
    tb_head(&b, 3, 50000, 0);
    for (unsigned i = 0; i < 50000; i++) {
        snprintf(name, sizeof name, "blk.%u.w", i);
        tb_info(&b, name, 1, (uint64_t[]){8}, TM_TYPE_F32, (uint64_t)i * 32);
    }
    tb_pad(&b, 32);
    tb_zeros(&b, 50000 * 32);
    write_image(&b, path, sizeof path);
    double ms = open_ms(path);
    cr_expect_lt(ms, OPEN_BOUND_MS, "50,000 tensors open in %.1f ms", ms);
    unlink(path);
    tb_free(&b);
}

/* Memory after open is a small multiple of the header: the index costs about 100 bytes an
 * entry and the smallest entry is 14 bytes (a key of one byte with a u8) or 33 (a tensor info),
 * so 8 times the header is the bound, for the two shapes of header that cost the most.
 * mallinfo2 does not see ASan's allocator, so this runs outside it. */
static void expect_memory_bounded(const tb *b, size_t header_bytes)
{
    opened o;
    tm_error err;
    struct mallinfo2 before = mallinfo2();
    cr_assert_eq(open_exact(b, &o, &err), TM_OK, "%s", err.message);
    struct mallinfo2 after = mallinfo2();
    const size_t grown = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
    cr_expect_lt(grown - b->len, 8 * header_bytes, "open of a %zu-byte header took %zu bytes",
                 header_bytes, grown - b->len);
    cr_log_info("%zu-byte header: %zu bytes after open", header_bytes, grown - b->len);
    close_exact(&o);
}

Test(hostile, memory_follows_the_header)
{
    if (UNDER_ASAN)
        cr_skip_test("mallinfo2 does not see the sanitizer's heap");
    tb keys = {0}, infos = {0};
    char name[32];
    tb_head(&keys, 3, 0, 80000);
    for (unsigned i = 0; i < 80000; i++) {
        snprintf(name, sizeof name, "%x", i);
        tb_kv_head(&keys, name, TM_V_U8);
        tb_u8(&keys, 1);
    }
    expect_memory_bounded(&keys, keys.len);
    tb_head(&infos, 3, 50000, 0);
    for (unsigned i = 0; i < 50000; i++) {
        snprintf(name, sizeof name, "%x", i);
        tb_info(&infos, name, 1, (uint64_t[]){1}, TM_TYPE_I8, i * 32u);
    }
    const size_t header_bytes = infos.len;
    tb_pad(&infos, 32);
    tb_zeros(&infos, 50000 * 32);
    expect_memory_bounded(&infos, header_bytes);
    tb_free(&keys);
    tb_free(&infos);
}

/* ---- alignment 1: blocks at odd addresses ---------------------------------------------------
 * A file may declare general.alignment = 1, so a block's fields can sit at any address. Every
 * decodable type, on every instruction-set path this machine has, is decoded from offsets
 * cycling through the residues 1, 2 and 3 mod 4 and compared with a decode of the same bytes
 * from an aligned copy. Outside the sanitizers this pins that alignment changes nothing; under
 * `make SAN=1 test` (-fsanitize=alignment, no recovery) any misaligned typed read aborts it. */
Test(hostile, odd_offsets_under_alignment_1_decode_as_aligned_copies)
{
    enum { N_BLOCKS = 2, MAX_TYPES = 64 };
    char path[64], name[16];
    tm_writer *w;
    tm_error err;
    uint8_t *bytes[MAX_TYPES] = {0};
    uint64_t offset = 0, seed = 0x9e3779b97f4a7c15u;
    unsigned n_types = 0, residue = 1;
    const uint32_t one = 1;

    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_set_alignment(w, 1, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &one, &err), TM_OK);
    for (unsigned t = 0; t < MAX_TYPES; t++) {
        const uint32_t be = tm_type_block_elems((tm_type)t), bb = tm_type_block_bytes((tm_type)t);
        if (!tm_type_can_dequant((tm_type)t) || be == 0 || bb == 0)
            continue;
        bytes[t] = malloc((size_t)bb * N_BLOCKS);
        cr_assert_not_null(bytes[t]);
        for (size_t i = 0; i < (size_t)bb * N_BLOCKS; i++) { /* xorshift: any bit pattern */
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            bytes[t][i] = (uint8_t)seed;
        }
        while (offset % 4 != residue)
            offset++;
        residue = residue % 3 + 1;
        snprintf(name, sizeof name, "t%u", t);
        const uint64_t ne[1] = {(uint64_t)be * N_BLOCKS};
        cr_assert_eq(tm_writer_tensor_at(w, name, (tm_type)t, 1, ne, offset, bytes[t], &err),
                     TM_OK, "type %u: %s", t, err.message);
        offset += (uint64_t)bb * N_BLOCKS;
        n_types++;
    }
    cr_assert_geq(n_types, 13, "only %u decodable types", n_types);
    snprintf(path, sizeof path, "/tmp/tm_align1_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);

    tm_file *f;
    cr_assert_eq(tm_open(path, 0, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_file_layout(f)->alignment, 1);
    unsigned odd = 0;
    for (unsigned k = 0; tm_isa_built(k); k++) {
        if (!tm_isa_available(tm_isa_built(k)))
            continue;
        cr_assert_eq(tm_set_isa(tm_isa_built(k), &err), TM_OK, "%s", err.message);
        for (unsigned t = 0; t < MAX_TYPES; t++) {
            if (!bytes[t])
                continue;
            snprintf(name, sizeof name, "t%u", t);
            const tm_tensor *tt = tm_tensor_find(f, name);
            cr_assert_not_null(tt);
            odd += (uintptr_t)tt->data % 2;
            const size_t n = (size_t)tt->n_elements, nb = (size_t)tt->n_bytes;
            float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
            void *aligned = aligned_alloc(64, (nb + 63) / 64 * 64);
            cr_assert(got && want && aligned);
            memcpy(aligned, tt->data, nb);
            cr_assert_eq(tm_dequant_raw(tt->type, aligned, n, want, &err), TM_OK, "%s",
                         err.message);
            cr_assert_eq(tm_dequant_tensor(tt, got, 1, &err), TM_OK, "%s", err.message);
            cr_expect_eq(memcmp(got, want, n * sizeof *got), 0, "%s at an odd offset on %s",
                         tm_type_name(tt->type), tm_isa_built(k));
            free(got);
            free(want);
            free(aligned);
        }
    }
    cr_expect_gt(odd, 0, "no tensor sat at an odd address");
    tm_close(f);
    unlink(path);
    for (unsigned t = 0; t < MAX_TYPES; t++)
        free(bytes[t]);
}
