/* The tool's command line as a user types it: options before or after the command and its
 * arguments, every refusal naming the option and why, a suggestion for a near miss, exit 2 for
 * every usage error (a tensor or block the file lacks included) and 1 for a bad file. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

TestSuite(cli_options, .fini = test_cleanup);

static const char *demo(void)
{
    static char path[1024];
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is set by make");
    snprintf(path, sizeof path, "%.*s/demo.gguf", (int)(strrchr(tool, '/') - tool), tool);
    return path;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Run, expect `status`, and expect stderr to hold `says`; returns nothing, frees all. */
static void refused(int status, const char *says, const char *const *args)
{
    tool_result r = tool_run_in(NULL, args);
    cr_assert_eq(r.status, status, "%s: exit %d, expected %d; stderr: %s", args[0], r.status,
                 status, r.err);
    cr_assert(strstr(r.err, says), "%s: stderr lacks \"%s\": %s", args[0], says, r.err);
    cr_assert_eq(r.out_len, 0, "%s: a refusal printed on stdout: %s", args[0], r.out);
    cr_assert_leq(lines(r.err), 3, "%s: a refusal is a few lines, not the help: %s", args[0], r.err);
    tool_result_free(&r);
}

#define REFUSED(status, says, ...) refused(status, says, (const char *const[]){__VA_ARGS__, NULL})

Test(cli_options, options_go_before_or_after_the_command_and_its_file)
{
    const char *f = demo();
    json_t *before = tool_json(0, "--no-mmap", "info", "--json", f, NULL);
    json_t *after = tool_json(0, "info", f, "--json", "--no-mmap", NULL);
    json_t *mid = tool_json(0, "info", "--all-shards", "--json", f, NULL);
    cr_assert(json_equal(before, after), "info's JSON differs with the options moved");
    cr_assert(json_equal(before, mid));
    json_decref(before);
    json_decref(after);
    json_decref(mid);
    /* after "--" an argument is a file name even if it looks like an option */
    REFUSED(1, "--no-mmap", "info", "--", "--no-mmap");
}

Test(cli_options, a_near_miss_gets_a_suggestion)
{
    const char *f = demo();
    REFUSED(2, "there is no command 'inof' (did you mean info?)", "inof", f);
    REFUSED(2, "there is no command 'inof' (did you mean info?)", "help", "inof");
    REFUSED(2, "there is no command 'zzzzzz' (tensormap --help lists them)", "zzzzzz", f);
    REFUSED(2, "info: there is no option '--jsn' (did you mean --json?)", "info", "--jsn", f);
    REFUSED(2, "sketch: there is no option '--nolaign' (did you mean --noalign?)", "sketch",
            "--nolaign", "x");
    REFUSED(2, "there is no option '--nommap' before the command (did you mean --no-mmap?)",
            "--nommap", "info", f);
    REFUSED(2, "no tensor 'token_emb.weight' (did you mean 'token_embd.weight'?)", "stats", f,
            "token_emb.weight");
}

Test(cli_options, every_refusal_names_the_option_and_why)
{
    const char *f = demo();
    REFUSED(2, "sketch: --align needs a value", "sketch", "x.gguf", "--align");
    REFUSED(2, "info: --json takes no value ('--json=1')", "info", "--json=1", f);
    REFUSED(2, "dump: -o needs a value", "dump", f, "token_embd.weight", "-o");
    REFUSED(2, "dump: there is no option '-q'", "dump", "-q", f);
    REFUSED(2, "info: 1 argument too many", "info", f, f);
    REFUSED(2, "info: no FILE given", "info");
    REFUSED(2, "write: --from-header HEADER.json is required", "write", "out.gguf");
    REFUSED(2, "layer: N is a block number, not 'x'", "layer", f, "x");
    /* a header file that cannot be read is named with the reason, not "line -1, column -1" */
    REFUSED(1, "nosuch.json: unable to open", "write", "--from-header", "nosuch.json",
            test_path("out.gguf"));
}

Test(cli_options, usage_errors_exit_2_and_bad_files_exit_1)
{
    const char *f = demo();
    REFUSED(2, "no tensor 'nosuch'", "stats", f, "nosuch");
    REFUSED(2, "no tensor 'nosuch'", "dump", f, "nosuch", "-o", test_path("x.npy"));
    REFUSED(2, "no block 99", "layer", f, "99");
    const char *bad = test_path("bad.gguf");
    FILE *b = fopen(bad, "wb");
    cr_assert_not_null(b);
    fputs("GGUF\3\0\0\0", b); /* cut after the version */
    fclose(b);
    REFUSED(1, bad, "info", bad);
    REFUSED(1, bad, "stats", bad, "nosuch"); /* the file is refused before the name is looked for */
}

