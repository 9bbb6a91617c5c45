/* Portable TM_MATVEC_Q8 kernels for every block type matvec_scalar.c has no hand-written one
 * for: q4_1, q5_0, q5_1, q2_K, q3_K, q5_K, the value-table, fp4, ternary and 1-/2-bit types,
 * and the grid i-quants.
 *
 * Every such block is, per group of 16 elements, an integer code times a float scale plus a
 * float offset: w_j = sc_g * q_j + mn_g (q4_1's d and m, q2_K's d*sc and dmin*m, an i-quant's
 * group scale times its signed grid byte, iq1's delta as the offset). A block is unpacked into
 * those codes (matvec_unpack.h: int8 in a stack buffer, never float weights); each group's
 * codes are dotted with x's 8-bit codes in integers, and the group enters the row's sum as
 * d_x * (sc_g * isum + mn_g * xsum), in double: ggml's order differs (it folds the integer group
 * scales in before the float), but its bound is the same (docs/matvec.md), and double keeps
 * rows whose terms cancel (golden q2_K, iq1_m) at W x-hat to float32 rounding.
 *
 * The scales are rounded as the decoders round them, so W x-hat here is the product of the
 * decoded weights with the rounded x. x is q8_K for 256-element weight blocks,
 * q8_0 (32 elements) for the rest: nvfp4's 64 and q1_0's 128 take two and four x blocks. */
#include "kernels.h"
#include "matvec_unpack.h"

/* ---- the dot --------------------------------------------------------------------------------- */

/* x's codes and scale for elements [e, e + 16) of the row, and their sum. */
static const int8_t *x_codes(const void *xq, int k_blocks, size_t e, double *d, int32_t *sum)
{
    if (k_blocks) {
        const tm__q8_Kx *x = (const tm__q8_Kx *)xq + e / 256;
        *d = x->d;
        *sum = x->bsums[e % 256 / 16];
        return x->qs + e % 256;
    }
    const tm__q8_0x *x = (const tm__q8_0x *)xq + e / 32;
    *d = x->d;
    const int8_t *qs = x->qs + e % 32;
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += qs[j];
    *sum = s;
    return qs;
}

static inline float dot_codes(const uint8_t *w, const void *xq, size_t n_blocks, size_t bb,
                              size_t be, tm__unpack_fn *unpack)
{
    int8_t q[256];
    float sc[16], mn[16];
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, w += bb) {
        unpack(w, q, sc, mn);
        for (size_t g = 0; g < be / 16; g++) {
            double dx;
            int32_t xsum;
            const int8_t *xs = x_codes(xq, be == 256, i * be + 16 * g, &dx, &xsum);
            int32_t isum = 0;
            for (size_t j = 0; j < 16; j++)
                isum += q[16 * g + j] * xs[j];
            acc += dx * ((double)sc[g] * isum + (double)mn[g] * xsum);
        }
    }
    return (float)acc;
}

/* iq1_m: offsets per sub-group of 8, scaled by the group-of-16's scale. */
static float iq1_m_dot(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    int8_t q[256];
    float sc[16], delta[32];
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_iq1_m), x++) {
        unpack_iq1_m(b, q, sc, delta);
        for (int h = 0; h < 32; h++) {
            int32_t isum = 0, xsum = 0;
            for (int j = 8 * h; j < 8 * h + 8; j++) {
                isum += q[j] * x->qs[j];
                xsum += x->qs[j];
            }
            acc += (double)x->d * (double)sc[h / 2] * ((double)isum + (double)delta[h] * xsum);
        }
    }
    return (float)acc;
}

#define DOT(type, block_elems)                                                                \
    static float dot_##type##_q8_scalar(const void *w, const void *xq, size_t n)            \
    {                                                                                         \
        return dot_codes(w, xq, n, sizeof(tm__block_##type), block_elems, unpack_##type);     \
    }
DOT(q4_1, 32)
DOT(q5_0, 32)
DOT(q5_1, 32)
DOT(iq4_nl, 32)
DOT(mxfp4, 32)
DOT(nvfp4, 64)
DOT(q1_0, 128)
DOT(q2_0, 64)
DOT(q2_K, 256)
DOT(q3_K, 256)
DOT(q5_K, 256)
DOT(iq4_xs, 256)
DOT(tq1_0, 256)
DOT(tq2_0, 256)
DOT(iq2_xxs, 256)
DOT(iq2_xs, 256)
DOT(iq2_s, 256)
DOT(iq3_xxs, 256)
DOT(iq3_s, 256)
DOT(iq1_s, 256)
#undef DOT

const tm__kernels tm__kernels_matvec_scalar_q8 = {
    .mv_q8 = {
        [TM_TYPE_Q4_1] = dot_q4_1_q8_scalar,
        [TM_TYPE_Q5_0] = dot_q5_0_q8_scalar,
        [TM_TYPE_Q5_1] = dot_q5_1_q8_scalar,
        [TM_TYPE_IQ4_NL] = dot_iq4_nl_q8_scalar,
        [TM_TYPE_MXFP4] = dot_mxfp4_q8_scalar,
        [TM_TYPE_NVFP4] = dot_nvfp4_q8_scalar,
        [TM_TYPE_Q1_0] = dot_q1_0_q8_scalar,
        [TM_TYPE_Q2_0] = dot_q2_0_q8_scalar,
        [TM_TYPE_Q2_K] = dot_q2_K_q8_scalar,
        [TM_TYPE_Q3_K] = dot_q3_K_q8_scalar,
        [TM_TYPE_Q5_K] = dot_q5_K_q8_scalar,
        [TM_TYPE_IQ4_XS] = dot_iq4_xs_q8_scalar,
        [TM_TYPE_TQ1_0] = dot_tq1_0_q8_scalar,
        [TM_TYPE_TQ2_0] = dot_tq2_0_q8_scalar,
        [TM_TYPE_IQ2_XXS] = dot_iq2_xxs_q8_scalar,
        [TM_TYPE_IQ2_XS] = dot_iq2_xs_q8_scalar,
        [TM_TYPE_IQ2_S] = dot_iq2_s_q8_scalar,
        [TM_TYPE_IQ3_XXS] = dot_iq3_xxs_q8_scalar,
        [TM_TYPE_IQ3_S] = dot_iq3_s_q8_scalar,
        [TM_TYPE_IQ1_S] = dot_iq1_s_q8_scalar,
        [TM_TYPE_IQ1_M] = iq1_m_dot,
    },
};
