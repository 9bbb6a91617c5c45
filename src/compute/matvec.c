/* tm_matvec_rows and tm_matvec: y = W x straight from the quantized blocks in the mapping.
 *
 * The instruction-set path is the dequant kernels' (tm_isa(): TM_ISA or cpuid, tm_set_isa). Per
 * type and mode, the kernel is taken from that path's table, else from the next path down
 * (avx512 -> avx2 -> scalar, neon -> scalar), else a row is computed here by decoding a few
 * blocks at a time into a stack buffer (tm_dequant_raw, bit-exact on every path) and taking their
 * dot with x in double. So a type that gains a decoder works in both modes with no change
 * here. In TM_MATVEC_Q8, a type with no 8-bit kernel on any path falls back to that float32
 * computation, so it is exact to float32 rather than to 8 bits.
 *
 * Determinism: every row is computed by one kernel call whose order of operations depends only
 * on the row, so splitting the rows over threads cannot change a bit of y. Nothing here is
 * compiled with -m flags. */
#include "../common/internal.h"
#include "matvec.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tm_matvec: threads take rows in chunks of about this many bytes of W from a shared counter,
 * so a descheduled thread holds back one chunk, not its share */
#define CHUNK_BYTES (256u << 10)
/* the fallback decodes this many floats at a time (16 KiB of stack; a multiple of every block) */
#define FALLBACK_FLOATS 4096u

/* ---- the path ------------------------------------------------------------------------------ */

/* Each path and the paths its missing kernels fall back to, best first. */
static const tm__matvec_kernels *const *chain_named(const char *name)
{
    static const tm__matvec_kernels *const scalar[] = { &tm__matvec_scalar, NULL };
#if defined(__x86_64__)
    static const tm__matvec_kernels *const avx2[] = { &tm__matvec_avx2, &tm__matvec_scalar, NULL };
    static const tm__matvec_kernels *const avx512[] = { &tm__matvec_avx512, &tm__matvec_avx2,
                                                        &tm__matvec_scalar, NULL };
    if (strcmp(name, "avx512") == 0)
        return avx512;
    if (strcmp(name, "avx2") == 0)
        return avx2;
#endif
#if defined(__aarch64__)
    static const tm__matvec_kernels *const neon[] = { &tm__matvec_neon, &tm__matvec_scalar, NULL };
    if (strcmp(name, "neon") == 0)
        return neon;
#endif
    return strcmp(name, "scalar") == 0 ? scalar : NULL;
}

static tm__mv_f32_fn *find_f32(const tm__matvec_kernels *const *chain, int slot)
{
    for (; *chain; chain++)
        if ((*chain)->f32[slot])
            return (*chain)->f32[slot];
    return NULL;
}

static tm__mv_q8_fn *find_q8(const tm__matvec_kernels *const *chain, int slot)
{
    for (; *chain; chain++)
        if ((*chain)->q8[slot])
            return (*chain)->q8[slot];
    return NULL;
}

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

static const char *label(const tm_tensor *t, char *buf, size_t cap)
{
    char q[96];
    tm__quote(q, sizeof q, t->name.ptr, t->name.len);
    snprintf(buf, cap, "tensor %s", q);
    return buf;
}

/* ggml's quantize_row_q8_0: d = max|x| / 127, q = round(x / d). The reciprocal is taken in
 * double so that tiny blocks (max|x| < 127 * FLT_MIN) do not overflow it. A NaN or an infinity
 * in the block makes d NaN or infinite (and every code 0), so y comes out NaN, not a number
 * that hides it. */
static void quantize_block(const float *x, int n, float *d, int8_t *qs)
{
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float a = x[j] < 0 ? -x[j] : x[j];
        amax = a > amax || a != a ? a : amax; /* a NaN, once seen, stays */
    }
    *d = amax / 127.0f;
    const double id = amax > 0.0f && amax <= 3.4028234663852886e38 ? 127.0 / (double)amax : 0.0;
    for (int j = 0; j < n; j++) {
        const double v = (double)x[j] * id; /* in [-127, 127] when finite */
        qs[j] = (int8_t)(v >= 0.5 ? (int)(v + 0.5) : v <= -0.5 ? -(int)(0.5 - v) : 0);
    }
}

