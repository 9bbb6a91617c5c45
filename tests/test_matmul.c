/* tm_matmul against double-precision products computed here from ggml's decoded values (the
 * golden corpus' .f32) and from random blocks decoded by the scalar path: every decodable type,
 * both modes, every instruction-set path this CPU has (a path it lacks is a visible skip). Every
 * column is also held to tm_matvec's y for that column, bit for bit (include/tensormap.h promises
 * it), and the whole Y to itself across thread counts and column tilings; the batched 8-bit
 * kernels (groups of columns at once) against the scalar path and where the registry keeps them;
 * then the refusals.
 *
 * Bounds (docs/matvec.md): TM_MATVEC_F32 |y - W x| <= 1e-6 max|W x| over the rows; TM_MATVEC_Q8
 * |y - W x| <= sum_c |w_c| d_c / 2 + 1e-4 max|W xq| (xq: x rounded to 8 bits per block of 32 or
 * 256, d = max|x| / 127), which the integer kernels and the float32 fallback both keep. */
#include "../src/compute/compute.h"
#include "support/product_fixture.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* n columns of k values in (-1, 1), column j at X + j * k, with a few exact zeros */
static float *make_X(size_t k, size_t n, uint64_t seed)
{
    float *X = malloc((k * n + 1) * sizeof *X);
    cr_assert(X);
    for (size_t i = 0; i < k * n; i++)
        X[i] = i % 97 == 5 ? 0.0f : (float)((double)(splitmix64(seed + i) >> 40) * 0x1p-23 - 1.0);
    return X;
}

/* ---- references ---------------------------------------------------------------------------- */

/* max_r |sum_c w[r][c] x[c]| in double, and ref[r] the sums */
static double product(const float *w, const float *x, size_t rows, size_t cols, double *ref)
{
    double max = 0;
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t c = 0; c < cols; c++)
            s += (double)w[r * cols + c] * (double)x[c];
        ref[r] = s;
        max = fmax(max, fabs(s));
    }
    return max;
}

/* One column y of Y against the mode's bound for the weights wf (rows x cols, decoded) and x. */
static void check_column(const char *what, tm_type type, unsigned mode, const float *wf,
                         const float *x, const float *y, size_t rows, size_t cols)
{
    if (mode == TM_MATVEC_Q8 && q8_takes_halves(type)) {
        check_halves(what, type, wf, x, y, rows, cols);
        return;
    }
    double *ref = malloc((rows + 1) * sizeof *ref), *refq = malloc((rows + 1) * sizeof *refq);
    float *xq = malloc((cols + 1) * sizeof *xq);
    double *half = malloc((cols + 1) * sizeof *half);
    cr_assert(ref && refq && xq && half);
    const double max = product(wf, x, rows, cols, ref);
    const size_t be = tm_type_block_elems(type) == 32 ? 32 : 256;
    for (size_t b = 0; mode == TM_MATVEC_Q8 && b < cols; b += be) {
        const size_t e = b + be < cols ? b + be : cols;
        float amax = 0;
        for (size_t c = b; c < e; c++)
            amax = fmaxf(amax, fabsf(x[c]));
        for (size_t c = b; c < e; c++) {
            xq[c] = amax > 0 ? (float)(round((double)x[c] * 127.0 / amax) * (amax / 127.0f)) : 0;
            half[c] = (double)(amax / 127.0f) / 2;
        }
    }
    const double maxq = mode == TM_MATVEC_Q8 ? product(wf, xq, rows, cols, refq) : 0;
    for (size_t r = 0; r < rows; r++) {
        double bound = 1e-6 * max;
        if (mode == TM_MATVEC_Q8) {
            bound = 1e-4 * maxq;
            for (size_t c = 0; c < cols; c++)
                bound += fabs((double)wf[r * cols + c]) * half[c];
        }
        cr_assert(fabs((double)y[r] - ref[r]) <= bound,
                  "%s row %zu: y = %.9g, W x = %.9g: error %.3g beyond the bound %.3g", what, r,
                  (double)y[r], ref[r], fabs((double)y[r] - ref[r]), bound);
    }
    free(ref);
    free(refq);
    free(xq);
    free(half);
}

