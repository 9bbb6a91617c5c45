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
