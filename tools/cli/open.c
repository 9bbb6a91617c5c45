/* Opening the file the user named: a path, "-" for standard input, or ollama:NAME[:TAG], with
 * the options every command takes (cli_open_flags), SIGBUS watched and the mapping protected
 * from being written over. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

unsigned cli_open_flags;

tm_file *cli_open(const char *arg, unsigned extra_flags)
{
    tm_error err = {0};
    tm_file *f = cli_open_err(arg, extra_flags, &err);
    if (!f && err.code != TM_OK)
        cli_report(arg, &err);
    return f;
}

tm_file *cli_open_err(const char *arg, unsigned extra_flags, tm_error *err)
{
    bool unresolved;
    tm_file *f = cli_open_quiet(arg, extra_flags, err, &unresolved);
    if (unresolved) {
        cli_errorf("%s: %s", arg, err->message);
        err->code = TM_OK; /* reported: the caller says nothing more */
    }
    return f;
}

/* The one way the tool opens a file (check, which gives every failure as its verdict, calls it
 * directly): what the two callers must not do differently is here once. */
tm_file *cli_open_quiet(const char *arg, unsigned extra_flags, tm_error *err, bool *unresolved)
{
    unsigned flags = cli_open_flags | extra_flags;
    if (strcmp(arg, "-") == 0)
        flags |= TM_OPEN_NO_MMAP; /* a pipe cannot be mapped */
    const char *path = arg;
    char *resolved = NULL;
    if (unresolved)
        *unresolved = false;
    /* ---- ollama:NAME[:TAG] is resolved here, to the blob the manifest names (ollama.c) */
    if (strncmp(arg, "ollama:", 7) == 0) {
        resolved = cli_ollama_path(arg + 7, err->message, sizeof err->message);
        if (!resolved) {
            err->code = TM_NOT_FOUND;
            err->offset = TM_NO_OFFSET;
            if (unresolved)
                *unresolved = true;
            return NULL;
        }
        path = resolved;
    }
    tm_file *f = NULL;
    cli_sigbus_watch(arg); /* before tm_open: the header walk reads the mapping too */
    if (tm_open(path, flags, &f, err) != TM_OK) {
        f = NULL;
    } else {
        cli_sigbus_mapped(f);
        cli_output_protect_file(f, arg);
    }
    free(resolved);
    return f;
}
