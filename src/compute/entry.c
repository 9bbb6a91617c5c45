/* What the entry points (dequant.c, matvec.c) share: how a tensor is named in a message, the
 * refusal of a type nothing decodes, and the split of one call's work over threads. */
#include "../common/internal.h"
#include "compute.h"

#include <stdatomic.h>
#include <stdio.h>

const char *tm__tensor_label(const tm_tensor *t, char *buf, size_t cap)
{
    char q[96];
    tm__quote(q, sizeof q, t->name.ptr, t->name.len);
    snprintf(buf, cap, "tensor %s", q);
    return buf;
}

tm_status tm__no_decoder(const char *fn, const tm_tensor *t, tm_type type, tm_error *err)
{
    char what[128];
    const char *subject = t ? tm__tensor_label(t, what, sizeof what) : "raw blocks";
    const char *tn = tm_type_name(type);
    const uint64_t offset = t ? t->info_offset : TM_NO_OFFSET;
    const char *sep = fn ? ": " : "";
    if (tn)
        return tm__fail(err, TM_UNSUPPORTED, offset,
                        "%s%s%s: type %s has no decoder in this library", fn ? fn : "", sep,
                        subject, tn);
    return tm__fail(err, TM_UNSUPPORTED, offset, "%s%s%s: type id %u is not a known type",
                    fn ? fn : "", sep, subject, (unsigned)type);
}

/* The threads of one call take chunks from a shared counter until none is left. Chunks rather
 * than one range per thread: on a shared machine a thread that is descheduled holds back only
 * its current chunk, and the others take the rest. */
typedef struct chunks {
    tm__chunk_fn *run;
    const void *ctx;
    uint64_t total, chunk;
    atomic_uint_fast64_t next; /* first unit of the next chunk to take */
} chunks;

static void *take_chunks(void *arg)
{
    chunks *c = arg;
    for (;;) {
        const uint64_t first = atomic_fetch_add_explicit(&c->next, c->chunk, memory_order_relaxed);
        if (first >= c->total)
            return NULL;
        c->run(c->ctx, first, c->total - first < c->chunk ? c->total - first : c->chunk);
    }
}

void tm__run_chunks(tm__chunk_fn *run, const void *ctx, uint64_t total, uint64_t chunk,
                    unsigned n_threads)
{
    chunks c = { .run = run, .ctx = ctx, .total = total, .chunk = chunk };
    atomic_init(&c.next, 0);
    tm__run_workers(take_chunks, &c, n_threads, (total + chunk - 1) / chunk);
}
