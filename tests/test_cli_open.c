/* How the tool opens the file the user named (tools/cli/open.c), seen from two kinds of
 * caller: check, for which every refusal is its verdict on stdout, and every other command,
 * for which it is an error on stderr. An ollama: name that does not resolve is the case the
 * two used to handle in two copies of the same code. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(cli_open, .fini = test_cleanup);

/* An Ollama store with no model in it. */
static void empty_store(void)
{
    const char *store = test_path("store");
    cr_assert_eq(mkdir(store, 0755), 0, "mkdir %s", store);
    setenv("OLLAMA_MODELS", store, 1);
}

Test(cli_open, check_gives_an_unresolved_ollama_name_as_its_verdict)
{
    empty_store();
    tool_result r = tool_run("check", "ollama:nothere", NULL);
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    static const char verdict[] =
        "ollama:nothere: NOT consistent: the library refuses it: no model 'nothere'";
    cr_assert(strncmp(r.out, verdict, strlen(verdict)) == 0, "stdout: %s", r.out);
    cr_assert_str_empty(r.err, "the verdict is all check says: %s", r.err);
    tool_result_free(&r);

    json_t *j = tool_json(1, "check", "--json", "ollama:nothere", NULL);
    cr_assert(json_is_false(json_object_get(j, "consistent")));
    cr_assert_str_eq(json_string_value(json_object_get(j, "status")), "NOT_FOUND");
    const char *refused = json_string_value(json_object_get(j, "refused"));
    cr_assert(refused && strncmp(refused, "no model 'nothere'", 18) == 0, "refused: %s",
              refused ? refused : "(none)");
    json_decref(j);
}

Test(cli_open, other_commands_give_an_unresolved_ollama_name_as_an_error)
{
    empty_store();
    static const char *const cmds[] = {"info", "bytes"}; /* cli_open, cli_open_err */
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tool_result r = tool_run(cmds[i], "ollama:nothere", NULL);
        cr_assert_eq(r.status, 1, "%s: %s%s", cmds[i], r.out, r.err);
        static const char error[] = "tensormap: ollama:nothere: no model 'nothere'";
        cr_assert(strncmp(r.err, error, strlen(error)) == 0, "%s: stderr: %s", cmds[i], r.err);
        cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: said once: %s", cmds[i],
                  r.err);
        cr_assert_eq(r.out_len, 0, "%s: stdout: %s", cmds[i], r.out);
        tool_result_free(&r);
    }
}
