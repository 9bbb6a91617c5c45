/* Hand-built blocks of the i-quant, fp4, ternary and 1/2-bit types: every field placed by hand
 * from ../shared/formats/FORMATS-more.md, and every expected value worked out here from that
 * description (grid bytes and value tables copied from ggml-tables.txt as literals), never by
 * the code under test. Compared bit for bit, so the sign of each zero counts, on every path this
 * machine has. */
#include "tensormap.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

/* n_blocks of type at blocks decode to exactly want (bits) on every path this CPU has. */
static void expect_bits(tm_type type, const uint8_t *blocks, size_t n_blocks, const float *want)
{
    const size_t n = n_blocks * tm_type_block_elems(type);
    float got[3 * 256];
    cr_assert(n <= sizeof got / sizeof got[0]);
    tm_error err = {0};
    unsigned ran = 0;
    for (unsigned i = 0; tm_isa_built(i); i++) {
        const char *isa = tm_isa_built(i);
        if (!tm_isa_available(isa))
            continue; /* the per-path golden and random tests skip it visibly */
        cr_assert_eq(tm_set_isa(isa, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_dequant_raw(type, blocks, n, got, &err), TM_OK, "%s", err.message);
        for (size_t j = 0; j < n; j++) {
            uint32_t a, b;
            memcpy(&a, &got[j], 4);
            memcpy(&b, &want[j], 4);
            if (a != b)
                cr_assert_fail("%s on %s: element %zu is %08x (%g), want %08x (%g)",
                               tm_type_name(type), isa, j, a, (double)got[j], b, (double)want[j]);
        }
        ran++;
    }
    cr_assert_gt(ran, 0u);
}

static float sign_of(unsigned bits, int j) { return bits >> j & 1 ? -1.0f : 1.0f; }

/* kvalues_iq4nl and kvalues_fp4 as FORMATS-more.md lists them. */
static const int iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
                               1, 13, 25, 38, 53, 69, 89, 113 };
