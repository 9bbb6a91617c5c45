/* A safetensors writer that streams: the caller declares every tensor (name, dtype, shape) and
 * the __metadata__ strings first, so that the header with every offset can be written before
 * any data; then the tensors' bytes follow in the order declared, in pieces of any size, and
 * nothing larger than the header is ever held in memory. The layout is the reference writer's
 * (Hugging Face safetensors): the JSON header, "__metadata__" first, padded with spaces to a
 * multiple of 8 bytes; tensors contiguous from offset 0 in the order declared. The header's
 * 8-byte alignment keeps every tensor aligned to its element size as long as tensors of larger
 * elements come first (an export writes one dtype, so it always holds).
 *
 * The file is written to a temporary file beside the destination and renamed into place only
 * once every declared byte has arrived (tm_outfile): a failed or abandoned write leaves no
 * file and never touches what was at the path before. */
#include "../common/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

struct tm_st_writer {
    json_t *header;          /* {"__metadata__": {...}, name: {dtype, shape, data_offsets}} */
    json_t *meta;            /* inside header once the first entry is added */
    uint64_t data_size;      /* sum of the declared tensors' bytes */
    uint64_t written;        /* data bytes written so far (after tm_st_writer_begin) */
    tm_outfile *out;         /* between tm_st_writer_begin and the end */
};

/* Every call that returns a status refuses a NULL writer (and NULL strings or arrays it needs)
 * with TM_INVALID_ARG naming the call, as the GGUF writer does. */
static tm_status null_arg(tm_error *err, const char *fn, const char *what)
{
    return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s: %s is NULL", fn, what);
}

tm_status tm_st_writer_new(tm_st_writer **out, tm_error *err)
{
    if (!out)
        return null_arg(err, __func__, "out");
    *out = NULL;
    tm_st_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->header = json_object())) {
        free(w);
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for a safetensors writer");
    }
    *out = w;
    return TM_OK;
}

void tm_st_writer_free(tm_st_writer *w)
{
    if (!w)
        return;
    tm_outfile_abort(w->out);
    json_decref(w->header);
    free(w);
}

static bool utf8_ok(const char *s)
{
    json_t *j = json_string(s); /* NULL for invalid UTF-8 */
    json_decref(j);
    return j != NULL;
}

static tm_status check_declaring(const tm_st_writer *w, const char *what, const char *name,
                                 tm_error *err)
{
    char q[96];
    tm__quote(q, sizeof q, name, strlen(name));
    if (w->out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s %s: the header is written "
                        "already; declare everything before tm_st_writer_begin", what, q);
    if (!utf8_ok(name))
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET, "%s %s is not valid UTF-8", what, q);
    return TM_OK;
}

tm_status tm_st_writer_meta(tm_st_writer *w, const char *key, const char *value, tm_error *err)
{
    if (!w || !key)
        return null_arg(err, __func__, w ? "the key" : "the writer");
    tm_status st = check_declaring(w, "metadata key", key, err);
    if (st != TM_OK)
        return st;
    char q[96];
    tm__quote(q, sizeof q, key, strlen(key));
    if (json_object_size(w->header) > (w->meta ? 1u : 0u))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "metadata key %s: add metadata "
                        "before the first tensor (the reference writes it first)", q);
    if (!w->meta) {
        if (!(w->meta = json_object()) || json_object_set_new(w->header, "__metadata__", w->meta))
            return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for metadata key %s", q);
    }
    if (json_object_get(w->meta, key))
        return tm__fail(err, TM_DUPLICATE, TM_NO_OFFSET, "metadata key %s is set twice", q);
    json_t *v = json_string(value);
    if (!v)
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "metadata key %s: its value is not valid UTF-8", q);
    if (json_object_set_new(w->meta, key, v))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for metadata key %s", q);
    return TM_OK;
}

