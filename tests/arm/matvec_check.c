/* tm_matvec's NEON path under qemu-aarch64 (make check-arm), a plain program (Criterion has no
 * aarch64 build here). For every golden rows tensor the library decodes, on the NEON and the
 * scalar path: TM_MATVEC_F32 within 1e-6 of max|y| of the double product of ggml's
 * decoded values; TM_MATVEC_Q8 within 1e-5 of max|y| of the scalar path's TM_MATVEC_Q8 (which the
 * x86 suite holds to the 8-bit bound); and which path's kernel the NEON path runs per mode and
 * type (tests/support/kernel_pins.h); and tm_matmul on the NEON path, 5 columns on 1 and 2
 * threads, column for column bit for bit tm_matvec's (its contract); and TM_MATVEC_Q8 on fresh
 * random blocks (a new seed each run, printed; TM_SEED=n repeats one) of every type with an
 * 8-bit kernel of its own on some path, NEON against scalar within 1e-5 of max|y|. Exit 1 on
 * any failure. */
#include "../support/kernel_pins.h"
#include "../support/random_blocks.h"
#include "tensormap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

static void check(const tm_tensor *t, const char *name, const float *want)
{
    const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
    float *x = malloc(cols * 4), *y = malloc(rows * 4), *ys = malloc(rows * 4);
    double *ref = malloc(rows * sizeof *ref), max = 0;
    for (size_t c = 0; c < cols; c++)
        x[c] = (float)sin((double)c * 0.37) * (c % 13 == 0 ? 8.0f : 1.0f);
    for (size_t r = 0; r < rows; r++) {
        ref[r] = 0;
        for (size_t c = 0; c < cols; c++)
            ref[r] += (double)want[r * cols + c] * (double)x[c];
        max = fmax(max, fabs(ref[r]));
    }
    tm_error err;
    for (unsigned mode = 0; mode < 2; mode++) {
        if (tm_set_isa("scalar", &err) != TM_OK || tm_matvec(t, x, ys, mode, 1, &err) != TM_OK ||
            tm_set_isa("neon", &err) != TM_OK || tm_matvec(t, x, y, mode, 2, &err) != TM_OK) {
            printf("FAIL %s mode %u: %s\n", name, mode, err.message);
            failures++;
            continue;
        }
        for (size_t r = 0; r < rows; r++) {
            const double e = mode == TM_MATVEC_F32 ? fabs((double)y[r] - ref[r]) / max
                                                   : fabs((double)y[r] - (double)ys[r]) / max;
            if (!(e <= (mode == TM_MATVEC_F32 ? 1e-6 : 1e-5))) {
                printf("FAIL %s mode %u row %zu: neon %.9g, scalar %.9g, double %.9g\n", name,
                       mode, r, (double)y[r], (double)ys[r], ref[r]);
                failures++;
                break;
            }
        }
    }
    free(x);
    free(y);
    free(ys);
    free(ref);
}

/* tm_matmul on NEON against tm_matvec on NEON per column: five columns (the batched tile and a
 * ragged one), each x scaled and shifted, so that no two are alike. */
static void check_matmul(const tm_tensor *t, const char *name)
{
    enum { N = 5 };
    const size_t rows = (size_t)tm_tensor_rows(t), cols = (size_t)t->ne[0];
    float *X = malloc(N * cols * 4), *Y = malloc(N * rows * 4), *y = malloc(rows * 4);
    for (size_t j = 0; j < N; j++)
        for (size_t c = 0; c < cols; c++)
            X[j * cols + c] = (float)cos((double)c * 0.21 + (double)j) * (float)(j + 1);
    tm_error err;
    for (unsigned mode = 0; mode < 2; mode++)
        for (unsigned threads = 1; threads <= 2; threads++) {
            if (tm_set_isa("neon", &err) != TM_OK ||
                tm_matmul(t, X, cols, N, Y, mode, threads, &err) != TM_OK) {
                printf("FAIL matmul %s mode %u: %s\n", name, mode, err.message);
                failures++;
                continue;
            }
            for (size_t j = 0; j < N; j++) {
                if (tm_matvec(t, X + j * cols, y, mode, 1, &err) != TM_OK) {
                    printf("FAIL matvec %s mode %u: %s\n", name, mode, err.message);
                    failures++;
                    break;
                }
                if (memcmp(y, Y + j * rows, rows * 4) != 0) {
                    printf("FAIL matmul %s mode %u, %u threads: column %zu is not tm_matvec's\n",
                           name, mode, threads, j);
                    failures++;
                    break;
                }
            }
        }
    free(X);
    free(Y);
    free(y);
}