Test(cli_options, help_lists_every_global_option_and_the_man_page_too)
{
    tool_result h = tool_run("--help", NULL), m = tool_run("--man", NULL);
    cr_assert_eq(h.status, 0);
    cr_assert_eq(m.status, 0);
    static const char *const opts[] = {"--no-mmap", "--all-shards", "--version", "--help", "--man"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        cr_assert(strstr(h.out, opts[i]), "--help lacks %s", opts[i]);
        char roff[64] = "";
        for (const char *p = opts[i]; *p; p++)
            strncat(roff, *p == '-' ? "\\-" : (char[]){*p, 0}, sizeof roff - strlen(roff) - 1);
        cr_assert(strstr(m.out, roff), "the man page lacks %s", roff);
    }
    tool_result_free(&h);
    tool_result_free(&m);
    tool_result v = tool_run("--version", NULL);
    cr_assert_eq(v.status, 0);
    cr_assert(strncmp(v.out, "tensormap ", 10) == 0, "%s", v.out);
    tool_result_free(&v);
}

/* bytes on a damaged file: every field before the refused one, laid end to end from byte 0 (no
 * gap, no overlap: each starts where the one before ended), then the refused field at the offset
 * the refusal names, and exit 1. */
Test(cli_options, bytes_on_a_damaged_file_shows_every_field_up_to_the_refused_one)
{
    static const char *const files[] = {"vocab-bert-bge", "vocab-llama-spm", "vocab-phi-3"};
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus);
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/damaged/%s.gguf", corpus, files[i]);
        tool_result r = tool_run("bytes", "--json", path, NULL);
        cr_assert_eq(r.status, 1, "%s: exit %d", files[i], r.status);
        const char *at = strstr(r.err, " at byte ");
        cr_assert_not_null(at, "%s", r.err);
        unsigned long long refused = strtoull(at + 9, NULL, 10);
        json_t *a = json_loadb(r.out, r.out_len, 0, NULL);
        cr_assert(json_is_array(a), "%s: %s", files[i], r.out);
        size_t n = json_array_size(a);
        cr_assert_gt(n, 8, "%s: only %zu fields", files[i], n);
        uint64_t next = 0;
        for (size_t k = 0; k + 1 < n; k++) {
            const json_t *f = json_array_get(a, k);
            cr_assert_eq(json_u64(f, "offset"), next, "%s: field %zu starts at %llu, not %llu",
                         files[i], k, (unsigned long long)json_u64(f, "offset"),
                         (unsigned long long)next);
            next += json_u64(f, "size");
        }
        const json_t *last = json_array_get(a, n - 1);
        cr_assert_eq(next, refused, "%s: the fields end at %llu, the refusal is at %llu", files[i],
                     (unsigned long long)next, refused);
        cr_assert_eq(json_u64(last, "offset"), refused);
        cr_assert(strstr(json_string_value(json_object_get(last, "field")), "refused here: "));
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "field")),
                         "magic");
        json_decref(a);
        tool_result_free(&r);
    }
}

/* Every command, as --help lists it, refuses an unknown option the same way (exit 2, the option
 * named, the reason said) and says no word of the documents a user has not seen. */
Test(cli_options, every_command_refuses_an_unknown_option_alike)
{
    tool_result h = tool_run("--help", NULL);
    cr_assert_eq(h.status, 0);
    const char *p = strstr(h.out, "\ncommands:\n");
    cr_assert_not_null(p);
    int n = 0;
    for (p += strlen("\ncommands:\n"); strncmp(p, "  ", 2) == 0 && p[2] != ' '; n++) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(p + 2, " \n"), p + 2);
        REFUSED(2, "there is no option '--no-such-option'", name, "--no-such-option", "x");
        tool_result c = tool_run("help", name, NULL);
        cr_assert_eq(c.status, 0);
        for (const char *w = c.out; *w; w++)
            cr_assert(strncasecmp(w, "chapter", 7) && strncasecmp(w, "seed doc", 8) &&
                          strncasecmp(w, "lesson", 6),
                      "tensormap help %s speaks of something the user has not seen: %.60s", name,
                      w);
        tool_result_free(&c);
        p = strchr(p, '\n') + 1;
    }
    cr_assert_gt(n, 10);
    tool_result_free(&h);
}
