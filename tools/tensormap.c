/* tensormap — explain a model file, or pull its weights out. One function per subcommand. */
#include "cli.h"

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
    NULL,
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
    fprintf(out, "usage: tensormap [--no-mmap] [--all-shards | --one-shard] COMMAND [options] FILE ...\n\n"
                 "commands:\n");
    for (const cli_command *const *c = cli_commands; *c; c++)
        fprintf(out, "  %-10s %s\n", (*c)->name, (*c)->summary);
    fprintf(out, "\nFILE is a path, - for standard input, or ollama:NAME[:TAG]. A safetensors\n"
                 "checkpoint in shards opens through its model.safetensors.index.json, or through\n"
                 "any one shard with --all-shards. A split GGUF set (NAME-00001-of-00003.gguf ...)\n"
                 "opens as one model through its first shard, or any shard with --all-shards;\n"
                 "--one-shard opens a shard alone.\n"
                 "`tensormap help COMMAND` or `tensormap COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--no-mmap") == 0) {
            cli_open_flags |= TM_OPEN_NO_MMAP;
        } else if (strcmp(argv[i], "--all-shards") == 0) { /* a shard opens its checkpoint */
            cli_open_flags |= TM_OPEN_ALL_SHARDS;
        } else if (strcmp(argv[i], "--one-shard") == 0) { /* a shard of a split set, alone */
            cli_open_flags |= TM_OPEN_ONE_SHARD;
        } else if (strcmp(argv[i], "--man") == 0) { /* hidden: the Makefile's tensormap.1 */
            cli_man(stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("tensormap %s (library %s, %s)\n", TM_VERSION_STRING, tm_version(), tm_isa());
            return CLI_OK;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CLI_OK;
        } else {
            cli_errorf("unknown option '%s'", argv[i]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    if ((cli_open_flags & TM_OPEN_ALL_SHARDS) && (cli_open_flags & TM_OPEN_ONE_SHARD)) {
        cli_errorf("--all-shards and --one-shard contradict each other");
        return CLI_USAGE;
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 >= argc) {
            usage(stdout);
            return CLI_OK;
        }
        const cli_command *c = cli_find_command(argv[i + 1]);
        if (!c) {
            cli_errorf("no command '%s'", argv[i + 1]);
            return CLI_USAGE;
        }
        fputs(c->help, stdout);
        return CLI_OK;
    }
    const cli_command *c = cli_find_command(argv[i]);
    if (!c) {
        cli_errorf("no command '%s'", argv[i]);
        usage(stderr);
        return CLI_USAGE;
    }
    return c->run(argc - i, argv + i);
}
