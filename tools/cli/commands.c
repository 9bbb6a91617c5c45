/* The command table and the options every command takes: what main dispatches on, and what
 * --help and the man page list. */
#include "cli.h"

#include <string.h>

const cli_command *const cli_commands[] = {
    &cmd_info,
    &cmd_meta,
    &cmd_tensors,
    &cmd_stack,
    &cmd_layer,
    &cmd_check,
    &cmd_bytes,
    &cmd_hash,
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
    &cmd_download,
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
_Static_assert(sizeof cli_global_options / sizeof cli_global_options[0] == CLI_N_GLOBAL_OPTIONS + 1,
               "CLI_N_GLOBAL_OPTIONS in cli.h counts cli_global_options");

const cli_command *cli_find_command(const char *name)
{
    for (const cli_command *const *c = cli_commands; *c; c++)
        if (strcmp((*c)->name, name) == 0 || ((*c)->alias && strcmp((*c)->alias, name) == 0))
            return *c;
    return NULL;
}

