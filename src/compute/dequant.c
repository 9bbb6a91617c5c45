/* Public dequantization entry points, the choice of instruction-set path, and threading.
 *
 * The path is chosen once, at first use: TM_ISA from the environment when set, otherwise the
 * best one cpuid and XCR0 allow. The choice is a pointer to a const kernel table held in an
 * atomic, so every later call costs one acquire load. Nothing here is compiled with -m flags:
 * SIMD code is reached only through a table the CPU check has approved. */
#include "dequant.h"
#include "../common/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Outputs are written with ordinary stores at every size. Non-temporal stores (through a 16 KiB
 * L1 tile, for outputs of 32 MiB and more) were measured on the development machine (AMD EPYC
 * VM) and lost: a 256 MiB NT store loop ran at 17 GB/s against 21 GB/s for plain stores, and
 * decoding through the tile fell from 0.8-1.0 to 0.5-0.7 of memcpy bandwidth. */

/* tm_dequant_tensor: threads (tm__run_workers) take output in chunks of this size (a multiple of
 * every block's output: 4, 128 and 1024 bytes). */
#define CHUNK_BYTES (256u << 10)

/* ---- the paths, their tables merged, and choosing one --------------------------------------- */

/* A path as the decoders see it: its kernel tables merged, and every empty slot filled with the
 * kernel of its fallback path, so one load finds the kernel. Built once, at first use. */
typedef struct path {
    const char *name;
    unsigned fallback;              /* a TM__ISA_ id */
    bool built;                     /* some kernel table of this build belongs to it */
    tm__dequant_fn *fn[TM__SLOTS];  /* NULL: no path decodes the type */
    unsigned char from[TM__SLOTS];  /* the path whose kernel fn[slot] is */
} path;

