/* Software prefetch of W for the x86 product kernels (AVX2 and AVX-512 files alike).
 *
 * One thread streaming W from DRAM is bound by the cache lines it has in flight. The kernels
 * spend enough instructions per byte that the out-of-order window covers only a few lines, and
 * the hardware prefetcher alone keeps too few more in flight: without the hint W streams at a
 * fraction of a plain read's rate (2 KiB ahead measured best of 0.5-4 KiB: BENCHMARKS.md, the
 * Intel Xeon section). A prefetch past the end of the mapping is
 * harmless: it is a hint, never a load that can fault. */
#ifndef TM_COMPUTE_X86_PREFETCH_H
#define TM_COMPUTE_X86_PREFETCH_H

#include "../kernels.h"

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM__PREFETCH_BYTES 2048

/* Ask for the cache lines of [b, b + bytes) TM__PREFETCH_BYTES ahead, for a loop that calls it
 * for each stretch it reads (a block, a step), so that every line of W is asked for. A stretch
 * of at most a line (a 32-element block, 18-34 bytes) takes one hint, for the line of its last
 * byte: the stretches' last bytes are at most a line apart, so no line is skipped, and a line
 * asked for twice costs a hint, where counting the lines that start in the stretch cost a
 * branch a block (10-13 % of an AVX2 q4_0 or q8_0 row in cache, Intel Xeon, 2026-12-03).
 * A longer stretch asks for the lines that start in it, each once. */
static inline void prefetch_ahead(const uint8_t *b, size_t bytes)
{
    const uint8_t *ahead = b + TM__PREFETCH_BYTES;
    if (bytes <= 64) {
        _mm_prefetch((const char *)(ahead + bytes - 1), _MM_HINT_T0);
        return;
    }
    for (size_t o = (64 - ((uintptr_t)ahead & 63)) & 63; o < bytes; o += 64)
        _mm_prefetch((const char *)(ahead + o), _MM_HINT_T0);
}

/* Whether a row of plain elem_size-byte floats (f32, f16, bf16) is worth hinting. On AMD's Zen 4
 * an f32 row streamed from DRAM at 0.66-0.79 of ggml's rate with the hints and at 0.94 without
 * them (the hardware prefetcher alone keeps up with a loop this light; its f16 and bf16 rows and
 * every quantized type lose nothing to them, and a shorter or longer distance did not help:
 * BENCHMARKS.md, 2026-12-03). Measured on Zen 4 only, applied to every AMD CPU; Intel's Xeons
 * keep the hints (their f16 rows needed them; their f32 rows without them were not measured). */
static inline bool plain_row_hints(size_t elem_size)
{
    return elem_size != 4 || !(tm__x86_features() & TM__X86_AMD);
}

#endif