/* Y (n columns) from tm_matmul on n_threads, each column checked against its bound and against
 * tm_matvec's y for it, bit for bit. */
static void check_matmul(const char *what, const tm_tensor *t, const float *wf, size_t n,
                         unsigned mode, uint64_t seed)
{
    const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
    float *X = make_X(cols, n, seed), *Y = malloc(rows * n * 4 + 4), *y = malloc(rows * 4 + 4);
    cr_assert(Y && y);
    tm_error err = {0};
    cr_assert_eq(tm_matmul(t, X, cols, n, Y, mode, 2, &err), TM_OK, "%s: %s", what, err.message);
    for (size_t j = 0; j < n; j++) {
        char col[224];
        snprintf(col, sizeof col, "%s, mode %u, n %zu, column %zu", what, mode, n, j);
        check_column(col, t->type, mode, wf, X + j * cols, Y + j * rows, rows, cols);
        cr_assert_eq(tm_matvec(t, X + j * cols, y, mode, 1, &err), TM_OK, "%s", err.message);
        cr_assert(memcmp(y, Y + j * rows, rows * 4) == 0, "%s: not tm_matvec's y", col);
    }
    free(X);
    free(Y);
    free(y);
}

/* ---- the golden corpus: ggml's decoded values ---------------------------------------------- */

static void golden_all(const char *isa, unsigned mode)
{
    use_isa(isa);
    golden g;
    golden_open(&g);
    const tm_file *f = g.f;
    tm_error err = {0};
    unsigned tested = 0;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const size_t nl = strlen(name);
        if (nl < 12 || strcmp(name + nl - 12, ".rows.weight") != 0)
            continue;
        const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
        if (!tm_type_can_dequant(t->type)) {
            float X[1], Y[1];
            cr_assert_eq(tm_matmul(t, X, cols, 1, Y, mode, 1, &err), TM_UNSUPPORTED, "%s", name);
            cr_assert(strstr(err.message, "tm_matmul") && strstr(err.message, "no decoder"),
                      "%s: %s", name, err.message);
            continue;
        }
        const float *wf = golden_floats(&g, name, rows * cols);
        char what[192];
        snprintf(what, sizeof what, "%s on %s", name, isa);
        check_matmul(what, t, wf, 7, mode, 11 + i);
        tested++;
    }
    /* q4_0, q4_K, q6_K, q8_0, f16, bf16, f32 at least; more as decoders land */
    cr_assert_geq(tested, 7, "only %u golden types decoded", tested);
    golden_close(&g);
}

/* ---- random blocks, fresh every run -------------------------------------------------------- */

/* n_blocks random blocks of type (random_blocks), in a buffer of their own. */
static uint8_t *new_random_blocks(tm_type type, size_t n_blocks, uint64_t seed)
{
    uint8_t *p = malloc(n_blocks * tm_type_block_bytes(type));
    cr_assert(p);
    random_blocks(type, p, n_blocks, seed);
    return p;
}

