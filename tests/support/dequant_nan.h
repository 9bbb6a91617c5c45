/* Random blocks for comparing two decoders bit for bit (tests/test_dequant.c, tests/arm/). */
#ifndef TM_TESTS_DEQUANT_NAN_H
#define TM_TESTS_DEQUANT_NAN_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>

/* Where a type keeps the second half-float of a block (the min or dmin), or -1. When both the
 * scale and the min are NaN, "q * d + m" has two NaN operands, and IEEE 754 leaves open which
 * payload comes out: the hardware returns its first operand's, and the compiler is free to
 * commute an addition, so scalar and SIMD code may legitimately pick different payloads. The
 * random blocks therefore never hold a NaN min (every other pattern, infinities included, is
 * drawn); single-NaN inputs are still compared payload and all. */
static inline int min_offset(tm_type type)
{
    switch (type) {
    case TM_TYPE_Q4_1: case TM_TYPE_Q5_1: case TM_TYPE_Q4_K: case TM_TYPE_Q5_K: return 2;
    case TM_TYPE_Q2_K: return 82;
    default: return -1;
    }
}

static inline void no_nan_min(tm_type type, uint8_t *blocks, size_t n_blocks)
{
    const int off = min_offset(type);
    if (off < 0)
        return;
    const size_t bb = tm_type_block_bytes(type);
    for (size_t i = 0; i < n_blocks; i++) {
        uint8_t *h = blocks + i * bb + (size_t)off; /* h[1] holds the exponent bits 0x7c */
        if ((h[1] & 0x7c) == 0x7c && ((h[1] & 3) || h[0]))
            h[1] &= 0xbf; /* a finite half instead */
    }
}

#endif
