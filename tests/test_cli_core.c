/* tensormap info, meta and tensors, run as a process on files written here with tm_writer_*.
 * Expected numbers are worked out by hand from the shapes and FORMATS.md's block sizes, or
 * taken from the writer's own byte counter (tm_writer_header_bytes), never from the tool's
 * output; the golden files are checked against ggml's own reader (FILE.view.tsv). */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

TestSuite(cli_core, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err) { cr_assert_eq(s, TM_OK, "%s", err->message); }

/* 73 bytes: cut at 60 with 13 more */
#define LONG_NAME "A model name that goes on for long enough to be cut at sixty bytes!!!!!!!"
#define BAD_UTF8 "bad\xff\n"

static const char *const TOKENS[5] = {"a", "b", "\xc4\xa0the", "<|im_end|>", ""};
static const char *const MERGES[3] = {"a b", "\xc4\xa0 t", "th e"};

/* A qwen2-shaped file. Tensors, by hand (FORMATS.md):
 *   token_embd.weight   q8_0 512 x 5   80 blocks * 34  =   2720 at 0
 *   blk.0.attn_q.weight q4_K 512 x 512 1024 blocks * 144 = 147456 at 2720 (a multiple of 32)
 *   output_norm.weight  f32  512       512 * 4          =   2048 at 150176 (= 2720 + 147456)
 * *infos_end receives the writer's counter after the last tensor info. */
static const char *write_model(const char *name, uint64_t *infos_end)
{
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    const uint32_t blocks = 3, embd = 512, heads = 8, kv_heads = 2, ff = 1536, ctx = 8192;
    const uint64_t big = UINT64_MAX;
    const float eps = 0.1f;
    const int32_t types[5] = {1, 1, 1, 3, 1};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "qwen2", 5, &err), &err);
    ok(tm_writer_kv_str(w, "general.name", LONG_NAME, strlen(LONG_NAME), &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.block_count", TM_V_U32, &blocks, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.embedding_length", TM_V_U32, &embd, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.attention.head_count", TM_V_U32, &heads, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.attention.head_count_kv", TM_V_U32, &kv_heads, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.feed_forward_length", TM_V_U32, &ff, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.context_length", TM_V_U32, &ctx, &err), &err);
    ok(tm_writer_kv_scalar(w, "qwen2.attention.layer_norm_rms_epsilon", TM_V_F32, &eps, &err),
       &err);
    ok(tm_writer_kv_scalar(w, "test.u64_max", TM_V_U64, &big, &err), &err);
    ok(tm_writer_kv_str(w, "test.bad_utf8", BAD_UTF8, 5, &err), &err);
    ok(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", TOKENS, NULL, 5, &err), &err);
    ok(tm_writer_kv_array(w, "tokenizer.ggml.token_type", TM_V_I32, types, 5, &err), &err);
    ok(tm_writer_kv_str_array(w, "tokenizer.ggml.merges", MERGES, NULL, 3, &err), &err);
    const uint64_t te[2] = {512, 5}, q[2] = {512, 512}, norm[1] = {512};
    ok(tm_writer_tensor(w, "token_embd.weight", TM_TYPE_Q8_0, 2, te, NULL, &err), &err);
    ok(tm_writer_tensor(w, "blk.0.attn_q.weight", TM_TYPE_Q4_K, 2, q, NULL, &err), &err);
    ok(tm_writer_tensor(w, "output_norm.weight", TM_TYPE_F32, 1, norm, NULL, &err), &err);
    *infos_end = tm_writer_header_bytes(w);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}
#define N_KV 14

static uint64_t size_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static uint64_t round32(uint64_t n) { return (n + 31) / 32 * 32; }

/* The line of out that starts (after spaces) with label; the rest of it, spaces skipped. */
static const char *row(const char *out, const char *label)
{
    static char rest[256];
    for (const char *line = out; line && *line;) {
        const char *p = line;
        while (*p == ' ')
            p++;
        const char *nl = strchr(line, '\n');
        if (strncmp(p, label, strlen(label)) == 0) {
            p += strlen(label);
            while (*p == ' ')
                p++;
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            snprintf(rest, sizeof rest, "%.*s", (int)n, p);
            return rest;
        }
        line = nl ? nl + 1 : NULL;
    }
    cr_assert_fail("no line '%s' in:\n%s", label, out);
    return NULL;
}