static const int fp4[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* ---- small blocks ---------------------------------------------------------------------------- */

/* q1_0: bit j % 8 of qs[j / 8], least significant first; set = d, clear = -d. Block 0 has
 * d = -2, block 1 d = +0 (so clear bits give -0). */
Test(dequant_blocks, q1_0_bits_and_the_sign_of_zero)
{
    uint8_t b[2 * 18];
    float want[256];
    for (int k = 0; k < 2; k++) {
        put16(b + 18 * k, k == 0 ? 0xC000 : 0x0000);
        for (int i = 0; i < 16; i++)
            b[18 * k + 2 + i] = (uint8_t)(i * 37 + 5);
        for (int j = 0; j < 128; j++) {
            const bool set = (j / 8 * 37 + 5) % 256 >> (j % 8) & 1;
            want[128 * k + j] = k == 0 ? (set ? -2.0f : 2.0f) : (set ? 0.0f : -0.0f);
        }
    }
    expect_bits(TM_TYPE_Q1_0, b, 2, want);
}

/* q2_0: d = -0.5; bytes 0xE4 (codes 0, 1, 2, 3 from the bottom) and 0x1B (3, 2, 1, 0)
 * alternate; code c means c - 1, so 0 -> 0.5, 1 -> -0, 2 -> -0.5, 3 -> -1. */
Test(dequant_blocks, q2_0_codes)
{
    static const float value[4] = { 0.5f, -0.0f, -0.5f, -1.0f };
    uint8_t b[18];
    float want[64];
    put16(b, 0xB800);
    for (int i = 0; i < 16; i++)
        b[2 + i] = i % 2 ? 0x1B : 0xE4;
    for (int j = 0; j < 64; j++) {
        const int pos = j % 4;
        want[j] = value[j / 4 % 2 ? 3 - pos : pos];
    }
    expect_bits(TM_TYPE_Q2_0, b, 1, want);
}

/* iq4_nl: d = 2, qs[j] = j | (15 - j) << 4: element j = 2 * kv[j], j + 16 = 2 * kv[15 - j]. */
Test(dequant_blocks, iq4_nl_nibbles)
{
    uint8_t b[18];
    float want[32];
    put16(b, 0x4000);
    for (int j = 0; j < 16; j++) {
        b[2 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(2 * iq4nl[j]);
        want[j + 16] = (float)(2 * iq4nl[15 - j]);
    }
    expect_bits(TM_TYPE_IQ4_NL, b, 1, want);
}

/* iq4_xs: d = -1 and eight 6-bit scales ls (low nibbles in scales_l, high two bits in
 * scales_h); dl = -(ls - 32). ls = 32 makes dl = -0, so the elements are -0 for positive table
 * values and +0 for negative ones. */
Test(dequant_blocks, iq4_xs_scales_and_zero_scale)
{
    static const int ls[8] = { 32, 33, 0, 63, 16, 47, 1, 62 };
    uint8_t b[136];
    float want[256];
    put16(b, 0xBC00);
    unsigned sh = 0;
    for (int g = 0; g < 8; g++)
        sh |= (unsigned)(ls[g] >> 4) << 2 * g;
    put16(b + 2, sh);
    for (int i = 0; i < 4; i++)
        b[4 + i] = (uint8_t)((ls[2 * i] & 15) | (ls[2 * i + 1] & 15) << 4);
    for (int g = 0; g < 8; g++)
        for (int j = 0; j < 16; j++) {
            b[8 + 16 * g + j] = (uint8_t)(j | (15 - j) << 4);
            const int dl = 32 - ls[g]; /* -1 * (ls - 32) */
            want[32 * g + j] = dl ? (float)(dl * iq4nl[j]) : (iq4nl[j] > 0 ? -0.0f : 0.0f);
            want[32 * g + 16 + j] =
                dl ? (float)(dl * iq4nl[15 - j]) : (iq4nl[15 - j] > 0 ? -0.0f : 0.0f);
        }
    expect_bits(TM_TYPE_IQ4_XS, b, 1, want);
}

/* mxfp4: the scale 2^(e - 128). Block 0: e = 127 (0.5), so each code gives half its table value;
 * block 1: e = 0 (2^-128, subnormal); block 2: e = 255 (2^127), where |value| >= 2 overflows.
 * qs[j] = j | (15 - j) << 4; code 8 is +0 in every block. */
Test(dequant_blocks, mxfp4_scales)
{
    static const uint8_t e[3] = { 127, 0, 255 };
    uint8_t b[3 * 17];
    float want[3 * 32];
    for (int k = 0; k < 3; k++) {
        b[17 * k] = e[k];
        for (int j = 0; j < 16; j++) {
            b[17 * k + 1 + j] = (uint8_t)(j | (15 - j) << 4);
            for (int h = 0; h < 2; h++) {
                const int v = fp4[h ? 15 - j : j];
                float w = (float)v * 0.5f;
                if (k == 1)
                    w = (float)v * 0x1p-128f;
                if (k == 2)
                    w = v == 0 ? 0.0f : v == 1 ? 0x1p127f : v == -1 ? -0x1p127f
                                                           : (v > 0 ? 1.0f : -1.0f) * INFINITY;
                want[32 * k + 16 * h + j] = w;
            }
        }
    }
    cr_assert_eq(want[32 + 1], 0x1p-128f); /* a subnormal, not flushed */
    expect_bits(TM_TYPE_MXFP4, b, 3, want);
}

/* nvfp4: four UE4M3 sub-block scales: 0x38 (E 7, M 0: 8 * 2^-4 = 0.5), 0x80 (bit 7 ignored:
 * +0), 0xff (240), 0x05 (E 0: 5 * 2^-10). Each sub-block's 8 bytes are j | (15 - j) << 4:
 * element 16s + j = fp4[j] * D, 16s + 8 + j = fp4[15 - j] * D; with D = +0 the negative codes
 * give -0. */
Test(dequant_blocks, nvfp4_scales)
{
    static const uint8_t sc[4] = { 0x38, 0x80, 0xff, 0x05 };
    static const float scale[4] = { 0.5f, 0.0f, 240.0f, 5.0f / 1024.0f };
    uint8_t b[36];
    float want[64];
    memcpy(b, sc, 4);
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 8; j++) {
            b[4 + 8 * s + j] = (uint8_t)(j | (15 - j) << 4);
            for (int h = 0; h < 2; h++) {
                const int code = h ? 15 - j : j;
                want[16 * s + 8 * h + j] = s == 1 ? (code > 8 ? -0.0f : 0.0f)
                                                  : (float)fp4[code] * scale[s];
            }
        }
    expect_bits(TM_TYPE_NVFP4, b, 1, want);
}

/* ---- ternary --------------------------------------------------------------------------------- */

/* tq2_0: d = -1 at the end; half 0's bytes are 0xE4 (codes 0, 1, 2, 3 at shifts 0, 2, 4, 6),
 * half 1's 0x1B (3, 2, 1, 0). Element 128k + 32l + m has the code at shift 2l of qs[32k + m];
 * value (c - 1) * -1: code 0 -> 1, 1 -> -0, 2 -> -1, 3 -> -2. */
Test(dequant_blocks, tq2_0_codes)
{
    static const float value[4] = { 1.0f, -0.0f, -1.0f, -2.0f };
    uint8_t b[66];
    float want[256];
    memset(b, 0xE4, 32);
    memset(b + 32, 0x1B, 32);
    put16(b + 64, 0xBC00);
    for (int e = 0; e < 256; e++) {
        const int k = e / 128, l = e % 128 / 32;
        want[e] = value[k == 0 ? l : 3 - l];
    }
    expect_bits(TM_TYPE_TQ2_0, b, 1, want);
}

/* tq1_0: byte 181 holds the trits 2, 0, 1, 0, 0 (181 * 3^n mod 256, times 3, >> 8), byte 255
 * all 2s, byte 0 all 0s, byte 128 all 1s. d = -0.5: trit 2 -> -0.5, 0 -> 0.5, 1 -> -0. qs[0] = 255
 * marks elements 32n, qs[32] = 0 marks 160 + 16n, qh[3] = 128 marks 240 + 4n + 3; every other
 * byte is 181. */
Test(dequant_blocks, tq1_0_trits_in_order)
{
    static const int t181[5] = { 2, 0, 1, 0, 0 };
    static const float value[3] = { 0.5f, -0.0f, -0.5f };
    uint8_t b[54];
    float want[256];
    memset(b, 181, 52);
    b[0] = 255;
    b[32] = 0;
    b[48 + 3] = 128;
    put16(b + 52, 0xB800);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++)
            want[32 * n + m] = value[m == 0 ? 2 : t181[n]];
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++)
            want[160 + 16 * n + m] = value[m == 0 ? 0 : t181[n]];
    for (int n = 0; n < 4; n++)
        for (int m = 0; m < 4; m++)
            want[240 + 4 * n + m] = value[m == 3 ? 1 : t181[n]];
    expect_bits(TM_TYPE_TQ1_0, b, 1, want);
}

