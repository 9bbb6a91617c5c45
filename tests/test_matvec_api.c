/* tm_matvec_rows / tm_matvec against double-precision products computed here from ggml's own
 * decoded values (the golden corpus' .f32), never from this library's decoder: every type the
 * library decodes, both modes, every instruction-set path this CPU has (a path it lacks is a
 * visible skip). Then threads, row ranges, special x, random blocks, and the refusals.
 *
 * The bounds (derived in docs/matvec.md):
 *   TM_MATVEC_F32  per row, |y - W x| <= 2^-24 |W x| + 2^-20 sum_j |w_j x_j| (+ 2^-149 a term
 *                  for products below float's normal range): every row, whatever its terms do;
 *                  and on realistic rows (terms that do not cancel) that comes to
 *                  <= 1e-6 max|W x| over the tensor's rows, which the golden and random rows
 *                  are held to as well.
 *   TM_MATVEC_Q8   y is W xq to float32 rounding, where xq is x rounded as ggml does (per block
 *                  of 32 or 256: d = max|x| / 127, code = round(x / d)):
 *                  |y - W xq| <= 1e-4 max|W xq| (float32 sums over blocks, as ggml's); and so
 *                  |y - W x| <= sum_j |w_j| d_j / 2 + that. */
#include "../src/compute/compute.h"
#include "support/product_fixture.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The types with an 8-bit kernel: every block type; the plain and integer types (one element a
 * block) compute TM_MATVEC_Q8 in float32 (docs/matvec.md). */
static bool has_q8_kernel(tm_type t) { return tm_type_block_elems(t) > 1; }

/* The block of x's 8-bit layout for a weight type: q8_K's 256 for 256-element blocks, q8_0's 32
 * for the rest (docs/matvec.md). */
static size_t x_block(tm_type t) { return tm_type_block_elems(t) % 256 == 0 ? 256 : 32; }

/* x in (-1, 1), with a few exact zeros */
static float *make_x(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = i % 97 == 5 ? 0.0f : (float)((double)(splitmix64(seed + i) >> 40) * 0x1p-23 - 1.0);
    return x;
}

/* ---- the golden corpus --------------------------------------------------------------------- */


/* ---- references ---------------------------------------------------------------------------- */

/* x as TM_MATVEC_Q8 sees it, rounded as ggml's quantize_row_q8_0/q8_K do (blocks of n). */
static float *x_rounded(const float *x, size_t len, size_t n, double *half_step)
{
    float *q = malloc(len * sizeof *q);
    cr_assert(q);
    for (size_t b = 0; b < len; b += n) {
        float amax = 0;
        for (size_t j = b; j < b + n; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        for (size_t j = b; j < b + n; j++) {
            q[j] = amax > 0 ? (float)(round((double)x[j] * 127.0 / (double)amax) * (double)d) : 0.0f;
            half_step[j] = (double)d / 2;
        }
    }
    return q;
}

/* ref[r] = sum_c w[r][c] x[c] in double; *max = max_r |ref[r]|. */
static double *product(const float *w, const float *x, size_t rows, size_t cols, double *max)
{
    double *ref = malloc(rows * sizeof *ref);
    cr_assert(ref);
    *max = 0;
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t c = 0; c < cols; c++)
            s += (double)w[r * cols + c] * (double)x[c];
        ref[r] = s;
        *max = fmax(*max, fabs(s));
    }
    return ref;
}

/* TM_MATVEC_F32's bound for every row, terms that cancel or not (docs/matvec.md): each term
 * w_j x_j goes through at most 16 float roundings on its way to double, then y is rounded once. */
static void check_f32_bound(const char *what, const float *wf, const float *x, const float *y,
                            const double *ref, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        double abs_sum = 0;
        for (size_t c = 0; c < cols; c++)
            abs_sum += fabs((double)wf[r * cols + c] * (double)x[c]);
        const double bound = 0x1p-24 * fabs(ref[r]) + 0x1p-20 * abs_sum * (1 + 0x1p-40) +
                             0x1p-149 * (double)cols;
        cr_assert(fabs((double)y[r] - ref[r]) <= bound,
                  "%s row %zu: y = %.9g, W x = %.9g: error %.3g beyond 2^-24 |W x| + "
                  "2^-20 sum |w x| = %.3g (sum |w x| = %.6g)",
                  what, r, (double)y[r], ref[r], fabs((double)y[r] - ref[r]), bound, abs_sum);
    }
}