/* The weights as floats, decoded by the scalar path (held to ggml by the dequant tests). */
static float *decoded(tm_type type, const uint8_t *p, size_t n, const char *isa)
{
    float *w = malloc(n * sizeof *w);
    cr_assert(w);
    tm_error err = {0};
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    cr_assert_eq(tm_dequant_raw(type, p, n, w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_set_isa(isa, &err), TM_OK);
    return w;
}

static const tm_type random_types[] = { TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16, TM_TYPE_Q8_0,
                                        TM_TYPE_Q4_0, TM_TYPE_Q4_K, TM_TYPE_Q5_K, TM_TYPE_Q6_K,
                                        TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_Q4_1,
                                        TM_TYPE_IQ4_NL };

/* The types with a batched 8-bit kernel on AVX2 (x86/matmul_avx2_q8.c), those with one of
 * AVX-512's own (x86/matmul_avx512_q8.c), those with a batched float32-x kernel on AVX2
 * (x86/matmul_avx2_f16.c, both modes: their TM_MATVEC_Q8 keeps x in float32) and those with one
 * on AVX-512 (x86/matmul_avx512_f16.c), by hand: a kernel dropped from the table would still
 * pass every other test (each column then runs the 1-column kernel, the same bits). */
static const tm_type batched_types[] = { TM_TYPE_Q8_0, TM_TYPE_Q4_0, TM_TYPE_Q4_K, TM_TYPE_Q5_K,
                                         TM_TYPE_Q6_K, TM_TYPE_IQ4_XS, TM_TYPE_MXFP4, TM_TYPE_Q4_1,
                                         TM_TYPE_IQ4_NL, TM_TYPE_F16, TM_TYPE_BF16 };
static const tm_type batched_avx512_types[] = { TM_TYPE_Q8_0, TM_TYPE_Q4_K, TM_TYPE_Q6_K,
                                                TM_TYPE_F16, TM_TYPE_BF16 };
static const tm_type batched_f32_types[] = { TM_TYPE_F16, TM_TYPE_BF16 };
static const tm_type batched_f32_types_avx512[] = { TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_BF16 };
#define N_OF(a) (sizeof(a) / sizeof(a)[0])

/* Ragged n around the batched kernels' groups of 4 (1, 3, 5, 7, 17, 33 columns) of every random
 * type, 67 rows (not whole blocks of 16 rows; the bound is relative to max|W x| over the rows:
 * a handful of random rows can make it too small, see test_matvec_api). */
static void random_blocks_on(const char *isa)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matmul random blocks on %s: seed %llu", isa, (unsigned long long)seed);
    for (size_t ti = 0; ti < sizeof random_types / sizeof random_types[0]; ti++) {
        const tm_type type = random_types[ti];
        const size_t be = tm_type_block_elems(type), cols = be == 1 ? 777 : 3 * 256, rows = 67;
        uint8_t *p = new_random_blocks(type, rows * cols / be, seed * 31 + ti);
        float *wf = decoded(type, p, rows * cols, isa);
        const tm_tensor t = tensor_over("w", type, p, cols, rows);
        const size_t ns[] = { 1, 3, 5, 7, 17, 33 };
        for (unsigned mode = 0; mode < 2; mode++)
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
                char what[128];
                snprintf(what, sizeof what, "random %s on %s (seed %llu)", tm_type_name(type),
                         isa, (unsigned long long)seed);
                check_matmul(what, &t, wf, ns[k], mode, seed + 7 * k);
            }
        free(p);
        free(wf);
    }
}

