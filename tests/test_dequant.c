/* Dequantization: every kernel against ggml's own decoded output (the golden corpus, bit for
 * bit, on every instruction-set path this machine has), every SIMD kernel against the scalar
 * one on fresh random blocks at the edges of memory, hand-built blocks whose values are known
 * by construction, the threaded whole-tensor path, and the API's refusals. */
#include "support/dequant_nan.h"
#include "support/random_blocks.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The paths built into the library for this architecture ("scalar" first); the ones the CPU
 * lacks are skipped, visibly, at run time. */
#define MAX_ISAS 8

/* Every type id the library may know: the ggml ids and the safetensors storage ids. */
#define MAX_GGML_ID 64u
#define MAX_TYPE_ID (1024u + 64u)
static bool known_id(unsigned id) { return id < MAX_GGML_ID || id >= 1024u; }

static void use_isa(const char *isa)
{
    if (!tm_isa_available(isa))
        cr_skip_test("instruction set %s is built but this CPU or its OS lacks it", isa);
    tm_error err = {0};
    cr_assert_eq(tm_set_isa(isa, &err), TM_OK, "tm_set_isa(%s): %s", isa, err.message);
    cr_assert_str_eq(tm_isa(), isa);
}

/* ---- golden: ggml's decoded values, bit for bit -------------------------------------------- */

/* Indices, not pointers: Criterion may run each test in a freshly executed process, where
 * addresses from the parent mean nothing. */
typedef struct golden_param {
    char file;            /* 'a' or 'b' */
    tm_type type;
    unsigned isa;         /* tm_isa_built(isa) */
} golden_param;

static char *corpus_path(char file, const char *ext)
{
    const char *dir = getenv("TM_CORPUS");
    cr_assert(dir, "TM_CORPUS is not set (run through make test)");
    char *p = malloc(strlen(dir) + 64);
    cr_assert(p);
    sprintf(p, "%s/golden/golden-%c.%s", dir, file, ext);
    return p;
}

/* The line of golden-X.tsv for tensor name: byte offset of its values in .f32 and count. */
static void golden_entry(char file, const char *name, long *offset, size_t *count)
{
    char *path = corpus_path(file, "tsv");
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    char line[512], tname[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        long off;
        size_t n;
        if (sscanf(line, "%255s %*s %*s %*s %*s %*s %*s %ld %zu", tname, &off, &n) == 3 &&
            strcmp(tname, name) == 0) {
            *offset = off;
            *count = n;
            found = true;
        }
    }
    fclose(f);
    cr_assert(found, "%s has no line for %s", path, name);
    free(path);
}

static float *golden_values(char file, long offset, size_t count)
{
    char *path = corpus_path(file, "f32");
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    float *v = malloc(count * sizeof *v);
    cr_assert(v);
    cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
    cr_assert_eq(fread(v, sizeof *v, count, f), count, "%s is short", path);
    fclose(f);
    free(path);
    return v;
}

static void check_golden_tensor(const tm_file *tf, char file, const char *name, const char *isa)
{
    const tm_tensor *t = tm_tensor_find(tf, name);
    cr_assert(t, "golden-%c.gguf has no tensor %s", file, name);
    long off;
    size_t n;
    golden_entry(file, name, &off, &n);
    cr_assert_eq(t->n_elements, n, "%s: %llu elements, the tsv says %zu", name,
                 (unsigned long long)t->n_elements, n);
    float *want = golden_values(file, off, n);
    float *got = malloc((n + 1) * sizeof *got);
    cr_assert(got);
    tm_error err = {0};

    /* whole tensor */
    memset(got, 0xff, (n + 1) * sizeof *got);
    cr_assert_eq(tm_dequant_tensor(t, got, 1, &err), TM_OK, "%s: %s", name, err.message);
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        if (a != b)
            cr_assert_fail("golden-%c %s on %s: element %zu is %08x (%g), ggml gives %08x (%g)",
                           file, name, isa, i, a, (double)got[i], b, (double)want[i]);
    }
    /* the rows after the first, through tm_dequant_rows */
    const uint64_t rows = tm_tensor_rows(t);
    if (rows > 1) {
        memset(got, 0xff, n * sizeof *got);
        cr_assert_eq(tm_dequant_rows(t, 1, rows, got, &err), TM_OK, "%s: %s", name, err.message);
        cr_assert(memcmp(got, want + t->ne[0], (n - t->ne[0]) * sizeof *got) == 0,
                  "golden-%c %s on %s: rows [1, %llu) differ from ggml", file, name, isa,
                  (unsigned long long)rows);
    }
    free(got);
    free(want);
}

