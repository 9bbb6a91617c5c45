/* A file cut off after its header (a download that stopped): tm_open refuses it as before, but
 * with TM_OPEN_TRUNCATED it opens, header and all, says how much it lacks
 * (tm_file_missing_bytes) and which tensors its end cuts (tm_tensor_is_cut), and refuses to read
 * those tensors' bytes (TM_TRUNCATED, naming the tensor). The tool opens with the flag: its
 * header commands read such a file and say it is cut off, check adds it up, dump refuses a cut
 * tensor. Where a tensor lies, and so which a cut removes, comes from ggml's own view of the
 * golden file (golden-a.view.tsv), not from this library. */
#include "support/helpers.h"
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(truncated, .fini = test_cleanup);

/* Where the golden file is cut: inside the data, 26 of its 58 tensors after it. */
#define CUT 200000u

/* ggml's view of golden-a.gguf: the data start and each tensor's offset and size. */
typedef struct view {
    uint64_t data_offset, n;
    char names[64][128];
    uint64_t offset[64], size[64];
} view;

static const char *golden(const char *name)
{
    static char paths[4][512];
    static int next;
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/golden/%s", corpus, name);
    return p;
}

static view read_view(void)
{
    view v = {0};
    char *text = read_all(golden("golden-a.view.tsv"), NULL);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long a, b;
        char name[128];
        if (sscanf(line, "data_offset %llu", &a) == 1)
            v.data_offset = a;
        else if (sscanf(line, "tensor %127s %*s %*s %*s %*s %*s %llu %llu", name, &a, &b) == 3) {
            cr_assert_lt(v.n, 64);
            snprintf(v.names[v.n], sizeof v.names[0], "%s", name);
            v.offset[v.n] = a;
            v.size[v.n++] = b;
        }
    }
    free(text);
    cr_assert(v.data_offset > 0 && v.n == 58, "golden-a.view.tsv: %llu tensors",
              (unsigned long long)v.n);
    return v;
}

/* The end of the last tensor: the size the header needs. */
static uint64_t needed(const view *v)
{
    uint64_t end = 0;
    for (uint64_t i = 0; i < v->n; i++)
        if (v->offset[i] + v->size[i] > end)
            end = v->offset[i] + v->size[i];
    return v->data_offset + end;
}

static bool is_cut(const view *v, uint64_t i, uint64_t len)
{
    return v->data_offset + v->offset[i] + v->size[i] > len;
}

/* The first len bytes of golden-a.gguf as a file in the test's directory. */
static const char *write_cut(uint64_t len)
{
    size_t n;
    char *whole = read_all(golden("golden-a.gguf"), &n);
    cr_assert_geq(n, len);
    const char *path = test_path("cut.gguf");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(whole, 1, (size_t)len, f), (size_t)len);
    cr_assert_eq(fclose(f), 0);
    free(whole);
    return path;
}

static void expect_refused(tm_status st, const tm_error *err, const char *tensor)
{
    char want[200];
    snprintf(want, sizeof want, "tensor '%s' is cut off", tensor);
    cr_assert_eq(st, TM_TRUNCATED, "%s: %s", tensor, err->message);
    cr_assert(strstr(err->message, want) && strstr(err->message, "a truncated download?"),
              "%s", err->message);
}

Test(truncated, tm_open_still_refuses_a_cut_file_by_default)
{
    tm_file *f = NULL;
    tm_error err;
    cr_assert_eq(tm_open(write_cut(CUT), 0, &f, &err), TM_TRUNCATED, "%s", err.message);
    cr_assert_null(f);
    cr_assert(strstr(err.message, "a truncated download?"), "%s", err.message);
}

/* Opened with the flag: the header as it is, what is missing, the cut tensors refused on every
 * path that reads bytes, the others decoded as from the whole file. */