#define PER_PATH(isa)                                                                        \
    Test(matmul, golden_##isa##_f32) { golden_all(#isa, TM_MATVEC_F32); }                  \
    Test(matmul, golden_##isa##_q8) { golden_all(#isa, TM_MATVEC_Q8); }                    \
    Test(matmul, random_blocks_##isa) { random_blocks_on(#isa); }
PER_PATH(scalar)
PER_PATH(avx2)
PER_PATH(avx512)
PER_PATH(avx512fp16)
PER_PATH(neon)
#undef PER_PATH

/* ---- the batched kernels ------------------------------------------------------------------- */

/* Each batched kernel of path isa (the active one) against the scalar path's product of the same
 * random blocks (fresh every run) in mode: 1e-5 of the column's max|y|, as test_matvec_api holds
 * each SIMD path's 1-column kernels (in TM_MATVEC_Q8 both round x alike; they differ in the
 * float rounding of the sums). f16 and bf16 in TM_MATVEC_Q8 round x to their own type on this
 * path where scalar keeps it float32: there the columns are the path's tm_matvec bit for bit
 * (check_column holds that against its bound). 9 columns: two groups of 4 and one column left
 * over; 67 rows. */
static void batched_against_scalar(const char *isa, tm_type type, unsigned mode, uint64_t seed)
{
    const size_t cols = 3 * 256, rows = 67, n = 9;
    float *X = make_X(cols, n, seed), *Y = malloc(rows * n * 4), *ys = malloc(rows * n * 4);
    cr_assert(Y && ys);
    uint8_t *p = new_random_blocks(type, rows * cols / tm_type_block_elems(type), seed + type);
    const tm_tensor t = tensor_over("w", type, p, cols, rows);
    tm_error err = {0};
    cr_assert_eq(tm_matmul(&t, X, cols, n, Y, mode, 1, &err), TM_OK, "%s", err.message);
    const bool halves = mode == TM_MATVEC_Q8 && q8_takes_halves(type);
    if (halves)
        for (size_t j = 0; j < n; j++)
            cr_assert_eq(tm_matvec(&t, X + j * cols, ys + j * rows, mode, 1, &err), TM_OK, "%s",
                         err.message);
    else {
        cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
        cr_assert_eq(tm_matmul(&t, X, cols, n, ys, mode, 1, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_set_isa(isa, &err), TM_OK);
    }
    for (size_t j = 0; j < n; j++) {
        double max = 0;
        for (size_t r = 0; r < rows; r++)
            max = fmax(max, fabs((double)ys[j * rows + r]));
        for (size_t r = 0; r < rows; r++)
            cr_assert(halves ? Y[j * rows + r] == ys[j * rows + r]
                             : fabs((double)Y[j * rows + r] - (double)ys[j * rows + r]) <= 1e-5 * max,
                      "%s mode %u (seed %llu) column %zu row %zu: %s %.9g, scalar %.9g "
                      "(max %.3g)",
                      tm_type_name(type), mode, (unsigned long long)seed, j, r, isa,
                      (double)Y[j * rows + r], (double)ys[j * rows + r], max);
    }
    free(p);
    free(X);
    free(Y);
    free(ys);
}

/* Every batched kernel path isa runs against the scalar path: the 8-bit types in TM_MATVEC_Q8,
 * the float32-x ones in both modes (their TM_MATVEC_Q8 keeps x in float32). */
static void all_batched_against_scalar(const char *isa, const tm_type *q8, size_t n_q8,
                                       const tm_type *f32, size_t n_f32)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matmul batched %s kernels against scalar: seed %llu", isa,
                (unsigned long long)seed);
    for (size_t ti = 0; ti < n_q8; ti++)
        batched_against_scalar(isa, q8[ti], TM_MATVEC_Q8, seed);
    for (size_t ti = 0; ti < n_f32; ti++)
        for (unsigned mode = 0; mode < 2; mode++)
            batched_against_scalar(isa, f32[ti], mode, seed);
}

Test(matmul, batched_kernels_against_scalar)
{
    all_batched_against_scalar("avx2", batched_types, N_OF(batched_types), batched_f32_types,
                               N_OF(batched_f32_types));
}

/* The same on AVX-512 (skipped where the CPU lacks it): its own batched kernels (8-bit q8_0,
 * q4_K, q6_K; float32-x f32, f16, bf16) and AVX2's that it keeps (batched_registry below) */
Test(matmul, batched_avx512_kernels_against_scalar)
{
    all_batched_against_scalar("avx512", batched_types, N_OF(batched_types),
                               batched_f32_types_avx512, N_OF(batched_f32_types_avx512));
}

/* Rows of 1, 3, 5, 33 blocks of a 32-element type (the blocks left after AVX-512's pairs of
 * q8_0, after AVX2's fours of mxfp4), ragged n around the groups of 4: every column
 * tm_matvec's y bit for bit and within its bound. The golden and random rows are whole pairs
 * and fours. */
static void odd_rows_on(const char *isa, tm_type type)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matmul %s odd rows on %s: seed %llu", tm_type_name(type), isa,
                (unsigned long long)seed);
    const size_t n_blocks[] = { 1, 3, 5, 33 }, ns[] = { 4, 9 }, rows = 37;
    for (size_t bi = 0; bi < N_OF(n_blocks); bi++) {
        const size_t cols = 32 * n_blocks[bi];
        uint8_t *p = new_random_blocks(type, rows * n_blocks[bi], seed + bi);
        float *wf = decoded(type, p, rows * cols, isa);
        const tm_tensor t = tensor_over("w", type, p, cols, rows);
        for (size_t ni = 0; ni < N_OF(ns); ni++) {
            char what[128];
            snprintf(what, sizeof what, "%s rows of %zu blocks on %s (seed %llu)",
                     tm_type_name(type), n_blocks[bi], isa, (unsigned long long)seed);
            check_matmul(what, &t, wf, ns[ni], TM_MATVEC_Q8, seed + 5 * ni);
        }
        free(p);
        free(wf);
    }
}