/* Whether golden-a.tsv (golden-b has the same tensors) names tensors of type t: the corpus has
 * one TYPE.rows.weight and one TYPE.raw_blocks for every type ggml can decode. */
static bool corpus_has_type(tm_type t)
{
    const char *dir = getenv("TM_CORPUS");
    char path[4096], line[512], name[256], type[64];
    snprintf(path, sizeof path, "%s/golden/golden-a.tsv", dir ? dir : ".");
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "%255s %63s", name, type) == 2 && strcmp(type, tm_type_name(t)) == 0;
    if (f)
        fclose(f);
    return found;
}

ParameterizedTestParameters(dequant_golden, matches_ggml)
{
    static golden_param params[2 * MAX_GGML_ID * MAX_ISAS];
    size_t k = 0;
    for (int f = 0; f < 2; f++)
        for (unsigned t = 0; t < MAX_GGML_ID; t++)
            for (unsigned i = 0; tm_type_name((tm_type)t) && corpus_has_type((tm_type)t) &&
                                 tm_isa_built(i);
                 i++)
                params[k++] = (golden_param){ (char)('a' + f), (tm_type)t, i };
    return cr_make_param_array(golden_param, params, k);
}

/* For each file x decodable ggml type x path: TYPE.rows.weight (ggml-quantized realistic rows)
 * and TYPE.raw_blocks (random bit patterns) decode to exactly ggml's floats. */
ParameterizedTest(golden_param *p, dequant_golden, matches_ggml)
{
    const char *isa = tm_isa_built(p->isa), *type = tm_type_name(p->type);
    use_isa(isa);
    char *path = corpus_path(p->file, "gguf");
    tm_file *tf = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &tf, &err), TM_OK, "%s: %s", path, err.message);
    char name[64];
    snprintf(name, sizeof name, "%s.rows.weight", type);
    check_golden_tensor(tf, p->file, name, isa);
    snprintf(name, sizeof name, "%s.raw_blocks", type);
    check_golden_tensor(tf, p->file, name, isa);
    tm_close(tf);
    free(path);
}

/* ---- SIMD == scalar on random blocks at the edges of memory --------------------------------- */

/* Every decodable type on every SIMD path (a type without a kernel of its own on a path runs
 * its fallback's, which is then compared with scalar too). */
static const size_t block_counts[] = { 1, 2, 3, 7, 64, 4097 };

typedef struct random_param {
    tm_type type;
    unsigned isa; /* tm_isa_built(isa) */
} random_param;

static uint64_t rng_state;
static uint64_t rng_next(void)
{
    /* splitmix64: fast, and any seed gives a full-period stream */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t fresh_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
}

/* A region whose last byte is followed by an unmapped (PROT_NONE) page. */
typedef struct guarded {
    uint8_t *base;
    size_t map_len;
    uint8_t *end; /* first byte of the guard page */
} guarded;

static guarded guarded_alloc(size_t n_bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (n_bytes + 1 + page - 1) / page + 1;
    guarded g;
    g.map_len = pages * page;
    g.base = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g.base != MAP_FAILED);
    g.end = g.base + g.map_len - page;
    cr_assert_eq(mprotect(g.end, page, PROT_NONE), 0);
    return g;
}

static void guarded_free(guarded *g) { munmap(g->base, g->map_len); }

#define CANARY 16
static const uint32_t canary_bits = 0x7fa5a5a5u; /* a NaN no kernel produces from a lane */

static void decode_checked(tm_type type, const uint8_t *src, size_t n_el, float *out)
{
    tm_error err = {0};
    for (size_t i = 0; i < n_el + CANARY; i++)
        memcpy(&out[i], &canary_bits, 4);
    cr_assert_eq(tm_dequant_raw(type, src, n_el, out, &err), TM_OK, "%s", err.message);
    for (size_t i = n_el; i < n_el + CANARY; i++)
        cr_assert(memcmp(&out[i], &canary_bits, 4) == 0,
                  "%s on %s wrote past the output (float %zu of %zu)", tm_type_name(type),
                  tm_isa(), i, n_el);
}