/* ---- the grid i-quants ------------------------------------------------------------------------ */

/* Sign indices 0, 1, 127, 64 and the sign bytes ksigns_iq2xs gives for them (the 7 bits plus an
 * eighth that makes the count of set bits even); plain sign bytes for iq2_s and iq3_s. */
static const unsigned sign_index[4] = { 0, 1, 127, 64 };
static const unsigned sign_byte[4] = { 0x00, 0x81, 0xff, 0xc0 };
static const unsigned plain_signs[4] = { 0x00, 0x81, 0xff, 0x5a };

/* iq2_xxs: d = -2; group g has scale k = g, so db = (-2 * (0.5 + g)) * 0.25; its sub-groups use
 * grid entries 0..3 (bytes copied from iq2xxs_grid) and sign indices 0, 1, 127, 64. */
Test(dequant_blocks, iq2_xxs_grid_signs_scale)
{
    static const uint8_t mag[4][8] = { { 8, 8, 8, 8, 8, 8, 8, 8 }, { 43, 8, 8, 8, 8, 8, 8, 8 },
                                       { 25, 25, 8, 8, 8, 8, 8, 8 }, { 8, 43, 8, 8, 8, 8, 8, 8 } };
    uint8_t b[66];
    float want[256];
    put16(b, 0xC000);
    for (int g = 0; g < 8; g++) {
        uint8_t *rec = b + 2 + 8 * g;
        uint32_t a = (uint32_t)g << 28;
        for (int l = 0; l < 4; l++) {
            rec[l] = (uint8_t)l;
            a |= sign_index[l] << 7 * l;
        }
        put32(rec + 4, a);
        const float db = -0.25f * (float)(2 * g + 1);
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < 8; j++)
                want[32 * g + 8 * l + j] = db * (float)mag[l][j] * sign_of(sign_byte[l], j);
    }
    expect_bits(TM_TYPE_IQ2_XXS, b, 1, want);
}

