/* What the commands that write a model (split, merge, edit) share: a writer shaped like the
 * source, the finish with a progress line on stderr (only when it is a terminal, and only
 * once the work has taken more than a second; a minimal one until the tool has one progress
 * helper for every command), and which keys are a split set's own. */
#include "cli.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct progress {
    const char *what;
    double start, last;
    bool shown, tty;
} progress;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_update(void *ctx, uint64_t done, uint64_t total)
{
    progress *p = ctx;
    if (!p->tty || total == 0)
        return;
    const double t = now();
    if (t - p->start < 1.0 || (t - p->last < 0.25 && done < total))
        return;
    p->last = t;
    p->shown = true;
    fprintf(stderr, "\r%s: %3.0f%% of %.1f MB", p->what, 100.0 * (double)done / (double)total,
            (double)total / 1e6);
}

/* The split keys, new and old names: a set's own bookkeeping, never the model's metadata. */
bool cli_split_key(tm_str key)
{
    static const char *const names[] = {"split.", "general.split"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const size_t n = strlen(names[i]);
        if (key.len >= n && memcmp(key.ptr, names[i], n) == 0)
            return true;
    }
    return false;
}

tm_status cli_model_writer(const tm_file *f, tm_writer **w, tm_error *err)
{
    const tm_layout *l = tm_file_layout(f);
    tm_status st = tm_writer_new(w, err);
    if (st == TM_OK)
        st = tm_writer_set_version(*w, l->version, err);
    if (st == TM_OK)
        st = tm_writer_set_alignment(*w, l->alignment, err);
    if (st == TM_OK)
        st = tm_writer_set_verify(*w, true, err);
    return st;
}

int cli_model_finish(tm_writer *w, tm_status st, tm_error *err, const char *path)
{
    return cli_model_finish_checked(w, st, err, path, NULL, NULL);
}

int cli_model_finish_checked(tm_writer *w, tm_status st, tm_error *err, const char *path,
                             cli_output_check check, void *ctx)
{
    progress p = {path, now(), 0, false, isatty(STDERR_FILENO) == 1};
    if (st == TM_OK)
        st = tm_writer_set_progress(w, progress_update, &p, err);
    if (st == TM_OK)
        st = cli_output_model(w, path, check, ctx, err);
    else
        tm_writer_free(w);
    if (p.shown)
        fputs("\r\033[K", stderr);
    if (st != TM_OK) {
        /* the library's message names the file already when it is about writing it */
        if (strncmp(err->message, path, strlen(path)) == 0)
            cli_errorf("%s", err->message);
        else
            cli_report(path, err);
        return CLI_FAIL;
    }
    return CLI_OK;
}
