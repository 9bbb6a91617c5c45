/* tensormap export and what it stands on: float32 to f16/bf16 rounding against independent
 * references, the safetensors writer, and the command end to end — ggml's golden files back
 * as float32 bit for bit, and llama.cpp's conversion of a bf16 checkpoint (llama_pair.h) back
 * to the checkpoint's own bytes. */
#include "support/llama_pair.h"
#include "support/test_cli.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- rounding ------------------------------------------------------------------------------ */

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f16_of(float f)
{
    uint16_t h;
    tm_f32_to_f16(&f, &h, 1);
    return h;
}

static uint16_t bf16_of(float f)
{
    uint16_t h;
    tm_f32_to_bf16(&f, &h, 1);
    return h;
}

/* The compiler's own IEEE conversion (to nearest even) to binary16, for every non-NaN value
 * (_Float16 is an ISO/IEC TS 18661-3 type: __extension__ for -Wpedantic). */
__extension__ typedef _Float16 half_float;

static uint16_t f16_reference(float f)
{
    half_float h = (half_float)f;
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}

/* bfloat16 by distances in double: the two neighbours of f with 8 significant bits (truncation
 * and the next one up, in magnitude), the nearer one, the even one on a tie. */
static uint16_t bf16_reference(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    const double x = fabs((double)f), a = fabs((double)from_bits((uint32_t)lo << 16));
    double b = fabs((double)from_bits((uint32_t)hi << 16));
    if ((hi & 0x7f80) == 0x7f80) /* the next one up is infinity: it lies at 2^128 */
        b = ldexp(1.0, 128);
    return x - a < b - x ? lo : x - a > b - x ? hi : (lo & 1) ? hi : lo;
}

