/* Every file the tool writes goes through here. A new command that writes anything must use
 * cli_output_open/close (a stream), cli_output_model (a GGUF writer) or cli_output_st_begin/
 * finish (a safetensors writer), after cli_output_allowed: nothing else may fopen a path for
 * writing or hand one to the library's writers.
 *
 * What it guarantees:
 * - "-" is standard output; a character device or FIFO is written directly. Neither is ever
 *   truncated or removed, whatever happens.
 * - A regular file is written as a temporary file beside it and renamed into place only when
 *   everything succeeded (tm_outfile): a failed or interrupted write leaves the old file, or
 *   nothing, exactly as it was. A signal that ends the process while it writes (SIGINT, SIGTERM,
 *   SIGHUP, ..., a SIGBUS from an input cut under its mapping) removes the temporary file
 *   first, and a file-size limit (SIGXFSZ) fails the write and takes the error path (sigbus.c).
 * - An output that is the same file as an input (device and inode, so through hard links and
 *   symlinks, for every shard of every file opened by cli_open) is refused with a message. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_output {
    FILE *stream;
    tm_outfile *file; /* NULL for standard output */
    const char *name;
    int guard;        /* cli_signal_guard's slot for the temporary file */
};

/* The inputs of this run, as (device, inode). A command reads a few files. */
enum { MAX_INPUTS = 64 };
typedef struct input {
    dev_t dev;
    ino_t ino;
    const char *name;
} input;
static input inputs[MAX_INPUTS];
static size_t n_inputs;

static void protect(const struct stat *st, const char *name)
{
    if (!S_ISREG(st->st_mode) || n_inputs == MAX_INPUTS)
        return; /* a pipe or device cannot be written over by replacing a file */
    inputs[n_inputs++] = (input){st->st_dev, st->st_ino, name};
}

void cli_output_protect_path(const char *path)
{
    struct stat st;
    if (strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, &st) == 0 : stat(path, &st) == 0)
        protect(&st, path);
}

void cli_output_protect_file(const tm_file *f, const char *arg)
{
    const tm_layout *l = tm_file_layout(f);
    if (strcmp(arg, "-") == 0)
        cli_output_protect_path(arg);
    for (uint32_t i = 0; l && i < l->n_shards; i++) {
        const char *p = tm_shard_path(f, i);
        struct stat st;
        if (p && stat(p, &st) == 0)
            protect(&st, i == 0 ? arg : p);
    }
}

bool cli_output_allowed(const char *path)
{
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0)
        return true;
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino) {
            cli_errorf("%s: is the same file as the input %s; refusing to write over an input",
                       path, inputs[i].name);
            return false;
        }
    return true;
}

/* tm_outfile_open, its temporary file guarded from the moment it exists (the signals wait
 * until it is). */
static tm_status open_guarded(tm_outfile **o, const char *path, int *guard, tm_error *err)
{
    sigset_t saved;
    cli_signals_hold(&saved);
    tm_status st = tm_outfile_open(o, path, err);
    *guard = st == TM_OK ? cli_signal_guard(tm_outfile_temp_path(*o)) : -1;
    cli_signals_release(&saved);
    return st;
}

cli_output *cli_output_open(const char *path)
{
    cli_output *o = calloc(1, sizeof *o);
    if (!o) {
        cli_errorf("out of memory");
        return NULL;
    }
    if (strcmp(path, "-") == 0) {
        o->stream = stdout;
        o->name = "standard output";
        return o;
    }
    o->name = path;
    tm_error err = {0};
    int fd = -1;
    if (!cli_output_allowed(path)) {
        free(o);
        return NULL;
    }
    if (open_guarded(&o->file, path, &o->guard, &err) != TM_OK) {
        cli_errorf("%s", err.message);
        free(o);
        return NULL;
    }
    /* stdio gets its own descriptor: fclose must not close the one the outfile syncs. */
    if ((fd = dup(tm_outfile_fd(o->file))) < 0 || !(o->stream = fdopen(fd, "wb"))) {
        cli_errorf("%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        tm_outfile_abort(o->file);
        cli_signal_forget(o->guard);
        free(o);
        return NULL;
    }
    return o;
}

FILE *cli_output_stream(const cli_output *o) { return o->stream; }

const char *cli_output_name(const cli_output *o) { return o->name; }

int cli_output_close(cli_output *o, int rc)
{
    if (!o->file) {
        free(o);
        return rc == CLI_OK ? cli_finish_output(rc) : rc;
    }
    if (fclose(o->stream) != 0 && rc == CLI_OK) {
        cli_errorf("%s: %s", o->name, strerror(errno));
        rc = CLI_FAIL;
    }
    tm_error err = {0};
    if (rc != CLI_OK) {
        tm_outfile_abort(o->file);
    } else if (tm_outfile_commit(o->file, &err) != TM_OK) {
        cli_errorf("%s", err.message);
        rc = CLI_FAIL;
    }
    cli_signal_forget(o->guard);
    free(o);
    return rc;
}

tm_status cli_output_model(tm_writer *w, const char *path, cli_output_check check, void *ctx,
                           tm_error *err)
{
    tm_outfile *o = NULL;
    int guard = -1;
    struct stat sb;
    tm_status st = TM_OK;
    if (stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode)) {
        /* refused before the open, which would wait for a reader (tm_writer_write_to says
         * why: a GGUF file is written by offset) */
        err->code = st = TM_INVALID_ARG;
        err->offset = TM_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "a FIFO cannot seek, and a GGUF file is "
                 "written by offset: write it to a file");
    }
    if (st == TM_OK)
        st = open_guarded(&o, path, &guard, err);
    if (st == TM_OK)
        st = tm_writer_write_to(w, o, err);
    tm_writer_free(w);
    if (st == TM_OK && check)
        st = check(ctx, tm_outfile_temp_path(o), err);
    if (st == TM_OK)
        st = tm_outfile_commit(o, err);
    else
        tm_outfile_abort(o);
    cli_signal_forget(guard);
    return st;
}

tm_status cli_output_st_begin(tm_st_writer *w, const char *path, int *guard, tm_error *err)
{
    sigset_t saved;
    cli_signals_hold(&saved);
    tm_status st = tm_st_writer_begin(w, path, err);
    *guard = cli_signal_guard(tm_st_writer_temp_path(w));
    cli_signals_release(&saved);
    return st;
}

tm_status cli_output_st_finish(tm_st_writer *w, int guard, tm_error *err)
{
    tm_status st = tm_st_writer_finish(w, err);
    cli_signal_forget(guard);
    return st;
}
