/* AVX2 TM_MATVEC_Q8 kernels for the grid i-quants and the ternary types: the template
 * matvec_iq_x86.h built with the AVX2 flags, under this file's table and kernel names
 * (dot_iq2_xs_q8_avx2). Only the table is exported. */
#define IQ_ISA avx2
#include "matvec_iq_x86.h"
