/* matvec — y = W·x for one 2-D weight of a model file, the loop an inference engine runs.
 *
 * A worked example of the tensormap API (it uses nothing but include/tensormap.h):
 *   1. tm_open maps the file and indexes it; nothing is read or copied yet.
 *   2. tm_tensor_find gives the weight's descriptor: type, shape, and a pointer into the map.
 *   3. tm_matvec multiplies the quantized rows by x where they lie in the mapping, on every CPU:
 *      each block is decoded in registers and never stored as floats (TM_MATVEC_F32), or x is
 *      quantized to 8 bits once and the blocks are dotted with integer arithmetic, as ggml does
 *      (TM_MATVEC_Q8, --q8). The float32 copy of W never exists.
 *
 * x is deterministic: x[i] = u * 2 - 1, u = (splitmix64(seed + i) >> 40) / 2^24, so a test (or
 * another program) can rebuild it. */
#include "tensormap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: matvec MODEL TENSOR [--seed N] [--q8] [--threads N] [--all]\n"
            "  Compute y = W x for the 2-D weight TENSOR of MODEL (GGUF or safetensors) straight\n"
            "  from its blocks (tm_matvec), and print a few y values and their sum.\n"
            "  x[i] = 2 u - 1 with u = (splitmix64(N + i) >> 40) / 2^24 (default N = 1).\n"
            "  --q8         quantize x to 8 bits as ggml does (TM_MATVEC_Q8); default: float32\n"
            "  --threads N  threads (default 0: every online CPU); y does not depend on it\n"
            "  --all        print every y value, one per line\n"
            "  TM_ISA=scalar|avx2|avx512|avx512fp16|neon forces a decoding path.\n");
}

int main(int argc, char **argv)
{
    const char *model = NULL, *name = NULL;
    uint64_t seed = 1;
    unsigned long threads = 0;
    unsigned mode = TM_MATVEC_F32;
    int all = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            seed = strtoull(argv[++i], &end, 0);
            if (errno || *end || !*argv[i]) {
                fprintf(stderr, "matvec: --seed wants a number, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            threads = strtoul(argv[++i], &end, 10);
            if (errno || *end || !*argv[i] || threads > 1024) {
                fprintf(stderr, "matvec: --threads wants a number up to 1024, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--q8") == 0) {
            mode = TM_MATVEC_Q8;
        } else if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "matvec: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!model) {
            model = argv[i];
        } else if (!name) {
            name = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!model || !name) {
        usage(stderr);
        return 2;
    }

    /* 1. Map and index the file. Errors say what, where and at which byte. */
    tm_file *f = NULL;
    tm_error err;
    if (tm_open(model, 0, &f, &err) != TM_OK) {
        fprintf(stderr, "matvec: %s: %s\n", model, err.message);
        return 1;
    }

    /* 2. The weight: ne[0] is the row length (the input size), the rows are the outputs. */
    const tm_tensor *w = tm_tensor_find(f, name);
    int rc = 1;
    float *x = NULL, *y = NULL;
    if (!w) {
        fprintf(stderr, "matvec: %s: no tensor '%s'\n", model, name);
        goto out;
    }
    if (w->n_dims != 2) {
        fprintf(stderr, "matvec: %s: tensor '%s' has %u dimensions, not 2\n", model, name,
                w->n_dims);
        goto out;
    }
    if (!tm_type_can_dequant(w->type)) {
        fprintf(stderr, "matvec: %s: tensor '%s' is %s, which tensormap cannot decode\n", model,
                name, tm_type_name(w->type) ? tm_type_name(w->type) : "of an unknown type");
        goto out;
    }
    const uint64_t cols = w->ne[0], rows = w->ne[1];

    x = malloc((cols ? cols : 1) * sizeof *x);
    y = malloc((rows ? rows : 1) * sizeof *y);
    if (!x || !y) {
        fprintf(stderr, "matvec: out of memory for a %llu x %llu weight\n",
                (unsigned long long)cols, (unsigned long long)rows);
        goto out;
    }
    for (uint64_t i = 0; i < cols; i++)
        x[i] = (float)((double)(splitmix64(seed + i) >> 40) * 0x1p-24) * 2.0f - 1.0f;

    /* 3. y = W x from the blocks in the mapping: no allocation of W, no copy */
    if (tm_matvec(w, x, y, mode, (unsigned)threads, &err) != TM_OK) {
        fprintf(stderr, "matvec: %s: %s\n", model, err.message);
        goto out;
    }

    double sum = 0.0;
    for (uint64_t r = 0; r < rows; r++)
        sum += (double)y[r];
    printf("tensor %s: %s, %llu rows of %llu, y = W x on %s, x in %s\n", name,
           tm_type_name(w->type), (unsigned long long)rows, (unsigned long long)cols, tm_isa(),
           mode == TM_MATVEC_Q8 ? "8 bits (TM_MATVEC_Q8)" : "float32 (TM_MATVEC_F32)");
    const uint64_t shown = all ? rows : (rows < 4 ? rows : 4);
    for (uint64_t r = 0; r < shown; r++)
        printf("y[%llu] = %.9g\n", (unsigned long long)r, (double)y[r]);
    if (!all && rows > shown)
        printf("...\ny[%llu] = %.9g\n", (unsigned long long)(rows - 1), (double)y[rows - 1]);
    printf("checksum = %.17g\n", sum);
    rc = 0;
out:
    free(x);
    free(y);
    tm_close(f);
    return rc;
}
