/* Random blocks and a tm_tensor over caller bytes (random_blocks.h). Plain C: no Criterion. */
#include "random_blocks.h"

#include <string.h>

uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A random block image with a sane half scale (about 0.01) in each scale field. */
void random_blocks(tm_type type, uint8_t *p, size_t n_blocks, uint64_t seed)
{
    const size_t bb = tm_type_block_bytes(type);
    for (size_t i = 0; i < n_blocks * bb; i++)
        p[i] = (uint8_t)splitmix64(seed + i);
    const uint8_t d[2] = { 0x1f, 0x21 };
    for (size_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = p + b * bb;
        switch (type) {
        case TM_TYPE_Q8_0: case TM_TYPE_Q4_0: case TM_TYPE_Q5_0: case TM_TYPE_IQ4_NL:
        case TM_TYPE_IQ4_XS: case TM_TYPE_Q1_0: case TM_TYPE_Q2_0: case TM_TYPE_IQ2_XXS:
        case TM_TYPE_IQ2_XS: case TM_TYPE_IQ2_S: case TM_TYPE_IQ3_XXS: case TM_TYPE_IQ3_S:
        case TM_TYPE_IQ1_S: memcpy(blk, d, 2); break;
        case TM_TYPE_Q4_K: case TM_TYPE_Q5_K: case TM_TYPE_Q4_1: case TM_TYPE_Q5_1:
            memcpy(blk, d, 2); memcpy(blk + 2, d, 2); break;
        case TM_TYPE_Q6_K: memcpy(blk + 208, d, 2); break;
        case TM_TYPE_Q2_K: memcpy(blk + 80, d, 2); memcpy(blk + 82, d, 2); break;
        case TM_TYPE_Q3_K: memcpy(blk + 108, d, 2); break;
        case TM_TYPE_TQ1_0: memcpy(blk + 52, d, 2); break;
        case TM_TYPE_TQ2_0: memcpy(blk + 64, d, 2); break;
        case TM_TYPE_MXFP4: blk[0] = (uint8_t)(120 + blk[0] % 16); break; /* 2^-8 .. 2^7 */
        case TM_TYPE_IQ1_M: blk[55] = (uint8_t)((blk[55] & 0x0f) | 0x20); break; /* d's top */
        case TM_TYPE_F16: for (size_t k = 1; k < bb; k += 2) blk[k] &= 0xb7; break;
        case TM_TYPE_BF16: for (size_t k = 1; k < bb; k += 2) blk[k] &= 0xbf; break;
        case TM_TYPE_F32: blk[3] &= 0xbf; break;
        default: break;
        }
    }
}

/* A tm_tensor over caller bytes: what a file's index would hold. */
tm_tensor tensor_over(const char *name, tm_type type, const void *data, uint64_t cols,
                      uint64_t rows)
{
    tm_tensor t;
    memset(&t, 0, sizeof t);
    t.name.ptr = name;
    t.name.len = strlen(name);
    t.type = type;
    t.n_dims = 2;
    t.ne[0] = cols;
    t.ne[1] = rows;
    t.ne[2] = t.ne[3] = 1;
    t.n_elements = cols * rows;
    t.n_bytes = t.n_elements / tm_type_block_elems(type) * tm_type_block_bytes(type);
    t.data = data;
    return t;
}