static void expect_row(const char *out, const char *label, const char *want)
{
    const char *got = row(out, label);
    cr_assert_str_eq(got, want, "%s: '%s', want '%s'", label, got, want);
}

static const char *num(uint64_t v)
{
    static char buf[4][24];
    static int n;
    char *b = buf[n++ % 4];
    snprintf(b, sizeof buf[0], "%llu", (unsigned long long)v);
    return b;
}

Test(cli_core, info_names_the_dimensions_and_where_the_header_stops)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    tool_result r = tool_run("info", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    expect_row(r.out, "bytes", num(size_of(path)));
    expect_row(r.out, "magic", "GGUF");
    expect_row(r.out, "version", "3");
    expect_row(r.out, "tensors", "3");
    expect_row(r.out, "metadata entries", num(N_KV));
    expect_row(r.out, "architecture", "qwen2");
    expect_row(r.out, "blocks in the stack", "3");
    expect_row(r.out, "embedding width", "512");
    expect_row(r.out, "attention heads", "8");
    expect_row(r.out, "key and value heads", "2");
    expect_row(r.out, "feed-forward width", "1536");
    expect_row(r.out, "trained context", "8192");
    expect_row(r.out, "vocabulary", "5 tokens");
    expect_row(r.out, "merges", "3");
    expect_row(r.out, "head width", "64 (embedding width / attention heads)");
    expect_row(r.out, "alignment", "32, not declared: the format's default");
    expect_row(r.out, "last tensor info ends at", num(infos_end));
    expect_row(r.out, "padding", num(round32(infos_end) - infos_end));
    expect_row(r.out, "tensor data starts at", num(round32(infos_end)));
    cr_assert_eq(size_of(path), round32(infos_end) + 150176 + 2048);
    cr_assert_str_eq(r.err, "");
    tool_result_free(&r);
}

Test(cli_core, info_json_holds_exact_numbers)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    json_t *j = tool_json(0, "info", "--json", path, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "format")), "gguf");
    cr_assert_str_eq(json_string_value(json_object_get(j, "architecture")), "qwen2");
    cr_assert_eq(json_u64(j, "version"), 3);
    cr_assert_eq(json_u64(j, "n_tensors"), 3);
    cr_assert_eq(json_u64(j, "n_kv"), N_KV);
    cr_assert_eq(json_u64(j, "block_count"), 3);
    cr_assert_eq(json_u64(j, "embedding_length"), 512);
    cr_assert_eq(json_u64(j, "head_count"), 8);
    cr_assert_eq(json_u64(j, "head_count_kv"), 2);
    cr_assert_eq(json_u64(j, "feed_forward_length"), 1536);
    cr_assert_eq(json_u64(j, "context_length"), 8192);
    cr_assert_eq(json_u64(j, "vocab_size"), 5);
    cr_assert_eq(json_u64(j, "merges"), 3);
    cr_assert_eq(json_u64(j, "head_width"), 64);
    cr_assert_eq(json_u64(j, "alignment"), 32);
    cr_assert(json_is_false(json_object_get(j, "alignment_declared")));
    cr_assert_eq(json_u64(j, "infos_end"), infos_end);
    cr_assert_eq(json_u64(j, "data_start"), round32(infos_end));
    /* absolute, like every offset: the data start plus where the last tensor ends in the data */
    cr_assert_eq(json_u64(j, "tensors_end"), round32(infos_end) + 150176 + 2048);
    cr_assert_eq(json_u64(j, "file_size"), size_of(path));
    json_decref(j);
}

/* The text line of entry i: "i  key  type  value". */
static const char *meta_line(const char *out, int i)
{
    static char buf[512];
    char idx[16];
    snprintf(idx, sizeof idx, "%d ", i);
    const char *hit = NULL;
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, idx, strlen(idx)) == 0) {
            hit = p;
            break;
        }
    }
    cr_assert_not_null(hit, "no entry %d in:\n%s", i, out);
    snprintf(buf, sizeof buf, "%.*s", (int)strcspn(hit, "\n"), hit);
    return buf;
}

