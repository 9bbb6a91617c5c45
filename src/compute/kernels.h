/* The dispatch ABI of the compute part: the table slots, the instruction-set paths, the kernel
 * types of each family, and the one table type every kernel file exports.
 *
 * Each kernel file (src/compute/dequant_scalar.c, x86/dequant_avx2.c, arm/matvec_neon.c, ...)
 * exports exactly one const tm__kernels table, named after the file: tm__kernels_<file name>
 * (x86/dequant_avx2_lut.c: tm__kernels_dequant_avx2_lut). Everything else in it is static, so no
 * code compiled with -mavx512f can be reached from scalar code by accident. Which path a table
 * belongs to is not written in the file: it is the list of mk/sources.mk the file is in, the same
 * list that gives it its -m flags, and it reaches isa.c as TM__KERNEL_TABLES (see there).
 * A header without a .c: the kernel files, the entry points and the dispatcher include it, and
 * it includes nothing of theirs. */
#ifndef TM_KERNELS_H
#define TM_KERNELS_H

#include "tensormap.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

/* A kernel's helper that must be inlined: a block's function called several times in its
 * kernel, or one that takes or returns vector registers (called, gcc passes them in memory and
 * the kernels ran 2-20 % slower) */
#define TM__INLINE static inline __attribute__((always_inline))

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

/* What a path needs of the CPU and the OS, as bits of src/compute/x86/cpu.c's answer. */
enum {
    TM__X86_AVX2 = 1u << 0,   /* AVX2 + FMA + F16C + BMI2, YMM state enabled by the OS */
    TM__X86_AVX512 = 1u << 1, /* AVX-512 F, BW, VL, DQ, VBMI, ZMM + opmask state enabled */
    TM__X86_AVX512FP16 = 1u << 2, /* and AVX512-FP16: f16 arithmetic (Sapphire Rapids on) */
    TM__X86_AMD = 1u << 3,        /* an AMD CPU: not a path, a hint for prefetch.h */
};
#if defined(__x86_64__)
unsigned tm__x86_features(void); /* the TM__X86_ bits this CPU and its OS both support */
#endif

/* Every instruction-set path the library knows, X(ID, "name", FALLBACK, NEEDS): for a type a
 * path's tables have no kernel for, the path runs its fallback's kernel (resolved once, at first
 * use: avx512fp16 -> avx512 -> avx2 -> scalar); NEEDS is what the CPU must have for the path
 * to run (NEON is part of every aarch64 CPU). Later paths are better; a fallback comes before its path. A path
 * is built when some kernel file of this build belongs to it. */
#define TM__ISA_LIST(X)                                                      \
    X(SCALAR, "scalar", SCALAR, 0)                                           \
    X(AVX2, "avx2", SCALAR, TM__X86_AVX2)                                    \
    X(AVX512, "avx512", AVX2, TM__X86_AVX512)                                \
    X(AVX512FP16, "avx512fp16", AVX512, TM__X86_AVX512 | TM__X86_AVX512FP16) \
    X(NEON, "neon", SCALAR, 0)

enum tm__isa {
#define TM__ISA_ENUM(id, name, fallback, needs) TM__ISA_##id,
    TM__ISA_LIST(TM__ISA_ENUM)
#undef TM__ISA_ENUM
    TM__N_ISAS
};

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
 * (256-element weight blocks) at xq; for f16 and bf16 weights (the x86 paths), the
 * tm__f16x of x */
typedef float tm__mv_q8_fn(const void *w, const void *xq, size_t n_blocks);

/* x (n elements) put into the layout the same path's tm__mv_q8_fn for the type takes, at out
 * (64-byte aligned); returns the layout's size in bytes, and with out NULL only that (x is not
 * read). Only a Q8 kernel that takes x in a layout of its own has one (f16 and bf16 on the x86
 * paths: tm__f16x; q4_1, q5_1 and q1_0 on AVX2: q8_0 blocks, then a float of x's code sums per
 * weight block); for the others matvec.c
 * quantizes x to q8_0 / q8_K. */
typedef size_t tm__x_q8_fn(const float *x, size_t n, void *out);

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

/* x in 16 bits for f16 and bf16 weights in TM_MATVEC_Q8 on the x86 paths (ggml pairs f16
 * weights with f16 x, bf16 with bf16). f16: x[i] ~= scale * h[i], h[i] the IEEE half nearest
 * x[i] / scale (ties to even), scale the power of two 2^floor(log2 max|x|), so that |h| < 2 and
 * no product with a half weight overflows; scale 1 when max|x| is 0, infinite or NaN (then h
 * keeps the infinities and NaNs). bf16: h[i] the bf16 nearest x[i] (ties to even; a NaN stays
 * a NaN), scale 1. */
