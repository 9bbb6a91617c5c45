/* The kernel tables the dequant files share: const tables per instruction-set path.
 * Each kernel file (src/compute/x86/dequant_avx2.c, ...) exports exactly one table; everything else in it
 * is static, so no code compiled with -mavx512f can be reached from scalar code by accident. */
#ifndef TM_DEQUANT_H
#define TM_DEQUANT_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Decode n_blocks whole blocks at src (any alignment: blocks in a file are only 2-byte
 * aligned) into dst (n_blocks * block_elems floats, any 4-byte alignment). */
typedef void tm__dequant_fn(const void *src, float *dst, size_t n_blocks);

/* Table slots: ggml ids 0..TM__GGML_SLOTS-1 map to themselves, the safetensors-only ids
 * (TM__ST_FIRST..) follow them. Both counts come from the type lists in tensormap.h: the ggml
 * count is one past the largest id (the size of a union with one id+1-byte member per type). */
#define TM__ID_SPAN(name, id, text, block_elems, block_bytes) char t_##name[(id) + 1];
union tm__ggml_id_span { TM_GGML_TYPE_LIST(TM__ID_SPAN) };
#undef TM__ID_SPAN
#define TM__PLUS_ONE(name, id, text, block_elems, block_bytes) +1
enum { TM__GGML_SLOTS = (int)sizeof(union tm__ggml_id_span), TM__ST_FIRST = TM_TYPE_U8,
       TM__ST_SLOTS = 0 TM_ST_TYPE_LIST(TM__PLUS_ONE),
       TM__SLOTS = TM__GGML_SLOTS + TM__ST_SLOTS };
#undef TM__PLUS_ONE
_Static_assert(TM__ST_FIRST >= TM__GGML_SLOTS, "safetensors ids must follow the ggml ids");
#define TM__ST_ID_IN_RANGE(name, id, text, block_elems, block_bytes) \
    _Static_assert((id) >= TM__ST_FIRST && (id) < TM__ST_FIRST + TM__ST_SLOTS, \
                   "TM_TYPE_" #name " is outside the safetensors slots");
TM_ST_TYPE_LIST(TM__ST_ID_IN_RANGE)
#undef TM__ST_ID_IN_RANGE

/* The slot of a type id, as a constant expression for a table's designated initialisers:
 * [TM__SLOT(TM_TYPE_U8)] = dequant_u8_scalar. */
#define TM__SLOT(t) ((unsigned)(t) < TM__ST_FIRST ? (unsigned)(t) \
                                                  : (unsigned)(t) - TM__ST_FIRST + TM__GGML_SLOTS)

static inline int tm__type_slot(tm_type t)
{
    unsigned u = (unsigned)t;
    if (u < TM__GGML_SLOTS)
        return (int)u;
    if (u >= TM__ST_FIRST && u < TM__ST_FIRST + TM__ST_SLOTS)
        return (int)(u - TM__ST_FIRST + TM__GGML_SLOTS);
    return -1;
}

/* Every instruction-set path the library knows, X(ID, "name", FALLBACK): for a type a path's
 * tables have no kernel for, the path runs its fallback's kernel (resolved once, at first use:
 * avx512 -> avx2 -> scalar). Later paths are better; a fallback comes before its path. */
#define TM__ISA_LIST(X)             \
    X(SCALAR, "scalar", SCALAR)     \
    X(AVX2, "avx2", SCALAR)         \
    X(AVX512, "avx512", AVX2)       \
    X(NEON, "neon", SCALAR)

enum tm__isa {
#define TM__ISA_ENUM(id, name, fallback) TM__ISA_##id,
    TM__ISA_LIST(TM__ISA_ENUM)
#undef TM__ISA_ENUM
    TM__N_ISAS
};

/* One kernel file's table. A path may have several (one per kernel file: one family of types
 * each); they are merged at first use, and no two tables of a path may fill the same slot. */
typedef struct tm__kernels {
    const char *name;               /* the path it belongs to: a name in TM__ISA_LIST */
    tm__dequant_fn *fn[TM__SLOTS];  /* NULL: this file has no kernel for the type */
} tm__kernels;

/* Every kernel table of this build, X(table). Adding a kernel file: a line in mk/sources.mk
 * (with its -m flags) and its table here. */
#if defined(__x86_64__)
#define TM__ARCH_TABLES(X) \
    X(tm__kernels_avx2) X(tm__kernels_avx2_lut) X(tm__kernels_avx2_iq) \
    X(tm__kernels_avx512) X(tm__kernels_avx512_lut) X(tm__kernels_avx512_iq)
#elif defined(__aarch64__)
#define TM__ARCH_TABLES(X) X(tm__kernels_neon) X(tm__kernels_neon_iq)
#else
#define TM__ARCH_TABLES(X)
#endif
#define TM__KERNEL_TABLES(X) \
    X(tm__kernels_scalar) X(tm__kernels_scalar_iq) X(tm__kernels_scalar_lut) TM__ARCH_TABLES(X)

#define TM__DECLARE_TABLE(table) extern const tm__kernels table;
TM__KERNEL_TABLES(TM__DECLARE_TABLE)
#undef TM__DECLARE_TABLE

/* dequant.c: the kernel path isa (a TM__ISA_ id) runs for type, after the fallbacks; NULL when
 * the path is not built here or no path decodes the type. For the tests that pin which kernel
 * each path holds. *from, when not NULL, gets the path the kernel belongs to. */
tm__dequant_fn *tm__kernel_for(unsigned isa, tm_type type, unsigned *from);

/* ---- block fields read the same way by every kernel file ----------------------------------
 * static inline: each kernel file compiles its own copy with its own flags, so no AVX-512 code
 * can be reached from a file that has not checked the CPU. */

static inline uint32_t tm__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- scalar conversions (for the scalar kernel files; SIMD files convert with F16C) -------- */

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

static inline uint16_t tm__rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

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

/* The fp4 types' scales (mxfp4, nvfp4), halved as ggml's decoders use them. */

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

#if defined(__x86_64__)
/* src/compute/x86/cpu.c: what the CPU and the OS (XCR0) both support. */
enum {
    TM__X86_AVX2 = 1u << 0,   /* AVX2 + FMA + F16C + BMI2, YMM state enabled by the OS */
    TM__X86_AVX512 = 1u << 1, /* AVX-512 F, BW, VL, DQ, VBMI, ZMM + opmask state enabled */
};
unsigned tm__x86_features(void);
#endif

#endif /* TM_DEQUANT_H */
