/* header / write --from-header, tokens, sketch, ollama: resolution and the man page. The header
 * round trip is held against ggml's own golden files byte for byte; a multi-gigabyte sparse
 * file is made from a header written here by hand. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

TestSuite(cli_header, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* header --arrays -> JSON -> write: bytes [0, data_start) identical to the original. */
static void round_trip(const char *golden)
{
    char src[512], json[256], out[256];
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    snprintf(src, sizeof src, "%s/golden/%s", corpus, golden);
    snprintf(json, sizeof json, "%s", test_path("h.json"));
    snprintf(out, sizeof out, "%s", test_path("back.gguf"));
    tool_result r = tool_run("header", "--arrays", src, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    write_text(json, r.out);
    json_t *h = json_loads(r.out, 0, NULL);
    uint64_t data_start = json_u64(h, "data_start");
    json_decref(h);
    tool_result_free(&r);
    r = tool_run("write", "--from-header", json, out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_a, n_b;
    char *a = read_all(src, &n_a), *b = read_all(out, &n_b);
    cr_assert_eq(n_a, n_b, "the file sizes differ: %zu and %zu", n_a, n_b);
    for (uint64_t i = 0; i < data_start; i++)
        cr_assert_eq(a[i], b[i], "%s: byte %llu differs", golden, (unsigned long long)i);
    free(a);
    free(b);
    tool_result c = tool_run("check", out, NULL);
    cr_assert_eq(c.status, 0, "check calls the written file inconsistent:\n%s", c.out);
    tool_result_free(&c);
}

Test(cli_header, golden_a_header_round_trips_byte_for_byte)
{
    round_trip("golden-a.gguf");
}
Test(cli_header, golden_b_header_round_trips_byte_for_byte)
{
    round_trip("golden-b.gguf");
}

Test(cli_header, a_header_without_arrays_keeps_its_length)
{
    const char *src = test_path("tok.gguf");
    tm_writer *w;
    tm_error err;
    static const char *const toks[] = {"alpha", "b", "gamma ray"};
    static const int32_t types[] = {1, 2, 3};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", toks, NULL, 3, &err), &err);
    ok(tm_writer_kv_array(w, "tokenizer.ggml.token_type", TM_V_I32, types, 3, &err), &err);
    ok(tm_writer_finish(w, src, &err), &err);
    json_t *h = tool_json(0, "header", src, NULL);
    cr_assert_null(json_object_get(json_array_get(json_object_get(h, "kv"), 0), "values"));
    char json[256];
    snprintf(json, sizeof json, "%s", test_path("h.json"));
    char *text = json_dumps(h, 0);
    write_text(json, text);
    free(text);
    tool_result r = tool_run("write", "--from-header", json, test_path("back.gguf"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    json_t *back = tool_json(0, "header", test_path("back.gguf"), NULL);
    cr_assert_eq(json_u64(back, "data_start"), json_u64(h, "data_start"));
    cr_assert_eq(json_u64(back, "file_size"), json_u64(h, "file_size"));
    const json_t *kv = json_array_get(json_object_get(back, "kv"), 0);
    cr_assert_eq(json_u64(kv, "count"), 3);
    cr_assert_eq(json_u64(kv, "bytes"), 3 * 8 + 5 + 1 + 9);
    json_decref(h);
    json_decref(back);
}

/* 4 GiB of f16 in two blocks plus a small norm, described by hand, written as a hole. */
Test(cli_header, a_multi_gigabyte_sparse_file_from_a_header)
{
    const char *json = test_path("big.json");
    write_text(
        json,
        "{\"version\": 3, \"alignment\": 32, \"data_size\": 4294971392,\n"
        " \"kv\": [{\"key\": \"general.architecture\", \"type\": \"str\", \"value\": \"big\"},\n"
        "        {\"key\": \"big.block_count\", \"type\": \"u32\", \"value\": 2}],\n"
        " \"tensors\": [\n"
        "  {\"name\": \"blk.0.ffn.weight\", \"type_id\": 1, \"ne\": [65536, 16384], \"data_offset\": "
        "0},\n"
        "  {\"name\": \"blk.1.ffn.weight\", \"type_id\": 1, \"ne\": [65536, 16384], \"data_offset\": "
        "2147483648},\n"
        "  {\"name\": \"norm.weight\", \"type_id\": 0, \"ne\": [1024], \"data_offset\": "
        "4294967296}]}\n");
    const char *big = test_path("big.gguf");
    tool_result r = tool_run("write", "--from-header", json, big, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    struct stat st;
    cr_assert_eq(stat(big, &st), 0);
    cr_assert_gt((uint64_t)st.st_size, 4294971392u);
    cr_assert_lt((uint64_t)st.st_blocks * 512, 1u << 20, "the data should be a hole");

    json_t *c = tool_json(0, "check", "--json", big, NULL);
    cr_assert_eq(json_u64(c, "tensor_bytes"), 2 * 65536ull * 16384 * 2 + 4096);
    cr_assert_eq(json_u64(c, "data_start") + json_u64(c, "tensor_bytes") +
                     json_u64(c, "alignment_padding"),
                 (uint64_t)st.st_size);
    json_decref(c);
    json_t *s = tool_json(0, "stack", "--json", big, NULL);
    cr_assert_eq(json_u64(s, "blocks"), 2);
    cr_assert_eq(json_u64(s, "stack_bytes"), 2 * 65536ull * 16384 * 2);
    cr_assert_eq(json_u64(s, "behind_bytes"), 4096);
    json_decref(s);
    json_t *l = tool_json(0, "layer", "--json", big, "1", NULL);
    cr_assert_eq(json_u64(l, "same_types_too"), 1);
    json_decref(l);
    r = tool_run("bytes", big, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    json_t *st_json = tool_json(0, "stats", "--json", big, "norm.weight", NULL);
    const json_t *n = json_array_get(st_json, 0);
    cr_assert_eq(json_u64(n, "count"), 1024);
    cr_assert_eq(json_real_value(json_object_get(n, "max")), 0.0);
    cr_assert_eq(json_real_value(json_object_get(n, "min")), 0.0);
    json_decref(st_json);
    r = tool_run("dump", big, "blk.1.ffn.weight", "--rows", "16382:16384", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, 2 * 65536 * 4);
    for (size_t i = 0; i < r.out_len; i++)
        cr_assert_eq(r.out[i], 0);
    tool_result_free(&r);
}

Test(cli_header, write_refuses_a_bad_header_naming_the_entry)
{
    const char *json = test_path("bad.json");
    write_text(json,
               "{\"data_size\": 0, \"kv\": [{\"key\": \"a\", \"type\": \"u8\", \"value\": 300}],"
               " \"tensors\": []}");
    tool_result r = tool_run("write", "--from-header", json, test_path("x.gguf"), NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "kv 0 ('a')") && strstr(r.err, "not a u8"), "%s", r.err);
    tool_result_free(&r);
}

/* write --from-header: JSON that ends on the given values must be refused, naming them, and
 * no file written. */
static void expect_write_refused(const char *text, const char *words)
{
    const char *json = test_path("bad.json"), *out = test_path("refused.gguf");
    write_text(json, text);
    tool_result r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 1, "%s: exit %d, %s", text, r.status, r.err);
    cr_expect_not_null(strstr(r.err, words), "%s: stderr lacks \"%s\": %s", text, words, r.err);
    cr_expect_neq(access(out, F_OK), 0, "%s: %s was written", text, out);
    tool_result_free(&r);
}

/* A value that does not fit its field is refused, not truncated: a version of 2^32 + 3 (which
 * truncates to 3), a NaN payload of 65 bits (which saturates to 2^64 - 1), a "NaN" whose bits
 * are 1.0. */
Test(cli_header, write_refuses_values_that_do_not_fit_their_field)
{
    expect_write_refused("{\"version\": 4294967299, \"data_size\": 0, \"kv\": [], "
                         "\"tensors\": []}",
                         "\"version\" is not a u32");
    expect_write_refused("{\"data_size\": 0, \"kv\": [{\"key\": \"a\", \"type\": \"f64\", "
                         "\"value\": \"nan:0x1ffffffffffffffff\"}], \"tensors\": []}",
                         "not an f64");
    expect_write_refused("{\"data_size\": 0, \"kv\": [{\"key\": \"a\", \"type\": \"f64\", "
                         "\"value\": \"nan:0x3ff0000000000000\"}], \"tensors\": []}",
                         "not an f64");
    expect_write_refused("{\"data_size\": 0, \"kv\": [{\"key\": \"a\", \"type\": \"f32\", "
                         "\"value\": \"nan:0x7f800000\"}], \"tensors\": []}",
                         "not an f32");
}

/* The cap on placeholder arrays is on all of them together: two arrays of 600 MiB, each under
 * the 1 GiB cap, are refused at the second (before, 1.2 GB were allocated and written). */
Test(cli_header, write_caps_placeholder_arrays_in_total)
{
    expect_write_refused("{\"data_size\": 0, \"kv\": ["
                         "{\"key\": \"a\", \"type\": \"arr\", \"element_type\": \"u8\", "
                         "\"count\": 629145600}, "
                         "{\"key\": \"b\", \"type\": \"arr\", \"element_type\": \"u8\", "
                         "\"count\": 629145600}], \"tensors\": []}",
                         "kv 1 ('b'): 1258291200 bytes of placeholder arrays in all");
}

Test(cli_header, tokens_are_printed_escaped)
{
    const char *path = test_path("tokens.gguf");
    tm_writer *w;
    tm_error err;
    static const char *const toks[] = {"a\x01"
                                       "b",
                                       "tab\there", "\xff\xfe", "say \"hi\"", "\x1b[31m"};
    static const int32_t types[] = {1, 3, 6, 1, 4};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", toks, NULL, 5, &err), &err);
    ok(tm_writer_kv_array(w, "tokenizer.ggml.token_type", TM_V_I32, types, 5, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    tool_result r = tool_run("tokens", path, "5", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"a\\x01b\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"tab\\there\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"\\xff\\xfe\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"say \\\"hi\\\"\""), "%s", r.out);
    cr_assert(strstr(r.out, "\\x1b[31m"), "%s", r.out);
    cr_assert_null(strchr(r.out, '\x1b'), "a raw escape byte reached the terminal");
    cr_assert(strstr(r.out, "control") && strstr(r.out, "byte") && strstr(r.out, "user_defined"));
    tool_result_free(&r);
    json_t *j = tool_json(0, "tokens", "--json", path, "3", NULL);
    const json_t *t = json_object_get(j, "tokens");
    cr_assert_eq(json_array_size(t), 3);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(json_array_get(t, 2), "token"), "hex")),
        "fffe");
    json_decref(j);
}

Test(cli_header, sketch_shows_the_chapter_and_its_lesson)
{
    tool_result r = tool_run("sketch", test_path("s.gguf"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "327 + 57 + 24 = 408, and the file is 408"), "%s", r.out);
    cr_assert(strstr(r.out, "6 of 6 came back"), "%s", r.out);
    tool_result_free(&r);
    r = tool_run("sketch", "--noalign", test_path("s.gguf"), NULL);
    cr_assert_eq(r.status, 0, "the lesson is no error at all");
    cr_assert(strstr(r.out, "0 of 6 came back"), "%s", r.out);
    tool_result_free(&r);
    r = tool_run("sketch", "--align", "4096", test_path("s4096.gguf"), NULL);
    cr_assert_eq(r.status, 0);
    struct stat st;
    cr_assert_eq(stat(test_path("s4096.gguf"), &st), 0);
    cr_assert_eq(st.st_size, 4096 + 24);
    tool_result_free(&r);
}

/* A fake Ollama store: manifests/registry.ollama.ai/library/tiny/{latest,broken,lost}. */
static void make_store(const char *store, const char *model)
{
    static const char hex[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char cmd[2048], path[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/manifests/registry.ollama.ai/library/tiny' '%s/blobs' "
             "&& cp '%s' '%s/blobs/sha256-%s'",
             store, store, model, store, hex);
    cr_assert_eq(system(cmd), 0);
#define MANIFEST                                                                                   \
    "{\"schemaVersion\": 2, \"layers\": [{\"mediaType\": "                                         \
    "\"application/vnd.ollama.image.%s\", \"digest\": \"sha256:%s\"}]}"
    char text[1024];
    snprintf(path, sizeof path, "%s/manifests/registry.ollama.ai/library/tiny/latest", store);
    snprintf(text, sizeof text, MANIFEST, "model", hex);
    write_text(path, text);
    snprintf(path, sizeof path, "%s/manifests/registry.ollama.ai/library/tiny/broken", store);
    snprintf(text, sizeof text, MANIFEST, "license", hex);
    write_text(path, text);
    snprintf(path, sizeof path, "%s/manifests/registry.ollama.ai/library/tiny/lost", store);
    snprintf(text, sizeof text, MANIFEST, "model",
             "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
    write_text(path, text);
}

static void expect_error(const char *spec, const char *words)
{
    tool_result r = tool_run("check", spec, NULL);
    cr_assert_eq(r.status, 1, "%s", spec);
    cr_assert(strstr(r.out, words) || strstr(r.err, words), "%s: no '%s' in: %s%s", spec, words,
              r.out, r.err);
    tool_result_free(&r);
}

Test(cli_header, ollama_names_resolve_through_the_store)
{
    char store[256], model[256];
    snprintf(store, sizeof store, "%s", test_path("store"));
    snprintf(model, sizeof model, "%s", test_path("s.gguf"));
    tool_result r = tool_run("sketch", model, NULL);
    tool_result_free(&r);
    make_store(store, model);
    setenv("OLLAMA_MODELS", store, 1);
    r = tool_run("check", "ollama:tiny", NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    tool_result_free(&r);
    json_t *s = tool_json(0, "stack", "--json", "ollama:tiny:latest", NULL);
    cr_assert_eq(json_u64(s, "blocks"), 1);
    json_decref(s);
    expect_error("ollama:nothere", "no model 'nothere'");
    expect_error("ollama:tiny:broken", "no layer of media type application/vnd.ollama.image.model");
    expect_error("ollama:tiny:lost", "which is missing");
    expect_error("ollama:../../etc", "not a model name");
    r = tool_run("stack", "ollama:nothere", NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "no model 'nothere'"), "%s", r.err);
    tool_result_free(&r);
    setenv("OLLAMA_MODELS", test_path("no-store"), 1);
    expect_error("ollama:tiny", "no Ollama store");
}

Test(cli_header, the_man_page_comes_from_the_help_texts)
{
    tool_result r = tool_run("--man", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strncmp(r.out, ".TH TENSORMAP 1", 15) == 0, "%.80s", r.out);
    static const char *const cmds[] = {".SS stack\n", ".SS check, account\n", ".SS dump\n",
                                       ".SS write\n", ".SS sketch\n",         ".SS tokens\n"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        cr_assert(strstr(r.out, cmds[i]), "no %s", cmds[i]);
    cr_assert(strstr(r.out, "usage: tensormap dump [\\-\\-format raw|npy|lz4]"),
              "help text not in it");
    tool_result_free(&r);
}
