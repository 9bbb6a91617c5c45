/* write --from-header: the new file is checked against the JSON before it replaces OUT (a
 * mismatch leaves OUT as it was and nothing else behind), and values are refused, not changed,
 * when their type cannot hold them. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(write_header, .fini = test_cleanup);

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* The names in the test's directory but the runner's own captures, sorted, space-separated. */
static char *names_in_dir(void)
{
    struct dirent **names;
    int n = scandir(test_dir(), &names, NULL, alphasort);
    cr_assert_geq(n, 0);
    char *out = calloc(1, 4096);
    for (int i = 0; i < n; i++) {
        const char *d = names[i]->d_name;
        if (strcmp(d, ".") && strcmp(d, "..") && strcmp(d, ".stdout") && strcmp(d, ".stderr"))
            snprintf(out + strlen(out), 4096 - strlen(out), "%s ", d);
        free(names[i]);
    }
    free(names);
    return out;
}

/* A header whose own numbers disagree with what its entries make (data_start 4096 for a
 * header that ends at byte 64) is written, read back, found wrong, and never put in place. */
Test(write_header, a_header_that_does_not_read_back_leaves_out_as_it_was)
{
    const char *json = test_path("h.json"), *out = test_path("out.gguf");
    write_text(json, "{\"data_size\": 0, \"data_start\": 4096, \"kv\": [{\"key\": \"a\", "
                     "\"type\": \"u8\", \"value\": 3}], \"tensors\": []}");
    write_text(out, "precious");
    tool_result r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "data_start is 64 where the header says 4096"), "%s", r.err);
    tool_result_free(&r);
    char *kept = read_all(out, NULL);
    cr_expect_str_eq(kept, "precious", "OUT was replaced by a file that failed its check");
    free(kept);
    char *names = names_in_dir();
    cr_expect_str_eq(names, "h.json out.gguf ", "left behind: %s", names);
    free(names);
}

/* The same header with its own numbers right is written and put in place. */
Test(write_header, a_header_that_reads_back_replaces_out)
{
    const char *json = test_path("h.json"), *out = test_path("out.gguf");
    write_text(json, "{\"data_size\": 0, \"data_start\": 64, \"kv\": [{\"key\": \"a\", "
                     "\"type\": \"u8\", \"value\": 3}], \"tensors\": []}");
    write_text(out, "precious");
    tool_result r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.out, "64 bytes, 64 of header and padding"), "%s", r.out);
    tool_result_free(&r);
    char *names = names_in_dir();
    cr_expect_str_eq(names, "h.json out.gguf ", "left behind: %s", names);
    free(names);
}

/* A finite number beyond f32's range (1e300) would become an infinity the JSON never said: it
 * is refused, naming the entry, and nothing is written. "inf" still writes an infinity. */
Test(write_header, an_f32_out_of_range_is_refused_not_stored_as_inf)
{
    const char *json = test_path("h.json"), *out = test_path("out.gguf");
    write_text(json, "{\"data_size\": 0, \"kv\": [{\"key\": \"x\", \"type\": \"f32\", "
                     "\"value\": 1e300}], \"tensors\": []}");
    tool_result r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "kv 0 ('x')") && strstr(r.err, "out of f32's range"), "%s", r.err);
    tool_result_free(&r);
    cr_expect_neq(access(out, F_OK), 0, "%s was written", out);
    write_text(json, "{\"data_size\": 0, \"kv\": [{\"key\": \"x\", \"type\": \"arr\", "
                     "\"element_type\": \"f32\", \"count\": 2, \"values\": [1, -1e39]}], "
                     "\"tensors\": []}");
    r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "out of f32's range"), "%s", r.err);
    tool_result_free(&r);
    write_text(json, "{\"data_size\": 0, \"kv\": [{\"key\": \"x\", \"type\": \"f32\", "
                     "\"value\": \"-inf\"}, {\"key\": \"y\", \"type\": \"f64\", "
                     "\"value\": 1e300}], \"tensors\": []}");
    r = tool_run("write", "--from-header", json, out, NULL);
    cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    tool_result_free(&r);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(out, 0, &f, &err), TM_OK, "%s", err.message);
    tm_value v;
    cr_assert_eq(tm_kv_value(tm_kv_find(f, "x"), &v), TM_OK);
    cr_expect(v.as.f < 0 && v.as.f * 0 != 0, "x is %g, not -inf", v.as.f);
    cr_assert_eq(tm_kv_value(tm_kv_find(f, "y"), &v), TM_OK);
    cr_expect_eq(v.as.f, 1e300);
    tm_close(f);
}