typedef struct tm__f16x {
    float scale;
    alignas(64) uint16_t h[]; /* on a cache line: a vector of 32 never straddles two */
} tm__f16x;

_Static_assert(sizeof(tm__q8_0x) == 36, "q8_0 activation block is 36 bytes");
_Static_assert(sizeof(tm__q8_Kx) == 292, "q8_K activation block is 292 bytes");

/* tm_matmul's 8-bit kernels: n_rows (1..TM__MM_ROWS) rows of W, row_bytes apart from w, against
 * TM__MM_COLS columns of x at once, xq[c] the c-th column quantized as for tm__mv_q8_fn.
 * y[r * TM__MM_COLS + c] is, bit for bit, what the same path's tm__mv_q8_fn gives for row r and
 * xq[c]: per column the same float operations in the same order (the integer sums are exact in
 * any order), the block's codes and scales unpacked once for all the columns instead of once per
 * column. Most take the rows one at a time (TM__MM_Q8_BY_ROW); f16 and bf16 against x as halves
 * go a stretch of the row at a time over all of them, as tm__mm_f32_fn does, so that the
 * columns' stretch stays in L1 (four columns of 4096 halves fill it). isa.c keeps one on a path
 * only where the path's tm__mv_q8_fn for the type comes from the same path (the one it
 * replicates). */
enum { TM__MM_COLS = 4, TM__MM_ROWS = 16 };
typedef void tm__mm_q8_fn(const void *w, size_t row_bytes, size_t n_rows,
                          const void *const xq[TM__MM_COLS], size_t n_blocks, float *y);

/* tm__mm_q8_fn name over rows, from a kernel one_row(w, xq, n_blocks, y) of one row */
#define TM__MM_Q8_BY_ROW(name, one_row)                                                      \
    static void name(const void *w, size_t row_bytes, size_t n_rows,                        \
                     const void *const xq[TM__MM_COLS], size_t n_blocks, float *y)          \
    {                                                                                         \
        for (size_t r = 0; r < n_rows; r++)                                                   \
            one_row((const unsigned char *)w + r * row_bytes, xq, n_blocks,                   \
                    y + r * TM__MM_COLS);                                                     \
    }

/* tm_matmul's float32-x kernels (f16, bf16; f32 on AVX-512): n_rows (1..TM__MM_ROWS) rows of
 * W, row_bytes apart from w (n_blocks blocks each), against TM__MM_COLS columns of x as float32,
 * x[c] the c-th column; y[r * TM__MM_COLS + c] is row r against column c. That is, bit for bit,
 * what the same path's tm__mv_f32_fn gives for the row and x[c]: per column its float operations
 * in its order and lanes, each vector of weights (eight on AVX2, sixteen on AVX-512) loaded and
 * widened to float once for all the columns. The rows go together so that the kernel can take
 * them one stretch of the row at a time: a stretch of the columns, read once from memory, stays
 * in the nearest cache for all the rows (four float32 columns of 4096 do not fit it whole).
 * tm_matmul runs it wherever the columns' plans run the path's tm__mv_f32_fn (TM_MATVEC_F32, and
 * TM_MATVEC_Q8 for the types that keep x in float32); isa.c keeps it only beside the
 * tm__mv_f32_fn of the same path. */
typedef void tm__mm_f32_fn(const void *w, size_t row_bytes, size_t n_rows,
                           const float *const x[TM__MM_COLS], size_t n_blocks, float *y);

/* ---- the table ---------------------------------------------------------------------------- */

/* The kernel families, X(field, kernel type): a table has a slot array per family. A new family
 * (the batched product, quantization) is a line here; isa.c merges every family by one rule. */
#define TM__FAMILIES(X)              \
    X(dequant, tm__dequant_fn)       \
    X(mv_f32, tm__mv_f32_fn)         \
    X(mv_q8, tm__mv_q8_fn)           \
    X(x_q8, tm__x_q8_fn)             \
    X(mm_q8, tm__mm_q8_fn)           \
    X(mm_f32, tm__mm_f32_fn)

/* One kernel file's kernels, by family and slot; NULL: the file has none for that type (then the
 * path's other tables, then its fallback path, then, for matvec, decode + dot). A path may have
 * several tables (one per kernel file); no two of them may fill the same slot of a family.
 * Slots are written [TM_TYPE_Q4_K] for ggml ids (their slot is their id) and
 * [TM__SLOT(TM_TYPE_U8)] for safetensors ids (a raw one would not fit the array). */
typedef struct tm__kernels {
#define TM__FAMILY_SLOTS(family, fn_type) fn_type *family[TM__SLOTS];
    TM__FAMILIES(TM__FAMILY_SLOTS)
#undef TM__FAMILY_SLOTS
} tm__kernels;

#endif /* TM_KERNELS_H */
