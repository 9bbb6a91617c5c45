/* ggml beside tensormap in bench/matvec and bench/matmul: the same W and the same x through
 * ggml's own CPU code, in the same process and the same run, so that every figure has ggml's
 * beside it measured under the same load. Compiled only with -DTM_BENCH_GGML (`make bench
 * GGML=DIR`, DIR a ggml source tree built with cmake in DIR/build); without it this header
 * declares only an empty ggml_side_print, and the benches print fractions of the read ceiling
 * alone.
 *
 * - matvec: what ggml does per row of y = W x on one thread — x converted once to the
 *   weight's vec_dot_type by that type's from_float (q8_0 / q8_K / f16 / bf16), then the
 *   type's vec_dot row by row (ggml_get_type_traits_cpu).
 * - matmul: Y = W X as ggml_mul_mat in a one-node graph computed by the CPU backend
 *   (ggml_backend_cpu_init) on a chosen number of threads. W, X and Y are the benches' own
 *   buffers, wrapped by ggml_backend_cpu_buffer_from_ptr: nothing is copied, and ggml reads
 *   the very bytes tensormap reads. ggml's src1 layout (ne0 = k, ne1 = n) and result layout
 *   (ne0 = rows, ne1 = n) are tm_matmul's X[n][k] and Y[n][rows].
 * Header-only, like bench.h: each bench is a program of its own. */
#ifndef TM_BENCH_GGML_SIDE_H
#define TM_BENCH_GGML_SIDE_H
#ifdef TM_BENCH_GGML

#include "tensormap.h"

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* "ggml ..." line for the header: which ggml, and whether its llamafile (tinyBLAS) matrix
 * products are built in (they change mul_mat for f16, bf16, q8_0, q4_0 and more) */
static inline void ggml_side_print(void)
{
    printf("ggml      %s (commit %s), llamafile/tinyBLAS %s, avx2 %d, avx512 %d, avx_vnni %d\n",
           ggml_version(), ggml_commit(), ggml_cpu_has_llamafile() ? "on" : "off",
           ggml_cpu_has_avx2(), ggml_cpu_has_avx512(), ggml_cpu_has_avx_vnni());
}

/* ggml's type of the same name (ggml's ids and names are GGUF's, as tensormap's), or
 * GGML_TYPE_COUNT when ggml has no such type. */
static inline enum ggml_type ggml_side_type(tm_type t)
{
    for (int g = 0; g < GGML_TYPE_COUNT; g++) {
        const char *name = ggml_type_name((enum ggml_type)g);
        if (name && strcmp(name, tm_type_name(t)) == 0)
            return (enum ggml_type)g;
    }
    return GGML_TYPE_COUNT;
}

/* ---- matvec: from_float + vec_dot ----------------------------------------------------------- */

typedef struct ggml_side_dot {
    enum ggml_type type, x_type;          /* the weight's and the one x is converted to */
    const struct ggml_type_traits_cpu *w; /* the weight's traits: vec_dot */
    const struct ggml_type_traits_cpu *x; /* x's: from_float */
    void *xq;                             /* x converted, ggml_row_size(x_type, k) bytes */
} ggml_side_dot;

/* Sets d up for weights of type t and rows of k; false (d unusable) when ggml has no one-row
 * vec_dot for the type or no memory. */
static inline bool ggml_side_dot_init(ggml_side_dot *d, tm_type t, int64_t k)
{
    memset(d, 0, sizeof *d);
    ggml_cpu_init(); /* ggml's f16 tables; idempotent */
    d->type = ggml_side_type(t);
    if (d->type == GGML_TYPE_COUNT)
        return false;
    d->w = ggml_get_type_traits_cpu(d->type);
    d->x_type = d->w->vec_dot_type;
    d->x = ggml_get_type_traits_cpu(d->x_type);
    if (!d->w->vec_dot || !d->x->from_float || d->w->nrows != 1)
        return false;
    d->xq = aligned_alloc(64, (ggml_row_size(d->x_type, k) + 63) / 64 * 64);
    return d->xq != NULL;
}

