/* Names a file supplies reach the library's messages quoted (tm__quote): a safetensors index's
 * shard names, which are also file names, and the tokens jansson quotes from a JSON header. A
 * message is printed by the tool (which keeps newlines) and carried by Python's exceptions
 * (which escape nothing): a newline in a name would forge a line, an ESC drive the terminal. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(quoted_names, .fini = test_cleanup);

/* A shard name with a newline that forges a line of output, ESC, BEL and DEL. */
#define EVIL "x\nTENSORMAP: forged\x1b[31m\x07\x7f.safetensors"
#define EVIL_JSON "x\\nTENSORMAP: forged\\u001b[31m\\u0007\\u007f.safetensors"
/* ... as tm__quote shows it (in a path, after the directory) */
#define EVIL_SHOWN "x\\x0aTENSORMAP: forged\\x1b[31m\\x07\\x7f.safetensors"
#define EVIL_QUOTED "'" EVIL_SHOWN "'"

/* Printable ASCII only, and the text expected in it. */
static void expect_quoted(const char *message, const char *want)
{
    for (const char *p = message; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
                  "byte 0x%02x at %zu of the message reached it raw: %s", (unsigned char)*p,
                  (size_t)(p - message), message);
    cr_assert(strstr(message, want), "should say %s: %s", want, message);
}

/* One shard in the test's directory: tensor name of 4 f32. */
static void write_shard(const char *file, const char *tensor)
{
    static const float v[4] = {1, 2, 3, 4};
    const uint64_t shape[1] = {4};
    st_writer *w = st_writer_new();
    st_writer_add(w, tensor, "F32", 1, shape, v, sizeof v);
    cr_assert_eq(st_writer_write(w, test_path(file)), 0, "%s", file);
    st_writer_free(w);
}

/* The index, with weight_map given as JSON; tm_open on it must fail with code. */
static void expect_refused(const char *weight_map, tm_status code, const char *want)
{
    char json[1024];
    snprintf(json, sizeof json, "{\"metadata\": {}, \"weight_map\": %s}", weight_map);
    FILE *f = fopen(test_path("model.safetensors.index.json"), "w");
    cr_assert_not_null(f);
    fputs(json, f);
    cr_assert_eq(fclose(f), 0);
    tm_file *file = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(test_path("model.safetensors.index.json"), 0, &file, &err), code,
                 "%s", err.message);
    expect_quoted(err.message, want);
}

Test(quoted_names, a_missing_shard)
{
    expect_refused("{\"a\": \"" EVIL_JSON "\"}", TM_NOT_FOUND,
                   "/" EVIL_SHOWN "': the shard is missing");
}

Test(quoted_names, a_shard_that_is_not_a_regular_file)
{
    cr_assert_eq(mkdir(test_path(EVIL), 0700), 0);
    expect_refused("{\"a\": \"" EVIL_JSON "\"}", TM_IO,
                   "/" EVIL_SHOWN "': is not a regular file");
}

Test(quoted_names, a_shard_whose_header_is_bad)
{
    FILE *f = fopen(test_path(EVIL), "w");
    cr_assert_not_null(f);
    fputs("not a safetensors file", f);
    cr_assert_eq(fclose(f), 0);
    expect_refused("{\"a\": \"" EVIL_JSON "\"}", TM_NOT_MODEL, "shard " EVIL_QUOTED ": ");
}

Test(quoted_names, a_tensor_the_index_places_in_another_shard)
{
    write_shard("one.safetensors", "a");
    write_shard(EVIL, "b");
    expect_refused("{\"a\": \"" EVIL_JSON "\", \"b\": \"" EVIL_JSON
                   "\", \"c\": \"one.safetensors\"}",
                   TM_BAD_VALUE, "tensor 'a' is placed by the index in " EVIL_QUOTED);
}

Test(quoted_names, a_tensor_no_shard_holds)
{
    write_shard("one.safetensors", "a");
    write_shard(EVIL, "b");
    expect_refused("{\"a\": \"one.safetensors\", \"b\": \"" EVIL_JSON "\", \"c\": \"" EVIL_JSON
                   "\"}",
                   TM_NOT_FOUND, "puts tensor 'c' in " EVIL_QUOTED);
}

/* The shard a refusal is about is named in front of it. */
Test(quoted_names, a_tensor_in_a_shard_the_index_does_not_place_it_in)
{
    write_shard("one.safetensors", "a");
    write_shard(EVIL, "a");
    expect_refused("{\"a\": \"one.safetensors\", \"b\": \"" EVIL_JSON "\"}", TM_BAD_VALUE,
                   "shard " EVIL_QUOTED ": tensor 'a' is placed by the index in 'one.safetensors'");
}

/* jansson names the token it stopped at as the file spells it: a repeated key holding DEL and
 * U+009B (CSI, a C1 control, valid in a JSON string) came through raw. */
Test(quoted_names, a_duplicate_key_in_a_safetensors_header)
{
    static const char header[] = "{\"k\x7f\xc2\x9b\": {\"dtype\": \"U8\", \"shape\": [1], "
                                 "\"data_offsets\": [0, 1]}, \"k\x7f\xc2\x9b\": 1}";
    size_t len;
    uint8_t *image = st_image_raw(header, "x", 1, &len);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open_buffer(image, len, 0, &f, &err), TM_DUPLICATE, "%s", err.message);
    expect_quoted(err.message,
                  "a name appears twice: duplicate object key near '\"k\\x7f\\xc2\\x9b\"'");
    free(image);
}

/* The tool's error for a missing shard is one line: the name's newline cannot forge another. */
Test(quoted_names, the_tool_reports_a_missing_shard_in_one_line)
{
    FILE *f = fopen(test_path("model.safetensors.index.json"), "w");
    cr_assert_not_null(f);
    fputs("{\"weight_map\": {\"a\": \"" EVIL_JSON "\"}}", f);
    cr_assert_eq(fclose(f), 0);
    tool_result r = tool_run("info", test_path("model.safetensors.index.json"), NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    const char *nl = strchr(r.err, '\n');
    cr_assert(nl && nl[1] == '\0', "more than one line:\n%s", r.err);
    cr_assert(strstr(r.err, "the shard is missing") && !strstr(r.err, "\x1b"), "%s", r.err);
    tool_result_free(&r);
}
