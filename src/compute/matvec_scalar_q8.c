/* Portable TM_MATVEC_Q8 kernels for every block type matvec_scalar.c has no hand-written one
 * for: q4_1, q5_0, q5_1, q2_K, q3_K, q5_K, the value-table, fp4, ternary and 1-/2-bit types,
 * and the grid i-quants.
 *
 * Every such block is, per group of 16 elements, an integer code times a float scale plus a
 * float offset: w_j = sc_g * q_j + mn_g (q4_1's d and m, q2_K's d*sc and dmin*m, an i-quant's
 * group scale times its signed grid byte, iq1's delta as the offset). A block is unpacked into
 * those codes (int8, in a 256-byte stack buffer: never float weights) and scales; each group's
 * codes are dotted with x's 8-bit codes in integers, and the group enters the row's sum as
 * d_x * (sc_g * isum + mn_g * xsum), in double: ggml's order differs (it folds the integer group
 * scales in before the float), but its bound is the same (docs/matvec.md), and double keeps
 * rows whose terms cancel (golden q2_K, iq1_m) at W x-hat to float32 rounding.
 *
 * The scales are rounded as the decoders round them (d * sc in float), so W x-hat here is the
 * product of the decoded weights with the rounded x. x is q8_K for 256-element weight blocks,
 * q8_0 (32 elements) for the rest: nvfp4's 64 and q1_0's 128 take two and four x blocks. */
#include "blocks.h"
#include "dequant_iq.h"
#include "kernels.h"
#include "quant_tables.h"

/* One block's codes q (block_elems of them), scales sc and offsets mn (one per 16 elements). */
typedef void unpack_fn(const uint8_t *b, int8_t *q, float *sc, float *mn);

/* Every group of a block gets the same scale and offset. */
static void fill(float *sc, float *mn, int groups, float s, float m)
{
    for (int g = 0; g < groups; g++) {
        sc[g] = s;
        mn[g] = m;
    }
}

/* ---- 32-element blocks --------------------------------------------------------------------- */

/* q4_1: d @0, m @2, qs[16] @4, q4_0's nibble order; value d q + m. */
static void unpack_q4_1(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(b[4 + j] & 15);
        q[j + 16] = (int8_t)(b[4 + j] >> 4);
    }
    fill(sc, mn, 2, tm__rdh(b), tm__rdh(b + 2));
}

/* The 5-bit codes of q5_0 / q5_1: nibbles at qs, fifth bits in the u32 at qh, minus bias. */
static void q5_codes(const uint8_t *qs, const uint8_t *qh4, int bias, int8_t *q)
{
    const uint32_t qh = tm__rd32(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((int)((qs[j] & 15) | ((qh >> j) & 1) << 4) - bias);
        q[j + 16] = (int8_t)((int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - bias);
    }
}

/* q5_0: d @0, qh @2, qs @6; value d (q - 16). */
static void unpack_q5_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    q5_codes(b + 6, b + 2, 16, q);
    fill(sc, mn, 2, tm__rdh(b), 0.0f);
}

/* q5_1: d @0, m @2, qh @4, qs @8; value d q + m. */
static void unpack_q5_1(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    q5_codes(b + 8, b + 4, 0, q);
    fill(sc, mn, 2, tm__rdh(b), tm__rdh(b + 2));
}

/* iq4_nl: d @0, qs[16] @2; value d kv[nibble]. */
static void unpack_iq4_nl(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = tm__kvalues_iq4nl[b[2 + j] & 15];
        q[j + 16] = tm__kvalues_iq4nl[b[2 + j] >> 4];
    }
    fill(sc, mn, 2, tm__rdh(b), 0.0f);
}

/* mxfp4: e @0, qs[16] @1; value kv_fp4[nibble] * 2^(e - 128). */
static void unpack_mxfp4(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = tm__kvalues_fp4[b[1 + j] & 15];
        q[j + 16] = tm__kvalues_fp4[b[1 + j] >> 4];
    }
    fill(sc, mn, 2, tm__e8m0_half(b[0]), 0.0f);
}