static inline void ggml_side_dot_free(ggml_side_dot *d) { free(d->xq); }

/* y[r] = row r of W · x for rows rows of k weights, row_bytes apart from w, on this thread. */
static inline void ggml_side_matvec(const ggml_side_dot *d, const uint8_t *w, size_t rows,
                                    size_t row_bytes, int k, const float *x, float *y)
{
    d->x->from_float(x, d->xq, k);
    for (size_t r = 0; r < rows; r++)
        d->w->vec_dot(k, &y[r], 0, w + r * row_bytes, 0, d->xq, 0, 1);
}

/* ---- matmul: a mul_mat graph on the CPU backend -------------------------------------------- */

typedef struct ggml_side_matmul {
    ggml_backend_t cpu;
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    ggml_backend_buffer_t w, x, y;
} ggml_side_matmul;

static inline void ggml_side_matmul_free(ggml_side_matmul *m)
{
    ggml_backend_buffer_free(m->w), ggml_backend_buffer_free(m->x);
    ggml_backend_buffer_free(m->y), ggml_free(m->ctx), ggml_backend_free(m->cpu);
    memset(m, 0, sizeof *m);
}

/* Y = W X with W rows x k of type t at w (w_bytes), X n columns of k floats, Y n columns of
 * rows floats, on threads threads. Every buffer 32-byte aligned (ggml's TENSOR_ALIGNMENT).
 * False (m freed) when ggml has no such type or refuses. */
static inline bool ggml_side_matmul_init(ggml_side_matmul *m, tm_type t, uint8_t *w,
                                         size_t w_bytes, int64_t k, int64_t rows, float *X,
                                         int64_t n, float *Y, int threads)
{
    memset(m, 0, sizeof *m);
    const enum ggml_type type = ggml_side_type(t);
    if (type == GGML_TYPE_COUNT || !(m->cpu = ggml_backend_cpu_init()))
        return false;
    ggml_backend_cpu_set_n_threads(m->cpu, threads);
    const struct ggml_init_params params = {
        .mem_size = 3 * ggml_tensor_overhead() + ggml_graph_overhead(),
        .mem_buffer = NULL,
        .no_alloc = true, /* the tensors' data are our buffers */
    };
    if (!(m->ctx = ggml_init(params)))
        return ggml_side_matmul_free(m), false;
    struct ggml_tensor *a = ggml_new_tensor_2d(m->ctx, type, k, rows);
    struct ggml_tensor *b = ggml_new_tensor_2d(m->ctx, GGML_TYPE_F32, k, n);
    struct ggml_tensor *c = ggml_mul_mat(m->ctx, a, b);
    m->graph = ggml_new_graph(m->ctx);
    ggml_build_forward_expand(m->graph, c);
    const size_t x_bytes = (size_t)(k * n) * sizeof(float), y_bytes = (size_t)(rows * n) * sizeof(float);
    m->w = ggml_backend_cpu_buffer_from_ptr(w, w_bytes);
    m->x = ggml_backend_cpu_buffer_from_ptr(X, x_bytes);
    m->y = ggml_backend_cpu_buffer_from_ptr(Y, y_bytes);
    if (!m->w || !m->x || !m->y || ggml_nbytes(a) != w_bytes ||
        ggml_backend_tensor_alloc(m->w, a, w) != GGML_STATUS_SUCCESS ||
        ggml_backend_tensor_alloc(m->x, b, X) != GGML_STATUS_SUCCESS ||
        ggml_backend_tensor_alloc(m->y, c, Y) != GGML_STATUS_SUCCESS)
        return ggml_side_matmul_free(m), false;
    return true;
}

static inline bool ggml_side_matmul_run(ggml_side_matmul *m)
{
    return ggml_backend_graph_compute(m->cpu, m->graph) == GGML_STATUS_SUCCESS;
}

#else
static inline void ggml_side_print(void) {}
#endif
#endif