Test(matmul, q8_0_odd_rows_avx2) { odd_rows_on("avx2", TM_TYPE_Q8_0); }
Test(matmul, q8_0_odd_rows_avx512) { odd_rows_on("avx512", TM_TYPE_Q8_0); }
Test(matmul, q4_0_odd_rows_avx2) { odd_rows_on("avx2", TM_TYPE_Q4_0); }
Test(matmul, q4_0_odd_rows_avx512) { odd_rows_on("avx512", TM_TYPE_Q4_0); }
/* mxfp4 is AVX2's on AVX-512 too */
Test(matmul, mxfp4_odd_rows_avx2) { odd_rows_on("avx2", TM_TYPE_MXFP4); }

/* Rows of float types of every length the float32-x kernels of path isa cut differently, ragged
 * n around the groups of 4, 1, 2 and 3 threads, both modes: every column tm_matvec's y bit for
 * bit. 37 rows: 16-row blocks and a short one. The lengths are both paths' cuts:
 * AVX2 (segments of 128 with 32s, whole eights in accumulator 0, the zero-padded last eight):
 * 3, 8, 31, 40, 100, 129, 168, 200, 255, 256, 257; AVX-512 (segments of 512 with 64s, then
 * sixteens, the last sixteen or fewer masked): 15, 16, 17, 63, 64, 65, 300 (four 64s + two
 * sixteens + 12), 511, 512, 513, 560 (a segment + three sixteens), 576 (a short second segment),
 * 1000 (a segment, one of 448, then 40), 1100 (two segments and a short third, then 12);
 * 777 = six AVX2 segments + 9 = two AVX-512 segments (512, 256) + 9; and avx512fp16's (steps
 * of 128, the last masked; flushes of 512; segments of 4096): 4095, 4096, 4097, 4700. */
static void rows_of_every_cut(const char *isa, const tm_type *types, size_t n_types)
{
    use_isa(isa);
    const uint64_t seed = (uint64_t)time(NULL);
    cr_log_info("matmul float row cuts on %s: seed %llu", isa, (unsigned long long)seed);
    const size_t ks[] = { 3,   8,   15,  16,  17,  31,  40,  63,  64,  65,  100,  129, 168,
                          200, 255, 256, 257, 300, 511, 512, 513, 560, 576, 777, 1000, 1100,
                          4095, 4096, 4097, 4700 };
    const size_t ns[] = { 4, 5, 9 }, rows = 37;
    for (size_t ti = 0; ti < n_types; ti++)
        for (size_t ki = 0; ki < N_OF(ks); ki++) {
            const tm_type type = types[ti];
            const size_t k = ks[ki], n = 9;
            uint8_t *p = new_random_blocks(type, rows * k, seed + 13 * ki + ti);
            const tm_tensor t = tensor_over("w", type, p, k, rows);
            float *X = make_X(k, n, seed + ki), *Y = malloc(rows * n * 4), *y = malloc(rows * 4);
            cr_assert(Y && y);
            tm_error err = {0};
            for (unsigned mode = 0; mode < 2; mode++)
                for (size_t ni = 0; ni < N_OF(ns); ni++)
                    for (unsigned threads = 1; threads <= 3; threads++) {
                        cr_assert_eq(tm_matmul(&t, X, k, ns[ni], Y, mode, threads, &err), TM_OK,
                                     "%s", err.message);
                        for (size_t j = 0; j < ns[ni]; j++) {
                            cr_assert_eq(tm_matvec(&t, X + j * k, y, mode, 1, &err), TM_OK);
                            cr_assert(memcmp(y, Y + j * rows, rows * 4) == 0,
                                      "%s on %s (seed %llu) k %zu, mode %u, n %zu, %u threads: "
                                      "column %zu is not tm_matvec's y",
                                      tm_type_name(type), isa, (unsigned long long)seed, k, mode,
                                      ns[ni], threads, j);
                        }
                    }
            free(p);
            free(X);
            free(Y);
            free(y);
        }
}