tm_status tm_st_writer_tensor(tm_st_writer *w, const char *name, tm_type dtype, uint32_t n_dims,
                              const uint64_t *shape, tm_error *err)
{
    if (!w || !name || (n_dims > 0 && !shape))
        return null_arg(err, __func__, !w ? "the writer" : !name ? "the name" : "the shape");
    tm_status st = check_declaring(w, "tensor", name, err);
    if (st != TM_OK)
        return st;
    char q[96];
    tm__quote(q, sizeof q, name, strlen(name));
    const char *dt = tm__st_dtype_name(dtype);
    if (!dt)
        return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET, "tensor %s: type %s has no "
                        "safetensors dtype", q, tm_type_name(dtype) ? tm_type_name(dtype) : "?");
    if (n_dims > TM_MAX_DIMS)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %s: %u dimensions, at most %d",
                        q, n_dims, TM_MAX_DIMS);
    if (strcmp(name, "__metadata__") == 0 || json_object_get(w->header, name))
        return tm__fail(err, TM_DUPLICATE, TM_NO_OFFSET, "tensor %s is %s", q,
                        strcmp(name, "__metadata__") == 0 ? "the metadata's reserved name"
                                                          : "declared twice");
    uint64_t n_bytes = tm_type_block_bytes(dtype), end;
    for (uint32_t d = 0; d < n_dims; d++)
        if (!tm__mul_u64(n_bytes, shape[d], &n_bytes))
            n_bytes = UINT64_MAX;
    if (n_bytes == UINT64_MAX || !tm__add_u64(w->data_size, n_bytes, &end) ||
        end > (uint64_t)INT64_MAX)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "tensor %s: its bytes overflow 63 bits", q);
    json_t *dims = json_array(), *entry = NULL;
    for (uint32_t d = 0; dims && d < n_dims; d++)
        if (json_array_append_new(dims, json_integer((json_int_t)shape[d]))) {
            json_decref(dims);
            dims = NULL;
        }
    if (dims)
        entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dt, "shape", dims, "data_offsets",
                          (json_int_t)w->data_size, (json_int_t)end);
    if (!entry || json_object_set_new(w->header, name, entry))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for tensor %s", q);
    w->data_size = end;
    return TM_OK;
}

uint64_t tm_st_writer_data_size(const tm_st_writer *w) { return w ? w->data_size : 0; }

const char *tm_st_writer_temp_path(const tm_st_writer *w)
{
    return w && w->out ? tm_outfile_temp_path(w->out) : NULL;
}

static tm_status write_all(tm_st_writer *w, const uint8_t *p, size_t n, tm_error *err)
{
    const int fd = tm_outfile_fd(w->out);
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return tm__fail(err, TM_IO, TM_NO_OFFSET, "writing the safetensors file: %s",
                            k < 0 ? strerror(errno) : "no progress");
        p += k;
        n -= (size_t)k;
    }
    return TM_OK;
}

tm_status tm_st_writer_begin(tm_st_writer *w, const char *path, tm_error *err)
{
    if (!w || !path)
        return null_arg(err, __func__, w ? "the path" : "the writer");
    if (w->out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_st_writer_begin called twice");
    char *json = json_dumps(w->header, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!json)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for the header");
    const size_t len = strlen(json), padded = (len + 7) & ~(size_t)7;
    uint8_t *head = malloc(8 + padded);
    if (!head) {
        free(json);
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for the header");
    }
    for (unsigned i = 0; i < 8; i++)
        head[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(head + 8, json, len);
    memset(head + 8 + len, ' ', padded - len);
    free(json);
    tm_status st = tm_outfile_open(&w->out, path, err);
    if (st == TM_OK)
        st = write_all(w, head, 8 + padded, err);
    free(head);
    return st;
}

tm_status tm_st_writer_write(tm_st_writer *w, const void *bytes, size_t n, tm_error *err)
{
    if (!w || (n > 0 && !bytes))
        return null_arg(err, __func__, w ? "bytes" : "the writer");
    if (!w->out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_st_writer_write before tm_st_writer_begin");
    if (n > w->data_size - w->written)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%zu more bytes of data than the "
                        "%" PRIu64 " the tensors declare", n - (size_t)(w->data_size - w->written),
                        w->data_size);
    tm_status st = write_all(w, bytes, n, err);
    if (st == TM_OK)
        w->written += n;
    return st;
}

tm_status tm_st_writer_finish(tm_st_writer *w, tm_error *err)
{
    tm_status st;
    if (!w)
        return null_arg(err, __func__, "the writer");
    if (!w->out)
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                      "tm_st_writer_finish before tm_st_writer_begin");
    else if (w->written != w->data_size)
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "only %" PRIu64 " of the %" PRIu64
                      " data bytes the tensors declare were written", w->written, w->data_size);
    else {
        st = tm_outfile_commit(w->out, err);
        w->out = NULL; /* committed, or removed by the failed commit */
    }
    tm_st_writer_free(w);
    return st;
}
