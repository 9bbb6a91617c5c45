/* The dispatch ABI of the compute part: the table slots, the instruction-set paths, the kernel
 * types of each family, and the const tables the kernel files export.
 *
 * Each kernel file (src/compute/dequant_scalar.c, x86/dequant_avx2.c, arm/matvec_neon.c, ...)
 * exports exactly one table; everything else in it is static, so no code compiled with
 * -mavx512f can be reached from scalar code by accident. A header without a .c: the kernel
 * files, the entry points (dequant.c, matvec.c) and the dispatcher all include it, and it
 * includes nothing of theirs. */
#ifndef TM_KERNELS_H
#define TM_KERNELS_H

#include "tensormap.h"

#include <stddef.h>
#include <stdint.h>

/* ---- table slots --------------------------------------------------------------------------- */

/* Table slots: ggml ids 0..TM__GGML_SLOTS-1 map to themselves, the safetensors-only ids
 * (TM__ST_FIRST..) follow them. Both counts come from the type lists in tensormap.h: the ggml
 * count is one past the largest id (the size of a union with one id+1-byte member per type). */
#define TM__ID_SPAN(name, id, text, block_elems, block_bytes) char t_##name[(id) + 1];
union tm__ggml_id_span { TM_GGML_TYPE_LIST(TM__ID_SPAN) };
#undef TM__ID_SPAN
#define TM__PLUS_ONE(name, id, text, block_elems, block_bytes) +1
enum { TM__GGML_SLOTS = (int)sizeof(union tm__ggml_id_span), TM__ST_FIRST = TM_TYPE_U8,
       TM__ST_SLOTS = 0 TM_ST_TYPE_LIST(TM__PLUS_ONE),
       TM__SLOTS = TM__GGML_SLOTS + TM__ST_SLOTS };
#undef TM__PLUS_ONE
_Static_assert(TM__ST_FIRST >= TM__GGML_SLOTS, "safetensors ids must follow the ggml ids");
#define TM__ST_ID_IN_RANGE(name, id, text, block_elems, block_bytes) \
    _Static_assert((id) >= TM__ST_FIRST && (id) < TM__ST_FIRST + TM__ST_SLOTS, \
                   "TM_TYPE_" #name " is outside the safetensors slots");
TM_ST_TYPE_LIST(TM__ST_ID_IN_RANGE)
#undef TM__ST_ID_IN_RANGE

/* The slot of a type id, as a constant expression for a table's designated initialisers:
 * [TM__SLOT(TM_TYPE_U8)] = dequant_u8_scalar. */
#define TM__SLOT(t) ((unsigned)(t) < TM__ST_FIRST ? (unsigned)(t) \
                                                  : (unsigned)(t) - TM__ST_FIRST + TM__GGML_SLOTS)

static inline int tm__type_slot(tm_type t)
{
    unsigned u = (unsigned)t;
    if (u < TM__GGML_SLOTS)
        return (int)u;
    if (u >= TM__ST_FIRST && u < TM__ST_FIRST + TM__ST_SLOTS)
        return (int)(u - TM__ST_FIRST + TM__GGML_SLOTS);
    return -1;
}

/* ---- the instruction-set paths ------------------------------------------------------------- */

/* Every instruction-set path the library knows, X(ID, "name", FALLBACK): for a type a path's
 * tables have no kernel for, the path runs its fallback's kernel (resolved once, at first use:
 * avx512 -> avx2 -> scalar). Later paths are better; a fallback comes before its path. */
#define TM__ISA_LIST(X)             \
    X(SCALAR, "scalar", SCALAR)     \
    X(AVX2, "avx2", SCALAR)         \
    X(AVX512, "avx512", AVX2)       \
    X(NEON, "neon", SCALAR)

enum tm__isa {
#define TM__ISA_ENUM(id, name, fallback) TM__ISA_##id,
    TM__ISA_LIST(TM__ISA_ENUM)
#undef TM__ISA_ENUM
    TM__N_ISAS
};

#if defined(__x86_64__)
/* src/compute/x86/cpu.c: what the CPU and the OS (XCR0) both support. */
enum {
    TM__X86_AVX2 = 1u << 0,   /* AVX2 + FMA + F16C + BMI2, YMM state enabled by the OS */
    TM__X86_AVX512 = 1u << 1, /* AVX-512 F, BW, VL, DQ, VBMI, ZMM + opmask state enabled */
};
unsigned tm__x86_features(void);
#endif

