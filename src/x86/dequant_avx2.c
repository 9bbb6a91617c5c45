/* avx2 kernels (placeholder table: every type falls back to scalar until the kernels land). */
#include "dequant.h"

const tm__kernels tm__kernels_avx2 = { .name = "avx2" };
