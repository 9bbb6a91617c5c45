/* x quantized to 8 bits for TM_MATVEC_Q8, one block of kernels.h's tm__q8_0x / tm__q8_Kx: the
 * quantizer of matvec.c, and of a path's x_q8 kernel that writes q8_0 blocks into a layout of
 * its own (AVX2's q4_1, q5_1, q1_0), so that both give the same codes. Scalar code; a header
 * so that a kernel file, which exports nothing but its table, can have it too. */
#ifndef TM_QUANTIZE_X_H
#define TM_QUANTIZE_X_H

#include <stdint.h>
#include <string.h>

/* ggml's quantize_row_q8_0: d = max|x| / 127, q = round(x / d), halves away from zero. The
 * reciprocal is taken in double so that tiny blocks (max|x| < 127 * FLT_MIN) do not overflow
 * it. A NaN or an infinity in the block makes d NaN or infinite (and every code 0), so y comes
 * out NaN, not a number that hides it. No branch a NaN test could mispredict: max|x| from the
 * magnitudes' bits (as integers every NaN is above the infinity, which is above every finite
 * value), the rounding a select between v + 0.5 and v - 0.5, truncated (the codes of before,
 * bit for bit; a one-row product of 4,096 went 17.7 -> 9.7 us, Intel Xeon, one thread). */
static inline void tm__quantize_block(const float *x, int n, float *d, int8_t *qs)
{
    uint32_t top = 0;
    for (int j = 0; j < n; j++) {
        uint32_t m;
        memcpy(&m, &x[j], sizeof m);
        m &= 0x7fffffffu;
        top = m > top ? m : top;
    }
    float amax;
    memcpy(&amax, &top, sizeof amax);
    *d = amax / 127.0f;
    if (top == 0 || top >= 0x7f800000u) {
        memset(qs, 0, (size_t)n);
        return;
    }
    const double id = 127.0 / (double)amax;
    for (int j = 0; j < n; j++) {
        const double v = (double)x[j] * id; /* in [-127, 127] */
        qs[j] = (int8_t)(int)(v >= 0.5 ? v + 0.5 : v <= -0.5 ? v - 0.5 : 0.0);
    }
}

#endif /* TM_QUANTIZE_X_H */
