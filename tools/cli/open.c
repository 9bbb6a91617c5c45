/* Opening the file the user named: a path, "-" for standard input, or ollama:NAME[:TAG], with
 * the options every command takes (cli_open_flags), SIGBUS watched and the mapping protected
 * from being written over. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A file cut off after its header (a download that stopped) is there to be inspected: the
 * header commands read it, and what reads a cut tensor's bytes is refused, naming it. */
unsigned cli_open_flags = TM_OPEN_TRUNCATED;

tm_file *cli_open(const char *arg, unsigned extra_flags)
{
    tm_error err = {0};
    tm_file *f = cli_open_err(arg, extra_flags, &err);
    if (!f && err.code != TM_OK)
        cli_report(arg, &err);
    return f;
}

uint64_t cli_cut_tensors(const tm_file *f)
{
    uint64_t cut = 0;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        cut += tm_tensor_is_cut(tm_tensor_at(f, i));
    return cut;
}

/* A file cut off after its header opens (TM_OPEN_TRUNCATED): say so, whatever the command, so
 * that a header read from it is not taken for a whole model's. */
static void warn_if_cut(const char *arg, const tm_file *f)
{
    const uint64_t missing = tm_file_missing_bytes(f), n = tm_n_tensors(f);
    if (missing == 0)
        return;
    cli_errorf("%s: the file is cut off (a truncated download?): %" PRIu64 " bytes are missing "
               "from its end, and %" PRIu64 " of its %" PRIu64 " tensors with them; the header "
               "reads, those tensors cannot be decoded ('tensormap check' names them)",
               arg, missing, cli_cut_tensors(f), n);
}

tm_file *cli_open_err(const char *arg, unsigned extra_flags, tm_error *err)
{
    bool unresolved;
    tm_file *f = cli_open_quiet(arg, extra_flags, err, &unresolved);
    if (unresolved) {
        cli_errorf("%s: %s", arg, err->message);
        err->code = TM_OK; /* reported: the caller says nothing more */
    }
    if (f)
        warn_if_cut(arg, f); /* check, calling cli_open_quiet, reports a cut file itself */
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
    cli_in_place_recover(path); /* an in-place edit that died is undone before it is read */
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
