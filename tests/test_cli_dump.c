/* dump and stats: decoded values leave the tool in the formats people load, and the summaries
 * match numbers worked out here from the data the test wrote. The .npy reader is this file's
 * own; the .lz4 output goes through the real lz4 binary. */
#include "support/helpers.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(cli_dump, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

/* q8_0, 64 x 3: six blocks of {half d, 32 x i8}. Block b has d = 2^-b (exact in half: 0x3c00
 * minus b exponent steps) and qs[i] = i - 16 + b, so value = (i - 16 + b) * 2^-b exactly. */
#define Q_ROWS 3u
#define Q_COLS 64u
static uint8_t qblocks[6 * 34];
static float values_v[20] = {1.5f,     -2.25f, 0.0f,      3.0f, NAN,   8.0f,  -0.5f,
                             INFINITY, 4.0f,   -INFINITY, 2.0f, 1.0f,  -7.0f, 0.25f,
                             6.0f,     5.0f,   -1.0f,     9.5f, 0.75f, -3.0f};

static float q_value(unsigned b, unsigned i)
{
    return (float)((int)i - 16 + (int)b) * ldexpf(1, -(int)b);
}

/* A type the library has no float decoder for (q8_1 today), found by asking, so the test
 * keeps meaning something when decoders are added; TM_TYPE_F32 when every type decodes. */
static tm_type undecodable(void)
{
    for (int t = 0; t < 2048; t++)
        if (tm_type_block_bytes((tm_type)t) && !tm_type_can_dequant((tm_type)t))
            return (tm_type)t;
    return TM_TYPE_F32;
}

