/* What --help and the man page tell a new user: that FILE may be a URL or hf:OWNER/REPO/FILE
 * (and what comes over the wire), what each command takes rather than "FILE ..." for all, and
 * the environment that remote files read. What each command takes is worked out here from its
 * own help's usage lines (`tensormap help NAME`), by this file's reading of them, and must be
 * what --help lists and the man page's synopsis shows. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(cli_help, .fini = test_cleanup);

enum { MAX_COMMANDS = 64, MAX_USAGES = 4 };

typedef struct command {
    char name[32];
    char usage[MAX_USAGES][512]; /* after "tensormap ", continuation lines joined */
    int n_usages;
} command;

/* The command names, as --help lists them under "commands:". */
static int list_commands(const char *help, command *cmds)
{
    const char *p = strstr(help, "\ncommands:\n");
    cr_assert_not_null(p, "no command list in --help:\n%s", help);
    int n = 0;
    for (p += strlen("\ncommands:\n"); strncmp(p, "  ", 2) == 0 && isalpha((unsigned char)p[2]);) {
        cr_assert_lt(n, MAX_COMMANDS);
        snprintf(cmds[n].name, sizeof cmds[n].name, "%.*s", (int)strcspn(p + 2, " "), p + 2);
        cmds[n++].n_usages = 0;
        p = strchr(p, '\n') + 1;
    }
    cr_assert_gt(n, 10);
    return n;
}

/* A command's usage lines: "usage: tensormap NAME ..." and "       tensormap NAME ...", each
 * with the indented lines under it, up to the first empty line. */
static void read_usages(command *c)
{
    tool_result r = tool_run("help", c->name, NULL);
    cr_assert_eq(r.status, 0, "help %s: %s", c->name, r.err);
    for (char *line = r.out; *line && *line != '\n';) {
        char *end = line + strcspn(line, "\n");
        const bool first = strncmp(line, "usage: tensormap ", 17) == 0,
                   more = strncmp(line, "       tensormap ", 17) == 0;
        if (first || more) {
            cr_assert_lt(c->n_usages, MAX_USAGES);
            snprintf(c->usage[c->n_usages++], sizeof c->usage[0], "%.*s", (int)(end - line - 17),
                     line + 17);
        } else {
            cr_assert_gt(c->n_usages, 0, "help %s does not start with its usage", c->name);
            char *u = c->usage[c->n_usages - 1];
            const char *text = line + strspn(line, " ");
            snprintf(u + strlen(u), sizeof c->usage[0] - strlen(u), " %.*s", (int)(end - text),
                     text);
        }
        line = *end ? end + 1 : end;
    }
    cr_assert_gt(c->n_usages, 0, "help %s has no usage line", c->name);
    tool_result_free(&r);
}

/* The arguments of a usage line: its words after the name, leaving out each bracketed group
 * that starts with an option ("[--json]", "[--json [--full]]", "[--set K=V]...") and keeping
 * optional arguments ("[TENSOR ...]"). */
static void arguments(const char *usage, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = strchr(usage, ' ');
    while (p && *p) {
        while (*p == ' ')
            p++;
        if (p[0] == '[' && p[1] == '-') {
            for (int depth = 0; *p && (depth += (*p == '[') - (*p == ']'), depth > 0 || *p != ']');)
                p++;
            p += *p == ']';
            if (strncmp(p, "...", 3) == 0)
                p += 3;
            continue;
        }
        const size_t len = strcspn(p, " ");
        if (len)
            snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", out[0] ? " " : "", (int)len, p);
        p += len;
    }
}

