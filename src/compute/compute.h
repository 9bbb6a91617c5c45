/* What the compute part's files share beyond the kernel ABI (kernels.h): the path in use and the
 * merged kernels (isa.c), and what the entry points (dequant.c, matvec.c) have in common
 * (entry.c). For them and for the white-box tests. */
#ifndef TM_COMPUTE_H
#define TM_COMPUTE_H

#include "kernels.h"
#include "tensormap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- isa.c: the paths and their merged kernels ---------------------------------------------- */

/* The kernels of the path in use (TM_ISA, tm_set_isa, or the best this CPU runs), every family
 * merged: a slot the path's own tables leave empty holds its fallback path's kernel, and stays
 * NULL only where no path below has one. NULL when TM_ISA names a path this machine cannot run;
 * err then says why (TM_ISA), after "fn: " when fn is not NULL. One acquire load once chosen. */
const tm__kernels *tm__active_kernels(const char *fn, tm_error *err);

/* The merged kernels of path isa (a TM__ISA_ id), whether or not this CPU can run it; NULL when
 * no kernel file of this build belongs to it. */
const tm__kernels *tm__path_kernels(unsigned isa);

/* The dequant kernel path isa runs for type, after the fallbacks; NULL when the path is not built
 * here or no path decodes the type. *from, when not NULL, gets the path whose own table holds
 * it. For the tests that pin which kernel each path holds. */
tm__dequant_fn *tm__kernel_for(unsigned isa, tm_type type, unsigned *from);

/* The same for tm_matvec's row kernels in mode (TM_MATVEC_F32, TM_MATVEC_Q8): true when path isa
 * has one for type (its own or a fallback's, *from says whose); false where it computes decode
 * + dot (TM_MATVEC_F32) or the float32 result (TM_MATVEC_Q8), or the path is not built here. */
bool tm__matvec_kernel_for(unsigned isa, tm_type type, unsigned mode, unsigned *from);

/* The same for tm_matmul's batched kernels, by the 1-column family they reproduce: mode
 * TM_MATVEC_Q8 the 8-bit ones (tm__mm_q8_fn), TM_MATVEC_F32 the float32-x ones (tm__mm_f32_fn,
 * which also serve TM_MATVEC_Q8 for the types that keep x in float32). True when path isa has
 * one for type; false where each column runs the 1-column kernel. */
bool tm__matmul_kernel_for(unsigned isa, tm_type type, unsigned mode, unsigned *from);

/* Table i (0, 1, ...) of the kernel files of this build and, in *isa, the path it belongs to;
 * NULL past the last. For the tests that check the tables of a path do not overlap. */
const tm__kernels *tm__kernel_table(size_t i, unsigned *isa);

/* ---- entry.c: what the entry points share --------------------------------------------------- */

/* The threaded calls (tm_dequant_tensor, tm_dequant_rows_mt, tm_matvec) hand out work in chunks
 * of about this many bytes: of output when decoding (a multiple of every block's output: 4, 128
 * and 1024 bytes), of W in tm_matvec (whole rows, at least one). */
#define TM__CHUNK_BYTES (256u << 10)

/* "tensor 'name'" (escaped, cut to fit) into buf, for messages; returns buf. */
const char *tm__tensor_label(const tm_tensor *t, char *buf, size_t cap);

/* TM_UNSUPPORTED for a type no path decodes, at t's info offset: "[fn: ]tensor 'name': type q8_K
 * has no decoder in this library", or "... type id 77 is not a known type" for an id the library
 * has no name for; "raw blocks" stand for the tensor when t is NULL (tm_dequant_raw). */
tm_status tm__no_decoder(const char *fn, const tm_tensor *t, tm_type type, tm_error *err);

/* Units [first, first + n) of one call's work. */
typedef void tm__chunk_fn(const void *ctx, uint64_t first, uint64_t n);

/* run over units [0, total) in chunks of chunk (>= 1; the last may be shorter), on n_threads
 * threads (0: one per CPU; the caller's is one of them) taking chunks from a shared counter.
 * Every unit goes through the same run call whichever thread takes it, so the result of a
 * deterministic run cannot depend on the threads. */
void tm__run_chunks(tm__chunk_fn *run, const void *ctx, uint64_t total, uint64_t chunk,
                    unsigned n_threads);

/* ---- matvec.c: one column of tm_matmul ------------------------------------------------------ */

/* An opaque plan of tm_matvec for one x (tm__mv_column_size() bytes, any malloc'd storage):
 * _plan checks w, x, y and mode as tm_matvec does (errors as it, fn naming the caller) and
 * quantizes x when the mode asks; _rows writes y[r] for rows [a, b) exactly as tm_matvec does;
 * _free releases what _plan allocated (only after _plan returned TM_OK). A remote w is planned
 * but not multiplied: the caller fetches it in pieces (tm__remote_pieces). */
size_t tm__mv_column_size(void);
tm_status tm__mv_column_plan(const char *fn, const tm_tensor *w, const float *x, float *y,
                             unsigned mode, void *col, tm_error *err);
void tm__mv_column_rows(const void *col, uint64_t a, uint64_t b);
void tm__mv_column_free(void *col);
/* x quantized to 8 bits (the layout tm__mv_q8_fn takes) when the plan runs the path's 8-bit row
 * kernel, else NULL: what tm_matmul's multi-column kernels (tm__mm_q8_fn) take. */
const void *tm__mv_column_xq(const void *col);

#endif /* TM_COMPUTE_H */
