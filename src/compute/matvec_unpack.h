/* The blocks of every type without a hand-written 8-bit kernel of its own, unpacked for an
 * integer dot: per group of 16 elements, w_j = sc_g * q_j + mn_g, with int8 codes q (a 256-byte
 * stack buffer, never float weights) and the group's float scale and offset, rounded as the
 * decoders round them (src/compute/dequant_scalar*.c), so the weights are exactly ggml's.
 * static inline, as in blocks.h: matvec_scalar_q8.c compiles them; the SIMD grid kernels
 * (x86/matvec_iq_x86.h) take only the sign-mask macros (MASK_ROW). */
#ifndef TM_MATVEC_UNPACK_H
#define TM_MATVEC_UNPACK_H

#include "blocks.h"
#include "dequant_iq.h"
#include "quant_tables.h"

#include <stdint.h>
#include <string.h>

/* One block's codes q (block_elems of them), scales sc and offsets mn (one per 16 elements). */
typedef void tm__unpack_fn(const uint8_t *b, int8_t *q, float *sc, float *mn);

/* Every group of a block gets the same scale and offset. */
static inline void fill(float *sc, float *mn, int groups, float s, float m)
{
    for (int g = 0; g < groups; g++) {
        sc[g] = s;
        mn[g] = m;
    }
}

/* ---- 32-element blocks --------------------------------------------------------------------- */

/* q4_1: d @0, m @2, qs[16] @4, q4_0's nibble order; value d q + m. */
static inline void unpack_q4_1(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(b[4 + j] & 15);
        q[j + 16] = (int8_t)(b[4 + j] >> 4);
    }
    fill(sc, mn, 2, tm__rdh(b), tm__rdh(b + 2));
}

/* The 5-bit codes of q5_0 / q5_1: nibbles at qs, fifth bits in the u32 at qh, minus bias. */
static inline void q5_codes(const uint8_t *qs, const uint8_t *qh4, int bias, int8_t *q)
{
    const uint32_t qh = tm__rd32(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((int)((qs[j] & 15) | ((qh >> j) & 1) << 4) - bias);
        q[j + 16] = (int8_t)((int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - bias);
    }
}

/* q5_0: d @0, qh @2, qs @6; value d (q - 16). */
static inline void unpack_q5_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    q5_codes(b + 6, b + 2, 16, q);
    fill(sc, mn, 2, tm__rdh(b), 0.0f);
}

/* q5_1: d @0, m @2, qh @4, qs @8; value d q + m. */
static inline void unpack_q5_1(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    q5_codes(b + 8, b + 4, 0, q);
    fill(sc, mn, 2, tm__rdh(b), tm__rdh(b + 2));
}

/* iq4_nl: d @0, qs[16] @2; value d kv[nibble]. */
static inline void unpack_iq4_nl(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = tm__kvalues_iq4nl[b[2 + j] & 15];
        q[j + 16] = tm__kvalues_iq4nl[b[2 + j] >> 4];
    }
    fill(sc, mn, 2, tm__rdh(b), 0.0f);
}

/* mxfp4: e @0, qs[16] @1; value kv_fp4[nibble] * 2^(e - 128). */
static inline void unpack_mxfp4(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 16; j++) {
        q[j] = tm__kvalues_fp4[b[1 + j] & 15];
        q[j + 16] = tm__kvalues_fp4[b[1 + j] >> 4];
    }
    fill(sc, mn, 2, tm__e8m0_half(b[0]), 0.0f);
}

/* nvfp4 (64 elements): d[4] @0 a UE4M3 scale per 16, qs[32] @4 as the decoder reads them. */
static inline void unpack_nvfp4(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_q1_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 128; j++)
        q[j] = (int8_t)(b[2 + j / 8] >> (j % 8) & 1 ? 1 : -1);
    fill(sc, mn, 8, tm__rdh(b), 0.0f);
}

