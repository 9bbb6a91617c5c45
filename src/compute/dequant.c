/* Public dequantization entry points and threading. The kernels are those of the path in use
 * (isa.c: TM_ISA, tm_set_isa or cpuid). Nothing here is compiled with -m flags. */
#include "../common/internal.h"
#include "compute.h"


/* Outputs are written with ordinary stores at every size. Non-temporal stores (through a 16 KiB
 * L1 tile, for outputs of 32 MiB and more) were measured on the development machine (AMD EPYC
 * VM) and lost: a 256 MiB NT store loop ran at 17 GB/s against 21 GB/s for plain stores, and
 * decoding through the tile fell from 0.8-1.0 to 0.5-0.7 of memcpy bandwidth. */

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

/* What a message is about: the tensor, or the raw blocks of tm_dequant_raw (t NULL). Rendered
 * only when a call fails: the success path runs once per row tile of an inference loop. */
#define SUBJECT(t, buf) ((t) ? tm__tensor_label((t), (buf), sizeof(buf)) : "raw blocks")

/* Check the type, pick the kernel, fill j for n_blocks blocks at src (where the first block
 * lies: in t's data, or raw blocks when t is NULL). */
static tm_status prepare(const tm_tensor *t, tm_type type, const void *src, uint64_t n_blocks,
                         float *out, job *j, tm_error *err)
{
    const uint64_t info_offset = t ? t->info_offset : TM_NO_OFFSET;
    char what[128];
    const tm__kernels *k = tm__active_kernels(NULL, err);
    if (!k)
        return TM_ISA;
    const uint32_t block_elems = tm_type_block_elems(type);
    const int slot = tm__type_slot(type);
    if (block_elems == 0 || slot < 0 || !k->dequant[slot])
        return tm__no_decoder(NULL, t, type, err);
    uint64_t n_out;
    if (!tm__mul_u64(n_blocks, block_elems, &n_out) || n_out > SIZE_MAX / sizeof(float))
        return tm__fail(err, TM_INVALID_ARG, info_offset,
                        "%s: %" PRIu64 " blocks of %s do not fit in memory", SUBJECT(t, what),
                        (uint64_t)n_blocks, tm_type_name(type));
    if (n_blocks && (!src || !out))
        return tm__fail(err, TM_INVALID_ARG, info_offset, "%s: %s pointer is NULL",
                        SUBJECT(t, what), src ? "output" : "input");
    j->fn = k->dequant[slot];
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
    /* refused before any byte is read: a remote tensor's bytes are fetched before the
     * decoder would otherwise be looked for (q8_K has blocks, but no decoder) */
    uint32_t be = tm_type_block_elems(t->type);
    if (be == 0 || !tm_type_can_dequant(t->type))
        return tm__no_decoder(NULL, t, t->type, err);
    char label[128];
    if (t->n_elements % be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %" PRIu64 " elements are not a whole number of blocks of %u",
                        tm__tensor_label(t, label, sizeof label), (uint64_t)t->n_elements, be);
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
                        "%s: blocks [%" PRIu64 ", +%" PRIu64 ") are outside its %" PRIu64 " blocks",
                        tm__tensor_label(t, label, sizeof label), (uint64_t)first_block,
                        (uint64_t)n_blocks, (uint64_t)total);
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
                        "%s: elements [%" PRIu64 ", +%" PRIu64
                        ") do not start and end on its %u-element "
                        "block boundaries",
                        tm__tensor_label(t, label, sizeof label), (uint64_t)first, (uint64_t)n, be);
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
        return tm__fail(
            err, TM_INVALID_ARG, t->info_offset,
            "%s: rows [%" PRIu64 ", %" PRIu64 ") are not a range inside its %" PRIu64 " rows",
            tm__tensor_label(t, label, sizeof label), (uint64_t)r0, (uint64_t)r1, (uint64_t)rows);
    if (t->ne[0] % *be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: a row of %" PRIu64
                        " elements is not a whole number of %u-element blocks",
                        tm__tensor_label(t, label, sizeof label), (uint64_t)t->ne[0], *be);
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
                        "raw blocks: %" PRIu64
                        " elements are not a whole number of %s blocks of %u",
                        (uint64_t)n_elements, tm_type_name(type), be);
    job j;
    tm_status st = prepare(NULL, type, blocks, be ? n_elements / be : 0, out, &j, err);
    if (st == TM_OK)
        run_job(&j);
    return st;
}

/* ---- the whole tensor on N threads ---------------------------------------------------------- */

/* Blocks [first, first + n) of the job ctx: one chunk of a threaded decode. Every block goes
 * through the same kernel as on one thread, so the result is bit-identical. */
static void run_chunk(const void *ctx, uint64_t first, uint64_t n)
{
    job j = *(const job *)ctx;
    j.src += first * j.block_bytes;
    j.dst += first * j.block_elems;
    j.n_blocks = (size_t)n;
    run_job(&j);
}

/* Blocks [first_block, first_block + n_blocks) of t into out on n_threads threads. */
static tm_status dequant_threads(const tm_tensor *t, uint64_t first_block, uint64_t n_blocks,
                                 uint32_t be, float *out, unsigned n_threads, tm_error *err)
{
    if (tm__tensor_is_remote(t)) {
        remote_out o = {out, be, n_threads};
        return tm__remote_pieces(t, first_block, n_blocks, 1, decode_piece, &o, err);
    }
    job j;
    tm_status st = prepare(t, t->type, (const uint8_t *)t->data +
                           first_block * tm_type_block_bytes(t->type), n_blocks, out, &j, err);
    if (st != TM_OK)
        return st;
    tm__run_chunks(run_chunk, &j, n_blocks, TM__CHUNK_BYTES / sizeof(float) / be, n_threads);
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