Test(cli_core, meta_lists_every_entry_in_file_order)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    tool_result r = tool_run("meta", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    static const char *const keys[N_KV] = {
        "general.architecture", "general.name", "qwen2.block_count", "qwen2.embedding_length",
        "qwen2.attention.head_count", "qwen2.attention.head_count_kv",
        "qwen2.feed_forward_length", "qwen2.context_length",
        "qwen2.attention.layer_norm_rms_epsilon", "test.u64_max", "test.bad_utf8",
        "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"};
    for (int i = 0; i < N_KV; i++)
        cr_assert(strstr(meta_line(r.out, i), keys[i]), "entry %d: %s", i, meta_line(r.out, i));
    cr_assert(strstr(meta_line(r.out, 1),
                     "str   \"A model name that goes on for long enough to be cut at sixty\" "
                     "\u2026 and 13 more bytes"), "%s", meta_line(r.out, 1));
    cr_assert(strstr(meta_line(r.out, 2), "u32   3"), "%s", meta_line(r.out, 2));
    cr_assert(strstr(meta_line(r.out, 8), "f32   0.1"), "%s", meta_line(r.out, 8));
    cr_assert(strstr(meta_line(r.out, 9), "u64   18446744073709551615"), "%s",
              meta_line(r.out, 9));
    cr_assert(strstr(meta_line(r.out, 10), "\"bad\\xff\\n\""), "%s", meta_line(r.out, 10));
    cr_assert(strstr(meta_line(r.out, 11), "arr   5 of str: \"a\", \"b\", \"\xc4\xa0the\""),
              "%s", meta_line(r.out, 11));
    cr_assert(strstr(meta_line(r.out, 12), "5 of i32: 1, 1, 1, 3, 1"), "%s",
              meta_line(r.out, 12));
    cr_assert(strstr(meta_line(r.out, 13), "3 of str"), "%s", meta_line(r.out, 13));
    tool_result_free(&r);
}

static const json_t *entry(const json_t *a, size_t i, const char *key)
{
    const json_t *e = json_array_get(a, i);
    cr_assert_not_null(e, "no entry %zu", i);
    cr_assert_str_eq(json_string_value(json_object_get(e, "key")), key);
    return e;
}

Test(cli_core, meta_json_is_exact_and_lossless)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    json_t *a = tool_json(0, "meta", "--json", path, NULL);
    cr_assert(json_is_array(a));
    cr_assert_eq(json_array_size(a), N_KV);
    const json_t *e = entry(a, 1, "general.name");
    cr_assert_str_eq(json_string_value(json_object_get(e, "type")), "str");
    cr_assert_str_eq(json_string_value(json_object_get(e, "value")), LONG_NAME, "JSON is whole");
    e = entry(a, 8, "qwen2.attention.layer_norm_rms_epsilon");
    /* the f32 0.1f, as the shortest decimal that reads back as it: 0.1, not 0.10000000149 */
    cr_assert_eq((float)json_real_value(json_object_get(e, "value")), 0.1f);
    cr_assert_eq(json_real_value(json_object_get(e, "value")), 0.1);
    e = entry(a, 9, "test.u64_max");
    cr_assert_str_eq(json_string_value(json_object_get(e, "value")), "18446744073709551615",
                     "a u64 past 2^63-1 is an exact decimal string");
    e = entry(a, 10, "test.bad_utf8");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "value"), "hex")),
                     "626164ff0a", "invalid UTF-8 kept byte for byte as hex");
    e = entry(a, 11, "tokenizer.ggml.tokens");
    cr_assert_str_eq(json_string_value(json_object_get(e, "type")), "arr");
    cr_assert_str_eq(json_string_value(json_object_get(e, "element_type")), "str");
    cr_assert_eq(json_u64(e, "count"), 5);
    cr_assert_null(json_object_get(e, "values"), "values only under --full");
    json_decref(a);

    a = tool_json(0, "meta", "--json", "--full", path, NULL);
    const json_t *el = json_object_get(entry(a, 11, "tokenizer.ggml.tokens"), "values");
    cr_assert_eq(json_array_size(el), 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_str_eq(json_string_value(json_array_get(el, i)), TOKENS[i]);
    el = json_object_get(entry(a, 12, "tokenizer.ggml.token_type"), "values");
    cr_assert_eq(json_array_size(el), 5);
    cr_assert_eq(json_integer_value(json_array_get(el, 3)), 3);
    json_decref(a);
}