/* q2_0 (64 elements): d @0, four 2-bit codes a byte, value d (q - 1). */
static inline void unpack_q2_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int j = 0; j < 64; j++)
        q[j] = (int8_t)((b[2 + j / 4] >> 2 * (j % 4) & 3) - 1);
    fill(sc, mn, 4, tm__rdh(b), 0.0f);
}

/* ---- K super-blocks ------------------------------------------------------------------------ */

/* q2_K: scales[16] @0 (low nibble scales d, high dmin), qs @16, d @80, dmin @82; sixteen runs
 * of 16 in the decoder's order: half, 2-bit shift, run. */
static inline void unpack_q2_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_q3_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_q5_K(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_iq4_xs(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline int trit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    return (int)(((unsigned)(uint8_t)(byte * pow3[n]) * 3) >> 8);
}

static inline void unpack_tq1_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_tq2_0(const uint8_t *b, int8_t *q, float *sc, float *mn)
{
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                q[128 * k + 32 * l + m] = (int8_t)((b[32 * k + m] >> 2 * l & 3) - 1);
    fill(sc, mn, 16, tm__rdh(b + 64), 0.0f);
}

/* ---- grid i-quants (dequant_scalar_iq.c has the layouts) ----------------------------------- */

/* byte_mask[s]: byte j is 0xff when bit j of the sign byte s is set (built by the preprocessor) */
#define MASK_BYTE(s, j) ((uint64_t)(0u - ((unsigned)(s) >> (j) & 1u)) & 0xffu) << 8 * (j)
#define MASK_ROW(s) (MASK_BYTE(s, 0) | MASK_BYTE(s, 1) | MASK_BYTE(s, 2) | MASK_BYTE(s, 3) | \
                     MASK_BYTE(s, 4) | MASK_BYTE(s, 5) | MASK_BYTE(s, 6) | MASK_BYTE(s, 7))
#define MASK_4(s) MASK_ROW(s), MASK_ROW((s) + 1), MASK_ROW((s) + 2), MASK_ROW((s) + 3)
#define MASK_16(s) MASK_4(s), MASK_4((s) + 4), MASK_4((s) + 8), MASK_4((s) + 12)
#define MASK_64(s) MASK_16(s), MASK_16((s) + 16), MASK_16((s) + 32), MASK_16((s) + 48)
static const uint64_t byte_mask[256] = { MASK_64(0), MASK_64(64), MASK_64(128), MASK_64(192) };

/* Eight signed grid bytes: byte j of grid, negated when bit j of signs is set, all eight at
 * once: -v = (v ^ 0xff) + 1, and the + 1 never carries into the next byte because no grid byte
 * is 0 (the iq2/iq3 grids hold 8..62). */
static inline void signed8(int8_t *q, uint64_t grid, unsigned signs)
{
    const uint64_t m = byte_mask[signs & 255];
    const uint64_t v = (grid ^ m) + (m & 0x0101010101010101u);
    memcpy(q, &v, sizeof v);
}

static inline void unpack_iq2_xxs(const uint8_t *b, int8_t *q, float *sc, float *mn)
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

static inline void unpack_iq2_xs(const uint8_t *b, int8_t *q, float *sc, float *mn)
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

static inline void unpack_iq2_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline uint64_t pair(uint32_t first, uint32_t second) { return (uint64_t)second << 32 | first; }

static inline void unpack_iq3_xxs(const uint8_t *b, int8_t *q, float *sc, float *mn)
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

static inline void unpack_iq3_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
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

/* Eight iq1 codes: the grid's bytes as int8 (-1, 0, +1), little-endian as the host. */
static inline void iq1_8(int8_t *q, uint64_t grid) { memcpy(q, &grid, sizeof grid); }

/* iq1: dl (g + delta) = dl g + dl delta: the delta is the group's offset. */
static inline float iq1_delta(unsigned set) { return set ? -0.125f : 0.125f; }

static inline void unpack_iq1_s(const uint8_t *b, int8_t *q, float *sc, float *mn)
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
static inline void unpack_iq1_m(const uint8_t *b, int8_t *q, float *sc, float *mn)
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

#endif /* TM_MATVEC_UNPACK_H */