Test(matmul, f16_bf16_rows_of_every_cut_are_tm_matvec_bit_for_bit)
{
    rows_of_every_cut("avx2", batched_f32_types, N_OF(batched_f32_types));
}

Test(matmul, f32_f16_bf16_rows_of_every_cut_are_tm_matvec_bit_for_bit_avx512)
{
    rows_of_every_cut("avx512", batched_f32_types_avx512, N_OF(batched_f32_types_avx512));
}

/* avx512fp16's f16 kernels (TM_MATVEC_Q8 in halves: steps of 128, flushes of 512, segments of
 * 4096) on the lengths above and around a segment */
Test(matmul, f16_rows_of_every_cut_are_tm_matvec_bit_for_bit_avx512fp16)
{
    const tm_type f16[] = { TM_TYPE_F16 };
    rows_of_every_cut("avx512fp16", f16, 1);
}

#if defined(__x86_64__)
static bool in_list(tm_type type, const tm_type *types, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (types[i] == type)
            return true;
    return false;
}

/* Which paths run a batched kernel in mode (pure table lookups, whether or not this CPU runs the
 * path): AVX2 for exactly the listed types, the scalar path none (each column runs the 1-column
 * kernel), and AVX-512 AVX2's only where its 1-column kernel of that family is AVX2's too and its
 * own (own_types) beside its own 1-column kernel, so that its columns stay tm_matvec's y bit
 * for bit. Returns how many AVX-512 keeps. */
static unsigned batched_registry(unsigned mode, const tm_type *listed_types, size_t n_listed,
                                 const tm_type *own_types, size_t n_own)
{
    unsigned batched_on_avx512 = 0;
    for (unsigned id = 0; id < TM__GGML_SLOTS; id++) {
        const tm_type type = (tm_type)id;
        const bool listed = in_list(type, listed_types, n_listed);
        const bool own = in_list(type, own_types, n_own);
        unsigned from = 99, mv_from = 98, from512 = 97;
        cr_assert_eq(tm__matmul_kernel_for(TM__ISA_AVX2, type, mode, &from), listed,
                     "type id %u mode %u", id, mode);
        cr_assert(!listed || from == TM__ISA_AVX2, "type id %u: batched kernel from path %u", id,
                  from);
        cr_assert(!tm__matmul_kernel_for(TM__ISA_SCALAR, type, mode, NULL), "type id %u", id);
        const bool mv = tm__matvec_kernel_for(TM__ISA_AVX512, type, mode, &mv_from);
        cr_assert(!own || (mv && mv_from == TM__ISA_AVX512),
                  "type id %u mode %u: avx512's 1-column kernel from path %u", id, mode, mv_from);
        const bool kept = mv && ((listed && mv_from == TM__ISA_AVX2) || own);
        cr_assert_eq(tm__matmul_kernel_for(TM__ISA_AVX512, type, mode, &from512), kept,
                     "type id %u mode %u on avx512", id, mode);
        cr_assert(!kept || from512 == mv_from,
                  "type id %u mode %u on avx512: batched kernel from path %u, 1-column from %u",
                  id, mode, from512, mv_from);
        batched_on_avx512 += kept;
    }
    return batched_on_avx512;
}

