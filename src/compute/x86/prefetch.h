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

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define TM__PREFETCH_BYTES 2048

/* Ask for the cache lines that start in [b, b + bytes) TM__PREFETCH_BYTES ahead: a loop that
 * calls it for each stretch it reads (a block, a step) asks for every line once, whatever the
 * blocks' size and alignment (a q4_0 block of 18 bytes starts a line one time in three or four). */
static inline void prefetch_ahead(const uint8_t *b, size_t bytes)
{
    const uint8_t *ahead = b + TM__PREFETCH_BYTES;
    for (size_t o = (64 - ((uintptr_t)ahead & 63)) & 63; o < bytes; o += 64)
        _mm_prefetch((const char *)(ahead + o), _MM_HINT_T0);
}

#endif
