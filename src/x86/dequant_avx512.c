/* avx512 kernels (placeholder table: every type falls back to scalar until the kernels land). */
#include "dequant.h"

const tm__kernels tm__kernels_avx512 = { .name = "avx512" };
