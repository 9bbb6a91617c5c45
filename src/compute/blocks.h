/* Block fields as every kernel file reads them: little-endian integers, IEEE halves, the fp4
 * types' scales, and the packed 6-bit scales of the K types. All static inline: each kernel file
 * compiles its own copy with its own flags, so no AVX-512 code can be reached from a file that
 * has not checked the CPU (STYLE 2). Loads go through bytes or memcpy, never a cast pointer:
 * blocks in a file are only 2-byte aligned. */
#ifndef TM_BLOCKS_H
#define TM_BLOCKS_H

#include <stdint.h>
#include <string.h>

/* ---- little-endian fields ------------------------------------------------------------------ */

static inline uint16_t tm__rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline uint32_t tm__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- float bits and halves (the scalar files; SIMD files convert halves with F16C) --------- */

static inline float tm__f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t tm__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE half -> float, exact for every pattern. A NaN keeps its payload (shifted into the top of
 * the float mantissa) and comes out quiet, as F16C's vcvtph2ps and ggml's scalar conversion
 * (whose multiply quiets a signalling NaN) both do. All three cases are computed and one is
 * selected, without branches, so the compiler can vectorize a loop of them. */
static inline float tm__half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    const uint32_t special = 0x7f800000u | man << 13 | (man ? 0x400000u : 0); /* inf, NaN */
    const uint32_t normal = (exp + 112) << 23 | man << 13;
    /* zero or subnormal: man * 2^-24, exact in float32 (man < 2^10, result normal) */
    const uint32_t small = tm__f32_bits((float)man * 0x1p-24f);
    const uint32_t is_special = 0u - (uint32_t)(exp == 0x1f), is_small = 0u - (uint32_t)(exp == 0);
    return tm__f32_from_bits(sign | (special & is_special) | (small & is_small) |
                             (normal & ~(is_special | is_small)));
}

static inline float tm__rdh(const uint8_t *p) { return tm__half_to_float(tm__rd16(p)); }

/* ---- the fp4 types' scales (mxfp4, nvfp4), halved as ggml's decoders use them ------------ */

/* An E8M0 byte as ggml's halved scale: exactly 2^(e - 128) for every e (e = 0, 1 subnormal). */
static inline float tm__e8m0_half(uint8_t e)
{
    return tm__f32_from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* A UE4M3 byte as ggml's halved scale: bit 7 is ignored, 0x00 and 0x7f are +0 (0xff is not
 * caught by that rule and gives 240); E == 0 gives M * 2^-10, else (8 + M) * 2^(E - 11). */
static inline float tm__ue4m3_half(uint8_t x)
{
    if (x == 0x00 || x == 0x7f)
        return 0.0f;
    const unsigned e = (unsigned)x >> 3 & 15, m = x & 7u;
    if (e == 0)
        return (float)m * 0x1p-10f;
    return (float)(8 + m) * tm__f32_from_bits((e - 11 + 127) << 23); /* exact power of two */
}

/* ---- the packed 6-bit scales of the K types ----------------------------------------------- */

/* The 6-bit scale and min of group g (0..7) of q4_K / q5_K, packed in 12 bytes: groups 0..3
 * in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); groups 4..7 in the nibbles of bytes
 * 8..11 with their top two bits in bits 6..7 of bytes 0..7. */
static inline void tm__k4_scale_min(const uint8_t *s, int g, unsigned *sc, unsigned *m)
{
    if (g < 4) {
        *sc = s[g] & 63u;
        *m = s[g + 4] & 63u;
    } else {
        *sc = (s[g + 4] & 15u) | (unsigned)(s[g - 4] >> 6) << 4;
        *m = (unsigned)(s[g + 4] >> 4) | (unsigned)(s[g] >> 6) << 4;
    }
}

/* The same eight scales and eight mins, all at once with ggml's word arithmetic: bytes 0..7 of
 * w (little-endian, so (const uint8_t *)w reads them in order) are the scales of groups 0..7,
 * bytes 8..15 their mins. */
static inline void tm__k4_scale_min_words(const uint8_t *s12, uint32_t w[4])
{
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t a0 = tm__rd32(s12), a1 = tm__rd32(s12 + 4), a2 = tm__rd32(s12 + 8);
    w[0] = a0 & m6;
    w[1] = (a2 & m4) | ((a0 >> 6) & m2) << 4;
    w[2] = a1 & m6;
    w[3] = ((a2 >> 4) & m4) | ((a1 >> 6) & m2) << 4;
}

/* The sixteen 6-bit scales of q3_K (0..63, before ggml's "- 32"): low 4 bits in bytes 0..7,
 * high 2 bits in bytes 8..11, unpacked as ggml does with three little-endian words. Byte k of
 * the four result words (little-endian) is scale k. */
static inline void tm__q3_K_scale_words(const uint8_t *s12, uint32_t w[4])
{
    const uint32_t m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t a0 = tm__rd32(s12), a1 = tm__rd32(s12 + 4), a2 = tm__rd32(s12 + 8);
    w[0] = (a0 & m4) | ((a2 >> 0 & m2) << 4);
    w[1] = (a1 & m4) | ((a2 >> 2 & m2) << 4);
    w[2] = (a0 >> 4 & m4) | ((a2 >> 4 & m2) << 4);
    w[3] = (a1 >> 4 & m4) | ((a2 >> 6 & m2) << 4);
}

#endif /* TM_BLOCKS_H */
