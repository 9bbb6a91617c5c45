/* tm_prefetch: a plan of tensor bytes checked whole, then handed to whatever reads them ahead
 * for the file that holds them: the kernel's readahead for a local file (io's advice), the
 * file's readahead thread for a remote one and for TM_PREFETCH_METHOD=thread. */
#include "../common/internal.h"

#include <stdlib.h>

/* How a local file's ranges are asked for: TM_PREFETCH_METHOD. Unset, "kernel": not at all,
 * the kernel's own readahead of the faults and reads is left to do it (bench/cold, on a quiet
 * machine: a cold decode at 1.00 and 1.35 of the same run's read() with it alone, 0.77 and
 * 0.93 with madvise, 0.75 and 0.90 with fadvise, 0.46 and 0.69 with the thread: an advice
 * for the next tensor competes with the faults of this one); a remote file's plan is fetched
 * ahead whatever the local method, but for "none". */
typedef enum method { BY_KERNEL, BY_MADVISE, BY_FADVISE, BY_THREAD, BY_NONE } method;

static tm_status method_from_env(method *out, tm_error *err)
{
    static const char *const names[] = {[BY_KERNEL] = "kernel", [BY_MADVISE] = "madvise",
                                        [BY_FADVISE] = "fadvise", [BY_THREAD] = "thread",
                                        [BY_NONE] = "none"};
    const char *v = getenv("TM_PREFETCH_METHOD");
    *out = BY_KERNEL;
    if (!v || !*v)
        return TM_OK;
    for (unsigned m = 0; m < sizeof names / sizeof *names; m++) {
        if (strcmp(v, names[m]) == 0) {
            *out = (method)m;
            return TM_OK;
        }
    }
    char shown[80];
    tm__quote(shown, sizeof shown, v, strlen(v));
    return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                    "TM_PREFETCH_METHOD is %s: it must be kernel, madvise, fadvise, thread or "
                    "none",
                    shown);
}

/* Range i of the plan, checked: its bytes [*offset, *offset + *len) within its tensor. */
static tm_status check_range(const tm_file *f, const tm_prefetch_range *r, size_t i,
                             uint64_t *offset, uint64_t *len, tm_error *err)
{
    const tm_tensor *t = r->tensor;
    if (!t || !tm__file_owns(f, t))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_prefetch: range %zu: %s", i,
                        t ? "the tensor is not one of this file's" : "the tensor is NULL");
    char name[160];
    tm__quote(name, sizeof name, t->name.ptr, t->name.len);
    const uint64_t n = r->n_bytes == TM_PREFETCH_TO_END && r->offset <= t->n_bytes
                           ? t->n_bytes - r->offset
                           : r->n_bytes;
    uint64_t end;
    if (!tm__add_u64(r->offset, n, &end) || end > t->n_bytes)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "tm_prefetch: range %zu: bytes [%" PRIu64 ", +%" PRIu64
                        ") are outside tensor %s's %" PRIu64 " bytes",
                        i, (uint64_t)r->offset, (uint64_t)n, name, (uint64_t)t->n_bytes);
    tm_status st = n ? tm__tensor_whole(t, err) : TM_OK;
    *offset = r->offset;
    *len = n;
    return st;
}

/* One range, checked, handed to what reads the file ahead; adds what it plans to *planned. */
static tm_status plan_range(const tm_file *f, const tm_tensor *t, uint64_t offset, uint64_t len,
                            method how, uint64_t limit, uint64_t *planned, tm_error *err)
{
    const tm__source *s = &f->maps[t->shard];
    const uint64_t at = tm_shard_layout(f, t->shard)->data_start + t->offset + offset;
    if (len == 0 || how == BY_NONE)
        return TM_OK;
    if (tm__source_is_remote(s)) {
        /* the head fetched at open holds the first bytes already */
        const uint64_t in_head = at < s->avail ? s->avail - at : 0;
        if (in_head >= len)
            return TM_OK;
        return tm__readahead_queue(f, t->shard, at + in_head, len - in_head, TM__AHEAD_FETCH,
                                   limit, planned, err);
    }
    if (how == BY_KERNEL)
        return TM_OK;
    if (how == BY_THREAD && t->data) /* a mapping: its pages are touched on the thread */
        return tm__readahead_queue(f, t->shard, at, len, TM__AHEAD_TOUCH, limit, planned, err);
    if (tm__source_advise(s, at, len, how == BY_FADVISE ? TM__ADVISE_FADVISE : TM__ADVISE_MADVISE))
        *planned += len;
    return TM_OK;
}

tm_status tm_prefetch(const tm_file *file, const tm_prefetch_range *ranges, size_t n_ranges,
                      uint64_t *planned, tm_error *err)
{
    uint64_t total = 0;
    if (planned)
        *planned = 0;
    if (!file || (!ranges && n_ranges))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_prefetch: file and ranges (when n_ranges > 0) must be set");
    if (n_ranges > TM_PREFETCH_MAX_RANGES)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "tm_prefetch: %zu ranges, more than the %u one call takes", n_ranges,
                        TM_PREFETCH_MAX_RANGES);
    method how;
    tm_status st = method_from_env(&how, err);
    /* all of the plan is checked before any of it is started */
    for (size_t i = 0; i < n_ranges && st == TM_OK; i++) {
        uint64_t offset, len;
        st = check_range(file, &ranges[i], i, &offset, &len, err);
    }
    if (st != TM_OK)
        return st;
    if (n_ranges == 0) {
        tm__readahead_drop(file);
        return TM_OK;
    }
    const uint64_t limit = tm__env_bytes("TM_PREFETCH_LIMIT", TM_PREFETCH_DEFAULT_LIMIT);
    for (size_t i = 0; i < n_ranges && st == TM_OK; i++) {
        uint64_t offset, len;
        check_range(file, &ranges[i], i, &offset, &len, NULL);
        st = plan_range(file, ranges[i].tensor, offset, len, how, limit, &total, err);
    }
    if (planned)
        *planned = total;
    return st;
}