/* iq2_xs: d = 1; sub-group l's u16 is grid index {0, 1, 256, 511}[l] (9 bits) | sign index << 9;
 * scales[g] = g | (15 - g) << 4: sub-groups 0, 1 use (0.5 + g) / 4, 2, 3 use (15.5 - g) / 4. */
Test(dequant_blocks, iq2_xs_nine_bit_index)
{
    static const unsigned idx[4] = { 0, 1, 256, 511 };
    static const uint8_t mag[4][8] = { { 8, 8, 8, 8, 8, 8, 8, 8 }, { 43, 8, 8, 8, 8, 8, 8, 8 },
                                       { 43, 25, 8, 8, 8, 8, 8, 25 },
                                       { 43, 43, 43, 43, 43, 43, 43, 43 } };
    uint8_t b[74];
    float want[256];
    put16(b, 0x3C00);
    for (int g = 0; g < 8; g++) {
        b[66 + g] = (uint8_t)(g | (15 - g) << 4);
        for (int l = 0; l < 4; l++) {
            put16(b + 2 + 8 * g + 2 * l, idx[l] | sign_index[l] << 9);
            const float db = (float)(l < 2 ? 2 * g + 1 : 31 - 2 * g) / 8.0f;
            for (int j = 0; j < 8; j++)
                want[32 * g + 8 * l + j] = db * (float)mag[l][j] * sign_of(sign_byte[l], j);
        }
    }
    expect_bits(TM_TYPE_IQ2_XS, b, 1, want);
}

/* iq2_s: d = 1; sub-group l's 10-bit index {0, 1, 256, 1023}[l]: low byte in qs, high two
 * bits at bits 2l of qh[g]; plain sign bytes; scales as iq2_xs. */
Test(dequant_blocks, iq2_s_ten_bit_index)
{
    static const unsigned idx[4] = { 0, 1, 256, 1023 };
    static const uint8_t mag[4][8] = { { 8, 8, 8, 8, 8, 8, 8, 8 }, { 43, 8, 8, 8, 8, 8, 8, 8 },
                                       { 25, 25, 25, 25, 25, 8, 25, 8 },
                                       { 43, 43, 43, 43, 43, 43, 43, 43 } };
    uint8_t b[82];
    float want[256];
    put16(b, 0x3C00);
    for (int g = 0; g < 8; g++) {
        b[74 + g] = (uint8_t)(g | (15 - g) << 4);
        b[66 + g] = 0;
        for (int l = 0; l < 4; l++) {
            b[2 + 4 * g + l] = (uint8_t)idx[l];
            b[66 + g] |= (uint8_t)(idx[l] >> 8 << 2 * l);
            b[34 + 4 * g + l] = (uint8_t)plain_signs[l];
            const float db = (float)(l < 2 ? 2 * g + 1 : 31 - 2 * g) / 8.0f;
            for (int j = 0; j < 8; j++)
                want[32 * g + 8 * l + j] = db * (float)mag[l][j] * sign_of(plain_signs[l], j);
        }
    }
    expect_bits(TM_TYPE_IQ2_S, b, 1, want);
}