Test(matmul, batched_kernels_only_beside_the_kernel_they_reproduce)
{
    /* AVX2's q4_0, q5_K, iq4_xs, mxfp4, q4_1, iq4_nl (docs/matvec.md: AVX-512 runs AVX2's
     * 1-column kernel for them) and its own q8_0, q4_K, q6_K, f16, bf16 */
    cr_assert_eq(batched_registry(TM_MATVEC_Q8, batched_types, N_OF(batched_types),
                                  batched_avx512_types, N_OF(batched_avx512_types)),
                 11u);
    /* AVX-512's own f32, f16 and bf16 (beside its own 1-column F32 kernels) */
    cr_assert_eq(batched_registry(TM_MATVEC_F32, batched_f32_types, N_OF(batched_f32_types),
                                  batched_f32_types_avx512, N_OF(batched_f32_types_avx512)),
                 3u);
}

/* avx512fp16 has its own batched kernel only for f16 in TM_MATVEC_Q8, beside its own 1-column
 * one; for everything else it runs what avx512 runs. */
Test(matmul, avx512fp16_batches_f16_in_8_bit_mode_and_otherwise_runs_avx512s_kernels)
{
    for (unsigned id = 0; id < TM__GGML_SLOTS; id++)
        for (unsigned mode = 0; mode < 2; mode++) {
            const tm_type type = (tm_type)id;
            unsigned from = 99, from512 = 98, mv_from = 97;
            const bool own = type == TM_TYPE_F16 && mode == TM_MATVEC_Q8;
            const bool has = tm__matmul_kernel_for(TM__ISA_AVX512FP16, type, mode, &from);
            const bool has512 = tm__matmul_kernel_for(TM__ISA_AVX512, type, mode, &from512);
            cr_assert_eq(has, own || has512, "type id %u mode %u", id, mode);
            cr_assert(!has || from == (own ? TM__ISA_AVX512FP16 : from512),
                      "type id %u mode %u: batched kernel from path %u", id, mode, from);
            cr_assert(!own || (tm__matvec_kernel_for(TM__ISA_AVX512FP16, type, mode, &mv_from) &&
                               mv_from == TM__ISA_AVX512FP16),
                      "f16's 1-column 8-bit kernel from path %u", mv_from);
        }
}
#endif

/* n = 512, the most a prompt batch is documented for, on a small W (fast under sanitizers). */
Test(matmul, five_hundred_twelve_columns)
{
    const size_t cols = 96, rows = 300;
    uint8_t *p = new_random_blocks(TM_TYPE_Q8_0, rows * cols / 32, 5);
    float *wf = decoded(TM_TYPE_Q8_0, p, rows * cols, tm_isa());
    const tm_tensor t = tensor_over("w", TM_TYPE_Q8_0, p, cols, rows);
    for (unsigned mode = 0; mode < 2; mode++)
        check_matmul("q8_0 x 512 columns", &t, wf, 512, mode, 9);
    free(p);
    free(wf);
}

/* ---- threads and column tilings: the same bits --------------------------------------------- */