Test(cli_core, tensors_lists_shapes_offsets_and_sizes)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    tool_result r = tool_run("tensors", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* columns are aligned, so compare with runs of spaces squeezed to one */
    char *s = r.out, *d = r.out;
    for (; *s; s++)
        if (!(*s == ' ' && d > r.out && d[-1] == ' '))
            *d++ = *s;
    *d = '\0';
    cr_assert(strstr(r.out, "name shape type offset bytes\n"), "%s", r.out);
    cr_assert(strstr(r.out, "token_embd.weight 512 x 5 q8_0 0 2720\n"), "%s", r.out);
    cr_assert(strstr(r.out, "blk.0.attn_q.weight 512 x 512 q4_K 2720 147456\n"), "%s", r.out);
    cr_assert(strstr(r.out, "output_norm.weight 512 f32 150176 2048\n"), "%s", r.out);
    cr_assert(strstr(r.out, "3 tensors, 152224 bytes\n"), "%s", r.out);
    tool_result_free(&r);

    json_t *a = tool_json(0, "tensors", "--json", path, NULL);
    cr_assert_eq(json_array_size(a), 3);
    static const struct {
        const char *name, *type;
        uint64_t ne0, ne1, offset, n_bytes;
    } want[3] = {{"token_embd.weight", "q8_0", 512, 5, 0, 2720},
                 {"blk.0.attn_q.weight", "q4_K", 512, 512, 2720, 147456},
                 {"output_norm.weight", "f32", 512, 0, 150176, 2048}};
    for (size_t i = 0; i < 3; i++) {
        const json_t *t = json_array_get(a, i);
        cr_assert_str_eq(json_string_value(json_object_get(t, "name")), want[i].name);
        cr_assert_str_eq(json_string_value(json_object_get(t, "type")), want[i].type);
        const json_t *ne = json_object_get(t, "ne");
        cr_assert_eq(json_array_size(ne), want[i].ne1 ? 2 : 1);
        cr_assert_eq(json_integer_value(json_array_get(ne, 0)), (json_int_t)want[i].ne0);
        if (want[i].ne1)
            cr_assert_eq(json_integer_value(json_array_get(ne, 1)), (json_int_t)want[i].ne1);
        cr_assert_eq(json_u64(t, "data_offset"), want[i].offset);
        cr_assert_eq(json_u64(t, "n_bytes"), want[i].n_bytes);
    }
    json_decref(a);
}

Test(cli_core, help_and_usage)
{
    static const char *const cmds[] = {"info", "meta", "tensors"};
    for (size_t i = 0; i < 3; i++) {
        tool_result h = tool_run(cmds[i], "--help", NULL);
        cr_assert_eq(h.status, 0);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: tensormap %s ", cmds[i]);
        cr_assert(strncmp(h.out, usage, strlen(usage)) == 0, "%s", h.out);
        tool_result hh = tool_run("help", cmds[i], NULL);
        cr_assert_str_eq(hh.out, h.out);
        /* bad usage: exit 2, the usage line on stderr, nothing on stdout */
        tool_result none = tool_run(cmds[i], NULL);
        tool_result two = tool_run(cmds[i], "a", "b", NULL);
        tool_result opt = tool_run(cmds[i], "--bogus", "a", NULL);
        const tool_result *bad[3] = {&none, &two, &opt};
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(bad[k]->status, 2, "%s case %d exits %d", cmds[i], k, bad[k]->status);
            cr_assert(strstr(bad[k]->err, usage), "%s", bad[k]->err);
            cr_assert_str_eq(bad[k]->out, "");
        }
        tool_result_free(&h), tool_result_free(&hh), tool_result_free(&none);
        tool_result_free(&two), tool_result_free(&opt);
    }
    tool_result full = tool_run("meta", "--full", "x.gguf", NULL);
    cr_assert_eq(full.status, 2, "--full without --json is a usage error");
    tool_result_free(&full);
}

