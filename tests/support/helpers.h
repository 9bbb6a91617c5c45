/* A raw byte builder for GGUF images in tests, above all MALFORMED ones: it writes exactly the
 * fields it is told to, checks nothing, and reports where each field landed, so a test can
 * assert the exact byte offset of the field it broke without asking the parser.
 *
 *     tb b = {0};
 *     tb_head(&b, 3, 0, 1);                          // "GGUF", version, n_tensors, n_kv
 *     size_t type_at = tb_kv_head(&b, "k", 99);      // key, then value type 99 (bad)
 *     ... tb_open(&b, &f, &err) == TM_BAD_VALUE, err.offset == type_at ...
 *     tb_free(&b);
 *
 * Every tb_* writer returns the offset at which it started writing (the kv/tensor writers
 * return the offset of the field named in their comment). All integers are little-endian.
 * Out of memory aborts: these are tests. */
#ifndef TM_TESTS_HELPERS_H
#define TM_TESTS_HELPERS_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tb {
    uint8_t *p;
    size_t len, cap;
} tb;

void tb_free(tb *b);

/* Plain fields. */
size_t tb_u8(tb *b, uint8_t v);
size_t tb_u32(tb *b, uint32_t v);
size_t tb_u64(tb *b, uint64_t v);
size_t tb_bytes(tb *b, const void *p, size_t n);
size_t tb_zeros(tb *b, size_t n);
/* A GGUF string: u64 length, then the bytes (tb_str: strlen(s) of them). Returns the offset
 * of the length field. */
size_t tb_strn(tb *b, const void *s, size_t n);
size_t tb_str(tb *b, const char *s);
/* Zeros up to the next multiple of alignment; returns the new length. */
size_t tb_pad(tb *b, size_t alignment);

/* The 24-byte head: "GGUF", version, n_tensors, n_kv. Returns 0. */
size_t tb_head(tb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);

/* A metadata entry's key and value type; the value is the caller's to write. Returns the
 * offset of the value type field (the key starts 8 + strlen(key) bytes before it). */
size_t tb_kv_head(tb *b, const char *key, uint32_t type);
/* Whole entries. Each returns the offset of the entry (its key length field). */
size_t tb_kv_u32(tb *b, const char *key, uint32_t v);
size_t tb_kv_str(tb *b, const char *key, const char *v);
/* An array entry's head: key, type 9, element type, count; elements are the caller's. Returns
 * the offset of the count field. */
size_t tb_kv_arr_head(tb *b, const char *key, uint32_t elem_type, uint64_t count);

/* A tensor info: name, n_dims, ne[0..n_dims), type, offset. Returns the offset of the info
 * (its name length field); the offset field is the last 8 bytes written. */
size_t tb_info(tb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
               uint64_t offset);

/* tm_open_buffer on the bytes built so far (they must outlive the tm_file). */
tm_status tb_open(const tb *b, tm_file **f, tm_error *err);
/* Write the bytes to path; 0 on success. */
int tb_write(const tb *b, const char *path);

#endif
