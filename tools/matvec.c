/* matvec — y = W·x for one 2-D weight of a model file, the loop an inference engine runs.
 *
 * A worked example of the tensormap API (it uses nothing but include/tensormap.h):
 *   1. tm_open maps the file and indexes it; nothing is read or copied yet.
 *   2. tm_tensor_find gives the weight's descriptor: type, shape, and a pointer into the map.
 *   3. The rows are decoded a tile at a time with tm_dequant_rows into one reusable buffer
 *      sized to half the L2 cache, and each tile is multiplied while it is still hot.
 *      The quantized weights are read once, straight from the mapping; the float32 copy of W
 *      never exists as a whole.
 *
 * x is deterministic: x[i] = u * 2 - 1, u = (splitmix64(seed + i) >> 40) / 2^24, so a test (or
 * another program) can rebuild it. Each y[r] is accumulated in double, in order, from the float
 * products w * x (exact in double), and stored as float. */
#include "tensormap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tile budget: the float32 rows of one tile take half of this core's L2 (sysconf), leaving
 * room for x and the quantized rows streaming through; 256 KiB when the size is not known. */
static uint64_t tile_bytes(void)
{
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? (uint64_t)l2 / 2 : 256u << 10;
}

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
            "usage: matvec MODEL TENSOR [--seed N] [--all]\n"
            "  Compute y = W x for the 2-D weight TENSOR of MODEL (GGUF or safetensors), decoding W\n"
            "  in row tiles that stay in L2, and print a few y values and their sum.\n"
            "  x[i] = 2 u - 1 with u = (splitmix64(N + i) >> 40) / 2^24 (default N = 1).\n"
            "  --all      print every y value, one per line\n"
            "  TM_ISA=scalar|avx2|avx512|neon forces a decoding path.\n");
}

int main(int argc, char **argv)
{
    const char *model = NULL, *name = NULL;
    uint64_t seed = 1;
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
    float *x = NULL, *y = NULL, *tile = NULL;
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

    /* 3. One tile buffer, reused: as many whole rows as fit in half the L2 (at least one). */
    uint64_t tile_rows = tile_bytes() / sizeof(float) / (cols ? cols : 1);
    if (tile_rows == 0)
        tile_rows = 1;
    if (tile_rows > rows)
        tile_rows = rows;
    x = malloc(cols * sizeof *x);
    y = malloc(rows * sizeof *y);
    tile = malloc((tile_rows ? tile_rows : 1) * cols * sizeof *tile);
    if (!x || !y || !tile) {
        fprintf(stderr, "matvec: out of memory for a %llu x %llu weight\n",
                (unsigned long long)cols, (unsigned long long)rows);
        goto out;
    }
    for (uint64_t i = 0; i < cols; i++)
        x[i] = (float)((double)(splitmix64(seed + i) >> 40) * 0x1p-24) * 2.0f - 1.0f;

    for (uint64_t r0 = 0; r0 < rows; r0 += tile_rows) {
        const uint64_t r1 = r0 + tile_rows < rows ? r0 + tile_rows : rows;
        /* decode rows [r0, r1) from the mapping into the tile: no allocation, no copy of W */
        if (tm_dequant_rows(w, r0, r1, tile, &err) != TM_OK) {
            fprintf(stderr, "matvec: %s: %s\n", model, err.message);
            goto out;
        }
        for (uint64_t r = r0; r < r1; r++) {
            const float *row = tile + (r - r0) * cols;
            double acc = 0.0;
            for (uint64_t i = 0; i < cols; i++)
                acc += (double)row[i] * (double)x[i];
            y[r] = (float)acc;
        }
    }

    double sum = 0.0;
    for (uint64_t r = 0; r < rows; r++)
        sum += (double)y[r];
    printf("tensor %s: %s, %llu rows of %llu, decoded on %s in tiles of %llu rows (%llu KiB)\n",
           name, tm_type_name(w->type), (unsigned long long)rows, (unsigned long long)cols,
           tm_isa(), (unsigned long long)tile_rows,
           (unsigned long long)(tile_rows * cols * sizeof(float) >> 10));
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
    free(tile);
    tm_close(f);
    return rc;
}
