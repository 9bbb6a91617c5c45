/* tm_matmul: Y = W X for n columns of X, W read from memory once per tile of its rows.
 *
 * Each column is one of tm_matvec's plans (matvec.c: the same checks, kernel choice and x
 * quantization); the rows are cut into tiles of about TILE_BYTES of W, and every column runs over
 * a tile before the next tile is touched, so a tile comes from DRAM once and is re-read n times
 * from the cache. Threads take whole tiles (tm__run_chunks). Each Y[r][j] is computed by the call
 * tm_matvec makes for row r and x = X[:, j], or, for groups of TM__MM_COLS columns, by the
 * path's batched kernel for the 1-column kernel the plans run, which unpacks (or widens) a row's
 * blocks once for the group and gives each column the 1-column kernel's bits (kernels.h:
 * tm__mm_q8_fn for the 8-bit kernels, tm__mm_f32_fn for f16, bf16 and f32 with x in float32). So
 * column j of Y is tm_matvec's y bit for bit, and no thread count, tile size or set of other
 * columns can change a bit of it. */
#include "../common/internal.h"
#include "compute.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* W per tile: a quarter of a 512 KiB-1 MiB L2, leaving the rest to the columns of X streaming by */
#define TILE_BYTES (128u << 10)

/* Columns and rows go by in blocks of BLOCK (run_tile) */
#define BLOCK 16u
_Static_assert(BLOCK % TM__MM_COLS == 0, "a block of columns is whole groups of the kernel's");
_Static_assert(BLOCK <= TM__MM_ROWS, "a block of rows is one call of a batched kernel");

typedef struct columns {
    unsigned char *plans; /* n plans of tm__mv_column_size() bytes, stride apart */
    size_t stride;
    uint64_t n;
    /* the batched kernel for the type and the plans' 1-column kernel on this path, at most one
     * of the two; both NULL: every column runs its plan. Groups of TM__MM_COLS columns go
     * through it: mm_q8 with xq[j] column j quantized (the plan's own), mm_f32 with column j at
     * X + j * k (the plan's x) */
    tm__mm_q8_fn *mm_q8;
    const void **xq;
    tm__mm_f32_fn *mm_f32;
    const float *X;
    uint64_t k;
    const uint8_t *w; /* row 0 */
    size_t row_bytes, n_blocks;
    float *Y;         /* column j at Y + j * ldy */
    uint64_t ldy;
} columns;

/* Rows [r0, r1) (at most BLOCK) of columns [j, j + TM__MM_COLS) by the batched kernel: each
 * row's blocks are read and unpacked (or widened) once for the group, and each y is the 1-column
 * kernel's bit for bit. */
static void batched_rows(const columns *c, uint64_t j, uint64_t r0, uint64_t r1)
{
    float y[BLOCK][TM__MM_COLS];
    if (c->mm_q8)
        c->mm_q8(c->w + r0 * c->row_bytes, c->row_bytes, (size_t)(r1 - r0), c->xq + j,
                 c->n_blocks, y[0]);
    else {
        const float *x[TM__MM_COLS];
        for (unsigned k = 0; k < TM__MM_COLS; k++)
            x[k] = c->X + (j + k) * c->k;
        c->mm_f32(c->w + r0 * c->row_bytes, c->row_bytes, (size_t)(r1 - r0), x, c->n_blocks,
                  y[0]);
    }
    for (uint64_t r = r0; r < r1; r++)
        for (unsigned k = 0; k < TM__MM_COLS; k++)
            c->Y[(j + k) * c->ldy + r] = y[r - r0][k];
}

/* Rows [first, first + count): every column over this tile, in blocks of BLOCK columns by
 * BLOCK rows (as ggml's mul_mat blocks its vec_dot calls), so that a block's rows and columns
 * stay in the nearest cache while each meets all of the other's. Inside a block, whole groups
 * of TM__MM_COLS columns take the batched kernel when there is one, the rest the 1-column
 * kernel (the same bits either way). */
static void run_tile(const void *ctx, uint64_t first, uint64_t count)
{
    const columns *c = ctx;
    for (uint64_t j0 = 0; j0 < c->n; j0 += BLOCK) {
        const uint64_t j1 = c->n - j0 < BLOCK ? c->n : j0 + BLOCK;
        for (uint64_t r = first; r < first + count; r += BLOCK) {
            const uint64_t r1 = first + count - r < BLOCK ? first + count : r + BLOCK;
            uint64_t j = j0;
            for (; (c->mm_q8 || c->mm_f32) && j1 - j >= TM__MM_COLS; j += TM__MM_COLS)
                batched_rows(c, j, r, r1);
            for (; j < j1; j++)
                tm__mv_column_rows(c->plans + j * c->stride, r, r1);
        }
    }
}

/* Y's column j is at Y + j * ldy (ldy: the rows of the whole tensor, also for a remote piece). */
typedef struct call {
    const float *X;
    uint64_t n;
    float *Y;
    uint64_t ldy;
    unsigned mode, n_threads;
    uint64_t row_blocks;
} call;

static tm_status multiply(const tm_tensor *w, const call *a, tm_error *err);

