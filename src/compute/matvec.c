/* tm_matvec_rows and tm_matvec: y = W x straight from the quantized blocks in the mapping.
 *
 * The instruction-set path is the dequant kernels' (tm_isa(): TM_ISA or cpuid, tm_set_isa). Per
 * type and mode, the kernel is the path's merged one (isa.c: its own, else the next path down's,
 * avx512fp16 -> avx512 -> avx2 -> scalar, neon -> scalar), else a row is computed here by
 * decoding a few blocks at a time into a stack buffer (tm_dequant_raw, bit-exact on every
 * path) and taking their dot with x in double. So a type that gains a decoder works in both
 * modes with no change here. In TM_MATVEC_Q8, every block type has an 8-bit kernel (matvec_scalar*.c); the plain and
 * integer types keep x in float32 and run the F32 kernel, except f16 and bf16 on the x86
 * paths, whose Q8 kernels take x in 16 bits (tm__f16x), as ggml pairs them.
 *
 * Determinism: every row is computed by one kernel call whose order of operations depends only
 * on the row, so splitting the rows over threads cannot change a bit of y. Nothing here is
 * compiled with -m flags. */
#include "../common/internal.h"
#include "compute.h"
#include "quantize_x.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* the fallback decodes this many floats at a time (16 KiB of stack; a multiple of every block) */
#define FALLBACK_FLOATS 4096u

/* ---- one call's plan ----------------------------------------------------------------------- */

/* What a validated call computes: the weight rows, the kernel, and x in its form. */
typedef struct plan {
    const uint8_t *w;          /* row 0 of the tensor */
    size_t row_bytes;
    size_t n_blocks;           /* per row */
    tm_type type;
    uint32_t block_elems;
    tm__mv_f32_fn *f32;        /* the row kernel, or NULL: decode + dot */
    tm__mv_q8_fn *q8;          /* the 8-bit row kernel (TM_MATVEC_Q8), or NULL */
    tm__mv_f32_fn *dot;        /* the exact dot of decode + dot */
    const float *x;
    void *xq;                  /* x quantized (q8 only), owned by the plan */
    float *y;                  /* y[0] is row r0 */
    uint64_t r0;
} plan;

/* The 8-bit layout of x for a weight of block_elems: q8_K (256 elements) for the K-quants,
 * i-quants and ternary types, q8_0 (32) for the blocks made of 32s (nvfp4's 64, q1_0's 128),
 * as ggml pairs them; 0 for the plain and integer types, which keep x in float32 (or, for f16
 * and bf16 on a path with a Q8 kernel for them, take it in 16 bits: tm__f16x). */
static uint32_t x_block_elems(uint32_t block_elems)
{
    return block_elems % 256 == 0 ? 256 : block_elems % 32 == 0 ? 32 : 0;
}

/* x (n_blocks x-blocks of xb elements, 32 or 256) as q8_0 / q8_K blocks at out */
static void quantize_x(const float *x, size_t n_blocks, uint32_t xb, void *out)
{
    if (xb == 32) {
        tm__q8_0x *b = out;
        for (size_t i = 0; i < n_blocks; i++)
            tm__quantize_block(x + 32 * i, 32, &b[i].d, b[i].qs);
        return;
    }
    tm__q8_Kx *b = out;
    for (size_t i = 0; i < n_blocks; i++) {
        tm__quantize_block(x + 256 * i, 256, &b[i].d, b[i].qs);
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += b[i].qs[16 * g + j];
            b[i].bsums[g] = (int16_t)s;
        }
    }
}

