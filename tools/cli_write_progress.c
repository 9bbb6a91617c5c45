/* A progress line for the commands that write a model (split, merge, edit): on stderr, only
 * when it is a terminal, and only once the work has taken more than a second. A minimal
 * stand-in until the tool has one progress helper for every command. */
#include "cli_util.h"

#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_write_progress_start(cli_write_progress *p, const char *what)
{
    p->what = what;
    p->start = now();
    p->last = 0;
    p->shown = false;
    p->tty = isatty(STDERR_FILENO) == 1;
}

void cli_write_progress_update(void *ctx, uint64_t done, uint64_t total)
{
    cli_write_progress *p = ctx;
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

void cli_write_progress_end(cli_write_progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = false;
}
