/* tensormap hash in the C suite, so that the sanitizer build runs it with leak detection on (the
 * Python tests, python/tests/test_hash.py, hold the hashes worked out independently): the
 * published vectors of "" and "abc" (FIPS 180-2; xxHash's own values), and --check's exit
 * codes on a manifest that matches, one that does not, and one that names nothing here. */
#include "support/helpers.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

TestSuite(hash, .fini = test_cleanup);

/* A GGUF with no tensor, or one i8 tensor "t" holding "abc". */
static const char *write_file(const char *name, bool abc)
{
    tb b = {0};
    tb_head(&b, 3, abc ? 1 : 0, 0);
    if (abc)
        tb_info(&b, "t", 1, (const uint64_t[]){3}, 24, 0);
    tb_pad(&b, 32);
    if (abc)
        tb_bytes(&b, "abc", 3);
    const char *path = test_path(name);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
    return path;
}

static void expect_model_lines(const char *path, const char *xxh, const char *sha1,
                               const char *sha256)
{
    tool_result r = tool_run("hash", "--all", "--no-layer", path, NULL);
    char want[1024];
    snprintf(want, sizeof want, "xxh64     %s  %s\nsha1      %s  %s\nsha256    %s  %s\n", xxh, path,
             sha1, path, sha256, path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want);
    tool_result_free(&r);
}

Test(hash, no_tensors_hash_as_the_empty_input)
{
    expect_model_lines(write_file("empty.gguf", false), "ef46db3751d8e999",
                       "da39a3ee5e6b4b0d3255bfef95601890afd80709",
                       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

Test(hash, abc_gives_the_published_vectors)
{
    expect_model_lines(write_file("abc.gguf", true), "44bc2cf5ad770999",
                       "a9993e364706816aba3e25717850c26c9cd0d89d",
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static int check_with(const char *path, const char *manifest_text, char **out)
{
    const char *manifest = test_path("manifest");
    FILE *m = fopen(manifest, "w");
    cr_assert_not_null(m);
    fputs(manifest_text, m);
    cr_assert_eq(fclose(m), 0);
    tool_result r = tool_run("hash", "--check", manifest, path, NULL);
    *out = strdup(r.out);
    int status = r.status;
    tool_result_free(&r);
    return status;
}

Test(hash, check_exit_codes)
{
    const char *path = write_file("abc.gguf", true);
    char line[512], *out;
    snprintf(line, sizeof line, "sha1  a9993e364706816aba3e25717850c26c9cd0d89d  %s:t\n", path);
    cr_assert_eq(check_with(path, line, &out), 0, "%s", out);
    cr_assert(strstr(out, ":t  -  Ok\n"), "%s", out);
    free(out);
    snprintf(line, sizeof line, "sha1  a9993e364706816aba3e25717850c26c9cd0d89e  %s:t\n", path);
    cr_assert_eq(check_with(path, line, &out), 1, "%s", out);
    cr_assert(strstr(out, ":t  -  Mismatch\n"), "%s", out);
    free(out);
    cr_assert_eq(check_with(path, "sha1  a9993e364706816aba3e25717850c26c9cd0d89d  x:t\n", &out),
                 3, "%s", out);
    free(out);
}
