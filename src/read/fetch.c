/* A tensor's bytes by range (tm_tensor_fetch), and decoding a remote tensor piece by piece: its
 * blocks are fetched into a buffer and handed to the local decoder as a tensor of their own, so
 * that a remote decode runs the very kernels a local one does; the next piece is fetched while
 * one is decoded. */
#include "../common/internal.h"

#include <pthread.h>
#include <stdlib.h>

/* The most bytes of a remote tensor in one piece (two pieces are held: one decoded, one
 * arriving). */
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
                        "tensor %s: bytes [%" PRIu64 ", +%" PRIu64 ") are outside its %" PRIu64
                        " bytes",
                        name, (uint64_t)offset, (uint64_t)len, (uint64_t)t->n_bytes);
    if (len == 0)
        return TM_OK;
    if (t->data) {
        memcpy(buf, (const uint8_t *)t->data + offset, (size_t)len);
        return TM_OK;
    }
    tm_status st = tm__tensor_whole(t, err);
    if (st != TM_OK)
        return st;
    if (!t->file || t->shard >= t->file->layout.n_shards)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset, "tensor %s has no data", name);
    const tm_layout *l = tm_shard_layout(t->file, t->shard);
    tm_error inner = {0};
    /* from what tm_prefetch fetched ahead, where it did */
    st = tm__readahead_read(t->file, t->shard, l->data_start + t->offset + offset, len, buf,
                            &inner);
    if (st != TM_OK)
        tm__fail(err, st, inner.offset, "tensor %s: %s", name, inner.message);
    return st;
}

bool tm_tensor_is_cut(const tm_tensor *t)
{
    if (!t || t->data || !t->file || t->shard >= t->file->layout.n_shards)
        return false;
    const tm_layout *l = tm_shard_layout(t->file, t->shard);
    /* the walk checked that the end is below 2^64 */
    return t->n_bytes > 0 && l->data_start + t->offset + t->n_bytes > l->file_size;
}

tm_status tm__tensor_whole(const tm_tensor *t, tm_error *err)
{
    if (!tm_tensor_is_cut(t))
        return TM_OK;
    const tm_layout *l = tm_shard_layout(t->file, t->shard);
    const uint64_t start = l->data_start + t->offset, end = start + t->n_bytes;
    char name[160], file[200] = "the file";
    tm__quote(name, sizeof name, t->name.ptr, t->name.len);
    if (t->file->layout.n_shards > 1) {
        const char *path = tm_shard_path(t->file, t->shard);
        tm__quote(file, sizeof file, path, strlen(path));
    }
    const uint64_t have = start < l->file_size ? l->file_size - start : 0;
    return tm__fail(err, TM_TRUNCATED, t->info_offset,
                    "tensor %s is cut off: its %" PRIu64 " bytes run from byte %" PRIu64
                    " to %" PRIu64 ", but %s "
                    "ends at byte %" PRIu64 " (%" PRIu64
                    " of them are missing: a truncated download?)",
                    name, (uint64_t)t->n_bytes, (uint64_t)start, (uint64_t)end, file,
                    (uint64_t)l->file_size, (uint64_t)(t->n_bytes - have));
}

bool tm__tensor_is_remote(const tm_tensor *t)
{
    return t && !t->data && t->file && t->shard < t->file->layout.n_shards;
}

/* One piece's fetch, run on a thread of its own while the piece before it is decoded. */
typedef struct fetch_job {
    const tm_tensor *t;
    uint64_t offset, len;
    uint8_t *buf;
    tm_status st;
    tm_error err;
} fetch_job;

static void *fetch_piece(void *arg)
{
    fetch_job *j = arg;
    j->st = tm_tensor_fetch(j->t, j->offset, j->len, j->buf, &j->err);
    return NULL;
}

tm_status tm__remote_pieces(const tm_tensor *t, uint64_t first, uint64_t n, uint64_t granule,
                            tm__piece_fn fn, void *ctx, tm_error *err)
{
    const uint64_t bb = tm_type_block_bytes(t->type), be = tm_type_block_elems(t->type);
    const uint64_t granule_bytes = granule * bb;
    uint64_t per = PIECE_BYTES / granule_bytes;
    per = (per ? per : 1) * granule; /* blocks a piece: whole granules, at least one */
    const uint64_t cap = (n < per ? n : per) * bb;
    /* two buffers: the next piece arrives in one while the other is decoded */
    uint8_t *bufs[2] = {malloc(cap ? (size_t)cap : 1), n > per ? malloc((size_t)cap) : NULL};
    if (!bufs[0] || (n > per && !bufs[1])) {
        free(bufs[0]);
        free(bufs[1]);
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "out of memory for %" PRIu64 " bytes of tensor "
                        "data",
                        (uint64_t)(2 * cap));
    }
    fetch_job next = {t, first * bb, (n < per ? n : per) * bb, bufs[0], TM_OK, {0}};
    fetch_piece(&next);
    tm_status st = next.st;
    if (st != TM_OK && err)
        *err = next.err;
    for (uint64_t done = 0, which = 0; done < n && st == TM_OK; which ^= 1) {
        const uint64_t k = n - done < per ? n - done : per;
        /* start the next piece's fetch (on this thread if no other can be had) */
        pthread_t th;
        bool more = done + k < n, threaded = false;
        if (more) {
            const uint64_t k2 = n - done - k < per ? n - done - k : per;
            next = (fetch_job){t, (first + done + k) * bb, k2 * bb, bufs[which ^ 1], TM_OK, {0}};
            threaded = pthread_create(&th, NULL, fetch_piece, &next) == 0;
        }
        tm_tensor piece = *t;
        piece.n_dims = 2;
        piece.ne[0] = granule * be;
        piece.ne[1] = k / granule;
        piece.ne[2] = piece.ne[3] = 1;
        piece.n_elements = k * be;
        piece.n_bytes = k * bb;
        piece.offset = t->offset + (first + done) * bb;
        piece.data = bufs[which];
        st = fn(&piece, done, ctx, err);
        if (threaded)
            pthread_join(th, NULL);
        else if (more && st == TM_OK)
            fetch_piece(&next);
        if (st == TM_OK && more && next.st != TM_OK) {
            st = next.st;
            if (err)
                *err = next.err;
        }
        done += k;
    }
    free(bufs[0]);
    free(bufs[1]);
    return st;
}
