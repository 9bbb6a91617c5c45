/* The tool's command line as a user types it: options before or after the command and its
 * arguments, every refusal naming the option and why, a suggestion for a near miss, exit 2 for
 * every usage error (a tensor or block the file lacks included) and 1 for a bad file. */
#include "test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
