/* The NEON path checked under qemu-aarch64 (make check-arm): Criterion is not available for
 * aarch64 here, so this is a plain program. It checks, for the NEON and the
 * scalar path, every golden tensor against ggml's decoded values bit for bit; NEON against
 * scalar on random blocks (fresh seed, printed); and all 65,536 halves and bf16 patterns against
 * the scalar path (which the x86 suite checks against an ldexp reference); and which path's
 * decoder the NEON path runs for each type (tests/support/kernel_pins.h). Exit 1 on any
 * difference. */
#include "../support/dequant_nan.h"
#include "../support/kernel_pins.h"
#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

static void golden(const char *corpus, char file, const char *isa)
{
    char path[512], line[512], name[256];
    snprintf(path, sizeof path, "%s/golden/golden-%c.gguf", corpus, file);
    tm_file *tf = NULL;
    tm_error err;
    if (tm_open(path, 0, &tf, &err) != TM_OK) {
        printf("FAIL %s: %s\n", path, err.message);
        failures++;
        return;
    }
    snprintf(path, sizeof path, "%s/golden/golden-%c.tsv", corpus, file);
    FILE *tsv = fopen(path, "r");
    snprintf(path, sizeof path, "%s/golden/golden-%c.f32", corpus, file);
    FILE *f32 = fopen(path, "rb");
    if (!tsv || !f32) {
        printf("FAIL: cannot open the golden tsv/f32 of %c\n", file);
        exit(1);
    }
    int checked = 0;
    while (fgets(line, sizeof line, tsv)) {
        long off;
        size_t n;
        if (sscanf(line, "%255s %*s %*s %*s %*s %*s %*s %ld %zu", name, &off, &n) != 3)
            continue;
        const tm_tensor *t = tm_tensor_find(tf, name);
        if (!t)
            continue;
        float *want = malloc(n * 4), *got = malloc(n * 4);
        if (fseek(f32, off, SEEK_SET) != 0 || fread(want, 4, n, f32) != n) {
            printf("FAIL: short golden-%c.f32\n", file);
            exit(1);
        }
        if (tm_dequant_tensor(t, got, 1, &err) != TM_OK || memcmp(got, want, n * 4) != 0) {
            printf("FAIL golden-%c %s on %s\n", file, name, isa);
            failures++;
        }
        checked++;
        free(want);
        free(got);
    }
    printf("golden-%c on %s: %d tensors checked\n", file, isa, checked);
    fclose(tsv);
    fclose(f32);
    tm_close(tf);
}

static uint64_t rng;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void compare_paths(tm_type type, const uint8_t *src, size_t n_el, const char *what)
{
    float *a = malloc(n_el * 4), *b = malloc(n_el * 4);
    tm_set_isa("scalar", NULL);
    tm_dequant_raw(type, src, n_el, a, NULL);
    tm_set_isa("neon", NULL);
    tm_dequant_raw(type, src, n_el, b, NULL);
    for (size_t i = 0; i < n_el; i++) {
        uint32_t x, y;
        memcpy(&x, &a[i], 4);
        memcpy(&y, &b[i], 4);
        if (x != y) {
            printf("FAIL %s %s: element %zu of %zu: neon %08x, scalar %08x\n",
                   tm_type_name(type), what, i, n_el, y, x);
            failures++;
            break;
        }
    }
    free(a);
    free(b);
}

int main(void)
{
    const char *corpus = getenv("TM_CORPUS");
    if (!corpus) {
        fprintf(stderr, "neon_check: TM_CORPUS is not set\n");
        return 2;
    }
    tm_error err;
    if (tm_set_isa("neon", &err) != TM_OK) {
        fprintf(stderr, "neon_check: %s\n", err.message);
        return 1;
    }
    golden(corpus, 'a', "neon");
    golden(corpus, 'b', "neon");
    tm_set_isa("scalar", NULL);
    golden(corpus, 'a', "scalar");
    golden(corpus, 'b', "scalar");

    rng = (uint64_t)time(NULL);
    printf("random blocks, seed %llu\n", (unsigned long long)rng);
    const size_t counts[] = { 1, 2, 3, 7, 64, 4097 };
    for (unsigned id = 0; id < 64; id++) { /* every ggml type the library decodes */
        const tm_type type = (tm_type)id;
        for (size_t c = 0; tm_type_can_dequant(type) && c < sizeof counts / sizeof counts[0]; c++) {
            const size_t bytes = counts[c] * tm_type_block_bytes(type);
            uint8_t *src = malloc(bytes + 1);
            for (size_t i = 0; i <= bytes; i++)
                src[i] = (uint8_t)next();
            no_nan_min(type, src + 1, counts[c]);
            compare_paths(type, src + 1, counts[c] * tm_type_block_elems(type), "random");
            free(src);
        }
    }
    uint16_t *all = malloc(65536 * 2);
    for (uint32_t i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    compare_paths(TM_TYPE_F16, (const uint8_t *)all, 65536, "all 65536 patterns");
    compare_paths(TM_TYPE_BF16, (const uint8_t *)all, 65536, "all 65536 patterns");
    free(all);
    char why[160];
    const int pins = pin_path(TM__ISA_NEON, PIN_DEQUANT, why, sizeof why);
    if (pins < 0) {
        printf("FAIL %s\n", why);
        failures++;
    }
    printf("neon decoders pinned: %d\n", pins);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