Test(cli_help, help_says_what_each_command_takes_and_what_file_may_be)
{
    tool_result h = tool_run("--help", NULL);
    cr_assert_eq(h.status, 0);
    const char *nl = strchr(h.out, '\n');
    char first_line[256];
    snprintf(first_line, sizeof first_line, "%.*s", (int)(nl - h.out), h.out);
    cr_expect_null(strstr(first_line, "FILE ..."), "the usage line says every command takes "
                   "files: %s", first_line);
    cr_expect(strstr(first_line, "COMMAND"), "%s", first_line);

    /* FILE may be a URL or hf:, when this build reads them; said either way */
    if (tm_remote_supported()) {
        static const char *const words[] = {"http://", "https://", "s3://BUCKET/KEY",
                                            "hf:OWNER/REPO/FILE", "HF_TOKEN", "HF_ENDPOINT",
                                            "HF_HUB_OFFLINE", "AWS_ENDPOINT_URL"};
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            cr_expect(strstr(h.out, words[i]), "--help never mentions %s:\n%s", words[i], h.out);
    } else {
        cr_expect(strstr(h.out, "built without libcurl"), "%s", h.out);
    }

    /* every command, under each argument list its usage lines take */
    static command cmds[MAX_COMMANDS];
    int n = list_commands(h.out, cmds);
    const char *table = strstr(h.out, "\nwhat each command takes");
    cr_assert_not_null(table, "--help does not say what each command takes:\n%s", h.out);
    table = strchr(table + 1, '\n') + 1;
    for (int i = 0; i < n; i++) {
        read_usages(&cmds[i]);
        for (int k = 0; k < cmds[i].n_usages; k++) {
            char args[256];
            arguments(cmds[i].usage[k], args, sizeof args);
            /* the table's line for these arguments names the command */
            bool found = false;
            for (const char *line = table; strncmp(line, "  ", 2) == 0;
                 line = strchr(line, '\n') + 1) {
                char row[512];
                snprintf(row, sizeof row, "%.*s", (int)strcspn(line, "\n"), line);
                const size_t alen = strlen(args);
                if (strncmp(row + 2, args, alen) != 0 || strncmp(row + 2 + alen, "  ", 2) != 0)
                    continue;
                for (char *w = strtok(row + 2 + alen, " ,"); w; w = strtok(NULL, " ,"))
                    found |= strcmp(w, cmds[i].name) == 0;
            }
            cr_expect(found, "--help does not list %s under \"%s\" (its usage: %s)", cmds[i].name,
                      args, cmds[i].usage[k]);
        }
    }
    /* a few by hand, so that the reading above cannot drift with the tool's */
    static const char *const by_hand[][2] = {
        {"FILE [TENSOR ...]", "stats"}, {"A B", "compare"},    {"FILE TENSOR -o OUT", "dump"},
        {"FIRST_SHARD OUT", "merge"},   {"FILE N", "layer"},   {"OUT", "sketch"},
    };
    for (size_t i = 0; i < sizeof by_hand / sizeof by_hand[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "\n  %s  ", by_hand[i][0]);
        const char *at = strstr(table - 1, want);
        cr_expect(at && strstr(at, by_hand[i][1]) &&
                      strstr(at, by_hand[i][1]) < strchr(at + 1, '\n'),
                  "--help lacks \"%s  ... %s\"", by_hand[i][0], by_hand[i][1]);
    }
    tool_result_free(&h);

    /* the man page: the same words, each command's usage in the synopsis, the environment */
    tool_result m = tool_run("--man", NULL);
    cr_assert_eq(m.status, 0);
    const char *synopsis = strstr(m.out, ".SH SYNOPSIS\n"), *after = strstr(m.out, ".SH DESCRIPTION");
    cr_assert(synopsis && after, "%s", m.out);
    cr_expect_null(strstr(m.out, "FILE ...\n"), "the synopsis still says FILE ...");
    for (int i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, ".B tensormap\n[options] %.31s ", cmds[i].name);
        const char *at = strstr(synopsis, want);
        cr_expect(at && at < after, "the synopsis lacks %s", cmds[i].name);
    }
    if (tm_remote_supported()) {
        static const char *const words[] = {"http://", "https://", "hf:OWNER/REPO/FILE",
                                            ".B HF_TOKEN\n", ".B HF_ENDPOINT\n",
                                            ".B CURL_CA_BUNDLE\n", ".B TM_HTTP_CHUNK\n",
                                            ".B HF_HUB_CACHE\n", ".B HF_HUB_OFFLINE\n",
                                            "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                                            ".B TM_PREFETCH_METHOD\n"};
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            cr_expect(strstr(m.out, words[i]), "the man page never mentions %s", words[i]);
    }
    tool_result_free(&m);
}