/* iq3_xxs: d = 1; sub-group l takes two iq3xxs_grid entries (pairs (0, 1), (2, 255), (255, 0),
 * (1, 2)), four magnitudes each; group g's scale k = g gives db = (0.5 + g) * 0.5. */
Test(dequant_blocks, iq3_xxs_grid_pairs)
{
    static const uint8_t entry[256][4] = { [0] = { 4, 4, 4, 4 }, [1] = { 20, 4, 4, 4 },
                                           [2] = { 36, 4, 4, 4 }, [255] = { 4, 28, 52, 62 } };
    static const uint8_t pairs[4][2] = { { 0, 1 }, { 2, 255 }, { 255, 0 }, { 1, 2 } };
    uint8_t b[98];
    float want[256];
    put16(b, 0x3C00);
    for (int g = 0; g < 8; g++) {
        uint32_t a = (uint32_t)g << 28;
        for (int l = 0; l < 4; l++) {
            b[2 + 8 * g + 2 * l] = pairs[l][0];
            b[2 + 8 * g + 2 * l + 1] = pairs[l][1];
            a |= sign_index[l] << 7 * l;
            for (int j = 0; j < 8; j++)
                want[32 * g + 8 * l + j] = (float)(2 * g + 1) / 4.0f *
                                           (float)entry[pairs[l][j / 4]][j % 4] *
                                           sign_of(sign_byte[l], j);
        }
        put32(b + 66 + 4 * g, a);
    }
    expect_bits(TM_TYPE_IQ3_XXS, b, 1, want);
}

/* iq3_s: d = 0.5; sub-group l takes the 9-bit indices (0, 1), (256, 511), (511, 0), (1, 256):
 * ninth bits at bits 2l and 2l + 1 of qh[g]; plain signs; group g's 4-bit scale k = 2g % 16
 * (a nibble of scales[g / 2], even groups low) gives db = 0.5 * (1 + 2k). */
Test(dequant_blocks, iq3_s_ninth_bits_and_scales)
{
    static const uint8_t entry[4][4] = { { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 7, 5, 9, 5 },
                                         { 1, 1, 15, 15 } }; /* iq3s_grid 0, 1, 256, 511 */
    static const unsigned pairs[4][2] = { { 0, 1 }, { 256, 511 }, { 511, 0 }, { 1, 256 } };
    static const int which[512] = { [0] = 0, [1] = 1, [256] = 2, [511] = 3 };
    uint8_t b[110];
    float want[256];
    memset(b, 0, sizeof b);
    put16(b, 0x3800);
    for (int g = 0; g < 8; g++) {
        const int k = 2 * g % 16;
        b[106 + g / 2] |= (uint8_t)(k << 4 * (g % 2));
        for (int l = 0; l < 4; l++) {
            for (int h = 0; h < 2; h++) {
                b[2 + 8 * g + 2 * l + h] = (uint8_t)pairs[l][h];
                b[66 + g] |= (uint8_t)(pairs[l][h] >> 8 << (2 * l + h));
            }
            b[74 + 4 * g + l] = (uint8_t)plain_signs[l];
            for (int j = 0; j < 8; j++)
                want[32 * g + 8 * l + j] = 0.5f * (float)(1 + 2 * k) *
                                           (float)entry[which[pairs[l][j / 4]]][j % 4] *
                                           sign_of(plain_signs[l], j);
        }
    }
    expect_bits(TM_TYPE_IQ3_S, b, 1, want);
}

/* iq1_s grid entries 0, 1, 1024, 2047 as signed bytes. */
static const int iq1_entry[4][8] = { { -1, -1, -1, -1, -1, -1, -1, -1 },
                                     { 1, -1, -1, -1, -1, -1, -1, -1 },
                                     { 0, 1, -1, 0, 0, 0, 0, 0 },
                                     { 1, 1, 1, 1, 1, 1, 1, 1 } };
