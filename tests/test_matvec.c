/* tools/matvec (run through TM_MATVEC) against an independent computation: the test writes a
 * model with the library's writer, decodes each weight whole with tm_dequant_tensor, multiplies
 * it by x naively in double, and compares every y the tool prints. */
#include "tensormap.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* x as matvec's --help defines it: 2u - 1, u = (splitmix64(seed + i) >> 40) / 2^24. */
static double x_at(uint64_t seed, uint64_t i)
{
    return (double)(splitmix64(seed + i) >> 40) * 0x1p-24 * 2.0 - 1.0;
}

static char dir[64];
static char model[128];

/* Random blocks with a sane half-float scale (0.01) in every scale field the type has. */
static void *random_weight(tm_type type, uint64_t n_elements, uint64_t seed)
{
    const size_t be = tm_type_block_elems(type), bb = tm_type_block_bytes(type);
    const size_t nb = (size_t)(n_elements / be);
    uint8_t *p = malloc(nb * bb);
    cr_assert(p);
    for (size_t i = 0; i < nb * bb; i++)
        p[i] = (uint8_t)splitmix64(seed + i);
    const uint8_t d[2] = { 0x1f, 0x21 }; /* half 0x211f ~ 0.0101 */
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = p + b * bb;
        switch (type) {
        case TM_TYPE_Q8_0: memcpy(blk, d, 2); break;
        case TM_TYPE_Q4_K: memcpy(blk, d, 2); memcpy(blk + 2, d, 2); break;
        case TM_TYPE_Q6_K: memcpy(blk + 208, d, 2); break;
        case TM_TYPE_F16: /* every element: a half in (-0.5, 0.5) without infinities or NaNs */
            for (size_t k = 0; k < bb; k += 2)
                blk[k + 1] &= 0xb7; /* sign kept, exponent at most 13 */
            break;
        default: break;
        }
    }
    return p;
}

static void *w_q4k, *w_q8, *w_f16, *w_q6k;

