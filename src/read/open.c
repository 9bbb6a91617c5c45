/* Opening and closing: get the bytes (io/), recognise the format, walk it, index it. */
#include "../common/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* The first bytes of an unrecognised file, printable: "GGML", "\x00\x01PK". */
static void show_magic(char *buf, size_t cap, const uint8_t *p, uint64_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (uint64_t i = 0; i < n && k + 5 < cap; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
            buf[k++] = (char)p[i];
        else
            k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", p[i]);
        buf[k] = '\0';
    }
}

/* maps[0] is set: walk it with the parser its first bytes call for, then index it. */
static tm_status parse(tm_file *f, unsigned flags, tm_error *err)
{
    const uint8_t *p = f->maps[0].base;
    const uint64_t size = f->maps[0].size; /* a remote head holds at least its first 4 KiB */
    if (size == 0)
        return tm__fail(err, TM_TRUNCATED, 0, "the file is empty (0 bytes)");
    tm_status st;
    if (size >= 4 && memcmp(p, "GGUF", 4) == 0) {
        st = tm__gguf_parse(f, flags, err);
    } else if (tm__safetensors_sniff(p, f->maps[0].avail)) { /* the bytes there, not the size */
        st = tm__safetensors_parse(f, flags, err);
    } else if (size < 4) {
        return tm__fail(err, TM_TRUNCATED, 0,
                        "the file is only %" PRIu64
                        " byte%s: too short for a GGUF or safetensors head",
                        (uint64_t)size, size == 1 ? "" : "s");
    } else {
        char magic[24];
        show_magic(magic, sizeof magic, p, 4);
        return tm__fail(err, TM_NOT_MODEL, 0,
                        "this file opens \"%s\" and a GGUF file opens \"GGUF\" (nor is it "
                        "safetensors)",
                        magic);
    }
    return st == TM_OK ? tm__index_build(f, err) : st;
}

/* The common tail of both openers: f->maps[0] is filled in. */
static tm_status finish_open(tm_file *f, unsigned flags, tm_file **out, tm_error *err)
{
    f->layout.n_shards = 1;
    tm_status st = parse(f, flags, err);
    if (st != TM_OK) {
        tm_close(f);
        return st;
    }
    for (uint64_t i = 0; i < f->layout.n_tensors; i++)
        f->tensors[i].file = f;
    *out = f;
    return TM_OK;
}

static tm_file *new_file(tm_error *err)
{
    tm_file *f = calloc(1, sizeof *f);
    if (f)
        f->maps = calloc(1, sizeof *f->maps);
    if (!f || !f->maps || tm__readahead_new(f, err) != TM_OK) {
        if (f)
            free(f->maps);
        free(f);
        tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
        return NULL;
    }
    return f;
}

/* Flag bits this library knows; any other is refused, so that a caller built against a newer
 * header that asks for a behaviour this copy lacks is told so rather than silently ignored. */
#define KNOWN_FLAGS                                                                            \
    ((unsigned)TM_OPEN_NO_MMAP | (unsigned)TM_OPEN_ALL_SHARDS | (unsigned)TM_OPEN_ONE_SHARD |  \
     (unsigned)TM_OPEN_TRUNCATED)

static tm_status check_flags(const char *fn, unsigned flags, tm_error *err)
{
    if (flags & ~KNOWN_FLAGS)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s: unknown flag bits 0x%x", fn,
                        flags & ~KNOWN_FLAGS);
    return TM_OK;
}

tm_status tm_open(const char *path, unsigned flags, tm_file **out, tm_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_open: path and out must be set");
    if (check_flags("tm_open", flags, err) != TM_OK)
        return TM_INVALID_ARG;
    if ((flags & TM_OPEN_ALL_SHARDS) && (flags & TM_OPEN_ONE_SHARD))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_open: TM_OPEN_ALL_SHARDS and TM_OPEN_ONE_SHARD contradict each other");
    tm_file *f = new_file(err);
    if (!f)
        return TM_NOMEM;
    const tm__source_opts o = {.flags = flags, .accept = tm__looks_like_model,
                               .budget = &f->head_budget};
    tm_status st = tm__source_open(&f->maps[0], path, &o, err);
    if (st != TM_OK) {
        tm_close(f);
        return st;
    }
    return finish_open(f, flags, out, err);
}

tm_status tm_open_buffer(const void *buf, size_t len, unsigned flags, tm_file **out,
                         tm_error *err)
{
    if (out)
        *out = NULL;
    if ((!buf && len) || !out)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_open_buffer: buf (when len > 0) and out must be set");
    if (check_flags("tm_open_buffer", flags, err) != TM_OK)
        return TM_INVALID_ARG;
    tm_file *f = new_file(err);
    if (!f)
        return TM_NOMEM;
    tm__source_buffer(&f->maps[0], buf, len);
    return finish_open(f, flags, out, err);
}

void tm_close(tm_file *f)
{
    if (!f)
        return;
    tm__readahead_free(f->readahead); /* first: its thread reads the maps */
    if (f->free_owned)
        f->free_owned(f->owned);
    tm__hash_free(&f->kv_index);
    tm__hash_free(&f->tensor_index);
    free(f->kvs);
    free(f->tensors);
    const uint32_t n_maps = f->layout.n_shards ? f->layout.n_shards : 1;
    for (uint32_t i = 0; f->maps && i < n_maps; i++)
        tm__source_close(&f->maps[i]);
    free(f->maps);
    free(f->shard_layouts);
    free(f);
}