Test(truncated, a_gguf_cut_in_its_data_opens_with_tm_open_truncated)
{
    const view v = read_view();
    tm_file *f = NULL, *whole = NULL;
    tm_error err;
    cr_assert_eq(tm_open(write_cut(CUT), TM_OPEN_NO_MMAP | TM_OPEN_TRUNCATED, &f, &err), TM_OK,
                 "%s", err.message);
    cr_assert_eq(tm_open(golden("golden-a.gguf"), 0, &whole, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_file_missing_bytes(f), needed(&v) - CUT);
    cr_assert_eq(tm_file_missing_bytes(whole), 0);
    cr_assert_eq(tm_file_layout(f)->file_size, CUT);
    cr_assert_eq(tm_file_layout(f)->data_start, v.data_offset);
    cr_assert_eq(tm_n_tensors(f), v.n);
    cr_assert_eq(tm_n_kv(f), tm_n_kv(whole));

    uint64_t n_cut = 0;
    for (uint64_t i = 0; i < v.n; i++) {
        const tm_tensor *t = tm_tensor_find(f, v.names[i]), *w = tm_tensor_find(whole, v.names[i]);
        cr_assert(t && w, "%s", v.names[i]);
        cr_assert_eq(tm_tensor_is_cut(t), is_cut(&v, i, CUT), "%s", v.names[i]);
        cr_assert(!tm_tensor_is_cut(w));
        const uint64_t n = t->n_elements;
        float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
        uint8_t *bytes = malloc(t->n_bytes);
        if (!is_cut(&v, i, CUT)) {
            cr_assert_not_null(t->data);
            cr_assert_eq(tm_dequant_tensor(t, got, 1, &err), TM_OK, "%s", err.message);
            cr_assert_eq(tm_dequant_tensor(w, want, 1, &err), TM_OK, "%s", err.message);
            cr_assert_eq(memcmp(got, want, n * sizeof *got), 0, "%s", v.names[i]);
        } else {
            n_cut++;
            cr_assert_null(t->data, "%s", v.names[i]);
            expect_refused(tm_dequant_tensor(t, got, 1, &err), &err, v.names[i]);
            expect_refused(tm_dequant_rows(t, 0, 1, got, &err), &err, v.names[i]);
            expect_refused(tm_dequant_blocks(t, 0, 1, got, &err), &err, v.names[i]);
            expect_refused(tm_tensor_fetch(t, 0, t->n_bytes, bytes, &err), &err, v.names[i]);
        }
        free(got);
        free(want);
        free(bytes);
    }
    cr_assert_eq(n_cut, 26);

    /* matvec reads the bytes too, and a writer copying them into a new file */
    const tm_tensor *last = tm_tensor_find(f, "blk.0.four_d.weight");
    float x[8] = {0}, y[4 * 3 * 2];
    expect_refused(tm_matvec(last, x, y, TM_MATVEC_F32, 1, &err), &err, "blk.0.four_d.weight");
    tm_writer *w = NULL;
    cr_assert_eq(tm_writer_new_from(f, &w, &err), TM_TRUNCATED, "%s", err.message);
    cr_assert_null(w);
    cr_assert(strstr(err.message, "is cut off"), "%s", err.message);
    tm_close(f);
    tm_close(whole);
}

/* Cut anywhere after the tensor infos, even before the data starts: the file opens, it lacks
 * what its header needs past the cut, and the tensors past the cut are the ones cut. Cut in
 * the header, it is refused as before. Each cut is its own heap copy (a read past it is one past
 * a heap block, which ASan reports). */
Test(truncated, every_cut_after_the_header_opens_and_every_cut_inside_it_is_refused)
{
    const view v = read_view();
    size_t len;
    char *whole = read_all(golden("golden-a.gguf"), &len);
    tm_file *f = NULL;
    tm_error err;
    cr_assert_eq(tm_open_buffer(whole, len, 0, &f, &err), TM_OK, "%s", err.message);
    const uint64_t infos_end = tm_file_layout(f)->infos_end;
    tm_close(f);
    cr_assert_lt(infos_end, v.data_offset);
    /* every byte around the end of the header and the start of the data and before the end,
     * and every 997th (a prime: the cuts fall at every phase of the blocks) between */
    for (uint64_t k = 24; k < needed(&v); k++) {
        const bool near = (k + 64 > infos_end && k < v.data_offset + 64) || k + 64 > needed(&v);
        if (!near && k % 997 != 0)
            continue;
        char *p = malloc(k);
        memcpy(p, whole, k);
        tm_status st = tm_open_buffer(p, k, TM_OPEN_TRUNCATED, &f, &err);
        if (k < infos_end) {
            cr_assert_neq(st, TM_OK, "a %llu-byte prefix opened", (unsigned long long)k);
        } else {
            cr_assert_eq(st, TM_OK, "cut at %llu: %s", (unsigned long long)k, err.message);
            cr_assert_eq(tm_file_missing_bytes(f), needed(&v) - k, "cut at %llu",
                         (unsigned long long)k);
            for (uint64_t i = 0; i < v.n; i++)
                cr_assert_eq(tm_tensor_is_cut(tm_tensor_find(f, v.names[i])), is_cut(&v, i, k),
                             "cut at %llu: %s", (unsigned long long)k, v.names[i]);
            tm_close(f);
        }
        free(p);
    }
    free(whole);
}

/* A safetensors file cut in its second tensor: refused as before without the flag, opened with
 * it; the first tensor decodes, the second is refused. */
Test(truncated, a_safetensors_file_cut_in_its_data)
{
    static const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    const uint64_t shape[1] = {4};
    st_writer *w = st_writer_new();
    st_writer_add(w, "a", "F32", 1, shape, a, sizeof a);
    st_writer_add(w, "b", "F32", 1, shape, b, sizeof b);
    size_t len;
    uint8_t *image = st_writer_image(w, &len);
    st_writer_free(w);
    const size_t cut = len - 6; /* 10 of b's 16 bytes are there */
    uint8_t *p = malloc(cut);
    memcpy(p, image, cut);
    tm_file *f = NULL;
    tm_error err;
    cr_assert_eq(tm_open_buffer(p, cut, 0, &f, &err), TM_LAYOUT, "%s", err.message);
    cr_assert_eq(tm_open_buffer(p, cut, TM_OPEN_TRUNCATED, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_file_missing_bytes(f), 6);
    const tm_tensor *ta = tm_tensor_find(f, "a"), *tb_ = tm_tensor_find(f, "b");
    cr_assert(!tm_tensor_is_cut(ta) && tm_tensor_is_cut(tb_));
    float got[4];
    cr_assert_eq(tm_dequant_tensor(ta, got, 1, &err), TM_OK, "%s", err.message);
    cr_assert_eq(memcmp(got, a, sizeof a), 0);
    expect_refused(tm_dequant_tensor(tb_, got, 1, &err), &err, "b");
    cr_assert(strstr(err.message, "6 of them are missing"), "%s", err.message);
    tm_close(f);
    free(p);
    free(image);
}

/* The second shard of a split set cut in its data: the set opens, the shard is named. */
Test(truncated, a_split_set_with_a_cut_shard_names_the_shard)
{
    for (uint32_t i = 0; i < 2; i++) {
        tb b = {0};
        tb_head(&b, 3, 1, 3);
        const uint16_t no = (uint16_t)i, count = 2;
        tb_kv_head(&b, "split.no", TM_V_U16);
        tb_bytes(&b, &no, 2);
        tb_kv_head(&b, "split.count", TM_V_U16);
        tb_bytes(&b, &count, 2);
        tb_kv_head(&b, "split.tensors.count", TM_V_I32);
        tb_u32(&b, 2);
        const uint64_t ne[1] = {64};
        tb_info(&b, i ? "t.1" : "t.0", 1, ne, TM_TYPE_F32, 0);
        tb_pad(&b, TM_DEFAULT_ALIGNMENT);
        tb_zeros(&b, i ? 100 : 256); /* the second shard lacks 156 of its 256 bytes */
        const char *name = i ? "s-00002-of-00002.gguf" : "s-00001-of-00002.gguf";
        cr_assert_eq(tb_write(&b, test_path(name)), 0);
        tb_free(&b);
    }
    tm_file *f = NULL;
    tm_error err;
    cr_assert_eq(tm_open(test_path("s-00001-of-00002.gguf"), 0, &f, &err), TM_TRUNCATED, "%s",
                 err.message);
    cr_assert_eq(tm_open(test_path("s-00001-of-00002.gguf"), TM_OPEN_TRUNCATED, &f, &err), TM_OK,
                 "%s", err.message);
    cr_assert_eq(tm_file_missing_bytes(f), 156);
    const tm_tensor *t0 = tm_tensor_find(f, "t.0"), *t1 = tm_tensor_find(f, "t.1");
    cr_assert(!tm_tensor_is_cut(t0) && tm_tensor_is_cut(t1));
    float got[64];
    expect_refused(tm_dequant_tensor(t1, got, 1, &err), &err, "t.1");
    cr_assert(strstr(err.message, "s-00002-of-00002.gguf' ends at byte"), "%s", err.message);
    tm_close(f);
}

/* ---- the tool ---- */

/* The standard output of `tensormap CMD [FLAG] PATH`, which must exit with status. */
static char *stdout_of(int status, const char *cmd, const char *flag, const char *path)
{
    tool_result r = flag ? tool_run(cmd, flag, path, NULL) : tool_run(cmd, path, NULL);
    cr_assert_eq(r.status, status, "%s: exit %d: %s", cmd, r.status, r.err);
    char *out = r.out;
    r.out = NULL;
    tool_result_free(&r);
    return out;
}

static json_t *parsed(char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert_not_null(j, "%s: %s", e.text, text);
    free(text);
    return j;
}

/* The header commands read the cut file as they read the whole one (but for the file's size),
 * and say it is cut off. */
Test(truncated, header_commands_read_a_cut_file_and_say_it_is_cut_off)
{
    const view v = read_view();
    const char *cut = write_cut(CUT);
    static const char *const cmds[][2] = {
        {"tensors", "--json"}, {"meta", "--json"}, {"header", "--arrays"}};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        json_t *a = parsed(stdout_of(0, cmds[c][0], cmds[c][1], cut));
        json_t *b = parsed(stdout_of(0, cmds[c][0], cmds[c][1], golden("golden-a.gguf")));
        if (json_is_object(a)) { /* header: the layout as the file has it */
            cr_assert_eq(json_u64(a, "file_size"), CUT);
            cr_assert_eq(json_u64(a, "data_size"), CUT - v.data_offset);
            json_object_del(a, "file_size"), json_object_del(b, "file_size");
            json_object_del(a, "data_size"), json_object_del(b, "data_size");
        }
        cr_assert(json_equal(a, b), "%s differs between the cut file and the whole one",
                  cmds[c][0]);
        json_decref(a);
        json_decref(b);
    }
    tool_result r = tool_run("info", cut, NULL);
    cr_assert_eq(r.status, 1, "info passes a cut file as sound: %s", r.err);
    cr_assert(strstr(r.out, "tensor data"), "info describes the cut file all the same:\n%s", r.out);
    char want[160];
    snprintf(want, sizeof want, "the file is cut off (a truncated download?): %llu bytes are "
             "missing from its end, and 26 of its 58 tensors with them",
             (unsigned long long)(needed(&v) - CUT));
    cr_assert(strstr(r.err, want), "%s", r.err);
    tool_result_free(&r);
}

/* check: not consistent; the size the header needs, what is missing, every tensor cut. */
Test(truncated, check_names_the_size_needed_what_is_missing_and_the_cut_tensors)
{
    const view v = read_view();
    const char *cut = write_cut(CUT);
    json_t *j = tool_json(1, "check", "--json", cut, NULL);
    cr_assert(json_is_false(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "size_needed"), needed(&v));
    cr_assert_eq(json_u64(j, "missing_bytes"), needed(&v) - CUT);
    cr_assert_eq(json_u64(j, "cut_tensors"), 26);
    cr_assert_eq(json_u64(j, "file_size"), CUT);
    json_decref(j);
    j = tool_json(0, "check", "--json", golden("golden-a.gguf"), NULL);
    cr_assert_eq(json_u64(j, "missing_bytes"), 0);
    cr_assert_eq(json_u64(j, "cut_tensors"), 0);
    json_decref(j);

    char *text = stdout_of(1, "check", NULL, cut);
    char line[200];
    snprintf(line, sizeof line, "  %-34s %llu\n", "the size its header needs",
             (unsigned long long)needed(&v));
    cr_assert(strstr(text, line), "no '%s' in:\n%s", line, text);
    snprintf(line, sizeof line, "  %-34s %llu\n", "missing",
             (unsigned long long)(needed(&v) - CUT));
    cr_assert(strstr(text, line), "no '%s' in:\n%s", line, text);
    for (uint64_t i = 0; i < v.n; i++) {
        snprintf(line, sizeof line, "cut off: tensor %llu '%s' at %llu..",
                 (unsigned long long)i, v.names[i], (unsigned long long)v.offset[i]);
        cr_assert_eq(strstr(text, line) != NULL, is_cut(&v, i, CUT), "%s:\n%s", line, text);
    }
    free(text);
}

/* stats on a named cut tensor fails and says why on standard error, not among the summaries
 * on standard output; a whole tensor named beside it is summarised all the same. */
Test(truncated, stats_on_a_named_cut_tensor_is_an_error)
{
    const char *cut = write_cut(CUT);
    tool_result r = tool_run("stats", cut, "blk.0.four_d.weight", "f32.rows.weight", NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert(strstr(r.err, "tensor 'blk.0.four_d.weight' is cut off"), "%s", r.err);
    cr_assert_null(strstr(r.out, "cut off"), "the refusal went to standard output:\n%s", r.out);
    cr_assert(strstr(r.out, "f32.rows.weight (f32,"), "%s", r.out);
    tool_result_free(&r);
}

/* dump refuses a cut tensor, naming it, and writes no output; a tensor before the cut dumps as
 * from the whole file. */
Test(truncated, dump_refuses_a_cut_tensor_and_dumps_a_whole_one)
{
    const char *cut = write_cut(CUT);
    tool_result r = tool_run("dump", cut, "blk.0.four_d.weight", "-o", test_path("x.npy"), NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert(strstr(r.err, "tensor 'blk.0.four_d.weight' is cut off"), "%s", r.err);
    cr_assert_null(fopen(test_path("x.npy"), "r"), "dump left an output behind");
    tool_result_free(&r);
    r = tool_run("dump", cut, "f32.rows.weight", "--format", "raw", "-o", "-", NULL);
    tool_result w = tool_run("dump", golden("golden-a.gguf"), "f32.rows.weight", "--format", "raw",
                             "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(w.status, 0, "%s", w.err);
    cr_assert_eq(r.out_len, w.out_len);
    cr_assert_eq(memcmp(r.out, w.out, r.out_len), 0);
    tool_result_free(&r);
    tool_result_free(&w);
}