Test(cli_core, a_bad_file_exits_1_with_the_message_on_stderr)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    size_t len;
    char *bytes = read_all(path, &len);
    memcpy(bytes, "GGML", 4);
    const char *bad = test_path("bad.gguf");
    FILE *f = fopen(bad, "wb");
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    free(bytes);
    static const char *const cmds[] = {"info", "meta", "tensors"};
    for (size_t i = 0; i < 3; i++) {
        tool_result r = tool_run(cmds[i], bad, NULL);
        cr_assert_eq(r.status, 1, "%s exits %d", cmds[i], r.status);
        cr_assert_str_eq(r.out, "");
        char want[300];
        snprintf(want, sizeof want, "tensormap: %s: ", bad);
        cr_assert(strncmp(r.err, want, strlen(want)) == 0, "%s", r.err);
        cr_assert(strstr(r.err, "GGML") && strstr(r.err, "GGUF"), "%s", r.err);
        tool_result_free(&r);
        r = tool_run(cmds[i], "--json", test_path("missing.gguf"), NULL);
        cr_assert_eq(r.status, 1);
        cr_assert(strstr(r.err, "missing.gguf"), "%s", r.err);
        cr_assert_str_eq(r.out, "", "no half JSON on failure");
        tool_result_free(&r);
    }
}

/* `cat FILE | tensormap CMD ARGS -`: the tool reads a pipe (no mmap). */
static char *run_piped(const char *path, const char *args, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' %s - 2>&1", path, getenv("TM_TOOL"), args);
    return shell_output(cmd, status);
}

Test(cli_core, standard_input_works)
{
    uint64_t infos_end;
    const char *path = write_model("m.gguf", &infos_end);
    int status;
    char *out = run_piped(path, "info", &status);
    cr_assert_eq(status, 0, "%s", out);
    expect_row(out, "path", "(standard input)");
    expect_row(out, "bytes", num(size_of(path)));
    expect_row(out, "tensor data starts at", num(round32(infos_end)));
    free(out);
    out = run_piped(path, "tensors --json", &status);
    cr_assert_eq(status, 0, "%s", out);
    json_t *a = json_loads(out, 0, NULL);
    cr_assert_eq(json_array_size(a), 3, "%s", out);
    cr_assert_eq(json_u64(json_array_get(a, 2), "data_offset"), 150176);
    json_decref(a);
    free(out);
}

/* ---- the golden files: the tool's JSON against ggml's own reader -------------------------- */

