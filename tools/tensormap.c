/* tensormap — explain a model file, or pull its weights out. One function per subcommand. */
#include "cli/cli_util.h"

#include <stdlib.h>
#include <string.h>

unsigned cli_open_flags;

const cli_command *const cli_commands[] = {
    &cmd_info,
    &cmd_meta,
    &cmd_tensors,
    &cmd_stack,
    &cmd_layer,
    &cmd_check,
    &cmd_bytes,
    &cmd_header,
    &cmd_write,
    &cmd_stats,
    &cmd_dump,
    &cmd_tokens,
    &cmd_sketch,
    &cmd_compare,
    &cmd_split,
    &cmd_merge,
    &cmd_edit,
    &cmd_export,
    NULL,
};

const cli_global_option cli_global_options[] = {
    {"--no-mmap", NULL, true, TM_OPEN_NO_MMAP,
     "read the file instead of mapping it (a file that may change while it is read)"},
    {"--all-shards", NULL, true, TM_OPEN_ALL_SHARDS,
     "open a sharded safetensors checkpoint or split GGUF set whole through any one shard"},
    {"--one-shard", NULL, true, TM_OPEN_ONE_SHARD,
     "open one shard of a split GGUF set alone (even the first, which opens the set)"},
    {"--version", NULL, false, 0, "print the version and the instruction set decoding uses"},
    {"--help", "-h", false, 0, "list the commands (tensormap help COMMAND for one command)"},
    {"--man", NULL, false, 0, "print this manual page in roff (man -l <(tensormap --man))"},
    {NULL, NULL, false, 0, NULL},
};

const cli_command *cli_find_command(const char *name)
{
    for (const cli_command *const *c = cli_commands; *c; c++)
        if (strcmp((*c)->name, name) == 0 || ((*c)->alias && strcmp((*c)->alias, name) == 0))
            return *c;
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: tensormap [options] COMMAND [command options] FILE ...\n\ncommands:\n");
    for (const cli_command *const *c = cli_commands; *c; c++)
        fprintf(out, "  %-10s %s\n", (*c)->name, (*c)->summary);
    fprintf(out, "\noptions (--no-mmap, --all-shards and --one-shard also after the command):\n");
    for (const cli_global_option *o = cli_global_options; o->name; o++) {
        char names[32];
        snprintf(names, sizeof names, "%s%s%s", o->short_name ? o->short_name : "",
                 o->short_name ? ", " : "", o->name);
        fprintf(out, "  %-14s %s\n", names, o->help);
    }
    fprintf(out, "\nFILE is a path, - for standard input, or ollama:NAME[:TAG]. A safetensors\n"
                 "checkpoint in shards opens through its model.safetensors.index.json, or through\n"
                 "any one shard with --all-shards. A split GGUF set (NAME-00001-of-00003.gguf ...)\n"
                 "opens as one model through its first shard, or any shard with --all-shards;\n"
                 "--one-shard opens a shard alone.\n"
                 "`tensormap help COMMAND` or `tensormap COMMAND --help` for a command's options.\n");
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
            const char *names[8];
            size_t n = 0;
            for (const cli_global_option *o = cli_global_options; o->name; o++)
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
