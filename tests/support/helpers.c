/* The raw GGUF byte builder of helpers.h. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_free(tb *b)
{
    free(b->p);
    *b = (tb){0};
}

size_t tb_bytes(tb *b, const void *p, size_t n)
{
    const size_t at = b->len;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *grown = realloc(b->p, cap);
        if (!grown)
            abort();
        b->p = grown;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return at;
}

/* Little-endian whatever the host. */
static size_t put_le(tb *b, uint64_t v, unsigned n)
{
    uint8_t bytes[8];
    for (unsigned i = 0; i < n; i++)
        bytes[i] = (uint8_t)(v >> (8 * i));
    return tb_bytes(b, bytes, n);
}

size_t tb_u8(tb *b, uint8_t v) { return put_le(b, v, 1); }
size_t tb_u32(tb *b, uint32_t v) { return put_le(b, v, 4); }
size_t tb_u64(tb *b, uint64_t v) { return put_le(b, v, 8); }

size_t tb_zeros(tb *b, size_t n)
{
    static const uint8_t zeros[4096];
    const size_t at = b->len;
    for (size_t k; n > 0; n -= k) {
        k = n < sizeof zeros ? n : sizeof zeros;
        tb_bytes(b, zeros, k);
    }
    return at;
}

size_t tb_strn(tb *b, const void *s, size_t n)
{
    const size_t at = tb_u64(b, n);
    tb_bytes(b, s, n);
    return at;
}

size_t tb_str(tb *b, const char *s) { return tb_strn(b, s, strlen(s)); }

size_t tb_pad(tb *b, size_t alignment)
{
    tb_zeros(b, (alignment - b->len % alignment) % alignment);
    return b->len;
}

size_t tb_head(tb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    const size_t at = tb_bytes(b, "GGUF", 4);
    tb_u32(b, version);
    tb_u64(b, n_tensors);
    tb_u64(b, n_kv);
    return at;
}

size_t tb_kv_head(tb *b, const char *key, uint32_t type)
{
    tb_str(b, key);
    return tb_u32(b, type);
}

size_t tb_kv_u32(tb *b, const char *key, uint32_t v)
{
    const size_t at = b->len;
    tb_kv_head(b, key, TM_V_U32);
    tb_u32(b, v);
    return at;
}

size_t tb_kv_str(tb *b, const char *key, const char *v)
{
    const size_t at = b->len;
    tb_kv_head(b, key, TM_V_STRING);
    tb_str(b, v);
    return at;
}

size_t tb_kv_arr_head(tb *b, const char *key, uint32_t elem_type, uint64_t count)
{
    tb_kv_head(b, key, TM_V_ARRAY);
    tb_u32(b, elem_type);
    return tb_u64(b, count);
}

size_t tb_info(tb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
               uint64_t offset)
{
    const size_t at = tb_str(b, name);
    tb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        tb_u64(b, ne[d]);
    tb_u32(b, type);
    tb_u64(b, offset);
    return at;
}

tm_status tb_open(const tb *b, tm_file **f, tm_error *err)
{
    return tm_open_buffer(b->p, b->len, TM_OPEN_DEFAULT, f, err);
}

int tb_write(const tb *b, const char *path)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    const size_t n = b->len ? fwrite(b->p, 1, b->len, fp) : 0;
    return (fclose(fp) == 0 && n == b->len) ? 0 : -1;
}
