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

/* the compiler's IEEE half: its conversion from float rounds to nearest, ties to even */
__extension__ typedef _Float16 ieee_half;

bool q8_takes_halves(tm_type type)
{
    const char *isa = tm_isa();
    const bool x86 = strcmp(isa, "avx2") == 0 || strcmp(isa, "avx512") == 0 ||
                     strcmp(isa, "avx512fp16") == 0;
    return x86 && (type == TM_TYPE_F16 || type == TM_TYPE_BF16);
}

/* the bf16 nearest v, ties to even (v finite) */
static double bf16_nearest(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    const uint32_t low = b & 0xffffu;
    b &= 0xffff0000u; /* finite: rounding up at most reaches the infinity, never wraps */
    if (low > 0x8000u || (low == 0x8000u && (b & 0x10000u)))
        b += 0x10000u;
    float f;
    memcpy(&f, &b, sizeof f);
    return (double)f;
}

void check_halves(const char *what, tm_type type, const float *wf, const float *x,
                  const float *y, size_t rows, size_t cols)
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
        xh[c] = type == TM_TYPE_BF16 ? bf16_nearest(x[c])
                                     : (double)(ieee_half)(float)((double)x[c] / scale) * scale;
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