ParameterizedTestParameters(dequant_random, simd_equals_scalar)
{
    static random_param params[2 * MAX_GGML_ID * MAX_ISAS];
    size_t k = 0;
    for (unsigned t = 0; t < MAX_TYPE_ID; t++)
        for (unsigned i = 1; known_id(t) && tm_type_can_dequant((tm_type)t) && tm_isa_built(i);
             i++) /* path 0 is scalar, the reference */
            params[k++] = (random_param){ (tm_type)t, i };
    return cr_make_param_array(random_param, params, k);
}

/* Fresh random bytes each run (the seed is printed on failure), decoded once by scalar and once
 * by the path; compared bit for bit (NaN payloads included). The input sits either right
 * before a PROT_NONE page (a kernel reading one byte too far faults) or at an odd address. */
ParameterizedTest(random_param *p, dequant_random, simd_equals_scalar)
{
    const char *isa = tm_isa_built(p->isa);
    use_isa(isa);
    const uint64_t seed = fresh_seed();
    rng_state = seed;
    const size_t be = tm_type_block_elems(p->type), bb = tm_type_block_bytes(p->type);
    tm_error err = {0};
    for (size_t c = 0; c < sizeof block_counts / sizeof block_counts[0]; c++) {
        const size_t nb = block_counts[c], n_bytes = nb * bb, n_el = nb * be;
        guarded g = guarded_alloc(n_bytes + 1);
        float *want = malloc((n_el + CANARY) * sizeof(float));
        float *got = malloc((n_el + CANARY) * sizeof(float));
        cr_assert(want && got);
        for (int placement = 0; placement < 2; placement++) {
            uint8_t *src = placement == 0 ? g.end - n_bytes : g.base + 1;
            for (size_t i = 0; i < n_bytes; i++)
                src[i] = (uint8_t)rng_next();
            no_nan_min(p->type, src, nb);
            cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
            decode_checked(p->type, src, n_el, want);
            cr_assert_eq(tm_set_isa(isa, &err), TM_OK, "%s", err.message);
            decode_checked(p->type, src, n_el, got);
            for (size_t i = 0; i < n_el; i++) {
                uint32_t a, b;
                memcpy(&a, &got[i], 4);
                memcpy(&b, &want[i], 4);
                if (a != b)
                    cr_assert_fail("%s on %s, %zu blocks at %s: element %zu (block %zu) is "
                                   "%08x, scalar gives %08x (seed %llu)",
                                   tm_type_name(p->type), isa, nb,
                                   placement ? "an odd address" : "a guard page", i, i / be, a,
                                   b, (unsigned long long)seed);
            }
        }
        free(want);
        free(got);
        guarded_free(&g);
    }
}

/* ---- hand-built blocks: values known by construction ---------------------------------------- */

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void expect_values(tm_type type, const uint8_t *block, const float *want, size_t n)
{
    float got[256];
    tm_error err = {0};
    for (unsigned i = 0; tm_isa_built(i); i++) {
        if (!tm_isa_available(tm_isa_built(i)))
            continue; /* the per-path golden and random tests skip it visibly */
        cr_assert_eq(tm_set_isa(tm_isa_built(i), &err), TM_OK);
        cr_assert_eq(tm_dequant_raw(type, block, n, got, &err), TM_OK, "%s", err.message);
        for (size_t j = 0; j < n; j++)
            cr_assert_eq(got[j], want[j], "%s on %s: element %zu is %g, want %g",
                         tm_type_name(type), tm_isa_built(i), j, (double)got[j], (double)want[j]);
    }
}

/* q4_0: d = 0.5 (half 0x3800), qs[j] = j | (15 - j) << 4:
 * element j = (j - 8) * 0.5, element j + 16 = (7 - j) * 0.5. */
