/* What the product tests (tests/test_matvec_api.c, tests/test_matmul.c) share: the instruction
 * set a test runs on, the golden corpus' ggml-decoded values, and the halves bound; with
 * random_blocks.h (a seeded generator, random blocks with sane scales, a tm_tensor over caller
 * bytes). */
#ifndef TM_TEST_PRODUCT_FIXTURE_H
#define TM_TEST_PRODUCT_FIXTURE_H

#include "random_blocks.h"
#include "tensormap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Run on isa, or skip the test (visibly, saying why) when this CPU lacks it. */
void use_isa(const char *isa);

/* golden-a.gguf opened, and ggml's decoded values of its tensors (golden-a.tsv, golden-a.f32). */
typedef struct golden {
    tm_file *f;
    char *tsv;          /* golden-a.tsv, whole */
    float *values;      /* golden-a.f32, whole */
    size_t n_values;
} golden;
void golden_open(golden *g);
void golden_close(golden *g);
/* ggml's decoded floats of tensor name (count of them), from its .tsv line. */
const float *golden_floats(const golden *g, const char *name, size_t count);

/* TM_MATVEC_Q8 of f16 and bf16 weights on the x86 paths takes x rounded to the weights' type
 * (f16 on avx512fp16 also sums in f16 arithmetic; docs/matvec.md); every other path and type
 * keeps its own bound. */
bool q8_takes_halves(tm_type type);
/* y (rows) of those kernels against weights wf (rows x cols, decoded) and x: every row within
 * the derived bound 2^-8 sum |w x| + 2^-24 max|x| (sum |w| + cols) + 2^-24 |W x|, and within
 * 4e-3 of max|W xh| of W xh, xh = x rounded as the kernel's layout says (f16: x / scale to a
 * half, here by the compiler's _Float16; bf16: the bf16 nearest x, by integer rounding here; not
 * by the library): a measured figure (the worst seen, 1.3e-3, on golden f16 rows against a
 * smooth x with spikes, avx512fp16's half sums), for the sums' own rounding. */
void check_halves(const char *what, tm_type type, const float *wf, const float *x,
                  const float *y, size_t rows, size_t cols);

#endif
