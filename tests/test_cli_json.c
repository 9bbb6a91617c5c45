/* One voice (docs/json.md): a value of each type is written the same way by every command,
 * integers past 2^53 as strings and nothing else, floats in the fewest digits that read back
 * as the same value, offsets absolute, a tensor without finite values null in its stats. The
 * expected texts are written here by hand. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(cli_json, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err) { cr_assert_eq(s, TM_OK, "%s", err->message); }

static const char *write_values(void)
{
    const char *path = test_path("values.gguf");
    tm_writer *w;
    tm_error err;
    const float eps = 1e-06f, nanf_bits = NAN;
    const double tenth = 0.1;
    const uint64_t exact = UINT64_C(1) << 53, past = (UINT64_C(1) << 53) + 1;
    const int64_t neg_past = -(INT64_C(1) << 53) - 1, neg = -5;
    const uint64_t arr[2] = {1, UINT64_C(1) << 60};
    const float farr[2] = {1e-06f, 0.5f};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_kv_str(w, "general.architecture", "toy", 3, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.eps", TM_V_F32, &eps, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.tenth", TM_V_F64, &tenth, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.exact", TM_V_U64, &exact, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.past", TM_V_U64, &past, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.neg_past", TM_V_I64, &neg_past, &err), &err);
    ok(tm_writer_kv_scalar(w, "t.neg", TM_V_I64, &neg, &err), &err);
    ok(tm_writer_kv_array(w, "t.u64s", TM_V_U64, arr, 2, &err), &err);
    ok(tm_writer_kv_array(w, "t.f32s", TM_V_F32, farr, 2, &err), &err);
    const uint64_t ne[1] = {4}, ne1[1] = {1};
    const float nans[4] = {nanf_bits, nanf_bits, nanf_bits, nanf_bits}, one[1] = {1e-06f};
    ok(tm_writer_tensor(w, "nans", TM_TYPE_F32, 1, ne, nans, &err), &err);
    ok(tm_writer_tensor(w, "one", TM_TYPE_F32, 1, ne1, one, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

static char *stdout_of(const char *const *args)
{
    tool_result r = tool_run_in(NULL, args);
    cr_assert_eq(r.status, 0, "%s: %s", args[0], r.err);
    free(r.err);
    return r.out;
}
#define STDOUT(...) stdout_of((const char *const[]){__VA_ARGS__, NULL})

Test(cli_json, every_value_written_the_same_way_in_meta_and_header)
{
    const char *f = write_values();
    char *meta = STDOUT("meta", "--json", "--full", f);
    char *header = STDOUT("header", "--arrays", f);
    static const char *const want[] = {
        "\"value\": 1e-06\n",            /* the f32, not 9.999999974752427e-07 */
        "\"value\": 0.1\n",              /* the f64, not 0.10000000000000001 */
        "\"value\": 9007199254740992\n", /* 2^53: a number */
        "\"value\": \"9007199254740993\"\n",  /* past it: a string */
        "\"value\": \"-9007199254740993\"\n", /* signed alike */
        "\"value\": -5\n",
        "\"1152921504606846976\"", /* an array element past 2^53 */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert(strstr(meta, want[i]), "meta --json lacks %s:\n%s", want[i], meta);
        cr_assert(strstr(header, want[i]), "header lacks %s", want[i]);
    }
    json_t *m = json_loads(meta, 0, NULL), *h = json_loads(header, 0, NULL);
    cr_assert(m && h);
    cr_assert(json_equal(m, json_object_get(h, "kv")),
              "meta --json --full and header --arrays write the entries differently");
    const json_t *u64s = json_array_get(m, 7);
    cr_assert_str_eq(json_string_value(json_object_get(u64s, "element_type")), "u64");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(u64s, "values"), 0)), 1);
    const json_t *f32s = json_object_get(json_array_get(m, 8), "values");
    cr_assert_eq((float)json_real_value(json_array_get(f32s, 0)), 1e-06f);
    json_decref(m);
    json_decref(h);
    free(meta);

    /* what header writes, write --from-header reads back: the same header again */
    const char *hj = test_path("h.json"), *again = test_path("again.gguf");
    FILE *out = fopen(hj, "w");
    cr_assert_not_null(out);
    fputs(header, out);
    fclose(out);
    free(header);
    tool_result w = tool_run("write", "--from-header", hj, again, NULL);
    cr_assert_eq(w.status, 0, "%s", w.err);
    tool_result_free(&w);
    char *a = STDOUT("meta", "--json", "--full", f), *b = STDOUT("meta", "--json", "--full", again);
    cr_assert_str_eq(a, b, "the header did not survive header | write --from-header");
    free(a);
    free(b);
}

Test(cli_json, offsets_are_absolute_and_empty_stats_are_null)
{
    const char *f = write_values();
    json_t *info = tool_json(0, "info", "--json", f, NULL);
    json_t *t = tool_json(0, "tensors", "--json", f, NULL);
    uint64_t start = json_u64(info, "data_start");
    const json_t *one = json_array_get(t, 1);
    cr_assert_eq(json_u64(one, "data_offset"), 32, "16 bytes of NaNs, aligned to 32");
    cr_assert_eq(json_u64(one, "file_offset"), start + 32);
    cr_assert_eq(json_u64(info, "tensors_end"), start + 32 + 4, "absolute, like data_start");
    json_decref(info);
    json_decref(t);

    json_t *s = tool_json(0, "stats", "--json", f, NULL);
    const json_t *nans = json_array_get(s, 0);
    static const char *const none[] = {"min", "max", "mean", "std"};
    for (size_t i = 0; i < 4; i++)
        cr_assert(json_is_null(json_object_get(nans, none[i])), "%s of NaNs is not null", none[i]);
    cr_assert_eq(json_u64(nans, "nan"), 4);
    json_decref(s);
    char *text = STDOUT("stats", "--json", f, "one");
    cr_assert(strstr(text, "\"min\": 1e-06,"), "%s", text);
    free(text);
    text = STDOUT("stats", f, "one");
    cr_assert(strstr(text, "smallest                 1e-06\n"), "%s", text);
    free(text);
}