Test(dequant_layout, q4_0_nibbles)
{
    uint8_t b[18];
    float want[32];
    put16(b, 0x3800);
    for (int j = 0; j < 16; j++) {
        b[2 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(j - 8) * 0.5f;
        want[j + 16] = (float)(7 - j) * 0.5f;
    }
    expect_values(TM_TYPE_Q4_0, b, want, 32);
}

/* q5_0: d = 2 (0x4000), qh = 0xAAAA5555 sets the fifth bit of even elements 0..15 and of odd
 * elements 16..31; qs all 0x31 (low nibble 1, high nibble 3). */
Test(dequant_layout, q5_0_fifth_bit)
{
    uint8_t b[22];
    float want[32];
    put16(b, 0x4000);
    const uint32_t qh = 0xAAAA5555u;
    memcpy(b + 2, &qh, 4);
    memset(b + 6, 0x31, 16);
    for (int j = 0; j < 16; j++) {
        want[j] = (float)(1 + (j % 2 == 0 ? 16 : 0) - 16) * 2.0f;
        want[j + 16] = (float)(3 + (j % 2 == 1 ? 16 : 0) - 16) * 2.0f;
    }
    expect_values(TM_TYPE_Q5_0, b, want, 32);
}

/* q8_0: d = -1 (0xBC00), qs[i] = i - 16 as int8. */
Test(dequant_layout, q8_0_signed)
{
    uint8_t b[34];
    float want[32];
    put16(b, 0xBC00);
    for (int i = 0; i < 32; i++) {
        b[2 + i] = (uint8_t)(int8_t)(i - 16);
        want[i] = (float)(16 - i);
    }
    expect_values(TM_TYPE_Q8_0, b, want, 32);
}

/* q4_K: d = 1, dmin = 0.5. Groups 0..3 get scale g + 1 and min g (bytes 0..3 and 4..7);
 * groups 4..7 get scale 40 + g and min 50 + g, whose top two bits live in bytes 0..7's bits
 * 6..7. Nibbles: low = l % 16, high = 15 - l % 16. */
Test(dequant_layout, q4_K_scales_and_nibbles)
{
    uint8_t b[144] = { 0 };
    float want[256];
    unsigned sc[8], mn[8];
    put16(b, 0x3C00);
    put16(b + 2, 0x3800);
    for (unsigned g = 0; g < 8; g++) {
        sc[g] = g < 4 ? g + 1 : 40 + g;
        mn[g] = g < 4 ? g : 50 + g;
    }
    for (unsigned g = 0; g < 4; g++) {
        b[4 + g] = (uint8_t)(sc[g] | (sc[g + 4] >> 4) << 6);
        b[8 + g] = (uint8_t)(mn[g] | (mn[g + 4] >> 4) << 6);
        b[12 + g] = (uint8_t)((sc[g + 4] & 15) | (mn[g + 4] & 15) << 4);
    }
    for (int l = 0; l < 128; l++)
        b[16 + l] = (uint8_t)(l % 16 | (15 - l % 16) << 4);
    for (int e = 0; e < 256; e++) {
        const unsigned g = (unsigned)e / 32, l = (unsigned)e % 32;
        const unsigned q = g % 2 == 0 ? l % 16 : 15 - l % 16;
        want[e] = 1.0f * (float)sc[g] * (float)q - 0.5f * (float)mn[g];
    }
    expect_values(TM_TYPE_Q4_K, b, want, 256);
}

/* q6_K: d = 1, scales[k] = k - 8, every ql byte 0x21 and qh byte 0b11100100: so element l + 32k
 * (k = 0..3 within a half) has q = nibble | (k-th 2-bit field of qh) << 4, minus 32. */
Test(dequant_layout, q6_K_fields)
{
    uint8_t b[210];
    float want[256];
    memset(b, 0x21, 128);
    memset(b + 128, 0xE4, 64); /* 2-bit fields 0, 1, 2, 3 from the bottom */
    for (int k = 0; k < 16; k++)
        b[192 + k] = (uint8_t)(int8_t)(k - 8);
    put16(b + 208, 0x3C00);
    for (int e = 0; e < 256; e++) {
        const int half_ = e / 128, k = e % 128 / 32, l = e % 32;
        const int nib = k < 2 ? 1 : 2; /* low nibble 1 for k = 0, 1; high nibble 2 for k = 2, 3 */
        const int q = (nib | k << 4) - 32;
        const int scale = 8 * half_ + l / 16 + 2 * k - 8;
        want[e] = (float)scale * (float)q;
    }
    expect_values(TM_TYPE_Q6_K, b, want, 256);
}

/* ---- whole tensors on threads ---------------------------------------------------------------- */

/* 9M q4_K weights (36 MiB of output): decoded whole on 1, 2, 3 and all threads, on every path,
 * each compared with scalar decoding row by row (small calls) into another buffer; and once
 * into an output that is not 64-byte aligned. */
Test(dequant_tensor, threads_match_row_by_row, .timeout = 120)
{
    const uint64_t ne0 = 4096, rows = 2304;
    const tm_type type = TM_TYPE_Q4_K;
    const size_t n = (size_t)(ne0 * rows);
    const size_t n_bytes = n / 256 * 144;
    uint8_t *data = malloc(n_bytes);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    cr_assert(data && want && got);
    const uint64_t seed = fresh_seed();
    rng_state = seed;
    for (size_t i = 0; i < n_bytes; i++)
        data[i] = (uint8_t)rng_next();
    const tm_tensor t = tensor_over("fake", type, data, ne0, rows);
    tm_error err = {0};
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    for (uint64_t r = 0; r < rows; r += 16)
        cr_assert_eq(tm_dequant_rows(&t, r, r + 16, want + r * ne0, &err), TM_OK, "%s", err.message);
    const unsigned threads[] = { 1, 2, 3, 0 };
    for (unsigned i = 0; tm_isa_built(i); i++) {
        if (!tm_isa_available(tm_isa_built(i)))
            continue; /* the per-path golden and random tests skip it visibly */
        cr_assert_eq(tm_set_isa(tm_isa_built(i), &err), TM_OK);
        for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
            memset(got, 0xff, n * sizeof(float));
            cr_assert_eq(tm_dequant_tensor(&t, got, threads[k], &err), TM_OK, "%s", err.message);
            cr_assert(memcmp(got, want, n * sizeof(float)) == 0,
                      "%s, %u threads: differs from row-by-row scalar (seed %llu)", tm_isa_built(i),
                      threads[k], (unsigned long long)seed);
        }
        /* an output that is only 4-byte aligned */
        memset(got, 0xff, n * sizeof(float));
        const tm_tensor t2 = tensor_over("fake", type, data, ne0, rows - 1);
        cr_assert_eq(tm_dequant_tensor(&t2, got + 1, 2, &err), TM_OK, "%s", err.message);
        cr_assert(memcmp(got + 1, want, (n - ne0) * sizeof(float)) == 0,
                  "%s, unaligned output: differs (seed %llu)", tm_isa_built(i), (unsigned long long)seed);
    }
    free(data);
    free(want);
    free(got);
}

