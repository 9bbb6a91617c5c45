/* The product tests' shared fixture (product_fixture.h). */
#include "product_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void use_isa(const char *isa)
{
    if (!tm_isa_available(isa))
        cr_skip_test("instruction set %s: this CPU (or this build's architecture) lacks it", isa);
    tm_error err = {0};
    cr_assert_eq(tm_set_isa(isa, &err), TM_OK, "tm_set_isa(%s): %s", isa, err.message);
}

uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static char *slurp(const char *name, size_t *len)
{
    const char *dir = getenv("TM_CORPUS");
    cr_assert(dir, "TM_CORPUS is not set (run through make test)");
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    const long n = ftell(f);
    cr_assert(n >= 0);
    rewind(f);
    char *p = malloc((size_t)n + 1);
    cr_assert(p);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return p;
}

void golden_open(golden *g)
{
    size_t len;
    g->tsv = slurp("golden-a.tsv", &len);
    g->values = (float *)(void *)slurp("golden-a.f32", &len);
    g->n_values = len / sizeof(float);
    const char *dir = getenv("TM_CORPUS");
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", dir);
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &g->f, &err), TM_OK, "%s", err.message);
}

void golden_close(golden *g)
{
    tm_close(g->f);
    free(g->tsv);
    free(g->values);
}

/* ggml's decoded floats of tensor name (count of them), from the .tsv line. */
const float *golden_floats(const golden *g, const char *name, size_t count)
{
    const size_t nl = strlen(name);
    for (const char *line = g->tsv; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, name, nl) != 0 || line[nl] != '\t')
            continue;
        long off;
        size_t n;
        cr_assert_eq(sscanf(line + nl, "%*s %*s %*s %*s %*s %*s %ld %zu", &off, &n), 2);
        cr_assert_eq(n, count, "%s: the tsv has %zu values, the tensor %zu", name, n, count);
        cr_assert((size_t)off / 4 + n <= g->n_values);
        return g->values + off / 4;
    }
    cr_assert_fail("golden-a.tsv has no line for %s", name);
    return NULL;
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

/* the compiler's IEEE half: its conversion from float rounds to nearest, ties to even */
__extension__ typedef _Float16 ieee_half;

bool q8_takes_halves(tm_type type)
{
    return type == TM_TYPE_F16 && strcmp(tm_isa(), "avx512fp16") == 0;
}

void check_halves(const char *what, const float *wf, const float *x, const float *y, size_t rows,
                  size_t cols)
{
    float amax = 0;
    for (size_t c = 0; c < cols; c++)
        amax = fmaxf(amax, fabsf(x[c]));
    int e = 1;
    if (amax > 0)
        (void)frexp((double)amax, &e);
    const double scale = ldexp(1.0, e - 1);
    double *xh = malloc((cols + 1) * sizeof *xh), *ref = malloc((rows + 1) * sizeof *ref),
           *refh = malloc((rows + 1) * sizeof *refh);
    cr_assert(xh && ref && refh);
    for (size_t c = 0; c < cols; c++)
        xh[c] = (double)(ieee_half)(float)((double)x[c] / scale) * scale;
    double maxh = 0;
    for (size_t r = 0; r < rows; r++) {
        double s = 0, sh = 0;
        for (size_t c = 0; c < cols; c++) {
            s += (double)wf[r * cols + c] * (double)x[c];
            sh += (double)wf[r * cols + c] * xh[c];
        }
        ref[r] = s;
        refh[r] = sh;
        maxh = fmax(maxh, fabs(sh));
    }
    for (size_t r = 0; r < rows; r++) {
        double abs_wx = 0, abs_w = 0;
        for (size_t c = 0; c < cols; c++) {
            abs_wx += fabs((double)wf[r * cols + c] * (double)x[c]);
            abs_w += fabs((double)wf[r * cols + c]);
        }
        const double bound = 0x1p-8 * abs_wx + 0x1p-24 * (double)amax * (abs_w + (double)cols) +
                             0x1p-24 * fabs(ref[r]);
        cr_assert(fabs((double)y[r] - ref[r]) <= bound,
                  "%s row %zu: y = %.9g, W x = %.9g: error %.3g beyond the halves bound %.3g",
                  what, r, (double)y[r], ref[r], fabs((double)y[r] - ref[r]), bound);
        cr_assert(fabs((double)y[r] - refh[r]) <= 4e-3 * maxh,
                  "%s row %zu: y = %.9g, W xh = %.9g (error %.3g of max|W xh|, measured bound "
                  "4e-3)",
                  what, r, (double)y[r], refh[r], fabs((double)y[r] - refh[r]) / maxh);
    }
    free(xh);
    free(ref);
    free(refh);
}
