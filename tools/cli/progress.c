/* A progress line on stderr for work that takes more than a second: shown only when stderr is
 * a terminal (never in a pipe, a log or a test's capture), first drawn after one second, redrawn
 * at most ten times a second, and wiped when the work ends so the output around it is as
 * without it. TM_PROGRESS_AFTER_MS sets the first delay (a test that needs the line at once
 * sets 0). */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(cli_progress *p, const char *what, const char *unit, uint64_t total)
{
    *p = (cli_progress){.what = what, .unit = unit, .total = total, .on = isatty(2) == 1};
    const char *after = getenv("TM_PROGRESS_AFTER_MS");
    uint64_t ms = 1000;
    if (after && !cli_parse_u64(after, &ms))
        ms = 1000;
    if (p->on)
        p->next = seconds() + (double)ms / 1000;
}

void cli_progress_add(cli_progress *p, uint64_t n)
{
    p->done += n;
    if (!p->on)
        return;
    double now = seconds();
    if (now < p->next)
        return;
    p->next = now + 0.1;
    p->shown = true;
    fprintf(stderr, "\r%s: %" PRIu64 " of %" PRIu64 " %s (%" PRIu64 "%%)\033[K", p->what,
            p->done, p->total, p->unit, p->total ? p->done * 100 / p->total : 100);
}

void cli_progress_end(cli_progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = false;
}