Test(matmul, threads_and_column_tilings_are_bit_identical)
{
    /* 1,500 rows of 512: q4_K rows of 288 bytes, so five 128 KiB tiles of rows, the last short */
    const tm_type types[] = { TM_TYPE_Q4_K, TM_TYPE_F16, TM_TYPE_BF16, TM_TYPE_MXFP4 };
    const size_t cols = 512, rows = 1500, n = 33;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const tm_type type = types[ti];
        uint8_t *p = new_random_blocks(type, rows * cols / tm_type_block_elems(type), 99 + ti);
        const tm_tensor t = tensor_over("w", type, p, cols, rows);
        float *X = make_X(cols, n, 3), *one = malloc(rows * n * 4), *many = malloc(rows * n * 4);
        cr_assert(one && many);
        for (unsigned mode = 0; mode < 2; mode++) {
            tm_error err = {0};
            cr_assert_eq(tm_matmul(&t, X, cols, n, one, mode, 1, &err), TM_OK, "%s", err.message);
            const unsigned threads[] = { 2, 3, 0 };
            for (size_t k = 0; k < 3; k++) {
                memset(many, 0xff, rows * n * 4);
                cr_assert_eq(tm_matmul(&t, X, cols, n, many, mode, threads[k], &err), TM_OK);
                cr_assert(memcmp(one, many, rows * n * 4) == 0, "%s mode %u: %u threads differ",
                          tm_type_name(type), mode, threads[k]);
            }
            /* the columns in batches of 1, 6 and 26, each its own call */
            memset(many, 0xff, rows * n * 4);
            const size_t cuts[] = { 0, 1, 7, 33 };
            for (size_t k = 0; k < 3; k++)
                cr_assert_eq(tm_matmul(&t, X + cuts[k] * cols, cols, cuts[k + 1] - cuts[k],
                                       many + cuts[k] * rows, mode, 2, &err), TM_OK);
            cr_assert(memcmp(one, many, rows * n * 4) == 0, "%s mode %u: column batches differ",
                      tm_type_name(type), mode);
        }
        free(p);
        free(X);
        free(one);
        free(many);
    }
}

/* ---- refusals ------------------------------------------------------------------------------ */

Test(matmul, refusals_name_the_tensor_and_the_problem)
{
    static const uint8_t zeros[2 * 144];
    const tm_tensor t = tensor_over("w", TM_TYPE_Q4_K, zeros, 256, 2);
    float X[2 * 256] = { 0 }, Y[4] = { 42.0f, 42.0f, 42.0f, 42.0f };
    tm_error err = {0};
    cr_assert_eq(tm_matmul(NULL, X, 256, 2, Y, TM_MATVEC_F32, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "tm_matmul: tensor is NULL"), "%s", err.message);
    cr_assert_eq(tm_matmul(&t, NULL, 256, 2, Y, TM_MATVEC_F32, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "tensor 'w'") && strstr(err.message, "X is NULL"), "%s",
              err.message);
    cr_assert_eq(tm_matmul(&t, X, 256, 2, NULL, TM_MATVEC_Q8, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "Y is NULL"), "%s", err.message);
    cr_assert_eq(tm_matmul(&t, X, 256, 0, Y, TM_MATVEC_Q8, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "n is 0"), "%s", err.message);
    cr_assert_eq(tm_matmul(&t, X, 255, 2, Y, TM_MATVEC_Q8, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "X has columns of 255 values, the tensor's rows have 256"),
              "%s", err.message);
    cr_assert_eq(tm_matmul(&t, X, 256, 2, Y, 2, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "tm_matmul") && strstr(err.message, "mode 2"), "%s",
              err.message);
    /* a row that is not a whole number of blocks, a type with no decoder, an unknown id */
    tm_tensor bad = tensor_over("w", TM_TYPE_Q4_K, zeros, 256, 2);
    bad.ne[0] = 200;
    bad.ne[1] = 1;
    cr_assert_eq(tm_matmul(&bad, X, 200, 2, Y, TM_MATVEC_F32, 1, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "a row of 200 elements is not a whole number of 256-element"),
              "%s", err.message);
    bad = t;
    bad.type = TM_TYPE_Q8_K; /* ggml's activation type: no decoder */
    cr_assert_eq(tm_matmul(&bad, X, 256, 2, Y, TM_MATVEC_F32, 1, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "type q8_K has no decoder"), "%s", err.message);
    bad.type = (tm_type)777;
    cr_assert_eq(tm_matmul(&bad, X, 256, 2, Y, TM_MATVEC_Q8, 1, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "type id 777"), "%s", err.message);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(Y[i], 42.0f, "a refusal wrote Y[%d]", i);
    /* and the same tensor multiplies: the refusals above were the arguments' */
    cr_assert_eq(tm_matmul(&t, X, 256, 2, Y, TM_MATVEC_Q8, 1, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(Y[i], 0.0f);
}