/* Check y against the mode's bound for weights wf (rows x cols, decoded by ggml) and x. */
static void check_y(const char *what, tm_type type, unsigned mode, const float *wf,
                    const float *x, const float *y, size_t rows, size_t cols)
{
    if (mode == TM_MATVEC_Q8 && q8_takes_halves(type)) {
        check_halves(what, type, wf, x, y, rows, cols);
        return;
    }
    double max;
    double *ref = product(wf, x, rows, cols, &max);
    if (mode == TM_MATVEC_F32 || !has_q8_kernel(type)) {
        check_f32_bound(what, wf, x, y, ref, rows, cols);
        for (size_t r = 0; r < rows; r++)
            cr_assert(fabs((double)y[r] - ref[r]) <= 1e-6 * max,
                      "%s row %zu: y = %.9g, W x = %.9g (error %.3g of max|y| %.6g, bound 1e-6)",
                      what, r, (double)y[r], ref[r], fabs((double)y[r] - ref[r]) / max, max);
    } else {
        const size_t n = x_block(type);
        double *half_step = malloc(cols * sizeof *half_step);
        cr_assert(half_step);
        float *xq = x_rounded(x, cols, n, half_step);
        double maxq;
        double *refq = product(wf, xq, rows, cols, &maxq);
        for (size_t r = 0; r < rows; r++) {
            cr_assert(fabs((double)y[r] - refq[r]) <= 1e-4 * maxq,
                      "%s row %zu: y = %.9g, W xq = %.9g (error %.3g of max, bound 1e-4)", what,
                      r, (double)y[r], refq[r], fabs((double)y[r] - refq[r]) / maxq);
            double bound = 1e-4 * maxq;
            for (size_t c = 0; c < cols; c++)
                bound += fabs((double)wf[r * cols + c]) * half_step[c];
            cr_assert(fabs((double)y[r] - ref[r]) <= bound,
                      "%s row %zu: y = %.9g, W x = %.9g: error beyond the 8-bit bound %.3g", what,
                      r, (double)y[r], ref[r], bound);
        }
        free(refq);
        free(xq);
        free(half_step);
    }
    free(ref);
}

