/* The row-dot kernel tables of tm_matvec: one const table per instruction-set path, kept apart
 * from the dequant tables. Each ISA file (src/compute/x86/matvec_avx2.c, ...) exports exactly one table;
 * everything else in it is static.
 *
 * A kernel computes the dot product of ONE row of W (n_blocks whole blocks where they lie in
 * the mapping, any alignment) with x, in an order fixed by the kernel alone: rows never share
 * an accumulator, so splitting the rows over threads cannot change a result. */
#ifndef TM_MATVEC_H
#define TM_MATVEC_H

#include "dequant.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* x quantized to 8 bits for TM_MATVEC_Q8, as ggml's q8_0 and q8_K blocks but with a float32
 * scale in both (ggml's q8_0 keeps a half; a float costs nothing here and loses less):
 * x[i] ~= d * qs[i], qs in [-127, 127]; bsums[g] = sum of qs[16g .. 16g + 15]. */
typedef struct tm__q8_0x {
    float d;
    int8_t qs[32];
} tm__q8_0x;

typedef struct tm__q8_Kx {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} tm__q8_Kx;

_Static_assert(sizeof(tm__q8_0x) == 36, "q8_0 activation block is 36 bytes");
_Static_assert(sizeof(tm__q8_Kx) == 292, "q8_K activation block is 292 bytes");

/* sum over the row of w[i] * x[i], x as float32 (n_blocks * block_elems floats) */
typedef float tm__mv_f32_fn(const void *w, const float *x, size_t n_blocks);
/* the same with x quantized: n_blocks tm__q8_0x (32-element weight blocks) or tm__q8_Kx
 * (256-element weight blocks) at xq */
typedef float tm__mv_q8_fn(const void *w, const void *xq, size_t n_blocks);

/* q4_K's eight 6-bit scales and eight 6-bit mins, unpacked from their 12 bytes with ggml's
 * word trick: bytes 0..7 of the result are the scales of groups 0..7, bytes 8..15 the mins
 * (the same values tm__k4_scale_min gives one at a time). */
static inline void tm__k4_scales_mins(const uint8_t *s12, uint8_t out[16])
{
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t a0 = tm__rd32(s12), a1 = tm__rd32(s12 + 4), a2 = tm__rd32(s12 + 8);
    const uint32_t w[4] = { a0 & m6, (a2 & m4) | ((a0 >> 6 & m2) << 4), a1 & m6,
                            (a2 >> 4 & m4) | ((a1 >> 6 & m2) << 4) };
    memcpy(out, w, 16);
}

typedef struct tm__matvec_kernels {
    const char *name;                /* the dequant path's name: "scalar", "avx2", ... */
    tm__mv_f32_fn *f32[TM__SLOTS];   /* NULL: the next path's kernel, then decode + dot */
    tm__mv_q8_fn *q8[TM__SLOTS];     /* NULL: the next path's kernel, then float32 math */
} tm__matvec_kernels;

extern const tm__matvec_kernels tm__matvec_scalar;
#if defined(__x86_64__)
extern const tm__matvec_kernels tm__matvec_avx2;
extern const tm__matvec_kernels tm__matvec_avx512;
#endif
#if defined(__aarch64__)
extern const tm__matvec_kernels tm__matvec_neon;
#endif

#endif /* TM_MATVEC_H */
