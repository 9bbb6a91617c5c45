/* Helpers the inspecting commands share: shapes, block numbers, offset order, and decoding a
 * tensor in bounded chunks. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void cli_shape(const tm_tensor *t, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < t->n_dims && at < size; d++) {
        int n = snprintf(buf + at, size - at, d ? " x %" PRIu64 : "%" PRIu64, t->ne[d]);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    if (t->n_dims == 0)
        snprintf(buf, size, "scalar");
}

void cli_shape_of(const tm_file *f, const tm_tensor *t, char *buf, size_t size)
{
    if (tm_file_layout(f)->format != TM_FORMAT_SAFETENSORS) {
        cli_shape(t, buf, size);
        return;
    }
    uint64_t shape[4];
    uint32_t n = tm_tensor_shape(t, shape);
    size_t at = (size_t)snprintf(buf, size, "[");
    for (uint32_t d = 0; d < n && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, d ? ", %" PRIu64 : "%" PRIu64, shape[d]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

/* Where "MARK" followed by digits and '.' starts a component of name, or -1. */
static int64_t find_block_mark(tm_str name, const char *mark, uint64_t *digits)
{
    uint64_t m = strlen(mark);
    for (uint64_t i = 0; i + m < name.len; i++) {
        if ((i > 0 && name.ptr[i - 1] != '.') || memcmp(name.ptr + i, mark, m) != 0)
            continue;
        uint64_t d = 0;
        while (i + m + d < name.len && name.ptr[i + m + d] >= '0' && name.ptr[i + m + d] <= '9')
            d++;
        if (d > 0 && d <= 18 && i + m + d < name.len && name.ptr[i + m + d] == '.') {
            *digits = d;
            return (int64_t)(i + m);
        }
    }
    return -1;
}

static bool block_of(tm_str name, cli_block_name *out)
{
    static const char *const marks[] = {"blk.", "layers.", "h."};
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
        uint64_t digits = 0;
        int64_t at = find_block_mark(name, marks[k], &digits);
        if (at < 0)
            continue;
        uint64_t n = 0;
        for (uint64_t i = 0; i < digits; i++)
            n = n * 10 + (uint64_t)(name.ptr[(uint64_t)at + i] - '0');
        size_t len = (size_t)(name.len - digits + 1);
        char *g = malloc(len + 1);
        if (!g)
            return false;
        memcpy(g, name.ptr, (size_t)at);
        g[at] = 'N';
        memcpy(g + at + 1, name.ptr + (uint64_t)at + digits,
               (size_t)(name.len - (uint64_t)at - digits));
        g[len] = '\0';
        *out = (cli_block_name){true, n, g, (size_t)at + 2};
        return true;
    }
    char *g = strndup(name.ptr, (size_t)name.len);
    *out = (cli_block_name){false, 0, g, 0};
    return g != NULL;
}

cli_block_name *cli_block_names(const tm_file *f)
{
    uint64_t n = tm_n_tensors(f);
    cli_block_name *names = calloc((size_t)(n ? n : 1), sizeof *names);
    for (uint64_t i = 0; names && i < n; i++) {
        if (!block_of(tm_tensor_at(f, i)->name, &names[i])) {
            cli_block_names_free(names, i);
            return NULL;
        }
    }
    return names;
}

void cli_block_names_free(cli_block_name *names, uint64_t n)
{
    for (uint64_t i = 0; names && i < n; i++)
        free(names[i].generic);
    free(names);
}

static const tm_file *sort_file; /* qsort has no context argument in C11 */

static int by_offset(const void *a, const void *b)
{
    uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;
    const tm_tensor *ti = tm_tensor_at(sort_file, i), *tj = tm_tensor_at(sort_file, j);
    if (ti->shard != tj->shard)
        return ti->shard < tj->shard ? -1 : 1;
    if (ti->offset != tj->offset)
        return ti->offset < tj->offset ? -1 : 1;
    return i < j ? -1 : i > j;
}

uint64_t *cli_offset_order(const tm_file *f)
{
    uint64_t n = tm_n_tensors(f);
    uint64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    sort_file = f;
    qsort(order, (size_t)n, sizeof *order, by_offset);
    return order;
}

bool cli_align_up(uint64_t n, uint64_t a, uint64_t *out)
{
    if (a <= 1) {
        *out = n;
        return true;
    }
    if (n > UINT64_MAX - (a - 1))
        return false;
    *out = (n + a - 1) & ~(a - 1);
    return true;
}

void cli_prefetch(const tm_tensor *t)
{
    if (!t || !tm_type_can_dequant(t->type))
        return;
    const tm_prefetch_range whole = {t, 0, TM_PREFETCH_TO_END};
    (void)tm_prefetch(t->file, &whole, 1, NULL, NULL);
}

size_t cli_chunk_elems(const tm_tensor *t)
{
    size_t block = tm_type_block_elems(t->type);
    if (block == 0)
        block = 1;
    /* A remote tensor's chunk is one fetch: larger, so that its bytes come in several ranges
     * at once (the library splits a read of 8 MiB or more) rather than one small range at a
     * time, each waiting a round trip. */
    size_t want = tm_file_is_remote(t->file) ? (size_t)1 << 24 : (size_t)1 << 20;
    return want < block ? block : want / block * block;
}

const uint8_t *cli_tensor_bytes(const tm_tensor *t, uint64_t off, uint64_t len, uint8_t *scratch,
                                tm_error *err)
{
    if (t->data)
        return (const uint8_t *)t->data + off;
    return tm_tensor_fetch(t, off, len, scratch, err) == TM_OK ? scratch : NULL;
}

const tm_tensor *cli_tensor_in_memory(const tm_tensor *t, tm_tensor *copy, void **bytes,
                                     tm_error *err)
{
    *bytes = NULL;
    if (t->data || !tm_type_can_dequant(t->type))
        return t; /* mapped already, or never decoded (the decode says why) */
    if (!(*bytes = malloc(t->n_bytes ? (size_t)t->n_bytes : 1))) {
        snprintf(err->message, sizeof err->message, "out of memory for the tensor's %llu bytes",
                 (unsigned long long)t->n_bytes);
        err->code = TM_NOMEM;
        return NULL;
    }
    if (tm_tensor_fetch(t, 0, t->n_bytes, *bytes, err) != TM_OK) {
        free(*bytes);
        *bytes = NULL;
        return NULL;
    }
    *copy = *t;
    copy->data = *bytes;
    return copy;
}

int cli_decode_chunks(const tm_tensor *t, uint64_t first, uint64_t n, float *buf, size_t chunk,
                      cli_chunk_fn fn, void *ctx, tm_error *err)
{
    for (uint64_t done = 0; done < n;) {
        size_t take = n - done < chunk ? (size_t)(n - done) : chunk;
        if (tm_dequant_elements(t, first + done, take, buf, err) != TM_OK)
            return -1;
        int rc = fn(buf, take, ctx);
        if (rc != 0)
            return rc;
        done += take;
    }
    return 0;
}