#define FALLBACK_FIRST(id, name, fallback) \
    _Static_assert(TM__ISA_##fallback <= TM__ISA_##id, "a fallback must come before its path");
TM__ISA_LIST(FALLBACK_FIRST)
#undef FALLBACK_FIRST

static path paths[TM__N_ISAS] = {
#define PATH_INIT(id, name_, fallback_) [TM__ISA_##id] = { .name = name_, .fallback = TM__ISA_##fallback_ },
    TM__ISA_LIST(PATH_INIT)
#undef PATH_INIT
};

/* The path stored when TM_ISA names a path this machine cannot run: every call then fails
 * with TM_ISA and says why, rather than silently running another path. */
static const path refused = { .name = "none" };

static const tm__kernels *const tables[] = {
#define TABLE_REF(table) &table,
    TM__KERNEL_TABLES(TABLE_REF)
#undef TABLE_REF
};

static pthread_once_t merged_once = PTHREAD_ONCE_INIT;

static void merge(void)
{
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (unsigned i = 0; i < TM__N_ISAS; i++) {
            if (strcmp(tables[t]->name, paths[i].name) != 0)
                continue;
            paths[i].built = true;
            for (unsigned s = 0; s < TM__SLOTS; s++)
                if (tables[t]->fn[s] && !paths[i].fn[s]) {
                    paths[i].fn[s] = tables[t]->fn[s];
                    paths[i].from[s] = (unsigned char)i;
                }
        }
    /* fallbacks come first in the list, so each one is complete when its path takes from it */
    for (unsigned i = 0; i < TM__N_ISAS; i++)
        for (unsigned s = 0; paths[i].built && s < TM__SLOTS; s++)
            if (!paths[i].fn[s]) {
                paths[i].fn[s] = paths[paths[i].fallback].fn[s];
                paths[i].from[s] = paths[paths[i].fallback].from[s];
            }
}

static void ensure_merged(void) { pthread_once(&merged_once, merge); }

static _Atomic(const path *) active;

static bool runs_here(unsigned isa)
{
#if defined(__x86_64__)
    if (isa == TM__ISA_AVX512)
        return (tm__x86_features() & TM__X86_AVX512) != 0;
    if (isa == TM__ISA_AVX2)
        return (tm__x86_features() & TM__X86_AVX2) != 0;
#endif
    (void)isa; /* scalar runs everywhere; NEON is part of every aarch64 CPU */
    return true;
}

static int isa_named(const char *name)
{
    for (unsigned i = 0; i < TM__N_ISAS; i++)
        if (strcmp(paths[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Why name cannot be used, into err; TM_OK when it can (and *out is set). */
static tm_status check_isa(const char *context, const char *name, const path **out,
                           tm_error *err)
{
    ensure_merged();
    const int i = isa_named(name);
    if (i >= 0 && paths[i].built && runs_here((unsigned)i)) {
        *out = &paths[i];
        return TM_OK;
    }
    char q[80];
    tm__quote(q, sizeof q, name, strlen(name));
    if (i >= 0)
        return tm__fail(err, TM_ISA, TM_NO_OFFSET,
                        paths[i].built ? "%s: instruction set %s is not supported by this CPU "
                                         "or its operating system"
                                       : "%s: instruction set %s is not built into the library "
                                         "for this architecture",
                        context, q);
    char known[64] = "";
    for (unsigned k = 0; k < TM__N_ISAS; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                 paths[k].name);
    return tm__fail(err, TM_ISA, TM_NO_OFFSET, "%s: instruction set %s is unknown (known: %s)",
                    context, q, known);
}

static const path *choose(void)
{
    const char *env = getenv("TM_ISA");
    if (env && *env) {
        const path *k;
        return check_isa("TM_ISA", env, &k, NULL) == TM_OK ? k : &refused;
    }
    ensure_merged();
    for (unsigned i = TM__N_ISAS; i-- > 0;) /* best last */
        if (paths[i].built && runs_here(i))
            return &paths[i];
    return &paths[TM__ISA_SCALAR];
}

static const path *active_path(void)
{
    const path *k = atomic_load_explicit(&active, memory_order_acquire);
    if (!k) {
        const path *none = NULL;
        k = choose();
        /* two first calls may race: both computed the same answer, keep the first stored */
        if (!atomic_compare_exchange_strong_explicit(&active, &none, k, memory_order_acq_rel,
                                                     memory_order_acquire))
            k = none;
    }
    return k;
}

const char *tm_isa(void) { return active_path()->name; }

tm_status tm_set_isa(const char *name, tm_error *err)
{
    const path *k;
    if (!name)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_set_isa: name is NULL");
    tm_status st = check_isa("tm_set_isa", name, &k, err);
    if (st == TM_OK)
        atomic_store_explicit(&active, k, memory_order_release);
    return st;
}

bool tm_isa_available(const char *name)
{
    const path *k;
    return name && check_isa("", name, &k, NULL) == TM_OK;
}

const char *tm_isa_built(unsigned i)
{
    ensure_merged();
    for (unsigned k = 0; k < TM__N_ISAS; k++)
        if (paths[k].built && i-- == 0)
            return paths[k].name;
    return NULL;
}

tm__dequant_fn *tm__kernel_for(unsigned isa, tm_type type, unsigned *from)
{
    ensure_merged();
    const int slot = tm__type_slot(type);
    if (isa >= TM__N_ISAS || !paths[isa].built || slot < 0)
        return NULL;
    if (from)
        *from = paths[isa].from[slot];
    return paths[isa].fn[slot];
}

bool tm_type_can_dequant(tm_type type)
{
    return tm__kernel_for(TM__ISA_SCALAR, type, NULL) != NULL;
}

/* ---- one decode ---------------------------------------------------------------------------- */

/* What a validated call decodes: a kernel, its source blocks and where they go. */
typedef struct job {
    tm__dequant_fn *fn;
    const uint8_t *src;
    float *dst;
    size_t n_blocks;
    size_t block_bytes;
    size_t block_elems;
} job;

static void run_job(const job *j) { j->fn(j->src, j->dst, j->n_blocks); }

/* "tensor 'name'" for messages. */
static const char *tensor_label(const tm_tensor *t, char *buf, size_t cap)
{
    char q[96];
    tm__quote(q, sizeof q, t->name.ptr, t->name.len);
    snprintf(buf, cap, "tensor %s", q);
    return buf;
}

/* What a message is about: the tensor, or the raw blocks of tm_dequant_raw (t NULL). Rendered
 * only when a call fails: the success path runs once per row tile of an inference loop. */
#define SUBJECT(t, buf) ((t) ? tensor_label((t), (buf), sizeof(buf)) : "raw blocks")

/* Check the type, pick the kernel, fill j for n_blocks blocks at src (where the first block
 * lies: in t's data, or raw blocks when t is NULL). */
static tm_status prepare(const tm_tensor *t, tm_type type, const void *src, uint64_t n_blocks,
                         float *out, job *j, tm_error *err)
{
    const uint64_t info_offset = t ? t->info_offset : TM_NO_OFFSET;
    char what[128];
    const path *k = active_path();
    if (k == &refused) {
        /* say why again (the environment is read, not stored); tm_set_isa clears this */
        const char *env = getenv("TM_ISA");
        const path *unused;
        if (!env || check_isa("TM_ISA", env, &unused, err) == TM_OK)
            return tm__fail(err, TM_ISA, TM_NO_OFFSET,
                            "TM_ISA named an instruction set this machine cannot run");
        return TM_ISA;
    }
    const uint32_t block_elems = tm_type_block_elems(type);
    const int slot = tm__type_slot(type);
    if (block_elems == 0 || slot < 0 || !k->fn[slot]) {
        const char *tn = tm_type_name(type);
        if (tn)
            return tm__fail(err, TM_UNSUPPORTED, info_offset,
                            "%s: type %s has no decoder in this library", SUBJECT(t, what), tn);
        return tm__fail(err, TM_UNSUPPORTED, info_offset, "%s: type id %u is not a known type",
                        SUBJECT(t, what), (unsigned)type);
    }
    uint64_t n_out;
    if (!tm__mul_u64(n_blocks, block_elems, &n_out) || n_out > SIZE_MAX / sizeof(float))
        return tm__fail(err, TM_INVALID_ARG, info_offset,
                        "%s: %llu blocks of %s do not fit in memory", SUBJECT(t, what),
                        (unsigned long long)n_blocks, tm_type_name(type));
    if (n_blocks && (!src || !out))
        return tm__fail(err, TM_INVALID_ARG, info_offset, "%s: %s pointer is NULL",
                        SUBJECT(t, what), src ? "output" : "input");
    j->fn = k->fn[slot];
    j->src = src;
    j->dst = out;
    j->n_blocks = (size_t)n_blocks;
    j->block_bytes = tm_type_block_bytes(type);
    j->block_elems = block_elems;
    return TM_OK;
}


static tm_status tensor_blocks(const tm_tensor *t, uint64_t *n_blocks, uint32_t *block_elems,
                               tm_error *err)
{
    if (!t)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tensor is NULL");
    uint32_t be = tm_type_block_elems(t->type);
    char label[128];
    if (be == 0) {
        const char *tn = tm_type_name(t->type);
        return tm__fail(err, TM_UNSUPPORTED, t->info_offset,
                        "%s: type %s (id %u) has no decoder in this library",
                        tensor_label(t, label, sizeof label), tn ? tn : "unknown",
                        (unsigned)t->type);
    }
    if (t->n_elements % be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %llu elements are not a whole number of blocks of %u",
                        tensor_label(t, label, sizeof label),
                        (unsigned long long)t->n_elements, be);
    *n_blocks = t->n_elements / be;
    *block_elems = be;
    return tm__tensor_whole(t, err); /* a file cut off short holds none of a cut tensor */
}

static tm_status dequant_threads(const tm_tensor *t, uint64_t first_block, uint64_t n_blocks,
                                 uint32_t be, float *out, unsigned n_threads, tm_error *err);

/* A remote tensor is decoded piece by piece as its bytes arrive (fetch.c), each piece by the
 * same code as a local tensor's blocks. */
typedef struct remote_out {
    float *out;
    uint32_t block_elems;
    unsigned n_threads;
} remote_out;

static tm_status decode_piece(const tm_tensor *piece, uint64_t done, void *ctx, tm_error *err)
{
    const remote_out *o = ctx;
    return dequant_threads(piece, 0, piece->n_elements / o->block_elems, o->block_elems,
                           o->out + done * o->block_elems, o->n_threads, err);
}

tm_status tm_dequant_blocks(const tm_tensor *t, uint64_t first_block, uint64_t n_blocks,
                            float *out, tm_error *err)
{
    uint64_t total, end;
    uint32_t be;
    tm_status st = tensor_blocks(t, &total, &be, err);
    if (st != TM_OK)
        return st;
    char label[128];
    if (!tm__add_u64(first_block, n_blocks, &end) || end > total)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: blocks [%llu, +%llu) are outside its %llu blocks",
                        tensor_label(t, label, sizeof label),
                        (unsigned long long)first_block, (unsigned long long)n_blocks,
                        (unsigned long long)total);
    if (tm__tensor_is_remote(t)) {
        remote_out o = {out, be, 1};
        return tm__remote_pieces(t, first_block, n_blocks, 1, decode_piece, &o, err);
    }
    job j;
    const uint8_t *src = t->data;
    if (src)
        src += first_block * tm_type_block_bytes(t->type);
    st = prepare(t, t->type, src, n_blocks, out, &j, err);
    if (st != TM_OK)
        return st;
    run_job(&j);
    return TM_OK;
}

tm_status tm_dequant_elements(const tm_tensor *t, uint64_t first, uint64_t n, float *out,
                              tm_error *err)
{
    uint64_t total;
    uint32_t be;
    tm_status st = tensor_blocks(t, &total, &be, err);
    if (st != TM_OK)
        return st;
    if (first % be != 0 || n % be != 0) {
        char label[128];
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: elements [%llu, +%llu) do not start and end on its %u-element "
                        "block boundaries",
                        tensor_label(t, label, sizeof label), (unsigned long long)first,
                        (unsigned long long)n, be);
    }
    return tm_dequant_blocks(t, first / be, n / be, out, err);
}

/* The blocks of rows [r0, r1): the rows must lie inside the tensor and be whole blocks. */
static tm_status row_blocks(const tm_tensor *t, uint64_t r0, uint64_t r1, uint64_t *first,
                            uint64_t *n, uint32_t *be, tm_error *err)
{
    uint64_t total;
    tm_status st = tensor_blocks(t, &total, be, err);
    if (st != TM_OK)
        return st;
    const uint64_t rows = tm_tensor_rows(t);
    char label[128];
    if (r0 > r1 || r1 > rows)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: rows [%llu, %llu) are not a range inside its %llu rows",
                        tensor_label(t, label, sizeof label), (unsigned long long)r0,
                        (unsigned long long)r1, (unsigned long long)rows);
    if (t->ne[0] % *be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: a row of %llu elements is not a whole number of %u-element blocks",
                        tensor_label(t, label, sizeof label), (unsigned long long)t->ne[0], *be);
    *first = r0 * (t->ne[0] / *be);
    *n = (r1 - r0) * (t->ne[0] / *be);
    return TM_OK;
}

tm_status tm_dequant_rows(const tm_tensor *t, uint64_t r0, uint64_t r1, float *out,
                          tm_error *err)
{
    uint64_t first, n;
    uint32_t be;
    tm_status st = row_blocks(t, r0, r1, &first, &n, &be, err);
    return st != TM_OK ? st : tm_dequant_blocks(t, first, n, out, err);
}

tm_status tm_dequant_raw(tm_type type, const void *blocks, uint64_t n_elements, float *out,
                         tm_error *err)
{
    uint32_t be = tm_type_block_elems(type);
    if (be != 0 && n_elements % be != 0)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "raw blocks: %llu elements are not a whole number of %s blocks of %u",
                        (unsigned long long)n_elements, tm_type_name(type), be);
    job j;
    tm_status st = prepare(NULL, type, blocks, be ? n_elements / be : 0, out, &j, err);
    if (st == TM_OK)
        run_job(&j);
    return st;
}

/* ---- the whole tensor on N threads ---------------------------------------------------------- */

/* The threads of one tm_dequant_tensor call take chunks of CHUNK_BYTES of output from a shared
 * counter until none is left. Chunks rather than one range per thread: on a shared machine a
 * thread that is descheduled holds back only its current chunk, and the others take the rest.
 * Every block still goes through the same kernel as on one thread, so the result is
 * bit-identical. */
typedef struct shared_job {
    job whole;
    size_t chunk_blocks;
    atomic_size_t next;      /* first block of the next chunk to take */
} shared_job;

static void *worker(void *arg)
{
    shared_job *s = arg;
    for (;;) {
        const size_t b0 = atomic_fetch_add_explicit(&s->next, s->chunk_blocks, memory_order_relaxed);
        if (b0 >= s->whole.n_blocks)
            return NULL;
        job j = s->whole;
        j.src += b0 * j.block_bytes;
        j.dst += b0 * j.block_elems;
        j.n_blocks = s->whole.n_blocks - b0 < s->chunk_blocks ? s->whole.n_blocks - b0
                                                              : s->chunk_blocks;
        run_job(&j);
    }
}

/* Blocks [first_block, first_block + n_blocks) of t into out on n_threads threads. */
static tm_status dequant_threads(const tm_tensor *t, uint64_t first_block, uint64_t n_blocks,
                                 uint32_t be, float *out, unsigned n_threads, tm_error *err)
{
    if (tm__tensor_is_remote(t)) {
        remote_out o = {out, be, n_threads};
        return tm__remote_pieces(t, first_block, n_blocks, 1, decode_piece, &o, err);
    }
    shared_job s;
    tm_status st = prepare(t, t->type, (const uint8_t *)t->data +
                           first_block * tm_type_block_bytes(t->type), n_blocks, out, &s.whole, err);
    if (st != TM_OK)
        return st;
    s.chunk_blocks = CHUNK_BYTES / sizeof(float) / be;
    atomic_init(&s.next, 0);

    tm__run_workers(worker, &s, n_threads, (n_blocks + s.chunk_blocks - 1) / s.chunk_blocks);
    return TM_OK;
}

tm_status tm_dequant_tensor(const tm_tensor *t, float *out, unsigned n_threads, tm_error *err)
{
    uint64_t total;
    uint32_t be;
    tm_status st = tensor_blocks(t, &total, &be, err);
    return st != TM_OK ? st : dequant_threads(t, 0, total, be, out, n_threads, err);
}

tm_status tm_dequant_rows_mt(const tm_tensor *t, uint64_t r0, uint64_t r1, float *out,
                             unsigned n_threads, tm_error *err)
{
    uint64_t first, n;
    uint32_t be;
    tm_status st = row_blocks(t, r0, r1, &first, &n, &be, err);
    return st != TM_OK ? st : dequant_threads(t, first, n, be, out, n_threads, err);
}