/* The types with an 8-bit kernel of their own on some path (kernel_pins.h's scalar list): on
 * NEON each runs a NEON kernel or, until it has one, the scalar one (then this compares scalar
 * with itself). */
static const tm_type q8_types[] = {
    TM_TYPE_Q8_0,    TM_TYPE_Q4_0,   TM_TYPE_Q4_1,    TM_TYPE_Q5_0,    TM_TYPE_Q5_1,
    TM_TYPE_IQ4_NL,  TM_TYPE_MXFP4,  TM_TYPE_NVFP4,   TM_TYPE_Q1_0,    TM_TYPE_Q2_0,
    TM_TYPE_Q4_K,    TM_TYPE_Q6_K,   TM_TYPE_Q2_K,    TM_TYPE_Q3_K,    TM_TYPE_Q5_K,
    TM_TYPE_IQ4_XS,  TM_TYPE_TQ1_0,  TM_TYPE_TQ2_0,   TM_TYPE_IQ2_XXS, TM_TYPE_IQ2_XS,
    TM_TYPE_IQ2_S,   TM_TYPE_IQ3_XXS, TM_TYPE_IQ3_S,  TM_TYPE_IQ1_S,   TM_TYPE_IQ1_M,
};

static double worst_random; /* the largest error seen, in units of max|y|, and its type */
static tm_type worst_type;

/* 64 rows of random blocks of type (random_blocks: sane scales), x uniform in [-1, 1) with a
 * spike of 8 every 13th element, both drawn from the run's seed and the type; TM_MATVEC_Q8 on
 * NEON against scalar. The row length ends inside every multi-block unrolling: 3 * 256 +
 * 5 * block_elems elements for the blocks under 256 (29, 17 or 11 blocks), 13 blocks of 256
 * (8 + 4 + 1). */
static void check_random(tm_type type, uint64_t run_seed)
{
    const uint64_t seed = run_seed + 1000003u * (uint64_t)type;
    enum { ROWS = 64 };
    const size_t be = tm_type_block_elems(type), bb = tm_type_block_bytes(type);
    const size_t cols = be < 256 ? 3 * 256 + 5 * be : 13 * 256, n_blocks = cols / be * ROWS;
    uint8_t *w = malloc(n_blocks * bb);
    float *x = malloc(cols * 4), *y = malloc(ROWS * 4), *ys = malloc(ROWS * 4);
    random_blocks(type, w, n_blocks, seed);
    for (size_t c = 0; c < cols; c++)
        x[c] = (float)((double)(splitmix64(~seed + c) >> 40) * 0x1p-23 - 1.0) *
               (c % 13 == 0 ? 8.0f : 1.0f);
    const tm_tensor t = tensor_over("random", type, w, cols, ROWS);
    tm_error err;
    if (tm_set_isa("scalar", &err) != TM_OK ||
        tm_matvec(&t, x, ys, TM_MATVEC_Q8, 1, &err) != TM_OK || tm_set_isa("neon", &err) != TM_OK ||
        tm_matvec(&t, x, y, TM_MATVEC_Q8, 1, &err) != TM_OK) {
        printf("FAIL random %s: %s\n", tm_type_name(type), err.message);
        failures++;
    } else {
        /* in float: the same loop with fmax over doubles crashes aarch64-linux-gnu-gcc 12
         * (an internal compiler error in its vectorizer) */
        float max = 0;
        for (size_t r = 0; r < ROWS; r++)
            max = fabsf(ys[r]) > max ? fabsf(ys[r]) : max;
        for (size_t r = 0; r < ROWS; r++) {
            const double e = fabs((double)y[r] - (double)ys[r]) / (double)max;
            if (e > worst_random) {
                worst_random = e;
                worst_type = type;
            }
        }
        for (size_t r = 0; r < ROWS; r++)
            if (!(fabs((double)y[r] - (double)ys[r]) <= 1e-5 * (double)max)) {
                printf("FAIL random %s row %zu: neon %.9g, scalar %.9g (max|y| %.9g), seed %llu\n",
                       tm_type_name(type), r, (double)y[r], (double)ys[r], (double)max,
                       (unsigned long long)run_seed);
                failures++;
                break;
            }
    }
    free(w);
    free(x);
    free(y);
    free(ys);
}

