/* AVX-512 TM_MATVEC_Q8 kernels for the grid i-quants and the ternary types: the template
 * matvec_iq_x86.h (matvec_avx2_iq.c's kernels) compiled again with the AVX-512 flags, under this
 * file's table and kernel names (dot_iq2_xs_q8_avx512). The source is the same, so are the
 * results, bit for bit; the compiler has 32 vector registers and the EVEX forms, which took these
 * compute-bound kernels 3-12 % faster (Intel Xeon, Sapphire Rapids class, one thread, W in L2,
 * best of 30). */
#define IQ_ISA avx512
#include "matvec_iq_x86.h"