static const unsigned iq1_index[4] = { 0, 1, 1024, 2047 };

/* dl * (g + delta) for d = 1 (block 0) or d = -0 (block 1, where every element is a zero
 * whose sign is the opposite of g + delta's). */
static float iq1_want(int block, int scale, int g, float delta)
{
    const float v = (float)g + delta;
    return block == 0 ? (float)scale * v : (v > 0 ? -0.0f : 0.0f);
}

/* iq1_s: two blocks, d = 1 and d = -0; sub-group l uses the 11-bit index iq1_index[l] (high
 * three bits at bits 3l of the group's u16), the group's scale k = g (dl = d * (2k + 1)) sits in
 * bits 12..14 and the delta sign (odd groups negative) in bit 15. */
Test(dequant_blocks, iq1_s_index_scale_delta)
{
    uint8_t b[2 * 50];
    float want[2 * 256];
    for (int blk = 0; blk < 2; blk++) {
        uint8_t *p = b + 50 * blk;
        put16(p, blk == 0 ? 0x3C00 : 0x8000);
        for (int g = 0; g < 8; g++) {
            unsigned w = (unsigned)g << 12 | (unsigned)(g % 2) << 15;
            for (int l = 0; l < 4; l++) {
                p[2 + 4 * g + l] = (uint8_t)iq1_index[l];
                w |= (iq1_index[l] >> 8) << 3 * l;
                for (int j = 0; j < 8; j++)
                    want[256 * blk + 32 * g + 8 * l + j] =
                        iq1_want(blk, 2 * g + 1, iq1_entry[l][j], g % 2 ? -0.125f : 0.125f);
            }
            put16(p + 34 + 2 * g, w);
        }
    }
    expect_bits(TM_TYPE_IQ1_S, b, 2, want);
}

/* iq1_m: the half scale is spread over the top nibbles of the four scale words (1.0 = 0x3C00:
 * nibbles 0, 0, 0xC, 0x3; -0 = 0x8000: 0, 0, 0, 0x8); group g's sub-scales are g and 7 - g
 * (bits 6 * (g % 2) of word g / 2, three each); qh[2g] holds sub-groups 0 and 1 (index bits
 * 8..10 and the delta bit in each nibble), qh[2g + 1] sub-groups 2 and 3. Deltas: sub-groups 1
 * and 2 negative. */
Test(dequant_blocks, iq1_m_spread_scale)
{
    static const int delta_neg[4] = { 0, 1, 1, 0 };
    uint8_t b[2 * 56];
    float want[2 * 256];
    for (int blk = 0; blk < 2; blk++) {
        uint8_t *p = b + 56 * blk;
        const unsigned half = blk == 0 ? 0x3C00 : 0x8000;
        unsigned w[4];
        for (int i = 0; i < 4; i++)
            w[i] = (half >> 4 * i & 15) << 12;
        for (int g = 0; g < 8; g++) {
            w[g / 2] |= ((unsigned)g | (unsigned)(7 - g) << 3) << 6 * (g % 2);
            p[32 + 2 * g] = p[32 + 2 * g + 1] = 0;
            for (int l = 0; l < 4; l++) {
                p[4 * g + l] = (uint8_t)iq1_index[l];
                const unsigned nib = iq1_index[l] >> 8 | (unsigned)delta_neg[l] << 3;
                p[32 + 2 * g + l / 2] |= (uint8_t)(nib << 4 * (l % 2));
                for (int j = 0; j < 8; j++)
                    want[256 * blk + 32 * g + 8 * l + j] =
                        iq1_want(blk, 2 * (l < 2 ? g : 7 - g) + 1, iq1_entry[l][j],
                                 delta_neg[l] ? -0.125f : 0.125f);
            }
        }
        for (int i = 0; i < 4; i++)
            put16(p + 48 + 2 * i, w[i]);
    }
    expect_bits(TM_TYPE_IQ1_M, b, 2, want);
}
