/* What the CPU and the operating system both support, from cpuid and xgetbv.
 *
 * cpuid says what the CPU implements; XCR0 (read with xgetbv, once the OS has set OSXSAVE) says
 * which register state the OS saves on a context switch. A VM or kernel may turn ZMM state off
 * while cpuid still reports AVX-512: running AVX-512 code then faults (SIGILL). So both are
 * checked before any AVX or AVX-512 path is allowed. Compiled without -m flags. */
#include "../kernels.h"

#include <cpuid.h>
#include <stdatomic.h>
#include <stdbool.h>

/* cpuid leaf 1 ECX, leaf 7 EBX/ECX bits and XCR0 bits used below. */
#define L1_ECX_FMA (1u << 12)
#define L1_ECX_OSXSAVE (1u << 27)
#define L1_ECX_AVX (1u << 28)
#define L1_ECX_F16C (1u << 29)
#define L7_EBX_AVX2 (1u << 5)
#define L7_EBX_BMI2 (1u << 8)
#define L7_EBX_AVX512F (1u << 16)
#define L7_EBX_AVX512DQ (1u << 17)
#define L7_EBX_AVX512BW (1u << 30)
#define L7_EBX_AVX512VL (1u << 31)
#define L7_ECX_AVX512VBMI (1u << 1)
#define L7_EDX_AVX512FP16 (1u << 23)
#define XCR0_SSE_AVX 0x06u       /* XMM and YMM state */
#define XCR0_AVX512 0xe6u        /* XMM, YMM, opmask, ZMM0-15 upper halves, ZMM16-31 */

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* cpuid leaf 0 names the vendor in EBX, EDX, ECX: "Auth" "enti" "cAMD" */
static bool amd(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541u && d == 0x69746e65u &&
           c == 0x444d4163u;
}

static unsigned detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const unsigned ecx1 = c;
    if (!(ecx1 & L1_ECX_OSXSAVE) || !(ecx1 & L1_ECX_AVX))
        return 0; /* xgetbv itself is undefined without OSXSAVE */
    const uint64_t xcr0 = xgetbv0();
    if ((xcr0 & XCR0_SSE_AVX) != XCR0_SSE_AVX)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned f = 0;
    const unsigned avx2 = L7_EBX_AVX2 | L7_EBX_BMI2;
    if ((b & avx2) == avx2 && (ecx1 & L1_ECX_FMA) && (ecx1 & L1_ECX_F16C))
        f |= TM__X86_AVX2;
    const unsigned avx512 = L7_EBX_AVX512F | L7_EBX_AVX512DQ | L7_EBX_AVX512BW | L7_EBX_AVX512VL;
    if ((f & TM__X86_AVX2) && (b & avx512) == avx512 && (c & L7_ECX_AVX512VBMI) &&
        (xcr0 & XCR0_AVX512) == XCR0_AVX512)
        f |= TM__X86_AVX512;
    if ((f & TM__X86_AVX512) && (d & L7_EDX_AVX512FP16))
        f |= TM__X86_AVX512FP16;
    if (amd())
        f |= TM__X86_AMD;
    return f;
}

unsigned tm__x86_features(void)
{
    /* computed once; a race computes the same value twice, which is harmless */
    static atomic_uint cached; /* features | 1u << 31 once known */
    unsigned v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!(v & 1u << 31)) {
        v = detect() | 1u << 31;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v & ~(1u << 31);
}