/* nvfp4 (64 elements): d[4] @0 a UE4M3 scale per 16, qs[32] @4 as the decoder reads them. */
static void unpack_nvfp4(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int s = 0; s < 4; s++) {
        for (int j = 0; j < 8; j++) {
            q[16 * s + j] = tm__kvalues_fp4[b[4 + 8 * s + j] & 15];
            q[16 * s + 8 + j] = tm__kvalues_fp4[b[4 + 8 * s + j] >> 4];
        }
        sc[s] = tm__ue4m3_half(b[s]);
        mn[s] = 0.0f;
    }
}

/* q1_0 (128 elements): d @0, a bit per element, set +d, clear -d. */
static void unpack_q1_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 128; j++)
        q[j] = (int8_t)(b[2 + j / 8] >> (j % 8) & 1 ? 1 : -1);
    fill(sc, mn, 8, tm__rdh(b), 0.0f);
}

/* q2_0 (64 elements): d @0, four 2-bit codes a byte, value d (q - 1). */
static void unpack_q2_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 64; j++)
        q[j] = (int8_t)((b[2 + j / 4] >> 2 * (j % 4) & 3) - 1);
    fill(sc, mn, 4, tm__rdh(b), 0.0f);
}

/* ---- K super-blocks ------------------------------------------------------------------------ */

/* q2_K: scales[16] @0 (low nibble scales d, high dmin), qs @16, d @80, dmin @82; sixteen runs
 * of 16 in the decoder's order: half, 2-bit shift, run. */
static void unpack_q2_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b + 80), dmin = tm__rdh(b + 82);
    for (int r = 0; r < 16; r++) {
        const uint8_t *qs = b + 16 + 32 * (r / 8) + 16 * (r % 2);
        const int shift = 2 * (r / 2 % 4);
        for (int l = 0; l < 16; l++)
            q[16 * r + l] = (int8_t)(qs[l] >> shift & 3);
        sc[r] = d * (float)(b[r] & 15);
        mn[r] = -(dmin * (float)(b[r] >> 4));
    }
}

/* q3_K: hmask[32] @0, qs @32, scales @96, d @108; walked as q2_K, a clear mask bit takes 4. */
static void unpack_q3_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b + 108);
    uint32_t w[4];
    tm__q3_K_scale_words(b + 96, w);
    for (int r = 0; r < 16; r++) {
        const int off = 16 * (r % 2), shift = 2 * (r / 2 % 4);
        const unsigned m = 1u << (r / 2);
        const uint8_t *qs = b + 32 + 32 * (r / 8) + off;
        for (int l = 0; l < 16; l++)
            q[16 * r + l] = (int8_t)((qs[l] >> shift & 3) - (b[off + l] & m ? 0 : 4));
        sc[r] = d * (float)((int)(w[r / 4] >> 8 * (r % 4) & 0xff) - 32);
        mn[r] = 0.0f;
    }
}

/* q5_K: d @0, dmin @2, scales @4, qh[32] @16, qs @48; group g (32 elements) of pair g / 2 takes
 * the low (g even) or high nibbles, bit g of qh adds 16; value (d sc) q - dmin m. */
static void unpack_q5_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b), dmin = tm__rdh(b + 2);
    for (int g = 0; g < 8; g++) {
        unsigned s, m;
        tm__k4_scale_min(b + 4, g, &s, &m);
        const uint8_t *qs = b + 48 + 32 * (g / 2);
        for (int l = 0; l < 32; l++)
            q[32 * g + l] = (int8_t)((qs[l] >> 4 * (g % 2) & 15) | (b[16 + l] >> g & 1) << 4);
        sc[2 * g] = sc[2 * g + 1] = d * (float)s;
        mn[2 * g] = mn[2 * g + 1] = -(dmin * (float)m);
    }
}