/* ---- from outside: the tool's raw dump on every path ----------------------------------------- */

/* `TM_ISA=path tensormap dump FILE TENSOR --format raw -o -` writes ggml's floats, byte for
 * byte, for a K type and a 32-block type, on every path this machine has. */
Test(dequant_cli, raw_dump_matches_ggml_on_every_path)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert(tool, "TM_TOOL is not set (run through make test)");
    char *gguf = corpus_path('b', "gguf");
    const char *names[] = { "q6_K.rows.weight", "q5_0.raw_blocks" };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        long off;
        size_t n;
        golden_entry('b', names[k], &off, &n);
        float *want = golden_values('b', off, n);
        float *got = malloc(n * sizeof *got + 1);
        cr_assert(got);
        for (unsigned i = 0; tm_isa_built(i); i++) {
            if (!tm_isa_available(tm_isa_built(i)))
                continue; /* the per-path golden and random tests skip it visibly */
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "TM_ISA=%s '%s' dump '%s' %s --format raw -o -", tm_isa_built(i),
                     tool, gguf, names[k]);
            FILE *p = popen(cmd, "r");
            cr_assert(p);
            const size_t got_n = fread(got, 1, n * sizeof *got + 1, p);
            cr_assert_eq(pclose(p), 0, "%s failed", cmd);
            cr_assert_eq(got_n, n * sizeof *got, "%s: %zu bytes, want %zu", cmd, got_n, n * sizeof *got);
            cr_assert(memcmp(got, want, n * sizeof *got) == 0, "%s: differs from ggml", cmd);
        }
        free(got);
        free(want);
    }
    free(gguf);
}