/* Check the arguments and choose the kernels; rows [r0, r1) of t. */
static tm_status make_plan(const char *fn, const tm_tensor *t, uint64_t r0, uint64_t r1,
                           const float *x, float *y, unsigned mode, plan *p, tm_error *err)
{
    char what[128];
    if (!t)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "%s: tensor is NULL", fn);
    if (!x || !y)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset, "%s: %s: %s is NULL", fn,
                        tm__tensor_label(t, what, sizeof what), x ? "y" : "x");
    if (mode != TM_MATVEC_F32 && mode != TM_MATVEC_Q8)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %s: mode %u is neither TM_MATVEC_F32 (0) nor TM_MATVEC_Q8 (1)", fn,
                        tm__tensor_label(t, what, sizeof what), mode);
    const int slot = tm__type_slot(t->type);
    if (slot < 0 || !tm_type_can_dequant(t->type))
        return tm__no_decoder(fn, t, t->type, err);
    const uint32_t be = tm_type_block_elems(t->type);
    const uint64_t cols = t->ne[0], rows = tm_tensor_rows(t);
    if (cols % be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %s: a row of %" PRIu64 " elements is not a whole number of %u-element "
                        "blocks",
                        fn, tm__tensor_label(t, what, sizeof what), (uint64_t)cols, be);
    if (r0 > r1 || r1 > rows)
        return tm__fail(
            err, TM_INVALID_ARG, t->info_offset,
            "%s: %s: rows [%" PRIu64 ", %" PRIu64 ") are not a range inside its %" PRIu64 " rows",
            fn, tm__tensor_label(t, what, sizeof what), (uint64_t)r0, (uint64_t)r1, (uint64_t)rows);
    tm_status st = tm__tensor_whole(t, err);
    if (st != TM_OK)
        return st;
    if (rows && !t->data && !tm__tensor_is_remote(t))
        return tm__fail(err, TM_INVALID_ARG, t->info_offset, "%s: %s has no data", fn,
                        tm__tensor_label(t, what, sizeof what));

    const tm__kernels *k = tm__active_kernels(fn, err);
    if (!k)
        return TM_ISA;
    memset(p, 0, sizeof *p);
    p->w = t->data;
    p->n_blocks = (size_t)(cols / be);
    p->row_bytes = p->n_blocks * tm_type_block_bytes(t->type);
    p->type = t->type;
    p->block_elems = be;
    p->f32 = k->mv_f32[slot];
    /* decode + dot takes the scalar f32 dot: each product exact in double. A SIMD float dot
     * broke 1e-6 on golden iq1_m and q1_0 rows whose terms sum to 300 times max|y|. */
    p->dot = tm__path_kernels(TM__ISA_SCALAR)->mv_f32[TM__SLOT(TM_TYPE_F32)];
    p->x = x;
    p->y = y;
    p->r0 = r0;
    const uint32_t xb = x_block_elems(be);
    /* a plain type's Q8 kernel (f16, bf16 on x86) takes x in its own layout, from its x_q8 */
    if (mode == TM_MATVEC_Q8 && r1 > r0 && (xb || k->x_q8[slot]))
        p->q8 = k->mv_q8[slot];
    if (tm__tensor_is_remote(t)) {
        p->q8 = NULL; /* the checks are done; remote_rows plans each fetched piece */
        return TM_OK;
    }
    if (p->q8) {
        /* x in the layout of the path's own x_q8 (f16, bf16 on x86; q4_1, q5_1, q1_0 on AVX2),
         * else as q8_0 / q8_K blocks; on a cache line either way (tm__f16x's halves want one) */
        tm__x_q8_fn *own = k->x_q8[slot];
        const size_t n_x = p->n_blocks * be, nx = xb ? n_x / xb : 0;
        const size_t bytes = own ? own(NULL, n_x, NULL)
                                 : nx * (xb == 32 ? sizeof(tm__q8_0x) : sizeof(tm__q8_Kx));
        if (!(p->xq = aligned_alloc(64, bytes / 64 * 64 + 64)))
            return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                            "%s: %s: no memory for x quantized to 8 bits (%zu bytes)", fn,
                            tm__tensor_label(t, what, sizeof what), bytes);
        if (own)
            own(x, n_x, p->xq);
        else
            quantize_x(x, nx, xb, p->xq);
    }
    return TM_OK;
}

/* Decode + dot: FALLBACK_FLOATS at a time, every product and sum in double, in order. */
static float fallback_row(const plan *p, const uint8_t *row)
{
    float buf[FALLBACK_FLOATS];
    const size_t per = FALLBACK_FLOATS / p->block_elems, bb = p->row_bytes / p->n_blocks;
    double acc = 0.0;
    for (size_t b = 0; b < p->n_blocks; b += per) {
        const size_t nb = p->n_blocks - b < per ? p->n_blocks - b : per;
        /* cannot fail: the type has a decoder and the path was checked by make_plan */
        (void)tm_dequant_raw(p->type, row + b * bb, nb * p->block_elems, buf, NULL);
        acc += (double)p->dot(buf, p->x + b * p->block_elems, nb * p->block_elems);
    }
    return (float)acc;
}

