/* The kernel table the dequant files share: one const table per instruction-set path.
 * Each ISA file (src/x86/dequant_avx2.c, ...) exports exactly one table; everything else in it
 * is static, so no code compiled with -mavx512f can be reached from scalar code by accident. */
#ifndef TM_DEQUANT_H
#define TM_DEQUANT_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>

/* Decode n_blocks whole blocks at src (any alignment: blocks in a file are only 2-byte
 * aligned) into dst (n_blocks * block_elems floats, any 4-byte alignment). */
typedef void tm__dequant_fn(const void *src, float *dst, size_t n_blocks);

/* Table slots: ggml ids 0..TM__GGML_SLOTS-1 map to themselves, the safetensors-only ids
 * (1024..) follow them. */
enum { TM__GGML_SLOTS = 43, TM__ST_FIRST = 1024, TM__ST_SLOTS = 7,
       TM__SLOTS = TM__GGML_SLOTS + TM__ST_SLOTS };

static inline int tm__type_slot(tm_type t)
{
    unsigned u = (unsigned)t;
    if (u < TM__GGML_SLOTS)
        return (int)u;
    if (u >= TM__ST_FIRST && u < TM__ST_FIRST + TM__ST_SLOTS)
        return (int)(u - TM__ST_FIRST + TM__GGML_SLOTS);
    return -1;
}

typedef struct tm__kernels {
    const char *name;               /* "scalar", "avx2", "avx512", "neon" */
    tm__dequant_fn *fn[TM__SLOTS];  /* NULL: fall back to the scalar kernel */
} tm__kernels;

/* ---- block fields read the same way by every kernel file ----------------------------------
 * static inline: each kernel file compiles its own copy with its own flags, so no AVX-512 code
 * can be reached from a file that has not checked the CPU. */

static inline uint32_t tm__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

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
 * w (little-endian) are the scales of groups 0..7, bytes 8..15 their mins. */
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

extern const tm__kernels tm__kernels_scalar;
#if defined(__x86_64__)
extern const tm__kernels tm__kernels_avx2;
extern const tm__kernels tm__kernels_avx512;

/* src/x86/cpu.c: what the CPU and the OS (XCR0) both support. */
enum {
    TM__X86_AVX2 = 1u << 0,   /* AVX2 + FMA + F16C + BMI2, YMM state enabled by the OS */
    TM__X86_AVX512 = 1u << 1, /* AVX-512 F, BW, VL, DQ, VBMI, ZMM + opmask state enabled */
};
unsigned tm__x86_features(void);
#endif
#if defined(__aarch64__)
extern const tm__kernels tm__kernels_neon;
#endif

#endif /* TM_DEQUANT_H */