/* Every golden rows tensor the library decodes, on one path and mode. */
static void golden_all(const char *isa, unsigned mode)
{
    use_isa(isa);
    golden g;
    golden_open(&g);
    unsigned tested = 0;
    for (uint64_t i = 0; i < tm_n_tensors(g.f); i++) {
        const tm_tensor *t = tm_tensor_at(g.f, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const size_t nl = strlen(name);
        if (nl < 12 || strcmp(name + nl - 12, ".rows.weight") != 0)
            continue;
        tm_error err = {0};
        const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
        float *x = make_x(cols, 11 + i), *y = malloc(rows * sizeof *y);
        cr_assert(y);
        if (!tm_type_can_dequant(t->type)) {
            cr_assert_eq(tm_matvec(t, x, y, mode, 1, &err), TM_UNSUPPORTED, "%s", name);
            cr_assert(strstr(err.message, "no decoder"), "%s: %s", name, err.message);
        } else {
            /* random x, then a smooth x with every 13th value 8 times larger: on golden iq1_m
             * and q1_0 rows its terms sum to 300 times max|y| (a float dot broke 1e-6 there) */
            for (int k = 0; k < 2; k++) {
                if (k == 1)
                    for (size_t c = 0; c < cols; c++)
                        x[c] = (float)sin((double)c * 0.37) * (c % 13 == 0 ? 8.0f : 1.0f);
                cr_assert_eq(tm_matvec(t, x, y, mode, 1, &err), TM_OK, "%s: %s", name, err.message);
                char what[192];
                snprintf(what, sizeof what, "%s on %s, mode %u, x %d", name, isa, mode, k);
                check_y(what, t->type, mode, golden_floats(&g, name, rows * cols), x, y, rows, cols);
            }
            tested++;
        }
        free(x);
        free(y);
    }
    /* q4_0, q4_K, q6_K, q8_0, f16, bf16, f32 at least; more as decoders land */
    cr_assert_geq(tested, 7, "only %u golden types decoded", tested);
    golden_close(&g);
}

#define GOLDEN_TEST(isa)                                                                     \
    Test(matvec_api, golden_##isa##_f32) { golden_all(#isa, TM_MATVEC_F32); }              \
    Test(matvec_api, golden_##isa##_q8) { golden_all(#isa, TM_MATVEC_Q8); }
GOLDEN_TEST(scalar)
GOLDEN_TEST(avx2)
GOLDEN_TEST(avx512)
GOLDEN_TEST(avx512fp16)
GOLDEN_TEST(neon)
#undef GOLDEN_TEST

/* The plain and integer types (no 8-bit kernel) give TM_MATVEC_F32's result in TM_MATVEC_Q8,
 * bit for bit, on every path this CPU has (f16 on avx512fp16 has one: check_halves holds it). */
static void q8_without_a_kernel_on(const char *isa)
{
    use_isa(isa);
    golden g;
    golden_open(&g);
    for (uint64_t i = 0; i < tm_n_tensors(g.f); i++) {
        const tm_tensor *t = tm_tensor_at(g.f, i);
        if (!tm_type_can_dequant(t->type) || has_q8_kernel(t->type) || t->n_dims != 2 ||
            q8_takes_halves(t->type))
            continue;
        const size_t rows = (size_t)tm_tensor_rows(t);
        float *x = make_x((size_t)t->ne[0], 5), *a = malloc(rows * 4), *b = malloc(rows * 4);
        cr_assert(a && b);
        tm_error err = {0};
        cr_assert_eq(tm_matvec(t, x, a, TM_MATVEC_F32, 1, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_matvec(t, x, b, TM_MATVEC_Q8, 1, &err), TM_OK, "%s", err.message);
        cr_assert(memcmp(a, b, rows * 4) == 0, "%.*s on %s: Q8 differs from F32",
                  (int)t->name.len, t->name.ptr, isa);
        free(x);
        free(a);
        free(b);
    }
    golden_close(&g);
}

#define WITHOUT_A_KERNEL(isa)                                                                \
    Test(matvec_api, q8_mode_without_a_kernel_is_the_f32_result_##isa)                       \
    {                                                                                        \
        q8_without_a_kernel_on(#isa);                                                        \
    }
WITHOUT_A_KERNEL(scalar)
WITHOUT_A_KERNEL(avx2)
WITHOUT_A_KERNEL(avx512)
WITHOUT_A_KERNEL(avx512fp16)
WITHOUT_A_KERNEL(neon)
#undef WITHOUT_A_KERNEL

/* ---- random blocks, fresh every run: every path against a product of ggml-free decoding --- */

/* The weights as floats: decoded by the scalar path, which the dequant tests hold to ggml. */
static float *decoded(tm_type type, const uint8_t *p, size_t n)
{
    float *w = malloc(n * sizeof *w);
    cr_assert(w);
    tm_error err = {0};
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    cr_assert_eq(tm_dequant_raw(type, p, n, w, &err), TM_OK, "%s", err.message);
    return w;
}

static const tm_type random_types[] = {
    TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16, TM_TYPE_Q8_0, TM_TYPE_Q4_0, TM_TYPE_Q4_K,
    TM_TYPE_Q6_K, TM_TYPE_Q4_1, TM_TYPE_Q5_0, TM_TYPE_Q5_1, TM_TYPE_Q2_K, TM_TYPE_Q3_K,
    TM_TYPE_Q5_K, TM_TYPE_IQ4_NL, TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_NVFP4, TM_TYPE_TQ1_0,
    TM_TYPE_TQ2_0, TM_TYPE_Q1_0, TM_TYPE_Q2_0, TM_TYPE_IQ2_XXS, TM_TYPE_IQ2_XS, TM_TYPE_IQ2_S,
    TM_TYPE_IQ3_XXS, TM_TYPE_IQ3_S, TM_TYPE_IQ1_S, TM_TYPE_IQ1_M,
};

static void random_blocks_on(const char *isa)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matvec random blocks on %s: seed %llu", isa, (unsigned long long)seed);
    for (size_t ti = 0; ti < sizeof random_types / sizeof random_types[0]; ti++) {
        const tm_type type = random_types[ti];
        /* rows that end inside the kernels' groups of blocks: 5 more of the blocks smaller than
         * 256 (AVX2's 8 and 4, AVX-512's pairs), 7 of 256 (a quad of blocks and a tail of 3) */
        const size_t be = tm_type_block_elems(type),
                     cols = be == 1 ? 777 : be < 256 ? 3 * 256 + 5 * be : 7 * 256;
        /* 64 rows: the bound is relative to max|W x| over the rows, and with 5 random rows that
         * maximum was once small enough for float rounding to pass 1e-6 of it (1.23e-6, AVX-512
         * q4_0): the fused kernels round each product to float, see docs/matvec.md. */
        enum { RANDOM_ROWS = 64 };
        const size_t rows = RANDOM_ROWS, nb = rows * cols / be;
        uint8_t *p = malloc(nb * tm_type_block_bytes(type));
        cr_assert(p);
        random_blocks(type, p, nb, seed * 31 + ti);
        float *wf = decoded(type, p, rows * cols), *x = make_x(cols, seed + ti);
        float y[RANDOM_ROWS], y_scalar[RANDOM_ROWS];
        tm_tensor t = tensor_over("random", type, p, cols, rows);
        tm_error err = {0};
        /* decoded() chose scalar: its 8-bit result first, for the SIMD paths to agree with */
        cr_assert_eq(tm_matvec(&t, x, y_scalar, TM_MATVEC_Q8, 1, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_set_isa(isa, NULL), TM_OK);
        for (unsigned mode = 0; mode < 2; mode++) {
            cr_assert_eq(tm_matvec(&t, x, y, mode, 1, &err), TM_OK, "%s", err.message);
            char what[128];
            snprintf(what, sizeof what, "random %s on %s, mode %u (seed %llu)",
                     tm_type_name(type), isa, mode, (unsigned long long)seed);
            check_y(what, type, mode, wf, x, y, rows, cols);
        }
        /* the same x-hat, the same integer sums: a SIMD 8-bit kernel differs from the scalar
         * one only by float rounding (the scalar one rounds d sc to float, matvec_avx2.c's
         * four sum blocks in float) */
        double ymax = 0;
        for (size_t r = 0; r < rows; r++)
            ymax = fmax(ymax, fabs((double)y_scalar[r]));
        /* f16 on avx512fp16 rounds x to halves where scalar keeps it float: held by check_y */
        for (size_t r = 0; !q8_takes_halves(type) && r < rows; r++)
            cr_assert(fabs((double)y[r] - (double)y_scalar[r]) <= 1e-5 * ymax,
                      "random %s on %s, 8 bits, row %zu: %.9g, scalar %.9g (seed %llu)",
                      tm_type_name(type), isa, r, (double)y[r], (double)y_scalar[r],
                      (unsigned long long)seed);
        free(p);
        free(wf);
        free(x);
    }
}

/* ---- threads and ranges: the same bits ----------------------------------------------------- */

Test(matvec_api, threads_and_row_ranges_are_bit_identical)
{
    /* 2,001 rows of q4_K (and of q8_0): several 256 KiB chunks, an odd count */
    const tm_type types[] = { TM_TYPE_Q4_K, TM_TYPE_Q8_0, TM_TYPE_F16 };
    for (size_t ti = 0; ti < 3; ti++) {
        const tm_type type = types[ti];
        const size_t cols = 1024, rows = 2001, nb = rows * cols / tm_type_block_elems(type);
        uint8_t *p = malloc(nb * tm_type_block_bytes(type));
        cr_assert(p);
        random_blocks(type, p, nb, 99 + ti);
        tm_tensor t = tensor_over("big", type, p, cols, rows);
        float *x = make_x(cols, 3), *one = malloc(rows * 4), *many = malloc(rows * 4);
        cr_assert(one && many);
        for (unsigned mode = 0; mode < 2; mode++) {
            tm_error err = {0};
            cr_assert_eq(tm_matvec(&t, x, one, mode, 1, &err), TM_OK, "%s", err.message);
            const unsigned threads[] = { 2, 3, 7, 0 };
            for (size_t k = 0; k < 4; k++) {
                memset(many, 0xff, rows * 4);
                cr_assert_eq(tm_matvec(&t, x, many, mode, threads[k], &err), TM_OK);
                cr_assert(memcmp(one, many, rows * 4) == 0, "%s mode %u: %u threads differ",
                          tm_type_name(type), mode, threads[k]);
            }
            /* odd ranges, pieced together */
            memset(many, 0xff, rows * 4);
            const uint64_t cuts[] = { 0, 1, 2, 5, 18, 641, 1999, 2001 };
            for (size_t k = 0; k + 1 < 8; k++)
                cr_assert_eq(tm_matvec_rows(&t, cuts[k], cuts[k + 1], x, many + cuts[k], mode,
                                            &err), TM_OK, "%s", err.message);
            cr_assert(memcmp(one, many, rows * 4) == 0, "%s mode %u: ranges differ",
                      tm_type_name(type), mode);
            /* an empty range writes nothing */
            cr_assert_eq(tm_matvec_rows(&t, 7, 7, x, many, mode, &err), TM_OK);
        }
        free(p);
        free(x);
        free(one);
        free(many);
    }
}

/* ---- x with zeros, negative zeros, huge and tiny values ------------------------------------ */

static void special_x_on(const char *isa)
{
    use_isa(isa);
    golden g;
    golden_open(&g);
    const char *names[] = { "q4_K.rows.weight", "q6_K.rows.weight", "q8_0.rows.weight",
                            "q4_0.rows.weight", "f16.rows.weight", "bf16.rows.weight" };
    for (size_t ni = 0; ni < sizeof names / sizeof names[0]; ni++) {
        const tm_tensor *t = tm_tensor_find(g.f, names[ni]);
        cr_assert(t);
        const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
        const float *wf = golden_floats(&g, names[ni], rows * cols);
        float *x = make_x(cols, 8), *y = malloc(rows * 4);
        cr_assert(y);
        for (unsigned mode = 0; mode < 2; mode++) {
            tm_error err = {0};
            char what[160];
            /* all zeros, then all negative zeros: y is zero */
            for (int neg = 0; neg < 2; neg++) {
                for (size_t c = 0; c < cols; c++)
                    x[c] = neg ? -0.0f : 0.0f;
                cr_assert_eq(tm_matvec(t, x, y, mode, 1, &err), TM_OK, "%s", err.message);
                for (size_t r = 0; r < rows; r++)
                    cr_assert(y[r] == 0.0f, "%s on %s mode %u: x = %s0 gives y[%zu] = %g",
                              names[ni], isa, mode, neg ? "-" : "+", r, (double)y[r]);
            }
            /* huge, tiny, and a mix with signed zeros */
            const float scales[] = { 1e30f, 1e-30f, 1.0f };
            for (size_t s = 0; s < 3; s++) {
                float *xs = make_x(cols, 8 + s);
                for (size_t c = 0; c < cols; c++) {
                    xs[c] *= scales[s];
                    if (s == 2 && c % 3 == 0)
                        xs[c] = c % 2 ? -0.0f : 0.0f;
                    if (s == 2 && c % 7 == 1)
                        xs[c] *= 1e6f;
                }
                cr_assert_eq(tm_matvec(t, xs, y, mode, 1, &err), TM_OK, "%s", err.message);
                snprintf(what, sizeof what, "%s on %s, mode %u, x scaled by %g", names[ni],
                         isa, mode, (double)scales[s]);
                check_y(what, t->type, mode, wf, xs, y, rows, cols);
                free(xs);
            }
        }
        free(x);
        free(y);
    }
    golden_close(&g);
}

/* Rows of the plain types longer than any kernel's segment (avx512fp16's halves go into double
 * every 4096 elements): 9000 elements, both modes, against the bounds. */
static void long_rows_on(const char *isa)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matvec long rows on %s: seed %llu", isa, (unsigned long long)seed);
    const tm_type types[] = { TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16 };
    enum { ROWS = 16, COLS = 9000 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint8_t *p = malloc(ROWS * COLS * tm_type_block_bytes(types[ti]));
        cr_assert(p);
        random_blocks(types[ti], p, ROWS * COLS, seed + ti);
        float *wf = decoded(types[ti], p, ROWS * COLS), *x = make_x(COLS, seed + 3 * ti), y[ROWS];
        const tm_tensor t = tensor_over("long", types[ti], p, COLS, ROWS);
        cr_assert_eq(tm_set_isa(isa, NULL), TM_OK);
        for (unsigned mode = 0; mode < 2; mode++) {
            tm_error err = {0};
            cr_assert_eq(tm_matvec(&t, x, y, mode, 1, &err), TM_OK, "%s", err.message);
            char what[128];
            snprintf(what, sizeof what, "long %s rows on %s, mode %u (seed %llu)",
                     tm_type_name(types[ti]), isa, mode, (unsigned long long)seed);
            check_y(what, types[ti], mode, wf, x, y, ROWS, COLS);
        }
        free(p);
        free(wf);
        free(x);
    }
}

#define PER_PATH(isa)                                                                        \
    Test(matvec_api, random_blocks_##isa) { random_blocks_on(#isa); }                      \
    Test(matvec_api, special_x_##isa) { special_x_on(#isa); }                              \
    Test(matvec_api, long_rows_##isa) { long_rows_on(#isa); }
PER_PATH(scalar)
PER_PATH(avx2)
PER_PATH(avx512)
PER_PATH(avx512fp16)
PER_PATH(neon)
#undef PER_PATH

/* ---- rows whose terms cancel ------------------------------------------------------------- */

/* Rows made of two identical halves, x's second half minus its first times (1 + 2^-10 r): each
 * y is about 2^-10 of its terms' sum, so 1e-6 of max|W x| is no bound there (float rounding of
 * the terms is larger), but the per-row bound in sum |w x| holds on every path. Random blocks of
 * the types with fused F32 kernels (and f32: the others decode + dot in double). */
static void cancelling_rows_on(const char *isa)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matvec cancelling rows on %s: seed %llu", isa, (unsigned long long)seed);
    const tm_type types[] = { TM_TYPE_Q8_0,   TM_TYPE_Q4_0,   TM_TYPE_Q4_1,  TM_TYPE_Q5_0,
                              TM_TYPE_Q5_1,   TM_TYPE_Q2_K,   TM_TYPE_Q3_K,  TM_TYPE_Q4_K,
                              TM_TYPE_Q5_K,   TM_TYPE_Q6_K,
                              TM_TYPE_IQ4_NL, TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_F16,
                              TM_TYPE_BF16,   TM_TYPE_F32 };
    enum { ROWS = 64, HALF = 2048 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const tm_type type = types[ti];
        const size_t be = tm_type_block_elems(type), bb = tm_type_block_bytes(type);
        const size_t half_bytes = HALF / be * bb, cols = 2 * HALF;
        uint8_t *p = malloc(ROWS * 2 * half_bytes);
        cr_assert(p);
        random_blocks(type, p, ROWS * HALF / be, seed * 7 + ti);
        /* row r: its random first half, then the same bytes again */
        for (size_t r = ROWS; r-- > 0;) {
            memmove(p + 2 * r * half_bytes, p + r * half_bytes, half_bytes);
            memcpy(p + (2 * r + 1) * half_bytes, p + 2 * r * half_bytes, half_bytes);
        }
        float *x = make_x(cols, seed + ti);
        for (size_t c = 0; c < HALF; c++)
            x[HALF + c] = -x[c] * (1.0f + 0x1p-10f * x[HALF + c]);
        float *wf = decoded(type, p, ROWS * cols), y[ROWS];
        const tm_tensor t = tensor_over("cancelling", type, p, cols, ROWS);
        tm_error err = {0};
        cr_assert_eq(tm_set_isa(isa, NULL), TM_OK);
        cr_assert_eq(tm_matvec(&t, x, y, TM_MATVEC_F32, 1, &err), TM_OK, "%s", err.message);
        char what[128];
        snprintf(what, sizeof what, "cancelling %s rows on %s (seed %llu)", tm_type_name(type),
                 isa, (unsigned long long)seed);
        double max;
        double *ref = product(wf, x, ROWS, cols, &max);
        check_f32_bound(what, wf, x, y, ref, ROWS, cols);
        free(ref);
        free(wf);
        free(x);
        free(p);
    }
}

#define CANCELLING(isa) \
    Test(matvec_api, f32_bound_on_cancelling_rows_##isa) { cancelling_rows_on(#isa); }
CANCELLING(scalar)
CANCELLING(avx2)
CANCELLING(avx512)
CANCELLING(avx512fp16)
CANCELLING(neon)
#undef CANCELLING

/* ---- f16 in halves: sums past a half's range ------------------------------------------------ */

/* avx512fp16 sums f16 rows in half arithmetic in TM_MATVEC_Q8. Rows of 30000s against x of 1.5s:
 * two products already pass 65504, the half sums overflow, and the row must be summed again in
 * float32 (docs/matvec.md), whose result here is exact (30000 * 1.5 * 300 = 13500000); a row
 * with an infinite weight and an x with a NaN stay non-finite. Run on every path this CPU has:
 * the others keep x in float32 and give the same. */
static void half_overflow_on(const char *isa)
{
    use_isa(isa);
    enum { COLS = 300 };
    uint16_t w[3 * COLS];
    float big = 30000.0f, one = 1.0f, inf = INFINITY, x[COLS], y[3];
    for (size_t c = 0; c < 3 * COLS; c++)
        tm_f32_to_f16(c == 2 * COLS + 7 ? &inf : c < COLS ? &big : &one, &w[c], 1);
    for (size_t c = 0; c < COLS; c++)
        x[c] = 1.5f;
    const tm_tensor t = tensor_over("overflowing", TM_TYPE_F16, w, COLS, 3);
    tm_error err = {0};
    cr_assert_eq(tm_matvec(&t, x, y, TM_MATVEC_Q8, 1, &err), TM_OK, "%s", err.message);
    cr_assert(y[0] == 13500000.0f, "%s: a row of 30000s against 1.5s gives %.9g", isa,
              (double)y[0]);
    cr_assert(y[1] == 450.0f, "%s: a row of 1s against 1.5s gives %.9g", isa, (double)y[1]);
    cr_assert(isinf(y[2]) && y[2] > 0, "%s: a row with an infinite weight gives %g", isa,
              (double)y[2]);
    x[5] = NAN;
    cr_assert_eq(tm_matvec(&t, x, y, TM_MATVEC_Q8, 1, &err), TM_OK, "%s", err.message);
    for (int r = 0; r < 3; r++)
        cr_assert(isnan(y[r]), "%s: x with a NaN gives y[%d] = %g", isa, r, (double)y[r]);
}

#define HALF_OVERFLOW(isa) \
    Test(matvec_api, f16_sums_past_the_half_range_##isa) { half_overflow_on(#isa); }
HALF_OVERFLOW(avx512)
HALF_OVERFLOW(avx512fp16)
#undef HALF_OVERFLOW

/* the compiler's IEEE half: its conversion from double rounds once, to nearest, ties to even */
__extension__ typedef _Float16 oracle_half;

/* A path's x as halves for f16 weights (its x_q8 kernel, called directly) against the compiler's
 * rounding of x / scale, bit for bit, with the scale 2^floor(log2 max|x|) found here by frexp:
 * ties between halves (normal and subnormal), quotients below half's range, a max|x| that is a
 * float subnormal or near FLT_MAX, x of zeros (-0 kept), and a NaN or an infinity (scale 1).
 * 1000 elements: the last vector (16 on avx512fp16, 8 on AVX2 and AVX-512) is a partial one. */
static void halves_of_x_on(const char *isa, unsigned id)
{
    use_isa(isa);
    tm__x_q8_fn *halve = tm__path_kernels(id)->x_q8[TM_TYPE_F16];
    cr_assert(halve, "%s has no x_q8 for f16", isa);
    enum { N = 1000 };
    static const double top[] = { 3.7, 1.0, 0x1p-140, 3.0e38, 0.0, NAN, INFINITY };
    tm__f16x *hx = aligned_alloc(64, sizeof *hx + ((N * 2 + 63) / 64 * 64));
    float x[N];
    cr_assert(hx);
    cr_assert(halve(NULL, N, NULL) == sizeof *hx + N * 2, "the layout's size: %zu bytes",
              halve(NULL, N, NULL));
    for (size_t k = 0; k < sizeof top / sizeof top[0]; k++) {
        const double t = top[k];
        const double unit = isfinite(t) && t > 0 ? ldexp(1.0, ilogb(t)) : 1.0;
        for (size_t i = 0; i < N; i++) {
            /* ties at the scale: 1 + 2^-11 and 1 + 3 2^-11 (to even: 1 and 1 + 2^-9), the
             * subnormal ties 2^-25 and 3 2^-25, then values down to 2^-40 of the max */
            static const double tie[] = { 1 + 0x1p-11, 1 + 0x3p-11, 0x1p-25, 0x3p-25 };
            const double v = i < 4 ? tie[i] : ldexp(sin((double)i * 0.731), -(int)(i % 41));
            x[i] = (float)(t == 0.0 ? -0.0 : (i % 2 ? -v : v) * (isfinite(t) ? unit : 1.0));
        }
        x[N / 2] = (float)t; /* the max (or the NaN, the infinity) */
        double amax = 0;
        for (size_t i = 0; i < N; i++)
            amax = fmax(amax, fabs((double)x[i]));
        int e = 1;
        if (isfinite(t) && amax > 0)
            (void)frexp(amax, &e);
        const double scale = ldexp(1.0, e - 1);
        memset(hx->h, 0xa5, N * 2);
        halve(x, N, hx);
        cr_assert((double)hx->scale == scale, "max %g: scale %g, expected %g", t,
                  (double)hx->scale, scale);
        for (size_t i = 0; i < N; i++) {
            const oracle_half want = (oracle_half)((double)x[i] / scale);
            uint16_t bits;
            memcpy(&bits, &want, 2);
            if (isnan(x[i]))
                cr_assert((hx->h[i] & 0x7c00) == 0x7c00 && (hx->h[i] & 0x3ff),
                          "max %g: x[%zu] NaN gives half %#x", t, i, hx->h[i]);
            else
                cr_assert(hx->h[i] == bits, "max %g: x[%zu] = %a over %g: half %#x, expected %#x",
                          t, i, (double)x[i], scale, hx->h[i], bits);
        }
    }
    free(hx);
}

#define HALVES_OF_X(isa, id) \
    Test(matvec_api, x_as_halves_is_each_x_over_the_scale_rounded_to_nearest_even_##isa) \
    { halves_of_x_on(#isa, id); }
HALVES_OF_X(avx2, TM__ISA_AVX2)
HALVES_OF_X(avx512, TM__ISA_AVX512)
HALVES_OF_X(avx512fp16, TM__ISA_AVX512FP16)
#undef HALVES_OF_X

/* A path's x as bf16 for bf16 weights (its x_q8 kernel, called directly; scale 1) against the
 * bf16 nearest each x, ties to even, formed here from the float's bits: ties both ways, values
 * that round up across a power of two, float subnormals, a value that rounds up to infinity,
 * infinities, -0, and NaNs of every payload (a NaN stays a NaN). 1000 elements: a partial last
 * vector of 8. */
static void bf16_of_x_on(const char *isa, unsigned id)
{
    use_isa(isa);
    tm__x_q8_fn *round = tm__path_kernels(id)->x_q8[TM_TYPE_BF16];
    cr_assert(round, "%s has no x_q8 for bf16", isa);
    enum { N = 1000 };
    static const uint32_t special[] = { 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3fffffffu,
                                        0x00000001u, 0x00008000u, 0x00018000u, 0x7f7fffffu,
                                        0x7f800000u, 0xff800000u, 0x80000000u, 0x7fc00000u,
                                        0x7f800001u, 0xff800001u, 0x7fff0001u };
    tm__f16x *hx = aligned_alloc(64, sizeof *hx + ((N * 2 + 63) / 64 * 64));
    float x[N];
    uint32_t bits[N];
    cr_assert(hx);
    cr_assert(round(NULL, N, NULL) == sizeof *hx + N * 2);
    for (size_t i = 0; i < N; i++) {
        bits[i] = i < sizeof special / sizeof special[0]
            ? special[i]
            : (uint32_t)(i * 2654435761u) ^ (uint32_t)(i << 7); /* any bits */
        memcpy(&x[i], &bits[i], sizeof x[i]);
    }
    memset(hx->h, 0xa5, N * 2);
    round(x, N, hx);
    cr_assert(hx->scale == 1.0f, "%s: scale %g", isa, (double)hx->scale);
    for (size_t i = 0; i < N; i++) {
        const uint32_t b = bits[i], low = b & 0xffffu, top = b >> 16;
        if (isnan(x[i])) {
            cr_assert((hx->h[i] & 0x7f80) == 0x7f80 && (hx->h[i] & 0x7f),
                      "%s: x[%zu] = NaN %#x gives bf16 %#x", isa, i, b, hx->h[i]);
            continue;
        }
        const uint32_t want = top + (low > 0x8000u || (low == 0x8000u && (top & 1u)));
        cr_assert(hx->h[i] == want, "%s: x[%zu] = %#x (%a): bf16 %#x, expected %#x", isa, i, b,
                  (double)x[i], hx->h[i], want);
    }
    free(hx);
}

#define BF16_OF_X(isa, id) \
    Test(matvec_api, x_as_bf16_is_each_x_rounded_to_nearest_even_##isa) { bf16_of_x_on(#isa, id); }
BF16_OF_X(avx2, TM__ISA_AVX2)
BF16_OF_X(avx512, TM__ISA_AVX512)
#undef BF16_OF_X

/* ---- refusals ------------------------------------------------------------------------------ */

Test(matvec_api, refusals_name_the_tensor_and_the_problem)
{
    golden g;
    golden_open(&g);
    const tm_tensor *t = tm_tensor_find(g.f, "q4_K.rows.weight");
    cr_assert(t);
    float x[1024] = { 0 }, y[8];
    tm_error err = {0};
    cr_assert_eq(tm_matvec_rows(t, 0, 1, NULL, y, TM_MATVEC_F32, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "'q4_K.rows.weight'") && strstr(err.message, "x is NULL"),
              "%s", err.message);
    cr_assert_eq(err.offset, t->info_offset);
    cr_assert_eq(tm_matvec(t, x, NULL, TM_MATVEC_Q8, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "y is NULL"), "%s", err.message);
    cr_assert_eq(tm_matvec(NULL, x, y, TM_MATVEC_Q8, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "tensor is NULL"), "%s", err.message);
    cr_assert_eq(tm_matvec_rows(t, 2, 7, x, y, TM_MATVEC_F32, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "rows [2, 7) are not a range inside its 6 rows"), "%s",
              err.message);
    cr_assert_eq(tm_matvec_rows(t, 3, 2, x, y, TM_MATVEC_Q8, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "rows [3, 2)"), "%s", err.message);
    cr_assert_eq(tm_matvec_rows(t, 0, 1, x, y, 2, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "mode 2"), "%s", err.message);

    /* a row that is not a whole number of blocks, and a type with no decoder */
    tm_tensor bad = *t;
    bad.ne[0] = 1000;
    bad.ne[1] = 1;
    bad.n_elements = 1000;
    cr_assert_eq(tm_matvec(&bad, x, y, TM_MATVEC_F32, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "a row of 1000 elements is not a whole number of 256-element"),
              "%s", err.message);
    bad = *t;
    bad.type = TM_TYPE_Q8_K; /* ggml's activation type: no decoder */
    cr_assert_eq(tm_matvec(&bad, x, y, TM_MATVEC_F32, 1, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "type q8_K has no decoder"), "%s", err.message);
    bad.type = (tm_type)777;
    cr_assert_eq(tm_matvec(&bad, x, y, TM_MATVEC_Q8, 1, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "type id 777"), "%s", err.message);
    /* y untouched by a refusal */
    y[0] = 42.0f;
    cr_assert_eq(tm_matvec_rows(t, 0, 9, x, y, TM_MATVEC_F32, &err), TM_INVALID_ARG);
    cr_assert_eq(y[0], 42.0f);
    golden_close(&g);
}

/* tm_matvec runs on the path tm_set_isa (or TM_ISA) chose, with the kernels merged for it, and
 * never looks the path up again: every path the library accepts multiplies every type it decodes,
 * in both modes. Walks tm_isa_built, so a path added to the ISA list is checked as soon as a
 * kernel file builds it; a second list of paths inside matvec that missed it would fail here
 * with TM_ISA. Zero blocks: only the status is asked for (the values are tested above). */
Test(matvec_api, every_path_the_library_accepts_multiplies_every_decodable_type)
{
    static const uint8_t zeros[2 * 256];
    const float x[256] = { 0 };
    unsigned ran = 0;
    for (unsigned i = 0; tm_isa_built(i); i++) {
        const char *isa = tm_isa_built(i);
        if (!tm_isa_available(isa)) {
            cr_log_info("instruction set %s: built, but this CPU lacks it", isa);
            continue;
        }
        tm_error err = {0};
        cr_assert_eq(tm_set_isa(isa, &err), TM_OK, "tm_set_isa(%s): %s", isa, err.message);
        for (unsigned id = 0; id < 1024 + 64; id++) {
            const tm_type type = (tm_type)id;
            if ((id >= 64 && id < 1024) || !tm_type_can_dequant(type))
                continue;
            cr_assert_leq(2 * tm_type_block_bytes(type), sizeof zeros);
            const tm_tensor t = tensor_over("w", type, zeros, tm_type_block_elems(type), 2);
            for (unsigned mode = 0; mode < 2; mode++) {
                float y[2];
                cr_assert_eq(tm_matvec(&t, x, y, mode, 1, &err), TM_OK, "%s, %s, mode %u: %s",
                             isa, tm_type_name(type), mode, err.message);
            }
        }
        ran++;
    }
    cr_assert_gt(ran, 0u);
}

/* TM_ISA naming something unusable: tm_matvec fails with TM_ISA, as the decoders do, saying why;
 * tm_set_isa clears it (Criterion runs each test in a fresh process: the path is chosen here). */
Test(matvec_api, bad_tm_isa_environment_is_an_error)
{
    setenv("TM_ISA", "avx9000", 1);
    const float v[32] = { 0 }, x[32] = { 0 };
    float y[1];
    const tm_tensor t = tensor_over("w", TM_TYPE_F32, v, 32, 1);
    tm_error err = {0};
    cr_assert_eq(tm_matvec(&t, x, y, TM_MATVEC_F32, 1, &err), TM_ISA);
    cr_assert(strstr(err.message, "tm_matvec: TM_ISA: instruction set") &&
              strstr(err.message, "avx9000") && strstr(err.message, "unknown"), "%s", err.message);
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    cr_assert_eq(tm_matvec(&t, x, y, TM_MATVEC_F32, 1, &err), TM_OK, "%s", err.message);
}

/* Decision: a 1-D tensor is one row (as tm_tensor_rows and tm_dequant_rows see it): y has one
 * value, the dot of the whole vector with x; a second row is past the end. */
Test(matvec_api, one_dimensional_tensor_is_one_row)
{
    float v[64], x[64], y[2] = { 0, 42.0f };
    double want = 0;
    for (int i = 0; i < 64; i++) {
        v[i] = (float)(i - 20) * 0.25f;
        x[i] = (float)(i % 5) - 2.0f;
        want += (double)v[i] * (double)x[i];
    }
    tm_tensor t = tensor_over("vec", TM_TYPE_F32, v, 64, 1);
    t.n_dims = 1;
    t.ne[1] = 1;
    tm_error err = {0};
    for (unsigned mode = 0; mode < 2; mode++) {
        cr_assert_eq(tm_matvec(&t, x, y, mode, 0, &err), TM_OK, "%s", err.message);
        cr_assert_eq((double)y[0], want, "1-D dot: %g, want %g", (double)y[0], want);
        cr_assert_eq(y[1], 42.0f, "wrote past the one row");
        cr_assert_eq(tm_matvec_rows(&t, 0, 2, x, y, mode, &err), TM_INVALID_ARG);
        cr_assert(strstr(err.message, "rows [0, 2) are not a range inside its 1 rows"), "%s",
                  err.message);
    }
}