static void write_model(void)
{
    strcpy(dir, "/tmp/tm_matvec_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    tm_writer *w = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    /* row counts that are not multiples of the tool's tile, and rows wider than half an L2 (a
     * tile of one row) */
    const uint64_t ne_q4k[2] = { 512, 301 }, ne_q8[2] = { 96, 1000 }, ne_f16[2] = { 140000, 3 },
                   ne_q6k[2] = { 256, 7 }, ne_3d[3] = { 32, 2, 2 };
    w_q4k = random_weight(TM_TYPE_Q4_K, 512 * 301, 1);
    w_q8 = random_weight(TM_TYPE_Q8_0, 96 * 1000, 2);
    w_f16 = random_weight(TM_TYPE_F16, 140000 * 3, 3);
    w_q6k = random_weight(TM_TYPE_Q6_K, 256 * 7, 4);
    static float cube[128];
    cr_assert_eq(tm_writer_tensor(w, "q4k.weight", TM_TYPE_Q4_K, 2, ne_q4k, w_q4k, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "q8.weight", TM_TYPE_Q8_0, 2, ne_q8, w_q8, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "f16.weight", TM_TYPE_F16, 2, ne_f16, w_f16, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "q6k.weight", TM_TYPE_Q6_K, 2, ne_q6k, w_q6k, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "cube", TM_TYPE_F32, 3, ne_3d, cube, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(w, model, &err), TM_OK, "%s", err.message);
}

static void cleanup(void)
{
    unlink(model);
    rmdir(dir);
    free(w_q4k);
    free(w_q8);
    free(w_f16);
    free(w_q6k);
}

/* Run matvec with args; its stdout into a malloc'd string; *status = exit code. */
static char *run(const char *args, int *status)
{
    const char *tool = getenv("TM_MATVEC");
    cr_assert(tool, "TM_MATVEC is not set (run through make test)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", tool, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    cr_assert(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 1024) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert(buf);
        }
    }
    buf[len] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

static void check_tensor(const char *name, uint64_t seed)
{
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(model, 0, &f, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(f, name);
    cr_assert(t);
    const uint64_t cols = t->ne[0], rows = t->ne[1];
    float *wf = malloc(t->n_elements * sizeof *wf);
    cr_assert(wf);
    cr_assert_eq(tm_dequant_tensor(t, wf, 1, &err), TM_OK, "%s", err.message);

    char args[256];
    snprintf(args, sizeof args, "%s %s --seed %llu --all", model, name, (unsigned long long)seed);
    int status;
    char *out = run(args, &status);
    cr_assert_eq(status, 0, "matvec failed: %s", out);
    double sum = 0;
    for (uint64_t r = 0; r < rows; r++) {
        double want = 0, mag = 0;
        for (uint64_t i = 0; i < cols; i++) {
            want += (double)wf[r * cols + i] * x_at(seed, i);
            mag += fabs((double)wf[r * cols + i] * x_at(seed, i));
        }
        sum += (double)(float)want;
        char key[64];
        snprintf(key, sizeof key, "\ny[%llu] = ", (unsigned long long)r);
        const char *at = strstr(out, key);
        cr_assert(at, "%s: no y[%llu] in the output:\n%s", name, (unsigned long long)r, out);
        const double got = strtod(at + strlen(key), NULL);
        /* the tool stores y as float: half an ulp of float, relative to the terms' magnitude */
        cr_assert(fabs(got - want) <= 1e-6 * mag + 1e-30, "%s: y[%llu] = %.9g, want %.9g", name,
                  (unsigned long long)r, got, want);
    }
    const char *c = strstr(out, "checksum = ");
    cr_assert(c, "%s: no checksum:\n%s", name, out);
    const double got_sum = strtod(c + strlen("checksum = "), NULL);
    cr_assert(fabs(got_sum - sum) <= 1e-6 * (fabs(sum) + 1), "%s: checksum %.17g, want %.17g", name,
              got_sum, sum);
    free(out);
    free(wf);
    tm_close(f);
}

TestSuite(matvec, .init = write_model, .fini = cleanup);

Test(matvec, q4_K_matches_naive_double) { check_tensor("q4k.weight", 7); }
Test(matvec, q8_0_matches_naive_double) { check_tensor("q8.weight", 1); }
Test(matvec, f16_row_wider_than_a_tile) { check_tensor("f16.weight", 12345); }
Test(matvec, q6_K_matches_naive_double) { check_tensor("q6k.weight", 3); }

/* --q8: x quantized to 8 bits (docs/matvec.md: about 0.7 % of the rms of y for such x); the
 * error over all rows stays under 2 %, on three threads. */
Test(matvec, q8_flag_within_the_8_bit_error)
{
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(model, 0, &f, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(f, "q4k.weight");
    cr_assert(t);
    const uint64_t cols = t->ne[0], rows = t->ne[1];
    float *wf = malloc(t->n_elements * sizeof *wf);
    cr_assert(wf);
    cr_assert_eq(tm_dequant_tensor(t, wf, 1, &err), TM_OK, "%s", err.message);
    char args[256];
    snprintf(args, sizeof args, "%s q4k.weight --seed 5 --q8 --threads 3 --all", model);
    int status;
    char *out = run(args, &status);
    cr_assert_eq(status, 0, "matvec failed: %s", out);
    cr_assert(strstr(out, "x in 8 bits (TM_MATVEC_Q8)"), "%s", out);
    double err2 = 0, ref2 = 0;
    for (uint64_t r = 0; r < rows; r++) {
        double want = 0;
        for (uint64_t i = 0; i < cols; i++)
            want += (double)wf[r * cols + i] * x_at(5, i);
        char key[64];
        snprintf(key, sizeof key, "\ny[%llu] = ", (unsigned long long)r);
        const char *at = strstr(out, key);
        cr_assert(at, "no y[%llu] in the output:\n%s", (unsigned long long)r, out);
        const double got = strtod(at + strlen(key), NULL);
        err2 += (got - want) * (got - want);
        ref2 += want * want;
    }
    cr_assert(sqrt(err2) <= 0.02 * sqrt(ref2), "--q8: rms error %.3g of the rms of y",
              sqrt(err2 / ref2));
    free(out);
    free(wf);
    tm_close(f);
}

Test(matvec, refusals_and_help)
{
    int status;
    char args[256];
    char *out = run("--help", &status);
    cr_assert_eq(status, 0);
    cr_assert(strstr(out, "usage: matvec"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s no.such.tensor", model);
    out = run(args, &status);
    cr_assert_eq(status, 1);
    cr_assert(strstr(out, "no.such.tensor"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s cube", model);
    out = run(args, &status);
    cr_assert_eq(status, 1);
    cr_assert(strstr(out, "3 dimensions"), "%s", out);
    free(out);
    out = run("", &status);
    cr_assert_eq(status, 2);
    free(out);
}