static void quantize_x(const float *x, size_t n_blocks, uint32_t block_elems, void *out)
{
    if (block_elems == 32) {
        tm__q8_0x *b = out;
        for (size_t i = 0; i < n_blocks; i++)
            quantize_block(x + 32 * i, 32, &b[i].d, b[i].qs);
        return;
    }
    tm__q8_Kx *b = out;
    for (size_t i = 0; i < n_blocks; i++) {
        quantize_block(x + 256 * i, 256, &b[i].d, b[i].qs);
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
                        label(t, what, sizeof what), x ? "y" : "x");
    if (mode != TM_MATVEC_F32 && mode != TM_MATVEC_Q8)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %s: mode %u is neither TM_MATVEC_F32 (0) nor TM_MATVEC_Q8 (1)", fn,
                        label(t, what, sizeof what), mode);
    const int slot = tm__type_slot(t->type);
    if (slot < 0 || !tm_type_can_dequant(t->type)) {
        const char *tn = tm_type_name(t->type);
        if (tn)
            return tm__fail(err, TM_UNSUPPORTED, t->info_offset,
                            "%s: %s: type %s has no decoder in this library", fn,
                            label(t, what, sizeof what), tn);
        return tm__fail(err, TM_UNSUPPORTED, t->info_offset,
                        "%s: %s: type id %u is not a known type", fn, label(t, what, sizeof what),
                        (unsigned)t->type);
    }
    const uint32_t be = tm_type_block_elems(t->type);
    const uint64_t cols = t->ne[0], rows = tm_tensor_rows(t);
    if (cols % be != 0)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %s: a row of %llu elements is not a whole number of %u-element "
                        "blocks", fn, label(t, what, sizeof what), (unsigned long long)cols, be);
    if (r0 > r1 || r1 > rows)
        return tm__fail(err, TM_INVALID_ARG, t->info_offset,
                        "%s: %s: rows [%llu, %llu) are not a range inside its %llu rows", fn,
                        label(t, what, sizeof what), (unsigned long long)r0,
                        (unsigned long long)r1, (unsigned long long)rows);
    tm_status st = tm__tensor_whole(t, err);
    if (st != TM_OK)
        return st;
    if (rows && !t->data && !tm__tensor_is_remote(t))
        return tm__fail(err, TM_INVALID_ARG, t->info_offset, "%s: %s has no data", fn,
                        label(t, what, sizeof what));

    const char *isa = tm_isa();
    const tm__matvec_kernels *const *chain = chain_named(isa);
    if (!chain) {
        const char *env = getenv("TM_ISA");
        char q[80];
        tm__quote(q, sizeof q, env ? env : isa, env ? strlen(env) : strlen(isa));
        return tm__fail(err, TM_ISA, TM_NO_OFFSET,
                        "%s: TM_ISA=%s names an instruction set this machine cannot run "
                        "(tm_set_isa chooses another)", fn, q);
    }
    memset(p, 0, sizeof *p);
    p->w = t->data;
    p->n_blocks = (size_t)(cols / be);
    p->row_bytes = p->n_blocks * tm_type_block_bytes(t->type);
    p->type = t->type;
    p->block_elems = be;
    p->f32 = find_f32(chain, slot);
    /* decode + dot takes the scalar f32 dot: each product exact in double. A SIMD float dot
     * broke 1e-6 on golden iq1_m and q1_0 rows whose terms sum to 300 times max|y|. */
    p->dot = tm__matvec_scalar.f32[TM_TYPE_F32];
    p->x = x;
    p->y = y;
    p->r0 = r0;
    if (mode == TM_MATVEC_Q8 && (be == 32 || be == 256) && r1 > r0)
        p->q8 = find_q8(chain, slot);
    if (tm__tensor_is_remote(t)) {
        p->q8 = NULL; /* the checks are done; remote_rows plans each fetched piece */
        return TM_OK;
    }
    if (p->q8) {
        const size_t bytes = p->n_blocks * (be == 32 ? sizeof(tm__q8_0x) : sizeof(tm__q8_Kx));
        p->xq = malloc(bytes ? bytes : 1);
        if (!p->xq)
            return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                            "%s: %s: no memory for x quantized to 8 bits (%zu bytes)", fn,
                            label(t, what, sizeof what), bytes);
        quantize_x(x, p->n_blocks, be, p->xq);
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

typedef struct shared_rows {
    const plan *p;
    uint64_t rows, chunk_rows;
    atomic_uint_fast64_t next;
} shared_rows;

static void *worker(void *arg)
{
    shared_rows *s = arg;
    for (;;) {
        const uint64_t a = atomic_fetch_add_explicit(&s->next, s->chunk_rows, memory_order_relaxed);
        if (a >= s->rows)
            return NULL;
        run_rows(s->p, a, s->rows - a < s->chunk_rows ? s->rows : a + s->chunk_rows);
    }
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
    shared_rows s = { .p = &p, .rows = rows };
    s.chunk_rows = p.row_bytes >= CHUNK_BYTES ? 1 : CHUNK_BYTES / (p.row_bytes ? p.row_bytes : 1);
    atomic_init(&s.next, 0);

    tm__run_workers(worker, &s, n_threads, (rows + s.chunk_rows - 1) / s.chunk_rows);
    free(p.xq);
    return TM_OK;
}
