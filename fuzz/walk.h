/* The walk both fuzz harnesses share: the path a real user takes through an untrusted file. */
#ifndef TM_FUZZ_WALK_H
#define TM_FUZZ_WALK_H

#include <stddef.h>
#include <stdint.h>

/* Open data with tm_open_buffer and, when it opens, touch everything the API hands out: every
 * kv (value, elements, string-array strings), every lookup by key and by name, the first block
 * of every decodable tensor on every instruction set the machine has. Aborts when an invariant
 * of the API is broken (a pointer outside the buffer, a lookup that finds another entry, an
 * error without a message, a SIMD path decoding differently from the scalar one), so the
 * fuzzer reports logic bugs as well as memory errors. */
void fuzz_walk(const uint8_t *data, size_t size);

#endif
