/* What the NEON kernel files share: a half read from a block and the signed-byte dot. Included
 * only by the NEON kernel files (aarch64). */
#ifndef TM_COMPUTE_ARM_NEON_COMMON_H
#define TM_COMPUTE_ARM_NEON_COMMON_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

/* IEEE half bits -> float with the hardware conversion (exact, as the decoders' tm__rdh; a NaN
 * keeps its payload and comes out quiet, as on x86 and in the scalar kernel, with the default
 * FPCR.DN = 0) */
static inline float half_bits(uint16_t h)
{
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* the half at p */
static inline float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return half_bits(h);
}

/* acc + a . b over sixteen signed bytes, in four int32 lanes */
static inline int32x4_t dot_s8(int8x16_t a, int8x16_t b, int32x4_t acc)
{
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#endif /* TM_COMPUTE_ARM_NEON_COMMON_H */