/* y for rows [a, b) of the plan's tensor (a, b counted from row 0 of the tensor). */
static void run_rows(const plan *p, uint64_t a, uint64_t b)
{
    for (uint64_t r = a; r < b; r++) {
        const uint8_t *row = p->w + r * p->row_bytes;
        float v;
        if (p->q8)
            v = p->q8(row, p->xq, p->n_blocks);
        else if (p->f32)
            v = p->f32(row, p->x, p->n_blocks);
        else
            v = fallback_row(p, row);
        p->y[r - p->r0] = v;
    }
}

/* A remote tensor's rows: fetched a piece of whole rows at a time (fetch.c), each piece
 * multiplied as a local tensor, so the result is the local one's bit for bit. */
typedef struct remote_mv {
    const float *x;
    float *y;
    unsigned mode, n_threads;
    uint64_t row_blocks;
} remote_mv;

static tm_status multiply_piece(const tm_tensor *piece, uint64_t done, void *ctx, tm_error *err)
{
    const remote_mv *m = ctx;
    return tm_matvec(piece, m->x, m->y + done / m->row_blocks, m->mode, m->n_threads, err);
}

static tm_status remote_rows(const plan *p, const tm_tensor *w, uint64_t r0, uint64_t r1,
                             unsigned mode, unsigned n_threads, tm_error *err)
{
    remote_mv m = {p->x, p->y, mode, n_threads, p->n_blocks};
    return tm__remote_pieces(w, r0 * p->n_blocks, (r1 - r0) * p->n_blocks, p->n_blocks,
                             multiply_piece, &m, err);
}

tm_status tm_matvec_rows(const tm_tensor *w, uint64_t r0, uint64_t r1, const float *x, float *y,
                         unsigned mode, tm_error *err)
{
    plan p;
    tm_status st = make_plan("tm_matvec_rows", w, r0, r1, x, y, mode, &p, err);
    if (st != TM_OK)
        return st;
    if (tm__tensor_is_remote(w))
        return remote_rows(&p, w, r0, r1, mode, 1, err);
    run_rows(&p, r0, r1);
    free(p.xq);
    return TM_OK;
}

/* ---- all rows on N threads ----------------------------------------------------------------- */

/* Rows [first, first + n) of the plan ctx: one chunk of tm_matvec. */
static void run_chunk(const void *ctx, uint64_t first, uint64_t n)
{
    run_rows(ctx, first, first + n);
}

tm_status tm_matvec(const tm_tensor *w, const float *x, float *y, unsigned mode,
                    unsigned n_threads, tm_error *err)
{
    const uint64_t rows = w ? tm_tensor_rows(w) : 0;
    plan p;
    tm_status st = make_plan("tm_matvec", w, 0, rows, x, y, mode, &p, err);
    if (st != TM_OK)
        return st;
    if (tm__tensor_is_remote(w))
        return remote_rows(&p, w, 0, rows, mode, n_threads, err);
    const uint64_t chunk_rows =
        p.row_bytes >= TM__CHUNK_BYTES ? 1 : TM__CHUNK_BYTES / (p.row_bytes ? p.row_bytes : 1);
    tm__run_chunks(run_chunk, &p, rows, chunk_rows, n_threads);
    free(p.xq);
    return TM_OK;
}

/* ---- one column of tm_matmul (matmul.c) ---------------------------------------------------- */

/* matmul.c multiplies each column of X by this file's plan and row loop, so that column j of Y
 * is tm_matvec's y for x = X[:, j] bit for bit, whatever kernels this file comes to choose. */
size_t tm__mv_column_size(void)
{
    return sizeof(plan);
}

tm_status tm__mv_column_plan(const char *fn, const tm_tensor *w, const float *x, float *y,
                             unsigned mode, void *col, tm_error *err)
{
    return make_plan(fn, w, 0, w ? tm_tensor_rows(w) : 0, x, y, mode, col, err);
}

void tm__mv_column_rows(const void *col, uint64_t a, uint64_t b)
{
    run_rows(col, a, b);
}

const void *tm__mv_column_xq(const void *col)
{
    const plan *p = col;
    return p->q8 ? p->xq : NULL;
}

void tm__mv_column_free(void *col)
{
    free(((plan *)col)->xq);
}
