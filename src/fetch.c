/* A tensor's bytes by range (tm_tensor_fetch), and decoding a remote tensor piece by piece: its
 * blocks are fetched into one buffer at a time and handed to the local decoder as a tensor of
 * their own, so that a remote decode runs the very kernels a local one does. */
#include "internal.h"

#include <stdlib.h>

/* The most bytes of a remote tensor held at once while decoding it. */
#define PIECE_BYTES (16u << 20)

tm_status tm_tensor_fetch(const tm_tensor *t, uint64_t offset, uint64_t len, void *buf,
                          tm_error *err)
{
    uint64_t end;
    if (!t || (!buf && len))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_tensor_fetch: t and buf must be set");
    char name[160];
    tm__quote(name, sizeof name, t->name.ptr, t->name.len);
    if (!tm__add_u64(offset, len, &end) || end > t->n_bytes)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "tensor %s: bytes [%llu, +%llu) are outside its %llu bytes", name,
                        (unsigned long long)offset, (unsigned long long)len,
                        (unsigned long long)t->n_bytes);
    if (len == 0)
        return TM_OK;
    if (t->data) {
        memcpy(buf, (const uint8_t *)t->data + offset, (size_t)len);
        return TM_OK;
    }
    if (!t->file || t->shard >= t->file->layout.n_shards)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset, "tensor %s has no data", name);
    const tm_layout *l = tm_shard_layout(t->file, t->shard);
    tm_error inner = {0};
    tm_status st = tm__map_read(&t->file->maps[t->shard], l->data_start + t->offset + offset,
                                len, buf, &inner);
    if (st != TM_OK)
        tm__fail(err, st, inner.offset, "tensor %s: %s", name, inner.message);
    return st;
}

bool tm__tensor_is_remote(const tm_tensor *t)
{
    return t && !t->data && t->file && t->shard < t->file->layout.n_shards &&
           t->file->maps[t->shard].kind == TM__MAP_REMOTE;
}

tm_status tm__remote_pieces(const tm_tensor *t, uint64_t first, uint64_t n, uint64_t granule,
                            tm__piece_fn fn, void *ctx, tm_error *err)
{
    const uint64_t bb = tm_type_block_bytes(t->type), be = tm_type_block_elems(t->type);
    const uint64_t granule_bytes = granule * bb;
    uint64_t per = PIECE_BYTES / granule_bytes;
    per = (per ? per : 1) * granule; /* blocks a piece: whole granules, at least one */
    const uint64_t cap = (n < per ? n : per) * bb;
    uint8_t *buf = malloc(cap ? (size_t)cap : 1);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %llu bytes of tensor "
                        "data", (unsigned long long)cap);
    tm_status st = TM_OK;
    for (uint64_t done = 0; done < n && st == TM_OK;) {
        const uint64_t k = n - done < per ? n - done : per;
        st = tm_tensor_fetch(t, (first + done) * bb, k * bb, buf, err);
        if (st != TM_OK)
            break;
        tm_tensor piece = *t;
        piece.n_dims = 2;
        piece.ne[0] = granule * be;
        piece.ne[1] = k / granule;
        piece.ne[2] = piece.ne[3] = 1;
        piece.n_elements = k * be;
        piece.n_bytes = k * bb;
        piece.offset = t->offset + (first + done) * bb;
        piece.data = buf;
        st = fn(&piece, done, ctx, err);
        done += k;
    }
    free(buf);
    return st;
}
