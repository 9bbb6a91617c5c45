/* placeholder: filled by its helper */
#include "../kernels.h"

const tm__kernels tm__kernels_matvec_neon_q8 = { 0 };