/* iq4_xs: d @0, 6-bit group scales, qs @8 (16 bytes a group, iq4_nl's order). */
static void unpack_iq4_xs(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (unsigned g = 0; g < 8; g++) {
        const uint8_t *qs = b + 8 + 16 * g;
        for (unsigned j = 0; j < 16; j++) {
            q[32 * g + j] = tm__kvalues_iq4nl[qs[j] & 15];
            q[32 * g + 16 + j] = tm__kvalues_iq4nl[qs[j] >> 4];
        }
        sc[2 * g] = sc[2 * g + 1] = d * (float)(tm__iq4_xs_scale(b, g) - 32);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

/* tq1_0: qs[48] @0 (five trits a byte), qh[4] @48, d @52; value d (t - 1). Trit n of a byte is
 * the top one of byte * 3^n (mod 256), read as (q * 3) >> 8. */
static int trit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    return (int)(((unsigned)(uint8_t)(byte * pow3[n]) * 3) >> 8);
}

static void unpack_tq1_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int t = 0; t < 5; t++)
        for (int m = 0; m < 32; m++)
            q[32 * t + m] = (int8_t)(trit(b[m], t) - 1);
    for (int t = 0; t < 5; t++)
        for (int m = 0; m < 16; m++)
            q[160 + 16 * t + m] = (int8_t)(trit(b[32 + m], t) - 1);
    for (int t = 0; t < 4; t++)
        for (int m = 0; m < 4; m++)
            q[240 + 4 * t + m] = (int8_t)(trit(b[48 + m], t) - 1);
    fill(sc, mn, 16, tm__rdh(b + 52), 0.0f);
}

/* tq2_0: qs[64] @0, d @64; element 128k + 32l + m is bits 2l.. of qs[32k + m], value d (q - 1). */
static void unpack_tq2_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                q[128 * k + 32 * l + m] = (int8_t)((b[32 * k + m] >> 2 * l & 3) - 1);
    fill(sc, mn, 16, tm__rdh(b + 64), 0.0f);
}

/* ---- grid i-quants (dequant_scalar_iq.c has the layouts) ----------------------------------- */

/* Eight signed grid bytes: byte j of grid, negated when bit j of signs is set. */
static void signed8(int8_t *q, uint64_t grid, unsigned signs)
{
    for (int j = 0; j < 8; j++) {
        const int v = (int)(grid >> 8 * j & 0xff);
        q[j] = (int8_t)(signs >> j & 1 ? -v : v);
    }
}