/* ---- the kernel families ------------------------------------------------------------------- */

/* Decode n_blocks whole blocks at src (any alignment: blocks in a file are only 2-byte
 * aligned) into dst (n_blocks * block_elems floats, any 4-byte alignment). */
typedef void tm__dequant_fn(const void *src, float *dst, size_t n_blocks);

/* tm_matvec's row kernels: the dot product of ONE row of W (n_blocks whole blocks where they lie
 * in the mapping, any alignment) with x, in an order fixed by the kernel alone: rows never share
 * an accumulator, so splitting the rows over threads cannot change a result. */

/* sum over the row of w[i] * x[i], x as float32 (n_blocks * block_elems floats) */
typedef float tm__mv_f32_fn(const void *w, const float *x, size_t n_blocks);
/* the same with x quantized: n_blocks tm__q8_0x (32-element weight blocks) or tm__q8_Kx
 * (256-element weight blocks) at xq */
typedef float tm__mv_q8_fn(const void *w, const void *xq, size_t n_blocks);

/* x quantized to 8 bits for TM_MATVEC_Q8, as ggml's q8_0 and q8_K blocks but with a float32
 * scale in both (ggml's q8_0 keeps a half; a float costs nothing here and loses less):
 * x[i] ~= d * qs[i], qs in [-127, 127]; bsums[g] = sum of qs[16g .. 16g + 15]. */
typedef struct tm__q8_0x {
    float d;
    int8_t qs[32];
} tm__q8_0x;

typedef struct tm__q8_Kx {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} tm__q8_Kx;

_Static_assert(sizeof(tm__q8_0x) == 36, "q8_0 activation block is 36 bytes");
_Static_assert(sizeof(tm__q8_Kx) == 292, "q8_K activation block is 292 bytes");

/* ---- the tables ---------------------------------------------------------------------------- */

/* One dequant kernel file's table. A path may have several (one per kernel file: one family of
 * types each); they are merged at first use, and no two tables of a path may fill the same
 * slot. */
typedef struct tm__kernels {
    const char *name;               /* the path it belongs to: a name in TM__ISA_LIST */
    tm__dequant_fn *fn[TM__SLOTS];  /* NULL: this file has no kernel for the type */
} tm__kernels;

/* Every dequant kernel table of this build, X(table). Adding a kernel file: a line in
 * mk/sources.mk (with its -m flags) and its table here. */
#if defined(__x86_64__)
#define TM__ARCH_TABLES(X) \
    X(tm__kernels_avx2) X(tm__kernels_avx2_lut) X(tm__kernels_avx2_iq) \
    X(tm__kernels_avx512) X(tm__kernels_avx512_lut) X(tm__kernels_avx512_iq)
#elif defined(__aarch64__)
#define TM__ARCH_TABLES(X) X(tm__kernels_neon) X(tm__kernels_neon_iq)
#else
#define TM__ARCH_TABLES(X)
#endif
#define TM__KERNEL_TABLES(X) \
    X(tm__kernels_scalar) X(tm__kernels_scalar_iq) X(tm__kernels_scalar_lut) TM__ARCH_TABLES(X)

#define TM__DECLARE_TABLE(table) extern const tm__kernels table;
TM__KERNEL_TABLES(TM__DECLARE_TABLE)
#undef TM__DECLARE_TABLE

/* A matvec kernel file's table. */
typedef struct tm__matvec_kernels {
    const char *name;                /* the dequant path's name: "scalar", "avx2", ... */
    tm__mv_f32_fn *f32[TM__SLOTS];   /* NULL: the next path's kernel, then decode + dot */
    tm__mv_q8_fn *q8[TM__SLOTS];     /* NULL: the next path's kernel, then float32 math */
} tm__matvec_kernels;

extern const tm__matvec_kernels tm__matvec_scalar;
#if defined(__x86_64__)
extern const tm__matvec_kernels tm__matvec_avx2;
extern const tm__matvec_kernels tm__matvec_avx512;
#endif
#if defined(__aarch64__)
extern const tm__matvec_kernels tm__matvec_neon;
#endif

/* dequant.c: the kernel path isa (a TM__ISA_ id) runs for type, after the fallbacks; NULL when
 * the path is not built here or no path decodes the type. For the tests that pin which kernel
 * each path holds. *from, when not NULL, gets the path the kernel belongs to. */
tm__dequant_fn *tm__kernel_for(unsigned isa, tm_type type, unsigned *from);

#endif /* TM_KERNELS_H */