static tm_status multiply_piece(const tm_tensor *piece, uint64_t done, void *ctx, tm_error *err)
{
    call a = *(const call *)ctx;
    a.Y += done / a.row_blocks;
    return multiply(piece, &a, err);
}

/* c->mm_q8 and c->xq when the columns' plans run the path's 8-bit row kernel and the path has
 * a batched one for the type; c->mm_f32 and c->X when they run its float32 row kernel (every
 * plan that quantizes no x and has the path's kernel) and the path has a batched one of those.
 * isa.c keeps a batched kernel only beside the 1-column kernel it reproduces. */
static tm_status use_batched_kernel(const tm_tensor *w, const call *a, columns *c, tm_error *err)
{
    const int slot = tm__type_slot(w->type);
    const tm__kernels *k = tm__active_kernels("tm_matmul", err);
    if (!k) /* cannot happen: the plans were made on this path */
        return TM_ISA;
    if (slot < 0 || c->n < TM__MM_COLS)
        return TM_OK;
    c->w = w->data;
    c->n_blocks = (size_t)(w->ne[0] / tm_type_block_elems(w->type));
    c->row_bytes = c->n_blocks * tm_type_block_bytes(w->type);
    if (!tm__mv_column_xq(c->plans)) {
        c->mm_f32 = k->mv_f32[slot] ? k->mm_f32[slot] : NULL;
        c->X = a->X;
        c->k = w->ne[0];
        return TM_OK;
    }
    if (!k->mm_q8[slot])
        return TM_OK;
    char what[128];
    if (!(c->xq = malloc((size_t)c->n * sizeof *c->xq)))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "tm_matmul: %s: no memory for %" PRIu64 " column pointers",
                        tm__tensor_label(w, what, sizeof what), (uint64_t)c->n);
    for (uint64_t j = 0; j < c->n; j++)
        c->xq[j] = tm__mv_column_xq(c->plans + j * c->stride);
    c->mm_q8 = k->mm_q8[slot];
    return TM_OK;
}

static tm_status multiply(const tm_tensor *w, const call *a, tm_error *err)
{
    const uint64_t k = w->ne[0], rows = tm_tensor_rows(w);
    const size_t align = alignof(max_align_t);
    const size_t stride = (tm__mv_column_size() + align - 1) / align * align;
    columns c = { .stride = stride, .Y = a->Y, .ldy = a->ldy };
    char what[128];
    if (a->n > SIZE_MAX / stride || !(c.plans = malloc((size_t)a->n * stride)))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "tm_matmul: %s: no memory for %" PRIu64 " column "
                        "plans",
                        tm__tensor_label(w, what, sizeof what), (uint64_t)a->n);
    tm_status st = TM_OK;
    for (; c.n < a->n && st == TM_OK; c.n++)
        st = tm__mv_column_plan("tm_matmul", w, a->X + c.n * k, a->Y + c.n * a->ldy, a->mode,
                                c.plans + c.n * stride, err);
    if (st != TM_OK)
        c.n--; /* the failed plan holds nothing */
    else if (tm__tensor_is_remote(w)) {
        call piece = *a;
        piece.row_blocks = k / tm_type_block_elems(w->type);
        st = tm__remote_pieces(w, 0, rows * piece.row_blocks, piece.row_blocks, multiply_piece,
                               &piece, err);
    } else {
        const uint64_t row_bytes = k / tm_type_block_elems(w->type) * tm_type_block_bytes(w->type);
        const uint64_t tile = row_bytes >= TILE_BYTES ? 1 : TILE_BYTES / (row_bytes ? row_bytes : 1);
        st = use_batched_kernel(w, a, &c, err);
        if (st == TM_OK)
            tm__run_chunks(run_tile, &c, rows, tile, a->n_threads);
        free(c.xq);
    }
    for (uint64_t j = 0; j < c.n; j++)
        tm__mv_column_free(c.plans + j * stride);
    free(c.plans);
    return st;
}

tm_status tm_matmul(const tm_tensor *w, const float *X, uint64_t k, uint64_t n, float *Y,
                    unsigned mode, unsigned n_threads, tm_error *err)
{
    char what[128];
    if (!w)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_matmul: tensor is NULL");
    if (!X || !Y)
        return tm__fail(err, TM_INVALID_ARG, w->info_offset, "tm_matmul: %s: %s is NULL",
                        tm__tensor_label(w, what, sizeof what), X ? "Y" : "X");
    if (n == 0)
        return tm__fail(err, TM_INVALID_ARG, w->info_offset, "tm_matmul: %s: n is 0 (X has no "
                        "columns)", tm__tensor_label(w, what, sizeof what));
    if (k != w->ne[0])
        return tm__fail(err, TM_INVALID_ARG, w->info_offset,
                        "tm_matmul: %s: X has columns of "
                        "%" PRIu64 " values, the tensor's rows have %" PRIu64,
                        tm__tensor_label(w, what, sizeof what), (uint64_t)k, (uint64_t)w->ne[0]);
    const call a = { X, n, Y, tm_tensor_rows(w), mode, n_threads, 0 };
    return multiply(w, &a, err);
}