/* ---- storage types (safetensors) ------------------------------------------------------------ */

/* OCP FP8 E4M3 from its definition: bias 7, no infinities, S.1111.111 NaN; E5M2: bias 15, IEEE
 * infinities and NaNs. All 256 patterns of each. */
Test(dequant_storage, fp8_all_patterns)
{
    uint8_t bytes[256];
    float got[256];
    tm_error err = {0};
    for (int i = 0; i < 256; i++)
        bytes[i] = (uint8_t)i;
    cr_assert_eq(tm_dequant_raw(TM_TYPE_F8_E4M3, bytes, 256, got, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 256; i++) {
        const int s = i >> 7, e = (i >> 3) & 15, m = i & 7;
        double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
        if (e == 15 && m == 7) {
            cr_assert(isnan(got[i]), "E4M3 %02x should be NaN", i);
            continue;
        }
        cr_assert_eq((double)got[i], s ? -v : v, "E4M3 %02x: %g, want %g", i, (double)got[i], s ? -v : v);
    }
    cr_assert_eq(got[0x7e], 448.0f, "E4M3 max is 448");
    cr_assert_eq(tm_dequant_raw(TM_TYPE_F8_E5M2, bytes, 256, got, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 256; i++) {
        const int s = i >> 7, e = (i >> 2) & 31, m = i & 3;
        if (e == 31) {
            if (m == 0)
                cr_assert(isinf(got[i]) && (got[i] < 0) == (s == 1), "E5M2 %02x should be inf", i);
            else
                cr_assert(isnan(got[i]), "E5M2 %02x should be NaN", i);
            continue;
        }
        double v = e == 0 ? ldexp(m, -16) : ldexp(4 + m, e - 17);
        cr_assert_eq((double)got[i], s ? -v : v, "E5M2 %02x: %g, want %g", i, (double)got[i], s ? -v : v);
    }
}

Test(dequant_storage, integers_f64_bool)
{
    tm_error err = {0};
    float got[4];
    const double d[4] = { 1.5, -0.1, 1e300, 3.0e-45 };
    cr_assert_eq(tm_dequant_raw(TM_TYPE_F64, d, 4, got, &err), TM_OK, "%s", err.message);
    cr_assert_eq(got[0], 1.5f);
    cr_assert_eq(got[1], -0.1f);
    cr_assert(isinf(got[2]) && got[2] > 0);
    cr_assert_eq(got[3], (float)3.0e-45);
    const int8_t i8[4] = { -128, -1, 0, 127 };
    cr_assert_eq(tm_dequant_raw(TM_TYPE_I8, i8, 4, got, &err), TM_OK, "%s", err.message);
    cr_assert(got[0] == -128.0f && got[1] == -1.0f && got[2] == 0.0f && got[3] == 127.0f);
    const int32_t i32[4] = { INT32_MIN, -7, 16777217, INT32_MAX };
    cr_assert_eq(tm_dequant_raw(TM_TYPE_I32, i32, 4, got, &err), TM_OK, "%s", err.message);
    cr_assert(got[0] == -2147483648.0f && got[1] == -7.0f && got[2] == 16777216.0f &&
              got[3] == 2147483648.0f);
    const uint16_t u16[4] = { 0, 1, 65534, 65535 };
    cr_assert_eq(tm_dequant_raw(TM_TYPE_U16, u16, 4, got, &err), TM_OK, "%s", err.message);
    cr_assert(got[0] == 0.0f && got[1] == 1.0f && got[2] == 65534.0f && got[3] == 65535.0f);
    const uint8_t bools[4] = { 0, 1, 0, 1 };
    cr_assert_eq(tm_dequant_raw(TM_TYPE_BOOL, bools, 4, got, &err), TM_OK, "%s", err.message);
    cr_assert(got[0] == 0.0f && got[1] == 1.0f && got[2] == 0.0f && got[3] == 1.0f);
}

/* ---- refusals ------------------------------------------------------------------------------- */

/* q8_1 and q8_K have no float decoder in ggml: refused by name. An id ggml removed is named as
 * removed types are; an id ggml never defined (a fork's private type) is refused by number. */
Test(dequant_api, types_without_a_decoder_are_refused)
{
    static const struct {
        unsigned id;
        const char *says;
    } cases[] = {
        { TM_TYPE_Q8_1, "type q8_1 has no decoder" },
        { TM_TYPE_Q8_K, "type q8_K has no decoder" },
        { 36, "type iq4_nl_4_4 has no decoder" },
        { 43, "type id 43 is not a known type" },
        { 1023, "type id 1023 is not a known type" },
        { TM_TYPE_U64 + 1, "type id 1031 is not a known type" },
    };
    uint8_t block[512] = { 0 };
    float out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tm_type t = (tm_type)cases[i].id;
        tm_error err = {0};
        cr_assert(!tm_type_can_dequant(t), "id %u", cases[i].id);
        const uint32_t be = tm_type_block_elems(t);
        cr_assert_eq(tm_dequant_raw(t, block, be ? be : 1, out, &err), TM_UNSUPPORTED, "id %u",
                     cases[i].id);
        cr_assert(strstr(err.message, cases[i].says), "id %u: %s", cases[i].id, err.message);
    }
    cr_assert_eq(tm_type_block_bytes(TM_TYPE_Q8_K), 292);
    cr_assert_eq(tm_type_block_elems((tm_type)43), 0);
}

/* Every entry point refuses a type without a decoder in the same words, naming the tensor:
 * tm_dequant_tensor and tm_dequant_rows (which check the block geometry first) as
 * tm_dequant_raw and tm_matvec do. */
Test(dequant_api, every_entry_point_refuses_a_type_without_a_decoder_alike)
{
    static const struct {
        unsigned id;
        const char *says;
    } cases[] = {
        { 4, "tensor 'w': type q4_2 has no decoder in this library" },
        { TM_TYPE_Q8_K, "tensor 'w': type q8_K has no decoder in this library" },
        { 77, "tensor 'w': type id 77 is not a known type" },
    };
    static const uint8_t data[1024];
    float out[256], x[256] = { 0 };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_tensor t;
        memset(&t, 0, sizeof t);
        t.name.ptr = "w";
        t.name.len = 1;
        t.type = (tm_type)cases[i].id;
        t.n_dims = 1;
        t.ne[0] = t.n_elements = tm_type_block_elems(t.type) ? tm_type_block_elems(t.type) : 1;
        t.ne[1] = t.ne[2] = t.ne[3] = 1;
        t.n_bytes = tm_type_block_bytes(t.type);
        t.data = data;
        t.info_offset = 123;
        tm_error err = {0};
        cr_assert_eq(tm_dequant_tensor(&t, out, 1, &err), TM_UNSUPPORTED, "id %u", cases[i].id);
        cr_assert_str_eq(err.message, cases[i].says);
        cr_assert_eq(err.offset, 123);
        cr_assert_eq(tm_dequant_rows(&t, 0, 1, out, &err), TM_UNSUPPORTED, "id %u", cases[i].id);
        cr_assert_str_eq(err.message, cases[i].says);
        cr_assert_eq(tm_matvec(&t, x, out, TM_MATVEC_F32, 1, &err), TM_UNSUPPORTED);
        cr_assert(strncmp(err.message, "tm_matvec: ", 11) == 0, "%s", err.message);
        cr_assert_str_eq(err.message + 11, cases[i].says);
    }
}

