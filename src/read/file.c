/* The getters for an open file: its layout, its tensors, its shards. */
#include "../common/internal.h"

const tm_layout *tm_file_layout(const tm_file *f) { return f ? &f->layout : NULL; }

const uint8_t *tm_file_bytes(const tm_file *f) { return f ? f->maps[0].base : NULL; }

uint64_t tm_file_bytes_size(const tm_file *f) { return f ? f->maps[0].avail : 0; }

bool tm_file_is_remote(const tm_file *f)
{
    for (uint32_t i = 0; f && i < f->layout.n_shards; i++)
        if (tm__source_is_remote(&f->maps[i]))
            return true;
    return false;
}

void tm_file_fetched(const tm_file *f, uint64_t *bytes, uint64_t *requests)
{
    uint64_t b = f ? f->fetched_bytes : 0, r = f ? f->fetched_requests : 0;
    for (uint32_t i = 0; f && i < f->layout.n_shards; i++) {
        uint64_t mb, mr;
        tm__source_fetched(&f->maps[i], &mb, &mr);
        b += mb;
        r += mr;
    }
    if (bytes)
        *bytes = b;
    if (requests)
        *requests = r;
}

uint64_t tm_n_tensors(const tm_file *f) { return f ? f->layout.n_tensors : 0; }

bool tm__file_owns(const tm_file *f, const tm_tensor *t)
{
    const uintptr_t first = (uintptr_t)f->tensors, at = (uintptr_t)t;
    const uint64_t n = f->layout.n_tensors;
    return at >= first && (at - first) % sizeof *t == 0 && (at - first) / sizeof *t < n;
}

const tm_tensor *tm_tensor_at(const tm_file *f, uint64_t i)
{
    return f && i < f->layout.n_tensors ? &f->tensors[i] : NULL;
}

uint64_t tm_tensor_rows(const tm_tensor *t)
{
    return t && t->ne[0] ? t->n_elements / t->ne[0] : 0;
}

uint32_t tm_tensor_shape(const tm_tensor *t, uint64_t shape[4])
{
    if (!t)
        return 0;
    for (uint32_t d = 0; d < t->n_dims && d < TM_MAX_DIMS; d++)
        shape[d] = t->ne[t->n_dims - 1 - d];
    return t->n_dims;
}

uint64_t tm_file_missing_bytes(const tm_file *f)
{
    uint64_t missing = 0;
    for (uint32_t i = 0; f && i < f->layout.n_shards; i++) {
        const tm_layout *l = tm_shard_layout(f, i);
        const uint64_t needed = l->data_start + l->tensors_end; /* the walk checked: no wrap */
        if (needed > l->file_size && !tm__add_u64(missing, needed - l->file_size, &missing))
            return UINT64_MAX;
    }
    return missing;
}

const tm_layout *tm_shard_layout(const tm_file *f, uint32_t shard)
{
    if (!f || shard >= f->layout.n_shards)
        return NULL;
    return f->layout.n_shards == 1 ? &f->layout : &f->shard_layouts[shard];
}

const char *tm_shard_path(const tm_file *f, uint32_t shard)
{
    return f && shard < f->layout.n_shards ? f->maps[shard].path : NULL;
}