int main(void)
{
    const char *corpus = getenv("TM_CORPUS") ? getenv("TM_CORPUS") : "../shared/corpus";
    char path[512], line[512], name[256];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", corpus);
    tm_file *tf = NULL;
    tm_error err;
    if (tm_open(path, 0, &tf, &err) != TM_OK) {
        printf("FAIL %s: %s\n", path, err.message);
        return 1;
    }
    snprintf(path, sizeof path, "%s/golden/golden-a.tsv", corpus);
    FILE *tsv = fopen(path, "r");
    snprintf(path, sizeof path, "%s/golden/golden-a.f32", corpus);
    FILE *f32 = fopen(path, "rb");
    if (!tsv || !f32) {
        printf("FAIL: cannot open the golden tsv/f32\n");
        return 1;
    }
    int checked = 0;
    while (fgets(line, sizeof line, tsv)) {
        long off;
        size_t n;
        if (sscanf(line, "%255s %*s %*s %*s %*s %*s %*s %ld %zu", name, &off, &n) != 3 ||
            !strstr(name, ".rows.weight"))
            continue;
        const tm_tensor *t = tm_tensor_find(tf, name);
        if (!t || !tm_type_can_dequant(t->type))
            continue;
        float *want = malloc(n * 4);
        if (fseek(f32, off, SEEK_SET) != 0 || fread(want, 4, n, f32) != n) {
            printf("FAIL: short golden-a.f32\n");
            return 1;
        }
        check(t, name, want);
        check_matmul(t, name);
        checked++;
        free(want);
    }
    const char *seed_env = getenv("TM_SEED");
    const uint64_t seed = seed_env ? strtoull(seed_env, NULL, 10) : (uint64_t)time(NULL);
    const size_t n_types = sizeof q8_types / sizeof q8_types[0];
    for (size_t i = 0; i < n_types; i++)
        check_random(q8_types[i], seed);
    printf("matvec q8 on neon and scalar: random blocks of %zu types, seed %llu (TM_SEED=%llu "
           "repeats it), worst %.2g of max|y| (%s)\n", n_types, (unsigned long long)seed,
           (unsigned long long)seed, worst_random, tm_type_name(worst_type));
    for (enum pin_family f = PIN_MV_F32; f <= PIN_MV_Q8; f++) {
        char why[160];
        const int pins = pin_path(TM__ISA_NEON, f, why, sizeof why);
        if (pins < 0) {
            printf("FAIL %s\n", why);
            failures++;
        }
        printf("neon %s kernels pinned: %d\n", pin_family_names[f], pins);
    }
    printf("matvec on neon and scalar, matmul on neon: %d golden tensors checked, %d failures\n",
           checked, failures);
    fclose(tsv);
    fclose(f32);
    tm_close(tf);
    return failures || checked < 7;
}