/* Every id ggml defines that has a float decoder there decodes here: all but q8_1 and q8_K. */
Test(dequant_api, every_ggml_type_with_a_ggml_decoder_decodes)
{
    for (unsigned t = 0; t < MAX_GGML_ID; t++) {
        const tm_type type = (tm_type)t;
        const bool defined = tm_type_block_elems(type) != 0;
        const bool ggml_decodes = defined && type != TM_TYPE_Q8_1 && type != TM_TYPE_Q8_K &&
                                  !(type >= TM_TYPE_I8 && type <= TM_TYPE_F64);
        if (ggml_decodes)
            cr_assert(tm_type_can_dequant(type), "%s (%u) has no decoder", tm_type_name(type), t);
    }
}

Test(dequant_api, ranges_are_checked)
{
    char *path = corpus_path('a', "gguf");
    tm_file *tf = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &tf, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(tf, "q4_K.raw_blocks"); /* 96 blocks */
    cr_assert(t);
    float out[256];
    cr_assert_eq(tm_dequant_blocks(t, 96, 1, out, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "q4_K.raw_blocks") && strstr(err.message, "96"), "%s", err.message);
    cr_assert_eq(tm_dequant_blocks(t, UINT64_MAX, 2, out, &err), TM_INVALID_ARG);
    cr_assert_eq(tm_dequant_elements(t, 128, 256, out, &err), TM_INVALID_ARG);
    cr_assert(strstr(err.message, "block"), "%s", err.message);
    cr_assert_eq(tm_dequant_rows(t, 1, 2, out, &err), TM_INVALID_ARG); /* 1 row of 24576 */
    cr_assert_eq(tm_dequant_blocks(t, 95, 1, out, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_dequant_blocks(t, 0, 0, NULL, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_dequant_raw(TM_TYPE_Q8_0, out, 33, out, &err), TM_INVALID_ARG);
    cr_assert_eq(tm_dequant_blocks(NULL, 0, 1, out, &err), TM_INVALID_ARG);
    tm_close(tf);
    free(path);
}

Test(dequant_api, isa_names)
{
    tm_error err = {0};
    cr_assert(tm_isa_available("scalar"));
    cr_assert(!tm_isa_available("sse9"));
    cr_assert_eq(tm_set_isa("sse9", &err), TM_ISA);
    cr_assert(strstr(err.message, "sse9") && strstr(err.message, "unknown"), "%s", err.message);
#if defined(__x86_64__)
    cr_assert_eq(tm_set_isa("neon", &err), TM_ISA);
    cr_assert(strstr(err.message, "neon"), "%s", err.message);
#endif
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    cr_assert_str_eq(tm_isa(), "scalar");
}

#if defined(__x86_64__)
/* The CPU check against an outside oracle: the kernel's /proc/cpuinfo flags, which Linux clears
 * for features whose register state the OS does not enable. */
static bool cpuinfo_has(const char *flags, const char *flag)
{
    const size_t n = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
            return true;
    return false;
}

Test(dequant_api, isa_availability_matches_proc_cpuinfo)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        cr_skip_test("no /proc/cpuinfo");
    static char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, "flags", 5) == 0;
    fclose(f);
    cr_assert(found, "/proc/cpuinfo has no flags line");
    const char *avx2[] = { "avx", "avx2", "fma", "f16c", "bmi2" };
    const char *avx512[] = { "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi" };
    bool want2 = true, want512;
    for (size_t i = 0; i < 5; i++)
        want2 = want2 && cpuinfo_has(line, avx2[i]);
    want512 = want2;
    for (size_t i = 0; i < 5; i++)
        want512 = want512 && cpuinfo_has(line, avx512[i]);
    cr_assert_eq(tm_isa_available("avx2"), want2, "avx2: cpuinfo says %d", want2);
    cr_assert_eq(tm_isa_available("avx512"), want512, "avx512: cpuinfo says %d", want512);
}
#endif

/* TM_ISA naming something unusable: every decode fails with TM_ISA and says why (Criterion runs
 * each test in a fresh process, so the path is chosen here, at this first use). */
Test(dequant_api, bad_tm_isa_environment_is_an_error)
{
    setenv("TM_ISA", "avx9000", 1);
    float out[32];
    uint8_t block[34] = { 0 };
    tm_error err = {0};
    cr_assert_eq(tm_dequant_raw(TM_TYPE_Q8_0, block, 32, out, &err), TM_ISA);
    cr_assert(strstr(err.message, "TM_ISA") && strstr(err.message, "avx9000"), "%s", err.message);
    cr_assert_str_eq(tm_isa(), "none");
    cr_assert_eq(tm_set_isa("scalar", &err), TM_OK);
    cr_assert_eq(tm_dequant_raw(TM_TYPE_Q8_0, block, 32, out, &err), TM_OK, "%s", err.message);
}