static void unpack_iq2_xxs(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (int g = 0; g < 8; g++) {
        const uint8_t *rec = b + 2 + 8 * g;
        const uint32_t a = tm__rd32(rec + 4);
        for (int l = 0; l < 4; l++)
            signed8(q + 32 * g + 8 * l, tm__iq2xxs_grid[rec[l]], tm__iq_ksign(a, l));
        sc[2 * g] = sc[2 * g + 1] = tm__iq_grid_scale(d, a >> 28, 0.25f);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

static void unpack_iq2_xs(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (int g = 0; g < 8; g++) {
        for (int l = 0; l < 4; l++) {
            const unsigned v = tm__rd16(b + 2 + 8 * g + 2 * l);
            signed8(q + 32 * g + 8 * l, tm__iq2xs_grid[v & 511], tm__ksigns_iq2xs[v >> 9]);
        }
        sc[2 * g] = tm__iq_grid_scale(d, b[66 + g] & 15u, 0.25f);
        sc[2 * g + 1] = tm__iq_grid_scale(d, b[66 + g] >> 4u, 0.25f);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

static void unpack_iq2_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (int g = 0; g < 8; g++) {
        for (int l = 0; l < 4; l++) {
            const unsigned idx = b[2 + 4 * g + l] | ((unsigned)b[66 + g] >> 2 * l & 3) << 8;
            signed8(q + 32 * g + 8 * l, tm__iq2s_grid[idx], b[34 + 4 * g + l]);
        }
        sc[2 * g] = tm__iq_grid_scale(d, b[74 + g] & 15u, 0.25f);
        sc[2 * g + 1] = tm__iq_grid_scale(d, b[74 + g] >> 4u, 0.25f);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

/* two 4-magnitude iq3 grid entries as one 8-byte entry */
static uint64_t pair(uint32_t first, uint32_t second) { return (uint64_t)second << 32 | first; }

static void unpack_iq3_xxs(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (int g = 0; g < 8; g++) {
        const uint32_t a = tm__rd32(b + 66 + 4 * g);
        const uint8_t *qs = b + 2 + 8 * g;
        for (int l = 0; l < 4; l++)
            signed8(q + 32 * g + 8 * l,
                    pair(tm__iq3xxs_grid[qs[2 * l]], tm__iq3xxs_grid[qs[2 * l + 1]]),
                    tm__iq_ksign(a, l));
        sc[2 * g] = sc[2 * g + 1] = tm__iq_grid_scale(d, a >> 28, 0.5f);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

static void unpack_iq3_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (unsigned g = 0; g < 8; g++) {
        const uint8_t *qs = b + 2 + 8 * g;
        const unsigned qh = b[66 + g];
        for (unsigned l = 0; l < 4; l++) {
            const unsigned i1 = qs[2 * l] | (qh >> 2 * l & 1) << 8;
            const unsigned i2 = qs[2 * l + 1] | (qh >> (2 * l + 1) & 1) << 8;
            signed8(q + 32 * g + 8 * l, pair(tm__iq3s_grid[i1], tm__iq3s_grid[i2]),
                    b[74 + 4 * g + l]);
        }
        sc[2 * g] = sc[2 * g + 1] = tm__iq_odd_scale(d, (unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15);
        mn[2 * g] = mn[2 * g + 1] = 0.0f;
    }
}

/* Eight iq1 codes: the grid's bytes as int8 (-1, 0, +1). */
static void iq1_8(int8_t *q, uint64_t grid)
{
    for (int j = 0; j < 8; j++)
        q[j] = (int8_t)(uint8_t)(grid >> 8 * j);
}

/* iq1: dl (g + delta) = dl g + dl delta: the delta is the group's offset. */
static float iq1_delta(unsigned set) { return set ? -0.125f : 0.125f; }

static void unpack_iq1_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    const float d = tm__rdh(b);
    for (int g = 0; g < 8; g++) {
        const unsigned w = tm__rd16(b + 34 + 2 * g);
        for (int l = 0; l < 4; l++)
            iq1_8(q + 32 * g + 8 * l, tm__iq1s_grid[b[2 + 4 * g + l] | (w >> 3 * l & 7) << 8]);
        const float dl = tm__iq_odd_scale(d, w >> 12 & 7);
        sc[2 * g] = sc[2 * g + 1] = dl;
        mn[2 * g] = mn[2 * g + 1] = dl * iq1_delta(w & 0x8000);
    }
}

/* iq1_m: a delta bit per sub-group of 8, so its offsets go in per 8 (two per group of 16):
 * the offset array has 32 entries for it (see iq1_m_dot). */
static void unpack_iq1_m(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    unsigned w[4];
    for (int k = 0; k < 4; k++)
        w[k] = tm__rd16(b + 48 + 2 * k);
    const float d = tm__half_to_float(tm__iq1m_scale_bits(w));
    for (unsigned g = 0; g < 8; g++) {
        const unsigned sw = w[g / 2], c = 6 * (g % 2);
        for (unsigned l = 0; l < 4; l++) {
            const unsigned nib = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
            iq1_8(q + 32 * g + 8 * l, tm__iq1s_grid[b[4 * g + l] | (nib & 7) << 8]);
            mn[4 * g + l] = iq1_delta(nib & 8); /* times the half-group's scale below */
        }
        sc[2 * g] = tm__iq_odd_scale(d, sw >> c & 7);
        sc[2 * g + 1] = tm__iq_odd_scale(d, sw >> (c + 3) & 7);
    }
}

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
                              size_t be, unpack_fn *unpack)
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