static const char *write_model(void)
{
    for (unsigned b = 0; b < 6; b++) {
        uint16_t d = (uint16_t)(0x3c00 - (b << 10)); /* 1.0, 0.5, 0.25, ... as halves */
        memcpy(qblocks + 34 * b, &d, 2);
        for (unsigned i = 0; i < 32; i++)
            qblocks[34 * b + 2 + i] = (uint8_t)(int8_t)((int)i - 16 + (int)b);
    }
    const char *path = test_path("model.gguf");
    tm_writer *w;
    tm_error err;
    const uint64_t qne[2] = {Q_COLS, Q_ROWS}, vne[2] = {5, 4};
    const uint64_t ine[1] = {tm_type_block_elems(undecodable())};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "q", TM_TYPE_Q8_0, 2, qne, qblocks, &err), &err);
    ok(tm_writer_tensor(w, "v", TM_TYPE_F32, 2, vne, values_v, &err), &err);
    ok(tm_writer_tensor(w, "odd", undecodable(), 1, ine, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

/* The .npy reader: checks the format 1.0 header and returns the shape and the values. */
static float *read_npy(const char *path, uint64_t *shape, size_t *n_dims, size_t *n_values)
{
    size_t len;
    char *b = read_all(path, &len);
    cr_assert_geq(len, 10);
    cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0, "not an npy 1.0 file");
    size_t hlen = (size_t)(unsigned char)b[8] | (size_t)(unsigned char)b[9] << 8;
    cr_assert_eq((10 + hlen) % 64, 0, "the header is not padded to 64 bytes");
    cr_assert_eq(b[10 + hlen - 1], '\n');
    char *h = strndup(b + 10, hlen);
    cr_assert(strstr(h, "'descr': '<f4'"), "%s", h);
    cr_assert(strstr(h, "'fortran_order': False"), "%s", h);
    char *s = strstr(h, "'shape': (");
    cr_assert_not_null(s, "%s", h);
    s += 10;
    *n_dims = 0;
    size_t count = 1;
    while (*s != ')') {
        char *end;
        shape[(*n_dims)++] = strtoull(s, &end, 10);
        count *= shape[*n_dims - 1];
        s = end;
        while (*s == ',' || *s == ' ')
            s++;
    }
    free(h);
    cr_assert_eq(len - 10 - hlen, count * 4, "payload %zu bytes for %zu values", len - 10 - hlen,
                 count);
    float *v = malloc(count * 4 + 1);
    memcpy(v, b + 10 + hlen, count * 4);
    free(b);
    *n_values = count;
    return v;
}

Test(cli_dump, npy_round_trips_with_the_shape_reversed)
{
    const char *model = write_model();
    const char *npy = test_path("q.npy");
    tool_result r = tool_run("dump", model, "q", "-o", npy, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    uint64_t shape[4];
    size_t nd, n;
    float *v = read_npy(npy, shape, &nd, &n);
    cr_assert_eq(nd, 2);
    cr_assert_eq(shape[0], Q_ROWS); /* numpy's order: ne reversed */
    cr_assert_eq(shape[1], Q_COLS);
    /* against the block formula by hand, and against the library's own decoder */
    tm_file *f;
    tm_error err;
    ok(tm_open(model, 0, &f, &err), &err);
    float lib[Q_ROWS * Q_COLS];
    ok(tm_dequant_tensor(tm_tensor_find(f, "q"), lib, 1, &err), &err);
    for (unsigned k = 0; k < Q_ROWS * Q_COLS; k++) {
        cr_assert_eq(v[k], q_value(k / 32, k % 32), "value %u: %g", k, (double)v[k]);
        cr_assert_eq(memcmp(&v[k], &lib[k], 4), 0);
    }
    tm_close(f);
    free(v);

    /* a slice of rows is (rows, ne[0]) */
    r = tool_run("dump", model, "q", "--rows", "1:3", "--format", "npy", "-o", npy, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    v = read_npy(npy, shape, &nd, &n);
    cr_assert(nd == 2 && shape[0] == 2 && shape[1] == Q_COLS);
    for (unsigned k = 0; k < n; k++)
        cr_assert_eq(v[k], q_value((k + Q_COLS) / 32, k % 32));
    free(v);
}

Test(cli_dump, lz4_decompresses_with_the_lz4_tool_to_the_raw_dump)
{
    const char *model = write_model();
    char raw[256], lz[256], back[256];
    snprintf(raw, sizeof raw, "%s", test_path("q.raw"));
    snprintf(lz, sizeof lz, "%s", test_path("q.lz4"));
    snprintf(back, sizeof back, "%s", test_path("q.back"));
    tool_result a = tool_run("dump", model, "q", "--format", "raw", "-o", raw, NULL);
    tool_result b = tool_run("dump", model, "q", "-o", lz, NULL); /* lz4 from the extension */
    cr_assert(a.status == 0 && b.status == 0, "%s %s", a.err, b.err);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "lz4 -d -c -q '%s' > '%s'", lz, back);
    cr_assert_eq(system(cmd), 0, "lz4 -d failed on the dump");
    size_t n_raw, n_back;
    char *x = read_all(raw, &n_raw), *y = read_all(back, &n_back);
    cr_assert_eq(n_raw, Q_ROWS * Q_COLS * 4);
    cr_assert_eq(n_back, n_raw);
    cr_assert_eq(memcmp(x, y, n_raw), 0);
    float first;
    memcpy(&first, x, 4);
    cr_assert_eq(first, q_value(0, 0));
    free(x);
    free(y);
    tool_result_free(&a);
    tool_result_free(&b);
}

Test(cli_dump, raw_to_stdout_is_the_floats)
{
    const char *model = write_model();
    tool_result r = tool_run("dump", model, "v", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, sizeof values_v);
    cr_assert_eq(memcmp(r.out, values_v, sizeof values_v), 0);
    tool_result_free(&r);
    if (undecodable() != TM_TYPE_F32) {
        r = tool_run("dump", model, "odd", "-o", test_path("odd.npy"), NULL);
        cr_assert_eq(r.status, 1, "a type without a decoder: the dump must fail");
        cr_assert(strstr(r.err, "odd") && strstr(r.err, "no decoder"), "%s", r.err);
        tool_result_free(&r);
    }
}

Test(cli_dump, stats_match_numbers_worked_out_here)
{
    const char *model = write_model();
    double sum = 0, m2 = 0, lo = INFINITY, hi = -INFINITY;
    unsigned finite = 0, nan = 0, inf = 0;
    for (unsigned i = 0; i < 20; i++) {
        float x = values_v[i];
        if (isnan(x)) {
            nan++;
        } else if (isinf(x)) {
            inf++;
        } else {
            sum += x, finite++;
            lo = fmin(lo, x), hi = fmax(hi, x);
        }
    }
    double mean = sum / finite;
    for (unsigned i = 0; i < 20; i++)
        if (isfinite(values_v[i]))
            m2 += (values_v[i] - mean) * (values_v[i] - mean);
    double sd = sqrt(m2 / finite);

    json_t *j = tool_json(0, "stats", "--json", model, "v", NULL);
    const json_t *s = json_array_get(j, 0);
    cr_assert_eq(json_u64(s, "count"), 20);
    cr_assert_eq(json_u64(s, "nan"), nan);
    cr_assert_eq(json_u64(s, "inf"), inf);
    cr_assert_eq(json_real_value(json_object_get(s, "min")), lo);
    cr_assert_eq(json_real_value(json_object_get(s, "max")), hi);
    cr_assert_float_eq(json_real_value(json_object_get(s, "mean")), mean, 1e-12);
    cr_assert_float_eq(json_real_value(json_object_get(s, "std")), sd, 1e-12);
    const json_t *first = json_object_get(s, "first");
    cr_assert_eq(json_array_size(first), 8);
    cr_assert_eq(json_real_value(json_array_get(first, 1)), -2.25);
    cr_assert_str_eq(json_string_value(json_array_get(first, 4)), "nan:0x7fc00000");
    uint64_t in_hist = 0;
    for (size_t b = 0; b < json_array_size(json_object_get(s, "histogram")); b++)
        in_hist += (uint64_t)json_integer_value(json_array_get(json_object_get(s, "histogram"), b));
    cr_assert_eq(in_hist, finite);
    json_decref(j);

    /* all tensors: one line each, and the undecodable one says so without failing the rest */
    tool_result r = tool_run("stats", model, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *odd = strstr(r.out, "\nodd ");
    cr_assert_not_null(odd, "%s", r.out);
    if (undecodable() != TM_TYPE_F32)
        cr_assert(strstr(odd, tm_type_name(undecodable())), "%s", r.out);
    cr_assert(strstr(r.out, "\nq "), "%s", r.out);
    tool_result_free(&r);
}

/* Whether the library decodes the type ggml spells type_name. */
static bool decodable_named(const char *type_name)
{
    for (unsigned id = 0; id < 256; id++)
        if (tm_type_name((tm_type)id) && strcmp(tm_type_name((tm_type)id), type_name) == 0)
            return tm_type_can_dequant((tm_type)id);
    cr_assert_fail("no type is named %s", type_name);
    return false;
}

/* ggml's own decoded values (golden-a.f32, placed by golden-a.tsv) against `dump --all`: every
 * tensor the library can decode must come out bit for bit. */
Test(cli_dump, dump_all_of_the_golden_file_is_what_ggml_decoded)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char gguf[512], f32[512], tsv[512], dir[256];
    snprintf(gguf, sizeof gguf, "%s/golden/golden-a.gguf", corpus);
    snprintf(f32, sizeof f32, "%s/golden/golden-a.f32", corpus);
    snprintf(tsv, sizeof tsv, "%s/golden/golden-a.tsv", corpus);
    snprintf(dir, sizeof dir, "%s", test_path("all"));
    tool_result r = tool_run("dump", "--all", "--format", "raw", gguf, "-o", dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_ref;
    char *ref = read_all(f32, &n_ref), *lines = read_all(tsv, NULL);
    unsigned compared = 0;
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n")) {
        char name[128], type[32];
        unsigned long long off, n;
        if (sscanf(line, "%127s %31s %*s %*s %*s %*s %*s %llu %llu", name, type, &off, &n) != 4)
            continue; /* the column heads */
        char path[512];
        snprintf(path, sizeof path, "%s/%s.f32", dir, name);
        FILE *probe = fopen(path, "rb");
        /* a type without a decoder is skipped (dump says so); every other must be there */
        cr_assert(probe || !decodable_named(type), "%s (%s) was not dumped", name, type);
        if (!probe)
            continue;
        fclose(probe);
        size_t len;
        char *got = read_all(path, &len);
        cr_assert_eq(len, n * 4, "%s: %zu bytes, expected %llu", name, len, n * 4);
        cr_assert_leq(off + len, n_ref);
        cr_assert_eq(memcmp(got, ref + off, len), 0, "%s (%s) differs from ggml's values", name,
                     type);
        free(got);
        compared++;
    }
    cr_assert_geq(compared, 2 * 13, "only %u tensors were dumped", compared); /* f32..q6_K, bf16 */
    free(ref);
    free(lines);
}

/* dump --all's file names are unique and give the name back: tensors whose names differ only in
 * what a file name cannot hold ("a/b" against "a_b" and "a%2Fb"), a leading dot, a control
 * byte, and two 300-byte names that differ only after the first 200 bytes each get their own
 * file, named as the help says (worked out here), holding their own values. */
Test(cli_dump, dump_all_gives_every_tensor_its_own_file)
{
    char long_a[301], long_b[301];
    memset(long_a, 'x', 300);
    memset(long_b, 'x', 300);
    long_a[300] = long_b[300] = '\0';
    long_b[299] = 'y';
    const char *names[] = {"a/b", "a_b", "a%2Fb", ".hidden", "tab\there", long_a, long_b};
    const char *files[] = {"a%2Fb", "a_b", "a%252Fb", "%2Ehidden", "tab%09here", NULL, NULL};
    enum { N = sizeof names / sizeof names[0] };
    tb b = {0};
    tb_head(&b, 3, N, 0);
    const uint64_t ne[1] = {8};
    for (unsigned i = 0; i < N; i++)
        tb_info(&b, names[i], 1, ne, TM_TYPE_F32, i * 32);
    tb_pad(&b, 32);
    for (unsigned i = 0; i < N; i++)
        for (unsigned k = 0; k < 8; k++) {
            float v = (float)(i * 100 + k);
            tb_bytes(&b, &v, sizeof v);
        }
    const char *model = test_path("names.gguf"), *dir = test_path("out");
    cr_assert_eq(tb_write(&b, model), 0);
    tb_free(&b);
    tool_result r = tool_run("dump", "--all", "--format", "raw", model, "-o", dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);

    /* the long names: 200 'x', then ~ and the FNV-1a hash of all 300 bytes */
    char hashed[2][220];
    for (unsigned j = 0; j < 2; j++) {
        const char *nm = j ? long_b : long_a;
        uint64_t h = 14695981039346656037ull;
        for (size_t i = 0; i < 300; i++)
            h = (h ^ (unsigned char)nm[i]) * 1099511628211ull;
        snprintf(hashed[j], sizeof hashed[j], "%.200s~%016llx", nm, (unsigned long long)h);
        files[N - 2 + j] = hashed[j];
    }
    cr_assert_str_neq(hashed[0], hashed[1]);
    unsigned found = 0;
    for (unsigned i = 0; i < N; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.f32", dir, files[i]);
        size_t len;
        char *got = read_all(path, &len);
        cr_assert_eq(len, 8 * sizeof(float), "%s", path);
        float v[8];
        memcpy(v, got, sizeof v);
        free(got);
        for (unsigned k = 0; k < 8; k++)
            cr_assert_eq(v[k], (float)(i * 100 + k), "%s holds another tensor's values", path);
        found++;
    }
    cr_assert_eq(found, N);
    char *ls = NULL;
    int st;
    cr_assert_gt(asprintf(&ls, "ls -A '%s' | wc -l", dir), 0);
    char *count = shell_output(ls, &st);
    cr_assert_eq(atoi(count), N, "the directory holds %s files, not %d", count, N);
    free(count);
    free(ls);
}