Test(export_rounding, f16_edge_cases)
{
    static const struct { uint32_t in; uint16_t out; const char *what; } cases[] = {
        {0x3f800000, 0x3c00, "1"},
        {0x3f801000, 0x3c00, "1 + 2^-11: a tie, to the even 1"},
        {0x3f803000, 0x3c02, "1 + 3 * 2^-11: a tie, to the even 1 + 2^-9"},
        {0x3f801001, 0x3c01, "just above the tie: up"},
        {0x477fe000, 0x7bff, "65504, the largest half"},
        {0x477fefff, 0x7bff, "just below 65520: down"},
        {0x477ff000, 0x7c00, "65520: a tie with 65536, to the even infinity"},
        {0x7f7fffff, 0x7c00, "FLT_MAX: infinity"},
        {0x7f800000, 0x7c00, "infinity"},
        {0xff800000, 0xfc00, "-infinity"},
        {0x38800000, 0x0400, "2^-14, the smallest normal half"},
        {0x387ff000, 0x0400, "a subnormal half that rounds up to the smallest normal one"},
        {0x33800000, 0x0001, "2^-24, the smallest subnormal half"},
        {0x33000000, 0x0000, "2^-25: a tie with 0, to the even 0"},
        {0x33000001, 0x0001, "just above 2^-25: up"},
        {0x33c00000, 0x0002, "3 * 2^-25: a tie, to the even 2 * 2^-24"},
        {0x00000001, 0x0000, "the smallest float: 0"},
        {0x80000000, 0x8000, "-0"},
        {0xb3800000, 0x8001, "-2^-24"},
        {0x7fc00000, 0x7e00, "a quiet NaN"},
        {0x7f800001, 0x7e00, "a signalling NaN: quiet"},
        {0xffc00001, 0xfe00, "a negative NaN keeps its sign"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(f16_of(from_bits(cases[i].in)), cases[i].out, "%s: 0x%08x gave 0x%04x, not 0x%04x",
                     cases[i].what, cases[i].in, f16_of(from_bits(cases[i].in)), cases[i].out);
}

Test(export_rounding, bf16_edge_cases)
{
    static const struct { uint32_t in; uint16_t out; const char *what; } cases[] = {
        {0x3f808000, 0x3f80, "1 + 2^-8: a tie, to the even 1"},
        {0x3f818000, 0x3f82, "1 + 3 * 2^-8: a tie, to the even one above"},
        {0x3f808001, 0x3f81, "just above the tie: up"},
        {0x7f7f7fff, 0x7f7f, "just below the tie under FLT_MAX"},
        {0x7f7f8000, 0x7f80, "the tie between the largest bf16 and 2^128: infinity"},
        {0x7f7fffff, 0x7f80, "FLT_MAX: infinity"},
        {0xff800000, 0xff80, "-infinity"},
        {0x00018000, 0x0002, "a subnormal tie, to the even one"},
        {0x00008000, 0x0000, "half the smallest subnormal bf16: a tie with 0"},
        {0x00008001, 0x0001, "just above it: up"},
        {0x80000000, 0x8000, "-0"},
        {0x7f800001, 0x7fc0, "a NaN whose payload is in the low half stays NaN"},
        {0xffc12345, 0xffc0, "a negative NaN keeps its sign"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(bf16_of(from_bits(cases[i].in)), cases[i].out, "%s: 0x%08x gave 0x%04x, not 0x%04x",
                     cases[i].what, cases[i].in, bf16_of(from_bits(cases[i].in)), cases[i].out);
}

/* Every exponent and sign, with the low mantissa bits on both sides of both formats' rounding
 * points, and a stride through all 2^32 patterns. */
Test(export_rounding, against_references_across_the_range)
{
    static const uint32_t low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000,
                                   0x3000, 0x7fff, 0x8000, 0x8001, 0xffff, 0x18000, 0x10000};
    uint64_t checked = 0;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t e = 0; e < 255; e++)
            for (uint32_t hi = 0; hi < 8; hi++)
                for (size_t k = 0; k < sizeof low / sizeof low[0]; k++) {
                    uint32_t u = sign << 31 | e << 23 | (hi * 0x0f0000u & 0x7f0000u) | low[k];
                    float f = from_bits(u);
                    cr_assert_eq(f16_of(f), f16_reference(f), "f16 of 0x%08x", u);
                    cr_assert_eq(bf16_of(f), bf16_reference(f), "bf16 of 0x%08x", u);
                    checked++;
                }
    for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 65521) { /* a prime stride */
        float f = from_bits((uint32_t)u);
        if (isnan(f))
            continue;
        cr_assert_eq(f16_of(f), f16_reference(f), "f16 of 0x%08x", (uint32_t)u);
        cr_assert_eq(bf16_of(f), bf16_reference(f), "bf16 of 0x%08x", (uint32_t)u);
        checked++;
    }
    cr_expect_gt(checked, 100000);
}

/* ---- the safetensors writer ------------------------------------------------------------------ */

Test(export_writer, layout_as_the_reference_writes_it)
{
    const char *path = test_path("w.safetensors");
    tm_st_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_st_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_st_writer_meta(w, "format", "pt", &err), TM_OK, "%s", err.message);
    const uint64_t s1[2] = {2, 3}, s2[1] = {5};
    cr_assert_eq(tm_st_writer_tensor(w, "a", TM_TYPE_F32, 2, s1, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_st_writer_tensor(w, "b", TM_TYPE_BF16, 1, s2, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_st_writer_tensor(w, "a", TM_TYPE_F32, 2, s1, &err), TM_DUPLICATE);
    cr_expect_eq(tm_st_writer_tensor(w, "q", TM_TYPE_Q4_K, 1, s2, &err), TM_UNSUPPORTED);
    cr_expect_eq(tm_st_writer_tensor(w, "\xff", TM_TYPE_F32, 1, s2, &err), TM_BAD_VALUE);
    cr_expect_eq(tm_st_writer_meta(w, "late", "x", &err), TM_INVALID_ARG, "metadata after a tensor");
    cr_expect_eq(tm_st_writer_data_size(w), 6 * 4 + 5 * 2);
    cr_assert_eq(tm_st_writer_begin(w, path, &err), TM_OK, "%s", err.message);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "nothing at the path before finish");
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const uint16_t b[5] = {0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0};
    cr_assert_eq(tm_st_writer_write(w, a, 10, &err), TM_OK);
    cr_assert_eq(tm_st_writer_write(w, (const char *)a + 10, sizeof a - 10, &err), TM_OK);
    cr_assert_eq(tm_st_writer_write(w, b, sizeof b, &err), TM_OK);
    cr_expect_eq(tm_st_writer_write(w, b, 1, &err), TM_INVALID_ARG, "one byte too many");
    cr_assert_eq(tm_st_writer_finish(w, &err), TM_OK, "%s", err.message);

    size_t len;
    char *bytes = read_all(path, &len);
    uint64_t hlen = 0;
    memcpy(&hlen, bytes, 8);
    cr_expect_eq(hlen % 8, 0, "header length %" PRIu64 " is padded to 8", hlen);
    cr_expect_eq(len, 8 + hlen + sizeof a + sizeof b);
    const char *expect = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":"
                         "[2,3],\"data_offsets\":[0,24]},\"b\":{\"dtype\":\"BF16\",\"shape\":[5],"
                         "\"data_offsets\":[24,34]}}";
    cr_expect(strncmp(bytes + 8, expect, strlen(expect)) == 0, "%.*s", (int)hlen, bytes + 8);
    for (size_t i = 8 + strlen(expect); i < 8 + hlen; i++)
        cr_expect_eq(bytes[i], ' ', "padding byte %zu", i);
    cr_expect_eq(memcmp(bytes + 8 + hlen, a, sizeof a), 0);
    cr_expect_eq(memcmp(bytes + 8 + hlen + sizeof a, b, sizeof b), 0);
    free(bytes);

    tm_file *f;
    cr_assert_eq(tm_open(path, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), 2);
    tm_close(f);
}

Test(export_writer, null_arguments_are_refused_not_followed)
{
    tm_error err = {0};
    const uint64_t shape[1] = {4};
    cr_expect_eq(tm_st_writer_new(NULL, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_meta(NULL, "k", "v", &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_tensor(NULL, "a", TM_TYPE_F32, 1, shape, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_begin(NULL, test_path("n.safetensors"), &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_write(NULL, shape, 4, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_finish(NULL, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_data_size(NULL), 0);
    cr_expect_null(tm_st_writer_temp_path(NULL));
    tm_st_writer *w;
    cr_assert_eq(tm_st_writer_new(&w, &err), TM_OK);
    cr_expect_eq(tm_st_writer_meta(w, NULL, "v", &err), TM_INVALID_ARG);
    cr_expect(strstr(err.message, "tm_st_writer_meta: the key is NULL"), "%s", err.message);
    cr_expect_eq(tm_st_writer_tensor(w, NULL, TM_TYPE_F32, 1, shape, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_tensor(w, "a", TM_TYPE_F32, 1, NULL, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_tensor(w, "a", TM_TYPE_F32, 1, shape, &err), TM_OK, "%s",
                 err.message);
    cr_expect_eq(tm_st_writer_begin(w, NULL, &err), TM_INVALID_ARG);
    cr_assert_eq(tm_st_writer_begin(w, test_path("n.safetensors"), &err), TM_OK, "%s",
                 err.message);
    cr_expect_eq(tm_st_writer_write(w, NULL, 16, &err), TM_INVALID_ARG);
    cr_expect_eq(tm_st_writer_write(w, NULL, 0, &err), TM_OK, "nothing to write needs no bytes");
    tm_st_writer_free(w);
}

Test(export_writer, an_unfinished_file_leaves_nothing)
{
    const char *path = test_path("keep.safetensors");
    FILE *old = fopen(path, "wb");
    cr_assert_not_null(old);
    fputs("the user's file", old);
    fclose(old);
    tm_st_writer *w;
    tm_error err = {0};
    const uint64_t s[1] = {4};
    cr_assert_eq(tm_st_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_st_writer_tensor(w, "t", TM_TYPE_F32, 1, s, &err), TM_OK);
    cr_assert_eq(tm_st_writer_begin(w, path, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_st_writer_write(w, "12345678", 8, &err), TM_OK);
    cr_expect_eq(tm_st_writer_finish(w, &err), TM_INVALID_ARG, "8 of 16 bytes");
    size_t len;
    char *bytes = read_all(path, &len);
    cr_expect(len == 15 && memcmp(bytes, "the user's file", 15) == 0, "the old file is intact");
    free(bytes);
    DIR *d = opendir(test_dir());
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        cr_expect(!strstr(e->d_name, "keep") || strcmp(e->d_name, "keep.safetensors") == 0,
                  "%s is left behind", e->d_name);
    closedir(d);
}

/* ---- export, end to end -------------------------------------------------------------------- */

#define GOLDEN "../shared/corpus/golden/"

/* Every tensor of a golden file (every type ggml decodes): exported as f32, each equals ggml's
 * decoded values. */
static void golden_round_trip(const char *stem)
{
    char gguf[256], f32[256], tsv[256];
    snprintf(gguf, sizeof gguf, GOLDEN "%s.gguf", stem);
    snprintf(f32, sizeof f32, GOLDEN "%s.f32", stem);
    snprintf(tsv, sizeof tsv, GOLDEN "%s.tsv", stem);
    const char *out = test_path("golden.safetensors");
    tool_result r = tool_run("export", gguf, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tm_file *src, *dst;
    tm_error err = {0};
    cr_assert_eq(tm_open(gguf, TM_OPEN_DEFAULT, &src, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(out, TM_OPEN_DEFAULT, &dst, &err), TM_OK, "%s", err.message);
    size_t f32_len;
    char *values = read_all(f32, &f32_len);
    FILE *t = fopen(tsv, "r");
    cr_assert_not_null(t);
    char line[512], name[256], type[32];
    unsigned long long off, n, exported = 0, rows = 0; /* off: bytes into FILE.f32 */
    while (fgets(line, sizeof line, t)) {
        if (sscanf(line, "%255s %31s %*s %*s %*s %*s %*s %llu %llu", name, type, &off, &n) != 4)
            continue;
        const tm_tensor *s = tm_tensor_find(src, name), *d = tm_tensor_find(dst, name);
        cr_assert_not_null(s, "%s", name);
        rows++;
        cr_assert_not_null(d, "%s (%s) is exported", name, type);
        cr_expect_eq(d->type, TM_TYPE_F32);
        cr_expect_eq(d->n_elements, n, "%s", name);
        cr_assert_leq(off + n * 4, f32_len);
        cr_expect_eq(memcmp(d->data, values + off, n * 4), 0, "%s (%s) differs from ggml's values",
                     name, type);
        uint64_t shape[4];
        uint32_t nd = tm_tensor_shape(d, shape);
        cr_expect_eq(nd, s->n_dims, "%s", name);
        for (uint32_t k = 0; k < nd; k++)
            cr_expect_eq(shape[k], s->ne[nd - 1 - k], "%s: dimension %u in PyTorch order", name, k);
        exported++;
    }
    fclose(t);
    cr_expect_eq(exported, rows);
    cr_expect_eq(tm_n_tensors(dst), tm_n_tensors(src), "every tensor, nothing else");
    cr_expect_eq(rows, 58, "the golden files hold 58 tensors");
    free(values);
    tm_close(src);
    tm_close(dst);
    tool_result_free(&r);
}

Test(export, golden_a_as_f32_is_ggmls_values) { golden_round_trip("golden-a"); }
Test(export, golden_b_as_f32_is_ggmls_values) { golden_round_trip("golden-b"); }

/* The checkpoint's tensors, by name, byte for byte in the export. */
static void expect_checkpoint_bytes(const char *exported, int with_lm_head)
{
    tm_file *a, *b;
    tm_error err = {0};
    cr_assert_eq(tm_open(st_path, TM_OPEN_DEFAULT, &a, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(exported, TM_OPEN_DEFAULT, &b, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(b), tm_n_tensors(a));
    for (uint64_t i = 0; i < tm_n_tensors(a); i++) {
        const tm_tensor *x = tm_tensor_at(a, i);
        const tm_tensor *y = tm_tensor_findn(b, x->name.ptr, (size_t)x->name.len);
        cr_assert_not_null(y, "%.*s is exported", (int)x->name.len, x->name.ptr);
        cr_expect_eq(y->type, TM_TYPE_BF16);
        cr_expect(x->n_bytes == y->n_bytes && memcmp(x->data, y->data, x->n_bytes) == 0,
                  "%.*s: the checkpoint's bytes", (int)x->name.len, x->name.ptr);
        for (int d = 0; d < 4; d++)
            cr_expect_eq(x->ne[d], y->ne[d], "%.*s", (int)x->name.len, x->name.ptr);
    }
    cr_expect_eq(tm_tensor_find(b, "lm_head.weight") != NULL, with_lm_head != 0);
    tm_str fmt;
    cr_expect_eq(tm_kv_get_str(tm_kv_find(b, "format"), &fmt), TM_OK);
    cr_expect(fmt.len == 2 && memcmp(fmt.ptr, "pt", 2) == 0);
    cr_expect_eq(tm_kv_get_str(tm_kv_find(b, "general.architecture"), &fmt), TM_OK,
                 "general.* strings go to __metadata__");
    tm_close(a);
    tm_close(b);
}

Test(export, llama_conversion_back_to_the_checkpoint, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.lm_head = 1});
    const char *out = test_path("back.safetensors");
    tool_result r = tool_run("export", "--names", "hf", "--dtype", "bf16", gguf_path, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "left out: rope_freqs.weight"), "%s", r.out);
    expect_checkpoint_bytes(out, 1);
    tool_result c = tool_run("compare", st_path, out, NULL);
    cr_expect_eq(c.status, 0, "compare passes on the pair:\n%s%s", c.out, c.err);
    tool_result_free(&c);
    tool_result_free(&r);
}

Test(export, tied_embedding_writes_no_lm_head, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.drop_output = 1});
    const char *out = test_path("tied.safetensors");
    tool_result r = tool_run("export", "--names=hf", "--dtype=bf16", gguf_path, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "no lm_head.weight"), "%s", r.out);
    expect_checkpoint_bytes(out, 0);
    tool_result_free(&r);
}

Test(export, qwen2_names_without_permutation, .init = pair_setup, .fini = pair_teardown)
{
    /* qwen2 is converted without the permutation: its rows come back as the file has them */
    write_pair(&(variant){.arch = "qwen2", .lm_head = 1});
    const char *out = test_path("qwen.safetensors");
    tool_result r = tool_run("export", "--names", "hf", "--dtype", "bf16", gguf_path, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tm_file *g, *e;
    tm_error err = {0};
    cr_assert_eq(tm_open(gguf_path, TM_OPEN_DEFAULT, &g, &err), TM_OK);
    cr_assert_eq(tm_open(out, TM_OPEN_DEFAULT, &e, &err), TM_OK);
    const tm_tensor *q = tm_tensor_find(g, "blk.0.attn_q.weight");
    const tm_tensor *hq = tm_tensor_find(e, "model.layers.0.self_attn.q_proj.weight");
    cr_assert(q && hq);
    cr_expect_eq(memcmp(q->data, hq->data, q->n_bytes), 0, "rows in the file's order");
    tm_close(g);
    tm_close(e);
    tool_result_free(&r);
}

Test(export, sharded_with_an_index, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){.lm_head = 1});
    char out[256];
    snprintf(out, sizeof out, "%s/shards", test_dir());
    /* the embedding and lm_head are 160 bytes each, a layer's tensors 16..256 bytes */
    tool_result r = tool_run("export", "--names", "hf", "--dtype", "bf16", "--max-shard-size",
                             "600", gguf_path, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char index[300];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", out);
    json_error_t je;
    json_t *j = json_load_file(index, 0, &je);
    cr_assert_not_null(j, "%s", je.text);
    json_t *map = json_object_get(j, "weight_map");
    cr_expect_eq(json_object_size(map), (size_t)n_specs + 1);
    uint64_t total = 0, files = 0;
    for (int i = 0; i < n_specs; i++)
        total += specs[i].rows * (specs[i].cols ? specs[i].cols : 1) * 2;
    total += VOCAB * EMBD * 2; /* lm_head */
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "metadata"), "total_size")),
                 (json_int_t)total);
    const char *key;
    json_t *v;
    json_object_foreach(map, key, v) {
        unsigned k, n;
        cr_assert_eq(sscanf(json_string_value(v), "model-%5u-of-%5u.safetensors", &k, &n), 2,
                     "%s", json_string_value(v));
        cr_expect(k >= 1 && k <= n);
        files = n;
        char shard[512];
        snprintf(shard, sizeof shard, "%s/%s", out, json_string_value(v));
        struct stat st;
        cr_expect_eq(stat(shard, &st), 0, "%s", shard);
        cr_expect_leq(st.st_size, 600 + 4096, "%s", shard);
    }
    cr_expect_gt(files, 1, "more than one shard");
    json_decref(j);
    /* the index opens as one checkpoint, equal to the original */
    expect_checkpoint_bytes(index, 1);
    tool_result_free(&r);
}

Test(export, refusals, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    tool_result r = tool_run("export", gguf_path, gguf_path, NULL);
    cr_expect_eq(r.status, 1, "over its own input");
    cr_expect(strstr(r.err, "same file"), "%s", r.err);
    tool_result_free(&r);
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(gguf_path, TM_OPEN_DEFAULT, &f, &err), TM_OK, "the input is intact");
    tm_close(f);

    r = tool_run("export", "--names", "hf", GOLDEN "golden-a.gguf", test_path("x.st"), NULL);
    cr_expect_eq(r.status, 1, "--names hf on an architecture the map does not know");
    cr_expect(strstr(r.err, "llama and qwen2"), "%s", r.err);
    tool_result_free(&r);

    r = tool_run("export", "--dtype", "f8", gguf_path, test_path("x.st"), NULL);
    cr_expect_eq(r.status, 2);
    tool_result_free(&r);
    r = tool_run("export", "--max-shard-size", "5XB", gguf_path, test_path("x.st"), NULL);
    cr_expect_eq(r.status, 2);
    tool_result_free(&r);

    /* a type with no decoder is refused by name, and nothing is written */
    tm_writer *w;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    const uint64_t ne[1] = {256};
    cr_assert_eq(tm_writer_tensor(w, "acts", TM_TYPE_Q8_K, 1, ne, NULL, &err), TM_OK, "%s",
                 err.message);
    const char *q8k = test_path("q8k.gguf"), *out = test_path("q8k.safetensors");
    cr_assert_eq(tm_writer_finish(w, q8k, &err), TM_OK, "%s", err.message);
    r = tool_run("export", q8k, out, NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "q8_K") && strstr(r.err, "acts"), "%s", r.err);
    struct stat st;
    cr_expect_neq(stat(out, &st), 0, "no file written");
    tool_result_free(&r);
    r = tool_run("export", "--skip-undecodable", q8k, out, NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "left out: acts (q8_K has no decoder)"), "%s", r.out);
    tool_result_free(&r);
}

Test(export, tensors_pattern, .init = pair_setup, .fini = pair_teardown)
{
    write_pair(&(variant){0});
    const char *out = test_path("norms.safetensors");
    tool_result r = tool_run("export", "--tensors", "*norm*", gguf_path, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tm_file *f;
    tm_error err = {0};
    cr_assert_eq(tm_open(out, TM_OPEN_DEFAULT, &f, &err), TM_OK, "%s", err.message);
    cr_expect_eq(tm_n_tensors(f), (uint64_t)(2 * LAYERS + 1));
    cr_expect_not_null(tm_tensor_find(f, "blk.1.ffn_norm.weight"), "--names gguf keeps names");
    tm_close(f);
    tool_result_free(&r);
}

TestSuite(export, .fini = test_cleanup);
TestSuite(export_writer, .fini = test_cleanup);
