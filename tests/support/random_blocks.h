/* Random blocks of any type and a tm_tensor over caller bytes, without Criterion: the x86
 * suite's product tests (through product_fixture.h) and the NEON check under qemu
 * (tests/arm/matvec_check.c, built without Criterion) draw the same blocks. */
#ifndef TM_TEST_RANDOM_BLOCKS_H
#define TM_TEST_RANDOM_BLOCKS_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>

/* splitmix64: fast, and consecutive seeds give independent-looking outputs */
uint64_t splitmix64(uint64_t z);

/* n_blocks random blocks of type into p, with a sane half scale (about 0.01) in each scale field
 * so that products stay finite. */
void random_blocks(tm_type type, uint8_t *p, size_t n_blocks, uint64_t seed);

/* A cols x rows tm_tensor over caller bytes: what a file's index would hold. */
tm_tensor tensor_over(const char *name, tm_type type, const void *data, uint64_t cols,
                      uint64_t rows);

#endif