static void golden_against_view(const char *name)
{
    char gguf[512], view[512];
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    snprintf(gguf, sizeof gguf, "%s/golden/%s.gguf", corpus, name);
    snprintf(view, sizeof view, "%s/golden/%s.view.tsv", corpus, name);
    json_t *info = tool_json(0, "info", "--json", gguf, NULL);
    json_t *kvs = tool_json(0, "meta", "--json", "--full", gguf, NULL);
    json_t *tensors = tool_json(0, "tensors", "--json", gguf, NULL);
    char *text = read_all(view, NULL);
    size_t n_kv = 0, n_t = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *f[16];
        int n = 0;
        for (char *p = line; n < 16;) {
            f[n++] = p;
            char *tab = strchr(p, '\t');
            if (!tab)
                break;
            *tab = '\0';
            p = tab + 1;
        }
        if (strcmp(f[0], "version") == 0) {
            cr_assert_eq(json_u64(info, "version"), strtoull(f[1], NULL, 10));
        } else if (strcmp(f[0], "alignment") == 0) {
            cr_assert_eq(json_u64(info, "alignment"), strtoull(f[1], NULL, 10));
        } else if (strcmp(f[0], "data_offset") == 0) {
            cr_assert_eq(json_u64(info, "data_start"), strtoull(f[1], NULL, 10));
        } else if (strcmp(f[0], "n_kv") == 0) {
            cr_assert_eq(json_u64(info, "n_kv"), strtoull(f[1], NULL, 10));
        } else if (strcmp(f[0], "n_tensors") == 0) {
            cr_assert_eq(json_u64(info, "n_tensors"), strtoull(f[1], NULL, 10));
        } else if (strcmp(f[0], "kv") == 0) {
            /* kv KEY TYPE ...: key and type here; values are the library's golden test */
            const json_t *e = json_array_get(kvs, n_kv++);
            cr_assert_not_null(e, "ggml has more entries than the tool (%s)", f[1]);
            cr_assert_str_eq(json_string_value(json_object_get(e, "key")), f[1]);
            cr_assert_str_eq(json_string_value(json_object_get(e, "type")), f[2], "%s", f[1]);
            if (strcmp(f[2], "arr") == 0) {
                cr_assert_str_eq(json_string_value(json_object_get(e, "element_type")), f[3]);
                cr_assert_eq(json_u64(e, "count"), strtoull(f[4], NULL, 10), "%s", f[1]);
            }
        } else if (strcmp(f[0], "tensor") == 0) {
            /* tensor NAME TYPE NE0 NE1 NE2 NE3 OFFSET SIZE */
            const json_t *t = json_array_get(tensors, n_t++);
            cr_assert_not_null(t, "ggml has more tensors than the tool (%s)", f[1]);
            cr_assert_eq(n, 9, "a tensor line of 9 fields");
            cr_assert_str_eq(json_string_value(json_object_get(t, "name")), f[1]);
            cr_assert_str_eq(json_string_value(json_object_get(t, "type")), f[2], "%s", f[1]);
            const json_t *ne = json_object_get(t, "ne");
            for (size_t d = 0; d < 4; d++) {
                uint64_t want = strtoull(f[3 + d], NULL, 10);
                uint64_t got = d < json_array_size(ne)
                                   ? (uint64_t)json_integer_value(json_array_get(ne, d)) : 1;
                cr_assert_eq(got, want, "%s ne[%zu]", f[1], d);
            }
            cr_assert_eq(json_u64(t, "data_offset"), strtoull(f[7], NULL, 10), "%s", f[1]);
            cr_assert_eq(json_u64(t, "n_bytes"), strtoull(f[8], NULL, 10), "%s", f[1]);
        }
    }
    cr_assert_eq(n_kv, json_array_size(kvs));
    cr_assert_eq(n_t, json_array_size(tensors));
    cr_assert_gt(n_t, 0);
    free(text);
    json_decref(info), json_decref(kvs), json_decref(tensors);
}

Test(cli_core, golden_a_agrees_with_ggml) { golden_against_view("golden-a"); }
Test(cli_core, golden_b_agrees_with_ggml) { golden_against_view("golden-b"); }

/* ---- safetensors: what applies of the same commands --------------------------------------- */

Test(cli_core, safetensors_info_and_tensors)
{
    static const char header[] =
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
        "\"__metadata__\":{\"format\":\"pt\"}}";
    const float data[6] = {1, 2, 3, 4, 5, 6};
    size_t len;
    uint8_t *img = st_image_raw(header, data, sizeof data, &len);
    const char *path = test_path("m.safetensors");
    cr_assert_eq(st_write_file(path, img, len), 0);
    free(img);
    const uint64_t hlen = sizeof header - 1;

    tool_result r = tool_run("info", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    expect_row(r.out, "bytes", num(8 + hlen + 24));
    char want[96];
    snprintf(want, sizeof want, "%llu bytes of JSON after the 8-byte length",
             (unsigned long long)hlen);
    expect_row(r.out, "header length", want);
    expect_row(r.out, "tensors", "1");
    expect_row(r.out, "metadata entries", "1 (in __metadata__)");
    expect_row(r.out, "tensor data starts at", num(8 + hlen));
    expect_row(r.out, "parameters", "6 (6)"); /* the 2 x 3 tensor */
    expect_row(r.out, "bits per weight", "32.00 over all 24 bytes of tensors");
    tool_result_free(&r);

    json_t *j = tool_json(0, "info", "--json", path, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "format")), "safetensors");
    cr_assert_eq(json_u64(j, "parameters"), 6);
    cr_assert_eq(json_u64(j, "header_bytes"), hlen);
    cr_assert_eq(json_u64(j, "data_start"), 8 + hlen);
    json_decref(j);

    r = tool_run("tensors", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\nw     [2, 3]  f32        0     24\n"), "%s", r.out);
    tool_result_free(&r);
    json_t *a = tool_json(0, "tensors", "--json", path, NULL);
    const json_t *t = json_array_get(a, 0);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "shape"), 0)), 2);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(t, "ne"), 0)), 3,
                 "ne is the shape reversed: row length first");
    cr_assert_eq(json_u64(t, "n_bytes"), 24);
    json_decref(a);
}

