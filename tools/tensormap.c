/* tensormap — explain a model file, or pull its weights out. main takes the options every
 * command shares and dispatches: the table is tools/cli/commands.c, each command a file of
 * tools/cmd/. */
#include "cli/cli.h"

#include <string.h>

/* What each command takes, from its usage lines: one line per distinct argument list, naming
 * the commands that take it. */
static void print_arguments(FILE *out)
{
    enum { MAX_USES = 64 };
    struct {
        char args[128];
        const char *name;
    } use[MAX_USES]; /* every usage line's arguments, in command order */
    size_t n = 0, width = 0;
    char line[512];
    for (const cli_command *const *c = cli_commands; *c; c++)
        for (size_t k = 0; n < MAX_USES && cli_usage_line(*c, k, line, sizeof line); k++) {
            cli_usage_args(line, use[n].args, sizeof use[n].args);
            use[n].name = (*c)->name;
            width = strlen(use[n].args) > width ? strlen(use[n].args) : width;
            n++;
        }
    fprintf(out, "\nwhat each command takes (tensormap help COMMAND for its options):\n");
    for (size_t i = 0; i < n; i++) {
        bool listed = false; /* on an earlier line already */
        for (size_t j = 0; j < i && !listed; j++)
            listed = strcmp(use[j].args, use[i].args) == 0;
        if (listed)
            continue;
        fprintf(out, "  %-*s  %s", (int)width, use[i].args, use[i].name);
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(use[j].args, use[i].args) == 0 && use[j].name != use[j - 1].name)
                fprintf(out, ", %s", use[j].name);
        fputc('\n', out);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: tensormap [options] COMMAND [command options] ARGUMENTS\n\ncommands:\n");
    for (const cli_command *const *c = cli_commands; *c; c++)
        fprintf(out, "  %-10s %s\n", (*c)->name, (*c)->summary);
    print_arguments(out);
    fprintf(out, "\noptions (--no-mmap, --all-shards and --one-shard also after the command):\n");
    for (const cli_global_option *o = cli_global_options; o->name; o++) {
        char names[32];
        snprintf(names, sizeof names, "%s%s%s", o->short_name ? o->short_name : "",
                 o->short_name ? ", " : "", o->name);
        fprintf(out, "  %-14s %s\n", names, o->help);
    }
    fprintf(out, "\n%s`tensormap help COMMAND` or `tensormap COMMAND --help` for a command's "
                 "options.\n", cli_inputs_help());
}

/* "no command 'inof' (did you mean info?)" */
static int no_command(const char *name)
{
    const char *names[64];
    size_t n = 0;
    for (const cli_command *const *c = cli_commands; *c && n < 64; c++)
        names[n++] = (*c)->name;
    const char *near = cli_nearest(name, names, n);
    if (near)
        cli_errorf("there is no command '%s' (did you mean %s?)", name, near);
    else
        cli_errorf("there is no command '%s' (tensormap --help lists them)", name);
    return CLI_USAGE;
}

/* Take the options that apply to every command out of argv wherever they stand (before a
 * "--"), so `tensormap info --no-mmap F` is `tensormap --no-mmap info F`. Returns the new argc. */
static int take_global_options(int argc, char **argv)
{
    int out = 1;
    bool rest = false;
    for (int i = 1; i < argc; i++) {
        const cli_global_option *hit = NULL;
        for (const cli_global_option *o = cli_global_options; !rest && o->name; o++)
            if (o->anywhere && strcmp(argv[i], o->name) == 0)
                hit = o;
        rest |= strcmp(argv[i], "--") == 0;
        if (hit)
            cli_open_flags |= hit->open_flag;
        else
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char **argv)
{
    argc = take_global_options(argc, argv);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--man") == 0) { /* the Makefile's tensormap.1 */
            cli_man(stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("tensormap %s (library %s, %s)\n", TM_VERSION_STRING, tm_version(), tm_isa());
            return CLI_OK;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CLI_OK;
        } else {
            const char *names[CLI_N_GLOBAL_OPTIONS];
            size_t n = 0;
            for (const cli_global_option *o = cli_global_options;
                 o->name && n < sizeof names / sizeof names[0]; o++)
                names[n++] = o->name + 2;
            const char *near = strncmp(argv[i], "--", 2) == 0
                                   ? cli_nearest(argv[i] + 2, names, n) : NULL;
            cli_errorf("there is no option '%s' before the command%s%s%s", argv[i],
                       near ? " (did you mean --" : " (tensormap --help lists them)",
                       near ? near : "", near ? "?)" : "");
            return CLI_USAGE;
        }
    }
    if ((cli_open_flags & TM_OPEN_ALL_SHARDS) && (cli_open_flags & TM_OPEN_ONE_SHARD)) {
        cli_errorf("--all-shards and --one-shard contradict each other");
        return CLI_USAGE;
    }
    if (i >= argc) {
        cli_errorf("no command given");
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 >= argc) {
            usage(stdout);
            return CLI_OK;
        }
        const cli_command *c = cli_find_command(argv[i + 1]);
        if (!c)
            return no_command(argv[i + 1]);
        fputs(c->help, stdout);
        return CLI_OK;
    }
    const cli_command *c = cli_find_command(argv[i]);
    if (!c)
        return no_command(argv[i]);
    return c->run(argc - i, argv + i);
}
