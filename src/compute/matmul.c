/* tm_matmul: Y = W X for n columns of X, W read from memory once per tile of its rows.
 *
 * Each column is one of tm_matvec's plans (matvec.c: the same checks, kernel choice and x
 * quantization); the rows are cut into tiles of about TILE_BYTES of W, and every column runs over
 * a tile before the next tile is touched, so a tile comes from DRAM once and is re-read n times
 * from the cache. Threads take whole tiles (tm__run_chunks). Each Y[r][j] is computed by the call
 * tm_matvec makes for row r and x = X[:, j], so column j of Y is tm_matvec's y bit for bit, and
 * no thread count, tile size or set of other columns can change a bit of it. */
#include "../common/internal.h"
#include "compute.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* W per tile: a quarter of a 512 KiB-1 MiB L2, leaving the rest to the columns of X streaming by */
#define TILE_BYTES (128u << 10)

typedef struct columns {
    unsigned char *plans; /* n plans of tm__mv_column_size() bytes, stride apart */
    size_t stride;
    uint64_t n;
} columns;

/* Rows [first, first + count): every column over this tile, in blocks of BLOCK columns by
 * BLOCK rows (as ggml's mul_mat blocks its vec_dot calls), so that a block's rows and columns
 * stay in the nearest cache while each meets all of the other's. */
#define BLOCK 16u

static void run_tile(const void *ctx, uint64_t first, uint64_t count)
{
    const columns *c = ctx;
    for (uint64_t j0 = 0; j0 < c->n; j0 += BLOCK) {
        const uint64_t j1 = c->n - j0 < BLOCK ? c->n : j0 + BLOCK;
        for (uint64_t r = first; r < first + count; r += BLOCK) {
            const uint64_t r1 = first + count - r < BLOCK ? first + count : r + BLOCK;
            for (uint64_t j = j0; j < j1; j++)
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

static tm_status multiply(const tm_tensor *w, const call *a, tm_error *err)
{
    const uint64_t k = w->ne[0], rows = tm_tensor_rows(w);
    const size_t align = alignof(max_align_t);
    const size_t stride = (tm__mv_column_size() + align - 1) / align * align;
    columns c = { NULL, stride, 0 };
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
        tm__run_chunks(run_tile, &c, rows, tile, a->n_threads);
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