/* ---- the demo model the README's first command shows ---------------------------------------- */

/* build/demo.gguf sits beside the tool. It must hold the six promised types, ffn_down mixed
 * across blocks as q4_K_M mixes it (blocks 0, 3, 6 and 7 of 8 get q6_K), and quantized blocks
 * whose scales decode to weight-sized finite values. */
Test(cli_core, demo_model_is_what_the_readme_promises)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", getenv("TM_TOOL"));
    char *slash = strrchr(path, '/');
    cr_assert_not_null(slash);
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "demo.gguf");
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &f, &err), TM_OK, "%s: %s", path, err.message);
    const tm_type want[] = {TM_TYPE_F32, TM_TYPE_F16, TM_TYPE_Q8_0,
                            TM_TYPE_Q5_0, TM_TYPE_Q4_K, TM_TYPE_Q6_K};
    bool seen[6] = {false};
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        for (size_t k = 0; k < 6; k++)
            seen[k] |= t->type == want[k];
        float *v = malloc((size_t)t->n_elements * sizeof *v);
        cr_assert_eq(tm_dequant_tensor(t, v, 1, &err), TM_OK, "%s", err.message);
        for (uint64_t e = 0; e < t->n_elements; e++)
            cr_assert(isfinite(v[e]) && fabsf(v[e]) < 2.0f, "%.*s[%llu] = %g", (int)t->name.len,
                      t->name.ptr, (unsigned long long)e, v[e]);
        free(v);
    }
    for (size_t k = 0; k < 6; k++)
        cr_assert(seen[k], "no %s tensor", tm_type_name(want[k]));
    for (int b = 0; b < 8; b++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_down.weight", b);
        const tm_tensor *t = tm_tensor_find(f, name);
        cr_assert_not_null(t, "%s", name);
        const bool more = b == 0 || b == 3 || b == 6 || b == 7;
        cr_assert_eq(t->type, more ? TM_TYPE_Q6_K : TM_TYPE_Q4_K, "%s", name);
    }
    tm_close(f);
}

/* A UTF-8 character cut by the 60-byte limit is shown as its escaped bytes, so that exactly 60
 * bytes are shown and "and N more bytes" counts the rest; whole characters pass as they are. */
Test(cli_core, meta_cuts_strings_at_a_byte_count)
{
    const char *path = test_path("utf8.gguf");
    tm_writer *w;
    tm_error err;
    char s[64];
    memset(s, 'x', 59);
    memcpy(s + 59, "\xc3\xa9\xe2\x9c\x93", 5); /* 'é' cut after its first byte, then '✓' */
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "cut", s, 64, &err), &err);
    ok(tm_writer_kv_str(w, "whole", "\xc3\xa9\xe2\x9c\x93\x7f", 6, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    tool_result r = tool_run("meta", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "xxxxxxxx\\xc3\" \u2026 and 4 more bytes\n"), "%s", r.out);
    cr_assert(strstr(r.out, "\"\xc3\xa9\xe2\x9c\x93\\x7f\"\n"), "%s", r.out);
    tool_result_free(&r);
}
